//! Schema-guided repair of a parsed reply before it is deserialized: property names
//! matched ignoring case, numbers read from strings, enum members matched ignoring case.
//! The same walk notes what no repair can fix (a missing required field, a value that
//! is no enum member), so that a failed deserialization can name the path and the type.

use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

use super::schema_memo::{
    Branch, EnumShape, NodeFacts, NumberFromString, PropertyTable, SchemaMemo,
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
        memo: SchemaMemo::new(root),
        path: path.to_owned(),
        out: SchemaRepair::default(),
        visits_left: MAX_VISITS,
    };
    walk.visit(value, schema, name, 0);
    walk.out
}

/// One walk over a reply: what it learned about the schema, where it is, what it did.
struct Walk<'s> {
    memo: SchemaMemo<'s>,
    /// The JSON pointer of the value being visited: each step down pushes a segment and
    /// takes it off again on the way back, so a path is only copied when a repair or a
    /// finding records it.
    path: String,
    out: SchemaRepair,
    visits_left: usize,
}

impl<'s> Walk<'s> {
    fn visit(&mut self, value: &mut Value, schema: &'s Value, name: Option<&str>, depth: usize) {
        // Null is checked by the verifier's null step and by serde, not repaired.
        if depth > MAX_VALUE_DEPTH || value.is_null() || self.visits_left == 0 {
            return;
        }
        self.visits_left -= 1;
        let node = self.memo.facts(schema);
        let name = node.defined_name.or(name);
        for part in node.all_of {
            self.visit(value, part, name, depth + 1);
        }
        if let Some(shape) = &node.enum_shape
            && self.visit_enum(value, shape, name)
        {
            return;
        }
        if let Some(branch) = pick_branch(&node.branches, value) {
            self.visit(value, branch, name, depth + 1);
        }
        self.read_number_from_string(value, node.number_from_string);
        match value {
            Value::Object(object) => self.visit_object(object, &node, name, depth),
            Value::Array(items) => self.visit_array(items, &node, depth),
            _ => {}
        }
    }

