//! The HTTP providers under hostile servers and wrong configurations: replies past the size
//! limit, huge error messages, schemes the HTTP client does not speak, gateway request ids,
//! and model calls counted exactly as they are sent.

mod provider_support;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use intent_rs::provider::{
    Anthropic, DEFAULT_MAX_RESPONSE_BYTES, MESSAGE_MAX_CHARS, OpenAi, OpenAiCompatible, Provider,
    ProviderError, ProviderErrorKind, ProviderRequest, REQUEST_ID_HEADERS,
};
use intent_rs::{IntentClient, IntentOptions, IssueSource};
use provider_support::SECRET_KEY;
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn openai(base_url: &str) -> OpenAi {
    OpenAi::new(SECRET_KEY)
        .with_base_url(base_url)
        .with_model("gpt-test")
}

fn completion(content: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-test-2025",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": null}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    })
}

async fn server_replying(template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(template)
        .mount(&server)
        .await;
    server
}

async fn received(server: &MockServer) -> usize {
    server.received_requests().await.map_or(0, |r| r.len())
}

fn client(provider: impl Provider + 'static) -> IntentClient {
    IntentClient::builder()
        .provider(provider)
        .build()
        .expect("client")
}

async fn count_words(client: &IntentClient) -> intent_rs::AIResult<u32> {
    client
        .transform(
            "one two three",
            "Count the words",
            IntentOptions::<u32>::new(),
        )
        .await
}

fn assert_too_large(err: &ProviderError, limit: usize) {
    assert_eq!(err.kind(), ProviderErrorKind::InvalidResponse, "{err}");
    assert!(!err.is_transient(), "{err}");
    assert!(
        err.message()
            .contains(&format!("larger than the {limit} bytes")),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// Response size

#[tokio::test]
async fn an_endless_reply_fails_at_the_limit_at_once_and_is_not_retried() {
    let (url, written) = provider_support::endless_body(None).await;
    let limit = 256 * 1024;
    let provider = openai(&url).with_max_response_bytes(limit);
    let started = Instant::now();
    let err = provider
        .complete(&ProviderRequest::text("", "hi"))
        .await
        .unwrap_err();
    assert_too_large(&err, limit);
    assert_eq!(err.status(), Some(200));
    assert_eq!(err.request_id(), Some("req-endless"));
    assert!(started.elapsed() < Duration::from_secs(5));

    // Through a client: one attempt, one model call, no retry of the same download.
    let client = client(provider);
    let result = count_words(&client).await;
    assert!(!result.is_success());
    assert_eq!(result.attempts.len(), 1);
    assert_eq!(result.model_calls(), 1);
    assert!(result.attempts[0].provider_retries.is_empty());
    assert!(result.issues[0].message.contains("larger than the"));
    // The server could write little past the limit before the client hung up: what it
    // sent was read chunk by chunk and dropped, never buffered whole.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        written.load(Ordering::SeqCst) < 2 * 16 * 1024 * 1024,
        "{} bytes written",
        written.load(Ordering::SeqCst)
    );
}

#[tokio::test]
async fn the_default_limit_is_32_mib_and_stops_an_endless_reply() {
    assert_eq!(DEFAULT_MAX_RESPONSE_BYTES, 32 * 1024 * 1024);
    let (url, written) = provider_support::endless_body(None).await;
    let started = Instant::now();
    let err = openai(&url)
        .complete(&ProviderRequest::text("", "hi"))
        .await
        .unwrap_err();
    assert_too_large(&err, DEFAULT_MAX_RESPONSE_BYTES);
    // Well before the 120 s request timeout that used to end such a download.
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(written.load(Ordering::SeqCst) < DEFAULT_MAX_RESPONSE_BYTES + 32 * 1024 * 1024);
}

#[tokio::test]
async fn a_reply_announcing_more_than_the_limit_is_refused_before_reading() {
    let announced = 200 * 1024 * 1024;
    let (url, written) = provider_support::endless_body(Some(announced)).await;
    let err = openai(&url)
        .complete(&ProviderRequest::text("", "hi"))
        .await
        .unwrap_err();
    assert_too_large(&err, DEFAULT_MAX_RESPONSE_BYTES);
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Only what the sockets buffered before the client hung up.
    assert!(written.load(Ordering::SeqCst) < 32 * 1024 * 1024);
}

#[tokio::test]
async fn every_http_provider_takes_a_limit() {
    let big = "x".repeat(64 * 1024);
    let openai_server =
        server_replying(ResponseTemplate::new(200).set_body_json(completion(&big))).await;
    let anthropic_server = server_replying(ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": big}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}
    })))
    .await;
    let limit = 16 * 1024;
    let request = ProviderRequest::text("", "hi");
    let providers: Vec<(Box<dyn Provider>, Box<dyn Provider>)> = vec![
        (
            Box::new(openai(&openai_server.uri()).with_max_response_bytes(limit)),
            Box::new(openai(&openai_server.uri())),
        ),
        (
            Box::new(
                OpenAiCompatible::new(openai_server.uri(), "m").with_max_response_bytes(limit),
            ),
            Box::new(OpenAiCompatible::new(openai_server.uri(), "m")),
        ),
        (
            Box::new(
                Anthropic::new(SECRET_KEY)
                    .with_base_url(anthropic_server.uri())
                    .with_max_response_bytes(limit),
            ),
            Box::new(Anthropic::new(SECRET_KEY).with_base_url(anthropic_server.uri())),
        ),
    ];
    for (limited, default) in providers {
        let err = limited.complete(&request).await.unwrap_err();
        assert_too_large(&err, limit);
        assert_eq!(default.complete(&request).await.unwrap().text, big);
    }
}

