//! Every span, attribute and metric name the runtime emits, in one table.
//!
//! The `gen_ai.*`, `server.*` and `error.type` names are the OpenTelemetry semantic
//! conventions for generative AI ([`SEMCONV_VERSION`]); the `intent.*` names are the
//! library's own, for what the conventions have no word for (attempts, repairs, the
//! verifier's steps, the judge). `otel.name` and `otel.kind` are the fields
//! `tracing-opentelemetry` reads to name a span and set its kind.

/// The version of the OpenTelemetry semantic conventions whose GenAI names are used here.
pub const SEMCONV_VERSION: &str = "1.41.0";

// Span names (`tracing` metadata; exported names come from `otel.name`).

/// The span around one intent call.
pub const CALL_SPAN: &str = "intent";
/// The span around one model request (the conventions' inference span).
pub const CHAT_SPAN: &str = "chat";
/// The exported name of a call made through `transform` rather than a generated method.
pub const TRANSFORM: &str = "transform";

// Fields `tracing-opentelemetry` reads.

/// The span's exported name (`intent <method>`, `chat <model>`).
pub const OTEL_NAME: &str = "otel.name";
/// The span's kind (`client` for model requests).
pub const OTEL_KIND: &str = "otel.kind";
/// The span's status (`error` when the operation failed).
pub const OTEL_STATUS_CODE: &str = "otel.status_code";

// GenAI conventions: request.

/// The operation: always [`OPERATION_CHAT`] here.
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
/// The well-known value for a chat completion.
pub const OPERATION_CHAT: &str = "chat";
/// The provider (`openai`, `anthropic`, or the provider's own name). Replaced
/// `gen_ai.system` in the 2025 revision of the conventions.
pub const GEN_AI_PROVIDER_NAME: &str = "gen_ai.provider.name";
/// The model asked for.
pub const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
/// The sampling temperature asked for.
pub const GEN_AI_REQUEST_TEMPERATURE: &str = "gen_ai.request.temperature";
/// The output-token limit asked for.
pub const GEN_AI_REQUEST_MAX_TOKENS: &str = "gen_ai.request.max_tokens";
/// The kind of output asked for: `json` or `text`.
pub const GEN_AI_OUTPUT_TYPE: &str = "gen_ai.output.type";

// GenAI conventions: response.

/// The model that answered.
pub const GEN_AI_RESPONSE_MODEL: &str = "gen_ai.response.model";
/// The provider's id of the completion, from the reply's body (`chatcmpl-...`,
/// `msg_...`), streamed or not.
pub const GEN_AI_RESPONSE_ID: &str = "gen_ai.response.id";
/// Why the model stopped, as a JSON array of strings (`["stop"]`): a `tracing` field holds
/// no arrays.
pub const GEN_AI_RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// Input tokens, cached ones included.
pub const GEN_AI_USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// Output tokens.
pub const GEN_AI_USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// Input tokens served from the provider's prompt cache.
pub const GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
/// Input tokens written to the provider's prompt cache (Anthropic's cache creation).
pub const GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: &str =
    "gen_ai.usage.cache_creation.input_tokens";

/// Output tokens spent reasoning (thinking); part of [`GEN_AI_USAGE_OUTPUT_TOKENS`].
pub const GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: &str = "gen_ai.usage.reasoning.output_tokens";

// GenAI conventions: content (opt-in, off by default).

/// The system prompt, as the conventions' JSON (`[{"type":"text","content":...}]`).
pub const GEN_AI_SYSTEM_INSTRUCTIONS: &str = "gen_ai.system_instructions";
/// The messages sent, as the conventions' JSON.
pub const GEN_AI_INPUT_MESSAGES: &str = "gen_ai.input.messages";
/// The reply, as the conventions' JSON.
pub const GEN_AI_OUTPUT_MESSAGES: &str = "gen_ai.output.messages";

// General conventions.

/// The server's host name or address.
pub const SERVER_ADDRESS: &str = "server.address";
/// The server's port.
pub const SERVER_PORT: &str = "server.port";
/// The class of error an operation ended with (low cardinality: a provider error's kind,
/// `timeout` for the time budget, an issue source for a failed call).
pub const ERROR_TYPE: &str = "error.type";

// The library's own: the call span.

