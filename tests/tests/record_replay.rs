//! Record and replay through cassettes: every wire API recorded against a loopback server
//! and replayed with no server gives the same typed values; a changed type fails its
//! replay naming the cassette, the exchange and the check; no key reaches a cassette;
//! replay-only names what differs from the nearest exchange; concurrent calls, streams
//! and decisions are recorded and replayed without mixing.

mod provider_support;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::future::join_all;
use intent_rs::decision::{
    BinaryQuestion, ChoiceQuestion, DecisionClient, DecisionQuestion, DecisionRequest,
    LogprobDecisionClient, ProbabilitySource,
};
use intent_rs::provider::{
    Anthropic, AzureOpenAi, Cassette, CassetteMode, Gemini, OpenAi, OpenAiCompatible,
    OpenAiResponses, Provider, ProviderErrorKind, Sanitizer, ScriptedProvider,
};
use intent_rs::{AIResult, IntentClient, IntentStream, Partial, StrictCompatible, intents};
use provider_support::SECRET_KEY;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use v1::Support as _;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The ticket type as the code was when the cassettes were recorded.
mod v1 {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
    pub enum Priority {
        Low,
        High,
    }

    #[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
    pub struct Ticket {
        pub title: String,
        pub priority: Priority,
    }

    #[intents]
    pub trait Support {
        #[intent("Turn the email into a support ticket")]
        async fn ticket(&self, email: &str) -> AIResult<Ticket>;

        #[intent("Turn the email into a support ticket")]
        fn ticket_live(&self, email: &str) -> IntentStream<Ticket>;
    }
}

/// The same method after the type gained a required field.
mod v2 {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, StrictCompatible)]
    pub enum Priority {
        Low,
        High,
    }

    #[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, StrictCompatible)]
    pub struct Ticket {
        pub title: String,
        pub priority: Priority,
        pub assignee: String,
    }

    #[intents]
    pub trait Support {
        #[intent("Turn the email into a support ticket")]
        async fn ticket(&self, email: &str) -> AIResult<Ticket>;
    }
}

const ANSWER: &str = r#"{"value": {"title": "Refund the double charge", "priority": "High"}}"#;

/// A fresh cassette path (no file yet) in the temporary folder.
fn cassette_path(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "intent-record-replay-{}-{n}-{name}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

fn openai_success(text: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": null}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    })
}

fn anthropic_success(text: &str) -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 3, "output_tokens": 1}
    })
}

fn gemini_success(text: &str) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1, "totalTokenCount": 4},
        "modelVersion": "gemini-2.5-flash", "responseId": "r-1"
    })
}

