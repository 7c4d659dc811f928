//! A checker for the closed strict schemas of typed targets, compiled once per target and
//! run on a reply's [`Tape`] in the verifier's fast path.
//!
//! `jsonschema` validates a tape through one boxed validator per keyword and per schema
//! node; for a clean 2 KB reply that walk was about a third of what the fast path cost
//! beyond the hand-written client's work, most of it in calls through trait objects and
//! branches the processor could not predict (callgrind's cache and branch model). The
//! schemas the fast path sees are narrow (closed objects, strings, integers, enums of
//! strings, arrays, unions, references), so they are compiled here into plain rules and
//! checked in one recursive walk.
//!
//! The checker only ever says "certainly valid". A keyword it does not read makes the
//! whole schema fall back to `jsonschema` ([`TapeCheck::compile`] returns `None`), and a
//! case it does not decide exactly (an integer written as `1.0`, a bound compared across
//! an integer and a float beyond 2^53, a member outside the schema's properties) counts as
//! invalid, so the fast path declines and the verifier's ordinary steps decide. It also
//! refuses any object that repeats a member name: every object it accepts has had each of
//! its members matched to a distinct property.

use std::cmp::Ordering;
use std::collections::HashMap;

use jsonschema::json::{Array as _, Object as _};
use serde_json::{Number, Value};

use super::tape::{NodeView, Tape, TapeArray, TapeNode, TapeObject};

/// Nesting deeper than this is refused rather than walked (a reply that deep is left to
/// the ordinary steps).
const MAX_DEPTH: usize = 128;

/// An object schema may name at most this many properties (one bit each).
const MAX_PROPERTIES: usize = 64;

/// The JSON types, one bit each, for `type`.
mod kind {
    pub(super) const NULL: u8 = 1;
    pub(super) const BOOLEAN: u8 = 1 << 1;
    pub(super) const INTEGER: u8 = 1 << 2;
    /// `number` admits integers too.
    pub(super) const NUMBER: u8 = 1 << 3;
    pub(super) const STRING: u8 = 1 << 4;
    pub(super) const ARRAY: u8 = 1 << 5;
    pub(super) const OBJECT: u8 = 1 << 6;
    pub(super) const ALL: u8 = 0x7f;
}

/// A strict schema compiled into rules; rule 0 is the root.
#[derive(Debug)]
pub(crate) struct TapeCheck {
    rules: Vec<Rule>,
}

/// What one schema node demands. Every keyword applies at once, as in JSON Schema.
#[derive(Debug, Default)]
struct Rule {
    /// Allowed types; `None` is any type.
    types: Option<u8>,
    /// `false`: nothing is valid.
    never: bool,
    /// `enum` / `const` of strings: the value must be one of them.
    strings: Option<Vec<String>>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    minimum: Option<Number>,
    maximum: Option<Number>,
    exclusive_minimum: Option<Number>,
    exclusive_maximum: Option<Number>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    prefix_items: Vec<usize>,
    /// The rule of items after the prefix; `Some(None)` is `items: false`.
    items: Option<Option<usize>>,
    object: Option<ObjectRule>,
    any_of: Vec<usize>,
    one_of: Vec<usize>,
    all_of: Vec<usize>,
    reference: Option<usize>,
    /// The rule is only a reference (annotations aside): checking it is checking the
    /// target, so the walk goes there directly.
    alias: Option<usize>,
}

#[derive(Debug, Default)]
struct ObjectRule {
    /// Each property's name and rule; a member must be one of them.
    properties: Vec<(String, usize)>,
    /// Bits of `properties` that must be present.
    required: u64,
}

/// Compiles schemas, resolving `$ref`s against the root once each.
struct Compiler<'s> {
    root: &'s Value,
    rules: Vec<Rule>,
    by_reference: HashMap<&'s str, usize>,
}

impl TapeCheck {
    /// The checker for `schema`, or `None` when the schema uses a keyword it does not
    /// read (then `jsonschema` checks the tape).
    pub(crate) fn compile(schema: &Value) -> Option<TapeCheck> {
        let mut compiler = Compiler {
            root: schema,
            rules: Vec::new(),
            by_reference: HashMap::new(),
        };
        compiler.compile(schema, 0)?;
        Some(TapeCheck {
            rules: compiler.rules,
        })
    }

