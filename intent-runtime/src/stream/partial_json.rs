//! An incremental reader of a JSON reply that is still being written: it takes the text
//! piece by piece, reads every byte once, and can show at any moment what is already
//! certain (every completed value, and the containers still open around them).
//!
//! Why not re-parse the text so far on every piece (as `jiter`'s partial mode would): a
//! reply streamed in `n` pieces would cost `n` parses of a growing text, quadratic in its
//! length. Here the cost of the whole reply is one pass over it.
//!
//! What is shown is only what cannot change: a string, number or literal appears once
//! it is complete (its closing quote or the delimiter after it has arrived), a container
//! appears as soon as it opens, with the values completed so far. So every value shown
//! is the value the complete reply has at that place. The reader gives up (shows nothing
//! more) on text that is not JSON or on a repeated key, whose later value would replace
//! one already shown; the finished reply is read and verified in full either way.

use serde_json::{Map, Value};

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

/// A container still being written.
#[derive(Debug, Clone)]
enum Frame {
    Array(Vec<Value>),
    Object {
        fields: Map<String, Value>,
        /// The key whose value is being written.
        key: Option<String>,
    },
}

/// The reader's state. Feed it the reply's pieces in order with [`PartialJson::push`];
/// read what is certain with [`PartialJson::root`].
#[derive(Debug, Clone)]
pub struct PartialJson {
    expect: Expect,
    /// Open containers, outermost first.
    stack: Vec<Frame>,
    /// The root value once complete.
    root: Option<Value>,
    /// The token being read (a string with its quotes, a number, a literal).
    token: String,
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
            expect: Expect::Preamble,
            stack: Vec::new(),
            root: None,
            token: String::new(),
            progress: false,
        }
    }

    /// Reads the next piece of the reply.
    pub fn push(&mut self, piece: &str) {
        let mut rest = piece;
        while !rest.is_empty() {
            match self.expect {
                Expect::Done | Expect::Failed => return,
                Expect::Str { key, escaped } => {
                    // A string's bytes are copied as they are (the quotes and escapes
                    // included) and decoded once, when the closing quote arrives.
                    let bytes = rest.as_bytes();
                    let mut escaped = escaped;
                    let mut end = None;
                    for (index, &byte) in bytes.iter().enumerate() {
                        if escaped {
                            escaped = false;
                        } else if byte == b'\\' {
                            escaped = true;
                        } else if byte == b'"' {
                            end = Some(index);
                            break;
                        }
                    }
                    match end {
                        None => {
                            self.token.push_str(rest);
                            self.expect = Expect::Str { key, escaped };
                            return;
                        }
                        Some(index) => {
                            self.token.push_str(&rest[..=index]);
                            rest = &rest[index + 1..];
                            self.finish_string(key);
                        }
                    }
                }
                Expect::Scalar => {
                    let end = rest
                        .find(|c: char| matches!(c, ',' | '}' | ']') || c.is_ascii_whitespace())
                        .unwrap_or(rest.len());
                    self.token.push_str(&rest[..end]);
                    rest = &rest[end..];
                    if !rest.is_empty() {
                        self.finish_scalar();
                    }
                }
                _ => {
                    let mut chars = rest.char_indices();
                    let Some((_, c)) = chars.next() else { return };
                    let next = chars.next().map_or(rest.len(), |(index, _)| index);
                    rest = &rest[next..];
                    self.structural(c);
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
        if self.failed() {
            return None;
        }
        if let Some(root) = &self.root {
            return Some(PartialNode::done(root));
        }
        (!self.stack.is_empty()).then_some(PartialNode::open(&self.stack))
    }

    fn fail(&mut self) {
        self.expect = Expect::Failed;
        self.stack.clear();
        self.token.clear();
    }

    /// One character outside strings and scalars.
    fn structural(&mut self, c: char) {
        if c.is_ascii_whitespace() {
            return;
        }
        match (self.expect, c) {
            (Expect::Preamble, '{' | '[') => self.open(c),
            (Expect::Preamble, _) => {}
            (Expect::Value | Expect::ValueOrEnd, '{' | '[') => self.open(c),
            (Expect::ValueOrEnd, ']') => self.close(']'),
            (Expect::Value | Expect::ValueOrEnd, '"') => {
                self.token.push('"');
                self.expect = Expect::Str {
                    key: false,
                    escaped: false,
                };
            }
            (Expect::Value | Expect::ValueOrEnd, c) if c == '-' || c.is_ascii_alphanumeric() => {
                self.token.push(c);
                self.expect = Expect::Scalar;
            }
            (Expect::KeyOrEnd, '}') => self.close('}'),
            (Expect::KeyOrEnd | Expect::Key, '"') => {
                self.token.push('"');
                self.expect = Expect::Str {
                    key: true,
                    escaped: false,
                };
            }
            (Expect::Colon, ':') => self.expect = Expect::Value,
            (Expect::CommaOrEnd, ',') => {
                self.expect = match self.stack.last() {
                    Some(Frame::Array(_)) => Expect::Value,
                    _ => Expect::Key,
                }
            }
            (Expect::CommaOrEnd, ']' | '}') => self.close(c),
            _ => self.fail(),
        }
    }

    fn open(&mut self, c: char) {
        if c == '{' {
            self.stack.push(Frame::Object {
                fields: Map::new(),
                key: None,
            });
            self.expect = Expect::KeyOrEnd;
        } else {
            self.stack.push(Frame::Array(Vec::new()));
            self.expect = Expect::ValueOrEnd;
        }
    }

    fn close(&mut self, c: char) {
        let value = match (self.stack.pop(), c) {
            (Some(Frame::Array(items)), ']') => Value::Array(items),
            (Some(Frame::Object { fields, key: None }), '}') => Value::Object(fields),
            _ => return self.fail(),
        };
        self.complete(value);
    }

    fn finish_string(&mut self, key: bool) {
        let token = std::mem::take(&mut self.token);
        let Ok(text) = serde_json::from_str::<String>(&token) else {
            return self.fail();
        };
        if !key {
            return self.complete(Value::String(text));
        }
        match self.stack.last_mut() {
            // A repeated key would replace a value already shown.
            Some(Frame::Object { fields, key }) if !fields.contains_key(&text) => {
                *key = Some(text);
                self.expect = Expect::Colon;
            }
            _ => self.fail(),
        }
    }

    fn finish_scalar(&mut self) {
        let token = std::mem::take(&mut self.token);
        match serde_json::from_str::<Value>(&token) {
            Ok(value @ (Value::Number(_) | Value::Bool(_) | Value::Null)) => self.complete(value),
            _ => self.fail(),
        }
    }

    /// Puts a completed value in its container (or makes it the root).
    fn complete(&mut self, value: Value) {
        self.progress = true;
        match self.stack.last_mut() {
            None => {
                self.root = Some(value);
                self.expect = Expect::Done;
            }
            Some(Frame::Array(items)) => {
                items.push(value);
                self.expect = Expect::CommaOrEnd;
            }
            Some(Frame::Object { fields, key }) => match key.take() {
                Some(key) => {
                    fields.insert(key, value);
                    self.expect = Expect::CommaOrEnd;
                }
                None => self.fail(),
            },
        }
    }
}

/// A value of a reply being written, as far as it is certain: complete, or a container
/// still open with the values completed so far (and perhaps one open child).
///
/// What [`Partial::read_partial`](crate::stream::Partial::read_partial) reads; cheap to
/// copy.
#[derive(Debug, Clone, Copy)]
pub struct PartialNode<'a>(Node<'a>);

#[derive(Debug, Clone, Copy)]
enum Node<'a> {
    /// A complete value: it will not change.
    Done(&'a Value),
    /// An open container: the first frame, with its open descendants after it.
    Open(&'a [Frame]),
}

impl<'a> PartialNode<'a> {
    fn done(value: &'a Value) -> Self {
        PartialNode(Node::Done(value))
    }

    fn open(frames: &'a [Frame]) -> Self {
        PartialNode(Node::Open(frames))
    }

    /// A value that is complete: what a reply that arrived whole reads as.
    pub fn whole(value: &'a Value) -> Self {
        Self::done(value)
    }

    /// The value, when it is complete.
    pub fn complete(self) -> Option<&'a Value> {
        match self.0 {
            Node::Done(value) => Some(value),
            Node::Open(_) => None,
        }
    }

    /// Whether the value is an object (complete or not).
    pub fn is_object(self) -> bool {
        match self.0 {
            Node::Done(value) => value.is_object(),
            Node::Open(frames) => matches!(frames.first(), Some(Frame::Object { .. })),
        }
    }

    /// Whether the value is an array (complete or not).
    pub fn is_array(self) -> bool {
        match self.0 {
            Node::Done(value) => value.is_array(),
            Node::Open(frames) => matches!(frames.first(), Some(Frame::Array(_))),
        }
    }

    /// The field `name` of an object, as far as it is written; `None` when it has not
    /// started (or the value is no object).
    pub fn field(self, name: &str) -> Option<PartialNode<'a>> {
        match self.0 {
            Node::Done(value) => value.get(name).map(PartialNode::done),
            Node::Open(frames) => match frames.first()? {
                Frame::Object { fields, key } => {
                    if let Some(value) = fields.get(name) {
                        return Some(PartialNode::done(value));
                    }
                    let rest = &frames[1..];
                    (key.as_deref() == Some(name) && !rest.is_empty())
                        .then_some(PartialNode::open(rest))
                }
                Frame::Array(_) => None,
            },
        }
    }

    /// The items of an array as far as they are written, in order (the last perhaps
    /// open); empty for anything else.
    pub fn items(self) -> impl Iterator<Item = PartialNode<'a>> {
        let (done, open): (&'a [Value], Option<PartialNode<'a>>) = match self.0 {
            Node::Done(Value::Array(items)) => (items, None),
            Node::Open(frames) => match frames.first() {
                Some(Frame::Array(items)) => {
                    let rest = &frames[1..];
                    (items, (!rest.is_empty()).then_some(PartialNode::open(rest)))
                }
                _ => (&[], None),
            },
            Node::Done(_) => (&[], None),
        };
        done.iter().map(PartialNode::done).chain(open)
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
                Some(&expected),
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
            Some(&json!("INV-7"))
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
        assert_eq!(items[0].complete(), Some(&json!({"a": 1})));
        assert_eq!(items[1].field("a").unwrap().complete(), Some(&json!(2)));
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
