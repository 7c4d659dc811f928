//! What a call spends: each model call of an attempt priced on the model that answered
//! it, and the money budget checked before an attempt is sent.
//!
//! The glue between the attempt loop and the `pricing` module: it knows the client's
//! configuration (which provider, which judge, whether the call runs in a batch job),
//! which `pricing` does not.

use crate::cost::{Cost, CostTally};
use crate::pricing::{self, BudgetCheck, PricedCall};
use crate::provider::ProviderRequest;
use crate::result::{AttemptRecord, ResultIssue, Usage};
use crate::shared::ClientInner;

/// Which of an attempt's model calls is priced, with the model its reply named.
pub(crate) enum PricedAs<'a> {
    /// The answer; an empty name is the model asked for.
    Answer(&'a str),
    /// The decision gate's question, on the gate's model when it names one.
    Gate(Option<&'a str>),
    /// The judge's call; an empty name is the judge's model as configured.
    Judge(&'a str),
}

/// What an unpriced decision-gate call is listed as when the gate names no model.
const UNNAMED_GATE_MODEL: &str = "(the decision gate's default model)";

/// Whether an answer of attempt `number` went through a batch API: inside a batch job,
/// before the attempt the job sends live.
fn answered_in_batch(client: &ClientInner, number: u32) -> bool {
    client.in_batch && client.batch_live_from.is_none_or(|live| number < live)
}

/// Adds one model call's cost to `record` (the model that answered is `call`'s;
/// `requested` is the model the call asked for).
pub(crate) fn price_call(
    client: &ClientInner,
    requested: &str,
    record: &mut AttemptRecord,
    usage: &Usage,
    call: PricedAs<'_>,
) {
    let judge = &client.telemetry.judge;
    let (model, provider, batch) = match call {
        PricedAs::Answer(model) => (
            if model.is_empty() { requested } else { model },
            Some(client.provider.name()),
            answered_in_batch(client, record.number),
        ),
        // The gate's and the judge's calls are live, in a batch job too.
        PricedAs::Gate(model) => (model.unwrap_or(UNNAMED_GATE_MODEL), None, false),
        PricedAs::Judge(model) => (
            match (model, &client.judge_model) {
                ("", Some(configured)) => configured.as_str(),
                ("", None) => judge.default_model.as_str(),
                (named, _) => named,
            },
            Some(judge.provider.as_str()),
            false,
        ),
    };
    let call = PricedCall {
        model,
        provider,
        usage,
        batch,
    };
    // A priced call allocates nothing; an unpriced one its model's name, once per record.
    match pricing::price(&client.prices, call) {
        Some(cost) => {
            record.cost.priced += cost;
            client.totals.add_priced(cost);
        }
        None => {
            record.cost.unpriced(model);
            client.totals.add_unpriced(model);
        }
    }
}

/// Why attempt `number` must not be sent under the call's budget, when it has one; the
/// request is the attempt's as rendered.
pub(crate) fn budget_refusal(
    client: &ClientInner,
    max_cost: Option<Cost>,
    requested: &str,
    earlier: &[AttemptRecord],
    request: &ProviderRequest,
    number: u32,
) -> Option<ResultIssue> {
    let max_cost = max_cost?;
    let mut spent = CostTally::default();
    for attempt in earlier {
        spent += &attempt.cost;
    }
    pricing::refusal(BudgetCheck {
        max_cost,
        prices: &client.prices,
        spent,
        model: requested,
        provider: client.provider.name(),
        prompt_len: request.prompt_len(),
        max_output_tokens: request.max_output_tokens,
        batch: answered_in_batch(client, number),
        attempt: number,
    })
}
