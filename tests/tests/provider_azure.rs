//! Azure OpenAI against a loopback server speaking its Chat Completions: the v1 API and
//! the deployment URLs, the `api-key` header or an Entra ID token, the content filter
//! (a filtered completion and a blocked prompt) answered as refusals, throttling, a
//! stream that opens with a filter-only chunk, and the Batch API through the v1 API. The
//! error table every provider shares is in `provider_conformance.rs`.

mod batch_support;
mod provider_support;

use std::sync::Arc;
use std::time::Duration;

use intent_rs::batch::{BatchItem, BatchOptions};
use intent_rs::provider::{
    AzureOpenAi, Provider, ProviderErrorKind, ProviderRequest, ReplyPiece, ResponseFormat,
};
use intent_rs::{IntentClient, IntentOptions};
use provider_support::{OPENAI_FIELDS, SECRET_KEY, assert_valid_chat_request};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn invoice_schema() -> Value {
    json!({"type": "object", "properties": {"value": {"type": "object",
        "properties": {"number": {"type": "string"}, "total_cents": {"type": "integer"}},
        "required": ["number", "total_cents"], "additionalProperties": false}},
        "required": ["value"], "additionalProperties": false})
}

fn invoice_request() -> ProviderRequest {
    let mut request = ProviderRequest::text(
        "Answer with JSON only.",
        "Extract the invoice fields from document 7",
    );
    request.response_format = ResponseFormat::JsonSchema;
    request.schema = Some(Arc::new(invoice_schema()));
    request.schema_name = "invoice".to_owned();
    request.max_output_tokens = Some(512);
    request
}

/// The filter verdicts of a clean reply.
fn clean_filter() -> Value {
    json!({"hate": {"filtered": false, "severity": "safe"}, "self_harm": {"filtered": false, "severity": "safe"},
        "sexual": {"filtered": false, "severity": "safe"}, "violence": {"filtered": false, "severity": "safe"}})
}

/// Example B1 of the spec: a structured reply with the filter's results.
fn b1_reply() -> Value {
    json!({
        "id": "chatcmpl-BZx1abc", "object": "chat.completion", "created": 1764600000,
        "model": "gpt-4o-mini-2024-07-18",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": clean_filter()}],
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": null,
            "message": {"role": "assistant", "content": "{\"value\":{\"number\":\"INV-0007\",\"total_cents\":125000}}", "refusal": null},
            "content_filter_results": clean_filter()}],
        "system_fingerprint": "fp_7a5f2b1c9e",
        "usage": {"prompt_tokens": 58, "completion_tokens": 17, "total_tokens": 75,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0}}
    })
}

async fn only_request(server: &MockServer) -> wiremock::Request {
    let received = server.received_requests().await.unwrap();
    assert_eq!(received.len(), 1, "one request");
    received.into_iter().next().unwrap()
}

#[tokio::test]
async fn the_v1_api_sends_the_deployment_as_model_and_the_key_as_api_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/openai/v1/chat/completions"))
        .and(header("api-key", SECRET_KEY))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(b1_reply())
                .insert_header("apim-request-id", "apim-1"),
        )
        .mount(&server)
        .await;
    let azure = AzureOpenAi::new(server.uri(), SECRET_KEY, "gpt-4o-mini-prod");
    let reply = azure.complete(&invoice_request()).await.unwrap();
    assert_eq!(
        reply.text,
        r#"{"value":{"number":"INV-0007","total_cents":125000}}"#
    );
    assert_eq!(reply.model, "gpt-4o-mini-2024-07-18");
    assert_eq!(reply.response_id.as_deref(), Some("chatcmpl-BZx1abc"));
    assert_eq!(reply.request_id.as_deref(), Some("apim-1"));
    assert_eq!(
        (reply.usage.input_tokens, reply.usage.output_tokens),
        (58, 17)
    );
    assert!(reply.refusal.is_none() && !reply.truncated);

    let request = only_request(&server).await;
    assert!(
        request.headers.get("authorization").is_none(),
        "one auth header, not both"
    );
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_valid_chat_request(&body, OPENAI_FIELDS);
    // Example B1's body: the deployment as model, the strict schema as OpenAI sends it.
    assert_eq!(body["model"], "gpt-4o-mini-prod");
    assert_eq!(body["max_completion_tokens"], 512);
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "invoice", "strict": true, "schema": invoice_schema()}})
    );
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "Answer with JSON only."},
            {"role": "user", "content": "Extract the invoice fields from document 7"}])
    );
    assert_eq!(azure.name(), "azure.ai.openai");
    assert_eq!(azure.server_url(), Some(server.uri().as_str()));
}

