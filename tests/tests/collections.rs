//! Intents over collections: a thousand items through a loopback server with faults, the
//! rate limit held, a run stopped in the middle and resumed from its journal, rankings,
//! orders, keys and costs.

mod provider_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::time::{Duration, Instant};

use intent_rs::collection::{Collection, CollectionError, Order, Outcome};
use intent_rs::decision::ProbabilitySource;
use intent_rs::limits::RateLimiter;
use intent_rs::provider::{OpenAi, ProviderRequest, ScriptedProvider, ScriptedReply};
use intent_rs::{AIResult, CostTally, DecisionEnum, FailureKind, IntentClient, IntentOptions};
use provider_support::SECRET_KEY;
use serde::Serialize;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

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

/// The item number a decision request is about, read from its state (`"n":17`).
fn item_number(user: &str) -> usize {
    let start = user.find("\"n\":").expect("the state's item number") + 4;
    user[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .expect("digits")
}

/// A Chat Completions reply of one token whose probability of yes is `yes`.
fn yes_completion(yes: f64) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": "yes", "refusal": null},
            "logprobs": {"content": [{
                "token": "yes", "logprob": yes.ln(), "bytes": null,
                "top_logprobs": [
                    {"token": "yes", "logprob": yes.ln(), "bytes": null},
                    {"token": "no", "logprob": (1.0 - yes).ln(), "bytes": null}
                ]
            }], "refusal": null},
            "finish_reason": "length"
        }],
        "usage": {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101}
    })
}

/// Every tenth item (those ending in 3) fails with a 503; the others are yes with a
/// probability that grows with the item number.
struct TenPercentFaults;

impl Respond for TenPercentFaults {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).expect("JSON body");
        let user = body["messages"][1]["content"].as_str().unwrap_or_default();
        let n = item_number(user);
        if n % 10 == 3 {
            ResponseTemplate::new(503).set_body_json(json!({"error": {"message": "overloaded"}}))
        } else {
            ResponseTemplate::new(200).set_body_json(yes_completion(probability_of(n)))
        }
    }
}

/// Item `n`'s probability of yes: distinct for every n below 1000, between 0.01 and 0.99.
fn probability_of(n: usize) -> f64 {
    0.01 + 0.98 * (n % 1000) as f64 / 1000.0
}

fn openai_client(server: &MockServer, limiter: Option<RateLimiter>) -> IntentClient {
    let provider = OpenAi::new(SECRET_KEY)
        .with_base_url(server.uri())
        .with_model("gpt-4o-mini");
    let builder = IntentClient::builder().provider(provider);
    match limiter {
        Some(limiter) => builder.rate_limiter(limiter),
        None => builder,
    }
    .build()
    .expect("client")
}

/// A rate limiter with `per_minute` requests a minute whose burst is spent: what it lets
/// through from now on is its steady rate.
async fn drained(per_minute: u32) -> RateLimiter {
    let limiter = RateLimiter::per_minute(per_minute);
    for _ in 0..per_minute {
        limiter.acquire(0).await.expect("a local limiter admits");
    }
    limiter
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_items_with_faults_are_each_answered_or_failed_at_the_rate_limit() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(TenPercentFaults)
        .mount(&server)
        .await;
    // 60,000 a minute is 1,000 a second: the thousand items take a second at the limit.
    let client = openai_client(&server, Some(drained(60_000).await));
    let started = Instant::now();
    let outcomes = Collection::new(&client)
        .concurrency(32)
        .filter("Is the ticket urgent?", 0.5)
        .key(|ticket: &Ticket| format!("T-{}", ticket.n))
        .run(tickets(1000))
        .await
        .expect("the run");
    let elapsed = started.elapsed();

    // One request per item, no retries: a decision is asked once.
    let requests = server.received_requests().await.expect("recorded").len();
    assert_eq!(requests, 1000);
    assert_eq!(outcomes.len(), 1000);
    // The limiter held: 1,000 requests at 1,000 a second cannot finish in much less than
    // a second (the first is admitted at once).
    assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");

    let mut failed = 0;
    for (position, outcome) in outcomes.iter().enumerate() {
        // Input order, by default, each outcome naming its input.
        assert_eq!(outcome.index, position);
        assert_eq!(outcome.key, format!("T-{position}"));
        if position % 10 == 3 {
            failed += 1;
            assert_eq!(
                outcome.failure_kind(),
                Some(FailureKind::Unavailable),
                "{position}"
            );
            let error = outcome.result.as_ref().expect_err("a fault");
            assert!(error.is_transient());
            assert_eq!(outcome.cost, CostTally::default());
        } else {
            let kept = outcome.value().expect("an answer");
            assert_eq!(kept.answer.source, ProbabilitySource::LogProbabilities);
            assert!((kept.answer.probability - probability_of(position)).abs() < 1e-6);
            assert_eq!(kept.keep, probability_of(position) >= 0.5);
            assert_eq!(outcome.usage.input_tokens, 100);
            assert!(outcome.cost().expect("priced") > intent_rs::Cost::ZERO);
        }
    }
    assert_eq!(failed, 100);
    assert_eq!(outcomes.failed().count(), 100);
    let progress = outcomes.progress();
    assert_eq!(
        (progress.done, progress.failed, progress.cached),
        (1000, 100, 0)
    );
    assert_eq!(progress.in_flight, 0);

    // The total is the sum of the items.
    let mut sum = CostTally::default();
    for outcome in &outcomes {
        sum += &outcome.cost;
    }
    assert_eq!(outcomes.cost_tally(), sum);
    assert_eq!(progress.cost, sum);
    assert_eq!(outcomes.cost().expect("priced"), sum.priced);
}

