//! A cache of values derived from a schema (a compiled validator, a description), keyed
//! by the address of the schema's `Arc`.
//!
//! A `Weak` is kept beside each entry: while it lives, the allocation cannot be reused,
//! so a live entry at that address is the same schema. Typed targets keep one `Arc` per
//! type for the program's life, so each derivation runs once; entries whose schema was
//! dropped are pruned whenever a new one is added. Hashing the schema's text instead
//! would cost a serialization per call.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, PoisonError, RwLock, Weak};

use serde_json::Value;

/// Values derived from schemas, one per live schema `Arc`.
pub(crate) struct DerivedCache<V> {
    entries: RwLock<Entries<V>>,
}

/// Each live schema's address, with the schema (to tell it is still alive) and its value.
type Entries<V> = HashMap<usize, (Weak<Value>, V), BuildHasherDefault<AddressHasher>>;

/// Hashes an address with one multiplication. Keys are addresses of live allocations,
/// never chosen by input, so the default hasher's flooding resistance buys nothing
/// here, and it cost more than the lookup it served on every call.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_usize(&mut self, address: usize) {
        // Fibonacci hashing: the high bits, which the table uses, depend on every bit of
        // the address (whose low bits are all zero from alignment).
        self.0 = (address as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl<V: Clone> DerivedCache<V> {
    /// An empty cache.
    pub(crate) fn new() -> Self {
        Self {
            entries: RwLock::new(HashMap::default()),
        }
    }

    /// The value derived from `schema`, computed by `derive` on the first request.
    /// `derive` runs outside the lock, so other schemas' lookups need not wait for it.
    pub(crate) fn get_or_derive(&self, schema: &Arc<Value>, derive: impl FnOnce() -> V) -> V {
        let key = Arc::as_ptr(schema) as usize;
        if let Some(value) = self.get_live(key) {
            return value;
        }
        let value = derive();
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|_, (schema, _)| schema.strong_count() > 0);
        entries.insert(key, (Arc::downgrade(schema), value.clone()));
        value
    }

    fn get_live(&self, key: usize) -> Option<V> {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        entries
            .get(&key)
            .filter(|(schema, _)| schema.strong_count() > 0)
            .map(|(_, value)| value.clone())
    }

    /// Whether an entry for a dropped schema is still held at `key` (for tests).
    #[cfg(test)]
    pub(crate) fn holds_dead_entry(&self, key: usize) -> bool {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        entries
            .get(&key)
            .is_some_and(|(schema, _)| schema.strong_count() == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn derives_once_per_live_schema() {
        let cache = DerivedCache::new();
        let schema = Arc::new(json!({"type": "integer"}));
        let mut runs = 0;
        for _ in 0..3 {
            let value = cache.get_or_derive(&schema, || {
                runs += 1;
                "integer".to_owned()
            });
            assert_eq!(value, "integer");
        }
        assert_eq!(runs, 1);
    }

    #[test]
    fn a_dropped_schema_is_never_mistaken_for_a_new_one() {
        let cache = DerivedCache::new();
        let key = {
            let dropped = Arc::new(json!({"type": "string"}));
            cache.get_or_derive(&dropped, || "string".to_owned());
            Arc::as_ptr(&dropped) as usize
        };
        let other = Arc::new(json!({"type": "boolean"}));
        let value = cache.get_or_derive(&other, || "boolean".to_owned());
        assert_eq!(value, "boolean");
        assert!(
            !cache.holds_dead_entry(key),
            "pruned when a new schema was added"
        );
    }
}
