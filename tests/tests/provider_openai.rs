//! The OpenAI provider against a loopback server speaking Chat Completions: request bodies
//! checked against OpenAI's published schema, replies, every documented error, malformed
//! bodies, timeouts, dropped connections, and the API key never leaking.

mod provider_support;

use std::sync::Arc;
use std::time::Duration;

use intent_rs::provider::{
    OpenAi, Provider, ProviderError, ProviderErrorKind, ProviderRequest, ResponseFormat,
};
use provider_support::{
    OPENAI_FIELDS, SECRET_KEY, assert_valid_chat_request, openai_schema_errors, received_bodies,
};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn provider(base_url: &str) -> OpenAi {
    OpenAi::new(SECRET_KEY)
        .with_base_url(base_url)
        .with_model("gpt-test")
}

fn completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": 120,
            "completion_tokens": 30,
            "total_tokens": 150,
            "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 12}
        }
    })
}

fn assistant(content: Value) -> Value {
    json!({"role": "assistant", "content": content, "refusal": null, "annotations": []})
}

fn schema_request() -> ProviderRequest {
    ProviderRequest {
        response_format: ResponseFormat::JsonSchema,
        schema: Some(Arc::new(json!({
            "type": "object",
            "properties": {"value": {"type": "string", "enum": ["Positive", "Negative"]}},
            "required": ["value"],
            "additionalProperties": false
        }))),
        schema_name: "Sentiment verdict!".into(),
        max_output_tokens: Some(256),
        temperature: Some(0.2),
        ..ProviderRequest::text("Answer in JSON.", "Loved it")
    }
}

async fn server_replying(template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(template)
        .mount(&server)
        .await;
    server
}

/// Every request this server received is a valid `CreateChatCompletionRequest`.
async fn assert_requests_valid(server: &MockServer) {
    let bodies = received_bodies(server).await;
    assert!(!bodies.is_empty());
    for body in &bodies {
        assert_valid_chat_request(body, OPENAI_FIELDS);
    }
}

#[tokio::test]
async fn text_reply_is_read_with_usage_model_and_request_id() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .and(header(
            "authorization",
            format!("Bearer {SECRET_KEY}").as_str(),
        ))
        .and(header("content-type", "application/json"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(completion(assistant(json!("Hello there")), "stop"))
                .insert_header("x-request-id", "req_123"),
        )
        .expect(1)
        .mount(&server)
        .await;

    let reply = provider(&server.uri())
        .complete(&ProviderRequest::text("Be brief.", "Say hello"))
        .await
        .unwrap();

    assert_eq!(reply.text, "Hello there");
    assert_eq!(reply.refusal, None);
    assert!(!reply.truncated);
    assert_eq!(reply.stop_reason.as_deref(), Some("stop"));
    assert_eq!(reply.model, "gpt-4o-mini-2024-07-18");
    assert_eq!(reply.request_id.as_deref(), Some("req_123"));
    assert_eq!(reply.usage.input_tokens, 120);
    assert_eq!(reply.usage.output_tokens, 30);
    assert_eq!(reply.usage.cached_input_tokens, 64);
    assert_eq!(reply.usage.cache_write_input_tokens, 0);
    // Reasoning tokens are reported apart, and stay part of the output tokens.
    assert_eq!(reply.usage.reasoning_tokens, 12);
    assert_requests_valid(&server).await;
    let bodies = received_bodies(&server).await;
    assert_eq!(
        bodies[0],
        json!({
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Say hello"}
            ]
        })
    );
}

#[tokio::test]
async fn strict_schema_request_has_the_documented_shape() {
    let server = server_replying(ResponseTemplate::new(200).set_body_json(completion(
        assistant(json!(r#"{"value":"Positive"}"#)),
        "stop",
    )))
    .await;

    let reply = provider(&server.uri())
        .complete(&schema_request())
        .await
        .unwrap();

    assert_eq!(reply.text, r#"{"value":"Positive"}"#);
    assert_requests_valid(&server).await;
    let body = &received_bodies(&server).await[0];
    assert_eq!(body["max_completion_tokens"], 256);
    assert!(body.get("max_tokens").is_none());
    assert_eq!(body["temperature"], json!(0.2));
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {
            "name": "Sentiment_verdict_",
            "schema": schema_request().schema.as_deref().unwrap(),
            "strict": true
        }})
    );
}

