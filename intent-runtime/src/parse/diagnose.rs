//! Why a text is not JSON, said in words a model can act on: every place where it stops
//! being JSON, what is written there (prose around the JSON, single quotes, a key or a
//! string without quotes, a number or literal JSON does not have, a comment, an extra
//! or a missing comma, an unfinished end) and what belongs there instead.
//!
//! `serde_json` stops at the first error and says it in a parser's terms ("expected
//! value at line 1 column 1"); this scan reads on past each problem as if it were fixed,
//! so one reply's problems are all named at once. It never changes what is accepted:
//! the verifier still reads replies with `serde_json` and only asks here why one failed.

use serde_json::Number;

use super::extract::json_candidates;
use super::lexical::comment_end;

/// The most problems one scan reports; a reply with more is mostly not JSON at all.
pub const MAX_PROBLEMS: usize = 50;

/// Characters of the reply quoted on each side of a problem.
const EXCERPT_SIDE: usize = 12;

/// One place where a text stops being JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxProblem {
    /// The line of the place, from 1.
    pub line: usize,
    /// The column of the place, from 1, in characters.
    pub column: usize,
    /// The JSON pointer of the value being written there (`/value/score`), when the
    /// place is inside one.
    pub path: Option<String>,
    /// A few characters of the text around the place, on one line.
    pub excerpt: String,
    /// What is written there and what belongs there instead.
    pub what: String,
}

/// Every problem of `text` as JSON, at most [`MAX_PROBLEMS`], in text order; empty when
/// the scan finds nothing (the parser's own message must then do).
pub fn diagnose(text: &str) -> Vec<SyntaxProblem> {
    let mut report = Report {
        text,
        found: Vec::new(),
    };
    // JSON that parses inside prose before it is found the way answer recovery finds
    // it, so that a brace or a quote in the prose is not taken for the JSON's start. A
    // reply that starts as JSON is read from its start: the balanced values inside a
    // broken one are no answers.
    let starts_as_json = text.trim_start().starts_with(['{', '[']);
    let candidates = if starts_as_json {
        Default::default()
    } else {
        json_candidates(text)
    };
    match candidates.found.as_slice() {
        [only] if !candidates.too_many => {
            let start = (only.text.as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
            let end = start + only.text.len();
            let before = !text[..start.min(text.len())].trim().is_empty();
            let after = !text[end.min(text.len())..].trim().is_empty();
            if before || after {
                report.prose_around(start, Some(end).filter(|_| after), before);
                return report.found;
            }
        }
        [] => {}
        several => {
            let count = if candidates.too_many {
                "many".to_owned()
            } else {
                several.len().to_string()
            };
            report.at(
                0,
                None,
                format!("prose around {count} JSON values; send one answer alone, as JSON"),
            );
            return report.found;
        }
    }
    let Some(start) = text.find(['{', '[']) else {
        report.at(
            0,
            None,
            "text, not JSON; send the answer as JSON".to_owned(),
        );
        return report.found;
    };
    let end = structure_end(text.as_bytes(), start);
    let before = !text[..start].trim().is_empty();
    let after = end.is_some_and(|end| !text[end..].trim().is_empty());
    if before || after {
        report.prose_around(start, end.filter(|_| after), before);
    }
    Lint::new(&mut report, start).run(&text[..end.unwrap_or(text.len())]);
    report.found.truncate(MAX_PROBLEMS);
    report.found
}

/// Where the bracket opened at `start` is closed (just past it), reading strings in
/// either quote; `None` when it never is.
fn structure_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut at = start;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'"' | b'\'' => at = quoted_end(bytes, at).0,
            b'{' | b'[' => {
                depth += 1;
                at += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                at += 1;
                if depth == 0 {
                    return Some(at);
                }
            }
            _ => at += 1,
        }
    }
    None
}

/// The index just past the string that opens at `start` with its quote (`"` or `'`),
/// and whether it closes; a string that never closes runs to the end.
fn quoted_end(bytes: &[u8], start: usize) -> (usize, bool) {
    let quote = bytes[start];
    let mut at = start + 1;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'\\' => at += 2,
            _ if byte == quote => return (at + 1, true),
            _ => at += 1,
        }
    }
    (bytes.len(), false)
}

/// The problems found so far, and the text they point into.
struct Report<'t> {
    text: &'t str,
    found: Vec<SyntaxProblem>,
}

