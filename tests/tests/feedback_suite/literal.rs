//! The literal model: a scripted provider that answers a retry by fixing exactly what
//! the feedback locates, and nothing else.
//!
//! It reads three things only: its own previous reply, the last user turn (the
//! feedback, parsed as text) and the request's schema (the strict schema the provider is
//! sent, with the bounds its descriptions state). It never sees the failing reply's
//! intended value: where the feedback says "write a number" it writes the lowest number
//! the schema allows, where it names a missing field it writes that field's plainest
//! value, where it names no place it changes nothing. A bullet it cannot read is
//! ignored, as a literal-minded model would.
//!
//! Both the feedback of today and the wording before it are read where they locate a
//! problem (a path and a bound, a missing field, keys to delete), so the recovery rate
//! measures what the feedback says, not which words it uses.

use std::sync::{Arc, Mutex};

use intent_rs::provider::{ProviderRequest, Role, ScriptedProvider, ScriptedReply};
use serde_json::{Map, Value};

/// A provider whose first reply is `first` and whose every later reply is the literal
/// fix of its previous one.
pub fn literal_model(first: &str) -> ScriptedProvider {
    let previous = Arc::new(Mutex::new(first.to_owned()));
    ScriptedProvider::from_fn(move |request, index| {
        let mut last = previous.lock().unwrap_or_else(|p| p.into_inner());
        if index > 0 {
            *last = fix(&last, &feedback(request), request.schema.as_deref());
        }
        ScriptedReply::text(last.clone())
    })
}

/// The last user turn: the problems with the previous reply.
fn feedback(request: &ProviderRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .find(|message| message.role == Role::User)
        .map(|message| message.content.clone())
        .unwrap_or_default()
}

/// The reply after the fixes the feedback asks for.
pub fn fix(previous: &str, feedback: &str, schema: Option<&Value>) -> String {
    let bullets: Vec<&str> = feedback
        .lines()
        .filter_map(|line| line.strip_prefix("- "))
        .collect();
    let empty = Value::Bool(true);
    let schema = schema.unwrap_or(&empty);
    let mut text = previous.to_owned();
    // Text edits first: they are located by line and column in the reply as written.
    let mut edits: Vec<Edit> = bullets
        .iter()
        .flat_map(|bullet| {
            locate_all(previous, bullet)
                .into_iter()
                .filter_map(|place| text_edit(previous, place, schema))
        })
        .collect();
    edits.sort_by_key(|edit| std::cmp::Reverse(edit.at));
    for edit in edits {
        edit.apply(&mut text);
    }
    if let Some(kept) = bullets.iter().find_map(|b| prose_cut(previous, b)) {
        text = kept;
    }
    // Value edits: located by JSON path in the reply as JSON.
    let value_bullets: Vec<&&str> = bullets
        .iter()
        .filter(|bullet| !bullet.starts_with("Line ") && !bullet.starts_with("At "))
        .collect();
    if value_bullets.is_empty() {
        return text;
    }
    let Ok((json, _)) = intent_rs::__private::parse_json_lenient(&text) else {
        return text;
    };
    let mut envelope = match json {
        Value::Object(object) if object.contains_key("value") => Value::Object(object),
        bare => Value::Object(Map::from_iter([("value".to_owned(), bare)])),
    };
    for bullet in value_bullets {
        value_edit(&mut envelope, bullet, schema);
    }
    envelope.to_string()
}

// ---- text edits ----

/// One change to the reply's text at byte `at`: `remove` bytes replaced by `insert`.
struct Edit {
    at: usize,
    remove: usize,
    insert: String,
}

impl Edit {
    fn apply(self, text: &mut String) {
        let end = (self.at + self.remove).min(text.len());
        if self.at <= end && text.is_char_boundary(self.at) && text.is_char_boundary(end) {
            text.replace_range(self.at..end, &self.insert);
        }
    }
}

/// A located bullet: `Line L col C[ (path)], near `excerpt`: what.`
struct Located<'b> {
    at: usize,
    path: Option<String>,
    what: &'b str,
}