#[tokio::test]
async fn json_object_request_and_model_override() {
    let server = server_replying(
        ResponseTemplate::new(200).set_body_json(completion(assistant(json!("{}")), "stop")),
    )
    .await;
    let request = ProviderRequest {
        response_format: ResponseFormat::JsonObject,
        model: Some("gpt-other".into()),
        ..ProviderRequest::text("Reply in JSON.", "hi")
    };

    provider(&server.uri()).complete(&request).await.unwrap();

    assert_requests_valid(&server).await;
    let body = &received_bodies(&server).await[0];
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
    assert_eq!(body["model"], "gpt-other");
}

#[tokio::test]
async fn refusal_is_reported_with_empty_text() {
    let message =
        json!({"role": "assistant", "content": null, "refusal": "I can't help with that."});
    let server =
        server_replying(ResponseTemplate::new(200).set_body_json(completion(message, "stop")))
            .await;

    let reply = provider(&server.uri())
        .complete(&schema_request())
        .await
        .unwrap();

    assert_eq!(reply.refusal.as_deref(), Some("I can't help with that."));
    assert_eq!(reply.text, "");
    assert!(!reply.truncated);
    assert_requests_valid(&server).await;
}

#[tokio::test]
async fn length_is_truncation_and_content_filter_a_refusal() {
    let replying = |reason: &str| {
        server_replying(
            ResponseTemplate::new(200)
                .set_body_json(completion(assistant(json!(r#"{"value":"Pos"#)), reason)),
        )
    };
    let server = replying("length").await;
    let reply = provider(&server.uri())
        .complete(&schema_request())
        .await
        .unwrap();
    assert!(reply.truncated && reply.refusal.is_none());
    assert_eq!(reply.stop_reason.as_deref(), Some("length"));
    assert_eq!(reply.text, r#"{"value":"Pos"#);
    // The filter would withhold the same answer again: a refusal, not a cut to retry
    // with a shorter answer.
    let server = replying("content_filter").await;
    let reply = provider(&server.uri())
        .complete(&schema_request())
        .await
        .unwrap();
    assert!(!reply.truncated);
    assert_eq!(
        reply.refusal.as_deref(),
        Some("the provider's content filter withheld the reply (stopped for content_filter)")
    );
    assert_eq!(reply.text, "");
    assert_eq!(reply.stop_reason.as_deref(), Some("content_filter"));
}

#[tokio::test]
async fn null_content_without_refusal_is_an_empty_text() {
    let server = server_replying(
        ResponseTemplate::new(200).set_body_json(completion(assistant(Value::Null), "stop")),
    )
    .await;
    let reply = provider(&server.uri())
        .complete(&ProviderRequest::text("", "hi"))
        .await
        .unwrap();
    assert_eq!(reply.text, "");
    assert_eq!(reply.refusal, None);
}

struct ErrorCase {
    status: u16,
    error_type: &'static str,
    code: Value,
    param: Value,
    message: &'static str,
    headers: &'static [(&'static str, &'static str)],
    kind: ProviderErrorKind,
    transient: bool,
    retry_after: Option<Duration>,
}

fn case(
    status: u16,
    error_type: &'static str,
    message: &'static str,
    kind: ProviderErrorKind,
) -> ErrorCase {
    ErrorCase {
        status,
        error_type,
        code: Value::Null,
        param: Value::Null,
        message,
        headers: &[],
        kind,
        transient: kind.is_transient(),
        retry_after: None,
    }
}

async fn error_for(case: &ErrorCase) -> ProviderError {
    let body = json!({"error": {
        "message": case.message, "type": case.error_type, "param": case.param, "code": case.code
    }});
    let mut template = ResponseTemplate::new(case.status)
        .set_body_json(body)
        .insert_header("x-request-id", "req_err");
    for (name, value) in case.headers {
        template = template.insert_header(*name, *value);
    }
    let server = server_replying(template).await;
    let err = provider(&server.uri())
        .complete(&schema_request())
        .await
        .unwrap_err();
    assert_requests_valid(&server).await;
    err
}

#[tokio::test]
async fn each_documented_error_status_is_classified() {
    use ProviderErrorKind::*;
    let cases = [
        ErrorCase {
            code: json!("unsupported_parameter"),
            param: json!("max_tokens"),
            ..case(
                400,
                "invalid_request_error",
                "Unsupported parameter: 'max_tokens'.",
                InvalidRequest,
            )
        },
        ErrorCase {
            param: json!("response_format"),
            ..case(
                400,
                "invalid_request_error",
                "Invalid schema for response_format 'Sentiment': In context=(), 'additionalProperties' is required to be supplied and to be false.",
                SchemaRejected,
            )
        },
        ErrorCase {
            code: json!("invalid_api_key"),
            ..case(
                401,
                "invalid_request_error",
                "Incorrect API key provided: sk-test***1e7d.",
                Authentication,
            )
        },
        case(
            403,
            "invalid_request_error",
            "You are not allowed to sample from this model",
            Permission,
        ),
        ErrorCase {
            code: json!("model_not_found"),
            param: json!("model"),
            ..case(
                404,
                "invalid_request_error",
                "The model `gpt-test` does not exist or you do not have access to it.",
                NotFound,
            )
        },
        case(408, "server_error", "Request timed out.", Server),
        case(
            409,
            "server_error",
            "Conflict: the request could not be completed.",
            Server,
        ),
        case(
            422,
            "invalid_request_error",
            "Unprocessable entity.",
            InvalidRequest,
        ),
        ErrorCase {
            code: json!("rate_limit_exceeded"),
            headers: &[
                ("retry-after-ms", "1500"),
                ("retry-after", "2"),
                ("x-ratelimit-limit-requests", "500"),
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-requests", "6m0s"),
            ],
            retry_after: Some(Duration::from_millis(1500)),
            ..case(
                429,
                "requests",
                "Rate limit reached for gpt-test on requests per min (RPM): Limit 500, Used 500, Requested 1.",
                RateLimited,
            )
        },
        ErrorCase {
            code: json!("insufficient_quota"),
            headers: &[("x-should-retry", "false")],
            transient: false,
            ..case(
                429,
                "insufficient_quota",
                "You exceeded your current quota, please check your plan and billing details.",
                RateLimited,
            )
        },
        ErrorCase {
            headers: &[("retry-after", "7")],
            retry_after: Some(Duration::from_secs(7)),
            ..case(
                500,
                "server_error",
                "The server had an error while processing your request. Sorry about that!",
                Server,
            )
        },
        case(502, "server_error", "Bad gateway.", Server),
        case(
            503,
            "server_error",
            "The engine is currently overloaded, please try again later.",
            Overloaded,
        ),
        ErrorCase {
            headers: &[("x-should-retry", "true")],
            transient: true,
            ..case(
                400,
                "invalid_request_error",
                "Please retry this request.",
                InvalidRequest,
            )
        },
    ];
    for case in &cases {
        let err = error_for(case).await;
        let label = format!("HTTP {} {}", case.status, case.message);
        assert_eq!(err.kind(), case.kind, "{label}");
        assert_eq!(err.status(), Some(case.status), "{label}");
        assert_eq!(err.message(), case.message, "{label}");
        assert_eq!(err.request_id(), Some("req_err"), "{label}");
        assert_eq!(err.is_transient(), case.transient, "{label}");
        assert_eq!(err.retry_after(), case.retry_after, "{label}");
        assert_eq!(err.provider(), "openai");
    }
}

/// The excerpt an invalid-response error quotes.
fn quoted_excerpt(err: &ProviderError) -> &str {
    err.message().split("; body starts: ").nth(1).unwrap()
}

#[tokio::test]
async fn malformed_success_bodies_are_invalid_responses_with_an_excerpt() {
    let long_html = format!(
        "<!DOCTYPE html><html><body>{}</body></html>",
        "Sign in. ".repeat(100)
    );
    let cases: [(String, &str, &str); 4] = [
        (
            long_html,
            "text/html",
            "the reply is not a Chat Completions response (expected value",
        ),
        (
            r#"{"id":"chatcmpl-1","choices":[{"index":0,"message":{"role":"assis"#.to_owned(),
            "application/json",
            "the reply is not a Chat Completions response (EOF while parsing",
        ),
        (
            r#"{"id":"chatcmpl-1","object":"chat.completion"}"#.to_owned(),
            "application/json",
            "the reply is not a Chat Completions response (missing field `choices`",
        ),
        (
            r#"{"id":"chatcmpl-1","choices":[]}"#.to_owned(),
            "application/json",
            "the reply has no choices",
        ),
    ];
    for (body, content_type, expected) in cases {
        let server = server_replying(
            ResponseTemplate::new(200)
                .set_body_raw(body.clone(), content_type)
                .insert_header("x-request-id", "req_bad"),
        )
        .await;
        let err = provider(&server.uri())
            .complete(&ProviderRequest::text("", "hi"))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ProviderErrorKind::InvalidResponse, "{body}");
        assert!(!err.is_transient());
        assert!(err.message().starts_with(expected), "{}", err.message());
        assert_eq!(err.request_id(), Some("req_bad"));
        let quoted = quoted_excerpt(&err);
        assert!(quoted.chars().count() <= 200, "{quoted}");
        let start: String = body.chars().take(20).collect();
        assert!(quoted.starts_with(&start), "{quoted}");
    }
}

#[tokio::test]
async fn the_client_is_reused_across_calls() {
    let (url, connections) =
        provider_support::keep_alive_server(completion(assistant(json!("ok")), "stop")).await;
    let openai = provider(&url);
    for _ in 0..3 {
        assert_eq!(
            openai
                .complete(&ProviderRequest::text("", "hi"))
                .await
                .unwrap()
                .text,
            "ok"
        );
    }
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn the_request_schema_fixture_rejects_bad_bodies() {
    // Guards the validator itself: were the fixture empty or broken, every body would pass.
    let good = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    assert!(openai_schema_errors(&good).is_empty());
    for bad in [
        json!({"model": "m"}),
        json!({"model": "m", "messages": []}),
        json!({"model": "m", "messages": [{"role": "robot", "content": "hi"}]}),
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "xml"}}),
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": "many"}),
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 7}),
    ] {
        assert!(!openai_schema_errors(&bad).is_empty(), "accepted {bad}");
    }
    // `nullable` was rewritten into a type union: null is accepted where OpenAI allows it.
    let nullable = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": null});
    assert!(openai_schema_errors(&nullable).is_empty());
}

