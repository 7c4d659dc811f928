//! Schema-guided repair of a parsed reply before it is deserialized: property names
//! matched ignoring case, numbers read from strings, enum members matched ignoring case.
//! The same walk notes what no repair can fix (a missing required field, a value that
//! is no enum member), so that a failed deserialization can name the path and the type.

use std::collections::HashSet;

use serde_json::{Map, Number, Value};

use super::schema_nav::{
    MAX_SCHEMA_HOPS, declared_types, enum_members, is_null_schema, resolve, union_branches,
};
use crate::result::Repair;
use crate::schema::ENVELOPE_PROPERTY;

/// How deep the walk descends into a value: as deep as `serde_json` nests when parsing.
const MAX_VALUE_DEPTH: usize = 128;

/// How many (value, schema) pairs one walk visits at most. A schema whose `allOf` or union
/// names its own type more than once could otherwise make the walk exponential; a real
/// reply visits each of its values once or twice, and no model output holds this many.
const MAX_VISITS: usize = 200_000;

/// The longest rendering of an offending value quoted back in a message.
const MAX_QUOTED_CHARS: usize = 80;

/// What the schema-guided walk did and found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchemaRepair {
    /// The repairs made, in the order they were made.
    pub repairs: Vec<Repair>,
    /// What the schema rejects and no repair could fix.
    pub findings: Vec<Finding>,
}

/// A mismatch between a reply and the schema that no repair fixes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// An object lacks a property its schema requires.
    MissingField {
        /// The JSON pointer of the object.
        path: String,
        /// The name of the object's type, when the schema names it.
        owner: Option<String>,
        /// The missing property.
        field: String,
    },
    /// A value is not one of an enum's members.
    NotAMember {
        /// The JSON pointer of the value.
        path: String,
        /// The value as the model wrote it (JSON, shortened).
        found: String,
        /// The enum's name, when the schema names it.
        enum_name: Option<String>,
        /// The members, in schema order.
        members: Vec<String>,
    },
}

impl Finding {
    /// The message fed back to the model.
    pub fn message(&self) -> String {
        match self {
            Finding::MissingField { path, owner, field } => {
                let owner = owner.as_deref().unwrap_or("the object");
                format!(
                    "The required field \"{field}\" is missing from {owner}{}; include it.",
                    location_suffix(path)
                )
            }
            Finding::NotAMember {
                path,
                found,
                enum_name,
                members,
            } => {
                let of = enum_name.as_deref().map_or_else(
                    || "an allowed value".to_owned(),
                    |n| format!("a member of {n}"),
                );
                format!(
                    "{}{found} is not {of}; answer with exactly one of: {}.",
                    location_prefix(path),
                    members.join(", ")
                )
            }
        }
    }
}

/// Whether `path` is where the target value itself sits (no location worth naming).
fn is_value_root(path: &str) -> bool {
    path.is_empty() || path.strip_prefix('/') == Some(ENVELOPE_PROPERTY)
}

fn location_prefix(path: &str) -> String {
    if is_value_root(path) {
        String::new()
    } else {
        format!("{}: ", path.trim_start_matches('/'))
    }
}

fn location_suffix(path: &str) -> String {
    if is_value_root(path) {
        String::new()
    } else {
        format!(" at {}", path.trim_start_matches('/'))
    }
}

/// Repairs `value` in place against `schema`, whose `$ref`s resolve inside `root`.
///
/// `path` is the JSON pointer of `value` (repairs and findings name paths below it) and
/// `name` the target's type name, used when the schema does not name the root type.
pub fn repair_against_schema(
    value: &mut Value,
    root: &Value,
    schema: &Value,
    path: &str,
    name: Option<&str>,
) -> SchemaRepair {
    let mut walk = Walk {
        root,
        out: SchemaRepair::default(),
        visits_left: MAX_VISITS,
    };
    walk.visit(value, schema, path, name, 0);
    walk.out
}