/// Every place a bullet locates: one (`Line L col C`) or several of one kind (`At
/// L:C, L:C (line:col)`).
fn locate_all<'b>(text: &str, bullet: &'b str) -> Vec<Located<'b>> {
    let Some(rest) = bullet.strip_prefix("At ") else {
        return locate(text, bullet).into_iter().collect();
    };
    let Some((places, rest)) = rest.split_once(" (line:col), near `") else {
        return Vec::new();
    };
    let Some((_, what)) = rest.split_once("`: ") else {
        return Vec::new();
    };
    places
        .split(", ")
        .filter_map(|place| {
            let (line, column) = place.split_once(':')?;
            Some(Located {
                at: byte_at(text, line.parse().ok()?, column.parse().ok()?)?,
                path: None,
                what: what.trim_end_matches('.'),
            })
        })
        .collect()
}

fn locate<'b>(text: &str, bullet: &'b str) -> Option<Located<'b>> {
    let rest = bullet.strip_prefix("Line ")?;
    let (line, rest) = rest.split_once(" col ")?;
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    let column: usize = rest[..digits].parse().ok()?;
    let rest = &rest[digits..];
    let (path, rest) = match rest.strip_prefix(" (") {
        Some(inner) => {
            let (path, rest) = inner.split_once(')')?;
            (Some(format!("/{path}")), rest)
        }
        None => (None, rest),
    };
    let rest = rest.strip_prefix(", near `")?;
    let (excerpt, what) = rest.split_once("`: ")?;
    let at = byte_at(text, line.parse().ok()?, column)?;
    // The excerpt must be what the reply holds around the place, or the place is not
    // the one the feedback means.
    let shown: String = text
        .chars()
        .map(|c| match c {
            '`' => '\'',
            c if c.is_whitespace() => ' ',
            c => c,
        })
        .collect();
    let near = shown
        .char_indices()
        .map(|(i, _)| i)
        .filter(|i| i.abs_diff(at) <= 40);
    let found = near.into_iter().any(|i| shown[i..].starts_with(excerpt));
    if !found && !excerpt.is_empty() {
        return None;
    }
    Some(Located {
        at,
        path,
        what: what.trim_end_matches('.'),
    })
}

/// The byte of line `line`, column `column` (both from 1; the column in characters).
fn byte_at(text: &str, line: usize, column: usize) -> Option<usize> {
    let start = if line == 1 {
        0
    } else {
        text.match_indices('\n').nth(line - 2)?.0 + 1
    };
    let rest = &text[start..];
    match rest.char_indices().nth(column - 1) {
        Some((offset, _)) => Some(start + offset),
        None => Some(start + rest.len()),
    }
}

fn text_edit(text: &str, place: Located<'_>, schema: &Value) -> Option<Edit> {
    let at = place.at;
    let what = place.what;
    let edit = |remove: usize, insert: &str| {
        Some(Edit {
            at,
            remove,
            insert: insert.to_owned(),
        })
    };
    if what.starts_with("single quotes") {
        let body_end = single_quoted_end(&text[at..])?;
        let body = &text[at + 1..at + body_end];
        let requoted = serde_json::to_string(&body.replace("\\'", "'")).ok()?;
        return edit(body_end + 1, &requoted);
    }
    if what.starts_with("a key without quotes") {
        let end = text[at..].find(|c: char| c == ':' || c.is_whitespace())?;
        return edit(end, &format!("\"{}\"", &text[at..at + end]));
    }
    if what.starts_with("text without quotes") {
        let end = text[at..]
            .find(|c: char| ",}]\n".contains(c))
            .unwrap_or(text.len() - at);
        let word = text[at..at + end].trim_end();
        return edit(word.len(), &serde_json::to_string(word).ok()?);
    }
    if let Some(written) = what.strip_prefix('`')
        && let Some((written, rest)) = written.split_once('`')
    {
        if !text[at..].starts_with(written) {
            return None;
        }
        if let Some(replacement) = rest.rsplit_once("write `").map(|(_, r)| r) {
            return edit(written.len(), replacement.trim_end_matches('`'));
        }
        if rest.contains("write a number") {
            let node = place.path.as_deref().and_then(|p| schema_at(schema, p));
            let number = match node {
                Some(node) if allows_null(schema, node) => "null".to_owned(),
                Some(node) => plainest(schema, node).to_string(),
                None => "0".to_owned(),
            };
            return edit(written.len(), &number);
        }
        if rest.contains("delete it") {
            return edit(written.len(), "");
        }
    }
    if what.starts_with("a comment;") {
        let end = text[at..].find('\n').unwrap_or(text.len() - at);
        return edit(end, "");
    }
    if what.starts_with("an extra comma") {
        return edit(1, "");
    }
    if let Some(rest) = what.strip_suffix("`")
        && let Some((_, inserted)) = rest.rsplit_once("insert `")
    {
        return edit(0, inserted);
    }
    if what.starts_with("a value is missing") {
        let node = place.path.as_deref().and_then(|p| schema_at(schema, p));
        return edit(
            0,
            &node
                .map_or(Value::Null, |n| plainest(schema, n))
                .to_string(),
        );
    }
    if what.starts_with("a raw line break") {
        let c = text[at..].chars().next()?;
        return edit(c.len_utf8(), if c == '\n' { "\\n" } else { " " });
    }
    if let Some((head, closers)) = what
        .rsplit_once("close it with `")
        .or_else(|| what.rsplit_once("then close with `"))
    {
        let mut insert = String::new();
        if head.contains("write the missing value") {
            let node = place.path.as_deref().and_then(|p| schema_at(schema, p));
            insert.push_str(
                &node
                    .map_or(Value::Null, |n| plainest(schema, n))
                    .to_string(),
            );
        }
        insert.push_str(closers.trim_end_matches('`'));
        return Some(Edit {
            at: text.len(),
            remove: 0,
            insert,
        });
    }
    None
}

