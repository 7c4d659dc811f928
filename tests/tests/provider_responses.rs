//! The OpenAI Responses provider against loopback servers speaking `POST /v1/responses`:
//! request bodies against the spec's examples and OpenAI's published `CreateResponse`
//! schema, refusals, incomplete replies, every error class, streamed events with a fault in
//! the middle, a three-attempt typed call's turns, usage with cached and reasoning tokens,
//! decision questions from log-probabilities, and a batch job for `/v1/responses`.

mod provider_support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_util::StreamExt;
use intent_rs::batch::{BatchItem, BatchOptions};
use intent_rs::decision::{
    BinaryQuestion, DecisionClient, DecisionQuestion, DecisionRequest, LogprobDecisionClient,
    ProbabilitySource,
};
use intent_rs::provider::{
    OpenAiResponses, Provider, ProviderError, ProviderErrorKind, ProviderRequest, ReplyPiece,
    ResponseFormat,
};
use intent_rs::stream::StreamEvent;
use intent_rs::{AIResult, IntentClient, IntentOptions, IssueSource};
use provider_support::{CapturedLogs, SECRET_KEY, received_bodies};
use serde_json::{Value, json};
use wiremock::matchers::{any, header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The top-level fields the Responses provider may send.
const RESPONSES_FIELDS: &[&str] = &[
    "model",
    "instructions",
    "input",
    "text",
    "max_output_tokens",
    "temperature",
    "include",
    "top_logprobs",
    "store",
    "stream",
];

fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Value = serde_json::from_str(include_str!(
            "../fixtures/openai-responses-request.schema.json"
        ))
        .unwrap();
        jsonschema::validator_for(&schema).unwrap()
    })
}

/// Asserts `body` is a valid `CreateResponse` with only the provider's top-level fields,
/// `store` stated, and any schema name matching `[a-zA-Z0-9_-]{1,64}`.
fn assert_valid_request(body: &Value) {
    let errors: Vec<String> = validator()
        .iter_errors(body)
        .map(|err| format!("{err} at {}", err.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "request breaks the CreateResponse schema: {errors:#?}\n{body:#}"
    );
    for key in body.as_object().unwrap().keys() {
        assert!(
            RESPONSES_FIELDS.contains(&key.as_str()),
            "unexpected top-level field `{key}`"
        );
    }
    assert!(body["store"].is_boolean(), "store is always sent: {body}");
    if let Some(name) = body.pointer("/text/format/name") {
        let name = name.as_str().unwrap();
        assert!((1..=64).contains(&name.len()), "{name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }
}

#[test]
fn the_request_schema_fixture_rejects_bad_bodies() {
    let good = json!({"model": "m", "input": [{"role": "user", "content": "hi"}], "store": false});
    assert_valid_request(&good);
    let bad = [
        // Chat Completions' nested `json_schema` is not the Responses format.
        json!({"model": "m", "input": "hi", "text": {"format": {"type": "json_schema",
            "json_schema": {"name": "x", "schema": {"type": "object"}}}}}),
        // Below the API's minimum.
        json!({"model": "m", "input": "hi", "max_output_tokens": 1}),
        json!({"model": "m", "input": "hi", "store": "no"}),
        json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_image",
            "image_url": "https://example.com/a.png"}]}]}),
        json!({"model": "m", "input": "hi", "top_logprobs": 21}),
    ];
    for body in bad {
        assert!(
            validator().iter_errors(&body).next().is_some(),
            "the fixture accepts {body}"
        );
    }
}

async fn assert_requests_valid(server: &MockServer) {
    let bodies = received_bodies(server).await;
    assert!(!bodies.is_empty());
    for body in &bodies {
        assert_valid_request(body);
    }
}

fn provider(server: &MockServer) -> OpenAiResponses {
    OpenAiResponses::new(SECRET_KEY)
        .with_base_url(format!("{}/v1", server.uri()))
        .with_model("gpt-4.1-mini")
}

fn invoice_schema() -> Value {
    json!({"type": "object", "properties": {"value": {"type": "object",
        "properties": {"number": {"type": "string"}, "total_cents": {"type": "integer"}},
        "required": ["number", "total_cents"], "additionalProperties": false}},
        "required": ["value"], "additionalProperties": false})
}

/// The request of the spec's example C1.
fn c1_request() -> ProviderRequest {
    ProviderRequest {
        response_format: ResponseFormat::JsonSchema,
        schema: Some(Arc::new(invoice_schema())),
        schema_name: "invoice".into(),
        max_output_tokens: Some(512),
        ..ProviderRequest::text(
            "Answer with JSON only.",
            "Extract the invoice fields from document 7",
        )
    }
}