fn responses_success(text: &str) -> Value {
    json!({
        "id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
        "error": null, "incomplete_details": null, "model": "m",
        "output": [{"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "annotations": [], "text": text}]}],
        "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}
    })
}

/// One wire API: its provider with `key` against a server root, and its success body.
struct Wire {
    name: &'static str,
    build: fn(base_url: &str, key: &str) -> Arc<dyn Provider>,
    success: fn(text: &str) -> Value,
}

fn wires() -> Vec<Wire> {
    vec![
        Wire {
            name: "openai",
            build: |url, key| Arc::new(OpenAi::new(key).with_base_url(format!("{url}/v1"))),
            success: openai_success,
        },
        Wire {
            name: "openai-compatible",
            build: |url, key| {
                Arc::new(OpenAiCompatible::openrouter(key, "m").with_base_url(format!("{url}/v1")))
            },
            success: openai_success,
        },
        Wire {
            name: "openai-responses",
            build: |url, key| {
                Arc::new(OpenAiResponses::new(key).with_base_url(format!("{url}/v1")))
            },
            success: responses_success,
        },
        Wire {
            name: "gemini",
            build: |url, key| Arc::new(Gemini::new(key).with_base_url(format!("{url}/v1beta"))),
            success: gemini_success,
        },
        Wire {
            name: "azure",
            build: |url, key| Arc::new(AzureOpenAi::new(url, key, "deployment-1")),
            success: openai_success,
        },
        Wire {
            name: "anthropic",
            build: |url, key| Arc::new(Anthropic::new(key).with_base_url(url)),
            success: anthropic_success,
        },
    ]
}

/// A server answering every request with `body`.
async fn server_answering(body: Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .mount(&server)
        .await;
    server
}

/// Nothing listens here: a replay that sent anything would fail.
const NOWHERE: &str = "http://127.0.0.1:9";

fn support(provider: impl Provider + 'static) -> v1::SupportClient {
    v1::SupportClient::new(IntentClient::builder().provider(provider).build().unwrap())
}

#[tokio::test]
async fn every_wire_records_then_replays_the_same_typed_value_with_no_key_in_the_cassette() {
    for wire in wires() {
        let path = cassette_path(wire.name);
        let server = server_answering((wire.success)(ANSWER)).await;
        let recorder = Cassette::new(&path)
            .wrap((wire.build)(&server.uri(), SECRET_KEY))
            .unwrap();
        let recorded = support(recorder).ticket("I was charged twice").await;
        let value = recorded.value.clone().unwrap_or_else(|| {
            panic!("{}: {}", wire.name, recorded.failure_summary());
        });
        assert!(!recorded.attempts[0].replayed, "{}", wire.name);

        // Replayed with no server and another key: the same value, marked replayed.
        let replayer = Cassette::new(&path)
            .mode(CassetteMode::ReplayOnly)
            .wrap((wire.build)(NOWHERE, "another-key"))
            .unwrap();
        let replayed = support(replayer).ticket("I was charged twice").await;
        assert_eq!(
            replayed.value.as_ref(),
            Some(&value),
            "{}: {}",
            wire.name,
            replayed.failure_summary()
        );
        assert!(replayed.attempts[0].replayed, "{}", wire.name);
        assert_eq!(
            replayed.attempts[0].raw_output, recorded.attempts[0].raw_output,
            "{}",
            wire.name
        );
        assert_eq!(server.received_requests().await.unwrap().len(), 1);

        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1, "{}: {text}", wire.name);
        assert!(!text.contains(SECRET_KEY), "{}: the key leaked", wire.name);
        assert!(
            !text.contains("LEAKCHECK"),
            "{}: part of the key leaked",
            wire.name
        );
    }
}

#[tokio::test]
async fn a_key_in_the_prompt_is_sanitized_and_the_call_still_replays() {
    let path = cassette_path("key-in-prompt");
    let server = server_answering(openai_success(ANSWER)).await;
    let email = format!("My key {SECRET_KEY} was charged twice, write to ann@example.com");
    let sanitizer = || Sanitizer::new().secret(SECRET_KEY).field("email");
    let recorder = Cassette::new(&path)
        .sanitizer(sanitizer())
        .wrap(OpenAi::new(SECRET_KEY).with_base_url(format!("{}/v1", server.uri())))
        .unwrap();
    assert!(support(recorder).ticket(&email).await.is_success());
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains(SECRET_KEY), "{text}");
    assert!(text.contains("[redacted]"), "{text}");

    let replayer = Cassette::new(&path)
        .mode(CassetteMode::ReplayOnly)
        .sanitizer(sanitizer())
        .wrap(OpenAi::new("replay").with_base_url(NOWHERE))
        .unwrap();
    let replayed = support(replayer).ticket(&email).await;
    assert!(replayed.is_success(), "{}", replayed.failure_summary());
}

