//! The model's text inside a provider's JSON reply, read into a `String` allocated once.
//!
//! A structured reply is JSON inside a JSON string, so nearly every quote in it is
//! escaped. `serde_json` reads an escaped string through a scratch buffer that starts
//! empty and doubles as it fills: about ten `realloc`s for a 2 KB reply, each taking the
//! allocator's lock on a multi-threaded runtime, then a copy into the `String`. The
//! reply's literal is borrowed instead and unescaped into a `String` of the literal's
//! length (never shorter than the text it holds). Anything unusual (a lone surrogate, a
//! literal that is not a string) is left to `serde_json`, so what is accepted and every
//! error stay exactly `serde_json`'s.

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::parse::json_string;

/// `deserialize_with` for an optional text field (`null` or absent is `None`).
pub(crate) fn optional_text<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    let Some(literal) = Option::<&'de RawValue>::deserialize(deserializer)? else {
        return Ok(None);
    };
    match unescape_literal(literal.get()) {
        Some(text) => Ok(Some(text)),
        None => serde_json::from_str(literal.get()).map_err(serde::de::Error::custom),
    }
}

/// The text of a JSON string literal (quotes included), or `None` when the literal is
/// not one this function reads (then `serde_json` decides).
fn unescape_literal(literal: &str) -> Option<String> {
    let mut text = String::with_capacity(literal.len());
    unescape_into(literal, &mut text)?;
    Some(text)
}

/// Appends the text of the JSON string literal `literal` (quotes included) to `text`:
/// what a streamed reply does with each piece, into the text gathered so far, without a
/// `String` per piece. An error is `serde_json`'s, as for a whole reply.
pub(crate) fn push_literal(literal: &str, text: &mut String) -> Result<(), serde_json::Error> {
    let before = text.len();
    if unescape_into(literal, text).is_none() {
        text.truncate(before);
        text.push_str(&serde_json::from_str::<String>(literal)?);
    }
    Ok(())
}

/// Appends the text of `literal` (quotes included) to `text`; `None` (with part of it
/// perhaps appended) when the literal is not one this function reads.
fn unescape_into(literal: &str, text: &mut String) -> Option<()> {
    let body = literal.strip_prefix('"')?.strip_suffix('"')?;
    json_string::unescape_body(body, text)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize, Debug, PartialEq)]
    struct Message {
        #[serde(default, deserialize_with = "optional_text")]
        content: Option<String>,
    }

    fn read(json: &str) -> Result<Message, String> {
        serde_json::from_slice(json.as_bytes()).map_err(|err| err.to_string())
    }

    #[test]
    fn escaped_json_comes_back_exactly() {
        let message =
            read(r#"{"content":"{\"value\":[1,\"a\\nb\"],\"\u00e9\":\"\ud83d\ude00\/\t\"}"}"#)
                .unwrap();
        assert_eq!(
            message.content.as_deref(),
            Some("{\"value\":[1,\"a\\nb\"],\"\u{e9}\":\"\u{1F600}/\t\"}")
        );
    }

    #[test]
    fn null_and_absent_are_none() {
        assert_eq!(read(r#"{"content":null}"#).unwrap().content, None);
        assert_eq!(read("{}").unwrap().content, None);
    }

    #[test]
    fn what_serde_json_refuses_is_refused_with_its_message() {
        let lone = read(r#"{"content":"\ud83d"}"#).unwrap_err();
        assert!(lone.starts_with("unexpected end of hex escape"), "{lone}");
        let array = read(r#"{"content":["a"]}"#).unwrap_err();
        assert!(array.contains("expected a string"), "{array}");
    }

    #[test]
    fn the_text_is_allocated_once_at_its_final_size() {
        let text = "{\"value\":\"".to_owned() + &"ab\\\"".repeat(500) + "\"}";
        let literal = serde_json::to_string(&text).unwrap();
        let read = unescape_literal(&literal).unwrap();
        assert_eq!(read, text);
        assert!(read.capacity() <= literal.len() && read.capacity() >= text.len());
    }

    /// Pieces of a JSON string literal's body: plain text, every escape, and broken ones.
    fn literal_piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z é😀{}:,\\[\\]]{0,6}",
            Just("\\\"".to_owned()),
            Just("\\\\".to_owned()),
            Just("\\/".to_owned()),
            Just("\\b\\f\\n\\r\\t".to_owned()),
            "\\\\u[0-9a-fA-F]{4}",
            Just("\\ud83d\\ude00".to_owned()),
            Just("\\ud83d".to_owned()),
            Just("\\ude00".to_owned()),
            Just("\\x".to_owned()),
            Just("\\u12".to_owned()),
            Just("\"".to_owned()),
            Just("\u{1}".to_owned()),
        ]
    }

    proptest! {
        #[test]
        fn any_text_round_trips(text in any::<String>()) {
            let literal = serde_json::to_string(&text).unwrap();
            prop_assert_eq!(unescape_literal(&literal), Some(text));
        }

        #[test]
        fn agrees_with_serde_json_whenever_it_answers(
            pieces in proptest::collection::vec(literal_piece(), 0..12)
        ) {
            let literal = format!("\"{}\"", pieces.concat());
            let expected = serde_json::from_str::<String>(&literal).ok();
            match unescape_literal(&literal) {
                Some(text) => prop_assert_eq!(Some(text), expected),
                None => {
                    // Declining is always safe: `serde_json` decides then. It only declines
                    // what `serde_json` itself refuses.
                    prop_assert_eq!(expected, None);
                }
            }
        }
    }
}
