//! The Anthropic provider against a loopback server speaking the Messages API: request
//! bodies checked field by field against PROVIDERS.md, replies, every documented error,
//! malformed bodies, timeouts, dropped connections, and the API key never leaking.

mod provider_support;

use std::sync::Arc;
use std::time::Duration;

use intent_rs::provider::{
    Anthropic, Provider, ProviderError, ProviderErrorKind, ProviderRequest, ResponseFormat,
};
use provider_support::{CapturedLogs, SECRET_KEY};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn provider(base_url: &str) -> Anthropic {
    Anthropic::new(SECRET_KEY)
        .with_base_url(base_url)
        .with_model("claude-test")
}

fn message(content: Value, stop_reason: &str) -> Value {
    json!({
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {
            "input_tokens": 10,
            "cache_creation_input_tokens": 5,
            "cache_read_input_tokens": 20,
            "output_tokens": 7
        }
    })
}

fn text_blocks(texts: &[&str]) -> Value {
    Value::Array(
        texts
            .iter()
            .map(|text| json!({"type": "text", "text": text}))
            .collect(),
    )
}

fn strict_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"value": {"type": "string", "enum": ["Positive", "Negative"]}},
        "required": ["value"],
        "additionalProperties": false
    })
}

fn schema_request(schema: Value) -> ProviderRequest {
    ProviderRequest {
        response_format: ResponseFormat::JsonSchema,
        schema: Some(Arc::new(schema)),
        ..ProviderRequest::text("Answer in JSON.", "Loved it")
    }
}

async fn server_replying(template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(template)
        .mount(&server)
        .await;
    server
}

async fn only_body(server: &MockServer) -> Value {
    let bodies = provider_support::received_bodies(server).await;
    assert_eq!(bodies.len(), 1);
    bodies.into_iter().next().unwrap()
}

/// The body's top-level field names, sorted.
fn fields(body: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

#[tokio::test]
async fn text_reply_joins_text_blocks_and_maps_usage() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", SECRET_KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .and(header("content-type", "application/json"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(message(
                    json!([
                        {"type": "text", "text": "Hello "},
                        {"type": "thinking", "thinking": "hidden", "signature": "x"},
                        {"type": "text", "text": "world"}
                    ]),
                    "end_turn",
                ))
                .insert_header("request-id", "req_011"),
        )
        .expect(1)
        .mount(&server)
        .await;

    let reply = provider(&server.uri())
        .complete(&ProviderRequest::text("Be brief.", "Say hello"))
        .await
        .unwrap();

    assert_eq!(reply.text, "Hello world");
    assert_eq!(reply.refusal, None);
    assert!(!reply.truncated);
    assert_eq!(reply.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(reply.model, "claude-sonnet-4-5-20250929");
    assert_eq!(reply.request_id.as_deref(), Some("req_011"));
    // input_tokens counts the whole prompt: uncached + cache writes + cache reads.
    assert_eq!(reply.usage.input_tokens, 35);
    assert_eq!(reply.usage.cached_input_tokens, 20);
    assert_eq!(reply.usage.cache_write_input_tokens, 5);
    assert_eq!(reply.usage.output_tokens, 7);

    let received = server.received_requests().await.unwrap();
    assert!(received[0].headers.get("authorization").is_none());
    assert_eq!(
        only_body(&server).await,
        json!({
            "model": "claude-test",
            "max_tokens": 4096,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": "Say hello"}]
        })
    );
}

#[tokio::test]
async fn request_limits_temperature_and_model_are_sent() {
    let server = server_replying(
        ResponseTemplate::new(200).set_body_json(message(text_blocks(&["ok"]), "end_turn")),
    )
    .await;
    let request = ProviderRequest {
        max_output_tokens: Some(300),
        temperature: Some(0.3),
        model: Some("claude-other".into()),
        ..ProviderRequest::text("", "hi")
    };
    provider(&server.uri()).complete(&request).await.unwrap();
    let body = only_body(&server).await;
    assert_eq!(
        fields(&body),
        ["max_tokens", "messages", "model", "temperature"]
    );
    assert_eq!(body["max_tokens"], 300);
    assert_eq!(body["temperature"], json!(0.3));
    assert_eq!(body["model"], "claude-other");
}

