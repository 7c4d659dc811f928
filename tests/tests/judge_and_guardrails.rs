//! The judge's rules, the guardrails that stop a call, and the response cache, driven
//! through the client with scripted providers.

mod support;

use std::time::Duration;

use intent_rs::judge::{JUDGE_SCHEMA_NAME, JudgeMode};
use intent_rs::provider::{ResponseFormat, ScriptedProvider, ScriptedReply};
use intent_rs::result::JudgeRecord;
use intent_rs::{IntentClient, IntentOptions, IssueSource};
use support::{Sentiment, scripted_with};

const POSITIVE: &str = r#"{"value":"Positive"}"#;

fn judged(
    primary: &[&str],
    verdicts: &[&str],
    configure: impl FnOnce(intent_rs::IntentClientBuilder) -> intent_rs::IntentClientBuilder,
) -> (IntentClient, ScriptedProvider, ScriptedProvider) {
    let provider = ScriptedProvider::new(primary.iter().copied());
    let judge = ScriptedProvider::new(verdicts.iter().copied()).with_model("judge-model");
    let builder = IntentClient::builder()
        .provider(provider.clone())
        .judge_provider(judge.clone())
        .judge_model("judge-model");
    (configure(builder).build().expect("client"), provider, judge)
}

fn with_judge() -> IntentOptions<Sentiment> {
    IntentOptions::new()
        .require_judge()
        .output_requirements("Be precise.")
}

