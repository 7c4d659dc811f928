//! Cooldowns: a circuit breaker per chain member, so that a provider that failed
//! repeatedly is passed over for a while instead of being asked (and waited for) by
//! every request.
//!
//! A member is *closed* (asked) until [`CooldownPolicy::failures`] failures in a row;
//! then *open* (passed over) for [`CooldownPolicy::cooldown`]; then *half-open*: one
//! request is let through as a probe, and while it is out (at most
//! [`CooldownPolicy::probe_timeout`]) the others still pass the member over. A probe that
//! succeeds closes the breaker, one that fails opens it again for another cooldown.
//!
//! The state lives in a [`CooldownStore`]: [`LocalCooldowns`] in the process (the
//! default), or Redis for a fleet
//! (`fleet::RedisCooldowns`, behind the `redis` feature), so that every replica stops
//! asking a failing provider as soon as the fleet together saw it fail.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// When a chain member is cooled down, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CooldownPolicy {
    /// Failures in a row (outages, timeouts, rate limits, 5xx, transport and
    /// authentication failures) that open the breaker. At least 1.
    pub failures: u32,
    /// How long an open breaker passes the member over before a probe.
    pub cooldown: Duration,
    /// How long a probe may be out before another request may probe instead (a probe
    /// whose caller vanished must not keep the member shut).
    pub probe_timeout: Duration,
}

/// The default failures in a row that open a breaker.
pub const DEFAULT_COOLDOWN_FAILURES: u32 = 3;
/// The default cooldown of an open breaker.
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(30);
/// The default time limit of a probe.
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(30);

impl Default for CooldownPolicy {
    fn default() -> Self {
        Self {
            failures: DEFAULT_COOLDOWN_FAILURES,
            cooldown: DEFAULT_COOLDOWN,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
        }
    }
}

/// What a [`CooldownStore`] says about asking a member now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Admission {
    /// The breaker is closed: ask. `failures` is how many failures in a row it has
    /// counted so far (a success need only be reported when it is not 0).
    Closed {
        /// Failures in a row so far.
        failures: u32,
    },
    /// The breaker is half-open and this request is its probe: ask, and report the
    /// outcome.
    Probe,
    /// The breaker is open (or another request is probing): pass the member over.
    Open {
        /// How long until it may be asked again, as far as the store knows.
        retry_in: Duration,
    },
}

/// Where the breakers' state lives. Every method is one step of the state machine
/// described in the [module docs](self), keyed by the member's name; an
/// implementation shared by several processes must make each step atomic.
///
/// A store never fails a request: one that cannot reach its state answers
/// [`Admission::Closed`] (asking a provider is always safe) and says so in its logs.
#[async_trait::async_trait]
pub trait CooldownStore: Send + Sync + fmt::Debug {
    /// Whether `member` may be asked now; a half-open breaker hands out one probe.
    async fn admit(&self, member: &str, policy: &CooldownPolicy) -> Admission;

    /// `member` failed in a way that counts (see [`CooldownPolicy::failures`]).
    async fn failed(&self, member: &str, policy: &CooldownPolicy);

    /// `member` answered: its breaker closes and its failures are forgotten.
    async fn succeeded(&self, member: &str, policy: &CooldownPolicy);
}

#[async_trait::async_trait]
impl<S: CooldownStore + ?Sized> CooldownStore for Arc<S> {
    async fn admit(&self, member: &str, policy: &CooldownPolicy) -> Admission {
        (**self).admit(member, policy).await
    }
    async fn failed(&self, member: &str, policy: &CooldownPolicy) {
        (**self).failed(member, policy).await;
    }
    async fn succeeded(&self, member: &str, policy: &CooldownPolicy) {
        (**self).succeeded(member, policy).await;
    }
}

/// One member's breaker.
#[derive(Debug, Clone, Copy, Default)]
struct Breaker {
    failures: u32,
    /// Set while open or half-open.
    open_until: Option<Instant>,
    /// Set while a probe is out.
    probe_until: Option<Instant>,
}

/// Breakers kept in this process: the default store of a chain. Clones share the
/// breakers, so several chains with the same members can share one.
#[derive(Debug, Clone, Default)]
pub struct LocalCooldowns {
    breakers: Arc<Mutex<HashMap<String, Breaker>>>,
}

