//! The price table: what each model charges per token, how a model name finds its entry,
//! and the cost of a call's usage.

use std::collections::HashMap;

use crate::cost::Cost;
use crate::result::Usage;

/// What a model charges per token of each kind, in one pricing mode (synchronous or
/// batch). Every rate is a [`Cost`] per token.
///
/// The kinds follow [`Usage`]: cached and cache-write tokens are part of the input
/// tokens, reasoning tokens part of the output tokens; each kind is charged at its own
/// rate and the rest of the input (output) at the input (output) rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenRates {
    /// An input token that is neither read from nor written to the prompt cache.
    pub input: Cost,
    /// An input token read from the prompt cache.
    pub cached_input: Cost,
    /// An input token written to the prompt cache.
    pub cache_write: Cost,
    /// An output token that is not a reasoning token.
    pub output: Cost,
    /// A reasoning (thinking) token.
    pub reasoning: Cost,
}

impl TokenRates {
    /// Rates with no separate price for cached, cache-write or reasoning tokens: they
    /// cost what an input (output) token costs, which is what a table that lists no
    /// separate price means.
    pub const fn new(input: Cost, output: Cost) -> Self {
        Self {
            input,
            cached_input: input,
            cache_write: input,
            output,
            reasoning: output,
        }
    }

    /// With the rate of a token read from the prompt cache.
    pub const fn with_cached_input(mut self, rate: Cost) -> Self {
        self.cached_input = rate;
        self
    }

    /// With the rate of a token written to the prompt cache.
    pub const fn with_cache_write(mut self, rate: Cost) -> Self {
        self.cache_write = rate;
        self
    }

    /// With the rate of a reasoning token.
    pub const fn with_reasoning(mut self, rate: Cost) -> Self {
        self.reasoning = rate;
        self
    }

    /// What `usage` costs at these rates. A provider that reports more cached tokens than
    /// input tokens is taken at its word for the cached ones and charged no plain input.
    pub fn cost(&self, usage: &Usage) -> Cost {
        let plain_input = usage
            .input_tokens
            .saturating_sub(usage.cached_input_tokens)
            .saturating_sub(usage.cache_write_input_tokens);
        let plain_output = usage.output_tokens.saturating_sub(usage.reasoning_tokens);
        self.input.times(plain_input)
            + self.cached_input.times(usage.cached_input_tokens)
            + self.cache_write.times(usage.cache_write_input_tokens)
            + self.output.times(plain_output)
            + self.reasoning.times(usage.reasoning_tokens)
    }
}

/// Higher rates for a long prompt: a request whose input is above `above_input_tokens`
/// is charged these rates on all its tokens (Gemini's and Anthropic's long-context
/// prices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LongContextRates {
    /// The input size above which these rates apply.
    pub above_input_tokens: u64,
    /// The synchronous rates.
    pub rates: TokenRates,
    /// The batch rates, when the model has a batch price.
    pub batch: Option<TokenRates>,
}

impl LongContextRates {
    /// Long-context rates above `above_input_tokens`, with no batch price.
    pub const fn new(above_input_tokens: u64, rates: TokenRates) -> Self {
        Self {
            above_input_tokens,
            rates,
            batch: None,
        }
    }
}

/// A model's prices.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelPrice {
    /// The prices of a synchronous request.
    pub rates: TokenRates,
    /// The prices of a request sent through the provider's batch API, when the table
    /// gives them; a model with none has no batch price (it is not assumed to be half).
    pub batch: Option<TokenRates>,
    /// Higher rates for long prompts, when the model has them.
    pub long_context: Option<LongContextRates>,
    /// The most output tokens the model writes in one reply, when known: the bound of a
    /// budget's estimate when a call sets no maximum of its own.
    pub max_output_tokens: Option<u64>,
    /// The provider the table lists the model under (LiteLLM's `litellm_provider`).
    pub provider: Option<String>,
}

impl ModelPrice {
    /// A model with these synchronous rates and nothing else known.
    pub const fn new(rates: TokenRates) -> Self {
        Self {
            rates,
            batch: None,
            long_context: None,
            max_output_tokens: None,
            provider: None,
        }
    }

    /// With batch rates.
    pub fn with_batch(mut self, rates: TokenRates) -> Self {
        self.batch = Some(rates);
        self
    }

    /// With the most output tokens one reply can have.
    pub fn with_max_output_tokens(mut self, tokens: u64) -> Self {
        self.max_output_tokens = Some(tokens);
        self
    }

    /// With long-context rates.
    pub fn with_long_context(mut self, rates: LongContextRates) -> Self {
        self.long_context = Some(rates);
        self
    }

