//! State shared by a fleet of replicas through Redis: a rate limiter's quota all of them
//! draw from ([`RedisQuota`]) and a
//! response cache whose replies any of them can serve ([`RedisCache`]), and the
//! cooldowns of fallback chains, so that a provider cooled down by one replica is passed
//! over by all ([`RedisCooldowns`]).
//!
//! Ten replicas with ten in-process limiters each think they own the provider's quota and
//! together send ten times the allowed rate; ten in-process caches each pay for the same
//! answers. Here the counters and the cached replies live in one Redis, and every Redis
//! operation is a single command or script, so they stay correct under concurrency.
//!
//! Every Redis call has a time limit ([`Redis::with_timeout`]); when Redis is slow or down, the
//! configured [`OnRedisFailure`] decides: fail open (the limiter falls back to a local one
//! with the same quota, the cache to no cache, each with a `tracing` warning in the call's
//! span) or fail closed (the call fails with an error that says Redis is unavailable).
//! The connection is re-established by itself once Redis is back; the quota accounting is
//! kept in Redis, not in the connection, so a reconnect loses none of it. A connection
//! Redis dropped while up is not an outage: the command is sent once more on a new
//! connection within the same time limit. Each attempt's record says whether the shared
//! quota and cache served it or the local fallback
//! ([`LimiterUse`](crate::result::LimiterUse), [`CacheUse`](crate::result::CacheUse)).
//!
//! Behind the `redis` cargo feature.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use intent_rs::IntentClient;
//! use intent_rs::fleet::{OnRedisFailure, Redis, RedisCache, RedisQuota};
//! use intent_rs::limits::RateLimiter;
//! use intent_rs::provider::OpenAi;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let redis = Redis::new("redis://10.0.0.5:6379/")?
//!     .with_timeout(Duration::from_millis(250))
//!     .with_on_failure(OnRedisFailure::FailOpen);
//! let client = IntentClient::builder()
//!     .provider(OpenAi::from_env()?)
//!     // One quota for every replica using this key: 500 requests and 200k tokens a minute.
//!     .rate_limiter(
//!         RateLimiter::per_minute(500)
//!             .with_tokens_per_minute(200_000)
//!             .with_shared_quota(RedisQuota::new(&redis, "openai-prod-key")),
//!     )
//!     .cache(RedisCache::new(&redis).with_ttl(Duration::from_secs(24 * 3600)))
//!     .build()?;
//! # Ok(())
//! # }
//! ```

mod cache;
mod connection;
mod cooldowns;
mod limiter;

pub use cache::{DEFAULT_CACHE_TTL, DEFAULT_MAX_ENTRY_BYTES, RedisCache};
pub use connection::{
    DEFAULT_REDIS_TIMEOUT, OnRedisFailure, REDIS_RETRY_AFTER_FAILURE, Redis, RedisError,
};
pub use cooldowns::RedisCooldowns;
pub use limiter::RedisQuota;
