//! An incremental reader of a JSON reply that is still being written: it takes the text
//! piece by piece, reads every byte once, and can show at any moment what is already
//! certain (every completed value, and the containers still open around them).
//!
//! Why not re-parse the text so far on every piece (as `jiter`'s partial mode would): a
//! reply streamed in `n` pieces would cost `n` parses of a growing text, quadratic in its
//! length. Here the cost of the whole reply is one pass over it. The reader keeps the
//! text and, for each value, where it lies in it (an arena of nodes, no allocation per
//! value); a value is decoded only when a caller reads it.
//!
//! What is shown is only what cannot change: a string, number or literal appears once
//! it is complete (its closing quote or the delimiter after it has arrived), a container
//! appears as soon as it opens, with the values completed so far. So every value shown
//! is the value the complete reply has at that place. The reader gives up (shows nothing
//! more) on text that is not JSON or on a repeated key, whose later value would replace
//! one already shown; the finished reply is read and verified in full either way.

use std::borrow::Cow;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::Value;

/// What the reader expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Text before the first `{` or `[` (a preamble, a code fence): skipped.
    Preamble,
    /// A value (after `[`, `,` in an array, `:`).
    Value,
    /// A value or the `]` that closes an empty array.
    ValueOrEnd,
    /// A key or the `}` that closes an empty object.
    KeyOrEnd,
    /// A key (after `,` in an object).
    Key,
    /// The `:` after a key.
    Colon,
    /// A `,` or the end of the container just filled.
    CommaOrEnd,
    /// Inside a string (a key when `key`); `escaped` after a backslash.
    Str { key: bool, escaped: bool },
    /// Inside a number or a literal (`true`, `false`, `null`).
    Scalar,
    /// The root value is complete; the rest (a closing fence) is ignored.
    Done,
    /// The text is not JSON, or a key repeats: nothing more is shown.
    Failed,
}

const NONE: usize = usize::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Object,
    Array,
    /// A string, number or literal: always complete.
    Leaf,
}

/// One value: where it lies in the text, its key in its object, its place in the tree.
#[derive(Debug, Clone, Copy)]
struct Node {
    kind: Kind,
    start: usize,
    /// The end of the value's text; `NONE` while the container is open.
    end: usize,
    /// The key's text, quotes included, for a value in an object.
    key: (usize, usize),
    first_child: usize,
    last_child: usize,
    next_sibling: usize,
}

/// The reader's state. Feed it the reply's pieces in order with [`PartialJson::push`];
/// read what is certain with [`PartialJson::root`].
#[derive(Debug, Clone)]
pub struct PartialJson {
    text: String,
    expect: Expect,
    nodes: Vec<Node>,
    /// Open containers, outermost first.
    stack: Vec<usize>,
    /// Where the token being read starts (a string at its quote, a number, a literal).
    token_start: usize,
    /// The key read for the value that comes next.
    key: (usize, usize),
    /// Whether a value was completed since [`PartialJson::take_progress`] was last called.
    progress: bool,
}

impl Default for PartialJson {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialJson {
    /// A reader before any text.
    pub fn new() -> Self {
        Self {
            text: String::new(),
            expect: Expect::Preamble,
            nodes: Vec::new(),
            stack: Vec::new(),
            token_start: 0,
            key: (0, 0),
            progress: false,
        }
    }

    /// Reads the next piece of the reply.
    pub fn push(&mut self, piece: &str) {
        if matches!(self.expect, Expect::Done | Expect::Failed) {
            return;
        }
        let mut at = self.text.len();
        self.text.push_str(piece);
        let end = self.text.len();
        while at < end {
            match self.expect {
                Expect::Done | Expect::Failed => return,
                Expect::Str { key, escaped } => {
                    // A string is only scanned for its closing quote here; it is decoded
                    // when a caller reads it.
                    let bytes = &self.text.as_bytes()[at..end];
                    let mut escaped = escaped;
                    let mut close = None;
                    let mut from = 0;
                    if escaped && !bytes.is_empty() {
                        escaped = false;
                        from = 1;
                    }
                    // Most of a reply is inside strings: jump from quote or backslash to
                    // the next rather than look at every byte.
                    while let Some(offset) = memchr::memchr2(b'"', b'\\', &bytes[from..]) {
                        let index = from + offset;
                        if bytes[index] == b'"' {
                            close = Some(at + index);
                            break;
                        }
                        // A backslash escapes the byte after it (perhaps in the next piece).
                        if index + 1 == bytes.len() {
                            escaped = true;
                            break;
                        }
                        from = index + 2;
                        if from >= bytes.len() {
                            break;
                        }
                    }
                    match close {
                        None => {
                            self.expect = Expect::Str { key, escaped };
                            return;
                        }
                        Some(index) => {
                            at = index + 1;
                            self.finish_string(key, at);
                        }
                    }
                }
                Expect::Scalar => {
                    let rest = &self.text.as_bytes()[at..end];
                    match rest
                        .iter()
                        .position(|&b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())
                    {
                        None => return,
                        Some(offset) => {
                            at += offset;
                            self.finish_scalar(at);
                        }
                    }
                }
                _ => {
                    let byte = self.text.as_bytes()[at];
                    at += 1;
                    if byte.is_ascii() {
                        self.structural(byte, at - 1);
                    } else if self.expect != Expect::Preamble {
                        // Outside strings, JSON is ASCII.
                        self.fail();
                    }
                }
            }
        }
    }