/// A model that answers yes to every binary question, after `delay`, counting requests.
fn yes_model(delay: Duration) -> ScriptedProvider {
    ScriptedProvider::from_fn(move |request: &ProviderRequest, _| {
        let n = item_number(request.user());
        let yes = probability_of(n);
        ScriptedReply::logprobs([("yes", yes.ln()), ("no", (1.0 - yes).ln())]).after(delay)
    })
    .with_max_top_logprobs(Some(20))
}

fn scripted_client(model: &ScriptedProvider) -> IntentClient {
    IntentClient::builder()
        .provider(model.clone())
        .build()
        .expect("client")
}

fn journal_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir()
        .join(format!(
            "intent-collections-{}-{}",
            std::process::id(),
            fastrand_like()
        ))
        .join(name)
}

/// A per-test suffix without another dependency.
fn fastrand_like() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos())
}

#[tokio::test]
async fn a_run_stopped_in_the_middle_is_resumed_paying_only_for_the_rest() {
    let model = yes_model(Duration::from_millis(2));
    let client = scripted_client(&model);
    let journal = journal_path("triage.jsonl");
    let stop = Arc::new(tokio::sync::Notify::new());
    let collection = {
        let stop = stop.clone();
        Collection::new(&client)
            .concurrency(4)
            .journal(&journal)
            .on_progress(move |progress| {
                if progress.done == 40 {
                    stop.notify_one();
                }
            })
    };
    let first = collection
        .filter("Is the ticket urgent?", 0.5)
        .key(|ticket: &Ticket| format!("T-{}", ticket.n))
        .run(tickets(100));
    // The crash: the run's future is dropped once 40 items are done.
    tokio::select! {
        _ = first => panic!("the run was to be stopped"),
        () = stop.notified() => {}
    }
    let first_requests = model.request_count();
    let journaled = std::fs::read_to_string(&journal)
        .expect("the journal")
        .lines()
        .count();
    assert!(journaled >= 40, "{journaled}");
    // The items in flight when it stopped were asked and not written.
    assert!(first_requests >= journaled && first_requests <= journaled + 4);

    let rerun = Collection::new(&client)
        .concurrency(4)
        .journal(&journal)
        .filter("Is the ticket urgent?", 0.5)
        .key(|ticket: &Ticket| format!("T-{}", ticket.n))
        .run(tickets(100))
        .await
        .expect("the rerun");
    let rerun_requests = model.request_count() - first_requests;
    assert_eq!(rerun_requests, 100 - journaled);
    assert_eq!(rerun.len(), 100);
    assert!(rerun.iter().all(|outcome| outcome.result.is_ok()));
    let from_journal = rerun.iter().filter(|o| o.from_journal).count();
    assert_eq!(from_journal, journaled);
    assert_eq!(rerun.progress().cached, journaled);
    // An item read back costs nothing: it was paid for by the first run.
    assert!(
        rerun
            .iter()
            .filter(|o| o.from_journal)
            .all(|o| o.cost == CostTally::default())
    );

    // A third run asks nothing; another threshold reads the same probabilities back.
    let third = Collection::new(&client)
        .journal(&journal)
        .filter("Is the ticket urgent?", 0.9)
        .key(|ticket: &Ticket| format!("T-{}", ticket.n))
        .run(tickets(100))
        .await
        .expect("the third run");
    assert_eq!(model.request_count(), first_requests + rerun_requests);
    for outcome in &third {
        let kept = outcome.value().expect("from the journal");
        assert_eq!(kept.keep, kept.answer.probability >= 0.9);
    }
    // Another question is another operation: the journal does not answer it.
    let other = Collection::new(&client)
        .journal(&journal)
        .filter("Is the ticket about billing?", 0.5)
        .key(|ticket: &Ticket| format!("T-{}", ticket.n))
        .run(tickets(3))
        .await
        .expect("another question");
    assert!(other.iter().all(|o| !o.from_journal));
    // An item edited since under the same key is asked again, not answered with the
    // answer the journal holds for what the key named before.
    let mut edited = tickets(3);
    edited[1].text = "the ticket's text was edited".to_owned();
    let before = model.request_count();
    let again = Collection::new(&client)
        .journal(&journal)
        .filter("Is the ticket urgent?", 0.5)
        .key(|ticket: &Ticket| format!("T-{}", ticket.n))
        .run(edited)
        .await
        .expect("the edited items");
    assert_eq!(model.request_count(), before + 1);
    let asked: Vec<bool> = again.iter().map(|o| o.from_journal).collect();
    assert_eq!(asked, [true, false, true]);
}

