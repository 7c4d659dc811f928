//! Why a decision produced no answer: a failure kind, whether trying again may help, and
//! never the state or an API key.

use std::fmt;
use std::time::Duration;

use crate::provider::{ProviderError, ProviderErrorKind};
pub use crate::result::DecisionFailureKind;

/// The decision failure kind of a provider failure kind.
fn of_provider(kind: ProviderErrorKind) -> DecisionFailureKind {
    match kind {
        ProviderErrorKind::Authentication | ProviderErrorKind::Permission => {
            DecisionFailureKind::Authentication
        }
        // A provider configured wrongly sent nothing: the request could not be made.
        ProviderErrorKind::NotFound
        | ProviderErrorKind::InvalidRequest
        | ProviderErrorKind::SchemaRejected
        | ProviderErrorKind::Configuration => DecisionFailureKind::InvalidRequest,
        ProviderErrorKind::RateLimited => DecisionFailureKind::RateLimited,
        ProviderErrorKind::Overloaded => DecisionFailureKind::Overloaded,
        ProviderErrorKind::Server => DecisionFailureKind::Unavailable,
        // A request canceled before its answer (a batch job's) was not answered in time.
        ProviderErrorKind::Timeout | ProviderErrorKind::Canceled => DecisionFailureKind::Timeout,
        ProviderErrorKind::Transport => DecisionFailureKind::Transport,
        ProviderErrorKind::InvalidResponse => DecisionFailureKind::InvalidResponse,
    }
}

/// A decision that produced no answer.
///
/// Its message is written by this crate and names what failed (a question id, a limit, a
/// kind and an HTTP status); it never holds the state, the provider's own words (which
/// may quote the request; see [`provider_message`](Self::provider_message)) or a key.
///
/// Its `Debug` form (what `main` returning a `Box<dyn Error>` and `tracing::error!(?e)`
/// print) holds the same: the kind, the HTTP status, the provider's request id and this
/// crate's message, and says that the provider's words are withheld rather than printing
/// them.
#[derive(Clone, PartialEq, thiserror::Error)]
#[error("decision {kind}{status}: {message}", status = self.status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
pub struct DecisionError {
    kind: DecisionFailureKind,
    message: String,
    status: Option<u16>,
    transient: bool,
    provider_message: Option<String>,
    retry_after: Option<Duration>,
    request_id: Option<String>,
}

impl fmt::Debug for DecisionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("DecisionError");
        debug
            .field("kind", &self.kind)
            .field("status", &self.status)
            .field("request_id", &self.request_id)
            .field("retry_after", &self.retry_after)
            .field("transient", &self.transient)
            .field("message", &self.message);
        if self.provider_message.is_some() {
            // A provider may echo the request, state included: its words are for
            // `provider_message()`, read where the state may be logged.
            debug.field("provider_message", &format_args!("<withheld>"));
        }
        debug.finish()
    }
}

