//! The verifier's steps, one function each, in the order they run. Each
//! failure is a [`ResultIssue`] worded so that the model can act on it.

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::options::Validator;
use crate::parse::{
    self, Finding, SchemaRepair, parse_bare_primitive, parse_json_lenient, strip_code_fence,
};
use crate::provider::ProviderReply;
use crate::result::{IssueDetail, IssueSource, Refusal, Repair, ResultIssue, SchemaMismatch};
use crate::schema::{ENVELOPE_PROPERTY, TargetSchema};

/// Step 1, refusal: the model declined, so there is nothing to check.
pub(crate) fn refusal(reply: &ProviderReply, attempt: u32) -> Option<ResultIssue> {
    let reason = reply.refusal.as_deref()?.trim();
    let message = if reason.is_empty() {
        "The model refused to answer; carry out the intent on the input as asked.".to_owned()
    } else {
        format!("The model refused to answer: {reason}")
    };
    let refusal = Refusal::new(
        (!reason.is_empty()).then(|| reason.to_owned()),
        reply.refusal_categories.clone(),
    );
    Some(
        ResultIssue::new(IssueSource::Provider, message, attempt)
            .with_detail(IssueDetail::Refused(Box::new(refusal))),
    )
}

/// Step 2, truncation: the reply was cut off. The attempt fails whatever follows, but
/// checking goes on so the model hears about every problem at once.
pub(crate) fn truncation(reply: &ProviderReply, attempt: u32) -> Option<ResultIssue> {
    reply.truncated.then(|| {
        let reason = reply
            .stop_reason
            .as_deref()
            .map_or_else(String::new, |r| format!(" (stop reason: {r})"));
        ResultIssue::new(
            IssueSource::Provider,
            format!(
                "The reply was cut off before it ended{reason}; give a shorter, complete answer."
            ),
            attempt,
        )
        .with_detail(IssueDetail::Truncated {
            stop_reason: reply.stop_reason.clone(),
        })
    })
}

/// Step 3, empty reply: strips a surrounding code fence and whitespace, and fails when
/// nothing is left.
pub(crate) fn unfenced_text<'a>(
    reply: &'a ProviderReply,
    attempt: u32,
    repairs: &mut Vec<Repair>,
) -> Result<&'a str, ResultIssue> {
    let unfenced = strip_code_fence(&reply.text);
    if unfenced.fence_stripped {
        repairs.push(Repair::FenceStripped);
    }
    if unfenced.text.is_empty() {
        return Err(ResultIssue::new(
            IssueSource::Verification,
            "The reply was empty; answer with the result.",
            attempt,
        )
        .with_detail(IssueDetail::EmptyReply));
    }
    Ok(unfenced.text)
}

// Step 4, a `String` target, is `verify_text` itself: the unfenced text is the value.

/// Step 5, JSON: strict JSON, else JSON with comments and trailing commas, else a bare
/// primitive (number, boolean, or one of `enum_members` by name). Text that is none of
/// them fails with one issue per place where it stops being JSON (`not_json_issues`).
pub(crate) fn read_json(
    text: &str,
    enum_members: &[String],
    attempt: u32,
    repairs: &mut Vec<Repair>,
) -> Result<Value, Vec<ResultIssue>> {
    match parse_json_lenient(text) {
        Ok((value, lenient)) => {
            repairs.extend(lenient);
            Ok(value)
        }
        Err(syntax) => match parse_bare_primitive(text, enum_members) {
            Some(value) => {
                repairs.push(Repair::BarePrimitive);
                Ok(value)
            }
            None => Err(not_json_issues(text, &syntax.message, attempt)),
        },
    }
}

/// At most this many places are named in the text that is not JSON; one more issue
/// counts the rest, so that one turn of feedback stays short.
const MAX_SYNTAX_ISSUES: usize = 6;

/// At most this many places of one kind are listed in one issue.
const MAX_PLACES_LISTED: usize = 12;

