//! The Gemini provider against a loopback server speaking the Gemini API: the request of
//! the spec's example A1 byte for byte (what a strict schema becomes), every finish
//! reason and a blocked prompt, Google's error bodies with `RetryInfo`, streaming with a
//! mid-stream fault and a cut stream, a three-attempt typed call's turns, usage with
//! cached and thinking tokens, and the API key never leaking.

mod provider_support;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use intent_rs::decision::{
    BinaryQuestion, DecisionEvaluator, DecisionQuestion, DecisionRequest, LogprobDecisionClient,
    ProbabilitySource,
};
use intent_rs::limits::RetryPolicy;
use intent_rs::media::{Document, Image};
use intent_rs::provider::gemini::GEMINI_SCHEMA_KEYWORDS;
use intent_rs::provider::{
    Gemini, Provider, ProviderError, ProviderErrorKind, ProviderRequest, ReplyPiece, ReplyStream,
    ResponseFormat,
};
use intent_rs::{
    IntentClient, IntentError, IntentOptions, IntentStream, IssueSource, Partial, StreamEvent,
    StrictCompatible, intents,
};
use provider_support::{CapturedLogs, SECRET_KEY};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const GENERATE: &str = "/v1beta/models/gemini-2.5-flash:generateContent";
const STREAM: &str = "/v1beta/models/gemini-2.5-flash:streamGenerateContent";

fn provider(server: &MockServer) -> Gemini {
    Gemini::new(SECRET_KEY).with_base_url(format!("{}/v1beta", server.uri()))
}

/// The strict schema of example A1.
fn a1_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"value": {"type": "object",
            "properties": {"number": {"type": "string"}, "total_cents": {"type": "integer"}},
            "required": ["number", "total_cents"], "additionalProperties": false}},
        "required": ["value"], "additionalProperties": false
    })
}

/// Example A1's request body (its `"temperature": 0` is written `0.0` by the shared
/// temperature formatting: the same JSON number, which `Value` equality tells apart).
fn a1_request_body() -> Value {
    json!({
        "systemInstruction": {"parts": [{"text": "Answer with JSON only."}]},
        "contents": [{"role": "user", "parts": [{"text": "Extract the invoice fields from document 7"}]}],
        "generationConfig": {
            "temperature": 0.0,
            "maxOutputTokens": 512,
            "candidateCount": 1,
            "responseMimeType": "application/json",
            "responseJsonSchema": a1_schema()
        }
    })
}

/// Example A1's reply.
fn a1_reply() -> Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": [{"text": "{\"value\": {\"number\": \"INV-0007\", \"total_cents\": 125000}}"}]},
            "finishReason": "STOP",
            "index": 0
        }],
        "usageMetadata": {
            "promptTokenCount": 41, "candidatesTokenCount": 19, "thoughtsTokenCount": 88,
            "totalTokenCount": 148, "cachedContentTokenCount": 0,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 41}]
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "mZ0uab2xKqKHz7IPq5OW4QY"
    })
}

/// A reply of `text` that ended with `finish_reason`.
fn reply_with(text: &str, finish_reason: &str) -> Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": finish_reason,
            "index": 0
        }],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "thoughtsTokenCount": 5,
                          "cachedContentTokenCount": 64, "totalTokenCount": 115},
        "modelVersion": "gemini-2.5-flash-001",
        "responseId": "resp-1"
    })
}

/// A1's request, as the runtime hands it to the provider; `schema` is the strict schema.
fn a1_request(schema: Value) -> ProviderRequest {
    ProviderRequest {
        response_format: ResponseFormat::JsonSchema,
        schema: Some(Arc::new(schema)),
        temperature: Some(0.0),
        max_output_tokens: Some(512),
        ..ProviderRequest::text(
            "Answer with JSON only.",
            "Extract the invoice fields from document 7",
        )
    }
}

async fn server_replying(route: &str, template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(route))
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

