//! Reading a target's full envelope schema: the inner schema, `$ref`s into `$defs`,
//! enum members, and whether a bare value may hold a `value` key.

use std::collections::HashSet;

use serde_json::Value;

use crate::schema::ENVELOPE_PROPERTY;

/// How many `$ref`s are followed in a row, and how deep unions are searched: enough for
/// any derived schema, and a stop for a schema whose references form a cycle. Searches
/// through unions also skip a schema they have already seen, so that a union naming its
/// own type twice (an untagged recursive enum) costs linear, not exponential, time.
pub(crate) const MAX_SCHEMA_HOPS: usize = 32;

/// The schema that accepts anything, for envelopes without a `value` property.
static ANY_SCHEMA: Value = Value::Bool(true);

/// The schema of the envelope's `value` property (`true`, accepting anything, when the
/// envelope has none).
pub fn inner_schema(full: &Value) -> &Value {
    full.get("properties")
        .and_then(|properties| properties.get(ENVELOPE_PROPERTY))
        .unwrap_or(&ANY_SCHEMA)
}

/// A schema with its `$ref`s followed (only local ones, `#/...`, inside `root`), and the
/// name of the last definition reached (`Line` for `#/$defs/Line`).
pub fn resolve<'a>(root: &'a Value, schema: &'a Value) -> (&'a Value, Option<&'a str>) {
    let mut current = schema;
    let mut name = None;
    for _ in 0..MAX_SCHEMA_HOPS {
        let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let Some(target) = reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
        else {
            break;
        };
        name = reference.rsplit('/').next().filter(|n| !n.is_empty());
        current = target;
    }
    (current, name)
}

/// The branches of a union (`anyOf` or `oneOf`), empty when the schema is no union.
pub fn union_branches(schema: &Value) -> &[Value] {
    ["anyOf", "oneOf"]
        .iter()
        .find_map(|key| schema.get(*key).and_then(Value::as_array))
        .map_or(&[], Vec::as_slice)
}

/// Whether a schema accepts only `null` (`{"type": "null"}` or `{"const": null}`).
pub fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema.get("const").is_some_and(Value::is_null)
}

/// The JSON types a schema names in `type` (`"integer"`, `["string", "null"]`).
pub fn declared_types(schema: &Value) -> Vec<&str> {
    types_named(schema.get("type"))
}

