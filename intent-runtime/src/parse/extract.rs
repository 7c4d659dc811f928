//! Answer candidates in a reply that wraps its JSON in prose, for the opt-in answer
//! recovery: the contents of fenced code blocks anywhere in the reply, else the balanced
//! top-level JSON objects and arrays found in its text.
//!
//! Finding a candidate is not choosing one: every candidate is parsed by the same rules
//! as any reply (strict JSON, comments and trailing commas recorded, the same depth
//! limit), and the verifier accepts a reply only when exactly one candidate reads as the
//! target. Nothing here guesses: unfinished JSON, JSON5 syntax and answers written in
//! words are no candidates at all.

use serde_json::Value;

use super::lexical::string_end;
use super::{parse_json_lenient, strip_code_fence};
use crate::result::Repair;

/// How deep brackets nest in a candidate: as deep as `serde_json` parses, past which no
/// candidate could be read anyway.
const MAX_DEPTH: usize = 128;

/// The most candidates read from one reply. A reply holding more JSON values than this
/// holds no single answer; the cap bounds the work a hostile reply can cause.
pub const MAX_CANDIDATES: usize = 32;

/// One JSON value found in a reply's prose.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate<'a> {
    /// The candidate's text, as written in the reply.
    pub text: &'a str,
    /// The candidate, parsed.
    pub json: Value,
    /// The leniencies its parse took (comments, trailing commas).
    pub repairs: Vec<Repair>,
}

/// The parseable JSON candidates of a reply, in reply order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Candidates<'a> {
    /// The candidates that parse, at most [`MAX_CANDIDATES`], equal values kept once.
    pub found: Vec<Candidate<'a>>,
    /// Whether more than [`MAX_CANDIDATES`] distinct candidates parse.
    pub too_many: bool,
}

/// The JSON candidates of `reply`: the contents of its fenced code blocks that parse,
/// with the balanced top-level objects and arrays of the text outside those blocks; or,
/// when no fenced block holds JSON, the balanced objects and arrays of the whole text.
///
/// The text beside a fenced answer is searched too, so that an answer written in the
/// prose and another in a fence are two candidates, never one guessed over the other. A
/// candidate written twice (the same value in a fence and again in the text, say) is one
/// candidate: taking it guesses nothing.
pub fn json_candidates(reply: &str) -> Candidates<'_> {
    let (blocks, outside) = split_fences(reply);
    let mut candidates = Candidates::default();
    for block in blocks {
        if candidates.offer(block) == Offer::Full {
            return candidates;
        }
    }
    if candidates.found.is_empty() {
        balanced_candidates(reply, &mut candidates);
        return candidates;
    }
    for segment in outside {
        if !balanced_candidates(segment, &mut candidates) {
            break;
        }
    }
    candidates
}

/// What became of a text offered as a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Offer {
    /// It parses: kept, or the same value was kept already.
    Json,
    /// It does not parse.
    NotJson,
    /// It parses, but the candidates are full: the search stops.
    Full,
}

impl<'a> Candidates<'a> {
    /// Parses `text` and keeps it when it is JSON not seen before.
    fn offer(&mut self, text: &'a str) -> Offer {
        let Ok((json, repairs)) = parse_json_lenient(text) else {
            return Offer::NotJson;
        };
        if self.found.iter().any(|seen| seen.json == json) {
            return Offer::Json;
        }
        if self.found.len() == MAX_CANDIDATES {
            self.too_many = true;
            return Offer::Full;
        }
        self.found.push(Candidate {
            text,
            json,
            repairs,
        });
        Offer::Json
    }
}

/// The contents of the fenced code blocks of `text` (fences paired in order: the first
/// opens a block, the next closes it; each block without its info string), and the text
/// outside them. A fence that is never closed opens no block: its content may be
/// unfinished, and stays in the text outside.
fn split_fences(text: &str) -> (Vec<&str>, Vec<&str>) {
    const FENCE: &str = "```";
    let (mut blocks, mut outside) = (Vec::new(), Vec::new());
    let mut rest = text;
    while let Some(open) = rest.find(FENCE) {
        let after_open = &rest[open..];
        let Some(close) = after_open[FENCE.len()..].find(FENCE) else {
            break;
        };
        // Backticks are ASCII: the offsets are character boundaries. The block is handed
        // to the same unfencing as a whole reply, so info strings are read one way.
        let end = close + 2 * FENCE.len();
        outside.push(&rest[..open]);
        blocks.push(strip_code_fence(&after_open[..end]).text);
        rest = &after_open[end..];
    }
    outside.push(rest);
    (blocks, outside)
}