struct Walk<'s> {
    root: &'s Value,
    out: SchemaRepair,
    visits_left: usize,
}

impl<'s> Walk<'s> {
    fn visit(
        &mut self,
        value: &mut Value,
        schema: &'s Value,
        path: &str,
        name: Option<&str>,
        depth: usize,
    ) {
        // Null is checked by the verifier's null step and by serde, not repaired.
        if depth > MAX_VALUE_DEPTH || value.is_null() || self.visits_left == 0 {
            return;
        }
        self.visits_left -= 1;
        let (schema, defined_name) = resolve(self.root, schema);
        let name = defined_name.or(name);
        if let Some(parts) = schema.get("allOf").and_then(Value::as_array) {
            for part in parts {
                self.visit(value, part, path, name, depth + 1);
            }
        }
        if self.visit_enum(value, schema, path, name) {
            return;
        }
        if let Some(branch) = pick_branch(self.root, value, union_branches(schema)) {
            self.visit(value, branch, path, name, depth + 1);
        }
        self.read_number_from_string(value, schema, path);
        match value {
            Value::Object(object) => self.visit_object(object, schema, path, name, depth),
            Value::Array(items) => self.visit_array(items, schema, path, depth),
            _ => {}
        }
    }

    /// Checks a value against an enum schema; returns whether the schema was one.
    fn visit_enum(
        &mut self,
        value: &mut Value,
        schema: &Value,
        path: &str,
        name: Option<&str>,
    ) -> bool {
        let Some(shape) = EnumShape::of(self.root, schema) else {
            return false;
        };
        match value {
            Value::String(written) => {
                if shape.members.iter().any(|m| m == written) {
                    return true;
                }
                let mut same_ignoring_case = shape
                    .members
                    .iter()
                    .filter(|m| m.eq_ignore_ascii_case(written));
                match (same_ignoring_case.next(), same_ignoring_case.next()) {
                    (Some(member), None) => {
                        self.out.repairs.push(Repair::EnumCaseChanged {
                            path: path.to_owned(),
                            from: written.clone(),
                            to: member.clone(),
                        });
                        *written = member.clone();
                    }
                    _ => self.not_a_member(value, &shape, path, name),
                }
                true
            }
            // A number is no member even when it is a variant's index: enums are read by
            // name only.
            _ if shape.only_members => {
                self.not_a_member(value, &shape, path, name);
                true
            }
            _ => false,
        }
    }

    fn not_a_member(&mut self, value: &Value, shape: &EnumShape, path: &str, name: Option<&str>) {
        self.out.findings.push(Finding::NotAMember {
            path: path.to_owned(),
            found: quote_value(value),
            enum_name: shape.name.clone().or_else(|| name.map(str::to_owned)),
            members: shape.members.clone(),
        });
    }

    fn read_number_from_string(&mut self, value: &mut Value, schema: &Value, path: &str) {
        let Value::String(text) = value else {
            return;
        };
        let types = declared_types(schema);
        if types.contains(&"string") {
            return;
        }
        let wants_integer = types.contains(&"integer");
        let wants_number = types.contains(&"number");
        if !(wants_integer || wants_number) {
            return;
        }
        if let Some(number) = number_from_text(text, !wants_number) {
            *value = Value::Number(number);
            self.out.repairs.push(Repair::NumberFromString {
                path: path.to_owned(),
            });
        }
    }

    fn visit_object(
        &mut self,
        object: &mut Map<String, Value>,
        schema: &'s Value,
        path: &str,
        name: Option<&str>,
        depth: usize,
    ) {
        let properties = schema.get("properties").and_then(Value::as_object);
        if let Some(properties) = properties {
            self.match_key_case(object, properties, path);
            for field in required_fields(schema) {
                if !object.contains_key(field) {
                    self.out.findings.push(Finding::MissingField {
                        path: path.to_owned(),
                        owner: name.map(str::to_owned),
                        field: field.to_owned(),
                    });
                }
            }
        }
        let others = schema.get("additionalProperties").filter(|s| s.is_object());
        for (key, child) in object.iter_mut() {
            let child_schema = properties.and_then(|p| p.get(key)).or(others);
            if let Some(child_schema) = child_schema {
                let child_path = pointer_child(path, key);
                self.visit(child, child_schema, &child_path, None, depth + 1);
            }
        }
    }

