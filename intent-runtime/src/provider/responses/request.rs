//! The body of one `POST /v1/responses` request, serialized straight from the
//! [`ProviderRequest`]: the system prompt as `instructions`, the turns as `input`
//! messages, the strict schema flat in `text.format`, `store` always stated.
//!
//! Like the Chat Completions body, nothing is copied into a `Value` tree: the prompts are
//! borrowed and the schema is the JSON text serialized once per schema.

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq};
use serde_json::value::RawValue;

use crate::media::{ImageDetail, MediaUrl};
use crate::provider::http::temperature_value;
use crate::provider::openai::request::sanitize_schema_name;
use crate::provider::{Message, Part, ProviderRequest, ResponseFormat, Role};

/// The smallest `max_output_tokens` the Responses API takes; a smaller limit is sent as
/// this one (a decision question asks for one token, which the API would refuse).
pub(crate) const MIN_OUTPUT_TOKENS: u32 = 16;

/// What `include` asks for to get the log-probabilities of the output text.
const LOGPROBS_INCLUDE: &str = "message.output_text.logprobs";

/// The body of one Responses request.
pub(crate) struct ResponsesBody<'a> {
    pub(crate) request: &'a ProviderRequest,
    /// The model asked (the request's own, else the provider's default).
    pub(crate) model: &'a str,
    /// The request's schema as JSON text (`http::schema_json`).
    pub(crate) schema: Option<&'a RawValue>,
    /// Whether OpenAI may keep the response (`store`); sent either way, since the API
    /// keeps responses unless told not to.
    pub(crate) store: bool,
    /// The most `top_logprobs` sent, whatever the request asks.
    pub(crate) max_top_logprobs: u8,
    /// Asks for the reply as server-sent events.
    pub(crate) stream: bool,
}

impl ResponsesBody<'_> {
    /// About how long the JSON will be: the prompts, the schema, the media and room for
    /// escapes and the other fields.
    pub(crate) fn size_hint(&self) -> usize {
        let prompts = self.request.prompt_len();
        prompts
            + prompts / 16
            + self.schema.map_or(0, |schema| schema.get().len())
            + 32 * self.request.messages.len()
            + self
                .request
                .media()
                .map(|media| media.wire_len() + 128)
                .sum::<usize>()
            + 256
    }
}

impl Serialize for ResponsesBody<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.request;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("model", self.model)?;
        if !request.system.is_empty() {
            map.serialize_entry("instructions", &request.system)?;
        }
        map.serialize_entry("input", &Input(&request.messages))?;
        if let Some(format) = text_format(request, self.schema) {
            map.serialize_entry("text", &TextParam { format })?;
        }
        if let Some(limit) = request.max_output_tokens {
            map.serialize_entry("max_output_tokens", &limit.max(MIN_OUTPUT_TOKENS))?;
        }
        if let Some(temperature) = request.temperature.and_then(temperature_value) {
            map.serialize_entry("temperature", &temperature)?;
        }
        if let Some(asked) = request.top_logprobs {
            map.serialize_entry("include", &[LOGPROBS_INCLUDE])?;
            map.serialize_entry("top_logprobs", &asked.min(self.max_top_logprobs))?;
        }
        map.serialize_entry("store", &self.store)?;
        if self.stream {
            map.serialize_entry("stream", &true)?;
        }
        map.end()
    }
}

/// `input`: one message per turn, in order.
struct Input<'a>(&'a [Message]);

impl Serialize for Input<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut items = serializer.serialize_seq(Some(self.0.len()))?;
        for message in self.0 {
            // An assistant turn (a retry's previous reply) is always text: the API takes
            // only `output_text` and `refusal` parts in one, never input parts.
            let content = if message.media.is_empty() || message.role == Role::Assistant {
                Content::Text(&message.content)
            } else {
                Content::Parts(Parts(message))
            };
            items.serialize_element(&InputMessage {
                role: message.role.as_str(),
                content,
            })?;
        }
        items.end()
    }
}

/// An input message (`EasyInputMessage`): a role and its content.
#[derive(Serialize)]
struct InputMessage<'a> {
    role: &'static str,
    content: Content<'a>,
}

/// A turn's `content`: a string, or a list of input parts when the turn carries media.
#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(&'a str),
    Parts(Parts<'a>),
}