// ---------------------------------------------------------------------------------------
// Error messages

#[tokio::test]
async fn a_ten_megabyte_error_message_is_cut_to_an_excerpt() {
    let huge = "The request was refused. ".repeat(10 * 1024 * 1024 / 25);
    let server = server_replying(ResponseTemplate::new(400).set_body_json(
        json!({"error": {"message": huge, "type": "invalid_request_error", "param": null, "code": null}}),
    ))
    .await;
    let err = openai(&server.uri())
        .complete(&ProviderRequest::text("", "hi"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::InvalidRequest);
    assert!(err.message().starts_with("The request was refused."));
    assert!(
        err.message().contains("more characters)"),
        "cut, and says so"
    );
    let bound = 4 * MESSAGE_MAX_CHARS + 100;
    assert!(err.message().len() < bound, "{}", err.message().len());
    assert!(err.to_string().len() < bound);

    // The issue carried into the result is bounded too.
    let result = count_words(&client(openai(&server.uri()))).await;
    assert!(
        result
            .issues
            .iter()
            .all(|issue| issue.message.len() < bound)
    );
}

#[tokio::test]
async fn a_huge_refusal_is_cut_to_an_excerpt() {
    let refusal = "I cannot help with that. ".repeat(100_000);
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "refusal": refusal}, "finish_reason": "stop"}]
    });
    let server = server_replying(ResponseTemplate::new(200).set_body_json(body)).await;
    let reply = openai(&server.uri())
        .complete(&ProviderRequest::text("", "hi"))
        .await
        .unwrap();
    let kept = reply.refusal.unwrap();
    assert!(kept.starts_with("I cannot help with that."));
    assert!(kept.len() < 4 * MESSAGE_MAX_CHARS + 100, "{}", kept.len());
}

// ---------------------------------------------------------------------------------------
// Configuration

#[tokio::test]
async fn a_base_url_with_a_scheme_the_client_refuses_is_a_configuration_error() {
    let provider = openai("ftp://models.example.invalid/v1");
    let err = provider
        .complete(&ProviderRequest::text("", "hi"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Configuration, "{err}");
    assert!(!err.is_transient());
    assert!(!err.request_sent());
    assert!(
        err.message().contains("scheme `ftp`") && err.message().contains("http(s)"),
        "{err}"
    );

    let client = client(provider);
    let result = count_words(&client).await;
    assert!(!result.is_success());
    assert_eq!(result.attempts.len(), 1, "no new attempt either");
    assert!(
        result.attempts[0].provider_retries.is_empty(),
        "not retried"
    );
    assert_eq!(result.model_calls(), 0, "nothing was sent");
    assert_eq!(client.total_model_calls(), 0);
    assert_eq!(result.issues[0].source, IssueSource::Provider);
    assert!(result.issues[0].message.contains("configuration error"));

    for scheme in ["file:///tmp/models", "unix:///run/llm.sock"] {
        let err = OpenAiCompatible::new(scheme, "m")
            .complete(&ProviderRequest::text("", "hi"))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ProviderErrorKind::Configuration, "{err}");
    }
    // The two schemes spoken pass the check, and reach the (closed) port.
    let closed = provider_support::refuses_connections().await;
    for url in [closed.clone(), closed.replace("http://", "https://")] {
        let err = OpenAiCompatible::new(url.as_str(), "m")
            .complete(&ProviderRequest::text("", "hi"))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ProviderErrorKind::Transport, "{url}: {err}");
    }
}

