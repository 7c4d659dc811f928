//! The response cache: replies to first attempts, keyed by everything that shapes the
//! request. A retry is never served from it (its request carries the previous failure).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, PoisonError};

use crate::provider::{ProviderReply, ProviderRequest, ResponseFormat};

/// The key of a cached reply: a hash of every field of the request that can change the
/// reply (system prompt and every turn, media by digest, format, schema and its name,
/// model, output limit, temperature, log-probabilities asked for).
///
/// 128 bits, two independent 64-bit hashes of the same fields: a cache shared by a fleet
/// holds many replies for a long time, and two requests that share a key would be served
/// each other's answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheKey(u64, u64);

impl CacheKey {
    /// The key of `request`, with `model` the model that will actually be asked (the
    /// request may leave it to the provider's default).
    pub fn of(request: &ProviderRequest, model: &str) -> Self {
        let hash = |domain: u8| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            domain.hash(&mut hasher);
            hash_request(request, model, &mut hasher);
            hasher.finish()
        };
        Self(hash(0), hash(1))
    }

    /// The key of a decision request, from its canonical text (the model asked, the
    /// state and the questions): decisions are cached beside replies, under keys of a
    /// domain of their own, so the two never meet.
    pub(crate) fn of_decision(canonical: &str) -> Self {
        let hash = |domain: u8| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            domain.hash(&mut hasher);
            canonical.hash(&mut hasher);
            hasher.finish()
        };
        Self(hash(2), hash(3))
    }

    /// The key as 32 hexadecimal digits, for stores keyed by strings (Redis).
    pub fn to_hex(&self) -> String {
        format!("{:016x}{:016x}", self.0, self.1)
    }
}

/// Feeds every field of `request` that can change the reply to `hasher`.
fn hash_request(request: &ProviderRequest, model: &str, hasher: &mut impl Hasher) {
    request.system.hash(hasher);
    // Every turn, roles included: a request whose turns differ is another request.
    request.messages.hash(hasher);
    match request.response_format {
        ResponseFormat::Text => 0u8,
        ResponseFormat::JsonObject => 1,
        ResponseFormat::JsonSchema => 2,
    }
    .hash(hasher);
    request.schema.as_ref().map(|s| s.to_string()).hash(hasher);
    request.schema_name.hash(hasher);
    model.hash(hasher);
    request.max_output_tokens.hash(hasher);
    request.temperature.map(f32::to_bits).hash(hasher);
    request.top_logprobs.hash(hasher);
    request.minimal_thinking.hash(hasher);
}

/// Where replies are cached. [`InMemoryCache`] is the default; with the `redis` feature,
/// `fleet::RedisCache` shares one cache between replicas. Implement it (through
/// [`async_trait`](crate::async_trait)) to put the cache somewhere else.
///
/// A cache cannot fail a call: an entry it cannot read is a miss, a reply it cannot store
/// is not stored. The attempt loop calls [`lookup`](Self::lookup),
/// [`store`](Self::store) and [`remove`](Self::remove), which say when the cache's store
/// could not be reached (the attempt's record then says so); a cache that is never
/// unreachable implements only `get`, `put` and `remove`.
///
/// A served reply is verified like any other; one that fails is removed, and the answer
/// that passes (from a later attempt of the same call) is stored in its place, so a bad
/// entry is never served twice.
///
/// Decision questions are cached in it too, under keys of their own: an answered
/// decision (its whole response, as JSON, in the reply's text) is stored, and a decision
/// asked again about the same state, with the same questions and model, is served from
/// it, checked against the request first.
#[async_trait::async_trait]
pub trait ResponseCache: Send + Sync + fmt::Debug {
    /// The cached reply for `key`, if any.
    async fn get(&self, key: &CacheKey) -> Option<ProviderReply>;
    /// Stores `reply` under `key`, replacing any reply stored there.
    async fn put(&self, key: CacheKey, reply: ProviderReply);
    /// Removes the reply stored under `key`, if any: it failed verification.
    async fn remove(&self, key: &CacheKey);

    /// The cached reply for `key`, or why the cache could not be read.
    async fn lookup(&self, key: &CacheKey) -> Result<Option<ProviderReply>, CacheUnavailable> {
        Ok(self.get(key).await)
    }

    /// Stores `reply` under `key`, or says why the cache could not be written.
    async fn store(&self, key: CacheKey, reply: ProviderReply) -> Result<(), CacheUnavailable> {
        self.put(key, reply).await;
        Ok(())
    }

    /// Removes the reply under `key`, or says why the cache could not be written.
    async fn evict(&self, key: &CacheKey) -> Result<(), CacheUnavailable> {
        self.remove(key).await;
        Ok(())
    }
}