#[tokio::test]
async fn example_a1_is_sent_as_the_spec_shows_and_its_reply_read() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(GENERATE))
        .and(header("x-goog-api-key", SECRET_KEY))
        .and(header("content-type", "application/json"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(a1_reply())
                .insert_header("x-request-id", "req-a1"),
        )
        .expect(1)
        .mount(&server)
        .await;
    // The strict schema as another provider gets it, with keywords Gemini does not honour:
    // they go, and the verifier checks them locally.
    let mut schema = a1_schema();
    schema["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    schema["properties"]["value"]["properties"]["number"]["pattern"] = json!("^INV-");
    schema["properties"]["value"]["properties"]["total_cents"]["multipleOf"] = json!(1);

    let reply = provider(&server)
        .complete(&a1_request(schema))
        .await
        .unwrap();

    assert_eq!(only_body(&server).await, a1_request_body());
    let received = server.received_requests().await.unwrap();
    assert!(received[0].headers.get("authorization").is_none());
    assert_eq!(
        received[0].url.query(),
        None,
        "the key never goes in the URL"
    );
    assert_eq!(
        reply.text,
        r#"{"value": {"number": "INV-0007", "total_cents": 125000}}"#
    );
    assert_eq!(reply.stop_reason.as_deref(), Some("STOP"));
    assert!(!reply.truncated && reply.refusal.is_none());
    assert_eq!(reply.model, "gemini-2.5-flash");
    assert_eq!(
        reply.response_id.as_deref(),
        Some("mZ0uab2xKqKHz7IPq5OW4QY")
    );
    assert_eq!(reply.request_id.as_deref(), Some("req-a1"));
    // Thinking tokens are billed as output: 19 + 88.
    assert_eq!(reply.usage.input_tokens, 41);
    assert_eq!(reply.usage.output_tokens, 107);
    assert_eq!(reply.usage.cached_input_tokens, 0);
}

#[tokio::test]
async fn json_mode_text_mode_and_another_model() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1beta/models/gemini-2.5-pro:generateContent"))
        .respond_with(ResponseTemplate::new(200).set_body_json(reply_with("{}", "STOP")))
        .mount(&server)
        .await;
    let json_object = ProviderRequest {
        response_format: ResponseFormat::JsonObject,
        model: Some("gemini-2.5-pro".into()),
        ..ProviderRequest::text("", "hi")
    };
    let text = ProviderRequest {
        model: Some("models/gemini-2.5-pro".into()),
        ..ProviderRequest::text("", "hi")
    };
    let gemini = provider(&server);
    gemini.complete(&json_object).await.unwrap();
    gemini.complete(&text).await.unwrap();
    let bodies = provider_support::received_bodies(&server).await;
    assert_eq!(
        bodies[0],
        json!({
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "generationConfig": {"candidateCount": 1, "responseMimeType": "application/json"}
        })
    );
    assert_eq!(bodies[1]["generationConfig"], json!({"candidateCount": 1}));
    assert!(bodies[1].get("systemInstruction").is_none());
}

#[tokio::test]
async fn every_finish_reason_maps_onto_refusal_or_truncation() {
    let complete = ["STOP", "FINISH_REASON_UNSPECIFIED"];
    let refused = [
        "SAFETY",
        "RECITATION",
        "LANGUAGE",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    ];
    let cut = [
        "MAX_TOKENS",
        "OTHER",
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "TOO_MANY_TOOL_CALLS",
        "IMAGE_OTHER",
        "NO_IMAGE",
    ];
    for reason in complete.iter().chain(&refused).chain(&cut) {
        let server = server_replying(
            GENERATE,
            ResponseTemplate::new(200).set_body_json(reply_with("{\"value\": 1", reason)),
        )
        .await;
        let reply = provider(&server)
            .complete(&ProviderRequest::text("", "x"))
            .await
            .unwrap();
        assert_eq!(reply.stop_reason.as_deref(), Some(*reason));
        assert_eq!(reply.usage.output_tokens, 15, "{reason}");
        if complete.contains(reason) {
            assert!(!reply.truncated && reply.refusal.is_none(), "{reason}");
        } else if refused.contains(reason) {
            let refusal = reply.refusal.as_deref().unwrap_or_default();
            assert!(refusal.contains(reason), "{reason}: {refusal}");
            assert!(reply.text.is_empty() && !reply.truncated, "{reason}");
        } else {
            assert!(reply.truncated && reply.refusal.is_none(), "{reason}");
            assert_eq!(reply.text, "{\"value\": 1");
        }
    }
}

