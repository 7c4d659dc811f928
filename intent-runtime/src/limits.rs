//! What stops or paces a request: the retry policy for transient provider failures, the
//! call's deadline, and the client-side rate limiter.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::provider::ProviderError;
use crate::result::{Cause, IssueDetail, IssueSource, LimiterUse, ResultIssue};

/// How transient provider failures (rate limits, overload, timeouts, dropped
/// connections) are retried inside one attempt.
///
/// The wait before retry `n` (1-based) is what the provider asked for in
/// `retry-after-ms` / `retry-after` when it said, otherwise `base_delay * 2^(n-1)` with
/// up to 50% random jitter, capped at `max_delay`. No wait ever runs past the call's time
/// budget: when the budget cannot cover it, the failure is reported instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first failure (0 disables retrying).
    pub max_retries: u32,
    /// The first backoff delay.
    pub base_delay: Duration,
    /// The longest backoff delay, also the cap on a provider's `retry-after`.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The wait before retry number `retry` (1-based) after `error`.
    pub fn delay(&self, retry: u32, error: &ProviderError) -> Duration {
        if let Some(asked) = error.retry_after() {
            return asked.min(self.max_delay);
        }
        let exponent = retry.saturating_sub(1).min(16);
        let backoff = self
            .base_delay
            .saturating_mul(1 << exponent)
            .min(self.max_delay);
        // Jitter spreads out clients that failed together, so they do not retry together.
        let jitter = backoff.mul_f64(fastrand::f64() * 0.5);
        (backoff + jitter).min(self.max_delay)
    }
}

/// The end of a call's time budget, if it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    at: Option<Instant>,
    budget: Option<Duration>,
}

impl Deadline {
    /// A deadline `budget` after `start`; no deadline when `budget` is `None`.
    pub fn after(start: Instant, budget: Option<Duration>) -> Self {
        Self {
            at: budget.and_then(|b| start.checked_add(b)),
            budget,
        }
    }

    /// The instant the budget runs out.
    pub fn instant(&self) -> Option<Instant> {
        self.at
    }

    /// The configured budget.
    pub fn budget(&self) -> Option<Duration> {
        self.budget
    }

    /// Whether the budget has run out.
    pub fn expired(&self) -> bool {
        self.at.is_some_and(|at| Instant::now() >= at)
    }

    /// Whether waiting `wait` from now still ends inside the budget.
    pub fn allows(&self, wait: Duration) -> bool {
        self.at.is_none_or(|at| Instant::now() + wait < at)
    }
}

/// A client-side rate limiter: requests per minute, and optionally tokens per minute.
///
/// By default a token bucket in this process: clones share one bucket, so every clone of
/// an `IntentClient` (and its judge calls) draws from the same allowance.
/// [`with_shared_quota`](Self::with_shared_quota) keeps the quota in a store every replica
/// of a fleet reaches instead ([`QuotaStore`]; with the `redis` feature,
/// [`RedisQuota`](crate::fleet::RedisQuota)), so that they all draw from one allowance.
///
/// The token quota counts input and output tokens, as providers count them: a request
/// books its estimated input tokens when it is admitted, and the difference is settled
/// when the reply reports its usage.
#[derive(Clone)]
pub struct RateLimiter {
    shared: Arc<Mutex<Buckets>>,
    store: Option<Arc<dyn QuotaStore>>,
}

/// A per-minute quota, as a [`QuotaStore`] is asked to keep it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Quota {
    /// Model calls a minute (bursts up to this many).
    pub requests_per_minute: u32,
    /// Estimated tokens a minute, input and output, when the limiter counts tokens.
    pub tokens_per_minute: Option<u32>,
}

