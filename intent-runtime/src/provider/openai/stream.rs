//! Chat Completions chunks (`chat.completion.chunk`), as OpenAI and compatible servers
//! stream them: content and refusal deltas, the finish reason on the last content chunk,
//! a usage chunk with no choices (`stream_options.include_usage`), then `[DONE]`. An
//! error in the middle arrives as `{"error": {...}}` and ends the stream.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{IgnoredAny, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::reply::{ChatParts, ChatUsage, ChoiceLogprobs, filtered_categories};
use crate::provider::TokenLogprob;
use crate::provider::http::sse::{Decoder, SseEvent};
use crate::provider::http::{ErrorBody, redact};
use crate::provider::reply_text;
use crate::provider::{ProviderError, ProviderErrorKind, ProviderReply};

// A stream is thousands of chunks of a few bytes of text each: a chunk is read with
// everything borrowed from the event (no `String` for the model name, the finish reason
// or the text, no `Vec` for the choices), and its text unescaped straight into the
// reply gathered so far.
#[derive(Deserialize)]
struct Chunk<'a> {
    /// The completion's id, the same on every chunk.
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "first_choice")]
    choices: Option<ChunkChoice<'a>>,
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    usage: Option<ChatUsage>,
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    logprobs: Option<ChoiceLogprobs>,
    /// Azure OpenAI's verdict on the choice so far, per category (rare: most chunks
    /// carry none).
    #[serde(default)]
    content_filter_results: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    /// The string literal, unescaped into the reply.
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    refusal: Option<Cow<'a, str>>,
}

/// The first of the choices (a streamed request asks for one); the rest are skipped.
fn first_choice<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct First<T>(PhantomData<T>);

    impl<'de, T: Deserialize<'de>> Visitor<'de> for First<T> {
        type Value = Option<T>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list of choices")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let first = seq.next_element()?;
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(first)
        }
    }

    deserializer.deserialize_seq(First(PhantomData))
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
    id: Option<String>,
    filtered: Vec<String>,
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
            id: None,
            filtered: Vec::new(),
        }
    }

    fn finish(&mut self) -> ProviderReply {
        let parts = ChatParts {
            content: Some(std::mem::take(&mut self.content)),
            refusal: self.refusal.take(),
            finish_reason: self.finish_reason.take(),
            usage: self.usage.take(),
            model: self.model.take(),
            logprobs: self.logprobs.take(),
            id: self.id.take(),
            filtered: std::mem::take(&mut self.filtered),
        };
        parts.into_reply(&self.requested_model, self.request_id.take())
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
        )
        .from_provider_words();
        if let Some(id) = &self.request_id {
            error = error.with_request_id(id);
        }
        error
    }

    fn not_a_chunk(&self, data: &str, err: &serde_json::Error) -> ProviderError {
        self.invalid(format!(
            "a streamed chunk is not a Chat Completions chunk ({err}): {}",
            crate::provider::http::excerpt(data)
        ))
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
    fn feed(
        &mut self,
        event: SseEvent<'_>,
        text: &mut String,
    ) -> Result<Option<ProviderReply>, ProviderError> {
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
        let chunk: Chunk<'_> =
            serde_json::from_str(data).map_err(|err| self.not_a_chunk(data, &err))?;
        if let Some(model) = chunk.model.filter(|model| !model.is_empty())
            && self.model.as_deref() != Some(&model)
        {
            self.model = Some(model.into_owned());
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        // Every chunk repeats the id: it is copied once.
        if self.id.is_none()
            && let Some(id) = chunk.id.filter(|id| !id.is_empty())
        {
            self.id = Some(id.into_owned());
        }
        let Some(choice) = chunk.choices else {
            return Ok(None);
        };
        if let Some(reason) = choice.finish_reason {
            self.finish_reason = Some(reason.into_owned());
        }
        if let Some(results) = &choice.content_filter_results {
            for category in filtered_categories(results) {
                if !self.filtered.contains(&category) {
                    self.filtered.push(category);
                }
            }
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
        if let Some(content) = delta.content {
            let start = self.content.len();
            reply_text::push_literal(content.get(), &mut self.content)
                .map_err(|err| self.not_a_chunk(data, &err))?;
            text.push_str(&self.content[start..]);
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(lines: &[&str]) -> (String, Result<Option<ProviderReply>, ProviderError>) {
        let mut stream = ChatStream::new("openai", "gpt-x", Some("req-1".into()), None);
        let mut text = String::new();
        let mut last = Ok(None);
        for line in lines {
            last = stream.feed(
                SseEvent {
                    event: "",
                    data: line,
                },
                &mut text,
            );
            if last.is_err() {
                break;
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
        let Ok(Some(reply)) = last else {
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
        let Ok(Some(reply)) = last else {
            panic!("{last:?}")
        };
        assert_eq!(reply.refusal.as_deref(), Some("I can't help."));
        assert!(reply.text.is_empty());
        let (_, last) = feed(&[
            r#"{"choices":[{"delta":{"content":"{\"va"},"finish_reason":"length"}]}"#,
            "[DONE]",
        ]);
        let Ok(Some(reply)) = last else {
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
