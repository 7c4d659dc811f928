//! OpenAI-compatible servers against a loopback server: each preset's request body, replies
//! without a `refusal` key, the servers' own error shapes, and the optional API key.

mod provider_support;

use std::sync::Arc;

use intent_rs::provider::{
    MaxTokensField, OpenAiCompatible, Provider, ProviderErrorKind, ProviderRequest, ResponseFormat,
    StructuredOutput,
};
use provider_support::{OPENAI_FIELDS, SECRET_KEY, assert_valid_chat_request};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A reply as Ollama sends it: no `refusal` key, no cached-token details.
fn ollama_reply(content: &str) -> Value {
    json!({
        "id": "chatcmpl-42",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "llama3.2",
        "system_fingerprint": "fp_ollama",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 26, "completion_tokens": 9, "total_tokens": 35}
    })
}

fn schema_request() -> ProviderRequest {
    ProviderRequest {
        response_format: ResponseFormat::JsonSchema,
        schema: Some(Arc::new(json!({
            "type": "object",
            "properties": {"value": {"type": "integer"}},
            "required": ["value"],
            "additionalProperties": false
        }))),
        max_output_tokens: Some(64),
        ..ProviderRequest::text("Reply in JSON.", "Count to one")
    }
}

async fn server_replying(template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(template)
        .mount(&server)
        .await;
    server
}

