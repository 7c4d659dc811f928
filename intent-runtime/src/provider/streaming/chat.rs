//! Chat Completions chunks (`chat.completion.chunk`), as OpenAI and compatible servers
//! stream them: content and refusal deltas, the finish reason on the last content chunk,
//! a usage chunk with no choices (`stream_options.include_usage`), then `[DONE]`. An
//! error in the middle arrives as `{"error": {...}}` and ends the stream.

use serde::Deserialize;

use super::ReplyPiece;
use super::sse::{Decoder, SseEvent};
use crate::provider::TokenLogprob;
use crate::provider::http::{ErrorBody, redact};
use crate::provider::openai::chat::{ChatParts, ChatUsage, ChoiceLogprobs};
use crate::provider::reply_text;
use crate::provider::{ProviderError, ProviderErrorKind};

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    model: Option<String>,
    usage: Option<ChatUsage>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<Delta>,
    finish_reason: Option<String>,
    #[serde(default)]
    logprobs: Option<ChoiceLogprobs>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default, deserialize_with = "reply_text::optional_text")]
    content: Option<String>,
    refusal: Option<String>,
}

/// The state of one streamed Chat Completions reply.
pub(crate) struct ChatStream {
    provider: String,
    requested_model: String,
    request_id: Option<String>,
    secret: Option<String>,
    content: String,
    refusal: Option<String>,
    finish_reason: Option<String>,
    usage: Option<ChatUsage>,
    model: Option<String>,
    logprobs: Option<Vec<TokenLogprob>>,
}

impl ChatStream {
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
            content: String::new(),
            refusal: None,
            finish_reason: None,
            usage: None,
            model: None,
            logprobs: None,
        }
    }

    fn finish(&mut self) -> ReplyPiece {
        let parts = ChatParts {
            content: Some(std::mem::take(&mut self.content)),
            refusal: self.refusal.take(),
            finish_reason: self.finish_reason.take(),
            usage: self.usage.take(),
            model: self.model.take(),
            logprobs: self.logprobs.take(),
        };
        ReplyPiece::Finished(parts.into_reply(&self.requested_model, self.request_id.take()))
    }

    fn error(&self, data: &str) -> ProviderError {
        let body = ErrorBody::parse(data);
        let kind = mid_stream_kind(body.error_type.as_deref());
        let message = body
            .message
            .unwrap_or_else(|| "the server reported an error in the middle of the reply".into());
        let mut error = ProviderError::new(
            kind,
            &self.provider,
            redact(&message, self.secret.as_deref()),
        );
        if let Some(id) = &self.request_id {
            error = error.with_request_id(id);
        }
        error
    }

    fn invalid(&self, what: String) -> ProviderError {
        ProviderError::new(
            ProviderErrorKind::InvalidResponse,
            &self.provider,
            redact(&what, self.secret.as_deref()),
        )
        .with_transient(false)
    }
}

/// The kind of an error that arrives inside a stream, from its type; a server that
/// fails after it started answering is most likely failing on its side, so an unknown
/// type counts as a (transient) server error.
fn mid_stream_kind(error_type: Option<&str>) -> ProviderErrorKind {
    match error_type.unwrap_or_default() {
        "invalid_request_error" => ProviderErrorKind::InvalidRequest,
        "authentication_error" => ProviderErrorKind::Authentication,
        "permission_error" => ProviderErrorKind::Permission,
        "rate_limit_error" | "rate_limit_exceeded" | "tokens" | "requests" => {
            ProviderErrorKind::RateLimited
        }
        "overloaded_error" | "overloaded" => ProviderErrorKind::Overloaded,
        "timeout" | "timeout_error" => ProviderErrorKind::Timeout,
        _ => ProviderErrorKind::Server,
    }
}