#[tokio::test]
async fn a_key_no_header_can_carry_is_an_authentication_error_without_the_key() {
    let key = format!("{SECRET_KEY}\n");
    let err = OpenAi::new(key)
        .with_base_url(provider_support::refuses_connections().await)
        .complete(&ProviderRequest::text("", "hi"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Authentication);
    assert!(!err.is_transient());
    assert!(!format!("{err} {err:?}").contains("LEAKCHECK"));
}

#[tokio::test]
async fn a_clone_given_another_base_url_sends_there_and_the_original_keeps_its_own() {
    let first = server_replying(
        ResponseTemplate::new(200).set_body_json(completion(assistant(json!("first")), "stop")),
    )
    .await;
    let second = server_replying(
        ResponseTemplate::new(200).set_body_json(completion(assistant(json!("second")), "stop")),
    )
    .await;
    let original = provider(&first.uri());
    // The first call builds (and keeps) the original's URL and headers.
    let request = ProviderRequest::text("", "hi");
    assert_eq!(original.complete(&request).await.unwrap().text, "first");

    let moved = original.clone().with_base_url(second.uri());
    assert_eq!(moved.complete(&request).await.unwrap().text, "second");
    assert_eq!(original.complete(&request).await.unwrap().text, "first");
    assert_eq!(received_bodies(&first).await.len(), 2);
    assert_eq!(received_bodies(&second).await.len(), 1);
}

#[tokio::test]
async fn a_base_url_that_is_not_a_url_is_a_clear_error_that_is_not_retried() {
    let err = OpenAi::new(SECRET_KEY)
        .with_base_url("api.openai.com/v1")
        .complete(&ProviderRequest::text("", "hi"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Configuration, "{err}");
    assert!(!err.is_transient());
    assert!(
        err.message()
            .contains("`api.openai.com/v1/chat/completions` is not a valid URL")
            && err.message().contains("absolute http(s) URL"),
        "{}",
        err.message()
    );
}