#[tokio::test]
async fn deployment_urls_carry_the_deployment_and_api_version_and_an_entra_token_is_a_bearer() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(
            "/openai/deployments/gpt-4o-mini-prod/chat/completions",
        ))
        .and(query_param("api-version", "2024-10-21"))
        .and(header("authorization", "Bearer entra-token-1"))
        .respond_with(ResponseTemplate::new(200).set_body_json(b1_reply()))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/openai/deployments/other-dep/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(b1_reply()))
        .mount(&server)
        .await;
    let azure = AzureOpenAi::new(server.uri(), "unused", "gpt-4o-mini-prod")
        .with_api_version("2024-10-21")
        .with_entra_token("entra-token-1");
    assert_eq!(azure.api_version(), Some("2024-10-21"));
    azure.complete(&invoice_request()).await.unwrap();
    let request = only_request(&server).await;
    assert!(
        request.headers.get("api-key").is_none(),
        "one auth header, not both"
    );
    // A request naming another deployment goes to that deployment's URL.
    let mut other = invoice_request();
    other.model = Some("other-dep".to_owned());
    azure.complete(&other).await.unwrap();
    let paths: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|request| request.url.path().to_owned())
        .collect();
    assert_eq!(
        paths[1], "/openai/deployments/other-dep/chat/completions",
        "{paths:?}"
    );
    assert!(
        azure.batch().is_none(),
        "batches go through the v1 API only"
    );
}

#[tokio::test]
async fn an_api_version_that_would_change_the_url_is_refused_before_anything_is_sent() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(b1_reply()))
        .mount(&server)
        .await;
    for (version, problem) in [
        ("", "is empty"),
        ("2024-10-21&foo=bar", "would change the URL's query"),
        ("2024-10-21#x", "would change the URL's query"),
        ("2024-10-21 ", "would change the URL's query"),
    ] {
        let azure = AzureOpenAi::new(server.uri(), SECRET_KEY, "gpt-4o-mini-prod")
            .with_api_version(version);
        let error = azure.complete(&invoice_request()).await.unwrap_err();
        assert_eq!(
            error.kind(),
            ProviderErrorKind::InvalidRequest,
            "{version:?}"
        );
        assert!(
            !error.request_sent() && !error.is_transient(),
            "{version:?}"
        );
        let message = error.to_string();
        assert!(
            message.contains(&format!("the api-version `{version}` {problem}"))
                && message.contains("such as 2024-10-21"),
            "{message}"
        );
        let streamed = azure.stream(&invoice_request()).await.err().unwrap();
        assert_eq!(streamed.kind(), ProviderErrorKind::InvalidRequest);
    }
    assert!(server.received_requests().await.unwrap().is_empty());
    // A plain version goes out as the one query parameter.
    AzureOpenAi::new(server.uri(), SECRET_KEY, "gpt-4o-mini-prod")
        .with_api_version("2024-08-01-preview")
        .complete(&invoice_request())
        .await
        .unwrap();
    let request = only_request(&server).await;
    assert_eq!(request.url.query(), Some("api-version=2024-08-01-preview"));
}

fn filtered_completion() -> Value {
    json!({
        "id": "chatcmpl-BZx2def", "object": "chat.completion", "created": 1764600100,
        "model": "gpt-4o-mini-2024-07-18",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": clean_filter()}],
        "choices": [{"index": 0, "finish_reason": "content_filter",
            "message": {"role": "assistant", "content": null, "refusal": null},
            "content_filter_results": {"hate": {"filtered": false, "severity": "safe"},
                "violence": {"filtered": true, "severity": "medium"}}}],
        "usage": {"prompt_tokens": 58, "completion_tokens": 31, "total_tokens": 89}
    })
}

