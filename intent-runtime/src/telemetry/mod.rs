//! Observability: every call as OpenTelemetry GenAI spans and events through `tracing`,
//! and, with the `metrics` feature, the conventions' metrics; no content unless asked.
//!
//! # What is emitted
//!
//! Names follow the OpenTelemetry semantic conventions for generative AI, version
//! [`names::SEMCONV_VERSION`] (status: development). Every name is in [`names`].
//!
//! - One span per call, `intent` in `tracing` and exported as `intent <method>` (or
//!   `transform`): the method, the target type, the provider and model, and when the call
//!   ends its outcome, attempts and model calls (`error.type` when it failed). A
//!   generated decision method's call has one too, with its outcome (`error.type` is the
//!   decision's failure kind) and its decision requests inside.
//! - Inside it, one span per model request, `chat` in `tracing` and exported as
//!   `chat <model>` with kind `client`: the conventions' request attributes
//!   (`gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`,
//!   `gen_ai.request.temperature`, `gen_ai.request.max_tokens`, `gen_ai.output.type`,
//!   `server.address`, `server.port`) and, when known, the response's
//!   (`gen_ai.response.model`, `gen_ai.response.id` — the completion's id from the
//!   reply's body —, `gen_ai.response.finish_reasons`, `gen_ai.usage.*`) or `error.type`;
//!   the HTTP request's id (a request-id header) is `intent.request.id`. `intent.request.kind` says whether the request
//!   answered the intent, or was the judge's or a decision's. As the conventions ask, a
//!   request retried after a transient failure is one span covering every try.
//! - Events: each attempt's end on the call span (`attempt finished`, at INFO: one line
//!   per attempt, with whether it passed, the first check that failed, the retries of its
//!   request and its tokens); at TRACE, the details: each transient failure retried (with
//!   its backoff) inside the request's span, each reply verified (issues by source,
//!   repairs by kind), each judge verdict, and the HTTP layer's request and reply.
//!
//! Any `tracing` subscriber sees all of it (`RUST_LOG=intent_rs=info` or `=debug` with a
//! `fmt` subscriber prints one line per attempt inside its call's span, `=trace` the
//! details too); `tracing-opentelemetry` exports the spans unchanged, reading
//! `otel.name`, `otel.kind` and `otel.status_code`.
//!
//! # Content
//!
//! A call's images and documents are described on its span
//! ([`names::INTENT_INPUT_MEDIA`]: kind, MIME type, size, SHA-256 digest) whether or not
//! content is recorded: a description is not content, and it tells which file a call read.
//! Their bytes, base64 text and URLs are never recorded there.
//!
//! Prompts and replies are not recorded unless
//! [`IntentClientBuilder::record_content`](crate::IntentClientBuilder::record_content) is
//! set; then `gen_ai.system_instructions`, `gen_ai.input.messages` and
//! `gen_ai.output.messages` carry them as the conventions' JSON. No API key is ever
//! recorded: keys live in the providers and never enter a request or a reply.
//!
//! # Metrics
//!
//! With the `metrics` cargo feature, the client records through the `opentelemetry`
//! metrics API into the global meter provider (install yours before building the client,
//! or pass a meter with `IntentClientBuilder::meter`):
//! `gen_ai.client.token.usage` and `gen_ai.client.operation.duration` with the
//! conventions' attributes and bucket boundaries, and the library's own attempts per call,
//! repairs by kind, verification failures by step and judge verdicts. Without the feature
//! none of it is built.

#[cfg(feature = "metrics")]
mod metrics;
pub mod names;

use std::fmt::Write as _;
use std::time::Duration;
#[cfg(feature = "metrics")]
use std::time::Instant;

use serde_json::{Value, json};
use tracing::Span;
use tracing::field::Empty;

use crate::input::MediaInput;
use crate::provider::{
    Part, Provider, ProviderError, ProviderReply, ProviderRequest, ResponseFormat,
};
use crate::result::{
    AIResult, AttemptRecord, FailureKind, IssueSource, JudgeRecord, Repair, ResultIssue,
};
use names::*;