#[tokio::test]
async fn a_ranking_recovers_a_known_order() {
    let model = yes_model(Duration::ZERO);
    let client = scripted_client(&model);
    // Items given shuffled; their true order is by `n`, highest first.
    let mut items = tickets(50);
    items.reverse();
    items.swap(3, 40);
    items.swap(10, 20);
    let ranked = Collection::new(&client)
        .rank("Is the ticket urgent?")
        .key(|ticket: &Ticket| ticket.n.to_string())
        .run(items)
        .await
        .expect("the ranking");
    let order: Vec<String> = ranked.iter().map(|o| o.key.clone()).collect();
    let expected: Vec<String> = (0..50).rev().map(|n| n.to_string()).collect();
    assert_eq!(order, expected);
    // One request per item: scores, not pairwise comparisons.
    assert_eq!(model.request_count(), 50);
}

#[tokio::test]
async fn outcomes_come_in_input_order_or_as_completed() {
    // Item n answers after (10 - n) * 15 ms: the last item finishes first.
    let model = ScriptedProvider::from_fn(|request: &ProviderRequest, _| {
        let n = item_number(request.user());
        ScriptedReply::logprobs([("yes", 0.5f64.ln()), ("no", 0.5f64.ln())])
            .after(Duration::from_millis((10 - n as u64) * 15))
    })
    .with_max_top_logprobs(Some(20));
    let client = scripted_client(&model);
    let completed = Collection::new(&client)
        .concurrency(10)
        .order(Order::Completed)
        .filter("Is the ticket urgent?", 0.5)
        .run(tickets(10))
        .await
        .expect("run");
    let indices: Vec<usize> = completed.iter().map(|o| o.index).collect();
    assert_eq!(indices, (0..10).rev().collect::<Vec<_>>());

    let in_order = Collection::new(&client)
        .concurrency(10)
        .filter("Is the ticket urgent?", 0.5)
        .run(tickets(10))
        .await
        .expect("run");
    let indices: Vec<usize> = in_order.iter().map(|o| o.index).collect();
    assert_eq!(indices, (0..10).collect::<Vec<_>>());
    // Keys default to the index.
    assert_eq!(in_order.iter().nth(7).map(|o| o.key.as_str()), Some("7"));
}

#[derive(Debug, PartialEq, DecisionEnum)]
enum Team {
    Billing,
    Support,
    Sales,
}

#[tokio::test]
async fn classify_and_score_label_each_item() {
    // The options are offered as letters: billing tickets are A, the rest B.
    let model = ScriptedProvider::from_fn(|request: &ProviderRequest, _| {
        let n = item_number(request.user());
        let (a, b) = if n.is_multiple_of(2) {
            (0.9, 0.05)
        } else {
            (0.05, 0.9)
        };
        ScriptedReply::logprobs([("A", f64::ln(a)), ("B", f64::ln(b)), ("C", f64::ln(0.05))])
    })
    .with_max_top_logprobs(Some(20));
    let client = scripted_client(&model);
    let collection = Collection::new(&client);
    let teams = collection
        .classify::<Team, _>("Which team should handle the ticket?")
        .run(tickets(6))
        .await
        .expect("run");
    for outcome in &teams {
        let choice = outcome.value().expect("a choice");
        let expected = if outcome.index % 2 == 0 {
            Team::Billing
        } else {
            Team::Support
        };
        assert_eq!(choice.selected, expected);
    }
    let levels = collection
        .score::<Team, _>("How far along the funnel is it?")
        .run(tickets(2))
        .await
        .expect("run");
    assert_eq!(levels.len(), 2);
    assert_eq!(model.request_count(), 8);
}

