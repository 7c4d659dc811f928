//! Anthropic Messages events: `message_start` (the model and the input usage),
//! `content_block_delta` text deltas, `message_delta` (the stop reason and the output
//! usage), `message_stop`; `ping` and the block boundaries carry nothing needed; an
//! `error` event ends the stream with a classified error.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::reply::{MessagesUsage, kind_of_error_type, messages_reply, usage};
use crate::provider::http::sse::{Decoder, SseEvent};
use crate::provider::http::{ErrorBody, excerpt, redact};
use crate::provider::reply_text;
use crate::provider::{ProviderError, ProviderErrorKind, ProviderReply};

// Text deltas are most of a stream: an event is read with its fields borrowed (a flat
// struct, not an internally tagged enum, which would copy the event into a buffer first
// and cannot lend a string out of it), and the text unescaped straight into the reply
// gathered so far.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    message: Option<StartMessage>,
    /// A text delta or a message delta, read once the kind is known.
    #[serde(default, borrow)]
    delta: Option<&'a RawValue>,
    #[serde(default)]
    usage: Option<MessagesUsage>,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    id: Option<String>,
    model: Option<String>,
    #[serde(default)]
    usage: Option<MessagesUsage>,
}

#[derive(Deserialize)]
struct BlockDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    /// The string literal, unescaped into the reply.
    #[serde(default, borrow)]
    text: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct MessageDelta {
    stop_reason: Option<String>,
}

/// The state of one streamed Messages reply.
pub(crate) struct MessagesStream {
    requested_model: String,
    request_id: Option<String>,
    secret: Option<String>,
    text: String,
    stop_reason: Option<String>,
    usage: MessagesUsage,
    model: Option<String>,
    id: Option<String>,
}

impl MessagesStream {
    pub(crate) fn new(
        requested_model: &str,
        request_id: Option<String>,
        secret: Option<&str>,
    ) -> Self {
        Self {
            requested_model: requested_model.to_owned(),
            request_id,
            secret: secret.map(str::to_owned),
            text: String::new(),
            stop_reason: None,
            usage: MessagesUsage::default(),
            model: None,
            id: None,
        }
    }

    /// Later usage reports carry running totals: each field present replaces the last.
    fn add_usage(&mut self, report: MessagesUsage) {
        let fields = [
            (&mut self.usage.input_tokens, report.input_tokens),
            (&mut self.usage.output_tokens, report.output_tokens),
            (
                &mut self.usage.cache_creation_input_tokens,
                report.cache_creation_input_tokens,
            ),
            (
                &mut self.usage.cache_read_input_tokens,
                report.cache_read_input_tokens,
            ),
        ];
        for (field, reported) in fields {
            if reported.is_some() {
                *field = reported;
            }
        }
    }

    fn not_an_event(&self, data: &str, err: &serde_json::Error) -> ProviderError {
        self.invalid(&err.to_string(), data)
    }

    fn invalid(&self, why: &str, data: &str) -> ProviderError {
        ProviderError::new(
            ProviderErrorKind::InvalidResponse,
            "anthropic",
            redact(
                &format!(
                    "a streamed event is not a Messages event ({why}): {}",
                    excerpt(data)
                ),
                self.secret.as_deref(),
            ),
        )
        .with_transient(false)
    }

    fn error(&self, data: &str) -> ProviderError {
        let body = ErrorBody::parse(data);
        // An unknown type after the reply started is most likely the server's failure.
        let kind = body
            .error_type
            .as_deref()
            .and_then(kind_of_error_type)
            .unwrap_or(ProviderErrorKind::Server);
        let message = body
            .message
            .unwrap_or_else(|| "the server reported an error in the middle of the reply".into());
        let mut error =
            ProviderError::new(kind, "anthropic", redact(&message, self.secret.as_deref()))
                .from_provider_words();
        if let Some(id) = &self.request_id {
            error = error.with_request_id(id);
        }
        error
    }
}

