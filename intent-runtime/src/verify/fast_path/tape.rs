//! A flat, borrowed parse of a strict JSON text (a "tape"), which the `jsonschema`
//! validators read in place of a `serde_json::Value`.
//!
//! A clean typed reply is checked against the strict and full schemas and then read as
//! its target type straight from the text; building a `Value` for the schema checks was
//! the largest single cost of such a call (an `IndexMap` per object, a `String` per key
//! and per string, and the frees afterwards). The tape is one `Vec` for the whole
//! document; strings and member names borrow from the text unless it escaped them.
//!
//! The grammar is exactly `serde_json`'s: a hand-written scanner (`scan`) reads the texts
//! replies are made of and leaves everything else to `serde_json`'s `Deserializer` (with
//! its recursion limit), so a text is a tape exactly when it is a `Value`.

mod read;
mod scan;

use std::borrow::Cow;
use std::fmt;

use jsonschema::JsonType;
use jsonschema::json::{Array, Json, Node, NodeIdentity, Object};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::parse::WIDE_INTEGER_MAGNITUDE;

/// One node of the tape, in document order (a container before its contents).
#[derive(Debug, Clone, PartialEq)]
enum Entry<'t> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'t, str>),
    /// A member name; the member's value is the next entry.
    Key(Cow<'t, str>),
    /// `len` elements follow, up to (not including) the entry at `end`.
    Array {
        len: usize,
        end: usize,
    },
    /// `len` name-value pairs follow, up to (not including) the entry at `end`.
    Object {
        len: usize,
        end: usize,
    },
}

/// A JSON document parsed into one flat vector of nodes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tape<'t> {
    entries: Vec<Entry<'t>>,
    wide_numbers: bool,
}

impl<'t> Tape<'t> {
    /// Parses `text` as strict JSON (exactly what `serde_json::from_str::<Value>` accepts).
    pub(crate) fn parse(text: &'t str) -> Result<Self, serde_json::Error> {
        match scan::scan(text) {
            Some(tape) => Ok(tape),
            None => Self::build_with_serde(text),
        }
    }

    /// The tape built by `serde_json`'s `Deserializer`: what the scanner declines, and
    /// the reference it is tested against.
    fn build_with_serde(text: &'t str) -> Result<Self, serde_json::Error> {
        let mut tape = Tape::for_text(text);
        let mut deserializer = serde_json::Deserializer::from_str(text);
        EntrySeed { tape: &mut tape }.deserialize(&mut deserializer)?;
        deserializer.end()?;
        Ok(tape)
    }

    /// An empty tape with room for the nodes of `text`.
    fn for_text(text: &str) -> Self {
        // A node takes at least two bytes of text ("1,"); room for one per eight bytes
        // is usually enough, so a reply's vector seldom grows, and the cap keeps a huge
        // text from reserving several times its own size before a node is read.
        const MAX_RESERVED_ENTRIES: usize = 1 << 14;
        let reserved = (text.len() / 8 + 4).min(MAX_RESERVED_ENTRIES);
        Tape {
            entries: Vec::with_capacity(reserved),
            wide_numbers: false,
        }
    }

    /// The document's root node.
    pub(crate) fn root(&self) -> TapeNode<'_> {
        TapeNode {
            entries: &self.entries,
            index: 0,
        }
    }

    /// Whether some object names a member twice. A `Value` keeps only the last such
    /// member, so validating the tape would not judge what a `Value` holds.
    ///
    /// Worked out on request, walking every object: a schema check that matches each
    /// member to a distinct property (`tape_check`) already answers it, so a
    /// clean reply never pays for this walk.
    pub(crate) fn has_duplicate_keys(&self) -> bool {
        self.entries.iter().enumerate().any(|(index, entry)| {
            matches!(entry, Entry::Object { len, .. } if *len > 1)
                && names_repeat(&self.entries, index)
        })
    }

    /// Whether some number lies beyond `i64`/`u64` and was read as a float: reading it
    /// from text may succeed where reading it from a `Value` fails (`u128`, `i128`).
    pub(crate) fn has_wide_numbers(&self) -> bool {
        self.wide_numbers
    }

    /// The value of the root object's only member when that member is `name`.
    pub(crate) fn sole_root_member(&self, name: &str) -> Option<TapeNode<'_>> {
        let root = self.root().as_object()?;
        if root.len != 1 {
            return None;
        }
        let mut members = root.members();
        members
            .next()
            .and_then(|(key, value)| (key == name).then_some(value))
    }

    fn push(&mut self, entry: Entry<'t>) {
        self.entries.push(entry);
    }

    /// Writes the extent of the container opened at `start` now that its contents are in.
    fn close(&mut self, start: usize, len: usize) {
        let end = self.entries.len();
        if let Some(Entry::Array { len: l, end: e } | Entry::Object { len: l, end: e }) =
            self.entries.get_mut(start)
        {
            *l = len;
            *e = end;
        }
    }
}