#[tokio::test]
async fn an_accepted_schema_goes_in_output_config() {
    let server = server_replying(ResponseTemplate::new(200).set_body_json(message(
        text_blocks(&[r#"{"value":"Positive"}"#]),
        "end_turn",
    )))
    .await;
    let reply = provider(&server.uri())
        .complete(&schema_request(strict_schema()))
        .await
        .unwrap();
    assert_eq!(reply.text, r#"{"value":"Positive"}"#);
    let body = only_body(&server).await;
    assert_eq!(
        fields(&body),
        ["max_tokens", "messages", "model", "output_config", "system"]
    );
    assert_eq!(
        body["output_config"],
        json!({"format": {"type": "json_schema", "schema": strict_schema()}})
    );
}

#[tokio::test]
async fn a_schema_anthropic_rejects_falls_back_to_the_prompt_and_says_so() {
    let logs = CapturedLogs::start();
    let server = server_replying(
        ResponseTemplate::new(200).set_body_json(message(text_blocks(&["{}"]), "end_turn")),
    )
    .await;
    let recursive = json!({
        "$ref": "#/$defs/Node",
        "$defs": {"Node": {
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            "required": ["children"],
            "additionalProperties": false
        }}
    });
    provider(&server.uri())
        .complete(&schema_request(recursive))
        .await
        .unwrap();
    let body = only_body(&server).await;
    assert_eq!(fields(&body), ["max_tokens", "messages", "model", "system"]);
    let logs = logs.text();
    assert!(
        logs.contains("sending the prompt contract without a schema")
            && logs.contains("recursive `$ref`"),
        "{logs}"
    );
}

#[tokio::test]
async fn json_object_requests_send_nothing_extra() {
    let server = server_replying(
        ResponseTemplate::new(200).set_body_json(message(text_blocks(&["{}"]), "end_turn")),
    )
    .await;
    let request = ProviderRequest {
        response_format: ResponseFormat::JsonObject,
        ..ProviderRequest::text("Reply in JSON.", "hi")
    };
    provider(&server.uri()).complete(&request).await.unwrap();
    assert_eq!(
        fields(&only_body(&server).await),
        ["max_tokens", "messages", "model", "system"]
    );
}

#[tokio::test]
async fn refusal_stop_reason_is_a_refusal() {
    let server = server_replying(ResponseTemplate::new(200).set_body_json(message(
        text_blocks(&["I can't help with that."]),
        "refusal",
    )))
    .await;
    let reply = provider(&server.uri())
        .complete(&schema_request(strict_schema()))
        .await
        .unwrap();
    assert_eq!(reply.refusal.as_deref(), Some("I can't help with that."));
    assert_eq!(reply.text, "");

    let silent =
        server_replying(ResponseTemplate::new(200).set_body_json(message(json!([]), "refusal")))
            .await;
    let reply = provider(&silent.uri())
        .complete(&schema_request(strict_schema()))
        .await
        .unwrap();
    assert_eq!(
        reply.refusal.as_deref(),
        Some("the model declined to answer (stop_reason: refusal)")
    );
}

#[tokio::test]
async fn max_tokens_and_context_window_are_truncation() {
    for reason in ["max_tokens", "model_context_window_exceeded"] {
        let server = server_replying(
            ResponseTemplate::new(200)
                .set_body_json(message(text_blocks(&[r#"{"value":"Pos"#]), reason)),
        )
        .await;
        let reply = provider(&server.uri())
            .complete(&ProviderRequest::text("", "hi"))
            .await
            .unwrap();
        assert!(reply.truncated, "{reason}");
        assert_eq!(reply.stop_reason.as_deref(), Some(reason));
        assert_eq!(reply.text, r#"{"value":"Pos"#);
    }
    let server = server_replying(
        ResponseTemplate::new(200).set_body_json(message(text_blocks(&["x"]), "stop_sequence")),
    )
    .await;
    let reply = provider(&server.uri())
        .complete(&ProviderRequest::text("", "hi"))
        .await
        .unwrap();
    assert!(!reply.truncated);
}

async fn error_for(
    status: u16,
    error_type: &str,
    message: &str,
    headers: &[(&str, &str)],
) -> ProviderError {
    let mut template = ResponseTemplate::new(status)
        .set_body_json(json!({"type": "error", "error": {"type": error_type, "message": message}}))
        .insert_header("request-id", "req_018");
    for (name, value) in headers {
        template = template.insert_header(*name, *value);
    }
    let server = server_replying(template).await;
    provider(&server.uri())
        .complete(&schema_request(strict_schema()))
        .await
        .unwrap_err()
}

/// Status, error type, message, extra headers, expected kind and `retry_after`.
type ErrorCase = (
    u16,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    ProviderErrorKind,
    Option<Duration>,
);

#[tokio::test]
async fn each_documented_error_status_is_classified() {
    use ProviderErrorKind::*;
    let cases: [ErrorCase; 12] = [
        (
            400,
            "invalid_request_error",
            "messages: at least one message is required",
            &[],
            InvalidRequest,
            None,
        ),
        (
            400,
            "invalid_request_error",
            "output_config.format.schema: Schemas contains unsupported keyword 'pattern'",
            &[],
            SchemaRejected,
            None,
        ),
        (
            401,
            "authentication_error",
            "invalid x-api-key",
            &[],
            Authentication,
            None,
        ),
        (
            402,
            "billing_error",
            "Your credit balance is too low to access the Anthropic API.",
            &[],
            Permission,
            None,
        ),
        (
            403,
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
            &[],
            Permission,
            None,
        ),
        (
            404,
            "not_found_error",
            "model: claude-test",
            &[],
            NotFound,
            None,
        ),
        (
            413,
            "request_too_large",
            "Request exceeds the maximum allowed number of bytes.",
            &[],
            InvalidRequest,
            None,
        ),
        (
            429,
            "rate_limit_error",
            "This request would exceed the rate limit for your organization of 50 requests per minute.",
            &[
                ("retry-after", "12"),
                ("anthropic-ratelimit-requests-remaining", "0"),
            ],
            RateLimited,
            Some(Duration::from_secs(12)),
        ),
        (500, "api_error", "Internal server error", &[], Server, None),
        (
            504,
            "timeout_error",
            "Request timed out",
            &[],
            Timeout,
            None,
        ),
        (
            529,
            "overloaded_error",
            "Overloaded",
            &[("x-should-retry", "true")],
            Overloaded,
            None,
        ),
        (
            503,
            "overloaded_error",
            "Service unavailable",
            &[],
            Overloaded,
            None,
        ),
    ];
    for (status, error_type, message, headers, kind, retry_after) in cases {
        let err = error_for(status, error_type, message, headers).await;
        assert_eq!(err.kind(), kind, "{status} {error_type}");
        assert_eq!(err.status(), Some(status));
        assert_eq!(err.message(), message);
        assert_eq!(err.request_id(), Some("req_018"));
        assert_eq!(err.retry_after(), retry_after, "{status}");
        assert_eq!(err.provider(), "anthropic");
        let transient = matches!(status, 429 | 500 | 503 | 504 | 529);
        assert_eq!(err.is_transient(), transient, "{status}");
    }
}

#[tokio::test]
async fn malformed_success_bodies_are_invalid_responses_with_an_excerpt() {
    let cases = [
        (
            format!("<html><body>{}</body></html>", "Gateway ".repeat(60)),
            "text/html",
            "(expected value",
        ),
        (
            r#"{"id":"msg_01","type":"message","content":[{"type":"te"#.to_owned(),
            "application/json",
            "(EOF while parsing",
        ),
        (
            r#"{"id":"msg_01","type":"message","role":"assistant"}"#.to_owned(),
            "application/json",
            "(missing field `content`",
        ),
    ];
    for (body, content_type, expected) in cases {
        let server =
            server_replying(ResponseTemplate::new(200).set_body_raw(body.clone(), content_type))
                .await;
        let err = provider(&server.uri())
            .complete(&ProviderRequest::text("", "hi"))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ProviderErrorKind::InvalidResponse);
        assert!(
            err.message()
                .starts_with(&format!("the reply is not a Messages response {expected}")),
            "{}",
            err.message()
        );
        let quoted = err.message().split("; body starts: ").nth(1).unwrap();
        assert!(quoted.chars().count() <= 200);
        assert!(quoted.starts_with(&body[..15]), "{quoted}");
    }
}