/// A Response with one message of `text` (the spec's example C1 reply, by default).
fn response(text: &str) -> Value {
    json!({
        "id": "resp_68a1f0c2d4e8819b", "object": "response", "created_at": 1764600000,
        "status": "completed", "error": null, "incomplete_details": null,
        "instructions": "Answer with JSON only.", "max_output_tokens": 512,
        "model": "gpt-4.1-mini-2025-04-14",
        "output": [{
            "id": "msg_68a1f0c3e1f0819b", "type": "message", "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}]
        }],
        "parallel_tool_calls": true, "previous_response_id": null, "store": false,
        "temperature": 1.0, "tool_choice": "auto", "tools": [], "top_p": 1.0, "metadata": {},
        "usage": {"input_tokens": 61, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 17, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 78}
    })
}

const C1_TEXT: &str = r#"{"value":{"number":"INV-0007","total_cents":125000}}"#;

async fn server_replying(template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(template)
        .mount(&server)
        .await;
    server
}

// ---------------------------------------------------------------------------------------
// Requests and replies

#[tokio::test]
async fn example_c1_is_sent_as_the_spec_shows_and_its_reply_read() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .and(header(
            "authorization",
            format!("Bearer {SECRET_KEY}").as_str(),
        ))
        .and(header("content-type", "application/json"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(response(C1_TEXT))
                .insert_header("x-request-id", "req_c1"),
        )
        .expect(1)
        .mount(&server)
        .await;

    let reply = provider(&server).complete(&c1_request()).await.unwrap();

    let body = &received_bodies(&server).await[0];
    assert_eq!(
        body,
        &json!({
            "model": "gpt-4.1-mini",
            "instructions": "Answer with JSON only.",
            "input": [{"role": "user", "content": "Extract the invoice fields from document 7"}],
            "text": {"format": {"type": "json_schema", "name": "invoice", "strict": true,
                "schema": invoice_schema()}},
            "max_output_tokens": 512,
            "store": false
        })
    );
    assert_requests_valid(&server).await;
    assert_eq!(reply.text, C1_TEXT);
    assert!(!reply.truncated && reply.refusal.is_none());
    assert_eq!(reply.stop_reason.as_deref(), Some("completed"));
    assert_eq!(reply.model, "gpt-4.1-mini-2025-04-14");
    assert_eq!(reply.request_id.as_deref(), Some("req_c1"));
    assert_eq!(reply.response_id.as_deref(), Some("resp_68a1f0c2d4e8819b"));
    assert_eq!(
        (reply.usage.input_tokens, reply.usage.output_tokens),
        (61, 17)
    );
}

#[tokio::test]
async fn example_c2_a_reasoning_models_incomplete_reply_is_truncated() {
    let c2 = json!({
        "id": "resp_68a1f1aa0b7c819b", "object": "response", "created_at": 1764600200,
        "status": "incomplete", "error": null,
        "incomplete_details": {"reason": "max_output_tokens"},
        "instructions": "Answer with JSON only.", "max_output_tokens": 64,
        "model": "o4-mini-2025-04-16",
        "output": [{"id": "rs_68a1f1ab11c4819b", "type": "reasoning", "summary": []}],
        "parallel_tool_calls": true, "store": false, "temperature": 1.0, "tool_choice": "auto",
        "tools": [], "top_p": 1.0, "metadata": {},
        "usage": {"input_tokens": 61, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 64, "output_tokens_details": {"reasoning_tokens": 64},
            "total_tokens": 125}
    });
    let server = server_replying(ResponseTemplate::new(200).set_body_json(c2)).await;
    let request = ProviderRequest {
        model: Some("o4-mini".into()),
        max_output_tokens: Some(64),
        ..c1_request()
    };

    let reply = provider(&server).complete(&request).await.unwrap();

    assert!(reply.truncated);
    assert_eq!(reply.text, "");
    assert_eq!(reply.stop_reason.as_deref(), Some("max_output_tokens"));
    assert_eq!(reply.model, "o4-mini-2025-04-16");
    assert_eq!(reply.usage.output_tokens, 64);
    let body = &received_bodies(&server).await[0];
    assert_eq!(body["model"], "o4-mini");
    assert_eq!(body["max_output_tokens"], 64);
    assert_requests_valid(&server).await;
}

#[tokio::test]
async fn a_refusal_is_reported_with_empty_text() {
    let mut body = response("");
    body["output"][0]["content"] =
        json!([{"type": "refusal", "refusal": "I can't help with that."}]);
    let server = server_replying(ResponseTemplate::new(200).set_body_json(body)).await;

    let reply = provider(&server).complete(&c1_request()).await.unwrap();

    assert_eq!(reply.refusal.as_deref(), Some("I can't help with that."));
    assert_eq!(reply.text, "");
    assert!(!reply.truncated);
}