/// Adds the top-level `{...}` and `[...]` of `text` that parse, in order; returns whether
/// there is room for more.
///
/// From each opening bracket, in order, the matching closing bracket is sought (strings
/// skipped whole, so a brace or a quote inside one is no structure); when the span
/// between them parses it is a candidate and the search goes on after it, otherwise it
/// goes on from the next bracket. So a brace in the prose (an unclosed one, or one in a
/// quotation) does not hide the answer after it, and nothing inside a candidate is
/// another candidate. One pass per start, no recursion; the total scanning is bounded,
/// so a hostile reply costs a small multiple of its length.
fn balanced_candidates<'a>(text: &'a str, candidates: &mut Candidates<'a>) -> bool {
    let bytes = text.as_bytes();
    let mut budget = SCAN_BUDGET_PER_BYTE
        .saturating_mul(bytes.len())
        .max(MIN_SCAN_BUDGET);
    let mut at = 0;
    while let Some(offset) = bytes
        .get(at..)
        .and_then(|rest| rest.iter().position(|b| matches!(b, b'{' | b'[')))
    {
        let start = at + offset;
        at = match matching_close(bytes, start, &mut budget) {
            // Brackets are ASCII: the offsets are character boundaries.
            Close::At(end) => match text.get(start..end).map(|span| candidates.offer(span)) {
                Some(Offer::Json) => end,
                Some(Offer::NotJson) => start + 1,
                Some(Offer::Full) | None => break,
            },
            Close::Never => start + 1,
            Close::TooDeep(past) => past,
            Close::OutOfBudget => break,
        };
    }
    !candidates.too_many
}

/// How many bytes the bracket search may scan per byte of the reply, in all.
const SCAN_BUDGET_PER_BYTE: usize = 16;

/// The least scanning allowed, so that a short reply is always searched in full.
const MIN_SCAN_BUDGET: usize = 1 << 16;

/// Where the bracket opened at some index closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Close {
    /// Just before this index.
    At(usize),
    /// Nowhere: a bracket of the other kind closes it first, or the text ends.
    Never,
    /// It nests past the depth limit: no candidate starts before this index, the end of
    /// the too-deep nest (or the point where the limit was passed, if it never ends).
    TooDeep(usize),
    /// The scanning budget ran out.
    OutOfBudget,
}

