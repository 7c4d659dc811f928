//! Why a call failed, as types a program matches on: the [`FailureKind`] every failing
//! layer shares (intent calls, decisions, batch items, telemetry's `error.type`), and the
//! typed facts an issue keeps next to its message ([`IssueDetail`]).
//!
//! This module sits below every other: the provider layer's own kinds
//! ([`ProviderErrorKind`]) are defined here so that an issue can name them without the
//! record depending on the provider code, and the error an issue came from is kept
//! type-erased ([`Cause`]) for `source()` chains and downcasting.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Implements `Debug` for error types as their message.
///
/// `fn main() -> Result<(), Box<dyn Error>>` prints a returned error with `Debug`
/// (`Error: {e:?}`), as do `unwrap()`, `expect()` and `tracing`'s `?e`: there a person must
/// read the sentence that says what to set or do, not a variant's name and fields. The
/// structured details stay reachable through each type's accessors and `match`.
macro_rules! debug_as_message {
    ($($error:ty),+ $(,)?) => {$(
        impl ::std::fmt::Debug for $error {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Display::fmt(self, f)
            }
        }
    )+};
}
pub(crate) use debug_as_message;

/// Why a call (an intent method, a decision, a batch item) produced no value: the
/// vocabulary a program branches on instead of reading messages.
///
/// Each kind's documentation says when it happens and what to do about it. The enum is
/// `#[non_exhaustive]`: a `match` needs a `_` arm, as kinds may be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureKind {
    /// The model or the provider's content filter declined to answer. The refusal's
    /// reason and filter categories, when the provider gave them, are in
    /// [`IntentError::refusal`](crate::IntentError::refusal). Rephrase the intent or the
    /// input, or accept that this input is not answered.
    Refused,
    /// The reply was cut off (the output-token limit, the context window). Raise
    /// `max_output_tokens`, or ask for a shorter answer.
    Truncated,
    /// The request was never sent: an image or document over the provider's limit, an
    /// input over `max_input_chars`, an empty intent or model name, or a provider
    /// configured wrongly. Nothing was billed; fix the input or the configuration
    /// ([`IntentError::not_sent`](crate::IntentError::not_sent) says which).
    NotSent,
    /// The provider refused the request as malformed (HTTP 400, 404, 422), the model
    /// does not exist, or it rejected the response schema. Retrying the same request
    /// cannot help.
    InvalidRequest,
    /// The provider said to slow down (HTTP 429) and the retries ran out. Wait for
    /// [`IntentError::retry_after`](crate::IntentError::retry_after) when it says, then
    /// call again, or lower the client's rate limit.
    RateLimited,
    /// The API key is missing, wrong, or not allowed to use the model (HTTP 401, 402,
    /// 403). Fix the key or the account.
    Authentication,
    /// The provider failed or is overloaded (HTTP 5xx, 529, 408, 409) and the retries ran
    /// out. Try later, or another provider.
    Unavailable,
    /// The provider took longer than the request timeout. Raise the timeout, or ask for
    /// less.
    Timeout,
    /// The connection failed or dropped before a reply. Check the network or the base
    /// URL.
    Transport,
    /// The provider answered in a shape it does not document (a proxy's page, a broken
    /// body). Check the base URL and any proxy between.
    InvalidResponse,
    /// Every attempt's reply failed verification (not JSON, not the type, a validator
    /// rejected it) and the attempts ran out. The issues of the last attempt say what was
    /// wrong; raise `max_attempts`, make the intent clearer, or use a stronger model.
    VerificationExhausted,
    /// The reply verified but the judge (or the decision gate in front of it) rejected
    /// it on the last attempt. The judge's problems are in the issues.
    JudgeRejected,
    /// A guardrail stopped the call: the model-call ceiling, the time budget or the
    /// budget in money
    /// ([`IntentError::guardrail`](crate::IntentError::guardrail) says which). Raise the
    /// limit, or accept the stop.
    Guardrail,
    /// State shared by the fleet (the rate limiter's quota in Redis) could not be reached
    /// and the limiter fails closed, so nothing was sent. Bring Redis back, or let calls
    /// through on a local limiter (`OnRedisFailure::FailOpen`).
    SharedStateUnavailable,
    /// The request was canceled before its answer: a batch job stopped or past its time
    /// limit, or a batch canceled at the provider.
    Cancelled,
}

