//! The state an [`IntentClient`](crate::IntentClient) and all its clones share: the
//! configuration the attempt loop reads and the running totals it adds to.
//!
//! It sits below both `client` (which builds it) and `attempt` (which runs calls against
//! it), so that neither has to reach into the other.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cache::ResponseCache;
use crate::cost::{Cost, CostTally};
use crate::decision::{DecisionClient, DecisionEvaluator, decision_client_for};
use crate::judge::{Judge, JudgeMode};
use crate::limits::{RateLimiter, RetryPolicy};
use crate::pricing::PriceTable;
use crate::provider::Provider;
use crate::result::Usage;
use crate::schema::TargetSchema;
use crate::telemetry::Telemetry;

/// Running totals of a client and all its clones.
#[derive(Debug, Default)]
pub(crate) struct Totals {
    pub model_calls: AtomicU64,
    pub input_tokens: AtomicU64,
    pub output_tokens: AtomicU64,
    pub cached_input_tokens: AtomicU64,
    pub cache_write_input_tokens: AtomicU64,
    pub reasoning_tokens: AtomicU64,
    /// What the calls with a price cost, in pico-dollars.
    pub priced_picos: AtomicU64,
    /// The models of calls with no price, each once (locked only for such a call).
    pub unpriced_models: Mutex<Vec<String>>,
}

impl Totals {
    /// Adds one model call's tokens.
    pub fn add(&self, usage: Usage) {
        self.input_tokens
            .fetch_add(usage.input_tokens, Ordering::Relaxed);
        self.output_tokens
            .fetch_add(usage.output_tokens, Ordering::Relaxed);
        self.cached_input_tokens
            .fetch_add(usage.cached_input_tokens, Ordering::Relaxed);
        self.cache_write_input_tokens
            .fetch_add(usage.cache_write_input_tokens, Ordering::Relaxed);
        self.reasoning_tokens
            .fetch_add(usage.reasoning_tokens, Ordering::Relaxed);
    }

    /// Adds what some calls cost.
    pub fn add_cost(&self, cost: &CostTally) {
        self.add_priced(cost.priced);
        for model in &cost.unpriced_models {
            self.add_unpriced(model);
        }
    }

    /// Adds the cost of calls with a price.
    pub fn add_priced(&self, cost: Cost) {
        self.priced_picos
            .fetch_add(cost.as_pico_usd(), Ordering::Relaxed);
    }

    /// Notes a model with no price.
    pub fn add_unpriced(&self, model: &str) {
        // A poisoned lock holds a whole list still: a push is one statement.
        let mut models = self
            .unpriced_models
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !models.iter().any(|m| m == model) {
            models.push(model.to_owned());
        }
    }

    /// What the calls cost so far.
    pub fn cost(&self) -> CostTally {
        CostTally {
            priced: Cost::from_pico_usd(self.priced_picos.load(Ordering::Relaxed)),
            unpriced_models: self
                .unpriced_models
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        }
    }
}

/// The configuration behind an `IntentClient`, with the caches and totals its clones share.
pub(crate) struct ClientInner {
    pub provider: Arc<dyn Provider>,
    pub judge: Option<Arc<dyn Judge>>,
    pub judge_mode: JudgeMode,
    pub judge_model: Option<String>,
    pub judge_fail_closed: bool,
    /// Answers decision questions (the DSL's `Binary`, `Choice`, `Score` methods).
    pub decisions: Arc<dyn DecisionClient>,
    /// Whether `decisions` was made from `provider` (no decision client was given): a
    /// batch job then makes its own from the job's provider, so that its decision items
    /// go through the batch API.
    pub decisions_from_provider: bool,
    /// Asked before the judge, when configured.
    pub decision_gate: Option<DecisionEvaluator>,
    pub max_attempts: u32,
    pub max_model_calls: Option<u32>,
    pub time_budget: Option<Duration>,
    pub max_input_chars: Option<usize>,
    pub rate_limiter: Option<RateLimiter>,
    pub cache: Option<Arc<dyn ResponseCache>>,
    pub retry_policy: RetryPolicy,
    pub model: Option<String>,
    pub temperature: Option<f32>,
    pub max_output_tokens: Option<u32>,
    /// Whether calls read the one JSON answer of a chatty reply unless their options
    /// say otherwise.
    pub recover_answer: bool,
    /// Shared with the routes' configurations: a call routed to a named provider adds
    /// to the client's totals.
    pub totals: Arc<Totals>,
    /// The configurations of the named providers' routes (see
    /// [`IntentClientBuilder::provider_named`](crate::IntentClientBuilder::provider_named)):
    /// this one with another provider; empty in a route's own configuration.
    pub routes: HashMap<String, Arc<ClientInner>>,
    /// What the client's spans and metrics say about its providers, and whether content
    /// is recorded.
    pub telemetry: Telemetry,
    /// Wrapped runtime schemas by their JSON text. Callers pass the same schema on every
    /// call; wrapping it (and compiling its validator, cached by the wrapped schema's
    /// address) on every call cost four times the rest of the call.
    pub runtime_schemas: Mutex<HashMap<String, Arc<TargetSchema>>>,
    /// Whether calls run inside a batch job: the per-call time budget does not apply
    /// there (a batch answers within hours); the job's own time limit does.
    pub in_batch: bool,
    /// In a batch job, the attempt from which answers are sent live rather than through
    /// the batch API (and priced at the synchronous rates).
    pub batch_live_from: Option<u32>,
    /// The prices calls are costed with.
    pub prices: Arc<PriceTable>,
    /// The budget in money of each call, unless its options set one.
    pub max_cost: Option<Cost>,
}

