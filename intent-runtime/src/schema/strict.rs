//! The strict walk: rewrites a JSON schema in place into the subset that providers'
//! strict structured-output modes accept.

use serde_json::{Map, Value};

use super::bounds::bounds_text;

/// The value constraints that strict modes reject. The strict walk removes them; the
/// verifier checks them locally against the full schema instead, so no constraint the
/// user wrote is dropped on the way.
pub const CONSTRAINT_KEYWORDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
];

/// Other keywords removed everywhere because strict modes reject them: `default` and
/// `$schema`, and what `schemars` or hand-written schemas carry that
/// OpenAI's strict mode refuses: annotations on object size, `examples`, `deprecated`,
/// `readOnly` / `writeOnly`, `contentEncoding` / `contentMediaType`, and the array
/// keywords `contains` / `minContains` / `maxContains`.
pub const OTHER_REJECTED_KEYWORDS: &[&str] = &[
    "default",
    "$schema",
    "minProperties",
    "maxProperties",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentEncoding",
    "contentMediaType",
    "contains",
    "minContains",
    "maxContains",
];

/// The `format` values OpenAI's strict mode accepts; every other `format` is dropped.
///
/// `schemars` writes Rust-specific formats (`int32`, `uint8`, `uint`, `double`,
/// `float`) that no provider knows; they only restate the JSON type, so dropping them
/// loses nothing the provider would enforce. The accepted ones are kept because they
/// guide the model (a `date-time` string) and are enforced by the provider.
pub const ACCEPTED_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords whose value is an array of subschemas.
const SUBSCHEMA_LISTS: &[&str] = &["anyOf", "allOf", "oneOf", "prefixItems"];

/// Keywords whose value is a map from names to subschemas.
const SUBSCHEMA_MAPS: &[&str] = &["properties", "$defs", "definitions"];

/// Makes `schema` acceptable to providers' strict modes, in place.
///
/// - states the bounds of the [constraints](CONSTRAINT_KEYWORDS) in words in the node's
///   `description` (`Allowed: 1 to 5.`), leaving out what an integer `format` implies;
/// - removes the [constraints](CONSTRAINT_KEYWORDS), the
///   [other rejected keywords](OTHER_REJECTED_KEYWORDS) and every `format` not in
///   [`ACCEPTED_FORMATS`];
/// - on every object schema (its `type` is or includes `"object"`, or it has
///   `properties` and no `type`): sets `additionalProperties: false` and lists every
///   property in `required`, in declaration order. A property that was optional keeps
///   its own type: the walk never widens it to nullable, so a field that may be absent
///   must already be nullable (`Option<T>` is);
/// - renames `oneOf` to `anyOf` when there is no `anyOf` beside it, because OpenAI's
///   strict mode refuses `oneOf`. A value valid under `oneOf` is valid under `anyOf`;
///   the two differ only for overlapping branches, and `schemars` writes disjoint
///   branches for enums;
/// - recurses into `properties`, `items`, `prefixItems`, `anyOf`, `allOf`, `oneOf` and
///   each named schema of `$defs` / `definitions`.
///
/// Idempotent, and total: any JSON value is accepted and anything that is not a schema
/// object (a boolean schema, a keyword of an unexpected JSON type) is left alone.
pub fn make_strict(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    // The provider never sees the constraint keywords; the model reads their bounds in
    // the description instead, so a reply is not refused for a bound it was never told.
    if let Some(bounds) = bounds_text(map) {
        state_bounds_in_description(map, &bounds);
    }
    for keyword in CONSTRAINT_KEYWORDS.iter().chain(OTHER_REJECTED_KEYWORDS) {
        map.remove(*keyword);
    }
    drop_unaccepted_format(map);
    if is_object_schema(map) {
        close_object(map);
    }
    if !map.contains_key("anyOf")
        && let Some(branches) = map.remove("oneOf")
    {
        map.insert("anyOf".to_owned(), branches);
    }
    recurse_into_subschemas(map);
}