    /// Whether a value was completed since the last call (and resets it): the moment a
    /// caller has something new to show.
    pub fn take_progress(&mut self) -> bool {
        std::mem::take(&mut self.progress)
    }

    /// Whether the reader gave up on the text.
    pub fn failed(&self) -> bool {
        self.expect == Expect::Failed
    }

    /// The root value as far as it is certain, or `None` before it starts (or after the
    /// reader gave up).
    pub fn root(&self) -> Option<PartialNode<'_>> {
        if self.failed() || self.nodes.is_empty() {
            return None;
        }
        Some(PartialNode(Inner::Reader {
            reader: self,
            index: 0,
        }))
    }

    fn fail(&mut self) {
        self.expect = Expect::Failed;
        self.stack.clear();
        self.nodes.clear();
    }

    /// One character outside strings and scalars, at `at`.
    fn structural(&mut self, byte: u8, at: usize) {
        if byte.is_ascii_whitespace() {
            return;
        }
        match (self.expect, byte) {
            (Expect::Preamble, b'{' | b'[') => self.open(byte, at),
            (Expect::Preamble, _) => {}
            (Expect::Value | Expect::ValueOrEnd, b'{' | b'[') => self.open(byte, at),
            (Expect::ValueOrEnd, b']') => self.close(b']', at),
            (Expect::Value | Expect::ValueOrEnd, b'"') => {
                self.token_start = at;
                self.expect = Expect::Str {
                    key: false,
                    escaped: false,
                };
            }
            (Expect::Value | Expect::ValueOrEnd, b) if b == b'-' || b.is_ascii_alphanumeric() => {
                self.token_start = at;
                self.expect = Expect::Scalar;
            }
            (Expect::KeyOrEnd, b'}') => self.close(b'}', at),
            (Expect::KeyOrEnd | Expect::Key, b'"') => {
                self.token_start = at;
                self.expect = Expect::Str {
                    key: true,
                    escaped: false,
                };
            }
            (Expect::Colon, b':') => self.expect = Expect::Value,
            (Expect::CommaOrEnd, b',') => {
                self.expect = match self.stack.last().map(|&open| self.nodes[open].kind) {
                    Some(Kind::Array) => Expect::Value,
                    _ => Expect::Key,
                }
            }
            (Expect::CommaOrEnd, b']' | b'}') => self.close(byte, at),
            _ => self.fail(),
        }
    }

    /// Adds a node as the last child of the innermost open container (or as the root).
    fn add(&mut self, kind: Kind, start: usize, end: usize) -> usize {
        let index = self.nodes.len();
        let key = match self.stack.last() {
            Some(&parent) if self.nodes[parent].kind == Kind::Object => self.key,
            _ => (0, 0),
        };
        self.nodes.push(Node {
            kind,
            start,
            end,
            key,
            first_child: NONE,
            last_child: NONE,
            next_sibling: NONE,
        });
        if let Some(&parent) = self.stack.last() {
            let last = self.nodes[parent].last_child;
            if last == NONE {
                self.nodes[parent].first_child = index;
            } else {
                self.nodes[last].next_sibling = index;
            }
            self.nodes[parent].last_child = index;
        }
        index
    }

    fn open(&mut self, byte: u8, at: usize) {
        let kind = if byte == b'{' {
            Kind::Object
        } else {
            Kind::Array
        };
        let index = self.add(kind, at, NONE);
        self.stack.push(index);
        self.expect = if kind == Kind::Object {
            Expect::KeyOrEnd
        } else {
            Expect::ValueOrEnd
        };
    }

