//! Each validator, and the selection among them: external, judge, schema, value match.

use intent_rs::Usage;
use intent_rs::provider::{ProviderReply, ScriptedProvider, ScriptedReply};
use intent_rs_eval::{
    CaseContext, EvalError, ExternalValidator, Judge, JudgeSelector, JudgeVariant, Rules,
    Validators, ValueSet, Verdict,
};
use intent_rs_eval::{Selected, select};
use serde_json::{Map, Value, json};

fn context<'a>(
    expected: &'a ValueSet,
    actual: &'a Value,
    rules: &'a Rules,
    metadata: &'a Map<String, Value>,
) -> CaseContext<'a> {
    CaseContext {
        name: "case",
        expected,
        actual,
        prompt: "Classify the review\n\nInput: \"Loved it\"",
        response_format: &Value::Null,
        metadata,
        rules,
    }
}

async fn validate(
    validators: &Validators,
    expected: ValueSet,
    actual: Value,
    rules: Rules,
) -> Result<intent_rs_eval::ValidationResult, EvalError> {
    let metadata = Map::new();
    validators
        .validate(&context(&expected, &actual, &rules, &metadata))
        .await
}

fn judge_reply(verdict: Value, input_tokens: u64) -> ScriptedReply {
    ScriptedReply::Reply(ProviderReply {
        text: json!({"value": {"explanation": "same meaning", "verdict": verdict}}).to_string(),
        usage: Usage {
            input_tokens,
            output_tokens: 7,
            ..Usage::default()
        },
        model: "judge-model".into(),
        ..ProviderReply::default()
    })
}

#[tokio::test]
async fn value_match_takes_any_expected_value_under_the_rules() {
    let validators = Validators::new();
    let expected = ValueSet::any_of(["Positive", "Good"]);
    let hit = validate(
        &validators,
        expected.clone(),
        json!(" good "),
        Rules::lenient(),
    )
    .await
    .unwrap();
    assert!(hit.passed);
    assert_eq!(hit.title, "value match");
    assert_eq!(hit.explanation, "matches expected value 2 of 2");
    let miss = validate(&validators, expected.clone(), json!("good"), Rules::exact())
        .await
        .unwrap();
    assert!(!miss.passed);
    assert_eq!(
        miss.explanation,
        r#"expected one of "Positive", "Good", got "good""#
    );
}

#[tokio::test]
async fn a_value_match_names_the_field_that_differs_before_values_too_long_to_show() {
    let notes = "a long note that makes the value longer than a quote shows ".repeat(5);
    let expected = json!({"customer": {"name": "Ann", "notes": notes}, "total_cents": 1250});
    let actual = json!({"customer": {"name": "Ann", "notes": notes}, "total_cents": 1205});
    let miss = validate(
        &Validators::new(),
        ValueSet::one(expected),
        actual,
        Rules::exact(),
    )
    .await
    .unwrap();
    assert!(!miss.passed);
    assert!(
        miss.explanation
            .starts_with("`.total_cents` differs: expected 1250, got 1205; expected {"),
        "{}",
        miss.explanation
    );
    // Both values are cut where they are too long, at the same point: the field tells.
    assert_eq!(
        miss.explanation.matches('…').count(),
        2,
        "{}",
        miss.explanation
    );
}

#[tokio::test]
async fn schema_validation_explains_what_is_wrong() {
    let validators = Validators::new();
    let schema = ValueSet::schema(json!({
        "type": "object",
        "properties": {"total": {"type": "integer", "minimum": 0}},
        "required": ["total"]
    }));
    let ok = validate(
        &validators,
        schema.clone(),
        json!({"total": 3}),
        Rules::exact(),
    )
    .await
    .unwrap();
    assert!(ok.passed);
    assert_eq!(ok.title, "schema");
    let bad = validate(&validators, schema, json!({"total": -1}), Rules::exact())
        .await
        .unwrap();
    assert!(!bad.passed);
    assert!(bad.explanation.contains("/total"), "{}", bad.explanation);
    assert!(bad.explanation.contains("minimum"), "{}", bad.explanation);
    // A schema is applied as is, even under lenient rules.
    let validators = Validators::new();
    let exact = ValueSet::schema(json!({"const": "Yes"}));
    let folded = validate(&validators, exact, json!("yes"), Rules::lenient())
        .await
        .unwrap();
    assert!(!folded.passed);
}

#[test]
fn selection_order_is_external_judge_schema_value() {
    let all = Rules::exact()
        .external("script")
        .judge(JudgeSelector::new("strict"));
    let values = ValueSet::one(1);
    let schema = ValueSet::schema(json!({}));
    assert_eq!(select(&all, &schema), Selected::External("script"));
    let judge = Rules::exact().judge(JudgeSelector::new("strict"));
    assert_eq!(
        select(&judge, &schema),
        Selected::Judge(&JudgeSelector::new("strict"))
    );
    assert_eq!(select(&Rules::exact(), &schema), Selected::Schema);
    assert_eq!(select(&Rules::exact(), &values), Selected::ValueMatch);
}

