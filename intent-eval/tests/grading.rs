//! The grading function with boolean, score and grade verdicts, and property tests of
//! canonicalization.

use intent_rs_eval::{EvalError, Rules, ValueSet, Verdict, Whitespace, grade};
use proptest::prelude::*;
use serde_json::{Value, json};

#[test]
fn boolean_verdicts_pass_on_true_only() {
    let verdict = Verdict::boolean();
    assert!(verdict.passes(&json!(true)).unwrap());
    assert!(!verdict.passes(&json!(false)).unwrap());
    // A verdict of another shape is a failed grade, not an error.
    assert!(!verdict.passes(&json!("true")).unwrap());
    assert!(!verdict.passes(&json!(null)).unwrap());
}

#[test]
fn score_verdicts_pass_from_the_threshold() {
    let verdict = Verdict::score(1, 5, 4);
    assert!(!verdict.passes(&json!(3)).unwrap());
    assert!(verdict.passes(&json!(4)).unwrap());
    assert!(verdict.passes(&json!(5)).unwrap());
    // The schema is applied as is: 4.0 is an integer in JSON Schema, "4" is not.
    assert!(verdict.passes(&json!(4.0)).unwrap());
    assert!(!verdict.passes(&json!("4")).unwrap());
}

#[test]
fn grade_verdicts_pass_when_listed_after_canonicalization() {
    let verdict = Verdict::grade(&["A", "B", "C", "F"], &["A", "B"]);
    assert!(verdict.passes(&json!("A")).unwrap());
    assert!(verdict.passes(&json!(" b ")).unwrap());
    assert!(!verdict.passes(&json!("C")).unwrap());
    assert!(!verdict.passes(&json!(["A"])).unwrap());
    // With exact rules the same literal list no longer accepts a lower-case grade.
    let exact = verdict.clone().rules(Rules::exact());
    assert!(!exact.passes(&json!("b")).unwrap());
}

#[test]
fn explicit_passing_schemas_are_not_canonicalized() {
    let verdict = Verdict::custom(
        json!({"type": "object", "properties": {"label": {"type": "string"}}}),
        ValueSet::schema(
            json!({"properties": {"label": {"const": "SAME"}}, "required": ["label"]}),
        ),
        "label SAME or DIFFERENT",
    )
    .rules(Rules::lenient());
    assert!(verdict.passes(&json!({"label": "SAME"})).unwrap());
    assert!(!verdict.passes(&json!({"label": "same"})).unwrap());
    assert!(!verdict.passes(&json!({"other": 1})).unwrap());
}

#[test]
fn only_a_malformed_schema_is_an_error() {
    let verdict = Verdict::custom(
        json!({"type": "integer"}),
        ValueSet::schema(json!({"minimum": "four"})),
        "",
    );
    assert!(matches!(
        verdict.passes(&json!(4)),
        Err(EvalError::MalformedSchema(_))
    ));
}

#[test]
fn several_literals_mean_any_of_them() {
    let passing = ValueSet::any_of([json!({"a": 1, "b": [1, 2]}), json!("x")]);
    assert!(grade(&Rules::exact(), &passing, &json!({"b": [1.0, 2], "a": 1})).unwrap());
    assert!(grade(&Rules::exact(), &passing, &json!("x")).unwrap());
    assert!(!grade(&Rules::exact(), &passing, &json!({"b": [2, 1], "a": 1})).unwrap());
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1.0e6f64..1.0e6).prop_map(|n| json!(n)),
        (-1000i64..1000).prop_map(|n| json!(n as f64)),
        "[ a-zA-Z\t\n]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn rules() -> impl Strategy<Value = Rules> {
    (
        any::<bool>(),
        prop_oneof![
            Just(Whitespace::Keep),
            Just(Whitespace::Trim),
            Just(Whitespace::Collapse)
        ],
    )
        .prop_map(|(sensitive, whitespace)| {
            Rules::exact()
                .case_sensitive(sensitive)
                .whitespace(whitespace)
        })
}

/// Changes every string inside `value` with `f`.
fn map_strings(value: &Value, f: &dyn Fn(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(f(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| map_strings(v, f)).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), map_strings(v, f)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn jsonschema_accepts(schema: Value, instance: &Value) -> bool {
    jsonschema::validator_for(&schema)
        .unwrap()
        .is_valid(instance)
}

proptest! {
    #[test]
    fn canonicalization_is_idempotent(value in json_value(), rules in rules()) {
        let once = rules.canonical(&value);
        prop_assert_eq!(rules.canonical(&once), once);
    }

    #[test]
    fn every_value_matches_itself(value in json_value(), rules in rules()) {
        prop_assert!(grade(&rules, &ValueSet::one(value.clone()), &value).unwrap());
    }

    // The literal comparison is JSON Schema's `const` / `enum` on canonical values.
    #[test]
    fn literal_grading_agrees_with_const_and_enum(
        expected in prop::collection::vec(json_value(), 1..3),
        actual in json_value(),
        rules in rules(),
    ) {
        let canonical: Vec<Value> = expected.iter().map(|v| rules.canonical(v)).collect();
        let schema = if canonical.len() == 1 {
            json!({"const": canonical[0]})
        } else {
            json!({"enum": canonical})
        };
        let oracle = jsonschema_accepts(schema, &rules.canonical(&actual));
        prop_assert_eq!(grade(&rules, &ValueSet::AnyOf(expected), &actual).unwrap(), oracle);
    }

    #[test]
    fn case_does_not_count_when_insensitive(value in json_value()) {
        let rules = Rules::exact().case_sensitive(false);
        let shouted = map_strings(&value, &|s| s.to_uppercase());
        prop_assert!(grade(&rules, &ValueSet::one(value), &shouted).unwrap());
    }

    #[test]
    fn collapsed_whitespace_ignores_runs_and_ends(value in json_value()) {
        let rules = Rules::exact().whitespace(Whitespace::Collapse);
        let padded = map_strings(&value, &|s| format!("  {}\t", s.replace(' ', "  \n ")));
        prop_assert!(grade(&rules, &ValueSet::one(value), &padded).unwrap());
    }

    #[test]
    fn trimmed_whitespace_keeps_inner_runs(word in "[a-z]{1,6}", pad in "[ \t]{1,3}") {
        let rules = Rules::exact().whitespace(Whitespace::Trim);
        let inner = json!(format!("{word}{pad}{word}"));
        let padded = json!(format!("{pad}{word}{pad}{word}{pad}"));
        let respaced = json!(format!("{word} {pad}{word}"));
        prop_assert!(grade(&rules, &ValueSet::one(inner.clone()), &padded).unwrap());
        prop_assert!(!grade(&rules, &ValueSet::one(inner), &respaced).unwrap());
    }

    #[test]
    fn numbers_compare_by_value(n in -1_000_000_000i64..1_000_000_000) {
        let rules = Rules::exact();
        prop_assert!(grade(&rules, &ValueSet::one(json!(n)), &json!(n as f64)).unwrap());
        let nested_float = json!([{"n": n as f64}]);
        let nested_int = json!([{"n": n}]);
        prop_assert!(grade(&rules, &ValueSet::one(nested_float), &nested_int).unwrap());
        prop_assert!(!grade(&rules, &ValueSet::one(json!(n)), &json!(n as f64 + 0.5)).unwrap());
    }
}
