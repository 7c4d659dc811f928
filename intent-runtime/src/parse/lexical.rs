//! Where strings and comments lie in a JSON-like text: the lexical facts that the
//! lenient reading and the answer extraction share, so that neither mistakes a brace,
//! a comma or a slash inside a string for structure.

/// The index just past the string that opens at `start` (a `"`), or the text's length
/// when the string never closes. Escapes are skipped whole, so `\"` ends nothing.
pub(super) fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// A comment that opens at `start`: its end (exclusive) when `bytes[start..]` begins
/// one. A line comment ends before its newline; a block comment that never closes is
/// no comment (skipping it would swallow the rest of the reply).
pub(super) fn comment_end(bytes: &[u8], start: usize) -> Option<usize> {
    if bytes.get(start) != Some(&b'/') {
        return None;
    }
    match bytes.get(start + 1) {
        Some(b'/') => Some(
            bytes[start..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |offset| start + offset),
        ),
        Some(b'*') => bytes
            .get(start + 2..)?
            .windows(2)
            .position(|pair| pair == b"*/")
            .map(|offset| start + 2 + offset + 2),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_end_after_their_closing_quote_escapes_included() {
        let text = br#""a\"b" x"#;
        assert_eq!(string_end(text, 0), 6);
        assert_eq!(string_end(br#""\\" x"#, 0), 4);
        assert_eq!(string_end(br#""open"#, 0), 5);
        assert_eq!(string_end(br#""trailing\"#, 0), 10);
    }

    #[test]
    fn comments_end_before_the_newline_or_after_the_close() {
        assert_eq!(comment_end(b"// x\n1", 0), Some(4));
        assert_eq!(comment_end(b"// x", 0), Some(4));
        assert_eq!(comment_end(b"/* x */1", 0), Some(7));
        assert_eq!(comment_end(b"/*/", 0), None);
        assert_eq!(comment_end(b"/* never closed", 0), None);
        assert_eq!(comment_end(b"/ x", 0), None);
        assert_eq!(comment_end(b"1", 0), None);
    }
}
