//! What identifies a request in a cassette: the fields that determine the answer, as a
//! readable record, its fingerprint, and the differences between two records.
//!
//! Timestamps, request ids and the provider's name are left out on purpose: they change
//! from run to run without changing what the model is asked.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::provider::{ProviderRequest, ResponseFormat, Role};

/// How a request was made: one reply at once, or a stream of pieces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CallKind {
    /// [`Provider::complete`](crate::provider::Provider::complete).
    Complete,
    /// [`Provider::stream`](crate::provider::Provider::stream).
    Stream,
}

impl CallKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CallKind::Complete => "complete",
            CallKind::Stream => "stream",
        }
    }
}

/// An image or a document of a turn, by its digest: the bytes never reach a cassette.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RecordedMedia {
    /// The byte offset in the turn's text where the media sits.
    pub at: usize,
    /// The media type sniffed from the bytes (`image/png`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// SHA-256 of the bytes (of the URL, for media sent by URL).
    pub sha256: String,
    /// The image's detail level (`low`, `high`, `auto`), when the request set one: the same
    /// image at another level is another request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One turn of the recorded conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RecordedMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// The turn's text.
    pub content: String,
    /// The turn's media, by digest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<RecordedMedia>,
}

/// A request as a cassette keeps it: every field that shapes the answer, in a fixed
/// order, so that a re-recorded cassette diffs line by line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RecordedRequest {
    /// The model asked (the provider's default when the request named none).
    pub model: String,
    /// The system prompt.
    pub system: String,
    /// The turns after the system prompt.
    pub messages: Vec<RecordedMessage>,
    /// `text`, `json_object` or `json_schema`.
    pub response_format: String,
    /// The schema's name, when a schema is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_name: Option<String>,
    /// The strict schema, when one is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Maximum output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature, as written in the code (`0.2`, not the nearest `f32`'s
    /// digits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Alternatives asked per output token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u8>,
    /// Whether thinking was turned down for a short answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub minimal_thinking: bool,
}

impl RecordedRequest {
    /// The record of `request`, the model resolved against `default_model`.
    pub(crate) fn of(request: &ProviderRequest, default_model: &str) -> Self {
        let schema = match request.response_format {
            ResponseFormat::JsonSchema => request.schema.as_deref().cloned(),
            _ => None,
        };
        Self {
            model: request
                .model
                .clone()
                .unwrap_or_else(|| default_model.to_owned()),
            system: request.system.clone(),
            messages: request
                .messages
                .iter()
                .map(|message| RecordedMessage {
                    role: match message.role {
                        Role::User => "user",
                        Role::Assistant => "assistant",
                    }
                    .to_owned(),
                    content: message.content.clone(),
                    media: message
                        .media
                        .iter()
                        .map(|part| RecordedMedia {
                            at: part.at,
                            media_type: part.media.media_type().map(|t| t.as_str().to_owned()),
                            sha256: part.media.sha256_hex(),
                            detail: part.media.detail().map(|detail| detail.as_str().to_owned()),
                        })
                        .collect(),
                })
                .collect(),
            response_format: match request.response_format {
                ResponseFormat::Text => "text",
                ResponseFormat::JsonObject => "json_object",
                ResponseFormat::JsonSchema => "json_schema",
            }
            .to_owned(),
            schema_name: schema.as_ref().map(|_| request.schema_name.clone()),
            schema,
            max_output_tokens: request.max_output_tokens,
            // Through its shortest decimal form, so `0.2_f32` is stored as `0.2`.
            temperature: request
                .temperature
                .and_then(|t| t.to_string().parse::<f64>().ok()),
            top_logprobs: request.top_logprobs,
            minimal_thinking: request.minimal_thinking,
        }
    }

    /// SHA-256 (64 hex digits) of the record's canonical JSON: object keys sorted, so the
    /// fingerprint does not depend on the order a map was built in.
    pub(crate) fn fingerprint(&self) -> String {
        fingerprint_of(self)
    }

