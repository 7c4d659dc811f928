//! Classified provider failures: what went wrong, whether trying again can help, and the
//! provider's own words (never the API key).

use std::fmt;
use std::time::Duration;

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
    /// The reply was not in the provider's documented shape.
    InvalidResponse,
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
        })
    }
}

/// A failed provider call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{provider} {kind}{status}: {message}", status = self.status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
pub struct ProviderError {
    kind: ProviderErrorKind,
    provider: String,
    message: String,
    status: Option<u16>,
    request_id: Option<String>,
    retry_after: Option<Duration>,
    transient: bool,
}

impl ProviderError {
    /// A new error of `kind` from `provider`, transient as the kind says.
    pub fn new(
        kind: ProviderErrorKind,
        provider: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            provider: provider.into(),
            message: message.into(),
            status: None,
            request_id: None,
            retry_after: None,
            transient: kind.is_transient(),
        }
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

    /// How long the provider asked the caller to wait, when it said.
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
    fn transient_can_be_overridden() {
        let err = ProviderError::new(ProviderErrorKind::InvalidRequest, "openai", "bad")
            .with_transient(true);
        assert!(err.is_transient());
        assert!(!ProviderErrorKind::Authentication.is_transient());
    }
}