fn blocked_prompt() -> Value {
    json!({"error": {
        "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.",
        "type": null, "param": "prompt", "code": "content_filter", "status": 400,
        "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": {
            "hate": {"filtered": false, "severity": "safe"},
            "jailbreak": {"filtered": true, "detected": true},
            "violence": {"filtered": false, "severity": "safe"}}}}})
}

async fn azure_replying(template: ResponseTemplate) -> (MockServer, AzureOpenAi) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(template)
        .mount(&server)
        .await;
    let azure = AzureOpenAi::new(server.uri(), SECRET_KEY, "gpt-4o-mini-prod");
    (server, azure)
}

#[tokio::test]
async fn a_filtered_completion_is_a_refusal_naming_the_category_not_a_truncation() {
    let (_server, azure) =
        azure_replying(ResponseTemplate::new(200).set_body_json(filtered_completion())).await;
    let reply = azure.complete(&invoice_request()).await.unwrap();
    let refusal = reply.refusal.expect("a refusal");
    assert!(refusal.contains("violence (medium)"), "{refusal}");
    assert!(!refusal.contains("hate"), "only what filtered: {refusal}");
    assert!(!reply.truncated);
    assert_eq!(reply.text, "");
}

#[tokio::test]
async fn a_blocked_prompt_is_a_refusal_not_an_invalid_request() {
    let (server, azure) =
        azure_replying(ResponseTemplate::new(400).set_body_json(blocked_prompt())).await;
    let reply = azure.complete(&invoice_request()).await.unwrap();
    let refusal = reply.refusal.clone().expect("a refusal");
    assert!(
        refusal.contains("blocked the prompt (jailbreak)"),
        "{refusal}"
    );
    assert!(refusal.contains("content management policy"), "{refusal}");

    // Through a client: the result says the provider refused, and why.
    let client = IntentClient::builder().provider(azure).build().unwrap();
    let result = client
        .transform(
            "document 7",
            "Count the words",
            IntentOptions::<u32>::new().max_attempts(3),
        )
        .await;
    assert!(result.value.is_none());
    assert!(server.received_requests().await.unwrap().len() >= 2);
    let issues = format!("{:?}", result.issues);
    assert!(issues.contains("jailbreak"), "{issues}");

    // A 400 that is not the filter's stays an invalid request.
    let (_other, azure) = azure_replying(ResponseTemplate::new(400).set_body_json(
        json!({"error": {"code": "BadRequest", "message": "Unrecognized request argument supplied: verbosity"}}),
    ))
    .await;
    let err = azure.complete(&invoice_request()).await.unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::InvalidRequest);
}

#[tokio::test]
async fn throttling_waits_as_retry_after_ms_says() {
    let (_server, azure) = azure_replying(
        ResponseTemplate::new(429)
            .insert_header("retry-after", "3")
            .insert_header("retry-after-ms", "2750")
            .insert_header("x-ratelimit-remaining-requests", "0")
            .set_body_json(json!({"error": {"code": "429", "message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 3 seconds."}})),
    )
    .await;
    let err = azure.complete(&invoice_request()).await.unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::RateLimited);
    assert!(err.is_transient());
    assert_eq!(err.retry_after(), Some(Duration::from_millis(2750)));
    assert!(err.message().contains("exceeded token rate limit"));
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| format!("data: {event}\n\n"))
        .chain(["data: [DONE]\n\n".to_owned()])
        .collect()
}