    /// Whether the tape's root certainly conforms, with no object naming a member twice.
    pub(crate) fn accepts(&self, tape: &Tape<'_>) -> bool {
        self.check(0, tape.root(), 0)
    }

    fn check(&self, rule: usize, node: TapeNode<'_>, depth: usize) -> bool {
        let Some(mut rule) = self.rules.get(rule) else {
            return false;
        };
        let mut hops = 0;
        while let Some(target) = rule.alias {
            // A reference cycle with nothing else in it describes no value.
            hops += 1;
            let Some(aliased) = self.rules.get(target).filter(|_| hops <= MAX_DEPTH) else {
                return false;
            };
            rule = aliased;
        }
        if rule.never || depth > MAX_DEPTH {
            return false;
        }
        let checked = match node.view() {
            NodeView::String(text) => check_string(rule, text),
            NodeView::Number(number) => check_number(rule, number),
            NodeView::Object(object) => self.check_object(rule, object, depth),
            NodeView::Array(array) => self.check_array(rule, array, depth),
            NodeView::Bool => allows(rule, kind::BOOLEAN) && rule.strings.is_none(),
            NodeView::Null => allows(rule, kind::NULL) && rule.strings.is_none(),
        };
        if !checked || !delegates(rule) {
            return checked;
        }
        rule.reference
            .is_none_or(|target| self.check(target, node, depth + 1))
            && rule
                .all_of
                .iter()
                .all(|&branch| self.check(branch, node, depth + 1))
            && (rule.any_of.is_empty()
                || rule
                    .any_of
                    .iter()
                    .any(|&branch| self.check(branch, node, depth + 1)))
            && (rule.one_of.is_empty()
                || rule
                    .one_of
                    .iter()
                    .filter(|&&branch| self.check(branch, node, depth + 1))
                    .count()
                    == 1)
    }

    fn check_object(&self, rule: &Rule, object: TapeObject<'_>, depth: usize) -> bool {
        if !allows(rule, kind::OBJECT) || rule.strings.is_some() {
            return false;
        }
        let Some(shape) = &rule.object else {
            // A rule that hands the object to others (a reference, a union) leaves its
            // members to them. A rule with no `properties` at all cannot match members to
            // distinct properties, so only the empty object is certain there.
            return delegates(rule) || object.len() == 0;
        };
        let mut seen = 0u64;
        for (position, (name, value)) in object.members().enumerate() {
            // Replies list the members in the schema's order, so the property at the
            // member's position is tried first.
            let index = match shape.properties.get(position) {
                Some((known, _)) if known == name => position,
                _ => match shape.properties.iter().position(|(known, _)| known == name) {
                    Some(index) => index,
                    None => return false,
                },
            };
            let Some((_, property)) = shape.properties.get(index) else {
                return false;
            };
            let bit = 1u64 << index;
            if seen & bit != 0 || !self.check(*property, value, depth + 1) {
                return false;
            }
            seen |= bit;
        }
        seen & shape.required == shape.required
    }

    fn check_array(&self, rule: &Rule, array: TapeArray<'_>, depth: usize) -> bool {
        if !allows(rule, kind::ARRAY) || rule.strings.is_some() {
            return false;
        }
        let len = array.len() as u64;
        if rule.min_items.is_some_and(|min| len < min)
            || rule.max_items.is_some_and(|max| len > max)
        {
            return false;
        }
        array.elements().enumerate().all(|(position, element)| {
            match rule.prefix_items.get(position) {
                Some(&prefix) => self.check(prefix, element, depth + 1),
                None => match rule.items {
                    None => delegates(rule) || element_is_certain(element),
                    Some(None) => false,
                    Some(Some(items)) => self.check(items, element, depth + 1),
                },
            }
        })
    }
}

/// An element no rule describes: certain only when it holds no object (whose names
/// would go unchecked for repeats).
fn element_is_certain(node: TapeNode<'_>) -> bool {
    !matches!(node.view(), NodeView::Object(_) | NodeView::Array(_))
}

/// Whether other rules (a reference, a union) also judge the node.
fn delegates(rule: &Rule) -> bool {
    rule.reference.is_some()
        || !rule.any_of.is_empty()
        || !rule.one_of.is_empty()
        || !rule.all_of.is_empty()
}