    /// What differs between this recorded request (and `kind`) and `asked` (and
    /// `asked_kind`), each as a short phrase a person can act on; empty when they are
    /// the same.
    pub(crate) fn differences(
        &self,
        kind: CallKind,
        asked: &RecordedRequest,
        asked_kind: CallKind,
    ) -> Vec<String> {
        let mut out = Vec::new();
        if kind != asked_kind {
            out.push(format!(
                "method (recorded `{}`, asked `{}`)",
                kind.as_str(),
                asked_kind.as_str()
            ));
        }
        if self.model != asked.model {
            out.push(format!(
                "model (recorded `{}`, asked `{}`)",
                self.model, asked.model
            ));
        }
        if self.system != asked.system {
            out.push(format!(
                "prompt: the system prompt (first difference at character {})",
                first_difference(&self.system, &asked.system)
            ));
        }
        out.extend(turn_differences(&self.messages, &asked.messages));
        if self.response_format != asked.response_format {
            out.push(format!(
                "response format (recorded `{}`, asked `{}`)",
                self.response_format, asked.response_format
            ));
        }
        if self.schema != asked.schema || self.schema_name != asked.schema_name {
            out.push(schema_difference(
                self.schema.as_ref(),
                asked.schema.as_ref(),
            ));
        }
        if self.max_output_tokens != asked.max_output_tokens {
            out.push(format!(
                "max output tokens (recorded {}, asked {})",
                shown(self.max_output_tokens),
                shown(asked.max_output_tokens)
            ));
        }
        if self.temperature != asked.temperature {
            out.push(format!(
                "temperature (recorded {}, asked {})",
                shown(self.temperature),
                shown(asked.temperature)
            ));
        }
        if self.top_logprobs != asked.top_logprobs {
            out.push(format!(
                "top_logprobs (recorded {}, asked {})",
                shown(self.top_logprobs),
                shown(asked.top_logprobs)
            ));
        }
        if self.minimal_thinking != asked.minimal_thinking {
            out.push(format!(
                "minimal thinking (recorded {}, asked {})",
                self.minimal_thinking, asked.minimal_thinking
            ));
        }
        out
    }
}

/// SHA-256 (64 hex digits) of `record`'s canonical JSON: object keys sorted, so the
/// fingerprint does not depend on the order a map was built in.
///
/// The canonical text is written straight into the hash, each map's keys sorted as it is
/// written: the same bytes as the sorted copy serialized to a string, without building
/// either (a replay computes one fingerprint per call).
pub(crate) fn fingerprint_of<T: Serialize>(record: &T) -> String {
    let value = serde_json::to_value(record).unwrap_or(Value::Null);
    let mut hasher = Hashing(Sha256::new());
    // Writing into a hasher cannot fail, and a `Value` always serializes.
    let _ = serde_json::to_writer(&mut hasher, &Sorted(&value));
    hex(&hasher.0.finalize())
}

/// Lowercase hexadecimal digits of `bytes`.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// Bytes written into a SHA-256 hasher.
struct Hashing(Sha256);

impl std::io::Write for Hashing {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A value serialized with every object's keys in sorted order.
struct Sorted<'a>(&'a Value);

impl Serialize for Sorted<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self.0 {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                let mut out = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    out.serialize_entry(key, &Sorted(value))?;
                }
                out.end()
            }
            Value::Array(items) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&Sorted(item))?;
                }
                out.end()
            }
            other => other.serialize(serializer),
        }
    }
}

fn shown<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "none".to_owned(), |value| value.to_string())
}

