//! `streamGenerateContent?alt=sse` events: each `data:` is a partial
//! `GenerateContentResponse` holding only the new text; the chunk with a finish reason (or
//! a blocked prompt) ends the reply, with the last usage seen; an event with `error` ends
//! the stream with a classified error. There is no end sentinel: a stream that closes
//! before a finish reason was cut.

use super::GEMINI_PROVIDER_NAME;
use super::errors::stream_error;
use super::reply::{GenerateResponse, ReplyParts};
use crate::provider::http::sse::{Decoder, SseEvent};
use crate::provider::http::{excerpt, redact};
use crate::provider::{ProviderError, ProviderErrorKind, ProviderReply};

/// The state of one streamed Gemini reply.
pub(crate) struct GeminiStream {
    requested_model: String,
    request_id: Option<String>,
    secret: Option<String>,
    parts: ReplyParts,
}

impl GeminiStream {
    pub(crate) fn new(
        requested_model: &str,
        request_id: Option<String>,
        secret: Option<&str>,
    ) -> Self {
        Self {
            requested_model: requested_model.to_owned(),
            request_id,
            secret: secret.map(str::to_owned),
            parts: ReplyParts::default(),
        }
    }

    fn invalid(&self, err: &serde_json::Error, data: &str) -> ProviderError {
        let mut error = ProviderError::new(
            ProviderErrorKind::InvalidResponse,
            GEMINI_PROVIDER_NAME,
            redact(
                &format!(
                    "a streamed event is not a GenerateContentResponse ({err}): {}",
                    excerpt(data)
                ),
                self.secret.as_deref(),
            ),
        )
        .with_transient(false);
        if let Some(id) = &self.request_id {
            error = error.with_request_id(id);
        }
        error
    }
}

impl Decoder for GeminiStream {
    fn feed(
        &mut self,
        event: SseEvent<'_>,
        text: &mut String,
    ) -> Result<Option<ProviderReply>, ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(None);
        }
        let chunk: GenerateResponse =
            serde_json::from_str(data).map_err(|err| self.invalid(&err, data))?;
        if let Some(error) = &chunk.error {
            return Err(stream_error(
                error,
                self.request_id.as_deref(),
                self.secret.as_deref(),
            ));
        }
        self.parts.add(chunk, Some(text));
        if !self.parts.is_finished() {
            return Ok(None);
        }
        let parts = std::mem::take(&mut self.parts);
        Ok(Some(
            parts.into_reply(&self.requested_model, self.request_id.take()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[&str]) -> (String, Result<Option<ProviderReply>, ProviderError>) {
        let mut stream = GeminiStream::new("gemini-test", Some("req-9".into()), Some("k3y"));
        let mut text = String::new();
        let mut last = Ok(None);
        for data in events {
            last = stream.feed(SseEvent { event: "", data }, &mut text);
            if !matches!(last, Ok(None)) {
                break;
            }
        }
        (text, last)
    }

    #[test]
    fn chunks_make_the_reply_with_the_last_usage() {
        let (text, last) = run(&[
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"{\"value\": {\"num"}]},"index":0}],"usageMetadata":{"promptTokenCount":41,"totalTokenCount":41},"modelVersion":"gemini-2.5-flash","responseId":"a1"}"#,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"thinking","thought":true}]},"index":0}]}"#,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"ber\": \"INV-0007\", \"total_cents\": 125000}}"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":41,"candidatesTokenCount":19,"totalTokenCount":60},"modelVersion":"gemini-2.5-flash","responseId":"a1"}"#,
        ]);
        let expected = r#"{"value": {"number": "INV-0007", "total_cents": 125000}}"#;
        assert_eq!(text, expected);
        let reply = last.unwrap().unwrap();
        assert_eq!(reply.text, expected);
        assert_eq!(reply.usage.input_tokens, 41);
        assert_eq!(reply.usage.output_tokens, 19);
        assert_eq!(reply.response_id.as_deref(), Some("a1"));
        assert_eq!(reply.request_id.as_deref(), Some("req-9"));
        assert_eq!(reply.stop_reason.as_deref(), Some("STOP"));
    }

    #[test]
    fn a_blocked_prompt_ends_the_stream_at_once() {
        let (text, last) = run(&[
            r#"{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":5}}"#,
        ]);
        assert!(text.is_empty());
        let reply = last.unwrap().unwrap();
        assert!(reply.refusal.unwrap().contains("PROHIBITED_CONTENT"));
    }

    #[test]
    fn an_error_event_is_classified_and_redacted() {
        let (text, last) = run(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"par"}]}}]}"#,
            r#"{"error":{"code":503,"message":"The model is overloaded (key k3y).","status":"UNAVAILABLE","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"2s"}]}}"#,
        ]);
        assert_eq!(text, "par");
        let error = last.unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::Overloaded);
        assert!(error.is_transient());
        assert_eq!(error.status(), Some(503));
        assert_eq!(error.retry_after(), Some(std::time::Duration::from_secs(2)));
        assert_eq!(error.request_id(), Some("req-9"));
        assert!(!error.message().contains("k3y"), "{}", error.message());
    }

    #[test]
    fn a_chunk_that_is_not_json_is_an_invalid_response() {
        let (_, last) = run(&["not json k3y"]);
        let error = last.unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::InvalidResponse);
        assert!(!error.is_transient());
        assert!(!error.message().contains("k3y"));
    }
}
