//! A hand-written reader of the tape, for the JSON texts replies are made of.
//!
//! Building the tape through `serde_json`'s `Deserializer` cost about 250 instructions a
//! node (its visitor calls, a scratch buffer per string, a seed per member); this reader
//! walks the bytes once. It reads a subset of `serde_json`'s grammar exactly and declines
//! (`None`) everything else: deep nesting, lone surrogates, and numbers it does not read
//! itself go back to the `Deserializer`, which then accepts or refuses them as it always
//! did. So whatever this reader answers is what the `Deserializer` builds (property-tested
//! below), and it changes how fast a tape is built, never what it holds.

use std::borrow::Cow;

use serde_json::Number;

use super::{Entry, Tape};
use crate::parse::WIDE_INTEGER_MAGNITUDE;
use crate::parse::json_string::{STOPS, unescape_body};

/// Containers nested deeper than this are left to `serde_json` (whose own limit, 128, is
/// then the one that applies), which also bounds this reader's recursion.
const MAX_DEPTH: usize = 100;

/// Integers of at most this many digits fit in an `i64` or `u64` whatever they are;
/// longer ones are read by `serde_json`, which turns those beyond 64 bits into floats.
const EXACT_INTEGER_DIGITS: usize = 18;

/// The tape of `text`, or `None` when this reader leaves the text to `serde_json`.
pub(super) fn scan(text: &str) -> Option<Tape<'_>> {
    let mut scanner = Scanner {
        text,
        at: 0,
        tape: Tape::for_text(text),
    };
    scanner.value(0)?;
    scanner.skip_whitespace();
    (scanner.at == text.len()).then_some(scanner.tape)
}

struct Scanner<'t> {
    text: &'t str,
    /// Byte offset of the next byte to read; always on a character boundary between
    /// tokens.
    at: usize,
    tape: Tape<'t>,
}

