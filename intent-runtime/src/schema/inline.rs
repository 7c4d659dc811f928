//! Inlining the definitions a schema uses once: the request's schema is text the model
//! reads on every call, and a definition named once costs its name three times (the
//! `$ref`, the key in `$defs`, the `$defs` container) for nothing.
//!
//! Only the schema sent to the provider is inlined ([`TargetSchema::strict`]); the
//! result admits exactly the values the original admits, so the local checks against it
//! are unchanged. A definition used more than once stays in `$defs` (inlining would write
//! it out once per use), and so does one that reaches itself (inlining would never end),
//! one that a pointer reaches into (`#/$defs/Line/properties/sku`) and one that carries
//! an `$id` or an anchor another reference may name.
//!
//! [`TargetSchema::strict`]: super::TargetSchema::strict

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Definition containers whose members may be inlined.
const CONTAINERS: &[&str] = &["$defs", "definitions"];

/// Keywords whose values are data, not schemas: a `$ref` key inside them is no reference.
const DATA_KEYWORDS: &[&str] = &["enum", "const", "default", "examples"];

/// Keywords that name a schema for references other than `#/$defs/<name>`.
const NAMING_KEYWORDS: &[&str] = &["$id", "$anchor", "$dynamicAnchor"];

/// Replaces every `$ref` to a definition used once by the definition itself and drops
/// the definition, until none is left to inline; an emptied container is removed.
///
/// A reference with keywords beside it (a field's `description` beside the `$ref` to its
/// type) keeps them: a `description` on both is joined, the field's first; any other
/// keyword the definition also has keeps that reference as it is.
pub(crate) fn inline_single_use_definitions(schema: &mut Value) {
    // Each round inlines one definition; a schema has few, so the rounds are few.
    while let Some((container, name)) = next_inlinable(schema) {
        let Some(definition) = schema
            .get_mut(container)
            .and_then(Value::as_object_mut)
            .and_then(|definitions| definitions.shift_remove(&name))
        else {
            return;
        };
        let pointer = reference_to(container, &name);
        replace_reference(schema, &pointer, &definition, &name, None);
        if schema
            .get(container)
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
            && let Value::Object(root) = schema
        {
            root.shift_remove(container);
        }
    }
}

/// A definition that nothing describes keeps its name as a `title` where it tells the
/// model something its field's name does not: the `$ref` was the model's only account of
/// what the object is (`terms` holding `PaymentTerms`), and inlining drops it. Under a
/// field that already names it (`lines` holding `Line`) the title would be tokens for
/// nothing.
fn keep_the_name(definition: &mut Map<String, Value>, name: &str, field: Option<&str>) {
    if definition.contains_key("title") || definition.contains_key("description") {
        return;
    }
    let letters = |text: &str| -> String {
        text.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    if field.is_some_and(|field| letters(field).contains(&letters(name))) {
        return;
    }
    definition.insert("title".to_owned(), Value::String(name.to_owned()));
}

fn reference_to(container: &str, name: &str) -> String {
    ["#/", container, "/", &escape_pointer_token(name)].concat()
}

/// A definition's name as a JSON pointer token (`~` and `/` escaped).
fn escape_pointer_token(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// The first definition, in the schema's order, that may be inlined.
fn next_inlinable(schema: &Value) -> Option<(&'static str, String)> {
    let mut uses: HashMap<String, usize> = HashMap::new();
    let mut pinned: Vec<String> = Vec::new();
    count_references(schema, &mut uses, &mut pinned);
    for container in CONTAINERS {
        let Some(Value::Object(definitions)) = schema.get(*container) else {
            continue;
        };
        for (name, definition) in definitions {
            let pointer = reference_to(container, name);
            let inner = [pointer.as_str(), "/"].concat();
            let used_once = uses.get(&pointer) == Some(&1);
            let pinned = pinned.iter().any(|p| p.starts_with(&inner));
            let named = definition
                .as_object()
                .is_some_and(|map| NAMING_KEYWORDS.iter().any(|k| map.contains_key(*k)));
            if used_once
                && !pinned
                && !named
                && definition.is_object()
                && !refers_to(definition, &pointer)
                && can_merge_at_use(schema, &pointer, definition)
            {
                return Some((container, name.clone()));
            }
        }
    }
    None
}

/// Counts every `$ref` by its target; a target inside a definition is also `pinned`.
fn count_references(schema: &Value, uses: &mut HashMap<String, usize>, pinned: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            for (key, child) in map {
                match (key.as_str(), child) {
                    ("$ref", Value::String(reference)) => {
                        *uses.entry(reference.clone()).or_default() += 1;
                        pinned.push(reference.clone());
                    }
                    (key, _) if DATA_KEYWORDS.contains(&key) => {}
                    (_, child) => count_references(child, uses, pinned),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                count_references(item, uses, pinned);
            }
        }
        _ => {}
    }
}

/// Whether `schema` holds a `$ref` to `pointer` or into it.
fn refers_to(schema: &Value, pointer: &str) -> bool {
    let mut uses = HashMap::new();
    let mut targets = Vec::new();
    count_references(schema, &mut uses, &mut targets);
    let inner = [pointer, "/"].concat();
    targets
        .iter()
        .any(|target| target == pointer || target.starts_with(&inner))
}

/// Whether the one use of `pointer` can take the definition: its other keywords are
/// annotations the definition lacks, or a `description` that can be joined.
fn can_merge_at_use(schema: &Value, pointer: &str, definition: &Value) -> bool {
    let Some(node) = find_reference(schema, pointer) else {
        return false;
    };
    let Some(definition) = definition.as_object() else {
        return false;
    };
    node.keys()
        .filter(|key| *key != "$ref")
        .all(|key| key == "description" || !definition.contains_key(key))
}

/// The object holding the `$ref` to `pointer`.
fn find_reference<'a>(schema: &'a Value, pointer: &str) -> Option<&'a Map<String, Value>> {
    match schema {
        Value::Object(map) => {
            if map.get("$ref").and_then(Value::as_str) == Some(pointer) {
                return Some(map);
            }
            map.iter()
                .filter(|(key, _)| !DATA_KEYWORDS.contains(&key.as_str()))
                .find_map(|(_, child)| find_reference(child, pointer))
        }
        Value::Array(items) => items.iter().find_map(|item| find_reference(item, pointer)),
        _ => None,
    }
}