#[cfg(feature = "metrics")]
pub(crate) use metrics::Metrics;

/// What a model request is for, recorded as `intent.request.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestKind {
    /// The request that carries out the intent.
    Answer,
    /// The judge's request about a candidate.
    Judge,
    /// A decision's request (a binary, choice or score question).
    Decision,
}

impl RequestKind {
    /// The attribute's value.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestKind::Answer => "answer",
            RequestKind::Judge => "judge",
            RequestKind::Decision => "decision",
        }
    }
}

/// A provider as telemetry names it, read once when the client is built.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// `gen_ai.provider.name`.
    pub provider: String,
    /// The model asked for when a request names none.
    pub default_model: String,
    /// `server.address`, when the provider is reached over the network.
    pub address: Option<String>,
    /// `server.port`, alongside the address.
    pub port: Option<u16>,
}

impl Endpoint {
    /// The endpoint of `provider`.
    pub(crate) fn of(provider: &dyn Provider) -> Self {
        let (address, port) = provider.server_url().and_then(host_and_port).unzip();
        Self {
            provider: conventional_provider_name(provider.name()).to_owned(),
            default_model: provider.default_model().to_owned(),
            address,
            port,
        }
    }

    /// A judge that is not a model on a known provider.
    pub(crate) fn custom_judge() -> Self {
        Self {
            provider: CUSTOM_JUDGE.to_owned(),
            ..Self::default()
        }
    }
}

/// The name the OpenTelemetry conventions give a provider: the providers name themselves
/// so already, but for OpenAI's Responses API, which names itself apart from Chat
/// Completions (its batch jobs and errors must not be taken for the other API's) and is
/// `openai` to the conventions.
fn conventional_provider_name(name: &str) -> &str {
    match name {
        crate::provider::responses::OPENAI_RESPONSES_PROVIDER_NAME => "openai",
        other => other,
    }
}

/// The host and port of a URL (`https://host:port/path`), the port from the scheme when
/// the URL names none.
fn host_and_port(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    // Credentials in a URL are not part of the address, and never recorded.
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let (host, port) = match authority.rsplit_once(':') {
        // `[::1]:8080` splits at the last colon; `[::1]` alone ends in `]`.
        Some((host, port)) if !port.ends_with(']') => (host, port.parse().ok()?),
        _ => (
            authority,
            match scheme {
                "https" => 443,
                "http" => 80,
                _ => return None,
            },
        ),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (!host.is_empty()).then(|| (host.to_owned(), port))
}

/// `gen_ai.provider.name` of a judge that is not a model judge.
const CUSTOM_JUDGE: &str = "custom";

/// A client's telemetry settings.
#[derive(Debug, Default, Clone)]
pub(crate) struct Telemetry {
    /// Whether prompts and replies are recorded on the request spans.
    pub record_content: bool,
    /// The primary provider.
    pub primary: Endpoint,
    /// The judge's provider.
    pub judge: Endpoint,
    #[cfg(feature = "metrics")]
    pub metrics: Option<Metrics>,
}

impl Telemetry {
    /// The telemetry of a client that stands alone, such as a decision client: the
    /// provider's endpoint, no content, no metrics.
    pub(crate) fn standalone(provider: &dyn Provider) -> Self {
        Self {
            primary: Endpoint::of(provider),
            ..Self::default()
        }
    }

    /// The telemetry of a decision client that talks to a decision model's own API (no
    /// [`Provider`]): the host's name, the default model and the URL requests go to.
    pub(crate) fn decision_host(provider: &str, default_model: &str, url: &str) -> Self {
        let (address, port) = host_and_port(url).unzip();
        Self {
            primary: Endpoint {
                provider: provider.to_owned(),
                default_model: default_model.to_owned(),
                address,
                port,
            },
            ..Self::default()
        }
    }

    /// Opens the span of a request to a decision model's own API (no chat parameters to
    /// record), as a child of the current span, like [`decision_request`](Self::decision_request).
    pub(crate) fn decision_call(&self, model: &str) -> ModelRequest<'_> {
        ModelRequest::start(
            self,
            &Span::current(),
            &self.primary,
            RequestKind::Decision,
            None,
            Some(model),
            None,
        )
    }

    /// Opens the span of a decision's model request, as a child of the current span (an
    /// intent call's, when a decision gate asks, or the caller's own).
    pub(crate) fn decision_request(&self, request: &ProviderRequest) -> ModelRequest<'_> {
        ModelRequest::start(
            self,
            &Span::current(),
            &self.primary,
            RequestKind::Decision,
            Some(request),
            request.model.as_deref(),
            None,
        )
    }
}

