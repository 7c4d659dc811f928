//! Each verifier step, driven through the client with the scripted provider: the issue's
//! source, facts and attempt number, and what the next request carried back to the model.

mod support;

use intent_rs::provider::{ProviderError, ProviderErrorKind, ScriptedReply};
use intent_rs::{AIResult, IntentOptions, IssueSource, Repair};
use serde::de::DeserializeOwned;
use support::{Person, Sentiment, scripted, scripted_with};

/// Runs a call whose first reply is `bad` and second is `good`, and checks the shape that
/// every "broken, then right" call must have.
async fn broken_then_right<T>(bad: ScriptedReply, good: &str) -> (AIResult<T>, Vec<String>)
where
    T: DeserializeOwned + schemars::JsonSchema + Send + 'static,
{
    broken_then_right_with(bad, good, IntentOptions::new()).await
}

async fn broken_then_right_with<T>(
    bad: ScriptedReply,
    good: &str,
    options: IntentOptions<T>,
) -> (AIResult<T>, Vec<String>)
where
    T: DeserializeOwned + schemars::JsonSchema + Send + 'static,
{
    let (client, provider) = scripted([bad, ScriptedReply::text(good)]);
    let result = client.transform("the input", "Do the thing", options).await;
    assert!(
        result.is_success(),
        "expected success, got {:?}",
        result.issues
    );
    assert_eq!(result.attempts.len(), 2, "two attempts recorded");
    assert!(result.attempts[0].issues.iter().all(|i| i.attempt == 1));
    assert!(result.attempts[1].issues.is_empty());
    let users = provider.requests().iter().map(transcript).collect();
    (result, users)
}

