//! Lenient reading of replies: code fences, comments, trailing commas, bare primitives,
//! schema-guided repair (property-name case, numbers in strings, enum-member case), and
//! the answer candidates of a reply that wraps its JSON in prose (for opt-in recovery).
//!
//! Lenient about form, strict about content: every leniency here is recorded
//! as a [`Repair`] by the caller, so no repair is silent.

mod diagnose;
mod extract;
pub(crate) mod json_string;
mod lenient;
mod lexical;
mod repair;
mod schema_memo;
pub(crate) mod schema_nav;
mod wide;

pub(crate) use diagnose::{SyntaxProblem, diagnose};
pub use extract::json_candidates;
pub use repair::{Finding, SchemaRepair, repair_against_schema};
pub(crate) use wide::{WIDE_INTEGER_MAGNITUDE, read_with_wide_integers};

use serde_json::{Number, Value};

use crate::result::Repair;

/// Reply text with a surrounding Markdown code fence and whitespace removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unfenced<'a> {
    /// The text inside the fence (or the whole text, trimmed, when there was none).
    pub text: &'a str,
    /// Whether a fence was removed.
    pub fence_stripped: bool,
}

/// Removes a code fence that surrounds the whole reply (```` ```json ... ``` ```` or
/// ```` ``` ... ``` ````) and the whitespace around and inside it.
///
/// A fence that does not surround the whole reply (prose before or after it) is left in
/// place: cutting text out of a longer reply would be a guess.
pub fn strip_code_fence(text: &str) -> Unfenced<'_> {
    let trimmed = text.trim();
    const FENCE: &str = "```";
    let fenced =
        trimmed.len() >= 2 * FENCE.len() && trimmed.starts_with(FENCE) && trimmed.ends_with(FENCE);
    if !fenced {
        return Unfenced {
            text: trimmed,
            fence_stripped: false,
        };
    }
    // Backticks are ASCII, so these byte offsets are character boundaries.
    let inner = &trimmed[FENCE.len()..trimmed.len() - FENCE.len()];
    Unfenced {
        text: drop_info_string(inner).trim(),
        fence_stripped: true,
    }
}

/// Drops the fence's info string (`json`, `jsonc`, ...): the whole first line when the
/// content starts on the next one, or a JSON language tag on a one-line fence.
fn drop_info_string(inner: &str) -> &str {
    if let Some((first_line, rest)) = inner.split_once('\n') {
        let first_line = first_line.trim();
        let is_info = first_line
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_+.-".contains(c));
        return if is_info { rest } else { inner };
    }
    let tag_len = inner
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(inner.len());
    let (tag, rest) = inner.split_at(tag_len);
    let json_tag = ["json", "jsonc", "json5"]
        .iter()
        .any(|known| tag.eq_ignore_ascii_case(known));
    if json_tag && rest.starts_with(char::is_whitespace) {
        rest
    } else {
        inner
    }
}

crate::failure::debug_as_message!(JsonSyntaxError);

/// Why a reply could not be read as JSON.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct JsonSyntaxError {
    /// The parser's message, with the line and column where it stopped.
    pub message: String,
}

/// Parses JSON, accepting comments and trailing commas, and says which of them were
/// present (strict `serde_json` is tried first, so clean JSON records no repair).
///
/// Both leniencies are blanked out by one scan (see `lenient.rs`) and `serde_json` reads
/// the rest: its strict rules and its recursion limit hold for every reply, and a repair
/// is recorded only for what the scan actually removed.
pub fn parse_json_lenient(text: &str) -> Result<(Value, Vec<Repair>), JsonSyntaxError> {
    let strict_error = match serde_json::from_str::<Value>(text) {
        Ok(value) => return Ok((value, Vec::new())),
        Err(error) => error,
    };
    let Some(blanked) = lenient::blank_comments_and_trailing_commas(text) else {
        return Err(JsonSyntaxError {
            message: strict_error.to_string(),
        });
    };
    // Positions are kept by the blanking, so this error points into the reply as written.
    let value = serde_json::from_str::<Value>(&blanked.text).map_err(|error| JsonSyntaxError {
        message: error.to_string(),
    })?;
    let mut repairs = Vec::new();
    if blanked.comments {
        repairs.push(Repair::CommentsSkipped);
    }
    if blanked.trailing_commas {
        repairs.push(Repair::TrailingCommasSkipped);
    }
    Ok((value, repairs))
}

