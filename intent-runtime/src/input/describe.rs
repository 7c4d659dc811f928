//! Readable, Rust-like descriptions of JSON schemas, for the input label and the output
//! contract.
//!
//! The style is documented on [`describe_schema`](super::describe_schema).

use std::collections::{HashSet, VecDeque};

use serde_json::{Map, Value};

use crate::schema::bounds_text;

/// Nesting depth after which a description is cut with `…`; keeps descriptions of
/// pathological schemas short and the recursion bounded.
pub const MAX_DEPTH: usize = 24;

/// Subschemas described before the rest is cut with `…`: enums are written in place, so
/// a schema whose unions nest and branch could otherwise grow exponentially.
pub const MAX_SUBSCHEMAS: usize = 2_000;

const ANY: &str = "any JSON value";

/// Describes `schema`, a schema found at `root_pointer` inside `document` (the JSON
/// pointer `""` when `schema` is the document itself). `$ref`s resolve in `document`.
pub(crate) fn describe_in(document: &Value, root_pointer: &str) -> String {
    let Some(root) = document.pointer(root_pointer) else {
        return ANY.to_owned();
    };
    let root_name = root
        .get("title")
        .and_then(Value::as_str)
        .filter(|title| !title.trim().is_empty() && is_named_shape(root))
        .map(|title| title.trim().to_owned());
    let mut describer = Describer {
        document,
        root_pointer,
        root_name: root_name.clone(),
        queued: HashSet::new(),
        pending: VecDeque::new(),
        expanding: Vec::new(),
        described: 0,
    };
    let expression = match root_name {
        Some(name) => describer.named(name, root_pointer.to_owned(), root, 0),
        None => describer.expression(root, 0),
    };
    let mut definitions = Vec::new();
    while let Some((name, schema)) = describer.pending.pop_front() {
        let body = describer.object_body(schema, 1);
        definitions.push(format!("{name} {body}"));
    }
    if definitions.is_empty() {
        expression
    } else {
        format!("{expression} where {}", definitions.join(" "))
    }
}

struct Describer<'a> {
    document: &'a Value,
    root_pointer: &'a str,
    root_name: Option<String>,
    /// Pointers of named structs already queued for the `where` part.
    queued: HashSet<String>,
    /// Named structs whose bodies are still to be written, in order of first use.
    pending: VecDeque<(String, &'a Map<String, Value>)>,
    /// Names of enums being written in place: meeting one again (a recursive enum) is
    /// written as the bare name.
    expanding: Vec<String>,
    /// Subschemas described so far, against [`MAX_SUBSCHEMAS`].
    described: usize,
}

impl<'a> Describer<'a> {
    fn expression(&mut self, schema: &'a Value, depth: usize) -> String {
        self.described += 1;
        if depth > MAX_DEPTH || self.described > MAX_SUBSCHEMAS {
            return "…".to_owned();
        }
        let Value::Object(map) = schema else {
            return if schema == &Value::Bool(false) {
                "nothing".to_owned()
            } else {
                ANY.to_owned()
            };
        };
        if let Some(Value::String(reference)) = map.get("$ref") {
            return self.reference(reference, depth);
        }
        if let Some(constant) = map.get("const") {
            return constant.to_string();
        }
        if let Some(Value::Array(members)) = map.get("enum") {
            return self.enumeration(map, members);
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = map.get(keyword) {
                return self.union(None, branches, depth);
            }
        }
        if let Some(Value::Array(parts)) = map.get("allOf") {
            return self.all_of(parts, depth);
        }
        match map.get("type") {
            Some(Value::String(kind)) => self.typed(kind, map, depth),
            Some(Value::Array(kinds)) => self.multi_typed(kinds, map, depth),
            _ if map.contains_key("properties") => self.object(map, depth),
            _ => ANY.to_owned(),
        }
    }

