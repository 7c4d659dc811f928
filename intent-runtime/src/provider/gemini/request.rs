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
    /// How the request's model thinks.
    pub(crate) thinking: ModelThinking,
}

/// The least thinking budget of the Gemini models that cannot stop thinking (2.5 Pro).
pub(crate) const MIN_THINKING_BUDGET: i32 = 128;

/// The output tokens added to a short answer's `maxOutputTokens` for a model that thinks
/// anyway: a budget guides the thinking rather than capping it, so the room is well over
/// [`MIN_THINKING_BUDGET`]. Only the tokens used are billed.
pub(crate) const THINKING_ROOM: u32 = 1024;

/// How a model thinks, as far as a short answer's settings go. On Gemini's thinking
/// models `maxOutputTokens` bounds the thinking and the answer together, so a one-token
/// answer could be spent on thinking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum ModelThinking {
    /// Thinks by default and stops with `thinkingBudget: 0` (2.5 Flash, Flash-Lite).
    CanStop,
    /// Thinks and cannot be told not to (2.5 Pro: a budget of at least 128; Gemini 3).
    Always,
    /// Does not think (1.x, 2.0, Gemma).
    Never,
    /// A model this library does not know: it may think.
    #[default]
    Unknown,
}

impl ModelThinking {
    /// How `model` (an id, or `models/<id>`) thinks, from its name.
    pub(crate) fn of(model: &str) -> Self {
        let id = model.rsplit('/').next().unwrap_or(model);
        let starts = |prefixes: &[&str]| prefixes.iter().any(|prefix| id.starts_with(prefix));
        if starts(&[
            "gemini-2.5-flash",
            "gemini-flash-latest",
            "gemini-flash-lite-latest",
        ]) {
            ModelThinking::CanStop
        } else if starts(&["gemini-2.5-pro", "gemini-pro-latest", "gemini-3"]) {
            ModelThinking::Always
        } else if starts(&["gemini-1.", "gemini-2.0-", "gemma-"]) {
            ModelThinking::Never
        } else {
            ModelThinking::Unknown
        }
    }

    /// The thinking budget to send and the output tokens to add to `maxOutputTokens`,
    /// for a request asking for a short answer (`minimal_thinking`); `budget` is the
    /// provider's own setting, which wins.
    fn short_answer(self, budget: Option<i32>) -> (Option<i32>, u32) {
        match (budget, self) {
            (Some(0), _) => (Some(0), 0),
            (Some(budget), _) => (
                Some(budget),
                THINKING_ROOM.max(u32::try_from(budget).unwrap_or(0).saturating_mul(2)),
            ),
            (None, ModelThinking::CanStop) => (Some(0), 0),
            (None, ModelThinking::Always) => (Some(MIN_THINKING_BUDGET), THINKING_ROOM),
            (None, ModelThinking::Never) => (None, 0),
            (None, ModelThinking::Unknown) => (None, THINKING_ROOM),
        }
    }
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
/// {"mimeType", "fileUri"}}` for a URL Gemini fetches. An image's
/// [`ImageDetail`](crate::media::ImageDetail) is not sent: Gemini's resolution setting in
/// the specifications this client follows is `generationConfig.mediaResolution`, one for
/// the whole request, and no per-part field is specified.
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
    let (thinking_budget, room) = if request.minimal_thinking {
        settings.thinking.short_answer(settings.thinking_budget)
    } else {
        (settings.thinking_budget, 0)
    };
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
            max_output_tokens: request
                .max_output_tokens
                .map(|answer| answer.saturating_add(room)),
            candidate_count: 1,
            response_mime_type,
            response_json_schema,
            response_logprobs: logprobs.map(|_| true),
            logprobs,
            thinking_config: thinking_budget
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
            ..BodySettings::default()
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
    fn a_short_answer_stops_thinking_where_the_model_can_and_has_room_where_it_cannot() {
        let mut request = ProviderRequest::text("", "x");
        request.max_output_tokens = Some(1);
        request.minimal_thinking = true;
        let config = |request: &ProviderRequest, model: &str, budget: Option<i32>| {
            let settings = BodySettings {
                thinking_budget: budget,
                thinking: ModelThinking::of(model),
                ..BodySettings::default()
            };
            let body = to_value(&request_body(request, None, settings));
            (
                body["generationConfig"]["maxOutputTokens"].clone(),
                body["generationConfig"]["thinkingConfig"]["thinkingBudget"].clone(),
            )
        };
        for model in [
            "gemini-2.5-flash",
            "models/gemini-2.5-flash-lite",
            "gemini-flash-latest",
        ] {
            assert_eq!(
                config(&request, model, None),
                (json!(1), json!(0)),
                "{model}"
            );
        }
        for model in [
            "gemini-2.5-pro",
            "models/gemini-2.5-pro-preview-06-05",
            "gemini-3-pro-preview",
        ] {
            assert_eq!(
                config(&request, model, None),
                (json!(1025), json!(128)),
                "{model}"
            );
        }
        // A model that does not think is asked as before; one this library does not know
        // gets the room without a budget it might refuse.
        assert_eq!(
            config(&request, "gemini-2.0-flash", None),
            (json!(1), Value::Null)
        );
        assert_eq!(
            config(&request, "tunedModels/mine", None),
            (json!(1025), Value::Null)
        );
        // The provider's own budget wins, with room for it.
        assert_eq!(
            config(&request, "gemini-2.5-pro", Some(4096)),
            (json!(8193), json!(4096))
        );
        assert_eq!(
            config(&request, "gemini-2.5-pro", Some(0)),
            (json!(1), json!(0))
        );
        // Any other request is sent as it was asked.
        request.minimal_thinking = false;
        assert_eq!(
            config(&request, "gemini-2.5-flash", None),
            (json!(1), Value::Null)
        );
        assert_eq!(
            config(&request, "gemini-2.5-pro", Some(256)),
            (json!(1), json!(256))
        );
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
