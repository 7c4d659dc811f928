//! The body of a `generateContent` request, serialized straight from the
//! [`ProviderRequest`]: prompts, media and schema are borrowed, never copied into a
//! `Value` tree.

use serde::Serialize;
use serde::ser::SerializeSeq;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::media::Media;
use crate::provider::http::temperature_value;
use crate::provider::{Message, Part, ProviderRequest, ResponseFormat, Role};

/// The media type Gemini is told for JSON replies (JSON mode, with or without a schema).
const JSON_MIME_TYPE: &str = "application/json";

/// What a request asks of the reply beyond the [`ProviderRequest`] itself: the settings
/// of the provider that sends it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BodySettings {
    /// The most `logprobs` Gemini reports per step; `None` sends no log-probability
    /// request at all.
    pub(crate) max_top_logprobs: Option<u8>,
    /// `thinkingConfig.thinkingBudget`, when set.
    pub(crate) thinking_budget: Option<i32>,
}

/// A `GenerateContentRequest` (camelCase on the wire).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<SystemInstruction<'a>>,
    contents: Vec<Content<'a>>,
    generation_config: GenerationConfig<'a>,
}

/// `systemInstruction`: a Content of one text part, outside `contents`.
#[derive(Serialize)]
struct SystemInstruction<'a> {
    parts: [TextPart<'a>; 1],
}

#[derive(Serialize)]
struct TextPart<'a> {
    text: &'a str,
}

/// One turn: `user`, or `model` for the model's own earlier reply.
#[derive(Serialize)]
struct Content<'a> {
    role: &'static str,
    parts: Parts<'a>,
}

/// A turn's parts: text, and each image or document where it sits in the text.
struct Parts<'a>(&'a Message);

impl Serialize for Parts<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut parts = serializer.serialize_seq(None)?;
        let mut any = false;
        for part in self.0.parts() {
            any = true;
            match part {
                Part::Text(text) => parts.serialize_element(&TextPart { text })?,
                Part::Media(media) => parts.serialize_element(&MediaPart::of(media))?,
            }
        }
        if !any {
            // Gemini refuses a turn without parts; an empty text says what was there.
            parts.serialize_element(&TextPart { text: "" })?;
        }
        parts.end()
    }
}

/// `{"inlineData": {"mimeType", "data"}}` for bytes (bare base64), `{"fileData":
/// {"mimeType", "fileUri"}}` for a URL Gemini fetches.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum MediaPart<'a> {
    InlineData {
        #[serde(rename = "mimeType")]
        mime_type: &'static str,
        /// The media's shared base64 text, borrowed: nothing is encoded per request.
        data: &'a str,
    },
    FileData {
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<&'static str>,
        #[serde(rename = "fileUri")]
        file_uri: &'a str,
    },
}

impl<'a> MediaPart<'a> {
    fn of(media: &'a Media) -> Self {
        let mime_type = media.media_type().map(|kind| kind.as_str());
        match media.url_str() {
            Some(url) => MediaPart::FileData {
                mime_type,
                file_uri: url,
            },
            None => MediaPart::InlineData {
                // Bytes always have a recognised type; PDF is the only other kind.
                mime_type: mime_type.unwrap_or("application/pdf"),
                data: media.base64().unwrap_or_default(),
            },
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    /// Always one: the reply is `candidates[0]`.
    candidate_count: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_logprobs: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<ThinkingConfig>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ThinkingConfig {
    thinking_budget: i32,
}

/// The wire name of a role: Gemini calls the assistant `model`.
fn role(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "model",
    }
}

/// The body of `request`; `schema` is the rewritten strict schema
/// ([`gemini_schema_json`](super::schema::gemini_schema_json)) for a strict-schema request.
pub(crate) fn request_body<'a>(
    request: &'a ProviderRequest,
    schema: Option<&'a RawValue>,
    settings: BodySettings,
) -> GenerateBody<'a> {
    let (response_mime_type, response_json_schema) = match request.response_format {
        ResponseFormat::Text => (None, None),
        ResponseFormat::JsonObject => (Some(JSON_MIME_TYPE), None),
        ResponseFormat::JsonSchema => (Some(JSON_MIME_TYPE), schema),
    };
    let logprobs = request
        .top_logprobs
        .zip(settings.max_top_logprobs)
        .map(|(asked, limit)| asked.clamp(1, limit.max(1)));
    GenerateBody {
        system_instruction: (!request.system.is_empty()).then(|| SystemInstruction {
            parts: [TextPart {
                text: &request.system,
            }],
        }),
        contents: request
            .messages
            .iter()
            .map(|message| Content {
                role: role(message.role),
                parts: Parts(message),
            })
            .collect(),
        generation_config: GenerationConfig {
            temperature: request.temperature.and_then(temperature_value),
            max_output_tokens: request.max_output_tokens,
            candidate_count: 1,
            response_mime_type,
            response_json_schema,
            response_logprobs: logprobs.map(|_| true),
            logprobs,
            thinking_config: settings
                .thinking_budget
                .map(|thinking_budget| ThinkingConfig { thinking_budget }),
        },
    }
}