/// The length, in bytes, up to the closing quote of the single-quoted string at the
/// start of `text`.
fn single_quoted_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = 1;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'\\' => at += 2,
            b'\'' => return Some(at),
            _ => at += 1,
        }
    }
    None
}

/// The text kept when the feedback says to delete the prose before and after the JSON.
fn prose_cut(text: &str, bullet: &str) -> Option<String> {
    let what = bullet.split_once("`: ")?.1;
    if !what.starts_with("prose or a code fence around the JSON") {
        return None;
    }
    let place = |marker: &str| -> Option<usize> {
        let rest = what.split_once(marker)?.1.strip_prefix("line ")?;
        let (line, rest) = rest.split_once(" col ")?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        byte_at(text, line.parse().ok()?, rest[..digits].parse().ok()?)
    };
    let start = place("before ").unwrap_or(0);
    let end = place("after ")
        .map(|last| last + text[last..].chars().next().map_or(0, char::len_utf8))
        .unwrap_or(text.len());
    text.get(start..end).map(str::to_owned)
}

// ---- value edits ----

fn value_edit(envelope: &mut Value, bullet: &str, schema: &Value) {
    let bullet = bullet.trim_end_matches('.');
    if bullet.contains("put the whole object inside `value`") {
        if let Value::Object(object) = envelope {
            let mut inner = object.clone();
            inner.remove("value");
            *envelope = Value::Object(Map::from_iter([("value".to_owned(), Value::Object(inner))]));
        }
        return;
    }
    if let Some(keys) = bullet
        .strip_prefix("Unexpected keys beside `value`: ")
        .map(|rest| rest.split(';').next().unwrap_or(""))
        .or_else(|| bullet.split_once("unexpected keys: ").map(|(_, k)| k))
    {
        if let Value::Object(object) = envelope {
            for key in keys.split(", ") {
                object.remove(key.trim_matches('`'));
            }
        }
        return;
    }
    if let Some(edit) = old_wording(bullet) {
        return apply_value(envelope, schema, edit);
    }
    let Some((path, said)) = bullet.split_once(": ") else {
        return;
    };
    let pointer = match path {
        "the reply" => String::new(),
        path if path == "value" || path.starts_with("value/") => format!("/{path}"),
        _ => return,
    };
    let edit = if let Some(rest) = said.strip_prefix("the required field `") {
        let field = rest.split('`').next().unwrap_or_default();
        ValueEdit::Add(pointer, field.to_owned())
    } else if said.contains(" no field here; delete it") {
        let keys = said.split(" is no field").next().unwrap_or_default();
        let keys = keys.split(" are no field").next().unwrap_or_default();
        ValueEdit::Delete(
            pointer,
            keys.split(", ")
                .map(|k| k.trim_matches('`').to_owned())
                .collect(),
        )
    } else if said.starts_with("nothing belongs here") {
        ValueEdit::Remove(pointer)
    } else if let Some((problem, allowed)) = said.split_once("; allowed: ") {
        ValueEdit::Bound(pointer, problem.to_owned(), allowed.to_owned())
    } else if said.starts_with("expected ") {
        ValueEdit::Replace(pointer)
    } else {
        return;
    };
    apply_value(envelope, schema, edit);
}

