//! The strict schema rewritten into what Gemini's `responseJsonSchema` honours: the
//! keywords it reads are kept, the rest removed, and the few shapes it refuses reshaped.
//!
//! Every change only widens what the schema accepts (a removed keyword is one demand
//! less), so a reply that fits the caller's schema always fits the one Gemini is given;
//! what Gemini no longer enforces, the verifier checks locally against the full schema,
//! as it does for every provider.

use super::GEMINI_PROVIDER_NAME;
use std::sync::{Arc, LazyLock};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::schema::derived::DerivedCache;

/// The JSON Schema keywords Gemini's `responseJsonSchema` honours (Gemini API reference,
/// `GenerateContentConfig.response_json_schema`); every other keyword is removed.
pub const GEMINI_SCHEMA_KEYWORDS: &[&str] = &[
    "$id",
    "$defs",
    "$ref",
    "$anchor",
    "type",
    "format",
    "title",
    "description",
    "enum",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
    "properties",
    "additionalProperties",
    "required",
    "propertyOrdering",
];

/// Removed keywords that only annotate (their loss changes nothing the model is shown of
/// the shape): a schema that loses only these is still the whole contract.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$comment",
    "default",
    "examples",
    "example",
    "deprecated",
    "readOnly",
    "writeOnly",
    "nullable",
    "contentEncoding",
    "contentMediaType",
];

/// A schema as Gemini is sent it, and what of the original it does not say.
#[derive(Debug, Clone, PartialEq)]
pub struct GeminiSchema {
    /// The schema for `responseJsonSchema`.
    pub schema: Value,
    /// Where a keyword that shapes the value was removed or widened (`#/properties/a:
    /// const`), in walk order; empty when the schema says all the original said apart from
    /// annotations.
    pub widened: Vec<String>,
}

impl GeminiSchema {
    /// Whether the rewritten schema describes the value as fully as the original.
    pub fn is_complete(&self) -> bool {
        self.widened.is_empty()
    }
}

/// Rewrites `schema` (a strict envelope schema) into what Gemini's `responseJsonSchema`
/// honours:
///
/// - keeps [`GEMINI_SCHEMA_KEYWORDS`] and removes every other keyword;
/// - renames `oneOf` to `anyOf` (Gemini reads it as `anyOf`; with both present `oneOf`
///   is removed);
/// - turns a string or number `const` into a one-value `enum`;
/// - removes an `enum` with values other than strings and numbers (Gemini takes only
///   those);
/// - moves a `$ref` that has sibling keywords into a one-branch `anyOf`, because a
///   subschema with `$ref` may carry only other `$` keywords (with an `anyOf` already
///   there, the siblings other than `$` keywords are removed instead);
/// - renames `definitions` to `$defs` (and `#/definitions/` pointers with it), since
///   only `$defs` is read;
/// - turns an array-valued `items` (the old tuple form) into `prefixItems`.
///
/// Total: any JSON value is accepted, and what is not a schema object is returned as is.
pub fn gemini_schema(schema: &Value) -> GeminiSchema {
    let mut widened = Vec::new();
    let renames_definitions = schema
        .as_object()
        .is_some_and(|map| map.contains_key("definitions") && !map.contains_key("$defs"));
    let schema = Rewrite {
        widened: &mut widened,
        renames_definitions,
    }
    .node(schema, "#");
    GeminiSchema { schema, widened }
}

/// The rewritten schema of `schema` as JSON text, with whether it is complete; kept per
/// schema, since every request for a typed target sends the same one.
pub(crate) fn gemini_schema_json(schema: &Arc<Value>) -> (Arc<RawValue>, bool) {
    static CACHE: LazyLock<DerivedCache<(Arc<RawValue>, bool)>> = LazyLock::new(DerivedCache::new);
    CACHE.get_or_derive(schema, || {
        let rewritten = gemini_schema(schema);
        if !rewritten.is_complete() {
            tracing::debug!(
                provider = GEMINI_PROVIDER_NAME,
                widened = ?rewritten.widened,
                "Gemini's responseJsonSchema does not honour every keyword of this schema; \
                 the prompt carries the full contract and the verifier checks the rest"
            );
        }
        // A `Value` always serializes; the fallback only keeps this total.
        let text = serde_json::value::to_raw_value(&rewritten.schema)
            .unwrap_or_else(|_| RawValue::NULL.to_owned());
        (Arc::from(text), rewritten.is_complete())
    })
}

struct Rewrite<'w> {
    widened: &'w mut Vec<String>,
    renames_definitions: bool,
}