    /// Checks a value against an enum's shape; returns whether the value was dealt with.
    fn visit_enum(&mut self, value: &mut Value, shape: &EnumShape, name: Option<&str>) -> bool {
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
                            path: self.path.clone(),
                            from: written.clone(),
                            to: (*member).to_owned(),
                        });
                        *written = (*member).to_owned();
                    }
                    _ => self.not_a_member(value, shape, name),
                }
                true
            }
            // A number is no member even when it is a variant's index: enums are read by
            // name only.
            _ if shape.only_members => {
                self.not_a_member(value, shape, name);
                true
            }
            _ => false,
        }
    }

    fn not_a_member(&mut self, value: &Value, shape: &EnumShape, name: Option<&str>) {
        self.out.findings.push(Finding::NotAMember {
            path: self.path.clone(),
            found: quote_value(value),
            enum_name: shape.name.or(name).map(str::to_owned),
            members: shape.members.iter().map(|m| (*m).to_owned()).collect(),
        });
    }

    fn read_number_from_string(&mut self, value: &mut Value, wanted: NumberFromString) {
        let Value::String(text) = value else {
            return;
        };
        let integer_only = match wanted {
            NumberFromString::Never => return,
            NumberFromString::Integer => true,
            NumberFromString::Number => false,
        };
        if let Some(number) = number_from_text(text, integer_only) {
            *value = Value::Number(number);
            self.out.repairs.push(Repair::NumberFromString {
                path: self.path.clone(),
            });
        }
    }

    fn visit_object(
        &mut self,
        object: &mut Map<String, Value>,
        node: &NodeFacts<'s>,
        name: Option<&str>,
        depth: usize,
    ) {
        if let Some(properties) = &node.properties {
            let mut scan = properties.scan(object);
            // Keys are only renamed when some key is undeclared, which is rare.
            if scan.undeclared > 0 {
                self.match_key_case(object, properties);
                scan = properties.scan(object);
            }
            // The common case, nothing missing, is settled without a lookup per field.
            if !properties.holds_every_required(&scan) {
                self.report_missing_fields(object, &node.required, name);
            }
        }
        for (key, child) in object.iter_mut() {
            let child_schema = node
                .properties
                .as_ref()
                .and_then(|p| p.get(key))
                .or(node.additional);
            if let Some(child_schema) = child_schema {
                let parent = self.path.len();
                push_pointer_segment(&mut self.path, key);
                self.visit(child, child_schema, None, depth + 1);
                self.path.truncate(parent);
            }
        }
    }

    /// Records each `required` field the object lacks, in `required` order.
    fn report_missing_fields(
        &mut self,
        object: &Map<String, Value>,
        required: &[&str],
        name: Option<&str>,
    ) {
        for field in required {
            if !object.contains_key(*field) {
                self.out.findings.push(Finding::MissingField {
                    path: self.path.clone(),
                    owner: name.map(str::to_owned),
                    field: (*field).to_owned(),
                });
            }
        }
    }

    /// Renames keys that match exactly one declared property when case is ignored.
    fn match_key_case(&mut self, object: &mut Map<String, Value>, properties: &PropertyTable) {
        let unknown: Vec<String> = object
            .keys()
            .filter(|key| properties.get(key).is_none())
            .cloned()
            .collect();
        for written in unknown {
            let mut candidates = properties
                .declared
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
                    path: self.path.clone(),
                    from: written,
                    to: declared.clone(),
                });
            }
        }
    }

    fn visit_array(&mut self, items: &mut [Value], node: &NodeFacts<'s>, depth: usize) {
        for (index, item) in items.iter_mut().enumerate() {
            let item_schema = node.prefix_items.and_then(|p| p.get(index)).or(node.items);
            if let Some(item_schema) = item_schema {
                let parent = self.path.len();
                // An index needs no escaping, and writing to a `String` cannot fail.
                let _ = write!(self.path, "/{index}");
                self.visit(item, item_schema, None, depth + 1);
                self.path.truncate(parent);
            }
        }
    }
}

/// The union branch a value most likely meant: the only non-null one, or for an object
/// the branch declaring most of its keys, or else the first that accepts its JSON type.
fn pick_branch<'s>(candidates: &[Branch<'s>], value: &Value) -> Option<&'s Value> {
    if let [only] = candidates {
        return Some(only.schema);
    }
    if let Value::Object(object) = value {
        let mut best: Option<(&Value, usize)> = None;
        for branch in candidates {
            let score = branch
                .properties
                .map_or(0, |properties| shared_keys(object, properties));
            if score > 0 && best.is_none_or(|(_, top)| score > top) {
                best = Some((branch.schema, score));
            }
        }
        return best.map(|(branch, _)| branch);
    }
    let kind = json_kind(value);
    candidates
        .iter()
        .find(|branch| {
            branch.types.contains(&kind) || (kind == "number" && branch.types.contains(&"integer"))
        })
        .map(|branch| branch.schema)
}

