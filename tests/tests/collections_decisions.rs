//! A collection's decisions: several questions about each item in one request
//! (`Collection::decide`: answered by the real System One mock in one request per item, by
//! a log-probability client one question at a time, read back by id as the types they
//! were asked with, refused before sending when they cannot be asked); the client's
//! response cache asked first, before the rate limiter; items waiting for the rate
//! limiter hold no state yet; and a stream's items are read as slots free up.

mod provider_support;
mod test_servers;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use intent_rs::batch::BatchOptions;
use intent_rs::cache::{CacheKey, InMemoryCache, ResponseCache};
use intent_rs::collection::{Collection, CollectionError, Questions};
use intent_rs::decision::{
    DecisionClient, DecisionError, DecisionRequest, DecisionResponse, FailureKind,
    LogprobDecisionClient, ProbabilitySource, SystemOneClient,
};
use intent_rs::limits::RateLimiter;
use intent_rs::provider::ProviderReply;
use intent_rs::provider::{ProviderRequest, ScriptedProvider, ScriptedReply};
use intent_rs::{Binary, DecisionEnum, IntentClient, intents};
use serde::Serialize;
use test_servers::jevcompat::{JevMock, MOCK_KEY};

#[derive(Debug, Clone, Serialize)]
struct Ticket {
    n: usize,
    text: String,
}

fn tickets(count: usize) -> Vec<Ticket> {
    (0..count)
        .map(|n| Ticket {
            n,
            text: format!("ticket number {n}: I was charged twice and cannot log in"),
        })
        .collect()
}

/// Where a ticket goes.
#[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
enum Team {
    /// Payments, invoices and refunds.
    Billing,
    /// Something does not work.
    Support,
    /// Questions before buying.
    Sales,
}

/// How urgent a ticket is.
#[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
enum Urgency {
    Low,
    Medium,
    High,
}

/// Another enum, whose variants are not `Team`'s.
#[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
enum Mood {
    Calm,
    Angry,
    Confused,
}

fn triage() -> Questions {
    Questions::new()
        .binary("blocked", "Is the customer blocked from working?")
        .choice::<Team>("team", "Which team should handle the ticket?")
        .score::<Urgency>("urgency", "How urgent is the ticket?")
}

/// A decision client that counts the requests reaching the one it wraps, and the
/// questions in each.
#[derive(Debug, Clone)]
struct Counting<D> {
    inner: D,
    questions_per_request: Arc<Mutex<Vec<usize>>>,
}

#[async_trait::async_trait]
impl<D: DecisionClient> DecisionClient for Counting<D> {
    async fn decide(&self, request: &DecisionRequest) -> Result<DecisionResponse, DecisionError> {
        self.questions_per_request
            .lock()
            .unwrap()
            .push(request.questions().len());
        self.inner.decide(request).await
    }

    fn default_model(&self) -> Option<&str> {
        self.inner.default_model()
    }
}

#[tokio::test]
async fn a_decision_model_answers_every_question_about_an_item_in_one_request() {
    let Some(mock) = JevMock::start(&[]) else {
        return;
    };
    let counting = Counting {
        inner: SystemOneClient::compatible(&mock.url).with_api_key(MOCK_KEY),
        questions_per_request: Arc::default(),
    };
    let chat = ScriptedProvider::new(Vec::<String>::new());
    let client = IntentClient::builder()
        .provider(chat.clone())
        .decision_client(counting.clone())
        .build()
        .unwrap();

    let outcomes = Collection::new(&client)
        .concurrency(3)
        .decide(triage())
        .run(tickets(5))
        .await
        .unwrap();

    // One request per item, each holding the three questions; the chat model never asked.
    assert_eq!(*counting.questions_per_request.lock().unwrap(), [3; 5]);
    assert_eq!(chat.request_count(), 0);
    assert_eq!(outcomes.len(), 5);
    for outcome in &outcomes {
        let answers = outcome.value().expect("answered");
        let blocked = answers.binary("blocked").unwrap();
        assert!((0.0..=1.0).contains(&blocked.probability));
        assert_eq!(blocked.source, ProbabilitySource::DecisionModel);
        let team = answers.choice::<Team>("team").unwrap();
        assert_eq!(team.probabilities.len(), 3);
        let sum: f64 = team.probabilities.iter().map(|(_, p)| p).sum();
        assert!((sum - 1.0).abs() < 1e-9, "{sum}");
        let urgency = answers.score::<Urgency>("urgency").unwrap();
        assert!((0.0..=2.0).contains(&urgency.expected));
        assert_eq!(answers.response().model(), "jevcompat-mock-0.1");
        // The item's tokens are the one request's.
        assert_eq!(outcome.usage, answers.response().usage());
        assert!(outcome.usage.input_tokens > 0);
    }
}

