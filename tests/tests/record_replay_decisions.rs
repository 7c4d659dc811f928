//! Decisions recorded and replayed through a cassette: a decision model over its own API
//! (the System One client against the real jevcompat mock) recorded once, then replayed
//! with the mock stopped, through the DSL's decision methods and `decide`, with the
//! requests that reached the model counted; and two processes recording into one
//! cassette at once.

mod test_servers;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use intent_rs::decision::{
    BinaryAnswer, BinaryQuestion, ChoiceQuestion, DecisionAnswer, DecisionClient, DecisionError,
    DecisionQuestion, DecisionRequest, DecisionResponse, FailureKind, ProbabilitySource,
    ScoreQuestion, SystemOneClient,
};
use intent_rs::provider::{Cassette, CassetteMode, ScriptedProvider};
use intent_rs::{Binary, Choice, DecisionEnum, IntentClient, Score, Usage, intents};
use serde_json::{Value, json};
use test_servers::jevcompat::{JevMock, MOCK_KEY};

/// A fresh cassette path (no file yet) in the temporary folder.
fn cassette_path(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "intent-record-replay-decisions-{}-{n}-{name}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

/// A decision client that counts the requests that reach the one it wraps.
#[derive(Debug, Clone)]
struct Counting<D> {
    inner: D,
    asked: Arc<AtomicUsize>,
}

impl<D> Counting<D> {
    fn new(inner: D) -> Self {
        Self {
            inner,
            asked: Arc::default(),
        }
    }

    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl<D: DecisionClient> DecisionClient for Counting<D> {
    async fn decide(&self, request: &DecisionRequest) -> Result<DecisionResponse, DecisionError> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.inner.decide(request).await
    }

    fn default_model(&self) -> Option<&str> {
        self.inner.default_model()
    }
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

/// How urgent a ticket is, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
enum Urgency {
    /// Can wait.
    Low,
    /// This week.
    Medium,
    /// Today.
    High,
}

#[intents]
trait Desk {
    #[intent("Does the customer ask for a refund?")]
    async fn refund(&self, ticket: &str) -> Result<Binary, DecisionError>;

    #[intent("Which team should take the ticket?")]
    async fn team(&self, ticket: &str) -> Result<Choice<Team>, DecisionError>;

    #[intent("How urgent is the ticket?")]
    async fn urgency(&self, ticket: &str) -> Result<Score<Urgency>, DecisionError>;
}

const TICKET: &str = "I was charged twice for March; please refund one payment.";

fn mixed_request() -> DecisionRequest {
    DecisionRequest::new(
        json!({"message": TICKET, "channel": "email"}),
        [
            DecisionQuestion::from(
                BinaryQuestion::new("is_billing", "Is this about billing?").unwrap(),
            ),
            ChoiceQuestion::new(
                "team",
                "Which team should handle it?",
                [("Billing", "Payments and refunds"), ("Technical", "")],
            )
            .unwrap()
            .into(),
            ScoreQuestion::new("urgency", "How urgent is it?", ["Low", "High"])
                .unwrap()
                .into(),
        ],
    )
    .unwrap()
}

/// The typed answers of every way of asking, and the response of `decide`.
struct Asked {
    refund: Binary,
    team: Choice<Team>,
    urgency: Score<Urgency>,
    decided: DecisionResponse,
}

async fn ask_everything(decisions: impl DecisionClient + 'static) -> Asked {
    // The chat model has nothing to say: a decision that reached it would fail.
    let client = IntentClient::builder()
        .provider(ScriptedProvider::new(Vec::<String>::new()))
        .decision_client(decisions)
        .build()
        .unwrap();
    let decided = client.decide(&mixed_request()).await.unwrap();
    let desk = DeskClient::new(client);
    Asked {
        refund: desk.refund(TICKET).await.unwrap(),
        team: desk.team(TICKET).await.unwrap(),
        urgency: desk.urgency(TICKET).await.unwrap(),
        decided,
    }
}

#[tokio::test]
async fn system_one_decisions_recorded_against_the_mock_replay_with_the_mock_stopped() {
    let Some(mock) = JevMock::start(&[]) else {
        return;
    };
    let path = cassette_path("systemone");
    let live_model = Counting::new(SystemOneClient::compatible(&mock.url).with_api_key(MOCK_KEY));
    let recorder = Cassette::new(&path)
        .decision_client(live_model.clone())
        .unwrap();
    let live = ask_everything(recorder).await;
    assert_eq!(live_model.asked(), 4, "one request per decision");
    assert_eq!(live.decided.source(), ProbabilitySource::DecisionModel);
    assert_eq!(live.decided.request_id(), Some("req_mock"));
    assert!(!live.decided.replayed());

    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(!text.contains(MOCK_KEY), "no key in the cassette: {text}");
    assert!(!text.contains("req_mock"), "no request id in the cassette");
    for line in text.lines() {
        let exchange: Value = serde_json::from_str(line).unwrap();
        assert_eq!(exchange["kind"], "decide");
        assert_eq!(exchange["request"]["model"], "jev-latest");
    }

    // The mock stopped: its port refuses connections from now on.
    let url = mock.url.clone();
    drop(mock);
    let stopped = Counting::new(SystemOneClient::compatible(&url).with_api_key("replay"));
    let replayer = Cassette::new(&path)
        .mode(CassetteMode::ReplayOnly)
        .decision_client(stopped.clone())
        .unwrap();
    let replayed = ask_everything(replayer).await;
    assert_eq!(stopped.asked(), 0, "nothing reached the decision model");
    assert_eq!(replayed.refund, live.refund);
    assert_eq!(replayed.team, live.team);
    assert_eq!(replayed.urgency, live.urgency);
    assert_eq!(replayed.decided.answers(), live.decided.answers());
    assert_eq!(replayed.decided.usage(), live.decided.usage());
    assert_eq!(replayed.decided.model(), live.decided.model());
    assert!(replayed.decided.replayed());
    assert_eq!(replayed.decided.request_id(), None);

    // Live, the stopped mock is a transport failure: the replay above never tried it.
    let error = stopped.decide(&mixed_request()).await.unwrap_err();
    assert_eq!(error.kind(), FailureKind::Transport);
    assert_eq!(stopped.asked(), 1);

    // A decision the cassette does not hold fails naming the difference, unsent.
    let replayer = Cassette::new(&path)
        .mode(CassetteMode::ReplayOnly)
        .decision_client(stopped.clone())
        .unwrap();
    let other = DecisionRequest::new(
        json!({"message": "Where is my parcel?"}),
        [BinaryQuestion::new("is_billing", "Is this about billing?").unwrap()],
    )
    .unwrap();
    let error = replayer.decide(&other).await.unwrap_err();
    assert_eq!(error.kind(), FailureKind::NotSent);
    assert_eq!(
        stopped.asked(),
        1,
        "a miss in replay-only mode asks nothing"
    );
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(
        message.contains("the nearest recorded decision, exchange"),
        "{message}"
    );
    assert!(
        !message.contains("parcel"),
        "the state is not quoted: {message}"
    );
}

#[tokio::test]
async fn a_decision_model_changed_since_the_recording_is_not_replayed() {
    let Some(mock) = JevMock::start(&[]) else {
        return;
    };
    let path = cassette_path("model");
    let recorder = Cassette::new(&path)
        .decision_client(SystemOneClient::compatible(&mock.url).with_api_key(MOCK_KEY))
        .unwrap();
    recorder.decide(&mixed_request()).await.unwrap();
    drop(mock);

    let replayer = Cassette::new(&path)
        .mode(CassetteMode::ReplayOnly)
        .decision_client(
            SystemOneClient::compatible("http://127.0.0.1:9")
                .with_api_key("replay")
                .with_model("jev-next"),
        )
        .unwrap();
    let error = replayer.decide(&mixed_request()).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("model (recorded `jev-latest`, asked `jev-next`)"),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------------
// Two processes recording into one cassette

/// Set in a child process: the cassette it records into, and which writer it is.
const CHILD_CASSETTE: &str = "INTENT_TEST_CHILD_CASSETTE";
const CHILD_WRITER: &str = "INTENT_TEST_CHILD_WRITER";
const DECISIONS_PER_CHILD: usize = 25;

/// Answers every yes/no question 0.5 without a model.
#[derive(Debug)]
struct Even;

#[async_trait::async_trait]
impl DecisionClient for Even {
    async fn decide(&self, request: &DecisionRequest) -> Result<DecisionResponse, DecisionError> {
        DecisionResponse::new(
            request,
            vec![DecisionAnswer::Binary(BinaryAnswer::new(0.5)?)],
            Usage::default(),
            "even",
            ProbabilitySource::Stated,
        )
    }
}

/// The state of decision `n` of writer `writer`: large, so that each line takes several
/// writes' worth of bytes.
fn child_request(writer: &str, n: usize) -> DecisionRequest {
    let filler = "lorem ipsum ".repeat(10_000);
    DecisionRequest::new(
        json!({"writer": writer, "n": n, "notes": filler}),
        [BinaryQuestion::new("done", "Is it done?").unwrap()],
    )
    .unwrap()
}

/// The body of a child process (does nothing in a normal test run): records its
/// decisions into the cassette its parent named.
#[tokio::test]
async fn child_process_recording_into_a_shared_cassette() {
    let (Ok(path), Ok(writer)) = (std::env::var(CHILD_CASSETTE), std::env::var(CHILD_WRITER))
    else {
        return;
    };
    // Both children may find the file made by the other: RecordNew records what it
    // does not hold, and each child's requests are its own.
    let recorder = Cassette::new(&path)
        .mode(CassetteMode::RecordNew)
        .decision_client(Even)
        .unwrap();
    for n in 0..DECISIONS_PER_CHILD {
        let response = recorder.decide(&child_request(&writer, n)).await.unwrap();
        assert!(!response.replayed());
    }
}

fn spawn_child(path: &Path, writer: &str) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process_recording_into_a_shared_cassette",
            "--test-threads=1",
            "--quiet",
        ])
        .env(CHILD_CASSETTE, path)
        .env(CHILD_WRITER, writer)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

#[tokio::test]
async fn two_processes_recording_into_one_cassette_never_mix_their_lines() {
    let path = cassette_path("two-processes");
    let children = [spawn_child(&path, "a"), spawn_child(&path, "b")];
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a child process failed");
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 2 * DECISIONS_PER_CHILD);
    for line in text.lines() {
        let exchange: Value = serde_json::from_str(line).expect("each line one whole exchange");
        assert_eq!(exchange["kind"], "decide");
    }

    // Every decision of both writers replays.
    let replayer = Cassette::new(&path)
        .mode(CassetteMode::ReplayOnly)
        .decision_client(Even)
        .unwrap();
    for writer in ["a", "b"] {
        for n in 0..DECISIONS_PER_CHILD {
            let response = replayer.decide(&child_request(writer, n)).await.unwrap();
            assert!(response.replayed());
        }
    }
    assert_eq!(replayer.unserved(), 0);
}