impl Decoder for ChatStream {
    fn feed(&mut self, event: SseEvent) -> Result<Option<ReplyPiece>, ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(Some(self.finish()));
        }
        if data.is_empty() {
            return Ok(None);
        }
        if event.event == "error" || data.starts_with("{\"error\"") {
            return Err(self.error(data));
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|err| {
            self.invalid(format!(
                "a streamed chunk is not a Chat Completions chunk ({err}): {}",
                crate::provider::http::excerpt(data)
            ))
        })?;
        if let Some(model) = chunk.model.filter(|model| !model.is_empty()) {
            self.model = Some(model);
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        let Some(choice) = chunk.choices.into_iter().next() else {
            return Ok(None);
        };
        if choice.finish_reason.is_some() {
            self.finish_reason = choice.finish_reason;
        }
        if let Some(tokens) = choice.logprobs.and_then(|logprobs| logprobs.content) {
            self.logprobs.get_or_insert_with(Vec::new).extend(tokens);
        }
        let Some(delta) = choice.delta else {
            return Ok(None);
        };
        if let Some(refusal) = delta.refusal {
            self.refusal
                .get_or_insert_with(String::new)
                .push_str(&refusal);
        }
        match delta.content.filter(|text| !text.is_empty()) {
            Some(text) => {
                self.content.push_str(&text);
                Ok(Some(ReplyPiece::Text(text)))
            }
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(lines: &[&str]) -> (String, Result<Option<ReplyPiece>, ProviderError>) {
        let mut stream = ChatStream::new("openai", "gpt-x", Some("req-1".into()), None);
        let mut text = String::new();
        let mut last = Ok(None);
        for line in lines {
            last = stream.feed(SseEvent {
                event: String::new(),
                data: (*line).to_owned(),
            });
            match &last {
                Ok(Some(ReplyPiece::Text(piece))) => text.push_str(piece),
                Err(_) => break,
                _ => {}
            }
        }
        (text, last)
    }

    #[test]
    fn content_deltas_finish_reason_and_usage_make_the_reply() {
        let (text, last) = feed(&[
            r#"{"model":"gpt-x-1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"{\"value\""},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":": 3}"},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4}}}"#,
            "[DONE]",
        ]);
        assert_eq!(text, r#"{"value": 3}"#);
        let Ok(Some(ReplyPiece::Finished(reply))) = last else {
            panic!("{last:?}")
        };
        assert_eq!(reply.text, text);
        assert_eq!(reply.model, "gpt-x-1");
        assert_eq!(reply.stop_reason.as_deref(), Some("stop"));
        assert_eq!(reply.request_id.as_deref(), Some("req-1"));
        assert_eq!(
            (
                reply.usage.input_tokens,
                reply.usage.output_tokens,
                reply.usage.cached_input_tokens
            ),
            (12, 5, 4)
        );
        assert!(!reply.truncated && reply.refusal.is_none());
    }

    #[test]
    fn refusal_deltas_and_length_end_as_a_whole_reply_does() {
        let (_, last) = feed(&[
            r#"{"choices":[{"delta":{"refusal":"I can't "}}]}"#,
            r#"{"choices":[{"delta":{"refusal":"help."},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        let Ok(Some(ReplyPiece::Finished(reply))) = last else {
            panic!("{last:?}")
        };
        assert_eq!(reply.refusal.as_deref(), Some("I can't help."));
        assert!(reply.text.is_empty());
        let (_, last) = feed(&[
            r#"{"choices":[{"delta":{"content":"{\"va"},"finish_reason":"length"}]}"#,
            "[DONE]",
        ]);
        let Ok(Some(ReplyPiece::Finished(reply))) = last else {
            panic!("{last:?}")
        };
        assert!(reply.truncated);
    }

    #[test]
    fn an_error_in_the_middle_is_classified() {
        let (_, last) = feed(&[
            r#"{"choices":[{"delta":{"content":"{"}}]}"#,
            r#"{"error":{"message":"The server had an error","type":"server_error"}}"#,
        ]);
        let error = last.unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::Server);
        assert!(error.is_transient());
        let (_, last) = feed(&[r#"{"error":{"message":"Bad","type":"invalid_request_error"}}"#]);
        assert!(!last.unwrap_err().is_transient());
        let (_, last) = feed(&["not json"]);
        assert_eq!(last.unwrap_err().kind(), ProviderErrorKind::InvalidResponse);
    }
}