    /// Renames keys that match exactly one declared property when case is ignored.
    fn match_key_case(
        &mut self,
        object: &mut Map<String, Value>,
        properties: &Map<String, Value>,
        path: &str,
    ) {
        let unknown: Vec<String> = object
            .keys()
            .filter(|key| !properties.contains_key(*key))
            .cloned()
            .collect();
        for written in unknown {
            let mut candidates = properties
                .keys()
                .filter(|declared| declared.eq_ignore_ascii_case(&written));
            let (Some(declared), None) = (candidates.next(), candidates.next()) else {
                continue;
            };
            // Two spellings of one property: keep the exact one, do not overwrite it.
            if object.contains_key(declared) {
                continue;
            }
            if let Some(child) = object.remove(&written) {
                object.insert(declared.clone(), child);
                self.out.repairs.push(Repair::KeyCaseChanged {
                    path: path.to_owned(),
                    from: written,
                    to: declared.clone(),
                });
            }
        }
    }

    fn visit_array(&mut self, items: &mut [Value], schema: &'s Value, path: &str, depth: usize) {
        let positional = schema.get("prefixItems").and_then(Value::as_array);
        let rest = schema.get("items").filter(|s| s.is_object());
        for (index, item) in items.iter_mut().enumerate() {
            let item_schema = positional.and_then(|p| p.get(index)).or(rest);
            if let Some(item_schema) = item_schema {
                let item_path = pointer_child(path, &index.to_string());
                self.visit(item, item_schema, &item_path, None, depth + 1);
            }
        }
    }
}

/// The members of an enum schema, when the schema is one and does not also accept free
/// text.
struct EnumShape {
    members: Vec<String>,
    /// Whether only members are allowed (no data-carrying variants beside them).
    only_members: bool,
    /// The enum's name, when a `$ref` to its definition names it.
    name: Option<String>,
}

impl EnumShape {
    fn of(root: &Value, schema: &Value) -> Option<Self> {
        let members = enum_members(root, schema);
        if members.is_empty() {
            return None;
        }
        let mut leaves = Vec::new();
        collect_leaves(root, schema, None, &mut leaves, &mut HashSet::new(), 0);
        let is_member_leaf =
            |leaf: &Value| leaf.get("enum").is_some() || leaf.get("const").is_some();
        let free_text = leaves
            .iter()
            .any(|(leaf, _)| !is_member_leaf(leaf) && declared_types(leaf).contains(&"string"));
        if free_text {
            return None;
        }
        let only_members = leaves
            .iter()
            .all(|(leaf, _)| is_member_leaf(leaf) || is_null_schema(leaf));
        let name = leaves
            .iter()
            .find(|(leaf, _)| is_member_leaf(leaf))
            .and_then(|(_, name)| name.map(str::to_owned));
        Some(Self {
            members,
            only_members,
            name,
        })
    }
}

/// The schemas a union stands for, unions flattened and references followed, each with
/// the name of the definition it was reached through.
fn collect_leaves<'a>(
    root: &'a Value,
    schema: &'a Value,
    name: Option<&'a str>,
    leaves: &mut Vec<(&'a Value, Option<&'a str>)>,
    seen: &mut HashSet<*const Value>,
    depth: usize,
) {
    let (schema, defined_name) = resolve(root, schema);
    if depth > MAX_SCHEMA_HOPS || !seen.insert(schema) {
        return;
    }
    let name = defined_name.or(name);
    let branches = union_branches(schema);
    if branches.is_empty() {
        leaves.push((schema, name));
    }
    for branch in branches {
        collect_leaves(root, branch, name, leaves, seen, depth + 1);
    }
}