    fn close(&mut self, byte: u8, at: usize) {
        let Some(index) = self.stack.pop() else {
            return self.fail();
        };
        let fits = matches!(
            (self.nodes[index].kind, byte),
            (Kind::Object, b'}') | (Kind::Array, b']')
        );
        if !fits {
            return self.fail();
        }
        self.nodes[index].end = at + 1;
        self.completed();
    }

    fn finish_string(&mut self, key: bool, end: usize) {
        let start = self.token_start;
        if !key {
            self.add(Kind::Leaf, start, end);
            return self.completed();
        }
        // A repeated key would replace a value already shown.
        let Some(&object) = self.stack.last() else {
            return self.fail();
        };
        let name = key_text(&self.text[start..end]);
        let mut child = self.nodes[object].first_child;
        while child != NONE {
            let (from, to) = self.nodes[child].key;
            if key_text(&self.text[from..to]) == name {
                return self.fail();
            }
            child = self.nodes[child].next_sibling;
        }
        self.key = (start, end);
        self.expect = Expect::Colon;
    }

    fn finish_scalar(&mut self, end: usize) {
        let start = self.token_start;
        // Checked now, without building anything, so that the reader gives up at once on
        // a token that is no JSON value.
        if serde_json::from_str::<IgnoredAny>(&self.text[start..end]).is_err() {
            return self.fail();
        }
        self.add(Kind::Leaf, start, end);
        self.completed();
    }

    /// A value was completed: what comes next depends on its container.
    fn completed(&mut self) {
        self.progress = true;
        self.expect = if self.stack.is_empty() {
            Expect::Done
        } else {
            Expect::CommaOrEnd
        };
    }
}

/// A key's text without its quotes, decoded only when it holds an escape.
fn key_text(raw: &str) -> Cow<'_, str> {
    if raw.contains('\\') {
        serde_json::from_str::<String>(raw).map_or(Cow::Borrowed(""), Cow::Owned)
    } else {
        Cow::Borrowed(raw.get(1..raw.len().saturating_sub(1)).unwrap_or(""))
    }
}

/// A value of a reply being written, as far as it is certain: complete, or a container
/// still open with the values completed so far (and perhaps one open child).
///
/// What [`Partial::read_partial`](crate::stream::Partial::read_partial) reads; cheap to
/// copy.
#[derive(Debug, Clone, Copy)]
pub struct PartialNode<'a>(Inner<'a>);

#[derive(Debug, Clone, Copy)]
enum Inner<'a> {
    Reader {
        reader: &'a PartialJson,
        index: usize,
    },
    Whole(&'a Value),
}

impl<'a> PartialNode<'a> {
    /// A value that is complete: what a reply that arrived whole reads as.
    pub fn whole(value: &'a Value) -> Self {
        PartialNode(Inner::Whole(value))
    }

    fn node(self) -> Option<(&'a PartialJson, &'a Node)> {
        match self.0 {
            Inner::Reader { reader, index } => Some((reader, &reader.nodes[index])),
            Inner::Whole(_) => None,
        }
    }

    /// Whether the value is complete (it will not change).
    pub fn is_complete(self) -> bool {
        self.node().is_none_or(|(_, node)| node.end != NONE)
    }

    /// The value, when it is complete, read as a `T` (`None` when it is not complete or
    /// not a `T`).
    pub fn read<T: DeserializeOwned>(self) -> Option<T> {
        match self.0 {
            Inner::Whole(value) => T::deserialize(value).ok(),
            Inner::Reader { reader, index } => {
                let node = &reader.nodes[index];
                if node.end == NONE {
                    return None;
                }
                serde_json::from_str(&reader.text[node.start..node.end]).ok()
            }
        }
    }

    /// Whether the value is `null`.
    pub fn is_null(self) -> bool {
        match self.0 {
            Inner::Whole(value) => value.is_null(),
            Inner::Reader { reader, index } => {
                let node = &reader.nodes[index];
                node.kind == Kind::Leaf && &reader.text[node.start..node.end] == "null"
            }
        }
    }

    /// The value, when it is complete.
    pub fn complete(self) -> Option<Value> {
        self.read()
    }

    /// Whether the value is an object (complete or not).
    pub fn is_object(self) -> bool {
        match self.node() {
            Some((_, node)) => node.kind == Kind::Object,
            None => matches!(self.0, Inner::Whole(Value::Object(_))),
        }
    }

    /// Whether the value is an array (complete or not).
    pub fn is_array(self) -> bool {
        match self.node() {
            Some((_, node)) => node.kind == Kind::Array,
            None => matches!(self.0, Inner::Whole(Value::Array(_))),
        }
    }

