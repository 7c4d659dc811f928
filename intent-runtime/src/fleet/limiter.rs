//! [`RedisQuota`]: a rate limiter's quota kept in Redis. Admission is one Lua script per request, run atomically by
//! Redis, on Redis's own clock (replicas' clocks never enter the arithmetic).
//!
//! Each quota (requests per minute, tokens per minute) is a generic cell rate algorithm
//! with reservations: the script finds the earliest time the request fits every quota,
//! books it there, and returns how long the caller must wait. Callers are therefore
//! released in the order they were admitted, each after exactly the wait its reservation
//! needs; nobody polls. A quota of `n` a minute allows a burst of `n` and then one every
//! `60 s / n`, like the local limiter.
//!
//! A booking is not taken back: a caller that gives up during its wait leaves its place
//! booked, and the quota is that much smaller until the booked time has passed (see
//! `RateLimiter::acquire`).

use std::sync::LazyLock;
use std::time::Duration;

use super::{OnRedisFailure, Redis};
use crate::limits::{Quota, QuotaStore, QuotaUnavailable};

/// The script, hashed once: Redis runs it by its hash and loads it on first use.
static ADMIT_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(ADMIT));

/// `KEYS[1]`: the quota's hash. `ARGV`: the request interval and capacity, the token
/// interval (0 without a token quota) and capacity, the request's token estimate.
/// Intervals are in microseconds. Returns the wait in microseconds.
///
/// Times are stored as whole numbers formatted by `%.0f`: Lua's default number format
/// (`%.14g`) would round a microsecond timestamp.
const ADMIT: &str = r#"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local request_interval = tonumber(ARGV[1])
local request_capacity = tonumber(ARGV[2])
local token_interval = tonumber(ARGV[3])
local token_capacity = tonumber(ARGV[4])
local tokens = math.min(tonumber(ARGV[5]), token_capacity)
local stored = redis.call('HMGET', KEYS[1], 'requests', 'tokens')
local requests_at = tonumber(stored[1]) or now
local tokens_at = tonumber(stored[2]) or now
local at = math.max(now, requests_at + (1 - request_capacity) * request_interval)
if token_interval > 0 then
  at = math.max(at, tokens_at + (tokens - token_capacity) * token_interval)
end
requests_at = math.max(requests_at, at) + request_interval
redis.call('HSET', KEYS[1], 'requests', string.format('%.0f', requests_at))
local last = requests_at
if token_interval > 0 then
  tokens_at = math.max(tokens_at, at) + tokens * token_interval
  redis.call('HSET', KEYS[1], 'tokens', string.format('%.0f', tokens_at))
  last = math.max(last, tokens_at)
end
redis.call('PEXPIRE', KEYS[1], math.ceil((last - now) / 1000) + 60000)
return math.floor(at - now)
"#;

/// A rate limiter's quota kept in Redis under one name, shared by every replica that uses
/// the same Redis and name: give it to
/// [`RateLimiter::with_shared_quota`](crate::limits::RateLimiter::with_shared_quota).
///
/// Redis's failure behaviour ([`Redis::with_on_failure`]) decides what a call does when
/// Redis is down: admitted by the process's own limiter (fail open) or refused (fail
/// closed).
#[derive(Debug, Clone)]
pub struct RedisQuota {
    redis: Redis,
    key: String,
}

/// Microseconds between two units of a quota of `per_minute`.
fn interval_micros(per_minute: u32) -> f64 {
    60_000_000.0 / f64::from(per_minute.max(1))
}

impl RedisQuota {
    /// The quota named `name` in `redis` (name it after what the provider counts against:
    /// the API key, or the model).
    pub fn new(redis: &Redis, name: &str) -> Self {
        Self {
            redis: redis.clone(),
            key: redis.key("limit", name),
        }
    }
}

#[async_trait::async_trait]
impl QuotaStore for RedisQuota {
    async fn admit(
        &self,
        quota: Quota,
        estimated_tokens: u64,
    ) -> Result<Duration, QuotaUnavailable> {
        let requests_per_minute = quota.requests_per_minute.max(1);
        let (token_interval, token_capacity) = match quota.tokens_per_minute {
            Some(tokens) => (interval_micros(tokens), tokens.max(1)),
            None => (0.0, 1),
        };
        let waited_micros: i64 = self
            .redis
            .run(|mut connection| async move {
                ADMIT_SCRIPT
                    .key(&self.key)
                    .arg(interval_micros(requests_per_minute))
                    .arg(requests_per_minute)
                    .arg(token_interval)
                    .arg(token_capacity)
                    .arg(estimated_tokens)
                    .invoke_async(&mut connection)
                    .await
            })
            .await
            .map_err(|error| QuotaUnavailable {
                reason: error.to_string(),
            })?;
        Ok(Duration::from_micros(waited_micros.max(0).unsigned_abs()))
    }

    async fn settle(
        &self,
        quota: Quota,
        estimated_tokens: u64,
        used_tokens: u64,
    ) -> Result<(), QuotaUnavailable> {
        let Some(tokens) = quota.tokens_per_minute else {
            return Ok(());
        };
        let difference = used_tokens as f64 - estimated_tokens as f64;
        let shift = (difference * interval_micros(tokens)).round() as i64;
        if shift == 0 {
            return Ok(());
        }
        // One atomic increment; on a quota that expired meanwhile it only writes a time
        // long past, which the next admission reads as a full quota.
        self.redis
            .run(|mut connection| async move {
                redis::cmd("HINCRBY")
                    .arg(&self.key)
                    .arg("tokens")
                    .arg(shift)
                    .query_async::<i64>(&mut connection)
                    .await
            })
            .await
            .map(|_| ())
            .map_err(|error| QuotaUnavailable {
                reason: error.to_string(),
            })
    }

    fn fails_closed(&self) -> bool {
        self.redis.failure_behaviour() == OnRedisFailure::FailClosed
    }
}
