//! The response cache in Redis: a reply paid for by one replica is served to the others.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Redis, RedisError};
use crate::cache::{CacheKey, CacheUnavailable, ResponseCache};
use crate::provider::{LogprobAlternative, ProviderReply, TokenLogprob};
use crate::result::Usage;

/// The default time a cached reply is kept.
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(24 * 3600);
/// The default size limit of one cached reply, serialized.
pub const DEFAULT_MAX_ENTRY_BYTES: usize = 256 * 1024;

/// A [`ResponseCache`] in Redis, under the same keys as the in-process cache
/// ([`CacheKey`]), each entry with a time to live and a size limit.
///
/// Redis failing or slow is a cache miss (and a store skipped), with a `tracing` warning
/// and a note on the attempt's record ([`CacheUse::Unavailable`](crate::result::CacheUse)):
/// the call then asks the model, as it would without a cache. A cached reply is verified
/// like any other reply before its value is returned; one that fails is deleted.
#[derive(Clone)]
pub struct RedisCache {
    redis: Redis,
    ttl: Duration,
    max_entry_bytes: usize,
}

impl fmt::Debug for RedisCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisCache")
            .field("redis", &self.redis)
            .field("ttl", &self.ttl)
            .field("max_entry_bytes", &self.max_entry_bytes)
            .finish()
    }
}

impl RedisCache {
    /// A cache in `redis`, keeping replies for [`DEFAULT_CACHE_TTL`] and storing none
    /// larger than [`DEFAULT_MAX_ENTRY_BYTES`].
    pub fn new(redis: &Redis) -> Self {
        Self {
            redis: redis.clone(),
            ttl: DEFAULT_CACHE_TTL,
            max_entry_bytes: DEFAULT_MAX_ENTRY_BYTES,
        }
    }

    /// How long a reply is kept (at least a second).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl.max(Duration::from_secs(1));
        self
    }

    /// The largest reply stored, serialized; larger ones are not cached.
    pub fn max_entry_bytes(mut self, bytes: usize) -> Self {
        self.max_entry_bytes = bytes;
        self
    }

    fn key(&self, key: &CacheKey) -> String {
        self.redis.key("cache", &key.to_hex())
    }
}

#[async_trait::async_trait]
impl ResponseCache for RedisCache {
    async fn get(&self, key: &CacheKey) -> Option<ProviderReply> {
        self.lookup(key).await.ok().flatten()
    }

    async fn put(&self, key: CacheKey, reply: ProviderReply) {
        let _ = self.store(key, reply).await;
    }

    async fn remove(&self, key: &CacheKey) {
        let _ = self.evict(key).await;
    }

    async fn lookup(&self, key: &CacheKey) -> Result<Option<ProviderReply>, CacheUnavailable> {
        let redis_key = &self.key(key);
        let stored = self
            .redis
            .run(|mut connection| async move {
                redis::cmd("GET")
                    .arg(redis_key)
                    .query_async::<Option<Vec<u8>>>(&mut connection)
                    .await
            })
            .await;
        match stored {
            Ok(Some(bytes)) => match serde_json::from_slice::<StoredReply>(&bytes) {
                // The entry names the request it answers: a value written under this
                // Redis key for anything else is not handed out.
                Ok(reply) if reply.key == key.to_hex() => Ok(Some(reply.into())),
                Ok(_) => {
                    tracing::warn!("an entry of the Redis cache answers another request; ignored");
                    Ok(None)
                }
                Err(error) => {
                    // Another version's layout, or a foreign value under our key: a miss.
                    tracing::warn!(%error, "an unreadable entry in the Redis cache was ignored");
                    Ok(None)
                }
            },
            Ok(None) => Ok(None),
            Err(error) => {
                tracing::warn!(%error, "the Redis cache could not be read; asking the model");
                Err(unavailable(&error))
            }
        }
    }

    async fn store(&self, key: CacheKey, reply: ProviderReply) -> Result<(), CacheUnavailable> {
        let bytes = match serde_json::to_vec(&StoredReply::new(&key, &reply)) {
            Ok(bytes) if bytes.len() <= self.max_entry_bytes => bytes,
            // Too large to keep: not stored, as documented; the store is not at fault.
            Ok(_) | Err(_) => return Ok(()),
        };
        let (redis_key, bytes) = (&self.key(&key), &bytes);
        let seconds = self.ttl.as_secs().max(1);
        let stored = self
            .redis
            .run(|mut connection| async move {
                redis::cmd("SET")
                    .arg(redis_key)
                    .arg(bytes)
                    .arg("EX")
                    .arg(seconds)
                    .query_async::<()>(&mut connection)
                    .await
            })
            .await;
        stored.map_err(|error| {
            tracing::warn!(%error, "a reply could not be stored in the Redis cache");
            unavailable(&error)
        })
    }