/// Where a rate limiter's quota lives when several processes share it, as
/// [`ResponseCache`](crate::cache::ResponseCache) is for replies: the booking of each
/// request and the settling of its tokens. With the `redis` feature,
/// [`RedisQuota`](crate::fleet::RedisQuota) keeps it in Redis; implement it to keep a quota
/// elsewhere (a database, a coordination service).
///
/// Each method is one atomic operation on the store: replicas book concurrently.
#[async_trait::async_trait]
pub trait QuotaStore: Send + Sync + fmt::Debug {
    /// Books one request of about `estimated_tokens` against `quota` at the earliest time
    /// it fits, and returns how long the caller waits before sending it.
    async fn admit(
        &self,
        quota: Quota,
        estimated_tokens: u64,
    ) -> Result<Duration, QuotaUnavailable>;

    /// Corrects the token booking of a request that booked `estimated_tokens` and used
    /// `used_tokens` by the reply's account (a refund when it used fewer).
    async fn settle(
        &self,
        quota: Quota,
        estimated_tokens: u64,
        used_tokens: u64,
    ) -> Result<(), QuotaUnavailable>;

    /// Whether a call is refused when the store cannot be reached (fail closed), rather
    /// than admitted by this process's own limiter with the same quota (fail open, the
    /// default).
    fn fails_closed(&self) -> bool {
        false
    }
}

crate::failure::debug_as_message!(QuotaUnavailable);

/// A [`QuotaStore`] could not be reached (down, slow) or answered wrongly.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[error("the shared quota's store could not be reached: {reason}")]
pub struct QuotaUnavailable {
    /// What the store said, or that it timed out.
    pub reason: String,
}

/// A request the limiter let through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Admission {
    /// How long it waited.
    pub(crate) waited: Duration,
    /// Which limiter admitted it.
    pub(crate) by: LimiterUse,
}

crate::failure::debug_as_message!(RateLimitError);

/// Why the rate limiter refused to admit a request.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RateLimitError {
    /// The quota lives in a shared store (Redis), the store failed, and the limiter fails
    /// closed: the store is unavailable (the configuration may be right).
    #[error(
        "the shared rate limiter could not reach its quota's store ({reason}); the request \
         was not sent. Check that the store (Redis) is running and reachable, or let calls \
         through on a local limiter by failing open (`OnRedisFailure::FailOpen` for Redis)"
    )]
    SharedQuotaUnavailable {
        /// What the store said, or that it timed out.
        reason: String,
    },
}

impl RateLimitError {
    /// The issue of attempt `attempt` this refusal raises: shared state unavailable, with
    /// the limiter failing closed, and this error as its cause.
    pub(crate) fn issue(&self, attempt: u32) -> ResultIssue {
        ResultIssue::new(IssueSource::Guardrail, self.to_string(), attempt)
            .with_detail(IssueDetail::SharedStateUnavailable { fail_closed: true })
            .with_cause(Cause::new(self.clone()))
    }
}

struct Bucket {
    capacity: f64,
    available: f64,
    per_second: f64,
}

impl Bucket {
    fn per_minute(limit: u32) -> Self {
        let capacity = f64::from(limit.max(1));
        Self {
            capacity,
            available: capacity,
            per_second: capacity / 60.0,
        }
    }

    fn refill(&mut self, elapsed: Duration) {
        self.available =
            (self.available + elapsed.as_secs_f64() * self.per_second).min(self.capacity);
    }

    /// Time until `amount` is available (zero if it is now). A request larger than the
    /// whole bucket waits for a full bucket rather than forever.
    fn wait_for(&self, amount: f64) -> Duration {
        let amount = amount.min(self.capacity);
        if self.available >= amount {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((amount - self.available) / self.per_second)
        }
    }
}

struct Buckets {
    requests: Bucket,
    tokens: Option<Bucket>,
    last_refill: Instant,
}

impl fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let buckets = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("RateLimiter")
            .field("requests_per_minute", &buckets.requests.capacity)
            .field(
                "tokens_per_minute",
                &buckets.tokens.as_ref().map(|t| t.capacity),
            )
            .finish()
    }
}