    /// The rates that apply to a request of `input_tokens` in the given mode, or `None`
    /// when the model has no price in that mode (a batch request, no batch price).
    pub fn rates_for(&self, input_tokens: u64, batch: bool) -> Option<&TokenRates> {
        let (rates, batch_rates) = match &self.long_context {
            Some(long) if input_tokens > long.above_input_tokens => (&long.rates, &long.batch),
            _ => (&self.rates, &self.batch),
        };
        if batch {
            batch_rates.as_ref()
        } else {
            Some(rates)
        }
    }

    /// What `usage` costs on this model, synchronously or through the batch API; `None`
    /// when the model has no price in that mode.
    pub fn cost(&self, usage: &Usage, batch: bool) -> Option<Cost> {
        self.rates_for(usage.input_tokens, batch)
            .map(|rates| rates.cost(usage))
    }
}

/// Prices per model, with the rule that finds a model's entry from the name a provider
/// reports.
///
/// [`PriceTable::shipped`] is the table the crate ships (built from LiteLLM's community
/// table, see the `pricing` module); [`PriceTable::from_litellm_json`] reads a newer copy
/// of that file; [`PriceTable::insert`] adds or replaces one model. Give the table to
/// [`IntentClientBuilder::price_table`](crate::IntentClientBuilder::price_table).
///
/// # Finding a model
///
/// [`PriceTable::find`] tries, in order, and takes the first entry found:
/// 1. the name exactly as given (`gpt-4o-2024-08-06`);
/// 2. the name under the provider's prefix, when the provider is known
///    (`gemini/gemini-2.5-flash` for Gemini's `gemini-2.5-flash`,
///    `azure/gpt-4o` for an Azure deployment named `gpt-4o`);
/// 3. without a provider prefix (`openai/gpt-4o` → `gpt-4o`);
/// 4. each of those without a date suffix: `-YYYY-MM-DD`, `-YYYYMMDD` or `@YYYYMMDD`
///    (`gpt-4o-2024-08-06` → `gpt-4o`, `claude-sonnet-4-5@20250929` →
///    `claude-sonnet-4-5`), because a provider's reply names the dated snapshot that
///    answered while tables often list only the alias.
///
/// Nothing else: no prefix match, no nearest name. A model that none of these finds has
/// no price, and a call it answered has no cost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PriceTable {
    models: HashMap<String, ModelPrice>,
}

impl PriceTable {
    /// A table with no models.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Adds a model's prices, replacing any it had; `model` is the name as it is looked
    /// up (see the type's doc).
    pub fn insert(&mut self, model: impl Into<String>, price: ModelPrice) -> &mut Self {
        self.models.insert(model.into(), price);
        self
    }

    /// Adds every model of `other`, replacing those both tables list (a newer table over
    /// the shipped one).
    pub fn extend(&mut self, other: PriceTable) -> &mut Self {
        self.models.extend(other.models);
        self
    }

    /// The number of models listed.
    pub fn len(&self) -> usize {
        self.models.len()
    }

    /// Whether no model is listed.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// The entry listed under exactly `key`.
    pub fn get(&self, key: &str) -> Option<&ModelPrice> {
        self.models.get(key)
    }

    /// The entry for the model a provider named, by the rule in the type's doc, with the
    /// key it was found under. `provider` is the provider's telemetry name
    /// ([`Provider::name`](crate::provider::Provider::name)), when known.
    pub fn find(&self, model: &str, provider: Option<&str>) -> Option<(&str, &ModelPrice)> {
        // The exact name first, without building the other candidates: the usual case
        // costs one hash lookup and no allocation.
        if let Some((key, price)) = self.models.get_key_value(model) {
            return Some((key.as_str(), price));
        }
        let mut names: Vec<String> = vec![model.to_owned()];
        if let Some(prefix) = provider.and_then(table_prefix) {
            names.push(format!("{prefix}/{model}"));
        }
        if let Some((_, bare)) = model.rsplit_once('/') {
            names.push(bare.to_owned());
        }
        let undated: Vec<String> = names
            .iter()
            .filter_map(|name| without_date(name).map(str::to_owned))
            .collect();
        names.extend(undated);
        names
            .iter()
            .find_map(|name| self.models.get_key_value(name.as_str()))
            .map(|(key, price)| (key.as_str(), price))
    }

    /// What `usage` cost on `model` (found by [`PriceTable::find`]), synchronously or
    /// through the batch API; `None` when the model has no price in that mode.
    pub fn cost(
        &self,
        model: &str,
        provider: Option<&str>,
        usage: &Usage,
        batch: bool,
    ) -> Option<Cost> {
        self.find(model, provider)
            .and_then(|(_, price)| price.cost(usage, batch))
    }
}

