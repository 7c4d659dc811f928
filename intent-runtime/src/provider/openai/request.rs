//! Chat Completions request bodies, written straight from a [`ProviderRequest`]: the
//! messages with their media parts, the response format (strict `json_schema`,
//! `json_object` or text), the output limit, temperature and log-probabilities, and the
//! per-server differences ([`WireSettings`]).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::media::{ImageDetail, MediaUrl};
use crate::provider::http;
use crate::provider::{DEFAULT_SCHEMA_NAME, Part, ProviderRequest, ResponseFormat};

/// Which body field carries the output-token limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MaxTokensField {
    /// `max_completion_tokens`: OpenAI's current field (reasoning models reject the old one).
    MaxCompletionTokens,
    /// `max_tokens`: the older field, the only one some servers read.
    MaxTokens,
}

impl MaxTokensField {
    fn key(self) -> &'static str {
        match self {
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
            MaxTokensField::MaxTokens => "max_tokens",
        }
    }
}

/// How a request for a strict schema is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StructuredOutput {
    /// `response_format: {"type":"json_schema", ...}` with the schema.
    JsonSchema,
    /// `response_format: {"type":"json_object"}`: for servers without schema support; the
    /// prompt carries the contract and the verifier checks it.
    JsonObject,
}

/// What differs between servers speaking Chat Completions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct WireSettings {
    pub(crate) max_tokens_field: MaxTokensField,
    pub(crate) structured_output: StructuredOutput,
    pub(crate) send_schema_name_and_strict: bool,
    /// Whether the model reads the schema sent with `json_schema` (OpenAI shows it to the
    /// model); servers that only turn it into a decoding grammar do not.
    pub(crate) model_reads_schema: bool,
    /// The most `top_logprobs` the server reports per token; `None` when it returns no
    /// log-probabilities (the fields are then never sent).
    pub(crate) max_top_logprobs: Option<u8>,
}

impl WireSettings {
    /// OpenAI's own API.
    pub(crate) const OPENAI: WireSettings = WireSettings {
        max_tokens_field: MaxTokensField::MaxCompletionTokens,
        structured_output: StructuredOutput::JsonSchema,
        send_schema_name_and_strict: true,
        model_reads_schema: true,
        // OpenAI documents `top_logprobs` from 0 to 20.
        max_top_logprobs: Some(20),
    };
}

/// `name` reduced to what OpenAI accepts as a schema name: `[a-zA-Z0-9_-]{1,64}`, other
/// characters replaced by `_`.
pub(crate) fn sanitize_schema_name(name: &str) -> Cow<'_, str> {
    let acceptable = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !name.is_empty() && name.len() <= 64 && name.chars().all(acceptable) {
        return Cow::Borrowed(name);
    }
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if cleaned.is_empty() {
        Cow::Borrowed(DEFAULT_SCHEMA_NAME)
    } else {
        Cow::Owned(cleaned)
    }
}

/// The JSON body of one Chat Completions request, as a value (what tests inspect).
#[cfg(test)]
pub(crate) fn request_body(
    request: &ProviderRequest,
    model: &str,
    settings: &WireSettings,
    extra: &Map<String, Value>,
) -> Value {
    let schema = request.schema.as_ref().map(http::schema_json);
    serde_json::to_value(ChatBody {
        request,
        model,
        settings,
        extra,
        schema: schema.as_deref(),
        stream: false,
    })
    .unwrap_or(Value::Null)
}

/// The body of one request, serialized straight from the request: the prompts are
/// borrowed, never copied into a `Value` tree (a deep copy of the schema per call cost more
/// than the HTTP exchange itself), and the schema is the text serialized once per schema.
pub(crate) struct ChatBody<'a> {
    pub(crate) request: &'a ProviderRequest,
    pub(crate) model: &'a str,
    pub(crate) settings: &'a WireSettings,
    pub(crate) extra: &'a Map<String, Value>,
    /// The request's schema as JSON text (`http::schema_json`).
    pub(crate) schema: Option<&'a RawValue>,
    /// Asks for the reply as server-sent events, usage included.
    pub(crate) stream: bool,
}

impl ChatBody<'_> {
    /// About how long the JSON will be: the prompts, the schema and room for escapes and
    /// the other fields.
    pub(crate) fn size_hint(&self) -> usize {
        let prompts = self.request.prompt_len();
        prompts
            + prompts / 16
            + self.schema.map_or(0, |schema| schema.get().len())
            + 32 * self.request.messages.len()
            + media_size_hint(self.request)
            + 256
    }
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: Content<'a>,
}

/// A turn's `content`: a string, or an array of parts when the turn carries media.
#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(&'a str),
    Parts(PartsBody<'a>),
}

/// A user turn with media as Chat Completions content parts: `text`, `image_url` (a
/// data URL or the image's URL, and its `detail` when the image has one) and, for a PDF,
/// `file` with its bytes as a data URL.
struct PartsBody<'a>(&'a crate::provider::Message);

