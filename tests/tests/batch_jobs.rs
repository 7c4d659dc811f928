//! Batch jobs against loopback servers speaking OpenAI's Batch API and Anthropic's Message
//! Batches: the whole lifecycle, results out of order, per-item errors, a failed batch,
//! cancellation, a resume after the process stopped between submission and completion,
//! and a verification retry round, each item's record the same as a live call's.

mod batch_support;
mod provider_support;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use batch_support::{
    Answer, Behaviour, Fake, KEY, anthropic_client, is_retry, last_user, openai_client,
};
use intent_rs::batch::{BatchError, BatchItem, BatchLimits, BatchOptions, BatchProgress};
use intent_rs::judge::{Judge, JudgeReading, JudgeRequest, JudgeResponse, JudgeVerdict};
use intent_rs::pricing::{ModelPrice, TokenRates};
use intent_rs::provider::{OpenAi, Provider, ProviderError, ProviderReply};
use intent_rs::result::JudgeRecord;
use intent_rs::{
    AIResult, Cost, IntentClient, IntentOptions, IssueSource, JudgeMode, PriceTable, total_cost,
};
use provider_support::assert_valid_chat_request;
use serde_json::Value;

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("intent-batch-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn options(dir: &PathBuf) -> BatchOptions {
    BatchOptions::new(dir)
        .poll_interval(Duration::from_millis(5))
        .max_poll_interval(Duration::from_millis(20))
}

