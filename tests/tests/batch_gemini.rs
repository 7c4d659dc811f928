//! Batch jobs against a loopback server speaking Gemini's Batch Mode: every request inline
//! in one `batchGenerateContent` call, each line the body a live call sends under its
//! `metadata.key`, results read back by key whatever their order (under the operation's
//! `metadata.output` or its `response`), per-item errors as issues on their items
//! (redacted of the key), a failed batch failing its items with the reason, and
//! cancellation.

mod batch_support;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use batch_support::{Answer, Behaviour, KEY, gemini_client, gemini_is_retry, gemini_user};
use intent_rs::batch::{BatchItem, BatchOptions};
use intent_rs::{AIResult, IntentOptions, IssueSource};
use serde_json::Value;

fn dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("intent-batch-gemini-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn options(dir: &PathBuf) -> BatchOptions {
    BatchOptions::new(dir)
        .poll_interval(Duration::from_millis(5))
        .max_poll_interval(Duration::from_millis(20))
}

/// Counts the words after `words:` in the request; `reject` asks for a per-item error
/// with an HTTP status, `leak` for one with a `google.rpc.Code` that quotes the key,
/// `retry` for a wrong first reply.
fn answer() -> Answer {
    Arc::new(|body: &Value| {
        let user = gemini_user(body);
        let line = user
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
        if line.contains("retry") && !gemini_is_retry(body) {
            return Ok(r#"{"value": "many"}"#.to_owned());
        }
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

/// Everything the job wrote to its directory, as text.
fn stored(dir: &PathBuf) -> String {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn gemini_lifecycle_maps_out_of_order_results_back_by_key_with_a_live_calls_record() {
    let fake = batch_support::gemini(
        answer(),
        Behaviour {
            reversed: true,
            looks: 2,
            ..Behaviour::default()
        },
    )
    .await;
    let client = gemini_client(&fake);
    let dir = dir("lifecycle");
    let results = client
        .batch(items(&[" a", " a b", " a b c", " a b c d"]), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(
        values(&results),
        [Some(1), Some(2), Some(3), Some(4)],
        "{:?}",
        results[0].issues
    );
    let first = &results[0];
    assert_eq!(first.attempts.len(), 1);
    assert_eq!(first.attempts[0].raw_output, r#"{"value": 1}"#);
    assert_eq!(first.attempts[0].model, "gemini-test-2025");
    assert_eq!(first.usage.input_tokens, 20);
    assert_eq!(first.usage.output_tokens, 4);
    assert_eq!(client.total_usage().input_tokens, 80);
    // One batch for the one model, every request inline under its key.
    let (batches, submitted) = {
        let state = fake.state();
        (state.batches.len(), state.submitted.clone())
    };
    assert_eq!(batches, 1);
    assert_eq!(
        fake.submitted_ids(),
        ["item-0-0", "item-1-0", "item-2-0", "item-3-0"]
    );
    // The create call announced its length, and it is the body's.
    assert_eq!(submitted.len(), 1);
    assert_eq!(Some(submitted[0].0), submitted[0].1);
    // Each line's request is exactly the body a live generateContent call sends.
    let live = client
        .transform("words: a", "Count the words", IntentOptions::<i64>::new())
        .await;
    assert_eq!(live.value, Some(1));
    let batched = fake.bodies(0)[0].clone();
    assert_eq!(fake.state().live[0], batched);
    assert!(batched.get("model").is_none(), "{batched}");
    assert!(
        batched["generationConfig"]["responseJsonSchema"].is_object(),
        "{batched}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn gemini_results_under_the_operations_response_are_read_too() {
    let fake = batch_support::gemini(
        answer(),
        Behaviour {
            reversed: true,
            results_in_response: true,
            ..Behaviour::default()
        },
    )
    .await;
    let client = gemini_client(&fake);
    let dir = dir("response");
    let results = client
        .batch(items(&[" a b", " a", " a b c"]), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(2), Some(1), Some(3)]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn gemini_results_in_a_responses_file_are_downloaded_and_read_by_key() {
    let fake = batch_support::gemini(
        answer(),
        Behaviour {
            reversed: true,
            results_in_file: true,
            ..Behaviour::default()
        },
    )
    .await;
    let client = gemini_client(&fake);
    let dir = dir("file");
    let results = client
        .batch(items(&[" a b", " a", " reject", " a b c"]), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(2), Some(1), None, Some(3)]);
    let message = &provider_words(&results[2].issues[0]);
    assert!(message.contains("this request is refused"), "{message}");
    assert_eq!(results[3].attempts[0].model, "gemini-test-2025");
    assert_eq!(fake.state().result_reads, 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn gemini_per_item_errors_are_issues_on_their_items_redacted_of_the_key() {
    let fake = batch_support::gemini(
        answer(),
        Behaviour {
            reversed: true,
            ..Behaviour::default()
        },
    )
    .await;
    let client = gemini_client(&fake);
    let dir = dir("item-errors");
    let results = client
        .batch(items(&[" a b", " reject me", " leak", " c"]), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(2), None, None, Some(1)]);
    let rejected = &results[1];
    assert_eq!(rejected.attempts.len(), 1);
    assert_eq!(rejected.issues[0].source, IssueSource::Provider);
    let message = &provider_words(&rejected.issues[0]);
    assert!(message.contains("this request is refused"), "{message}");
    assert!(rejected.issues[0].message.contains("400"), "{message}");
    let leaked = &provider_words(&results[2].issues[0]);
    assert!(
        leaked.contains("the key [redacted] in its body"),
        "{leaked}"
    );
    assert!(!leaked.contains(KEY), "{leaked}");
    let stored = stored(&dir);
    assert!(stored.contains("[redacted]"), "the error is stored");
    assert!(!stored.contains(KEY), "the key leaked into the job's state");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_failed_gemini_batch_fails_its_items_with_the_reason() {
    let fake = batch_support::gemini(
        answer(),
        Behaviour {
            fail: true,
            ..Behaviour::default()
        },
    )
    .await;
    let client = gemini_client(&fake);
    let dir = dir("failed");
    let results = client
        .batch(items(&[" a", " b", " c"]), options(&dir))
        .run()
        .await
        .unwrap();
    for result in &results {
        assert_eq!(result.value, None);
        let message = &provider_words(&result.issues[0]);
        assert!(message.contains("Request payload is invalid"), "{message}");
        assert!(message.contains("INVALID_ARGUMENT"), "{message}");
        assert!(!message.contains(KEY), "{message}");
    }
    assert_eq!(fake.state().batches.len(), 1);
    assert!(!stored(&dir).contains(KEY));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn gemini_verification_failures_are_retried_in_a_follow_up_batch() {
    let fake = batch_support::gemini(answer(), Behaviour::default()).await;
    let client = gemini_client(&fake);
    let dir = dir("retry");
    let results = client
        .batch(items(&[" a", " retry b c"]), options(&dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&results), [Some(1), Some(3)]);
    assert_eq!(results[1].attempts.len(), 2);
    assert_eq!(fake.state().batches.len(), 2);
    assert_eq!(fake.bodies(1).len(), 1);
    assert!(gemini_is_retry(&fake.bodies(1)[0]));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn gemini_cancel_cancels_the_batch_and_records_unfinished_items() {
    let release = Arc::new(AtomicBool::new(false));
    let fake = batch_support::gemini(
        answer(),
        Behaviour {
            hold: Some(release.clone()),
            answered_on_cancel: 1,
            ..Behaviour::default()
        },
    )
    .await;
    let client = gemini_client(&fake);
    let dir = dir("cancel");
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
    assert!(!release.load(Ordering::SeqCst));
    assert_eq!(values(&results), [Some(1), None, None]);
    assert_eq!(fake.state().canceled, ["gb1"]);
    for result in &results[1..] {
        assert!(
            result.issues[0].message.contains("canceled"),
            "{:?}",
            result.issues
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn gemini_job_stopped_between_creating_a_batch_and_recording_it_finds_it_by_its_display_name()
{
    let stall = Arc::new(AtomicBool::new(true));
    let fake = batch_support::gemini(
        answer(),
        Behaviour {
            stall_creates: Some(stall.clone()),
            ..Behaviour::default()
        },
    )
    .await;
    let client = gemini_client(&fake);
    let dir = dir("create-stop");
    let texts = [" a", " a b", " a b c"];
    // The creation reaches the provider, but the process stops before its reply.
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
    assert_eq!(fake.state().batches.len(), 1);
    stall.store(false, Ordering::SeqCst);
    // Another job's batch of the same size comes after it (on an earlier page of the
    // list, newest first): only the display name tells them apart.
    let other_dir = self::dir("create-stop-other");
    let other = client
        .batch(items(&[" x y z w", " x", " y"]), options(&other_dir))
        .run()
        .await
        .unwrap();
    assert_eq!(values(&other), [Some(4), Some(1), Some(1)]);
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
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&other_dir).unwrap();
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
