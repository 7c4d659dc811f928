use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use super::*;
use crate::decision::{
    BinaryAnswer, BinaryQuestion, ChoiceAnswer, ChoiceQuestion, DecisionAnswer, DecisionQuestion,
    ProbabilitySource, ScoreAnswer, ScoreQuestion,
};
use crate::provider::{
    CassetteMode, Provider, ProviderError, ProviderErrorKind, ProviderRequest, ScriptedProvider,
};
use crate::result::Usage;

/// A fresh path in the temporary folder (no file yet).
fn cassette_path(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "intent-decision-cassette-unit-{}-{n}-{name}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(future)
}

const STATE_SECRET: &str = "hunter2-state-password";

fn request(ticket: &str) -> DecisionRequest {
    DecisionRequest::new(
        json!({"ticket": ticket, "password": STATE_SECRET}),
        [
            DecisionQuestion::from(BinaryQuestion::new("refund", "Is a refund asked?").unwrap()),
            ChoiceQuestion::new("team", "Which team?", ["billing", "tech", "sales"])
                .unwrap()
                .into(),
            ScoreQuestion::new("urgency", "How urgent?", ["low", "mid", "high"])
                .unwrap()
                .into(),
        ],
    )
    .unwrap()
}

/// A decision client answering every request the same way (or failing), counting the
/// requests that reach it.
#[derive(Debug, Default)]
struct Counted {
    asked: AtomicUsize,
    fail: bool,
}

#[async_trait::async_trait]
impl DecisionClient for Counted {
    async fn decide(&self, request: &DecisionRequest) -> Result<DecisionResponse, DecisionError> {
        let n = self.asked.fetch_add(1, Ordering::SeqCst) + 1;
        if self.fail {
            let error = ProviderError::new(
                ProviderErrorKind::RateLimited,
                "fake",
                format!("slow down; you sent {STATE_SECRET}"),
            )
            .with_status(429);
            return Err(DecisionError::from_provider(&error));
        }
        let named = |names: &[(&str, f64)]| -> Vec<(String, f64)> {
            names.iter().map(|(n, p)| ((*n).to_owned(), *p)).collect()
        };
        let answers = vec![
            DecisionAnswer::Binary(BinaryAnswer::new(0.8).unwrap()),
            DecisionAnswer::Choice(
                ChoiceAnswer::most_likely(named(&[
                    ("billing", 0.7),
                    ("tech", 0.2),
                    ("sales", 0.1),
                ]))
                .unwrap()
                .with_confidence(0.6)
                .unwrap(),
            ),
            DecisionAnswer::Score(
                ScoreAnswer::new(named(&[("low", 0.1), ("mid", 0.3), ("high", 0.6)])).unwrap(),
            ),
        ];
        let usage = Usage {
            input_tokens: 40,
            output_tokens: 3,
            ..Usage::default()
        };
        Ok(DecisionResponse::new(
            request,
            answers,
            usage,
            "fake-model",
            ProbabilitySource::DecisionModel,
        )?
        .with_request_id(format!("req-{n}")))
    }

    fn default_model(&self) -> Option<&str> {
        Some("fake-model")
    }
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn a_decision_is_recorded_then_replayed_marked_and_without_asking_the_client() {
    let path = cassette_path("basic");
    block_on(async {
        let recorder = Cassette::new(&path)
            .sanitizer(Sanitizer::new().secret(STATE_SECRET))
            .decision_client(Counted::default())
            .unwrap();
        let live = recorder.decide(&request("Charged twice")).await.unwrap();
        assert!(!live.replayed());
        assert_eq!(live.request_id(), Some("req-1"));
        assert_eq!(recorder.inner.asked.load(Ordering::SeqCst), 1);

        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(STATE_SECRET), "{text}");
        assert!(
            !text.contains("req-1"),
            "the host's request id is not kept: {text}"
        );
        let exchange = &lines(&path)[0];
        assert_eq!(exchange["kind"], "decide");
        assert_eq!(exchange["request"]["model"], "fake-model");
        assert_eq!(exchange["request"]["state"]["password"], "[redacted]");

        let replayer = Cassette::new(&path)
            .mode(CassetteMode::ReplayOnly)
            .sanitizer(Sanitizer::new().secret(STATE_SECRET))
            .decision_client(Counted::default())
            .unwrap();
        assert_eq!(replayer.unserved(), 1);
        let again = replayer.decide(&request("Charged twice")).await.unwrap();
        assert_eq!(replayer.inner.asked.load(Ordering::SeqCst), 0);
        assert!(again.replayed());
        assert_eq!(again.request_id(), None);
        assert_eq!(again.answers(), live.answers());
        assert_eq!(again.usage(), live.usage());
        assert_eq!(again.model(), "fake-model");
        assert_eq!(again.choice("team").unwrap().confidence(), Some(0.6));
        assert_eq!(replayer.unserved(), 0);
    });
}