impl Report<'_> {
    /// Records a problem at byte `at`.
    fn at(&mut self, at: usize, path: Option<String>, what: String) {
        if self.found.len() > MAX_PROBLEMS {
            return;
        }
        let (line, column) = self.position(at);
        self.found.push(SyntaxProblem {
            line,
            column,
            path,
            excerpt: self.excerpt(at),
            what,
        });
    }

    /// Line and column (from 1, in characters) of byte `at`.
    fn position(&self, at: usize) -> (usize, usize) {
        let at = floor_boundary(self.text, at);
        let before = &self.text[..at];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        (line, before[line_start..].chars().count() + 1)
    }

    /// About [`EXCERPT_SIDE`] characters each side of byte `at`, on one line, with no
    /// backtick to break the quoting.
    fn excerpt(&self, at: usize) -> String {
        let at = floor_boundary(self.text, at);
        let from = self.text[..at]
            .char_indices()
            .rev()
            .nth(EXCERPT_SIDE - 1)
            .map_or(0, |(index, _)| index);
        let to = self.text[at..]
            .char_indices()
            .nth(EXCERPT_SIDE)
            .map_or(self.text.len(), |(index, _)| at + index);
        self.text[from..to]
            .chars()
            .map(|c| match c {
                '`' => '\'',
                c if c.is_whitespace() => ' ',
                c => c,
            })
            .collect()
    }

    /// The problem of prose (or a code fence) before the JSON at `start` and after the
    /// JSON ending at `end`.
    fn prose_around(&mut self, start: usize, end: Option<usize>, before: bool) {
        let place = |report: &Self, at: usize| {
            let (line, column) = report.position(at);
            format!("line {line} col {column}")
        };
        let mut parts = Vec::new();
        if before {
            parts.push(format!("before {}", place(self, start)));
        }
        if let Some(end) = end {
            let (line, column) = self.position(end);
            // The last character of the JSON, so the place is inside what is kept.
            parts.push(format!(
                "after line {line} col {}",
                column.saturating_sub(1)
            ));
        }
        self.at(
            if before { 0 } else { end.unwrap_or(start) },
            None,
            format!(
                "prose or a code fence around the JSON; delete everything {} and send the \
                 JSON alone",
                parts.join(" and ")
            ),
        );
    }
}

/// The largest char boundary at or before `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// What the scan expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A value (at the top, after a key's colon, or after a comma in a list).
    Value,
    /// A value or the list's `]` (just after `[`).
    ValueOrClose,
    /// A key (after a comma in an object).
    Key,
    /// A key or the object's `}` (just after `{`).
    KeyOrClose,
    /// The colon after a key.
    Colon,
    /// A comma or the closing bracket, after a value.
    CommaOrClose,
    /// Nothing: the top value is complete.
    End,
}

/// An open object or list, and which of its members is being written.
struct Frame {
    open: u8,
    key: Option<String>,
    index: usize,
}

/// The scan of the JSON part of a text.
struct Lint<'r, 't> {
    report: &'r mut Report<'t>,
    /// Where the JSON part starts (byte offset into the whole text).
    start: usize,
    stack: Vec<Frame>,
    expect: Expect,
}

impl<'r, 't> Lint<'r, 't> {
    fn new(report: &'r mut Report<'t>, start: usize) -> Self {
        Self {
            report,
            start,
            stack: Vec::new(),
            expect: Expect::Value,
        }
    }