impl RateLimiter {
    /// At most `requests` model calls per minute (bursts up to `requests`).
    pub fn per_minute(requests: u32) -> Self {
        Self {
            shared: Arc::new(Mutex::new(Buckets {
                requests: Bucket::per_minute(requests),
                tokens: None,
                last_refill: Instant::now(),
            })),
            store: None,
        }
    }

    /// Also limits estimated input tokens per minute.
    pub fn with_tokens_per_minute(self, tokens: u32) -> Self {
        {
            let mut buckets = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
            buckets.tokens = Some(Bucket::per_minute(tokens));
        }
        self
    }

    /// This quota, kept in `store` and shared by every limiter (in any process) that uses
    /// the same store: a fleet's replicas together stay within it. With the `redis`
    /// feature, [`RedisQuota`](crate::fleet::RedisQuota) is such a store; name it after
    /// what the provider counts against (the API key, or the model).
    ///
    /// When the store fails or is slow, [`QuotaStore::fails_closed`] decides: this
    /// process's own limiter with the same quota (fail open) or a refused call (fail
    /// closed).
    pub fn with_shared_quota(mut self, store: impl QuotaStore + 'static) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// The quota this limiter keeps, as a shared store is asked to keep it.
    fn quota(&self) -> Quota {
        let buckets = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        Quota {
            requests_per_minute: buckets.requests.capacity as u32,
            tokens_per_minute: buckets.tokens.as_ref().map(|bucket| bucket.capacity as u32),
        }
    }

    /// Waits until one request carrying about `estimated_tokens` input tokens may be sent,
    /// and books it. Returns how long it waited; an error only from a shared quota whose
    /// Redis failed while failing closed.
    ///
    /// A shared quota books the request's place in Redis before the wait: a caller that
    /// gives up while waiting (its time budget ran out, its future was dropped) keeps
    /// that booking, so the fleet loses one request (and its estimated tokens) of the
    /// quota until the booked time has passed. The local limiter books nothing before
    /// the wait.
    pub async fn acquire(&self, estimated_tokens: u64) -> Result<Duration, RateLimitError> {
        self.admit(estimated_tokens)
            .await
            .map(|admission| admission.waited)
    }

    /// [`acquire`](Self::acquire), saying also which limiter admitted the request: the
    /// attempt's record keeps it, so a result shows a fallback from the shared quota.
    pub(crate) async fn admit(&self, estimated_tokens: u64) -> Result<Admission, RateLimitError> {
        let mut by = LimiterUse::Local;
        if let Some(store) = &self.store {
            match store.admit(self.quota(), estimated_tokens).await {
                Ok(wait) => {
                    // A zero sleep would still wait for the timer's next tick (1 ms).
                    if !wait.is_zero() {
                        tokio::time::sleep(wait).await;
                    }
                    return Ok(Admission {
                        waited: wait,
                        by: LimiterUse::Shared,
                    });
                }
                Err(unavailable) if store.fails_closed() => {
                    return Err(RateLimitError::SharedQuotaUnavailable {
                        reason: unavailable.reason,
                    });
                }
                Err(unavailable) => {
                    tracing::warn!(
                        error = %unavailable,
                        "the shared rate limiter could not reach its quota's store; admitting through this process's limiter"
                    );
                    by = LimiterUse::LocalFallback {
                        reason: unavailable.reason,
                    };
                }
            }
        }
        let waited = self.acquire_locally(estimated_tokens).await;
        Ok(Admission { waited, by })
    }

    /// Settles the token booking of a request admitted with `estimated_tokens` that used
    /// `used_tokens` (input and output) by the reply's account.
    pub async fn settle(&self, estimated_tokens: u64, used_tokens: u64) {
        if let Some(store) = &self.store {
            match store
                .settle(self.quota(), estimated_tokens, used_tokens)
                .await
            {
                Ok(()) => return,
                // The booking stays as estimated; the local fallback is settled instead.
                Err(error) => tracing::warn!(%error, "the shared token quota could not be settled"),
            }
        }
        let mut buckets = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tokens) = buckets.tokens.as_mut() {
            let refund = estimated_tokens as f64 - used_tokens as f64;
            tokens.available = (tokens.available + refund).min(tokens.capacity);
        }
    }