impl<'t> Scanner<'t> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// Skips what `serde_json` counts as whitespace (not every Unicode space).
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// Reads one value of any kind, after optional whitespace; `depth` counts the
    /// containers it is inside.
    fn value(&mut self, depth: usize) -> Option<()> {
        self.skip_whitespace();
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => {
                let text = self.string()?;
                self.tape.push(Entry::String(text));
                Some(())
            }
            b't' => self.word("true", Entry::Bool(true)),
            b'f' => self.word("false", Entry::Bool(false)),
            b'n' => self.word("null", Entry::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn word(&mut self, word: &str, entry: Entry<'t>) -> Option<()> {
        if !self
            .text
            .as_bytes()
            .get(self.at..)?
            .starts_with(word.as_bytes())
        {
            return None;
        }
        self.at += word.len();
        self.tape.push(entry);
        Some(())
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.at += 1;
        let start = self.tape.entries.len();
        self.tape.push(Entry::Array { len: 0, end: 0 });
        let mut len = 0;
        self.skip_whitespace();
        if self.peek()? == b']' {
            self.at += 1;
        } else {
            loop {
                self.value(depth)?;
                len += 1;
                if self.end_of_member(b']')? {
                    break;
                }
            }
        }
        self.tape.close(start, len);
        Some(())
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.at += 1;
        let start = self.tape.entries.len();
        self.tape.push(Entry::Object { len: 0, end: 0 });
        let mut len = 0;
        self.skip_whitespace();
        if self.peek()? == b'}' {
            self.at += 1;
        } else {
            loop {
                self.skip_whitespace();
                if self.peek()? != b'"' {
                    return None;
                }
                let name = self.string()?;
                self.tape.push(Entry::Key(name));
                self.skip_whitespace();
                if self.peek()? != b':' {
                    return None;
                }
                self.at += 1;
                self.value(depth)?;
                len += 1;
                if self.end_of_member(b'}')? {
                    break;
                }
            }
        }
        self.tape.close(start, len);
        Some(())
    }

    /// After a member: `Some(true)` past the closing `close`, `Some(false)` past a comma,
    /// `None` on anything else.
    fn end_of_member(&mut self, close: u8) -> Option<bool> {
        self.skip_whitespace();
        let next = self.peek()?;
        self.at += 1;
        match next {
            b',' => Some(false),
            _ if next == close => Some(true),
            _ => None,
        }
    }

    /// Reads the string whose opening quote is at `self.at`: borrowed from the text
    /// unless it has escapes.
    fn string(&mut self) -> Option<Cow<'t, str>> {
        let bytes = self.text.as_bytes();
        let start = self.at + 1;
        let mut at = start;
        let mut escaped = false;
        loop {
            let byte = *bytes.get(at)?;
            if !STOPS[usize::from(byte)] {
                at += 1;
                continue;
            }
            match byte {
                b'"' => break,
                // The escape's letter is skipped here so that `\"` does not end the
                // string; `unescape_body` checks every escape.
                b'\\' => {
                    escaped = true;
                    at += 2;
                }
                _ => return None,
            }
        }
        let body = self.text.get(start..at)?;
        self.at = at + 1;
        if !escaped {
            return Some(Cow::Borrowed(body));
        }
        let mut text = String::with_capacity(body.len());
        unescape_body(body, &mut text)?;
        Some(Cow::Owned(text))
    }

    /// Reads a number by `serde_json`'s grammar: integers of up to 18 digits here,
    /// others through `serde_json`'s own number parser, so floats round as they do there.
    fn number(&mut self) -> Option<()> {
        let bytes = self.text.as_bytes();
        let start = self.at;
        let mut at = start;
        let negative = bytes.get(at) == Some(&b'-');
        if negative {
            at += 1;
        }
        let digits_start = at;
        match bytes.get(at)? {
            b'0' => at += 1,
            b'1'..=b'9' => at = skip_digits(bytes, at),
            _ => return None,
        }
        let digits = at - digits_start;
        let mut integer = true;
        if bytes.get(at) == Some(&b'.') {
            integer = false;
            let fraction = at + 1;
            at = skip_digits(bytes, fraction);
            if at == fraction {
                return None;
            }
        }
        if let Some(b'e' | b'E') = bytes.get(at) {
            integer = false;
            at += 1;
            if let Some(b'+' | b'-') = bytes.get(at) {
                at += 1;
            }
            let exponent = at;
            at = skip_digits(bytes, exponent);
            if at == exponent {
                return None;
            }
        }
        // What follows a number ends it; `01` or `1x` are `serde_json`'s to refuse.
        if let Some(next) = bytes.get(at)
            && !matches!(next, b' ' | b'\n' | b'\t' | b'\r' | b',' | b']' | b'}')
        {
            return None;
        }
        let token = self.text.get(start..at)?;
        self.at = at;
        // `-0` is a float in `serde_json` (there is no negative integer zero).
        let plain_integer = integer && digits <= EXACT_INTEGER_DIGITS && token != "-0";
        let number = if plain_integer {
            // At most 18 digits: no overflow.
            let magnitude = bytes
                .get(digits_start..at)?
                .iter()
                .fold(0u64, |sum, digit| sum * 10 + u64::from(digit - b'0'));
            if negative {
                Number::from(i64::try_from(magnitude).ok()?.checked_neg()?)
            } else {
                Number::from(magnitude)
            }
        } else {
            let number: Number = token.parse().ok()?;
            if number.is_f64()
                && number
                    .as_f64()
                    .is_some_and(|f| f.abs() >= WIDE_INTEGER_MAGNITUDE)
            {
                self.tape.wide_numbers = true;
            }
            number
        };
        self.tape.push(Entry::Number(number));
        Some(())
    }
}