#[tokio::test]
async fn a_refused_connection_sends_nothing_and_counts_no_model_call() {
    let url = provider_support::refuses_connections().await;
    let err = openai(&url)
        .complete(&ProviderRequest::text("", "hi"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Transport);
    assert!(err.is_transient(), "the server may come up");
    assert!(!err.request_sent());

    let client = client(openai(&url));
    let result = count_words(&client).await;
    assert!(!result.attempts[0].provider_retries.is_empty(), "retried");
    assert_eq!(result.model_calls(), 0);
    assert_eq!(client.total_model_calls(), 0);
}

// ---------------------------------------------------------------------------------------
// Counting model calls

#[tokio::test]
async fn a_request_cut_by_the_time_budget_is_counted() {
    let server = server_replying(
        ResponseTemplate::new(200)
            .set_body_json(completion(r#"{"value": 3}"#))
            .set_delay(Duration::from_secs(5)),
    )
    .await;
    let client = IntentClient::builder()
        .provider(openai(&server.uri()))
        .time_budget(Duration::from_millis(300))
        .build()
        .unwrap();
    let result = count_words(&client).await;
    assert!(!result.is_success());
    assert!(result.issues[0].message.contains("time budget"));
    assert_eq!(received(&server).await, 1);
    assert_eq!(result.model_calls(), 1, "the provider bills it");
    assert_eq!(client.total_model_calls(), 1);
}

#[tokio::test]
async fn a_call_dropped_by_its_caller_is_counted_once_its_request_is_sent() {
    let server = server_replying(
        ResponseTemplate::new(200)
            .set_body_json(completion(r#"{"value": 3}"#))
            .set_delay(Duration::from_secs(30)),
    )
    .await;
    let client = client(openai(&server.uri()));
    let call = tokio::spawn({
        let client = client.clone();
        async move { count_words(&client).await }
    });
    let started = Instant::now();
    while received(&server).await == 0 {
        assert!(started.elapsed() < Duration::from_secs(10), "never sent");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    assert_eq!(client.total_model_calls(), 1);
}

// ---------------------------------------------------------------------------------------
// Request ids

#[tokio::test]
async fn a_gateway_request_id_is_read_from_the_common_headers() {
    // The gateway the id went missing behind: the LiteLLM proxy.
    assert!(REQUEST_ID_HEADERS.contains(&"x-litellm-call-id"));
    for header in REQUEST_ID_HEADERS {
        let id = format!("id-from-{header}");
        let ok = server_replying(
            ResponseTemplate::new(200)
                .insert_header(*header, id.as_str())
                .set_body_json(completion("fine")),
        )
        .await;
        let reply = openai(&ok.uri())
            .complete(&ProviderRequest::text("", "hi"))
            .await
            .unwrap();
        assert_eq!(reply.request_id.as_deref(), Some(id.as_str()), "{header}");

        let failing = server_replying(
            ResponseTemplate::new(500)
                .insert_header(*header, id.as_str())
                .set_body_json(json!({"error": {"message": "boom", "type": "server_error"}})),
        )
        .await;
        let err = Anthropic::new(SECRET_KEY)
            .with_base_url(failing.uri())
            .complete(&ProviderRequest::text("", "hi"))
            .await
            .unwrap_err();
        assert_eq!(err.request_id(), Some(id.as_str()), "{header}");
    }

    // The provider's own header wins over a gateway's.
    let both = server_replying(
        ResponseTemplate::new(200)
            .insert_header("x-litellm-call-id", "litellm-1")
            .insert_header("x-request-id", "req-openai-1")
            .set_body_json(completion("fine")),
    )
    .await;
    let reply = openai(&both.uri())
        .complete(&ProviderRequest::text("", "hi"))
        .await
        .unwrap();
    assert_eq!(reply.request_id.as_deref(), Some("req-openai-1"));
}