#[tokio::test]
async fn a_blocked_prompt_is_a_refusal_with_its_usage() {
    let server = server_replying(
        GENERATE,
        ResponseTemplate::new(200).set_body_json(json!({
            "promptFeedback": {"blockReason": "SAFETY", "safetyRatings":
                [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}]},
            "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 12},
            "modelVersion": "gemini-2.5-flash"
        })),
    )
    .await;
    let reply = provider(&server)
        .complete(&ProviderRequest::text("", "x"))
        .await
        .unwrap();
    let refusal = reply.refusal.unwrap();
    assert!(refusal.contains("blocked the prompt"), "{refusal}");
    assert!(refusal.contains("blockReason: SAFETY"), "{refusal}");
    assert_eq!(reply.usage.input_tokens, 12);
}

#[tokio::test]
async fn a_reply_without_candidates_or_block_reason_is_invalid() {
    for body in [
        json!({"usageMetadata": {}}),
        json!({"candidates": []}),
        json!([1]),
    ] {
        let server = server_replying(
            GENERATE,
            ResponseTemplate::new(200).set_body_json(body.clone()),
        )
        .await;
        let err = provider(&server)
            .complete(&ProviderRequest::text("", "x"))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ProviderErrorKind::InvalidResponse, "{body}");
        assert!(!err.is_transient());
    }
}

