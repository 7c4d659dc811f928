//! [`IntentClient`]: the entry point. Cheap to clone and shared across tasks; built by
//! [`IntentClientBuilder`], which reports every configuration mistake from `build()`.

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::attempt::{CallSettings, run_attempts};
use crate::cache::{InMemoryCache, ResponseCache};
use crate::cost::{Cost, CostTally, UnpricedModels};
use crate::decision::{
    DecisionClient, DecisionError, DecisionEvaluator, DecisionRequest, DecisionResponse,
    decision_client_for,
};
use crate::input::{InputError, PreparedInput, check_input_size, prepare_input};
use crate::judge::{Judge, JudgeMode, ModelJudge};
use crate::limits::{Deadline, RateLimiter, RetryPolicy};
use crate::options::{Example, IntentOptions, Overrides, Validator};
use crate::pricing::PriceTable;
use crate::prompt::{OutputTarget, PromptPlan};
use crate::provider::{Provider, ProviderError, ProviderErrorKind, ProviderReply, ProviderRequest};
use crate::result::{AIResult, IssueDetail, IssueSource, NotSent, ResultIssue, Usage};
use crate::schema::{
    SchemaError, TargetSchema, check_runtime_schema_depth, runtime_target_schema, target_schema,
};
use crate::shared::ClientInner;
use crate::stream::{EventSink, IntentStream, Partial, event_queue};
use crate::telemetry::{Endpoint, Telemetry};
use crate::verify::schema_rules::compile_error;
use crate::verify::{
    AnswerRecovery, Verification, verify_text, verify_typed, verify_typed_with, verify_value,
    verify_value_with,
};

/// The default number of attempts per call.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// How many distinct runtime schemas a client keeps wrapped; past that the kept ones are
/// dropped and wrapped again on their next use.
const RUNTIME_SCHEMA_CACHE_CAPACITY: usize = 64;

/// Runs intents against a model: plans the prompt, calls the provider, verifies, judges
/// and retries.
///
/// Cloning is cheap (one `Arc`); clones share the provider, the cache, the rate limiter
/// and the running totals.
///
/// ```
/// use intent_rs::IntentClient;
/// use intent_rs::provider::ScriptedProvider;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let client = IntentClient::builder()
///     .provider(ScriptedProvider::new([r#"{"value": 3}"#]))
///     .build()
///     .unwrap();
/// let count: u32 = client
///     .transform("one two three", "Count the words", Default::default())
///     .await
///     .into_result()
///     .unwrap();
/// assert_eq!(count, 3);
/// # });
/// ```
#[derive(Clone)]
pub struct IntentClient {
    inner: Arc<ClientInner>,
    /// Set by [`IntentClient::with_options`]; shared so that cloning stays cheap.
    overrides: Option<Arc<Overrides>>,
}

impl fmt::Debug for IntentClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &self.inner;
        f.debug_struct("IntentClient")
            .field("provider", &inner.provider)
            .field("judge_mode", &inner.judge_mode)
            .field("judge_model", &inner.judge_model)
            .field("decisions", &inner.decisions)
            .field("decision_gate", &inner.decision_gate)
            .field("max_attempts", &inner.max_attempts)
            .field("max_model_calls", &inner.max_model_calls)
            .field("max_cost", &inner.max_cost)
            .field("time_budget", &inner.time_budget)
            .field("max_input_chars", &inner.max_input_chars)
            .field("rate_limiter", &inner.rate_limiter)
            .field("cache", &inner.cache)
            .field("model", &inner.model)
            .field("temperature", &inner.temperature)
            .field("overrides", &self.overrides)
            .finish_non_exhaustive()
    }
}

impl IntentClient {
    /// A builder; only the provider is required.
    pub fn builder() -> IntentClientBuilder {
        IntentClientBuilder::default()
    }

    /// A copy of this client whose calls use `overrides` over the methods' attributes,
    /// the call options and the client's defaults. Overrides given to a copy add to (and
    /// replace field by field) those it already has. The copy shares the provider, the
    /// cache, the rate limiter and the totals with this client.
    ///
    /// ```
    /// use intent_rs::{IntentClient, Overrides};
    /// use intent_rs::provider::ScriptedProvider;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let model = ScriptedProvider::new([r#"{"value": 3}"#]);
    /// let client = IntentClient::builder().provider(model.clone()).build().unwrap();
    /// let exact = client.with_options(Overrides::new().model("big").temperature(0.0));
    /// let count: u32 = exact
    ///     .transform("one two three", "Count the words", Default::default())
    ///     .await
    ///     .into_result()
    ///     .unwrap();
    /// assert_eq!(count, 3);
    /// assert_eq!(model.requests()[0].model.as_deref(), Some("big"));
    /// assert_eq!(client.total_model_calls(), 1); // the copy shares the totals
    /// # });
    /// ```
    pub fn with_options(&self, overrides: Overrides) -> IntentClient {
        let overrides = match &self.overrides {
            Some(current) => current.merged(overrides),
            None => overrides,
        };
        IntentClient {
            inner: Arc::clone(&self.inner),
            overrides: Some(Arc::new(overrides)),
        }
    }

    /// The overrides this client copy applies to every call (see
    /// [`IntentClient::with_options`]); `None` for a client straight from its builder.
    pub fn overrides(&self) -> Option<&Overrides> {
        self.overrides.as_deref()
    }

    /// Answers `request` with the client's decision client (see
    /// [`IntentClientBuilder::decision_client`]). The call is made once: a decision
    /// client never retries.
    pub async fn decide(
        &self,
        request: &DecisionRequest,
    ) -> Result<DecisionResponse, DecisionError> {
        self.inner.decisions.decide(request).await
    }

    /// The decision client that answers [`decide`](Self::decide) and the generated
    /// decision methods.
    pub fn decision_client(&self) -> &Arc<dyn DecisionClient> {
        &self.inner.decisions
    }

    /// Model calls made so far by this client and its clones, judge calls included.
    pub fn total_model_calls(&self) -> u64 {
        self.inner.totals.model_calls.load(Ordering::Relaxed)
    }

    /// What this client and its clones have spent so far, batch jobs included; an
    /// [`UnpricedModels`] error when some call's model had no price (with the priced
    /// part).
    pub fn total_cost(&self) -> Result<Cost, UnpricedModels> {
        self.inner.totals.cost().total()
    }

    /// Tokens used so far by this client and its clones.
    pub fn total_usage(&self) -> Usage {
        Usage {
            input_tokens: self.inner.totals.input_tokens.load(Ordering::Relaxed),
            output_tokens: self.inner.totals.output_tokens.load(Ordering::Relaxed),
            cached_input_tokens: self
                .inner
                .totals
                .cached_input_tokens
                .load(Ordering::Relaxed),
            cache_write_input_tokens: self
                .inner
                .totals
                .cache_write_input_tokens
                .load(Ordering::Relaxed),
            reasoning_tokens: self.inner.totals.reasoning_tokens.load(Ordering::Relaxed),
        }
    }