/// A user turn with media as input parts: `input_text`, `input_image` (a URL or a
/// `data:` URL) and, for a PDF, `input_file` (its URL, or its bytes as a `data:` URL).
struct Parts<'a>(&'a Message);

impl Serialize for Parts<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut parts = serializer.serialize_seq(None)?;
        for part in self.0.parts() {
            match part {
                Part::Text(text) => parts.serialize_element(&InputPart::Text { text })?,
                Part::Media(media) if media.is_image() => {
                    parts.serialize_element(&InputPart::Image {
                        image_url: MediaUrl(media),
                        // Listed as required by the API's description; `auto` is its
                        // default, sent when the image asks for no level.
                        detail: media.detail().map_or("auto", ImageDetail::as_str),
                    })?;
                }
                Part::Media(media) => match media.url_str() {
                    Some(url) => {
                        parts.serialize_element(&InputPart::FileUrl { file_url: url })?;
                    }
                    None => parts.serialize_element(&InputPart::File {
                        filename: media.filename(),
                        file_data: MediaUrl(media),
                    })?,
                },
            }
        }
        parts.end()
    }
}

/// One input part, tagged by its `type`.
#[derive(Serialize)]
#[serde(tag = "type")]
enum InputPart<'a> {
    #[serde(rename = "input_text")]
    Text { text: &'a str },
    #[serde(rename = "input_image")]
    Image {
        image_url: MediaUrl<'a>,
        detail: &'static str,
    },
    #[serde(rename = "input_file")]
    FileUrl { file_url: &'a str },
    #[serde(rename = "input_file")]
    File {
        filename: &'a str,
        file_data: MediaUrl<'a>,
    },
}

/// `text`: only its `format` is sent.
#[derive(Serialize)]
struct TextParam<'a> {
    format: TextFormat<'a>,
}

/// `text.format`: flat, unlike Chat Completions' `response_format.json_schema`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum TextFormat<'a> {
    JsonObject,
    JsonSchema {
        name: std::borrow::Cow<'a, str>,
        schema: &'a RawValue,
        strict: bool,
    },
}

