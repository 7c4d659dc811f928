//! Reading LiteLLM's `model_prices_and_context_window.json`, the price table the
//! community keeps up to date, into a [`PriceTable`].
//!
//! The format: one object per model key (`gpt-4o`, `gemini/gemini-2.5-flash`), with
//! prices in US dollars per token (`input_cost_per_token`, `output_cost_per_token`,
//! `cache_read_input_token_cost`, `cache_creation_input_token_cost`,
//! `output_cost_per_reasoning_token`), their batch prices (the same names ending in
//! `_batches`), long-context prices (`..._above_200k_tokens`), `max_output_tokens` and
//! `litellm_provider`. A field that is absent means no separate price, not zero.

use serde_json::{Map, Value};

use super::table::{LongContextRates, ModelPrice, PriceTable, TokenRates};
use crate::cost::Cost;

crate::failure::debug_as_message!(PriceTableError);

/// Why a price table could not be read.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum PriceTableError {
    /// The text is not JSON.
    #[error(
        "the price table is not JSON ({0}): give the text of a `model_prices_and_context_window.json` file"
    )]
    Json(#[source] serde_json::Error),
    /// The JSON is not an object of models.
    #[error(
        "the price table is not a JSON object of models keyed by name, as LiteLLM's `model_prices_and_context_window.json` is"
    )]
    NotAnObject,
    /// A price is not a non-negative number of dollars.
    #[error(
        "the price table's `{model}` has `{field}` that is not a non-negative number of US dollars per token: correct or remove it"
    )]
    BadPrice {
        /// The model's key.
        model: String,
        /// The field.
        field: String,
    },
}

/// The kinds of token, in the order of a [`TokenRates`], with their LiteLLM field names.
const KINDS: [&str; 5] = [
    "input_cost_per_token",
    "cache_read_input_token_cost",
    "cache_creation_input_token_cost",
    "output_cost_per_token",
    "output_cost_per_reasoning_token",
];

impl PriceTable {
    /// Reads a table in the format of LiteLLM's `model_prices_and_context_window.json`.
    ///
    /// Every entry with an input and an output price per token becomes a model under its
    /// key (others, such as image or audio models priced per image or per second, and
    /// the file's `sample_spec`, are skipped). Rules, so that nothing is guessed:
    /// - a kind of token with no price of its own costs the input (output) rate, which
    ///   is what an absent field means in that format;
    /// - a model has a batch price only when the table gives its batch input price
    ///   (`input_cost_per_token_batches`); a kind with no batch price of its own is its
    ///   synchronous price times the model's batch discount (batch input price over
    ///   input price);
    /// - long-context prices (`..._above_200k_tokens`) apply to a request whose input is
    ///   above the threshold, by the same rule for kinds with no price of their own.
    ///
    /// Prices are read once and rounded to the pico-dollar per token; every sum after
    /// that is exact (see [`Cost`]).
    pub fn from_litellm_json(text: &str) -> Result<PriceTable, PriceTableError> {
        let value: Value = serde_json::from_str(text).map_err(PriceTableError::Json)?;
        let Value::Object(entries) = value else {
            return Err(PriceTableError::NotAnObject);
        };
        let mut table = PriceTable::empty();
        for (key, entry) in &entries {
            if key == "sample_spec" {
                continue;
            }
            let Value::Object(fields) = entry else {
                continue;
            };
            if let Some(price) = model_price(key, fields)? {
                table.insert(key.clone(), price);
            }
        }
        Ok(table)
    }
}

/// One entry, or `None` when it has no input and output price per token.
fn model_price(
    key: &str,
    fields: &Map<String, Value>,
) -> Result<Option<ModelPrice>, PriceTableError> {
    let price = |field: &str| dollars_per_token(key, fields, field);
    let kinds = |suffix: &str| -> Result<[Option<Cost>; 5], PriceTableError> {
        let mut rates = [None; 5];
        for (rate, kind) in rates.iter_mut().zip(KINDS) {
            *rate = price(&format!("{kind}{suffix}"))?;
        }
        Ok(rates)
    };
    let base = kinds("")?;
    let (Some(input), Some(output)) = (base[0], base[3]) else {
        return Ok(None);
    };
    let mut rates = TokenRates::new(input, output);
    if let Some(rate) = base[1] {
        rates = rates.with_cached_input(rate);
    }
    if let Some(rate) = base[2] {
        rates = rates.with_cache_write(rate);
    }
    if let Some(rate) = base[4] {
        rates = rates.with_reasoning(rate);
    }
    let mut price = ModelPrice::new(rates);
    price.batch = variant(&rates, &kinds("_batches")?);
    if let Some(threshold) = long_context_threshold(fields) {
        let suffix = format!("_above_{threshold}k_tokens");
        if let Some(long) = variant(&rates, &kinds(&suffix)?) {
            let batch = match variant(&long, &kinds(&format!("{suffix}_batches"))?) {
                Some(batch) => Some(batch),
                // No long-context batch prices of its own: the long-context prices with
                // the model's batch discount.
                None => price
                    .batch
                    .map(|batch| scaled(&long, rates.input, batch.input)),
            };
            price.long_context = Some(LongContextRates {
                above_input_tokens: threshold * 1_000,
                rates: long,
                batch,
            });
        }
    }
    price.max_output_tokens = fields.get("max_output_tokens").and_then(Value::as_u64);
    price.provider = fields
        .get("litellm_provider")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(Some(price))
}