/// The prefix LiteLLM's table lists a provider's models under, from the provider's
/// telemetry name (the OpenTelemetry GenAI provider names the providers report).
fn table_prefix(provider: &str) -> Option<&str> {
    Some(match provider {
        "gcp.gemini" => "gemini",
        "azure.ai.openai" => "azure",
        "gcp.vertex_ai" => "vertex_ai",
        "aws.bedrock" => "bedrock",
        "mistral_ai" => "mistral",
        "x_ai" => "xai",
        "" | "scripted" => return None,
        other => other,
    })
}

/// The name without its date suffix, when it has one: `-YYYY-MM-DD`, `-YYYYMMDD` or
/// `@YYYYMMDD`.
fn without_date(name: &str) -> Option<&str> {
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    // `-2024-08-06`: 11 bytes, dashes at 0, 5 and 8.
    if name.len() > 11 {
        let (stem, tail) = name.split_at(name.len() - 11);
        let t = tail.as_bytes();
        if t[0] == b'-'
            && t[5] == b'-'
            && t[8] == b'-'
            && digits(&tail[1..5])
            && digits(&tail[6..8])
            && digits(&tail[9..])
        {
            return Some(stem);
        }
    }
    // `-20250929` or `@20250929`: 9 bytes.
    if name.len() > 9 {
        let (stem, tail) = name.split_at(name.len() - 9);
        if (tail.starts_with('-') || tail.starts_with('@')) && digits(&tail[1..]) {
            return Some(stem);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn per_million(dollars: &str) -> Cost {
        // $/million tokens to $/token: six more decimal places.
        let per_token: Cost = dollars.parse().unwrap();
        Cost::from_pico_usd(per_token.as_pico_usd() / 1_000_000)
    }

    fn table() -> PriceTable {
        let mut table = PriceTable::empty();
        let rates = TokenRates::new(per_million("2.5"), per_million("10"));
        table.insert("gpt-4o", ModelPrice::new(rates));
        table.insert("gemini/gemini-2.5-flash", ModelPrice::new(rates));
        table.insert("azure/gpt-4o-mini", ModelPrice::new(rates));
        table.insert("claude-sonnet-4-5", ModelPrice::new(rates));
        table
    }

    #[test]
    fn a_name_is_found_exactly_then_by_provider_prefix_then_bare_then_undated() {
        let table = table();
        let key = |model: &str, provider: Option<&str>| table.find(model, provider).map(|f| f.0);
        assert_eq!(key("gpt-4o", None), Some("gpt-4o"));
        assert_eq!(key("gpt-4o-2024-08-06", Some("openai")), Some("gpt-4o"));
        assert_eq!(key("openai/gpt-4o", None), Some("gpt-4o"));
        assert_eq!(
            key("gemini-2.5-flash", Some("gcp.gemini")),
            Some("gemini/gemini-2.5-flash")
        );
        assert_eq!(
            key("gpt-4o-mini", Some("azure.ai.openai")),
            Some("azure/gpt-4o-mini")
        );
        assert_eq!(
            key("claude-sonnet-4-5-20250929", Some("anthropic")),
            Some("claude-sonnet-4-5")
        );
        assert_eq!(
            key("claude-sonnet-4-5@20250929", None),
            Some("claude-sonnet-4-5")
        );
        // No nearest name, no prefix match.
        assert_eq!(key("gpt-4o-mini", Some("openai")), None);
        assert_eq!(key("gpt-4", None), None);
        assert_eq!(key("gemini-2.5-flash", None), None);
        assert_eq!(key("gpt-4o-2024-08", None), None);
    }

    #[test]
    fn long_context_rates_apply_above_their_threshold_only() {
        let base = TokenRates::new(per_million("1.25"), per_million("10"));
        let long = TokenRates::new(per_million("2.5"), per_million("15"));
        let price = ModelPrice::new(base).with_long_context(LongContextRates::new(200_000, long));
        let usage = |input| Usage {
            input_tokens: input,
            output_tokens: 1_000,
            ..Usage::default()
        };
        // 200,000 × $1.25/M + 1,000 × $10/M = $0.25 + $0.01.
        assert_eq!(
            price.cost(&usage(200_000), false),
            Some(Cost::from_cents(26))
        );
        // 200,001 × $2.5/M + 1,000 × $15/M = $0.5000025 + $0.015.
        assert_eq!(
            price.cost(&usage(200_001), false).unwrap().to_string(),
            "$0.5150025"
        );
        // No batch price: no batch cost.
        assert_eq!(price.cost(&usage(10), true), None);
    }
}