/// What a value bullet asks for.
enum ValueEdit {
    /// Add the field to the object at the pointer.
    Add(String, String),
    /// Delete these keys of the object at the pointer.
    Delete(String, Vec<String>),
    /// Delete the value at the pointer.
    Remove(String),
    /// Bring the value at the pointer within the bound (problem, allowed).
    Bound(String, String, String),
    /// Put the value the schema expects at the pointer in place of what is there.
    Replace(String),
}

/// The bullets of the wording before today's that locate a problem.
fn old_wording(bullet: &str) -> Option<ValueEdit> {
    if let Some(rest) = bullet.strip_prefix("The required field \"") {
        let (field, rest) = rest.split_once('"')?;
        let pointer = rest
            .split_once(" at ")
            .map(|(_, p)| format!("/{}", p.split(';').next().unwrap_or_default()))
            .unwrap_or_else(|| "/value".to_owned());
        return Some(ValueEdit::Add(pointer, field.to_owned()));
    }
    if bullet.contains("answer with exactly one of:") {
        let pointer = match bullet.split_once(": ") {
            Some((path, _)) if path.starts_with("value") => format!("/{path}"),
            _ => "/value".to_owned(),
        };
        return Some(ValueEdit::Replace(pointer));
    }
    let (path, said) = bullet.split_once(": ")?;
    if !path.starts_with("value") {
        return None;
    }
    let pointer = format!("/{path}");
    let number = |marker: &str| said.split_once(marker).map(|(_, n)| n.trim().to_owned());
    let (problem, allowed) = if let Some(n) = number("less than the minimum of ") {
        ("too small", format!("at least {n}"))
    } else if let Some(n) = number("greater than the maximum of ") {
        ("too large", format!("at most {n}"))
    } else if let Some(n) = number("must be greater than ") {
        ("too small", format!("more than {n}"))
    } else if let Some(n) = number("must be less than ") {
        ("too large", format!("less than {n}"))
    } else if let Some(n) = number("more than the maximum of ") {
        let unit = if said.contains("characters") {
            "characters"
        } else {
            "items"
        };
        ("too long", format!("at most {n} {unit}"))
    } else if let Some(n) = number("fewer than the minimum of ") {
        let unit = if said.contains("characters") {
            "characters"
        } else {
            "items"
        };
        ("too short", format!("at least {n} {unit}"))
    } else {
        return None;
    };
    Some(ValueEdit::Bound(pointer, problem.to_owned(), allowed))
}

fn apply_value(envelope: &mut Value, schema: &Value, edit: ValueEdit) {
    match edit {
        ValueEdit::Add(pointer, field) => {
            let child = schema_at(schema, &format!("{pointer}/{field}"))
                .map_or(Value::Null, |node| plainest(schema, node));
            if let Some(Value::Object(object)) = envelope.pointer_mut(&pointer) {
                object.insert(field, child);
            }
        }
        ValueEdit::Delete(pointer, keys) => {
            if let Some(Value::Object(object)) = envelope.pointer_mut(&pointer) {
                for key in keys {
                    object.remove(&key);
                }
            }
        }
        ValueEdit::Remove(pointer) => {
            if let Some((parent, key)) = pointer.rsplit_once('/')
                && let Some(Value::Object(object)) = envelope.pointer_mut(parent)
            {
                object.remove(key);
            }
        }
        ValueEdit::Replace(pointer) => {
            let Some(node) = schema_at(schema, &pointer) else {
                return;
            };
            let replacement = match envelope.pointer(&pointer) {
                Some(Value::String(written)) => closest_member(schema, node, written),
                _ => None,
            }
            .unwrap_or_else(|| plainest(schema, node));
            if let Some(slot) = envelope.pointer_mut(&pointer) {
                *slot = replacement;
            }
        }
        ValueEdit::Bound(pointer, problem, allowed) => {
            let item = schema_at(schema, &format!("{pointer}/0"))
                .map_or(Value::Null, |node| plainest(schema, node));
            if let Some(slot) = envelope.pointer_mut(&pointer) {
                within(slot, &problem, &allowed, item);
            }
        }
    }
}

