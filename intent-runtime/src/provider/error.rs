//! Classified provider failures: what went wrong, whether trying again can help, whether
//! the request went out, and the provider's own words (never the API key, and never more
//! than [`MESSAGE_MAX_CHARS`] of them).

use std::fmt;
use std::time::Duration;

use crate::failure::{Cause, FailureKind, IssueDetail, NotSent, ProviderFacts};
use crate::media::MediaRefusal;
use crate::result::{IssueSource, ResultIssue};

/// The most characters of a message a [`ProviderError`] keeps; the rest is cut, with a note
/// of how much was left out.
///
/// A server can put anything in an error body (one answered with a 10 MB `message`), and
/// the message is carried into `Display`, issues, logs and the next prompt: it has to stay
/// an excerpt whatever the server sends.
pub const MESSAGE_MAX_CHARS: usize = 1_000;

pub use crate::failure::ProviderErrorKind;

/// A failed provider call.
///
/// Its `Display` names the provider, the kind, the HTTP status and the request id, and
/// the message when this crate wrote it (a connection refused, a media limit). A message
/// the provider wrote is never shown there, as it may quote the request: read it with
/// [`message`](Self::message) where the request may be logged. Its `Debug` is the same
/// sentence with the [`FailureKind`] it maps to.
#[derive(Clone)]
pub struct ProviderError {
    kind: ProviderErrorKind,
    provider: String,
    message: String,
    /// Where in `message` the provider's words begin (everything before is this crate's),
    /// when it holds any: `Display` shows only what comes before.
    provider_words_from: Option<u32>,
    status: Option<u16>,
    request_id: Option<String>,
    retry_after: Option<Duration>,
    transient: bool,
    sent: bool,
    cause: Option<Cause>,
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}{}", self.provider, self.kind, self.details())
    }
}

impl std::error::Error for ProviderError {
    /// The error below this one (the transport's, a media refusal), when there is one.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause.as_ref().map(|cause| cause.error() as _)
    }
}

impl fmt::Debug for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self} [{}]", self.failure_kind().as_str())
    }
}

impl PartialEq for ProviderError {
    /// Errors are equal when everything but their cause is (a cause is compared by what it
    /// says).
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.provider == other.provider
            && self.message == other.message
            && self.provider_words_from == other.provider_words_from
            && self.status == other.status
            && self.request_id == other.request_id
            && self.retry_after == other.retry_after
            && self.transient == other.transient
            && self.sent == other.sent
            && self.cause == other.cause
    }
}

impl ProviderError {
    /// A new error of `kind` from `provider`, transient as the kind says. The message is
    /// cut to [`MESSAGE_MAX_CHARS`].
    ///
    /// The request counts as sent (a model call, possibly billed) unless the kind is
    /// [`ProviderErrorKind::Configuration`] or [`not_sent`](Self::not_sent) says otherwise.
    pub fn new(
        kind: ProviderErrorKind,
        provider: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            provider: provider.into(),
            message: bounded_message(message.into()),
            provider_words_from: None,
            status: None,
            request_id: None,
            retry_after: None,
            transient: kind.is_transient(),
            sent: kind != ProviderErrorKind::Configuration,
            cause: None,
        }
    }

    /// Marks the message as the provider's own words (an error body's message, an
    /// excerpt of a body): kept for [`message`](Self::message), never shown by `Display`.
    pub fn from_provider_words(mut self) -> Self {
        self.provider_words_from = Some(0);
        self
    }

    /// Marks the message as this crate's words up to byte `from`, and the provider's
    /// after it (an excerpt of a body that is not the API's).
    pub(crate) fn with_provider_words_from(mut self, from: usize) -> Self {
        let from = from.min(self.message.len());
        self.provider_words_from = Some(u32::try_from(from).unwrap_or(u32::MAX));
        self
    }

    /// Keeps the error this one came from (a transport error, a media refusal), for
    /// `source()`.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.cause = Some(Cause::new(source));
        self
    }

    /// The status, the request id, and the message when this crate wrote it, as
    /// `Display` shows them after the kind.
    fn details(&self) -> String {
        let mut details = match (self.status, &self.request_id) {
            (Some(status), Some(id)) => format!(" (HTTP {status}, request id {id})"),
            (Some(status), None) => format!(" (HTTP {status})"),
            (None, Some(id)) => format!(" (request id {id})"),
            (None, None) => String::new(),
        };
        let ours = match self.provider_words_from {
            Some(from) => self.message.get(..from as usize).unwrap_or_default(),
            None => &self.message,
        };
        let ours = ours.trim_end_matches([';', ' ', ':']);
        if !ours.is_empty() {
            details.push_str(": ");
            details.push_str(ours);
        }
        details
    }

    /// The [`FailureKind`] this failure is, in the vocabulary every layer shares.
    pub fn failure_kind(&self) -> FailureKind {
        FailureKind::of_provider(self.kind, self.sent)
    }

    /// What is known of the failure, without its message.
    pub fn facts(&self) -> ProviderFacts {
        ProviderFacts {
            kind: self.kind,
            provider: self.provider.clone(),
            status: self.status,
            request_id: self.request_id.clone(),
            retry_after: self.retry_after,
            sent: self.sent,
        }
    }

    /// The issue of attempt `attempt` this failure raises: its sentence, its facts, and
    /// the error itself as the cause.
    pub(crate) fn issue(&self, attempt: u32) -> ResultIssue {
        let detail = match (&self.cause, self.failure_kind()) {
            (Some(cause), FailureKind::NotSent)
                if cause.downcast_ref::<MediaRefusal>().is_some() =>
            {
                IssueDetail::NotSent(NotSent::MediaLimit {
                    provider: self.provider.clone(),
                })
            }
            (_, FailureKind::NotSent) if self.kind == ProviderErrorKind::Configuration => {
                IssueDetail::NotSent(NotSent::Configuration {
                    provider: self.provider.clone(),
                })
            }
            _ => IssueDetail::Provider(Box::new(self.facts())),
        };
        ResultIssue::new(IssueSource::Provider, self.to_string(), attempt)
            .with_detail(detail)
            .with_cause(Cause::new(self.clone()))
    }

    /// Marks the request as never sent (it failed before any byte reached the provider:
    /// the connection was refused, the body could not be written), so it is not counted
    /// as a model call.
    pub fn not_sent(mut self) -> Self {
        self.sent = false;
        self
    }

    /// The same error with every copy of `secret` (the API key) in its message replaced:
    /// for a message a provider wrote that could quote the request, as a batch's
    /// per-request errors can.
    pub(crate) fn redacted(mut self, secret: Option<&str>) -> Self {
        self.message = redact(&self.message, secret);
        self.provider_words_from = Some(0);
        self
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Sets the provider's request id.
    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// Sets how long the provider asked the caller to wait before retrying.
    pub fn with_retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// Overrides whether the error is worth retrying (for `x-should-retry`).
    pub fn with_transient(mut self, transient: bool) -> Self {
        self.transient = transient;
        self
    }

    /// The kind of failure.
    pub fn kind(&self) -> ProviderErrorKind {
        self.kind
    }

    /// The provider's name.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The provider's message, or ours when it sent none. A provider's words may quote
    /// the request: log them only where the request may be logged.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The HTTP status, when there was a response.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// The provider's request id, when it sent one.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// How long the provider asked the caller to wait, when it said; `Duration::ZERO`
    /// when it said to retry now (`retry-after: 0`, or a date already past).
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// Whether trying again may succeed.
    pub fn is_transient(&self) -> bool {
        self.transient
    }

    /// Whether the call timed out.
    pub fn is_timeout(&self) -> bool {
        self.kind == ProviderErrorKind::Timeout
    }

    /// Whether the request may have reached the provider, so that it counts as a model
    /// call (what the provider bills); `false` only when it certainly did not.
    pub fn request_sent(&self) -> bool {
        self.sent
    }
}