fn allows(rule: &Rule, kind: u8) -> bool {
    rule.types.is_none_or(|types| types & kind != 0)
}

fn check_string(rule: &Rule, text: &str) -> bool {
    if !allows(rule, kind::STRING) {
        return false;
    }
    if let Some(strings) = &rule.strings
        && !strings.iter().any(|allowed| allowed == text)
    {
        return false;
    }
    if rule.min_length.is_none() && rule.max_length.is_none() {
        return true;
    }
    // Lengths count characters, as `jsonschema` does.
    let length = text.chars().count() as u64;
    rule.min_length.is_none_or(|min| length >= min)
        && rule.max_length.is_none_or(|max| length <= max)
}

fn check_number(rule: &Rule, number: &Number) -> bool {
    if rule.strings.is_some() {
        return false;
    }
    let integer = number.is_i64() || number.is_u64();
    // A float is an integer to `jsonschema` when its fraction is zero; that case is left
    // to it.
    let allowed = if integer {
        allows(rule, kind::INTEGER | kind::NUMBER)
    } else {
        allows(rule, kind::NUMBER)
    };
    allowed
        && holds(&rule.minimum, number, |order| order != Ordering::Less)
        && holds(&rule.maximum, number, |order| order != Ordering::Greater)
        && holds(&rule.exclusive_minimum, number, |order| {
            order == Ordering::Greater
        })
        && holds(&rule.exclusive_maximum, number, |order| {
            order == Ordering::Less
        })
}

/// Whether `number` compared with `bound` satisfies `test`; no bound always holds, and a
/// comparison that is not exact never does.
fn holds(bound: &Option<Number>, number: &Number, test: impl Fn(Ordering) -> bool) -> bool {
    bound
        .as_ref()
        .is_none_or(|bound| compare(number, bound).is_some_and(test))
}

/// `number` compared with `bound`, when the comparison is exact.
fn compare(number: &Number, bound: &Number) -> Option<Ordering> {
    if let (Some(a), Some(b)) = (as_i128(number), as_i128(bound)) {
        return Some(a.cmp(&b));
    }
    // Integers up to 2^53 are exact as floats.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    let exact_float = |n: &Number| {
        n.as_f64()
            .filter(|f| n.is_f64() || f.abs() <= EXACT)
            .filter(|f| f.is_finite())
    };
    exact_float(number)?.partial_cmp(&exact_float(bound)?)
}

fn as_i128(number: &Number) -> Option<i128> {
    number
        .as_i64()
        .map(i128::from)
        .or_else(|| number.as_u64().map(i128::from))
}

impl<'s> Compiler<'s> {
    /// Compiles `schema` into a new rule and returns its index.
    fn compile(&mut self, schema: &'s Value, depth: usize) -> Option<usize> {
        if depth > MAX_DEPTH {
            return None;
        }
        let index = self.rules.len();
        self.rules.push(Rule::default());
        let rule = match schema {
            Value::Bool(true) => Rule::default(),
            Value::Bool(false) => Rule {
                never: true,
                ..Rule::default()
            },
            Value::Object(map) => self.compile_object(map, depth)?,
            _ => return None,
        };
        *self.rules.get_mut(index)? = rule;
        Some(index)
    }