#[tokio::test]
async fn a_changed_type_fails_its_replay_naming_the_cassette_the_exchange_and_the_check() {
    let path = cassette_path("changed-type");
    let server = server_answering(openai_success(ANSWER)).await;
    let recorder = Cassette::new(&path)
        .wrap(OpenAi::new(SECRET_KEY).with_base_url(format!("{}/v1", server.uri())))
        .unwrap();
    assert!(support(recorder).ticket("Charged twice").await.is_success());

    // Today the ticket has an assignee: the recorded answer has none.
    use v2::Support as _;
    let replayer = Cassette::new(&path)
        .mode(CassetteMode::ReplayOnly)
        .wrap(OpenAi::new("replay").with_base_url(NOWHERE))
        .unwrap();
    let client = IntentClient::builder().provider(replayer).build().unwrap();
    let result = v2::SupportClient::new(client).ticket("Charged twice").await;

    assert!(!result.is_success());
    assert!(result.attempts[0].replayed);
    let summary = result.failure_summary();
    let file = path.file_name().unwrap().to_string_lossy();
    assert!(summary.contains(&*file), "names the cassette: {summary}");
    assert!(
        summary.contains("replayed from exchange 1"),
        "names the exchange: {summary}"
    );
    assert!(summary.contains("assignee"), "names the check: {summary}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn replay_only_with_a_missing_exchange_names_what_differs() {
    let path = cassette_path("missing");
    let server = server_answering(openai_success(ANSWER)).await;
    let recorder = Cassette::new(&path)
        .wrap(OpenAi::new(SECRET_KEY).with_base_url(format!("{}/v1", server.uri())))
        .unwrap();
    assert!(support(recorder).ticket("Charged twice").await.is_success());

    let replayer = Cassette::new(&path)
        .mode(CassetteMode::ReplayOnly)
        .wrap(
            OpenAi::new("replay")
                .with_base_url(NOWHERE)
                .with_model("gpt-other"),
        )
        .unwrap();
    let result = support(replayer).ticket("Charged three times").await;
    assert!(!result.is_success());
    assert_eq!(
        result.attempts.len(),
        1,
        "a missing exchange is not retried"
    );
    let summary = result.failure_summary();
    for expected in [
        "has no exchange left for this `complete` request",
        "the nearest recorded exchange, exchange 1 (line 1",
        "model (recorded `gpt-",
        "asked `gpt-other`)",
        "prompt: turn 1 (user) differs from character",
    ] {
        assert!(summary.contains(expected), "{expected:?} in {summary}");
    }
    assert!(summary.contains(&path.display().to_string()), "{summary}");
}

/// Answers each request with a ticket titled after the number in its email.
struct TitleFromEmail;

impl Respond for TitleFromEmail {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let user = body["messages"][1]["content"].as_str().unwrap_or_default();
        let number = user
            .split("order #")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .unwrap_or("?");
        let answer = format!(r#"{{"value": {{"title": "order {number}", "priority": "Low"}}}}"#);
        ResponseTemplate::new(200).set_body_json(openai_success(&answer))
    }
}

#[tokio::test]
async fn concurrent_calls_are_recorded_and_replayed_without_mixing() {
    let path = cassette_path("concurrent");
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(TitleFromEmail)
        .mount(&server)
        .await;
    let emails: Vec<String> = (1..=8).map(|n| format!("About order #{n}")).collect();
    let recorder = support(
        Cassette::new(&path)
            .wrap(OpenAi::new(SECRET_KEY).with_base_url(format!("{}/v1", server.uri())))
            .unwrap(),
    );
    let recorded = join_all(emails.iter().map(|email| recorder.ticket(email))).await;
    for (n, result) in (1..).zip(&recorded) {
        assert_eq!(result.value.as_ref().unwrap().title, format!("order {n}"));
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 8);
    // Each line holds one whole exchange: its request and its own reply.
    for line in text.lines() {
        let exchange: Value = serde_json::from_str(line).unwrap();
        let asked = exchange["request"]["messages"][0]["content"]
            .as_str()
            .unwrap();
        let answered = exchange["reply"]["text"].as_str().unwrap();
        let n = answered
            .split("order ")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert!(asked.contains(&format!("order #{n}")), "{line}");
    }

    let replayer = Cassette::new(&path)
        .mode(CassetteMode::ReplayOnly)
        .wrap(OpenAi::new("replay").with_base_url(NOWHERE))
        .unwrap();
    let replayer = support(replayer);
    // Asked in the other order, at once.
    let replayed = join_all(emails.iter().rev().map(|email| replayer.ticket(email))).await;
    for (n, result) in (1..=8).rev().zip(&replayed) {
        assert!(result.attempts[0].replayed);
        assert_eq!(result.value.as_ref().unwrap().title, format!("order {n}"));
    }
}

#[tokio::test]
async fn a_streamed_call_is_replayed_as_a_stream_of_the_recorded_pieces() {
    let path = cassette_path("stream");
    let model = ScriptedProvider::new([ANSWER]).with_stream_chunks(7, None);
    let recorded = support(Cassette::new(&path).wrap(model).unwrap())
        .ticket_live("Charged twice")
        .finish()
        .await;
    let value = recorded.value.clone().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let exchange: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(exchange["kind"], "stream");
    let pieces = exchange["pieces"].as_array().unwrap();
    assert!(pieces.len() > 3, "{text}");

    let silent = ScriptedProvider::from_fn(|_, _| panic!("the model was called in a replay"));
    let replayer = Cassette::new(&path)
        .mode(CassetteMode::ReplayOnly)
        .wrap(silent)
        .unwrap();
    // The replay's pieces arrive one by one (how many partial values a reader sees of
    // them depends on its interval, so only the final record is compared here).
    let replayed = support(replayer)
        .ticket_live("Charged twice")
        .finish()
        .await;
    assert_eq!(replayed.value.as_ref(), Some(&value));
    assert!(replayed.attempts[0].replayed);
}

fn questions() -> Vec<DecisionQuestion> {
    vec![
        BinaryQuestion::new("resolved", "Has the ticket been resolved?")
            .unwrap()
            .into(),
        ChoiceQuestion::new("route", "Which team?", [("billing", ""), ("support", "")])
            .unwrap()
            .into(),
    ]
}

/// Chat Completions replies of one token with log-probabilities, by question.
struct Logprobs;

impl Respond for Logprobs {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let user = body["messages"][1]["content"].as_str().unwrap_or_default();
        let alternatives: &[(&str, f64)] = if user.contains("yes, no") {
            &[("Yes", -0.2), ("No", -1.8)]
        } else {
            &[("A", -0.1), ("B", -2.5)]
        };
        let top: Vec<Value> = alternatives
            .iter()
            .map(|(token, logprob)| json!({"token": token, "logprob": logprob, "bytes": null}))
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0,
                "message": {"role": "assistant", "content": alternatives[0].0, "refusal": null},
                "logprobs": {"content": [{"token": alternatives[0].0, "logprob": alternatives[0].1,
                    "bytes": null, "top_logprobs": top}], "refusal": null},
                "finish_reason": "length"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
        }))
    }
}