/// The union branch a value most likely meant: the only non-null one, or for an object
/// the branch declaring most of its keys, or else the first that accepts its JSON type.
fn pick_branch<'a>(root: &'a Value, value: &Value, branches: &'a [Value]) -> Option<&'a Value> {
    let candidates: Vec<&Value> = branches
        .iter()
        .filter(|branch| !is_null_schema(resolve(root, branch).0))
        .collect();
    if let [only] = candidates.as_slice() {
        return Some(only);
    }
    if let Value::Object(object) = value {
        let mut best: Option<(&Value, usize)> = None;
        for branch in &candidates {
            let score = shared_keys(object, resolve(root, branch).0);
            if score > 0 && best.is_none_or(|(_, top)| score > top) {
                best = Some((branch, score));
            }
        }
        return best.map(|(branch, _)| branch);
    }
    let kind = json_kind(value);
    candidates.into_iter().find(|branch| {
        let types = declared_types(resolve(root, branch).0);
        types.contains(&kind) || (kind == "number" && types.contains(&"integer"))
    })
}

/// How many of an object's keys a schema declares (ignoring case), counting twice a
/// key whose value equals the schema's `const` for it (a tag).
fn shared_keys(object: &Map<String, Value>, schema: &Value) -> usize {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return 0;
    };
    object
        .iter()
        .map(|(key, value)| {
            let declared = properties
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(key));
            match declared {
                Some((_, property)) if is_tag_match(property.get("const"), value) => 2,
                Some(_) => 1,
                None => 0,
            }
        })
        .sum()
}