/// One call's span and what its events and metrics need.
pub(crate) struct CallTrace<'a> {
    telemetry: &'a Telemetry,
    span: Span,
    #[cfg(feature = "metrics")]
    method: Option<&'a str>,
}

impl<'a> CallTrace<'a> {
    /// Opens the call's span. `method` is the generated method's name, `None` for a
    /// `transform` call; `model` the model asked for.
    pub(crate) fn start(
        telemetry: &'a Telemetry,
        method: Option<&'a str>,
        target_type: &str,
        model: &str,
    ) -> Self {
        let span = tracing::info_span!(
            CALL_SPAN,
            { OTEL_NAME } = Empty,
            { INTENT_METHOD } = method,
            { INTENT_TARGET_TYPE } = target_type,
            { GEN_AI_PROVIDER_NAME } = telemetry.primary.provider.as_str(),
            { GEN_AI_REQUEST_MODEL } = model,
            { INTENT_OUTCOME } = Empty,
            { INTENT_ATTEMPTS } = Empty,
            { INTENT_MODEL_CALLS } = Empty,
            { INTENT_INPUT_MEDIA_COUNT } = Empty,
            { INTENT_INPUT_MEDIA } = Empty,
            { INTENT_COST_USD } = Empty,
            { INTENT_COST_UNPRICED_MODELS } = Empty,
            { ERROR_TYPE } = Empty,
            { OTEL_STATUS_CODE } = Empty,
        );
        if !span.is_disabled() {
            match method {
                Some(method) => span.record(OTEL_NAME, format!("{CALL_SPAN} {method}")),
                None => span.record(OTEL_NAME, TRANSFORM),
            };
        }
        Self {
            telemetry,
            span,
            #[cfg(feature = "metrics")]
            method,
        }
    }

    /// The call's span, to run the call in.
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// Describes the call's images and documents on its span (nothing when it has none),
    /// whatever the content setting: see [`Media::metadata`](crate::media::Media::metadata).
    pub(crate) fn media_inputs(&self, media: &[MediaInput]) {
        if media.is_empty() || self.span.is_disabled() {
            return;
        }
        let described: Vec<Value> = media
            .iter()
            .map(|input| {
                let mut described = input.media.metadata();
                if let Some(name) = &input.name {
                    described["input"] = name.as_str().into();
                }
                if let Some(position) = input.position {
                    described["number"] = position.number.into();
                    described["of"] = position.of.into();
                }
                described
            })
            .collect();
        self.span.record(INTENT_INPUT_MEDIA_COUNT, int(media.len()));
        self.span
            .record(INTENT_INPUT_MEDIA, Value::Array(described).to_string());
    }

    /// Whether prompts and replies are recorded.
    pub(crate) fn records_content(&self) -> bool {
        self.telemetry.record_content
    }