/// The `text.format` of `request`: none for text (the API's default), `json_object` for
/// JSON object mode and for a strict-schema request without a schema, and the strict
/// schema otherwise.
fn text_format<'a>(
    request: &'a ProviderRequest,
    schema: Option<&'a RawValue>,
) -> Option<TextFormat<'a>> {
    match request.response_format {
        ResponseFormat::Text => None,
        ResponseFormat::JsonObject => Some(TextFormat::JsonObject),
        ResponseFormat::JsonSchema => match schema {
            Some(schema) => Some(TextFormat::JsonSchema {
                name: sanitize_schema_name(&request.schema_name),
                schema,
                strict: true,
            }),
            None => {
                tracing::debug!(
                    "a strict schema was asked for without a schema; sending json_object"
                );
                Some(TextFormat::JsonObject)
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::*;
    use crate::media::{Document, Image};
    use crate::provider::{MediaPart, http};

    fn body(request: &ProviderRequest, stream: bool) -> Value {
        let schema = request.schema.as_ref().map(http::schema_json);
        let body = ResponsesBody {
            request,
            model: "gpt-4.1-mini",
            schema: schema.as_deref(),
            store: false,
            max_top_logprobs: 20,
            stream,
        };
        let text = serde_json::to_string(&body).unwrap();
        assert!(
            text.len() <= body.size_hint(),
            "{} {}",
            text.len(),
            body.size_hint()
        );
        serde_json::from_str(&text).unwrap()
    }

    fn invoice_schema() -> Value {
        json!({"type": "object", "properties": {"value": {"type": "object",
            "properties": {"number": {"type": "string"}, "total_cents": {"type": "integer"}},
            "required": ["number", "total_cents"], "additionalProperties": false}},
            "required": ["value"], "additionalProperties": false})
    }

    #[test]
    fn a_strict_schema_request_is_the_specs_example_c1() {
        let request = ProviderRequest {
            response_format: ResponseFormat::JsonSchema,
            schema: Some(Arc::new(invoice_schema())),
            schema_name: "invoice".into(),
            max_output_tokens: Some(512),
            ..ProviderRequest::text(
                "Answer with JSON only.",
                "Extract the invoice fields from document 7",
            )
        };
        assert_eq!(
            body(&request, false),
            json!({
                "model": "gpt-4.1-mini",
                "instructions": "Answer with JSON only.",
                "input": [{"role": "user", "content": "Extract the invoice fields from document 7"}],
                "text": {"format": {"type": "json_schema", "name": "invoice", "strict": true,
                    "schema": invoice_schema()}},
                "max_output_tokens": 512,
                "store": false
            })
        );
    }

    #[test]
    fn text_json_object_and_a_schema_without_schema() {
        let plain = body(&ProviderRequest::text("", "hi"), true);
        assert_eq!(
            plain,
            json!({"model": "gpt-4.1-mini", "input": [{"role": "user", "content": "hi"}],
                "store": false, "stream": true})
        );
        let mut request = ProviderRequest {
            response_format: ResponseFormat::JsonObject,
            ..ProviderRequest::text("s", "hi")
        };
        assert_eq!(
            body(&request, false)["text"],
            json!({"format": {"type": "json_object"}})
        );
        request.response_format = ResponseFormat::JsonSchema;
        assert_eq!(
            body(&request, false)["text"],
            json!({"format": {"type": "json_object"}})
        );
        request.schema = Some(Arc::new(json!({"type": "object"})));
        request.schema_name = "Invoice<Line> v2".into();
        assert_eq!(
            body(&request, false)["text"]["format"]["name"],
            "Invoice_Line__v2"
        );
    }

    #[test]
    fn a_retry_sends_the_turns_in_order_with_the_reply_as_an_assistant_message() {
        let mut request = ProviderRequest::text("sys", "first");
        request.messages.push(Message::assistant("{\"value\": 1"));
        request.messages.push(Message::user("fix it"));
        request.temperature = Some(0.2);
        let sent = body(&request, false);
        assert_eq!(
            sent["input"],
            json!([
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": "{\"value\": 1"},
                {"role": "user", "content": "fix it"}
            ])
        );
        assert_eq!(sent["temperature"], json!(0.2));
    }

    #[test]
    fn log_probabilities_are_included_up_to_twenty_and_small_limits_raised() {
        let request = ProviderRequest {
            top_logprobs: Some(50),
            max_output_tokens: Some(1),
            ..ProviderRequest::text("", "yes or no?")
        };
        let sent = body(&request, false);
        assert_eq!(sent["include"], json!(["message.output_text.logprobs"]));
        assert_eq!(sent["top_logprobs"], json!(20));
        assert_eq!(sent["max_output_tokens"], json!(16));
        assert!(sent.get("logprobs").is_none());
    }

    #[test]
    fn media_are_input_parts_with_data_urls_and_file_urls() {
        let png: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0";
        let image = Image::from_bytes(png.to_vec()).unwrap().media().clone();
        let pdf = Document::from_bytes(b"%PDF-1.4\n1 0 obj<</Type/Page>>endobj\n%%EOF".to_vec())
            .unwrap()
            .media()
            .clone();
        let remote = Document::from_url("https://example.com/a.pdf")
            .unwrap()
            .media()
            .clone();
        let message = Message::user_with_media(
            "Look: and then ",
            vec![
                MediaPart {
                    at: 6,
                    media: image.clone(),
                },
                MediaPart { at: 15, media: pdf },
                MediaPart {
                    at: 15,
                    media: remote,
                },
            ],
        );
        let request = ProviderRequest {
            messages: vec![message],
            ..ProviderRequest::text("", "")
        };
        let parts = body(&request, false)["input"][0]["content"].clone();
        assert_eq!(parts[0], json!({"type": "input_text", "text": "Look: "}));
        assert_eq!(parts[1]["type"], "input_image");
        assert_eq!(parts[1]["detail"], "auto");
        let url = parts[1]["image_url"].as_str().unwrap();
        assert_eq!(
            url,
            format!("data:image/png;base64,{}", image.base64().unwrap())
        );
        assert_eq!(parts[2], json!({"type": "input_text", "text": "and then "}));
        assert_eq!(parts[3]["type"], "input_file");
        assert_eq!(parts[3]["filename"], "document.pdf");
        assert!(
            parts[3]["file_data"]
                .as_str()
                .unwrap()
                .starts_with("data:application/pdf;base64,")
        );
        assert_eq!(
            parts[4],
            json!({"type": "input_file", "file_url": "https://example.com/a.pdf"})
        );
    }
}