/// Brings `value` within `allowed` as the problem says.
fn within(value: &mut Value, problem: &str, allowed: &str, item: Value) {
    let bounds = Bounds::read(allowed);
    match value {
        Value::Number(number) => {
            let n = number.as_f64().unwrap_or(0.0);
            let integer = number.is_i64() || number.is_u64();
            let fixed = if problem.contains("small") {
                bounds.low(integer).unwrap_or(n)
            } else if problem.contains("large") {
                bounds.high(integer).unwrap_or(n)
            } else if let Some(step) = bounds.step {
                (n / step).round() * step
            } else {
                n
            };
            *value = number_value(fixed, integer);
        }
        Value::String(text) => {
            let count = text.chars().count();
            if let Some(max) = bounds.max_count
                && count > max
            {
                *text = text.chars().take(max).collect();
            }
            if let Some(min) = bounds.min_count
                && count < min
            {
                text.push_str(&"x".repeat(min - count));
            }
        }
        Value::Array(items) => {
            if bounds.unique {
                let mut seen = Vec::new();
                items.retain(|i| {
                    let fresh = !seen.contains(i);
                    seen.push(i.clone());
                    fresh
                });
            }
            if let Some(max) = bounds.max_count {
                items.truncate(max);
            }
            while bounds.min_count.is_some_and(|min| items.len() < min) {
                items.push(item.clone());
            }
        }
        _ => {}
    }
}

