//! End to end over HTTP: a generated client, the real OpenAI provider, and a loopback
//! server speaking Chat Completions. The first reply breaks the envelope, the second is
//! right; the second request must carry the first reply and its problem.

use intent_rs::provider::OpenAi;
use intent_rs::{AIResult, IntentClient, IntentError, IssueSource, StrictCompatible, intents};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

#[derive(Debug, PartialEq, Deserialize, JsonSchema, StrictCompatible)]
pub enum Priority {
    Low,
    High,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema, StrictCompatible)]
pub struct Ticket {
    pub title: String,
    pub priority: Priority,
}

#[intents]
pub trait Support {
    #[intent("Turn the email into a support ticket")]
    async fn ticket(&self, email: &str) -> AIResult<Ticket>;

    #[intent("Classify the urgency of the email")]
    async fn urgency(&self, email: &str) -> Result<Priority, IntentError>;
}

fn chat_reply(content: &str) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("x-request-id", "req_123")
        .set_body_json(json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_767_000_000,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": null},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132,
                      "prompt_tokens_details": {"cached_tokens": 0}}
        }))
}

fn openai_for(server: &MockServer) -> OpenAi {
    OpenAi::new("sk-test-not-a-real-key").with_base_url(format!("{}/v1", server.uri()))
}

/// Answers the first request with `first` and every later one with `then`.
async fn mount_once_then(server: &MockServer, first: ResponseTemplate, then: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(first)
        .up_to_n_times(1)
        .with_priority(1)
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(then)
        .with_priority(2)
        .mount(server)
        .await;
}

async fn support_client(server: &MockServer) -> SupportClient {
    SupportClient::new(
        IntentClient::builder()
            .provider(openai_for(server))
            .build()
            .expect("client"),
    )
}

#[tokio::test]
async fn a_broken_envelope_is_fed_back_over_http_and_fixed() {
    let server = MockServer::start().await;
    let broken =
        r#"{"value": {"title": "Printer on fire", "priority": "High"}, "confidence": 0.9}"#;
    mount_once_then(
        &server,
        chat_reply(broken),
        chat_reply(r#"{"value": {"title": "Printer on fire", "priority": "High"}}"#),
    )
    .await;

    let support = support_client(&server).await;
    let result = support.ticket("The printer on floor 3 is on fire!").await;
    assert_eq!(
        result.value,
        Some(Ticket {
            title: "Printer on fire".into(),
            priority: Priority::High
        })
    );
    assert_eq!(result.attempts.len(), 2);
    let problem = &result.attempts[0].issues[0];
    assert_eq!(problem.source, IssueSource::Verification);
    assert!(
        problem.message.contains("confidence"),
        "{}",
        problem.message
    );
    assert_eq!(result.attempts[1].model, "gpt-4o-mini-2024-07-18");
    assert_eq!(result.usage.input_tokens, 240);

    let requests = server.received_requests().await.expect("recorded");
    assert_eq!(requests.len(), 2);
    let first: Value = serde_json::from_slice(&requests[0].body).expect("json body");
    let second: Value = serde_json::from_slice(&requests[1].body).expect("json body");
    assert_eq!(first["response_format"]["type"], "json_schema");
    assert_eq!(first["response_format"]["json_schema"]["strict"], true);
    let schema = &first["response_format"]["json_schema"]["schema"];
    assert_eq!(schema["required"], json!(["value"]));
    assert_eq!(schema["additionalProperties"], false);
    // OpenAI shows the model the schema it enforces: the request is the intent and the
    // input alone, with no preamble, headings or description of `Ticket`.
    let first_messages = first["messages"].as_array().expect("messages");
    assert_eq!(first_messages.len(), 2);
    assert_eq!(first_messages[0]["role"], "system");
    assert_eq!(first_messages[1]["role"], "user");
    assert_eq!(
        first_messages[1]["content"],
        "The printer on floor 3 is on fire!"
    );
    assert!(
        !first_messages[0]["content"]
            .as_str()
            .expect("system prompt")
            .contains("## "),
        "{first_messages:?}"
    );
    // The retry continues the conversation: the first request's messages unchanged, then
    // the broken reply as the assistant's turn and the problems as the user's.
    let retry_messages = second["messages"].as_array().expect("messages");
    assert_eq!(retry_messages.len(), 4);
    assert_eq!(retry_messages[..2], first_messages[..]);
    assert_eq!(
        retry_messages[2],
        json!({"role": "assistant", "content": broken})
    );
    assert_eq!(retry_messages[3]["role"], "user");
    let problems = retry_messages[3]["content"].as_str().expect("problems");
    assert!(
        problems.contains(&format!("- {}", problem.message)),
        "{problems}"
    );
    assert_eq!(second["messages"][0]["role"], "system");
}

#[tokio::test]
async fn an_http_error_becomes_the_typed_methods_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": {"message": "Incorrect API key provided.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}
        })))
        .mount(&server)
        .await;
    let support = support_client(&server).await;
    let error = support.urgency("help").await.unwrap_err();
    let text = error.to_string();
    // A program branches on the kind; the provider's words are kept on the provider
    // error (the error's source), never in the sentence.
    assert_eq!(error.kind(), intent_rs::FailureKind::Authentication);
    assert_eq!(error.provider().and_then(|facts| facts.status), Some(401));
    assert!(text.contains("401"), "{text}");
    assert!(!text.contains("Incorrect API key provided."), "{text}");
    let provider = error.provider_error().expect("the provider error");
    assert_eq!(provider.message(), "Incorrect API key provided.");
    let source = std::error::Error::source(&error).expect("a source");
    assert!(
        source
            .downcast_ref::<intent_rs::provider::ProviderError>()
            .is_some()
    );
    assert!(!text.contains("sk-test-not-a-real-key"));
    assert_eq!(
        server.received_requests().await.map(|r| r.len()),
        Some(1),
        "401 is not retried"
    );
}