    /// Opens the span of a model request made by attempt `attempt`, as a child of the
    /// call's span.
    pub(crate) fn model_request(
        &self,
        kind: RequestKind,
        request: &ProviderRequest,
        attempt: u32,
    ) -> ModelRequest<'a> {
        let endpoint = match kind {
            RequestKind::Judge => &self.telemetry.judge,
            RequestKind::Answer | RequestKind::Decision => &self.telemetry.primary,
        };
        let model = request.model.as_deref();
        ModelRequest::start(
            self.telemetry,
            &self.span,
            endpoint,
            kind,
            Some(request),
            model,
            Some(attempt),
        )
    }

    /// Opens the span of the judge's request about attempt `attempt`. `render` gives the
    /// request a model judge sends; it runs only when the span is recorded.
    pub(crate) fn judge_request(
        &self,
        model: Option<&str>,
        attempt: u32,
        render: impl FnOnce() -> ProviderRequest,
    ) -> ModelRequest<'a> {
        let endpoint = &self.telemetry.judge;
        // A custom judge's requests, if it makes any, are its own: only a model judge's
        // request is known here.
        let rendered = (endpoint.provider != CUSTOM_JUDGE
            && tracing::span_enabled!(tracing::Level::INFO))
        .then(render);
        ModelRequest::start(
            self.telemetry,
            &self.span,
            endpoint,
            RequestKind::Judge,
            rendered.as_ref(),
            model,
            Some(attempt),
        )
    }

    /// An event for a verified reply: the first check that failed, issues by source and
    /// repairs by kind.
    pub(crate) fn verified(
        &self,
        attempt: u32,
        passed: bool,
        issues: &[ResultIssue],
        repairs: &[Repair],
    ) {
        let step = first_failed_step(passed, issues);
        if tracing::event_enabled!(tracing::Level::TRACE) {
            let count = |source| int(issues.iter().filter(|i| i.source == source).count());
            tracing::trace!(
                parent: &self.span,
                {
                    { INTENT_ATTEMPT } = i64::from(attempt),
                    { INTENT_PASSED } = passed,
                    { INTENT_VERIFY_STEP } = step,
                    { INTENT_ISSUES_PROVIDER } = count(IssueSource::Provider),
                    { INTENT_ISSUES_VERIFICATION } = count(IssueSource::Verification),
                    { INTENT_ISSUES_VALIDATOR } = count(IssueSource::Validator),
                    { INTENT_REPAIRS } = repair_kinds(repairs).as_str(),
                },
                "reply verified"
            );
        }
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.telemetry.metrics {
            metrics.verified(self.method, (!passed).then_some(step), repairs);
        }
    }

    /// An event (and metric) for the judge's verdict on attempt `attempt`.
    pub(crate) fn judged(&self, attempt: u32, record: &JudgeRecord) {
        let verdict = verdict_name(record);
        tracing::trace!(
            parent: &self.span,
            {
                { INTENT_ATTEMPT } = i64::from(attempt),
                { INTENT_JUDGE_VERDICT } = verdict,
            },
            "judge verdict"
        );
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.telemetry.metrics {
            metrics.judged(self.method, verdict);
        }
    }

    /// The one event (at INFO) for an attempt: how it ended, the first check that
    /// failed, the retries its request needed, its tokens. The steps' own events are at
    /// TRACE, so that a person's log has one line per attempt.
    pub(crate) fn attempt_finished(&self, record: &AttemptRecord, passed: bool) {
        let count = |source| int(record.issues.iter().filter(|i| i.source == source).count());
        let retries = record.provider_retries.len();
        tracing::info!(
            parent: &self.span,
            {
                { INTENT_ATTEMPT } = i64::from(record.number),
                { INTENT_PASSED } = passed,
                { INTENT_VERIFY_STEP } = first_failed_step(passed, &record.issues),
                { INTENT_CACHED } = record.cached,
                { INTENT_PROVIDER_RETRIES } = (retries > 0).then(|| int(retries)),
                { INTENT_ISSUES_JUDGE } = count(IssueSource::Judge),
                { INTENT_ISSUES_GUARDRAIL } = count(IssueSource::Guardrail),
                { INTENT_ELAPSED_MS } = int(record.duration.as_millis()),
                // Also on the `chat` spans, but recorded there after the span opened, which
                // a terminal subscriber never prints: an event is what a person sees.
                { GEN_AI_USAGE_INPUT_TOKENS } = int(record.usage.input_tokens),
                { GEN_AI_USAGE_OUTPUT_TOKENS } = int(record.usage.output_tokens),
            },
            "attempt finished"
        );
    }

    /// Records how a decision method's call ended on its span: `failure` is the kind of
    /// the decision's failure, `None` when it was answered. A decision has no attempts:
    /// its model requests are the `chat` spans inside.
    pub(crate) fn decided(&self, failure: Option<FailureKind>) {
        if self.span.is_disabled() {
            return;
        }
        match failure {
            None => {
                self.span.record(INTENT_OUTCOME, "success");
            }
            Some(kind) => {
                self.span.record(INTENT_OUTCOME, "failure");
                self.span.record(ERROR_TYPE, kind.as_str());
                self.span.record(OTEL_STATUS_CODE, "error");
            }
        }
    }

    /// Records how the call ended on its span (and the attempts metric).
    pub(crate) fn finish<T>(&self, result: &AIResult<T>) {
        let success = result.is_success();
        let outcome = if success { "success" } else { "failure" };
        if !self.span.is_disabled() {
            self.span.record(INTENT_OUTCOME, outcome);
            self.span
                .record(INTENT_ATTEMPTS, int(result.attempts.len()));
            self.span
                .record(INTENT_MODEL_CALLS, i64::from(result.model_calls()));
            match result.cost() {
                Ok(cost) => {
                    self.span.record(INTENT_COST_USD, cost.as_usd_f64());
                }
                Err(unpriced) => {
                    self.span
                        .record(INTENT_COST_UNPRICED_MODELS, unpriced.models.join(", "));
                }
            }
            if !success {
                // Why the call failed, in the kinds every layer shares: dashboards group
                // failures by it without reading messages.
                let kind = result.failure_kind().map_or("_OTHER", |kind| kind.as_str());
                self.span.record(ERROR_TYPE, kind);
                self.span.record(OTEL_STATUS_CODE, "error");
            }
        }
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.telemetry.metrics {
            metrics.finished(self.method, outcome, result.attempts.len());
        }
    }
}

