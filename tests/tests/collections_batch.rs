//! Collections above `batch_above`'s size, against a loopback OpenAI Batch API: one batch
//! job of exactly the items asked, typed outcomes in order at the batch price, the size
//! told from an iterator or a stream, a run dropped mid-job and resumed without a new
//! batch, a crash while the job's answers were journaled, maps with and without their
//! batch form, and decisions of the client's own decision client priced live.

mod batch_support;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use batch_support::{Answer, Behaviour, Fake, KEY, last_user};
use intent_rs::batch::{BatchError, BatchItem, BatchOptions};
use intent_rs::collection::{Collection, CollectionError, ItemError, Progress};
use intent_rs::decision::{
    BinaryAnswer, DecisionAnswer, DecisionClient, DecisionError, DecisionRequest, DecisionResponse,
    ProbabilitySource,
};
use intent_rs::pricing::{ModelPrice, TokenRates};
use intent_rs::provider::OpenAi;
use intent_rs::{
    AIResult, Cost, CostTally, FailureKind, IntentClient, IntentOptions, PriceTable, Usage,
};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
struct Ticket {
    n: usize,
    text: String,
}

fn tickets(count: usize) -> Vec<Ticket> {
    (0..count)
        .map(|n| Ticket {
            n,
            text: format!("ticket number {n}"),
        })
        .collect()
}

fn key(ticket: &Ticket) -> String {
    format!("T-{}", ticket.n)
}

/// The item number a request is about, read from its input (`"n":17`).
fn item_number(user: &str) -> usize {
    let start = user.find("\"n\":").expect("the item's number") + 4;
    user[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .expect("digits")
}

/// Item `n`'s probability of yes: distinct for every item, between 0.1 and 0.9.
fn probability_of(n: usize) -> f64 {
    0.1 + 0.05 * (n % 17) as f64
}

/// Whether item `n`'s decision request is refused (per item, inside the batch).
fn refused(n: usize) -> bool {
    n % 5 == 3
}

/// Yes/no questions (log-probabilities) answer with `probability_of`, but for the refused
/// items; intent calls answer ten times the item's number, but for item 5's.
fn answer() -> Answer {
    answering(true)
}

/// [`answer`], refusing no item when `refuse` is false (the fake's live route answers
/// every request).
fn answering(refuse: bool) -> Answer {
    Arc::new(move |body: &Value| {
        let n = item_number(&last_user(body));
        if body["logprobs"] == true {
            if refuse && refused(n) {
                return Err((400, "this request is refused".to_owned()));
            }
            let yes = probability_of(n);
            Ok(format!("yes={yes},no={}", 1.0 - yes))
        } else if refuse && n == 5 {
            Err((400, "this request is refused".to_owned()))
        } else {
            Ok(format!(r#"{{"value": {}}}"#, n * 10))
        }
    })
}

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "intent-collection-batch-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn options(dir: &Path) -> BatchOptions {
    BatchOptions::new(dir)
        .poll_interval(Duration::from_millis(5))
        .max_poll_interval(Duration::from_millis(20))
}

fn dollars(text: &str) -> Cost {
    text.parse().expect("dollars")
}

/// Every fake reply reads 20 tokens and writes 4: through the batch API at $1 in and $4
/// out per million, live at twice that.
const BATCHED: &str = "0.000036";
const LIVE: &str = "0.000072";

fn per_million(dollars: u64) -> Cost {
    Cost::from_pico_usd(dollars * 1_000_000)
}

fn prices(model: &str) -> PriceTable {
    let mut prices = PriceTable::empty();
    prices.insert(
        model,
        ModelPrice::new(TokenRates::new(per_million(2), per_million(8)))
            .with_batch(TokenRates::new(per_million(1), per_million(4))),
    );
    prices
}

/// A client of the fake, with the fake's model priced.
fn client(fake: &Fake) -> IntentClient {
    let provider = OpenAi::new(KEY)
        .with_base_url(format!("{}/v1", fake.server.uri()))
        .with_model("gpt-test");
    IntentClient::builder()
        .provider(provider)
        .price_table(prices("gpt-test-2025"))
        .build()
        .expect("client")
}

/// `run`'s result, or a failure when it takes too long (a job waiting for a batch the
/// fake holds back would otherwise wait for ever).
async fn within<F: Future>(run: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the run ends in time: it made no batch the fake holds back")
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |text| text.lines().count())
}

/// The collection's job files left in the batch directory.
fn job_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).map_or_else(
        |_| Vec::new(),
        |entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".json"))
                .collect()
        },
    )
}