#[tokio::test]
async fn decisions_from_log_probabilities_and_stated_answers_replay_the_same_distributions() {
    // Log-probabilities over Chat Completions: one request per question, at once.
    let path = cassette_path("decisions-logprobs");
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(Logprobs)
        .mount(&server)
        .await;
    let request = DecisionRequest::new(json!({"ticket": "Charged twice"}), questions()).unwrap();
    let recorder = Cassette::new(&path)
        .wrap(OpenAi::new(SECRET_KEY).with_base_url(server.uri()))
        .unwrap();
    let live = LogprobDecisionClient::new(recorder)
        .decide(&request)
        .await
        .unwrap();
    assert_eq!(live.source(), ProbabilitySource::LogProbabilities);
    let replayer = Cassette::new(&path)
        .mode(CassetteMode::ReplayOnly)
        .wrap(OpenAi::new("replay").with_base_url(NOWHERE))
        .unwrap();
    let again = LogprobDecisionClient::new(replayer)
        .decide(&request)
        .await
        .unwrap();
    let p = |r: &intent_rs::decision::DecisionResponse| {
        (
            r.binary("resolved").unwrap().probability(),
            r.choice("route").unwrap().probability("support").unwrap(),
        )
    };
    assert_eq!(p(&live), p(&again));
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);

    // Stated probabilities over Anthropic, through a client.
    let path = cassette_path("decisions-stated");
    let stated = json!({"value": {
        "resolved": {"probability_yes": 0.25},
        "route": {"probabilities": {"billing": 0.6, "support": 0.4}}
    }});
    let server = server_answering(anthropic_success(&stated.to_string())).await;
    let recorder = Cassette::new(&path)
        .wrap(Anthropic::new(SECRET_KEY).with_base_url(server.uri()))
        .unwrap();
    let client = IntentClient::builder().provider(recorder).build().unwrap();
    let live = client.decide(&request).await.unwrap();
    assert_eq!(live.source(), ProbabilitySource::Stated);
    let replayer = Cassette::new(&path)
        .mode(CassetteMode::ReplayOnly)
        .wrap(Anthropic::new("replay").with_base_url(NOWHERE))
        .unwrap();
    let client = IntentClient::builder().provider(replayer).build().unwrap();
    let again = client.decide(&request).await.unwrap();
    assert_eq!(p(&live), p(&again));
    assert_eq!(again.binary("resolved").unwrap().probability(), 0.25);
}

#[tokio::test]
async fn a_replay_only_miss_is_a_configuration_error_never_sent() {
    let path = cassette_path("config");
    std::fs::write(&path, "").unwrap();
    let replayer = Cassette::new(&path)
        .mode(CassetteMode::ReplayOnly)
        .wrap(OpenAi::new("replay").with_base_url(NOWHERE))
        .unwrap();
    let error = replayer
        .complete(&intent_rs::provider::ProviderRequest::text("s", "u"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ProviderErrorKind::Configuration);
    assert!(!error.request_sent() && !error.is_transient());
    assert!(error.message().contains("holds no exchange"), "{error}");
}