/// The issues of text that is not JSON: each place where it stops being JSON, with a few
/// characters of the reply around it (a long reply is shown to the model cut, so the
/// place must be recognisable on its own), what is there and what belongs there. Places
/// of one kind outside any value (quotes, keys, commas) are one issue listing them all.
/// When the scan names nothing, the parser's own message stands.
fn not_json_issues(text: &str, parser_message: &str, attempt: u32) -> Vec<ResultIssue> {
    let issue = |message: String| {
        ResultIssue::new(IssueSource::Verification, message, attempt)
            .with_detail(IssueDetail::NotJson)
    };
    let problems = parse::diagnose(text);
    if problems.is_empty() {
        return vec![issue(format!(
            "Not JSON ({parser_message}); send one JSON object {{\"{ENVELOPE_PROPERTY}\": ...}}."
        ))];
    }
    // Problems of one kind outside values, grouped in the order first met.
    let mut groups: Vec<Vec<parse::SyntaxProblem>> = Vec::new();
    for problem in problems {
        let same = groups.iter_mut().find(|group| {
            problem.path.is_none() && group[0].path.is_none() && group[0].what == problem.what
        });
        match same {
            Some(group) => group.push(problem),
            None => groups.push(vec![problem]),
        }
    }
    let total = groups.len();
    let mut issues: Vec<ResultIssue> = groups
        .into_iter()
        .take(MAX_SYNTAX_ISSUES)
        .map(|group| issue(syntax_message(&group)))
        .collect();
    if total > MAX_SYNTAX_ISSUES {
        issues.push(issue(format!(
            "{} more places like these are not JSON.",
            total - MAX_SYNTAX_ISSUES
        )));
    }
    issues
}

/// `Line 3 col 9 (value/age), near `...`: what.`, or for several places of one kind
/// `At 1:2, 1:12 (line:col), near `...`: what.`, the excerpt around the first.
fn syntax_message(group: &[parse::SyntaxProblem]) -> String {
    let first = &group[0];
    let place = if let [only] = group {
        let path = only.path.as_deref().map_or_else(String::new, |path| {
            format!(" ({})", path.trim_start_matches('/'))
        });
        format!("Line {} col {}{path}", only.line, only.column)
    } else {
        let mut listed: Vec<String> = group
            .iter()
            .take(MAX_PLACES_LISTED)
            .map(|p| format!("{}:{}", p.line, p.column))
            .collect();
        if group.len() > MAX_PLACES_LISTED {
            listed.push(format!("{} more", group.len() - MAX_PLACES_LISTED));
        }
        format!("At {} (line:col)", listed.join(", "))
    };
    format!("{place}, near `{}`: {}.", first.excerpt, first.what)
}

/// How step 6 treats an object that has a `value` key beside others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EnvelopeRule {
    /// Such an object is a broken envelope: read as bare it would lose the result.
    Strict,
    /// The target's own bare form may hold a `value` key (a map, or a type with its own
    /// `value` property), so such an object is the bare value.
    BareMayHoldValue,
}

/// Step 6, envelope: `{"value": x}` gives `x`; `value` beside other keys fails (unless
/// the rule says the bare form may hold one); anything else is the bare value.
///
/// `target` (the schema of a typed target or of a runtime shape, when there is one) is
/// read only on failure: when keys beside `value` are the target's own fields, the model
/// wrote the object at the top, and the issue says to put it inside `value` (removing
/// them would leave no object of the target's shape).
pub(crate) fn unwrap_envelope(
    reply: Value,
    rule: EnvelopeRule,
    target: Option<&TargetSchema>,
    attempt: u32,
    repairs: &mut Vec<Repair>,
) -> Result<Value, ResultIssue> {
    let mut object = match reply {
        Value::Object(object) if object.contains_key(ENVELOPE_PROPERTY) => object,
        bare => {
            repairs.push(Repair::MissingEnvelope);
            return Ok(bare);
        }
    };
    if object.len() == 1 {
        return Ok(object.remove(ENVELOPE_PROPERTY).unwrap_or(Value::Null));
    }
    if rule == EnvelopeRule::BareMayHoldValue {
        repairs.push(Repair::MissingEnvelope);
        return Ok(Value::Object(object));
    }
    let extra = unexpected_keys(&object);
    let fields = target.map_or_else(Vec::new, |t| own_fields(&t.full));
    let message = if extra.iter().any(|key| fields.contains(key)) {
        let type_name = target.map_or("the result", |t| t.type_name.as_str());
        format!(
            "{} are fields of {type_name}: put the whole object inside `{ENVELOPE_PROPERTY}`, \
             as {{\"{ENVELOPE_PROPERTY}\": {{...}}}}, with nothing beside it.",
            quoted_list(&extra)
        )
    } else {
        format!(
            "Unexpected keys beside `{ENVELOPE_PROPERTY}`: {}; send {{\"{ENVELOPE_PROPERTY}\": \
             ...}} alone.",
            quoted_list(&extra)
        )
    };
    Err(ResultIssue::new(
        IssueSource::Verification,
        message,
        attempt,
    ))
}

