//! The body of a JSON string literal: where it stops and what its escapes stand for.
//!
//! Shared by the two places that read string literals without `serde_json`'s scratch
//! buffer: a provider reply's text field (`provider::reply_text`) and the hand-written
//! tape scanner (`verify::fast_path::tape::scan`). Both decline what this module does not
//! read, and `serde_json` then decides, so a literal is never read differently from
//! `serde_json`.

/// The bytes at which the scan of a string stops: an escape, or what no JSON string
/// holds unescaped (a quote, a control character). One table lookup per byte costs about
/// a sixth less than the three comparisons it replaces (callgrind, the bench invoice).
pub(crate) static STOPS: [bool; 256] = {
    let mut stops = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        stops[byte] = true;
        byte += 1;
    }
    stops[b'"' as usize] = true;
    stops[b'\\' as usize] = true;
    stops
};

/// Appends the text of a string literal's body (what lies between its quotes) to
/// `text`; `None` (with part of it perhaps appended) when the body holds an unescaped
/// quote or control character, an unknown escape, or a lone surrogate.
pub(crate) fn unescape_body(body: &str, text: &mut String) -> Option<()> {
    let bytes = body.as_bytes();
    text.reserve(body.len());
    // The text is copied in runs between escapes. Most escapes in a reply are `\"`: its
    // character is the byte after the backslash, so that byte simply starts the next run
    // instead of being pushed on its own (half the copies for a JSON reply).
    let mut run = 0;
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        if !STOPS[usize::from(byte)] {
            at += 1;
            continue;
        }
        if byte != b'\\' {
            return None;
        }
        // Every stop is ASCII, so `run..at` lies on character boundaries.
        text.push_str(body.get(run..at)?);
        let escaped = *bytes.get(at + 1)?;
        match escaped {
            b'"' | b'\\' | b'/' => {
                run = at + 1;
                at += 2;
                continue;
            }
            b'b' => text.push('\u{8}'),
            b'f' => text.push('\u{c}'),
            b'n' => text.push('\n'),
            b'r' => text.push('\r'),
            b't' => text.push('\t'),
            b'u' => {
                let (character, digits) = unicode_escape(body.get(at + 2..)?)?;
                text.push(character);
                at += 2 + digits;
                run = at;
                continue;
            }
            _ => return None,
        }
        at += 2;
        run = at;
    }
    text.push_str(body.get(run..)?);
    Some(())
}

/// The character of a `\u` escape whose four hex digits start `rest` (a surrogate pair
/// takes a second `\u` escape), and how many bytes of `rest` it took.
fn unicode_escape(rest: &str) -> Option<(char, usize)> {
    let first = hex4(rest)?;
    match first {
        0xD800..=0xDBFF => {
            let second = hex4(rest.get(4..)?.strip_prefix("\\u")?)?;
            if !(0xDC00..=0xDFFF).contains(&second) {
                return None;
            }
            let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
            Some((char::from_u32(code)?, 10))
        }
        _ => Some((char::from_u32(first)?, 4)),
    }
}

fn hex4(text: &str) -> Option<u32> {
    let digits = text.get(..4)?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}
