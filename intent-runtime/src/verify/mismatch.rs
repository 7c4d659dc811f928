//! A reply's mismatches with its schema in the model's terms: where (the JSON path),
//! what the schema expects there (the type, the allowed values, the bounds) and what was
//! found, by its type and size only: the value itself may be the user's data and is
//! never quoted back.

use jsonschema::ValidationError;
use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use crate::parse::schema_nav::{self, MAX_SCHEMA_HOPS};
use crate::result::SchemaMismatch;
use crate::schema::bounds_text;

/// How deep the description of an expected value goes (`array of Line`, not the lines'
/// fields): the path already says where, the schema says the rest.
const MAX_EXPECTED_DEPTH: usize = 2;

/// The most allowed values listed for an enum before the rest is cut.
const MAX_LISTED_MEMBERS: usize = 12;

/// The message of one schema violation `error` of the envelope `{"value": ...}` checked
/// against `full`, or `None` for a union that failed (its branches say more) and for
/// keywords no reply of a derived schema meets.
pub(crate) fn message(error: &ValidationError<'_>, full: &Value) -> Option<Said> {
    let pointer = error.instance_path().as_str().to_owned();
    let path = display_path(&pointer);
    let here = schema_at(full, &pointer);
    let found = found(error.instance());
    let allowed = || {
        here.and_then(|node| node.as_object())
            .and_then(bounds_text)
            .map_or_else(String::new, |bounds| format!("; allowed: {bounds}"))
    };
    let message = match error.kind() {
        ValidationErrorKind::Type { .. } | ValidationErrorKind::Constant { .. } => format!(
            "{path}: expected {}, found {found}.",
            here.map_or_else(|| "another type".to_owned(), |node| expected(full, node, 0))
        ),
        ValidationErrorKind::Enum { options } => format!(
            "{path}: expected one of {}, found {found} that is none of them.",
            listed(options)
        ),
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            let child = schema_at(full, &[&pointer, "/", &escape(name)].concat());
            let of_type =
                child.map_or_else(String::new, |node| format!(": {}", expected(full, node, 0)));
            format!("{path}: the required field `{name}` is missing; add it{of_type}.")
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let listed: Vec<String> = unexpected.iter().map(|key| format!("`{key}`")).collect();
            format!(
                "{path}: {} {} no field here; delete it.",
                listed.join(", "),
                if listed.len() == 1 { "is" } else { "are" }
            )
        }
        ValidationErrorKind::Minimum { .. } | ValidationErrorKind::ExclusiveMinimum { .. } => {
            format!("{path}: the number is too small{}.", allowed())
        }
        ValidationErrorKind::Maximum { .. } | ValidationErrorKind::ExclusiveMaximum { .. } => {
            format!("{path}: the number is too large{}.", allowed())
        }
        ValidationErrorKind::MultipleOf { .. } => {
            format!(
                "{path}: the number is not a multiple of the step{}.",
                allowed()
            )
        }
        ValidationErrorKind::MinLength { .. } | ValidationErrorKind::MaxLength { .. } => format!(
            "{path}: the text has {} characters{}.",
            count(error.instance()),
            allowed()
        ),
        ValidationErrorKind::Pattern { .. } => {
            format!("{path}: the text does not match{}.", allowed())
        }
        ValidationErrorKind::MinItems { .. } | ValidationErrorKind::MaxItems { .. } => format!(
            "{path}: the list has {} items{}.",
            count(error.instance()),
            allowed()
        ),
        ValidationErrorKind::UniqueItems => {
            format!("{path}: the list repeats an item{}.", allowed())
        }
        ValidationErrorKind::FalseSchema => format!("{path}: nothing belongs here; delete it."),
        ValidationErrorKind::AnyOf { .. } | ValidationErrorKind::OneOfNotValid { .. } => {
            return None;
        }
        _ => format!(
            "{path}: found {found}, which the schema does not allow here{}.",
            here.map_or_else(String::new, |node| format!(
                "; expected {}",
                expected(full, node, 0)
            ))
        ),
    };
    let facts = SchemaMismatch {
        path: answer_pointer(&pointer),
        keyword: error.kind().keyword().to_owned(),
        expected: here.map_or_else(
            || "another value".to_owned(),
            |node| expected(full, node, 0),
        ),
        found: found.to_owned(),
    };
    Some((message, Some(facts)))
}

/// A mismatch as the model reads it, and its typed facts.
pub(crate) type Said = (String, Option<SchemaMismatch>);

/// The pointer of a place inside the answer, from one inside the envelope
/// (`/value/lines/0` is `/lines/0`).
pub(crate) fn answer_pointer(envelope_pointer: &str) -> String {
    envelope_pointer
        .strip_prefix("/value")
        .unwrap_or(envelope_pointer)
        .to_owned()
}

/// The message of a union (`anyOf`, `oneOf`) that no branch accepts, said of the whole
/// union: what it allows and what was found.
pub(crate) fn union_message(error: &ValidationError<'_>, full: &Value) -> Said {
    let pointer = error.instance_path().as_str();
    let expected = schema_at(full, pointer).map_or_else(
        || "another value".to_owned(),
        |node| expected(full, node, 0),
    );
    let found = found(error.instance());
    let message = format!(
        "{}: expected {expected}, found {found}.",
        display_path(pointer),
    );
    let facts = SchemaMismatch {
        path: answer_pointer(pointer),
        keyword: error.kind().keyword().to_owned(),
        expected,
        found: found.to_owned(),
    };
    (message, Some(facts))
}

