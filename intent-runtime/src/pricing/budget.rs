//! The money budget (`max_cost`): before each attempt, what the call has spent plus what
//! the attempt may cost at most must stay within it, or the attempt is not sent.

use super::table::PriceTable;
use crate::cost::{Cost, CostTally};
use crate::result::{Guardrail, IssueDetail, IssueSource, ResultIssue};

/// What the check before one attempt needs to know.
pub(crate) struct BudgetCheck<'a> {
    /// The call's budget.
    pub max_cost: Cost,
    /// The client's price table.
    pub prices: &'a PriceTable,
    /// What the call's earlier attempts cost.
    pub spent: CostTally,
    /// The model the attempt asks for, and its provider's name.
    pub model: &'a str,
    pub provider: &'a str,
    /// The request's length in characters (the prompt as sent).
    pub prompt_len: usize,
    /// The call's bound on output tokens, when it sets one.
    pub max_output_tokens: Option<u32>,
    /// Whether the attempt goes through a batch API.
    pub batch: bool,
    /// The attempt's number.
    pub attempt: u32,
}

/// Why the attempt must not be sent, or `None` when it fits in the budget.
///
/// The estimate: the input tokens as the rate limiter estimates them (a token per four
/// characters of the prompt), every one at the dearest input rate (plain, cached or
/// cache write); the output at its bound (the call's `max_output_tokens`, else the
/// model's maximum from the table), every token at the dearer of the output and
/// reasoning rates. A budget that cannot be checked (a model with no price, no bound on
/// the output, an earlier call with no price) stops the call too: a budget is a promise
/// not to spend more, and it is kept by not sending what cannot be counted.
pub(crate) fn refusal(check: BudgetCheck<'_>) -> Option<ResultIssue> {
    let BudgetCheck {
        max_cost,
        prices,
        spent,
        model,
        provider,
        prompt_len,
        max_output_tokens,
        batch,
        attempt,
    } = check;
    let stop = |why: String| {
        Some(
            ResultIssue::new(
                IssueSource::Guardrail,
                format!("Not sent: attempt {attempt} {why}."),
                attempt,
            )
            .with_detail(IssueDetail::Guardrail(Guardrail::Cost { budget: max_cost })),
        )
    };
    let spent = match spent.total() {
        Ok(spent) => spent,
        Err(unpriced) => {
            return stop(format!(
                "could not be checked against the budget of {max_cost}: what the call spent is unknown, as {unpriced}"
            ));
        }
    };
    let mode = if batch { "batch " } else { "" };
    let Some((_, price)) = prices.find(model, Some(provider)) else {
        return stop(format!(
            "could not be checked against the budget of {max_cost} (spent so far: {spent}): the model `{model}` has no price in the client's price table; add it with `PriceTable::insert` or remove the budget"
        ));
    };
    let input_tokens = prompt_len.div_ceil(4) as u64;
    let Some(output_tokens) = max_output_tokens.map(u64::from).or(price.max_output_tokens) else {
        return stop(format!(
            "could not be checked against the budget of {max_cost} (spent so far: {spent}): nothing bounds its output, as the price table gives no maximum for `{model}`; set `max_output_tokens` on the call or the client"
        ));
    };
    let Some(rates) = price.rates_for(input_tokens, batch) else {
        return stop(format!(
            "could not be checked against the budget of {max_cost} (spent so far: {spent}): the model `{model}` has no {mode}price in the client's price table"
        ));
    };
    let input_rate = rates.input.max(rates.cached_input).max(rates.cache_write);
    let output_rate = rates.output.max(rates.reasoning);
    let estimate = input_rate.times(input_tokens) + output_rate.times(output_tokens);
    if spent + estimate <= max_cost {
        return None;
    }
    stop(format!(
        "would pass the budget of {max_cost}: the call has spent {spent}, and the attempt may cost up to {estimate} (about {input_tokens} input tokens and at most {output_tokens} output tokens on `{model}` at its {mode}rates)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pricing::{ModelPrice, TokenRates};

    fn table() -> PriceTable {
        let mut table = PriceTable::empty();
        // $1 per million input tokens, $4 per million output tokens.
        let rates = TokenRates::new(
            Cost::from_pico_usd(1_000_000),
            Cost::from_pico_usd(4_000_000),
        );
        table.insert("m", ModelPrice::new(rates).with_max_output_tokens(1_000));
        table.insert("unbounded", ModelPrice::new(rates));
        table
    }

    fn check<'a>(
        table: &'a PriceTable,
        max_cost: Cost,
        spent: Cost,
        model: &'a str,
    ) -> BudgetCheck<'a> {
        BudgetCheck {
            max_cost,
            prices: table,
            spent: CostTally {
                priced: spent,
                unpriced_models: vec![],
            },
            model,
            provider: "openai",
            prompt_len: 4_000,
            max_output_tokens: None,
            batch: false,
            attempt: 2,
        }
    }

    #[test]
    fn the_estimate_is_the_prompt_and_the_output_bound_at_their_rates() {
        let table = table();
        // 1,000 input tokens × $1/M + 1,000 output tokens × $4/M = $0.005.
        let exact = Cost::from_micro_usd(5_000);
        assert_eq!(refusal(check(&table, exact, Cost::ZERO, "m")), None);
        let issue = refusal(check(&table, exact, Cost::from_pico_usd(1), "m")).unwrap();
        assert_eq!(issue.source, IssueSource::Guardrail);
        assert_eq!(
            issue.message,
            "Not sent: attempt 2 would pass the budget of $0.005: the call has spent $0.000000000001, and the attempt may cost up to $0.005 (about 1000 input tokens and at most 1000 output tokens on `m` at its rates)."
        );
        // The call's own bound on the output is used before the model's.
        let mut bounded = check(&table, Cost::from_micro_usd(1_400), Cost::ZERO, "m");
        bounded.max_output_tokens = Some(100);
        assert_eq!(refusal(bounded), None);
    }

    #[test]
    fn a_budget_that_cannot_be_checked_stops_the_call() {
        let table = table();
        let dollar = Cost::from_cents(100);
        let unknown = refusal(check(&table, dollar, Cost::ZERO, "other")).unwrap();
        assert!(
            unknown.message.contains("`other` has no price"),
            "{}",
            unknown.message
        );
        let unbounded = refusal(check(&table, dollar, Cost::ZERO, "unbounded")).unwrap();
        assert!(
            unbounded.message.contains("set `max_output_tokens`"),
            "{}",
            unbounded.message
        );
        let mut batch = check(&table, dollar, Cost::ZERO, "m");
        batch.batch = true;
        assert!(refusal(batch).unwrap().message.contains("no batch price"));
        let mut spent_unknown = check(&table, dollar, Cost::ZERO, "m");
        spent_unknown
            .spent
            .unpriced_models
            .push("judge-x".to_owned());
        let issue = refusal(spent_unknown).unwrap();
        assert!(issue.message.contains("`judge-x`"), "{}", issue.message);
    }
}
