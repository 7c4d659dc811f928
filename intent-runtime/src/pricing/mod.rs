//! Cost in money: the price table per model, the cost of each model call from its usage,
//! the cost of a call ([`AIResult::cost`]) and the money budget checked before each
//! attempt.
//!
//! # The shipped table
//!
//! `model_prices.json`, next to this file, is the part of LiteLLM's community table
//! (`model_prices_and_context_window.json`, version 1.106.12, MIT licence: see
//! `LICENSE-litellm` beside it) for the chat models of OpenAI, Anthropic, Gemini,
//! Mistral, DeepSeek and xAI, with only the fields read here, in the same format. It is
//! rebuilt by keeping, from a newer copy of that file, the entries of those providers
//! whose `mode` is `chat` or `responses` and that have an input and an output price per
//! token, with their `litellm_provider`, `mode`, `max_output_tokens` and the price fields
//! of [`PriceTable::from_litellm_json`]. Prices change: a user who needs today's gives
//! the client a table of their own ([`IntentClientBuilder::price_table`]).
//!
//! # What is priced
//!
//! Each model call of an attempt is priced on the model that answered it, found in the
//! client's table by the rule of [`PriceTable::find`]: the answer on the model its reply
//! names, the judge's call on the judge's reply's model, the decision gate's on the
//! gate's [`DecisionEvaluator::with_model`](crate::decision::DecisionEvaluator::with_model)
//! model. A call whose model has no price adds no cost: the attempt's
//! [`CostTally`] names the model, the call's [`AIResult::cost`] is an
//! [`UnpricedModels`] error, and a warning is logged once per model per process. A cost
//! is never guessed. A reply served from the response cache cost nothing.
//!
//! Inside a batch job, answers sent through the batch API are priced at the model's
//! batch rates (a model with no batch price has no cost there); the judge's calls and the
//! attempts sent live ([`BatchOptions::live_from_attempt`](crate::batch::BatchOptions::live_from_attempt))
//! at the synchronous ones.
//!
//! [`IntentClientBuilder::price_table`]: crate::IntentClientBuilder::price_table

mod budget;
mod litellm;
mod table;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

pub(crate) use budget::{BudgetCheck, refusal};
pub use litellm::PriceTableError;
pub use table::{LongContextRates, ModelPrice, PriceTable, TokenRates};

use crate::cost::{Cost, CostTally, UnpricedModels};
use crate::result::{AIResult, Usage};

/// The shipped table's text (see the module doc).
const SHIPPED: &str = include_str!("model_prices.json");

impl PriceTable {
    /// The table the crate ships: LiteLLM's prices (version 1.106.12) for the chat models
    /// of OpenAI, Anthropic, Gemini, Mistral, DeepSeek and xAI. Read once per process.
    pub fn shipped() -> PriceTable {
        PriceTable::clone(&shipped_shared())
    }
}

/// The shipped table, read once and shared by every client that keeps the default.
pub(crate) fn shipped_shared() -> Arc<PriceTable> {
    static TABLE: OnceLock<Arc<PriceTable>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            // The file is the crate's own and a unit test reads it: it cannot fail here
            // unless the crate was altered, and then an empty table (no cost, said so
            // per model) is the honest answer.
            Arc::new(PriceTable::from_litellm_json(SHIPPED).unwrap_or_default())
        })
        .clone()
}

/// One model call to price: its model, the provider it went to, its tokens, and whether
/// it went through a batch API.
pub(crate) struct PricedCall<'a> {
    pub model: &'a str,
    pub provider: Option<&'a str>,
    pub usage: &'a Usage,
    pub batch: bool,
}

/// What one model call cost: `Some(zero)` for a call that reported no tokens (it needs no
/// price), `None` when its model has no price in that mode (said once per process).
pub(crate) fn price(prices: &PriceTable, call: PricedCall<'_>) -> Option<Cost> {
    if *call.usage == Usage::default() {
        return Some(Cost::ZERO);
    }
    let cost = prices.cost(call.model, call.provider, call.usage, call.batch);
    if cost.is_none() {
        warn_once(call.model, call.batch);
    }
    cost
}

/// Logs once per model (and mode) per process that a model has no price.
fn warn_once(model: &str, batch: bool) {
    if first_warning(model, batch) {
        let mode = if batch { " batch" } else { "" };
        tracing::warn!(
            model,
            batch,
            "the model `{model}` has no{mode} price in the client's price table: its calls have no cost, and a money budget cannot be checked against it; add it with `PriceTable::insert` or load a newer table"
        );
    }
}

/// Whether this process has not yet warned about `model` (in this mode), noting that it
/// now has. A model met again is looked up without allocating.
fn first_warning(model: &str, batch: bool) -> bool {
    // The synchronous and the batch mode's models.
    static WARNED: Mutex<[Option<HashSet<String>>; 2]> = Mutex::new([None, None]);
    match WARNED.lock() {
        Ok(mut warned) => {
            let seen = warned[usize::from(batch)].get_or_insert_with(HashSet::new);
            !seen.contains(model) && seen.insert(model.to_owned())
        }
        // A poisoned set only means another thread panicked while noting a model: warn
        // again rather than never.
        Err(_) => true,
    }
}

impl<T> AIResult<T> {
    /// What the call cost in US dollars: every attempt's model calls, retries, the
    /// decision gate's and the judge's included, each priced on the model that answered
    /// it with the client's price table (see the [`pricing`](crate::pricing) module).
    ///
    /// An [`UnpricedModels`] error names the models that answered some call and have no
    /// price, with the cost of the calls that had one: a cost is never guessed.
    pub fn cost(&self) -> Result<Cost, UnpricedModels> {
        self.cost_tally().total()
    }

    /// The call's cost as a tally: the priced part and the models with no price.
    pub fn cost_tally(&self) -> CostTally {
        let mut tally = CostTally::default();
        for attempt in &self.attempts {
            tally += &attempt.cost;
        }
        tally
    }
}

/// The total cost of many calls (an evaluation, a batch job's results): the sum when
/// every call had a price, else the models that had none with the priced part.
pub fn total_cost<'a, T: 'a>(
    results: impl IntoIterator<Item = &'a AIResult<T>>,
) -> Result<Cost, UnpricedModels> {
    let mut tally = CostTally::default();
    for result in results {
        tally += &result.cost_tally();
    }
    tally.total()
}

#[cfg(test)]
mod tests;