/// A variant of `base` (batch, long context) from its explicit prices: `None` unless it
/// has an input price; kinds without a price of their own are `base`'s scaled by the
/// variant's input price over `base`'s.
fn variant(base: &TokenRates, explicit: &[Option<Cost>; 5]) -> Option<TokenRates> {
    let input = explicit[0]?;
    let mut rates = scaled(base, base.input, input);
    for (rate, given) in [
        &mut rates.input,
        &mut rates.cached_input,
        &mut rates.cache_write,
        &mut rates.output,
        &mut rates.reasoning,
    ]
    .into_iter()
    .zip(explicit)
    {
        if let Some(given) = given {
            *rate = *given;
        }
    }
    Some(rates)
}

/// Every rate of `rates` times `to / from` (rounded to the pico-dollar); unchanged when
/// `from` is zero (a free model has no discount to apply).
fn scaled(rates: &TokenRates, from: Cost, to: Cost) -> TokenRates {
    let from = u128::from(from.as_pico_usd());
    let to = u128::from(to.as_pico_usd());
    let scale = |rate: Cost| {
        if from == 0 {
            return rate;
        }
        let picos = (u128::from(rate.as_pico_usd()) * to + from / 2) / from;
        Cost::from_pico_usd(u64::try_from(picos).unwrap_or(u64::MAX))
    };
    TokenRates {
        input: scale(rates.input),
        cached_input: scale(rates.cached_input),
        cache_write: scale(rates.cache_write),
        output: scale(rates.output),
        reasoning: scale(rates.reasoning),
    }
}

/// The threshold, in thousands of input tokens, of the model's long-context input price
/// (`input_cost_per_token_above_200k_tokens` → 200); the lowest when there are several.
fn long_context_threshold(fields: &Map<String, Value>) -> Option<u64> {
    fields
        .keys()
        .filter_map(|field| {
            field
                .strip_prefix("input_cost_per_token_above_")?
                .strip_suffix("k_tokens")?
                .parse()
                .ok()
        })
        .min()
}