    /// The prices this client costs its calls with.
    pub fn price_table(&self) -> &PriceTable {
        &self.inner.prices
    }

    /// The client with a route for each named provider; built once, so a routed call
    /// costs one map lookup.
    fn with_routes(mut self, named: Vec<(String, Arc<dyn Provider>)>) -> Self {
        if named.is_empty() {
            return self;
        }
        let routes = named
            .into_iter()
            .map(|(name, provider)| (name, Arc::new(self.inner.for_route(provider))))
            .collect();
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.routes = routes;
        }
        self
    }

    /// The names of the providers calls can choose (see
    /// [`IntentClientBuilder::provider_named`]), sorted.
    pub fn provider_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.inner.routes.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// Checks that this client has every provider in `names` (what a generated client's
    /// methods name, its `PROVIDERS`), for `client`, the type that needs them; the
    /// generated `try_new` calls it, so that a missing provider is found when the client
    /// is made, not at the first call.
    pub fn check_providers(&self, client: &str, names: &[&str]) -> Result<(), UnknownProvider> {
        let missing = names
            .iter()
            .find(|name| !self.inner.routes.contains_key(**name));
        match missing {
            None => Ok(()),
            Some(name) => Err(UnknownProvider {
                client: client.to_owned(),
                name: (*name).to_owned(),
                known: self
                    .provider_names()
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
            }),
        }
    }

    /// The configuration a call runs against: its named provider's route (the
    /// overrides' name first, then the call's), or the client's own. A name the client
    /// lacks, or any name inside a batch job (whose items all go through one provider's
    /// batch API), is a configuration failure before anything is sent.
    fn routed<T>(&self, options: &IntentOptions<T>) -> Result<&ClientInner, ResultIssue> {
        let name = self
            .overrides
            .as_deref()
            .and_then(|overrides| overrides.provider.as_deref())
            .or(options.provider.as_deref());
        let Some(name) = name else {
            return Ok(&self.inner);
        };
        if let Some(route) = self.inner.routes.get(name) {
            return Ok(route);
        }
        let message = if self.inner.in_batch {
            format!(
                "the call names provider `{name}`, but a batch job sends every item through \
                 one provider's batch API (the client's default provider, or \
                 `BatchOptions::provider`); run this method live, or run the batch job on a \
                 client whose default provider is `{name}`'s; nothing was sent"
            )
        } else {
            let known = self.provider_names();
            format!(
                "the call names provider `{name}`, which this client does not have (it \
                 has: {}); add it with `IntentClient::builder().provider_named(\"{name}\", ...)`; \
                 nothing was sent",
                if known.is_empty() {
                    "none by name".to_owned()
                } else {
                    known.join(", ")
                }
            )
        };
        Err(
            ResultIssue::new(IssueSource::Input, message, 1).with_detail(IssueDetail::NotSent(
                NotSent::Configuration {
                    provider: name.to_owned(),
                },
            )),
        )
    }

    /// The shared configuration (for a batch job's driver).
    pub(crate) fn inner(&self) -> &ClientInner {
        &self.inner
    }

    /// This client's overrides on a batch job's configuration, whose provider is `provider`
    /// and whose judge is `judge`.
    pub(crate) fn for_batch(
        &self,
        provider: Arc<dyn Provider>,
        judge: Option<Arc<dyn Judge>>,
        live_from_attempt: Option<u32>,
    ) -> IntentClient {
        IntentClient {
            inner: Arc::new(self.inner.for_batch(provider, judge, live_from_attempt)),
            overrides: self.overrides.clone(),
        }
    }

    /// Adds a batch job's model calls and tokens to this client's totals.
    pub(crate) fn add_totals(&self, model_calls: u64, usage: Usage, cost: &CostTally) {
        self.inner
            .totals
            .model_calls
            .fetch_add(model_calls, Ordering::Relaxed);
        self.inner.totals.add(usage);
        self.inner.totals.add_cost(cost);
    }

    /// [`IntentClient::transform_value`] with an input already prepared.
    pub(crate) async fn transform_value_prepared(
        &self,
        input: Result<PreparedInput, InputError>,
        intent: &str,
        schema: Option<&Value>,
        options: IntentOptions<Value>,
    ) -> AIResult<Value> {
        let target = match schema.map(|schema| self.runtime_schema(schema)).transpose() {
            Ok(target) => target,
            Err(error) => return preflight_failure(error.to_string(), Instant::now()),
        };
        self.transform_value_input(input, intent, target, options)
            .await
    }

    /// Carries out `intent` on `input` and returns a value of type `T`.
    ///
    /// A `String` target asks for plain text; any other `T` asks for the `{"value": ...}`
    /// envelope with `T`'s strict schema (or JSON-object mode when the schema cannot be
    /// strict, or when `options.json_mode` is set).
    pub async fn transform<I, T>(
        &self,
        input: &I,
        intent: &str,
        options: IntentOptions<T>,
    ) -> AIResult<T>
    where
        I: Serialize + JsonSchema + ?Sized,
        T: DeserializeOwned + JsonSchema + Send + 'static,
    {
        self.transform_input(prepare_input(input), intent, options)
            .await
    }

    /// [`IntentClient::transform`] with an input prepared by hand: images and documents
    /// (`PreparedInput::from(image)`, [`PreparedInput::with_media`]) beside or instead of
    /// a serialized value.
    pub async fn transform_prepared<T>(
        &self,
        input: PreparedInput,
        intent: &str,
        options: IntentOptions<T>,
    ) -> AIResult<T>
    where
        T: DeserializeOwned + JsonSchema + Send + 'static,
    {
        self.transform_input(Ok(input), intent, options).await
    }

    /// [`IntentClient::transform`] with an input that was already prepared, or failed to
    /// be (the generated clients prepare several parameters as one object, and report a
    /// failure to prepare as the call's first issue).
    pub(crate) async fn transform_input<T>(
        &self,
        input: Result<PreparedInput, InputError>,
        intent: &str,
        options: IntentOptions<T>,
    ) -> AIResult<T>
    where
        T: DeserializeOwned + JsonSchema + Send + 'static,
    {
        self.call_input(input, intent, options, None).await
    }

    /// [`IntentClient::transform`], streamed: the value as the model writes it, then the
    /// same record `transform` returns, verified, judged and retried the same way (see
    /// [`crate::stream`]).
    ///
    /// ```
    /// use intent_rs::IntentClient;
    /// use intent_rs::provider::ScriptedProvider;
    /// use intent_rs::stream::StreamEvent;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let model = ScriptedProvider::new([r#"{"value": [1, 2, 3]}"#]).with_stream_chunks(4, None);
    /// let client = IntentClient::builder().provider(model).build().unwrap();
    /// let mut events = client.transform_stream("a b c", "Number the words", Default::default());
    /// while let Some(event) = events.next().await {
    ///     match event {
    ///         StreamEvent::Partial { value, .. } => println!("so far: {value:?}"),
    ///         StreamEvent::Retry { problems, .. } => println!("again, because of {problems:?}"),
    ///         StreamEvent::Final(result) => {
    ///             let numbers: Vec<u32> = result.into_result().unwrap();
    ///             assert_eq!(numbers, [1, 2, 3]);
    ///         }
    ///     }
    /// }
    /// # });
    /// ```
    pub fn transform_stream<I, T>(
        &self,
        input: &I,
        intent: &str,
        options: IntentOptions<T>,
    ) -> IntentStream<T>
    where
        I: Serialize + JsonSchema + ?Sized,
        T: DeserializeOwned + JsonSchema + Partial + Send + 'static,
    {
        self.transform_stream_input(prepare_input(input), intent, options)
    }

    /// [`IntentClient::transform_stream`] with an input that was already prepared.
    pub(crate) fn transform_stream_input<T>(
        &self,
        input: Result<PreparedInput, InputError>,
        intent: &str,
        options: IntentOptions<T>,
    ) -> IntentStream<T>
    where
        T: DeserializeOwned + JsonSchema + Partial + Send + 'static,
    {
        let (sink, events) = event_queue();
        let client = self.clone();
        let intent = intent.to_owned();
        let call = async move {
            client
                .call_input(input, &intent, options, Some(&sink))
                .await
        };
        let text_target = TypeId::of::<T>() == TypeId::of::<String>();
        IntentStream::new(Box::pin(call), events, text_target)
    }

    /// `transform_value_input`, streamed (see [`IntentClient::transform_stream`]); the
    /// partials are the value once complete.
    pub(crate) fn transform_value_stream_input(
        &self,
        input: Result<PreparedInput, InputError>,
        intent: &str,
        schema: Option<Arc<TargetSchema>>,
        options: IntentOptions<Value>,
    ) -> IntentStream<Value> {
        let (sink, events) = event_queue();
        let client = self.clone();
        let intent = intent.to_owned();
        let call = async move {
            client
                .value_call(input, &intent, schema, options, Some(&sink))
                .await
        };
        IntentStream::new(Box::pin(call), events, false)
    }

    /// One call of a typed (or text, or any-JSON) target, streamed when `events` is set.
    async fn call_input<T>(
        &self,
        input: Result<PreparedInput, InputError>,
        intent: &str,
        options: IntentOptions<T>,
        events: Option<&EventSink>,
    ) -> AIResult<T>
    where
        T: DeserializeOwned + JsonSchema + Send + 'static,
    {
        let started = Instant::now();
        let input = match self.checked_input(input) {
            Ok(input) => input,
            Err(error) => return input_error_failure(error, started),
        };
        if TypeId::of::<T>() == TypeId::of::<String>() {
            return self.transform_text(input, intent, options, events).await;
        }
        if TypeId::of::<T>() == TypeId::of::<Value>() {
            // A `Value` has no fixed shape: it is a runtime shape without a schema.
            return self
                .transform_any_json(input, intent, options, events)
                .await;
        }
        let schema = match target_schema::<T>() {
            Ok(schema) => schema,
            Err(error) => return preflight_failure(error.to_string(), started),
        };
        let fits = |reply: &ProviderReply| verify_typed::<T>(reply, &schema, &[], 1).issues;
        if let Err(misfit) = check_examples(intent, &options.examples, fits) {
            return preflight_failure(misfit, started);
        }
        let target = OutputTarget::typed(schema.clone(), options.json_mode);
        let plan = self.plan(intent, input, target, &options);
        let inner = match self.routed(&options) {
            Ok(inner) => inner,
            Err(issue) => return preflight_issue(issue, Instant::now()),
        };
        let settings = self.settings(&options);
        let recovery = self.recovery(&options);
        let validators = options.validators;
        run_attempts(inner, plan, &settings, events, move |reply, attempt| {
            verify_typed_with::<T>(reply, &schema, &validators, attempt, recovery)
        })
        .await
    }

    // `T` is `String` here; the value and the validators cross over through `Any`.
    async fn transform_text<T>(
        &self,
        input: PreparedInput,
        intent: &str,
        options: IntentOptions<T>,
        events: Option<&EventSink>,
    ) -> AIResult<T>
    where
        T: Send + 'static,
    {
        let validators = retype_validators::<T, String>(&options.validators);
        let plan = self.plan(intent, input, OutputTarget::Text, &options);
        let inner = match self.routed(&options) {
            Ok(inner) => inner,
            Err(issue) => return preflight_issue(issue, Instant::now()),
        };
        let settings = self.settings(&options);
        run_attempts(inner, plan, &settings, events, move |reply, attempt| {
            retype_verification(verify_text(reply, &validators, attempt))
        })
        .await
    }

    // `T` is `serde_json::Value` here: a runtime shape without a schema.
    async fn transform_any_json<T>(
        &self,
        input: PreparedInput,
        intent: &str,
        options: IntentOptions<T>,
        events: Option<&EventSink>,
    ) -> AIResult<T>
    where
        T: Send + 'static,
    {
        let fits = |reply: &ProviderReply| verify_value(reply, None, &[], 1).issues;
        if let Err(misfit) = check_examples(intent, &options.examples, fits) {
            return preflight_failure(misfit, Instant::now());
        }
        let validators = retype_validators::<T, Value>(&options.validators);
        let plan = self.plan(intent, input, OutputTarget::AnyJson, &options);
        let inner = match self.routed(&options) {
            Ok(inner) => inner,
            Err(issue) => return preflight_issue(issue, Instant::now()),
        };
        let settings = self.settings(&options);
        let recovery = self.recovery(&options);
        run_attempts(inner, plan, &settings, events, move |reply, attempt| {
            retype_verification(verify_value_with(
                reply,
                None,
                &validators,
                attempt,
                recovery,
            ))
        })
        .await
    }

    /// Carries out `intent` on `input` and returns a JSON value shaped by `schema` (a
    /// runtime shape). With no schema, any JSON value is asked for in JSON-object mode.
    pub async fn transform_value<I>(
        &self,
        input: &I,
        intent: &str,
        schema: Option<&Value>,
        options: IntentOptions<Value>,
    ) -> AIResult<Value>
    where
        I: Serialize + JsonSchema + ?Sized,
    {
        let target = match schema.map(|schema| self.runtime_schema(schema)).transpose() {
            Ok(target) => target,
            Err(error) => return preflight_failure(error.to_string(), Instant::now()),
        };
        self.transform_value_input(prepare_input(input), intent, target, options)
            .await
    }

    /// [`IntentClient::transform_value`] with a prepared input and a prepared schema.
    ///
    /// The whole schema is compiled before any request: one that is not a valid JSON
    /// Schema (an unknown `type`, a `$ref` to a missing definition, a `pattern` that is no
    /// regular expression, an external `$ref`) fails the call with an input issue and no
    /// model call, since no reply could ever be checked against it.
    pub(crate) async fn transform_value_input(
        &self,
        input: Result<PreparedInput, InputError>,
        intent: &str,
        schema: Option<Arc<TargetSchema>>,
        options: IntentOptions<Value>,
    ) -> AIResult<Value> {
        self.value_call(input, intent, schema, options, None).await
    }

    /// One call of a runtime shape, streamed when `events` is set.
    async fn value_call(
        &self,
        input: Result<PreparedInput, InputError>,
        intent: &str,
        schema: Option<Arc<TargetSchema>>,
        options: IntentOptions<Value>,
        events: Option<&EventSink>,
    ) -> AIResult<Value> {
        let started = Instant::now();
        let input = match self.checked_input(input) {
            Ok(input) => input,
            Err(error) => return input_error_failure(error, started),
        };
        if let Some(reason) = schema
            .as_ref()
            .and_then(|schema| compile_error(&schema.full))
        {
            return preflight_failure(
                format!(
                    "the runtime schema is not a valid JSON Schema ({reason}); fix the schema \
                     (external references are never fetched)"
                ),
                started,
            );
        }
        let fits = |reply: &ProviderReply| verify_value(reply, schema.as_deref(), &[], 1).issues;
        if let Err(misfit) = check_examples(intent, &options.examples, fits) {
            return preflight_failure(misfit, started);
        }
        let target = match &schema {
            Some(schema) => OutputTarget::RuntimeSchema(schema.clone()),
            None => OutputTarget::AnyJson,
        };
        let plan = self.plan(intent, input, target, &options);
        let inner = match self.routed(&options) {
            Ok(inner) => inner,
            Err(issue) => return preflight_issue(issue, Instant::now()),
        };
        let settings = self.settings(&options);
        let recovery = self.recovery(&options);
        let validators = options.validators;
        run_attempts(inner, plan, &settings, events, move |reply, attempt| {
            verify_value_with(reply, schema.as_deref(), &validators, attempt, recovery)
        })
        .await
    }

    /// The envelope around a runtime schema, wrapped once per distinct schema.
    fn runtime_schema(&self, schema: &Value) -> Result<Arc<TargetSchema>, SchemaError> {
        // Before the key: serializing an over-deep schema would overflow the stack.
        check_runtime_schema_depth(schema)?;
        let key = schema.to_string();
        let cached = lock(&self.inner.runtime_schemas).get(&key).cloned();
        if let Some(cached) = cached {
            return Ok(cached);
        }
        // Built outside the lock: other calls need not wait for this schema.
        let built = Arc::new(runtime_target_schema(schema)?);
        let mut schemas = lock(&self.inner.runtime_schemas);
        if schemas.len() >= RUNTIME_SCHEMA_CACHE_CAPACITY {
            schemas.clear();
        }
        Ok(Arc::clone(schemas.entry(key).or_insert(built)))
    }

    fn checked_input(
        &self,
        input: Result<PreparedInput, InputError>,
    ) -> Result<PreparedInput, InputError> {
        let input = input?;
        check_input_size(&input, self.inner.max_input_chars)?;
        Ok(input)
    }

    fn plan<T>(
        &self,
        intent: &str,
        input: PreparedInput,
        target: OutputTarget,
        options: &IntentOptions<T>,
    ) -> PromptPlan {
        PromptPlan {
            intent: intent.to_owned(),
            input,
            target,
            examples: options.examples.clone(),
            system: options.system.clone(),
            output_requirements: options.output_requirements.clone(),
            // Decided by the attempt loop, which asks the provider once per call.
            schema_enforced: false,
        }
    }

    /// The call's answer recovery: its options' switch, else the client's.
    fn recovery<T>(&self, options: &IntentOptions<T>) -> AnswerRecovery {
        AnswerRecovery::from_switch(options.recover_answer.unwrap_or(self.inner.recover_answer))
    }

    fn settings<T>(&self, options: &IntentOptions<T>) -> CallSettings {
        let inner = &self.inner;
        let use_judge = inner.judge.is_some()
            && match inner.judge_mode {
                JudgeMode::Never => false,
                JudgeMode::OnRequest => options.use_judge,
                JudgeMode::Always => true,
            };
        // Precedence: the caller's overrides, then the call's options (a method's
        // attributes), then the client's defaults.
        let overrides = self.overrides.as_deref();
        let model = overrides.and_then(|o| o.model.as_ref());
        let time_budget = overrides.and_then(|o| o.time_budget);
        CallSettings {
            max_attempts: overrides
                .and_then(|o| o.max_attempts)
                .or(options.max_attempts)
                .unwrap_or(inner.max_attempts),
            max_model_calls: options.max_model_calls.or(inner.max_model_calls),
            max_cost: options.max_cost.or(inner.max_cost),
            deadline: Deadline::after(
                Instant::now(),
                time_budget
                    .or(options.time_budget)
                    .or(inner.time_budget)
                    .filter(|_| !inner.in_batch),
            ),
            use_judge,
            model: model
                .or(options.model.as_ref())
                .or(inner.model.as_ref())
                .cloned(),
            temperature: overrides
                .and_then(|o| o.temperature)
                .or(options.temperature)
                .or(inner.temperature),
            max_output_tokens: options.max_output_tokens.or(inner.max_output_tokens),
            method: options.method.clone(),
            target_type: std::any::type_name::<T>(),
        }
    }
}