/// The differences between two conversations' turns.
fn turn_differences(recorded: &[RecordedMessage], asked: &[RecordedMessage]) -> Vec<String> {
    let mut out = Vec::new();
    if recorded.len() != asked.len() {
        let retry = if asked.len() > recorded.len() && asked.iter().any(|m| m.role == "assistant") {
            " (the request is a retry: an earlier reply failed its checks)"
        } else {
            ""
        };
        out.push(format!(
            "prompt: {} turns recorded, {} asked{retry}",
            recorded.len(),
            asked.len()
        ));
    }
    for (index, (was, now)) in recorded.iter().zip(asked).enumerate() {
        let turn = index + 1;
        if was.role != now.role || was.content != now.content {
            out.push(format!(
                "prompt: turn {turn} ({}) differs from character {}",
                now.role,
                first_difference(&was.content, &now.content)
            ));
        }
        let digests = |parts: &[RecordedMedia]| -> Vec<String> {
            parts.iter().map(|part| part.sha256.clone()).collect()
        };
        if digests(&was.media) != digests(&now.media) {
            out.push(format!(
                "media digest in turn {turn} (recorded [{}], asked [{}])",
                short_digests(&was.media),
                short_digests(&now.media)
            ));
        } else if let Some((was, now)) = was
            .media
            .iter()
            .zip(&now.media)
            .find(|(was, now)| was.detail != now.detail)
        {
            let level = |detail: &Option<String>| detail.clone().unwrap_or_else(|| "none".into());
            out.push(format!(
                "media detail in turn {turn} (recorded {}, asked {})",
                level(&was.detail),
                level(&now.detail)
            ));
        } else if was.media != now.media {
            out.push(format!("media placement in turn {turn}"));
        }
    }
    out
}

fn short_digests(parts: &[RecordedMedia]) -> String {
    parts
        .iter()
        .map(|part| part.sha256.get(..12).unwrap_or(&part.sha256).to_owned())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The schema's difference, naming the first path at which the two differ.
fn schema_difference(recorded: Option<&Value>, asked: Option<&Value>) -> String {
    match (recorded, asked) {
        (Some(was), Some(now)) => {
            let path = first_value_difference(was, now, String::new());
            format!(
                "schema (first difference at `{}`)",
                if path.is_empty() { "/" } else { &path }
            )
        }
        (None, Some(_)) => "schema (none recorded, one asked)".to_owned(),
        (Some(_), None) => "schema (one recorded, none asked)".to_owned(),
        (None, None) => "schema name".to_owned(),
    }
}

/// The JSON pointer of the first place two values differ (empty: at the root).
pub(crate) fn first_value_difference(was: &Value, now: &Value, at: String) -> String {
    match (was, now) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) if x == y => {}
                    (Some(x), Some(y)) => {
                        return first_value_difference(x, y, format!("{at}/{key}"));
                    }
                    _ => return format!("{at}/{key}"),
                }
            }
            at
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                if x != y {
                    return first_value_difference(x, y, format!("{at}/{index}"));
                }
            }
            at
        }
        _ => at,
    }
}

/// The character (1-based) at which two texts first differ.
pub(crate) fn first_difference(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count() + 1
}