impl Serialize for PartsBody<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut parts = serializer.serialize_seq(None)?;
        for part in self.0.parts() {
            match part {
                Part::Text(text) => parts.serialize_element(&TextPart { kind: "text", text })?,
                Part::Media(media) if media.is_image() => parts.serialize_element(&ImagePart {
                    kind: "image_url",
                    image_url: ImageUrl {
                        url: MediaUrl(media),
                        detail: media.detail().map(ImageDetail::as_str),
                    },
                })?,
                Part::Media(media) => parts.serialize_element(&FilePart {
                    kind: "file",
                    file: FileData {
                        filename: media.filename(),
                        file_data: MediaUrl(media),
                    },
                })?,
            }
        }
        parts.end()
    }
}

#[derive(Serialize)]
struct TextPart<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct ImagePart<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    image_url: ImageUrl<'a>,
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: MediaUrl<'a>,
    /// Absent unless asked for: the API's default is `auto`, and compatible servers that
    /// do not know the field are not sent it.
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'static str>,
}

#[derive(Serialize)]
struct FilePart<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    file: FileData<'a>,
}

#[derive(Serialize)]
struct FileData<'a> {
    filename: &'a str,
    file_data: MediaUrl<'a>,
}

/// Room for a request's media in its body: the base64 text and the part around it.
pub(crate) fn media_size_hint(request: &ProviderRequest) -> usize {
    request.media().map(|media| media.wire_len() + 128).sum()
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum FormatBody<'a> {
    JsonObject,
    JsonSchema { json_schema: JsonSchemaBody<'a> },
}

#[derive(Serialize)]
struct JsonSchemaBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<Cow<'a, str>>,
    schema: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}