/// Answers yes (0.9) to the yes/no question and `B` (Support) to the choice, by which
/// question the request asks.
fn by_question() -> ScriptedProvider {
    ScriptedProvider::from_fn(|request: &ProviderRequest, _| {
        let asked = format!("{}\n{}", request.system, request.user());
        if asked.contains("blocked from working") {
            ScriptedReply::logprobs([("yes", f64::ln(0.9)), ("no", f64::ln(0.1))])
        } else {
            ScriptedReply::logprobs([
                ("A", f64::ln(0.1)),
                ("B", f64::ln(0.8)),
                ("C", f64::ln(0.1)),
            ])
        }
    })
    .with_max_top_logprobs(Some(20))
}

#[tokio::test]
async fn a_log_probability_client_asks_the_questions_one_by_one_and_each_is_read_by_id() {
    let model = by_question();
    let client = IntentClient::builder()
        .provider(model.clone())
        .build()
        .unwrap();
    let questions = Questions::new()
        .binary("blocked", "Is the customer blocked from working?")
        .choice::<Team>("team", "Which team should handle the ticket?");

    let outcomes = Collection::new(&client)
        .decide(questions)
        .run(tickets(3))
        .await
        .unwrap();

    assert_eq!(model.request_count(), 6);
    for outcome in &outcomes {
        let answers = outcome.value().expect("answered");
        let blocked = answers.binary("blocked").unwrap();
        assert!((blocked.probability - 0.9).abs() < 1e-9, "{blocked:?}");
        assert_eq!(blocked.source, ProbabilitySource::LogProbabilities);
        assert_eq!(
            answers.choice::<Team>("team").unwrap().selected,
            Team::Support
        );
        assert_eq!(outcome.usage, answers.response().usage());
    }
}

#[tokio::test]
async fn answers_are_read_only_as_the_types_they_were_asked_with() {
    let model = by_question();
    let client = IntentClient::builder()
        .provider(model.clone())
        .build()
        .unwrap();
    let questions = Questions::new()
        .binary("blocked", "Is the customer blocked from working?")
        .choice::<Team>("team", "Which team should handle the ticket?");
    let outcomes = Collection::new(&client)
        .decide(questions)
        .run(tickets(1))
        .await
        .unwrap();
    let answers = outcomes[0].value().expect("answered");

    let as_binary = answers.binary("team").unwrap_err();
    assert_eq!(as_binary.kind(), FailureKind::InvalidResponse);
    assert!(
        as_binary
            .to_string()
            .contains("`team` is not a yes/no answer"),
        "{as_binary}"
    );
    let missing = answers.binary("refund").unwrap_err();
    assert!(
        missing.to_string().contains("no answer to `refund`")
            && missing.to_string().contains("`blocked`, `team`"),
        "{missing}"
    );
    let other_enum = answers.choice::<Mood>("team").unwrap_err();
    assert_eq!(other_enum.kind(), FailureKind::InvalidResponse);
    assert!(
        other_enum
            .to_string()
            .contains("`Billing` where the enum has `Calm`"),
        "{other_enum}"
    );
    let fewer = answers.score::<Urgency>("team").unwrap_err();
    assert!(fewer.to_string().contains("not a score answer"), "{fewer}");
}