/// The span of one model request, retries included, and its timing for the metrics.
pub(crate) struct ModelRequest<'a> {
    span: Span,
    #[cfg(feature = "metrics")]
    telemetry: &'a Telemetry,
    #[cfg(feature = "metrics")]
    started: Instant,
    #[cfg(feature = "metrics")]
    attributes: Vec<opentelemetry::KeyValue>,
    #[cfg(not(feature = "metrics"))]
    _telemetry: std::marker::PhantomData<&'a Telemetry>,
}

impl<'a> ModelRequest<'a> {
    /// `request` is what was sent, when known; `model` the model it named.
    fn start(
        telemetry: &'a Telemetry,
        parent: &Span,
        endpoint: &Endpoint,
        kind: RequestKind,
        request: Option<&ProviderRequest>,
        model: Option<&str>,
        attempt: Option<u32>,
    ) -> Self {
        let model = model.unwrap_or(&endpoint.default_model);
        let output_type = request.map(|request| match request.response_format {
            ResponseFormat::Text => "text",
            ResponseFormat::JsonObject | ResponseFormat::JsonSchema => "json",
        });
        let span = tracing::info_span!(
            parent: parent,
            CHAT_SPAN,
            { OTEL_NAME } = Empty,
            { OTEL_KIND } = "client",
            { GEN_AI_OPERATION_NAME } = OPERATION_CHAT,
            { GEN_AI_PROVIDER_NAME } = endpoint.provider.as_str(),
            { GEN_AI_REQUEST_MODEL } = model,
            { GEN_AI_REQUEST_TEMPERATURE } = request.and_then(|r| r.temperature).map(f64::from),
            { GEN_AI_REQUEST_MAX_TOKENS } = request.and_then(|r| r.max_output_tokens).map(i64::from),
            { GEN_AI_OUTPUT_TYPE } = output_type,
            { SERVER_ADDRESS } = endpoint.address.as_deref(),
            { SERVER_PORT } = endpoint.port.map(i64::from),
            { INTENT_REQUEST_KIND } = kind.as_str(),
            { INTENT_ATTEMPT } = attempt.map(i64::from),
            { GEN_AI_RESPONSE_MODEL } = Empty,
            { GEN_AI_RESPONSE_ID } = Empty,
            { INTENT_REQUEST_ID } = Empty,
            { GEN_AI_RESPONSE_FINISH_REASONS } = Empty,
            { GEN_AI_USAGE_INPUT_TOKENS } = Empty,
            { GEN_AI_USAGE_OUTPUT_TOKENS } = Empty,
            { GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS } = Empty,
            { GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS } = Empty,
            { GEN_AI_USAGE_REASONING_OUTPUT_TOKENS } = Empty,
            { ERROR_TYPE } = Empty,
            { OTEL_STATUS_CODE } = Empty,
            { GEN_AI_SYSTEM_INSTRUCTIONS } = Empty,
            { GEN_AI_INPUT_MESSAGES } = Empty,
            { GEN_AI_OUTPUT_MESSAGES } = Empty,
        );
        if !span.is_disabled() {
            span.record(OTEL_NAME, format!("{OPERATION_CHAT} {model}"));
            if let Some(request) = request.filter(|_| telemetry.record_content) {
                span.record(
                    GEN_AI_SYSTEM_INSTRUCTIONS,
                    json!([{"type": "text", "content": request.system}]).to_string(),
                );
                // Every turn, so a retry's span shows the previous reply and the problems.
                let turns: Vec<Value> = request
                    .messages
                    .iter()
                    .map(|turn| {
                        // Media are recorded by type, size and digest: never their bytes.
                        let parts: Vec<Value> = turn
                            .parts()
                            .map(|part| match part {
                                Part::Text(text) => json!({"type": "text", "content": text}),
                                Part::Media(media) => media.summary(),
                            })
                            .collect();
                        json!({"role": turn.role.as_str(), "parts": parts})
                    })
                    .collect();
                span.record(GEN_AI_INPUT_MESSAGES, Value::Array(turns).to_string());
            }
        }
        Self {
            #[cfg(feature = "metrics")]
            attributes: metrics::request_attributes(endpoint, model),
            span,
            #[cfg(feature = "metrics")]
            telemetry,
            #[cfg(feature = "metrics")]
            started: Instant::now(),
            #[cfg(not(feature = "metrics"))]
            _telemetry: std::marker::PhantomData,
        }
    }

