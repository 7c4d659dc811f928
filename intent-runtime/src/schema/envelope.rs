//! Wrapping a root schema in the `{"value": ...}` envelope: root keywords dropped,
//! definitions hoisted, root-relative `$ref`s rewritten to reach the same schema.

use serde_json::{Map, Value, json};

use super::{ENVELOPE_PROPERTY, SchemaError};

/// Root keywords that describe the caller's document; inside the envelope the schema is
/// no longer a document root, so they would be wrong there.
const DOCUMENT_ROOT_KEYWORDS: &[&str] = &["$schema", "$id", "$anchor"];

/// Definition containers moved to the envelope root, where `#/$defs/...` and
/// `#/definitions/...` pointers then resolve unchanged.
const DEFINITION_CONTAINERS: &[&str] = &["$defs", "definitions"];

/// Keywords whose values are data, not schemas: a `$ref` key inside them is not a
/// reference and must not be rewritten.
const DATA_KEYWORDS: &[&str] = &["enum", "const", "default", "examples"];

/// Keywords whose value maps names to schemas: the names are not keywords.
const NAMED_SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

/// The pointer of the envelope's value schema, which replaces the caller's root `#`.
const VALUE_POINTER: &str = "#/properties/value";

/// Builds the envelope around a deep copy of `schema` (the caller's value is untouched).
///
/// An object schema has its root `$schema`, `$id` and `$anchor` dropped, its root
/// `$defs` / `definitions` hoisted beside the envelope's `properties`, and its
/// root-relative `$ref`s rewritten (see [`rewrite_ref`]). The boolean schema `true` is
/// taken as "any JSON value" and kept as is. Anything else is refused: `false` admits no
/// value, and other JSON is no schema.
pub(crate) fn wrap_in_envelope(schema: &Value) -> Result<Value, SchemaError> {
    let mut inner = match schema {
        Value::Object(map) => map.clone(),
        Value::Bool(true) => return Ok(envelope_of(Value::Bool(true), Map::new())),
        Value::Bool(false) => {
            return Err(SchemaError::NotAnObject {
                found: "the boolean schema `false`, which no value satisfies",
            });
        }
        other => {
            return Err(SchemaError::NotAnObject {
                found: json_kind(other),
            });
        }
    };
    for keyword in DOCUMENT_ROOT_KEYWORDS {
        inner.remove(*keyword);
    }
    let mut hoisted = Map::new();
    for container in DEFINITION_CONTAINERS {
        if let Some(definitions) = inner.remove(*container) {
            hoisted.insert((*container).to_owned(), definitions);
        }
    }
    let mut value = Value::Object(inner);
    rewrite_refs(&mut value);
    for definitions in hoisted.values_mut() {
        match definitions {
            Value::Object(named) => named.values_mut().for_each(rewrite_refs),
            other => rewrite_refs(other),
        }
    }
    Ok(envelope_of(value, hoisted))
}

fn envelope_of(value: Value, definitions: Map<String, Value>) -> Value {
    let mut envelope = json!({
        "type": "object",
        "properties": { ENVELOPE_PROPERTY: value },
        "required": [ENVELOPE_PROPERTY],
        "additionalProperties": false
    });
    if let Value::Object(map) = &mut envelope {
        map.extend(definitions);
    }
    envelope
}

/// Where a `$ref` of the caller's schema points once the schema sits in the envelope.
///
/// `#` becomes `#/properties/value`; `#/$defs/...` and `#/definitions/...` stay (the
/// definitions are hoisted to the envelope root); any other `#/...` pointer gets the
/// `#/properties/value` prefix; external references and `#name` anchors stay as they
/// are.
pub(crate) fn rewrite_ref(reference: &str) -> String {
    let Some(pointer) = reference.strip_prefix('#') else {
        return reference.to_owned();
    };
    if pointer.is_empty() {
        return VALUE_POINTER.to_owned();
    }
    let points_into_definitions = DEFINITION_CONTAINERS.iter().any(|container| {
        pointer
            .strip_prefix('/')
            .and_then(|rest| rest.strip_prefix(container))
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    if points_into_definitions || !pointer.starts_with('/') {
        reference.to_owned()
    } else {
        format!("{VALUE_POINTER}{pointer}")
    }
}

/// Rewrites every `$ref` in the schema `schema`. Values of data keywords are skipped;
/// maps of named schemas are entered by name, so a property or definition that happens
/// to be called `default` or `enum` is still treated as a schema.
fn rewrite_refs(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                match (key.as_str(), child) {
                    ("$ref", Value::String(reference)) => *reference = rewrite_ref(reference),
                    (key, _) if DATA_KEYWORDS.contains(&key) => {}
                    (key, Value::Object(named)) if NAMED_SCHEMA_MAPS.contains(&key) => {
                        named.values_mut().for_each(rewrite_refs);
                    }
                    (_, child) => rewrite_refs(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

/// The kind of a JSON value with its article, for messages (`a number`, `null`).
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_each_kind_of_reference() {
        assert_eq!(rewrite_ref("#"), "#/properties/value");
        assert_eq!(rewrite_ref("#/$defs/Line"), "#/$defs/Line");
        assert_eq!(rewrite_ref("#/definitions/Line"), "#/definitions/Line");
        assert_eq!(
            rewrite_ref("#/properties/total"),
            "#/properties/value/properties/total"
        );
        // Only the container itself counts: `$defsX` is an ordinary property name.
        assert_eq!(rewrite_ref("#/$defsX/a"), "#/properties/value/$defsX/a");
        assert_eq!(rewrite_ref("other.json#/a"), "other.json#/a");
        assert_eq!(
            rewrite_ref("https://x.test/s.json"),
            "https://x.test/s.json"
        );
        assert_eq!(rewrite_ref("#anchor"), "#anchor");
    }

    #[test]
    fn properties_and_definitions_named_like_data_keywords_are_still_schemas() {
        let wrapped = wrap_in_envelope(&json!({
            "properties": {"default": {"$ref": "#"}, "enum": {"$ref": "#/properties/a"}},
            "$defs": {"const": {"$ref": "#"}}
        }))
        .unwrap();
        assert_eq!(
            wrapped["properties"]["value"]["properties"],
            json!({
                "default": {"$ref": "#/properties/value"},
                "enum": {"$ref": "#/properties/value/properties/a"}
            })
        );
        assert_eq!(
            wrapped["$defs"]["const"],
            json!({"$ref": "#/properties/value"})
        );
    }

    #[test]
    fn leaves_ref_keys_inside_data_keywords_alone() {
        let wrapped = wrap_in_envelope(&json!({
            "const": {"$ref": "#"},
            "enum": [{"$ref": "#"}],
            "items": {"$ref": "#"}
        }))
        .unwrap();
        assert_eq!(
            wrapped["properties"]["value"],
            json!({
                "const": {"$ref": "#"},
                "enum": [{"$ref": "#"}],
                "items": {"$ref": "#/properties/value"}
            })
        );
    }
}