/// Every turn of a request, each under its role.
fn transcript(request: &intent_rs::provider::ProviderRequest) -> String {
    request
        .messages
        .iter()
        .map(|m| format!("=== {} ===\n{}", m.role.as_str(), m.content))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The retry request must carry the previous raw output and every problem.
fn assert_fed_back(users: &[String], raw: &str, result_issues: &[intent_rs::ResultIssue]) {
    assert!(
        !users[0].contains("=== assistant ==="),
        "first request has no retry turns"
    );
    let retry = &users[1];
    assert!(
        retry.starts_with(&users[0]),
        "the retry starts with the first request:\n{retry}"
    );
    assert!(
        retry.contains(&format!(
            "=== assistant ===\n{raw}\n=== user ===\nFix these and reply again:"
        )),
        "retry carries the raw output, then the problems:\n{retry}"
    );
    for issue in result_issues.iter().filter(|i| i.attempt == 1) {
        assert!(
            retry.contains(&format!("- {}", issue.message)),
            "retry carries `{}`:\n{retry}",
            issue.message
        );
    }
}

fn only_issue(result: &AIResult<impl Sized>) -> &intent_rs::ResultIssue {
    assert_eq!(result.issues.len(), 1, "{:?}", result.issues);
    &result.issues[0]
}

#[tokio::test]
async fn step1_refusal_is_a_provider_issue() {
    let (result, users) = broken_then_right::<Sentiment>(
        ScriptedReply::refusal("I can't help with that."),
        r#"{"value":"Positive"}"#,
    )
    .await;
    let issue = only_issue(&result);
    assert_eq!(issue.source, IssueSource::Provider);
    assert!(
        issue.message.contains("I can't help with that."),
        "{}",
        issue.message
    );
    assert_eq!(result.value, Some(Sentiment::Positive));
    assert!(users[1].contains(&issue.message));
}

#[tokio::test]
async fn step2_truncation_always_fails_the_attempt() {
    // Even a truncated reply that happens to parse is not accepted.
    let (result, users) = broken_then_right::<Sentiment>(
        ScriptedReply::truncated(r#"{"value":"Negative"}"#),
        r#"{"value":"Positive"}"#,
    )
    .await;
    let issue = only_issue(&result);
    assert_eq!(issue.source, IssueSource::Provider);
    assert_eq!(result.value, Some(Sentiment::Positive));
    assert_fed_back(&users, r#"{"value":"Negative"}"#, &result.issues);
}

#[tokio::test]
async fn step3_empty_reply_after_fence_stripping_is_a_verification_issue() {
    let (result, users) = broken_then_right::<Sentiment>(
        ScriptedReply::text("```json\n  \n```"),
        r#"{"value":"Neutral"}"#,
    )
    .await;
    let issue = only_issue(&result);
    assert_eq!(issue.source, IssueSource::Verification);
    assert!(
        issue.message.to_lowercase().contains("empty"),
        "{}",
        issue.message
    );
    assert_fed_back(&users, "```json\n  \n```", &result.issues);
}

#[tokio::test]
async fn step4_string_target_takes_the_stripped_text() {
    let (client, provider) = scripted(["```\nA short summary.\n```"]);
    let summary: String = client
        .transform("long text", "Summarize", IntentOptions::new())
        .await
        .into_result()
        .unwrap();
    assert_eq!(summary, "A short summary.");
    let request = &provider.requests()[0];
    assert_eq!(
        request.response_format,
        intent_rs::provider::ResponseFormat::Text
    );
    assert!(request.schema.is_none());
}

#[tokio::test]
async fn step5_invalid_json_is_reported_and_comments_and_commas_are_tolerated() {
    let (result, users) = broken_then_right::<Person>(
        ScriptedReply::text("{name: Ada"),
        "{\"value\": {\"name\": \"Ada\", /* years */ \"age\": 36, \"nickname\": null,},}",
    )
    .await;
    // Every place is named at once, in words, with where it is.
    let messages: Vec<&str> = result.issues.iter().map(|i| i.message.as_str()).collect();
    assert_eq!(
        messages,
        vec![
            "Line 1 col 2, near `{name: Ada`: a key without quotes; write it in double quotes.",
            "Line 1 col 8 (name), near `{name: Ada`: text without quotes; a JSON string takes \
             double quotes.",
            "Line 1 col 11 (name), near `{name: Ada`: the JSON stops before its end; close it \
             with `}`.",
        ]
    );
    assert!(
        result
            .issues
            .iter()
            .all(|i| i.source == IssueSource::Verification)
    );
    assert_eq!(result.value.as_ref().map(|p| p.age), Some(36));
    let repairs = &result.attempts[1].repairs;
    assert!(repairs.contains(&Repair::CommentsSkipped), "{repairs:?}");
    assert!(
        repairs.contains(&Repair::TrailingCommasSkipped),
        "{repairs:?}"
    );
    assert_fed_back(&users, "{name: Ada", &result.issues);
}

#[tokio::test]
async fn step5_bare_primitives_are_read_and_recorded() {
    let (client, _) = scripted(["Negative", "42"]);
    let mood = client
        .transform("x", "Classify", IntentOptions::<Sentiment>::new())
        .await;
    assert_eq!(mood.value, Some(Sentiment::Negative));
    assert!(
        mood.attempts[0].repairs.contains(&Repair::BarePrimitive),
        "{:?}",
        mood.attempts[0].repairs
    );
    let number = client
        .transform("x", "Count", IntentOptions::<i64>::new())
        .await;
    assert_eq!(number.value, Some(42));
}

#[tokio::test]
async fn step6_envelope_with_extra_keys_names_them() {
    let bad = r#"{"value": "Positive", "note": "sure", "reason": "happy"}"#;
    let (result, users) =
        broken_then_right::<Sentiment>(ScriptedReply::text(bad), r#"{"value":"Positive"}"#).await;
    let issue = only_issue(&result);
    assert_eq!(issue.source, IssueSource::Verification);
    assert!(
        issue.message.contains("note") && issue.message.contains("reason"),
        "{}",
        issue.message
    );
    assert_fed_back(&users, bad, &result.issues);
}

#[tokio::test]
async fn step6_bare_value_without_envelope_is_accepted_and_recorded() {
    let (client, _) = scripted([r#"{"name": "Ada", "age": 36, "nickname": null}"#]);
    let result = client
        .transform("x", "Extract", IntentOptions::<Person>::new())
        .await;
    assert_eq!(result.value.as_ref().map(|p| p.name.as_str()), Some("Ada"));
    assert!(
        result.attempts[0]
            .repairs
            .contains(&Repair::MissingEnvelope)
    );
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Reading {
    value: f64,
    unit: String,
}

#[tokio::test]
async fn step6_a_type_with_its_own_value_member_is_read_bare() {
    let (client, _) = scripted([r#"{"value": 3.5, "unit": "kg"}"#]);
    let result = client
        .transform("x", "Measure", IntentOptions::<Reading>::new())
        .await;
    let reading = result.value.expect("read as the bare type");
    assert_eq!((reading.value, reading.unit.as_str()), (3.5, "kg"));
}

#[tokio::test]
async fn step7_missing_field_is_named() {
    let bad = r#"{"value": {"age": 36, "nickname": null}}"#;
    let (result, users) = broken_then_right::<Person>(
        ScriptedReply::text(bad),
        r#"{"value": {"name": "Ada", "age": 36, "nickname": null}}"#,
    )
    .await;
    let issue = only_issue(&result);
    assert_eq!(issue.source, IssueSource::Verification);
    assert!(issue.message.contains("name"), "{}", issue.message);
    assert_fed_back(&users, bad, &result.issues);
}

#[tokio::test]
async fn step7_enum_as_number_or_combination_lists_the_members() {
    for bad in [r#"{"value": 2}"#, r#"{"value": "Neutral, Negative"}"#] {
        let (result, users) =
            broken_then_right::<Sentiment>(ScriptedReply::text(bad), r#"{"value":"Neutral"}"#)
                .await;
        let issue = only_issue(&result);
        assert_eq!(issue.source, IssueSource::Verification);
        assert!(
            issue.message.contains("Positive, Neutral, Negative"),
            "{}",
            issue.message
        );
        assert_fed_back(&users, bad, &result.issues);
    }
}

#[tokio::test]
async fn step7_repairs_key_case_and_numbers_in_strings() {
    let (client, _) = scripted([r#"{"value": {"Name": "Ada", "AGE": "36", "nickname": null}}"#]);
    let result = client
        .transform("x", "Extract", IntentOptions::<Person>::new())
        .await;
    assert_eq!(
        result.value.as_ref().map(|p| p.age),
        Some(36),
        "{:?}",
        result.issues
    );
    let repairs = &result.attempts[0].repairs;
    assert!(repairs.iter().any(|r| matches!(r, Repair::KeyCaseChanged { from, to, .. } if from == "Name" && to == "name")), "{repairs:?}");
    assert!(
        repairs
            .iter()
            .any(|r| matches!(r, Repair::NumberFromString { .. })),
        "{repairs:?}"
    );
}

#[tokio::test]
async fn step8_null_fails_unless_the_target_is_optional() {
    let (result, users) = broken_then_right::<Sentiment>(
        ScriptedReply::text(r#"{"value": null}"#),
        r#"{"value":"Neutral"}"#,
    )
    .await;
    let issue = only_issue(&result);
    assert_eq!(issue.source, IssueSource::Verification);
    assert!(
        issue.message.contains("null") && issue.message.contains("Sentiment"),
        "{}",
        issue.message
    );
    assert_fed_back(&users, r#"{"value": null}"#, &result.issues);

    let (client, _) = scripted([r#"{"value": null}"#]);
    let optional = client
        .transform("x", "Find", IntentOptions::<Option<Sentiment>>::new())
        .await;
    assert!(optional.is_success(), "{:?}", optional.issues);
    assert_eq!(optional.value, Some(None));
}

#[tokio::test]
async fn step9_validator_messages_are_fed_back() {
    let options = IntentOptions::<Vec<i64>>::new().validate(|xs: &Vec<i64>| {
        if xs.len() == 3 {
            Ok(())
        } else {
            Err(format!(
                "Return exactly 3 numbers; you returned {}.",
                xs.len()
            ))
        }
    });
    let (result, users) = broken_then_right_with(
        ScriptedReply::text(r#"{"value": [1, 2]}"#),
        r#"{"value": [1, 2, 3]}"#,
        options,
    )
    .await;
    let issue = only_issue(&result);
    assert_eq!(issue.source, IssueSource::Validator);
    assert_eq!(issue.message, "Return exactly 3 numbers; you returned 2.");
    assert_fed_back(&users, r#"{"value": [1, 2]}"#, &result.issues);
}

#[tokio::test]
async fn step9_a_panicking_validator_is_an_issue_not_a_crash() {
    let options = IntentOptions::<i64>::new().validate(|n: &i64| -> Vec<String> {
        if *n < 0 {
            panic!("negative input reached the validator");
        }
        Vec::new()
    });
    let (result, _) = broken_then_right_with(
        ScriptedReply::text(r#"{"value": -1}"#),
        r#"{"value": 1}"#,
        options,
    )
    .await;
    let issue = only_issue(&result);
    assert_eq!(issue.source, IssueSource::Validator);
    assert!(
        issue
            .message
            .contains("negative input reached the validator"),
        "{}",
        issue.message
    );
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Rating {
    #[schemars(range(min = 1, max = 5))]
    stars: u8,
    #[schemars(length(max = 20))]
    title: String,
}

#[tokio::test]
async fn full_schema_constraints_are_checked_locally() {
    let bad = r#"{"value": {"stars": 9, "title": "ok"}}"#;
    let (result, users) = broken_then_right::<Rating>(
        ScriptedReply::text(bad),
        r#"{"value": {"stars": 4, "title": "ok"}}"#,
    )
    .await;
    let issue = only_issue(&result);
    assert_eq!(issue.source, IssueSource::Validator);
    assert!(
        issue.message.contains("stars") && issue.message.contains('5'),
        "{}",
        issue.message
    );
    let rating = result.value.as_ref().expect("second reply is within range");
    assert_eq!((rating.stars, rating.title.as_str()), (4, "ok"));
    // The strict schema sent to the provider has no range; the local check enforces it.
    assert_fed_back(&users, bad, &result.issues);
}

#[tokio::test]
async fn runtime_shape_with_extra_keys_always_fails_and_null_fails() {
    let schema = serde_json::json!({"type": "object", "properties": {"total": {"type": "number"}}, "required": ["total"]});
    let (client, provider) = scripted([
        r#"{"value": {"total": 1}, "why": "x"}"#,
        "null",
        r#"{"value": {"total": 12.5}}"#,
    ]);
    let result = client
        .transform_value(
            "invoice",
            "Extract the total",
            Some(&schema),
            IntentOptions::new(),
        )
        .await;
    assert_eq!(result.value, Some(serde_json::json!({"total": 12.5})));
    assert_eq!(result.attempts.len(), 3);
    assert!(result.attempts[0].issues[0].message.contains("why"));
    assert!(result.attempts[1].issues[0].message.contains("null"));
    let sent = provider.requests()[0]
        .schema
        .clone()
        .expect("strict schema sent");
    assert_eq!(
        sent["properties"]["value"]["additionalProperties"],
        serde_json::json!(false)
    );
}

#[tokio::test]
async fn all_attempts_failing_gives_the_summary_as_error() {
    let (client, provider) = scripted(["nope", "still nope", "nope again"]);
    let result = client
        .transform("x", "Classify", IntentOptions::<Sentiment>::new())
        .await;
    assert!(!result.is_success());
    assert_eq!(result.attempts.len(), 3);
    assert_eq!(provider.request_count(), 3);
    let attempts: Vec<u32> = result.issues.iter().map(|i| i.attempt).collect();
    assert_eq!(attempts, [1, 2, 3]);
    let error = result.into_result().unwrap_err();
    assert!(!error.to_string().is_empty());
}

#[tokio::test]
async fn input_over_the_limit_fails_before_any_call() {
    let (client, provider) = scripted_with(["{\"value\":\"Positive\"}"], |b| b.max_input_chars(10));
    let result = client
        .transform(
            "this input is longer than ten characters",
            "Classify",
            IntentOptions::<Sentiment>::new(),
        )
        .await;
    assert_eq!(provider.request_count(), 0);
    let issue = only_issue(&result);
    assert_eq!(issue.source, IssueSource::Input);
    assert!(issue.message.contains("10"), "{}", issue.message);
}

#[tokio::test]
async fn transient_provider_errors_are_retried_and_recorded() {
    let overloaded = ProviderError::new(ProviderErrorKind::Overloaded, "scripted", "busy")
        .with_retry_after(std::time::Duration::from_millis(5));
    let (client, provider) = scripted([
        ScriptedReply::error(overloaded),
        ScriptedReply::text(r#"{"value":"Positive"}"#),
    ]);
    let result = client
        .transform("x", "Classify", IntentOptions::<Sentiment>::new())
        .await;
    assert_eq!(result.value, Some(Sentiment::Positive));
    assert_eq!(result.attempts.len(), 1);
    assert_eq!(provider.request_count(), 2);
    assert_eq!(result.attempts[0].provider_retries.len(), 1);
    assert!(result.attempts[0].provider_retries[0].contains("busy"));
}

#[tokio::test]
async fn non_transient_provider_errors_stop_at_once() {
    let denied = ProviderError::new(ProviderErrorKind::Authentication, "scripted", "bad key")
        .with_status(401);
    let (client, provider) = scripted([
        ScriptedReply::error(denied),
        ScriptedReply::text(r#"{"value":"Positive"}"#),
    ]);
    let result = client
        .transform("x", "Classify", IntentOptions::<Sentiment>::new())
        .await;
    assert!(!result.is_success());
    assert_eq!(provider.request_count(), 1);
    let issue = only_issue(&result);
    assert_eq!(issue.source, IssueSource::Provider);
    assert!(
        issue.message.contains("bad key") && issue.message.contains("401"),
        "{}",
        issue.message
    );
}

#[tokio::test]
async fn a_schema_that_cannot_be_compiled_stops_before_any_request() {
    // An external reference is never fetched; the local check cannot be built, and that is
    // not something the model can fix, so the model is not asked at all.
    let schema = serde_json::json!({"type": "object", "properties": {"a": {"$ref": "https://example.invalid/a.json"}}, "required": ["a"]});
    let (client, provider) = scripted([r#"{"value": {"a": 1}}"#, r#"{"value": {"a": 2}}"#]);
    let result = client
        .transform_value("x", "Extract", Some(&schema), IntentOptions::new())
        .await;
    assert!(!result.is_success());
    assert_eq!(provider.request_count(), 0);
    assert!(
        result.issues.iter().any(|i| i.source == IssueSource::Input
            && i.message.contains("external references are never fetched")),
        "{:?}",
        result.issues
    );
}

#[tokio::test]
async fn a_value_target_is_a_runtime_shape_in_json_object_mode() {
    let (client, provider) = scripted([
        r#"{"value": {"anything": [1, 2]}, "extra": 1}"#,
        r#"{"anything": [1, 2]}"#,
    ]);
    let result = client
        .transform::<_, serde_json::Value>(
            "x",
            "Extract",
            IntentOptions::new().require(
                |v: &serde_json::Value| v.is_object(),
                "Reply with an object.",
            ),
        )
        .await;
    assert_eq!(result.value, Some(serde_json::json!({"anything": [1, 2]})));
    // The runtime-shape envelope rule has no exception: `value` beside other keys fails.
    assert!(
        result.attempts[0].issues[0].message.contains("extra"),
        "{:?}",
        result.attempts[0].issues
    );
    let request = &provider.requests()[0];
    assert_eq!(
        request.response_format,
        intent_rs::provider::ResponseFormat::JsonObject
    );
    assert!(request.schema.is_none());
}