fn number_value(n: f64, integer: bool) -> Value {
    if integer {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

/// Bounds as the schema's descriptions and the feedback state them: `1 to 5`, `at least
/// 0`, `more than 0`, `at most 3 items`, `a multiple of 5`, `no repeated items`.
#[derive(Default)]
struct Bounds {
    min: Option<(f64, bool)>,
    max: Option<(f64, bool)>,
    step: Option<f64>,
    min_count: Option<usize>,
    max_count: Option<usize>,
    unique: bool,
}

impl Bounds {
    fn read(text: &str) -> Self {
        let mut bounds = Bounds::default();
        for part in text.split(", ") {
            let counted = part.ends_with("characters")
                || part.ends_with("character")
                || part.ends_with("items")
                || part.ends_with("item");
            let words: Vec<&str> = part.split_whitespace().collect();
            let num = |i: usize| words.get(i).and_then(|w| w.parse::<f64>().ok());
            match words.as_slice() {
                ["at", "least", ..] if counted => bounds.min_count = num(2).map(|n| n as usize),
                ["at", "most", ..] if counted => bounds.max_count = num(2).map(|n| n as usize),
                ["exactly", ..] if counted => {
                    bounds.min_count = num(1).map(|n| n as usize);
                    bounds.max_count = bounds.min_count;
                }
                [_, "to", _, ..] if counted => {
                    bounds.min_count = num(0).map(|n| n as usize);
                    bounds.max_count = num(2).map(|n| n as usize);
                }
                [_, "to", _] => {
                    bounds.min = num(0).map(|n| (n, false));
                    bounds.max = num(2).map(|n| (n, false));
                }
                ["at", "least", _] => bounds.min = num(2).map(|n| (n, false)),
                ["at", "most", _] => bounds.max = num(2).map(|n| (n, false)),
                ["more", "than", _] => bounds.min = num(2).map(|n| (n, true)),
                ["less", "than", _] => bounds.max = num(2).map(|n| (n, true)),
                ["a", "multiple", "of", _] => bounds.step = num(3),
                ["no", "repeated", "items"] => bounds.unique = true,
                _ => {}
            }
        }
        bounds
    }

    fn low(&self, integer: bool) -> Option<f64> {
        self.min.map(|(n, exclusive)| match (exclusive, integer) {
            (false, _) => n,
            (true, true) => n.floor() + 1.0,
            (true, false) => n + 0.5,
        })
    }

    fn high(&self, integer: bool) -> Option<f64> {
        self.max.map(|(n, exclusive)| match (exclusive, integer) {
            (false, _) => n,
            (true, true) => n.ceil() - 1.0,
            (true, false) => n - 0.5,
        })
    }
}

// ---- the schema, as the request carries it ----

fn resolve<'s>(root: &'s Value, mut node: &'s Value) -> &'s Value {
    for _ in 0..16 {
        match node.get("$ref").and_then(Value::as_str) {
            Some(reference) => match root.pointer(reference.trim_start_matches('#')) {
                Some(target) => node = target,
                None => break,
            },
            None => break,
        }
    }
    node
}

fn branches(node: &Value) -> &[Value] {
    node.get("anyOf")
        .or_else(|| node.get("oneOf"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn is_null(node: &Value) -> bool {
    node.get("type").and_then(Value::as_str) == Some("null")
}

fn schema_at<'s>(root: &'s Value, pointer: &str) -> Option<&'s Value> {
    let mut node = root;
    for segment in pointer.split('/').skip(1) {
        node = child(root, node, segment)?;
    }
    Some(node)
}

fn child<'s>(root: &'s Value, node: &'s Value, segment: &str) -> Option<&'s Value> {
    let node = resolve(root, node);
    if let Some(found) = node.get("properties").and_then(|p| p.get(segment)) {
        return Some(found);
    }
    if segment.parse::<usize>().is_ok()
        && let Some(items) = node.get("items")
    {
        return Some(items);
    }
    branches(node)
        .iter()
        .filter(|b| !is_null(b))
        .find_map(|b| child(root, b, segment))
}

fn allows_null(root: &Value, node: &Value) -> bool {
    let node = resolve(root, node);
    let typed_null = match node.get("type") {
        Some(Value::String(kind)) => kind == "null",
        Some(Value::Array(kinds)) => kinds.iter().any(|k| k == "null"),
        _ => false,
    };
    typed_null || branches(node).iter().any(is_null)
}

/// The bounds a node's description states (`Allowed: 1 to 5.`).
fn stated_bounds(node: &Value) -> Bounds {
    node.get("description")
        .and_then(Value::as_str)
        .and_then(|d| d.split_once("Allowed: "))
        .map_or_else(Bounds::default, |(_, b)| {
            Bounds::read(b.trim_end_matches('.'))
        })
}

/// The plainest value a node accepts: null where allowed, the first member of an enum,
/// the lowest allowed number, a string or list of the shortest allowed length, an object
/// of its plainest required fields.
fn plainest(root: &Value, node: &Value) -> Value {
    let node = resolve(root, node);
    if allows_null(root, node) {
        return Value::Null;
    }
    if let Some(constant) = node.get("const") {
        return constant.clone();
    }
    if let Some(first) = node
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|m| m.first())
    {
        return first.clone();
    }
    if let Some(branch) = branches(node).first() {
        return plainest(root, branch);
    }
    let bounds = stated_bounds(node);
    let kind = match node.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).next().unwrap_or(""),
        _ if node.get("properties").is_some() => "object",
        _ => "",
    };
    match kind {
        "integer" => Value::from(bounds.low(true).unwrap_or(0.0) as i64),
        "number" => number_value(bounds.low(false).unwrap_or(0.0), false),
        "boolean" => Value::Bool(false),
        "string" => Value::String("x".repeat(bounds.min_count.unwrap_or(0))),
        "array" => {
            let item = node
                .get("items")
                .map_or(Value::Null, |items| plainest(root, items));
            Value::Array(vec![item; bounds.min_count.unwrap_or(0)])
        }
        "object" => {
            let mut object = Map::new();
            let required: Vec<&str> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(Value::Object(properties)) = node.get("properties") {
                for (name, property) in properties {
                    if required.contains(&name.as_str()) {
                        object.insert(name.clone(), plainest(root, property));
                    }
                }
            }
            Value::Object(object)
        }
        _ => Value::Null,
    }
}

/// The enum member (behind `$ref`s and nullable unions) nearest to what was written.
fn closest_member(root: &Value, node: &Value, written: &str) -> Option<Value> {
    let node = resolve(root, node);
    let mut members: Vec<&str> = node
        .get("enum")
        .and_then(Value::as_array)
        .map(|m| m.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for branch in branches(node) {
        let branch = resolve(root, branch);
        if let Some(Value::String(constant)) = branch.get("const") {
            members.push(constant);
        }
        if let Some(listed) = branch.get("enum").and_then(Value::as_array) {
            members.extend(listed.iter().filter_map(Value::as_str));
        }
    }
    members
        .into_iter()
        .min_by_key(|member| distance(&member.to_lowercase(), &written.to_lowercase()))
        .map(|member| Value::String(member.to_owned()))
}

/// Edit distance, for the member nearest to a word.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = (previous + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(current + 1);
            previous = current;
        }
    }
    row[b.len()]
}