    /// The request's span, to run the request in.
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// An event for a transient failure that is retried after `wait`.
    pub(crate) fn retrying(&self, error: &ProviderError, wait: Duration, retry: u32) {
        tracing::trace!(
            parent: &self.span,
            {
                { ERROR_TYPE } = error.kind().as_str(),
                { INTENT_RETRY } = i64::from(retry),
                { INTENT_BACKOFF_MS } = int(wait.as_millis()),
                %error,
            },
            "transient provider failure; retrying"
        );
    }

    /// Records the reply on the span (and the request's metrics).
    pub(crate) fn replied(self, reply: &ProviderReply, record_content: bool) {
        let span = &self.span;
        if !span.is_disabled() {
            if !reply.model.is_empty() {
                span.record(GEN_AI_RESPONSE_MODEL, reply.model.as_str());
            }
            if let Some(id) = &reply.response_id {
                span.record(GEN_AI_RESPONSE_ID, id.as_str());
            }
            if let Some(id) = &reply.request_id {
                span.record(INTENT_REQUEST_ID, id.as_str());
            }
            if let Some(reason) = &reply.stop_reason {
                span.record(GEN_AI_RESPONSE_FINISH_REASONS, json!([reason]).to_string());
            }
            span.record(GEN_AI_USAGE_INPUT_TOKENS, int(reply.usage.input_tokens));
            span.record(GEN_AI_USAGE_OUTPUT_TOKENS, int(reply.usage.output_tokens));
            if reply.usage.cached_input_tokens > 0 {
                span.record(
                    GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
                    int(reply.usage.cached_input_tokens),
                );
            }
            if reply.usage.cache_write_input_tokens > 0 {
                span.record(
                    GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
                    int(reply.usage.cache_write_input_tokens),
                );
            }
            if reply.usage.reasoning_tokens > 0 {
                span.record(
                    GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
                    int(reply.usage.reasoning_tokens),
                );
            }
            if record_content {
                span.record(GEN_AI_OUTPUT_MESSAGES, output_messages(reply));
            }
        }
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.telemetry.metrics {
            metrics.replied(self.attributes, reply, self.started.elapsed());
        }
    }