impl FailureKind {
    /// The kind as a stable `snake_case` name: what telemetry records as `error.type`
    /// and what a stored batch item keeps.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Refused => "refused",
            FailureKind::Truncated => "truncated",
            FailureKind::NotSent => "not_sent",
            FailureKind::InvalidRequest => "invalid_request",
            FailureKind::RateLimited => "rate_limited",
            FailureKind::Authentication => "authentication",
            FailureKind::Unavailable => "unavailable",
            FailureKind::Timeout => "timeout",
            FailureKind::Transport => "transport",
            FailureKind::InvalidResponse => "invalid_response",
            FailureKind::VerificationExhausted => "verification_exhausted",
            FailureKind::JudgeRejected => "judge_rejected",
            FailureKind::Guardrail => "guardrail",
            FailureKind::SharedStateUnavailable => "shared_state_unavailable",
            FailureKind::Cancelled => "cancelled",
        }
    }

    /// Whether the same request may succeed if sent again later: rate limits, outages,
    /// timeouts and dropped connections.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            FailureKind::RateLimited
                | FailureKind::Unavailable
                | FailureKind::Timeout
                | FailureKind::Transport
        )
    }

    /// The kind of a provider failure: `sent` is whether the request may have reached
    /// the provider (a request refused before sending is [`FailureKind::NotSent`]).
    pub fn of_provider(kind: ProviderErrorKind, sent: bool) -> Self {
        match kind {
            ProviderErrorKind::Authentication | ProviderErrorKind::Permission => {
                FailureKind::Authentication
            }
            ProviderErrorKind::NotFound
            | ProviderErrorKind::InvalidRequest
            | ProviderErrorKind::SchemaRejected
                if sent =>
            {
                FailureKind::InvalidRequest
            }
            ProviderErrorKind::NotFound
            | ProviderErrorKind::InvalidRequest
            | ProviderErrorKind::SchemaRejected
            | ProviderErrorKind::Configuration => FailureKind::NotSent,
            ProviderErrorKind::RateLimited => FailureKind::RateLimited,
            ProviderErrorKind::Overloaded | ProviderErrorKind::Server => FailureKind::Unavailable,
            ProviderErrorKind::Timeout => FailureKind::Timeout,
            ProviderErrorKind::Transport => FailureKind::Transport,
            ProviderErrorKind::InvalidResponse => FailureKind::InvalidResponse,
            ProviderErrorKind::Canceled => FailureKind::Cancelled,
        }
    }
}

impl fmt::Display for FailureKind {
    /// The kind in words (`rate limited`); [`as_str`](Self::as_str) is its stable name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str().replace('_', " "))
    }
}

/// What kind of failure a provider call met: finer than [`FailureKind`], as the HTTP
/// layer classifies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProviderErrorKind {
    /// The API key is missing or wrong (401).
    Authentication,
    /// The key may not use this resource (403), or billing blocks it (402).
    Permission,
    /// The model or endpoint does not exist (404).
    NotFound,
    /// The request was refused as malformed (400, 413, 422).
    InvalidRequest,
    /// The provider refused the response schema (a 400 that names the schema).
    SchemaRejected,
    /// Too many requests (429).
    RateLimited,
    /// The provider is overloaded (529, 503).
    Overloaded,
    /// The provider failed (500 and other 5xx, 408, 409).
    Server,
    /// The call took longer than its timeout.
    Timeout,
    /// The connection failed or dropped.
    Transport,
    /// The reply was not in the provider's documented shape, or larger than the provider
    /// reads.
    InvalidResponse,
    /// The provider is configured wrongly (a base URL that is not an `http(s)` URL, a client
    /// that cannot be built): nothing was sent, and no retry can help.
    Configuration,
    /// The request was never answered because its caller stopped waiting for it (a batch
    /// job canceled, or past its time limit, or a batch canceled at the provider).
    Canceled,
}

impl ProviderErrorKind {
    /// Every kind, for the places that store a kind by name (a batch job's directory, a
    /// cassette).
    pub(crate) const ALL: [ProviderErrorKind; 13] = [
        ProviderErrorKind::Authentication,
        ProviderErrorKind::Permission,
        ProviderErrorKind::NotFound,
        ProviderErrorKind::InvalidRequest,
        ProviderErrorKind::SchemaRejected,
        ProviderErrorKind::RateLimited,
        ProviderErrorKind::Overloaded,
        ProviderErrorKind::Server,
        ProviderErrorKind::Timeout,
        ProviderErrorKind::Transport,
        ProviderErrorKind::InvalidResponse,
        ProviderErrorKind::Configuration,
        ProviderErrorKind::Canceled,
    ];