#[tokio::test]
async fn a_map_keeps_typed_failures_and_costs() {
    // Even items answer a number; odd ones answer nothing usable, twice (both attempts).
    let model = ScriptedProvider::from_fn(|request: &ProviderRequest, _| {
        let n = item_number(request.user());
        if n.is_multiple_of(2) {
            ScriptedReply::text(format!(r#"{{"value": {}}}"#, n * 10))
        } else {
            ScriptedReply::text("no idea")
        }
    });
    let client = IntentClient::builder()
        .provider(model.clone())
        .max_attempts(2)
        .build()
        .expect("client");
    let calls = AtomicUsize::new(0);
    let outcomes = Collection::new(&client)
        .map("words", |ticket: Ticket| {
            calls.fetch_add(1, AtomicOrdering::Relaxed);
            let client = client.clone();
            async move {
                let result: AIResult<u32> = client
                    .transform(&ticket, "Count the words", IntentOptions::new())
                    .await;
                result
            }
        })
        .run(tickets(4))
        .await
        .expect("run");
    assert_eq!(calls.load(AtomicOrdering::Relaxed), 4);
    let values: Vec<Option<u32>> = outcomes.iter().map(|o| o.value().copied()).collect();
    assert_eq!(values, [Some(0), None, Some(20), None]);
    let failed: Vec<&Outcome<u32>> = outcomes.failed().collect();
    assert_eq!(failed.len(), 2);
    for outcome in failed {
        assert_eq!(
            outcome.failure_kind(),
            Some(FailureKind::VerificationExhausted)
        );
    }
    // Two items of one call and two of two attempts.
    assert_eq!(model.request_count(), 6);
}

#[tokio::test]
async fn settings_out_of_range_are_refused_before_anything_is_sent() {
    let model = yes_model(Duration::ZERO);
    let client = scripted_client(&model);
    let error = Collection::new(&client)
        .concurrency(0)
        .filter("Is the ticket urgent?", 0.5)
        .run(tickets(3))
        .await
        .expect_err("no concurrency");
    assert!(matches!(
        error,
        CollectionError::Setting {
            setting: "concurrency",
            ..
        }
    ));
    let error = Collection::new(&client)
        .filter("Is the ticket urgent?", 1.5)
        .run(tickets(3))
        .await
        .expect_err("not a probability");
    assert!(error.to_string().contains("between 0 and 1"), "{error}");
    assert_eq!(model.request_count(), 0);
}

#[tokio::test]
async fn the_rate_limiter_paces_decisions() {
    let model = yes_model(Duration::ZERO);
    // 1,200 a minute is 20 a second; with the burst spent, 21 requests take a second.
    let client = IntentClient::builder()
        .provider(model.clone())
        .rate_limiter(drained(1200).await)
        .build()
        .expect("client");
    let started = Instant::now();
    let outcomes = Collection::new(&client)
        .concurrency(21)
        .filter("Is the ticket urgent?", 0.5)
        .run(tickets(21))
        .await
        .expect("run");
    let elapsed = started.elapsed();
    assert_eq!(outcomes.len(), 21);
    assert_eq!(model.request_count(), 21);
    assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
}

#[tokio::test]
async fn progress_reports_every_item_and_the_time_left() {
    let model = yes_model(Duration::ZERO);
    let client = scripted_client(&model);
    let reports = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = reports.clone();
    Collection::new(&client)
        .concurrency(2)
        .on_progress(move |progress| seen.lock().expect("lock").push(progress.clone()))
        .filter("Is the ticket urgent?", 0.5)
        .run(tickets(5))
        .await
        .expect("run");
    let reports = reports.lock().expect("lock");
    assert_eq!(reports.len(), 5);
    for (number, report) in reports.iter().enumerate() {
        assert_eq!(report.done, number + 1);
        assert_eq!(report.total, Some(5));
        assert!(report.remaining.is_some());
        assert!(report.in_flight <= 2);
    }
    assert_eq!(reports[4].remaining, Some(Duration::ZERO));
}