impl GenerateBody<'_> {
    /// About how long the JSON will be: prompts, media, schema and room for escapes and
    /// the other fields, so the buffer is allocated once.
    pub(crate) fn size_hint(&self) -> usize {
        let prompts = self
            .system_instruction
            .as_ref()
            .map_or(0, |system| system.parts[0].text.len())
            + self
                .contents
                .iter()
                .map(|content| {
                    let message = content.parts.0;
                    message.content.len()
                        + 32
                        + message
                            .media
                            .iter()
                            .map(|part| part.media.wire_len() + 64)
                            .sum::<usize>()
                })
                .sum::<usize>();
        let schema = self
            .generation_config
            .response_json_schema
            .map_or(0, |schema| schema.get().len());
        prompts + prompts / 16 + schema + 256
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::provider::MediaPart as TurnMedia;

    fn to_value(body: &GenerateBody<'_>) -> Value {
        serde_json::to_value(body).unwrap()
    }

    #[test]
    fn a_text_request_has_turns_and_no_json_settings() {
        let request = ProviderRequest::text("", "hi");
        let body = to_value(&request_body(&request, None, BodySettings::default()));
        assert_eq!(
            body,
            json!({
                "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                "generationConfig": {"candidateCount": 1}
            })
        );
    }

    #[test]
    fn retries_are_model_and_user_turns() {
        let mut request = ProviderRequest::text("sys", "first");
        request.messages.push(Message::assistant("reply"));
        request.messages.push(Message::user("problems"));
        request.response_format = ResponseFormat::JsonObject;
        let body = to_value(&request_body(&request, None, BodySettings::default()));
        let roles: Vec<&str> = body["contents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|turn| turn["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "model", "user"]);
        assert_eq!(
            body["systemInstruction"],
            json!({"parts": [{"text": "sys"}]})
        );
        assert_eq!(
            body["generationConfig"],
            json!({"candidateCount": 1, "responseMimeType": "application/json"})
        );
    }

    #[test]
    fn a_schema_request_without_a_schema_asks_for_json_only() {
        let mut request = ProviderRequest::text("", "x");
        request.response_format = ResponseFormat::JsonSchema;
        request.schema = Some(Arc::new(json!({"type": "object"})));
        let body = to_value(&request_body(&request, None, BodySettings::default()));
        assert!(body["generationConfig"].get("responseJsonSchema").is_none());
        assert_eq!(
            body["generationConfig"]["responseMimeType"],
            "application/json"
        );
    }

    #[test]
    fn log_probabilities_are_asked_for_within_the_limit() {
        let mut request = ProviderRequest::text("", "x");
        request.top_logprobs = Some(50);
        let settings = BodySettings {
            max_top_logprobs: Some(20),
            thinking_budget: Some(0),
        };
        let body = to_value(&request_body(&request, None, settings));
        assert_eq!(
            body["generationConfig"],
            json!({"candidateCount": 1, "responseLogprobs": true, "logprobs": 20,
                   "thinkingConfig": {"thinkingBudget": 0}})
        );
        request.top_logprobs = Some(0);
        let body = to_value(&request_body(&request, None, settings));
        assert_eq!(body["generationConfig"]["logprobs"], 1);
        let none = BodySettings::default();
        let body = to_value(&request_body(&request, None, none));
        assert!(body["generationConfig"].get("responseLogprobs").is_none());
    }

    #[test]
    fn media_are_inline_data_or_file_data_in_place() {
        let png = crate::media::Image::from_bytes(b"\x89PNG\r\n\x1a\n0000".to_vec()).unwrap();
        let url = crate::media::Image::from_url("https://example.com/a.png").unwrap();
        let message = Message::user_with_media(
            "look: then",
            vec![
                TurnMedia {
                    at: 6,
                    media: png.media().clone(),
                },
                TurnMedia {
                    at: 10,
                    media: url.media().clone(),
                },
            ],
        );
        let request = ProviderRequest {
            messages: vec![message],
            ..ProviderRequest::text("", "")
        };
        let body = to_value(&request_body(&request, None, BodySettings::default()));
        assert_eq!(
            body["contents"][0]["parts"],
            json!([
                {"text": "look: "},
                {"inlineData": {"mimeType": "image/png", "data": png.media().base64().unwrap()}},
                {"text": "then"},
                {"fileData": {"fileUri": "https://example.com/a.png"}}
            ])
        );
    }

    #[test]
    fn an_empty_turn_still_has_a_part() {
        let request = ProviderRequest::text("", "");
        let body = to_value(&request_body(&request, None, BodySettings::default()));
        assert_eq!(body["contents"][0]["parts"], json!([{"text": ""}]));
    }
}
