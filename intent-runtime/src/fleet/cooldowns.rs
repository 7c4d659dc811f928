//! Fallback chains' cooldowns shared by a fleet: each member's circuit breaker lives in
//! Redis, so the failures every replica sees add up, and a member cooled down by one is
//! passed over by all.
//!
//! Each step of the breaker is one Lua script, run atomically on Redis's own clock: two
//! replicas never both take the half-open probe, and replicas' clocks never enter the
//! arithmetic.

use std::sync::LazyLock;
use std::time::Duration;

use super::{Redis, RedisError};
use crate::provider::fallback::breaker::{
    Admission, CooldownPolicy, CooldownStore, LocalCooldowns,
};

static ADMIT_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(ADMIT));
static FAILED_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(FAILED));

/// `KEYS[1]`: the member's hash. `ARGV[1]`: the probe's time limit, `ARGV[2]`: the
/// key's lifetime, both in milliseconds. Returns `{0, failures}` (closed), `{1, wait}`
/// (open, for `wait` ms more) or `{2, 0}` (half-open: this caller probes).
const ADMIT: &str = r#"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local stored = redis.call('HMGET', KEYS[1], 'failures', 'open_until', 'probe_until')
local failures = tonumber(stored[1]) or 0
local open_until = tonumber(stored[2]) or 0
if open_until == 0 then
  return {0, failures}
end
if now < open_until then
  return {1, open_until - now}
end
local probe_until = tonumber(stored[3]) or 0
if now < probe_until then
  return {1, probe_until - now}
end
redis.call('HSET', KEYS[1], 'probe_until', string.format('%.0f', now + tonumber(ARGV[1])))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {2, 0}
"#;

/// `KEYS[1]`: the member's hash. `ARGV`: the failures that open the breaker, the
/// cooldown and the key's lifetime in milliseconds. Returns the failures in a row.
const FAILED: &str = r#"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
local open_until = tonumber(redis.call('HGET', KEYS[1], 'open_until')) or 0
if open_until > 0 or failures >= tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'open_until', string.format('%.0f', now + tonumber(ARGV[2])), 'probe_until', 0)
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return failures
"#;

/// Cooldowns kept in Redis for every replica of a fleet: give it to
/// [`FallbackProvider::cooldowns`](crate::provider::fallback::FallbackProvider::cooldowns).
/// Members are shared by name ([`Member::named`](crate::provider::fallback::Member::named)),
/// so name them alike in every replica.
///
/// When Redis fails or is slow, the breakers fall back to ones kept in this process
/// (with a `tracing` warning), whatever [`Redis::with_on_failure`] says: asking a provider is
/// always safe, and a fleet without its shared breakers only asks a failing provider
/// more often.
///
/// ```no_run
/// use intent_rs::fleet::{Redis, RedisCooldowns};
/// use intent_rs::provider::fallback::FallbackProvider;
/// use intent_rs::provider::{Anthropic, OpenAi};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let redis = Redis::new("redis://10.0.0.5:6379/")?;
/// let chain = FallbackProvider::new(OpenAi::from_env()?)
///     .then(Anthropic::from_env()?)
///     .cooldowns(RedisCooldowns::new(&redis));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RedisCooldowns {
    redis: Redis,
    local: LocalCooldowns,
}

impl RedisCooldowns {
    /// Breakers in `redis`, under `{namespace}:cooldown:{member}`.
    pub fn new(redis: &Redis) -> Self {
        Self {
            redis: redis.clone(),
            local: LocalCooldowns::new(),
        }
    }

    fn key(&self, member: &str) -> String {
        self.redis.key("cooldown", member)
    }

    /// How long a breaker's state is kept after its last change: long enough for an open
    /// breaker to reach its probe and the probe to report, and a forgotten breaker is
    /// only a closed one.
    fn lifetime(policy: &CooldownPolicy) -> u64 {
        let kept = policy.cooldown.saturating_mul(2) + policy.probe_timeout;
        u64::try_from(kept.as_millis()).unwrap_or(u64::MAX).max(1)
    }

    fn fell_back(&self, member: &str, error: &RedisError) {
        tracing::warn!(
            member,
            %error,
            "the shared cooldowns are unavailable; this process keeps its own until Redis answers"
        );
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[async_trait::async_trait]
impl CooldownStore for RedisCooldowns {
    async fn admit(&self, member: &str, policy: &CooldownPolicy) -> Admission {
        let key = self.key(member);
        let answer: Result<Vec<i64>, RedisError> = self
            .redis
            .run(|mut connection| {
                let key = &key;
                async move {
                    ADMIT_SCRIPT
                        .key(key)
                        .arg(millis(policy.probe_timeout))
                        .arg(Self::lifetime(policy))
                        .invoke_async(&mut connection)
                        .await
                }
            })
            .await;
        match answer.as_deref() {
            Ok([0, failures]) => Admission::Closed {
                failures: u32::try_from(*failures).unwrap_or(u32::MAX),
            },
            Ok([1, wait]) => Admission::Open {
                retry_in: Duration::from_millis(wait.unsigned_abs()),
            },
            Ok([2, _]) => Admission::Probe,
            Ok(other) => {
                let error = RedisError::Failed(crate::result::Cause::new(std::io::Error::other(
                    format!("unexpected cooldown state {other:?}"),
                )));
                self.fell_back(member, &error);
                self.local.admit(member, policy).await
            }
            Err(error) => {
                self.fell_back(member, error);
                self.local.admit(member, policy).await
            }
        }
    }

    async fn failed(&self, member: &str, policy: &CooldownPolicy) {
        let key = self.key(member);
        let counted: Result<i64, RedisError> = self
            .redis
            .run(|mut connection| {
                let key = &key;
                async move {
                    FAILED_SCRIPT
                        .key(key)
                        .arg(policy.failures.max(1))
                        .arg(millis(policy.cooldown))
                        .arg(Self::lifetime(policy))
                        .invoke_async(&mut connection)
                        .await
                }
            })
            .await;
        if let Err(error) = counted {
            self.fell_back(member, &error);
            self.local.failed(member, policy).await;
        }
    }

    async fn succeeded(&self, member: &str, policy: &CooldownPolicy) {
        let key = self.key(member);
        let cleared: Result<i64, RedisError> = self
            .redis
            .run(|mut connection| {
                let key = &key;
                async move {
                    redis::cmd("DEL")
                        .arg(key)
                        .query_async(&mut connection)
                        .await
                }
            })
            .await;
        if let Err(error) = cleared {
            self.fell_back(member, &error);
        }
        self.local.succeeded(member, policy).await;
    }
}