/// Sends the schema request through `provider` (pointed at a fresh loopback server) and
/// returns the body and headers the server received.
async fn sent_by(provider: OpenAiCompatible) -> (Value, wiremock::Request) {
    let server =
        server_replying(ResponseTemplate::new(200).set_body_json(ollama_reply(r#"{"value":1}"#)))
            .await;
    let provider = provider.with_base_url(format!("{}/v1/", server.uri()));
    let reply = provider.complete(&schema_request()).await.unwrap();
    assert_eq!(reply.text, r#"{"value":1}"#);
    let request = server.received_requests().await.unwrap().remove(0);
    (serde_json::from_slice(&request.body).unwrap(), request)
}

/// The schema `schema_request` carries.
fn schema() -> Value {
    schema_request().schema.as_deref().unwrap().clone()
}

#[tokio::test]
async fn ollama_gets_max_tokens_and_a_schema_without_name_or_strict() {
    let (body, request) = sent_by(OpenAiCompatible::ollama("llama3.2")).await;
    assert_eq!(
        body,
        json!({
            "model": "llama3.2",
            "messages": [
                {"role": "system", "content": "Reply in JSON."},
                {"role": "user", "content": "Count to one"}
            ],
            "max_tokens": 64,
            "response_format": {"type": "json_schema", "json_schema": {"schema": schema()}}
        })
    );
    assert!(request.headers.get("authorization").is_none());
}

#[tokio::test]
async fn vllm_and_llama_cpp_get_openai_settings_and_valid_requests() {
    for provider in [
        OpenAiCompatible::vllm("Qwen/Qwen2.5-7B-Instruct"),
        OpenAiCompatible::llama_cpp("local"),
    ] {
        let (body, _) = sent_by(provider).await;
        assert_valid_chat_request(&body, OPENAI_FIELDS);
        assert_eq!(body["max_completion_tokens"], 64);
        assert_eq!(
            body["response_format"]["json_schema"],
            json!({"name": "intent_output", "schema": schema(), "strict": true})
        );
    }
}

#[tokio::test]
async fn lm_studio_gets_max_tokens_and_a_strict_schema() {
    let (body, _) = sent_by(OpenAiCompatible::lm_studio("qwen2.5-7b-instruct")).await;
    assert_eq!(body["max_tokens"], 64);
    assert!(body.get("max_completion_tokens").is_none());
    assert_eq!(body["response_format"]["json_schema"]["strict"], true);
}

#[tokio::test]
async fn openrouter_sends_the_key_and_requires_parameter_support() {
    let (body, request) = sent_by(OpenAiCompatible::openrouter(
        SECRET_KEY,
        "openai/gpt-4o-mini",
    ))
    .await;
    assert_eq!(body["provider"], json!({"require_parameters": true}));
    assert_eq!(body["max_tokens"], 64);
    assert_eq!(
        request
            .headers
            .get("authorization")
            .unwrap()
            .to_str()
            .unwrap(),
        format!("Bearer {SECRET_KEY}")
    );
}

#[tokio::test]
async fn json_object_fallback_replaces_the_schema() {
    let provider = OpenAiCompatible::new("http://unused", "tiny")
        .with_structured_output(StructuredOutput::JsonObject)
        .with_max_tokens_field(MaxTokensField::MaxTokens);
    assert_eq!(provider.structured_output(), StructuredOutput::JsonObject);
    let (body, _) = sent_by(provider).await;
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
    assert_eq!(body["max_tokens"], 64);
}

#[test]
fn presets_say_what_they_chose() {
    let ollama = OpenAiCompatible::ollama("m");
    assert_eq!(ollama.name(), "ollama");
    assert_eq!(ollama.base_url(), "http://localhost:11434/v1");
    assert_eq!(ollama.max_tokens_field(), MaxTokensField::MaxTokens);
    assert!(!ollama.sends_schema_name_and_strict());
    let vllm = OpenAiCompatible::vllm("m");
    assert_eq!(vllm.base_url(), "http://localhost:8000/v1");
    assert_eq!(vllm.max_tokens_field(), MaxTokensField::MaxCompletionTokens);
    assert!(vllm.sends_schema_name_and_strict());
    assert_eq!(
        OpenAiCompatible::llama_cpp("m").base_url(),
        "http://localhost:8080/v1"
    );
    assert_eq!(
        OpenAiCompatible::lm_studio("m").base_url(),
        "http://localhost:1234/v1"
    );
    assert_eq!(
        OpenAiCompatible::openrouter("k", "m").base_url(),
        "https://openrouter.ai/api/v1"
    );
    assert_eq!(
        OpenAiCompatible::new("http://x/v1", "m").name(),
        "openai-compatible"
    );
    // A keyless server's provider says it has no key rather than hiding one.
    assert!(format!("{ollama:?}").contains("api_key: None"));
}

#[tokio::test]
async fn a_reply_without_refusal_or_usage_details_is_normal() {
    let server =
        server_replying(ResponseTemplate::new(200).set_body_json(ollama_reply("hi"))).await;
    let reply = OpenAiCompatible::ollama("llama3.2")
        .with_base_url(format!("{}/v1", server.uri()))
        .complete(&ProviderRequest::text("", "hi"))
        .await
        .unwrap();
    assert_eq!(reply.text, "hi");
    assert_eq!(reply.refusal, None);
    assert_eq!(reply.usage.input_tokens, 26);
    assert_eq!(reply.usage.cached_input_tokens, 0);
    assert_eq!(reply.request_id, None);
}

#[tokio::test]
async fn the_servers_own_error_shapes_keep_their_message() {
    let cases = [
        (
            404,
            json!({"error": {"message": "model \"llama9\" not found, try pulling it first", "type": "api_error", "param": null, "code": null}}),
            "model \"llama9\" not found, try pulling it first",
            ProviderErrorKind::NotFound,
        ),
        (
            400,
            json!({"object": "error", "message": "This model's maximum context length is 4096 tokens.", "type": "BadRequestError", "param": null, "code": 400}),
            "This model's maximum context length is 4096 tokens.",
            ProviderErrorKind::InvalidRequest,
        ),
        (
            500,
            json!({"error": "llama runner process has terminated"}),
            "llama runner process has terminated",
            ProviderErrorKind::Server,
        ),
        (
            503,
            json!({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}),
            "Loading model",
            ProviderErrorKind::Overloaded,
        ),
    ];
    for (status, body, message, kind) in cases {
        let server = server_replying(ResponseTemplate::new(status).set_body_json(body)).await;
        let err = OpenAiCompatible::vllm("m")
            .with_base_url(format!("{}/v1", server.uri()))
            .complete(&ProviderRequest::text("", "hi"))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), kind, "{status}");
        assert_eq!(err.message(), message);
        assert_eq!(err.provider(), "vllm");
    }
    let empty = server_replying(ResponseTemplate::new(502)).await;
    let err = OpenAiCompatible::vllm("m")
        .with_base_url(format!("{}/v1", empty.uri()))
        .complete(&ProviderRequest::text("", "hi"))
        .await
        .unwrap_err();
    assert_eq!(err.message(), "HTTP Bad Gateway with an empty body");
}

#[tokio::test]
async fn clones_share_one_connection_pool() {
    let (url, connections) = provider_support::keep_alive_server(ollama_reply("ok")).await;
    let first = OpenAiCompatible::llama_cpp("m").with_base_url(url);
    let second = first.clone();
    first
        .complete(&ProviderRequest::text("", "a"))
        .await
        .unwrap();
    second
        .complete(&ProviderRequest::text("", "b"))
        .await
        .unwrap();
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_supplied_http_client_is_the_one_used() {
    let server =
        server_replying(ResponseTemplate::new(200).set_body_json(ollama_reply("ok"))).await;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-gateway", "corporate".parse().unwrap());
    let client = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap();
    OpenAiCompatible::ollama("m")
        .with_base_url(format!("{}/v1", server.uri()))
        .with_http_client(client)
        .complete(&ProviderRequest::text("", "hi"))
        .await
        .unwrap();
    let request = server.received_requests().await.unwrap().remove(0);
    assert_eq!(request.headers.get("x-gateway").unwrap(), "corporate");
}
