//! Snapshots of what each provider is sent for a three-attempt call (two broken replies,
//! then a right one): the first request, and the retries that continue it as a
//! conversation. A change to any prompt or body shows here as a snapshot diff.

use std::sync::Arc;

use intent_rs::provider::{Anthropic, OpenAi, OpenAiCompatible, Provider, ScriptedProvider};
use intent_rs::{IntentClient, IntentOptions};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// How urgent a ticket is.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
enum Priority {
    /// Can wait.
    Low,
    /// Needs attention now.
    High,
}

/// A support ticket.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Ticket {
    /// A short title.
    title: String,
    /// How urgent it is.
    priority: Priority,
}

const INPUT: &str = "The printer on floor 3 is on fire!";
const INTENT: &str = "Open a ticket for the report.";

/// Two broken replies, then a right one.
const REPLIES: [&str; 3] = [
    r#"{"value": {"title": "Printer on fire"}}"#,
    r#"{"value": {"title": "Printer on fire", "priority": "Urgent"}}"#,
    r#"{"value": {"title": "Printer on fire", "priority": "High"}}"#,
];

async fn three_attempts(provider: impl Provider + 'static) {
    let client = IntentClient::builder()
        .provider(provider)
        .max_attempts(3)
        .build()
        .expect("client");
    let result = client
        .transform(INPUT, INTENT, IntentOptions::<Ticket>::new())
        .await;
    assert_eq!(
        result.value,
        Some(Ticket {
            title: "Printer on fire".into(),
            priority: Priority::High
        }),
        "{:?}",
        result.issues
    );
    assert_eq!(result.attempts.len(), 3);
}

/// Mounts `replies` at `route`, one per request in order, each wrapped by `wrap`.
async fn mount_in_order(server: &MockServer, route: &str, replies: Vec<Value>) {
    for (priority, reply) in (1u8..).zip(replies) {
        Mock::given(method("POST"))
            .and(path(route))
            .respond_with(ResponseTemplate::new(200).set_body_json(reply))
            .up_to_n_times(1)
            .with_priority(priority)
            .mount(server)
            .await;
    }
}

fn chat_completion(content: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-test",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5}
    })
}

fn anthropic_message(content: &str) -> Value {
    json!({
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": content}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5}
    })
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .expect("recorded")
        .iter()
        .map(|request| serde_json::from_slice(&request.body).expect("a JSON body"))
        .collect()
}

/// The bodies without the schema, which has snapshots of its own elsewhere.
fn without_schema(mut body: Value) -> Value {
    if let Some(format) = body.pointer_mut("/response_format/json_schema/schema") {
        *format = json!("<schema>");
    }
    if let Some(format) = body.pointer_mut("/output_config/format/schema") {
        *format = json!("<schema>");
    }
    body
}

/// Every body after the first starts with the previous body's messages, unchanged.
fn assert_each_retry_continues(bodies: &[Value]) {
    for pair in bodies.windows(2) {
        let earlier = pair[0]["messages"].as_array().expect("messages");
        let later = pair[1]["messages"].as_array().expect("messages");
        assert_eq!(later.len(), earlier.len() + 2);
        let unmarked =
            |messages: &[Value]| -> Vec<Value> { messages.iter().map(strip_cache_marks).collect() };
        assert_eq!(unmarked(&later[..earlier.len()]), unmarked(earlier));
        assert_eq!(pair[0]["system"], pair[1]["system"]);
    }
}

/// A message with its text and without cache marks (which move to the newest turn).
fn strip_cache_marks(message: &Value) -> Value {
    match message["content"].as_array() {
        Some(blocks) => json!({"role": message["role"], "content": blocks[0]["text"]}),
        None => message.clone(),
    }
}

#[tokio::test]
async fn openai_requests() {
    let server = MockServer::start().await;
    mount_in_order(
        &server,
        "/v1/chat/completions",
        REPLIES.iter().map(|r| chat_completion(r)).collect(),
    )
    .await;
    three_attempts(
        OpenAi::new("sk-test")
            .with_base_url(format!("{}/v1", server.uri()))
            .with_model("gpt-test"),
    )
    .await;
    let bodies = bodies(&server).await;
    assert_each_retry_continues(&bodies);
    let bodies: Vec<Value> = bodies.into_iter().map(without_schema).collect();
    insta::assert_json_snapshot!("openai", bodies);
}

