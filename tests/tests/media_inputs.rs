//! Images and PDF documents as method inputs, against loopback servers speaking each API:
//! the exact content parts sent (OpenAI bodies checked against OpenAI's schema), the
//! refusals made before sending, a retry's turns, the response cache, telemetry, a batch
//! line with an image and a streamed call with a document.

mod batch_support;
mod provider_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use intent_rs::batch::{BatchItem, BatchOptions};
use intent_rs::input::PreparedInput;
use intent_rs::media::{Document, Image, MediaLimits, MediaType};
use intent_rs::provider::{
    Anthropic, MediaPart, Message, OpenAi, OpenAiCompatible, Part, Provider, ProviderRequest,
    ScriptedProvider, ScriptedReply,
};
use intent_rs::stream::StreamEvent;
use intent_rs::{
    AIResult, IntentClient, IntentError, IntentOptions, IntentStream, Partial, StrictCompatible,
    intents,
};
use provider_support::{OPENAI_FIELDS, SECRET_KEY, assert_valid_chat_request, received_bodies};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const PNG: &[u8] = include_bytes!("../../examples/data/invoice.png");
const PDF: &[u8] = include_bytes!("../../examples/data/invoice.pdf");

#[derive(Debug, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
pub struct Invoice {
    number: String,
    total_cents: i64,
}

#[intents]
pub trait Invoices {
    #[intent("Extract the invoice fields")]
    async fn read_scan(&self, scan: Image) -> Result<Invoice, IntentError>;

    #[intent("Extract the invoice fields", max_attempts = 2)]
    async fn read_both(&self, note: &str, scan: &Image, contract: Document) -> AIResult<Invoice>;

    #[intent("Extract the invoice fields")]
    fn streamed(&self, contract: Document) -> IntentStream<Invoice>;
}

const REPLY: &str = r#"{"value": {"number": "42", "total_cents": 250}}"#;

fn png() -> Image {
    Image::from_bytes(PNG).unwrap()
}

fn pdf() -> Document {
    Document::from_bytes_named(PDF, "invoice.pdf").unwrap()
}

fn data_url(media_type: &str, bytes: &[u8]) -> String {
    let media = if media_type == "application/pdf" {
        Document::from_bytes(bytes.to_vec())
            .unwrap()
            .media()
            .clone()
    } else {
        Image::from_bytes(bytes.to_vec()).unwrap().media().clone()
    };
    format!("data:{media_type};base64,{}", media.base64().unwrap())
}

fn completion(text: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000,
        "model": "gpt-test-2026",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": null,
            "message": {"role": "assistant", "content": text, "refusal": null}}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 12, "total_tokens": 912}
    })
}

fn message(text: &str) -> Value {
    json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test-2026",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "stop_sequence": null, "usage": {"input_tokens": 900, "output_tokens": 12}
    })
}

async fn server(route: &str, replies: Vec<Value>) -> MockServer {
    let server = MockServer::start().await;
    let replies = Mutex::new(replies.into_iter());
    Mock::given(method("POST"))
        .and(path(route))
        .respond_with(move |_: &wiremock::Request| {
            let reply = replies.lock().unwrap().next().unwrap_or(Value::Null);
            ResponseTemplate::new(200).set_body_json(reply)
        })
        .mount(&server)
        .await;
    server
}

fn client(provider: impl Provider + 'static) -> InvoicesClient {
    InvoicesClient::new(IntentClient::builder().provider(provider).build().unwrap())
}

fn openai(base: &str) -> OpenAi {
    OpenAi::new(SECRET_KEY)
        .with_base_url(base)
        .with_model("gpt-test")
}

fn anthropic(base: &str) -> Anthropic {
    Anthropic::new(SECRET_KEY)
        .with_base_url(base)
        .with_model("claude-test")
}

fn compatible(base: &str) -> OpenAiCompatible {
    OpenAiCompatible::new(base, "llava")
}