#[tokio::test]
async fn usage_counts_cached_and_thinking_tokens() {
    let server = server_replying(
        GENERATE,
        ResponseTemplate::new(200).set_body_json(json!({
            "candidates": [{"content": {"parts": [
                {"text": "weighing it", "thought": true}, {"text": "ok"}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 2100, "cachedContentTokenCount": 2048,
                "candidatesTokenCount": 3, "thoughtsTokenCount": 250, "totalTokenCount": 2353,
                "cacheTokensDetails": [{"modality": "TEXT", "tokenCount": 2048}]}
        })),
    )
    .await;
    let reply = provider(&server)
        .complete(&ProviderRequest::text("", "x"))
        .await
        .unwrap();
    assert_eq!(reply.text, "ok");
    assert_eq!(reply.usage.input_tokens, 2100);
    assert_eq!(reply.usage.cached_input_tokens, 2048);
    assert_eq!(reply.usage.output_tokens, 253);
    assert_eq!(reply.usage.reasoning_tokens, 250);
    assert_eq!(reply.usage.cache_write_input_tokens, 0);
    // The model the request named, when the reply names none.
    assert_eq!(reply.model, "gemini-2.5-flash");
}

fn google_error(code: u16, status: &str, message: &str, details: Value) -> ResponseTemplate {
    ResponseTemplate::new(code).set_body_json(json!({
        "error": {"code": code, "message": message, "status": status, "details": details}
    }))
}

async fn error_of(template: ResponseTemplate) -> ProviderError {
    let server = server_replying(GENERATE, template).await;
    provider(&server)
        .complete(&ProviderRequest::text("", "x"))
        .await
        .unwrap_err()
}

#[tokio::test]
async fn a_quota_error_waits_as_retry_info_says() {
    // Example A2's 429.
    let details = json!([
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
         "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                         "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                         "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
                         "quotaValue": "10"}]},
        {"@type": "type.googleapis.com/google.rpc.Help",
         "links": [{"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "27s"}
    ]);
    let err = error_of(google_error(
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details.",
        details.clone(),
    ))
    .await;
    assert_eq!(err.kind(), ProviderErrorKind::RateLimited);
    assert!(err.is_transient());
    assert_eq!(err.status(), Some(429));
    assert_eq!(err.retry_after(), Some(Duration::from_secs(27)));
    assert!(
        err.message()
            .contains("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"),
        "{}",
        err.message()
    );
    // A `retry-after` header, when a gateway sends one, comes first.
    let err = error_of(
        google_error(429, "RESOURCE_EXHAUSTED", "slow down", details)
            .insert_header("retry-after", "5"),
    )
    .await;
    assert_eq!(err.retry_after(), Some(Duration::from_secs(5)));
    // A per-day quota does not clear within a call's retries.
    let err = error_of(google_error(
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota.",
        json!([{"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},
               {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "40s"}]),
    ))
    .await;
    assert_eq!(err.kind(), ProviderErrorKind::RateLimited);
    assert!(!err.is_transient());
    assert!(err.message().contains("per-day quota"), "{}", err.message());
}

#[tokio::test]
async fn every_error_class_is_read_from_the_status_name() {
    let no_details = json!([]);
    let cases = [
        (
            400,
            "INVALID_ARGUMENT",
            "Request contains an invalid argument.",
            ProviderErrorKind::InvalidRequest,
        ),
        (
            400,
            "INVALID_ARGUMENT",
            "Invalid JSON payload received. Unknown name \"x\" at 'generation_config.response_json_schema': Cannot find field.",
            ProviderErrorKind::SchemaRejected,
        ),
        (
            400,
            "FAILED_PRECONDITION",
            "User location is not supported for the API use.",
            ProviderErrorKind::Permission,
        ),
        (
            401,
            "UNAUTHENTICATED",
            "Request had invalid authentication credentials.",
            ProviderErrorKind::Authentication,
        ),
        (
            403,
            "PERMISSION_DENIED",
            "Method doesn't allow unregistered callers.",
            ProviderErrorKind::Permission,
        ),
        (
            404,
            "NOT_FOUND",
            "models/gemini-9 is not found for API version v1beta.",
            ProviderErrorKind::NotFound,
        ),
        (
            500,
            "INTERNAL",
            "An internal error has occurred.",
            ProviderErrorKind::Server,
        ),
        (
            503,
            "UNAVAILABLE",
            "The model is overloaded. Please try again later.",
            ProviderErrorKind::Overloaded,
        ),
        (
            504,
            "DEADLINE_EXCEEDED",
            "Deadline expired before operation could complete.",
            ProviderErrorKind::Timeout,
        ),
    ];
    for (code, status, message, kind) in cases {
        let err = error_of(google_error(code, status, message, no_details.clone())).await;
        assert_eq!(err.kind(), kind, "{status}: {message}");
        assert_eq!(err.is_transient(), kind.is_transient(), "{status}");
        assert_eq!(err.message(), message);
        assert_eq!(err.status(), Some(code));
        assert_eq!(err.provider(), "gcp.gemini");
    }
    // A bad key is a 400 whose detail says so.
    let err = error_of(google_error(
        400,
        "INVALID_ARGUMENT",
        "API key not valid. Please pass a valid API key.",
        json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                "domain": "googleapis.com"}]),
    ))
    .await;
    assert_eq!(err.kind(), ProviderErrorKind::Authentication);
    // A body that is not Google's: the HTTP status decides, with an excerpt.
    let err =
        error_of(ResponseTemplate::new(502).set_body_string("<html>bad gateway</html>")).await;
    assert_eq!(err.kind(), ProviderErrorKind::Server);
    assert!(err.message().contains("bad gateway"), "{}", err.message());
}

#[tokio::test]
async fn the_key_never_leaks_into_errors_or_logs() {
    let logs = CapturedLogs::start();
    let err = error_of(google_error(
        400,
        "INVALID_ARGUMENT",
        &format!("API key not valid: {SECRET_KEY}"),
        json!([]),
    ))
    .await;
    assert!(!err.to_string().contains(SECRET_KEY), "{err}");
    assert!(err.message().contains("[redacted]"));
    assert!(!format!("{err:?}").contains(SECRET_KEY));
    assert!(!logs.text().contains(SECRET_KEY));
}

// ---------------------------------------------------------------------------------------
// Streaming

fn sse(chunks: &[Value]) -> String {
    chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\r\n\r\n"))
        .collect()
}

async fn stream_server(body: String) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(STREAM))
        .and(query_param("alt", "sse"))
        .and(header("x-goog-api-key", SECRET_KEY))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .insert_header("x-request-id", "req-stream")
                .set_body_string(body),
        )
        .mount(&server)
        .await;
    server
}

async fn pieces(stream: ReplyStream) -> Vec<Result<ReplyPiece, ProviderError>> {
    stream.collect().await
}

