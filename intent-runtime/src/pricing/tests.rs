//! Costs against hand-computed figures for each provider's usage fields, through the
//! shipped table and through whole calls, and the money budget stopping a call.

use super::*;
use crate::provider::{ProviderReply, ScriptedProvider, ScriptedReply};
use crate::{IntentClient, IntentOptions, IssueSource, JudgeMode};

/// A reply with these tokens, from `model`.
fn reply(text: &str, model: &str, usage: Usage) -> ScriptedReply {
    ScriptedReply::Reply(ProviderReply {
        text: text.to_owned(),
        usage,
        model: model.to_owned(),
        ..ProviderReply::default()
    })
}

fn usage(input: u64, cached: u64, written: u64, output: u64, reasoning: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: cached,
        cache_write_input_tokens: written,
        reasoning_tokens: reasoning,
    }
}

fn dollars(text: &str) -> Cost {
    text.parse().unwrap()
}

#[test]
fn the_shipped_table_reads_and_lists_the_main_providers_models() {
    let table = PriceTable::shipped();
    assert!(table.len() > 200, "{}", table.len());
    for model in [
        "gpt-4o",
        "gpt-5",
        "claude-sonnet-4-5",
        "gemini/gemini-2.5-flash",
    ] {
        assert!(table.get(model).is_some(), "{model}");
    }
}

/// Each provider's usage fields against figures computed by hand from LiteLLM's prices
/// (dollars per million tokens in the comments).
#[test]
fn costs_equal_the_hand_computed_figures_for_each_providers_usage_fields() {
    let table = PriceTable::shipped();
    let cost = |model, provider, usage: Usage, batch| {
        table.cost(model, Some(provider), &usage, batch).unwrap()
    };

    // OpenAI, cached input: gpt-4o at 2.50 in, 1.25 cached, 10 out, the dated name.
    // 6,000 × 2.50 + 4,000 × 1.25 + 2,000 × 10 = 15,000 + 5,000 + 20,000 = $0.04.
    let openai = usage(10_000, 4_000, 0, 2_000, 0);
    assert_eq!(
        cost("gpt-4o-2024-08-06", "openai", openai, false),
        dollars("0.04")
    );
    // Batch: 1.25 in, 5 out, and the cached rate with the same discount (0.625):
    // 7,500 + 2,500 + 10,000 = $0.02, half.
    assert_eq!(
        cost("gpt-4o-2024-08-06", "openai", openai, true),
        dollars("0.02")
    );

    // OpenAI, reasoning (billed as output, no separate price): gpt-5 at 1.25 in, 0.125
    // cached, 10 out. 976 × 1.25 + 1,024 × 0.125 + 3,000 × 10 = 1,220 + 128 + 30,000.
    let reasoning = usage(2_000, 1_024, 0, 3_000, 2_500);
    assert_eq!(
        cost("gpt-5", "openai", reasoning, false),
        dollars("0.031348")
    );

    // Anthropic, cache write and cache read: claude-sonnet-4-5 at 3 in, 3.75 write,
    // 0.30 read, 15 out. 2,000 × 3 + 2,000 × 3.75 + 1,000 × 0.30 + 400 × 15
    // = 6,000 + 7,500 + 300 + 6,000 = $0.0198.
    let anthropic = usage(5_000, 1_000, 2_000, 400, 0);
    let sonnet = "claude-sonnet-4-5-20250929";
    assert_eq!(
        cost(sonnet, "anthropic", anthropic, false),
        dollars("0.0198")
    );
    // Batch, every rate halved, the cache rates from their own batch prices: $0.0099.
    assert_eq!(
        cost(sonnet, "anthropic", anthropic, true),
        dollars("0.0099")
    );

    // Gemini, thinking tokens at their own price (here equal to output): 0.30 in,
    // 2.50 out and reasoning, listed under `gemini/`. 1,000 × 0.30 + 500 × 2.50 = $0.00155.
    let gemini = usage(1_000, 0, 0, 500, 300);
    assert_eq!(
        cost("gemini-2.5-flash", "gcp.gemini", gemini, false),
        dollars("0.00155")
    );
    // Batch: 0.15 in, 1.25 out and reasoning (scaled: no batch price of its own).
    assert_eq!(
        cost("gemini-2.5-flash", "gcp.gemini", gemini, true),
        dollars("0.000775")
    );
}

/// A table where the answering model and the judge's cost different amounts: $1 and
/// $10 per million tokens in, $2 and $20 out.
fn two_model_table() -> PriceTable {
    // $1 per million tokens is a millionth of a dollar, a million pico-dollars, a token.
    let per_million = |dollars: u64| Cost::from_pico_usd(dollars * 1_000_000);
    let rates = |input, output| TokenRates::new(per_million(input), per_million(output));
    let mut table = PriceTable::empty();
    table.insert(
        "small",
        ModelPrice::new(rates(1, 2)).with_max_output_tokens(1_000),
    );
    table.insert("judge-big", ModelPrice::new(rates(10, 20)));
    table
}

