//! Property tests: the parser and the verifier never panic on any reply text, and read
//! back what well-formed replies hold.

use std::collections::HashMap;
use std::sync::Arc;

use crate::parse::json_candidates;
use crate::parse::{parse_bare_primitive, parse_json_lenient, strip_code_fence};
use crate::provider::ProviderReply;
use crate::result::Repair;
use crate::schema::TargetSchema;
use crate::verify::{
    AnswerRecovery, verify_text, verify_typed, verify_typed_with, verify_value, verify_value_with,
};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Line {
    sku: String,
    #[schemars(range(min = 0))]
    qty: i64,
    note: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
enum Sentiment {
    Positive,
    Neutral,
    Negative,
}

/// The envelope around `T`'s schema, `$defs` hoisted (what `schema::target_schema`
/// builds; written out here so these tests do not depend on it).
fn target_for<T: JsonSchema>(type_name: &str) -> TargetSchema {
    let mut inner = serde_json::to_value(schemars::schema_for!(T)).unwrap();
    let mut defs = json!({});
    if let Value::Object(object) = &mut inner {
        object.remove("$schema");
        if let Some(hoisted) = object.remove("$defs") {
            defs = hoisted;
        }
    }
    let full = json!({"type": "object", "properties": {"value": inner}, "required": ["value"],
                      "additionalProperties": false, "$defs": defs});
    TargetSchema {
        type_name: type_name.to_owned(),
        strict: Arc::new(full.clone()),
        full: Arc::new(full),
        strict_compatible: true,
    }
}

/// Runs every verifier entry point over one reply text; only a panic can fail it.
fn verify_everything(text: &str, truncated: bool) {
    let mut reply = ProviderReply::text(text);
    reply.truncated = truncated;
    let _ = verify_text(&reply, &[], 1);
    let _ = verify_typed::<Vec<Line>>(&reply, &target_for::<Vec<Line>>("Vec<Line>"), &[], 1);
    let _ = verify_typed::<Sentiment>(&reply, &target_for::<Sentiment>("Sentiment"), &[], 1);
    let _ = verify_typed::<Option<i64>>(&reply, &target_for::<Option<i64>>("Option<i64>"), &[], 1);
    let _ = verify_typed::<HashMap<String, f64>>(
        &reply,
        &target_for::<HashMap<String, f64>>("HashMap<String, f64>"),
        &[],
        1,
    );
    let _ = verify_value(&reply, None, &[], 1);
    let _ = verify_value(&reply, Some(&target_for::<Line>("Line")), &[], 1);
    // Answer recovery reaches every candidate search on any text.
    let _ = json_candidates(text);
    let on = AnswerRecovery::FromProse;
    let _ =
        verify_typed_with::<Vec<Line>>(&reply, &target_for::<Vec<Line>>("Vec<Line>"), &[], 1, on);
    let _ = verify_typed_with::<Line>(&reply, &target_for::<Line>("Line"), &[], 1, on);
    let _ = verify_typed_with::<Option<i64>>(
        &reply,
        &target_for::<Option<i64>>("Option<i64>"),
        &[],
        1,
        on,
    );
    let _ = verify_value_with(&reply, None, &[], 1, on);
    let _ = verify_value_with(&reply, Some(&target_for::<Line>("Line")), &[], 1, on);
}

/// Prose around answers: words, punctuation and stray braces, but no quotes and no
/// square brackets, so no JSON value can be made of it (and no array can wrap an answer
/// into a value of another shape).
fn prose() -> impl Strategy<Value = String> {
    "[a-zA-Z ,.!?{}\n]{0,16}"
}

/// A line as a model might write it in prose: bare, enveloped, or fenced.
fn written(line: &Line, form: u8) -> String {
    let json = serde_json::to_string(line).unwrap();
    match form % 3 {
        0 => json,
        1 => format!("{{\"value\": {json}}}"),
        _ => format!("\n```json\n{json}\n```\n"),
    }
}

/// Text built from the characters JSON is made of, so that the parser's deeper paths
/// (comments, commas, nesting, envelopes) are reached, not only its first error.
fn json_ish() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just(",".to_owned()),
        Just(":".to_owned()),
        Just("\"value\"".to_owned()),
        Just("\"qty\"".to_owned()),
        Just("\"SKU\"".to_owned()),
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("// c\n".to_owned()),
        Just("/* c */".to_owned()),
        Just("```json\n".to_owned()),
        Just("```".to_owned()),
        Just("Neutral".to_owned()),
        "-?[0-9]{1,25}(\\.[0-9]{1,3})?".prop_map(|s| s),
        "\"[a-zA-Z0-9 ,\\\\]{0,6}\"".prop_map(|s| s),
        "[ \n\t]{1,2}".prop_map(|s| s),
    ];
    vec(pieces, 0..40).prop_map(|parts| parts.concat())
}