/// The index just past the node at `index` (and past all of its contents).
fn end_of(entries: &[Entry<'_>], index: usize) -> usize {
    match entries.get(index) {
        Some(Entry::Array { end, .. } | Entry::Object { end, .. }) => *end,
        _ => index + 1,
    }
}

/// Builds the tape: pushes the node it is handed, then its contents.
struct EntrySeed<'b, 't> {
    tape: &'b mut Tape<'t>,
}

impl<'de> DeserializeSeed<'de> for EntrySeed<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EntrySeed<'_, 'de> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<(), E> {
        self.tape.push(Entry::Bool(value));
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        self.tape.push(Entry::Number(value.into()));
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        self.tape.push(Entry::Number(value.into()));
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<(), E> {
        if value.abs() >= WIDE_INTEGER_MAGNITUDE {
            self.tape.wide_numbers = true;
        }
        // As `Value` does: `serde_json` never hands over a non-finite float from text.
        self.tape
            .push(Number::from_f64(value).map_or(Entry::Null, Entry::Number));
        Ok(())
    }

    fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<(), E> {
        self.tape.push(Entry::String(Cow::Borrowed(value)));
        Ok(())
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
        self.tape.push(Entry::String(Cow::Owned(value.to_owned())));
        Ok(())
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<(), E> {
        self.tape.push(Entry::String(Cow::Owned(value)));
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.tape.push(Entry::Null);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let start = self.tape.entries.len();
        self.tape.push(Entry::Array { len: 0, end: 0 });
        let mut len = 0;
        while seq
            .next_element_seed(EntrySeed {
                tape: &mut *self.tape,
            })?
            .is_some()
        {
            len += 1;
        }
        self.tape.close(start, len);
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let start = self.tape.entries.len();
        self.tape.push(Entry::Object { len: 0, end: 0 });
        let mut len = 0;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            self.tape.push(Entry::Key(key));
            map.next_value_seed(EntrySeed {
                tape: &mut *self.tape,
            })?;
            len += 1;
        }
        self.tape.close(start, len);
        Ok(())
    }
}

/// Reads a member name, borrowed from the text unless it had escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a member name")
    }

    fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(value))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(value))
    }
}

/// Whether the object at `start` names a member twice.
fn names_repeat(entries: &[Entry<'_>], start: usize) -> bool {
    let Some(object) = (TapeNode {
        entries,
        index: start,
    })
    .as_object() else {
        return false;
    };
    // Replies' objects are small: comparing pairs beats sorting, which would allocate.
    const PAIRWISE_LIMIT: usize = 16;
    if object.len <= PAIRWISE_LIMIT {
        return object
            .members()
            .enumerate()
            .any(|(seen, (name, _))| object.members().take(seen).any(|(n, _)| n == name));
    }
    let mut names: Vec<&str> = object.members().map(|(name, _)| name).collect();
    names.sort_unstable();
    names.windows(2).any(|pair| pair.first() == pair.last())
}

/// The tape as a JSON representation for `jsonschema` validators.
pub(crate) struct TapeJson;

impl Json for TapeJson {
    type Node<'a> = TapeNode<'a>;
    type PreparedKey = Box<str>;
    type StringBuffer = ();

    // A lookup scans the members (see `TapeObject::get`), so one pass over them costs
    // about what the lookups it replaces do; 2 is what `serde_json`'s scan uses.
    const KEYS_PER_LOOKUP: usize = 2;
    // A tape is a tree: no node contains itself.
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> Box<str> {
        key.into()
    }

    fn with_string_node<T>((): &mut (), string: &str, f: impl FnOnce(TapeNode<'_>) -> T) -> T {
        let entries = [Entry::String(Cow::Borrowed(string))];
        f(TapeNode {
            entries: &entries,
            index: 0,
        })
    }
}

/// One node of a tape: the entries and the node's position among them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TapeNode<'a> {
    entries: &'a [Entry<'a>],
    index: usize,
}

