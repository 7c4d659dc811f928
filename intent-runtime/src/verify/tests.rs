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
            "value: the required field `total_cents` is missing; add it: integer.",
            "value/lines/0: the required field `qty` is missing; add it: integer (at least 1).",
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
        vec!["value/0/qty: the number is too small; allowed: at least 1."]
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
    assert_eq!(
        messages(&check),
        vec!["value: expected integer, found a string."]
    );
}

#[test]
fn not_json_is_reported_in_words_with_an_excerpt() {
    let target = target_for::<i64>("i64");
    let check = verify_typed::<i64>(&reply("about forty"), &target, &[], 1);
    assert_eq!(
        messages(&check),
        vec!["Line 1 col 1, near `about forty`: text, not JSON; send the answer as JSON."]
    );
}

#[test]
fn envelope_with_extra_keys_fails_and_names_them() {
    let text = r#"{"value": 3, "reason": "because", "note": "n"}"#;
    let check = verify_typed::<i64>(&reply(text), &target_for::<i64>("i64"), &[], 1);
    assert_eq!(
        messages(&check),
        vec!["Unexpected keys beside `value`: `note`, `reason`; send {\"value\": ...} alone."]
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
            "value: expected one of Positive, Neutral, Negative, found a string that is none \
             of them."
        ]
    );
    let number = verify_typed::<Sentiment>(&reply("{\"value\": 7}"), &target, &[], 1);
    assert_eq!(
        messages(&number),
        vec!["value: expected one of Positive, Neutral, Negative, found a number."]
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
        vec!["value/mood: expected one of Up, Down or null, found a string."]
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
    assert_eq!(
        messages(&check),
        vec!["Unexpected keys beside `value`: `b`; send {\"value\": ...} alone."]
    );
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
        vec!["value/total: the number is too small; allowed: at least 10."]
    );
    let missing = verify_value(&reply(r#"{"value": {}}"#), Some(&target), &[], 1);
    assert_eq!(missing.issues.len(), 1);
    assert_eq!(missing.issues[0].source, IssueSource::Validator);
    assert!(missing.issues[0].message.contains("total"));
    let fine = verify_value(&reply(r#"{"value": {"total": 12}}"#), Some(&target), &[], 1);
    assert!(fine.passed());
}

#[derive(Debug, PartialEq, serde::Serialize, Deserialize, JsonSchema)]
enum Tier {
    Gold,
    Silver,
}

#[derive(Debug, PartialEq, serde::Serialize, Deserialize, JsonSchema)]
struct Budget {
    name: String,
    budget_eur: i64,
    tier: Tier,
}

#[test]
fn runtime_schema_targets_get_the_schema_guided_repairs_recorded_as_typed_ones() {
    let text = r#"{"value": {"Name": "Ann", "budget_eur": "5000", "tier": "gold"}}"#;
    let typed = verify_typed::<Budget>(&reply(text), &strict_target::<Budget>(), &[], 1);
    assert!(typed.passed(), "{:?}", typed.issues);

    let schema = serde_json::to_value(schemars::schema_for!(Budget)).unwrap();
    let runtime = crate::schema::runtime_target_schema(&schema).unwrap();
    let check = verify_value(&reply(text), Some(&runtime), &[], 1);
    assert!(check.passed(), "{:?}", check.issues);
    assert_eq!(
        check.value,
        Some(serde_json::to_value(typed.value.unwrap()).unwrap())
    );
    assert_eq!(check.repairs, typed.repairs);
    assert_eq!(check.repairs.len(), 3, "{:?}", check.repairs);

    // What no repair fixes is still reported by the full-schema check.
    let wrong = r#"{"value": {"name": "Ann", "budget_eur": "lots", "tier": "Bronze"}}"#;
    let check = verify_value(&reply(wrong), Some(&runtime), &[], 1);
    assert!(!check.passed());
    assert!(check.repairs.is_empty(), "{:?}", check.repairs);
    assert!(check.issues.len() >= 2, "{:?}", check.issues);
}

#[test]
fn a_conforming_runtime_value_is_spared_the_repair_walk() {
    let schema = serde_json::to_value(schemars::schema_for!(Budget)).unwrap();
    let runtime = crate::schema::runtime_target_schema(&schema).unwrap();
    let text = r#"{"value": {"name": "Ann", "budget_eur": 5000, "tier": "Gold"}}"#;
    let mut check = None;
    let walks = walks_during(|| check = Some(verify_value(&reply(text), Some(&runtime), &[], 1)));
    assert_eq!(walks, 0);
    let check = check.unwrap();
    assert!(check.passed());
    assert!(check.repairs.is_empty());
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Wide {
    n: u128,
    low: i128,
}

#[test]
fn integers_beyond_64_bits_are_read_exactly_into_wide_targets() {
    let text = r#"{"value": {"n": 18446744073709551617, "low": -170141183460469231731687303715884105728}}"#;
    let (check, taken) = verified_both_ways::<Wide>(text, &strict_target::<Wide>(), &[]);
    assert!(!taken);
    assert!(check.passed(), "{:?}", check.issues);
    assert_eq!(
        check.value,
        Some(Wide {
            n: 18_446_744_073_709_551_617,
            low: i128::MIN,
        })
    );
    assert!(check.repairs.is_empty());

    // Beside a repair, and bare, and with a comment: read the same way.
    let repaired = r#"// n is big
        {"N": 18446744073709551616, "low": 1}"#;
    let (check, _) = verified_both_ways::<Wide>(repaired, &strict_target::<Wide>(), &[]);
    assert_eq!(
        check.value,
        Some(Wide {
            n: 18_446_744_073_709_551_616,
            low: 1,
        })
    );
    assert_eq!(check.repairs.len(), 3, "{:?}", check.repairs);
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

// ---- the fast path for clean typed replies ----

/// `verify_typed` without its fast path: the ordinary steps alone, as before the path
/// existed.
fn ordinary_steps<T: DeserializeOwned>(
    reply: &ProviderReply,
    target: &TargetSchema,
    validators: &[Validator<T>],
    attempt: u32,
) -> Verification<T> {
    let mut check = Verification::new(reply);
    match check.read_text(reply, attempt) {
        Some(text) => read_typed(check, text, target, validators, attempt, None),
        None => check,
    }
}

/// The reply verified both ways, which must agree; and whether the fast path answered.
fn verified_both_ways<T: DeserializeOwned + std::fmt::Debug + PartialEq>(
    text: &str,
    target: &TargetSchema,
    validators: &[Validator<T>],
) -> (Verification<T>, bool) {
    let reply = reply(text);
    let fast = verify_typed::<T>(&reply, target, validators, 2);
    assert_eq!(
        fast,
        ordinary_steps::<T>(&reply, target, validators, 2),
        "{text}"
    );
    let unfenced = parse::strip_code_fence(text).text;
    let taken = fast_path::clean_typed_reply::<T>(unfenced, target).is_some();
    (fast, taken)
}

fn strict_target<T: JsonSchema + 'static>() -> Arc<TargetSchema> {
    crate::schema::target_schema::<T>().unwrap()
}

const CLEAN_INVOICE: &str = r#"{"value": {"number": "7", "total_cents": 300,
    "lines": [{"sku": "A", "qty": 3}, {"sku": "B\u00e9", "qty": 1}], "due": null}}"#;

fn clean_invoice() -> Invoice {
    Invoice {
        number: "7".into(),
        total_cents: 300,
        lines: vec![
            Line {
                sku: "A".into(),
                qty: 3,
            },
            Line {
                sku: "Bé".into(),
                qty: 1,
            },
        ],
        due: None,
    }
}

/// The repair walks `verify` ran.
fn walks_during(verify: impl FnOnce()) -> usize {
    let before = REPAIR_WALKS.with(std::cell::Cell::get);
    verify();
    REPAIR_WALKS.with(std::cell::Cell::get) - before
}

#[test]
fn a_bare_reply_that_conforms_once_enveloped_is_spared_the_repair_walk() {
    let target = strict_target::<Invoice>();
    let bare = CLEAN_INVOICE
        .trim()
        .strip_prefix(r#"{"value": "#)
        .and_then(|rest| rest.strip_suffix('}'))
        .unwrap();
    let mut check = None;
    let walks =
        walks_during(|| check = Some(verify_typed::<Invoice>(&reply(bare), &target, &[], 1)));
    assert_eq!(walks, 0);
    assert_eq!(
        check.unwrap(),
        Verification {
            value: Some(clean_invoice()),
            issues: vec![],
            repairs: vec![Repair::MissingEnvelope],
            truncated: false,
        }
    );

    // A bare reply with something to repair still takes the walk.
    let cased = bare.replacen("\"number\"", "\"Number\"", 1);
    let mut check = None;
    let walks =
        walks_during(|| check = Some(verify_typed::<Invoice>(&reply(&cased), &target, &[], 1)));
    assert_eq!(walks, 1);
    let check = check.unwrap();
    assert_eq!(check.value, Some(clean_invoice()));
    assert_eq!(check.repairs[0], Repair::MissingEnvelope);
    assert!(
        matches!(check.repairs.get(1), Some(Repair::KeyCaseChanged { .. })),
        "{:?}",
        check.repairs
    );
}

#[test]
fn a_clean_reply_takes_the_fast_path_to_the_same_verification() {
    let (check, taken) =
        verified_both_ways::<Invoice>(CLEAN_INVOICE, &strict_target::<Invoice>(), &[]);
    assert!(taken, "the fast path declined a clean reply");
    assert_eq!(
        check,
        Verification {
            value: Some(clean_invoice()),
            issues: vec![],
            repairs: vec![],
            truncated: false,
        }
    );
}

#[test]
fn the_fast_path_keeps_the_fence_repair_and_runs_the_validators() {
    let no_lines: Validator<Invoice> = Arc::new(|invoice: &Invoice| {
        (invoice.lines.len() > 1)
            .then(|| "Put every item on one line.".to_owned())
            .into_iter()
            .collect()
    });
    let fenced = format!("```json\n{CLEAN_INVOICE}\n```");
    let (check, taken) =
        verified_both_ways::<Invoice>(&fenced, &strict_target::<Invoice>(), &[no_lines]);
    assert!(taken);
    assert_eq!(check.repairs, vec![Repair::FenceStripped]);
    assert_eq!(messages(&check), vec!["Put every item on one line."]);
    assert_eq!(check.issues[0].source, IssueSource::Validator);
    assert_eq!(check.issues[0].attempt, 2);
    assert_eq!(check.value, Some(clean_invoice()));
}

#[test]
fn a_truncated_clean_reply_still_fails_on_the_fast_path() {
    let mut cut = reply(CLEAN_INVOICE);
    cut.truncated = true;
    let check = verify_typed::<Invoice>(&cut, &strict_target::<Invoice>(), &[], 1);
    assert_eq!(
        check,
        ordinary_steps::<Invoice>(&cut, &strict_target::<Invoice>(), &[], 1)
    );
    assert_eq!(check.value, Some(clean_invoice()));
    assert!(!check.passed());
}

#[test]
fn the_fast_path_declines_whatever_the_ordinary_steps_would_repair_or_report() {
    let invoice = strict_target::<Invoice>();
    let declined = |text: &str| {
        let (_, taken) = verified_both_ways::<Invoice>(text, &invoice, &[]);
        assert!(!taken, "the fast path answered {text}");
    };
    // An unknown key, a missing nullable key, a repeated key (inside and beside the
    // envelope), a bound broken, a bare value, a key in another case, a number in a
    // string, comments, trailing commas.
    declined(r#"{"value": {"number": "7", "total_cents": 1, "lines": [], "due": null, "x": 1}}"#);
    declined(r#"{"value": {"number": "7", "total_cents": 1, "lines": []}}"#);
    declined(
        r#"{"value": {"number": "7", "number": "8", "total_cents": 1, "lines": [], "due": null}}"#,
    );
    declined(
        r#"{"value": 1, "value": {"number": "7", "total_cents": 1, "lines": [], "due": null}}"#,
    );
    declined(
        r#"{"value": {"number": "7", "total_cents": 1, "lines": [{"sku": "A", "qty": 0}], "due": null}}"#,
    );
    declined(r#"{"number": "7", "total_cents": 1, "lines": [], "due": null}"#);
    declined(r#"{"value": {"Number": "7", "total_cents": 1, "lines": [], "due": null}}"#);
    declined(r#"{"value": {"number": "7", "total_cents": "1", "lines": [], "due": null}}"#);
    declined(
        "{\"value\": {\"number\": \"7\", // id\n \"total_cents\": 1, \"lines\": [], \"due\": null}}",
    );
    declined(r#"{"value": {"number": "7", "total_cents": 1, "lines": [], "due": null,}}"#);
    declined(
        r#"{"value": {"number": "7", "total_cents": 1, "lines": [], "due": null}, "note": "x"}"#,
    );
    declined("not JSON at all");
}

#[test]
fn a_repeated_key_is_read_as_the_ordinary_steps_read_it() {
    let text =
        r#"{"value": {"number": "7", "number": "8", "total_cents": 1, "lines": [], "due": null}}"#;
    let (check, taken) = verified_both_ways::<Invoice>(text, &strict_target::<Invoice>(), &[]);
    assert!(!taken);
    assert!(check.passed(), "{:?}", check.issues);
    assert_eq!(
        check.value.map(|invoice| invoice.number),
        Some("8".to_owned())
    );
}

#[test]
fn the_fast_path_declines_a_wrong_enum_case_a_null_and_a_number_past_64_bits() {
    let (check, taken) = verified_both_ways::<Sentiment>(
        r#"{"value": "positive"}"#,
        &strict_target::<Sentiment>(),
        &[],
    );
    assert!(!taken);
    assert_eq!(check.value, Some(Sentiment::Positive));
    assert_eq!(check.repairs.len(), 1, "{:?}", check.repairs);
    let (clean, taken) = verified_both_ways::<Sentiment>(
        r#"{"value": "Positive"}"#,
        &strict_target::<Sentiment>(),
        &[],
    );
    assert!(taken);
    assert_eq!(clean.value, Some(Sentiment::Positive));

    let (check, taken) = verified_both_ways::<Option<i64>>(
        r#"{"value": null}"#,
        &strict_target::<Option<i64>>(),
        &[],
    );
    assert!(!taken);
    assert_eq!(check.value, Some(None));

    // In a `Value` this is a float: the fast path declines it, and the ordinary steps
    // read it exactly from the text.
    let wide = r#"{"value": 18446744073709551616}"#;
    let (check, taken) = verified_both_ways::<u128>(wide, &strict_target::<u128>(), &[]);
    assert!(!taken);
    assert_eq!(check.value, Some(u128::from(u64::MAX) + 1));
    let (check, taken) = verified_both_ways::<u128>(
        r#"{"value": 18446744073709551615}"#,
        &strict_target::<u128>(),
        &[],
    );
    assert!(taken);
    assert_eq!(check.value, Some(u128::from(u64::MAX)));
}

#[test]
fn targets_the_strict_schema_does_not_describe_never_take_the_fast_path() {
    let target = strict_target::<HashMap<String, i64>>();
    assert!(!target.strict_compatible);
    let (check, taken) =
        verified_both_ways::<HashMap<String, i64>>(r#"{"value": {"a": 1}}"#, &target, &[]);
    assert!(!taken);
    assert_eq!(check.value, Some(HashMap::from([("a".to_owned(), 1)])));
}

/// One change a model might make to a clean reply.
#[derive(Debug, Clone, Copy)]
enum Mutation {
    None,
    KeyCase,
    DropDue,
    ExtraKey,
    QuotedTotal,
    NumericSku,
    Bare,
    Comment,
    TrailingComma,
    RepeatedKey,
    NullValue,
    Fence,
    BesideEnvelope,
    FloatTotal,
}

fn mutation() -> impl proptest::strategy::Strategy<Value = Mutation> {
    use proptest::prelude::*;
    prop_oneof![
        Just(Mutation::None),
        Just(Mutation::KeyCase),
        Just(Mutation::DropDue),
        Just(Mutation::ExtraKey),
        Just(Mutation::QuotedTotal),
        Just(Mutation::NumericSku),
        Just(Mutation::Bare),
        Just(Mutation::Comment),
        Just(Mutation::TrailingComma),
        Just(Mutation::RepeatedKey),
        Just(Mutation::NullValue),
        Just(Mutation::Fence),
        Just(Mutation::BesideEnvelope),
        Just(Mutation::FloatTotal),
    ]
}

/// The reply text of an invoice, after one mutation.
fn mutated_reply(invoice: &Value, mutation: Mutation) -> String {
    let mut inner = invoice.clone();
    let object = inner.as_object_mut().unwrap();
    match mutation {
        Mutation::KeyCase => {
            let total = object.remove("total_cents").unwrap();
            object.insert("Total_Cents".into(), total);
        }
        Mutation::DropDue => {
            object.remove("due");
        }
        Mutation::ExtraKey => {
            object.insert("currency".into(), json!("EUR"));
        }
        Mutation::QuotedTotal => {
            let total = object["total_cents"].to_string();
            object.insert("total_cents".into(), json!(total));
        }
        Mutation::NumericSku => {
            if let Some(line) = object["lines"].as_array_mut().unwrap().first_mut() {
                line["sku"] = json!(12);
            }
        }
        Mutation::FloatTotal => {
            let total = object["total_cents"].as_i64().unwrap();
            object.insert("total_cents".into(), json!(total as f64 + 0.5));
        }
        _ => {}
    }
    let envelope = json!({"value": inner}).to_string();
    match mutation {
        Mutation::Bare => inner.to_string(),
        Mutation::Comment => format!("// the invoice\n{envelope}"),
        Mutation::TrailingComma => format!("{},}}", &envelope[..envelope.len() - 1]),
        Mutation::RepeatedKey => format!("{{\"value\": null, {}", &envelope[1..]),
        Mutation::NullValue => r#"{"value": null}"#.to_owned(),
        Mutation::Fence => format!("```json\n{envelope}\n```"),
        Mutation::BesideEnvelope => format!("{{\"note\": 1, {}", &envelope[1..]),
        _ => envelope,
    }
}

fn invoice_json() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::collection::vec;
    use proptest::prelude::*;
    let line =
        ("[A-Za-z0-9é\"]{0,5}", -1i64..4).prop_map(|(sku, qty)| json!({"sku": sku, "qty": qty}));
    (
        "[0-9A-Z\\\\]{1,6}",
        any::<i64>(),
        vec(line, 0..4),
        proptest::option::of("[0-9-]{0,10}"),
    )
        .prop_map(|(number, total, lines, due)| {
            json!({"number": number, "total_cents": total, "lines": lines, "due": due})
        })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(384))]

    #[test]
    fn the_fast_path_then_the_ordinary_steps_equal_the_ordinary_steps_alone(
        invoice in invoice_json(),
        mutation in mutation(),
        faithful in proptest::prelude::any::<bool>(),
    ) {
        let text = mutated_reply(&invoice, mutation);
        let target = if faithful {
            (*strict_target::<Invoice>()).clone()
        } else {
            target_for::<Invoice>("Invoice")
        };
        let (check, taken) = verified_both_ways::<Invoice>(&text, &target, &[]);
        let within_bounds = invoice["lines"]
            .as_array()
            .unwrap()
            .iter()
            .all(|line| line["qty"].as_i64().unwrap() >= 1);
        if matches!(mutation, Mutation::None | Mutation::Fence) && within_bounds {
            proptest::prop_assert!(taken, "a clean reply was declined: {}", text);
            proptest::prop_assert!(check.passed());
        }
    }
}

// ---- answer recovery ----

fn recovered<T: DeserializeOwned>(text: &str, target: &TargetSchema) -> Verification<T> {
    verify_typed_with::<T>(&reply(text), target, &[], 1, AnswerRecovery::FromProse)
}

/// The verdict with recovery off: what it has always been, and no extraction recorded.
fn fails_without_recovery<T: DeserializeOwned>(text: &str, target: &TargetSchema) {
    let check = verify_typed::<T>(&reply(text), target, &[], 1);
    assert!(!check.passed(), "{text}");
    assert!(
        !check.repairs.contains(&Repair::JsonExtractedFromProse),
        "{text}"
    );
    assert!(
        messages(&check)[0].contains("JSON"),
        "{text}: {:?}",
        messages(&check)
    );
}

const ONE_LINE: &str = r#"{"value": [{"sku": "A", "qty": 2}]}"#;

fn one_line() -> Vec<Line> {
    vec![Line {
        sku: "A".into(),
        qty: 2,
    }]
}

#[test]
fn recovery_reads_one_fenced_block_after_prose() {
    let target = target_for::<Vec<Line>>("Vec<Line>");
    let text = format!("Sure! Here is the result:\n```json\n{ONE_LINE}\n```\nAnything else?");
    let check = recovered::<Vec<Line>>(&text, &target);
    assert!(check.passed(), "{:?}", check.issues);
    assert_eq!(check.value, Some(one_line()));
    assert_eq!(check.repairs, vec![Repair::JsonExtractedFromProse]);
    fails_without_recovery::<Vec<Line>>(&text, &target);
}

#[test]
fn recovery_reads_one_object_inside_a_sentence() {
    let target = target_for::<Line>("Line");
    let text = r#"The line is {"sku": "A", "qty": 2}, as asked."#;
    let check = recovered::<Line>(text, &target);
    assert!(check.passed(), "{:?}", check.issues);
    assert_eq!(check.value, one_line().pop());
    assert_eq!(
        check.repairs,
        vec![Repair::JsonExtractedFromProse, Repair::MissingEnvelope]
    );
    fails_without_recovery::<Line>(text, &target);
}

#[test]
fn recovery_reads_an_array_after_prose_and_repairs_it_as_usual() {
    let target = target_for::<Vec<Line>>("Vec<Line>");
    let text = r#"Here are the lines: [{"SKU": "A", "qty": "2"}]"#;
    let check = recovered::<Vec<Line>>(text, &target);
    assert!(check.passed(), "{:?}", check.issues);
    assert_eq!(check.value, Some(one_line()));
    assert_eq!(
        check.repairs[..2],
        [Repair::JsonExtractedFromProse, Repair::MissingEnvelope]
    );
    assert!(
        matches!(check.repairs[2], Repair::KeyCaseChanged { .. }),
        "{:?}",
        check.repairs
    );
    assert!(matches!(check.repairs[3], Repair::NumberFromString { .. }));
    fails_without_recovery::<Vec<Line>>(text, &target);
}

#[test]
fn recovery_respects_braces_and_quotes_inside_strings() {
    let target = target_for::<Line>("Line");
    let text = r#"Note the "{" here: {"value": {"sku": "a } \" ] {", "qty": 1}} done"#;
    let check = recovered::<Line>(text, &target);
    assert!(check.passed(), "{:?}", check.issues);
    assert_eq!(
        check.value.map(|line| line.sku),
        Some("a } \" ] {".to_owned())
    );
    fails_without_recovery::<Line>(text, &target);
}

#[test]
fn recovery_never_guesses_between_two_different_answers() {
    let target = target_for::<Line>("Line");
    for text in [
        r#"Either {"sku": "A", "qty": 1} or {"sku": "B", "qty": 1}."#,
        "```json\n{\"value\": {\"sku\": \"A\", \"qty\": 1}}\n```\nor\n```json\n{\"sku\": \"B\", \"qty\": 2}\n```",
    ] {
        let check = recovered::<Line>(text, &target);
        assert!(check.value.is_none(), "{text}");
        assert_eq!(
            messages(&check),
            vec![
                "The reply held 2 different answers (Line) among its text; give exactly one \
                 answer, as the JSON object {\"value\": ...} alone, with no text around it."
            ]
        );
        assert!(!check.repairs.contains(&Repair::JsonExtractedFromProse));
        fails_without_recovery::<Line>(text, &target);
    }
    // The same answer written twice is one answer.
    let twice = r#"{"sku": "A", "qty": 1} -- again: {"value": {"sku": "A", "qty": 1}}"#;
    assert!(recovered::<Line>(twice, &target).passed());
}

#[test]
fn recovery_takes_the_one_candidate_of_the_targets_shape_beside_an_example() {
    let target = target_for::<Line>("Line");
    let text = r#"Lines look like {"example": true}; yours is {"sku": "A", "qty": 2}."#;
    let check = recovered::<Line>(text, &target);
    assert!(check.passed(), "{:?}", check.issues);
    assert_eq!(check.value, one_line().pop());
}

#[test]
fn recovery_of_a_candidate_that_is_not_the_target_fails_with_the_usual_issue() {
    let target = target_for::<Line>("Line");
    let text = r#"Here it is: {"sku": "A"}"#;
    let check = recovered::<Line>(text, &target);
    assert!(check.value.is_none());
    assert_eq!(
        messages(&check),
        vec!["value: the required field `qty` is missing; add it: integer (at least 1)."]
    );
    assert_eq!(check.repairs[0], Repair::JsonExtractedFromProse);
    fails_without_recovery::<Line>(text, &target);

    // Several candidates, none of the target's shape.
    let check = recovered::<Line>(r#"Maybe {"a": 1} or [2]."#, &target);
    assert_eq!(
        messages(&check),
        vec![
            "The reply held prose around 2 JSON values and none of them is a Line; reply with \
             the answer alone, as the JSON object {\"value\": ...} and nothing else."
        ]
    );
}

#[test]
fn recovery_reads_a_candidate_inside_a_surrounding_fence() {
    let target = target_for::<Line>("Line");
    let text = "```\nThe answer: {\"value\": {\"sku\": \"A\", \"qty\": 2}}\n```";
    let check = recovered::<Line>(text, &target);
    assert!(check.passed(), "{:?}", check.issues);
    assert_eq!(
        check.repairs,
        vec![Repair::FenceStripped, Repair::JsonExtractedFromProse]
    );
    fails_without_recovery::<Line>(text, &target);
}

#[test]
fn recovery_leaves_prose_guesses_and_broken_json_failures() {
    let target = target_for::<Line>("Line");
    for text in [
        "The sku is A and the quantity 2.",
        "**yes**, it is",
        r#"Here: {"sku": "A", "qty": 2"#,
        "Here: {'sku': 'A', 'qty': 2}",
        "Here: {sku: \"A\", qty: 2}",
    ] {
        let check = recovered::<Line>(text, &target);
        assert!(check.value.is_none(), "{text}");
        assert!(
            messages(&check)[0].starts_with("Line "),
            "{text}: {:?}",
            messages(&check)
        );
        assert!(!check.repairs.contains(&Repair::JsonExtractedFromProse));
    }
    // Numbers in words or with separators, and structure around a scalar, stay failures.
    let count = target_for::<i64>("i64");
    for text in ["About 1,000 of them.", "It is 3/4.", "The count is: 12"] {
        let check = recovered::<i64>(text, &count);
        assert!(check.value.is_none(), "{text}");
    }
}

#[test]
fn a_recovered_answer_meets_the_schema_and_the_validators_like_any_reply() {
    let target = target_for::<Line>("Line");
    let even: Validator<Line> = Arc::new(|line: &Line| {
        (line.qty % 2 == 1)
            .then(|| "Use an even quantity.".to_owned())
            .into_iter()
            .collect()
    });
    let text = r#"Result: {"sku": "A", "qty": 0} -- and {"sku": "B", "qty": 3}? No: {"value": 1}"#;
    let check = verify_typed_with::<Line>(
        &reply(text),
        &target,
        std::slice::from_ref(&even),
        1,
        AnswerRecovery::FromProse,
    );
    // Two lines: no guess, whatever their bounds.
    assert!(check.value.is_none());
    let text = r#"Result: {"sku": "B", "qty": 3} -- that is all"#;
    let check =
        verify_typed_with::<Line>(&reply(text), &target, &[even], 1, AnswerRecovery::FromProse);
    assert_eq!(messages(&check), vec!["Use an even quantity."]);
    let zero = recovered::<Line>(r#"Result: {"sku": "B", "qty": 0}."#, &target);
    assert_eq!(
        messages(&zero),
        vec!["value/qty: the number is too small; allowed: at least 1."]
    );
}

#[test]
fn recovery_for_runtime_shapes_takes_the_one_value_that_meets_the_schema() {
    let schema = serde_json::to_value(schemars::schema_for!(Budget)).unwrap();
    let runtime = crate::schema::runtime_target_schema(&schema).unwrap();
    let text =
        r#"Example: {"name": "x"}. Answer: {"Name": "Ann", "budget_eur": 5, "tier": "Gold"}"#;
    let check = verify_value_with(
        &reply(text),
        Some(&runtime),
        &[],
        1,
        AnswerRecovery::FromProse,
    );
    assert!(check.passed(), "{:?}", check.issues);
    assert_eq!(
        check.value,
        Some(json!({"name": "Ann", "budget_eur": 5, "tier": "Gold"}))
    );
    assert_eq!(
        check.repairs[..2],
        [Repair::JsonExtractedFromProse, Repair::MissingEnvelope]
    );
    assert!(!verify_value(&reply(text), Some(&runtime), &[], 1).passed());

    // Without a schema every value fits: two are two answers.
    let any = verify_value_with(
        &reply("Either [1] or [2]"),
        None,
        &[],
        1,
        AnswerRecovery::FromProse,
    );
    assert!(any.value.is_none());
    assert!(messages(&any)[0].contains("2 different answers"));
    let one = verify_value_with(
        &reply("Take [1, 2]."),
        None,
        &[],
        1,
        AnswerRecovery::FromProse,
    );
    assert_eq!(one.value, Some(json!([1, 2])));
}