    fn compile_object(
        &mut self,
        map: &'s serde_json::Map<String, Value>,
        depth: usize,
    ) -> Option<Rule> {
        let mut rule = Rule::default();
        for (keyword, value) in map {
            match keyword.as_str() {
                "type" => rule.types = Some(types(value)?),
                "enum" => rule.strings = Some(strings(value.as_array()?)?),
                "const" => rule.strings = Some(vec![value.as_str()?.to_owned()]),
                "minLength" => rule.min_length = Some(value.as_u64()?),
                "maxLength" => rule.max_length = Some(value.as_u64()?),
                "minimum" => rule.minimum = Some(number(value)?),
                "maximum" => rule.maximum = Some(number(value)?),
                "exclusiveMinimum" => rule.exclusive_minimum = Some(number(value)?),
                "exclusiveMaximum" => rule.exclusive_maximum = Some(number(value)?),
                "minItems" => rule.min_items = Some(value.as_u64()?),
                "maxItems" => rule.max_items = Some(value.as_u64()?),
                "prefixItems" => {
                    rule.prefix_items = self.compile_all(value, depth)?;
                }
                "items" => {
                    rule.items = Some(match value {
                        Value::Bool(false) => None,
                        other => Some(self.compile(other, depth + 1)?),
                    });
                }
                "properties" => {
                    let properties = value.as_object()?;
                    if properties.len() > MAX_PROPERTIES {
                        return None;
                    }
                    let mut shape = rule.object.take().unwrap_or_default();
                    for (name, property) in properties {
                        let compiled = self.compile(property, depth + 1)?;
                        shape.properties.push((name.clone(), compiled));
                    }
                    rule.object = Some(shape);
                }
                // Members outside `properties` are refused whatever this says (see
                // `check_object`), which `false` demands and anything else allows more.
                "additionalProperties" if value == &Value::Bool(false) => {}
                "required" | "anyOf" | "oneOf" | "allOf" | "$ref" => {}
                keyword if ANNOTATIONS.contains(&keyword) => {}
                // A format only concerns strings (checked below).
                "format" => {}
                _ => return None,
            }
        }
        if map.contains_key("format") && allows(&rule, kind::STRING) {
            return None;
        }
        if let Some(required) = map.get("required") {
            let shape = rule.object.get_or_insert_with(ObjectRule::default);
            for name in required.as_array()? {
                let position = shape
                    .properties
                    .iter()
                    .position(|(known, _)| Some(known.as_str()) == name.as_str())?;
                shape.required |= 1u64 << position;
            }
        }
        match string_choices(map).filter(|_| rule.strings.is_none()) {
            Some(strings) => rule.strings = Some(strings),
            None => {
                if let Some(branches) = map.get("anyOf") {
                    rule.any_of = self.compile_all(branches, depth)?;
                }
                if let Some(branches) = map.get("oneOf") {
                    rule.one_of = self.compile_all(branches, depth)?;
                }
            }
        }
        if let Some(branches) = map.get("allOf") {
            rule.all_of = self.compile_all(branches, depth)?;
        }
        if let Some(reference) = map.get("$ref") {
            rule.reference = Some(self.resolve(reference.as_str()?, depth)?);
        }
        let only_annotations = map
            .keys()
            .all(|keyword| keyword == "$ref" || ANNOTATIONS.contains(&keyword.as_str()));
        if only_annotations {
            rule.alias = rule.reference;
        }
        Some(rule)
    }

    fn compile_all(&mut self, schemas: &'s Value, depth: usize) -> Option<Vec<usize>> {
        schemas
            .as_array()?
            .iter()
            .map(|schema| self.compile(schema, depth + 1))
            .collect()
    }

    /// The rule of a local reference (`#` or `#/...`), compiled once.
    fn resolve(&mut self, reference: &'s str, depth: usize) -> Option<usize> {
        if let Some(&known) = self.by_reference.get(reference) {
            return Some(known);
        }
        let pointer = reference.strip_prefix('#')?;
        let target = self.root.pointer(pointer)?;
        // Recorded before compiling, so that a reference cycle ends at this rule.
        let index = self.rules.len();
        self.by_reference.insert(reference, index);
        let compiled = self.compile(target, depth + 1)?;
        (compiled == index).then_some(index)
    }
}

/// Keywords that do not constrain a value; `$defs` are compiled when a `$ref` names them.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$schema",
    "$defs",
    "definitions",
];

/// The strings of a union whose every branch is one string constant (how `schemars`
/// writes a unit enum with documented variants), when they are distinct: then the union
/// holds exactly when the value is one of them, and one list lookup replaces a check per
/// branch.
fn string_choices(map: &serde_json::Map<String, Value>) -> Option<Vec<String>> {
    let branches = match (map.get("oneOf"), map.get("anyOf")) {
        (Some(branches), None) | (None, Some(branches)) => branches.as_array()?,
        _ => return None,
    };
    let mut strings = Vec::with_capacity(branches.len());
    for branch in branches {
        let branch = branch.as_object()?;
        let constant = branch.get("const")?.as_str()?;
        let plain = branch
            .iter()
            .all(|(keyword, value)| match keyword.as_str() {
                "const" => true,
                "type" => value == "string",
                other => ANNOTATIONS.contains(&other),
            });
        if !plain || strings.iter().any(|known| known == constant) {
            return None;
        }
        strings.push(constant.to_owned());
    }
    Some(strings)
}

