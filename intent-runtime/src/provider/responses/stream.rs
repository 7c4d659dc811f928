//! The server-sent events of a streamed Response (`"stream": true`): typed events, each
//! with its `type` in the data (and usually as the `event:` name too), no `[DONE]`.
//!
//! `response.output_text.delta` carries the text and `response.refusal.delta` a
//! refusal; one terminal event ends the stream with the whole Response:
//! `response.completed`, `response.incomplete` (read as the same reply a live call
//! gives) or `response.failed` (its error, classified). An `error` event in the middle
//! is classified by its code. Every other event (created, in progress, items and parts
//! added or done, reasoning summaries) is skipped without being read.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::reply::{self, Origin, OutputText, ResponseObject};
use crate::provider::http::sse::{Decoder, SseEvent};
use crate::provider::http::{ErrorBody, excerpt, redact};
use crate::provider::reply_text;
use crate::provider::{ProviderError, ProviderErrorKind, ProviderReply, TokenLogprob};

/// What the decoder reads of an event: its type, a delta's text (a borrowed string
/// literal, unescaped straight into the reply), a delta's log-probabilities, the
/// Response of a terminal event (parsed only there), an error event's fields.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<&'a RawValue>,
    #[serde(default)]
    logprobs: Option<Vec<TokenLogprob>>,
    #[serde(default, borrow)]
    response: Option<&'a RawValue>,
    #[serde(default, borrow)]
    code: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
}

/// The state of one streamed Response.
pub(crate) struct ResponsesStream {
    provider: String,
    requested_model: String,
    request_id: Option<String>,
    secret: Option<String>,
    /// The text of the `response.output_text.delta` events so far.
    text: String,
    /// Whether any text delta arrived (the text may be empty).
    text_seen: bool,
    refusal: Option<String>,
    logprobs: Option<Vec<TokenLogprob>>,
}

impl ResponsesStream {
    pub(crate) fn new(
        provider: &str,
        requested_model: &str,
        request_id: Option<String>,
        secret: Option<&str>,
    ) -> Self {
        Self {
            provider: provider.to_owned(),
            requested_model: requested_model.to_owned(),
            request_id,
            secret: secret.map(str::to_owned),
            text: String::new(),
            text_seen: false,
            refusal: None,
            logprobs: None,
        }
    }

    /// The finished reply of a terminal event's Response. The text is the deltas' (what
    /// the caller was shown); a Response whose text came in no delta has it passed on
    /// now, so the pieces always join to the reply's text.
    fn finish(
        &mut self,
        data: &str,
        response: &RawValue,
        text: &mut String,
    ) -> Result<ProviderReply, ProviderError> {
        let mut response: ResponseObject =
            serde_json::from_str(response.get()).map_err(|err| self.not_an_event(data, &err))?;
        let whole = response.take_output();
        let output = if self.text_seen || self.refusal.is_some() {
            OutputText {
                text: std::mem::take(&mut self.text),
                refusal: self.refusal.take().or(whole.refusal),
                logprobs: whole.logprobs.or_else(|| self.logprobs.take()),
            }
        } else {
            text.push_str(&whole.text);
            whole
        };
        reply::into_reply(
            response,
            output,
            Origin {
                provider: &self.provider,
                requested_model: &self.requested_model,
                request_id: self.request_id.take(),
                secret: self.secret.as_deref(),
            },
        )
    }

    /// The error an `error` event reports: flat (`code`, `message`), or nested under
    /// `error` as HTTP error bodies are.
    fn error(&self, data: &str, event: &Event<'_>) -> ProviderError {
        let nested = ErrorBody::parse(data);
        let code = event
            .code
            .as_deref()
            .or(nested.error_type.as_deref())
            .unwrap_or_default();
        let message = event
            .message
            .as_deref()
            .or(nested.message.as_deref())
            .unwrap_or("the server reported an error in the middle of the reply");
        let mut error = ProviderError::new(
            reply::failure_kind(code),
            &self.provider,
            redact(message, self.secret.as_deref()),
        )
        .from_provider_words();
        if let Some(id) = &self.request_id {
            error = error.with_request_id(id);
        }
        error
    }

    fn not_an_event(&self, data: &str, err: &serde_json::Error) -> ProviderError {
        ProviderError::new(
            ProviderErrorKind::InvalidResponse,
            &self.provider,
            redact(
                &format!(
                    "a streamed event is not a Responses event ({err}): {}",
                    excerpt(data)
                ),
                self.secret.as_deref(),
            ),
        )
        .with_transient(false)
    }
}