/// Arbitrary JSON without floats (whose text form need not round-trip exactly).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-zA-Z0-9 ]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 5, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..5).prop_map(Value::Array),
            btree_map("[a-z]{1,5}", inner, 0..5)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn line() -> impl Strategy<Value = Line> {
    (
        "[a-zA-Z0-9]{1,8}",
        0i64..1_000_000,
        proptest::option::of("[a-z ]{0,8}"),
    )
        .prop_map(|(sku, qty, note)| Line { sku, qty, note })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parser_never_panics_on_any_text(text in any::<String>()) {
        let _ = strip_code_fence(&text);
        let _ = parse_json_lenient(&text);
        let _ = parse_bare_primitive(&text, &["Positive".to_owned()]);
    }

    #[test]
    fn parser_never_panics_on_json_ish_text(text in json_ish()) {
        let _ = parse_json_lenient(strip_code_fence(&text).text);
    }

    #[test]
    fn lenient_parsing_records_only_the_leniencies_the_text_holds(text in json_ish()) {
        let strict = serde_json::from_str::<Value>(&text).is_ok();
        if let Ok((_, repairs)) = parse_json_lenient(&text) {
            prop_assert_eq!(repairs.is_empty(), strict);
            if repairs.contains(&Repair::CommentsSkipped) {
                prop_assert!(text.contains("//") || text.contains("/*"), "{}", text);
            }
            if repairs.contains(&Repair::TrailingCommasSkipped) {
                prop_assert!(text.contains(','), "{}", text);
            }
        } else {
            prop_assert!(!strict);
        }
    }

    #[test]
    fn verifier_never_panics_on_any_text(text in any::<String>(), truncated in any::<bool>()) {
        verify_everything(&text, truncated);
    }

    #[test]
    fn verifier_never_panics_on_json_ish_text(text in json_ish()) {
        verify_everything(&text, false);
    }

    #[test]
    fn recovery_never_accepts_two_different_answers(
        a in line(),
        b in line(),
        forms in (any::<u8>(), any::<u8>()),
        around in (prose(), prose(), prose()),
    ) {
        prop_assume!(a != b);
        let text = format!(
            "{}{}{}{}{}",
            around.0,
            written(&a, forms.0),
            around.1,
            written(&b, forms.1),
            around.2
        );
        let target = target_for::<Line>("Line");
        let check = verify_typed_with::<Line>(
            &ProviderReply::text(&text),
            &target,
            &[],
            1,
            AnswerRecovery::FromProse,
        );
        prop_assert!(check.value.is_none(), "{}", text);
        prop_assert!(!check.passed());
    }

    #[test]
    fn recovery_reads_the_one_answer_in_prose(
        a in line(),
        form in any::<u8>(),
        around in (prose(), prose()),
    ) {
        let text = format!("{}{}{}", around.0, written(&a, form), around.1);
        let target = target_for::<Line>("Line");
        let reply = ProviderReply::text(&text);
        let check = verify_typed_with::<Line>(&reply, &target, &[], 1, AnswerRecovery::FromProse);
        prop_assert_eq!(check.value, Some(a), "{}", text);
        // Off, the verdict is what it always was: the reply as a whole.
        let off = verify_typed::<Line>(&reply, &target, &[], 1);
        let whole = verify_typed_with::<Line>(&reply, &target, &[], 1, AnswerRecovery::Off);
        prop_assert_eq!(off, whole);
    }

    #[test]
    fn runtime_envelope_returns_its_value(value in json_value()) {
        prop_assume!(!value.is_null());
        let text = json!({"value": value}).to_string();
        let check = verify_value(&ProviderReply::text(text), None, &[], 1);
        prop_assert!(check.passed());
        prop_assert!(check.repairs.is_empty());
        prop_assert_eq!(check.value, Some(value));
    }

    #[test]
    fn fenced_and_commented_json_reads_the_same(value in json_value()) {
        prop_assume!(!value.is_null());
        let text = format!("```json\n// reply\n{}\n```", json!({"value": value}));
        let check = verify_value(&ProviderReply::text(text), None, &[], 1);
        prop_assert_eq!(check.value, Some(value));
        prop_assert_eq!(check.repairs, vec![Repair::FenceStripped, Repair::CommentsSkipped]);
    }

    #[test]
    fn key_case_and_numbers_in_strings_are_repaired(
        lines in vec(line(), 0..4),
        upper in vec(any::<bool>(), 12),
    ) {
        let mut json = serde_json::to_value(&lines).unwrap();
        let mut flags = upper.iter().cycle();
        for item in json.as_array_mut().unwrap() {
            let object = item.as_object_mut().unwrap();
            let qty = object.remove("qty").unwrap();
            object.insert("qty".into(), json!(qty.to_string()));
            let renamed: serde_json::Map<String, Value> = std::mem::take(object)
                .into_iter()
                .map(|(k, v)| {
                    let upper = *flags.next().unwrap();
                    (if upper { k.to_uppercase() } else { k }, v)
                })
                .collect();
            *object = renamed;
        }
        let text = json!({"value": json}).to_string();
        let target = target_for::<Vec<Line>>("Vec<Line>");
        let check = verify_typed::<Vec<Line>>(&ProviderReply::text(text), &target, &[], 1);
        prop_assert!(check.passed(), "{:?}", check.issues);
        prop_assert_eq!(check.value, Some(lines));
    }

    #[test]
    fn any_integer_is_read_bare_enveloped_or_quoted(n in any::<i64>()) {
        let target = target_for::<i64>("i64");
        for text in [n.to_string(), format!("{{\"value\": {n}}}"), format!("{{\"value\": \"{n}\"}}")] {
            let check = verify_typed::<i64>(&ProviderReply::text(text), &target, &[], 1);
            prop_assert_eq!(check.value, Some(n));
        }
    }
}

#[test]
fn deeply_nested_replies_are_issues_not_crashes() {
    for text in [
        "[".repeat(50_000),
        format!("{}{}", "{\"value\":".repeat(20_000), "1"),
        format!("/* x */ {}", "[".repeat(50_000)),
    ] {
        verify_everything(&text, false);
    }
}