impl LocalCooldowns {
    /// Breakers with nothing counted yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn breakers(&self) -> std::sync::MutexGuard<'_, HashMap<String, Breaker>> {
        // A panic elsewhere mid-update leaves a breaker in a valid state: each field is
        // written whole.
        self.breakers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// [`CooldownStore::admit`] at `now`.
    pub(crate) fn admit_at(
        &self,
        member: &str,
        policy: &CooldownPolicy,
        now: Instant,
    ) -> Admission {
        let mut breakers = self.breakers();
        let Some(breaker) = breakers.get_mut(member) else {
            return Admission::Closed { failures: 0 };
        };
        let Some(open_until) = breaker.open_until else {
            return Admission::Closed {
                failures: breaker.failures,
            };
        };
        if now < open_until {
            return Admission::Open {
                retry_in: open_until - now,
            };
        }
        if let Some(probe_until) = breaker.probe_until.filter(|until| now < *until) {
            return Admission::Open {
                retry_in: probe_until - now,
            };
        }
        breaker.probe_until = Some(now + policy.probe_timeout);
        Admission::Probe
    }

    /// [`CooldownStore::failed`] at `now`.
    pub(crate) fn failed_at(&self, member: &str, policy: &CooldownPolicy, now: Instant) {
        let mut breakers = self.breakers();
        let breaker = breakers.entry(member.to_owned()).or_default();
        breaker.failures = breaker.failures.saturating_add(1);
        if breaker.open_until.is_some() || breaker.failures >= policy.failures.max(1) {
            breaker.open_until = Some(now + policy.cooldown);
            breaker.probe_until = None;
        }
    }
}

#[async_trait::async_trait]
impl CooldownStore for LocalCooldowns {
    async fn admit(&self, member: &str, policy: &CooldownPolicy) -> Admission {
        self.admit_at(member, policy, Instant::now())
    }

    async fn failed(&self, member: &str, policy: &CooldownPolicy) {
        self.failed_at(member, policy, Instant::now());
    }

    async fn succeeded(&self, member: &str, _policy: &CooldownPolicy) {
        self.breakers().remove(member);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: CooldownPolicy = CooldownPolicy {
        failures: 2,
        cooldown: Duration::from_secs(10),
        probe_timeout: Duration::from_secs(3),
    };

    #[test]
    fn a_breaker_opens_after_the_failures_in_a_row_and_probes_once_after_the_cooldown() {
        let store = LocalCooldowns::new();
        let start = Instant::now();
        assert_eq!(
            store.admit_at("a", &POLICY, start),
            Admission::Closed { failures: 0 }
        );
        store.failed_at("a", &POLICY, start);
        assert_eq!(
            store.admit_at("a", &POLICY, start),
            Admission::Closed { failures: 1 }
        );
        store.failed_at("a", &POLICY, start);
        assert_eq!(
            store.admit_at("a", &POLICY, start + Duration::from_secs(4)),
            Admission::Open {
                retry_in: Duration::from_secs(6)
            }
        );
        // Half-open: one probe, the others wait for it.
        let later = start + Duration::from_secs(10);
        assert_eq!(store.admit_at("a", &POLICY, later), Admission::Probe);
        assert_eq!(
            store.admit_at("a", &POLICY, later + Duration::from_secs(1)),
            Admission::Open {
                retry_in: Duration::from_secs(2)
            }
        );
        // A probe that never reports is replaced after its time limit.
        assert_eq!(
            store.admit_at("a", &POLICY, later + Duration::from_secs(3)),
            Admission::Probe
        );
        // A failed probe opens it again for a whole cooldown.
        store.failed_at("a", &POLICY, later + Duration::from_secs(4));
        assert_eq!(
            store.admit_at("a", &POLICY, later + Duration::from_secs(13)),
            Admission::Open {
                retry_in: Duration::from_secs(1)
            }
        );
        assert_eq!(
            store.admit_at("b", &POLICY, later),
            Admission::Closed { failures: 0 }
        );
    }

    #[tokio::test]
    async fn a_success_closes_the_breaker_and_forgets_the_failures() {
        let store = LocalCooldowns::new();
        let now = Instant::now();
        store.failed_at("a", &POLICY, now);
        store.succeeded("a", &POLICY).await;
        store.failed_at("a", &POLICY, now);
        assert_eq!(
            store.admit_at("a", &POLICY, now),
            Admission::Closed { failures: 1 },
            "failures count in a row only"
        );
    }
}