fn unexpected_keys(object: &Map<String, Value>) -> Vec<&str> {
    let mut keys: Vec<&str> = object
        .keys()
        .map(String::as_str)
        .filter(|key| *key != ENVELOPE_PROPERTY)
        .collect();
    keys.sort_unstable();
    keys
}

/// `` `a`, `b` ``.
fn quoted_list(keys: &[&str]) -> String {
    keys.iter()
        .map(|key| ["`", key, "`"].concat())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The property names of the envelope schema `full`'s value, behind `$ref`s and in every
/// branch of a union.
fn own_fields(full: &Value) -> Vec<&str> {
    let (inner, _) = parse::schema_nav::resolve(full, parse::schema_nav::inner_schema(full));
    let mut shapes = vec![inner];
    for branch in parse::schema_nav::union_branches(inner) {
        shapes.push(parse::schema_nav::resolve(full, branch).0);
    }
    shapes
        .into_iter()
        .filter_map(|shape| shape.get("properties").and_then(Value::as_object))
        .flat_map(|properties| properties.keys().map(String::as_str))
        .collect()
}

/// Step 7, deserialization: reads the repaired value as `T`. On failure, the findings of
/// the schema-guided walk (which name paths and types) come first, then serde's own
/// message unless a finding already says the same.
///
/// `text` is the JSON the value was read from: an integer beyond 64 bits, which the
/// value holds as a float, is read from it exactly, as `serde_json` reads it from text.
pub(crate) fn deserialize<T: DeserializeOwned>(
    value: &Value,
    text: &str,
    walked: &SchemaRepair,
    type_name: &str,
    attempt: u32,
) -> Result<T, Vec<ResultIssue>> {
    let error = match T::deserialize(value) {
        Ok(parsed) => return Ok(parsed),
        Err(error) => error,
    };
    if let Some(parsed) = parse::read_with_wide_integers::<T>(value, text) {
        return Ok(parsed);
    }
    let error = error.to_string();
    let issue = |message: String| ResultIssue::new(IssueSource::Verification, message, attempt);
    let mut issues: Vec<ResultIssue> = walked
        .findings
        .iter()
        .map(|finding| issue(finding.message()).with_detail(finding_facts(finding)))
        .collect();
    if !serde_error_is_explained(&error, &walked.findings) {
        issues.push(issue(serde_message(&error, type_name)));
    }
    Err(issues)
}

/// A finding's typed facts: where, what the schema wants there and what is there.
fn finding_facts(finding: &Finding) -> IssueDetail {
    let facts = match finding {
        Finding::MissingField { path, field, .. } => SchemaMismatch {
            path: super::mismatch::answer_pointer(path),
            keyword: "required".to_owned(),
            expected: format!("the field `{field}`"),
            found: "an object without it".to_owned(),
        },
        Finding::NotAMember {
            path,
            enum_name,
            members,
            ..
        } => SchemaMismatch {
            path: super::mismatch::answer_pointer(path),
            keyword: "enum".to_owned(),
            expected: enum_name
                .clone()
                .unwrap_or_else(|| format!("one of {}", members.join(", "))),
            found: "a string that is no member".to_owned(),
        },
    };
    IssueDetail::Schema(Box::new(facts))
}

/// Whether a finding already tells the model what serde's `error` says.
fn serde_error_is_explained(error: &str, findings: &[Finding]) -> bool {
    if let Some(field) = missing_field_name(error) {
        return findings.iter().any(
            |f| matches!(f, Finding::MissingField { field: missing, .. } if missing == field),
        );
    }
    let about_a_member = error.starts_with("unknown variant")
        || error.contains("expected variant identifier")
        || error.starts_with("invalid type");
    about_a_member
        && findings
            .iter()
            .any(|f| matches!(f, Finding::NotAMember { .. }))
}

/// The field named in serde's "missing field `x`".
fn missing_field_name(error: &str) -> Option<&str> {
    error
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(field, _)| field)
}