impl Decoder for ResponsesStream {
    fn feed(
        &mut self,
        event: SseEvent<'_>,
        text: &mut String,
    ) -> Result<Option<ProviderReply>, ProviderError> {
        let data = event.data.trim();
        // A keep-alive, or a `[DONE]` some proxies add after the terminal event.
        if data.is_empty() || data == "[DONE]" {
            return Ok(None);
        }
        let parsed: Event<'_> =
            serde_json::from_str(data).map_err(|err| self.not_an_event(data, &err))?;
        let kind = parsed.kind.as_deref().unwrap_or(event.event);
        match kind {
            "response.output_text.delta" => {
                self.text_seen = true;
                if let Some(delta) = parsed.delta {
                    let start = self.text.len();
                    reply_text::push_literal(delta.get(), &mut self.text)
                        .map_err(|err| self.not_an_event(data, &err))?;
                    text.push_str(&self.text[start..]);
                }
                if let Some(tokens) = parsed.logprobs.filter(|tokens| !tokens.is_empty()) {
                    self.logprobs.get_or_insert_with(Vec::new).extend(tokens);
                }
                Ok(None)
            }
            "response.refusal.delta" => {
                if let Some(delta) = parsed.delta {
                    let refusal = self.refusal.get_or_insert_with(String::new);
                    let pushed = reply_text::push_literal(delta.get(), refusal);
                    pushed.map_err(|err| self.not_an_event(data, &err))?;
                }
                Ok(None)
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let Some(response) = parsed.response else {
                    return Err(self.not_an_event(
                        data,
                        &serde::de::Error::custom(format!("`{kind}` carries no response")),
                    ));
                };
                self.finish(data, response, text).map(Some)
            }
            "error" => Err(self.error(data, &parsed)),
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Usage;

    /// The spec's stream fixture for example C1.
    const C1_STREAM: &[(&str, &str)] = &[
        (
            "response.created",
            r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}"#,
        ),
        (
            "response.output_item.added",
            r#"{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}"#,
        ),
        (
            "response.content_part.added",
            r#"{"type":"response.content_part.added","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[],"logprobs":[]}}"#,
        ),
        (
            "response.output_text.delta",
            r#"{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"{\"value\":{\"number\":","logprobs":[]}"#,
        ),
        (
            "response.output_text.delta",
            r#"{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"\"INV-0007\",\"total_cents\":125000}}","logprobs":[]}"#,
        ),
        (
            "response.output_text.done",
            r#"{"type":"response.output_text.done","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"text":"{\"value\":{\"number\":\"INV-0007\",\"total_cents\":125000}}","logprobs":[]}"#,
        ),
        (
            "response.completed",
            r#"{"type":"response.completed","sequence_number":6,"response":{"id":"resp_1","object":"response","status":"completed","incomplete_details":null,"output":[{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"{\"value\":{\"number\":\"INV-0007\",\"total_cents\":125000}}","annotations":[],"logprobs":[]}]}],"usage":{"input_tokens":61,"input_tokens_details":{"cached_tokens":0},"output_tokens":17,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":78}}}"#,
        ),
    ];

    fn feed(events: &[(&str, &str)]) -> (String, Result<Option<ProviderReply>, ProviderError>) {
        let mut stream = ResponsesStream::new(
            "openai-responses",
            "gpt-x",
            Some("req-1".into()),
            Some("sk-secret"),
        );
        let mut text = String::new();
        let mut last = Ok(None);
        for (event, data) in events {
            last = stream.feed(SseEvent { event, data }, &mut text);
            if !matches!(last, Ok(None)) {
                break;
            }
        }
        (text, last)
    }

    #[test]
    fn the_specs_stream_fixture_makes_the_reply_with_usage() {
        let (text, last) = feed(C1_STREAM);
        assert_eq!(
            text,
            r#"{"value":{"number":"INV-0007","total_cents":125000}}"#
        );
        let Ok(Some(reply)) = last else {
            panic!("{last:?}")
        };
        assert_eq!(reply.text, text);
        assert_eq!(reply.stop_reason.as_deref(), Some("completed"));
        assert_eq!(reply.response_id.as_deref(), Some("resp_1"));
        assert_eq!(reply.request_id.as_deref(), Some("req-1"));
        // The abridged Response names no model: the one asked for is reported.
        assert_eq!(reply.model, "gpt-x");
        assert_eq!(
            reply.usage,
            Usage {
                input_tokens: 61,
                output_tokens: 17,
                ..Usage::default()
            }
        );
        assert!(!reply.truncated && reply.refusal.is_none());
    }

    #[test]
    fn a_terminal_response_whose_text_came_in_no_delta_passes_it_on() {
        let (text, last) = feed(&[C1_STREAM[0], C1_STREAM[6]]);
        assert_eq!(
            text,
            r#"{"value":{"number":"INV-0007","total_cents":125000}}"#
        );
        assert_eq!(last.unwrap().unwrap().text, text);
    }

    #[test]
    fn refusal_deltas_end_as_a_refusal() {
        let (text, last) = feed(&[
            (
                "",
                r#"{"type":"response.refusal.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"I can't "}"#,
            ),
            (
                "",
                r#"{"type":"response.refusal.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"help."}"#,
            ),
            (
                "",
                r#"{"type":"response.refusal.done","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"refusal":"I can't help."}"#,
            ),
            (
                "",
                r#"{"type":"response.completed","sequence_number":6,"response":{"id":"resp_2","status":"completed","output":[{"type":"message","content":[{"type":"refusal","refusal":"I can't help."}]}],"usage":{"input_tokens":5,"output_tokens":3}}}"#,
            ),
        ]);
        assert_eq!(text, "");
        let reply = last.unwrap().unwrap();
        assert_eq!(reply.refusal.as_deref(), Some("I can't help."));
        assert_eq!(reply.text, "");
    }

    #[test]
    fn an_incomplete_response_is_truncated_with_the_deltas_text() {
        let (text, last) = feed(&[
            (
                "response.output_text.delta",
                r#"{"type":"response.output_text.delta","sequence_number":1,"delta":"{\"va","logprobs":[]}"#,
            ),
            (
                "response.incomplete",
                r#"{"type":"response.incomplete","sequence_number":2,"response":{"id":"resp_3","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"model":"o4-mini-2025-04-16","output":[],"usage":{"input_tokens":61,"input_tokens_details":{"cached_tokens":32},"output_tokens":64,"output_tokens_details":{"reasoning_tokens":60}}}}"#,
            ),
        ]);
        let reply = last.unwrap().unwrap();
        assert_eq!(reply.text, "{\"va");
        assert_eq!(text, reply.text);
        assert!(reply.truncated);
        assert_eq!(reply.stop_reason.as_deref(), Some("max_output_tokens"));
        assert_eq!(reply.model, "o4-mini-2025-04-16");
        assert_eq!(reply.usage.cached_input_tokens, 32);
    }

    #[test]
    fn delta_log_probabilities_are_gathered() {
        let (_, last) = feed(&[
            (
                "",
                r#"{"type":"response.output_text.delta","delta":"yes","logprobs":[{"token":"yes","logprob":-0.05,"top_logprobs":[{"token":"yes","logprob":-0.05},{"token":"no","logprob":-3.0}]}]}"#,
            ),
            (
                "",
                r#"{"type":"response.completed","response":{"status":"completed","output":[]}}"#,
            ),
        ]);
        let tokens = last.unwrap().unwrap().logprobs.unwrap();
        assert_eq!(tokens[0].top_logprobs[1].token, "no");
    }

    #[test]
    fn an_error_event_in_the_middle_is_classified_and_redacted() {
        let (text, last) = feed(&[
            C1_STREAM[3],
            (
                "error",
                r#"{"type":"error","sequence_number":4,"code":"server_error","message":"The server had an error processing your request. sk-secret","param":null}"#,
            ),
        ]);
        assert_eq!(text, r#"{"value":{"number":"#);
        let error = last.unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::Server);
        assert!(error.is_transient());
        assert_eq!(error.request_id(), Some("req-1"));
        assert!(!error.message().contains("sk-secret"));
        let (_, last) = feed(&[(
            "error",
            r#"{"type":"error","code":"invalid_prompt","message":"Invalid prompt","param":null}"#,
        )]);
        assert_eq!(last.unwrap_err().kind(), ProviderErrorKind::InvalidRequest);
        // Nested, as HTTP error bodies are.
        let (_, last) = feed(&[(
            "error",
            r#"{"type":"error","error":{"type":"rate_limit_exceeded","message":"slow down"}}"#,
        )]);
        assert_eq!(last.unwrap_err().kind(), ProviderErrorKind::RateLimited);
    }

    #[test]
    fn a_failed_response_event_is_its_error() {
        let (_, last) = feed(&[(
            "response.failed",
            r#"{"type":"response.failed","sequence_number":3,"response":{"id":"resp_4","status":"failed","error":{"code":"rate_limit_exceeded","message":"Rate limit reached"},"output":[]}}"#,
        )]);
        let error = last.unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::RateLimited);
        assert!(error.message().contains("Rate limit reached"));
    }

    #[test]
    fn malformed_events_are_invalid_responses() {
        let (_, last) = feed(&[("", "not json")]);
        assert_eq!(last.unwrap_err().kind(), ProviderErrorKind::InvalidResponse);
        let (_, last) = feed(&[("", r#"{"type":"response.completed"}"#)]);
        assert_eq!(last.unwrap_err().kind(), ProviderErrorKind::InvalidResponse);
        let (_, last) = feed(&[("", r#"{"type":"response.output_text.delta","delta":7}"#)]);
        assert_eq!(last.unwrap_err().kind(), ProviderErrorKind::InvalidResponse);
    }
}