#[tokio::test]
async fn the_spec_stream_is_read_into_pieces_and_the_reply() {
    let body = sse(&[
        json!({"candidates":[{"content":{"role":"model","parts":[{"text":"{\"value\": {\"num"}]},"index":0}],
               "usageMetadata":{"promptTokenCount":41,"totalTokenCount":41},"modelVersion":"gemini-2.5-flash","responseId":"a1"}),
        json!({"candidates":[{"content":{"role":"model","parts":[{"text":"ber\": \"INV-0007\", \"total_cents\": 125000}}"}]},"finishReason":"STOP","index":0}],
               "usageMetadata":{"promptTokenCount":41,"candidatesTokenCount":19,"thoughtsTokenCount":4,"cachedContentTokenCount":32,"totalTokenCount":64},
               "modelVersion":"gemini-2.5-flash","responseId":"a1"}),
    ]);
    let server = stream_server(body).await;
    let stream = provider(&server)
        .stream(&a1_request(a1_schema()))
        .await
        .unwrap();
    let pieces = pieces(stream).await;
    let mut text = String::new();
    let mut finished = None;
    for piece in pieces {
        match piece.unwrap() {
            ReplyPiece::Text(piece) => text.push_str(&piece),
            ReplyPiece::Finished(reply) => finished = Some(reply),
        }
    }
    let reply = finished.expect("a finished reply");
    let expected = r#"{"value": {"number": "INV-0007", "total_cents": 125000}}"#;
    assert_eq!(text, expected);
    assert_eq!(reply.text, expected);
    assert_eq!(reply.usage.input_tokens, 41);
    assert_eq!(reply.usage.output_tokens, 23);
    assert_eq!(reply.usage.cached_input_tokens, 32);
    assert_eq!(reply.request_id.as_deref(), Some("req-stream"));
    assert_eq!(reply.response_id.as_deref(), Some("a1"));
    // The streamed request is the same body as a whole one.
    assert_eq!(only_body(&server).await, a1_request_body());
}

#[tokio::test]
async fn a_mid_stream_error_event_ends_the_stream_classified() {
    let body = sse(&[
        json!({"candidates":[{"content":{"parts":[{"text":"{\"value\": "}]}}]}),
        json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE",
                         "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}]}}),
    ]);
    let server = stream_server(body).await;
    let pieces = pieces(
        provider(&server)
            .stream(&ProviderRequest::text("", "x"))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(pieces.len(), 2, "{pieces:?}");
    assert_eq!(
        pieces[0].as_ref().unwrap(),
        &ReplyPiece::Text("{\"value\": ".into())
    );
    let err = pieces[1].as_ref().unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Overloaded);
    assert!(err.is_transient());
    assert_eq!(err.retry_after(), Some(Duration::from_millis(1500)));
    assert_eq!(err.request_id(), Some("req-stream"));
}

#[tokio::test]
async fn a_stream_cut_before_its_finish_reason_has_no_reply() {
    let body = sse(&[json!({"candidates":[{"content":{"parts":[{"text":"{\"val"}]}}]})]);
    let server = stream_server(body).await;
    let pieces = pieces(
        provider(&server)
            .stream(&ProviderRequest::text("", "x"))
            .await
            .unwrap(),
    )
    .await;
    assert!(
        pieces
            .iter()
            .all(|piece| matches!(piece, Ok(ReplyPiece::Text(_)))),
        "{pieces:?}"
    );
}

#[tokio::test]
async fn a_blocked_prompt_ends_the_stream_with_a_refusal() {
    let body = sse(&[
        json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
                            "usageMetadata": {"promptTokenCount": 9}}),
    ]);
    let server = stream_server(body).await;
    let pieces = pieces(
        provider(&server)
            .stream(&ProviderRequest::text("", "x"))
            .await
            .unwrap(),
    )
    .await;
    let [Ok(ReplyPiece::Finished(reply))] = pieces.as_slice() else {
        panic!("{pieces:?}")
    };
    assert!(
        reply
            .refusal
            .as_deref()
            .unwrap()
            .contains("PROHIBITED_CONTENT")
    );
    assert_eq!(reply.usage.input_tokens, 9);
}

#[tokio::test]
async fn an_error_before_the_stream_is_an_ordinary_error_reply() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(STREAM))
        .respond_with(google_error(
            429,
            "RESOURCE_EXHAUSTED",
            "Quota exceeded.",
            json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}]),
        ))
        .mount(&server)
        .await;
    let err = provider(&server)
        .stream(&ProviderRequest::text("", "x"))
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind(), ProviderErrorKind::RateLimited);
    assert_eq!(err.retry_after(), Some(Duration::from_secs(7)));
}

// ---------------------------------------------------------------------------------------
// Through the client

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
pub struct Invoice {
    /// The invoice number, as printed.
    number: String,
    total_cents: i64,
}