    /// Scans `text[self.start..]`.
    fn run(mut self, text: &str) {
        let bytes = text.as_bytes();
        let mut at = self.start;
        let mut open_string = false;
        while let Some(&byte) = bytes.get(at) {
            if self.report.found.len() > MAX_PROBLEMS {
                return;
            }
            match byte {
                _ if byte.is_ascii_whitespace() => at += 1,
                b'/' if comment_end(bytes, at).is_some() => {
                    // Comments are read leniently; only an unclosed one is a problem.
                    at = comment_end(bytes, at).unwrap_or(bytes.len());
                }
                b'/' if bytes.get(at + 1) == Some(&b'*') => {
                    self.problem(
                        at,
                        "a comment that is never closed; JSON has no comments: delete it",
                    );
                    return;
                }
                b'#' => {
                    self.problem(
                        at,
                        "a comment; JSON has no comments: delete it to the end of the line",
                    );
                    at = bytes[at..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .map_or(bytes.len(), |offset| at + offset);
                }
                b'"' | b'\'' => {
                    let (end, closed) = quoted_end(bytes, at);
                    if byte == b'\'' {
                        self.problem(
                            at,
                            "single quotes; JSON keys and strings take double quotes",
                        );
                    } else {
                        self.raw_control_characters(text, at, end);
                    }
                    if !closed {
                        open_string = true;
                        self.before_token(at);
                        break;
                    }
                    let body = &text[at + 1..end - 1];
                    self.string(at, body);
                    at = end;
                }
                b'{' | b'[' => {
                    self.before_token(at);
                    self.stack.push(Frame {
                        open: byte,
                        key: None,
                        index: 0,
                    });
                    self.expect = if byte == b'{' {
                        Expect::KeyOrClose
                    } else {
                        Expect::ValueOrClose
                    };
                    at += 1;
                }
                b'}' | b']' => {
                    self.close(at, byte);
                    at += 1;
                }
                b':' => {
                    if self.expect == Expect::Colon {
                        self.expect = Expect::Value;
                    } else {
                        self.problem(at, "a colon where none belongs; delete it");
                    }
                    at += 1;
                }
                b',' => {
                    self.comma(at);
                    at += 1;
                }
                _ => at = self.word(text, at),
            }
        }
        self.unfinished(text.len(), open_string);
    }

    /// The pointer of the value being written now.
    fn path(&self) -> Option<String> {
        if self.stack.is_empty() {
            return None;
        }
        let mut path = String::new();
        for frame in &self.stack {
            path.push('/');
            match (&frame.key, frame.open) {
                (Some(key), b'{') => path.push_str(&key.replace('~', "~0").replace('/', "~1")),
                (None, b'{') => return Some(path.trim_end_matches('/').to_owned()),
                _ => path.push_str(&frame.index.to_string()),
            }
        }
        Some(path)
    }

    fn problem(&mut self, at: usize, what: &str) {
        self.report.at(at, None, what.to_owned());
    }

    fn value_problem(&mut self, at: usize, what: String) {
        let path = self.path();
        self.report.at(at, path, what);
    }

    /// What a token starting a value or a key at `at` says about the punctuation before
    /// it: a missing comma or colon is reported, then read as if it were there.
    fn before_token(&mut self, at: usize) {
        match self.expect {
            Expect::CommaOrClose => {
                self.problem(at, "a comma is missing before this; insert `,`");
                self.after_comma();
            }
            Expect::Colon => {
                self.problem(at, "a colon is missing after the key; insert `:`");
                self.expect = Expect::Value;
            }
            Expect::End => self.problem(at, "a second value after the JSON; delete it"),
            _ => {}
        }
    }

    /// A string (its body as written): a key where one is due, else a value.
    fn string(&mut self, at: usize, body: &str) {
        self.before_token(at);
        if matches!(self.expect, Expect::Key | Expect::KeyOrClose) {
            self.key(body.to_owned());
        } else {
            self.value_done();
        }
    }

    fn key(&mut self, key: String) {
        if let Some(frame) = self.stack.last_mut() {
            frame.key = Some(key);
        }
        self.expect = Expect::Colon;
    }

    /// A value is complete: a comma or the container's end comes next.
    fn value_done(&mut self) {
        self.expect = if self.stack.is_empty() {
            Expect::End
        } else {
            Expect::CommaOrClose
        };
    }

    fn after_comma(&mut self) {
        match self.stack.last_mut() {
            Some(frame) if frame.open == b'{' => {
                frame.key = None;
                self.expect = Expect::Key;
            }
            Some(frame) => {
                frame.index += 1;
                self.expect = Expect::Value;
            }
            None => self.expect = Expect::End,
        }
    }

    fn comma(&mut self, at: usize) {
        match self.expect {
            Expect::CommaOrClose => self.after_comma(),
            Expect::End => self.problem(at, "a comma after the JSON's end; delete it"),
            _ => self.problem(at, "an extra comma; delete it"),
        }
    }

    fn close(&mut self, at: usize, byte: u8) {
        let Some(open) = self.stack.last().map(|frame| frame.open) else {
            let what = format!("`{}` closes nothing; delete it", byte as char);
            self.problem(at, &what);
            return;
        };
        let wanted = if open == b'{' { b'}' } else { b']' };
        if matches!(self.expect, Expect::Value | Expect::Colon) && self.after_key_or_top() {
            self.value_problem(at, "a value is missing before this; write one".to_owned());
        }
        if byte != wanted {
            let what = format!(
                "`{}` cannot close `{}`; write `{}`",
                byte as char, open as char, wanted as char
            );
            self.problem(at, &what);
        }
        self.stack.pop();
        self.value_done();
    }

    /// Whether a value is due because of a key (`"a": }`) rather than a trailing comma,
    /// which the lenient reading accepts.
    fn after_key_or_top(&self) -> bool {
        self.expect == Expect::Colon
            || self
                .stack
                .last()
                .is_some_and(|frame| frame.open == b'{' && frame.key.is_some())
    }

    /// A raw line break or other control character inside the string `at..end`.
    fn raw_control_characters(&mut self, text: &str, at: usize, end: usize) {
        let body = &text[at..end];
        if let Some(offset) = body.find(|c: char| c.is_control()) {
            self.problem(
                at + offset,
                "a raw line break or control character inside a string; write it escaped, as `\\n`",
            );
        }
    }

    /// A run of characters that is no punctuation and no string: a number, a literal,
    /// a key or text without quotes. Returns where the scan goes on.
    fn word(&mut self, text: &str, at: usize) -> usize {
        let end = word_end(text, at);
        let word = &text[at..end];
        if matches!(self.expect, Expect::Key | Expect::KeyOrClose) {
            self.problem(at, "a key without quotes; write it in double quotes");
            self.key(word.to_owned());
            return end;
        }
        self.before_token(at);
        if is_json_literal(word) {
            self.value_done();
            return end;
        }
        let (what, end) = match fixed_literal(word) {
            Some(what) => (what, end),
            // Text without quotes runs on over spaces to the next punctuation.
            None => (
                "text without quotes; a JSON string takes double quotes".to_owned(),
                unquoted_text_end(text, at),
            ),
        };
        self.value_problem(at, what);
        self.value_done();
        end
    }

    /// The end of the text, with brackets or a string still open.
    fn unfinished(&mut self, len: usize, open_string: bool) {
        if self.stack.is_empty() && !open_string && self.expect != Expect::Value {
            return;
        }
        let mut closers: String = if open_string {
            "\"".into()
        } else {
            String::new()
        };
        closers.extend(
            self.stack
                .iter()
                .rev()
                .map(|frame| if frame.open == b'{' { '}' } else { ']' }),
        );
        let value_due = !open_string
            && matches!(self.expect, Expect::Value | Expect::Colon)
            && self.after_key_or_top();
        let what = if value_due {
            format!(
                "the JSON stops before its end; write the missing value, then close with `{closers}`"
            )
        } else {
            format!("the JSON stops before its end; close it with `{closers}`")
        };
        self.value_problem(len, what);
    }
}

/// Where a word that starts at `at` ends: at whitespace, punctuation, a quote or a
/// comment.
fn word_end(text: &str, at: usize) -> usize {
    text[at..]
        .find(|c: char| c.is_whitespace() || "{}[]:,\"'#".contains(c) || c == '/')
        .map_or(text.len(), |offset| at + offset)
}

/// Where text without quotes that starts at `at` ends: before the next punctuation or
/// line break (trailing spaces excluded).
fn unquoted_text_end(text: &str, at: usize) -> usize {
    let stop = text[at..]
        .find(|c: char| "{}[],\"\n".contains(c))
        .map_or(text.len(), |offset| at + offset);
    at + text[at..stop].trim_end().len()
}

/// Whether `word` is a JSON literal or number as written.
fn is_json_literal(word: &str) -> bool {
    matches!(word, "true" | "false" | "null") || serde_json::from_str::<Number>(word).is_ok()
}

/// What a number or literal that JSON does not have is, and what to write instead;
/// `None` when the word is neither (text without quotes).
fn fixed_literal(word: &str) -> Option<String> {
    let lower = word.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    let replacement = match lower.as_str() {
        "true" | "yes" => "true".to_owned(),
        "false" | "no" => "false".to_owned(),
        "none" | "null" | "nil" | "undefined" => "null".to_owned(),
        _ if matches!(unsigned, "nan" | "inf" | "infinity") => {
            return Some(format!(
                "`{word}` is no JSON number; write a number, or null where the schema allows it"
            ));
        }
        _ => {
            return fixed_number(word)
                .map(|number| format!("`{word}` is not a JSON number; write `{number}`"));
        }
    };
    Some(format!("`{word}` is not JSON; write `{replacement}`"))
}

/// The JSON form of a number written the way JSON does not allow: hexadecimal, octal or
/// binary, a leading `+` or zeros, a bare leading or trailing point, digit separators.
fn fixed_number(word: &str) -> Option<String> {
    let (negative, digits) = match word.as_bytes().first()? {
        b'-' => (true, &word[1..]),
        b'+' => (false, &word[1..]),
        _ => (false, word),
    };
    if !digits.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let sign = if negative { "-" } else { "" };
    let lower = digits.to_ascii_lowercase().replace('_', "");
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(rest) = lower.strip_prefix(prefix) {
            let value = u128::from_str_radix(rest, radix).ok()?;
            return Some(format!("{sign}{value}"));
        }
    }
    let mut plain = lower.trim_start_matches('0').to_owned();
    if plain.is_empty() || plain.starts_with(['.', 'e']) {
        plain.insert(0, '0');
    }
    if let Some(stripped) = plain.strip_suffix('.') {
        plain = stripped.to_owned();
    }
    plain = plain.replace(".e", "e");
    let fixed = format!("{sign}{plain}");
    (fixed != word && serde_json::from_str::<Number>(&fixed).is_ok()).then_some(fixed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whats(text: &str) -> Vec<String> {
        diagnose(text).into_iter().map(|p| p.what).collect()
    }

    fn one(text: &str) -> SyntaxProblem {
        let found = diagnose(text);
        assert_eq!(found.len(), 1, "{text}: {found:?}");
        found.into_iter().next().unwrap()
    }

    #[test]
    fn prose_and_fences_around_the_json_are_located() {
        let found = one("Sure! Here it is:\n```json\n{\"value\": 1}\n```\nAnything else?");
        assert_eq!(
            found.what,
            "prose or a code fence around the JSON; delete everything before line 3 col 1 \
             and after line 3 col 12 and send the JSON alone"
        );
        assert_eq!((found.line, found.column), (1, 1));
        let after = one("{\"value\": 1} hope this helps");
        assert!(after.what.contains("after line 1 col 12"), "{}", after.what);
        assert!(!after.what.contains("before"));
        assert_eq!(
            one("I cannot tell.").what,
            "text, not JSON; send the answer as JSON"
        );
    }

    #[test]
    fn quotes_keys_and_unquoted_text_are_named() {
        assert_eq!(
            whats("{'value': 'Ann'}"),
            vec![
                "single quotes; JSON keys and strings take double quotes",
                "single quotes; JSON keys and strings take double quotes"
            ]
        );
        let bare = diagnose("{value: {name: Ann Smith, age: 3}}");
        let places: Vec<(usize, &str)> = bare.iter().map(|p| (p.column, p.what.as_str())).collect();
        assert_eq!(
            places,
            vec![
                (2, "a key without quotes; write it in double quotes"),
                (10, "a key without quotes; write it in double quotes"),
                (16, "text without quotes; a JSON string takes double quotes"),
                (27, "a key without quotes; write it in double quotes"),
            ]
        );
        assert_eq!(bare[2].path.as_deref(), Some("/value/name"));
    }

    #[test]
    fn numbers_and_literals_json_lacks_say_what_to_write() {
        let found = diagnose(
            "{\"a\": NaN, \"b\": -Infinity, \"c\": 0x2A, \"d\": True, \"e\": None, \
             \"f\": +5, \"g\": .5, \"h\": 007, \"i\": [1_000]}",
        );
        let whats: Vec<&str> = found.iter().map(|p| p.what.as_str()).collect();
        assert_eq!(
            whats,
            vec![
                "`NaN` is no JSON number; write a number, or null where the schema allows it",
                "`-Infinity` is no JSON number; write a number, or null where the schema allows it",
                "`0x2A` is not a JSON number; write `42`",
                "`True` is not JSON; write `true`",
                "`None` is not JSON; write `null`",
                "`+5` is not a JSON number; write `5`",
                "`.5` is not a JSON number; write `0.5`",
                "`007` is not a JSON number; write `7`",
                "`1_000` is not a JSON number; write `1000`",
            ]
        );
        assert_eq!(found[0].path.as_deref(), Some("/a"));
        assert_eq!(found[8].path.as_deref(), Some("/i/0"));
    }

    #[test]
    fn comments_json_has_not_are_named() {
        assert_eq!(
            whats("{\"value\": 1 # the count\n}"),
            vec!["a comment; JSON has no comments: delete it to the end of the line"]
        );
        assert_eq!(
            whats("{\"value\": 1 /* never closed }"),
            vec!["a comment that is never closed; JSON has no comments: delete it"]
        );
        // Comments the lenient reading accepts are no problem.
        assert!(whats("{\"value\": 1 /* ok */ // fine\n}").is_empty());
    }

    #[test]
    fn extra_and_missing_commas_and_colons_are_placed() {
        let found = diagnose("[1,,2 3]");
        let places: Vec<(usize, &str)> =
            found.iter().map(|p| (p.column, p.what.as_str())).collect();
        assert_eq!(
            places,
            vec![
                (4, "an extra comma; delete it"),
                (7, "a comma is missing before this; insert `,`"),
            ]
        );
        assert_eq!(
            whats("{\"a\" 1, \"b\": 2 \"c\": 3}"),
            vec![
                "a colon is missing after the key; insert `:`",
                "a comma is missing before this; insert `,`"
            ]
        );
        // A trailing comma is read leniently.
        assert!(whats("[1, 2,]").is_empty());
    }

    #[test]
    fn an_unfinished_reply_says_what_closes_it() {
        let cut = one("{\"value\": {\"name\": \"An");
        assert_eq!(
            cut.what,
            "the JSON stops before its end; close it with `\"}}`"
        );
        assert_eq!((cut.line, cut.column), (1, 23));
        assert_eq!(
            one("{\"value\": [1, 2").what,
            "the JSON stops before its end; close it with `]}`"
        );
        let due = one("{\"value\": {\"age\": ");
        assert_eq!(
            due.what,
            "the JSON stops before its end; write the missing value, then close with `}}`"
        );
        assert_eq!(due.path.as_deref(), Some("/value/age"));
    }

    #[test]
    fn brackets_that_close_the_wrong_thing_are_named() {
        assert_eq!(
            whats("{\"value\": [1, 2}}"),
            vec!["`}` cannot close `[`; write `]`"]
        );
        assert_eq!(
            whats("{\"a\": }"),
            vec!["a value is missing before this; write one"]
        );
    }

    #[test]
    fn raw_line_breaks_in_strings_are_named() {
        assert_eq!(
            whats("{\"value\": \"two\nlines\"}"),
            vec![
                "a raw line break or control character inside a string; write it escaped, as `\\n`"
            ]
        );
    }

    #[test]
    fn excerpts_are_short_and_on_one_line() {
        let long = format!("{{\"value\": [{}NaN]}}", "1, ".repeat(3000));
        let found = one(&long);
        assert!(found.excerpt.chars().count() <= 2 * EXCERPT_SIDE);
        assert!(found.excerpt.contains("NaN"), "{}", found.excerpt);
        assert_eq!(found.path.as_deref(), Some("/value/3000"));
        let excerpt = one("{\"value\":\n`x`}").excerpt;
        assert!(
            !excerpt.contains('\n') && !excerpt.contains('`'),
            "{excerpt}"
        );
    }

    #[test]
    fn every_single_quoted_string_is_named() {
        let found = diagnose("{'value': {'id': '7', 'lines': [{'sku': 'A-1'}], 'n': 5}}");
        let columns: Vec<usize> = found.iter().map(|p| p.column).collect();
        assert_eq!(columns, vec![2, 12, 18, 23, 34, 41, 50]);
        // The JSON inside a broken reply is not taken for an answer in prose.
        assert_eq!(
            whats("{\"value\": {\"score\": NaN, \"tags\": [\"x\"]}}"),
            vec!["`NaN` is no JSON number; write a number, or null where the schema allows it"]
        );
    }

    #[test]
    fn any_text_is_scanned_without_panicking() {
        for text in [
            "", "{", "[", "\"", "'", "{\"a\"", "é{'é", "{/*", "}{", "[[[[", "{\"\\", "-",
        ] {
            let _ = diagnose(text);
        }
    }
}