/// `value` with every object's keys in sorted order: how fingerprints were computed
/// before they were written straight into the hash (the test below holds the two equal,
/// so cassettes recorded before keep their fingerprints).
#[cfg(test)]
fn canonical(value: Value) -> Value {
    use serde_json::Map;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut sorted = Map::new();
            for (key, value) in entries {
                sorted.insert(key, canonical(value));
            }
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::provider::Message;

    fn request() -> ProviderRequest {
        let mut request = ProviderRequest::text("Be brief.", "Count the words");
        request.response_format = ResponseFormat::JsonSchema;
        request.schema = Some(Arc::new(json!({
            "type": "object",
            "properties": {"value": {"type": "integer"}},
            "required": ["value"],
            "additionalProperties": false
        })));
        request.temperature = Some(0.2);
        request
    }

    #[test]
    fn the_fingerprint_ignores_map_order_and_keeps_every_shaping_field() {
        let base = RecordedRequest::of(&request(), "m");
        let mut reordered = request();
        reordered.schema = Some(Arc::new(json!({
            "additionalProperties": false,
            "required": ["value"],
            "properties": {"value": {"type": "integer"}},
            "type": "object"
        })));
        assert_eq!(
            base.fingerprint(),
            RecordedRequest::of(&reordered, "m").fingerprint()
        );
        let changes: Vec<fn(&mut ProviderRequest)> = vec![
            |r| r.model = Some("other".into()),
            |r| r.system.push('!'),
            |r| r.messages.push(Message::assistant("x")),
            |r| r.response_format = ResponseFormat::JsonObject,
            |r| r.schema = Some(Arc::new(json!({"type": "string"}))),
            |r| r.max_output_tokens = Some(9),
            |r| r.temperature = Some(0.3),
            |r| r.top_logprobs = Some(3),
            |r| r.minimal_thinking = true,
        ];
        for change in changes {
            let mut changed = request();
            change(&mut changed);
            assert_ne!(
                base.fingerprint(),
                RecordedRequest::of(&changed, "m").fingerprint()
            );
        }
        // The default model counts as the model asked.
        let mut named = request();
        named.model = Some("m".into());
        assert_eq!(
            base.fingerprint(),
            RecordedRequest::of(&named, "m").fingerprint()
        );
    }

    #[test]
    fn the_fingerprint_is_the_hash_of_the_sorted_json_text() {
        let record = RecordedRequest::of(&request(), "m");
        let text = canonical(serde_json::to_value(&record).unwrap()).to_string();
        let expected: String = Sha256::digest(text.as_bytes())
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        assert_eq!(record.fingerprint(), expected);
    }

    #[test]
    fn the_temperature_is_kept_as_written() {
        let text = serde_json::to_string(&RecordedRequest::of(&request(), "m")).unwrap();
        assert!(text.contains(r#""temperature":0.2"#), "{text}");
    }

    #[test]
    fn differences_name_the_field_and_where() {
        let recorded = RecordedRequest::of(&request(), "m");
        let mut asked = request();
        asked.model = Some("n".into());
        asked.messages[0].content = "Count the letters".into();
        asked.schema = Some(Arc::new(json!({
            "type": "object",
            "properties": {"value": {"type": "string"}},
            "required": ["value"],
            "additionalProperties": false
        })));
        let asked = RecordedRequest::of(&asked, "m");
        let found = recorded.differences(CallKind::Complete, &asked, CallKind::Stream);
        assert_eq!(
            found,
            vec![
                "method (recorded `complete`, asked `stream`)".to_owned(),
                "model (recorded `m`, asked `n`)".to_owned(),
                "prompt: turn 1 (user) differs from character 11".to_owned(),
                "schema (first difference at `/properties/value/type`)".to_owned(),
            ]
        );
        assert!(
            recorded
                .differences(CallKind::Complete, &recorded, CallKind::Complete)
                .is_empty()
        );
    }

    #[test]
    fn media_is_matched_by_digest_and_a_different_image_is_named() {
        use crate::media::Image;
        use crate::provider::MediaPart;
        let png = |last: u8| {
            let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01".to_vec();
            bytes.push(last);
            Image::from_bytes(bytes).unwrap().media().clone()
        };
        let with = |media| {
            let mut request = request();
            request.messages[0].media = vec![MediaPart { at: 5, media }];
            RecordedRequest::of(&request, "m")
        };
        let recorded = with(png(1));
        assert_eq!(recorded.fingerprint(), with(png(1)).fingerprint());
        let text = serde_json::to_string(&recorded).unwrap();
        assert!(
            text.contains(r#""media_type":"image/png","sha256":""#),
            "{text}"
        );
        let found = recorded.differences(CallKind::Complete, &with(png(2)), CallKind::Complete);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("media digest in turn 1"), "{found:?}");
    }

    #[test]
    fn the_same_image_at_another_detail_level_is_another_request_and_is_named() {
        use crate::media::{Image, ImageDetail};
        use crate::provider::MediaPart;
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01".to_vec();
        let with = |detail: Option<ImageDetail>| {
            let mut image = Image::from_bytes(png.clone()).unwrap();
            if let Some(detail) = detail {
                image = image.with_detail(detail);
            }
            let mut request = request();
            request.messages[0].media = vec![MediaPart {
                at: 5,
                media: image.media().clone(),
            }];
            RecordedRequest::of(&request, "m")
        };
        let unset = with(None);
        assert!(!serde_json::to_string(&unset).unwrap().contains("detail"));
        let low = with(Some(ImageDetail::Low));
        assert_ne!(unset.fingerprint(), low.fingerprint());
        assert_eq!(
            low.fingerprint(),
            with(Some(ImageDetail::Low)).fingerprint()
        );
        let found = low.differences(
            CallKind::Complete,
            &with(Some(ImageDetail::High)),
            CallKind::Complete,
        );
        assert_eq!(found, ["media detail in turn 1 (recorded low, asked high)"]);
    }
}