crate::failure::debug_as_message!(CacheUnavailable);

/// The store behind a [`ResponseCache`] could not be reached (down, slow): the call went
/// on without the cache.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[error("the response cache is unavailable ({reason}); the call went on without it")]
pub struct CacheUnavailable {
    /// What failed.
    pub reason: String,
}

/// An in-process cache holding at most `capacity` replies; the oldest is dropped first.
pub struct InMemoryCache {
    capacity: usize,
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    replies: HashMap<CacheKey, ProviderReply>,
    order: VecDeque<CacheKey>,
}

impl InMemoryCache {
    /// A cache of at most `capacity` replies (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            entries: Mutex::new(Entries::default()),
        }
    }

    /// How many replies are cached.
    pub fn len(&self) -> usize {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replies
            .len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Debug for InMemoryCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InMemoryCache")
            .field("capacity", &self.capacity)
            .field("len", &self.len())
            .finish()
    }
}

#[async_trait::async_trait]
impl ResponseCache for InMemoryCache {
    async fn get(&self, key: &CacheKey) -> Option<ProviderReply> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.replies.get(key).cloned()
    }

    async fn put(&self, key: CacheKey, reply: ProviderReply) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.replies.insert(key, reply).is_none() {
            entries.order.push_back(key);
        }
        while entries.order.len() > self.capacity {
            if let Some(oldest) = entries.order.pop_front() {
                entries.replies.remove(&oldest);
            }
        }
    }

    async fn remove(&self, key: &CacheKey) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.replies.remove(key).is_some() {
            entries.order.retain(|kept| kept != key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Message;

    #[test]
    fn every_shaping_field_changes_the_key() {
        let base = ProviderRequest::text("s", "u");
        let key = CacheKey::of(&base, "m");
        let variants = [
            ProviderRequest {
                system: "s2".into(),
                ..base.clone()
            },
            ProviderRequest {
                messages: vec![Message::user("u2")],
                ..base.clone()
            },
            ProviderRequest {
                messages: vec![Message::assistant("u")],
                ..base.clone()
            },
            ProviderRequest {
                messages: vec![
                    Message::user("u"),
                    Message::assistant("a"),
                    Message::user("p"),
                ],
                ..base.clone()
            },
            ProviderRequest {
                response_format: ResponseFormat::JsonObject,
                ..base.clone()
            },
            ProviderRequest {
                schema: Some(std::sync::Arc::new(serde_json::json!({}))),
                ..base.clone()
            },
            ProviderRequest {
                schema_name: "other".into(),
                ..base.clone()
            },
            ProviderRequest {
                max_output_tokens: Some(5),
                ..base.clone()
            },
            ProviderRequest {
                top_logprobs: Some(5),
                ..base.clone()
            },
            ProviderRequest {
                temperature: Some(0.5),
                ..base.clone()
            },
            ProviderRequest {
                minimal_thinking: true,
                ..base.clone()
            },
        ];
        for variant in &variants {
            assert_ne!(CacheKey::of(variant, "m"), key, "{variant:?}");
        }
        assert_ne!(CacheKey::of(&base, "other-model"), key);
        assert_eq!(CacheKey::of(&base.clone(), "m"), key);
    }

    #[tokio::test]
    async fn oldest_entry_is_evicted_past_capacity() {
        let cache = InMemoryCache::new(2);
        let keys: Vec<_> = ["a", "b", "c"]
            .iter()
            .map(|u| CacheKey::of(&ProviderRequest::text("s", *u), "m"))
            .collect();
        for (key, text) in keys.iter().zip(["1", "2", "3"]) {
            cache.put(*key, ProviderReply::text(text)).await;
        }
        assert_eq!(cache.len(), 2);
        assert!(cache.get(&keys[0]).await.is_none());
        assert_eq!(
            cache.get(&keys[2]).await.map(|r| r.text),
            Some("3".to_owned())
        );
    }

    #[tokio::test]
    async fn a_removed_entry_is_gone_and_frees_its_place() {
        let cache = InMemoryCache::new(2);
        let keys: Vec<_> = ["a", "b", "c"]
            .iter()
            .map(|u| CacheKey::of(&ProviderRequest::text("s", *u), "m"))
            .collect();
        cache.put(keys[0], ProviderReply::text("1")).await;
        cache.put(keys[1], ProviderReply::text("2")).await;
        cache.remove(&keys[0]).await;
        assert!(cache.get(&keys[0]).await.is_none());
        // Its place in the eviction order went with it: a new entry evicts nothing.
        cache.put(keys[2], ProviderReply::text("3")).await;
        assert_eq!(cache.len(), 2);
        assert!(cache.get(&keys[1]).await.is_some());
    }
}