/// Whether a value is a branch's tag (`const`), ignoring case like the repair does.
fn is_tag_match(tag: Option<&Value>, value: &Value) -> bool {
    match (tag, value) {
        (Some(Value::String(tag)), Value::String(written)) => tag.eq_ignore_ascii_case(written),
        (Some(tag), value) => tag == value,
        (None, _) => false,
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn required_fields(schema: &Value) -> impl Iterator<Item = &str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Reads a number written as a string (`"42"`, `" 3.5 "`); only an integer when
/// `integer_only`.
fn number_from_text(text: &str, integer_only: bool) -> Option<Number> {
    let text = text.trim();
    if let Ok(n) = text.parse::<i64>() {
        return Some(n.into());
    }
    if let Ok(n) = text.parse::<u64>() {
        return Some(n.into());
    }
    if integer_only {
        return None;
    }
    text.parse::<f64>().ok().and_then(Number::from_f64)
}

/// `path` extended by one JSON-pointer segment, escaped per RFC 6901.
fn pointer_child(path: &str, segment: &str) -> String {
    format!("{path}/{}", segment.replace('~', "~0").replace('/', "~1"))
}

/// A value as JSON, shortened for a message.
pub(crate) fn quote_value(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= MAX_QUOTED_CHARS {
        return text;
    }
    let cut: String = text.chars().take(MAX_QUOTED_CHARS).collect();
    format!("{cut}...")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn repair(value: &mut Value, full: &Value) -> SchemaRepair {
        let inner = super::super::schema_nav::inner_schema(full);
        repair_against_schema(value, full, inner, "/value", Some("Target"))
    }

    fn envelope(inner: Value, defs: Value) -> Value {
        json!({"type": "object", "properties": {"value": inner}, "required": ["value"],
               "$defs": defs})
    }

    fn invoice_schema() -> Value {
        envelope(
            json!({"$ref": "#/$defs/Invoice"}),
            json!({
                "Invoice": {"type": "object", "properties": {
                    "total_cents": {"type": "integer"},
                    "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
                    "due": {"type": ["string", "null"]}},
                    "required": ["total_cents", "lines"]},
                "Line": {"type": "object", "properties": {
                    "qty": {"type": "integer"}, "price": {"type": ["number", "null"]}},
                    "required": ["qty"]}
            }),
        )
    }

    #[test]
    fn key_case_is_matched_to_the_schema_and_recorded() {
        let mut value = json!({"Total_Cents": 5, "LINES": [{"QTY": 1}]});
        let out = repair(&mut value, &invoice_schema());
        assert_eq!(value, json!({"total_cents": 5, "lines": [{"qty": 1}]}));
        assert!(out.repairs.contains(&Repair::KeyCaseChanged {
            path: "/value".into(),
            from: "Total_Cents".into(),
            to: "total_cents".into()
        }));
        assert!(out.repairs.contains(&Repair::KeyCaseChanged {
            path: "/value/lines/0".into(),
            from: "QTY".into(),
            to: "qty".into()
        }));
        assert!(out.findings.is_empty());
    }

    #[test]
    fn an_exact_key_is_not_overwritten_by_another_spelling() {
        let mut value = json!({"qty": 1, "Qty": 2});
        let full = envelope(
            json!({"$ref": "#/$defs/Line"}),
            invoice_schema()["$defs"].clone(),
        );
        let out = repair(&mut value, &full);
        assert_eq!(value, json!({"qty": 1, "Qty": 2}));
        assert!(out.repairs.is_empty());
    }

    #[test]
    fn numbers_are_read_from_strings_where_a_number_is_wanted() {
        let mut value = json!({"total_cents": " 1250 ", "lines": [{"qty": "2", "price": "3.5"}],
                               "due": "7"});
        let out = repair(&mut value, &invoice_schema());
        assert_eq!(
            value,
            json!({"total_cents": 1250, "lines": [{"qty": 2, "price": 3.5}], "due": "7"})
        );
        assert_eq!(
            out.repairs,
            vec![
                Repair::NumberFromString {
                    path: "/value/total_cents".into()
                },
                Repair::NumberFromString {
                    path: "/value/lines/0/qty".into()
                },
                Repair::NumberFromString {
                    path: "/value/lines/0/price".into()
                },
            ]
        );
    }

    #[test]
    fn a_fraction_is_not_read_as_an_integer() {
        let mut value = json!({"total_cents": "12.5", "lines": []});
        let out = repair(&mut value, &invoice_schema());
        assert_eq!(value["total_cents"], json!("12.5"));
        assert!(out.repairs.is_empty());
    }

    #[test]
    fn missing_required_fields_are_found_with_their_owner() {
        let mut value = json!({"lines": [{"price": 1.0}]});
        let out = repair(&mut value, &invoice_schema());
        let messages: Vec<String> = out.findings.iter().map(Finding::message).collect();
        assert_eq!(
            messages,
            vec![
                "The required field \"total_cents\" is missing from Invoice; include it.",
                "The required field \"qty\" is missing from Line at value/lines/0; include it.",
            ]
        );
    }

    fn sentiment_schema() -> Value {
        envelope(
            json!({"$ref": "#/$defs/Sentiment"}),
            json!({"Sentiment": {"type": "string", "enum": ["Positive", "Neutral", "Negative"]}}),
        )
    }

    #[test]
    fn enum_member_case_is_repaired() {
        let mut value = json!("negative");
        let out = repair(&mut value, &sentiment_schema());
        assert_eq!(value, json!("Negative"));
        assert_eq!(
            out.repairs,
            vec![Repair::EnumCaseChanged {
                path: "/value".into(),
                from: "negative".into(),
                to: "Negative".into()
            }]
        );
    }

    #[test]
    fn a_combination_of_names_is_no_member() {
        let mut value = json!("Neutral, Negative");
        let out = repair(&mut value, &sentiment_schema());
        assert_eq!(
            out.findings[0].message(),
            "\"Neutral, Negative\" is not a member of Sentiment; answer with exactly one of: \
             Positive, Neutral, Negative."
        );
    }

    #[test]
    fn a_number_is_no_member() {
        let mut value = json!(1);
        let out = repair(&mut value, &sentiment_schema());
        assert!(
            out.findings[0]
                .message()
                .starts_with("1 is not a member of Sentiment;")
        );
    }

    #[test]
    fn enum_members_behind_nullable_union_of_consts() {
        let full = envelope(
            json!({"type": "object", "properties": {"mood": {"anyOf": [
                {"$ref": "#/$defs/Mood"}, {"type": "null"}]}}}),
            json!({"Mood": {"oneOf": [{"type": "string", "const": "Up"},
                                      {"type": "string", "const": "Down"}]}}),
        );
        let mut value = json!({"mood": "UP"});
        let out = repair(&mut value, &full);
        assert_eq!(value, json!({"mood": "Up"}));
        assert_eq!(out.repairs.len(), 1);
        let mut wrong = json!({"mood": "Sideways"});
        let out = repair(&mut wrong, &full);
        assert_eq!(
            out.findings[0].message(),
            "value/mood: \"Sideways\" is not a member of Mood; answer with exactly one of: Up, Down."
        );
    }

    #[test]
    fn union_branch_is_chosen_by_its_keys() {
        let full = envelope(
            json!({"oneOf": [
                {"type": "object", "properties": {"circle": {"type": "number"}}},
                {"type": "object", "properties": {"square": {"type": "number"}}}]}),
            json!({}),
        );
        let mut value = json!({"Square": "2"});
        let out = repair(&mut value, &full);
        assert_eq!(value, json!({"square": 2}));
        assert_eq!(out.repairs.len(), 2);
    }

    #[test]
    fn union_branch_is_chosen_by_its_tag_in_any_case() {
        let full = envelope(
            json!({"oneOf": [
                {"type": "object", "properties": {"kind": {"type": "string", "const": "Circle"},
                                                  "size": {"type": "number"}}},
                {"type": "object", "properties": {"kind": {"type": "string", "const": "Square"},
                                                  "size": {"type": "number"}}}]}),
            json!({}),
        );
        let mut value = json!({"kind": "square", "size": 1});
        let out = repair(&mut value, &full);
        assert_eq!(value, json!({"kind": "Square", "size": 1}));
        assert!(out.findings.is_empty());
    }

    #[test]
    fn map_values_are_repaired_through_additional_properties() {
        let full = envelope(
            json!({"type": "object", "additionalProperties": {"type": "integer"}}),
            json!({}),
        );
        let mut value = json!({"a/b": "1"});
        let out = repair(&mut value, &full);
        assert_eq!(value, json!({"a/b": 1}));
        assert_eq!(
            out.repairs,
            vec![Repair::NumberFromString {
                path: "/value/a~1b".into()
            }]
        );
    }

    #[test]
    fn cyclic_references_do_not_hang() {
        let full = envelope(
            json!({"$ref": "#/$defs/A"}),
            json!({"A": {"$ref": "#/$defs/A"}}),
        );
        let mut value = json!({"x": 1});
        assert_eq!(repair(&mut value, &full), SchemaRepair::default());
    }

    #[test]
    fn schemas_naming_their_own_type_twice_stay_cheap() {
        // Each visit of E visits E twice more: 2^128 visits without the budget.
        let full = envelope(
            json!({"$ref": "#/$defs/E"}),
            json!({"E": {"allOf": [{"$ref": "#/$defs/E"}, {"$ref": "#/$defs/E"}]}}),
        );
        let mut value = json!("12");
        let started = std::time::Instant::now();
        repair(&mut value, &full);
        let elapsed = started.elapsed();
        assert!(elapsed < std::time::Duration::from_secs(5), "{elapsed:?}");
    }

    #[test]
    fn long_values_are_shortened_in_messages() {
        let quoted = quote_value(&json!("x".repeat(500)));
        assert_eq!(quoted.chars().count(), MAX_QUOTED_CHARS + 3);
    }
}