#[tokio::test]
async fn a_calls_cost_counts_its_retries_and_its_judge_on_the_judges_own_model() {
    let answers = ScriptedProvider::new([
        reply("not json", "small", usage(1_000, 0, 0, 100, 0)),
        reply(r#"{"value": 3}"#, "small", usage(1_200, 0, 0, 10, 0)),
    ]);
    let judge = ScriptedProvider::new([reply(
        r#"{"passes": true, "problems": []}"#,
        "judge-big",
        usage(500, 0, 0, 20, 0),
    )]);
    let client = IntentClient::builder()
        .provider(answers)
        .judge_provider(judge)
        .judge_mode(JudgeMode::Always)
        .price_table(two_model_table())
        .build()
        .unwrap();
    let result = client
        .transform("a b c", "Count the words", IntentOptions::<u32>::new())
        .await;
    assert_eq!(result.value, Some(3));
    // Attempt 1: 1,000 × $1/M + 100 × $2/M = $0.0012.
    assert_eq!(result.attempts[0].cost.priced, dollars("0.0012"));
    // Attempt 2: 1,200 × $1/M + 10 × $2/M, and the judge's 500 × $10/M + 20 × $20/M
    // = $0.00122 + $0.0054.
    assert_eq!(result.attempts[1].cost.priced, dollars("0.00662"));
    assert_eq!(result.cost(), Ok(dollars("0.00782")));
    assert_eq!(total_cost([&result, &result]), Ok(dollars("0.01564")));
}

#[tokio::test]
async fn a_model_missing_from_the_table_gives_no_cost_and_says_which() {
    let provider = ScriptedProvider::new([reply(
        r#"{"value": 3}"#,
        "house-model-1",
        usage(100, 0, 0, 5, 0),
    )]);
    let client = IntentClient::builder()
        .provider(provider)
        .price_table(two_model_table())
        .build()
        .unwrap();
    let result = client
        .transform("a b c", "Count the words", IntentOptions::<u32>::new())
        .await;
    assert_eq!(result.value, Some(3));
    let missing = result.cost().unwrap_err();
    assert_eq!(missing.models, ["house-model-1"]);
    assert_eq!(missing.priced, Cost::ZERO);
    assert!(
        missing
            .to_string()
            .starts_with("no price for model `house-model-1`"),
        "{missing}"
    );
    // Said once per model per process: the second time is silent.
    assert!(!first_warning("house-model-1", false));
    assert!(first_warning("house-model-2", false));
    assert!(!first_warning("house-model-2", false));
}

#[tokio::test]
async fn the_budget_refuses_before_sending_when_the_estimate_passes_it() {
    let provider = ScriptedProvider::new([r#"{"value": 3}"#]).with_model("small");
    let client = IntentClient::builder()
        .provider(provider.clone())
        .price_table(two_model_table())
        // The output bound alone, 1,000 × $2/M, is $0.002.
        .max_cost(dollars("0.001"))
        .build()
        .unwrap();
    let result = client
        .transform("a b c", "Count the words", IntentOptions::<u32>::new())
        .await;
    assert_eq!(provider.request_count(), 0);
    assert_eq!(result.value, None);
    assert!(result.attempts.is_empty());
    let issue = &result.issues[0];
    assert_eq!(issue.source, IssueSource::Guardrail);
    assert!(
        issue.message.starts_with(
            "Not sent: attempt 1 would pass the budget of $0.001: the call has spent $0.00, and the attempt may cost up to $0.0020"
        ),
        "{}",
        issue.message
    );
    assert_eq!(result.cost(), Ok(Cost::ZERO));

    // The call's own budget and output bound come first: this one fits.
    let options = IntentOptions::<u32>::new()
        .max_cost(dollars("0.01"))
        .max_output_tokens(100);
    let allowed = client.transform("a b c", "Count the words", options).await;
    assert_eq!(allowed.value, Some(3));
    assert_eq!(provider.request_count(), 1);
}

#[tokio::test]
async fn the_budget_counts_what_earlier_attempts_spent() {
    // The first reply fails and spends 4,000 × $1/M + 100 × $2/M = $0.0042; the retry
    // may cost up to its prompt plus 100 × $2/M, which no longer fits in $0.0044.
    let provider = ScriptedProvider::new([
        reply("not json", "small", usage(4_000, 0, 0, 100, 0)),
        reply(r#"{"value": 3}"#, "small", usage(10, 0, 0, 1, 0)),
    ]);
    let client = IntentClient::builder()
        .provider(provider.clone())
        .price_table(two_model_table())
        .model("small")
        .max_output_tokens(100)
        .max_cost(dollars("0.0044"))
        .build()
        .unwrap();
    let result = client
        .transform("a b c", "Count the words", IntentOptions::<u32>::new())
        .await;
    assert_eq!(provider.request_count(), 1);
    assert_eq!(result.attempts.len(), 1);
    let last = result.issues.last().unwrap();
    assert_eq!(last.source, IssueSource::Guardrail);
    assert!(
        last.message.contains("the call has spent $0.0042"),
        "{}",
        last.message
    );
    assert_eq!(result.cost(), Ok(dollars("0.0042")));
}