    /// The kind's stable `snake_case` name (`rate_limited`), as it is serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderErrorKind::Authentication => "authentication",
            ProviderErrorKind::Permission => "permission",
            ProviderErrorKind::NotFound => "not_found",
            ProviderErrorKind::InvalidRequest => "invalid_request",
            ProviderErrorKind::SchemaRejected => "schema_rejected",
            ProviderErrorKind::RateLimited => "rate_limited",
            ProviderErrorKind::Overloaded => "overloaded",
            ProviderErrorKind::Server => "server",
            ProviderErrorKind::Timeout => "timeout",
            ProviderErrorKind::Transport => "transport",
            ProviderErrorKind::InvalidResponse => "invalid_response",
            ProviderErrorKind::Configuration => "configuration",
            ProviderErrorKind::Canceled => "canceled",
        }
    }

    /// The kind named `name`: its [`as_str`](Self::as_str) name, or its variant name
    /// (`RateLimited`, as files written before the names were fixed hold it).
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name || format!("{kind:?}") == name)
    }

    /// Whether failures of this kind are worth retrying by default.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            ProviderErrorKind::RateLimited
                | ProviderErrorKind::Overloaded
                | ProviderErrorKind::Server
                | ProviderErrorKind::Timeout
                | ProviderErrorKind::Transport
        )
    }
}

impl fmt::Display for ProviderErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProviderErrorKind::Authentication => "authentication failed",
            ProviderErrorKind::Permission => "permission denied",
            ProviderErrorKind::NotFound => "not found",
            ProviderErrorKind::InvalidRequest => "invalid request",
            ProviderErrorKind::SchemaRejected => "schema rejected",
            ProviderErrorKind::RateLimited => "rate limited",
            ProviderErrorKind::Overloaded => "overloaded",
            ProviderErrorKind::Server => "server error",
            ProviderErrorKind::Timeout => "timeout",
            ProviderErrorKind::Transport => "transport error",
            ProviderErrorKind::InvalidResponse => "invalid response",
            ProviderErrorKind::Configuration => "configuration error",
            ProviderErrorKind::Canceled => "canceled",
        })
    }
}

/// The typed facts of one issue, next to the message written for the model and for
/// people: what a program reads instead of the words.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "detail")]
#[non_exhaustive]
pub enum IssueDetail {
    /// No facts beyond the message.
    #[default]
    None,
    /// The model or the provider's filter declined to answer.
    Refused(Box<Refusal>),
    /// The reply was cut off.
    Truncated {
        /// The provider's stop reason, as it sent it.
        stop_reason: Option<String>,
    },
    /// A provider call failed.
    Provider(Box<ProviderFacts>),
    /// The reply was empty.
    EmptyReply,
    /// The reply was not JSON.
    NotJson,
    /// The reply's value does not match the schema at one place.
    Schema(Box<SchemaMismatch>),
    /// One of the caller's validators rejected the value (or panicked).
    Validator,
    /// The judge listed a problem, returned no verdict, or could not be read (and fails
    /// closed); or the decision gate in front of it rejected the reply.
    Judge,
    /// A decision (a batch item's question, the decision gate in front of the judge)
    /// failed.
    Decision {
        /// The decision's failure kind.
        kind: FailureKind,
        /// The HTTP status, when the provider answered with one.
        status: Option<u16>,
        /// How long the provider asked to wait, when it said.
        retry_after: Option<Duration>,
    },
    /// A guardrail stopped the call.
    Guardrail(Guardrail),
    /// The fleet's shared state could not be reached.
    SharedStateUnavailable {
        /// Whether the call stopped for it (fail-closed) rather than going on without it.
        fail_closed: bool,
    },
    /// The request was not sent.
    NotSent(NotSent),
}

/// A refusal: who declined, why, and the filter's categories when it named them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Refusal {
    /// The model's or the provider's reason, when it gave one.
    pub reason: Option<String>,
    /// The content filter's categories that were triggered (Azure's and OpenAI's
    /// `content_filter_results`, Gemini's safety ratings), when given; empty when the
    /// model itself declined.
    pub categories: Vec<String>,
}

impl Refusal {
    /// A refusal with `reason` and `categories`.
    pub fn new(reason: Option<String>, categories: Vec<String>) -> Self {
        Self { reason, categories }
    }
}

