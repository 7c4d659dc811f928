//! Which provider of a fallback chain answered, and why the ones before it were passed
//! over: carried on the reply ([`ProviderReply::route`](crate::provider::ProviderReply))
//! and kept on the attempt's record ([`AttemptRecord::route`](crate::result::AttemptRecord)).
//!
//! It sits at the bottom of the crate, below both the providers that fill it and the
//! records that keep it, so it names why a member was passed over with its own small
//! vocabulary ([`SkipReason`]), which adds "cooling down" and "escalated past" to the
//! failures; [`SkipReason::failure_kind`] says a failure in the vocabulary every layer
//! shares.

use std::fmt;

use crate::failure::FailureKind;

/// The way a reply took through a fallback chain
/// ([`FallbackProvider`](crate::provider::fallback::FallbackProvider)).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Route {
    /// The name of the chain member that answered (its
    /// [`Member::named`](crate::provider::fallback::Member::named) name, else its
    /// provider's name and model).
    pub provider: String,
    /// The model that answered, as the member's provider named it.
    pub model: String,
    /// The member's place in the chain, from 0.
    pub position: usize,
    /// The members before it that were passed over, in chain order.
    pub skipped: Vec<Skip>,
}

impl Route {
    /// How many of the skipped members were sent the request (and may bill it): those
    /// that failed after sending, or refused.
    pub fn sent_before(&self) -> u32 {
        let sent = self.skipped.iter().filter(|skip| skip.sent).count();
        u32::try_from(sent).unwrap_or(u32::MAX)
    }
}

/// A chain member passed over for one request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Skip {
    /// The member's name.
    pub provider: String,
    /// The member's place in the chain, from 0.
    pub position: usize,
    /// Why it was passed over.
    pub reason: SkipReason,
    /// Whether the request reached it (a failed call that went out, or a refusal): such
    /// a request may be billed.
    pub sent: bool,
    /// What happened, in the library's words (the provider's classified error for a
    /// failure; never a refusal's own text).
    pub detail: String,
}

/// Why a fallback chain passed over one of its members.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SkipReason {
    /// The key was refused (401).
    Authentication,
    /// The key may not use the model, or billing blocks it (403, 402).
    Permission,
    /// Too many requests (429).
    RateLimited,
    /// The provider is overloaded (503, 529).
    Overloaded,
    /// The provider failed (500 and other 5xx).
    Server,
    /// The call took longer than its timeout.
    Timeout,
    /// The connection failed or dropped.
    Transport,
    /// The model or endpoint was not found (404), and the chain was told to fall over on
    /// it ([`with_fall_over_on`](crate::provider::fallback::FallbackProvider::with_fall_over_on)).
    NotFound,
    /// The member refused the request as sent (an invalid request, a rejected schema, a
    /// configuration error), and the chain was told to fall over on it.
    InvalidRequest,
    /// The member's reply could not be read, and the chain was told to fall over on it.
    InvalidResponse,
    /// The model refused to answer, and the chain was told to fall over on refusals.
    Refused,
    /// The member failed repeatedly and is cooling down (its circuit breaker is open),
    /// so it was not asked.
    CoolingDown,
    /// Earlier attempts of the call failed verification often enough that the chain
    /// escalated past this member.
    Escalated,
}

impl SkipReason {
    /// The reason in the vocabulary of failures every layer shares, for a member that
    /// failed or refused; `None` for one that was not asked (cooling down, escalated
    /// past).
    pub fn failure_kind(self) -> Option<FailureKind> {
        Some(match self {
            SkipReason::Authentication | SkipReason::Permission => FailureKind::Authentication,
            SkipReason::RateLimited => FailureKind::RateLimited,
            SkipReason::Overloaded | SkipReason::Server => FailureKind::Unavailable,
            SkipReason::Timeout => FailureKind::Timeout,
            SkipReason::Transport => FailureKind::Transport,
            SkipReason::NotFound | SkipReason::InvalidRequest => FailureKind::InvalidRequest,
            SkipReason::InvalidResponse => FailureKind::InvalidResponse,
            SkipReason::Refused => FailureKind::Refused,
            SkipReason::CoolingDown | SkipReason::Escalated => return None,
        })
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SkipReason::Authentication => "authentication failed",
            SkipReason::Permission => "permission denied",
            SkipReason::RateLimited => "rate limited",
            SkipReason::Overloaded => "overloaded",
            SkipReason::Server => "server error",
            SkipReason::Timeout => "timeout",
            SkipReason::Transport => "transport error",
            SkipReason::NotFound => "not found",
            SkipReason::InvalidRequest => "invalid request",
            SkipReason::InvalidResponse => "invalid response",
            SkipReason::Refused => "refused",
            SkipReason::CoolingDown => "cooling down",
            SkipReason::Escalated => "escalated past",
        })
    }
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.provider, self.reason, self.detail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_that_failed_has_the_shared_kind_and_one_not_asked_has_none() {
        assert_eq!(
            SkipReason::Overloaded.failure_kind(),
            Some(FailureKind::Unavailable)
        );
        assert_eq!(
            SkipReason::Permission.failure_kind(),
            Some(FailureKind::Authentication)
        );
        assert_eq!(
            SkipReason::Refused.failure_kind(),
            Some(FailureKind::Refused)
        );
        assert_eq!(SkipReason::CoolingDown.failure_kind(), None);
        assert_eq!(SkipReason::Escalated.failure_kind(), None);
        // The reasons of kinds a chain moves on only when told to.
        assert_eq!(
            SkipReason::NotFound.failure_kind(),
            Some(FailureKind::InvalidRequest)
        );
        assert_eq!(
            SkipReason::InvalidResponse.failure_kind(),
            Some(FailureKind::InvalidResponse)
        );
        assert_eq!(SkipReason::InvalidRequest.to_string(), "invalid request");
    }
}