/// Where the bracket at `start` closes, strings skipped whole; `budget` is spent as
/// bytes are scanned.
fn matching_close(bytes: &[u8], start: usize, budget: &mut usize) -> Close {
    let mut open: Vec<u8> = Vec::new();
    let mut at = start;
    while let Some(&byte) = bytes.get(at) {
        if *budget == 0 {
            return Close::OutOfBudget;
        }
        *budget -= 1;
        match byte {
            b'"' => {
                let end = string_end(bytes, at);
                *budget = budget.saturating_sub(end - at);
                at = end;
                continue;
            }
            b'{' | b'[' if open.len() == MAX_DEPTH => {
                return end_of_nest(bytes, at, open.len(), budget);
            }
            b'{' | b'[' => open.push(byte),
            b'}' | b']' => {
                let opener = if byte == b'}' { b'{' } else { b'[' };
                if open.pop() != Some(opener) {
                    return Close::Never;
                }
                if open.is_empty() {
                    return Close::At(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
    Close::Never
}

/// The end of a nest found too deep at `at` with `depth` brackets open: brackets are only
/// counted from here (the nest is no candidate whatever their kinds).
fn end_of_nest(bytes: &[u8], at: usize, depth: usize, budget: &mut usize) -> Close {
    let limit_passed = at;
    let mut depth = depth;
    let mut at = at;
    while let Some(&byte) = bytes.get(at) {
        if *budget == 0 {
            return Close::OutOfBudget;
        }
        *budget -= 1;
        match byte {
            b'"' => {
                let end = string_end(bytes, at);
                *budget = budget.saturating_sub(end - at);
                at = end;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Close::TooDeep(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
    Close::TooDeep(limit_passed + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(reply: &str) -> Vec<&str> {
        json_candidates(reply)
            .found
            .iter()
            .map(|candidate| candidate.text)
            .collect()
    }

    #[test]
    fn a_fenced_block_after_prose_is_the_candidate() {
        let reply = "Sure! Here is the result:\n```json\n{\"value\": 3}\n```\nAnything else?";
        assert_eq!(texts(reply), vec!["{\"value\": 3}"]);
    }

    #[test]
    fn fences_are_paired_in_order() {
        let reply = "```json\n{\"a\": 1}\n```\nor\n```\n[2]\n```";
        assert_eq!(texts(reply), vec!["{\"a\": 1}", "[2]"]);
        // An unclosed fence opens no block; the text is then searched instead.
        assert_eq!(texts("Here: ```json\n{\"a\": 1}"), vec!["{\"a\": 1}"]);
    }

    #[test]
    fn the_text_beside_a_fenced_answer_is_searched_too() {
        let reply = "I think {\"a\": 1}.\n```json\n{\"a\": 2}\n```\nSo [3]";
        assert_eq!(texts(reply), vec!["{\"a\": 2}", "{\"a\": 1}", "[3]"]);
    }

    #[test]
    fn fenced_blocks_that_hold_no_json_give_way_to_the_text() {
        let reply = "```python\nprint(1)\n```\nThe answer is {\"value\": 2}.";
        assert_eq!(texts(reply), vec!["{\"value\": 2}"]);
    }

    #[test]
    fn objects_and_arrays_in_a_sentence_are_candidates() {
        assert_eq!(
            texts("The object {\"n\": 1} and then [1, 2] too."),
            vec!["{\"n\": 1}", "[1, 2]"]
        );
    }

    #[test]
    fn braces_and_quotes_inside_strings_are_not_structure() {
        let reply = r#"He said "hi {" and gave {"text": "a } b \" ] {", "n": [1]} ok"#;
        assert_eq!(texts(reply), vec![r#"{"text": "a } b \" ] {", "n": [1]}"#]);
    }

    #[test]
    fn an_unclosed_brace_in_the_prose_does_not_hide_the_answer() {
        assert_eq!(
            texts("Note { unfinished, but {\"value\": 1} is it"),
            vec!["{\"value\": 1}"]
        );
        assert_eq!(texts("Odd ] then [3]"), vec!["[3]"]);
    }

    #[test]
    fn unfinished_json5_and_prose_are_no_candidates() {
        assert!(texts("It is {\"value\": [1, 2").is_empty());
        assert!(texts("It is {'value': 1} or {value: 2}").is_empty());
        assert!(texts("**yes**, it is").is_empty());
        assert!(texts("[note 1] says so").is_empty());
    }

    #[test]
    fn the_same_value_twice_is_one_candidate_and_comments_are_recorded() {
        let found = json_candidates("{\"a\": 1} again: {\"a\":1} and [1, /* one */]");
        assert_eq!(found.found.len(), 2);
        assert_eq!(found.found[0].json, json!({"a": 1}));
        assert_eq!(
            found.found[1].repairs,
            vec![Repair::CommentsSkipped, Repair::TrailingCommasSkipped]
        );
    }

    #[test]
    fn nesting_past_the_depth_limit_is_no_candidate() {
        let deep = format!("x {}1{} y [1]", "[".repeat(5_000), "]".repeat(5_000));
        assert_eq!(texts(&deep), vec!["[1]"]);
    }

    #[test]
    fn too_many_candidates_are_flagged() {
        let many: String = (0..40).map(|n| format!("[{n}] ")).collect();
        let found = json_candidates(&many);
        assert!(found.too_many);
        assert_eq!(found.found.len(), MAX_CANDIDATES);
    }
}