#[tokio::test]
async fn a_stream_opening_with_only_filter_results_is_read_past_them() {
    let body = sse(&[
        json!({"id": "", "object": "", "created": 0, "model": "", "choices": [],
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": clean_filter()}]}),
        json!({"id": "chatcmpl-s", "model": "gpt-4o-mini-2024-07-18", "choices": [{"index": 0,
            "delta": {"role": "assistant", "content": "{\"value\":"}, "finish_reason": null}]}),
        json!({"id": "chatcmpl-s", "model": "gpt-4o-mini-2024-07-18", "choices": [{"index": 0,
            "delta": {"content": " 3}"}, "finish_reason": null, "content_filter_results": clean_filter()}]}),
        json!({"id": "chatcmpl-s", "model": "gpt-4o-mini-2024-07-18", "choices": [{"index": 0,
            "delta": {}, "finish_reason": "stop"}]}),
        json!({"id": "chatcmpl-s", "model": "gpt-4o-mini-2024-07-18", "choices": [],
            "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}}),
    ]);
    let (_server, azure) =
        azure_replying(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")).await;
    let mut stream = azure.stream(&invoice_request()).await.unwrap();
    let mut text = String::new();
    let mut finished = None;
    while let Some(piece) = futures_util::StreamExt::next(&mut stream).await {
        match piece.unwrap() {
            ReplyPiece::Text(piece) => text.push_str(&piece),
            ReplyPiece::Finished(reply) => finished = Some(reply),
        }
    }
    let reply = finished.expect("a finished reply");
    assert_eq!(text, r#"{"value": 3}"#);
    assert_eq!(reply.text, text);
    assert_eq!(reply.usage.output_tokens, 3);
    assert!(reply.refusal.is_none());
}

#[tokio::test]
async fn a_stream_whose_prompt_is_blocked_is_a_refusal_and_one_cut_mid_reply_fails() {
    let (_server, azure) =
        azure_replying(ResponseTemplate::new(400).set_body_json(blocked_prompt())).await;
    let mut stream = azure.stream(&invoice_request()).await.unwrap();
    let mut last = None;
    while let Some(piece) = futures_util::StreamExt::next(&mut stream).await {
        last = Some(piece.unwrap());
    }
    match last {
        Some(ReplyPiece::Finished(reply)) => {
            assert!(reply.refusal.unwrap_or_default().contains("jailbreak"));
        }
        other => panic!("expected a finished refusal, got {other:?}"),
    }

    let dropped = provider_support::drops_mid_reply().await;
    let azure = AzureOpenAi::new(dropped, SECRET_KEY, "dep");
    let err = match azure.stream(&invoice_request()).await {
        Err(err) => err,
        Ok(mut stream) => {
            let mut failure = None;
            while let Some(piece) = futures_util::StreamExt::next(&mut stream).await {
                if let Err(err) = piece {
                    failure = Some(err);
                }
            }
            failure.expect("the cut stream fails")
        }
    };
    assert_eq!(err.kind(), ProviderErrorKind::Transport, "{err}");
}

#[tokio::test]
async fn a_batch_job_goes_through_the_v1_batch_api_with_the_deployment_as_model() {
    // Counts the words after `words:` in the first user turn, up to its line's end.
    let answer: batch_support::Answer = Arc::new(|body: &Value| {
        let user = batch_support::last_user(body);
        let words = user
            .split_once("words:")
            .map(|(_, rest)| rest.split(['\n', '"']).next().unwrap_or_default())
            .unwrap_or_default()
            .split_whitespace()
            .count();
        Ok(format!("{{\"value\": {words}}}"))
    });
    let fake = batch_support::azure_openai(answer, batch_support::Behaviour::default()).await;
    let azure = AzureOpenAi::new(fake.server.uri(), batch_support::KEY, "batch-dep");
    let client = IntentClient::builder().provider(azure).build().unwrap();
    let dir = std::env::temp_dir().join(format!("intent-azure-batch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let items: Vec<BatchItem<u32>> = ["a", "a b", "a b c"]
        .into_iter()
        .map(|input| {
            BatchItem::transform(
                &format!("words: {input}"),
                "Count the words",
                IntentOptions::<u32>::new(),
            )
        })
        .collect();
    let results = client
        .batch(
            items,
            BatchOptions::new(&dir).poll_interval(Duration::from_millis(10)),
        )
        .run()
        .await
        .unwrap();
    let values: Vec<Option<u32>> = results.iter().map(|result| result.value).collect();
    assert_eq!(values, [Some(1), Some(2), Some(3)]);
    for body in fake.bodies(0) {
        assert_eq!(body["model"], "batch-dep");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