/// A price field in pico-dollars per token: `None` when absent or null.
fn dollars_per_token(
    key: &str,
    fields: &Map<String, Value>,
    field: &str,
) -> Result<Option<Cost>, PriceTableError> {
    let bad = || PriceTableError::BadPrice {
        model: key.to_owned(),
        field: field.to_owned(),
    };
    match fields.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => {
            let dollars = value.as_f64().ok_or_else(bad)?;
            // Rounded once to the pico-dollar: the file's figures are decimal prices
            // written as floats (`2.5e-06`, sometimes `3.2000000000000003e-06`), and every
            // price per token has at most 12 decimal places.
            let picos = (dollars * 1e12).round();
            if !(0.0..=u64::MAX as f64).contains(&picos) {
                return Err(bad());
            }
            Ok(Some(Cost::from_pico_usd(picos as u64)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Usage;

    /// Four entries as LiteLLM writes them (figures from its table), plus ones to skip.
    const SAMPLE: &str = r#"{
        "sample_spec": {"input_cost_per_token": 0.0, "max_output_tokens": "max output tokens"},
        "gpt-4o": {
            "cache_read_input_token_cost": 1.25e-06, "input_cost_per_token": 2.5e-06,
            "input_cost_per_token_batches": 1.25e-06, "litellm_provider": "openai",
            "max_output_tokens": 16384, "mode": "chat", "output_cost_per_token": 1e-05,
            "output_cost_per_token_batches": 5e-06
        },
        "claude-sonnet-4-5": {
            "cache_creation_input_token_cost": 3.75e-06, "cache_read_input_token_cost": 3e-07,
            "input_cost_per_token": 3e-06, "cache_creation_input_token_cost_batches": 1.875e-06,
            "cache_read_input_token_cost_batches": 1.5e-07, "input_cost_per_token_batches": 1.5e-06,
            "litellm_provider": "anthropic", "max_output_tokens": 64000, "mode": "chat",
            "output_cost_per_token": 1.5e-05, "output_cost_per_token_batches": 7.5e-06
        },
        "gemini/gemini-2.5-flash": {
            "cache_read_input_token_cost": 3e-08, "input_cost_per_token": 3e-07,
            "litellm_provider": "gemini", "max_output_tokens": 65536, "mode": "chat",
            "output_cost_per_reasoning_token": 2.5e-06, "output_cost_per_token": 2.5e-06
        },
        "gemini-2.5-pro": {
            "cache_read_input_token_cost": 1.25e-07,
            "cache_read_input_token_cost_above_200k_tokens": 2.5e-07,
            "input_cost_per_token": 1.25e-06, "input_cost_per_token_above_200k_tokens": 2.5e-06,
            "output_cost_per_token": 1e-05, "output_cost_per_token_above_200k_tokens": 1.5e-05,
            "litellm_provider": "vertex_ai-language-models", "mode": "chat"
        },
        "gpt-image-1": {"input_cost_per_image": 0.04, "mode": "image_generation"},
        "noisy": {"input_cost_per_token": 3.2000000000000003e-06, "output_cost_per_token": 1}
    }"#;

    fn picos(dollars_per_million: u64) -> Cost {
        Cost::from_pico_usd(dollars_per_million * 1_000_000)
    }

    #[test]
    fn the_sample_reads_into_exact_rates() {
        let table = PriceTable::from_litellm_json(SAMPLE).unwrap();
        assert_eq!(table.len(), 5);
        assert!(table.get("sample_spec").is_none() && table.get("gpt-image-1").is_none());

        let gpt = table.get("gpt-4o").unwrap();
        assert_eq!(gpt.rates.input, Cost::from_pico_usd(2_500_000));
        assert_eq!(gpt.rates.cached_input, Cost::from_pico_usd(1_250_000));
        // No cache-write or reasoning price: the input and output rates.
        assert_eq!(gpt.rates.cache_write, gpt.rates.input);
        assert_eq!(gpt.rates.reasoning, picos(10));
        assert_eq!(gpt.max_output_tokens, Some(16_384));
        assert_eq!(gpt.provider.as_deref(), Some("openai"));
        // Batch: half, cached tokens included (no batch price of their own: scaled).
        let batch = gpt.batch.unwrap();
        assert_eq!(batch.input, Cost::from_pico_usd(1_250_000));
        assert_eq!(batch.cached_input, Cost::from_pico_usd(625_000));
        assert_eq!(batch.output, picos(5));

        let claude = table.get("claude-sonnet-4-5").unwrap();
        assert_eq!(claude.rates.cache_write, Cost::from_pico_usd(3_750_000));
        assert_eq!(
            claude.batch.unwrap().cache_write,
            Cost::from_pico_usd(1_875_000)
        );

        let flash = table.get("gemini/gemini-2.5-flash").unwrap();
        assert_eq!(flash.rates.reasoning, Cost::from_pico_usd(2_500_000));
        assert_eq!(flash.batch, None);

        let pro = table.get("gemini-2.5-pro").unwrap();
        let long = pro.long_context.unwrap();
        assert_eq!(long.above_input_tokens, 200_000);
        assert_eq!(long.rates.cached_input, Cost::from_pico_usd(250_000));
        assert_eq!(long.rates.output, picos(15));
        assert_eq!(pro.max_output_tokens, None);

        // Float noise in the file is rounded away.
        let noisy = table.get("noisy").unwrap();
        assert_eq!(noisy.rates.input, Cost::from_pico_usd(3_200_000));
        assert_eq!(noisy.rates.output, Cost::from_cents(100));
    }

    #[test]
    fn a_sample_cost_matches_the_hand_computed_figure() {
        let table = PriceTable::from_litellm_json(SAMPLE).unwrap();
        let usage = Usage {
            input_tokens: 10_000,
            output_tokens: 2_000,
            cached_input_tokens: 4_000,
            ..Usage::default()
        };
        // 6,000 × $2.50/M + 4,000 × $1.25/M + 2,000 × $10/M = $0.015 + $0.005 + $0.02.
        let cost = table.cost("gpt-4o-2024-08-06", Some("openai"), &usage, false);
        assert_eq!(cost, Some(Cost::from_cents(4)));
    }

    #[test]
    fn what_is_not_a_table_says_what_to_give() {
        let not_json = PriceTable::from_litellm_json("{").unwrap_err();
        assert!(
            not_json
                .to_string()
                .starts_with("the price table is not JSON")
        );
        let array = PriceTable::from_litellm_json("[]").unwrap_err();
        assert!(matches!(array, PriceTableError::NotAnObject));
        let bad = PriceTable::from_litellm_json(
            r#"{"m": {"input_cost_per_token": "cheap", "output_cost_per_token": 1e-06}}"#,
        )
        .unwrap_err();
        assert_eq!(
            bad.to_string(),
            "the price table's `m` has `input_cost_per_token` that is not a non-negative number of US dollars per token: correct or remove it"
        );
        let negative = PriceTable::from_litellm_json(
            r#"{"m": {"input_cost_per_token": -1e-06, "output_cost_per_token": 1e-06}}"#,
        );
        assert!(matches!(negative, Err(PriceTableError::BadPrice { .. })));
    }
}