    fn reference(&mut self, reference: &str, depth: usize) -> String {
        let Some(pointer) = reference.strip_prefix('#') else {
            return reference.to_owned();
        };
        let Some(target) = self.document.pointer(pointer) else {
            return reference.to_owned();
        };
        if pointer == self.root_pointer {
            // A recursive root without a name is `Self`, rather than written out again
            // at every level.
            return match self.root_name.clone() {
                Some(name) => self.named(name, pointer.to_owned(), target, depth),
                None => "Self".to_owned(),
            };
        }
        match definition_name(pointer) {
            Some(name) => self.named(name, pointer.to_owned(), target, depth),
            // A pointer into another schema's insides names nothing: describe the shape.
            None => self.expression(target, depth + 1),
        }
    }

    /// A named schema: a struct is written by name and defined after `where`; an enum
    /// in place with its name; anything else (an alias of a primitive) as its shape.
    fn named(&mut self, name: String, pointer: String, target: &'a Value, depth: usize) -> String {
        if let Some(map) = struct_map(target) {
            if self.queued.insert(pointer) {
                self.pending.push_back((name.clone(), map));
            }
            return name;
        }
        if self.expanding.contains(&name) {
            return name;
        }
        self.expanding.push(name.clone());
        let description = match target {
            Value::Object(map) if is_union(map) => {
                let branches = ["anyOf", "oneOf"]
                    .iter()
                    .find_map(|k| map.get(*k).and_then(Value::as_array));
                match branches {
                    Some(branches) => self.union(Some(&name), branches, depth),
                    None => self.expression(target, depth + 1),
                }
            }
            Value::Object(map) => match map.get("enum") {
                Some(Value::Array(members)) => format!("{name} ({})", one_of(members)),
                _ => self.expression(target, depth + 1),
            },
            _ => self.expression(target, depth + 1),
        };
        self.expanding.pop();
        description
    }