    async fn evict(&self, key: &CacheKey) -> Result<(), CacheUnavailable> {
        let redis_key = &self.key(key);
        let removed = self
            .redis
            .run(|mut connection| async move {
                redis::cmd("DEL")
                    .arg(redis_key)
                    .query_async::<i64>(&mut connection)
                    .await
            })
            .await;
        removed.map(|_| ()).map_err(|error| {
            tracing::warn!(%error, "a reply that failed verification could not be removed from the Redis cache");
            unavailable(&error)
        })
    }
}

fn unavailable(error: &RedisError) -> CacheUnavailable {
    CacheUnavailable {
        reason: error.to_string(),
    }
}

/// A reply as the Redis cache stores it. The provider's request id is not kept: it
/// belongs to the request that paid for the reply, not to the calls it is served to.
#[derive(Serialize, Deserialize)]
struct StoredReply {
    /// The [`CacheKey`] of the request this reply answers, checked when it is read.
    key: String,
    text: String,
    refusal: Option<String>,
    truncated: bool,
    stop_reason: Option<String>,
    usage: [u64; 4],
    /// Kept apart from `usage` so that entries written before it still read.
    #[serde(default)]
    reasoning_tokens: u64,
    model: String,
    logprobs: Option<Vec<StoredLogprob>>,
}

#[derive(Serialize, Deserialize)]
struct StoredLogprob {
    token: String,
    logprob: f64,
    top: Vec<(String, f64)>,
}

impl StoredReply {
    fn new(key: &CacheKey, reply: &ProviderReply) -> Self {
        Self {
            key: key.to_hex(),
            text: reply.text.clone(),
            refusal: reply.refusal.clone(),
            truncated: reply.truncated,
            stop_reason: reply.stop_reason.clone(),
            usage: [
                reply.usage.input_tokens,
                reply.usage.output_tokens,
                reply.usage.cached_input_tokens,
                reply.usage.cache_write_input_tokens,
            ],
            reasoning_tokens: reply.usage.reasoning_tokens,
            model: reply.model.clone(),
            logprobs: reply.logprobs.as_ref().map(|tokens| {
                tokens
                    .iter()
                    .map(|token| StoredLogprob {
                        token: token.token.clone(),
                        logprob: token.logprob,
                        top: token
                            .top_logprobs
                            .iter()
                            .map(|alternative| (alternative.token.clone(), alternative.logprob))
                            .collect(),
                    })
                    .collect()
            }),
        }
    }
}

impl From<StoredReply> for ProviderReply {
    fn from(stored: StoredReply) -> Self {
        let [
            input_tokens,
            output_tokens,
            cached_input_tokens,
            cache_write_input_tokens,
        ] = stored.usage;
        ProviderReply {
            text: stored.text,
            refusal: stored.refusal,
            truncated: stored.truncated,
            stop_reason: stored.stop_reason,
            usage: Usage {
                input_tokens,
                output_tokens,
                cached_input_tokens,
                cache_write_input_tokens,
                reasoning_tokens: stored.reasoning_tokens,
            },
            model: stored.model,
            logprobs: stored.logprobs.map(|tokens| {
                tokens
                    .into_iter()
                    .map(|token| TokenLogprob {
                        token: token.token,
                        logprob: token.logprob,
                        top_logprobs: token
                            .top
                            .into_iter()
                            .map(|(token, logprob)| LogprobAlternative::new(token, logprob))
                            .collect(),
                    })
                    .collect()
            }),
            ..ProviderReply::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderRequest;

    #[test]
    fn a_stored_reply_keeps_every_usage_count_and_an_older_entry_still_reads() {
        let key = CacheKey::of(&ProviderRequest::text("", "hi"), "m");
        let reply = ProviderReply {
            text: "{}".into(),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 8,
                cached_input_tokens: 4,
                cache_write_input_tokens: 2,
                reasoning_tokens: 6,
            },
            model: "m".into(),
            ..ProviderReply::default()
        };
        let stored = serde_json::to_string(&StoredReply::new(&key, &reply)).unwrap();
        let read: StoredReply = serde_json::from_str(&stored).unwrap();
        assert_eq!(ProviderReply::from(read).usage, reply.usage);
        // An entry written before reasoning tokens were kept reads with none.
        let mut older: serde_json::Value = serde_json::from_str(&stored).unwrap();
        older.as_object_mut().unwrap().remove("reasoning_tokens");
        let read: StoredReply = serde_json::from_value(older).unwrap();
        assert_eq!(ProviderReply::from(read).usage.reasoning_tokens, 0);
    }
}
