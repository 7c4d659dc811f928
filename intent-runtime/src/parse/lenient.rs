//! The two leniencies a reply may take, comments and trailing commas, applied by one
//! scan that blanks them outside strings; `serde_json` then reads the result.
//!
//! Everything else is judged by `serde_json`'s strict rules and recursion limit, exactly
//! as a clean reply is: a raw control character in a string, a lone surrogate or a
//! reply nested past the limit stays an error, and nothing here recurses, so a reply of
//! any depth is safe on a small stack. Blanking keeps every newline and every byte's
//! position, so the parser's line and column still point into the reply as written.

use super::lexical::{comment_end, string_end};

/// A text with its comments and trailing commas blanked out, and which of the two the
/// scan found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Blanked {
    /// The text, each blanked byte a space (newlines kept).
    pub text: String,
    /// Whether a comment was blanked.
    pub comments: bool,
    /// Whether a trailing comma was blanked.
    pub trailing_commas: bool,
}

/// Blanks the comments and trailing commas outside strings, or `None` when there are
/// none (the text is then no more readable than it was).
///
/// A comma counts as trailing when a `]` or `}` follows it (past whitespace and
/// comments) and a value precedes it: `[1,]` loses its comma, `[,]` and `[1,,]` keep
/// theirs and stay errors.
pub(super) fn blank_comments_and_trailing_commas(text: &str) -> Option<Blanked> {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let (mut comments, mut trailing_commas) = (false, false);
    // The last two significant bytes (outside comments and whitespace) and where the
    // last one is: enough to tell a trailing comma when a closing bracket comes.
    let mut last: Option<(usize, u8)> = None;
    let mut before_last: Option<u8> = None;
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        if byte == b'"' {
            before_last = last.map(|(_, b)| b);
            last = Some((at, byte));
            at = string_end(bytes, at);
            continue;
        }
        if let Some(end) = comment_end(bytes, at) {
            blank(&mut out[at..end]);
            comments = true;
            at = end;
            continue;
        }
        if byte.is_ascii_whitespace() {
            at += 1;
            continue;
        }
        if matches!(byte, b']' | b'}')
            && let Some((comma, b',')) = last
            && before_last.is_some_and(|b| !matches!(b, b'[' | b'{' | b',' | b':'))
        {
            out[comma] = b' ';
            trailing_commas = true;
            // The comma is gone: the byte before it is again the one before this bracket.
            last = Some((at, byte));
            at += 1;
            continue;
        }
        before_last = last.map(|(_, b)| b);
        last = Some((at, byte));
        at += 1;
    }
    if !comments && !trailing_commas {
        return None;
    }
    // Only whole comments (ending at ASCII) and ASCII commas were blanked, so the text
    // is still UTF-8; should that ever fail, there is nothing lenient to offer.
    let text = String::from_utf8(out).ok()?;
    Some(Blanked {
        text,
        comments,
        trailing_commas,
    })
}

/// Spaces over every byte but line breaks, so positions and line numbers survive.
fn blank(bytes: &mut [u8]) {
    for byte in bytes {
        if !matches!(byte, b'\n' | b'\r') {
            *byte = b' ';
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blanked(text: &str) -> Option<(String, bool, bool)> {
        blank_comments_and_trailing_commas(text).map(|b| (b.text, b.comments, b.trailing_commas))
    }

    #[test]
    fn comments_are_blanked_in_place() {
        assert_eq!(
            blanked("{// a\n\"v\": 1 /* b */}"),
            Some(("{    \n\"v\": 1        }".to_owned(), true, false))
        );
    }

    #[test]
    fn trailing_commas_are_blanked_past_whitespace_and_comments() {
        assert_eq!(
            blanked("[1, 2, ]"),
            Some(("[1, 2  ]".to_owned(), false, true))
        );
        assert_eq!(
            blanked("{\"a\": [1,] , /* x */ }"),
            Some(("{\"a\": [1 ]           }".to_owned(), true, true))
        );
        assert_eq!(
            blanked("{\"a\": \"s\",}"),
            Some(("{\"a\": \"s\" }".to_owned(), false, true))
        );
    }

    #[test]
    fn commas_without_a_value_before_them_stay() {
        assert_eq!(blanked("[,]"), None);
        assert_eq!(blanked("[1,,]"), None);
        assert_eq!(blanked("{,}"), None);
        assert_eq!(blanked("{\"a\":,}"), None);
    }

    #[test]
    fn strings_are_never_touched() {
        assert_eq!(blanked(r#"["http://x", "/* y */", "a,]"]"#), None);
        assert_eq!(blanked(r#"["esc\"aped // no", 1]"#), None);
    }

    #[test]
    fn clean_text_and_unclosed_block_comments_need_nothing() {
        assert_eq!(blanked("{\"a\": [1, 2]}"), None);
        assert_eq!(blanked("[1] /* never closed"), None);
    }

    #[test]
    fn multibyte_text_in_comments_leaves_utf8() {
        let (text, comments, _) = blanked("[1 /* é ü */]").unwrap();
        assert!(comments);
        assert_eq!(text.trim_end_matches(']').trim(), "[1");
    }
}