/// The generated method's name (absent for `transform` calls).
pub const INTENT_METHOD: &str = "intent.method";
/// The Rust type the call returns.
pub const INTENT_TARGET_TYPE: &str = "intent.target.type";
/// `success` or `failure`.
pub const INTENT_OUTCOME: &str = "intent.outcome";
/// Attempts made.
pub const INTENT_ATTEMPTS: &str = "intent.attempts";
/// The call's images and documents, one JSON object each in the order they are sent:
/// `modality` (`image`/`document`), `mime_type`, `size` in bytes, `sha256`, `source`
/// (`bytes`/`url`), `detail` when set, and the parameter (`input`, and `number`/`of` for
/// one of a list). Recorded with or without content recording: none of it is content
/// (never the bytes, the base64 text or a URL). Absent for a call without media.
pub const INTENT_INPUT_MEDIA: &str = "intent.input.media";
/// How many images and documents the call sends (absent for a call without media).
pub const INTENT_INPUT_MEDIA_COUNT: &str = "intent.input.media_count";
/// Model calls made, judge calls and retried requests included.
pub const INTENT_MODEL_CALLS: &str = "intent.model_calls";
/// What the call cost in US dollars (judge and retries included), from the client's
/// price table; not set when a model that answered has no price.
pub const INTENT_COST_USD: &str = "intent.cost.usd";
/// The models that answered some of the call's requests and have no price, comma
/// separated; set only when there are some.
pub const INTENT_COST_UNPRICED_MODELS: &str = "intent.cost.unpriced_models";

// The library's own: model requests and events.

/// What a model request was for: `answer`, `judge` or `decision`.
pub const INTENT_REQUEST_KIND: &str = "intent.request.kind";
/// The provider's id of the HTTP request (its `x-request-id` or `request-id` header),
/// which its support asks for; not the completion's id ([`GEN_AI_RESPONSE_ID`]).
pub const INTENT_REQUEST_ID: &str = "intent.request.id";
/// The attempt a request or an event belongs to (1-based).
pub const INTENT_ATTEMPT: &str = "intent.attempt";
/// Whether an attempt (or a verification) passed.
pub const INTENT_PASSED: &str = "intent.passed";
/// Whether the reply came from the response cache.
pub const INTENT_CACHED: &str = "intent.cached";
/// The first check that failed (an issue source: `verification`, `validator`, ...), or
/// `passed`.
pub const INTENT_VERIFY_STEP: &str = "intent.verify.step";
/// Issues found, by source.
pub const INTENT_ISSUES_PROVIDER: &str = "intent.issues.provider";
/// Issues found by the verifier.
pub const INTENT_ISSUES_VERIFICATION: &str = "intent.issues.verification";
/// Issues found by validators.
pub const INTENT_ISSUES_VALIDATOR: &str = "intent.issues.validator";
/// Issues listed by the judge.
pub const INTENT_ISSUES_JUDGE: &str = "intent.issues.judge";
/// Issues raised by guardrails.
pub const INTENT_ISSUES_GUARDRAIL: &str = "intent.issues.guardrail";
/// Repairs made, by kind, comma-separated (`missing_envelope,key_case_changed`).
pub const INTENT_REPAIRS: &str = "intent.repairs";
/// One repair's kind (a metric attribute).
pub const INTENT_REPAIR_KIND: &str = "intent.repair.kind";
/// The retry's number within one model request (1-based).
pub const INTENT_RETRY: &str = "intent.retry";
/// Transient provider failures retried inside an attempt (absent when none was).
pub const INTENT_PROVIDER_RETRIES: &str = "intent.provider_retries";
/// The wait before a retry, in milliseconds.
pub const INTENT_BACKOFF_MS: &str = "intent.backoff_ms";
/// The judge's verdict: `pass`, `fail`, or `missing` (no readable verdict).
pub const INTENT_JUDGE_VERDICT: &str = "intent.judge.verdict";
/// Wall time of an attempt, in milliseconds.
pub const INTENT_ELAPSED_MS: &str = "intent.elapsed_ms";

// Metrics (with the `metrics` feature).

/// Tokens per model request, by `gen_ai.token.type` (a histogram, `{token}`).
pub const METRIC_TOKEN_USAGE: &str = "gen_ai.client.token.usage";
/// Duration of a model request, retries included (a histogram, seconds).
pub const METRIC_OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
/// `input` or `output` on [`METRIC_TOKEN_USAGE`].
pub const GEN_AI_TOKEN_TYPE: &str = "gen_ai.token.type";
/// Attempts per call (a histogram).
pub const METRIC_ATTEMPTS: &str = "intent.client.call.attempts";
/// Repairs made, by [`INTENT_REPAIR_KIND`] (a counter).
pub const METRIC_REPAIRS: &str = "intent.client.repairs";
/// Attempts that failed verification, by [`INTENT_VERIFY_STEP`] (a counter).
pub const METRIC_VERIFICATION_FAILURES: &str = "intent.client.verification.failures";
/// Judge verdicts, by [`INTENT_JUDGE_VERDICT`] (a counter).
pub const METRIC_JUDGE_VERDICTS: &str = "intent.client.judge.verdicts";