    async fn acquire_locally(&self, estimated_tokens: u64) -> Duration {
        let mut waited = Duration::ZERO;
        loop {
            let wait = self.try_acquire(estimated_tokens as f64);
            if wait.is_zero() {
                return waited;
            }
            // Sleep outside the lock; another caller may take the refill first, so check again.
            tokio::time::sleep(wait).await;
            waited += wait;
        }
    }

    fn try_acquire(&self, tokens: f64) -> Duration {
        let mut buckets = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(buckets.last_refill);
        buckets.last_refill = now;
        buckets.requests.refill(elapsed);
        if let Some(token_bucket) = buckets.tokens.as_mut() {
            token_bucket.refill(elapsed);
        }
        let wait = buckets.requests.wait_for(1.0).max(
            buckets
                .tokens
                .as_ref()
                .map_or(Duration::ZERO, |t| t.wait_for(tokens)),
        );
        if wait.is_zero() {
            buckets.requests.available -= 1.0;
            if let Some(token_bucket) = buckets.tokens.as_mut() {
                token_bucket.available -= tokens.min(token_bucket.capacity);
            }
        }
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderErrorKind;

    fn rate_limited() -> ProviderError {
        ProviderError::new(ProviderErrorKind::RateLimited, "test", "slow down")
    }

    #[test]
    fn retry_after_from_the_provider_wins_but_is_capped() {
        let policy = RetryPolicy::default();
        let asked = rate_limited().with_retry_after(Duration::from_secs(3));
        assert_eq!(policy.delay(1, &asked), Duration::from_secs(3));
        let greedy = rate_limited().with_retry_after(Duration::from_secs(3600));
        assert_eq!(policy.delay(1, &greedy), policy.max_delay);
    }

    #[test]
    fn backoff_doubles_with_bounded_jitter() {
        let policy = RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(10),
        };
        for retry in 1..=4u32 {
            let base = Duration::from_millis(100 * (1 << (retry - 1)));
            let delay = policy.delay(retry, &rate_limited());
            assert!(
                delay >= base && delay <= base.mul_f64(1.5),
                "retry {retry}: {delay:?}"
            );
        }
    }

    #[test]
    fn deadline_without_budget_never_expires() {
        let deadline = Deadline::after(Instant::now(), None);
        assert!(!deadline.expired());
        assert!(deadline.allows(Duration::from_secs(1_000_000)));
    }

    #[test]
    fn deadline_refuses_waits_past_the_budget() {
        let deadline = Deadline::after(Instant::now(), Some(Duration::from_millis(50)));
        assert!(!deadline.allows(Duration::from_secs(1)));
        assert!(deadline.allows(Duration::ZERO));
    }