/// Locks `mutex`; a panic elsewhere cannot leave a half-written entry (entries are
/// inserted whole), so a poisoned lock is still sound to use.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn cast<A: 'static, B: 'static>(value: A) -> Option<B> {
    (Box::new(value) as Box<dyn Any>)
        .downcast::<B>()
        .ok()
        .map(|boxed| *boxed)
}

/// Validators of `T` as validators of `U`, for `T` and `U` the same type known apart only
/// at run time (the caller compared their `TypeId`s).
fn retype_validators<T: 'static, U: 'static>(validators: &[Validator<T>]) -> Vec<Validator<U>> {
    validators
        .iter()
        .map(|validator| {
            let validator = validator.clone();
            Arc::new(
                move |value: &U| match (value as &dyn Any).downcast_ref::<T>() {
                    Some(value) => validator(value),
                    None => Vec::new(),
                },
            ) as Validator<U>
        })
        .collect()
}

fn retype_verification<U: 'static, T: 'static>(verification: Verification<U>) -> Verification<T> {
    Verification {
        value: verification.value.and_then(cast::<U, T>),
        issues: verification.issues,
        repairs: verification.repairs,
        truncated: verification.truncated,
    }
}

/// The most characters of an example's output quoted when it does not fit the target.
const EXAMPLE_OUTPUT_SHOWN: usize = 120;

