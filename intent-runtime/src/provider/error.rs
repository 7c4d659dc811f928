//! Classified provider failures: what went wrong, whether trying again can help, whether
//! the request went out, and the provider's own words (never the API key, and never more
//! than [`MESSAGE_MAX_CHARS`] of them).

use std::fmt;
use std::time::Duration;

use crate::media::MediaRefusal;

/// The most characters of a message a [`ProviderError`] keeps; the rest is cut, with a note
/// of how much was left out.
///
/// A server can put anything in an error body (one answered with a 10 MB `message`), and
/// the message is carried into `Display`, issues, logs and the next prompt: it has to stay
/// an excerpt whatever the server sends.
pub const MESSAGE_MAX_CHARS: usize = 1_000;

/// What kind of failure a provider call met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

crate::error::debug_as_message!(ProviderError);

/// A failed provider call.
#[derive(Clone, PartialEq, thiserror::Error)]
#[error("{provider} {kind}{status}: {message}", status = self.status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
pub struct ProviderError {
    kind: ProviderErrorKind,
    provider: String,
    message: String,
    status: Option<u16>,
    request_id: Option<String>,
    retry_after: Option<Duration>,
    transient: bool,
    sent: bool,
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
            status: None,
            request_id: None,
            retry_after: None,
            transient: kind.is_transient(),
            sent: kind != ProviderErrorKind::Configuration,
        }
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

    /// The provider's message, or ours when it sent none.
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
        ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            refusal.provider(),
            refusal.to_string(),
        )
        .not_sent()
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