    /// The field `name` of an object, as far as it is written; `None` when it has not
    /// started (or the value is no object).
    pub fn field(self, name: &str) -> Option<PartialNode<'a>> {
        match self.0 {
            Inner::Whole(value) => value.get(name).map(PartialNode::whole),
            Inner::Reader { reader, index } => {
                let node = &reader.nodes[index];
                if node.kind != Kind::Object {
                    return None;
                }
                let mut child = node.first_child;
                while child != NONE {
                    let (from, to) = reader.nodes[child].key;
                    if key_text(&reader.text[from..to]) == name {
                        return Some(PartialNode(Inner::Reader {
                            reader,
                            index: child,
                        }));
                    }
                    child = reader.nodes[child].next_sibling;
                }
                None
            }
        }
    }

    /// The items of an array as far as they are written, in order (the last perhaps
    /// open); empty for anything else.
    pub fn items(self) -> impl Iterator<Item = PartialNode<'a>> {
        let (whole, reader, first): (&'a [Value], Option<&'a PartialJson>, usize) = match self.0 {
            Inner::Whole(Value::Array(items)) => (items, None, NONE),
            Inner::Whole(_) => (&[], None, NONE),
            Inner::Reader { reader, index } => {
                let node = &reader.nodes[index];
                let first = if node.kind == Kind::Array {
                    node.first_child
                } else {
                    NONE
                };
                (&[], Some(reader), first)
            }
        };
        let mut child = first;
        let written = std::iter::from_fn(move || {
            let reader = reader?;
            if child == NONE {
                return None;
            }
            let index = child;
            child = reader.nodes[index].next_sibling;
            Some(PartialNode(Inner::Reader { reader, index }))
        });
        whole.iter().map(PartialNode::whole).chain(written)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(text: &str, piece: usize) -> PartialJson {
        let mut reader = PartialJson::new();
        let mut rest = text;
        while !rest.is_empty() {
            let mut cut = piece.min(rest.len());
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            reader.push(&rest[..cut]);
            rest = &rest[cut..];
        }
        reader
    }

    #[test]
    fn a_whole_reply_is_read_in_any_pieces() {
        let text = r#"```json
{"value": {"number": "INV-7", "lines": [{"item": "a\"b\u00e9", "cents": -12.5e1}, {"ok": true, "none": null}], "empty": {}, "list": []}}
```"#;
        let expected: Value = serde_json::from_str(&text[8..text.len() - 4]).unwrap();
        for piece in [1, 2, 3, 7, 64, 1000] {
            let reader = read(text, piece);
            assert_eq!(
                reader.root().and_then(PartialNode::complete),
                Some(expected.clone()),
                "{piece}"
            );
        }
    }

    #[test]
    fn only_completed_values_and_open_containers_show() {
        let reader = read(r#"{"value": {"number": "INV-7", "total": 12"#, 5);
        let value = reader.root().unwrap().field("value").unwrap();
        assert!(value.complete().is_none());
        assert_eq!(
            value.field("number").and_then(PartialNode::complete),
            Some(json!("INV-7"))
        );
        // The number may go on (`120`): not shown yet.
        assert!(value.field("total").is_none());
        let reader = read(r#"{"value": {"lines": [{"a": 1}, {"a": 2, "b": "x"#, 4);
        let lines = reader
            .root()
            .unwrap()
            .field("value")
            .unwrap()
            .field("lines");
        let items: Vec<_> = lines.unwrap().items().collect();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].complete(), Some(json!({"a": 1})));
        assert_eq!(items[1].field("a").unwrap().complete(), Some(json!(2)));
        assert!(items[1].field("b").is_none());
    }

    #[test]
    fn progress_is_reported_when_a_value_completes() {
        let mut reader = PartialJson::new();
        reader.push(r#"{"a": "x"#);
        assert!(!reader.take_progress());
        reader.push(r#"y", "b": 1"#);
        assert!(reader.take_progress());
        assert!(!reader.take_progress());
        reader.push(",");
        assert!(reader.take_progress(), "the number ends at the comma");
    }

    #[test]
    fn the_reader_gives_up_on_text_that_is_not_json_and_on_repeated_keys() {
        for text in [
            r#"{"a" 1}"#,
            r#"{"a": tru e}"#,
            r#"{"a": 1, "a": 2}"#,
            "[1}",
        ] {
            let reader = read(text, 3);
            assert!(reader.failed(), "{text}");
            assert!(reader.root().is_none(), "{text}");
        }
    }
}