    fn enumeration(&mut self, map: &Map<String, Value>, members: &[Value]) -> String {
        let nullable = members.iter().any(Value::is_null);
        let kind = match map.get("type") {
            Some(Value::String(kind)) => Some(primitive_name(kind)),
            Some(Value::Array(kinds)) => {
                let mut named = kinds
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|k| *k != "null");
                match (named.next(), named.next()) {
                    (Some(kind), None) => Some(primitive_name(kind)),
                    _ => None,
                }
            }
            _ => None,
        };
        let description = match kind {
            Some(kind) => format!("{kind} ({})", one_of(members)),
            None => format!("({})", one_of(members)),
        };
        if nullable {
            format!("Option<{description}>")
        } else {
            description
        }
    }

    fn union(&mut self, name: Option<&str>, branches: &'a [Value], depth: usize) -> String {
        let (nulls, values): (Vec<&Value>, Vec<&Value>) =
            branches.iter().partition(|b| is_null_schema(b));
        if let ([only], None) = (values.as_slice(), name) {
            let inner = self.expression(only, depth + 1);
            return if nulls.is_empty() {
                inner
            } else {
                format!("Option<{inner}>")
            };
        }
        let members: Vec<String> = values
            .iter()
            .map(|branch| self.union_member(branch, depth + 1))
            .collect();
        let list = format!("one of: {}", members.join(", "));
        let union = match name {
            Some(name) => format!("{name} ({list})"),
            None => format!("({list})"),
        };
        if nulls.is_empty() {
            union
        } else {
            format!("Option<{union}>")
        }
    }

    /// A union branch: a string enum contributes its members bare (`Empty`), the way
    /// `schemars` writes the unit variants of a data-carrying enum.
    ///
    /// A documented variant (`schemars` gives it its own branch with a `description`, a
    /// unit variant as a string `const`) is written bare too, with its doc comment.
    fn union_member(&mut self, branch: &'a Value, depth: usize) -> String {
        let member = match (branch.get("enum"), branch.get("const")) {
            (Some(Value::Array(members)), None) => members
                .iter()
                .map(member_text)
                .collect::<Vec<_>>()
                .join(", "),
            (_, Some(Value::String(constant))) => constant.clone(),
            _ => self.expression(branch, depth),
        };
        with_note(member, branch)
    }

    fn all_of(&mut self, parts: &'a [Value], depth: usize) -> String {
        let described: Vec<String> = parts
            .iter()
            .map(|p| self.expression(p, depth + 1))
            .collect();
        match described.as_slice() {
            [] => ANY.to_owned(),
            [only] => only.clone(),
            _ => format!("(all of: {})", described.join(", ")),
        }
    }

    /// A value of one JSON type, with the bounds the verifier holds it to in parentheses
    /// (`u8 (1 to 5)`, `Vec<String> (at most 3 items)`).
    fn typed(&mut self, kind: &str, map: &'a Map<String, Value>, depth: usize) -> String {
        let format = map.get("format").and_then(Value::as_str);
        let described = match kind {
            "string" => string_name(format),
            "integer" => integer_name(format).to_owned(),
            "number" => number_name(format).to_owned(),
            "array" => self.array(map, depth),
            "object" => return self.object(map, depth),
            other => primitive_name(other).to_owned(),
        };
        match bounds_text(map) {
            Some(bounds) => [&described, " (", &bounds, ")"].concat(),
            None => described,
        }
    }

    fn multi_typed(
        &mut self,
        kinds: &'a [Value],
        map: &'a Map<String, Value>,
        depth: usize,
    ) -> String {
        let nullable = kinds.iter().any(|k| k.as_str() == Some("null"));
        let described: Vec<String> = kinds
            .iter()
            .filter_map(Value::as_str)
            .filter(|kind| *kind != "null")
            .map(|kind| self.typed(kind, map, depth))
            .collect();
        let inner = match described.as_slice() {
            [] if nullable => return "null".to_owned(),
            [] => return ANY.to_owned(),
            [only] => only.clone(),
            _ => format!("({})", described.join(" | ")),
        };
        if nullable {
            format!("Option<{inner}>")
        } else {
            inner
        }
    }

    fn array(&mut self, map: &'a Map<String, Value>, depth: usize) -> String {
        if let Some(Value::Array(positions)) = map.get("prefixItems") {
            let described: Vec<String> = positions
                .iter()
                .map(|p| self.expression(p, depth + 1))
                .collect();
            return format!("({})", described.join(", "));
        }
        match map.get("items") {
            Some(items) => format!("Vec<{}>", self.expression(items, depth + 1)),
            None => format!("Vec<{ANY}>"),
        }
    }

    fn object(&mut self, map: &'a Map<String, Value>, depth: usize) -> String {
        if matches!(map.get("properties"), Some(Value::Object(_))) {
            return self.object_body(map, depth);
        }
        match map.get("additionalProperties") {
            Some(Value::Bool(false)) => "{}".to_owned(),
            Some(values @ Value::Object(_)) => {
                format!("Map<String, {}>", self.expression(values, depth + 1))
            }
            _ => "JSON object".to_owned(),
        }
    }

    fn object_body(&mut self, map: &'a Map<String, Value>, depth: usize) -> String {
        let Some(Value::Object(properties)) = map.get("properties") else {
            return "{}".to_owned();
        };
        if properties.is_empty() {
            return "{}".to_owned();
        }
        let fields: Vec<String> = properties
            .iter()
            .map(|(name, schema)| {
                let field = format!("{name}: {}", self.expression(schema, depth + 1));
                with_note(field, schema)
            })
            .collect();
        format!("{{ {} }}", fields.join(", "))
    }
}

/// The longest doc comment written next to a field or variant, in characters; past it the
/// first paragraph is cut with `…`. A description is a hint, not a manual: a long one
/// would crowd out the shape it annotates.
pub const MAX_NOTE_CHARS: usize = 160;