#[tokio::test]
async fn a_boolean_judge_records_verdict_provenance_and_usage() {
    let provider =
        ScriptedProvider::new([judge_reply(json!(true), 120), judge_reply(json!(false), 80)]);
    let validators =
        Validators::new().judge(Judge::new("semantic", provider.clone()).model("judge-1"));
    let rules = Rules::exact().judge(JudgeSelector::new("semantic"));
    let pass = validate(
        &validators,
        ValueSet::one("Positive"),
        json!("positive, clearly"),
        rules.clone(),
    )
    .await
    .unwrap();
    assert!(pass.passed);
    assert_eq!(pass.title, "judge semantic");
    assert_eq!(pass.usage.input, 120);
    assert_eq!(pass.usage.output, 7);
    let details = pass.judge.unwrap();
    assert_eq!(details.verdict, json!(true));
    assert_eq!(details.judge, "semantic");
    assert_eq!(details.provider, "scripted");
    assert_eq!(details.variant, "default");
    assert_eq!(details.model, "judge-1");
    assert!(pass.explanation.contains("same meaning"));

    let fail = validate(
        &validators,
        ValueSet::one("Positive"),
        json!("negative"),
        rules,
    )
    .await
    .unwrap();
    assert!(!fail.passed);
    assert_eq!(fail.judge.unwrap().verdict, json!(false));

    // The judge is asked with the verdict's shape, and shown the candidate and expected.
    let request = &provider.requests()[0];
    assert_eq!(request.model.as_deref(), Some("judge-1"));
    let schema = request.schema.as_ref().unwrap().to_string();
    assert!(schema.contains("\"verdict\""), "{schema}");
    assert!(request.user().contains("positive, clearly"));
    assert!(request.user().contains("Positive"));
    assert!(request.user().contains("Classify the review"));
}

#[tokio::test]
async fn score_and_grade_judges_go_through_the_same_grading() {
    let provider = ScriptedProvider::new([
        judge_reply(json!(4), 1),
        judge_reply(json!(2), 1),
        judge_reply(json!("B"), 1),
        judge_reply(json!("D"), 1),
    ]);
    let validators = Validators::new()
        .judge(Judge::new("score", provider.clone()).verdict(Verdict::score(1, 5, 4)))
        .judge(
            Judge::new("grade", provider.clone())
                .verdict(Verdict::grade(&["A", "B", "C", "D"], &["A", "B"])),
        );
    let score = Rules::exact().judge(JudgeSelector::new("score"));
    let grade = Rules::exact().judge(JudgeSelector::new("grade"));
    let expected = ValueSet::one("x");
    let four = validate(&validators, expected.clone(), json!("x"), score.clone())
        .await
        .unwrap();
    assert!(four.passed);
    assert_eq!(four.judge.unwrap().verdict, json!(4));
    let two = validate(&validators, expected.clone(), json!("y"), score)
        .await
        .unwrap();
    assert!(!two.passed);
    assert!(
        validate(&validators, expected.clone(), json!("x"), grade.clone())
            .await
            .unwrap()
            .passed
    );
    assert!(
        !validate(&validators, expected, json!("z"), grade)
            .await
            .unwrap()
            .passed
    );
}

#[tokio::test]
async fn judge_variants_change_model_and_are_recorded() {
    let provider = ScriptedProvider::new([judge_reply(json!(true), 1)]);
    let cheap = JudgeVariant {
        model: Some("small-model".into()),
        temperature: Some(0.0),
        ..JudgeVariant::default()
    };
    let validators =
        Validators::new().judge(Judge::new("semantic", provider.clone()).variant("cheap", cheap));
    let rules = Rules::exact().judge(JudgeSelector::variant("semantic", "cheap"));
    let result = validate(&validators, ValueSet::one(1), json!(1), rules)
        .await
        .unwrap();
    let details = result.judge.unwrap();
    assert_eq!(details.variant, "cheap");
    assert_eq!(details.model, "small-model");
    assert_eq!(provider.requests()[0].model.as_deref(), Some("small-model"));
    assert_eq!(provider.requests()[0].temperature, Some(0.0));
}

#[tokio::test]
async fn a_judge_without_a_verdict_is_an_error() {
    let provider = ScriptedProvider::new(["not json", "still not json", "nope"]);
    let validators = Validators::new().judge(Judge::new("semantic", provider));
    let rules = Rules::exact().judge(JudgeSelector::new("semantic"));
    let error = validate(&validators, ValueSet::one(1), json!(1), rules)
        .await
        .unwrap_err();
    assert!(
        matches!(error, EvalError::JudgeFailed { ref judge, .. } if judge == "semantic"),
        "{error}"
    );
}

#[test]
fn unknown_judges_variants_and_validators_are_found_by_check() {
    let validators = Validators::new()
        .judge(Judge::new(
            "semantic",
            ScriptedProvider::new(Vec::<&str>::new()),
        ))
        .external(ExternalValidator::new("script", "true"));
    let ok = [
        Rules::exact().judge(JudgeSelector::new("semantic")),
        Rules::exact().external("script"),
    ];
    validators.check(&ok).unwrap();
    let unknown_judge = [Rules::exact().judge(JudgeSelector::new("other"))];
    assert!(
        matches!(validators.check(&unknown_judge), Err(EvalError::JudgeNotFound(name)) if name == "other")
    );
    let unknown_variant = [Rules::exact().judge(JudgeSelector::variant("semantic", "huge"))];
    assert!(matches!(
        validators.check(&unknown_variant),
        Err(EvalError::JudgeVariantNotFound { judge, variant }) if judge == "semantic" && variant == "huge"
    ));
    let unknown_external = [Rules::exact().external("missing")];
    assert!(
        matches!(validators.check(&unknown_external), Err(EvalError::ExternalNotFound(name)) if name == "missing")
    );
}

#[test]
fn a_malformed_verdict_schema_is_found_by_check() {
    let broken = Verdict::custom(
        json!({"type": "integer"}),
        ValueSet::schema(json!({"type": ["nope"]})),
        "",
    );
    let validators = Validators::new()
        .judge(Judge::new("semantic", ScriptedProvider::new(Vec::<&str>::new())).verdict(broken));
    assert!(matches!(
        validators.check(&[]),
        Err(EvalError::MalformedSchema(_))
    ));
}