/// Replaces the object holding the `$ref` to `pointer` by `definition` (named `name`)
/// with that object's other keywords merged in. `field` is the property the search is
/// under (an array's items stay under their property's name).
fn replace_reference(
    schema: &mut Value,
    pointer: &str,
    definition: &Value,
    name: &str,
    field: Option<&str>,
) -> bool {
    match schema {
        Value::Object(map) => {
            if map.get("$ref").and_then(Value::as_str) == Some(pointer) {
                let mut merged = definition.as_object().cloned().unwrap_or_default();
                for (key, value) in map.iter().filter(|(key, _)| *key != "$ref") {
                    match (key.as_str(), value, merged.get(key)) {
                        ("description", Value::String(field), Some(Value::String(own))) => {
                            let joined = join_descriptions(field, own);
                            merged.insert(key.clone(), Value::String(joined));
                        }
                        _ => {
                            merged.insert(key.clone(), value.clone());
                        }
                    }
                }
                keep_the_name(&mut merged, name, field);
                *map = merged;
                return true;
            }
            map.iter_mut()
                .filter(|(key, _)| !DATA_KEYWORDS.contains(&key.as_str()))
                .any(|(key, child)| match child {
                    Value::Object(properties) if key == "properties" => {
                        properties.iter_mut().any(|(property, schema)| {
                            replace_reference(schema, pointer, definition, name, Some(property))
                        })
                    }
                    child => replace_reference(child, pointer, definition, name, field),
                })
        }
        Value::Array(items) => items
            .iter_mut()
            .any(|item| replace_reference(item, pointer, definition, name, field)),
        _ => false,
    }
}