/// Counts the words after `words:` in the request; `retry` asks for a wrong first reply,
/// `reject` for a per-item error, `leak` for a per-item error line quoting the key.
fn answer() -> Answer {
    Arc::new(|body: &Value| {
        let user = body["messages"]
            .as_array()
            .and_then(|messages| messages.iter().find(|m| m["role"] == "user"))
            .map(|message| message["content"].clone())
            .unwrap_or_default();
        let first = match &user {
            Value::String(text) => text.clone(),
            blocks => blocks[0]["text"].as_str().unwrap_or_default().to_owned(),
        };
        // The input, as sent: `words: ...` up to the end of its line or its JSON quote.
        let line = first
            .split_once("words:")
            .map(|(_, rest)| rest.split(['\n', '"']).next().unwrap_or_default())
            .unwrap_or_default()
            .to_owned();
        if line.contains("leak") {
            return Err((0, format!("the request carried the key {KEY} in its body")));
        }
        if line.contains("reject") {
            return Err((400, "this request is refused".to_owned()));
        }
        if line.contains("retry") && !is_retry(body) {
            return Ok(r#"{"value": "many"}"#.to_owned());
        }
        let _ = last_user(body);
        Ok(format!(
            r#"{{"value": {}}}"#,
            line.split_whitespace().count()
        ))
    })
}

fn items(texts: &[&str]) -> Vec<BatchItem<i64>> {
    texts
        .iter()
        .map(|text| {
            BatchItem::transform(
                &format!("words:{text}"),
                "Count the words",
                IntentOptions::<i64>::new(),
            )
        })
        .collect()
}

fn values(results: &[AIResult<i64>]) -> Vec<Option<i64>> {
    results.iter().map(|result| result.value).collect()
}

/// A loopback OpenAI (or Anthropic) whose batches stay in progress until the flag is
/// set, and a client of it.
async fn held(anthropic: bool) -> (Fake, IntentClient, Arc<AtomicBool>) {
    let release = Arc::new(AtomicBool::new(false));
    let behaviour = Behaviour {
        hold: Some(release.clone()),
        ..Behaviour::default()
    };
    if anthropic {
        let fake = batch_support::anthropic(answer(), behaviour).await;
        let client = anthropic_client(&fake);
        (fake, client, release)
    } else {
        let fake = batch_support::openai(answer(), behaviour).await;
        let client = openai_client(&fake);
        (fake, client, release)
    }
}

#[tokio::test]
async fn openai_lifecycle_maps_out_of_order_results_back_with_a_live_calls_record() {
    let fake = batch_support::openai(
        answer(),
        Behaviour {
            reversed: true,
            looks: 2,
            ..Behaviour::default()
        },
    )
    .await;
    let client = openai_client(&fake);
    let dir = dir("openai-lifecycle");
    let seen: Arc<Mutex<Vec<BatchProgress>>> = Arc::default();
    let record = seen.clone();
    let results = client
        .batch(items(&[" a", " a b", " a b c", " a b c d"]), options(&dir))
        .on_progress(move |progress| record.lock().unwrap().push(*progress))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(1), Some(2), Some(3), Some(4)]);
    let first = &results[0];
    assert_eq!(first.attempts.len(), 1);
    assert_eq!(first.attempts[0].raw_output, r#"{"value": 1}"#);
    assert_eq!(first.attempts[0].model, "gpt-test-2025");
    assert_eq!(first.usage.input_tokens, 20);
    assert_eq!(first.usage.output_tokens, 4);
    assert_eq!(client.total_usage().input_tokens, 80);
    assert_eq!(client.total_model_calls(), 4);
    // One file, one batch, every line a valid Chat Completions body for one model.
    let counts = {
        let state = fake.state();
        (state.uploads, state.batches.len())
    };
    assert_eq!(counts, (1, 1));
    for body in fake.bodies(0) {
        assert_valid_chat_request(&body, &["model", "messages", "response_format"]);
        assert_eq!(body["model"], "gpt-test");
    }
    // The body is the one a live call sends, byte for byte.
    let live = client
        .transform("words: a", "Count the words", IntentOptions::<i64>::new())
        .await;
    assert_eq!(live.value, Some(1));
    let batched = fake.bodies(0)[0].clone();
    assert_eq!(fake.state().live[0], batched);
    let last = *seen.lock().unwrap().last().unwrap();
    assert_eq!(
        (last.items, last.done, last.failed, last.batches),
        (4, 4, 0, 1)
    );
    assert!(seen.lock().unwrap().iter().any(|p| p.submitted == 4));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn openai_per_item_errors_are_issues_on_their_items() {
    let fake = batch_support::openai(answer(), Behaviour::default()).await;
    let client = openai_client(&fake);
    let dir = dir("openai-item-errors");
    let results = client
        .batch(items(&[" a b", " reject me", " c"]), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(2), None, Some(1)]);
    let failed = &results[1];
    assert_eq!(failed.attempts.len(), 1);
    assert_eq!(failed.issues[0].source, IssueSource::Provider);
    assert!(
        provider_words(&failed.issues[0]).contains("this request is refused"),
        "{:?}",
        failed.issues
    );
    assert!(
        failed.issues[0].message.contains("HTTP 400"),
        "{:?}",
        failed.issues
    );
    // The item's failure has its kind, and a resumed job reads the same from its
    // directory, without sending anything again.
    assert_eq!(
        failed.failure_kind(),
        Some(intent_rs::FailureKind::InvalidRequest)
    );
    let sent = fake.state().batches.len();
    let again = client
        .batch(items(&[" a b", " reject me", " c"]), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(fake.state().batches.len(), sent, "nothing was sent again");
    assert_eq!(
        again[1].failure_kind(),
        Some(intent_rs::FailureKind::InvalidRequest)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_failed_openai_batch_fails_its_items_with_the_reason() {
    let fake = batch_support::openai(
        answer(),
        Behaviour {
            fail: true,
            ..Behaviour::default()
        },
    )
    .await;
    let client = openai_client(&fake);
    let dir = dir("openai-failed");
    let results = client
        .batch(items(&[" a", " b"]), options(&dir))
        .run()
        .await
        .unwrap();
    for result in &results {
        assert_eq!(result.value, None);
        assert!(
            provider_words(&result.issues[0]).contains("invalid_json_line"),
            "{:?}",
            result.issues
        );
    }
    assert_eq!(fake.state().batches.len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn requests_are_split_into_batches_within_the_limits() {
    let fake = batch_support::openai(answer(), Behaviour::default()).await;
    let client = openai_client(&fake);
    let dir = dir("openai-split");
    let limits = BatchLimits {
        max_requests: 2,
        max_bytes: 1 << 20,
    };
    let results = client
        .batch(
            items(&[" a", " b", " c", " d", " e"]),
            options(&dir).limits(limits),
        )
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(1); 5]);
    let sizes: Vec<usize> = fake
        .state()
        .batches
        .iter()
        .map(|(_, lines)| lines.len())
        .collect();
    assert_eq!(sizes, [2, 2, 1]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A verification failure goes into a follow-up batch with the previous reply and its
/// problems, as a live retry would.
async fn retry_round(fake: Fake, client: IntentClient, name: &str) {
    let dir = dir(name);
    let results = client
        .batch(items(&[" a b retry", " c"]), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(3), Some(1)]);
    let retried = &results[0];
    assert_eq!(retried.attempts.len(), 2);
    assert_eq!(retried.attempts[0].raw_output, r#"{"value": "many"}"#);
    assert!(!retried.attempts[0].issues.is_empty());
    assert_eq!(fake.state().batches.len(), 2);
    let retry = &fake.bodies(1)[0];
    let messages = retry["messages"].as_array().unwrap();
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    let assistant_text = match &assistant["content"] {
        Value::String(text) => text.clone(),
        blocks => blocks[0]["text"].as_str().unwrap().to_owned(),
    };
    assert_eq!(assistant_text, r#"{"value": "many"}"#);
    // The problem goes back with its path and the type expected, the value unquoted.
    assert!(
        last_user(retry).contains("value: expected integer, found a string."),
        "{}",
        last_user(retry)
    );
    assert_eq!(fake.submitted_ids(), ["item-0-0", "item-1-0", "item-0-1"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn openai_verification_failures_are_retried_in_a_follow_up_batch() {
    let fake = batch_support::openai(answer(), Behaviour::default()).await;
    let client = openai_client(&fake);
    retry_round(fake, client, "openai-retry").await;
}

#[tokio::test]
async fn anthropic_verification_failures_are_retried_in_a_follow_up_batch() {
    let fake = batch_support::anthropic(answer(), Behaviour::default()).await;
    let client = anthropic_client(&fake);
    retry_round(fake, client, "anthropic-retry").await;
}

#[tokio::test]
async fn the_last_attempts_can_go_out_as_live_calls() {
    let fake = batch_support::openai(answer(), Behaviour::default()).await;
    let client = openai_client(&fake);
    let dir = dir("openai-live-retry");
    let results = client
        .batch(items(&[" a b retry"]), options(&dir).live_from_attempt(2))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(3)]);
    assert_eq!(results[0].attempts.len(), 2);
    let state = fake.state();
    assert_eq!(state.batches.len(), 1);
    assert_eq!(state.live.len(), 1);
    assert!(is_retry(&state.live[0]));
    drop(state);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Items are priced at the model's batch rates for what went through the batch, at its
/// synchronous rates for attempts sent live, and the job's total joins the client's.
#[tokio::test]
async fn a_jobs_items_are_priced_at_the_batch_rates_and_its_total_joins_the_clients() {
    let fake = batch_support::openai(answer(), Behaviour::default()).await;
    let provider = OpenAi::new(KEY)
        .with_base_url(format!("{}/v1", fake.server.uri()))
        .with_model("gpt-test");
    // $2 in and $8 out per million tokens, half that through the batch API.
    let per_million = |dollars: u64| Cost::from_pico_usd(dollars * 1_000_000);
    let mut prices = PriceTable::empty();
    prices.insert(
        "gpt-test-2025",
        ModelPrice::new(TokenRates::new(per_million(2), per_million(8)))
            .with_batch(TokenRates::new(per_million(1), per_million(4))),
    );
    let client = IntentClient::builder()
        .provider(provider)
        .price_table(prices)
        .build()
        .unwrap();
    let dir = dir("openai-cost");
    let results = client
        .batch(
            items(&[" a", " a b", " a b retry"]),
            options(&dir).live_from_attempt(2),
        )
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(1), Some(2), Some(3)]);
    let dollars = |text: &str| text.parse::<Cost>().unwrap();
    // Every call reads 20 tokens and writes 4. Through the batch: 20 × $1/M + 4 × $4/M.
    let batched = dollars("0.000036");
    assert_eq!(results[0].cost(), Ok(batched));
    // The retry went live: 20 × $2/M + 4 × $8/M.
    let retried = &results[2];
    assert_eq!(retried.attempts[0].cost.priced, batched);
    assert_eq!(retried.attempts[1].cost.priced, dollars("0.000072"));
    // Three calls through the batch and one live.
    assert_eq!(total_cost(&results), Ok(dollars("0.00018")));
    assert_eq!(client.total_cost(), Ok(dollars("0.00018")));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Stops the process (aborts the job's task) once its batch is submitted, then runs the
/// same job again on the same directory.
async fn resume_after_stop(fake: Fake, client: IntentClient, release: Arc<AtomicBool>, name: &str) {
    let dir = dir(name);
    let texts = [" a", " a b", " a b c"];
    let first = {
        let client = client.clone();
        let options = options(&dir);
        tokio::spawn(async move { client.batch(items(&texts), options).run().await })
    };
    for _ in 0..500 {
        if !fake.state().batches.is_empty() && fake.state().polls > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());
    assert_eq!(fake.state().batches.len(), 1);
    release.store(true, Ordering::SeqCst);
    let results = client
        .batch(items(&texts), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(1), Some(2), Some(3)]);
    let ids = fake.submitted_ids();
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(unique.len(), 3, "nothing is submitted twice: {ids:?}");
    assert_eq!(fake.state().batches.len(), 1);
    // A third run finds everything finished in the directory and sends nothing.
    let polls = fake.state().polls;
    let again = client
        .batch(items(&texts), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&again), [Some(1), Some(2), Some(3)]);
    assert_eq!(fake.state().polls, polls);
    assert_eq!(fake.state().batches.len(), 1);
    // Other inputs are refused rather than answered with this job's replies.
    let other = client
        .batch(items(&[" x", " y"]), options(&dir))
        .run()
        .await;
    assert!(other.is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn openai_job_resumes_after_a_stop_between_submission_and_completion() {
    let (fake, client, release) = held(false).await;
    resume_after_stop(fake, client, release, "openai-resume").await;
}

#[tokio::test]
async fn anthropic_job_resumes_after_a_stop_between_submission_and_completion() {
    let (fake, client, release) = held(true).await;
    resume_after_stop(fake, client, release, "anthropic-resume").await;
}

/// Stops the process (aborts the job's task) after its batch's creation reached the
/// provider but before the reply came back, so its id was never recorded; another job
/// then creates a batch of its own from `other` (so the batch sought is on a later page,
/// beside one it must not take); the first job, run again, finds its batch instead of
/// creating a second one.
async fn resume_after_a_stop_between_create_and_record(
    fake: Fake,
    client: IntentClient,
    stall: Arc<AtomicBool>,
    other: &[&str],
    name: &str,
) {
    let dir = dir(name);
    let texts = [" a", " a b", " a b c"];
    let first = {
        let client = client.clone();
        let options = options(&dir);
        tokio::spawn(async move { client.batch(items(&texts), options).run().await })
    };
    for _ in 0..1000 {
        if !fake.state().batches.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());
    assert_eq!(
        fake.state().batches.len(),
        1,
        "the creation reached the provider"
    );
    let job = std::fs::read_to_string(dir.join("job.json")).unwrap();
    assert!(job.contains("\"preparing\""), "{job}");
    stall.store(false, Ordering::SeqCst);
    let other_dir = self::dir(&format!("{name}-other"));
    let other = client
        .batch(items(other), options(&other_dir))
        .run()
        .await
        .unwrap();
    assert!(other.iter().all(AIResult::is_success));
    assert_eq!(fake.state().batches.len(), 2);
    let results = client
        .batch(items(&texts), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(1), Some(2), Some(3)]);
    assert_eq!(
        fake.state().batches.len(),
        2,
        "the batch created before the stop was found, not created again"
    );
    let ids = fake.submitted_ids();
    assert_eq!(ids.len(), 3 + other.len(), "{ids:?}");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&other_dir).unwrap();
}

#[tokio::test]
async fn openai_job_stopped_between_creating_a_batch_and_recording_it_finds_it_by_its_tag() {
    let stall = Arc::new(AtomicBool::new(true));
    let fake = batch_support::openai(
        answer(),
        Behaviour {
            stall_creates: Some(stall.clone()),
            ..Behaviour::default()
        },
    )
    .await;
    let client = openai_client(&fake);
    // The other job's batch is of the same size: only the tag tells them apart.
    let other = [" x y z w", " x", " y"];
    resume_after_a_stop_between_create_and_record(
        fake,
        client,
        stall,
        &other,
        "openai-create-stop",
    )
    .await;
}

#[tokio::test]
async fn anthropic_job_stopped_between_creating_a_batch_and_recording_it_finds_it_by_size_and_time()
{
    let stall = Arc::new(AtomicBool::new(true));
    let fake = batch_support::anthropic(
        answer(),
        Behaviour {
            stall_creates: Some(stall.clone()),
            ..Behaviour::default()
        },
    )
    .await;
    let client = anthropic_client(&fake);
    // Message batches carry no tag: the other job's batch differs in size.
    let other = [" x y z w", " x"];
    resume_after_a_stop_between_create_and_record(
        fake,
        client,
        stall,
        &other,
        "anthropic-create-stop",
    )
    .await;
}

/// Counts its calls; every candidate passes.
#[derive(Debug)]
struct CountingJudge(Arc<AtomicUsize>);

#[async_trait::async_trait]
impl Judge for CountingJudge {
    async fn judge(&self, _: &JudgeRequest<'_>) -> Result<JudgeResponse, ProviderError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(JudgeResponse {
            reading: JudgeReading::Verdict(JudgeVerdict {
                passes: true,
                problems: Vec::new(),
            }),
            reply: ProviderReply::text(r#"{"passes": true, "problems": []}"#),
        })
    }
}

#[tokio::test]
async fn a_resumed_job_does_not_ask_the_judge_again_for_items_already_judged() {
    let release = Arc::new(AtomicBool::new(false));
    // The first batch ends; the follow-up batch (the retry of the second item) is held.
    let fake = batch_support::openai(
        answer(),
        Behaviour {
            hold: Some(release.clone()),
            hold_after: 1,
            ..Behaviour::default()
        },
    )
    .await;
    let judged = Arc::new(AtomicUsize::new(0));
    let provider = OpenAi::new(KEY)
        .with_base_url(format!("{}/v1", fake.server.uri()))
        .with_model("gpt-test");
    let client = IntentClient::builder()
        .provider(provider)
        .judge_mode(JudgeMode::Always)
        .judge(CountingJudge(judged.clone()))
        .build()
        .unwrap();
    let dir = dir("judge-resume");
    let texts = [" a b", " retry c"];
    let first = {
        let client = client.clone();
        let options = options(&dir);
        tokio::spawn(async move { client.batch(items(&texts), options).run().await })
    };
    for _ in 0..1000 {
        if fake.state().batches.len() == 2 && fake.state().polls > 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());
    assert_eq!(fake.state().batches.len(), 2);
    // The first item was judged; the second's first reply failed verification.
    assert_eq!(judged.load(Ordering::SeqCst), 1);
    release.store(true, Ordering::SeqCst);
    let results = client
        .batch(items(&texts), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(2), Some(2)]);
    assert_eq!(
        judged.load(Ordering::SeqCst),
        2,
        "only the retried item is judged on resume; the first item's verdict is replayed"
    );
    // The replayed verdict is on the record as the original one was.
    let verdict = results[0].attempts[0].judge.as_ref().unwrap();
    assert!(
        matches!(verdict, JudgeRecord::Verdict { passes: true, .. }),
        "{verdict:?}"
    );
    assert_eq!(fake.state().batches.len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Cancels once the batch is submitted; the provider answered only the first item.
async fn cancel_job(fake: Fake, client: IntentClient, name: &str) {
    let dir = dir(name);
    let job = client.batch(items(&[" a", " a b", " a b c"]), options(&dir));
    let cancel = job.cancel_handle();
    let results = job
        .on_progress(move |progress| {
            if progress.batches >= 1 {
                cancel.cancel();
            }
        })
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(1), None, None]);
    for result in &results[1..] {
        assert!(
            result.issues[0].message.contains("canceled"),
            "{:?}",
            result.issues
        );
    }
    assert_eq!(fake.state().canceled.len(), 1);
    // The cancellation is recorded: resuming submits nothing and reports the same.
    let again = client
        .batch(items(&[" a", " a b", " a b c"]), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&again), [Some(1), None, None]);
    assert_eq!(fake.state().batches.len(), 1);
    // ...and says that an earlier run canceled it, and how to start afresh.
    for result in &again[1..] {
        let message = &result.issues[0].message;
        assert!(
            message.contains("canceled in an earlier run")
                && message.contains("give the job a new one"),
            "{message}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn openai_cancel_cancels_the_batch_and_records_unfinished_items() {
    let fake = batch_support::openai(
        answer(),
        Behaviour {
            hold: Some(Arc::new(AtomicBool::new(false))),
            answered_on_cancel: 1,
            ..Behaviour::default()
        },
    )
    .await;
    let client = openai_client(&fake);
    cancel_job(fake, client, "openai-cancel").await;
}

#[tokio::test]
async fn anthropic_cancel_cancels_the_batch_and_records_unfinished_items() {
    let fake = batch_support::anthropic(
        answer(),
        Behaviour {
            hold: Some(Arc::new(AtomicBool::new(false))),
            answered_on_cancel: 1,
            ..Behaviour::default()
        },
    )
    .await;
    let client = anthropic_client(&fake);
    cancel_job(fake, client, "anthropic-cancel").await;
}

#[tokio::test]
async fn anthropic_lifecycle_with_out_of_order_results_and_errored_items() {
    let fake = batch_support::anthropic(
        answer(),
        Behaviour {
            reversed: true,
            looks: 1,
            ..Behaviour::default()
        },
    )
    .await;
    let client = anthropic_client(&fake);
    let dir = dir("anthropic-lifecycle");
    let results = client
        .batch(items(&[" a", " reject", " a b c"]), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(
        values(&results),
        [Some(1), None, Some(3)],
        "{:?}",
        results[0].issues
    );
    assert!(provider_words(&results[1].issues[0]).contains("this request is refused"));
    assert_eq!(results[2].attempts[0].model, "claude-test-2025");
    assert_eq!(results[2].usage.output_tokens, 4);
    // The params are the body a live Messages call sends.
    let live = client
        .transform("words: a", "Count the words", IntentOptions::<i64>::new())
        .await;
    assert_eq!(live.value, Some(1));
    let batched = fake.bodies(0)[0].clone();
    assert_eq!(fake.state().live[0], batched);
    assert_eq!(fake.bodies(0)[0]["model"], "claude-test");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_provider_without_a_batch_api_is_refused() {
    let provider = intent_rs::provider::OpenAiCompatible::new("http://127.0.0.1:9", "m");
    assert!(provider.batch().is_none());
    let client = IntentClient::builder().provider(provider).build().unwrap();
    let dir = dir("no-batch-api");
    let error = client
        .batch(items(&[" a"]), options(&dir))
        .run()
        .await
        .unwrap_err();
    assert!(error.to_string().contains("has no batch API"), "{error}");
}

#[tokio::test]
async fn a_job_past_its_time_limit_is_canceled() {
    let fake = batch_support::openai(
        answer(),
        Behaviour {
            hold: Some(Arc::new(AtomicBool::new(false))),
            ..Behaviour::default()
        },
    )
    .await;
    let client = openai_client(&fake);
    let dir = dir("openai-time-limit");
    let results = client
        .batch(
            items(&[" a", " b"]),
            options(&dir).time_limit(Duration::from_secs(1)),
        )
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [None, None]);
    // Every unfinished item says the time limit stopped it, not just "canceled".
    for result in &results {
        assert!(
            result.issues[0].message.contains("time limit ran out"),
            "{:?}",
            result.issues
        );
    }
    assert_eq!(fake.state().canceled, ["batch_1"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn submissions_polls_and_item_requests_are_traced_and_the_key_never_leaks() {
    let logs = provider_support::CapturedLogs::start();
    let fake = batch_support::openai(answer(), Behaviour::default()).await;
    let client = openai_client(&fake);
    let dir = dir("openai-traced");
    let results = client
        .batch(items(&[" a b", " a b retry"]), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(2), Some(3)]);
    let text = logs.text();
    for expected in [
        r#"otel.name="batch submit""#,
        r#"otel.name="batch poll""#,
        r#"intent.batch.id="batch_2""#,
        "span chat ",
        "span intent ",
    ] {
        assert!(text.contains(expected), "{expected} in:\n{text}");
    }
    assert!(!text.contains(KEY), "the key leaked into the logs");
    let state: String = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    assert!(!state.contains(KEY), "the key leaked into the job's state");
    std::fs::remove_dir_all(&dir).unwrap();
}

mod generated {
    use intent_rs::provider::{ScriptedProvider, ScriptedReply};
    use intent_rs::{AIResult, IntentClient, IntentError, intents};

    use super::{BatchOptions, Duration, dir};

    #[intents]
    trait Words {
        #[intent("Count the words", max_attempts = 2)]
        async fn count(&self, text: &str, language: &str) -> AIResult<u32>;

        #[intent("Shout the text")]
        async fn shout(&self, text: &str) -> Result<String, IntentError>;
    }

    #[tokio::test]
    async fn generated_methods_have_batch_companions_run_by_the_scripted_batch_api() {
        let model = ScriptedProvider::from_fn(|request, _| {
            let user = request.user();
            ScriptedReply::text(if user.contains("Shout") {
                "HELLO".to_owned()
            } else if user.contains("one two") && !request.is_retry() {
                r#"{"value": "two"}"#.to_owned()
            } else if user.contains("one two") {
                r#"{"value": 2}"#.to_owned()
            } else {
                r#"{"value": 1}"#.to_owned()
            })
        });
        let client = IntentClient::builder()
            .provider(model.clone())
            .build()
            .unwrap();
        let words = WordsClient::new(client.clone());
        let dir = dir("generated");
        let options = || BatchOptions::new(&dir).poll_interval(Duration::from_millis(1));
        let items = ["one", "one two"].map(|text| words.count_batch_item(text, "en"));
        let counts = client.batch(items, options()).run().await.unwrap();
        assert_eq!(
            counts.iter().map(|r| r.value).collect::<Vec<_>>(),
            [Some(1), Some(2)]
        );
        assert_eq!(counts[1].attempts.len(), 2);
        // The same request a live call of the method sends.
        let live = words.count("one", "en").await;
        assert_eq!(live.value, Some(1));
        let requests = model.requests();
        let (live_request, batched) = requests.split_last().unwrap();
        assert!(batched.contains(live_request));
        assert!(
            live_request.user().contains(r#""language":"en""#),
            "{}",
            live_request.user()
        );
        std::fs::remove_dir_all(&dir).unwrap();
        let shouted = client
            .batch([words.shout_batch_item("hello")], options())
            .run()
            .await
            .unwrap();
        assert_eq!(shouted[0].value.as_deref(), Some("HELLO"));
        assert_eq!(words.shout("hello").await.unwrap(), "HELLO");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Runs a job to its end, then runs its directory again with other inputs of the same
/// count and method, and with one item edited: both are refused, naming the first item
/// that differs, and nothing stored is handed out nor anything sent.
async fn reused_directory(fake: Fake, client: IntentClient, name: &str) {
    let dir = dir(name);
    let texts = [" a", " a b", " a b c", " a b c d"];
    let first = client
        .batch(items(&texts), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&first), [Some(1), Some(2), Some(3), Some(4)]);
    let sent = {
        let state = fake.state();
        (state.batches.len(), state.polls)
    };
    let other = client
        .batch(items(&[" w", " x y", " z", " v w x y z"]), options(&dir))
        .run()
        .await
        .unwrap_err();
    let BatchError::OtherJob {
        dir: at,
        difference,
    } = &other
    else {
        panic!("{other}");
    };
    assert_eq!(at, &dir);
    assert!(
        difference.starts_with("item 0's first request") && difference.contains("the messages"),
        "{difference}"
    );
    let edited = client
        .batch(
            items(&[" a", " a b", " a b c EDITED", " a b c d"]),
            options(&dir),
        )
        .run()
        .await
        .unwrap_err();
    assert!(
        edited.to_string().contains("item 2's first request"),
        "{edited}"
    );
    assert!(edited.to_string().contains("new directory"), "{edited}");
    let now = {
        let state = fake.state();
        (state.batches.len(), state.polls)
    };
    assert_eq!(now, sent, "nothing was sent");
    assert!(fake.state().live.is_empty());
    // The job itself still resumes from its directory.
    let again = client
        .batch(items(&texts), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&again), values(&first));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn openai_directory_reused_for_other_inputs_is_refused_naming_the_first_differing_item() {
    let fake = batch_support::openai(answer(), Behaviour::default()).await;
    let client = openai_client(&fake);
    reused_directory(fake, client, "openai-reused").await;
}

#[tokio::test]
async fn anthropic_directory_reused_for_other_inputs_is_refused_naming_the_first_differing_item() {
    let fake = batch_support::anthropic(answer(), Behaviour::default()).await;
    let client = anthropic_client(&fake);
    reused_directory(fake, client, "anthropic-reused").await;
}

#[tokio::test]
async fn a_request_in_flight_that_differs_from_the_one_submitted_is_refused() {
    let (fake, client, release) = held(false).await;
    let dir = dir("openai-inflight-other");
    let job = client.batch(items(&[" a", " b"]), options(&dir));
    let stop = job.stop_handle();
    let stopped = job
        .on_progress(move |progress| {
            if progress.batches >= 1 {
                stop.stop();
            }
        })
        .run()
        .await
        .unwrap_err();
    assert!(matches!(stopped, BatchError::Stopped { .. }), "{stopped}");
    release.store(true, Ordering::SeqCst);
    let error = client
        .batch(items(&[" a", " c"]), options(&dir))
        .run()
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("item 1's first request"),
        "{error}"
    );
    assert_eq!(fake.state().batches.len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Keeps only the first line of submission 1's results and half of the second, as a full
/// disk would; which item the whole line answers.
fn cut_results_short(dir: &std::path::Path) -> u64 {
    let path = dir.join("submission-1.results.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    let kept = lines.next().unwrap();
    let half = lines.next().unwrap();
    std::fs::write(&path, format!("{kept}\n{}", &half[..half.len() / 2])).unwrap();
    serde_json::from_str::<Value>(kept).unwrap()["item"]
        .as_u64()
        .unwrap()
}

/// A finished job whose results file was cut short reads the provider's copy again
/// rather than paying for the requests twice; only once the provider has forgotten the
/// batch are they sent again, and the progress and the items say so.
async fn results_cut_short(fake: Fake, client: IntentClient, forget: Arc<AtomicUsize>, name: &str) {
    let dir = dir(name);
    let texts = [" a", " a b", " a b c"];
    let first = client
        .batch(items(&texts), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&first), [Some(1), Some(2), Some(3)]);
    let reads = fake.state().result_reads;
    cut_results_short(&dir);
    let again = client
        .batch(items(&texts), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&again), values(&first));
    assert_eq!(fake.state().batches.len(), 1, "nothing is submitted again");
    assert!(
        fake.state().result_reads > reads,
        "the results were read again"
    );
    assert!(again.iter().all(|result| result.issues.is_empty()));
    // The file is whole again: a third run asks the provider nothing.
    let reads = fake.state().result_reads;
    client
        .batch(items(&texts), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(fake.state().result_reads, reads);

    // Cut short again, with the provider's copy gone: only the lost requests go out.
    let kept = cut_results_short(&dir);
    forget.store(1, Ordering::SeqCst);
    let seen: Arc<Mutex<Vec<BatchProgress>>> = Arc::default();
    let record = seen.clone();
    let resent = client
        .batch(items(&texts), options(&dir))
        .on_progress(move |progress| record.lock().unwrap().push(*progress))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&resent), values(&first));
    assert_eq!(fake.state().batches.len(), 2);
    let ids = fake.submitted_ids();
    assert_eq!(ids.len(), 5, "the two lost requests, once more: {ids:?}");
    assert!(!ids[3..].contains(&format!("item-{kept}-0")), "{ids:?}");
    assert_eq!(seen.lock().unwrap().last().unwrap().resubmitted, 2);
    for (index, result) in resent.iter().enumerate() {
        let said = result
            .issues
            .iter()
            .any(|issue| issue.message.contains("was sent again (and billed again)"));
        assert_eq!(
            said,
            index as u64 != kept,
            "item {index}: {:?}",
            result.issues
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn openai_results_file_cut_short_is_read_again_from_the_provider_not_paid_twice() {
    let forget = Arc::new(AtomicUsize::new(0));
    let fake = batch_support::openai(
        answer(),
        Behaviour {
            forget: Some(forget.clone()),
            ..Behaviour::default()
        },
    )
    .await;
    let client = openai_client(&fake);
    results_cut_short(fake, client, forget, "openai-cut-short").await;
}

#[tokio::test]
async fn anthropic_results_file_cut_short_is_read_again_from_the_provider_not_paid_twice() {
    let forget = Arc::new(AtomicUsize::new(0));
    let fake = batch_support::anthropic(
        answer(),
        Behaviour {
            forget: Some(forget.clone()),
            ..Behaviour::default()
        },
    )
    .await;
    let client = anthropic_client(&fake);
    results_cut_short(fake, client, forget, "anthropic-cut-short").await;
}

/// A per-request error line that quotes the key reaches neither the item's issues nor
/// the job's directory.
async fn line_errors_are_redacted(_fake: Fake, client: IntentClient, name: &str) {
    let dir = dir(name);
    let results = client
        .batch(items(&[" a", " leak"]), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(1), None]);
    let issue = &provider_words(&results[1].issues[0]);
    assert!(issue.contains("the key [redacted] in its body"), "{issue}");
    assert!(!issue.contains(KEY), "{issue}");
    let stored: String = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    assert!(stored.contains("[redacted]"), "the error is stored");
    assert!(!stored.contains(KEY), "the key leaked into the job's state");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn openai_batch_error_lines_are_redacted_of_the_key() {
    let fake = batch_support::openai(answer(), Behaviour::default()).await;
    let client = openai_client(&fake);
    line_errors_are_redacted(fake, client, "openai-redacted").await;
}

#[tokio::test]
async fn anthropic_batch_error_lines_are_redacted_of_the_key() {
    let fake = batch_support::anthropic(answer(), Behaviour::default()).await;
    let client = anthropic_client(&fake);
    line_errors_are_redacted(fake, client, "anthropic-redacted").await;
}

/// Stops the job once its batch is submitted: the provider's batch is not canceled, and
/// the same job run again collects it.
async fn stop_and_resume(fake: Fake, client: IntentClient, release: Arc<AtomicBool>, name: &str) {
    let dir = dir(name);
    let texts = [" a", " a b", " a b c"];
    let job = client.batch(items(&texts), options(&dir));
    let stop = job.stop_handle();
    let error = job
        .on_progress(move |progress| {
            if progress.batches >= 1 {
                stop.stop();
            }
        })
        .run()
        .await
        .unwrap_err();
    let BatchError::Stopped {
        dir: at,
        finished,
        items: count,
    } = &error
    else {
        panic!("{error}");
    };
    assert_eq!((at, *finished, *count), (&dir, 0, 3));
    assert!(error.to_string().contains("run the same job"), "{error}");
    assert!(fake.state().canceled.is_empty(), "stopping cancels nothing");
    release.store(true, Ordering::SeqCst);
    let results = client
        .batch(items(&texts), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(1), Some(2), Some(3)]);
    assert_eq!(fake.state().batches.len(), 1, "nothing is submitted twice");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn openai_stopped_job_leaves_its_batch_running_and_resumes() {
    let (fake, client, release) = held(false).await;
    stop_and_resume(fake, client, release, "openai-stop").await;
}

#[tokio::test]
async fn anthropic_stopped_job_leaves_its_batch_running_and_resumes() {
    let (fake, client, release) = held(true).await;
    stop_and_resume(fake, client, release, "anthropic-stop").await;
}

mod decision_companions {
    use std::sync::Arc;

    use intent_rs::batch::BatchOptions;
    use intent_rs::decision::ProbabilitySource;
    use intent_rs::provider::{ScriptedProvider, ScriptedReply};
    use intent_rs::{
        Binary, Choice, DecisionEnum, DecisionError, IntentClient, IssueSource, intents,
    };
    use serde_json::Value;

    use super::batch_support::{self, Behaviour, last_user, openai_client};
    use super::{Duration, dir, options};

    #[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
    pub enum Team {
        /// Payments, invoices and refunds.
        Billing,
        /// Anything that does not work.
        Support,
    }

    #[intents]
    pub trait Triage {
        #[intent("Is the ticket urgent?")]
        async fn urgent(&self, ticket: &str) -> Result<Binary, DecisionError>;

        #[intent("Which team should take the ticket?")]
        async fn team(&self, ticket: &str, customer: &str) -> Result<Choice<Team>, DecisionError>;
    }

    /// Log-probability questions are ordinary Chat Completions requests: they go through
    /// OpenAI's Batch API, their answers are read from the batch's output, and a rerun
    /// reads them back from the directory (log-probabilities included).
    #[tokio::test]
    async fn decision_companions_ask_log_probability_questions_through_openais_batch_api() {
        let answer: batch_support::Answer = Arc::new(|body: &Value| {
            Ok(if last_user(body).contains("server down") {
                "yes=0.9,no=0.1".to_owned()
            } else {
                "no=0.8,yes=0.2".to_owned()
            })
        });
        let fake = batch_support::openai(answer, Behaviour::default()).await;
        let client = openai_client(&fake);
        let triage = TriageClient::new(client.clone());
        let dir = dir("decision-companions-openai");
        let items = || {
            ["the server down since noon", "a typo in the docs"]
                .map(|t| triage.urgent_batch_item(t))
        };
        let results = client.batch(items(), options(&dir)).run().await.unwrap();
        let urgent: Vec<f64> = results
            .iter()
            .map(|result| result.value.as_ref().unwrap().probability)
            .collect();
        assert!(
            (urgent[0] - 0.9).abs() < 1e-9 && (urgent[1] - 0.2).abs() < 1e-9,
            "{urgent:?}"
        );
        assert_eq!(
            results[0].value.as_ref().unwrap().source,
            ProbabilitySource::LogProbabilities
        );
        assert_eq!(results[0].usage.input_tokens, 20);
        // One batch of two one-token log-probability requests; nothing live.
        assert_eq!(fake.state().batches.len(), 1);
        assert!(fake.state().live.is_empty());
        for body in fake.bodies(0) {
            assert_eq!(body["logprobs"], true);
            assert_eq!(body["top_logprobs"], 20);
            assert_eq!(
                body["max_completion_tokens"]
                    .as_u64()
                    .or(body["max_tokens"].as_u64()),
                Some(1),
                "{body}"
            );
        }
        // The same requests a live call of the method sends.
        let live = triage.urgent("the server down since noon").await.unwrap();
        assert!((live.probability - 0.9).abs() < 1e-9);
        let sent = fake.bodies(0)[0].clone();
        assert_eq!(fake.state().live[0], sent);
        // Read back from the directory, log-probabilities and all: nothing is sent.
        let again = client.batch(items(), options(&dir)).run().await.unwrap();
        assert_eq!(
            again
                .iter()
                .map(|r| r.value.as_ref().unwrap().probability)
                .collect::<Vec<_>>(),
            urgent
        );
        assert_eq!(fake.state().batches.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A provider without log-probabilities gets a stated-probability question, verified
    /// as an intent's reply; a failed decision is its item's issue, never the state.
    #[tokio::test]
    async fn decision_companions_run_through_the_scripted_batch_api_with_stated_answers() {
        let model = ScriptedProvider::from_fn(|request, _| {
            // The options' descriptions are in every question: the state tells them apart.
            ScriptedReply::text(if request.user().contains("double charge") {
                r#"{"value": {"team": {"probabilities": {"Billing": 0.8, "Support": 0.2}}}}"#
            } else {
                "not an answer"
            })
        });
        let client = IntentClient::builder()
            .provider(model.clone())
            .build()
            .unwrap();
        let triage = TriageClient::new(client.clone());
        let dir = dir("decision-companions-scripted");
        let items = [
            triage.team_batch_item("a double charge", "Ann"),
            triage.team_batch_item("SECRET-STATE the app crashes", "Bob"),
        ];
        let results = client
            .batch(
                items,
                BatchOptions::new(&dir).poll_interval(Duration::from_millis(1)),
            )
            .run()
            .await
            .unwrap();
        let chosen = results[0].value.as_ref().unwrap();
        assert_eq!(chosen.selected, Team::Billing);
        assert_eq!(chosen.source, ProbabilitySource::Stated);
        assert!(
            results[1].value.is_none(),
            "{:?} {:?}",
            results[1].value,
            model.requests()
        );
        let issue = &results[1].issues[0];
        assert_eq!(issue.source, IssueSource::Verification, "{issue:?}");
        assert!(!issue.message.contains("SECRET-STATE"), "{}", issue.message);
        // Each question went out with the method's state, as a live call sends it.
        let live = triage.team("a double charge", "Ann").await.unwrap();
        assert_eq!(live.selected, Team::Billing);
        let requests = model.requests();
        assert_eq!(requests.len(), 3);
        assert!(requests[..2].contains(&requests[2]));
        assert!(requests[2].user().contains(r#""customer":"Ann""#));
        std::fs::remove_dir_all(&dir).unwrap();
    }
    /// A decision item whose reply echoes the state (the answer token is the user's
    /// text): its issue says what was wrong by the question and its labels, and neither
    /// the issue nor any log line quotes the state.
    #[tokio::test]
    async fn a_decision_item_answered_with_the_state_never_quotes_it() {
        const MARKER: &str = "ECHOED-STATE-7731";
        let logs = crate::provider_support::CapturedLogs::start();
        let answer: batch_support::Answer = Arc::new(|body: &Value| {
            Ok(if last_user(body).contains(MARKER) {
                format!("{MARKER}=0.9,yes=0.1")
            } else {
                "no=0.8,yes=0.2".to_owned()
            })
        });
        let fake = batch_support::openai(answer, Behaviour::default()).await;
        let client = openai_client(&fake);
        let triage = TriageClient::new(client.clone());
        let dir = dir("decision-companions-echo");
        let items = [
            triage.urgent_batch_item(&format!("{MARKER}: I was charged twice")),
            triage.urgent_batch_item("a typo in the docs"),
        ];
        let results = client.batch(items, options(&dir)).run().await.unwrap();
        assert!(results[1].value.is_some());
        assert!(results[0].value.is_none());
        let issue = &results[0].issues[0];
        assert_eq!(issue.source, IssueSource::Verification, "{issue:?}");
        assert!(issue.message.contains("`urgent`"), "{}", issue.message);
        assert!(!issue.message.contains(MARKER), "{}", issue.message);
        assert!(!format!("{:?}", results[0]).contains(MARKER));
        assert!(!logs.text().contains(MARKER), "the state was logged");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Jobs larger than their memory bound: items start in waves, never more of them in
/// memory (started, not finished) than the bound, and nothing else changes: results in
/// the items' order, retries, a stop and a resume, a directory reused for other inputs.
mod bounded_memory {
    use std::collections::HashSet;
    use std::sync::{Arc, Mutex};

    use intent_rs::batch::{BatchError, BatchItem, BatchProgress};
    use intent_rs::provider::{ScriptedProvider, ScriptedReply};
    use intent_rs::{IntentClient, IntentOptions};

    use super::{
        AtomicBool, Fake, Ordering, answer, anthropic_client, dir, openai_client, options, values,
    };
    use crate::batch_support::{self, Behaviour};

    /// Items in memory as the test sees them from outside the job: an item is counted
    /// from its first request (made as soon as its call starts) until its reply passes
    /// the validator (its call finishes then).
    #[derive(Default)]
    struct Outside {
        open: HashSet<i64>,
        most: usize,
    }

    type Watch = Arc<Mutex<Outside>>;

    /// The number an input carries: `<n>` in `words: #<n> ...`.
    fn number(text: &str) -> Option<i64> {
        let (_, rest) = text.split_once("words: #")?;
        rest.split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    }

    fn texts(count: usize) -> Vec<String> {
        (0..count)
            .map(|n| {
                if n % 7 == 3 {
                    format!(" #{n} retry")
                } else {
                    format!(" #{n}")
                }
            })
            .collect()
    }

    /// Items whose value is their number, counted in `watch` until they pass.
    fn numbered(texts: &[String], watch: &Watch) -> Vec<BatchItem<i64>> {
        texts
            .iter()
            .map(|text| {
                let watch = watch.clone();
                let options = IntentOptions::<i64>::new().validate(move |value: &i64| {
                    watch.lock().unwrap().open.remove(value);
                    true
                });
                BatchItem::transform(&format!("words:{text}"), "Number the words", options)
            })
            .collect()
    }

    /// Replies with the input's number (a word first for a `retry` input's first
    /// request), and counts every item from its first request.
    fn asked(watch: &Watch, user: &str, retry: bool) -> String {
        let Some(n) = number(user) else {
            return r#"{"value": -1}"#.to_owned();
        };
        if !retry {
            let mut outside = watch.lock().unwrap();
            outside.open.insert(n);
            outside.most = outside.most.max(outside.open.len());
        }
        if user.contains("retry") && !retry {
            r#"{"value": "many"}"#.to_owned()
        } else {
            format!(r#"{{"value": {n}}}"#)
        }
    }

    fn expected(count: usize) -> Vec<Option<i64>> {
        (0..count as i64).map(Some).collect()
    }

    fn recorder() -> (
        Arc<Mutex<Vec<BatchProgress>>>,
        impl Fn(&BatchProgress) + Send + Sync + 'static,
    ) {
        let seen: Arc<Mutex<Vec<BatchProgress>>> = Arc::default();
        let record = seen.clone();
        (seen, move |progress: &BatchProgress| {
            record.lock().unwrap().push(*progress)
        })
    }

    #[tokio::test]
    async fn a_job_of_more_items_than_its_bound_runs_in_waves_on_the_scripted_batch_api() {
        let watch: Watch = Arc::default();
        let replies = watch.clone();
        let model = ScriptedProvider::from_fn(move |request, _| {
            ScriptedReply::text(asked(&replies, request.user(), request.is_retry()))
        });
        let client = IntentClient::builder().provider(model).build().unwrap();
        let dir = dir("waves-scripted");
        let texts = texts(250);
        let (seen, record) = recorder();
        let results = client
            .batch(
                numbered(&texts, &watch),
                options(&dir).max_items_in_memory(40),
            )
            .on_progress(record)
            .run()
            .await
            .unwrap();
        assert_eq!(values(&results), expected(250));
        assert_eq!(results[3].attempts.len(), 2, "a retry within its wave");
        let most = watch.lock().unwrap().most;
        assert!(
            (2..=40).contains(&most),
            "at most 40 items in memory, seen from outside: {most}"
        );
        let seen = seen.lock().unwrap();
        let last = *seen.last().unwrap();
        assert_eq!(last.peak_in_memory, 40);
        assert_eq!((last.done, last.in_memory), (250, 0));
        assert!(seen.iter().all(|p| p.in_memory <= 40 && p.submitted <= 40));
        assert!(last.batches >= 250 / 40, "{last:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Over loopback HTTP: every batch holds the requests of at most `bound` items.
    async fn waves(fake: Fake, client: IntentClient, name: &str) {
        let dir = dir(name);
        let watch: Watch = Arc::default();
        let texts = texts(120);
        let (seen, record) = recorder();
        let results = client
            .batch(
                numbered(&texts, &watch),
                options(&dir).max_items_in_memory(25),
            )
            .on_progress(record)
            .run()
            .await
            .unwrap();
        assert_eq!(values(&results), expected(120));
        assert_eq!(results[10].attempts.len(), 2);
        let sizes: Vec<usize> = fake
            .state()
            .batches
            .iter()
            .map(|(_, lines)| lines.len())
            .collect();
        assert!(sizes.len() >= 120 / 25, "{sizes:?}");
        assert!(sizes.iter().all(|&size| size <= 25), "{sizes:?}");
        let retries = texts.iter().filter(|text| text.contains("retry")).count();
        assert_eq!(sizes.iter().sum::<usize>(), 120 + retries);
        let last = *seen.lock().unwrap().last().unwrap();
        assert_eq!(last.peak_in_memory, 25);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn numbering() -> super::batch_support::Answer {
        let count = answer();
        Arc::new(move |body: &serde_json::Value| {
            // The first user turn holds the input.
            let text = body["messages"]
                .as_array()
                .and_then(|messages| messages.iter().find(|m| m["role"] == "user"))
                .map(|message| message["content"].to_string())
                .unwrap_or_default();
            match number(&text) {
                Some(_) if text.contains("retry") && !super::is_retry(body) => {
                    Ok(r#"{"value": "many"}"#.to_owned())
                }
                Some(n) => Ok(format!(r#"{{"value": {n}}}"#)),
                None => count(body),
            }
        })
    }

    #[tokio::test]
    async fn openai_jobs_larger_than_their_bound_send_batches_of_at_most_the_bound() {
        let fake = batch_support::openai(numbering(), Behaviour::default()).await;
        let client = openai_client(&fake);
        waves(fake, client, "waves-openai").await;
    }

    #[tokio::test]
    async fn anthropic_jobs_larger_than_their_bound_send_batches_of_at_most_the_bound() {
        let fake = batch_support::anthropic(numbering(), Behaviour::default()).await;
        let client = anthropic_client(&fake);
        waves(fake, client, "waves-anthropic").await;
    }

    #[tokio::test]
    async fn a_job_stopped_between_waves_resumes_without_sending_anything_twice() {
        let release = Arc::new(AtomicBool::new(false));
        let behaviour = Behaviour {
            hold: Some(release.clone()),
            hold_after: 2,
            ..Behaviour::default()
        };
        let fake = batch_support::openai(numbering(), behaviour).await;
        let client = openai_client(&fake);
        let dir = dir("waves-resume");
        let texts: Vec<String> = (0..40).map(|n| format!(" #{n}")).collect();
        let watch: Watch = Arc::default();
        let job = client.batch(
            numbered(&texts, &watch),
            options(&dir).max_items_in_memory(10),
        );
        let stop = job.stop_handle();
        let stopped = job
            .on_progress(move |progress| {
                if progress.batches >= 3 {
                    stop.stop();
                }
            })
            .run()
            .await;
        let Err(BatchError::Stopped { finished, .. }) = stopped else {
            panic!("the job did not stop");
        };
        assert_eq!(finished, 20, "two waves answered, the third held");
        assert_eq!(fake.state().batches.len(), 3);
        release.store(true, Ordering::SeqCst);
        let results = client
            .batch(
                numbered(&texts, &watch),
                options(&dir).max_items_in_memory(10),
            )
            .run()
            .await
            .unwrap();
        assert_eq!(values(&results), expected(40));
        let ids = fake.submitted_ids();
        let unique: HashSet<&String> = ids.iter().collect();
        assert_eq!((ids.len(), unique.len()), (40, 40), "{ids:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn an_item_edited_beyond_the_first_wave_is_refused_and_nothing_is_sent() {
        let fake = batch_support::openai(numbering(), Behaviour::default()).await;
        let client = openai_client(&fake);
        let dir = dir("waves-edited");
        let watch: Watch = Arc::default();
        let texts: Vec<String> = (0..30).map(|n| format!(" #{n}")).collect();
        let bounded = || options(&dir).max_items_in_memory(8);
        let first = client
            .batch(numbered(&texts, &watch), bounded())
            .run()
            .await
            .unwrap();
        let sent = fake.state().batches.len();
        assert!(sent >= 4, "{sent}");
        let mut edited = texts.clone();
        edited[25] = " #25 EDITED".to_owned();
        let error = client
            .batch(numbered(&edited, &watch), bounded())
            .run()
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("item 25's first request"),
            "{error}"
        );
        assert_eq!(fake.state().batches.len(), sent, "nothing was sent");
        let again = client
            .batch(numbered(&texts, &watch), bounded())
            .run()
            .await
            .unwrap();
        assert_eq!(values(&again), values(&first));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[tokio::test]
async fn a_busy_batch_api_is_asked_again_no_sooner_than_its_retry_after() {
    let fake = batch_support::openai(
        answer(),
        Behaviour {
            busy_once: Some("1"),
            ..Behaviour::default()
        },
    )
    .await;
    let client = openai_client(&fake);
    let dir = dir("busy-once");
    // The job's own pace is 5 ms: only the provider's advice makes it wait longer.
    let results = client
        .batch(items(&[" a", " a b"]), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(1), Some(2)]);
    let state = fake.state();
    let advised = Duration::from_secs(1);
    assert_eq!(state.creates_at.len(), 2, "the creation was tried again");
    let gap = state.creates_at[1] - state.creates_at[0];
    assert!(
        gap >= advised,
        "created again {gap:?} after a 429 with retry-after: 1"
    );
    assert!(state.looks_at.len() >= 2, "looked at again");
    let gap = state.looks_at[1] - state.looks_at[0];
    assert!(
        gap >= advised,
        "looked at again {gap:?} after a 429 with retry-after: 1"
    );
}

/// The provider's own words behind an item's issue: withheld from the issue's message
/// (they may quote the request), kept on the provider error that is its cause.
fn provider_words(issue: &intent_rs::ResultIssue) -> String {
    issue
        .cause
        .as_ref()
        .and_then(|cause| cause.downcast_ref::<intent_rs::provider::ProviderError>())
        .map_or_else(String::new, |error| error.message().to_owned())
}