/// The OpenAI parts of `read_both("Paid in cash", png, pdf)`: the named text input, then
/// each medium after its heading, in declaration order.
fn openai_parts_of_both() -> Value {
    json!([
        {"type": "text", "text": "Input (JSON object with keys note (String)):\n{\"note\":\"Paid in cash\"}\n\nInput scan (PNG image):\n"},
        {"type": "image_url", "image_url": {"url": data_url("image/png", PNG)}},
        {"type": "text", "text": "\n\nInput contract (PDF document):\n"},
        {"type": "file", "file": {"filename": "invoice.pdf", "file_data": data_url("application/pdf", PDF)}},
    ])
}

#[tokio::test]
async fn openai_gets_image_and_file_parts_in_declaration_order_and_a_valid_body() {
    let server = server("/chat/completions", vec![completion(REPLY)]).await;
    let invoices = client(openai(&server.uri()));
    let result = invoices.read_both("Paid in cash", &png(), pdf()).await;
    assert_eq!(
        result.value,
        Some(Invoice {
            number: "42".into(),
            total_cents: 250
        }),
        "{result:?}"
    );
    let bodies = received_bodies(&server).await;
    assert_eq!(bodies.len(), 1);
    let body = &bodies[0];
    assert_valid_chat_request(body, OPENAI_FIELDS);
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "Extract the invoice fields"})
    );
    assert_eq!(body["messages"][1]["role"], "user");
    assert_eq!(body["messages"][1]["content"], openai_parts_of_both());
}

#[tokio::test]
async fn a_single_image_input_is_labelled_by_its_type_alone_and_a_url_is_sent_as_it_is() {
    let server = server(
        "/chat/completions",
        vec![completion(REPLY), completion(REPLY)],
    )
    .await;
    let invoices = client(openai(&server.uri()));
    invoices.read_scan(png()).await.unwrap();
    invoices
        .read_scan(Image::from_url("https://files.example/scan.jpg").unwrap())
        .await
        .unwrap();
    let bodies = received_bodies(&server).await;
    for body in &bodies {
        assert_valid_chat_request(body, OPENAI_FIELDS);
    }
    assert_eq!(
        bodies[0]["messages"][1]["content"],
        json!([
            {"type": "text", "text": "Input (PNG image):\n"},
            {"type": "image_url", "image_url": {"url": data_url("image/png", PNG)}},
        ])
    );
    assert_eq!(
        bodies[1]["messages"][1]["content"],
        json!([
            {"type": "text", "text": "Input (image):\n"},
            {"type": "image_url", "image_url": {"url": "https://files.example/scan.jpg"}},
        ])
    );
}

#[tokio::test]
async fn a_retry_keeps_the_media_in_the_first_turn_and_adds_only_text() {
    let server = server(
        "/chat/completions",
        vec![
            completion(r#"{"value": {"number": "42"}}"#),
            completion(REPLY),
        ],
    )
    .await;
    let invoices = client(openai(&server.uri()));
    let result = invoices.read_both("Paid in cash", &png(), pdf()).await;
    assert_eq!(result.attempts.len(), 2, "{result:?}");
    let bodies = received_bodies(&server).await;
    let retry = &bodies[1];
    assert_valid_chat_request(retry, OPENAI_FIELDS);
    let turns = retry["messages"].as_array().unwrap();
    assert_eq!(turns.len(), 4);
    // The first request's turns, byte for byte: the provider's prompt cache serves them.
    assert_eq!(turns[..2], bodies[0]["messages"].as_array().unwrap()[..]);
    assert_eq!(turns[1]["content"], openai_parts_of_both());
    assert_eq!(turns[2]["role"], "assistant");
    assert_eq!(turns[2]["content"], r#"{"value": {"number": "42"}}"#);
    assert_eq!(turns[3]["role"], "user");
    assert!(
        turns[3]["content"].is_string(),
        "the problems are text only"
    );
    // The attempt record holds the reply and the problems, never the bytes.
    let record = format!("{result:?}");
    let encoded = png().media().base64().unwrap().to_owned();
    assert!(!record.contains(&encoded[..64]));
}

#[tokio::test]
async fn anthropic_gets_image_and_document_blocks_with_a_cache_breakpoint_after_them() {
    let server = server("/v1/messages", vec![message(REPLY)]).await;
    let invoices = client(anthropic(&server.uri()));
    let result = invoices.read_both("Paid in cash", &png(), pdf()).await;
    assert!(result.value.is_some(), "{result:?}");
    let body = &received_bodies(&server).await[0];
    let image = png();
    let document = pdf();
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "text", "text": "Input (JSON object with keys note (String)):\n{\"note\":\"Paid in cash\"}\n\nInput scan (PNG image):\n"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image.media().base64().unwrap()}},
            {"type": "text", "text": "\n\nInput contract (PDF document):\n"},
            // The turn's last block carries the breakpoint: a retry reads the image and the
            // document from the prompt cache.
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": document.media().base64().unwrap()},
             "cache_control": {"type": "ephemeral"}},
        ])
    );
}

