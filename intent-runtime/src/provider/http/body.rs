//! Pieces of request bodies that every wire format writes the same way.

use std::sync::{Arc, LazyLock};

use serde_json::Value;
use serde_json::value::RawValue;

use crate::schema::derived::DerivedCache;

/// A strict schema as JSON text, serialized once per schema and kept while the schema
/// lives: every request for a typed target sends the same schema, and serializing its
/// `Value` tree was a tenth of the client's work per call.
pub(crate) fn schema_json(schema: &Arc<Value>) -> Arc<RawValue> {
    static CACHE: LazyLock<DerivedCache<Arc<RawValue>>> = LazyLock::new(DerivedCache::new);
    CACHE.get_or_derive(schema, || {
        // A `Value` always serializes; the fallback only keeps this total.
        serde_json::value::to_raw_value(schema.as_ref())
            .unwrap_or_else(|_| RawValue::NULL.to_owned())
            .into()
    })
}

/// `base` without trailing slashes, so `{base}/path` never has `//`.
pub(crate) fn trim_base_url(base: impl Into<String>) -> String {
    let mut base = base.into();
    while base.ends_with('/') {
        base.pop();
    }
    base
}

/// `temperature` as a JSON number in its shortest decimal form (`0.2`, not
/// `0.20000000298023224`), or `None` when it is not finite.
pub(crate) fn temperature_value(temperature: f32) -> Option<Value> {
    if !temperature.is_finite() {
        return None;
    }
    let shortest: f64 = temperature.to_string().parse().ok()?;
    serde_json::Number::from_f64(shortest).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temperature_keeps_its_short_decimal_form() {
        assert_eq!(temperature_value(0.2).unwrap().to_string(), "0.2");
        assert_eq!(temperature_value(1.0).unwrap().to_string(), "1.0");
        assert_eq!(temperature_value(f32::NAN), None);
    }

    #[test]
    fn base_url_loses_trailing_slashes() {
        assert_eq!(trim_base_url("http://x/v1//"), "http://x/v1");
    }
}