/// What a node is, read with one look at its entry (the `Node` trait's `as_*` methods
/// each look again).
#[derive(Debug, Clone, Copy)]
pub(crate) enum NodeView<'a> {
    Null,
    Bool,
    Number(&'a Number),
    String(&'a str),
    Array(TapeArray<'a>),
    Object(TapeObject<'a>),
}

impl<'a> TapeNode<'a> {
    fn entry(&self) -> Option<&'a Entry<'a>> {
        self.entries.get(self.index)
    }

    /// The node's kind and contents.
    pub(crate) fn view(&self) -> NodeView<'a> {
        match self.entry() {
            None | Some(Entry::Null) => NodeView::Null,
            Some(Entry::Bool(_)) => NodeView::Bool,
            Some(Entry::Number(number)) => NodeView::Number(number),
            Some(Entry::String(text) | Entry::Key(text)) => NodeView::String(text),
            Some(Entry::Array { len, end }) => NodeView::Array(TapeArray {
                entries: self.entries,
                first: self.index + 1,
                len: *len,
                end: *end,
            }),
            Some(Entry::Object { len, end }) => NodeView::Object(TapeObject {
                entries: self.entries,
                first: self.index + 1,
                len: *len,
                end: *end,
            }),
        }
    }

    /// The node as a `Value` (allocates; for comparisons and error messages).
    pub(crate) fn to_owned_value(self) -> Value {
        match self.entry() {
            None | Some(Entry::Null) => Value::Null,
            Some(Entry::Bool(value)) => Value::Bool(*value),
            Some(Entry::Number(number)) => Value::Number(number.clone()),
            Some(Entry::String(text) | Entry::Key(text)) => Value::String(text.as_ref().to_owned()),
            Some(Entry::Array { .. }) => Value::Array(
                self.as_array()
                    .map(|array| array.elements().map(TapeNode::to_owned_value).collect())
                    .unwrap_or_default(),
            ),
            Some(Entry::Object { .. }) => {
                let mut map = Map::new();
                for (name, value) in self.as_object().into_iter().flat_map(|o| o.members()) {
                    // A repeated name keeps its last value, as `Value` does.
                    map.insert(name.to_owned(), value.to_owned_value());
                }
                Value::Object(map)
            }
        }
    }
}

impl<'a> Node<'a, TapeJson> for TapeNode<'a> {
    type Object = TapeObject<'a>;
    type Array = TapeArray<'a>;
    type Number = &'a Number;

    fn as_object(&self) -> Option<TapeObject<'a>> {
        match self.view() {
            NodeView::Object(object) => Some(object),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<TapeArray<'a>> {
        match self.view() {
            NodeView::Array(array) => Some(array),
            _ => None,
        }
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        match self.entry()? {
            Entry::String(text) | Entry::Key(text) => Some(Cow::Borrowed(text.as_ref())),
            _ => None,
        }
    }

    fn as_number(&self) -> Option<&'a Number> {
        match self.entry()? {
            Entry::Number(number) => Some(number),
            _ => None,
        }
    }

    fn as_boolean(&self) -> Option<bool> {
        match self.entry()? {
            Entry::Bool(value) => Some(*value),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self.entry(), None | Some(Entry::Null))
    }

    fn json_type(&self) -> JsonType {
        match self.entry() {
            None | Some(Entry::Null) => JsonType::Null,
            Some(Entry::Bool(_)) => JsonType::Boolean,
            Some(Entry::Number(_)) => JsonType::Number,
            Some(Entry::String(_) | Entry::Key(_)) => JsonType::String,
            Some(Entry::Array { .. }) => JsonType::Array,
            Some(Entry::Object { .. }) => JsonType::Object,
        }
    }

    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Owned(self.to_owned_value())
    }

    fn identity(&self) -> Option<NodeIdentity> {
        // Each entry lives at its own address for as long as the tape does.
        self.entry()
            .map(|entry| NodeIdentity::new(std::ptr::from_ref(entry) as usize))
    }
}

/// An object node: its members lie between `first` and `end`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TapeObject<'a> {
    entries: &'a [Entry<'a>],
    first: usize,
    len: usize,
    end: usize,
}

