use std::collections::HashMap;

use proptest::prelude::*;
use schemars::JsonSchema;
use serde_json::{Value, json};

use super::*;

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Line {
    sku: String,
    #[schemars(range(min = 1))]
    qty: u32,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Invoice {
    number: String,
    lines: Vec<Line>,
    due: Option<String>,
    first: Option<Line>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
enum Sentiment {
    Positive,
    Neutral,
    Negative,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Node {
    name: String,
    children: Vec<Node>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct WithMap {
    counts: HashMap<String, i32>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct WithAnything {
    extra: serde_json::Value,
}

const LINE_STRICT: &str = r##"{
    "type": "object",
    "properties": {"sku": {"type": "string"},
                   "qty": {"type": "integer", "description": "Allowed: at least 1."}},
    "required": ["sku", "qty"],
    "additionalProperties": false
}"##;

fn line_strict() -> Value {
    serde_json::from_str(LINE_STRICT).unwrap()
}

#[test]
fn a_struct_target_is_enveloped_with_defs_at_the_root_and_options_nullable_and_required() {
    let target = target_schema::<Invoice>().unwrap();
    assert_eq!(
        *target.strict,
        json!({
            "type": "object",
            "properties": {"value": {
                "title": "Invoice",
                "type": "object",
                "properties": {
                    "number": {"type": "string"},
                    "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
                    "due": {"type": ["string", "null"]},
                    "first": {"anyOf": [{"$ref": "#/$defs/Line"}, {"type": "null"}]}
                },
                "required": ["number", "lines", "due", "first"],
                "additionalProperties": false
            }},
            "required": ["value"],
            "additionalProperties": false,
            "$defs": {"Line": line_strict()}
        })
    );
    assert_eq!(target.type_name, "Invoice");
    assert!(target.strict_compatible);
}

#[test]
fn the_full_envelope_keeps_constraints_and_optional_properties() {
    let target = target_schema::<Invoice>().unwrap();
    assert_eq!(
        target.full["$defs"]["Line"],
        json!({
            "type": "object",
            "properties": {
                "sku": {"type": "string"},
                "qty": {"type": "integer", "format": "uint32", "minimum": 1}
            },
            "required": ["sku", "qty"]
        })
    );
    assert_eq!(
        target.full_value_schema().unwrap()["required"],
        json!(["number", "lines"])
    );
    assert!(target.full.get("$schema").is_none());
}

#[test]
fn primitive_enum_and_collection_targets() {
    let target = target_schema::<Option<String>>().unwrap();
    assert_eq!(
        target.strict["properties"]["value"],
        json!({"title": "Nullable_string", "type": ["string", "null"]})
    );
    assert_eq!(target.type_name, "Option<String>");

    let target = target_schema::<Sentiment>().unwrap();
    assert_eq!(
        target.strict["properties"]["value"],
        json!({"title": "Sentiment", "type": "string", "enum": ["Positive", "Neutral", "Negative"]})
    );

    let target = target_schema::<Vec<Line>>().unwrap();
    assert_eq!(target.type_name, "Vec<Line>");
    // `Line` is used once: the strict schema has it in place, named, and no `$defs`.
    let mut line = line_strict();
    line["title"] = json!("Line");
    assert_eq!(target.strict["properties"]["value"]["items"], line);
    assert!(target.strict.get("$defs").is_none());
    assert_eq!(
        target.full["properties"]["value"]["items"],
        json!({"$ref": "#/$defs/Line"}),
        "the full schema, checked locally, keeps its definitions"
    );
    assert!(target.strict_compatible);

    let target = target_schema::<u8>().unwrap();
    assert_eq!(
        target.strict["properties"]["value"],
        json!({"title": "uint8", "type": "integer"})
    );
}

#[test]
fn a_recursive_type_points_at_the_value_and_is_not_strict_compatible() {
    let target = target_schema::<Node>().unwrap();
    assert_eq!(
        target.strict["properties"]["value"]["properties"]["children"],
        json!({"type": "array", "items": {"$ref": "#/properties/value"}})
    );
    assert!(!target.strict_compatible);
}

#[test]
fn maps_and_unconstrained_values_are_not_strict_compatible() {
    assert!(!target_schema::<WithMap>().unwrap().strict_compatible);
    assert!(
        !target_schema::<HashMap<String, Line>>()
            .unwrap()
            .strict_compatible
    );
    assert!(!target_schema::<WithAnything>().unwrap().strict_compatible);
    assert!(
        !target_schema::<serde_json::Value>()
            .unwrap()
            .strict_compatible
    );
}

#[test]
fn the_envelope_is_built_once_per_type() {
    let first = target_schema::<Invoice>().unwrap();
    let second = target_schema::<Invoice>().unwrap();
    assert!(Arc::ptr_eq(&first, &second));
    assert!(!Arc::ptr_eq(&first, &target_schema::<Line>().unwrap()));
}

#[test]
fn type_names_lose_their_module_paths() {
    assert_eq!(
        short_type_name("alloc::vec::Vec<my_crate::model::Line>"),
        "Vec<Line>"
    );
    assert_eq!(
        short_type_name("std::collections::hash::map::HashMap<alloc::string::String, i32>"),
        "HashMap<String, i32>"
    );
    assert_eq!(
        short_type_name("(u8, &str, [a::B; 3])"),
        "(u8, &str, [B; 3])"
    );
}

#[test]
fn runtime_schema_drops_root_document_keywords() {
    let target = runtime_target_schema(&json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://example.test/order.json",
        "$anchor": "order",
        "type": "string"
    }))
    .unwrap();
    assert_eq!(
        *target.full,
        json!({
            "type": "object",
            "properties": {"value": {"type": "string"}},
            "required": ["value"],
            "additionalProperties": false
        })
    );
}

#[test]
fn runtime_schema_hoists_defs_and_definitions_and_walks_them() {
    let target = runtime_target_schema(&json!({
        "type": "array",
        "items": {"$ref": "#/$defs/Item"},
        "$defs": {"Item": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}},
        "definitions": {"Old": {"type": "string", "maxLength": 3}}
    }))
    .unwrap();
    assert_eq!(
        *target.strict,
        json!({
            "type": "object",
            // `Item` is used once, so it is written in place; `Old` is used nowhere.
            "properties": {"value": {"type": "array", "items": {
                "type": "object",
                "properties": {"n": {"type": "integer", "description": "Allowed: at least 0."}},
                "additionalProperties": false,
                "required": ["n"],
                "title": "Item"
            }}},
            "required": ["value"],
            "additionalProperties": false,
            "definitions": {"Old": {"type": "string",
                                    "description": "Allowed: at most 3 characters."}}
        })
    );
}

#[test]
fn runtime_schema_rewrites_root_relative_refs() {
    let target = runtime_target_schema(&json!({
        "type": "object",
        "properties": {
            "total": {"type": "number"},
            "same_total": {"$ref": "#/properties/total"},
            "parent": {"anyOf": [{"$ref": "#"}, {"type": "null"}]},
            "line": {"$ref": "#/$defs/Line"},
            "old": {"$ref": "#/definitions/Old"},
            "remote": {"$ref": "https://example.test/s.json"}
        },
        "$defs": {"Line": {"type": "object", "properties": {"up": {"$ref": "#"}}}},
        "definitions": {"Old": {"type": "string"}}
    }))
    .unwrap();
    let value = &target.full["properties"]["value"]["properties"];
    assert_eq!(
        value["same_total"],
        json!({"$ref": "#/properties/value/properties/total"})
    );
    assert_eq!(
        value["parent"],
        json!({"anyOf": [{"$ref": "#/properties/value"}, {"type": "null"}]})
    );
    assert_eq!(value["line"], json!({"$ref": "#/$defs/Line"}));
    assert_eq!(value["old"], json!({"$ref": "#/definitions/Old"}));
    assert_eq!(
        value["remote"],
        json!({"$ref": "https://example.test/s.json"})
    );
    assert_eq!(
        target.full["$defs"]["Line"]["properties"]["up"],
        json!({"$ref": "#/properties/value"})
    );
    assert!(!target.strict_compatible);
}

#[test]
fn runtime_schema_requires_every_property_without_widening() {
    let target = runtime_target_schema(&json!({
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"]}},
        "required": ["a"]
    }))
    .unwrap();
    assert_eq!(
        target.strict["properties"]["value"],
        json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"]}},
            "required": ["a", "b"],
            "additionalProperties": false
        })
    );
    assert_eq!(target.full["properties"]["value"]["required"], json!(["a"]));
    assert!(target.strict_compatible);
}