/// `text` followed by the schema's `description` (the doc comment `schemars` copies from
/// a field or variant) as a `/* ... */` note: only its first paragraph, on one line.
fn with_note(text: String, schema: &Value) -> String {
    let Some(description) = schema.get("description").and_then(Value::as_str) else {
        return text;
    };
    let first_paragraph = description.split("\n\n").next().unwrap_or_default();
    // One line, and no `*/` that would end the note early.
    let mut note = first_paragraph
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("*/", "* /");
    if note.is_empty() {
        return text;
    }
    if let Some((cut, _)) = note.char_indices().nth(MAX_NOTE_CHARS) {
        note.truncate(cut);
        note.push('…');
    }
    format!("{text} /* {note} */")
}

/// Whether a titled root is a named type (struct or enum) rather than a container whose
/// `schemars` title (`Array_of_Line`, `Nullable_string`) would read badly as a name.
fn is_named_shape(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            struct_map(schema).is_some() || map.contains_key("enum") || is_union(map)
        }
        _ => false,
    }
}

fn struct_map(schema: &Value) -> Option<&Map<String, Value>> {
    let map = schema.as_object()?;
    let is_object = match map.get("type") {
        Some(Value::String(kind)) => kind == "object",
        None => true,
        Some(_) => false,
    };
    (is_object && matches!(map.get("properties"), Some(Value::Object(_)))).then_some(map)
}

/// A union of two or more non-null branches (an `Option` is not a union).
fn is_union(map: &Map<String, Value>) -> bool {
    ["anyOf", "oneOf"].iter().any(|keyword| {
        map.get(*keyword)
            .and_then(Value::as_array)
            .is_some_and(|branches| branches.iter().filter(|b| !is_null_schema(b)).count() > 1)
    })
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

fn one_of(members: &[Value]) -> String {
    let listed: Vec<String> = members
        .iter()
        .filter(|m| !m.is_null())
        .map(member_text)
        .collect();
    format!("one of: {}", listed.join(", "))
}

fn member_text(member: &Value) -> String {
    match member {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn string_name(format: Option<&str>) -> String {
    match format {
        None => "String".to_owned(),
        Some("date-time") => "DateTime (ISO 8601)".to_owned(),
        Some("partial-date-time") => "DateTime (ISO 8601, no offset)".to_owned(),
        Some("date") => "Date (YYYY-MM-DD)".to_owned(),
        Some("time" | "partial-time") => "Time (HH:MM:SS)".to_owned(),
        Some("duration") => "Duration (ISO 8601)".to_owned(),
        Some(other) => format!("String ({other})"),
    }
}

fn integer_name(format: Option<&str>) -> &'static str {
    match format {
        Some("int8") => "i8",
        Some("int16") => "i16",
        Some("int32") => "i32",
        Some("int128") => "i128",
        Some("int") => "isize",
        Some("uint8") => "u8",
        Some("uint16") => "u16",
        Some("uint32") => "u32",
        Some("uint64") => "u64",
        Some("uint128") => "u128",
        Some("uint") => "usize",
        _ => "i64",
    }
}

fn number_name(format: Option<&str>) -> &'static str {
    match format {
        Some("float") => "f32",
        _ => "f64",
    }
}

fn primitive_name(kind: &str) -> &str {
    match kind {
        "string" => "String",
        "integer" => "i64",
        "number" => "f64",
        "boolean" => "bool",
        "array" => "Vec",
        "object" => "JSON object",
        other => other,
    }
}

/// The name of the definition `pointer` points at (`/$defs/Line` is `Line`), if it
/// points into a definitions container.
fn definition_name(pointer: &str) -> Option<String> {
    let mut tokens = pointer.rsplit('/');
    let name = tokens.next()?;
    let container = tokens.next()?;
    (matches!(container, "$defs" | "definitions") && !name.is_empty())
        .then(|| unescape_pointer_token(name))
}

/// Decodes a JSON-pointer token (`~1` is `/`, `~0` is `~`).
fn unescape_pointer_token(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}