impl<'a> Object<'a, TapeJson> for TapeObject<'a> {
    type Node = TapeNode<'a>;
    type MemberName = &'a str;
    type MembersIter = Members<'a>;

    fn len(&self) -> usize {
        self.len
    }

    fn get(&self, key: &Box<str>) -> Option<TapeNode<'a>> {
        // Objects in replies are small: a scan costs less than building an index.
        self.members()
            .find(|(name, _)| *name == key.as_ref())
            .map(|(_, value)| value)
    }

    fn members(&self) -> Members<'a> {
        Members {
            entries: self.entries,
            next: self.first,
            end: self.end,
        }
    }
}

/// The members of an object, in document order.
pub(crate) struct Members<'a> {
    entries: &'a [Entry<'a>],
    next: usize,
    end: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, TapeNode<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let Some(Entry::Key(name)) = self.entries.get(self.next) else {
            return None;
        };
        let value = self.next + 1;
        self.next = end_of(self.entries, value);
        Some((
            name.as_ref(),
            TapeNode {
                entries: self.entries,
                index: value,
            },
        ))
    }
}

/// An array node: its elements lie between `first` and `end`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TapeArray<'a> {
    entries: &'a [Entry<'a>],
    first: usize,
    len: usize,
    end: usize,
}

impl<'a> Array<'a, TapeJson> for TapeArray<'a> {
    type Node = TapeNode<'a>;
    type ElementsIter = Elements<'a>;

    fn len(&self) -> usize {
        self.len
    }

    fn elements(&self) -> Elements<'a> {
        Elements {
            entries: self.entries,
            next: self.first,
            end: self.end,
        }
    }
}

/// The elements of an array, in order.
pub(crate) struct Elements<'a> {
    entries: &'a [Entry<'a>],
    next: usize,
    end: usize,
}

impl<'a> Iterator for Elements<'a> {
    type Item = TapeNode<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let node = TapeNode {
            entries: self.entries,
            index: self.next,
        };
        self.next = end_of(self.entries, self.next);
        Some(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::collection::{btree_map, vec};
    use proptest::prelude::*;
    use serde_json::json;

    fn parsed(text: &str) -> Tape<'_> {
        Tape::parse(text).unwrap()
    }