#[tokio::test]
async fn a_passing_verdict_accepts_and_is_recorded() {
    let (client, _, judge) = judged(&[POSITIVE], &[r#"{"passes": true, "problems": []}"#], |b| b);
    let result = client
        .transform("Loved it", "Classify the sentiment", with_judge())
        .await;
    assert_eq!(result.value, Some(Sentiment::Positive));
    assert_eq!(
        result.attempts[0].judge,
        Some(JudgeRecord::Verdict {
            passes: true,
            problems: vec![]
        })
    );
    assert_eq!(result.model_calls(), 2);
    let request = &judge.requests()[0];
    assert_eq!(request.schema_name, JUDGE_SCHEMA_NAME);
    assert_eq!(request.response_format, ResponseFormat::JsonSchema);
    assert_eq!(request.max_output_tokens, Some(1024));
    assert_eq!(request.model.as_deref(), Some("judge-model"));
    assert!(request.user().contains("\"Classify the sentiment\""));
    assert!(request.user().contains("\"Loved it\""));
    assert!(request.user().contains("\"Be precise.\""));
    assert!(
        request
            .user()
            .contains(&serde_json::to_string(POSITIVE).unwrap())
    );
}

#[tokio::test]
async fn the_judge_judges_against_the_methods_system_instructions() {
    let (client, _, judge) = judged(&[POSITIVE], &[r#"{"passes": true, "problems": []}"#], |b| b);
    let options = with_judge().system("Answer in one word.");
    let result = client.transform("Loved it", "Classify", options).await;
    assert!(result.is_success());
    let user = judge.requests()[0].user().to_owned();
    assert!(
        user.contains("## Instructions the author was given (data)\n\"Answer in one word.\""),
        "{user}"
    );
}

#[tokio::test]
async fn judge_problems_are_judge_issues_fed_back_to_the_model() {
    let (client, provider, _) = judged(
        &[r#"{"value":"Neutral"}"#, POSITIVE],
        &[
            r#"{"passes": false, "problems": ["The review is clearly enthusiastic."]}"#,
            r#"{"passes": true, "problems": []}"#,
        ],
        |b| b,
    );
    let result = client
        .transform("Loved it!!!", "Classify", with_judge())
        .await;
    assert_eq!(result.value, Some(Sentiment::Positive));
    assert_eq!(result.issues.len(), 1);
    assert_eq!(result.issues[0].source, IssueSource::Judge);
    assert_eq!(result.issues[0].attempt, 1);
    assert_eq!(
        result.issues[0].message,
        "The review is clearly enthusiastic."
    );
    let retry = &provider.requests()[1];
    assert_eq!(retry.messages.len(), 3);
    assert_eq!(retry.messages[1].content, r#"{"value":"Neutral"}"#);
    assert!(
        retry
            .last_user()
            .contains("- The review is clearly enthusiastic."),
        "{retry:?}"
    );
}

#[tokio::test]
async fn a_failing_verdict_without_problems_gets_a_generic_problem() {
    let (client, _, _) = judged(
        &[POSITIVE, POSITIVE],
        &[
            r#"{"passes": false, "problems": []}"#,
            r#"{"passes": true, "problems": []}"#,
        ],
        |b| b,
    );
    let result = client.transform("x", "Classify", with_judge()).await;
    assert!(result.is_success());
    assert_eq!(result.issues[0].source, IssueSource::Judge);
    assert!(
        result.issues[0]
            .message
            .contains("without naming a problem"),
        "{}",
        result.issues[0].message
    );
}

#[tokio::test]
async fn a_null_verdict_fails_with_no_verdict() {
    let (client, _, _) = judged(
        &[POSITIVE, POSITIVE],
        &["null", r#"{"passes": true, "problems": []}"#],
        |b| b,
    );
    let result = client.transform("x", "Classify", with_judge()).await;
    assert!(result.is_success());
    assert_eq!(result.issues[0].source, IssueSource::Judge);
    assert_eq!(result.issues[0].message, "The judge returned no verdict.");
}

#[tokio::test]
async fn an_unreadable_verdict_passes_but_is_recorded() {
    let (client, _, _) = judged(&[POSITIVE], &["Looks right to me."], |b| b);
    let result = client.transform("x", "Classify", with_judge()).await;
    assert_eq!(result.value, Some(Sentiment::Positive));
    assert!(result.issues.is_empty());
    match &result.attempts[0].judge {
        Some(JudgeRecord::Missing {
            reason,
            accepted: true,
        }) => assert!(reason.contains("not JSON"), "{reason}"),
        other => panic!("expected a missing verdict, got {other:?}"),
    }
}

#[tokio::test]
async fn fail_closed_rejects_an_unreadable_verdict() {
    let (client, _, _) = judged(&[POSITIVE], &["Looks right to me."], |b| {
        b.judge_fail_closed(true).max_attempts(1)
    });
    let result = client.transform("x", "Classify", with_judge()).await;
    assert!(!result.is_success());
    assert_eq!(result.issues[0].source, IssueSource::Judge);
    assert!(matches!(
        result.attempts[0].judge,
        Some(JudgeRecord::Missing {
            accepted: false,
            ..
        })
    ));
}

#[tokio::test]
async fn judge_runs_only_when_asked_in_on_request_mode() {
    let (client, _, judge) = judged(&[POSITIVE], &[], |b| b);
    let result = client
        .transform("x", "Classify", IntentOptions::<Sentiment>::new())
        .await;
    assert!(result.is_success());
    assert_eq!(judge.request_count(), 0);
}

#[tokio::test]
async fn always_mode_judges_every_passing_attempt_and_never_mode_none() {
    let (client, _, judge) = judged(&[POSITIVE], &[r#"{"passes": true, "problems": []}"#], |b| {
        b.judge_mode(JudgeMode::Always)
    });
    assert!(
        client
            .transform("x", "Classify", IntentOptions::<Sentiment>::new())
            .await
            .is_success()
    );
    assert_eq!(judge.request_count(), 1);

    let provider = ScriptedProvider::new([POSITIVE]);
    let client = IntentClient::builder()
        .provider(provider.clone())
        .judge_mode(JudgeMode::Never)
        .build()
        .unwrap();
    let result = client.transform("x", "Classify", with_judge()).await;
    assert!(result.is_success());
    assert_eq!(provider.request_count(), 1, "no judge call was made");
}

#[tokio::test]
async fn the_judge_does_not_run_on_an_attempt_that_failed_the_checks() {
    let (client, _, judge) = judged(
        &["garbage", POSITIVE],
        &[r#"{"passes": true, "problems": []}"#],
        |b| b,
    );
    assert!(
        client
            .transform("x", "Classify", with_judge())
            .await
            .is_success()
    );
    assert_eq!(judge.request_count(), 1);
}

#[tokio::test]
async fn judge_calls_count_toward_the_ceiling_and_the_totals() {
    let (client, _, _) = judged(
        &[POSITIVE, POSITIVE],
        &[
            r#"{"passes": false, "problems": ["Wrong."]}"#,
            r#"{"passes": true, "problems": []}"#,
        ],
        |b| b.max_model_calls(3),
    );
    let result = client.transform("x", "Classify", with_judge()).await;
    assert!(!result.is_success());
    assert_eq!(result.model_calls(), 3);
    let last = result.issues.last().unwrap();
    assert_eq!(last.source, IssueSource::Guardrail);
    assert!(
        last.message.contains("model-call ceiling of 3"),
        "{}",
        last.message
    );
    // Stopped while attempt 2 waited for its judge: the issue belongs to attempt 2.
    assert_eq!(last.attempt, 2);
    assert_eq!(client.total_model_calls(), 3);
    assert!(client.total_usage().input_tokens > 0);
}

#[tokio::test]
async fn ceiling_issue_carries_the_next_attempt_number() {
    let (client, provider) = scripted_with(["bad", "bad", POSITIVE], |b| b.max_model_calls(2));
    let result = client
        .transform("x", "Classify", IntentOptions::<Sentiment>::new())
        .await;
    assert!(!result.is_success());
    assert_eq!(provider.request_count(), 2);
    let last = result.issues.last().unwrap();
    assert_eq!((last.source, last.attempt), (IssueSource::Guardrail, 3));
}

#[tokio::test]
async fn the_time_budget_covers_a_provider_call_in_flight() {
    let slow = ScriptedReply::text(POSITIVE).after(Duration::from_secs(5));
    let (client, _) = scripted_with([slow], |b| b.time_budget(Duration::from_millis(50)));
    let started = std::time::Instant::now();
    let result = client
        .transform("x", "Classify", IntentOptions::<Sentiment>::new())
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the call did not wait for the slow reply"
    );
    let issue = &result.issues[0];
    assert_eq!((issue.source, issue.attempt), (IssueSource::Guardrail, 1));
    assert!(issue.message.contains("50 ms"), "{}", issue.message);
}

#[tokio::test]
async fn the_cache_serves_first_attempts_only() {
    let provider = ScriptedProvider::new([POSITIVE, "bad", r#"{"value":"Negative"}"#]);
    let client = IntentClient::builder()
        .provider(provider.clone())
        .in_memory_cache(16)
        .build()
        .unwrap();
    let first = client
        .transform("Loved it", "Classify", IntentOptions::<Sentiment>::new())
        .await;
    let second = client
        .transform("Loved it", "Classify", IntentOptions::<Sentiment>::new())
        .await;
    assert_eq!(second.value, first.value);
    assert!(second.attempts[0].cached);
    assert_eq!(provider.request_count(), 1);

    // A different input misses the cache; its retry is asked of the model, not the cache.
    let other = client
        .transform("Hated it", "Classify", IntentOptions::<Sentiment>::new())
        .await;
    assert_eq!(other.value, Some(Sentiment::Negative));
    assert_eq!(provider.request_count(), 3);
    assert!(!other.attempts[1].cached);
}

#[tokio::test]
async fn clones_share_totals() {
    let (client, _) = scripted_with([POSITIVE, POSITIVE], |b| b);
    let clone = client.clone();
    let (a, b) = tokio::join!(
        client.transform("x", "Classify", IntentOptions::<Sentiment>::new()),
        clone.transform("y", "Classify", IntentOptions::<Sentiment>::new())
    );
    assert!(a.is_success() && b.is_success());
    assert_eq!(client.total_model_calls(), 2);
}

#[tokio::test]
async fn the_rate_limiter_is_shared_by_clones_and_the_judge() {
    use intent_rs::limits::RateLimiter;
    // Three calls per minute: the first call and its judge take two, the clone's call takes
    // the third, and its judge call must wait half a minute, past the budget.
    let (client, provider, judge) = judged(
        &[POSITIVE, POSITIVE],
        &[
            r#"{"passes": true, "problems": []}"#,
            r#"{"passes": true, "problems": []}"#,
        ],
        |b| {
            b.rate_limiter(RateLimiter::per_minute(3))
                .time_budget(Duration::from_millis(200))
        },
    );
    assert!(
        client
            .transform("x", "Classify", with_judge())
            .await
            .is_success()
    );
    let clone = client.clone();
    let result = clone.transform("y", "Classify", with_judge()).await;
    assert!(!result.is_success());
    assert_eq!((provider.request_count(), judge.request_count()), (2, 1));
    let last = result.issues.last().unwrap();
    assert_eq!(last.source, IssueSource::Guardrail);
    assert!(
        last.message.contains("waiting for the judge"),
        "{}",
        last.message
    );
}