impl Rewrite<'_> {
    fn node(&mut self, node: &Value, at: &str) -> Value {
        match node {
            Value::Object(map) => Value::Object(self.object(map, at)),
            other => other.clone(),
        }
    }

    fn widen(&mut self, at: &str, keyword: &str) {
        self.widened.push(format!("{at}: {keyword}"));
    }

    fn object(&mut self, map: &Map<String, Value>, at: &str) -> Map<String, Value> {
        let mut out = Map::new();
        for (keyword, value) in map {
            match keyword.as_str() {
                "properties" | "$defs" => {
                    out.insert(
                        keyword.clone(),
                        self.named(value, &format!("{at}/{keyword}")),
                    );
                }
                "definitions" if self.renames_definitions || !map.contains_key("$defs") => {
                    out.insert(
                        "$defs".to_owned(),
                        self.named(value, &format!("{at}/$defs")),
                    );
                }
                "items" if value.is_array() => {
                    if map.contains_key("prefixItems") {
                        self.widen(at, "items");
                    } else {
                        out.insert(
                            "prefixItems".to_owned(),
                            self.list(value, &format!("{at}/prefixItems")),
                        );
                    }
                }
                "items" | "additionalProperties" => {
                    out.insert(
                        keyword.clone(),
                        self.node(value, &format!("{at}/{keyword}")),
                    );
                }
                "anyOf" | "prefixItems" => {
                    out.insert(
                        keyword.clone(),
                        self.list(value, &format!("{at}/{keyword}")),
                    );
                }
                "oneOf" => {
                    if map.contains_key("anyOf") {
                        self.widen(at, "oneOf");
                    } else {
                        out.insert("anyOf".to_owned(), self.list(value, &format!("{at}/anyOf")));
                    }
                }
                "const" => match value {
                    Value::String(_) | Value::Number(_) if !map.contains_key("enum") => {
                        out.insert("enum".to_owned(), Value::Array(vec![value.clone()]));
                    }
                    _ => self.widen(at, "const"),
                },
                "enum" => {
                    let plain = value.as_array().is_some_and(|values| {
                        values.iter().all(|v| v.is_string() || v.is_number())
                    });
                    if plain {
                        out.insert(keyword.clone(), value.clone());
                    } else {
                        self.widen(at, "enum");
                    }
                }
                "$ref" => {
                    let reference = match value.as_str() {
                        Some(reference) if self.renames_definitions => {
                            Value::String(reference.replacen("#/definitions/", "#/$defs/", 1))
                        }
                        _ => value.clone(),
                    };
                    out.insert(keyword.clone(), reference);
                }
                known if GEMINI_SCHEMA_KEYWORDS.contains(&known) => {
                    out.insert(keyword.clone(), value.clone());
                }
                annotation if ANNOTATIONS.contains(&annotation) => {}
                other => self.widen(at, other),
            }
        }
        self.separate_ref(out, at)
    }

    /// A `$ref` may carry only other `$` keywords: any other sibling moves out, with the
    /// reference put in a one-branch `anyOf` beside it (the same value set).
    fn separate_ref(&mut self, mut map: Map<String, Value>, at: &str) -> Map<String, Value> {
        let has_siblings = map.contains_key("$ref") && map.keys().any(|key| !key.starts_with('$'));
        if !has_siblings {
            return map;
        }
        if map.contains_key("anyOf") {
            let siblings: Vec<String> = map
                .keys()
                .filter(|key| !key.starts_with('$'))
                .cloned()
                .collect();
            for keyword in siblings {
                map.remove(&keyword);
                self.widen(at, &keyword);
            }
            return map;
        }
        let mut reference = Map::new();
        let dollar: Vec<String> = map
            .keys()
            .filter(|key| *key == "$ref" || *key == "$anchor")
            .cloned()
            .collect();
        for keyword in dollar {
            if let Some(value) = map.remove(&keyword) {
                reference.insert(keyword, value);
            }
        }
        map.insert(
            "anyOf".to_owned(),
            Value::Array(vec![Value::Object(reference)]),
        );
        map
    }

    fn named(&mut self, value: &Value, at: &str) -> Value {
        match value {
            Value::Object(named) => Value::Object(
                named
                    .iter()
                    .map(|(name, schema)| {
                        (name.clone(), self.node(schema, &format!("{at}/{name}")))
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    fn list(&mut self, value: &Value, at: &str) -> Value {
        match value {
            Value::Array(schemas) => Value::Array(
                schemas
                    .iter()
                    .enumerate()
                    .map(|(index, schema)| self.node(schema, &format!("{at}/{index}")))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_strict_envelope_passes_unchanged() {
        let schema = json!({
            "type": "object",
            "properties": {"value": {"type": "object",
                "properties": {"number": {"type": "string"}, "total_cents": {"type": "integer"}},
                "required": ["number", "total_cents"], "additionalProperties": false}},
            "required": ["value"], "additionalProperties": false
        });
        let rewritten = gemini_schema(&schema);
        assert_eq!(rewritten.schema, schema);
        assert!(rewritten.is_complete());
    }

    #[test]
    fn annotations_go_without_widening_and_honoured_keywords_stay() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "T", "description": "d", "$comment": "c", "default": 1,
            "type": "array", "minItems": 1, "maxItems": 3, "examples": [[1]],
            "items": {"type": "integer", "minimum": 0, "maximum": 9, "format": "date"}
        });
        let rewritten = gemini_schema(&schema);
        assert_eq!(
            rewritten.schema,
            json!({
                "title": "T", "description": "d", "type": "array", "minItems": 1,
                "maxItems": 3,
                "items": {"type": "integer", "minimum": 0, "maximum": 9, "format": "date"}
            })
        );
        assert!(rewritten.is_complete(), "{:?}", rewritten.widened);
    }

    #[test]
    fn unsupported_constraints_are_removed_and_named() {
        let schema = json!({
            "type": "object",
            "properties": {
                "s": {"type": "string", "pattern": "^a", "minLength": 2},
                "n": {"type": "number", "multipleOf": 2, "exclusiveMinimum": 0},
                "x": {"not": {"type": "null"}, "allOf": [{"type": "string"}]}
            },
            "patternProperties": {"^a": {}}
        });
        let rewritten = gemini_schema(&schema);
        assert_eq!(
            rewritten.schema,
            json!({"type": "object", "properties": {
                "s": {"type": "string"}, "n": {"type": "number"}, "x": {}
            }})
        );
        assert_eq!(
            rewritten.widened,
            [
                "#/properties/s: pattern",
                "#/properties/s: minLength",
                "#/properties/n: multipleOf",
                "#/properties/n: exclusiveMinimum",
                "#/properties/x: not",
                "#/properties/x: allOf",
                "#: patternProperties",
            ]
        );
    }

    #[test]
    fn one_of_becomes_any_of_and_const_an_enum() {
        let schema = json!({"oneOf": [
            {"type": "object", "properties": {"kind": {"const": "a"}}},
            {"type": "object", "properties": {"kind": {"const": 2}, "flag": {"const": true}}}
        ]});
        let rewritten = gemini_schema(&schema);
        assert_eq!(
            rewritten.schema,
            json!({"anyOf": [
                {"type": "object", "properties": {"kind": {"enum": ["a"]}}},
                {"type": "object", "properties": {"kind": {"enum": [2]}, "flag": {}}}
            ]})
        );
        assert_eq!(rewritten.widened, ["#/anyOf/1/properties/flag: const"]);
        let both = gemini_schema(&json!({"anyOf": [{"type": "string"}], "oneOf": [{}]}));
        assert_eq!(both.schema, json!({"anyOf": [{"type": "string"}]}));
        assert_eq!(both.widened, ["#: oneOf"]);
    }

    #[test]
    fn enums_of_strings_and_numbers_stay_others_go() {
        assert_eq!(
            gemini_schema(&json!({"enum": ["a", 1, 2.5]})).schema,
            json!({"enum": ["a", 1, 2.5]})
        );
        let nullable = gemini_schema(&json!({"type": ["string", "null"], "enum": ["a", null]}));
        assert_eq!(nullable.schema, json!({"type": ["string", "null"]}));
        assert_eq!(nullable.widened, ["#: enum"]);
    }

    #[test]
    fn a_ref_with_siblings_moves_into_any_of() {
        let schema = json!({
            "type": "object",
            "properties": {"line": {"$ref": "#/$defs/Line", "description": "the line"}},
            "$defs": {"Line": {"type": "string"}}
        });
        let rewritten = gemini_schema(&schema);
        assert_eq!(
            rewritten.schema["properties"]["line"],
            json!({"description": "the line", "anyOf": [{"$ref": "#/$defs/Line"}]})
        );
        assert!(rewritten.is_complete());
        let crowded = gemini_schema(&json!({
            "$ref": "#/$defs/A", "description": "d", "anyOf": [{"type": "null"}]
        }));
        // Both siblings go: the reference alone accepts more, never less.
        assert_eq!(crowded.schema, json!({"$ref": "#/$defs/A"}));
        assert_eq!(crowded.widened, ["#: description", "#: anyOf"]);
        let plain = json!({"$ref": "#/$defs/A", "$defs": {"A": {"type": "integer"}}});
        assert_eq!(gemini_schema(&plain).schema, plain);
    }

    #[test]
    fn definitions_become_defs_and_pointers_follow() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/definitions/A"}},
            "definitions": {"A": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}}
        });
        let rewritten = gemini_schema(&schema);
        assert_eq!(
            rewritten.schema,
            json!({
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/A"}},
                "$defs": {"A": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}}
            })
        );
        assert!(rewritten.is_complete());
    }

    #[test]
    fn anything_that_is_not_a_schema_object_is_left_alone() {
        for value in [json!(true), json!(null), json!([1]), json!("x")] {
            assert_eq!(gemini_schema(&value).schema, value);
        }
        let odd = json!({"properties": 3, "anyOf": "x", "items": true});
        assert_eq!(gemini_schema(&odd).schema, odd);
    }

    #[test]
    fn the_rewrite_is_idempotent() {
        let schema = json!({
            "oneOf": [{"const": "a"}, {"$ref": "#/$defs/B", "title": "b"}],
            "$defs": {"B": {"type": "object", "properties": {"x": {"type": "string", "pattern": "y"}}}}
        });
        let once = gemini_schema(&schema).schema;
        let twice = gemini_schema(&once);
        assert_eq!(twice.schema, once);
        assert!(twice.is_complete());
    }
}
