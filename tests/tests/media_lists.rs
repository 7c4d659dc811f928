//! Several images or documents in one parameter (`Vec<Image>`, `&[Image]`, `[Image; N]`,
//! `Option<Image>`, the same for `Document`) and an image's detail level, against loopback
//! servers speaking each API: each medium its own part in parameter order under a numbered
//! heading, nothing for an empty list or `None`, the provider's limits on the whole
//! request, and `detail` where the API has it (OpenAI Chat Completions, Azure OpenAI) and
//! nowhere else (Anthropic, Gemini). The Responses API's `detail` is tested with its
//! schema in `provider_responses.rs`, the span's media description in `telemetry.rs`.

// `&Vec<Image>` is one of the shapes the macro takes, so it is written here on purpose.
#![allow(clippy::ptr_arg)]

mod provider_support;

use std::sync::Mutex;

use intent_rs::input::PreparedInput;
use intent_rs::media::{Document, Image, ImageDetail, MediaLimits, MediaRefusal};
use intent_rs::provider::{
    Anthropic, AzureOpenAi, Gemini, MediaPart, Message, OpenAi, Part, Provider, ProviderRequest,
    ScriptedProvider, ScriptedReply,
};
use intent_rs::result::NotSent;
use intent_rs::{IntentClient, IntentError, IntentOptions, StrictCompatible, intents};
use provider_support::{OPENAI_FIELDS, SECRET_KEY, assert_valid_chat_request, received_bodies};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const PNG: &[u8] = include_bytes!("../../examples/data/invoice.png");
const PDF: &[u8] = include_bytes!("../../examples/data/invoice.pdf");

#[derive(Debug, PartialEq, Deserialize, JsonSchema, StrictCompatible)]
pub struct Total {
    total_cents: i64,
}

#[intents]
pub trait Receipts {
    #[intent("Total the receipt")]
    async fn total(
        &self,
        note: &str,
        pages: Vec<Document>,
        photos: &[Image],
        cover: Option<Image>,
    ) -> Result<Total, IntentError>;

    #[intent("Total the photographed receipt")]
    async fn photos(&self, photos: Vec<Image>) -> Result<Total, IntentError>;

    // The other shapes the macro takes: they compile, and send as the ones above.
    #[intent("Total the receipt")]
    async fn shapes(
        &self,
        front: &Vec<Image>,
        back: [Image; 2],
        stamp: Option<&Image>,
        contract: &Option<Document>,
    ) -> Result<Total, IntentError>;
}

const REPLY: &str = r#"{"value": {"total_cents": 250}}"#;

/// The PNG, made distinct by `tag` trailing bytes (still a PNG: the signature leads).
fn png(tag: usize) -> Image {
    let mut bytes = PNG.to_vec();
    bytes.extend(std::iter::repeat_n(0, tag));
    Image::from_bytes(bytes).unwrap()
}

fn pdf() -> Document {
    Document::from_bytes_named(PDF, "receipt.pdf").unwrap()
}

fn data_url(image: &Image) -> String {
    let media = image.media();
    format!(
        "data:{};base64,{}",
        media.media_type().unwrap().as_str(),
        media.base64().unwrap()
    )
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

/// A server that answers every POST with `reply` (`Value::Null` for a provider whose
/// reply the test does not read: only the body sent matters).
async fn server(reply: Value) -> MockServer {
    let server = MockServer::start().await;
    let reply = Mutex::new(reply);
    Mock::given(method("POST"))
        .respond_with(move |_: &wiremock::Request| {
            ResponseTemplate::new(200).set_body_json(reply.lock().unwrap().clone())
        })
        .mount(&server)
        .await;
    server
}

fn openai(base: &str) -> OpenAi {
    OpenAi::new(SECRET_KEY)
        .with_base_url(base)
        .with_model("gpt-test")
}

fn receipts(provider: impl Provider + 'static) -> ReceiptsClient {
    ReceiptsClient::new(IntentClient::builder().provider(provider).build().unwrap())
}

#[tokio::test]
async fn each_medium_of_a_list_or_option_is_its_own_numbered_part_in_parameter_order() {
    let server = server(completion(REPLY)).await;
    let photos = [png(1), png(2)];
    let result = receipts(openai(&server.uri()))
        .total("Two pages", vec![pdf(), pdf()], &photos, Some(png(3)))
        .await
        .unwrap();
    assert_eq!(result, Total { total_cents: 250 });
    let body = &received_bodies(&server).await[0];
    assert_valid_chat_request(body, OPENAI_FIELDS);
    let file = json!({"type": "file", "file": {"filename": "receipt.pdf",
        "file_data": format!("data:application/pdf;base64,{}", pdf().media().base64().unwrap())}});
    let image = |image: &Image| json!({"type": "image_url", "image_url": {"url": data_url(image)}});
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "text", "text": "Input (JSON object with keys note (String)):\n{\"note\":\"Two pages\"}\n\nInput pages, 1 of 2 (PDF document):\n"},
            file,
            {"type": "text", "text": "\n\nInput pages, 2 of 2 (PDF document):\n"},
            file,
            {"type": "text", "text": "\n\nInput photos, 1 of 2 (PNG image):\n"},
            image(&photos[0]),
            {"type": "text", "text": "\n\nInput photos, 2 of 2 (PNG image):\n"},
            image(&photos[1]),
            {"type": "text", "text": "\n\nInput cover (PNG image):\n"},
            image(&png(3)),
        ])
    );
}