/// Checks each example's output as if the model had sent it: an example that does not fit
/// the target would teach the model a shape the verifier then rejects, so the call fails
/// before any request, naming the example. `issues` verifies one reply.
fn check_examples(
    intent: &str,
    examples: &[Example],
    issues: impl Fn(&ProviderReply) -> Vec<ResultIssue>,
) -> Result<(), String> {
    for (number, example) in (1..).zip(examples) {
        let found = issues(&ProviderReply::text(example.output.as_str()));
        if !found.is_empty() {
            let problems: Vec<&str> = found.iter().map(|issue| issue.message.as_str()).collect();
            // The verifier's messages never quote a reply's values; the example is the
            // caller's own text, so its output is shown for them to find the fault.
            let output = crate::prompt::cut_chars(example.output.trim(), EXAMPLE_OUTPUT_SHOWN);
            return Err(format!(
                "example {number} of the intent {intent:?} (input {:?}, output {output:?}) does not fit the target, so it was not sent: {}",
                example.input,
                problems.join(" ")
            ));
        }
    }
    Ok(())
}

/// A result for a request that could not be built: no model was called.
fn preflight_failure<T>(message: String, started: Instant) -> AIResult<T> {
    let issue = ResultIssue::new(IssueSource::Input, message, 1)
        .with_detail(IssueDetail::NotSent(NotSent::InvalidInput));
    preflight_issue(issue, started)
}