#[tokio::test]
async fn anthropic_takes_media_by_url_and_no_breakpoint_without_the_prompt_cache() {
    let server = server("/v1/messages", vec![message(REPLY)]).await;
    let invoices = client(anthropic(&server.uri()).with_prompt_cache(false));
    let scan = Image::from_url("https://files.example/scan.png").unwrap();
    let contract = Document::from_url("https://files.example/contract.pdf").unwrap();
    invoices
        .read_both("Paid in cash", &scan, contract)
        .await
        .into_result()
        .unwrap();
    let body = &received_bodies(&server).await[0];
    let blocks = body["messages"][0]["content"].as_array().unwrap();
    assert_eq!(
        blocks[1],
        json!({"type": "image", "source": {"type": "url", "url": "https://files.example/scan.png"}})
    );
    assert_eq!(
        blocks[3],
        json!({"type": "document", "source": {"type": "url", "url": "https://files.example/contract.pdf"}})
    );
}

#[tokio::test]
async fn a_compatible_server_gets_image_parts_and_a_document_only_when_said_to_read_them() {
    let server = server(
        "/chat/completions",
        vec![completion(REPLY), completion(REPLY)],
    )
    .await;
    let refusing = client(compatible(&server.uri()));
    let error = refusing
        .read_both("Paid in cash", &png(), pdf())
        .await
        .into_result()
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("openai-compatible does not take application/pdf inputs"),
        "{message}"
    );
    assert!(
        received_bodies(&server).await.is_empty(),
        "nothing was sent"
    );

    let reading = client(
        compatible(&server.uri()).with_media_limits(MediaLimits::COMPATIBLE.with_documents(true)),
    );
    reading.read_scan(png()).await.unwrap();
    reading
        .read_both("Paid in cash", &png(), pdf())
        .await
        .into_result()
        .unwrap();
    let bodies = received_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let parts = bodies[0]["messages"][1]["content"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(parts[1]["type"], "image_url");
    assert_eq!(
        bodies[1]["messages"].as_array().unwrap().last().unwrap()["content"][3]["type"],
        "file"
    );
}

#[tokio::test]
async fn refusals_name_the_limit_and_the_provider_and_send_nothing() {
    let server = server("/chat/completions", vec![]).await;
    let run = |limits: MediaLimits| {
        let invoices = client(openai(&server.uri()).with_media_limits(limits));
        async move {
            let result = invoices.read_both("Paid in cash", &png(), pdf()).await;
            // Refused once, not retried: the same request would be refused again.
            assert_eq!(result.attempts.len(), 1, "{result:?}");
            result.into_result().unwrap_err().to_string()
        }
    };
    let over_image = run(MediaLimits::OPENAI.with_max_image_bytes(100)).await;
    assert!(
        over_image.contains(&format!(
            "the image/png input is {} bytes, over openai's limit of 100 bytes",
            PNG.len()
        )),
        "{over_image}"
    );
    let over_pages = run(MediaLimits::OPENAI.with_max_document(1 << 20, 0)).await;
    assert!(
        over_pages.contains("the request's PDFs have 1 pages, over openai's limit of 0"),
        "{over_pages}"
    );
    let over_request = run(MediaLimits::OPENAI.with_max_request_bytes(1000)).await;
    assert!(
        over_request.contains("over openai's limit of 1000 bytes"),
        "{over_request}"
    );
    let by_url = client(openai(&server.uri()))
        .read_both(
            "Paid in cash",
            &png(),
            Document::from_url("https://files.example/a.pdf").unwrap(),
        )
        .await
        .into_result()
        .unwrap_err()
        .to_string();
    assert!(
        by_url.contains("openai does not fetch PDFs from a URL"),
        "{by_url}"
    );
    assert!(received_bodies(&server).await.is_empty());
    // Bytes that contradict their declared type never become an input.
    let mismatch = Image::from_bytes_as(PNG, MediaType::Jpeg).unwrap_err();
    assert!(
        mismatch
            .to_string()
            .contains("declared as image/jpeg but are image/png")
    );
}