/// Serde's error as an instruction naming the expected type.
fn serde_message(error: &str, type_name: &str) -> String {
    match missing_field_name(error) {
        Some(field) => {
            format!("The required field \"{field}\" is missing from {type_name}; include it.")
        }
        None => format!(
            "The value does not match the expected type {type_name}: {error}. Reply with a \
             value of that type."
        ),
    }
}

/// Step 8, null: a null value passes only when `T` accepts null (an `Option`).
pub(crate) fn null_value<T: DeserializeOwned>(
    type_name: &str,
    attempt: u32,
) -> Result<T, ResultIssue> {
    serde_json::from_value::<T>(Value::Null).map_err(|_| {
        ResultIssue::new(
            IssueSource::Verification,
            format!("The value was null, but a non-null {type_name} is required; answer with one."),
            attempt,
        )
    })
}

/// Step 8 for runtime shapes: null never passes.
pub(crate) fn null_runtime_value(attempt: u32) -> ResultIssue {
    ResultIssue::new(
        IssueSource::Verification,
        "The value was null, but a JSON value is required; answer with one.",
        attempt,
    )
}

/// Step 9, validators: runs each on the value; every message is a validator issue, and
/// a validator that panics becomes an issue too, never a crash.
pub(crate) fn run_validators<T>(
    value: &T,
    validators: &[Validator<T>],
    attempt: u32,
) -> Vec<ResultIssue> {
    let issue = |message: String| {
        ResultIssue::new(IssueSource::Validator, message, attempt)
            .with_detail(IssueDetail::Validator)
    };
    let mut issues = Vec::new();
    for validator in validators {
        // The validator only reads the value; a panic leaves nothing half-changed.
        match catch_unwind(AssertUnwindSafe(|| validator(value))) {
            Ok(problems) => issues.extend(problems.into_iter().map(issue)),
            Err(payload) => issues.push(issue(format!(
                "Validator panicked: {}",
                panic_message(payload.as_ref())
            ))),
        }
    }
    issues
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// The members a bare reply may name, for step 5.
pub(crate) fn bare_enum_members(full: &Value) -> Vec<String> {
    parse::schema_nav::enum_members(full, parse::schema_nav::inner_schema(full))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn reply(text: &str) -> ProviderReply {
        ProviderReply::text(text)
    }

    #[test]
    fn refusal_is_a_provider_issue_with_the_reason() {
        let mut refused = reply("");
        refused.refusal = Some("I can't help with that.".into());
        let issue = refusal(&refused, 2).unwrap();
        assert_eq!(issue.source, IssueSource::Provider);
        assert_eq!(issue.attempt, 2);
        assert_eq!(
            issue.message,
            "The model refused to answer: I can't help with that."
        );
        assert!(refusal(&reply("ok"), 1).is_none());
    }

    #[test]
    fn empty_refusal_still_says_what_to_do() {
        let mut refused = reply("");
        refused.refusal = Some("  ".into());
        assert!(
            refusal(&refused, 1)
                .unwrap()
                .message
                .contains("carry out the intent")
        );
    }

    #[test]
    fn truncation_is_a_provider_issue_naming_the_stop_reason() {
        let mut cut = reply("{\"value\": [1, 2");
        cut.truncated = true;
        cut.stop_reason = Some("max_tokens".into());
        let issue = truncation(&cut, 3).unwrap();
        assert_eq!(issue.source, IssueSource::Provider);
        assert_eq!(issue.attempt, 3);
        assert!(issue.message.contains("cut off"));
        assert!(issue.message.contains("max_tokens"));
        assert!(truncation(&reply("x"), 1).is_none());
    }

    #[test]
    fn fenced_whitespace_is_empty_and_the_fence_is_recorded() {
        let mut repairs = Vec::new();
        let issue = unfenced_text(&reply("```json\n \n```"), 1, &mut repairs).unwrap_err();
        assert_eq!(issue.source, IssueSource::Verification);
        assert!(issue.message.contains("empty"));
        assert_eq!(repairs, vec![Repair::FenceStripped]);
    }

    #[test]
    fn unfenced_text_is_returned_trimmed() {
        let mut repairs = Vec::new();
        assert_eq!(
            unfenced_text(&reply("  hi \n"), 1, &mut repairs).unwrap(),
            "hi"
        );
        assert!(repairs.is_empty());
    }

    #[test]
    fn invalid_json_names_each_place_in_words_with_an_excerpt() {
        let mut repairs = Vec::new();
        let issues = read_json("{\"value\": }", &[], 4, &mut repairs).unwrap_err();
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].source, IssueSource::Verification);
        assert_eq!(issues[0].attempt, 4);
        assert_eq!(
            issues[0].message,
            "Line 1 col 11 (value), near `{\"value\": }`: a value is missing before this; \
             write one."
        );
        let issues = read_json("{'value': 'NaN'}", &[], 1, &mut repairs).unwrap_err();
        assert_eq!(
            issues[0].message,
            "At 1:2, 1:11 (line:col), near `{'value': 'Na`: single quotes; JSON keys and \
             strings take double quotes."
        );
        let issues = read_json("{'value': NaN}", &[], 1, &mut repairs).unwrap_err();
        let messages: Vec<&str> = issues.iter().map(|i| i.message.as_str()).collect();
        assert_eq!(
            messages,
            vec![
                "Line 1 col 2, near `{'value': NaN`: single quotes; JSON keys and strings take \
                 double quotes.",
                "Line 1 col 11 (value), near `{'value': NaN}`: `NaN` is no JSON number; write a \
                 number, or null where the schema allows it."
            ]
        );
    }

    #[test]
    fn many_places_are_capped_and_counted() {
        let mut repairs = Vec::new();
        let text = format!("[{}]", ["NaN"; 10].join(", "));
        let issues = read_json(&text, &[], 1, &mut repairs).unwrap_err();
        assert_eq!(issues.len(), MAX_SYNTAX_ISSUES + 1);
        assert_eq!(
            issues[MAX_SYNTAX_ISSUES].message,
            "4 more places like these are not JSON."
        );
    }

    #[test]
    fn text_the_scan_cannot_place_keeps_the_parser_message() {
        let mut repairs = Vec::new();
        let issues = read_json("{\"value\": \"\\x\"}", &[], 1, &mut repairs).unwrap_err();
        assert_eq!(issues.len(), 1);
        assert!(
            issues[0].message.starts_with("Not JSON (invalid escape"),
            "{}",
            issues[0].message
        );
    }

    #[test]
    fn an_envelope_beside_the_targets_own_fields_asks_for_the_object_inside_it() {
        let target = crate::schema::target_schema::<Pair>().unwrap();
        let mut repairs = Vec::new();
        let issue = unwrap_envelope(
            json!({"left": 1, "right": 2, "value": 1}),
            EnvelopeRule::Strict,
            Some(&target),
            1,
            &mut repairs,
        )
        .unwrap_err();
        assert_eq!(
            issue.message,
            "`left`, `right` are fields of Pair: put the whole object inside `value`, as \
             {\"value\": {...}}, with nothing beside it."
        );
        let other = unwrap_envelope(
            json!({"note": 1, "value": {"left": 1, "right": 2}}),
            EnvelopeRule::Strict,
            Some(&target),
            1,
            &mut repairs,
        )
        .unwrap_err();
        assert!(
            other
                .message
                .starts_with("Unexpected keys beside `value`: `note`")
        );
    }

    #[test]
    fn bare_primitive_is_recorded() {
        let mut repairs = Vec::new();
        let members = vec!["Positive".to_owned()];
        assert_eq!(
            read_json("Positive", &members, 1, &mut repairs).unwrap(),
            json!("Positive")
        );
        assert_eq!(repairs, vec![Repair::BarePrimitive]);
    }

    #[test]
    fn lone_envelope_is_unwrapped_without_repair() {
        let mut repairs = Vec::new();
        let value = unwrap_envelope(
            json!({"value": {"a": 1}}),
            EnvelopeRule::Strict,
            None,
            1,
            &mut repairs,
        );
        assert_eq!(value.unwrap(), json!({"a": 1}));
        assert!(repairs.is_empty());
    }

    #[test]
    fn envelope_with_other_keys_names_them_sorted() {
        let mut repairs = Vec::new();
        let issue = unwrap_envelope(
            json!({"value": 1, "reason": "x", "note": "y"}),
            EnvelopeRule::Strict,
            None,
            2,
            &mut repairs,
        )
        .unwrap_err();
        assert_eq!(issue.source, IssueSource::Verification);
        assert_eq!(issue.attempt, 2);
        assert_eq!(
            issue.message,
            "Unexpected keys beside `value`: `note`, `reason`; send {\"value\": ...} alone."
        );
    }

    #[test]
    fn envelope_exception_reads_the_object_as_bare() {
        let mut repairs = Vec::new();
        let value = unwrap_envelope(
            json!({"value": 1, "unit": "m"}),
            EnvelopeRule::BareMayHoldValue,
            None,
            1,
            &mut repairs,
        );
        assert_eq!(value.unwrap(), json!({"value": 1, "unit": "m"}));
        assert_eq!(repairs, vec![Repair::MissingEnvelope]);
    }

    #[test]
    fn anything_else_is_the_bare_value() {
        let mut repairs = Vec::new();
        let value = unwrap_envelope(
            json!({"total": 1}),
            EnvelopeRule::Strict,
            None,
            1,
            &mut repairs,
        );
        assert_eq!(value.unwrap(), json!({"total": 1}));
        assert_eq!(repairs, vec![Repair::MissingEnvelope]);
    }

    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Pair {
        left: i64,
        right: i64,
    }

    #[test]
    fn serde_missing_field_names_the_field_and_type() {
        let issues =
            deserialize::<Pair>(&json!({"left": 1}), "", &SchemaRepair::default(), "Pair", 1)
                .unwrap_err();
        assert_eq!(issues.len(), 1);
        assert_eq!(
            issues[0].message,
            "The required field \"right\" is missing from Pair; include it."
        );
    }

    #[test]
    fn serde_type_error_names_the_expected_type() {
        let issues = deserialize::<Pair>(
            &json!({"left": "x", "right": 1}),
            "",
            &SchemaRepair::default(),
            "Pair",
            3,
        )
        .unwrap_err();
        assert_eq!(issues[0].source, IssueSource::Verification);
        assert_eq!(issues[0].attempt, 3);
        assert!(issues[0].message.starts_with(
            "The value does not match the expected type Pair: invalid type: string \"x\""
        ));
    }

    #[test]
    fn a_finding_replaces_the_serde_message_it_explains() {
        let walked = SchemaRepair {
            repairs: vec![],
            findings: vec![Finding::MissingField {
                path: "/value".into(),
                owner: Some("Pair".into()),
                field: "right".into(),
            }],
        };
        let issues = deserialize::<Pair>(&json!({"left": 1}), "", &walked, "Pair", 1).unwrap_err();
        assert_eq!(issues.len(), 1);
    }

    #[test]
    fn null_passes_only_for_option_targets() {
        assert_eq!(null_value::<Option<i64>>("Option<i64>", 1).unwrap(), None);
        let issue = null_value::<i64>("i64", 2).unwrap_err();
        assert_eq!(issue.source, IssueSource::Verification);
        assert_eq!(
            issue.message,
            "The value was null, but a non-null i64 is required; answer with one."
        );
        assert!(
            null_runtime_value(1)
                .message
                .contains("a JSON value is required")
        );
    }

    #[test]
    fn validator_messages_and_panics_become_issues() {
        let validators: Vec<Validator<i64>> = vec![
            Arc::new(|n: &i64| vec![format!("{n} is odd; return an even number.")]),
            Arc::new(|_: &i64| -> Vec<String> { panic!("index out of range") }),
            Arc::new(|_: &i64| Vec::new()),
        ];
        let issues = run_validators(&3, &validators, 2);
        assert_eq!(issues.len(), 2);
        assert!(
            issues
                .iter()
                .all(|i| i.source == IssueSource::Validator && i.attempt == 2)
        );
        assert_eq!(issues[0].message, "3 is odd; return an even number.");
        assert_eq!(issues[1].message, "Validator panicked: index out of range");
    }

    #[test]
    fn formatted_panic_messages_are_kept() {
        let validators: Vec<Validator<i64>> =
            vec![Arc::new(|n: &i64| -> Vec<String> { panic!("bad {n}") })];
        assert_eq!(
            run_validators(&7, &validators, 1)[0].message,
            "Validator panicked: bad 7"
        );
    }
}