/// A result for an input that could not be prepared or is over the size limit.
fn input_error_failure<T>(error: InputError, started: Instant) -> AIResult<T> {
    preflight_issue(error.issue(), started)
}

fn preflight_issue<T>(issue: ResultIssue, started: Instant) -> AIResult<T> {
    AIResult {
        value: None,
        issues: vec![issue],
        attempts: Vec::new(),
        usage: Usage::default(),
        elapsed: started.elapsed(),
    }
}

/// The provider of a client built for decision questions only: every intent call fails
/// before anything is sent, saying what to configure.
#[derive(Debug)]
struct DecisionsOnly;

#[async_trait::async_trait]
impl Provider for DecisionsOnly {
    fn name(&self) -> &str {
        "no provider"
    }

    // Not empty: the preflight refuses an empty model name with advice about models,
    // and the advice this client needs is about the missing provider.
    fn default_model(&self) -> &str {
        "none"
    }

    async fn complete(&self, _request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        Err(ProviderError::new(
            ProviderErrorKind::Configuration,
            "no provider",
            "this client was built with a decision client only; give it a provider with \
             `.provider(...)` on the builder to call intent methods",
        ))
    }
}

crate::failure::debug_as_message!(BuildError);

/// A configuration mistake found by [`IntentClientBuilder::build`].
#[derive(Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Neither a provider nor a decision client was given.
    #[error(
        "no provider was configured; call `.provider(...)` on the builder (or only \
         `.decision_client(...)` for a client that answers decision questions alone)"
    )]
    MissingProvider,
    /// A limit was set to zero, which would make every call fail.
    #[error("`{setting}` must be at least 1")]
    Zero {
        /// The setting's builder method.
        setting: &'static str,
    },
    /// The temperature is not a number between 0.0 and 2.0.
    #[error("`temperature` must be a number between 0.0 and 2.0, not {value}")]
    Temperature {
        /// The temperature given.
        value: f32,
    },
    /// A judge was configured while the judge mode is `Never`.
    #[error(
        "a judge was configured but the judge mode is `Never`; remove the judge or change the mode"
    )]
    JudgeNeverUsed,
    /// A decision gate was configured while the judge mode is `Never`: the gate only
    /// runs in front of the judge.
    #[error(
        "a decision gate was configured but the judge mode is `Never`, so it would never run; remove the gate or change the mode"
    )]
    GateWithoutJudge,
    /// Two providers were given the same name, or a name is empty.
    #[error(
        "provider name `{name}` is given twice or is empty; give each \
         `provider_named` provider a name of its own"
    )]
    ProviderName {
        /// The name.
        name: String,
    },
}

crate::failure::debug_as_message!(UnknownProvider);

/// A generated client's methods name a provider (`#[intent(..., provider = "...")]`)
/// that the [`IntentClient`] it is bound to lacks: reported when the generated client is
/// made (`<Trait>Client::try_new`), before any call.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{client}` sends calls to provider `{name}`, which this IntentClient does not have \
     (it has: {}); add it with `IntentClient::builder().provider_named(\"{name}\", ...)`",
    if known.is_empty() { "none by name".to_owned() } else { known.join(", ") }
)]
pub struct UnknownProvider {
    /// The generated client's type (or the caller's name for what needs the providers).
    pub client: String,
    /// The missing provider's name.
    pub name: String,
    /// The names the client has, sorted.
    pub known: Vec<String>,
}

/// Builds an [`IntentClient`]. Errors are reported by [`IntentClientBuilder::build`].
#[derive(Default)]
pub struct IntentClientBuilder {
    provider: Option<Arc<dyn Provider>>,
    named: Vec<(String, Arc<dyn Provider>)>,
    judge: Option<Arc<dyn Judge>>,
    judge_provider: Option<Arc<dyn Provider>>,
    judge_mode: JudgeMode,
    judge_model: Option<String>,
    judge_fail_closed: bool,
    decisions: Option<Arc<dyn DecisionClient>>,
    decision_gate: Option<DecisionEvaluator>,
    max_attempts: Option<u32>,
    max_model_calls: Option<u32>,
    max_cost: Option<Cost>,
    prices: Option<Arc<PriceTable>>,
    time_budget: Option<Duration>,
    max_input_chars: Option<usize>,
    rate_limiter: Option<RateLimiter>,
    cache: Option<Arc<dyn ResponseCache>>,
    retry_policy: RetryPolicy,
    model: Option<String>,
    temperature: Option<f32>,
    max_output_tokens: Option<u32>,
    recover_answer: bool,
    record_content: bool,
    #[cfg(feature = "metrics")]
    meter: Option<opentelemetry::metrics::Meter>,
}

impl fmt::Debug for IntentClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntentClientBuilder")
            .field("provider", &self.provider)
            .field("judge_mode", &self.judge_mode)
            .finish_non_exhaustive()
    }
}