fn skip_digits(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b'0'..=b'9') = bytes.get(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use proptest::collection::vec;
    use proptest::prelude::*;

    use super::super::tests::json_value;
    use super::*;

    /// The tape `serde_json`'s `Deserializer` builds, the reference for this reader.
    fn reference(text: &str) -> Option<Tape<'_>> {
        Tape::build_with_serde(text).ok()
    }

    /// Texts near JSON: fragments of every token, broken and whole.
    fn near_json() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("{".to_owned()),
            Just("}".to_owned()),
            Just("[".to_owned()),
            Just("]".to_owned()),
            Just(",".to_owned()),
            Just(":".to_owned()),
            Just(" ".to_owned()),
            Just("\"a\"".to_owned()),
            Just("\"".to_owned()),
            Just("\\".to_owned()),
            Just("\\u00e9".to_owned()),
            Just("\\ud83d".to_owned()),
            Just("\\ude00".to_owned()),
            Just("\\n".to_owned()),
            Just("\\x".to_owned()),
            Just("\u{1}".to_owned()),
            Just("true".to_owned()),
            Just("nul".to_owned()),
            Just("-".to_owned()),
            Just("0".to_owned()),
            Just("1".to_owned()),
            Just(".".to_owned()),
            Just("e".to_owned()),
            Just("E+".to_owned()),
            Just("99999999999999999999".to_owned()),
        ];
        vec(piece, 0..14).prop_map(|pieces| pieces.concat())
    }

    #[test]
    fn a_reply_shaped_document_is_read_here_borrowing_its_plain_strings() {
        let text = r#"{"value": {"number": "INV-1", "lines": [{"quantity": 3, "unit_cents": -1250, "tax_code": null}], "paid": false, "rate": 0.2}}"#;
        let tape = scan(text).expect("a reply-shaped document is read by the scanner");
        assert_eq!(Some(&tape), reference(text).as_ref());
        assert!(tape.entries.iter().all(|entry| !matches!(
            entry,
            Entry::String(Cow::Owned(_)) | Entry::Key(Cow::Owned(_))
        )));
    }

    #[test]
    fn what_it_leaves_to_serde_json_is_declined_not_misread() {
        let deep = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        for text in [
            deep(MAX_DEPTH + 1),
            "\"\\ud800\"".to_owned(),
            "\"\\ud83d\\ude00\"".to_owned(),
        ] {
            if text.contains("ude00") {
                // A surrogate pair is read here (one character).
                assert_eq!(scan(&text), reference(&text));
            } else {
                assert_eq!(scan(&text), None, "{text}");
            }
        }
        assert_eq!(scan(&deep(MAX_DEPTH)), reference(&deep(MAX_DEPTH)));
    }

    #[test]
    fn numbers_read_as_serde_json_reads_them() {
        for text in [
            "0",
            "-0",
            "7",
            "-7",
            "999999999999999999",
            "-999999999999999999",
            "9223372036854775807",
            "-9223372036854775808",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775809",
            "1.5",
            "-0.0",
            "1e3",
            "1E+3",
            "2.5e-3",
            "1e300",
            "0.30000000000000004",
            "123456789012345678901234567890",
        ] {
            let reference = reference(text).unwrap();
            let scanned = scan(text).unwrap_or_else(|| panic!("{text} is declined"));
            assert_eq!(scanned, reference, "{text}");
            assert_eq!(
                scanned.has_wide_numbers(),
                reference.has_wide_numbers(),
                "{text}"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_json_is_read_here_as_serde_json_builds_it(value in json_value(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                value.to_string()
            };
            let scanned = scan(&text);
            // Only lone surrogates and deep nesting are declined; generated JSON has neither.
            prop_assert!(scanned.is_some(), "declined: {}", text);
            prop_assert_eq!(scanned, reference(&text));
        }

        #[test]
        fn on_near_json_it_answers_only_what_serde_json_builds(text in near_json()) {
            if let Some(scanned) = scan(&text) {
                prop_assert_eq!(Some(scanned), reference(&text));
            }
        }

        #[test]
        fn on_json_with_one_byte_changed_it_answers_only_what_serde_json_builds(
            value in json_value(),
            position in any::<prop::sample::Index>(),
            byte in prop::sample::select(b"{}[],:\"\\ -+.eE0123456789tfnul\n\x01".to_vec()),
        ) {
            let mut bytes = value.to_string().into_bytes();
            let index = position.index(bytes.len());
            bytes[index] = byte;
            if let Ok(text) = String::from_utf8(bytes)
                && let Some(scanned) = scan(&text)
            {
                prop_assert_eq!(Some(scanned), reference(&text));
            }
        }
    }
}