/// A request of `count` copies of the PNG, as a provider receives it.
fn request_with_images(count: usize) -> ProviderRequest {
    let parts = (0..count)
        .map(|_| MediaPart {
            at: 0,
            media: png().media().clone(),
        })
        .collect();
    let mut request = ProviderRequest::text("", "Describe them");
    request.messages = vec![Message::user_with_media("Describe them", parts)];
    request
}

#[tokio::test]
async fn a_request_over_the_providers_image_count_is_refused_and_nothing_is_sent() {
    let chat = server("/chat/completions", vec![completion(REPLY)]).await;
    let messages = server("/v1/messages", vec![message(REPLY)]).await;
    let openai = openai(&chat.uri());
    let anthropic = anthropic(&messages.uri());
    for (provider, max, server) in [
        (&openai as &dyn Provider, 500, &chat),
        (&anthropic as &dyn Provider, 600, &messages),
    ] {
        let error = provider
            .complete(&request_with_images(max + 1))
            .await
            .unwrap_err();
        assert!(!error.request_sent(), "{error}");
        assert!(
            error.to_string().contains(&format!(
                "the request has {} images, over {}'s limit of {max} images per request",
                max + 1,
                provider.name()
            )),
            "{error}"
        );
        assert!(received_bodies(server).await.is_empty());
        // At the limit, the request goes out.
        provider.complete(&request_with_images(max)).await.unwrap();
        assert_eq!(received_bodies(server).await.len(), 1);
    }
}

#[tokio::test]
async fn the_response_cache_tells_images_apart_by_their_bytes() {
    let model = ScriptedProvider::from_fn(|_, _| ScriptedReply::text(REPLY));
    let invoices = InvoicesClient::new(
        IntentClient::builder()
            .provider(model.clone())
            .in_memory_cache(8)
            .build()
            .unwrap(),
    );
    invoices.read_scan(png()).await.unwrap();
    // The same bytes, read again: served from the cache.
    invoices
        .read_scan(Image::from_bytes(PNG.to_vec()).unwrap())
        .await
        .unwrap();
    assert_eq!(model.requests().len(), 1);
    // One byte more is another image, and another request.
    let mut other = PNG.to_vec();
    other.push(0);
    invoices
        .read_scan(Image::from_bytes(other).unwrap())
        .await
        .unwrap();
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test]
async fn transform_takes_an_image_and_the_scripted_model_sees_it_in_place() {
    let model = ScriptedProvider::new([REPLY]);
    let client = IntentClient::builder()
        .provider(model.clone())
        .build()
        .unwrap();
    let invoice: Invoice = client
        .transform_prepared(
            PreparedInput::from(png()),
            "Extract the invoice fields",
            IntentOptions::new(),
        )
        .await
        .into_result()
        .unwrap();
    assert_eq!(invoice.number, "42");
    let request = &model.requests()[0];
    let parts: Vec<Part<'_>> = request.messages[0].parts().collect();
    // The full layout (the scripted model enforces no schema): the image sits under its
    // own heading, between the intent and the output requirements.
    assert_eq!(parts.len(), 3, "{parts:?}");
    assert_eq!(
        parts[0],
        Part::Text("## Intent\nExtract the invoice fields\n\n## Input (PNG image)\n")
    );
    assert!(matches!(parts[1], Part::Media(media) if media == png().media()));
    assert!(
        matches!(parts[2], Part::Text(text) if text.starts_with("\n\n## Output requirements\n"))
    );
}