#[test]
fn replay_only_with_a_missing_decision_names_what_differs_and_asks_nothing() {
    let path = cassette_path("missing");
    block_on(async {
        let recorder = Cassette::new(&path)
            .decision_client(Counted::default())
            .unwrap();
        recorder.decide(&request("Charged twice")).await.unwrap();

        let replayer = Cassette::new(&path)
            .mode(CassetteMode::ReplayOnly)
            .decision_client(Counted::default())
            .unwrap();
        let error = replayer
            .decide(&request("Charged three times").with_model("other-model"))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), FailureKind::NotSent);
        assert!(!error.is_transient());
        assert_eq!(replayer.inner.asked.load(Ordering::SeqCst), 0);
        let message = error.to_string();
        for expected in [
            "has no exchange left for this decision request",
            "the nearest recorded decision, exchange 1 (line 1 of",
            "model (recorded `fake-model`, asked `other-model`)",
            "state (first difference at `/ticket`)",
            &path.display().to_string(),
        ] {
            assert!(message.contains(expected), "{expected:?} in {message}");
        }
        assert!(
            !message.contains("Charged"),
            "the state is not quoted: {message}"
        );

        // The recorded one is served once; asked again, the message says so.
        replayer.decide(&request("Charged twice")).await.unwrap();
        let again = replayer
            .decide(&request("Charged twice"))
            .await
            .unwrap_err();
        assert!(
            again
                .to_string()
                .contains("recorded 1 time(s) (exchange(s) 1) and each was served already"),
            "{again}"
        );
    });
}