#[test]
fn runtime_schema_leaves_the_callers_value_unmodified() {
    let caller = json!({
        "$schema": "x", "type": "object",
        "properties": {"a": {"$ref": "#"}}, "$defs": {"A": {"type": "string"}}
    });
    let before = caller.clone();
    runtime_target_schema(&caller).unwrap();
    assert_eq!(caller, before);
}

#[test]
fn runtime_schema_names_the_target_after_its_title() {
    let titled = runtime_target_schema(&json!({"title": " Order ", "type": "string"})).unwrap();
    assert_eq!(titled.type_name, "Order");
    let untitled = runtime_target_schema(&json!({"type": "string"})).unwrap();
    assert_eq!(untitled.type_name, RUNTIME_SCHEMA_NAME);
}

#[test]
fn runtime_schema_true_is_any_json_value() {
    let target = runtime_target_schema(&json!(true)).unwrap();
    assert_eq!(
        *target.strict,
        json!({
            "type": "object",
            "properties": {"value": true},
            "required": ["value"],
            "additionalProperties": false
        })
    );
    assert!(!target.strict_compatible);
}

#[test]
fn runtime_schema_refuses_non_schemas() {
    for (schema, found) in [
        (
            json!(false),
            "the boolean schema `false`, which no value satisfies",
        ),
        (json!(null), "null"),
        (json!("string"), "a string"),
        (json!([{"type": "string"}]), "an array"),
        (json!(1), "a number"),
    ] {
        assert_eq!(
            runtime_target_schema(&schema),
            Err(SchemaError::NotAnObject { found })
        );
    }
    assert_eq!(
        runtime_target_schema(&json!(1)).unwrap_err().to_string(),
        "a runtime schema must be a JSON object (or `true` for any JSON value); got a number"
    );
}

