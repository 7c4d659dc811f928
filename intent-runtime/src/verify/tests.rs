//! The verifier end to end, per target kind, on schemas built by `schemars`.

use std::collections::HashMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::test_support::{envelope_target, target_for};
use super::*;
use crate::result::IssueSource;

fn reply(text: &str) -> ProviderReply {
    ProviderReply::text(text)
}

fn messages<T>(check: &Verification<T>) -> Vec<&str> {
    check.issues.iter().map(|i| i.message.as_str()).collect()
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Line {
    sku: String,
    #[schemars(range(min = 1))]
    qty: i64,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Invoice {
    number: String,
    total_cents: i64,
    lines: Vec<Line>,
    due: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
enum Sentiment {
    Positive,
    Neutral,
    Negative,
}

/// Documented variants: schemars writes these as a `oneOf` of `const`s.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
enum Mood {
    /// Going well.
    Up,
    /// Going badly.
    Down,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Reading {
    value: f64,
    unit: String,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Review {
    mood: Option<Mood>,
}

// ---- steps 1 to 4 through the public functions ----

#[test]
fn refusal_stops_every_other_check() {
    let mut refused = reply("");
    refused.refusal = Some("Not allowed.".into());
    refused.truncated = true;
    let check = verify_typed::<i64>(&refused, &target_for::<i64>("i64"), &[], 1);
    assert_eq!(check.issues.len(), 1);
    assert_eq!(check.issues[0].source, IssueSource::Provider);
    assert!(!check.passed());
}

#[test]
fn truncation_fails_but_later_problems_are_still_reported() {
    let mut cut = reply("{\"value\": \"x\"");
    cut.truncated = true;
    let check = verify_typed::<i64>(&cut, &target_for::<i64>("i64"), &[], 2);
    assert!(check.truncated);
    assert_eq!(check.issues.len(), 2);
    assert_eq!(check.issues[0].source, IssueSource::Provider);
    assert_eq!(check.issues[1].source, IssueSource::Verification);
    assert!(check.issues.iter().all(|i| i.attempt == 2));
}

#[test]
fn a_truncated_reply_with_a_value_still_fails() {
    let mut cut = reply("{\"value\": 5}");
    cut.truncated = true;
    let check = verify_typed::<i64>(&cut, &target_for::<i64>("i64"), &[], 1);
    assert_eq!(check.value, Some(5));
    assert!(!check.passed());
}

#[test]
fn text_target_takes_the_unfenced_text() {
    let check = verify_text(&reply("```\nHello there.\n```"), &[], 1);
    assert_eq!(check.value.as_deref(), Some("Hello there."));
    assert_eq!(check.repairs, vec![Repair::FenceStripped]);
    assert!(check.passed());
}

#[test]
fn text_target_runs_validators() {
    let short: Validator<String> = Arc::new(|s: &String| {
        (s.len() > 5)
            .then(|| "Use at most 5 characters.".to_owned())
            .into_iter()
            .collect()
    });
    let check = verify_text(&reply("far too long"), &[short], 3);
    assert_eq!(messages(&check), vec!["Use at most 5 characters."]);
    assert_eq!(check.issues[0].source, IssueSource::Validator);
    assert_eq!(check.issues[0].attempt, 3);
    assert!(!check.passed());
}

#[test]
fn empty_text_fails() {
    let check = verify_text(&reply("  \n "), &[], 1);
    assert_eq!(check.value, None);
    assert_eq!(check.issues[0].source, IssueSource::Verification);
}

// ---- typed targets ----

#[test]
fn invoice_in_envelope_passes_with_optional_field_absent() {
    let text = r#"{"value": {"number": "7", "total_cents": 300,
                   "lines": [{"sku": "A", "qty": 3}]}}"#;
    let check = verify_typed::<Invoice>(&reply(text), &target_for::<Invoice>("Invoice"), &[], 1);
    assert!(check.passed(), "{:?}", check.issues);
    assert!(check.repairs.is_empty());
    let invoice = check.value.unwrap();
    assert_eq!(invoice.due, None);
    assert_eq!(invoice.lines[0].qty, 3);
}

#[test]
fn fenced_commented_lenient_invoice_records_every_repair() {
    let text = "```json\n{\"value\": {\"Number\": \"7\", // id\n \"total_cents\": \"300\",\n \
                \"lines\": [{\"sku\": \"A\", \"qty\": 3},], \"due\": null}}\n```";
    let check = verify_typed::<Invoice>(&reply(text), &target_for::<Invoice>("Invoice"), &[], 1);
    assert!(check.passed(), "{:?}", check.issues);
    assert_eq!(
        check.repairs,
        vec![
            Repair::FenceStripped,
            Repair::CommentsSkipped,
            Repair::TrailingCommasSkipped,
            Repair::KeyCaseChanged {
                path: "/value".into(),
                from: "Number".into(),
                to: "number".into()
            },
            Repair::NumberFromString {
                path: "/value/total_cents".into()
            },
        ]
    );
}

#[test]
fn missing_fields_are_named_with_their_type_and_path() {
    let text = r#"{"value": {"number": "7", "lines": [{"sku": "A"}]}}"#;
    let check = verify_typed::<Invoice>(&reply(text), &target_for::<Invoice>("Invoice"), &[], 2);
    assert_eq!(
        messages(&check),
        vec![
            "The required field \"total_cents\" is missing from Invoice; include it.",
            "The required field \"qty\" is missing from Line at value/lines/0; include it.",
        ]
    );
    assert!(
        check
            .issues
            .iter()
            .all(|i| i.source == IssueSource::Verification)
    );
    assert!(check.value.is_none());
}

#[test]
fn schema_bounds_are_validator_issues() {
    let text = r#"{"value": [{"sku": "A", "qty": 0}]}"#;
    let check =
        verify_typed::<Vec<Line>>(&reply(text), &target_for::<Vec<Line>>("Vec<Line>"), &[], 1);
    assert_eq!(
        messages(&check),
        vec!["value/0/qty: 0 is less than the minimum of 1."]
    );
    assert_eq!(check.issues[0].source, IssueSource::Validator);
    assert!(check.value.is_some());
    assert!(!check.passed());
}

#[test]
fn vec_of_structs_without_envelope_is_read_bare() {
    let text = r#"[{"sku": "A", "qty": 1}, {"SKU": "B", "qty": "2"}]"#;
    let check =
        verify_typed::<Vec<Line>>(&reply(text), &target_for::<Vec<Line>>("Vec<Line>"), &[], 1);
    assert!(check.passed(), "{:?}", check.issues);
    assert_eq!(check.value.unwrap()[1].qty, 2);
    assert_eq!(check.repairs[0], Repair::MissingEnvelope);
}

#[test]
fn integer_target_reads_envelope_bare_and_string() {
    let target = target_for::<i64>("i64");
    assert_eq!(
        verify_typed::<i64>(&reply("{\"value\": 42}"), &target, &[], 1).value,
        Some(42)
    );
    let bare = verify_typed::<i64>(&reply("42"), &target, &[], 1);
    assert_eq!(bare.value, Some(42));
    assert_eq!(bare.repairs, vec![Repair::MissingEnvelope]);
    let plus = verify_typed::<i64>(&reply("+42"), &target, &[], 1);
    assert_eq!(plus.value, Some(42));
    assert_eq!(
        plus.repairs,
        vec![Repair::BarePrimitive, Repair::MissingEnvelope]
    );
    let text = verify_typed::<i64>(&reply("{\"value\": \"42\"}"), &target, &[], 1);
    assert_eq!(text.value, Some(42));
}

#[test]
fn wrong_type_names_the_expected_type() {
    let target = target_for::<i64>("i64");
    let check = verify_typed::<i64>(&reply("{\"value\": \"many\"}"), &target, &[], 1);
    assert_eq!(check.issues.len(), 1);
    assert!(
        check.issues[0]
            .message
            .starts_with("The value does not match the expected type i64: invalid type: string"),
        "{}",
        check.issues[0].message
    );
}

#[test]
fn not_json_is_reported_with_the_parser_message() {
    let target = target_for::<i64>("i64");
    let check = verify_typed::<i64>(&reply("about forty"), &target, &[], 1);
    assert!(
        check.issues[0]
            .message
            .starts_with("The response was not valid JSON (")
    );
}

#[test]
fn envelope_with_extra_keys_fails_and_names_them() {
    let text = r#"{"value": 3, "reason": "because", "note": "n"}"#;
    let check = verify_typed::<i64>(&reply(text), &target_for::<i64>("i64"), &[], 1);
    assert_eq!(
        messages(&check),
        vec![
            "Reply with exactly one JSON object {\"value\": ...} and nothing beside it; \
             unexpected keys: note, reason."
        ]
    );
}

#[test]
fn enum_is_read_by_name_bare_and_in_any_case() {
    let target = target_for::<Sentiment>("Sentiment");
    let check = verify_typed::<Sentiment>(&reply("Negative"), &target, &[], 1);
    assert_eq!(check.value, Some(Sentiment::Negative));
    assert_eq!(
        check.repairs,
        vec![Repair::BarePrimitive, Repair::MissingEnvelope]
    );
    let lower = verify_typed::<Sentiment>(&reply("{\"value\": \"neutral\"}"), &target, &[], 1);
    assert_eq!(lower.value, Some(Sentiment::Neutral));
    assert_eq!(
        lower.repairs,
        vec![Repair::EnumCaseChanged {
            path: "/value".into(),
            from: "neutral".into(),
            to: "Neutral".into()
        }]
    );
}

#[test]
fn enum_combination_or_number_lists_the_members() {
    let target = target_for::<Sentiment>("Sentiment");
    let combined = verify_typed::<Sentiment>(
        &reply("{\"value\": \"Neutral, Negative\"}"),
        &target,
        &[],
        1,
    );
    assert_eq!(
        messages(&combined),
        vec![
            "\"Neutral, Negative\" is not a member of Sentiment; answer with exactly one of: \
             Positive, Neutral, Negative."
        ]
    );
    let number = verify_typed::<Sentiment>(&reply("{\"value\": 7}"), &target, &[], 1);
    assert_eq!(
        messages(&number),
        vec![
            "7 is not a member of Sentiment; answer with exactly one of: Positive, Neutral, \
             Negative."
        ]
    );
}

#[test]
fn documented_enum_members_come_from_consts() {
    let target = target_for::<Review>("Review");
    let check =
        verify_typed::<Review>(&reply("{\"value\": {\"mood\": \"DOWN\"}}"), &target, &[], 1);
    assert_eq!(
        check.value,
        Some(Review {
            mood: Some(Mood::Down)
        })
    );
    let wrong =
        verify_typed::<Review>(&reply("{\"value\": {\"mood\": \"Flat\"}}"), &target, &[], 1);
    assert_eq!(
        messages(&wrong),
        vec!["value/mood: \"Flat\" is not a member of Mood; answer with exactly one of: Up, Down."]
    );
    let bare = verify_typed::<Mood>(&reply("up"), &target_for::<Mood>("Mood"), &[], 1);
    assert_eq!(bare.value, Some(Mood::Up));
}

#[test]
fn type_with_its_own_value_field_is_read_bare() {
    let target = target_for::<Reading>("Reading");
    let bare = verify_typed::<Reading>(&reply(r#"{"value": 2.5, "unit": "m"}"#), &target, &[], 1);
    assert_eq!(
        bare.value,
        Some(Reading {
            value: 2.5,
            unit: "m".into()
        })
    );
    assert_eq!(bare.repairs, vec![Repair::MissingEnvelope]);
    let wrapped = verify_typed::<Reading>(
        &reply(r#"{"value": {"value": 2.5, "unit": "m"}}"#),
        &target,
        &[],
        1,
    );
    assert!(wrapped.passed(), "{:?}", wrapped.issues);
}

#[test]
fn map_target_with_a_value_key_is_read_bare() {
    let target = target_for::<HashMap<String, i32>>("HashMap<String, i32>");
    let check = verify_typed::<HashMap<String, i32>>(
        &reply(r#"{"value": 1, "other": "2"}"#),
        &target,
        &[],
        1,
    );
    assert!(check.passed(), "{:?}", check.issues);
    let map = check.value.unwrap();
    assert_eq!(map["value"], 1);
    assert_eq!(map["other"], 2);
}

#[test]
fn null_passes_only_for_an_option_target() {
    let check = verify_typed::<Option<i64>>(
        &reply("{\"value\": null}"),
        &target_for::<Option<i64>>("Option<i64>"),
        &[],
        1,
    );
    assert!(check.passed());
    assert_eq!(check.value, Some(None));
    let check = verify_typed::<Invoice>(&reply("null"), &target_for::<Invoice>("Invoice"), &[], 2);
    assert_eq!(
        messages(&check),
        vec!["The value was null, but a non-null Invoice is required; answer with one."]
    );
    assert_eq!(check.issues[0].attempt, 2);
}

#[test]
fn typed_validators_run_and_a_panic_is_an_issue() {
    let even: Validator<i64> = Arc::new(|n: &i64| {
        if n % 2 == 0 {
            Vec::new()
        } else {
            vec!["Return an even number.".to_owned()]
        }
    });
    let broken: Validator<i64> = Arc::new(|_: &i64| -> Vec<String> { panic!("boom") });
    let check = verify_typed(
        &reply("{\"value\": 3}"),
        &target_for::<i64>("i64"),
        &[even, broken],
        4,
    );
    assert_eq!(
        messages(&check),
        vec!["Return an even number.", "Validator panicked: boom"]
    );
    assert!(
        check
            .issues
            .iter()
            .all(|i| i.source == IssueSource::Validator && i.attempt == 4)
    );
    assert!(!check.passed());
}

// ---- runtime shapes ----

#[test]
fn runtime_shape_unwraps_and_detaches_the_value() {
    let check = verify_value(&reply(r#"{"value": {"a": [1, 2]}}"#), None, &[], 1);
    assert!(check.passed());
    assert_eq!(check.value, Some(json!({"a": [1, 2]})));
}

#[test]
fn runtime_object_without_value_key_is_the_bare_value() {
    let check = verify_value(&reply(r#"{"a": 1}"#), None, &[], 1);
    assert_eq!(check.value, Some(json!({"a": 1})));
    assert_eq!(check.repairs, vec![Repair::MissingEnvelope]);
}

#[test]
fn runtime_envelope_with_extra_keys_always_fails() {
    let target = envelope_target(
        "object",
        json!({"type": "object", "additionalProperties": true}),
        json!({}),
    );
    let check = verify_value(&reply(r#"{"value": 1, "b": 2}"#), Some(&target), &[], 1);
    assert!(check.value.is_none());
    assert!(check.issues[0].message.ends_with("unexpected keys: b."));
}

#[test]
fn runtime_null_fails() {
    let check = verify_value(&reply("{\"value\": null}"), None, &[], 1);
    assert_eq!(
        messages(&check),
        vec!["The value was null, but a JSON value is required; answer with one."]
    );
}

#[test]
fn runtime_schema_is_checked_in_full() {
    let target = envelope_target(
        "order",
        json!({"type": "object", "properties": {"total": {"type": "integer", "minimum": 10}},
               "required": ["total"]}),
        json!({}),
    );
    let low = verify_value(&reply(r#"{"value": {"total": 5}}"#), Some(&target), &[], 1);
    assert_eq!(
        messages(&low),
        vec!["value/total: 5 is less than the minimum of 10."]
    );
    let missing = verify_value(&reply(r#"{"value": {}}"#), Some(&target), &[], 1);
    assert_eq!(missing.issues.len(), 1);
    assert_eq!(missing.issues[0].source, IssueSource::Validator);
    assert!(missing.issues[0].message.contains("total"));
    let fine = verify_value(&reply(r#"{"value": {"total": 12}}"#), Some(&target), &[], 1);
    assert!(fine.passed());
}

#[test]
fn runtime_bare_enum_member_comes_from_the_schema() {
    let target = envelope_target(
        "colour",
        json!({"type": "string", "enum": ["red", "green"]}),
        json!({}),
    );
    let check = verify_value(&reply("green"), Some(&target), &[], 1);
    assert_eq!(check.value, Some(json!("green")));
    assert!(check.passed());
    assert!(verify_value(&reply("green"), None, &[], 1).value.is_none());
}

#[test]
fn runtime_validators_see_the_value() {
    let has_a: Validator<Value> = Arc::new(|v: &Value| {
        if v.get("a").is_some() {
            Vec::new()
        } else {
            vec!["Include the key \"a\".".to_owned()]
        }
    });
    let check = verify_value(&reply(r#"{"value": {"b": 1}}"#), None, &[has_a], 2);
    assert_eq!(messages(&check), vec!["Include the key \"a\"."]);
    assert_eq!(check.issues[0].source, IssueSource::Validator);
}