#[tokio::test]
async fn a_content_filter_stop_is_a_refusal_naming_the_filter_not_a_truncation() {
    let mut body = response(r#"{"value": {"num"#);
    body["status"] = json!("incomplete");
    body["incomplete_details"] = json!({"reason": "content_filter"});
    let server = server_replying(ResponseTemplate::new(200).set_body_json(body)).await;

    let reply = provider(&server).complete(&c1_request()).await.unwrap();

    assert!(!reply.truncated);
    assert_eq!(
        reply.refusal.as_deref(),
        Some("the provider's content filter withheld the reply (stopped for content_filter)")
    );
    assert_eq!(reply.text, "");
    assert_eq!(reply.stop_reason.as_deref(), Some("content_filter"));
}

#[tokio::test]
async fn json_object_text_and_media_requests_are_valid_create_responses() {
    let server = server_replying(ResponseTemplate::new(200).set_body_json(response("{}"))).await;
    let provider = provider(&server).with_store(true);
    let json_object = ProviderRequest {
        response_format: ResponseFormat::JsonObject,
        temperature: Some(0.2),
        model: Some("gpt-other".into()),
        ..ProviderRequest::text("Reply in JSON.", "hi")
    };
    provider.complete(&json_object).await.unwrap();
    provider
        .complete(&ProviderRequest::text("", "plain"))
        .await
        .unwrap();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0".to_vec();
    let image = intent_rs::media::Image::from_bytes(png).unwrap();
    let document = intent_rs::media::Document::from_url("https://example.com/invoice.pdf").unwrap();
    let media = ProviderRequest {
        messages: vec![intent_rs::provider::Message::user_with_media(
            "Read this: and this",
            vec![
                intent_rs::provider::MediaPart {
                    at: 10,
                    media: image.media().clone(),
                },
                intent_rs::provider::MediaPart {
                    at: 19,
                    media: document.media().clone(),
                },
            ],
        )],
        ..ProviderRequest::text("sys", "")
    };
    provider.complete(&media).await.unwrap();

    assert_requests_valid(&server).await;
    let bodies = received_bodies(&server).await;
    assert_eq!(
        bodies[0]["text"],
        json!({"format": {"type": "json_object"}})
    );
    assert_eq!(bodies[0]["model"], "gpt-other");
    assert_eq!(bodies[0]["temperature"], json!(0.2));
    assert_eq!(bodies[0]["store"], json!(true));
    assert!(bodies[1].get("text").is_none() && bodies[1].get("instructions").is_none());
    let parts = &bodies[2]["input"][0]["content"];
    assert_eq!(
        parts[0],
        json!({"type": "input_text", "text": "Read this:"})
    );
    assert_eq!(parts[1]["type"], "input_image");
    assert!(
        parts[1]["image_url"]
            .as_str()
            .unwrap()
            .starts_with("data:image/png;base64,")
    );
    assert_eq!(parts[2], json!({"type": "input_text", "text": " and this"}));
    assert_eq!(
        parts[3],
        json!({"type": "input_file", "file_url": "https://example.com/invoice.pdf"})
    );
}

#[tokio::test]
async fn an_images_detail_is_sent_as_input_image_detail_and_auto_when_unset() {
    use intent_rs::media::{Image, ImageDetail};
    let server = server_replying(ResponseTemplate::new(200).set_body_json(response("{}"))).await;
    let provider = provider(&server);
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0".to_vec();
    for detail in [Some(ImageDetail::Low), Some(ImageDetail::High), None] {
        let image = Image::from_bytes(png.clone()).unwrap();
        let image = match detail {
            Some(detail) => image.with_detail(detail),
            None => image,
        };
        let request = ProviderRequest {
            messages: vec![intent_rs::provider::Message::user_with_media(
                "Read this:",
                vec![intent_rs::provider::MediaPart {
                    at: 10,
                    media: image.media().clone(),
                }],
            )],
            ..ProviderRequest::text("sys", "")
        };
        provider.complete(&request).await.unwrap();
    }
    // Each body is a valid `CreateResponse`: `detail` is one of the spec's values.
    assert_requests_valid(&server).await;
    let details: Vec<Value> = received_bodies(&server)
        .await
        .iter()
        .map(|body| body["input"][0]["content"][1]["detail"].clone())
        .collect();
    assert_eq!(details, [json!("low"), json!("high"), json!("auto")]);
}

#[tokio::test]
async fn usage_reads_cached_cache_write_and_reasoning_tokens() {
    let mut body = response(C1_TEXT);
    body["usage"] = json!({"input_tokens": 2048,
        "input_tokens_details": {"cached_tokens": 1920, "cache_write_tokens": 128},
        "output_tokens": 300, "output_tokens_details": {"reasoning_tokens": 283},
        "total_tokens": 2348});
    let server = server_replying(ResponseTemplate::new(200).set_body_json(body)).await;

    let reply = provider(&server).complete(&c1_request()).await.unwrap();

    assert_eq!(reply.usage.input_tokens, 2048);
    assert_eq!(reply.usage.cached_input_tokens, 1920);
    assert_eq!(reply.usage.cache_write_input_tokens, 128);
    // Reasoning tokens are output tokens: billed as such, part of the count, and
    // reported apart.
    assert_eq!(reply.usage.output_tokens, 300);
    assert_eq!(reply.usage.reasoning_tokens, 283);
}

// ---------------------------------------------------------------------------------------
// Errors

async fn error_for(template: ResponseTemplate) -> ProviderError {
    let server = server_replying(template).await;
    provider(&server).complete(&c1_request()).await.unwrap_err()
}

#[tokio::test]
async fn a_429_is_rate_limited_with_the_wait_the_server_asks_for() {
    let error = error_for(
        ResponseTemplate::new(429)
            .insert_header("retry-after", "7")
            .insert_header("x-request-id", "req_429")
            .set_body_json(
                json!({"error": {"message": "Rate limit reached for gpt-4.1-mini",
                "type": "requests", "param": null, "code": "rate_limit_exceeded"}}),
            ),
    )
    .await;
    assert_eq!(error.kind(), ProviderErrorKind::RateLimited);
    assert!(error.is_transient());
    assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
    assert_eq!(error.status(), Some(429));
    assert_eq!(error.request_id(), Some("req_429"));
    assert!(error.message().contains("Rate limit reached"));
}

#[tokio::test]
async fn a_400_naming_the_schema_is_schema_rejected_and_other_statuses_are_classified() {
    let error = error_for(ResponseTemplate::new(400).set_body_json(json!({"error": {
        "message": "Invalid schema for response_format 'invoice': In context=(), 'additionalProperties' is required to be supplied and to be false.",
        "type": "invalid_request_error", "param": "text.format.schema", "code": "invalid_json_schema"}})))
    .await;
    assert_eq!(error.kind(), ProviderErrorKind::SchemaRejected);
    assert!(!error.is_transient());

    let error = error_for(ResponseTemplate::new(400).set_body_json(json!({"error": {
        "message": "Invalid 'input[0].content': empty", "type": "invalid_request_error",
        "param": "input", "code": null}})))
    .await;
    assert_eq!(error.kind(), ProviderErrorKind::InvalidRequest);

    let error = error_for(ResponseTemplate::new(401).set_body_json(json!({"error": {
        "message": "Incorrect API key provided: sk-test-LEAKCHECK-5f3a9c1e7d.",
        "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}})))
    .await;
    assert_eq!(error.kind(), ProviderErrorKind::Authentication);
    assert!(!error.is_transient());
    assert!(!error.to_string().contains(SECRET_KEY), "{error}");

    let error = error_for(ResponseTemplate::new(404).set_body_json(json!({"error": {
        "message": "The model `gpt-nope` does not exist", "type": "invalid_request_error"}})))
    .await;
    assert_eq!(error.kind(), ProviderErrorKind::NotFound);

    let error =
        error_for(ResponseTemplate::new(500).set_body_string("<html>bad gateway</html>")).await;
    assert_eq!(error.kind(), ProviderErrorKind::Server);
    assert!(error.is_transient());
    let error = error_for(ResponseTemplate::new(503)).await;
    assert_eq!(error.kind(), ProviderErrorKind::Overloaded);
}

#[tokio::test]
async fn a_failed_response_in_a_200_body_is_a_classified_error() {
    let mut body = response("");
    body["status"] = json!("failed");
    body["output"] = json!([]);
    body["error"] =
        json!({"code": "server_error", "message": "The model failed to generate a response."});
    let error = error_for(
        ResponseTemplate::new(200)
            .set_body_json(body.clone())
            .insert_header("x-request-id", "req_f"),
    )
    .await;
    assert_eq!(error.kind(), ProviderErrorKind::Server);
    assert!(error.is_transient());
    assert_eq!(error.request_id(), Some("req_f"));
    body["error"] = json!({"code": "invalid_prompt", "message": "Your prompt was flagged."});
    let error = error_for(ResponseTemplate::new(200).set_body_json(body)).await;
    assert_eq!(error.kind(), ProviderErrorKind::InvalidRequest);
    assert!(!error.is_transient());
}

#[tokio::test]
async fn the_key_never_appears_in_errors_debug_or_logs() {
    let logs = CapturedLogs::start();
    let error = error_for(
        ResponseTemplate::new(400).set_body_json(json!({"error": {
        "message": format!("bad request echoing {SECRET_KEY}"), "type": "invalid_request_error"}})),
    )
    .await;
    let printed = format!("{error} {error:?}");
    let provider = OpenAiResponses::new(SECRET_KEY);
    let debug = format!("{provider:?}");
    for text in [printed, debug, logs.text()] {
        assert!(!text.contains(SECRET_KEY), "{text}");
    }
}

// ---------------------------------------------------------------------------------------
// Streaming

fn event(data: Value) -> String {
    let kind = data["type"].as_str().unwrap().to_owned();
    format!("event: {kind}\ndata: {data}\n\n")
}

/// The events of a streamed Response carrying `text` in pieces of `size` bytes, ending
/// with `terminal` (`response.completed` or `response.incomplete`).
fn stream_events(text: &str, size: usize, terminal: &str) -> Vec<String> {
    let mut events = vec![
        event(json!({"type": "response.created", "sequence_number": 0,
            "response": {"id": "resp_s", "object": "response", "status": "in_progress", "output": [], "usage": null}})),
        event(
            json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
            "item": {"id": "msg_s", "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
        ),
    ];
    let mut rest = text;
    let mut sequence = 2;
    while !rest.is_empty() {
        let mut cut = size.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        events.push(event(json!({"type": "response.output_text.delta", "sequence_number": sequence,
            "item_id": "msg_s", "output_index": 0, "content_index": 0, "delta": &rest[..cut], "logprobs": []})));
        rest = &rest[cut..];
        sequence += 1;
    }
    let (status, details) = match terminal {
        "response.incomplete" => ("incomplete", json!({"reason": "max_output_tokens"})),
        _ => ("completed", Value::Null),
    };
    events.push(event(json!({"type": terminal, "sequence_number": sequence,
        "response": {"id": "resp_s", "object": "response", "status": status,
            "incomplete_details": details, "model": "gpt-4.1-mini-2025-04-14",
            "output": [{"id": "msg_s", "type": "message", "status": status, "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]}],
            "usage": {"input_tokens": 321, "input_tokens_details": {"cached_tokens": 256},
                "output_tokens": 54, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 375}}})));
    events
}

fn sse(events: &[String]) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .insert_header("x-request-id", "req_stream")
        .set_body_string(events.concat())
}

#[tokio::test]
async fn a_stream_is_read_into_text_pieces_and_the_finished_reply() {
    let server = server_replying(sse(&stream_events(C1_TEXT, 7, "response.completed"))).await;
    let mut stream = provider(&server).stream(&c1_request()).await.unwrap();
    let mut text = String::new();
    let mut finished = None;
    while let Some(piece) = stream.next().await {
        match piece.unwrap() {
            ReplyPiece::Text(piece) => text.push_str(&piece),
            ReplyPiece::Finished(reply) => finished = Some(reply),
        }
    }
    let reply = finished.expect("a finished reply");
    assert_eq!(text, C1_TEXT);
    assert_eq!(reply.text, C1_TEXT);
    assert_eq!(reply.model, "gpt-4.1-mini-2025-04-14");
    assert_eq!(reply.request_id.as_deref(), Some("req_stream"));
    assert_eq!(reply.response_id.as_deref(), Some("resp_s"));
    assert_eq!(reply.usage.cached_input_tokens, 256);
    let body = &received_bodies(&server).await[0];
    assert_eq!(body["stream"], json!(true));
    assert!(body.get("stream_options").is_none());
    assert_requests_valid(&server).await;
}

/// A reply to each request in turn, the last repeated.
struct InTurn(Mutex<Vec<ResponseTemplate>>);

impl InTurn {
    fn new(replies: Vec<ResponseTemplate>) -> Self {
        let mut replies = replies;
        replies.reverse();
        Self(Mutex::new(replies))
    }
}

impl Respond for InTurn {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let mut replies = self.0.lock().unwrap();
        if replies.len() > 1 {
            replies.pop().unwrap()
        } else {
            replies[0].clone()
        }
    }
}

async fn server_in_turn(replies: Vec<ResponseTemplate>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(InTurn::new(replies))
        .mount(&server)
        .await;
    server
}

#[derive(
    Debug,
    Clone,
    PartialEq,
    serde::Deserialize,
    schemars::JsonSchema,
    intent_rs::StrictCompatible,
    intent_rs::Partial,
)]
struct Invoice {
    number: String,
    total_cents: i64,
}

fn client(provider: OpenAiResponses) -> IntentClient {
    IntentClient::builder().provider(provider).build().unwrap()
}

async fn collect(
    mut stream: intent_rs::IntentStream<Invoice>,
) -> (Vec<StreamEvent<Invoice>>, AIResult<Invoice>) {
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let Some(StreamEvent::Final(result)) = events.pop() else {
        panic!("the last event is not the final one")
    };
    (events, result)
}

const INVOICE: &str = r#"{"value": {"number": "INV-0007", "total_cents": 125000}}"#;

#[tokio::test]
async fn a_server_error_event_in_the_middle_of_a_stream_is_retried() {
    let mut broken = stream_events(INVOICE, 9, "response.completed");
    broken.truncate(4);
    broken.push(event(
        json!({"type": "error", "sequence_number": 4, "code": "server_error",
        "message": "The server had an error processing your request.", "param": null}),
    ));
    let server = server_in_turn(vec![
        sse(&broken),
        sse(&stream_events(INVOICE, 11, "response.completed")),
    ])
    .await;
    let client = client(provider(&server));
    let (events, result) = collect(client.transform_stream(
        "Invoice INV-0007 ...",
        "Extract the invoice",
        IntentOptions::<Invoice>::new().max_attempts(1),
    ))
    .await;
    assert_eq!(
        result.value,
        Some(Invoice {
            number: "INV-0007".into(),
            total_cents: 125000
        }),
        "{result:?}"
    );
    let record = &result.attempts[0];
    assert_eq!(record.provider_retries.len(), 1, "{record:?}");
    // The retry names the kind; the server's words are kept on the error, not shown.
    assert!(
        record.provider_retries[0].contains("server error"),
        "{:?}",
        record.provider_retries
    );
    assert_eq!(record.model_calls, 2);
    assert_eq!(result.usage.cached_input_tokens, 256);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::Retry { .. }))
    );
}

#[tokio::test]
async fn an_invalid_prompt_event_in_the_middle_ends_the_call_and_an_incomplete_stream_is_truncated()
{
    let mut broken = stream_events(INVOICE, 9, "response.completed");
    broken.truncate(3);
    broken.push(event(
        json!({"type": "error", "sequence_number": 3, "code": "invalid_prompt",
        "message": "Invalid prompt: flagged", "param": null}),
    ));
    let server = server_in_turn(vec![sse(&broken)]).await;
    let (_, result) = collect(client(provider(&server)).transform_stream(
        "Invoice",
        "Extract the invoice",
        IntentOptions::<Invoice>::new().max_attempts(3),
    ))
    .await;
    assert!(result.value.is_none());
    assert_eq!(result.issues[0].source, IssueSource::Provider);
    assert!(provider_words(&result.issues[0]).contains("Invalid prompt"));
    assert_eq!(
        result.failure_kind(),
        Some(intent_rs::FailureKind::InvalidRequest)
    );
    assert_eq!(received_bodies(&server).await.len(), 1);

    let server = server_in_turn(vec![sse(&stream_events(
        &INVOICE[..30],
        9,
        "response.incomplete",
    ))])
    .await;
    let (_, result) = collect(client(provider(&server)).transform_stream(
        "Invoice",
        "Extract the invoice",
        IntentOptions::<Invoice>::new().max_attempts(1),
    ))
    .await;
    assert!(result.value.is_none());
    assert!(
        result.issues[0].message.contains("cut off"),
        "{:?}",
        result.issues
    );
    assert_eq!(result.attempts[0].raw_output, &INVOICE[..30]);
}

#[tokio::test]
async fn a_failed_terminal_event_is_a_classified_error() {
    let mut events = stream_events(INVOICE, 9, "response.completed");
    events.truncate(3);
    events.push(event(
        json!({"type": "response.failed", "sequence_number": 3,
        "response": {"id": "resp_f", "status": "failed", "output": [],
            "error": {"code": "rate_limit_exceeded", "message": "Rate limit reached"}}}),
    ));
    let server = server_in_turn(vec![sse(&events)]).await;
    let mut stream = provider(&server).stream(&c1_request()).await.unwrap();
    let mut last = None;
    while let Some(piece) = stream.next().await {
        last = Some(piece);
    }
    let error = last.unwrap().unwrap_err();
    assert_eq!(error.kind(), ProviderErrorKind::RateLimited);
    assert_eq!(error.request_id(), Some("req_stream"));
}

#[tokio::test]
async fn an_error_status_before_the_stream_is_classified() {
    let server = server_in_turn(vec![
        ResponseTemplate::new(429)
            .insert_header("retry-after", "3")
            .set_body_json(json!({"error": {"message": "slow down", "type": "requests"}})),
    ])
    .await;
    let error = match provider(&server).stream(&c1_request()).await {
        Err(error) => error,
        Ok(_) => panic!("a 429 is an error"),
    };
    assert_eq!(error.kind(), ProviderErrorKind::RateLimited);
    assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));
}