/// `Payment terms.` and `How an invoice is paid.` read as one description: the field's,
/// then the type's, each ending in a stop.
fn join_descriptions(field: &str, own: &str) -> String {
    let (field, own) = (field.trim(), own.trim());
    if field.is_empty() || field == own {
        return own.to_owned();
    }
    if own.is_empty() {
        return field.to_owned();
    }
    let stop = if field.ends_with(['.', '!', '?']) {
        ""
    } else {
        "."
    };
    [field, stop, " ", own].concat()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn inlined(mut schema: Value) -> Value {
        inline_single_use_definitions(&mut schema);
        schema
    }

    #[test]
    fn a_definition_used_once_takes_the_place_of_its_reference() {
        assert_eq!(
            inlined(json!({
                "type": "object",
                "properties": {"lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}}},
                "$defs": {"Line": {"type": "object", "properties": {"sku": {"type": "string"}}}}
            })),
            json!({
                "type": "object",
                "properties": {"lines": {"type": "array", "items": {"type": "object",
                    "properties": {"sku": {"type": "string"}}}}}
            })
        );
    }

    #[test]
    fn a_type_name_the_field_does_not_say_is_kept_as_a_title() {
        assert_eq!(
            inlined(json!({
                "type": "object",
                "properties": {
                    "terms": {"$ref": "#/$defs/PaymentTerms"},
                    "payment_terms": {"type": "array", "items": {"$ref": "#/$defs/Payment_Terms"}}
                },
                "$defs": {
                    "PaymentTerms": {"type": "object", "properties": {"days": {"type": "integer"}}},
                    "Payment_Terms": {"type": "string"}
                }
            })),
            json!({
                "type": "object",
                "properties": {
                    "terms": {"type": "object", "properties": {"days": {"type": "integer"}},
                        "title": "PaymentTerms"},
                    "payment_terms": {"type": "array", "items": {"type": "string"}}
                }
            })
        );
    }

    #[test]
    fn the_fields_description_comes_first_and_the_types_follows() {
        assert_eq!(
            inlined(json!({
                "properties": {"terms": {"$ref": "#/$defs/Terms", "description": "Payment terms"}},
                "$defs": {"Terms": {"description": "How it is paid.", "enum": ["Net30"]}}
            })),
            json!({
                "properties": {"terms": {"description": "Payment terms. How it is paid.",
                                         "enum": ["Net30"]}}
            })
        );
    }

    #[test]
    fn definitions_used_twice_reaching_themselves_or_pointed_into_stay() {
        let kept = json!({
            "properties": {
                "a": {"$ref": "#/$defs/Twice"}, "b": {"$ref": "#/$defs/Twice"},
                "tree": {"$ref": "#/$defs/Node"},
                "sku": {"$ref": "#/$defs/Line/properties/sku"},
                "line": {"$ref": "#/$defs/Line"},
                "named": {"$ref": "#/$defs/Named"},
                "clash": {"$ref": "#/$defs/Clash", "type": "string"}
            },
            "$defs": {
                "Twice": {"type": "string"},
                "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}},
                "Line": {"type": "object", "properties": {"sku": {"type": "string"}}},
                "Named": {"$anchor": "named", "type": "string"},
                "Clash": {"type": ["string", "null"]}
            }
        });
        assert_eq!(inlined(kept.clone()), kept);
    }

    #[test]
    fn definitions_reached_only_through_inlined_ones_are_inlined_too() {
        assert_eq!(
            inlined(json!({
                "properties": {"a": {"$ref": "#/$defs/A"}},
                "$defs": {
                    "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
                    "B": {"type": "integer"}
                }
            })),
            json!({
                "properties": {"a": {"type": "object",
                    "properties": {"b": {"type": "integer"}}}}
            })
        );
    }

    #[test]
    fn a_cycle_of_two_keeps_one_definition_and_every_reference_resolves() {
        let schema = inlined(json!({
            "properties": {"a": {"$ref": "#/definitions/A"}},
            "definitions": {
                "A": {"type": "object", "properties": {"b": {"$ref": "#/definitions/B"}}},
                "B": {"type": "object", "properties": {"a": {"$ref": "#/definitions/A"}}}
            }
        }));
        // A is used twice (from the root and from B), so only B is inlined, into A.
        assert_eq!(
            schema,
            json!({
                "properties": {"a": {"$ref": "#/definitions/A"}},
                "definitions": {
                    "A": {"type": "object", "properties": {"b": {"type": "object",
                        "properties": {"a": {"$ref": "#/definitions/A"}}}}}
                }
            })
        );
    }

    #[test]
    fn refs_inside_data_keywords_are_not_uses() {
        let schema = json!({
            "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"const": {"$ref": "#/$defs/A"}}},
            "$defs": {"A": {"type": "integer"}}
        });
        assert_eq!(
            inlined(schema),
            json!({
                "properties": {"a": {"type": "integer"},
                               "b": {"const": {"$ref": "#/$defs/A"}}}
            })
        );
    }
}