/// Closes every object schema of `schema` as [`make_strict`] does (`additionalProperties:
/// false`, every property required) and changes nothing else: constraints, `oneOf` and
/// every other keyword stay.
///
/// A value valid against the result is valid against both `schema` (closing only adds
/// demands) and `make_strict(schema)` (which demands the same closure and drops or
/// weakens the rest), so one check against it answers both.
pub(crate) fn close_objects(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    if is_object_schema(map) {
        close_object(map);
    }
    for_each_subschema(map, close_objects);
}

/// Appends `Allowed: <bounds>.` to the node's `description` (or makes it the
/// description).
fn state_bounds_in_description(map: &mut Map<String, Value>, bounds: &str) {
    let stated = ["Allowed: ", bounds, "."].concat();
    let description = match map.get("description") {
        Some(Value::String(text)) if !text.trim().is_empty() => {
            let text = text.trim_end();
            let stop = if text.ends_with(['.', '!', '?']) {
                ""
            } else {
                "."
            };
            [text, stop, " ", &stated].concat()
        }
        _ => stated,
    };
    map.insert("description".to_owned(), Value::String(description));
}

fn drop_unaccepted_format(map: &mut Map<String, Value>) {
    let accepted = match map.get("format") {
        None => return,
        Some(Value::String(format)) => ACCEPTED_FORMATS.contains(&format.as_str()),
        Some(_) => false,
    };
    if !accepted {
        map.remove("format");
    }
}

/// Whether the walk treats `map` as an object schema.
pub(crate) fn is_object_schema(map: &Map<String, Value>) -> bool {
    match map.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => kinds.iter().any(|k| k.as_str() == Some("object")),
        Some(_) => false,
        None => map.contains_key("properties"),
    }
}

fn close_object(map: &mut Map<String, Value>) {
    map.insert("additionalProperties".to_owned(), Value::Bool(false));
    if let Some(Value::Object(properties)) = map.get("properties") {
        let required = properties
            .keys()
            .map(|name| Value::String(name.clone()))
            .collect();
        map.insert("required".to_owned(), Value::Array(required));
    }
}

fn recurse_into_subschemas(map: &mut Map<String, Value>) {
    for_each_subschema(map, make_strict);
}