    /// Records a failed request: a provider error.
    pub(crate) fn failed(self, error: &ProviderError) {
        // A failed request's id is what the provider's support needs most.
        if let Some(id) = error.request_id() {
            self.span.record(INTENT_REQUEST_ID, id);
        }
        self.ended_in(error.kind().as_str());
    }

    /// Records a decision request whose reply failed the client's checks, or that failed
    /// before a provider error existed.
    pub(crate) fn failed_decision(self, kind: crate::result::FailureKind) {
        self.ended_in(kind.as_str());
    }

    /// Records a request the rate limiter would not admit (its shared quota unreachable,
    /// failing closed): nothing was sent.
    pub(crate) fn refused_by_limiter(self) {
        self.ended_in("rate_limiter_unavailable");
    }

    /// Records a request cut short by the call's time budget.
    pub(crate) fn out_of_time(self) {
        self.ended_in("time_budget");
    }

    fn ended_in(self, error_type: &str) {
        self.span.record(ERROR_TYPE, error_type);
        self.span.record(OTEL_STATUS_CODE, "error");
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.telemetry.metrics {
            metrics.failed(self.attributes, error_type, self.started.elapsed());
        }
    }
}

/// An integer as OpenTelemetry's attribute type (`i64`): `tracing-opentelemetry` exports
/// unsigned fields as strings.
fn int<N: TryInto<i64>>(n: N) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// The first check that failed, by its issue source, or `passed`. Provider issues (a
/// refusal, a truncated reply) count only when no later check failed.
fn first_failed_step(passed: bool, issues: &[ResultIssue]) -> &'static str {
    if passed {
        return "passed";
    }
    let first = issues
        .iter()
        .find(|i| i.source != IssueSource::Provider)
        .or(issues.first());
    match first {
        None => "verification",
        Some(issue) => match issue.source {
            IssueSource::Provider => "provider",
            IssueSource::Verification => "verification",
            IssueSource::Validator => "validator",
            IssueSource::Judge => "judge",
            IssueSource::Guardrail => "guardrail",
            IssueSource::Input => "input",
        },
    }
}

/// A repair's kind, as serialized (`missing_envelope`).
pub(crate) fn repair_kind(repair: &Repair) -> &'static str {
    match repair {
        Repair::FenceStripped => "fence_stripped",
        Repair::CommentsSkipped => "comments_skipped",
        Repair::TrailingCommasSkipped => "trailing_commas_skipped",
        Repair::BarePrimitive => "bare_primitive",
        Repair::MissingEnvelope => "missing_envelope",
        Repair::KeyCaseChanged { .. } => "key_case_changed",
        Repair::NumberFromString { .. } => "number_from_string",
        Repair::EnumCaseChanged { .. } => "enum_case_changed",
        Repair::JsonExtractedFromProse => "json_extracted_from_prose",
    }
}

fn repair_kinds(repairs: &[Repair]) -> String {
    let mut kinds = String::new();
    for repair in repairs {
        if !kinds.is_empty() {
            kinds.push(',');
        }
        let _ = write!(kinds, "{}", repair_kind(repair));
    }
    kinds
}

