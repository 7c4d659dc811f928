//! The model's text in the pieces of a streamed reply, appended to the text gathered so
//! far without a `String` per piece.
//!
//! A whole reply's text is read by `serde_json` itself (its string parser unescapes in the
//! same pass that finds the string's end; reading the literal first and unescaping it
//! after cost about 2 % more of a call under callgrind's cache and branch model). A
//! streamed piece arrives as a borrowed literal inside its chunk, so it is unescaped here.
//! Anything unusual (a lone surrogate, a literal that is not a string) is left to
//! `serde_json`, so what is accepted and every error stay exactly `serde_json`'s.

use crate::parse::json_string;

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

    use super::*;

    fn read(literal: &str) -> Result<String, String> {
        let mut text = "before:".to_owned();
        push_literal(literal, &mut text).map_err(|err| err.to_string())?;
        Ok(text)
    }

    /// The text of `literal`, or `None` when this module leaves it to `serde_json`.
    fn unescape_literal(literal: &str) -> Option<String> {
        let mut text = String::new();
        unescape_into(literal, &mut text)?;
        Some(text)
    }

    #[test]
    fn escaped_json_is_appended_exactly() {
        let text = read(r#""{\"value\":[1,\"a\\nb\"],\"\u00e9\":\"\ud83d\ude00\/\t\"}""#).unwrap();
        assert_eq!(
            text,
            "before:{\"value\":[1,\"a\\nb\"],\"\u{e9}\":\"\u{1F600}/\t\"}"
        );
    }

    #[test]
    fn what_serde_json_refuses_is_refused_with_its_message() {
        let lone = read(r#""\ud83d""#).unwrap_err();
        assert!(lone.starts_with("unexpected end of hex escape"), "{lone}");
        let array = read(r#"["a"]"#).unwrap_err();
        assert!(array.contains("expected a string"), "{array}");
    }

    #[test]
    fn a_refused_piece_leaves_the_text_gathered_so_far_as_it_was() {
        // A lone low surrogate: declined here, refused by serde_json, and the part
        // unescaped before it is taken back out.
        let mut text = "kept".to_owned();
        assert!(push_literal(r#""ab\udc00""#, &mut text).is_err());
        assert_eq!(text, "kept");
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
