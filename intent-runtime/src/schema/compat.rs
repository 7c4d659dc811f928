//! Whether an envelope's value schema has a fixed shape that a strict schema can state.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::strict::is_object_schema;

/// Keywords that give a schema a shape; a schema with none of them admits any value.
const SHAPE_KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "const",
    "$ref",
    "anyOf",
    "oneOf",
    "allOf",
    "properties",
    "items",
    "not",
];

/// Whether the value schema of `envelope` is strict-compatible.
///
/// It is not when the value reaches (through properties, items, branches or local
/// `$ref`s) a map (an object with an `additionalProperties` or `patternProperties`
/// schema, or an object with no `properties`), an unconstrained value (`true`, `{}`, an
/// array with no `items`), a tuple (`prefixItems`), a `$ref` cycle (a recursive type), or a `$ref` that does not
/// resolve inside the envelope (external, or dangling). Such targets are asked for in
/// JSON-object mode, where the prompt carries the shape instead.
pub(crate) fn is_strict_compatible(envelope: &Value) -> bool {
    let Some(value) = envelope.pointer("/properties/value") else {
        return false;
    };
    let mut checker = Checker {
        root: envelope,
        following: Vec::new(),
        verified: HashSet::new(),
    };
    checker.check(value)
}

struct Checker<'a> {
    root: &'a Value,
    /// The `$ref`s being followed, outermost first: meeting one again is a cycle.
    following: Vec<&'a str>,
    /// `$ref`s whose targets were already found compatible, so shared definitions are
    /// checked once.
    verified: HashSet<&'a str>,
}

impl<'a> Checker<'a> {
    fn check(&mut self, schema: &'a Value) -> bool {
        match schema {
            Value::Object(map) => self.check_object(map),
            _ => false,
        }
    }

    fn check_object(&mut self, map: &'a Map<String, Value>) -> bool {
        if !SHAPE_KEYWORDS.iter().any(|k| map.contains_key(*k)) {
            return false;
        }
        if let Some(reference) = map.get("$ref")
            && !self.check_ref(reference)
        {
            return false;
        }
        if is_object_schema(map) && is_map_like(map) {
            return false;
        }
        // Tuples (`prefixItems`) are not among the keywords strict modes accept
        // (PROVIDERS.md); the derive refuses tuple types for the same reason.
        if map.contains_key("prefixItems") {
            return false;
        }
        if is_array_schema(map) && !map.contains_key("items") {
            return false;
        }
        self.check_subschemas(map)
    }

    fn check_ref(&mut self, reference: &'a Value) -> bool {
        let Value::String(reference) = reference else {
            return false;
        };
        let reference = reference.as_str();
        if self.verified.contains(reference) {
            return true;
        }
        if self.following.contains(&reference) {
            return false;
        }
        let Some(target) = reference
            .strip_prefix('#')
            .and_then(|pointer| self.root.pointer(pointer))
        else {
            return false;
        };
        self.following.push(reference);
        let compatible = self.check(target);
        self.following.pop();
        if compatible {
            self.verified.insert(reference);
        }
        compatible
    }

    fn check_subschemas(&mut self, map: &'a Map<String, Value>) -> bool {
        if let Some(Value::Object(properties)) = map.get("properties")
            && !properties.values().all(|p| self.check(p))
        {
            return false;
        }
        if let Some(items) = map.get("items")
            && !self.check(items)
        {
            return false;
        }
        ["anyOf", "oneOf", "allOf"]
            .iter()
            .filter_map(|keyword| map.get(*keyword))
            .all(|branches| match branches {
                Value::Array(branches) => branches.iter().all(|b| self.check(b)),
                _ => false,
            })
    }
}

fn is_map_like(map: &Map<String, Value>) -> bool {
    let open_additional = map
        .get("additionalProperties")
        .is_some_and(|additional| additional != &Value::Bool(false));
    let fixed_properties = matches!(map.get("properties"), Some(Value::Object(_)));
    open_additional || map.contains_key("patternProperties") || !fixed_properties
}

fn is_array_schema(map: &Map<String, Value>) -> bool {
    match map.get("type") {
        Some(Value::String(kind)) => kind == "array",
        Some(Value::Array(kinds)) => kinds.iter().any(|k| k.as_str() == Some("array")),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compatible(value: Value, defs: Value) -> bool {
        is_strict_compatible(&json!({
            "type": "object",
            "properties": {"value": value},
            "$defs": defs
        }))
    }

    #[test]
    fn fixed_shapes_are_compatible() {
        let line = json!({"type": "object", "properties": {"sku": {"type": "string"}}});
        assert!(compatible(
            json!({"type": "array", "items": {"$ref": "#/$defs/Line"}}),
            json!({"Line": line})
        ));
        assert!(compatible(
            json!({"anyOf": [{"$ref": "#/$defs/Line"}, {"type": "null"}]}),
            json!({"Line": line})
        ));
        assert!(compatible(
            json!({"type": "object", "properties": {}}),
            json!({})
        ));
    }

    #[test]
    fn tuples_are_not_compatible() {
        assert!(!compatible(
            json!({"type": "array", "prefixItems": [{"type": "integer"}], "items": false}),
            json!({})
        ));
    }

    #[test]
    fn maps_are_not_compatible() {
        assert!(!compatible(
            json!({"type": "object", "additionalProperties": {"type": "integer"}}),
            json!({})
        ));
        assert!(!compatible(json!({"type": "object"}), json!({})));
        assert!(!compatible(
            json!({"type": "object", "properties": {}, "patternProperties": {"^a": {}}}),
            json!({})
        ));
    }

    #[test]
    fn unconstrained_values_are_not_compatible() {
        assert!(!compatible(json!(true), json!({})));
        assert!(!compatible(json!({}), json!({})));
        assert!(!compatible(json!({"description": "anything"}), json!({})));
        assert!(!compatible(json!({"type": "array"}), json!({})));
        assert!(!compatible(
            json!({"type": "object", "properties": {"extra": true}}),
            json!({})
        ));
    }

    #[test]
    fn ref_cycles_and_unresolvable_refs_are_not_compatible() {
        assert!(!compatible(
            json!({"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/properties/value"}}}}),
            json!({})
        ));
        assert!(!compatible(
            json!({"$ref": "#/$defs/A"}),
            json!({"A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
                   "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}})
        ));
        assert!(!compatible(json!({"$ref": "#/$defs/Missing"}), json!({})));
        assert!(!compatible(
            json!({"$ref": "https://x.test/s.json"}),
            json!({})
        ));
    }

    #[test]
    fn a_definition_used_twice_is_not_a_cycle() {
        let line = json!({"type": "object", "properties": {"sku": {"type": "string"}}});
        assert!(compatible(
            json!({"type": "object", "properties": {
                "a": {"$ref": "#/$defs/Line"}, "b": {"$ref": "#/$defs/Line"}
            }}),
            json!({"Line": line})
        ));
    }
}