/// Reads a reply that is not JSON as a bare primitive: an integer, a float, a boolean
/// (any case), or one of `enum_members` by name (any case; the member is returned as
/// written, so that the schema-guided repair records a case change).
pub fn parse_bare_primitive(text: &str, enum_members: &[String]) -> Option<Value> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if let Ok(n) = text.parse::<i64>() {
        return Some(Value::Number(n.into()));
    }
    if let Ok(n) = text.parse::<u64>() {
        return Some(Value::Number(n.into()));
    }
    // Rust also reads "inf" and "NaN" as floats; JSON has no such numbers.
    if let Some(n) = text.parse::<f64>().ok().and_then(Number::from_f64) {
        return Some(Value::Number(n));
    }
    if text.eq_ignore_ascii_case("true") {
        return Some(Value::Bool(true));
    }
    if text.eq_ignore_ascii_case("false") {
        return Some(Value::Bool(false));
    }
    enum_members
        .iter()
        .any(|member| member.eq_ignore_ascii_case(text))
        .then(|| Value::String(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fence_with_language_tag_is_stripped() {
        let unfenced = strip_code_fence("  ```json\n{\"value\": 1}\n```  ");
        assert_eq!(unfenced.text, "{\"value\": 1}");
        assert!(unfenced.fence_stripped);
    }

    #[test]
    fn fence_without_language_tag_is_stripped() {
        let unfenced = strip_code_fence("```\n[1, 2]\n```");
        assert_eq!(unfenced.text, "[1, 2]");
        assert!(unfenced.fence_stripped);
    }

    #[test]
    fn one_line_fence_keeps_its_content() {
        assert_eq!(strip_code_fence("```{\"a\":1}```").text, "{\"a\":1}");
        assert_eq!(strip_code_fence("```json {\"a\":1}```").text, "{\"a\":1}");
        assert_eq!(strip_code_fence("```Positive```").text, "Positive");
    }

    #[test]
    fn fence_holding_only_whitespace_is_empty() {
        assert_eq!(strip_code_fence("```json\n  \n```").text, "");
        assert_eq!(strip_code_fence("``````").text, "");
    }

    #[test]
    fn text_without_surrounding_fence_is_only_trimmed() {
        let unfenced = strip_code_fence("  Here: ```json\n1\n```");
        assert_eq!(unfenced.text, "Here: ```json\n1\n```");
        assert!(!unfenced.fence_stripped);
        assert!(!strip_code_fence("```").fence_stripped);
    }

    #[test]
    fn strict_json_records_no_repair() {
        let (value, repairs) = parse_json_lenient(r#"{"value": [1, 2]}"#).unwrap();
        assert_eq!(value, json!({"value": [1, 2]}));
        assert!(repairs.is_empty());
    }

    #[test]
    fn comments_alone_are_recorded() {
        let (value, repairs) =
            parse_json_lenient("{\n  // the total\n  \"value\": 3 /* cents */\n}").unwrap();
        assert_eq!(value, json!({"value": 3}));
        assert_eq!(repairs, vec![Repair::CommentsSkipped]);
    }

    #[test]
    fn trailing_commas_alone_are_recorded() {
        let (value, repairs) = parse_json_lenient(r#"{"value": [1, 2,],}"#).unwrap();
        assert_eq!(value, json!({"value": [1, 2]}));
        assert_eq!(repairs, vec![Repair::TrailingCommasSkipped]);
    }

    #[test]
    fn comments_and_trailing_commas_are_both_recorded() {
        let (_, repairs) = parse_json_lenient("{\"value\": [1,], // done\n}").unwrap();
        assert_eq!(
            repairs,
            vec![Repair::CommentsSkipped, Repair::TrailingCommasSkipped]
        );
    }

    #[test]
    fn other_json5_extensions_stay_errors() {
        assert!(parse_json_lenient("{'value': 1}").is_err());
        assert!(parse_json_lenient("{value: 1}").is_err());
        assert!(parse_json_lenient("{\"value\": 0x10}").is_err());
        assert!(parse_json_lenient("[1 2]").is_err());
    }

    #[test]
    fn syntax_error_names_line_and_column() {
        let error = parse_json_lenient("{\n\"value\": }").unwrap_err();
        assert!(error.message.contains("line 2"), "{}", error.message);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = "[".repeat(100_000);
        assert!(parse_json_lenient(&deep).is_err());
        let deep_with_comment = format!("/* x */{}", "[".repeat(100_000));
        assert!(parse_json_lenient(&deep_with_comment).is_err());
    }

    #[test]
    fn raw_control_characters_in_strings_stay_errors() {
        for text in [
            "[\"line1\nline2\"]",
            "{\"value\": \"a\tb\"}",
            "[\"nul\u{0}here\"]",
            "/* c */ [\"line1\nline2\"]",
            "[\"a\tb\",]",
        ] {
            assert!(parse_json_lenient(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn a_repair_is_recorded_only_when_it_happened() {
        // Strict JSON rejects these, and they hold neither a comment nor a trailing
        // comma: nothing lenient applies, so they stay errors with no repair claimed.
        for text in [r#"{"value": "\ud800"}"#, "[01]", "[\"a\u{1f}\"]"] {
            assert!(parse_json_lenient(text).is_err(), "{text:?}");
        }
        // Comment-like text inside a string is no comment.
        let (value, repairs) = parse_json_lenient(r#"{"url": "http://a/*b*/", }"#).unwrap();
        assert_eq!(value, json!({"url": "http://a/*b*/"}));
        assert_eq!(repairs, vec![Repair::TrailingCommasSkipped]);
    }

    #[test]
    fn the_lenient_path_keeps_the_strict_depth_limit() {
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        for depth in [120, 127, 128, 129, 200, 5_000] {
            let strict = serde_json::from_str::<Value>(&nested(depth)).is_ok();
            let commented = format!("// reply\n{}", nested(depth));
            assert_eq!(
                parse_json_lenient(&commented).is_ok(),
                strict,
                "depth {depth}"
            );
        }
    }

    #[test]
    fn deep_replies_are_read_safely_on_a_small_stack() {
        let reader = std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(|| {
                let deep = format!("/* c */{}1{},", "[".repeat(5_000), "]".repeat(5_000));
                let deep_object = format!("{}1{}", "{\"a\": ".repeat(5_000), ",}".repeat(5_000));
                (
                    parse_json_lenient(&deep).is_err(),
                    parse_json_lenient(&deep_object).is_err(),
                )
            })
            .unwrap();
        assert_eq!(reader.join().unwrap(), (true, true));
    }

    #[test]
    fn bare_primitives_are_read() {
        let none: &[String] = &[];
        assert_eq!(parse_bare_primitive("+42", none), Some(json!(42)));
        assert_eq!(parse_bare_primitive("5.", none), Some(json!(5.0)));
        assert_eq!(parse_bare_primitive("True", none), Some(json!(true)));
        assert_eq!(parse_bare_primitive("FALSE", none), Some(json!(false)));
        assert_eq!(parse_bare_primitive("NaN", none), None);
        assert_eq!(parse_bare_primitive("inf", none), None);
        assert_eq!(parse_bare_primitive("Positive", none), None);
    }

    #[test]
    fn bare_enum_member_is_read_by_name_in_any_case() {
        let members = vec!["Positive".to_owned(), "Negative".to_owned()];
        assert_eq!(
            parse_bare_primitive("Positive", &members),
            Some(json!("Positive"))
        );
        assert_eq!(
            parse_bare_primitive("positive", &members),
            Some(json!("positive"))
        );
        assert_eq!(parse_bare_primitive("Positive, Negative", &members), None);
    }
}