#[tokio::test]
async fn a_batch_line_carries_the_image_part_a_live_call_sends() {
    let answer: batch_support::Answer = Arc::new(|_| Ok(REPLY.to_owned()));
    let fake = batch_support::openai(answer, batch_support::Behaviour::default()).await;
    let client = batch_support::openai_client(&fake);
    let invoices = InvoicesClient::new(client.clone());
    let dir = std::env::temp_dir().join(format!("intent-media-batch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let items: Vec<BatchItem<Invoice>> = vec![invoices.read_scan_batch_item(png())];
    let results = client
        .batch(
            items,
            BatchOptions::new(&dir).poll_interval(Duration::from_millis(5)),
        )
        .run()
        .await
        .unwrap();
    assert_eq!(results[0].value.as_ref().map(|v| v.total_cents), Some(250));
    let line = &fake.bodies(0)[0];
    assert_valid_chat_request(line, &["model", "messages", "response_format"]);
    assert_eq!(
        line["messages"][1]["content"][1],
        json!({"type": "image_url", "image_url": {"url": data_url("image/png", PNG)}})
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn anthropic_event(name: &str, value: Value) -> String {
    format!("event: {name}\ndata: {value}\n\n")
}

#[tokio::test]
async fn a_streamed_call_sends_the_document_block_and_reads_the_reply() {
    let events: String = [
        anthropic_event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                "model": "claude-test-2026", "content": [], "stop_reason": null,
                "usage": {"input_tokens": 900, "output_tokens": 1}}}),
        ),
        anthropic_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": REPLY}}),
        ),
        anthropic_event("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        anthropic_event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 12}}),
        ),
        anthropic_event("message_stop", json!({"type": "message_stop"})),
    ]
    .concat();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(events, "text/event-stream"))
        .mount(&server)
        .await;
    let invoices = client(anthropic(&server.uri()));
    let mut stream = invoices.streamed(pdf());
    let mut last = None;
    while let Some(event) = stream.next().await {
        if let StreamEvent::Final(result) = event {
            last = Some(result);
        }
    }
    let result = last.expect("a final event");
    assert_eq!(result.value.map(|v| v.total_cents), Some(250));
    let body = &received_bodies(&server).await[0];
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "text", "text": "Input (PDF document):\n"},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": pdf().media().base64().unwrap()},
             "cache_control": {"type": "ephemeral"}},
        ])
    );
}

#[tokio::test]
async fn telemetry_records_the_media_type_size_and_digest_and_never_the_bytes() {
    let logs = provider_support::CapturedLogs::start();
    let server = server("/chat/completions", vec![completion(REPLY)]).await;
    let client = IntentClient::builder()
        .provider(openai(&server.uri()))
        .record_content(true)
        .build()
        .unwrap();
    InvoicesClient::new(client)
        .read_both("Paid in cash", &png(), pdf())
        .await
        .into_result()
        .unwrap();
    let text = logs.text();
    let input = text
        .lines()
        .find(|line| {
            line.contains("gen_ai.input.messages=") && line.contains(&png().media().sha256_hex())
        })
        .unwrap_or_else(|| panic!("no input messages with the image's digest:\n{text}"));
    assert!(input.contains(r#"\"type\":\"blob\""#), "{input}");
    assert!(
        input.contains(r#"\"mime_type\":\"application/pdf\""#),
        "{input}"
    );
    assert!(
        input.contains(&format!(r#"\"size\":{}"#, PNG.len())),
        "{input}"
    );
    assert!(input.contains(&pdf().media().sha256_hex()), "{input}");
    // Not in the recorded content, and not in any log line of the process either.
    for encoded in [
        png().media().base64().unwrap(),
        pdf().media().base64().unwrap(),
    ] {
        assert!(!text.contains(&encoded[..48]), "the bytes were logged");
    }
}