/// Every keyword in `schema` (and its subschemas) is one Gemini honours.
fn assert_only_gemini_keywords(schema: &Value, at: &str) {
    let Some(map) = schema.as_object() else {
        return;
    };
    for (keyword, value) in map {
        assert!(
            GEMINI_SCHEMA_KEYWORDS.contains(&keyword.as_str()),
            "`{keyword}` at {at}"
        );
        match keyword.as_str() {
            "properties" | "$defs" => {
                for (name, child) in value.as_object().unwrap() {
                    assert_only_gemini_keywords(child, &format!("{at}/{keyword}/{name}"));
                }
            }
            "anyOf" | "prefixItems" => {
                for (index, child) in value.as_array().unwrap().iter().enumerate() {
                    assert_only_gemini_keywords(child, &format!("{at}/{keyword}/{index}"));
                }
            }
            "items" | "additionalProperties" => {
                assert_only_gemini_keywords(value, &format!("{at}/{keyword}"));
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn a_three_attempt_typed_call_alternates_user_and_model_turns() {
    let server = MockServer::start().await;
    let replies = [
        // Cut off by the output limit (example A2).
        reply_with("{\"value\": {\"number\": \"INV-00", "MAX_TOKENS"),
        // Not the envelope.
        reply_with("{\"number\": \"INV-0007\"}", "STOP"),
        reply_with(
            "{\"value\": {\"number\": \"INV-0007\", \"total_cents\": 125000}}",
            "STOP",
        ),
    ];
    for (index, reply) in replies.into_iter().enumerate() {
        Mock::given(method("POST"))
            .and(path(GENERATE))
            .respond_with(ResponseTemplate::new(200).set_body_json(reply))
            .up_to_n_times(1)
            .with_priority(u8::try_from(index + 1).unwrap())
            .mount(&server)
            .await;
    }
    let client = IntentClient::builder()
        .provider(provider(&server))
        .retry_policy(RetryPolicy {
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
            ..RetryPolicy::default()
        })
        .build()
        .unwrap();
    let result = client
        .transform(
            "Invoice INV-0007, total 1,250.00",
            "Extract the invoice fields",
            IntentOptions::<Invoice>::new().max_attempts(3),
        )
        .await;
    assert_eq!(
        result.value,
        Some(Invoice {
            number: "INV-0007".into(),
            total_cents: 125_000
        }),
        "{result:?}"
    );
    assert_eq!(result.attempts.len(), 3);
    let first_issue = &result.attempts[0].issues[0];
    assert_eq!(first_issue.source, IssueSource::Provider);
    assert!(
        first_issue.message.contains("MAX_TOKENS"),
        "{}",
        first_issue.message
    );
    assert_eq!(result.attempts[2].model, "gemini-2.5-flash-001");
    // Usage adds up over the attempts: 100 in, 10 + 5 thinking out, 64 cached, each.
    assert_eq!(result.usage.input_tokens, 300);
    assert_eq!(result.usage.output_tokens, 45);
    assert_eq!(result.usage.cached_input_tokens, 192);

    let bodies = provider_support::received_bodies(&server).await;
    assert_eq!(bodies.len(), 3);
    for (attempt, body) in bodies.iter().enumerate() {
        let contents = body["contents"].as_array().unwrap();
        assert_eq!(contents.len(), 2 * attempt + 1);
        for (index, turn) in contents.iter().enumerate() {
            let role = if index % 2 == 0 { "user" } else { "model" };
            assert_eq!(turn["role"], role, "attempt {attempt}, turn {index}");
        }
        // A retry repeats the earlier turns unchanged (the cached prefix).
        if attempt > 0 {
            let earlier = bodies[attempt - 1]["contents"].as_array().unwrap();
            assert_eq!(contents[..earlier.len()], earlier[..], "attempt {attempt}");
        }
        let config = &body["generationConfig"];
        assert_eq!(config["responseMimeType"], "application/json");
        let schema = &config["responseJsonSchema"];
        assert_only_gemini_keywords(schema, "#");
        // `Invoice` becomes example A1's schema, with its title and doc comment (the
        // `int64` format schemars writes is gone: no provider reads it).
        let mut expected = a1_schema();
        expected["properties"]["value"]["title"] = json!("Invoice");
        expected["properties"]["value"]["properties"]["number"]["description"] =
            json!("The invoice number, as printed.");
        assert_eq!(schema, &expected);
    }
    assert_eq!(
        bodies[1]["contents"][1]["parts"][0]["text"],
        "{\"value\": {\"number\": \"INV-00"
    );
    assert_eq!(
        bodies[2]["contents"][3]["parts"][0]["text"],
        "{\"number\": \"INV-0007\"}"
    );
}

#[intents]
pub trait Invoices {
    #[intent("Extract the invoice fields")]
    async fn read_both(&self, scan: &Image, contract: Document) -> Result<Invoice, IntentError>;

    #[intent("Extract the invoice fields")]
    fn streamed(&self, email: &str) -> IntentStream<Invoice>;
}

const PNG: &[u8] = include_bytes!("../../examples/data/invoice.png");
const PDF: &[u8] = include_bytes!("../../examples/data/invoice.pdf");
const INVOICE_REPLY: &str = r#"{"value": {"number": "INV-0007", "total_cents": 125000}}"#;

fn invoices(server: &MockServer) -> InvoicesClient {
    InvoicesClient::new(
        IntentClient::builder()
            .provider(provider(server))
            .build()
            .unwrap(),
    )
}

#[tokio::test]
async fn images_and_pdfs_go_as_inline_data_parts_in_the_user_turn() {
    let server = server_replying(
        GENERATE,
        ResponseTemplate::new(200).set_body_json(reply_with(INVOICE_REPLY, "STOP")),
    )
    .await;
    let scan = Image::from_bytes(PNG).unwrap();
    let contract = Document::from_bytes(PDF).unwrap();
    let invoice = invoices(&server)
        .read_both(&scan, contract.clone())
        .await
        .unwrap();
    assert_eq!(invoice.number, "INV-0007");
    let body = only_body(&server).await;
    let parts = body["contents"][0]["parts"].as_array().unwrap();
    let inline: Vec<&Value> = parts
        .iter()
        .filter_map(|part| part.get("inlineData"))
        .collect();
    assert_eq!(
        inline,
        [
            &json!({"mimeType": "image/png", "data": scan.media().base64().unwrap()}),
            &json!({"mimeType": "application/pdf", "data": contract.media().base64().unwrap()}),
        ]
    );
    // Every other part is text, none empty, and no part is both.
    for part in parts {
        let keys: Vec<&String> = part.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 1, "{part}");
        if let Some(text) = part.get("text") {
            assert!(!text.as_str().unwrap().is_empty());
        }
    }
}

#[tokio::test]
async fn a_streamed_typed_call_shows_partials_and_ends_with_the_value() {
    let pieces: Vec<Value> = INVOICE_REPLY
        .as_bytes()
        .chunks(9)
        .map(|chunk| {
            json!({"candidates": [{"content": {"role": "model",
                "parts": [{"text": std::str::from_utf8(chunk).unwrap()}]}}]})
        })
        .chain([json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 80, "candidatesTokenCount": 20, "thoughtsTokenCount": 30},
            "modelVersion": "gemini-2.5-flash-002"
        })])
        .collect();
    let server = stream_server(sse(&pieces)).await;
    let mut stream = invoices(&server).streamed("Invoice INV-0007, total 1,250.00");
    let mut partials = 0;
    let mut last = None;
    while let Some(event) = stream.next().await {
        match event {
            StreamEvent::Partial { .. } => partials += 1,
            StreamEvent::Final(result) => last = Some(result),
            _ => {}
        }
    }
    let result = last.expect("a final event");
    assert_eq!(
        result.value,
        Some(Invoice {
            number: "INV-0007".into(),
            total_cents: 125_000
        }),
        "{result:?}"
    );
    assert!(partials > 0);
    assert_eq!(result.usage.input_tokens, 80);
    assert_eq!(result.usage.output_tokens, 50);
    assert_eq!(result.attempts[0].model, "gemini-2.5-flash-002");
}