    #[test]
    fn bucket_allows_a_burst_then_asks_to_wait() {
        let limiter = RateLimiter::per_minute(2);
        assert!(limiter.try_acquire(0.0).is_zero());
        assert!(limiter.try_acquire(0.0).is_zero());
        let wait = limiter.try_acquire(0.0);
        // One request per 30 s refills; a generous margin for a slow, loaded machine.
        assert!(
            wait > Duration::from_secs(25) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
    }

    #[test]
    fn clones_share_one_bucket() {
        let limiter = RateLimiter::per_minute(1);
        let clone = limiter.clone();
        assert!(limiter.try_acquire(0.0).is_zero());
        assert!(!clone.try_acquire(0.0).is_zero());
    }

    #[test]
    fn token_bucket_limits_large_requests() {
        let limiter = RateLimiter::per_minute(100).with_tokens_per_minute(600);
        assert!(limiter.try_acquire(600.0).is_zero());
        let wait = limiter.try_acquire(60.0);
        assert!(
            wait > Duration::from_secs(4) && wait <= Duration::from_secs(6),
            "{wait:?}"
        );
    }

    #[tokio::test]
    async fn a_booking_is_settled_from_the_reported_usage() {
        let limiter = RateLimiter::per_minute(100).with_tokens_per_minute(600);
        assert!(limiter.acquire(100).await.unwrap().is_zero());
        // The reply used 600 tokens, not 100: the quota is spent.
        limiter.settle(100, 600).await;
        assert!(!limiter.try_acquire(50.0).is_zero());

        let refunded = RateLimiter::per_minute(100).with_tokens_per_minute(600);
        assert!(refunded.acquire(600).await.unwrap().is_zero());
        // It used 100 of the 600 booked: 500 come back at once.
        refunded.settle(600, 100).await;
        assert!(refunded.try_acquire(450.0).is_zero());
    }

    /// A store in this process that records what it was asked, or fails.
    #[derive(Debug, Default)]
    struct RecordingStore {
        asked: Mutex<Vec<(Quota, u64)>>,
        settled: Mutex<Vec<(u64, u64)>>,
        down: bool,
        fails_closed: bool,
    }

    #[async_trait::async_trait]
    impl QuotaStore for Arc<RecordingStore> {
        async fn admit(&self, quota: Quota, tokens: u64) -> Result<Duration, QuotaUnavailable> {
            if self.down {
                return Err(QuotaUnavailable {
                    reason: "the store is down".into(),
                });
            }
            self.asked.lock().unwrap().push((quota, tokens));
            Ok(Duration::from_millis(5))
        }

        async fn settle(&self, _: Quota, booked: u64, used: u64) -> Result<(), QuotaUnavailable> {
            self.settled.lock().unwrap().push((booked, used));
            Ok(())
        }

        fn fails_closed(&self) -> bool {
            self.fails_closed
        }
    }

    #[tokio::test]
    async fn a_shared_quota_is_asked_with_the_limiters_quota_and_its_wait_is_kept() {
        let store = Arc::new(RecordingStore::default());
        let limiter = RateLimiter::per_minute(30)
            .with_tokens_per_minute(9_000)
            .with_shared_quota(store.clone());
        let admission = limiter.admit(120).await.unwrap();
        assert_eq!(admission.by, LimiterUse::Shared);
        assert_eq!(admission.waited, Duration::from_millis(5));
        limiter.settle(120, 80).await;
        let quota = Quota {
            requests_per_minute: 30,
            tokens_per_minute: Some(9_000),
        };
        assert_eq!(*store.asked.lock().unwrap(), [(quota, 120)]);
        assert_eq!(*store.settled.lock().unwrap(), [(120, 80)]);
        // The shared store admitted it: the local bucket was not drawn from.
        assert_eq!(limiter.shared.lock().unwrap().requests.available, 30.0);
    }

    #[tokio::test]
    async fn an_unreachable_store_falls_back_to_the_local_limiter_or_refuses_when_closed() {
        let open = RateLimiter::per_minute(30).with_shared_quota(Arc::new(RecordingStore {
            down: true,
            ..RecordingStore::default()
        }));
        let admission = open.admit(10).await.unwrap();
        assert_eq!(
            admission.by,
            LimiterUse::LocalFallback {
                reason: "the store is down".into()
            }
        );

        let closed = RateLimiter::per_minute(30).with_shared_quota(Arc::new(RecordingStore {
            down: true,
            fails_closed: true,
            ..RecordingStore::default()
        }));
        let refused = closed.admit(10).await.unwrap_err();
        assert_eq!(
            refused,
            RateLimitError::SharedQuotaUnavailable {
                reason: "the store is down".into()
            }
        );
        assert!(refused.to_string().contains("the request was not sent"));
    }
}