impl Decoder for MessagesStream {
    fn feed(
        &mut self,
        event: SseEvent<'_>,
        text: &mut String,
    ) -> Result<Option<ProviderReply>, ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(None);
        }
        if event.event == "error" {
            return Err(self.error(data));
        }
        let parsed: Event<'_> =
            serde_json::from_str(data).map_err(|err| self.not_an_event(data, &err))?;
        let delta = |what| match parsed.delta {
            Some(delta) => Ok(delta.get()),
            None => Err(self.invalid(&format!("a {what} event without its delta"), data)),
        };
        match &*parsed.kind {
            "message_start" => {
                if let Some(message) = parsed.message {
                    self.model = message.model;
                    self.id = message.id.filter(|id| !id.is_empty());
                    if let Some(report) = message.usage {
                        self.add_usage(report);
                    }
                }
                Ok(None)
            }
            "content_block_delta" => {
                let delta: BlockDelta<'_> = serde_json::from_str(delta("content_block_delta")?)
                    .map_err(|err| self.not_an_event(data, &err))?;
                if delta.kind == "text_delta"
                    && let Some(literal) = delta.text
                {
                    let start = self.text.len();
                    reply_text::push_literal(literal.get(), &mut self.text)
                        .map_err(|err| self.not_an_event(data, &err))?;
                    text.push_str(&self.text[start..]);
                }
                Ok(None)
            }
            "message_delta" => {
                let delta: MessageDelta = serde_json::from_str(delta("message_delta")?)
                    .map_err(|err| self.not_an_event(data, &err))?;
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(report) = parsed.usage {
                    self.add_usage(report);
                }
                Ok(None)
            }
            "message_stop" => Ok(Some(ProviderReply {
                response_id: self.id.take(),
                ..messages_reply(
                    std::mem::take(&mut self.text),
                    self.stop_reason.take(),
                    usage(self.usage),
                    self.model.take(),
                    &self.requested_model,
                    self.request_id.take(),
                )
            })),
            "error" => Err(self.error(data)),
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[(&str, &str)]) -> (String, Result<Option<ProviderReply>, ProviderError>) {
        let mut stream = MessagesStream::new("claude-x", None, None);
        let mut text = String::new();
        let mut last = Ok(None);
        for (name, data) in events {
            last = stream.feed(SseEvent { event: name, data }, &mut text);
            if last.is_err() {
                break;
            }
        }
        (text, last)
    }

    const START: (&str, &str) = (
        "message_start",
        r#"{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude-x-1","content":[],"stop_reason":null,"usage":{"input_tokens":20,"cache_read_input_tokens":5,"output_tokens":1}}}"#,
    );

    #[test]
    fn text_deltas_stop_reason_and_usage_make_the_reply() {
        let (text, last) = run(&[
            START,
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            ("ping", r#"{"type":"ping"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"{\"value\": "}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"3}"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ]);
        assert_eq!(text, r#"{"value": 3}"#);
        let Ok(Some(reply)) = last else {
            panic!("{last:?}")
        };
        assert_eq!(reply.text, text);
        assert_eq!(reply.model, "claude-x-1");
        assert_eq!(reply.usage.input_tokens, 25);
        assert_eq!(reply.usage.cached_input_tokens, 5);
        assert_eq!(reply.usage.output_tokens, 9);
        assert!(!reply.truncated);
    }

    #[test]
    fn refusal_and_max_tokens_end_as_a_whole_reply_does() {
        let refusal = (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"output_tokens":2}}"#,
        );
        let (_, last) = run(&[
            START,
            refusal,
            ("message_stop", r#"{"type":"message_stop"}"#),
        ]);
        let Ok(Some(reply)) = last else {
            panic!("{last:?}")
        };
        assert!(reply.refusal.is_some() && reply.text.is_empty());
        let truncated = (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":2}}"#,
        );
        let (_, last) = run(&[
            START,
            truncated,
            ("message_stop", r#"{"type":"message_stop"}"#),
        ]);
        let Ok(Some(reply)) = last else {
            panic!("{last:?}")
        };
        assert!(reply.truncated);
    }

    #[test]
    fn an_error_event_is_classified() {
        let (_, last) = run(&[
            START,
            (
                "error",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ),
        ]);
        let error = last.unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::Overloaded);
        assert!(error.is_transient());
        assert_eq!(error.message(), "Overloaded");
    }
}