/// Prints the cost of a cached lookup; run with `--ignored --nocapture` to measure.
#[test]
#[ignore = "measurement, not a check"]
fn measure_cached_lookup() {
    let _ = target_schema::<Invoice>().unwrap();
    let rounds = 1_000_000u32;
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(target_schema::<Invoice>().unwrap());
    }
    println!("cached lookup: {:?} each", start.elapsed() / rounds);
}

proptest! {
    #[test]
    fn runtime_schemas_never_panic_and_stay_strict_after_another_walk(
        schema in strict::tests::schema_like()
    ) {
        if let Ok(target) = runtime_target_schema(&schema) {
            let mut again = (*target.strict).clone();
            make_strict(&mut again);
            prop_assert_eq!(&again, &*target.strict);
            prop_assert_eq!(&target.strict["required"], &json!(["value"]));
        }
    }
}

/// `levels` nested `{"type": "array", "items": ...}` schemas, built without recursion.
fn nested_arrays(levels: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 0..levels {
        // Not `json!`: it serializes an interpolated value, recursively.
        let mut level = serde_json::Map::new();
        level.insert("type".to_owned(), json!("array"));
        level.insert("items".to_owned(), schema);
        schema = Value::Object(level);
    }
    schema
}

/// Drops a deeply nested value one level at a time: the default drop recurses.
fn dismantle(mut value: Value) {
    loop {
        let next = match &mut value {
            Value::Object(map) => map
                .values_mut()
                .find(|child| child.is_object() || child.is_array())
                .map(Value::take),
            Value::Array(items) => items.pop(),
            _ => None,
        };
        match next {
            Some(inner) => value = inner,
            None => break,
        }
    }
}

#[test]
fn an_over_deep_runtime_schema_is_refused_without_overflowing_the_stack() {
    // A 1 MiB stack: the refusal must not walk the schema recursively.
    let outcome = std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(|| {
            let deep = nested_arrays(10_000);
            let refused = runtime_target_schema(&deep).map(|_| ());
            dismantle(deep);
            refused
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(
        outcome,
        Err(SchemaError::TooDeep {
            limit: MAX_RUNTIME_SCHEMA_DEPTH
        })
    );
    let message = outcome.unwrap_err().to_string();
    assert!(message.contains("more than 128 levels deep"), "{message}");
    // Every schema serde_json reads from text fits (it reads at most 127 levels; each
    // level here is one object).
    let deepest_readable = nested_arrays(MAX_RUNTIME_SCHEMA_DEPTH - 2);
    let read: Value = serde_json::from_str(&deepest_readable.to_string()).unwrap();
    assert!(runtime_target_schema(&read).is_ok());
    assert!(runtime_target_schema(&nested_arrays(MAX_RUNTIME_SCHEMA_DEPTH - 1)).is_ok());
    assert!(runtime_target_schema(&nested_arrays(MAX_RUNTIME_SCHEMA_DEPTH)).is_err());
}