#[tokio::test]
async fn an_empty_list_and_none_send_no_part() {
    let server = server(completion(REPLY)).await;
    receipts(openai(&server.uri()))
        .total("Nothing attached", Vec::new(), &[], None)
        .await
        .unwrap();
    let body = &received_bodies(&server).await[0];
    assert_valid_chat_request(body, OPENAI_FIELDS);
    // No medium: the turn is plain text, as for a method without media.
    assert_eq!(
        body["messages"][1]["content"],
        "Input (JSON object with keys note (String)):\n{\"note\":\"Nothing attached\"}"
    );
}

#[tokio::test]
async fn a_list_as_the_only_input_is_numbered_without_a_name() {
    let model = ScriptedProvider::new([REPLY]);
    let client = ReceiptsClient::new(
        IntentClient::builder()
            .provider(model.clone())
            .build()
            .unwrap(),
    );
    client.photos(vec![png(1), png(2)]).await.unwrap();
    let request = &model.requests()[0];
    let parts: Vec<Part<'_>> = request.messages[0].parts().collect();
    assert_eq!(parts.len(), 5, "{parts:?}");
    assert_eq!(
        parts[0],
        Part::Text("## Intent\nTotal the photographed receipt\n\n## Input 1 of 2 (PNG image)\n")
    );
    assert!(matches!(parts[1], Part::Media(media) if media == png(1).media()));
    assert_eq!(parts[2], Part::Text("\n\n## Input 2 of 2 (PNG image)\n"));
    assert!(matches!(parts[3], Part::Media(media) if media == png(2).media()));
}

#[tokio::test]
async fn every_shape_the_macro_takes_sends_its_media() {
    let model = ScriptedProvider::from_fn(|_, _| ScriptedReply::text(REPLY));
    let client = ReceiptsClient::new(
        IntentClient::builder()
            .provider(model.clone())
            .build()
            .unwrap(),
    );
    client
        .shapes(&vec![png(1)], [png(2), png(3)], Some(&png(4)), &Some(pdf()))
        .await
        .unwrap();
    client
        .shapes(&Vec::new(), [png(2), png(3)], None, &None)
        .await
        .unwrap();
    let media = |request: &ProviderRequest| -> Vec<Value> {
        request.messages[0]
            .media
            .iter()
            .map(|part| json!(part.media.sha256_hex()))
            .collect()
    };
    let requests = model.requests();
    let digest = |image: Image| json!(image.media().sha256_hex());
    assert_eq!(
        media(&requests[0]),
        vec![
            digest(png(1)),
            digest(png(2)),
            digest(png(3)),
            digest(png(4)),
            json!(pdf().media().sha256_hex())
        ]
    );
    assert_eq!(media(&requests[1]), vec![digest(png(2)), digest(png(3))]);
}

#[tokio::test]
async fn the_providers_limits_count_the_media_of_every_parameter_together() {
    let server = server(completion(REPLY)).await;
    // Two images are within the limit, three are not: the list and the option together.
    let limits = MediaLimits::OPENAI.with_max_images(2, usize::MAX);
    let client = receipts(openai(&server.uri()).with_media_limits(limits));
    let error = client
        .total("Over", Vec::new(), &[png(1), png(2)], Some(png(3)))
        .await
        .unwrap_err();
    assert_eq!(
        error.not_sent(),
        Some(&NotSent::MediaLimit {
            provider: "openai".to_owned()
        })
    );
    let refusal = error
        .provider_error()
        .and_then(std::error::Error::source)
        .and_then(|source| source.downcast_ref::<MediaRefusal>());
    assert!(
        matches!(
            refusal,
            Some(MediaRefusal::TooManyImages {
                images: 3,
                max: 2,
                ..
            })
        ),
        "{refusal:?}"
    );
    assert!(received_bodies(&server).await.is_empty());
    client
        .total("Within", Vec::new(), &[png(1)], Some(png(3)))
        .await
        .unwrap();
    assert_eq!(received_bodies(&server).await.len(), 1);
}

/// A request of one turn with the PNG at `detail` and the PDF.
fn request_with_detail(detail: Option<ImageDetail>) -> ProviderRequest {
    let image = match detail {
        Some(detail) => png(0).with_detail(detail),
        None => png(0),
    };
    let parts = vec![
        MediaPart {
            at: 0,
            media: image.media().clone(),
        },
        MediaPart {
            at: 0,
            media: pdf().media().clone(),
        },
    ];
    let mut request = ProviderRequest::text("", "Total it");
    request.messages = vec![Message::user_with_media("Total it", parts)];
    request
}