#[test]
fn record_new_replays_what_is_recorded_and_records_the_rest() {
    let path = cassette_path("record-new");
    block_on(async {
        let first = Cassette::new(&path)
            .decision_client(Counted::default())
            .unwrap();
        first.decide(&request("one")).await.unwrap();
        let more = Cassette::new(&path)
            .mode(CassetteMode::RecordNew)
            .decision_client(Counted::default())
            .unwrap();
        assert!(more.decide(&request("one")).await.unwrap().replayed());
        assert!(!more.decide(&request("two")).await.unwrap().replayed());
        assert_eq!(more.inner.asked.load(Ordering::SeqCst), 1);
        assert_eq!(lines(&path).len(), 2);
        // Record mode on an existing cassette replays only.
        let record = Cassette::new(&path)
            .decision_client(Counted::default())
            .unwrap();
        assert!(record.decide(&request("two")).await.unwrap().replayed());
        assert_eq!(record.inner.asked.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn a_failed_decision_is_recorded_and_replayed_without_the_secret() {
    let path = cassette_path("failure");
    block_on(async {
        let failing = Counted {
            fail: true,
            ..Counted::default()
        };
        let recorder = Cassette::new(&path)
            .sanitizer(Sanitizer::new().secret(STATE_SECRET))
            .decision_client(failing)
            .unwrap();
        let live = recorder.decide(&request("x")).await.unwrap_err();
        assert!(
            !std::fs::read_to_string(&path)
                .unwrap()
                .contains(STATE_SECRET)
        );

        let replayer = Cassette::new(&path)
            .mode(CassetteMode::ReplayOnly)
            .sanitizer(Sanitizer::new().secret(STATE_SECRET))
            .decision_client(Counted::default())
            .unwrap();
        let again = replayer.decide(&request("x")).await.unwrap_err();
        assert_eq!(again.kind(), FailureKind::RateLimited);
        assert_eq!(again.status(), Some(429));
        assert!(again.is_transient());
        assert_eq!(again.to_string(), live.to_string());
        assert_eq!(
            again.provider_message(),
            Some("slow down; you sent [redacted]")
        );
        assert_eq!(replayer.inner.asked.load(Ordering::SeqCst), 0);
    });
}

/// Records one decision and returns the cassette's only line, for a test to tamper with.
fn recorded_line(path: &Path) -> Value {
    block_on(async {
        Cassette::new(path)
            .decision_client(Counted::default())
            .unwrap()
            .decide(&request("Charged twice"))
            .await
            .unwrap();
    });
    lines(path).remove(0)
}

fn malformed(path: &Path, line: &Value) -> String {
    // A line before it, of another kind, so the exchange is not on line 1.
    let other = json!({"kind": "complete", "fingerprint": "x", "provider": "p",
        "request": {"model": "m", "system": "", "messages": [], "response_format": "text"},
        "reply": {"text": "t"}});
    std::fs::write(path, format!("{other}\n{line}\n")).unwrap();
    let error = Cassette::new(path)
        .mode(CassetteMode::ReplayOnly)
        .decision_client(Counted::default())
        .unwrap_err();
    assert!(
        matches!(error, CassetteError::Malformed { line: 2, .. }),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.contains(&format!("line 2 of the cassette {}", path.display())),
        "{message}"
    );
    message
}

#[test]
fn a_tampered_response_is_an_error_naming_the_cassette_the_line_and_the_check() {
    let path = cassette_path("tampered");
    let line = recorded_line(&path);

    let mut out_of_range = line.clone();
    out_of_range["response"]["answers"][0][1]["probability"] = json!(1.5);
    let message = malformed(&path, &out_of_range);
    assert!(
        message.contains("the answer to `refund`: yes has the probability 1.5, outside [0, 1]"),
        "{message}"
    );

    let mut contradicted = line.clone();
    contradicted["response"]["answers"][1][1]["selected"] = json!("sales");
    let message = malformed(&path, &contradicted);
    assert!(
        message
            .contains("the answer to `team`: the selected choice option 3 has the probability 0.1"),
        "{message}"
    );

    let mut not_one = line.clone();
    not_one["response"]["answers"][2][1]["probabilities"][0][1] = json!(0.5);
    let message = malformed(&path, &not_one);
    assert!(
        message.contains("the answer to `urgency`: the probabilities of 3 options sum to"),
        "{message}"
    );

    let mut wrong_expectation = line.clone();
    wrong_expectation["response"]["answers"][2][1]["most_likely"] = json!(0);
    let message = malformed(&path, &wrong_expectation);
    assert!(
        message.contains("the most likely level is stored as option 1"),
        "{message}"
    );

    let mut neither = line;
    neither.as_object_mut().unwrap().remove("response");
    let message = malformed(&path, &neither);
    assert!(
        message.contains("neither a response nor an error"),
        "{message}"
    );
}

#[test]
fn a_stale_line_whose_response_no_longer_answers_its_request_is_an_error() {
    let path = cassette_path("stale");
    let line = recorded_line(&path);

    // The request edited (a choice renamed) but not the recorded answer.
    let mut renamed = line.clone();
    renamed["request"]["questions"][1]["options"][2]["name"] = json!("support");
    let message = malformed(&path, &renamed);
    assert!(
        message.contains("its response does not answer its request: the answer to `team` does not match the question's kind and options"),
        "{message}"
    );

    let mut dropped = line;
    dropped["request"]["questions"]
        .as_array_mut()
        .unwrap()
        .truncate(2);
    let message = malformed(&path, &dropped);
    assert!(
        message.contains("the response answers the questions `refund`, `team`, `urgency` but the request asks `refund`, `team`"),
        "{message}"
    );
}

#[test]
fn one_cassette_holds_a_providers_calls_and_a_decision_clients_each_reading_its_own() {
    let path = cassette_path("shared");
    block_on(async {
        let provider = Cassette::new(&path)
            .wrap(ScriptedProvider::new(["an answer"]))
            .unwrap();
        let decisions = Cassette::new(&path)
            .decision_client(Counted::default())
            .unwrap();
        provider
            .complete(&ProviderRequest::text("s", "u"))
            .await
            .unwrap();
        decisions.decide(&request("t")).await.unwrap();
        let kinds: Vec<Value> = lines(&path).iter().map(|l| l["kind"].clone()).collect();
        assert_eq!(kinds, vec![json!("complete"), json!("decide")]);

        let provider = Cassette::new(&path)
            .mode(CassetteMode::ReplayOnly)
            .wrap(ScriptedProvider::from_fn(|_, _| {
                panic!("asked in a replay")
            }))
            .unwrap();
        let decisions = Cassette::new(&path)
            .mode(CassetteMode::ReplayOnly)
            .decision_client(Counted::default())
            .unwrap();
        assert_eq!((provider.unserved(), decisions.unserved()), (1, 1));
        let reply = provider
            .complete(&ProviderRequest::text("s", "u"))
            .await
            .unwrap();
        assert!(reply.replayed && reply.text == "an answer");
        assert!(decisions.decide(&request("t")).await.unwrap().replayed());
    });
}
