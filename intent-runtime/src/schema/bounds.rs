//! The constraint keywords of one schema node in words ("1 to 5", "at most 80
//! characters"), so that a bound the verifier enforces is also a bound the model reads:
//! in the strict schema's `description` (the strict walk removes the keywords), in the
//! prompt's description of the type, and in the feedback on a reply that breaks it.

use serde_json::{Map, Value};

/// The bounds `map` states, joined by `, `, or `None` when it states none worth saying.
///
/// A bound that only restates an integer `format` (`minimum: 0` on a `uint32`, the range
/// of an `int8`) is left out: the type already says it, and it would cost every request
/// tokens for nothing.
pub(crate) fn bounds_text(map: &Map<String, Value>) -> Option<String> {
    let mut parts = Vec::new();
    let implied = implied_range(map.get("format").and_then(Value::as_str));
    let bound = |keyword: &str| {
        map.get(keyword)
            .filter(|limit| limit.is_number())
            .filter(|limit| !implied.is_some_and(|(low, high)| is_limit(limit, low, high)))
    };
    let low = bound("minimum").map(|v| (v, false));
    let low = low.or_else(|| bound("exclusiveMinimum").map(|v| (v, true)));
    let high = bound("maximum").map(|v| (v, false));
    let high = high.or_else(|| bound("exclusiveMaximum").map(|v| (v, true)));
    match (low, high) {
        (Some((low, false)), Some((high, false))) => parts.push(format!("{low} to {high}")),
        (low, high) => {
            if let Some((low, exclusive)) = low {
                let word = if exclusive { "more than" } else { "at least" };
                parts.push(format!("{word} {low}"));
            }
            if let Some((high, exclusive)) = high {
                let word = if exclusive { "less than" } else { "at most" };
                parts.push(format!("{word} {high}"));
            }
        }
    }
    if let Some(step) = map.get("multipleOf").filter(|v| v.is_number()) {
        parts.push(format!("a multiple of {step}"));
    }
    parts.extend(count_range(map, "minLength", "maxLength", "character"));
    if let Some(Value::String(pattern)) = map.get("pattern") {
        parts.push(format!("matching the regex {pattern}"));
    }
    // A tuple's length is its positions' count, which its type already says.
    if !map.contains_key("prefixItems") {
        parts.extend(count_range(map, "minItems", "maxItems", "item"));
    }
    if map.get("uniqueItems") == Some(&Value::Bool(true)) {
        parts.push("no repeated items".to_owned());
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// `1 to 80 characters`, `at least 1 item`, `at most 3 items`.
fn count_range(map: &Map<String, Value>, min: &str, max: &str, unit: &str) -> Option<String> {
    let low = map.get(min).and_then(Value::as_u64);
    let high = map.get(max).and_then(Value::as_u64);
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    Some(match (low.filter(|n| *n > 0), high) {
        (Some(low), Some(high)) if low == high => format!("exactly {low} {unit}{}", plural(low)),
        (Some(low), Some(high)) => format!("{low} to {high} {unit}s"),
        (Some(low), None) => format!("at least {low} {unit}{}", plural(low)),
        (None, Some(high)) => format!("at most {high} {unit}{}", plural(high)),
        (None, None) => return None,
    })
}

/// The range an integer `format` (as `schemars` writes them) already implies.
fn implied_range(format: Option<&str>) -> Option<(i128, i128)> {
    Some(match format? {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" | "int" => (i64::MIN.into(), i64::MAX.into()),
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        "uint64" | "uint" => (0, u64::MAX.into()),
        "uint128" => (0, i128::MAX),
        _ => return None,
    })
}

/// Whether `limit` is one of the two ends of an implied range.
fn is_limit(limit: &Value, low: i128, high: i128) -> bool {
    let as_wide = limit
        .as_i64()
        .map(i128::from)
        .or_else(|| limit.as_u64().map(i128::from));
    as_wide.is_some_and(|n| n == low || n == high)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(schema: Value) -> Option<String> {
        bounds_text(schema.as_object().unwrap())
    }

    #[test]
    fn numeric_bounds_read_as_a_range() {
        assert_eq!(text(json!({"minimum": 1, "maximum": 5})).unwrap(), "1 to 5");
        assert_eq!(text(json!({"minimum": 0})).unwrap(), "at least 0");
        assert_eq!(
            text(json!({"exclusiveMinimum": 0, "maximum": 1})).unwrap(),
            "more than 0, at most 1"
        );
        assert_eq!(
            text(json!({"exclusiveMaximum": 10, "multipleOf": 5})).unwrap(),
            "less than 10, a multiple of 5"
        );
    }

    #[test]
    fn lengths_patterns_and_items_are_named() {
        assert_eq!(
            text(json!({"minLength": 1, "maxLength": 80, "pattern": "^[A-Z]+$"})).unwrap(),
            "1 to 80 characters, matching the regex ^[A-Z]+$"
        );
        assert_eq!(
            text(json!({"minItems": 1, "uniqueItems": true})).unwrap(),
            "at least 1 item, no repeated items"
        );
        assert_eq!(text(json!({"maxItems": 3})).unwrap(), "at most 3 items");
        assert_eq!(
            text(json!({"minItems": 2, "maxItems": 2})).unwrap(),
            "exactly 2 items"
        );
        assert_eq!(
            text(json!({"prefixItems": [{}, {}], "minItems": 2, "maxItems": 2})),
            None
        );
        assert_eq!(text(json!({"minLength": 0})), None);
    }

    #[test]
    fn bounds_an_integer_format_implies_are_left_out() {
        assert_eq!(
            text(json!({"format": "uint8", "minimum": 0, "maximum": 255})),
            None
        );
        assert_eq!(text(json!({"format": "uint32", "minimum": 0})), None);
        assert_eq!(
            text(json!({"format": "uint8", "minimum": 1, "maximum": 5})).unwrap(),
            "1 to 5"
        );
        assert_eq!(text(json!({"type": "string"})), None);
    }
}