/// The bodies `provider` sends for `request_with_detail` at `Low`, `High`, `Auto` and none.
async fn bodies_by_detail(server: &MockServer, provider: &dyn Provider) -> Vec<Value> {
    for detail in [
        Some(ImageDetail::Low),
        Some(ImageDetail::High),
        Some(ImageDetail::Auto),
        None,
    ] {
        // The reply is not read: the body sent is what matters.
        let _ = provider.complete(&request_with_detail(detail)).await;
    }
    let bodies = received_bodies(server).await;
    assert_eq!(bodies.len(), 4);
    bodies
}

#[tokio::test]
async fn chat_completions_and_azure_send_the_images_detail_and_none_when_unset() {
    let chat = server(completion(REPLY)).await;
    let bodies = bodies_by_detail(&chat, &openai(&chat.uri())).await;
    for (body, detail) in bodies
        .iter()
        .zip([Some("low"), Some("high"), Some("auto"), None])
    {
        assert_valid_chat_request(body, OPENAI_FIELDS);
        let image_url = &body["messages"][0]["content"][0]["image_url"];
        assert_eq!(image_url["detail"].as_str(), detail, "{body}");
        // The PDF's part has no detail of its own.
        assert!(
            body["messages"][0]["content"][1]["file"]
                .get("detail")
                .is_none()
        );
    }
    assert!(
        bodies[3]["messages"][0]["content"][0]["image_url"]
            .get("detail")
            .is_none()
    );

    let azure_server = server(completion(REPLY)).await;
    let azure = AzureOpenAi::new(azure_server.uri(), SECRET_KEY, "gpt-4o-mini-prod");
    let bodies = bodies_by_detail(&azure_server, &azure).await;
    for (body, detail) in bodies
        .iter()
        .zip([Some("low"), Some("high"), Some("auto"), None])
    {
        assert_eq!(
            body["messages"][0]["content"][0]["image_url"]["detail"].as_str(),
            detail,
            "{body}"
        );
    }
}

/// Whether `value` has a key named `detail` anywhere inside it.
fn has_detail(value: &Value) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(key, value)| key == "detail" || has_detail(value)),
        Value::Array(items) => items.iter().any(has_detail),
        _ => false,
    }
}

#[tokio::test]
async fn anthropic_and_gemini_have_no_detail_field_and_are_sent_none() {
    let messages = server(Value::Null).await;
    let anthropic = Anthropic::new(SECRET_KEY)
        .with_base_url(messages.uri())
        .with_model("claude-test");
    for body in bodies_by_detail(&messages, &anthropic).await {
        assert_eq!(body["messages"][0]["content"][0]["type"], "image", "{body}");
        assert!(!has_detail(&body), "{body}");
    }
    let generate = server(Value::Null).await;
    let gemini = Gemini::new(SECRET_KEY)
        .with_base_url(format!("{}/v1beta", generate.uri()))
        .with_model("gemini-2.5-flash");
    for body in bodies_by_detail(&generate, &gemini).await {
        assert_eq!(
            body["contents"][0]["parts"][0]["inlineData"]["mimeType"], "image/png",
            "{body}"
        );
        assert!(!has_detail(&body), "{body}");
        assert!(body["generationConfig"].get("mediaResolution").is_none());
    }
}

#[tokio::test]
async fn the_response_cache_tells_detail_levels_apart() {
    let model = ScriptedProvider::from_fn(|_, _| ScriptedReply::text(REPLY));
    let client = IntentClient::builder()
        .provider(model.clone())
        .in_memory_cache(8)
        .build()
        .unwrap();
    let send = |image: Image| {
        let client = client.clone();
        async move {
            client
                .transform_prepared::<Total>(
                    PreparedInput::from(image),
                    "Total it",
                    IntentOptions::new(),
                )
                .await
                .into_result()
                .unwrap()
        }
    };
    send(png(0).with_detail(ImageDetail::Low)).await;
    send(png(0).with_detail(ImageDetail::Low)).await;
    assert_eq!(
        model.requests().len(),
        1,
        "the same image at the same level"
    );
    send(png(0).with_detail(ImageDetail::High)).await;
    assert_eq!(
        model.requests().len(),
        2,
        "another level is another request"
    );
}

#[tokio::test]
async fn a_call_whose_only_inputs_are_all_empty_is_refused_before_sending() {
    let model = ScriptedProvider::from_fn(|_, _| ScriptedReply::text(REPLY));
    let client = ReceiptsClient::new(
        IntentClient::builder()
            .provider(model.clone())
            .build()
            .unwrap(),
    );
    let error = client.photos(Vec::new()).await.unwrap_err();
    assert_eq!(error.not_sent(), Some(&NotSent::InvalidInput), "{error}");
    assert!(
        error.to_string().contains("The call has no input"),
        "{error}"
    );
    assert!(model.requests().is_empty());
    // One medium is enough, and so is a text input beside empty media (tested above).
    client.photos(vec![png(0)]).await.unwrap();
    assert_eq!(model.requests().len(), 1);
}
