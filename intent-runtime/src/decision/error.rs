//! Why a decision produced no answer: a failure kind, whether trying again may help, and
//! never the state or an API key.

use std::fmt;
use std::time::Duration;

use crate::provider::ProviderError;
pub use crate::result::FailureKind;
use crate::result::{Cause, IssueDetail, IssueSource, ResultIssue};

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
#[derive(Clone, PartialEq)]
pub struct DecisionError {
    kind: FailureKind,
    message: String,
    status: Option<u16>,
    transient: bool,
    provider_message: Option<String>,
    retry_after: Option<Duration>,
    request_id: Option<String>,
    /// The provider call's failure, whose `Display` never holds the provider's words.
    cause: Option<Cause>,
}

impl fmt::Display for DecisionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "decision {}", self.kind)?;
        if let Some(status) = self.status {
            write!(f, " (HTTP {status})")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for DecisionError {
    /// The provider call's failure, when the decision failed on one: its `Display`
    /// never holds the provider's words, and its own source is the transport's error.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.as_ref().map(|cause| cause.error() as _)
    }
}

impl fmt::Debug for DecisionError {
    /// The sentence and the kind: what `main` returning this error prints. The provider's
    /// words are never in it (read them with [`provider_message`](Self::provider_message)).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self} [{}", self.kind.as_str())?;
        if let Some(id) = &self.request_id {
            write!(f, ", request id {id}")?;
        }
        if self.provider_message.is_some() {
            f.write_str(", the provider's message withheld (see provider_message)")?;
        }
        f.write_str("]")
    }
}

impl DecisionError {
    /// A failure of `kind`, transient as the kind says. `message` must not quote the
    /// state.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            status: None,
            transient: kind.is_transient(),
            provider_message: None,
            retry_after: None,
            request_id: None,
            cause: None,
        }
    }

    /// An invalid request: nothing was sent.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(FailureKind::InvalidRequest, message)
    }

    /// An invalid response.
    pub fn invalid_response(message: impl Into<String>) -> Self {
        Self::new(FailureKind::InvalidResponse, message)
    }

    /// A failed provider call, classified; transient as the provider said (it may have
    /// sent `x-should-retry`).
    ///
    /// A request that never went out (a base URL that is not a URL, a key a header cannot
    /// carry, a refused connection) failed for a reason this crate wrote, which quotes
    /// nothing the provider said: it is shown in the message. Only what a provider wrote
    /// is withheld.
    pub fn from_provider(error: &ProviderError) -> Self {
        let kind = error.failure_kind();
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
            cause: Some(Cause::new(error.clone())),
        }
    }

    /// A failure as a cassette recorded it, served again: its kind, this crate's message,
    /// the HTTP status, whether it was transient and the provider's words (sanitized). The
    /// wait a rate limit asked for and the request id are not kept: a replay has nothing
    /// to wait for, and ids change on every run.
    pub(crate) fn replayed(
        kind: FailureKind,
        message: String,
        status: Option<u16>,
        transient: bool,
        provider_message: Option<String>,
    ) -> Self {
        Self {
            status,
            transient,
            provider_message,
            ..Self::new(kind, message)
        }
    }

    /// This crate's message, without the kind and status that `Display` puts before it.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// The kind of failure.
    pub fn kind(&self) -> FailureKind {
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

    /// The issue of attempt `attempt` this failure raises, with `message` (which must not
    /// quote the state), its kind, and this error as its cause.
    pub(crate) fn issue(
        &self,
        source: IssueSource,
        message: impl Into<String>,
        attempt: u32,
    ) -> ResultIssue {
        ResultIssue::new(source, message, attempt)
            .with_detail(IssueDetail::Decision {
                kind: self.kind,
                status: self.status,
                retry_after: self.retry_after,
            })
            .with_cause(Cause::new(self.clone()))
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
    use crate::provider::ProviderErrorKind;

    #[test]
    fn provider_failures_keep_kind_status_and_transience_but_not_the_providers_words() {
        let provider = ProviderError::new(
            ProviderErrorKind::RateLimited,
            "openai",
            "state: {\"secret\": 1}",
        )
        .with_status(429);
        let error = DecisionError::from_provider(&provider);
        assert_eq!(error.kind(), FailureKind::RateLimited);
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
        assert_eq!(error.kind(), FailureKind::Unavailable);
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
        for shown in ["[invalid_request", "HTTP 400", "req-7", "withheld"] {
            assert!(debug.contains(shown), "{shown} in {debug}");
        }
        assert_eq!(error.request_id(), Some("req-7"));
        // An error raised here has no provider words to withhold, and says nothing of them.
        let own = format!("{:?}", DecisionError::invalid_request("no questions"));
        assert!(!own.contains("withheld"), "{own}");
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
}