    /// Arbitrary JSON: every kind of number, strings with and without escapes (control
    /// characters and non-ASCII included), names with escapes. The scanner's tests use it
    /// too.
    pub(super) fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|n| json!(n)),
            (-1_000_000i64..1_000_000).prop_map(|n| json!(n)),
            "[a-z\"\\\\\n\t\u{1} é😀/]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 48, 6, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..6).prop_map(Value::Array),
                btree_map("[a-z\"\\\\é]{0,4}", inner, 0..6)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn the_tape_meets_jsonschemas_representation_contract() {
        let text = jsonschema::json::conformance::document().to_string();
        let tape = parsed(&text);
        jsonschema::json::conformance::assert_conformance::<TapeJson>(&tape.root());
    }

    #[test]
    fn strings_and_names_borrow_from_the_text_unless_escaped() {
        let text = r#"{"plain": "as written", "esc\"aped": "line\nbreak"}"#;
        let tape = parsed(text);
        let borrowed = |cow: &Cow<'_, str>| matches!(cow, Cow::Borrowed(_));
        let found: Vec<(bool, &str)> = tape
            .entries
            .iter()
            .filter_map(|entry| match entry {
                Entry::String(text) | Entry::Key(text) => Some((borrowed(text), text.as_ref())),
                _ => None,
            })
            .collect();
        assert_eq!(
            found,
            vec![
                (true, "plain"),
                (true, "as written"),
                (false, "esc\"aped"),
                (false, "line\nbreak"),
            ]
        );
    }

    #[test]
    fn containers_know_their_extent_so_members_are_skipped_whole() {
        let tape = parsed(r#"{"a": [1, [2, 3], {"b": 4}], "c": {"d": null}, "e": 5}"#);
        let root = tape.root().as_object().unwrap();
        let names: Vec<&str> = root.members().map(|(name, _)| name).collect();
        assert_eq!(names, ["a", "c", "e"]);
        let a = root.get(&TapeJson::prepare_key("a")).unwrap();
        assert_eq!(a.as_array().unwrap().len(), 3);
        assert_eq!(
            a.as_array()
                .unwrap()
                .elements()
                .map(|element| element.json_type())
                .collect::<Vec<_>>(),
            [JsonType::Number, JsonType::Array, JsonType::Object]
        );
        let e = root.get(&TapeJson::prepare_key("e")).unwrap();
        assert_eq!(e.as_number().and_then(|n| n.as_u64()), Some(5));
        assert!(root.get(&TapeJson::prepare_key("d")).is_none());
    }

    #[test]
    fn repeated_names_in_any_one_object_are_flagged() {
        assert!(parsed(r#"{"a": 1, "a": 2}"#).has_duplicate_keys());
        assert!(parsed(r#"[{"x": {"b": 1, "c": 2, "b": 3}}]"#).has_duplicate_keys());
        // Past the pairwise limit the names are sorted instead; both ways must agree.
        let many: Vec<String> = (0..40).map(|n| format!("\"k{n}\": {n}")).collect();
        let unique = format!("{{{}}}", many.join(", "));
        assert!(!parsed(&unique).has_duplicate_keys());
        let repeated = format!("{{{}, \"k7\": 0}}", many.join(", "));
        assert!(parsed(&repeated).has_duplicate_keys());
        // The same name in two objects is no repetition.
        assert!(!parsed(r#"{"a": {"a": 1}, "b": {"a": 2}}"#).has_duplicate_keys());
    }

    #[test]
    fn a_repeated_name_keeps_its_last_value_when_converted() {
        let tape = parsed(r#"{"a": 1, "b": 2, "a": 3}"#);
        assert_eq!(tape.root().to_owned_value(), json!({"a": 3, "b": 2}));
    }

    #[test]
    fn numbers_beyond_64_bits_are_flagged() {
        assert!(parsed("[18446744073709551616]").has_wide_numbers());
        assert!(parsed("-9223372036854775809").has_wide_numbers());
        assert!(parsed("1e300").has_wide_numbers());
        let within = parsed("[18446744073709551615, -9223372036854775808, 1.5e18]");
        assert!(!within.has_wide_numbers());
    }

    #[test]
    fn the_sole_root_member_is_found_only_when_alone() {
        let value = |text: &str| {
            parsed(text)
                .sole_root_member("value")
                .map(TapeNode::to_owned_value)
        };
        assert_eq!(value(r#"{"value": [1]}"#), Some(json!([1])));
        assert_eq!(value(r#"{"value": 1, "x": 2}"#), None);
        assert_eq!(value(r#"{"other": 1}"#), None);
        assert_eq!(value(r#"[{"value": 1}]"#), None);
        assert_eq!(value("{}"), None);
    }

    #[test]
    fn name_nodes_for_property_names_hold_the_name() {
        let schema = json!({"propertyNames": {"maxLength": 2}});
        let validator = jsonschema::options_for::<TapeJson>()
            .build(&schema)
            .unwrap();
        assert!(validator.is_valid(parsed(r#"{"ab": 1}"#).root()));
        assert!(!validator.is_valid(parsed(r#"{"abc": 1}"#).root()));
    }

    #[test]
    fn the_grammar_is_serde_jsons() {
        let deep = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let texts = [
            "",
            " ",
            "{",
            "{\"value\": 1,}",
            "[1, 2,]",
            "// c\n1",
            "{\"a\": 1} x",
            "{\"a\": 1} ",
            "NaN",
            "1e400",
            "-0",
            "01",
            "\"\\u00e9\\ud83d\\ude00\"",
            "\"\\ud800\"",
            "\"tab\there\"",
            "{'a': 1}",
            "{a: 1}",
            "true false",
            &deep(128),
            &deep(129),
            &deep(100_000),
        ];
        for text in texts {
            assert_eq!(
                Tape::parse(text).is_ok(),
                serde_json::from_str::<Value>(text).is_ok(),
                "{text:?}"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn the_tape_holds_what_a_value_holds(value in json_value(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                value.to_string()
            };
            let expected: Value = serde_json::from_str(&text).unwrap();
            let tape = parsed(&text);
            prop_assert_eq!(tape.root().to_owned_value(), expected);
            prop_assert!(!tape.has_duplicate_keys());
        }

        #[test]
        fn any_text_parses_exactly_when_serde_json_parses_it(text in "[\\[\\]{}:,\"a1./ e-]{0,12}") {
            prop_assert_eq!(Tape::parse(&text).is_ok(), serde_json::from_str::<Value>(&text).is_ok());
        }
    }
}