// ---------------------------------------------------------------------------------------
// Typed calls, decisions

#[tokio::test]
async fn a_three_attempt_typed_call_sends_each_retry_as_turns_after_the_first_request() {
    let server = server_in_turn(vec![
        ResponseTemplate::new(200).set_body_json(response(r#"{"value": {"number": 7}}"#)),
        ResponseTemplate::new(200).set_body_json(response("not json at all")),
        ResponseTemplate::new(200).set_body_json(response(INVOICE)),
    ])
    .await;
    let client = client(provider(&server));

    let result = client
        .transform(
            "Invoice INV-0007, total 1250.00",
            "Extract the invoice",
            IntentOptions::<Invoice>::new().max_attempts(3),
        )
        .await;

    assert_eq!(
        result.value.as_ref().map(|v| v.total_cents),
        Some(125000),
        "{result:?}"
    );
    assert_eq!(result.attempts.len(), 3);
    assert_eq!(result.usage.input_tokens, 3 * 61);
    let bodies = received_bodies(&server).await;
    assert_eq!(bodies.len(), 3);
    for body in &bodies {
        assert_valid_request(body);
        assert_eq!(body["instructions"], bodies[0]["instructions"]);
        assert_eq!(body["text"], bodies[0]["text"]);
        assert_eq!(body["text"]["format"]["type"], "json_schema");
        assert_eq!(body["text"]["format"]["strict"], true);
        assert_eq!(body["store"], false);
        // The first request is repeated unchanged, so the prompt cache serves it.
        assert_eq!(body["input"][0], bodies[0]["input"][0]);
    }
    let turns = |body: &Value| -> Vec<(String, String)> {
        body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["role"].as_str().unwrap().to_owned(),
                    m["content"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let roles = |body: &Value| -> Vec<String> { turns(body).into_iter().map(|(r, _)| r).collect() };
    assert_eq!(roles(&bodies[0]), ["user"]);
    assert_eq!(roles(&bodies[1]), ["user", "assistant", "user"]);
    assert_eq!(
        roles(&bodies[2]),
        ["user", "assistant", "user", "assistant", "user"]
    );
    let last = turns(&bodies[2]);
    assert_eq!(last[1].1, r#"{"value": {"number": 7}}"#);
    assert_eq!(last[3].1, "not json at all");
    assert_eq!(turns(&bodies[1])[..3], last[..3]);
}

#[tokio::test]
async fn decision_questions_are_answered_from_log_probabilities() {
    let top = json!([
        {"token": "yes", "logprob": 0.8f64.ln(), "bytes": [121, 101, 115]},
        {"token": " no", "logprob": 0.15f64.ln(), "bytes": [32, 110, 111]},
        {"token": "Maybe", "logprob": 0.05f64.ln(), "bytes": [77]}
    ]);
    let mut body = response("yes");
    body["output"][0]["content"][0]["logprobs"] = json!([{"token": "yes", "logprob": 0.8f64.ln(), "bytes": [121, 101, 115], "top_logprobs": top}]);
    let server = server_replying(ResponseTemplate::new(200).set_body_json(body)).await;
    let decisions = LogprobDecisionClient::new(provider(&server));
    let question: DecisionQuestion = BinaryQuestion::new("resolved", "Is it resolved?")
        .unwrap()
        .into();
    let request = DecisionRequest::new(json!({"ticket": "fixed, thanks"}), vec![question]).unwrap();

    let response = decisions.decide(&request).await.unwrap();

    assert_eq!(response.source(), ProbabilitySource::LogProbabilities);
    let resolved = response.binary("resolved").unwrap();
    assert!((resolved.probability() - 0.8 / 0.95).abs() < 1e-9);
    let sent = &received_bodies(&server).await[0];
    assert_valid_request(sent);
    assert_eq!(sent["include"], json!(["message.output_text.logprobs"]));
    assert_eq!(sent["top_logprobs"], json!(20));
    // One token asked for; the API's minimum is 16.
    assert_eq!(sent["max_output_tokens"], json!(16));
    assert!(sent.get("text").is_none());
}

// ---------------------------------------------------------------------------------------
// Batch

/// A loopback Batch API for `/v1/responses`: files, batches that end on their second
/// look, output and error files; every line is answered by `answer`.
struct BatchFake {
    state: Arc<Mutex<BatchState>>,
}

#[derive(Default)]
struct BatchState {
    files: HashMap<String, String>,
    /// Each batch's lines, and how often it was looked at.
    batches: Vec<(Vec<Value>, u32)>,
    endpoints: Vec<Value>,
}

/// `{"value": <words after "words:">}`; an item with `reject` in it fails with a 400.
fn batch_answer(body: &Value) -> Result<String, String> {
    let user = body["input"][0]["content"].as_str().unwrap_or_default();
    let words = user
        .split_once("words:")
        .map(|(_, rest)| rest.split(['\n', '"']).next().unwrap_or_default())
        .unwrap_or_default();
    if words.contains("reject") {
        return Err("this request is refused".into());
    }
    Ok(format!(
        r#"{{"value": {}}}"#,
        words.split_whitespace().count()
    ))
}

impl Respond for BatchFake {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let auth = request
            .headers
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        if auth != format!("Bearer {SECRET_KEY}") {
            return ResponseTemplate::new(401).set_body_json(
                json!({"error": {"message": "bad key", "type": "invalid_request_error"}}),
            );
        }
        let mut state = self.state.lock().unwrap();
        let path = request.url.path().to_owned();
        match (request.method.as_str(), path.as_str()) {
            ("POST", "/v1/files") => {
                let body = String::from_utf8_lossy(&request.body).into_owned();
                assert!(body.contains("name=\"purpose\"\r\n\r\nbatch"));
                let id = format!("file-in-{}", state.files.len());
                state.files.insert(id.clone(), body);
                ResponseTemplate::new(200).set_body_json(json!({"id": id, "object": "file"}))
            }
            ("POST", "/v1/batches") => {
                let body: Value = serde_json::from_slice(&request.body).unwrap();
                state.endpoints.push(body["endpoint"].clone());
                let file = &state.files[body["input_file_id"].as_str().unwrap()];
                let lines: Vec<Value> = file
                    .lines()
                    .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
                    .filter(|line| line.get("custom_id").is_some())
                    .collect();
                state.batches.push((lines, 0));
                let id = format!("batch_{}", state.batches.len() - 1);
                ResponseTemplate::new(200)
                    .set_body_json(json!({"id": id, "object": "batch", "status": "validating"}))
            }
            ("GET", p) if p.starts_with("/v1/batches/") => {
                let index: usize = p.trim_start_matches("/v1/batches/batch_").parse().unwrap();
                state.batches[index].1 += 1;
                let done = state.batches[index].1 > 1;
                ResponseTemplate::new(200).set_body_json(json!({
                    "id": format!("batch_{index}"), "object": "batch", "endpoint": "/v1/responses",
                    "status": if done { "completed" } else { "in_progress" },
                    "output_file_id": done.then(|| format!("file-out-{index}")),
                    "error_file_id": done.then(|| format!("file-err-{index}")),
                }))
            }
            ("GET", p) if p.starts_with("/v1/files/") && p.ends_with("/content") => {
                let file = p
                    .trim_start_matches("/v1/files/")
                    .trim_end_matches("/content");
                let (kind, index) = file.trim_start_matches("file-").split_once('-').unwrap();
                let index: usize = index.parse().unwrap();
                let mut out = String::new();
                // Results in reverse order: they are mapped back by custom id.
                for (n, line) in state.batches[index].0.iter().enumerate().rev() {
                    let custom_id = &line["custom_id"];
                    let written = match (batch_answer(&line["body"]), kind) {
                        (Ok(text), "out") => json!({"id": format!("r{n}"), "custom_id": custom_id,
                            "response": {"status_code": 200, "request_id": format!("req_{n}"),
                                "body": response(&text)}, "error": null}),
                        (Err(message), "err") => {
                            json!({"id": format!("r{n}"), "custom_id": custom_id,
                            "response": {"status_code": 400, "request_id": format!("req_{n}"),
                                "body": {"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}}},
                            "error": null})
                        }
                        _ => continue,
                    };
                    out.push_str(&format!("{written}\n"));
                }
                ResponseTemplate::new(200).set_body_string(out)
            }
            _ => ResponseTemplate::new(404)
                .set_body_json(json!({"error": {"message": format!("no route {path}")}})),
        }
    }
}

#[tokio::test]
async fn a_batch_job_goes_out_as_v1_responses_lines_and_reads_responses_back() {
    let server = MockServer::start().await;
    let state = Arc::new(Mutex::new(BatchState::default()));
    Mock::given(any())
        .respond_with(BatchFake {
            state: state.clone(),
        })
        .mount(&server)
        .await;
    let client = client(provider(&server));
    let dir = std::env::temp_dir().join(format!("intent-batch-responses-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let items: Vec<BatchItem<i64>> = [" a", " a b", " reject me", " a b c d"]
        .iter()
        .map(|text| {
            BatchItem::transform(
                &format!("words:{text}"),
                "Count the words",
                IntentOptions::<i64>::new().max_attempts(1),
            )
        })
        .collect();

    let results = client
        .batch(
            items,
            BatchOptions::new(&dir)
                .poll_interval(Duration::from_millis(5))
                .max_poll_interval(Duration::from_millis(20)),
        )
        .run()
        .await
        .unwrap();

    let values: Vec<Option<i64>> = results.iter().map(|result| result.value).collect();
    assert_eq!(values, [Some(1), Some(2), None, Some(4)]);
    assert_eq!(results[0].attempts[0].model, "gpt-4.1-mini-2025-04-14");
    assert_eq!(results[0].usage.input_tokens, 61);
    assert!(provider_words(&results[2].issues[0]).contains("this request is refused"));
    let state = state.lock().unwrap();
    assert_eq!(state.endpoints, [json!("/v1/responses")]);
    for line in &state.batches[0].0 {
        assert_eq!(line["method"], "POST");
        assert_eq!(line["url"], "/v1/responses");
        assert_valid_request(&line["body"]);
        assert_eq!(line["body"]["store"], false);
        assert_eq!(line["body"]["model"], "gpt-4.1-mini");
    }
    drop(state);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The provider's own words behind an item's issue: withheld from the issue's message
/// (they may quote the request), kept on the provider error that is its cause.
fn provider_words(issue: &intent_rs::ResultIssue) -> String {
    issue
        .cause
        .as_ref()
        .and_then(|cause| cause.downcast_ref::<intent_rs::provider::ProviderError>())
        .map_or_else(String::new, |error| error.message().to_owned())
}