impl Serialize for ChatBody<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let request = self.request;
        let mut written: Vec<&str> = vec!["model", "messages"];
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("model", self.model)?;
        let mut messages = Vec::with_capacity(1 + request.messages.len());
        if !request.system.is_empty() {
            messages.push(Message {
                role: "system",
                content: Content::Text(&request.system),
            });
        }
        messages.extend(request.messages.iter().map(|message| Message {
            role: message.role.as_str(),
            content: if message.media.is_empty() {
                Content::Text(&message.content)
            } else {
                Content::Parts(PartsBody(message))
            },
        }));
        map.serialize_entry("messages", &messages)?;
        if let Some(limit) = request.max_output_tokens {
            let key = self.settings.max_tokens_field.key();
            map.serialize_entry(key, &limit)?;
            written.push(key);
        }
        if let Some(temperature) = request.temperature.and_then(http::temperature_value) {
            map.serialize_entry("temperature", &temperature)?;
            written.push("temperature");
        }
        if let Some(format) = response_format(request, self.schema, self.settings) {
            map.serialize_entry("response_format", &format)?;
            written.push("response_format");
        }
        if let (Some(asked), Some(limit)) = (request.top_logprobs, self.settings.max_top_logprobs) {
            map.serialize_entry("logprobs", &true)?;
            map.serialize_entry("top_logprobs", &asked.min(limit))?;
            written.extend(["logprobs", "top_logprobs"]);
        }
        if self.stream {
            map.serialize_entry("stream", &true)?;
            map.serialize_entry(
                "stream_options",
                &StreamOptions {
                    include_usage: true,
                },
            )?;
            written.extend(["stream", "stream_options"]);
        }
        // Extra fields never override ours.
        for (key, value) in self.extra {
            if !written.contains(&key.as_str()) {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

fn response_format<'a>(
    request: &'a ProviderRequest,
    schema: Option<&'a RawValue>,
    settings: &WireSettings,
) -> Option<FormatBody<'a>> {
    match (request.response_format, settings.structured_output) {
        (ResponseFormat::Text, _) => None,
        (ResponseFormat::JsonObject, _)
        | (ResponseFormat::JsonSchema, StructuredOutput::JsonObject) => {
            Some(FormatBody::JsonObject)
        }
        (ResponseFormat::JsonSchema, StructuredOutput::JsonSchema) => {
            let Some(schema) = schema else {
                tracing::debug!(
                    "a strict schema was asked for without a schema; sending json_object"
                );
                return Some(FormatBody::JsonObject);
            };
            let named = settings.send_schema_name_and_strict;
            Some(FormatBody::JsonSchema {
                json_schema: JsonSchemaBody {
                    name: named.then(|| sanitize_schema_name(&request.schema_name)),
                    schema,
                    strict: named.then_some(true),
                },
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use reqwest::StatusCode;

    use crate::provider::ProviderErrorKind;
    use crate::provider::http::{ErrorBody, RawResponse};
    use crate::provider::openai::reply::{classify, parse_reply};

    fn schema_request() -> ProviderRequest {
        ProviderRequest {
            response_format: ResponseFormat::JsonSchema,
            schema: Some(Arc::new(json!({"type": "object"}))),
            schema_name: "Invoice<Line> v2".into(),
            ..ProviderRequest::text("sys", "user")
        }
    }

    #[test]
    fn schema_names_are_sanitized() {
        assert_eq!(sanitize_schema_name("Invoice<Line> v2"), "Invoice_Line__v2");
        assert_eq!(sanitize_schema_name(""), DEFAULT_SCHEMA_NAME);
        assert_eq!(sanitize_schema_name(&"a".repeat(100)).len(), 64);
        assert_eq!(sanitize_schema_name("ok_name-1"), "ok_name-1");
    }

    #[test]
    fn openai_body_has_strict_schema_and_max_completion_tokens() {
        let mut request = schema_request();
        request.max_output_tokens = Some(100);
        request.temperature = Some(0.5);
        let body = request_body(&request, "m", &WireSettings::OPENAI, &Map::new());
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "user"}
                ],
                "max_completion_tokens": 100,
                "temperature": 0.5,
                "response_format": {"type": "json_schema", "json_schema": {
                    "name": "Invoice_Line__v2", "schema": {"type": "object"}, "strict": true
                }}
            })
        );
    }

    #[test]
    fn json_object_fallback_and_missing_schema_send_json_object() {
        let settings = WireSettings {
            structured_output: StructuredOutput::JsonObject,
            ..WireSettings::OPENAI
        };
        let body = request_body(&schema_request(), "m", &settings, &Map::new());
        assert_eq!(body["response_format"], json!({"type": "json_object"}));
        let mut no_schema = schema_request();
        no_schema.schema = None;
        let body = request_body(&no_schema, "m", &WireSettings::OPENAI, &Map::new());
        assert_eq!(body["response_format"], json!({"type": "json_object"}));
    }

    #[test]
    fn text_requests_send_no_response_format_and_empty_system_is_left_out() {
        let body = request_body(
            &ProviderRequest::text("", "hi"),
            "m",
            &WireSettings::OPENAI,
            &Map::new(),
        );
        assert_eq!(
            body,
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        );
    }

    fn raw_ok(body: String) -> RawResponse {
        RawResponse {
            status: StatusCode::OK,
            headers: reqwest::header::HeaderMap::new(),
            body: body.into(),
        }
    }

    #[test]
    fn log_probabilities_are_asked_for_up_to_the_servers_limit() {
        let mut request = ProviderRequest::text("", "hi");
        let body = request_body(&request, "m", &WireSettings::OPENAI, &Map::new());
        assert!(body.get("logprobs").is_none() && body.get("top_logprobs").is_none());
        request.top_logprobs = Some(50);
        let body = request_body(&request, "m", &WireSettings::OPENAI, &Map::new());
        assert_eq!(body["logprobs"], json!(true));
        assert_eq!(body["top_logprobs"], json!(20));
        let without = WireSettings {
            max_top_logprobs: None,
            ..WireSettings::OPENAI
        };
        let body = request_body(&request, "m", &without, &Map::new());
        assert!(body.get("logprobs").is_none(), "{body}");
    }

    #[test]
    fn the_first_tokens_alternatives_are_read_from_the_reply() {
        let body = json!({
            "model": "m",
            "choices": [{
                "message": {"content": "yes"},
                "finish_reason": "length",
                "logprobs": {"content": [{
                    "token": "yes", "logprob": -0.1, "bytes": [121, 101, 115],
                    "top_logprobs": [
                        {"token": "yes", "logprob": -0.1, "bytes": null},
                        {"token": " No", "logprob": -2.5}
                    ]
                }]}
            }]
        });
        let raw = raw_ok(body.to_string());
        let reply = parse_reply("openai", &raw, "m", None).unwrap();
        let tokens = reply.logprobs.unwrap();
        assert_eq!(tokens.len(), 1);
        assert_eq!(tokens[0].token, "yes");
        assert_eq!(tokens[0].top_logprobs[1].token, " No");
        assert_eq!(tokens[0].top_logprobs[1].logprob, -2.5);
        let plain = json!({"choices": [{"message": {"content": "x"}, "logprobs": null}]});
        let raw = raw_ok(plain.to_string());
        assert_eq!(
            parse_reply("openai", &raw, "m", None).unwrap().logprobs,
            None
        );
    }

    #[test]
    fn extra_fields_never_override_ours() {
        let mut extra = Map::new();
        extra.insert("model".into(), json!("other"));
        extra.insert("provider".into(), json!({"require_parameters": true}));
        let body = request_body(
            &ProviderRequest::text("", "hi"),
            "m",
            &WireSettings::OPENAI,
            &extra,
        );
        assert_eq!(body["model"], "m");
        assert_eq!(body["provider"], json!({"require_parameters": true}));
    }

    #[test]
    fn a_400_naming_the_schema_is_schema_rejected() {
        let by_message = ErrorBody {
            message: Some("Invalid schema for response_format 'x': ...".into()),
            ..ErrorBody::default()
        };
        assert_eq!(
            classify(StatusCode::BAD_REQUEST, &by_message),
            ProviderErrorKind::SchemaRejected
        );
        let other = ErrorBody {
            message: Some("messages must not be empty".into()),
            ..ErrorBody::default()
        };
        assert_eq!(
            classify(StatusCode::BAD_REQUEST, &other),
            ProviderErrorKind::InvalidRequest
        );
        assert_eq!(
            classify(StatusCode::UNPROCESSABLE_ENTITY, &by_message),
            ProviderErrorKind::InvalidRequest
        );
    }
}