fn types(value: &Value) -> Option<u8> {
    let one = |name: &str| {
        Some(match name {
            "null" => kind::NULL,
            "boolean" => kind::BOOLEAN,
            "integer" => kind::INTEGER,
            "number" => kind::NUMBER | kind::INTEGER,
            "string" => kind::STRING,
            "array" => kind::ARRAY,
            "object" => kind::OBJECT,
            _ => return None,
        })
    };
    match value {
        Value::String(name) => one(name),
        Value::Array(names) => names
            .iter()
            .try_fold(0u8, |all, name| Some(all | one(name.as_str()?)?)),
        _ => None,
    }
    .filter(|&types| types & kind::ALL != 0)
}

fn strings(values: &[Value]) -> Option<Vec<String>> {
    values
        .iter()
        .map(|value| value.as_str().map(str::to_owned))
        .collect()
}

fn number(value: &Value) -> Option<Number> {
    match value {
        Value::Number(number) => Some(number.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use proptest::collection::{btree_map, vec};
    use proptest::prelude::*;
    use schemars::JsonSchema;
    use serde::Serialize;
    use serde_json::json;

    use super::*;
    use crate::schema::strict::close_objects;
    use crate::verify::test_support::target_for;

    #[derive(Serialize, JsonSchema, Debug, Clone)]
    pub(super) enum Terms {
        /// On receipt.
        OnReceipt,
        /// Thirty days.
        Net30,
    }

    #[derive(Serialize, JsonSchema, Debug, Clone)]
    pub(super) struct Line {
        description: String,
        quantity: u32,
        unit_cents: i64,
        tax_code: Option<String>,
        weight: f64,
    }

    #[derive(Serialize, JsonSchema, Debug, Clone)]
    pub(super) struct Invoice {
        number: String,
        terms: Terms,
        lines: Vec<Line>,
        #[schemars(range(min = 0))]
        total_cents: i64,
        #[schemars(length(max = 12))]
        due: Option<String>,
        paid: bool,
        pair: (u8, String),
    }

    /// The closed full envelope of `T`, as the fast path checks it.
    fn closed<T: JsonSchema>() -> Value {
        let mut full = Value::clone(&target_for::<T>("T").full);
        close_objects(&mut full);
        full
    }

    fn line() -> impl Strategy<Value = Line> {
        (
            "[a-z é\"\\\\]{0,12}",
            any::<u32>(),
            any::<i64>(),
            proptest::option::of("[A-Z0-9]{0,6}"),
            -1e6f64..1e6,
        )
            .prop_map(
                |(description, quantity, unit_cents, tax_code, weight)| Line {
                    description,
                    quantity,
                    unit_cents,
                    tax_code,
                    weight,
                },
            )
    }

    fn invoice() -> impl Strategy<Value = Invoice> {
        (
            "[A-Z0-9-]{0,14}",
            any::<bool>(),
            vec(line(), 0..5),
            0i64..i64::MAX,
            proptest::option::of("[0-9-]{0,12}"),
            any::<bool>(),
            (any::<u8>(), "[a-z]{0,3}"),
        )
            .prop_map(
                |(number, net, lines, total_cents, due, paid, pair)| Invoice {
                    number,
                    terms: if net { Terms::Net30 } else { Terms::OnReceipt },
                    lines,
                    total_cents,
                    due,
                    paid,
                    pair,
                },
            )
    }

    fn accepts(check: &TapeCheck, text: &str) -> bool {
        check.accepts(&Tape::parse(text).expect("test texts are JSON"))
    }

    /// What `jsonschema` says of the tape, repeated names refused as the fast path does.
    fn reference(schema: &Value, text: &str) -> bool {
        let tape = Tape::parse(text).expect("test texts are JSON");
        let validator = jsonschema::options_for::<super::super::tape::TapeJson>()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(schema)
            .expect("test schemas compile");
        !tape.has_duplicate_keys() && validator.is_valid(tape.root())
    }

    #[test]
    fn a_typed_targets_closed_schema_is_compiled() {
        assert!(TapeCheck::compile(&closed::<Invoice>()).is_some());
    }

    #[test]
    fn each_departure_from_the_schema_is_refused() {
        let check = TapeCheck::compile(&closed::<Invoice>()).unwrap();
        let valid = json!({"value": {
            "number": "INV-1", "terms": "Net30", "total_cents": 5, "due": null, "paid": false,
            "pair": [1, "a"],
            "lines": [{"description": "x", "quantity": 1, "unit_cents": -2, "tax_code": null, "weight": 0.5}]
        }});
        let text = valid.to_string();
        assert!(accepts(&check, &text));
        let variants = [
            (
                "an extra member",
                text.replace(r#""paid":false"#, r#""paid":false,"extra":1"#),
            ),
            ("a missing member", text.replace(r#","paid":false"#, "")),
            (
                "a repeated member",
                text.replace(r#""paid":false"#, r#""paid":false,"paid":true"#),
            ),
            (
                "a bound",
                text.replace(r#""total_cents":5"#, r#""total_cents":-1"#),
            ),
            (
                "a length",
                text.replace(r#""due":null"#, r#""due":"2026-12-30T00:00""#),
            ),
            ("an unknown variant", text.replace("Net30", "Net90")),
            (
                "a type",
                text.replace(r#""quantity":1"#, r#""quantity":"1""#),
            ),
            (
                "a negative unsigned",
                text.replace(r#""quantity":1"#, r#""quantity":-1"#),
            ),
            (
                "a tuple too long",
                text.replace(r#"[1,"a"]"#, r#"[1,"a",2]"#),
            ),
            (
                "an integer written as a float",
                text.replace(r#""total_cents":5"#, r#""total_cents":5.0"#),
            ),
            (
                "null for a required line",
                text.replace(r#""lines":[{"#, r#""lines":[null,{"#),
            ),
        ];
        for (what, text) in variants {
            assert!(!accepts(&check, &text), "{what} is refused: {text}");
        }
    }

    #[test]
    fn keywords_it_does_not_read_leave_the_schema_to_jsonschema() {
        for schema in [
            json!({"type": "string", "pattern": "^a"}),
            json!({"type": "array", "uniqueItems": true}),
            json!({"type": "string", "format": "date-time"}),
            json!({"type": "object", "additionalProperties": {"type": "integer"}}),
            json!({"enum": ["a", null]}),
            json!({"multipleOf": 2}),
            json!({"$ref": "https://example.com/schema"}),
        ] {
            assert!(TapeCheck::compile(&schema).is_none(), "{schema}");
        }
        // A format on a non-string is an annotation (`jsonschema` checks formats of strings only).
        assert!(TapeCheck::compile(&json!({"type": "integer", "format": "int64"})).is_some());
    }

    /// Hand-written schemas with every keyword the checker reads.
    fn schemas() -> Vec<Value> {
        vec![
            closed::<Invoice>(),
            json!({"type": "object", "properties": {
                "a": {"anyOf": [{"type": "integer", "exclusiveMinimum": 0, "maximum": 9}, {"type": "null"}]},
                "b": {"oneOf": [{"const": "x"}, {"type": "string", "minLength": 1, "maxLength": 2}]},
                "c": {"type": "array", "prefixItems": [{"type": "number", "minimum": 0.5}], "items": false, "minItems": 1},
                "k": {"allOf": [{"$ref": "#/$defs/k"}, {"type": ["object", "array"]}]},
                "z": true,
                "cc": false
            }, "required": ["a", "k"], "additionalProperties": false,
            "$defs": {"k": {"type": ["object", "array"], "properties": {"a": {"type": "boolean"}},
                            "items": {"$ref": "#/$defs/k"}, "maxItems": 2}}}),
            json!({"type": "array", "items": {"enum": ["a", "b"]}}),
            json!({"type": "number", "minimum": 1e19, "maximum": 9007199254740993u64}),
            json!({"type": "array"}),
            json!({"type": "object"}),
        ]
    }

    /// JSON whose names come from a small set, so that the schemas' properties are hit.
    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-3i64..12).prop_map(|n| json!(n)),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            prop_oneof![
                Just(1.0),
                Just(0.5),
                Just(-0.5),
                Just(10.5),
                Just(1e19),
                Just(1e20)
            ]
            .prop_map(|n: f64| json!(n)),
            "[a-cx é]{0,3}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..4).prop_map(Value::Array),
                btree_map("value|a|b|c|k|cc|z|paid", inner, 0..4)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    /// Writes `value` as JSON; the object numbered `repeat` (in document order, when it
    /// has a member) writes its first member twice.
    fn write_repeating(value: &Value, repeat: &mut Option<usize>, out: &mut String) {
        match value {
            Value::Object(members) => {
                let here = match repeat {
                    Some(0) if !members.is_empty() => {
                        *repeat = None;
                        true
                    }
                    Some(0) => false,
                    Some(count) => {
                        *count -= 1;
                        false
                    }
                    None => false,
                };
                out.push('{');
                let mut first = true;
                for (position, (name, member)) in members.iter().enumerate() {
                    let times = if here && position == 0 { 2 } else { 1 };
                    for _ in 0..times {
                        if !first {
                            out.push(',');
                        }
                        first = false;
                        out.push_str(&Value::String(name.clone()).to_string());
                        out.push(':');
                        write_repeating(member, repeat, out);
                    }
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (position, item) in items.iter().enumerate() {
                    if position > 0 {
                        out.push(',');
                    }
                    write_repeating(item, repeat, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Soundness: the checker never accepts what `jsonschema` refuses, nor a repeated
        /// member name.
        #[test]
        fn what_it_accepts_jsonschema_accepts(
            inner in json_value(),
            repeat in proptest::option::of(0usize..6),
        ) {
            let enveloped = json!({"value": inner});
            for value in [&enveloped, &inner] {
                // With `repeat`, one object (counted in document order) names its first
                // member twice.
                let mut text = String::new();
                write_repeating(value, &mut repeat.clone(), &mut text);
                for schema in schemas() {
                    let check = TapeCheck::compile(&schema).expect("the test schemas compile");
                    if accepts(&check, &text) {
                        prop_assert!(reference(&schema, &text), "{} against {}", text, schema);
                    }
                }
            }
        }

        /// Completeness on the common shape: a typed target's own values are all accepted,
        /// so clean replies keep the fast path.
        #[test]
        fn every_value_of_a_typed_target_is_accepted(value in invoice()) {
            let check = TapeCheck::compile(&closed::<Invoice>()).unwrap();
            let text = json!({"value": value}).to_string();
            prop_assert!(accepts(&check, &text), "{}", text);
            prop_assert!(reference(&closed::<Invoice>(), &text));
        }
    }

    #[test]
    fn a_union_of_string_constants_is_one_list() {
        let schema = json!({"oneOf": [
            {"type": "string", "const": "a", "description": "A."},
            {"const": "b"}
        ]});
        let check = TapeCheck::compile(&schema).unwrap();
        assert_eq!(
            check.rules.first().and_then(|rule| rule.strings.clone()),
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
        assert!(accepts(&check, r#""b""#));
        assert!(!accepts(&check, r#""c""#));
        assert!(!accepts(&check, "1"));
        // Repeated constants would make `oneOf` fail on them: left to the branches.
        let repeated = json!({"oneOf": [{"const": "a"}, {"const": "a"}]});
        let check = TapeCheck::compile(&repeated).unwrap();
        assert!(
            check
                .rules
                .first()
                .is_some_and(|rule| rule.strings.is_none())
        );
        assert!(!accepts(&check, r#""a""#));
        assert!(!reference(&repeated, r#""a""#));
    }

    #[test]
    fn a_reference_cycle_accepts_nothing_and_ends() {
        let schema = json!({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}});
        let check = TapeCheck::compile(&schema).unwrap();
        assert!(!accepts(&check, "1"));
    }

    #[test]
    fn a_schema_shared_by_reference_is_compiled_once() {
        let schema = json!({"type": "object", "properties": {
            "a": {"$ref": "#/$defs/x"}, "b": {"$ref": "#/$defs/x"}
        }, "$defs": {"x": {"type": "integer"}}});
        let check = TapeCheck::compile(&schema).unwrap();
        // The root, the two properties and `x` once.
        assert_eq!(check.rules.len(), 4);
    }
}