#[tokio::test]
async fn a_filter_above_the_size_goes_out_as_one_batch_at_half_the_live_price() {
    let fake = batch_support::openai(
        answer(),
        Behaviour {
            reversed: true,
            looks: 1,
            ..Behaviour::default()
        },
    )
    .await;
    let client = client(&fake);
    let dir = dir("filter");
    let reports: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let seen = reports.clone();
    let outcomes = Collection::new(&client)
        .batch_above(10, options(&dir))
        .on_progress(move |progress| seen.lock().unwrap().push(progress.clone()))
        .filter("Is the ticket urgent?", 0.5)
        .key(key)
        .run(tickets(12))
        .await
        .expect("the run");

    // One batch of exactly the twelve requests; nothing live.
    assert_eq!(fake.state().batches.len(), 1);
    assert_eq!(fake.state().batches[0].1.len(), 12);
    assert!(fake.state().live.is_empty());
    assert_eq!(
        fake.submitted_ids().iter().collect::<HashSet<_>>().len(),
        12
    );

    assert_eq!(outcomes.len(), 12);
    for (position, outcome) in outcomes.iter().enumerate() {
        assert_eq!(outcome.index, position);
        assert_eq!(outcome.key, format!("T-{position}"));
        assert!(!outcome.from_journal);
        if refused(position) {
            assert!(
                matches!(outcome.result, Err(ItemError::Decision(_))),
                "{position}: {:?}",
                outcome.result
            );
            assert_eq!(outcome.cost, CostTally::default());
        } else {
            let kept = outcome.value().expect("an answer");
            assert_eq!(kept.answer.source, ProbabilitySource::LogProbabilities);
            assert!((kept.answer.probability - probability_of(position)).abs() < 1e-9);
            assert_eq!(kept.keep, probability_of(position) >= 0.5);
            assert_eq!(outcome.usage.input_tokens, 20);
            // At the batch rates.
            assert_eq!(outcome.cost(), Ok(dollars(BATCHED)), "{position}");
        }
    }
    let progress = outcomes.progress();
    assert_eq!(
        (
            progress.done,
            progress.failed,
            progress.cached,
            progress.in_flight
        ),
        (12, 2, 0, 0)
    );
    assert_eq!(progress.total, Some(12));
    assert_eq!(progress.cost, outcomes.cost_tally());
    assert_eq!(outcomes.cost(), Ok(dollars("0.00036")));
    // Reported while the job ran: items waiting in it, then every item done.
    {
        let reports = reports.lock().unwrap();
        assert!(reports.iter().any(|report| report.in_flight > 0));
        let last = reports.last().expect("reports");
        assert_eq!((last.done, last.failed), (12, 2));
    }

    // Under the size, the same question is asked live, at twice the price.
    let live = Collection::new(&client)
        .batch_above(10, options(&dir))
        .filter("Is the ticket urgent?", 0.5)
        .run(tickets(3))
        .await
        .expect("the live run");
    assert_eq!(fake.state().batches.len(), 1);
    assert_eq!(fake.state().live.len(), 3);
    for outcome in &live {
        assert_eq!(outcome.cost(), Ok(dollars(LIVE)));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn the_size_is_told_from_the_iterator_or_by_reading_one_item_past_it() {
    let fake = batch_support::openai(answering(false), Behaviour::default()).await;
    let client = client(&fake);
    let dir = dir("size");
    let collection = Collection::new(&client).batch_above(10, options(&dir));
    let urgent = "Is the ticket urgent?";

    // Exactly ten, by the iterator's size: live.
    let outcomes = collection
        .filter(urgent, 0.5)
        .run(tickets(10))
        .await
        .unwrap();
    assert_eq!(outcomes.len(), 10);
    assert_eq!(fake.state().live.len(), 10);
    // A stream of ten is read to its end: live, and its total is known then.
    let outcomes = collection
        .filter(urgent, 0.5)
        .run_stream(futures_util::stream::iter(tickets(10)))
        .await
        .unwrap();
    assert_eq!(outcomes.progress().total, Some(10));
    assert_eq!(fake.state().live.len(), 20);
    assert!(fake.state().batches.is_empty());

    // Eleven through an iterator with no exact size: one batch of eleven.
    let outcomes = collection
        .filter(urgent, 0.5)
        .run(tickets(11).into_iter().filter(|_| true))
        .await
        .unwrap();
    let indices: Vec<usize> = outcomes.iter().map(|o| o.index).collect();
    assert_eq!(indices, (0..11).collect::<Vec<_>>());
    assert_eq!(fake.state().batches.len(), 1);
    assert_eq!(fake.state().batches[0].1.len(), 11);
    // Eleven through a stream (another question): the items read to tell go first.
    let outcomes = collection
        .filter("Is the customer blocked?", 0.5)
        .run_stream(futures_util::stream::iter(tickets(11)))
        .await
        .unwrap();
    assert_eq!(fake.state().batches.len(), 2);
    assert_eq!(fake.state().batches[1].1.len(), 11);
    for (position, outcome) in outcomes.iter().enumerate() {
        assert_eq!(outcome.index, position);
        let kept = outcome.value().expect("an answer");
        assert!((kept.answer.probability - probability_of(position)).abs() < 1e-9);
    }
    assert_eq!(fake.state().live.len(), 20);
    // Without a journal the job's directory is the store: the same run again reads every
    // answer back from it.
    let again = collection
        .filter(urgent, 0.5)
        .run(tickets(11).into_iter().filter(|_| true))
        .await
        .unwrap();
    assert_eq!(again.len(), 11);
    assert_eq!(fake.state().batches.len(), 2);
    assert_eq!(fake.state().live.len(), 20);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_run_dropped_after_its_batch_was_created_resumes_without_a_new_batch() {
    let release = Arc::new(AtomicBool::new(false));
    let fake = batch_support::openai(
        answer(),
        Behaviour {
            hold: Some(release.clone()),
            ..Behaviour::default()
        },
    )
    .await;
    let client = client(&fake);
    let dir = dir("dropped");
    let journal = dir.join("journal.jsonl");
    let run = |client: IntentClient, dir: PathBuf, journal: PathBuf| async move {
        Collection::new(&client)
            .batch_above(10, options(&dir))
            .journal(&journal)
            .filter("Is the ticket urgent?", 0.5)
            .key(key)
            .run(tickets(12))
            .await
    };
    // The process stops while the batch runs at the provider.
    let first = tokio::spawn(run(client.clone(), dir.clone(), journal.clone()));
    for _ in 0..1000 {
        if !fake.state().batches.is_empty() && fake.state().polls > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());
    assert_eq!(fake.state().batches.len(), 1);
    assert_eq!(lines(&journal), 0);

    // Other items while that job is pending are refused, and nothing is sent.
    let uploads = fake.state().uploads;
    let error = within(
        Collection::new(&client)
            .batch_above(10, options(&dir))
            .journal(&journal)
            .filter("Is the ticket urgent?", 0.5)
            .key(|ticket: &Ticket| format!("other-{}", ticket.n))
            .run(tickets(12)),
    )
    .await
    .expect_err("another job's directory");
    assert!(
        matches!(error, CollectionError::Batch(BatchError::OtherJob { .. })),
        "{error}"
    );
    assert!(error.to_string().contains("`T-0`"), "{error}");
    assert_eq!(fake.state().uploads, uploads);

    // Run again: the batch is polled, not submitted again.
    release.store(true, Ordering::SeqCst);
    let outcomes = within(run(client.clone(), dir.clone(), journal.clone()))
        .await
        .expect("the rerun");
    assert_eq!(outcomes.len(), 12);
    assert_eq!(outcomes.failed().count(), 2);
    assert_eq!(fake.state().batches.len(), 1);
    let ids = fake.submitted_ids();
    assert_eq!(ids.len(), 12);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 12);
    assert!(fake.state().live.is_empty());
    // The answers are journaled, and the spent job's file is gone.
    assert_eq!(lines(&journal), 10);
    assert!(job_files(&dir).is_empty(), "{:?}", job_files(&dir));

    // A third run reads the ten answers back and asks the two failed items again, in a
    // new job (the same size is counted over every item).
    let third = within(run(client.clone(), dir.clone(), journal.clone()))
        .await
        .expect("the third run");
    assert_eq!(third.progress().cached, 10);
    assert_eq!(fake.state().batches.len(), 2);
    let retried: Vec<usize> = fake
        .bodies(1)
        .iter()
        .map(|body| item_number(&last_user(body)))
        .collect();
    assert_eq!(retried, [3, 8]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Journal lines the test's "disk" takes before it is full.
static JOURNAL_WRITES_LEFT: AtomicUsize = AtomicUsize::new(usize::MAX);

/// A map's answer whose journal line fails to be written once the "disk" is full.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
struct Words(u32);

impl Serialize for Words {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let left = JOURNAL_WRITES_LEFT.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
            left.checked_sub(1)
        });
        if left.is_err() {
            return Err(serde::ser::Error::custom("no space left on the device"));
        }
        serializer.serialize_u32(self.0)
    }
}

/// The live call of the `words` map.
fn words_live(
    client: &IntentClient,
) -> impl Fn(Ticket) -> std::pin::Pin<Box<dyn Future<Output = AIResult<Words>> + Send>> + Send + Sync
{
    let client = client.clone();
    move |ticket: Ticket| {
        let client = client.clone();
        Box::pin(async move {
            client
                .transform(&ticket, "Count the words", IntentOptions::new())
                .await
        })
    }
}

/// The batch form of the same call.
fn words_batch(ticket: Ticket) -> BatchItem<Words> {
    BatchItem::transform(&ticket, "Count the words", IntentOptions::new())
}

#[tokio::test]
async fn a_crash_while_the_jobs_answers_were_journaled_resumes_that_job_for_free() {
    let fake = batch_support::openai(answering(false), Behaviour::default()).await;
    let client = client(&fake);
    let dir = dir("journal-window");
    let journal = dir.join("journal.jsonl");
    let run = || {
        Collection::new(&client)
            .batch_above(5, options(&dir))
            .journal(&journal)
    };
    // The job finishes; the disk fills up after three of its eight answers are written.
    JOURNAL_WRITES_LEFT.store(3, Ordering::SeqCst);
    let collection = run();
    let error = collection
        .map("words", words_live(&client))
        .batch_item(words_batch)
        .key(key)
        .run(tickets(8))
        .await
        .expect_err("the journal's disk is full");
    assert!(matches!(error, CollectionError::Journal { .. }), "{error}");
    assert_eq!(lines(&journal), 3);
    assert_eq!(fake.state().batches.len(), 1);
    assert_eq!(fake.state().batches[0].1.len(), 8);
    JOURNAL_WRITES_LEFT.store(usize::MAX, Ordering::SeqCst);

    // The rerun resumes that job with its eight items (five are not journaled): its
    // directory answers them, nothing is sent, and it is not another job.
    let uploads = fake.state().uploads;
    let collection = run();
    let outcomes = collection
        .map("words", words_live(&client))
        .batch_item(words_batch)
        .key(key)
        .run(tickets(8))
        .await
        .expect("the rerun");
    let values: Vec<Option<u32>> = outcomes.iter().map(|o| o.value().map(|w| w.0)).collect();
    assert_eq!(values, (0..8).map(|n| Some(n * 10)).collect::<Vec<_>>());
    let from_journal: Vec<bool> = outcomes.iter().map(|o| o.from_journal).collect();
    assert_eq!(
        from_journal,
        [true, true, true, false, false, false, false, false]
    );
    assert_eq!(outcomes.progress().cached, 3);
    assert_eq!(fake.state().batches.len(), 1);
    assert_eq!(fake.state().uploads, uploads);
    assert!(fake.state().live.is_empty());
    assert_eq!(lines(&journal), 8);
    assert!(job_files(&dir).is_empty(), "{:?}", job_files(&dir));

    // Every answer is journaled now: a third run sends nothing.
    let collection = run();
    let third = collection
        .map("words", words_live(&client))
        .batch_item(words_batch)
        .key(key)
        .run(tickets(8))
        .await
        .expect("the third run");
    assert!(third.iter().all(|o| o.from_journal));
    assert_eq!(fake.state().batches.len(), 1);
    assert_eq!(fake.state().uploads, uploads);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_map_goes_through_the_job_by_its_batch_form_and_one_without_is_refused() {
    let fake = batch_support::openai(answer(), Behaviour::default()).await;
    let client = client(&fake);
    let dir = dir("map");
    let collection = Collection::new(&client).batch_above(5, options(&dir));
    let outcomes = collection
        .map("words", words_live(&client))
        .batch_item(words_batch)
        .run(tickets(6))
        .await
        .expect("the run");
    let values: Vec<Option<u32>> = outcomes.iter().map(|o| o.value().map(|w| w.0)).collect();
    assert_eq!(
        values,
        [Some(0), Some(10), Some(20), Some(30), Some(40), None]
    );
    assert_eq!(fake.state().batches.len(), 1);
    assert_eq!(fake.state().batches[0].1.len(), 6);
    assert!(fake.state().live.is_empty());
    for outcome in outcomes.iter().take(5) {
        // From the call's record: one attempt through the batch API.
        assert_eq!(outcome.cost(), Ok(dollars(BATCHED)));
        assert_eq!(outcome.usage.output_tokens, 4);
    }
    // The item the batch refused keeps the call's typed failure, from its issues.
    let refused = outcomes.iter().nth(5).expect("item 5");
    match &refused.result {
        Err(ItemError::Intent(error)) => assert_eq!(error.kind(), FailureKind::InvalidRequest),
        other => panic!("{other:?}"),
    }

    // Without its batch form, a map above the size is refused before anything is sent.
    let requests = fake.server.received_requests().await.unwrap().len();
    let called = Arc::new(AtomicUsize::new(0));
    let counted = called.clone();
    let error = collection
        .map("words", move |ticket: Ticket| {
            counted.fetch_add(1, Ordering::SeqCst);
            words_live(&client)(ticket)
        })
        .run(tickets(6))
        .await
        .expect_err("no batch form");
    assert!(
        matches!(
            error,
            CollectionError::Setting {
                setting: "batch_above",
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains(".batch_item("), "{error}");
    assert_eq!(called.load(Ordering::SeqCst), 0);
    assert_eq!(
        fake.server.received_requests().await.unwrap().len(),
        requests
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A decision client of the client's own (as System One is), answering every question
/// yes at 0.7 with 10 tokens in and 1 out, counting the questions.
#[derive(Debug)]
struct OwnDecisions(Arc<AtomicUsize>);

#[async_trait::async_trait]
impl DecisionClient for OwnDecisions {
    async fn decide(&self, request: &DecisionRequest) -> Result<DecisionResponse, DecisionError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        DecisionResponse::new(
            request,
            vec![DecisionAnswer::Binary(BinaryAnswer::new(0.7).unwrap())],
            Usage {
                input_tokens: 10,
                output_tokens: 1,
                ..Usage::default()
            },
            "own-decider",
            ProbabilitySource::DecisionModel,
        )
    }
}

#[tokio::test]
async fn decisions_of_the_clients_own_decision_client_are_priced_live_inside_a_job() {
    let fake = batch_support::openai(answer(), Behaviour::default()).await;
    let asked = Arc::new(AtomicUsize::new(0));
    let provider = OpenAi::new(KEY)
        .with_base_url(format!("{}/v1", fake.server.uri()))
        .with_model("gpt-test");
    let client = IntentClient::builder()
        .provider(provider)
        .decision_client(OwnDecisions(asked.clone()))
        .price_table(prices("own-decider"))
        .build()
        .unwrap();
    let dir = dir("own-decisions");
    let outcomes = Collection::new(&client)
        .batch_above(2, options(&dir))
        .filter("Is the ticket urgent?", 0.5)
        .run(tickets(4))
        .await
        .expect("the run");
    // The job asks the client's own decision client, live: no batch is made.
    assert_eq!(asked.load(Ordering::SeqCst), 4);
    assert!(fake.state().batches.is_empty());
    // So each answer costs the live price: 10 × $2/M + 1 × $8/M, not half of it.
    for outcome in &outcomes {
        assert_eq!(outcome.value().map(|kept| kept.keep), Some(true));
        assert_eq!(outcome.cost(), Ok(dollars("0.000028")));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_provider_without_a_batch_api_fails_the_run_with_the_jobs_error() {
    let provider = intent_rs::provider::OpenAiCompatible::new("http://127.0.0.1:9", "m");
    let client = IntentClient::builder().provider(provider).build().unwrap();
    let dir = dir("no-batch-api");
    let error = Collection::new(&client)
        .batch_above(1, options(&dir))
        .filter("Is the ticket urgent?", 0.5)
        .run(tickets(2))
        .await
        .expect_err("no batch API");
    assert!(
        matches!(error, CollectionError::Batch(BatchError::NoBatchApi { .. })),
        "{error}"
    );
    assert!(error.to_string().contains("has no batch API"), "{error}");
    assert!(std::error::Error::source(&error).is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn several_questions_about_an_item_wait_for_the_same_batch_together() {
    // A log-probability client asks an item's questions at once, one request each: the
    // item waits only once both wait, and the job counts it so (it used to count the item
    // as waiting twice, and the count ran below zero).
    let fake = batch_support::openai(answering(false), Behaviour::default()).await;
    let client = client(&fake);
    let dir = dir("questions");
    let questions = intent_rs::collection::Questions::new()
        .binary("urgent", "Is the ticket urgent?")
        .binary("angry", "Is the customer angry?");
    let outcomes = within(
        Collection::new(&client)
            .batch_above(2, options(&dir))
            .decide(questions)
            .key(key)
            .run(tickets(4)),
    )
    .await
    .expect("the run");

    assert_eq!(fake.state().batches.len(), 1);
    assert_eq!(fake.state().batches[0].1.len(), 8);
    assert!(fake.state().live.is_empty());
    for (n, outcome) in outcomes.iter().enumerate() {
        let answers = outcome.value().expect("answered");
        for id in ["urgent", "angry"] {
            let yes = answers.binary(id).expect("a yes/no answer").probability;
            assert!((yes - probability_of(n)).abs() < 1e-9, "{n} {id}: {yes}");
        }
        let twice = dollars(BATCHED) + dollars(BATCHED);
        assert_eq!(outcome.cost.total().expect("priced"), twice);
    }
}