#[tokio::test]
async fn questions_that_cannot_be_asked_are_refused_before_anything_is_sent() {
    let model = by_question();
    let client = IntentClient::builder()
        .provider(model.clone())
        .build()
        .unwrap();
    let collection = Collection::new(&client);
    let cases = [
        (Questions::new(), "question"),
        (
            Questions::new()
                .binary("blocked", "Is the customer blocked?")
                .binary("blocked", "Is the customer angry?"),
            "blocked",
        ),
        (
            Questions::new().binary("", "Is the customer blocked?"),
            "id",
        ),
    ];
    for (questions, named) in cases {
        let error = collection
            .decide(questions)
            .run(tickets(2))
            .await
            .expect_err("refused");
        assert!(
            matches!(
                error,
                CollectionError::Setting {
                    setting: "decide",
                    ..
                }
            ),
            "{error}"
        );
        assert!(error.to_string().contains(named), "{error}");
    }
    let blank_model = Collection::new(&client)
        .decision_model(" ")
        .decide(triage_two())
        .run(tickets(2))
        .await
        .expect_err("a blank model");
    assert!(
        matches!(
            blank_model,
            CollectionError::Setting {
                setting: "decision_model",
                ..
            }
        ),
        "{blank_model}"
    );
    // The same above a batch size: refused before an item is read or a job started.
    let batch_dir = std::env::temp_dir().join(format!(
        "intent-collections-refused-batch-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&batch_dir);
    let read = Arc::new(AtomicUsize::new(0));
    let items = {
        let read = read.clone();
        tickets(3).into_iter().inspect(move |_| {
            read.fetch_add(1, Ordering::SeqCst);
        })
    };
    let refused = Collection::new(&client)
        .batch_above(1, BatchOptions::new(&batch_dir))
        .decision_model("")
        .filter("Is the customer blocked?", 0.5)
        .run(items)
        .await
        .expect_err("a blank model");
    assert!(
        matches!(
            refused,
            CollectionError::Setting {
                setting: "decision_model",
                ..
            }
        ),
        "{refused}"
    );
    assert_eq!(read.load(Ordering::SeqCst), 0);
    assert!(!batch_dir.exists());
    assert_eq!(model.request_count(), 0);
}

#[tokio::test]
async fn a_rerun_with_a_journal_reads_every_answer_back() {
    let model = by_question();
    let client = IntentClient::builder()
        .provider(model.clone())
        .build()
        .unwrap();
    let journal = std::env::temp_dir().join(format!(
        "intent-collections-questions-{}/journal.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&journal);
    let collection = Collection::new(&client).journal(&journal);

    let first = collection
        .decide(triage_two())
        .run(tickets(4))
        .await
        .unwrap();
    assert_eq!(model.request_count(), 8);
    let second = collection
        .decide(triage_two())
        .run(tickets(4))
        .await
        .unwrap();
    assert_eq!(model.request_count(), 8, "nothing asked again");
    for (first, second) in first.iter().zip(&second) {
        assert!(second.from_journal);
        let (first, second) = (first.value().unwrap(), second.value().unwrap());
        assert_eq!(
            first.binary("blocked").unwrap(),
            second.binary("blocked").unwrap()
        );
        assert_eq!(
            first.choice::<Team>("team").unwrap().selected,
            second.choice::<Team>("team").unwrap().selected
        );
    }
    // Another question is another operation: asked again.
    let other = Questions::new().binary("blocked", "Is the customer blocked from working today?");
    collection.decide(other).run(tickets(4)).await.unwrap();
    assert_eq!(model.request_count(), 12);
    // So is another answerer: a provider whose default model differs, or a decision
    // client of the client's own, answering the same questions.
    let other_model = by_question().with_model("another-model");
    let other_client = IntentClient::builder()
        .provider(other_model.clone())
        .build()
        .unwrap();
    let again = Collection::new(&other_client)
        .journal(&journal)
        .decide(triage_two())
        .run(tickets(4))
        .await
        .unwrap();
    assert!(again.iter().all(|outcome| !outcome.from_journal));
    assert_eq!(other_model.request_count(), 8);
    let own_client = IntentClient::builder()
        .provider(model.clone())
        .decision_client(LogprobDecisionClient::new(model.clone()))
        .build()
        .unwrap();
    Collection::new(&own_client)
        .journal(&journal)
        .decide(triage_two())
        .run(tickets(4))
        .await
        .unwrap();
    assert_eq!(model.request_count(), 20);
    let _ = std::fs::remove_file(&journal);
}

fn triage_two() -> Questions {
    Questions::new()
        .binary("blocked", "Is the customer blocked from working?")
        .choice::<Team>("team", "Which team should handle the ticket?")
}

/// An item that counts the times it was turned into a decision's state (a JSON tree):
/// what an item holds while it waits.
struct Watched {
    states_built: Arc<AtomicUsize>,
}

impl Serialize for Watched {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // `serde_json::to_value`'s serializer builds the tree; the limiter's estimate
        // only counts the item's JSON text.
        if std::any::type_name::<S>().contains("value::") {
            self.states_built.fetch_add(1, Ordering::SeqCst);
        }
        serializer.serialize_str("a ticket")
    }
}

#[tokio::test]
async fn items_waiting_for_the_rate_limiter_hold_no_state_yet() {
    let model = by_question();
    // One request a minute, spent: every item waits.
    let limiter = RateLimiter::per_minute(1);
    limiter.acquire(0).await.unwrap();
    let client = IntentClient::builder()
        .provider(model.clone())
        .rate_limiter(limiter)
        .build()
        .unwrap();
    let states_built = Arc::new(AtomicUsize::new(0));
    let items: Vec<Watched> = (0..5)
        .map(|_| Watched {
            states_built: states_built.clone(),
        })
        .collect();
    let collection = Collection::new(&client).concurrency(5);
    let run = collection
        .filter("Is the customer blocked from working?", 0.5)
        .run(items);
    let waited = tokio::time::timeout(Duration::from_millis(300), run).await;

    assert!(waited.is_err(), "the items were to be waiting");
    assert_eq!(states_built.load(Ordering::SeqCst), 0);
    assert_eq!(model.request_count(), 0);
}

#[tokio::test]
async fn a_streams_items_are_read_as_slots_free_up_and_each_is_answered() {
    let model = ScriptedProvider::from_fn(|_: &ProviderRequest, _| {
        ScriptedReply::logprobs([("yes", f64::ln(0.7)), ("no", f64::ln(0.3))])
            .after(Duration::from_millis(20))
    })
    .with_max_top_logprobs(Some(20));
    let client = IntentClient::builder()
        .provider(model.clone())
        .build()
        .unwrap();
    let pulled = Arc::new(AtomicUsize::new(0));
    let items = futures_util::stream::unfold(0usize, {
        let pulled = pulled.clone();
        move |n| {
            let pulled = pulled.clone();
            async move {
                (n < 10).then(|| {
                    pulled.fetch_add(1, Ordering::SeqCst);
                    (
                        Ticket {
                            n,
                            text: format!("streamed ticket {n}"),
                        },
                        n + 1,
                    )
                })
            }
        }
    });
    let pulled_at_first_answer = Arc::new(Mutex::new(None));
    let reports = Arc::new(Mutex::new(Vec::new()));
    let collection = Collection::new(&client).concurrency(2).on_progress({
        let (pulled, at_first, reports) = (
            pulled.clone(),
            pulled_at_first_answer.clone(),
            reports.clone(),
        );
        move |progress| {
            at_first
                .lock()
                .unwrap()
                .get_or_insert(pulled.load(Ordering::SeqCst));
            reports.lock().unwrap().push(progress.total);
        }
    });

    let outcomes = collection
        .filter("Is the customer blocked?", 0.5)
        .run_stream(items)
        .await
        .unwrap();

    // Two in flight, and at most one more read ahead by the time the first is answered.
    let at_first = pulled_at_first_answer.lock().unwrap().expect("a report");
    assert!(
        at_first <= 3,
        "{at_first} items read before the first answer"
    );
    assert_eq!(pulled.load(Ordering::SeqCst), 10);
    assert_eq!(model.request_count(), 10);
    let indexes: Vec<usize> = outcomes.iter().map(|outcome| outcome.index).collect();
    assert_eq!(indexes, (0..10).collect::<Vec<_>>());
    assert!(
        outcomes
            .iter()
            .all(|outcome| outcome.value().is_some_and(|kept| kept.keep))
    );
    // A stream does not say its length.
    assert!(reports.lock().unwrap().iter().all(Option::is_none));
    assert_eq!(outcomes.progress().done, 10);
}

/// Answers yes (0.8) to every question.
fn yes_model() -> ScriptedProvider {
    ScriptedProvider::from_fn(|_: &ProviderRequest, _| {
        ScriptedReply::logprobs([("yes", f64::ln(0.8)), ("no", f64::ln(0.2))])
    })
    .with_max_top_logprobs(Some(20))
}

#[intents]
trait Desk {
    #[intent("Is the customer blocked from working?")]
    async fn blocked(&self, ticket: &str) -> Result<Binary, DecisionError>;
}

#[tokio::test]
async fn a_decision_asked_before_is_served_from_the_cache_without_a_request_or_a_wait() {
    let model = yes_model();
    // Five requests a minute: the first run spends them, and anything asked after it
    // would wait about twelve seconds.
    let client = IntentClient::builder()
        .provider(model.clone())
        .in_memory_cache(100)
        .rate_limiter(RateLimiter::per_minute(5))
        .build()
        .unwrap();
    let collection = Collection::new(&client);
    let question = "Is the customer blocked from working?";

    let first = collection
        .filter(question, 0.5)
        .run(tickets(5))
        .await
        .unwrap();
    assert_eq!(model.request_count(), 5);
    assert!(first.iter().all(|outcome| !outcome.from_cache));
    assert_eq!(first.progress().cached, 0);

    let second = tokio::time::timeout(
        Duration::from_secs(3),
        collection.filter(question, 0.5).run(tickets(5)),
    )
    .await
    .expect("served without waiting for the limiter")
    .unwrap();
    assert_eq!(model.request_count(), 5, "nothing asked again");
    assert_eq!(second.progress().cached, 5);
    assert_eq!(second.progress().in_flight, 0);
    for (first, second) in first.iter().zip(&second) {
        assert!(second.from_cache && !second.from_journal);
        assert_eq!(second.value(), first.value());
        assert_eq!(second.usage, intent_rs::result::Usage::default());
        assert_eq!(second.cost, intent_rs::CostTally::default());
    }

    // Another question about the same items is not the cached one.
    let fresh = IntentClient::builder()
        .provider(model.clone())
        .in_memory_cache(100)
        .build()
        .unwrap();
    let collection = Collection::new(&fresh);
    collection
        .filter(question, 0.5)
        .run(tickets(2))
        .await
        .unwrap();
    collection
        .filter("Is the customer angry?", 0.5)
        .run(tickets(2))
        .await
        .unwrap();
    assert_eq!(model.request_count(), 5 + 2 + 2);

    // The generated decision methods ask the same cache: the ticket as the state, the
    // method's question.
    let desk = DeskClient::new(fresh.clone());
    let once = desk.blocked("I cannot log in").await.unwrap();
    let again = desk.blocked("I cannot log in").await.unwrap();
    assert_eq!(once, again);
    assert_eq!(model.request_count(), 5 + 2 + 2 + 1);
}

/// A cache whose entries all come back unreadable, counting what it is asked to do.
#[derive(Debug)]
struct Garbled {
    inner: InMemoryCache,
    evicted: AtomicUsize,
}

#[async_trait::async_trait]
impl ResponseCache for Garbled {
    async fn get(&self, key: &CacheKey) -> Option<ProviderReply> {
        let mut reply = self.inner.get(key).await?;
        reply.text = r#"{"answers": [["blocked", {"kind": "binary", "probability": 7}]]}"#.into();
        Some(reply)
    }
    async fn put(&self, key: CacheKey, reply: ProviderReply) {
        self.inner.put(key, reply).await;
    }
    async fn remove(&self, key: &CacheKey) {
        self.evicted.fetch_add(1, Ordering::SeqCst);
        self.inner.remove(key).await;
    }
}

#[tokio::test]
async fn a_cached_decision_that_does_not_read_back_is_removed_and_asked_again() {
    let model = yes_model();
    let cache = Arc::new(Garbled {
        inner: InMemoryCache::new(100),
        evicted: AtomicUsize::new(0),
    });
    let client = IntentClient::builder()
        .provider(model.clone())
        .cache(SharedCache(cache.clone()))
        .build()
        .unwrap();
    let collection = Collection::new(&client);
    for _ in 0..2 {
        let outcomes = collection
            .filter("Is the customer blocked from working?", 0.5)
            .run(tickets(3))
            .await
            .unwrap();
        for outcome in &outcomes {
            assert!(!outcome.from_cache);
            let kept = outcome.value().expect("answered");
            assert!((kept.answer.probability - 0.8).abs() < 1e-9);
        }
    }
    // Every stored entry was met on the second run, unreadable, removed and replaced.
    assert_eq!(model.request_count(), 6);
    assert_eq!(cache.evicted.load(Ordering::SeqCst), 3);
}

/// A cache shared with the test, which keeps a handle on it.
#[derive(Debug)]
struct SharedCache(Arc<Garbled>);

#[async_trait::async_trait]
impl ResponseCache for SharedCache {
    async fn get(&self, key: &CacheKey) -> Option<ProviderReply> {
        self.0.get(key).await
    }
    async fn put(&self, key: CacheKey, reply: ProviderReply) {
        self.0.put(key, reply).await;
    }
    async fn remove(&self, key: &CacheKey) {
        self.0.remove(key).await;
    }
}