/// The instance path as the model reads it: `value/lines/0/qty`, or `value` for the
/// whole answer (`the reply` for the envelope itself).
pub(crate) fn display_path(pointer: &str) -> String {
    let path = pointer.trim_start_matches('/');
    if path.is_empty() {
        "the reply".to_owned()
    } else {
        path.to_owned()
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// What was found, by its JSON type: never the value.
fn found(instance: &Value) -> &'static str {
    match instance {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(number) if number.is_f64() => "a number with a fraction",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Characters of a string, items of an array.
fn count(instance: &Value) -> usize {
    match instance {
        Value::String(text) => text.chars().count(),
        Value::Array(items) => items.len(),
        _ => 0,
    }
}

/// An enum's members, the first [`MAX_LISTED_MEMBERS`] of them.
fn listed(options: &Value) -> String {
    let Some(members) = options.as_array() else {
        return options.to_string();
    };
    let mut listed: Vec<String> = members
        .iter()
        .take(MAX_LISTED_MEMBERS)
        .map(|member| match member {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect();
    if members.len() > MAX_LISTED_MEMBERS {
        listed.push("…".to_owned());
    }
    listed.join(", ")
}

/// The schema node that describes the value at `pointer` (an instance path into the
/// envelope) inside the envelope schema `full`: properties, items and additional
/// properties are followed, `$ref`s resolved, and a union entered by the branch that
/// declares the next step (else its first branch that is not null).
pub(crate) fn schema_at<'s>(full: &'s Value, pointer: &str) -> Option<&'s Value> {
    let mut node = full;
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        node = step(full, node, &segment, 0)?;
    }
    Some(node)
}

fn step<'s>(full: &'s Value, node: &'s Value, segment: &str, hops: usize) -> Option<&'s Value> {
    if hops > MAX_SCHEMA_HOPS {
        return None;
    }
    let (node, _) = schema_nav::resolve(full, node);
    if let Some(child) = node
        .get("properties")
        .and_then(|properties| properties.get(segment))
    {
        return Some(child);
    }
    if let Ok(index) = segment.parse::<usize>() {
        let positional = node
            .get("prefixItems")
            .and_then(Value::as_array)
            .and_then(|positions| positions.get(index));
        if let Some(child) = positional.or_else(|| node.get("items")) {
            return Some(child);
        }
    }
    if let Some(child) = node.get("additionalProperties").filter(|c| c.is_object()) {
        return Some(child);
    }
    schema_nav::union_branches(node)
        .iter()
        .filter(|branch| !schema_nav::is_null_schema(branch))
        .find_map(|branch| step(full, branch, segment, hops + 1))
}

/// The value a schema node expects, in schema terms: its type (named for a definition),
/// its allowed values, its bounds (`integer (1 to 5)`, `one of Up, Down`, `Line or
/// null`, `array of Line`).
pub(crate) fn expected(full: &Value, node: &Value, depth: usize) -> String {
    let (node, name) = schema_nav::resolve(full, node);
    let Some(map) = node.as_object() else {
        return if node == &Value::Bool(false) {
            "nothing".to_owned()
        } else {
            "any value".to_owned()
        };
    };
    if let Some(constant) = map.get("const") {
        return constant.to_string();
    }
    if let Some(options) = map.get("enum") {
        return format!("one of {}", listed(options));
    }
    let branches = schema_nav::union_branches(node);
    // Documented enum members are a union of string `const`s: one list, like an `enum`.
    let members: Vec<&str> = branches
        .iter()
        .filter_map(|branch| branch.get("const").and_then(Value::as_str))
        .collect();
    let nullable = branches.iter().any(schema_nav::is_null_schema);
    if !members.is_empty() && members.len() + usize::from(nullable) == branches.len() {
        let or_null = if nullable { " or null" } else { "" };
        return format!("one of {}{or_null}", members.join(", "));
    }
    if !branches.is_empty() {
        if depth >= MAX_EXPECTED_DEPTH {
            return name.map_or_else(|| "one of several shapes".to_owned(), str::to_owned);
        }
        let described: Vec<String> = branches
            .iter()
            .map(|branch| expected(full, branch, depth + 1))
            .collect();
        return described.join(" or ");
    }
    let types = schema_nav::declared_types(node);
    let mut kinds: Vec<String> = types
        .iter()
        .map(|kind| match *kind {
            "object" => name.map_or_else(|| "object".to_owned(), |n| format!("object {n}")),
            "array" => match map.get("items") {
                Some(items) if depth < MAX_EXPECTED_DEPTH => {
                    format!("array of {}", expected(full, items, depth + 1))
                }
                _ => "array".to_owned(),
            },
            "string" => match map.get("format").and_then(Value::as_str) {
                Some(format) => format!("string ({format})"),
                None => "string".to_owned(),
            },
            other => other.to_owned(),
        })
        .collect();
    if kinds.is_empty() {
        kinds.push(if map.contains_key("properties") {
            name.map_or_else(|| "object".to_owned(), |n| format!("object {n}"))
        } else {
            "any value".to_owned()
        });
    }
    let described = kinds.join(" or ");
    match bounds_text(map) {
        Some(bounds) => format!("{described} ({bounds})"),
        None => described,
    }
}
