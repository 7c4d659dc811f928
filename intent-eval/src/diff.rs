//! Where an answer differs from an expected value: the first field that differs, named as
//! a path (`.lines[2].qty`), so that a report says what is wrong even when both values are
//! too long to show whole.

use serde_json::Value;

/// The first difference between `expected` and `actual`, compared as `canonical` makes
/// them (the case's rules), and told with the values as written: `None` when they are
/// equal, or when they differ as wholes (two different strings: there is no field to
/// name).
pub(crate) fn first_difference(
    expected: &Value,
    actual: &Value,
    canonical: impl Fn(&Value) -> Value,
) -> Option<String> {
    let (pointer, path) = differing_path(&canonical(expected), &canonical(actual), "", "")?;
    if path.is_empty() {
        return None;
    }
    let quote = |value: Option<&Value>| value.map(quote);
    Some(
        match (
            quote(expected.pointer(&pointer)),
            quote(actual.pointer(&pointer)),
        ) {
            (Some(wanted), Some(got)) => format!("`{path}` differs: expected {wanted}, got {got}"),
            (Some(wanted), None) => {
                format!("`{path}` is missing from the answer (expected {wanted})")
            }
            (None, Some(got)) => format!("`{path}` is not in the expected value (got {got})"),
            (None, None) => format!("`{path}` differs"),
        },
    )
}

/// The JSON pointer and the field path of the first place `a` and `b` differ, searched
/// depth first in the expected value's order, then the answer's extra fields; for
/// arrays, the first differing item, then the first item only one of them has.
fn differing_path(a: &Value, b: &Value, pointer: &str, path: &str) -> Option<(String, String)> {
    if a == b {
        return None;
    }
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                let (pointer, path) = member(pointer, path, key);
                match b.get(key) {
                    Some(other) => {
                        if let Some(found) = differing_path(value, other, &pointer, &path) {
                            return Some(found);
                        }
                    }
                    None => return Some((pointer, path)),
                }
            }
            b.keys()
                .find(|key| !a.contains_key(*key))
                .map(|key| member(pointer, path, key))
        }
        (Value::Array(a), Value::Array(b)) => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                let (pointer, path) = item(pointer, path, index);
                if let Some(found) = differing_path(x, y, &pointer, &path) {
                    return Some(found);
                }
            }
            Some(item(pointer, path, a.len().min(b.len())))
        }
        _ => Some((pointer.to_owned(), path.to_owned())),
    }
}

/// Explanations quote values up to this many characters.
const QUOTE_CHARS: usize = 200;

/// `value` as compact JSON, cut to a readable length.
pub(crate) fn quote(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= QUOTE_CHARS {
        text
    } else {
        let cut: String = text.chars().take(QUOTE_CHARS).collect();
        format!("{cut}…")
    }
}

fn member(pointer: &str, path: &str, key: &str) -> (String, String) {
    let escaped = key.replace('~', "~0").replace('/', "~1");
    (format!("{pointer}/{escaped}"), format!("{path}.{key}"))
}

fn item(pointer: &str, path: &str, index: usize) -> (String, String) {
    (format!("{pointer}/{index}"), format!("{path}[{index}]"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn diff(expected: Value, actual: Value) -> Option<String> {
        first_difference(&expected, &actual, Clone::clone)
    }

    #[test]
    fn the_first_differing_field_is_named_with_both_values() {
        let long = "x".repeat(300);
        assert_eq!(
            diff(
                json!({"note": long, "lines": [{"qty": 1}, {"qty": 3}]}),
                json!({"note": long, "lines": [{"qty": 1}, {"qty": 4}]})
            )
            .as_deref(),
            Some("`.lines[1].qty` differs: expected 3, got 4")
        );
    }

    #[test]
    fn missing_and_extra_fields_and_items_are_named() {
        assert_eq!(
            diff(json!({"a": 1, "b": 2}), json!({"a": 1})).as_deref(),
            Some("`.b` is missing from the answer (expected 2)")
        );
        assert_eq!(
            diff(json!({"a": 1}), json!({"a": 1, "c": true})).as_deref(),
            Some("`.c` is not in the expected value (got true)")
        );
        assert_eq!(
            diff(json!({"l": [1]}), json!({"l": [1, 2]})).as_deref(),
            Some("`.l[1]` is not in the expected value (got 2)")
        );
    }

    #[test]
    fn values_that_differ_as_wholes_or_not_at_all_name_nothing() {
        assert_eq!(diff(json!("Positive"), json!("Negative")), None);
        assert_eq!(diff(json!({"a": 1}), json!({"a": 1})), None);
    }

    #[test]
    fn the_rules_compare_and_the_values_as_written_are_shown() {
        let lower = |value: &Value| match value {
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (k.clone(), json!(v.as_str().map(str::to_lowercase))))
                    .collect(),
            ),
            other => other.clone(),
        };
        let expected = json!({"a": "Yes", "b": "Blue"});
        let actual = json!({"a": "YES", "b": "Red"});
        assert_eq!(
            first_difference(&expected, &actual, lower).as_deref(),
            Some(r#"`.b` differs: expected "Blue", got "Red""#)
        );
    }
}