impl IntentClientBuilder {
    /// The provider every call goes to (required).
    pub fn provider(mut self, provider: impl Provider + 'static) -> Self {
        self.provider = Some(Arc::new(provider));
        self
    }

    /// The provider, already shared.
    pub fn shared_provider(mut self, provider: Arc<dyn Provider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// Adds a provider that calls choose by `name`: a method's
    /// `#[intent(..., provider = "cheap")]`, a call's [`IntentOptions::provider`], or
    /// [`Overrides::provider`]. Calls that name none go to [`provider`](Self::provider),
    /// or, when none was given, to the first named one. Everything else (judge, cache,
    /// rate limiter, totals, defaults) is the client's, for every route.
    ///
    /// ```
    /// use intent_rs::{IntentClient, IntentOptions};
    /// use intent_rs::provider::ScriptedProvider;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let cheap = ScriptedProvider::new([r#"{"value": 3}"#]);
    /// let strong = ScriptedProvider::new([r#"{"value": 3}"#]);
    /// let client = IntentClient::builder()
    ///     .provider_named("cheap", cheap.clone())
    ///     .provider_named("strong", strong.clone())
    ///     .build()
    ///     .unwrap();
    /// let options = IntentOptions::new().provider("strong");
    /// let count: u32 = client.transform("a b c", "Count the words", options).await.into_result().unwrap();
    /// assert_eq!((cheap.request_count(), strong.request_count()), (0, 1));
    /// # });
    /// ```
    pub fn provider_named(
        self,
        name: impl Into<String>,
        provider: impl Provider + 'static,
    ) -> Self {
        self.shared_provider_named(name, Arc::new(provider))
    }

    /// A named provider (see [`provider_named`](Self::provider_named)), already shared.
    pub fn shared_provider_named(
        mut self,
        name: impl Into<String>,
        provider: Arc<dyn Provider>,
    ) -> Self {
        self.named.push((name.into(), provider));
        self
    }

    /// When the judge runs (default [`JudgeMode::OnRequest`]).
    pub fn judge_mode(mut self, mode: JudgeMode) -> Self {
        self.judge_mode = mode;
        self
    }

    /// A custom judge, instead of a [`ModelJudge`] over the primary provider.
    pub fn judge(mut self, judge: impl Judge + 'static) -> Self {
        self.judge = Some(Arc::new(judge));
        self
    }

    /// A separate provider for the default model judge.
    pub fn judge_provider(mut self, provider: impl Provider + 'static) -> Self {
        self.judge_provider = Some(Arc::new(provider));
        self
    }

    /// The model the judge uses (default: the judge provider's default model).
    pub fn judge_model(mut self, model: impl Into<String>) -> Self {
        self.judge_model = Some(model.into());
        self
    }

    /// Makes a judge reply that cannot be read fail the attempt, instead of accepting it
    /// without a verdict (the default, so that a broken judge cannot block results).
    pub fn judge_fail_closed(mut self, fail_closed: bool) -> Self {
        self.judge_fail_closed = fail_closed;
        self
    }

    /// The client that answers decision questions (default: from the provider,
    /// log-probabilities when it reports them and stated probabilities otherwise; see
    /// [`decision_client_for`]). A decision model over its own API is a
    /// [`SystemOneClient`](crate::decision::SystemOneClient) given here; the decision gate
    /// asks the client of its own [`DecisionEvaluator`].
    pub fn decision_client(mut self, client: impl DecisionClient + 'static) -> Self {
        self.decisions = Some(Arc::new(client));
        self
    }

    /// A cheap decision asked before the generative judge, on every call that uses the
    /// judge: below the evaluator's threshold the attempt is rejected with feedback and
    /// the judge is not called; at or above it the judge confirms. A failing decision
    /// client is handled as the evaluator's failure behaviours say, never read as a
    /// rejection. Each decision is recorded on the attempt
    /// ([`AttemptRecord::gate`](crate::AttemptRecord::gate)).
    ///
    /// Unless the evaluator was given a question, the gate asks whether the candidate
    /// output carries out the intent on the input and meets every output requirement.
    pub fn decision_gate(mut self, evaluator: DecisionEvaluator) -> Self {
        self.decision_gate = Some(evaluator);
        self
    }

    /// Attempts per call (default 3).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = Some(attempts);
        self
    }

    /// The most model calls one call may make, judge calls and retried requests included.
    pub fn max_model_calls(mut self, calls: u32) -> Self {
        self.max_model_calls = Some(calls);
        self
    }

    /// The budget in money of one call, judge and retries included, unless its options
    /// set one: an attempt that could take the call past it is not sent (see
    /// [`IntentOptions::max_cost`](crate::IntentOptions::max_cost) for the estimate).
    pub fn max_cost(mut self, budget: Cost) -> Self {
        self.max_cost = Some(budget);
        self
    }

    /// The prices calls are costed with ([`AIResult::cost`](crate::AIResult::cost), the
    /// money budget, telemetry); by default [`PriceTable::shipped`]. To add newer prices
    /// to the shipped ones, [`PriceTable::extend`] the shipped table with yours.
    pub fn price_table(mut self, prices: PriceTable) -> Self {
        self.prices = Some(Arc::new(prices));
        self
    }

    /// The time budget of one call, provider calls in flight included.
    pub fn time_budget(mut self, budget: Duration) -> Self {
        self.time_budget = Some(budget);
        self
    }

    /// The longest serialized input, in characters; longer inputs fail before any call.
    pub fn max_input_chars(mut self, chars: usize) -> Self {
        self.max_input_chars = Some(chars);
        self
    }

    /// A rate limiter shared by every clone of the client and by the judge's calls.
    pub fn rate_limiter(mut self, limiter: RateLimiter) -> Self {
        self.rate_limiter = Some(limiter);
        self
    }

    /// A response cache for first attempts, and for decision questions (the generated
    /// decision methods and a collection's; see [`ResponseCache`]).
    pub fn cache(mut self, cache: impl ResponseCache + 'static) -> Self {
        self.cache = Some(Arc::new(cache));
        self
    }

    /// An in-memory response cache of at most `capacity` replies.
    pub fn in_memory_cache(self, capacity: usize) -> Self {
        self.cache(InMemoryCache::new(capacity))
    }