#[tokio::test]
async fn a_decision_is_answered_from_gemini_log_probabilities() {
    let server = server_replying(
        GENERATE,
        ResponseTemplate::new(200).set_body_json(json!({
            "candidates": [{
                "content": {"role": "model", "parts": [{"text": "yes"}]},
                "finishReason": "MAX_TOKENS",
                "avgLogprobs": -0.02,
                "logprobsResult": {
                    "topCandidates": [{"candidates": [
                        {"token": "yes", "tokenId": 8505, "logProbability": -0.02},
                        {"token": "no", "tokenId": 956, "logProbability": -4.0}
                    ]}],
                    "chosenCandidates": [{"token": "yes", "tokenId": 8505, "logProbability": -0.02}]
                }
            }],
            "usageMetadata": {"promptTokenCount": 60, "candidatesTokenCount": 1, "totalTokenCount": 61},
            "modelVersion": "gemini-2.5-flash"
        })),
    )
    .await;
    let evaluator = DecisionEvaluator::new(LogprobDecisionClient::new(provider(&server)));
    let evaluation = evaluator
        .evaluate("Wrote the report and sent it.")
        .await
        .unwrap();
    assert!(evaluation.is_satisfied());
    let body = only_body(&server).await;
    let config = &body["generationConfig"];
    assert_eq!(config["responseLogprobs"], true);
    let asked = config["logprobs"].as_u64().unwrap();
    assert!((1..=20).contains(&asked), "{config}");
    assert_eq!(config["maxOutputTokens"], 1);
    // 2.5 Flash thinks by default; a decision's one token must not go to thinking.
    assert_eq!(config["thinkingConfig"], json!({"thinkingBudget": 0}));
}