/// How many of an object's keys a schema declares (ignoring case), counting twice a
/// key whose value equals the schema's `const` for it (a tag).
fn shared_keys(object: &Map<String, Value>, properties: &Map<String, Value>) -> usize {
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

/// Appends one JSON-pointer segment to `path`, escaped per RFC 6901.
fn push_pointer_segment(path: &mut String, segment: &str) {
    path.push('/');
    if !segment.contains(['~', '/']) {
        path.push_str(segment);
        return;
    }
    for c in segment.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            _ => path.push(c),
        }
    }
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

    fn order_schema() -> Value {
        envelope(
            json!({"$ref": "#/$defs/Order"}),
            json!({
                "Order": {"type": "object", "properties": {
                    "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
                    "required": ["items"]},
                "Item": {"type": "object", "properties": {
                    "sku": {"type": "string"},
                    "qty": {"type": "integer"},
                    "size": {"$ref": "#/$defs/Size"}},
                    "required": ["sku", "qty"]},
                "Size": {"type": "string", "enum": ["Small", "Large"]}
            }),
        )
    }

    #[test]
    fn repairs_in_many_items_sharing_one_schema_name_each_item() {
        let mut value = json!({"items": [
            {"sku": "a", "qty": 1, "size": "Small"},
            {"SKU": "b", "qty": "2"},
            {"sku": "c", "qty": 3, "size": "large"},
            {"qty": 4, "size": "Medium"},
            {"sku": "e", "Qty": "5", "size": "SMALL"},
            {"sku": "f", "qty": 6},
        ]});
        let out = repair(&mut value, &order_schema());
        assert_eq!(
            value,
            json!({"items": [
                {"sku": "a", "qty": 1, "size": "Small"},
                {"sku": "b", "qty": 2},
                {"sku": "c", "qty": 3, "size": "Large"},
                {"qty": 4, "size": "Medium"},
                {"sku": "e", "qty": 5, "size": "Small"},
                {"sku": "f", "qty": 6},
            ]})
        );
        let key = |path: &str, from: &str, to: &str| Repair::KeyCaseChanged {
            path: path.into(),
            from: from.into(),
            to: to.into(),
        };
        let number = |path: &str| Repair::NumberFromString { path: path.into() };
        let member = |path: &str, from: &str, to: &str| Repair::EnumCaseChanged {
            path: path.into(),
            from: from.into(),
            to: to.into(),
        };
        assert_eq!(
            out.repairs,
            vec![
                key("/value/items/1", "SKU", "sku"),
                number("/value/items/1/qty"),
                member("/value/items/2/size", "large", "Large"),
                key("/value/items/4", "Qty", "qty"),
                // A renamed key moves to the end of its object, so it is visited last.
                member("/value/items/4/size", "SMALL", "Small"),
                number("/value/items/4/qty"),
            ]
        );
        assert_eq!(
            out.findings,
            vec![
                Finding::MissingField {
                    path: "/value/items/3".into(),
                    owner: Some("Item".into()),
                    field: "sku".into(),
                },
                Finding::NotAMember {
                    path: "/value/items/3/size".into(),
                    found: "\"Medium\"".into(),
                    enum_name: Some("Size".into()),
                    members: vec!["Small".into(), "Large".into()],
                },
            ]
        );
    }

    #[test]
    fn a_required_field_the_schema_does_not_declare_is_still_reported() {
        let full = envelope(
            json!({"type": "object", "properties": {"a": {"type": "integer"}},
                   "required": ["a", "b", "a"]}),
            json!({}),
        );
        let mut value = json!({"a": 1});
        let fields: Vec<String> = repair(&mut value, &full)
            .findings
            .iter()
            .map(Finding::message)
            .collect();
        assert_eq!(
            fields,
            vec!["The required field \"b\" is missing from Target; include it."]
        );
        let mut empty = json!({});
        assert_eq!(repair(&mut empty, &full).findings.len(), 3);
    }

    #[test]
    fn path_segments_are_escaped_and_taken_off_again() {
        let full = envelope(
            json!({"type": "object", "additionalProperties": {
                "type": "array", "items": {"type": "integer"}}}),
            json!({}),
        );
        let mut value = json!({"~a/b": ["1"], "c": ["x", "2"]});
        let out = repair(&mut value, &full);
        assert_eq!(
            out.repairs,
            vec![
                Repair::NumberFromString {
                    path: "/value/~0a~1b/0".into()
                },
                Repair::NumberFromString {
                    path: "/value/c/1".into()
                },
            ]
        );
    }

    #[test]
    fn long_values_are_shortened_in_messages() {
        let quoted = quote_value(&json!("x".repeat(500)));
        assert_eq!(quoted.chars().count(), MAX_QUOTED_CHARS + 3);
    }
}