/// Runs `walk` on each subschema the strict walk descends into.
fn for_each_subschema(map: &mut Map<String, Value>, walk: fn(&mut Value)) {
    if let Some(items) = map.get_mut("items") {
        walk(items);
    }
    for keyword in SUBSCHEMA_LISTS {
        if let Some(Value::Array(branches)) = map.get_mut(*keyword) {
            branches.iter_mut().for_each(walk);
        }
    }
    for keyword in SUBSCHEMA_MAPS {
        if let Some(Value::Object(named)) = map.get_mut(*keyword) {
            named.values_mut().for_each(walk);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn strict(mut schema: Value) -> Value {
        make_strict(&mut schema);
        schema
    }

    #[test]
    fn closing_objects_keeps_every_other_keyword() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 0},
                "pick": {"oneOf": [{"type": "object", "properties": {"a": {"maxLength": 2}}},
                                   {"type": "null"}]}
            },
            "minProperties": 1,
            "default": {}
        });
        close_objects(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "minimum": 0},
                    "pick": {"oneOf": [{"type": "object",
                                        "properties": {"a": {"maxLength": 2}},
                                        "additionalProperties": false, "required": ["a"]},
                                       {"type": "null"}]}
                },
                "minProperties": 1,
                "default": {},
                "additionalProperties": false,
                "required": ["n", "pick"]
            })
        );
    }

    #[test]
    fn removes_numeric_constraints() {
        assert_eq!(
            strict(json!({
                "type": "integer", "minimum": 0, "maximum": 9, "exclusiveMinimum": 0,
                "exclusiveMaximum": 10, "multipleOf": 3
            })),
            json!({"type": "integer", "description": "Allowed: 0 to 9, a multiple of 3."})
        );
    }

    #[test]
    fn removes_string_constraints() {
        assert_eq!(
            strict(json!({"type": "string", "minLength": 1, "maxLength": 5, "pattern": "^a"})),
            json!({"type": "string",
                   "description": "Allowed: 1 to 5 characters, matching the regex ^a."})
        );
    }

    #[test]
    fn bounds_join_an_existing_description_once() {
        let once = strict(json!({"type": "integer", "minimum": 1, "maximum": 5,
                                 "description": "Stars given"}));
        assert_eq!(
            once,
            json!({"type": "integer", "description": "Stars given. Allowed: 1 to 5."})
        );
        assert_eq!(strict(once.clone()), once, "idempotent");
        // A bound the integer's format implies says nothing the type does not.
        assert_eq!(
            strict(json!({"type": "integer", "format": "uint32", "minimum": 0})),
            json!({"type": "integer"})
        );
    }

    #[test]
    fn removes_array_constraints_and_keeps_items() {
        assert_eq!(
            strict(json!({
                "type": "array", "items": {"type": "string", "maxLength": 2},
                "minItems": 1, "maxItems": 3, "uniqueItems": true,
                "contains": {"const": "a"}
            })),
            json!({"type": "array", "items": {"type": "string",
                                              "description": "Allowed: at most 2 characters."},
                   "description": "Allowed: 1 to 3 items, no repeated items."})
        );
    }

    #[test]
    fn removes_default_schema_and_annotations_providers_reject() {
        assert_eq!(
            strict(json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "boolean", "default": false, "examples": [true],
                "deprecated": true, "readOnly": true, "writeOnly": false,
                "description": "kept", "title": "kept too"
            })),
            json!({"type": "boolean", "description": "kept", "title": "kept too"})
        );
    }

    #[test]
    fn keeps_accepted_formats_and_drops_the_rest() {
        assert_eq!(
            strict(json!({"type": "string", "format": "date-time"})),
            json!({"type": "string", "format": "date-time"})
        );
        assert_eq!(
            strict(json!({"type": "integer", "format": "uint32"})),
            json!({"type": "integer"})
        );
        assert_eq!(
            strict(json!({"type": "number", "format": "double"})),
            json!({"type": "number"})
        );
        assert_eq!(
            strict(json!({"type": "string", "format": 7})),
            json!({"type": "string"})
        );
    }

    #[test]
    fn closes_objects_and_requires_every_property_in_order() {
        assert_eq!(
            strict(json!({
                "type": "object",
                "properties": {"b": {"type": "string"}, "a": {"type": ["string", "null"]}},
                "required": ["b"],
                "minProperties": 1
            })),
            json!({
                "type": "object",
                "properties": {"b": {"type": "string"}, "a": {"type": ["string", "null"]}},
                "required": ["b", "a"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn replaces_an_additional_properties_schema_with_false() {
        assert_eq!(
            strict(json!({"type": "object", "additionalProperties": {"type": "integer"}})),
            json!({"type": "object", "additionalProperties": false})
        );
    }

    #[test]
    fn treats_properties_without_type_and_type_lists_as_objects() {
        assert_eq!(
            strict(json!({"properties": {"x": {"type": "number", "minimum": 1}}})),
            json!({
                "properties": {"x": {"type": "number", "description": "Allowed: at least 1."}},
                "additionalProperties": false,
                "required": ["x"]
            })
        );
        assert_eq!(
            strict(json!({"type": ["object", "null"], "properties": {"x": {"type": "number"}}})),
            json!({
                "type": ["object", "null"],
                "properties": {"x": {"type": "number"}},
                "additionalProperties": false,
                "required": ["x"]
            })
        );
    }

    #[test]
    fn leaves_non_object_types_with_properties_alone() {
        // A `properties` keyword on a string schema is inert; closing it would invent
        // an object constraint the caller never wrote.
        assert_eq!(
            strict(json!({"type": "string", "properties": {"x": {"type": "number"}}})),
            json!({"type": "string", "properties": {"x": {"type": "number"}}})
        );
    }

    #[test]
    fn an_optional_nullable_property_becomes_required_and_stays_nullable() {
        assert_eq!(
            strict(json!({
                "type": "object",
                "properties": {
                    "due": {"type": ["string", "null"]},
                    "line": {"anyOf": [{"$ref": "#/$defs/Line"}, {"type": "null"}]}
                }
            })),
            json!({
                "type": "object",
                "properties": {
                    "due": {"type": ["string", "null"]},
                    "line": {"anyOf": [{"$ref": "#/$defs/Line"}, {"type": "null"}]}
                },
                "additionalProperties": false,
                "required": ["due", "line"]
            })
        );
    }

    #[test]
    fn never_widens_an_optional_property_that_is_not_nullable() {
        assert_eq!(
            strict(json!({"type": "object", "properties": {"n": {"type": "integer"}}})),
            json!({
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "additionalProperties": false,
                "required": ["n"]
            })
        );
    }

    #[test]
    fn renames_one_of_to_any_of_and_recurses_into_branches() {
        assert_eq!(
            strict(json!({"oneOf": [
                {"type": "string", "enum": ["Empty"]},
                {"type": "object", "properties": {"r": {"type": "number", "format": "double"}}}
            ]})),
            json!({"anyOf": [
                {"type": "string", "enum": ["Empty"]},
                {
                    "type": "object", "properties": {"r": {"type": "number"}},
                    "additionalProperties": false, "required": ["r"]
                }
            ]})
        );
    }

    #[test]
    fn keeps_one_of_beside_an_existing_any_of() {
        assert_eq!(
            strict(json!({
                "anyOf": [{"type": "string", "maxLength": 1}],
                "oneOf": [{"type": "integer", "minimum": 0}]
            })),
            json!({"anyOf": [{"type": "string", "description": "Allowed: at most 1 character."}],
                   "oneOf": [{"type": "integer", "description": "Allowed: at least 0."}]})
        );
    }

    #[test]
    fn recurses_into_all_of_prefix_items_and_named_definitions() {
        assert_eq!(
            strict(json!({
                "allOf": [{"type": "string", "pattern": "x"}],
                "prefixItems": [{"type": "integer", "maximum": 1}],
                "$defs": {"A": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "definitions": {"B": {"type": "number", "multipleOf": 2}}
            })),
            json!({
                "allOf": [{"type": "string", "description": "Allowed: matching the regex x."}],
                "prefixItems": [{"type": "integer", "description": "Allowed: at most 1."}],
                "$defs": {"A": {
                    "type": "object", "properties": {"a": {"type": "string"}},
                    "additionalProperties": false, "required": ["a"]
                }},
                "definitions": {"B": {"type": "number",
                                      "description": "Allowed: a multiple of 2."}}
            })
        );
    }

    #[test]
    fn leaves_non_schemas_and_odd_keyword_types_alone() {
        assert_eq!(strict(json!(true)), json!(true));
        assert_eq!(
            strict(json!([1, {"minimum": 1}])),
            json!([1, {"minimum": 1}])
        );
        assert_eq!(
            strict(json!({"type": 3, "properties": "no", "items": 4, "anyOf": {"x": 1}})),
            json!({"type": 3, "properties": "no", "items": 4, "anyOf": {"x": 1}})
        );
        assert_eq!(
            strict(json!({"properties": "no"})),
            json!({"properties": "no", "additionalProperties": false})
        );
    }

    /// Recursive JSON values shaped like schemas: objects whose keys are mostly schema
    /// keywords, so the walk's branches are all reached, with arbitrary JSON mixed in.
    pub(crate) fn schema_like() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            prop::sample::select(vec![
                "object",
                "string",
                "integer",
                "array",
                "null",
                "date-time",
                "int32",
                "#",
                "#/$defs/A",
                "#/properties/a",
                "http://x/y.json",
            ])
            .prop_map(Value::from),
        ];
        let keys = prop::sample::select(vec![
            "type",
            "properties",
            "required",
            "items",
            "prefixItems",
            "anyOf",
            "allOf",
            "oneOf",
            "$defs",
            "definitions",
            "additionalProperties",
            "format",
            "minimum",
            "maxLength",
            "default",
            "$schema",
            "$ref",
            "$id",
            "enum",
            "const",
            "a",
            "b",
        ]);
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((keys.clone(), inner), 0..6).prop_map(|pairs| {
                    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_walk_is_idempotent_and_never_panics(schema in schema_like()) {
            let once = strict(schema);
            let twice = strict(once.clone());
            prop_assert_eq!(once, twice);
        }
    }
}