    /// How transient provider failures are retried (default [`RetryPolicy::default`]).
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry_policy = policy;
        self
    }

    /// The model every call uses unless its options name another.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The sampling temperature of every call unless its options or overrides say
    /// otherwise (between 0.0 and 2.0; default: the provider's).
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Maximum output tokens per model call unless a call's options say otherwise.
    pub fn max_output_tokens(mut self, tokens: u32) -> Self {
        self.max_output_tokens = Some(tokens);
        self
    }

    /// Reads the one JSON answer of a reply that wraps it in prose, for every call whose
    /// options do not say otherwise (default off: a chatty reply is a failed attempt).
    ///
    /// Turn it on for local models and JSON-object mode; see [`AnswerRecovery`] for what
    /// is read, what stays a failure and what it costs.
    pub fn recover_answer(mut self, on: bool) -> Self {
        self.recover_answer = on;
        self
    }

    /// Records prompts and replies on the model-request spans (`gen_ai.system_instructions`,
    /// `gen_ai.input.messages`, `gen_ai.output.messages`); off by default, since they may
    /// hold personal data. API keys are never recorded. See [`crate::telemetry`].
    pub fn record_content(mut self, record: bool) -> Self {
        self.record_content = record;
        self
    }

    /// The meter the client records its metrics with, instead of one from the global
    /// meter provider (read when the client is built).
    #[cfg(feature = "metrics")]
    pub fn meter(mut self, meter: opentelemetry::metrics::Meter) -> Self {
        self.meter = Some(meter);
        self
    }

    /// Builds the client, or says what is wrong with the configuration.
    ///
    /// A client needs a provider, except one given only a
    /// [`decision_client`](Self::decision_client): it answers decision questions, and an
    /// intent method called on it fails without sending anything, saying that no
    /// provider was configured.
    pub fn build(self) -> Result<IntentClient, BuildError> {
        let mut names = HashSet::new();
        for (name, _) in &self.named {
            if name.trim().is_empty() || !names.insert(name.as_str()) {
                return Err(BuildError::ProviderName { name: name.clone() });
            }
        }
        let first_named = self.named.first().map(|(_, provider)| provider.clone());
        let provider = match (self.provider.or(first_named), &self.decisions) {
            (Some(provider), _) => provider,
            (None, Some(_)) => Arc::new(DecisionsOnly) as Arc<dyn Provider>,
            (None, None) => return Err(BuildError::MissingProvider),
        };
        for (setting, value) in [
            ("max_attempts", self.max_attempts),
            ("max_model_calls", self.max_model_calls),
        ] {
            if value == Some(0) {
                return Err(BuildError::Zero { setting });
            }
        }
        if self.max_input_chars == Some(0) {
            return Err(BuildError::Zero {
                setting: "max_input_chars",
            });
        }
        if let Some(value) = self.temperature.filter(|t| !(0.0..=2.0).contains(t)) {
            return Err(BuildError::Temperature { value });
        }
        let telemetry = Telemetry {
            record_content: self.record_content,
            primary: Endpoint::of(provider.as_ref()),
            judge: match (&self.judge, &self.judge_provider) {
                (Some(_), _) => Endpoint::custom_judge(),
                (None, Some(judge_provider)) => Endpoint::of(judge_provider.as_ref()),
                (None, None) => Endpoint::of(provider.as_ref()),
            },
            #[cfg(feature = "metrics")]
            metrics: Some(crate::telemetry::Metrics::new(self.meter)),
        };
        if self.judge_mode == JudgeMode::Never && self.decision_gate.is_some() {
            return Err(BuildError::GateWithoutJudge);
        }
        let decisions_from_provider = self.decisions.is_none();
        let decisions = self
            .decisions
            .unwrap_or_else(|| decision_client_for(provider.clone()));
        let judge = match (self.judge_mode, self.judge, self.judge_provider) {
            (JudgeMode::Never, None, None) => None,
            (JudgeMode::Never, _, _) => return Err(BuildError::JudgeNeverUsed),
            (_, Some(judge), _) => Some(judge),
            (_, None, Some(judge_provider)) => {
                Some(Arc::new(ModelJudge::new(judge_provider)) as Arc<dyn Judge>)
            }
            (_, None, None) => Some(Arc::new(ModelJudge::new(provider.clone())) as Arc<dyn Judge>),
        };
        Ok(IntentClient {
            inner: Arc::new(ClientInner {
                provider,
                judge,
                judge_mode: self.judge_mode,
                judge_model: self.judge_model,
                judge_fail_closed: self.judge_fail_closed,
                decisions,
                decisions_from_provider,
                decision_gate: self.decision_gate,
                max_attempts: self.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS),
                max_model_calls: self.max_model_calls,
                time_budget: self.time_budget,
                max_input_chars: self.max_input_chars,
                rate_limiter: self.rate_limiter,
                cache: self.cache,
                retry_policy: self.retry_policy,
                model: self.model,
                temperature: self.temperature,
                max_output_tokens: self.max_output_tokens,
                recover_answer: self.recover_answer,
                totals: Arc::default(),
                routes: HashMap::new(),
                telemetry,
                runtime_schemas: Mutex::default(),
                in_batch: false,
                batch_live_from: None,
                prices: self.prices.unwrap_or_else(crate::pricing::shipped_shared),
                max_cost: self.max_cost,
            }),
            overrides: None,
        }
        .with_routes(self.named))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ScriptedProvider;

    #[test]
    fn build_requires_a_provider() {
        assert_eq!(
            IntentClient::builder().build().unwrap_err(),
            BuildError::MissingProvider
        );
    }

    #[test]
    fn build_rejects_zero_limits() {
        let err = IntentClient::builder()
            .provider(ScriptedProvider::new(Vec::<String>::new()))
            .max_attempts(0)
            .build()
            .unwrap_err();
        assert_eq!(
            err,
            BuildError::Zero {
                setting: "max_attempts"
            }
        );
        assert_eq!(err.to_string(), "`max_attempts` must be at least 1");
    }

    #[test]
    fn build_rejects_a_temperature_out_of_range() {
        for value in [-0.1, 2.5, f32::NAN] {
            let err = IntentClient::builder()
                .provider(ScriptedProvider::new(Vec::<String>::new()))
                .temperature(value)
                .build()
                .unwrap_err();
            assert!(matches!(err, BuildError::Temperature { .. }), "{err}");
        }
    }

    fn scripted_client(
        configure: impl FnOnce(IntentClientBuilder) -> IntentClientBuilder,
    ) -> (IntentClient, ScriptedProvider) {
        let model = ScriptedProvider::new([r#"{"value": 1}"#; 4]);
        let builder = IntentClient::builder().provider(model.clone());
        (configure(builder).build().unwrap(), model)
    }

    async fn one_call(client: &IntentClient, options: IntentOptions<u32>) -> AIResult<u32> {
        client.transform("x", "Count", options).await
    }

    #[tokio::test]
    async fn the_builders_temperature_is_sent_unless_the_call_sets_one() {
        let (client, model) = scripted_client(|b| b.temperature(0.3));
        one_call(&client, IntentOptions::new()).await;
        one_call(&client, IntentOptions::new().temperature(0.9)).await;
        let sent: Vec<_> = model.requests().iter().map(|r| r.temperature).collect();
        assert_eq!(sent, [Some(0.3), Some(0.9)]);
    }

    #[tokio::test]
    async fn overrides_beat_the_call_options_and_the_client_defaults() {
        let (client, model) = scripted_client(|b| {
            b.model("client-model")
                .temperature(0.3)
                .max_attempts(3)
                .time_budget(Duration::from_secs(60))
        });
        let options = || {
            IntentOptions::<u32>::new()
                .model("method-model")
                .temperature(0.5)
                .validate(|_: &u32| vec!["Never right.".to_owned()])
        };
        let copy = client.with_options(
            Overrides::new()
                .model("override-model")
                .temperature(0.0)
                .max_attempts(1)
                .time_budget(Duration::from_secs(5)),
        );
        let settings = copy.settings(&options());
        assert_eq!(settings.deadline.budget(), Some(Duration::from_secs(5)));
        let result = one_call(&copy, options()).await;
        assert_eq!(result.attempts.len(), 1);
        let request = &model.requests()[0];
        assert_eq!(request.model.as_deref(), Some("override-model"));
        assert_eq!(request.temperature, Some(0.0));

        // The original is unchanged: the method's options, then the client's defaults.
        let result = one_call(&client, options()).await;
        assert_eq!(result.attempts.len(), 3);
        assert_eq!(model.requests()[1].model.as_deref(), Some("method-model"));
        assert_eq!(model.requests()[1].temperature, Some(0.5));
        assert_eq!(
            client.settings(&options()).deadline.budget(),
            Some(Duration::from_secs(60))
        );
        // Copies share the totals.
        assert_eq!(client.total_model_calls(), 4);
        assert_eq!(copy.total_model_calls(), 4);
    }

    #[tokio::test]
    async fn an_example_that_does_not_fit_a_runtime_schema_is_refused_before_any_request() {
        let (client, model) = scripted_client(|b| b);
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "budget_eur": {"type": "integer"}},
            "required": ["name", "budget_eur"]
        });
        let fits = r#"{"value": {"name": "Ann", "budget_eur": 5000}}"#;
        let misfit = r#"{"value": {"name": "Ann"}}"#;
        let options = IntentOptions::new()
            .example("Ann, 5000", fits)
            .example("Bo", misfit);
        let result = client
            .transform_value("Cy, 20", "Read the request", Some(&schema), options)
            .await;
        assert_eq!(model.request_count(), 0);
        let message = &result.issues[0].message;
        assert!(
            message.starts_with("example 2 of the intent \"Read the request\" (input \"Bo\","),
            "{message}"
        );
        assert!(message.contains("budget_eur"), "{message}");

        let options = IntentOptions::new()
            .example("Ann, 5000", fits)
            .max_attempts(1);
        client
            .transform_value("Cy, 20", "Read the request", Some(&schema), options)
            .await;
        assert_eq!(model.request_count(), 1);
        assert!(model.requests()[0].user().contains("Ann, 5000"));
    }

    #[tokio::test]
    async fn an_example_that_is_not_json_is_refused_for_any_json_targets() {
        let (client, model) = scripted_client(|b| b);
        let options = IntentOptions::<Value>::new().example("a", "not json at all");
        let result = client.transform("x", "Anything", options).await;
        assert_eq!(model.request_count(), 0);
        assert!(
            result.issues[0]
                .message
                .starts_with("example 1 of the intent")
        );
    }

    #[test]
    fn overrides_on_a_copy_add_to_those_it_has() {
        let (client, _) = scripted_client(|b| b);
        let copy = client
            .with_options(Overrides::new().model("a").max_attempts(2))
            .with_options(Overrides::new().model("b"));
        assert_eq!(
            copy.overrides(),
            Some(&Overrides::new().model("b").max_attempts(2))
        );
        assert_eq!(client.overrides(), None);
    }

    #[test]
    fn never_mode_builds_no_judge_and_refuses_one() {
        let client = IntentClient::builder()
            .provider(ScriptedProvider::new(Vec::<String>::new()))
            .judge_mode(JudgeMode::Never)
            .build()
            .unwrap();
        assert!(client.inner.judge.is_none());
        let err = IntentClient::builder()
            .provider(ScriptedProvider::new(Vec::<String>::new()))
            .judge_mode(JudgeMode::Never)
            .judge_provider(ScriptedProvider::new(Vec::<String>::new()))
            .build()
            .unwrap_err();
        assert_eq!(err, BuildError::JudgeNeverUsed);
    }

    #[test]
    fn a_decision_gate_needs_a_judge_that_runs() {
        let gate = || {
            let provider = ScriptedProvider::new(Vec::<String>::new());
            DecisionEvaluator::shared(decision_client_for(Arc::new(provider)))
        };
        let err = IntentClient::builder()
            .provider(ScriptedProvider::new(Vec::<String>::new()))
            .judge_mode(JudgeMode::Never)
            .decision_gate(gate())
            .build()
            .unwrap_err();
        assert_eq!(err, BuildError::GateWithoutJudge);
        let client = IntentClient::builder()
            .provider(ScriptedProvider::new(Vec::<String>::new()))
            .decision_gate(gate())
            .build()
            .unwrap();
        assert!(client.inner.decision_gate.is_some());
    }

    #[test]
    fn a_runtime_schema_is_wrapped_once_and_shared_by_clones() {
        let client = IntentClient::builder()
            .provider(ScriptedProvider::new(Vec::<String>::new()))
            .build()
            .unwrap();
        let schema = serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let first = client.runtime_schema(&schema).unwrap();
        let again = client.clone().runtime_schema(&schema.clone()).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let other = client
            .runtime_schema(&serde_json::json!({"type": "integer"}))
            .unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(
            *other,
            runtime_target_schema(&serde_json::json!({"type": "integer"})).unwrap()
        );
    }

    #[test]
    fn the_runtime_schema_cache_stays_bounded_and_errors_are_not_kept() {
        let client = IntentClient::builder()
            .provider(ScriptedProvider::new(Vec::<String>::new()))
            .build()
            .unwrap();
        for n in 0..(RUNTIME_SCHEMA_CACHE_CAPACITY + 5) {
            client
                .runtime_schema(&serde_json::json!({"type": "string", "maxLength": n}))
                .unwrap();
        }
        assert!(
            client.inner.runtime_schemas.lock().unwrap().len() <= RUNTIME_SCHEMA_CACHE_CAPACITY
        );
        assert!(client.runtime_schema(&serde_json::json!(3)).is_err());
        assert!(
            !client
                .inner
                .runtime_schemas
                .lock()
                .unwrap()
                .contains_key("3")
        );
    }

    #[test]
    fn client_is_send_sync_and_cheap_to_clone() {
        fn assert_send_sync<T: Send + Sync + Clone>() {}
        assert_send_sync::<IntentClient>();
    }
}