#[tokio::test]
async fn a_decision_whose_reply_carries_no_log_probabilities_is_answered_stated() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(GENERATE))
        .respond_with(|request: &wiremock::Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            let config = &body["generationConfig"];
            // Gemini may answer a request for log-probabilities without them.
            let text = if config.get("responseLogprobs").is_some() {
                "yes".to_owned()
            } else {
                // The stated request has room for its JSON and no thinking either.
                assert_eq!(config["thinkingConfig"], json!({"thinkingBudget": 0}));
                json!({"value": {"completed": {"probability_yes": 0.97}}}).to_string()
            };
            ResponseTemplate::new(200).set_body_json(json!({
                "candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 60, "candidatesTokenCount": 1,
                    "totalTokenCount": 61}
            }))
        })
        .mount(&server)
        .await;
    let client = IntentClient::builder()
        .provider(provider(&server))
        .build()
        .unwrap();
    let request = DecisionRequest::about(
        "Wrote the report and sent it.",
        [DecisionQuestion::from(
            BinaryQuestion::new("completed", "Is the task done?").unwrap(),
        )],
    )
    .unwrap();
    let response = client.decide(&request).await.unwrap();
    assert_eq!(response.binary("completed").unwrap().probability(), 0.97);
    assert_eq!(response.source(), ProbabilitySource::Stated);
    assert_eq!(
        response.fallback_reason(),
        Some("the reply to `completed` carries no log-probabilities")
    );
    assert_eq!(provider_support::received_bodies(&server).await.len(), 2);
}

#[tokio::test]
async fn a_decision_on_a_model_that_cannot_stop_thinking_leaves_room_for_the_thinking() {
    let server = server_replying(
        "/v1beta/models/gemini-2.5-pro:generateContent",
        ResponseTemplate::new(200).set_body_json(json!({
            "candidates": [{
                "content": {"role": "model", "parts": [{"text": "yes"}]},
                "finishReason": "STOP",
                "logprobsResult": {
                    "topCandidates": [{"candidates": [
                        {"token": "yes", "tokenId": 8505, "logProbability": -0.05},
                        {"token": "no", "tokenId": 956, "logProbability": -3.0}
                    ]}],
                    "chosenCandidates": [{"token": "yes", "tokenId": 8505, "logProbability": -0.05}]
                }
            }],
            "usageMetadata": {"promptTokenCount": 60, "candidatesTokenCount": 1,
                "thoughtsTokenCount": 131, "totalTokenCount": 192},
            "modelVersion": "gemini-2.5-pro"
        })),
    )
    .await;
    let gemini = provider(&server).with_model("gemini-2.5-pro");
    let evaluator = DecisionEvaluator::new(LogprobDecisionClient::new(gemini));
    let evaluation = evaluator
        .evaluate("Wrote the report and sent it.")
        .await
        .unwrap();
    assert!(evaluation.is_satisfied());
    let body = only_body(&server).await;
    let config = &body["generationConfig"];
    // 2.5 Pro refuses a zero budget: the least one (128), and the answer's token beyond
    // the thinking's room.
    assert_eq!(config["thinkingConfig"], json!({"thinkingBudget": 128}));
    assert_eq!(config["maxOutputTokens"], 1 + 1024);
}