/// The JSON types a `type` keyword's value names (nothing when it is absent).
pub(crate) fn types_named(type_keyword: Option<&Value>) -> Vec<&str> {
    match type_keyword {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The string members of an enum schema: an `enum` of strings, or a union of `const`s
/// (schemars writes documented variants that way), behind `$ref`s and nullable unions.
pub fn enum_members(root: &Value, schema: &Value) -> Vec<String> {
    enum_members_of(root, schema)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// [`enum_members`], borrowed from the schema.
pub(crate) fn enum_members_of<'a>(root: &'a Value, schema: &'a Value) -> Vec<&'a str> {
    let mut members = Vec::new();
    collect_enum_members(root, schema, &mut members, &mut HashSet::new(), 0);
    members
}

fn collect_enum_members<'a>(
    root: &'a Value,
    schema: &'a Value,
    members: &mut Vec<&'a str>,
    seen: &mut HashSet<*const Value>,
    depth: usize,
) {
    let (schema, _) = resolve(root, schema);
    if depth > MAX_SCHEMA_HOPS || !seen.insert(schema) {
        return;
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        members.extend(values.iter().filter_map(Value::as_str));
    }
    if let Some(constant) = schema.get("const").and_then(Value::as_str) {
        members.push(constant);
    }
    for branch in union_branches(schema) {
        collect_enum_members(root, branch, members, seen, depth + 1);
    }
}

/// Whether the bare form of the target may itself hold a `value` key: a map (an object
/// schema with no fixed properties and a schema for the others), or a type with its own
/// property named `value` in any case. Such a reply is read as bare, not as an envelope
/// with extra keys.
pub fn bare_form_may_hold_value_key(root: &Value, schema: &Value) -> bool {
    may_hold_value_key(root, schema, &mut HashSet::new(), 0)
}

fn may_hold_value_key<'a>(
    root: &'a Value,
    schema: &'a Value,
    seen: &mut HashSet<*const Value>,
    depth: usize,
) -> bool {
    let (schema, _) = resolve(root, schema);
    if depth > MAX_SCHEMA_HOPS || !seen.insert(schema) {
        return false;
    }
    let own_value_property = schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|properties| {
            properties
                .keys()
                .any(|key| key.eq_ignore_ascii_case(ENVELOPE_PROPERTY))
        });
    let is_map = schema.get("properties").is_none()
        && matches!(
            schema.get("additionalProperties"),
            Some(Value::Object(_) | Value::Bool(true))
        );
    own_value_property
        || is_map
        || union_branches(schema)
            .iter()
            .chain(
                schema
                    .get("allOf")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten(),
            )
            .any(|branch| may_hold_value_key(root, branch, seen, depth + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn envelope(inner: Value, defs: Value) -> Value {
        json!({"type": "object", "properties": {"value": inner}, "required": ["value"],
               "additionalProperties": false, "$defs": defs})
    }

    #[test]
    fn resolve_follows_local_refs_and_names_the_definition() {
        let full = envelope(
            json!({"$ref": "#/$defs/Alias"}),
            json!({"Alias": {"$ref": "#/$defs/Line"}, "Line": {"type": "object"}}),
        );
        let (schema, name) = resolve(&full, inner_schema(&full));
        assert_eq!(schema, &json!({"type": "object"}));
        assert_eq!(name, Some("Line"));
    }

    #[test]
    fn resolve_stops_on_cycles_and_external_refs() {
        let full = envelope(
            json!({"$ref": "#/$defs/A"}),
            json!({"A": {"$ref": "#/$defs/A"}}),
        );
        let (schema, _) = resolve(&full, inner_schema(&full));
        assert_eq!(schema, &json!({"$ref": "#/$defs/A"}));
        let external = json!({"$ref": "http://example.invalid/s.json"});
        assert_eq!(resolve(&external, &external).0, &external);
    }

    #[test]
    fn enum_members_come_from_enum_or_consts_behind_refs() {
        let full = envelope(
            json!({"anyOf": [{"$ref": "#/$defs/Mood"}, {"type": "null"}]}),
            json!({"Mood": {"oneOf": [{"const": "Up"}, {"const": "Down"}]}}),
        );
        assert_eq!(enum_members(&full, inner_schema(&full)), vec!["Up", "Down"]);
        let plain = json!({"type": "string", "enum": ["A", "B"]});
        assert_eq!(enum_members(&plain, &plain), vec!["A", "B"]);
    }

    #[test]
    fn unions_naming_their_own_type_twice_are_searched_once() {
        let mut defs = serde_json::Map::new();
        // A chain of 40 unions, each naming the next twice: 2^40 paths, 40 schemas.
        for i in 0..40 {
            let next = json!({"$ref": format!("#/$defs/E{}", i + 1)});
            defs.insert(format!("E{i}"), json!({"anyOf": [next.clone(), next]}));
        }
        defs.insert("E40".into(), json!({"enum": ["Leaf"]}));
        let full = envelope(json!({"$ref": "#/$defs/E0"}), Value::Object(defs));
        let started = std::time::Instant::now();
        assert!(enum_members(&full, inner_schema(&full)).is_empty());
        assert!(!bare_form_may_hold_value_key(&full, inner_schema(&full)));
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn maps_and_types_with_a_value_property_may_hold_value() {
        let map = json!({"type": "object", "additionalProperties": {"type": "integer"}});
        assert!(bare_form_may_hold_value_key(&map, &map));
        let own = json!({"type": "object", "properties": {"Value": {}, "unit": {}}});
        assert!(bare_form_may_hold_value_key(&own, &own));
        let other = json!({"type": "object", "properties": {"total": {}}});
        assert!(!bare_form_may_hold_value_key(&other, &other));
        assert!(!bare_form_may_hold_value_key(&ANY_SCHEMA, &ANY_SCHEMA));
    }
}