/// `message`, or its first [`MESSAGE_MAX_CHARS`] characters and a note of how many more
/// there were.
pub(crate) fn bounded_message(message: String) -> String {
    // Bytes bound characters from above: most messages are decided without counting.
    if message.len() <= MESSAGE_MAX_CHARS {
        return message;
    }
    let Some((cut, _)) = message.char_indices().nth(MESSAGE_MAX_CHARS) else {
        return message;
    };
    let left_out = message[cut..].chars().count();
    format!("{}… ({left_out} more characters)", &message[..cut])
}

impl From<MediaRefusal> for ProviderError {
    /// A refusal is a request the provider would refuse too: never retried, and not
    /// counted as a model call (nothing was sent).
    fn from(refusal: MediaRefusal) -> Self {
        let provider = refusal.provider().to_owned();
        ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            provider,
            refusal.to_string(),
        )
        .not_sent()
        .with_source(refusal)
    }
}

/// Replaces every occurrence of the API key in `text`, so a proxy or server that echoes the
/// request back cannot leak it into an error.
pub(crate) fn redact(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(secret) if !secret.is_empty() => text.replace(secret, "[redacted]"),
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_provider_kind_status_and_message() {
        let err = ProviderError::new(ProviderErrorKind::RateLimited, "openai", "slow down")
            .with_status(429);
        assert_eq!(err.to_string(), "openai rate limited (HTTP 429): slow down");
        assert!(err.is_transient());
    }

    #[test]
    fn a_long_message_is_cut_to_an_excerpt() {
        let long = "é".repeat(10 * 1024 * 1024);
        let err = ProviderError::new(ProviderErrorKind::InvalidRequest, "openai", long);
        let kept: String = "é".repeat(MESSAGE_MAX_CHARS);
        let more = 10 * 1024 * 1024 - MESSAGE_MAX_CHARS;
        assert_eq!(err.message(), format!("{kept}… ({more} more characters)"));
        assert!(err.to_string().len() < 3 * MESSAGE_MAX_CHARS);
        let exact = "x".repeat(MESSAGE_MAX_CHARS);
        let err = ProviderError::new(ProviderErrorKind::Server, "openai", exact.clone());
        assert_eq!(err.message(), exact);
    }

    #[test]
    fn configuration_errors_are_neither_transient_nor_sent() {
        let err = ProviderError::new(ProviderErrorKind::Configuration, "openai", "ftp://");
        assert!(!err.is_transient());
        assert!(!err.request_sent());
        let sent = ProviderError::new(ProviderErrorKind::Transport, "openai", "reset");
        assert!(sent.request_sent());
        assert!(!sent.not_sent().request_sent());
    }

    #[test]
    fn transient_can_be_overridden() {
        let err = ProviderError::new(ProviderErrorKind::InvalidRequest, "openai", "bad")
            .with_transient(true);
        assert!(err.is_transient());
        assert!(!ProviderErrorKind::Authentication.is_transient());
    }
}