#[tokio::test]
async fn anthropic_requests() {
    let server = MockServer::start().await;
    mount_in_order(
        &server,
        "/v1/messages",
        REPLIES.iter().map(|r| anthropic_message(r)).collect(),
    )
    .await;
    three_attempts(
        Anthropic::new("sk-ant-test")
            .with_base_url(server.uri())
            .with_model("claude-test"),
    )
    .await;
    let bodies = bodies(&server).await;
    assert_each_retry_continues(&bodies);
    let bodies: Vec<Value> = bodies.into_iter().map(without_schema).collect();
    insta::assert_json_snapshot!("anthropic", bodies);
}

#[tokio::test]
async fn openai_compatible_requests() {
    let server = MockServer::start().await;
    mount_in_order(
        &server,
        "/v1/chat/completions",
        REPLIES.iter().map(|r| chat_completion(r)).collect(),
    )
    .await;
    // A local server constrains decoding without showing the model the schema: the prompt
    // describes the type in full.
    three_attempts(OpenAiCompatible::new(
        format!("{}/v1", server.uri()),
        "local-model",
    ))
    .await;
    let bodies = bodies(&server).await;
    assert_each_retry_continues(&bodies);
    let bodies: Vec<Value> = bodies.into_iter().map(without_schema).collect();
    insta::assert_json_snapshot!("openai_compatible", bodies);
}

#[tokio::test]
async fn scripted_requests() {
    let provider = Arc::new(ScriptedProvider::new(REPLIES));
    three_attempts(Arc::clone(&provider)).await;
    let requests: Vec<Value> = provider
        .requests()
        .iter()
        .map(|request| {
            json!({
                "system": request.system,
                "messages": request
                    .messages
                    .iter()
                    .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
                    .collect::<Vec<_>>(),
                "response_format": format!("{:?}", request.response_format),
            })
        })
        .collect();
    assert_each_retry_continues(&requests);
    insta::assert_json_snapshot!("scripted", requests);
}

/// A prompt long enough for Anthropic's cache: the first turn is marked on every request,
/// and a retry's newest turn too; the marks never change the text.
#[tokio::test]
async fn anthropic_marks_the_stable_prefix_of_a_long_prompt() {
    let server = MockServer::start().await;
    mount_in_order(
        &server,
        "/v1/messages",
        REPLIES.iter().map(|r| anthropic_message(r)).collect(),
    )
    .await;
    let client = IntentClient::builder()
        .provider(
            Anthropic::new("sk-ant-test")
                .with_base_url(server.uri())
                .with_model("claude-sonnet-4-5"),
        )
        .max_attempts(3)
        .build()
        .expect("client");
    let long_input = "The printer on floor 3 is on fire. ".repeat(120);
    let result = client
        .transform(&long_input, INTENT, IntentOptions::<Ticket>::new())
        .await;
    assert!(result.is_success(), "{:?}", result.issues);
    let bodies = bodies(&server).await;
    assert_each_retry_continues(&bodies);
    let ephemeral = json!({"type": "ephemeral"});
    let marked = |message: &Value| message["content"][0]["cache_control"] == ephemeral;
    for (attempt, body) in bodies.iter().enumerate() {
        let messages = body["messages"].as_array().expect("messages");
        assert!(marked(&messages[0]), "attempt {}: {body}", attempt + 1);
        assert_eq!(messages[0]["content"][0]["text"], long_input);
        let last = messages.len() - 1;
        for (index, message) in messages.iter().enumerate().skip(1) {
            assert_eq!(marked(message), index == last, "attempt {}", attempt + 1);
        }
        // The system prompt is short: it is sent as a plain string, unmarked.
        assert!(body["system"].is_string(), "{body}");
    }
}

/// With the cache turned off, nothing is marked.
#[tokio::test]
async fn anthropic_prompt_cache_can_be_turned_off() {
    let server = MockServer::start().await;
    mount_in_order(&server, "/v1/messages", vec![anthropic_message(REPLIES[2])]).await;
    let client = IntentClient::builder()
        .provider(
            Anthropic::new("sk-ant-test")
                .with_base_url(server.uri())
                .with_prompt_cache(false),
        )
        .build()
        .expect("client");
    let long_input = "The printer on floor 3 is on fire. ".repeat(120);
    let result = client
        .transform(&long_input, INTENT, IntentOptions::<Ticket>::new())
        .await;
    assert!(result.is_success(), "{:?}", result.issues);
    let body = &bodies(&server).await[0];
    assert_eq!(body["messages"][0]["content"], long_input);
}