fn verdict_name(record: &JudgeRecord) -> &'static str {
    match record {
        JudgeRecord::Verdict { passes: true, .. } => "pass",
        JudgeRecord::Verdict { passes: false, .. } => "fail",
        JudgeRecord::Missing { .. } => "missing",
    }
}

/// The reply as the conventions' output messages: one assistant message.
fn output_messages(reply: &ProviderReply) -> String {
    let content = match (&reply.refusal, reply.text.is_empty()) {
        (Some(refusal), true) => refusal.as_str(),
        _ => reply.text.as_str(),
    };
    let finish_reason = reply.stop_reason.as_deref().unwrap_or("stop");
    json!([{
        "role": "assistant",
        "parts": [{"type": "text", "content": content}],
        "finish_reason": finish_reason,
    }])
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repair_kinds_are_the_serialized_kinds() {
        let text = || String::from("x");
        let every_kind = [
            Repair::FenceStripped,
            Repair::CommentsSkipped,
            Repair::TrailingCommasSkipped,
            Repair::BarePrimitive,
            Repair::MissingEnvelope,
            Repair::JsonExtractedFromProse,
            Repair::KeyCaseChanged {
                path: text(),
                from: text(),
                to: text(),
            },
            Repair::NumberFromString { path: text() },
            Repair::EnumCaseChanged {
                path: text(),
                from: text(),
                to: text(),
            },
        ];
        for repair in every_kind {
            let serialized = serde_json::to_value(&repair).expect("a repair serializes");
            assert_eq!(serialized["kind"], repair_kind(&repair), "{repair:?}");
        }
    }

    #[test]
    fn host_and_port_come_from_the_url_or_its_scheme() {
        let cases = [
            ("https://api.openai.com/v1", Some(("api.openai.com", 443))),
            ("http://localhost:11434/v1", Some(("localhost", 11434))),
            ("http://127.0.0.1:8080", Some(("127.0.0.1", 8080))),
            ("http://[::1]:9000/v1", Some(("::1", 9000))),
            ("https://[::1]/v1", Some(("::1", 443))),
            (
                "https://user:secret@gateway.example/v1",
                Some(("gateway.example", 443)),
            ),
            ("ftp://files.example", None),
            ("not a url", None),
        ];
        for (url, expected) in cases {
            let got = host_and_port(url);
            assert_eq!(
                got.as_ref().map(|(h, p)| (h.as_str(), *p)),
                expected,
                "{url}"
            );
        }
    }

    #[test]
    fn error_types_are_the_kinds_in_snake_case() {
        use crate::provider::ProviderErrorKind;
        // `error.type` of a provider request is its kind's stable name, and every kind
        // has its own.
        assert_eq!(ProviderErrorKind::RateLimited.as_str(), "rate_limited");
        assert_eq!(ProviderErrorKind::Server.as_str(), "server");
        let names: std::collections::HashSet<&str> = ProviderErrorKind::ALL
            .iter()
            .map(|kind| kind.as_str())
            .collect();
        assert_eq!(names.len(), ProviderErrorKind::ALL.len());
        for kind in ProviderErrorKind::ALL {
            assert_eq!(ProviderErrorKind::from_name(kind.as_str()), Some(kind));
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::Value::from(kind.as_str())
            );
        }
    }

    #[test]
    fn every_provider_is_named_as_the_conventions_name_it() {
        use crate::provider::{Anthropic, AzureOpenAi, Gemini, OpenAi, OpenAiResponses};
        let names = [
            Endpoint::of(&OpenAi::new("k")).provider,
            Endpoint::of(&OpenAiResponses::new("k")).provider,
            Endpoint::of(&Anthropic::new("k")).provider,
            Endpoint::of(&Gemini::new("k")).provider,
            Endpoint::of(&AzureOpenAi::new("https://r.openai.azure.com", "k", "d")).provider,
        ];
        assert_eq!(
            names,
            [
                "openai",
                "openai",
                "anthropic",
                "gcp.gemini",
                "azure.ai.openai"
            ]
        );
    }
}