impl DecisionError {
    /// A failure of `kind`, transient as the kind says. `message` must not quote the
    /// state.
    pub fn new(kind: DecisionFailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            status: None,
            transient: kind.is_transient(),
            provider_message: None,
            retry_after: None,
            request_id: None,
        }
    }

    /// An invalid request: nothing was sent.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(DecisionFailureKind::InvalidRequest, message)
    }

    /// An invalid response.
    pub fn invalid_response(message: impl Into<String>) -> Self {
        Self::new(DecisionFailureKind::InvalidResponse, message)
    }

    /// A failed provider call, classified; transient as the provider said (it may have
    /// sent `x-should-retry`).
    ///
    /// A request that never went out (a base URL that is not a URL, a key a header cannot
    /// carry, a refused connection) failed for a reason this crate wrote, which quotes
    /// nothing the provider said: it is shown in the message. Only what a provider wrote
    /// is withheld.
    pub fn from_provider(error: &ProviderError) -> Self {
        let kind = of_provider(error.kind());
        let (message, provider_message) = if error.request_sent() {
            (
                format!("the {} call failed", error.provider()),
                Some(error.message().to_owned()),
            )
        } else {
            (
                format!("the {} call failed: {}", error.provider(), error.message()),
                None,
            )
        };
        Self {
            kind,
            message,
            status: error.status(),
            transient: error.is_transient(),
            provider_message,
            retry_after: error.retry_after(),
            request_id: error.request_id().map(str::to_owned),
        }
    }

    /// The kind of failure.
    pub fn kind(&self) -> DecisionFailureKind {
        self.kind
    }

    /// The HTTP status, when the provider answered with one.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// The provider's id of the failed request (its request-id header), to quote to its
    /// support; it never holds the state.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// Whether sending the same request again later may succeed. A decision client never
    /// retries on its own: a caller who wants retries asks again.
    pub fn is_transient(&self) -> bool {
        self.transient
    }

    /// What the provider said, when the failure came from a provider call (with any key
    /// already removed). Kept out of the message because a provider may quote the
    /// request, and with it the state: log it only where the state may be logged.
    pub fn provider_message(&self) -> Option<&str> {
        self.provider_message.as_deref()
    }

    /// How long the provider asked the caller to wait before asking again
    /// (`retry-after-ms` or `retry-after`), when it said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// This failure, said of the answer to question `id` (every refusal of an answer
    /// names its question); a message that already begins so is kept as it is.
    pub(crate) fn about(mut self, id: &str) -> Self {
        let subject = format!("the answer to `{id}`");
        if !self.message.starts_with(&subject) {
            self.message = format!("{subject}: {}", self.message);
        }
        self
    }

    /// This failure, with the id of the request it concerns.
    pub(crate) fn with_request_id(mut self, request_id: Option<&str>) -> Self {
        if let Some(id) = request_id {
            self.request_id = Some(id.to_owned());
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_failures_keep_kind_status_and_transience_but_not_the_providers_words() {
        let provider = ProviderError::new(
            ProviderErrorKind::RateLimited,
            "openai",
            "state: {\"secret\": 1}",
        )
        .with_status(429);
        let error = DecisionError::from_provider(&provider);
        assert_eq!(error.kind(), DecisionFailureKind::RateLimited);
        assert!(error.is_transient());
        assert_eq!(error.status(), Some(429));
        assert_eq!(
            error.to_string(),
            "decision rate limited (HTTP 429): the openai call failed"
        );
        assert_eq!(error.provider_message(), Some("state: {\"secret\": 1}"));

        let told_not_to_retry = ProviderError::new(ProviderErrorKind::Server, "openai", "x")
            .with_status(500)
            .with_transient(false);
        let error = DecisionError::from_provider(&told_not_to_retry);
        assert_eq!(error.kind(), DecisionFailureKind::Unavailable);
        assert!(!error.is_transient());
    }

    #[test]
    fn neither_debug_nor_display_prints_what_the_provider_said() {
        let provider = ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            "openai",
            "Invalid request: {\"ticket\": \"SECRET-STATE-42\"}",
        )
        .with_status(400)
        .with_request_id("req-7");
        let error = DecisionError::from_provider(&provider);
        for printed in [
            format!("{error:?}"),
            format!("{error:#?}"),
            error.to_string(),
        ] {
            assert!(!printed.contains("SECRET-STATE"), "{printed}");
        }
        let debug = format!("{error:?}");
        for shown in ["InvalidRequest", "Some(400)", "req-7", "<withheld>"] {
            assert!(debug.contains(shown), "{shown} in {debug}");
        }
        assert_eq!(error.request_id(), Some("req-7"));
        // An error raised here has no provider words to withhold, and says nothing of them.
        let own = format!("{:?}", DecisionError::invalid_request("no questions"));
        assert!(!own.contains("provider_message"), "{own}");
    }

    #[test]
    fn a_reason_of_this_crate_for_a_request_never_sent_is_shown() {
        let unsent = [
            ProviderError::new(
                ProviderErrorKind::Configuration,
                "systemone-compatible",
                "the endpoint `127.0.0.1 port 8787/v1/systemone` is not a valid URL",
            ),
            ProviderError::new(
                ProviderErrorKind::Authentication,
                "typesafe",
                "the API key contains characters an HTTP header cannot carry",
            )
            .not_sent(),
        ];
        for provider in unsent {
            let error = DecisionError::from_provider(&provider);
            assert!(error.to_string().contains(provider.message()), "{error}");
            assert!(
                format!("{error:?}").contains(provider.message()),
                "{error:?}"
            );
            assert_eq!(error.provider_message(), None);
        }
    }

    #[test]
    fn every_provider_kind_has_a_decision_kind() {
        use ProviderErrorKind as P;
        let cases = [
            (P::Authentication, DecisionFailureKind::Authentication),
            (P::Permission, DecisionFailureKind::Authentication),
            (P::NotFound, DecisionFailureKind::InvalidRequest),
            (P::InvalidRequest, DecisionFailureKind::InvalidRequest),
            (P::SchemaRejected, DecisionFailureKind::InvalidRequest),
            (P::Configuration, DecisionFailureKind::InvalidRequest),
            (P::RateLimited, DecisionFailureKind::RateLimited),
            (P::Overloaded, DecisionFailureKind::Overloaded),
            (P::Server, DecisionFailureKind::Unavailable),
            (P::Timeout, DecisionFailureKind::Timeout),
            (P::Transport, DecisionFailureKind::Transport),
            (P::InvalidResponse, DecisionFailureKind::InvalidResponse),
        ];
        for (provider, decision) in cases {
            assert_eq!(of_provider(provider), decision);
            assert_eq!(
                decision.is_transient(),
                provider.is_transient(),
                "{provider}"
            );
        }
    }
}