/// What is known of a failed provider call, without its message (a provider's words may
/// quote the request).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct ProviderFacts {
    /// The provider's classification of the failure.
    pub kind: ProviderErrorKind,
    /// The provider's name.
    pub provider: String,
    /// The HTTP status, when there was a response.
    pub status: Option<u16>,
    /// The provider's request id, when it sent one.
    pub request_id: Option<String>,
    /// How long the provider asked to wait, when it said.
    pub retry_after: Option<Duration>,
    /// Whether the request may have reached the provider.
    pub sent: bool,
}

/// Where and how a value does not match its schema, by type and never by value.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct SchemaMismatch {
    /// The JSON pointer of the place inside the answer (`/lines/0/qty`; empty for the
    /// whole answer).
    pub path: String,
    /// The JSON Schema keyword that failed (`type`, `required`, `enum`, `maximum`, ...).
    pub keyword: String,
    /// What the schema expects there, described (`integer`, `one of low, high`).
    pub expected: String,
    /// What was found, by JSON type only (`a string`, `null`).
    pub found: String,
}

/// Which guardrail stopped a call.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "guardrail")]
#[non_exhaustive]
pub enum Guardrail {
    /// The ceiling on model calls (judge and gate calls included) was reached.
    ModelCalls {
        /// The ceiling.
        ceiling: u32,
    },
    /// The time budget ran out.
    TimeBudget {
        /// The budget.
        budget: Duration,
    },
    /// The next attempt could pass the budget in money (`max_cost`), so it was not sent.
    Cost {
        /// The budget.
        budget: crate::cost::Cost,
    },
}

/// Why a request was not sent.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
#[non_exhaustive]
pub enum NotSent {
    /// An image or a document is over the provider's limits (size, pages, count, type):
    /// the [`MediaRefusal`](crate::media::MediaRefusal) is the error's source.
    MediaLimit {
        /// The provider whose limit it is.
        provider: String,
    },
    /// The serialized input is over the client's `max_input_chars`.
    InputTooLarge {
        /// Characters in the serialized input.
        chars: usize,
        /// The limit.
        max: usize,
    },
    /// The input could not be made into a request (it could not be serialized, the
    /// intent or the model name is empty, the output schema cannot be used).
    InvalidInput,
    /// The provider is configured wrongly (a base URL that is no URL, a missing
    /// deployment).
    Configuration {
        /// The provider.
        provider: String,
    },
}

/// The error an issue came from, kept for `source()` chains and downcasting (as tower's
/// `BoxError` is): `cause.downcast_ref::<ProviderError>()`.
#[derive(Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    /// Keeps `error`.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Arc::new(error))
    }

    /// The error.
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }

    /// The error as `E`, when it is one.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref::<E>()
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Cause {
    /// The kept error's own source: a `Cause` stands for the error it keeps.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for Cause {
    /// Two causes are equal when they are the same error, or say the same.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for Cause {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_kind_has_one_failure_kind() {
        use ProviderErrorKind as P;
        let table = [
            (P::Authentication, true, FailureKind::Authentication),
            (P::Permission, true, FailureKind::Authentication),
            (P::NotFound, true, FailureKind::InvalidRequest),
            (P::InvalidRequest, true, FailureKind::InvalidRequest),
            (P::InvalidRequest, false, FailureKind::NotSent),
            (P::SchemaRejected, true, FailureKind::InvalidRequest),
            (P::RateLimited, true, FailureKind::RateLimited),
            (P::Overloaded, true, FailureKind::Unavailable),
            (P::Server, true, FailureKind::Unavailable),
            (P::Timeout, true, FailureKind::Timeout),
            (P::Transport, false, FailureKind::Transport),
            (P::InvalidResponse, true, FailureKind::InvalidResponse),
            (P::Configuration, false, FailureKind::NotSent),
            (P::Canceled, true, FailureKind::Cancelled),
        ];
        for (provider, sent, kind) in table {
            assert_eq!(FailureKind::of_provider(provider, sent), kind, "{provider}");
        }
    }

    #[test]
    fn kinds_have_stable_snake_case_names() {
        assert_eq!(FailureKind::RateLimited.as_str(), "rate_limited");
        assert_eq!(
            serde_json::to_value(FailureKind::VerificationExhausted).unwrap(),
            "verification_exhausted"
        );
        let back: FailureKind = serde_json::from_str("\"not_sent\"").unwrap();
        assert_eq!(back, FailureKind::NotSent);
        assert!(FailureKind::Timeout.is_transient());
        assert!(!FailureKind::Refused.is_transient());
    }
}