#[tokio::test]
async fn a_rate_limited_call_is_retried_after_the_wait_the_server_asks_for() {
    let server = MockServer::start().await;
    let rate_limited = ResponseTemplate::new(429)
        .insert_header("retry-after-ms", "20")
        .set_body_json(json!({"error": {"message": "Rate limit reached.", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}));
    mount_once_then(&server, rate_limited, chat_reply(r#"{"value": "Low"}"#)).await;

    let client = IntentClient::builder()
        .provider(openai_for(&server))
        .build()
        .expect("client");
    let started = std::time::Instant::now();
    let result = client
        .transform::<_, Priority>(
            "no rush",
            "Classify the urgency of the email",
            Default::default(),
        )
        .await;
    assert_eq!(result.value, Some(Priority::Low));
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(20),
        "waited as asked"
    );
    assert_eq!(
        result.attempts.len(),
        1,
        "a transport retry is not a new attempt"
    );
    let retries = &result.attempts[0].provider_retries;
    assert_eq!(retries.len(), 1);
    assert!(
        retries[0].contains("rate limited (HTTP 429)") && retries[0].contains("20 ms"),
        "{retries:?}"
    );
    assert_eq!(result.attempts[0].model_calls, 2);
}

#[tokio::test]
async fn a_retry_wait_past_the_time_budget_is_not_taken() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(503)
                .insert_header("retry-after", "30")
                .set_body_json(json!({"error": {"message": "The server is overloaded.", "type": "server_error", "param": null, "code": null}})),
        )
        .mount(&server)
        .await;
    let client = IntentClient::builder()
        .provider(openai_for(&server))
        .time_budget(std::time::Duration::from_secs(2))
        .build()
        .expect("client");
    let started = std::time::Instant::now();
    let result = client
        .transform::<_, Priority>(
            "help",
            "Classify the urgency of the email",
            Default::default(),
        )
        .await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "did not sleep 30 s"
    );
    assert!(!result.is_success());
    assert_eq!(server.received_requests().await.map(|r| r.len()), Some(1));
    assert!(
        result.issues[0].message.contains("overloaded"),
        "{}",
        result.issues[0].message
    );
}