impl ClientInner {
    /// The same configuration for the items of a batch job: requests go to `provider`
    /// (the job's router), decision questions too unless the client was given its own
    /// decision client, and judge calls to `judge` (the job's, which keeps verdicts),
    /// with no rate limiter (the batch API has its own) and no per-call time budget (answers
    /// from attempt `live_from_attempt` on are sent live);
    /// totals are the job's own.
    pub fn for_batch(
        &self,
        provider: Arc<dyn Provider>,
        judge: Option<Arc<dyn Judge>>,
        live_from_attempt: Option<u32>,
    ) -> ClientInner {
        let decisions = if self.decisions_from_provider {
            decision_client_for(provider.clone())
        } else {
            self.decisions.clone()
        };
        ClientInner {
            provider,
            judge,
            judge_mode: self.judge_mode,
            judge_model: self.judge_model.clone(),
            judge_fail_closed: self.judge_fail_closed,
            decisions,
            decisions_from_provider: self.decisions_from_provider,
            decision_gate: self.decision_gate.clone(),
            max_attempts: self.max_attempts,
            max_model_calls: self.max_model_calls,
            time_budget: None,
            max_input_chars: self.max_input_chars,
            rate_limiter: None,
            cache: self.cache.clone(),
            retry_policy: self.retry_policy,
            model: self.model.clone(),
            temperature: self.temperature,
            max_output_tokens: self.max_output_tokens,
            recover_answer: self.recover_answer,
            totals: Arc::default(),
            routes: HashMap::new(),
            telemetry: self.telemetry.clone(),
            runtime_schemas: Mutex::default(),
            in_batch: true,
            batch_live_from: live_from_attempt,
            prices: self.prices.clone(),
            max_cost: self.max_cost,
        }
    }

    /// The same configuration with calls going to `provider` (a named route): the
    /// totals, cache, rate limiter, judge and decision client stay the client's.
    pub fn for_route(&self, provider: Arc<dyn Provider>) -> ClientInner {
        let mut telemetry = self.telemetry.clone();
        telemetry.primary = crate::telemetry::Endpoint::of(provider.as_ref());
        ClientInner {
            provider,
            judge: self.judge.clone(),
            judge_mode: self.judge_mode,
            judge_model: self.judge_model.clone(),
            judge_fail_closed: self.judge_fail_closed,
            decisions: self.decisions.clone(),
            decisions_from_provider: self.decisions_from_provider,
            decision_gate: self.decision_gate.clone(),
            max_attempts: self.max_attempts,
            max_model_calls: self.max_model_calls,
            time_budget: self.time_budget,
            max_input_chars: self.max_input_chars,
            rate_limiter: self.rate_limiter.clone(),
            cache: self.cache.clone(),
            retry_policy: self.retry_policy,
            model: self.model.clone(),
            temperature: self.temperature,
            max_output_tokens: self.max_output_tokens,
            recover_answer: self.recover_answer,
            totals: Arc::clone(&self.totals),
            routes: HashMap::new(),
            telemetry,
            runtime_schemas: Mutex::default(),
            in_batch: self.in_batch,
            batch_live_from: self.batch_live_from,
            prices: self.prices.clone(),
            max_cost: self.max_cost,
        }
    }
}
