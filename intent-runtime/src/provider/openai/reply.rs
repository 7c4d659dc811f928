//! Chat Completions replies: a completion read into a [`ProviderReply`] (text, refusal,
//! truncation, usage, log-probabilities, ids), and error replies classified.

use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::provider::error::bounded_message;
use crate::provider::http::{
    ErrorBody, RawResponse, base_kind, invalid_response, names_schema, redact,
};
use crate::provider::{ProviderError, ProviderErrorKind, ProviderReply, TokenLogprob};
use crate::result::Usage;

/// The header that carries OpenAI's (and most compatible servers') request id.
pub(crate) const REQUEST_ID_HEADER: &str = "x-request-id";

/// Words that, in a 400's message or `param`, mean the response schema was refused.
const SCHEMA_WORDS: &[&str] = &["response_format", "json_schema", "schema"];

#[derive(Deserialize)]
struct ChatResponse {
    #[serde(default)]
    id: Option<String>,
    choices: Vec<Choice>,
    model: Option<String>,
    usage: Option<ChatUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    finish_reason: Option<String>,
    #[serde(default)]
    logprobs: Option<ChoiceLogprobs>,
    /// Azure OpenAI's verdict on the choice, per category: kept as text and read only
    /// when the filter withheld the reply (every Azure reply carries one).
    #[serde(default)]
    content_filter_results: Option<Box<RawValue>>,
}

/// `choices[0].logprobs`: `content` holds one entry per output token.
#[derive(Deserialize)]
pub(crate) struct ChoiceLogprobs {
    #[serde(default)]
    pub(crate) content: Option<Vec<TokenLogprob>>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
    // Absent on servers without refusals (Ollama): that is a normal reply.
    refusal: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct ChatUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptTokensDetails>,
    /// `reasoning_tokens` (part of `completion_tokens`); compatible servers omit it.
    completion_tokens_details: Option<CompletionTokensDetails>,
}

#[derive(Deserialize)]
pub(crate) struct PromptTokensDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
pub(crate) struct CompletionTokensDetails {
    reasoning_tokens: Option<u64>,
}

/// Reads a success reply: text, refusal, truncation, usage, model, the completion's id
/// and the request id.
pub(crate) fn parse_reply(
    provider: &str,
    raw: &RawResponse,
    requested_model: &str,
    secret: Option<&str>,
) -> Result<ProviderReply, ProviderError> {
    let invalid = |what: String| invalid_response(provider, raw, &what, REQUEST_ID_HEADER, secret);
    let parsed: ChatResponse = serde_json::from_slice(&raw.body).map_err(|err| {
        invalid(format!(
            "the reply is not a Chat Completions response ({err})"
        ))
    })?;
    let Some(choice) = parsed.choices.into_iter().next() else {
        return Err(invalid("the reply has no choices".to_owned()));
    };
    let filtered = match (&choice.finish_reason, &choice.content_filter_results) {
        (Some(reason), Some(results)) if reason == "content_filter" => {
            serde_json::from_str::<Map<String, Value>>(results.get())
                .map(|results| filtered_categories(&results))
                .unwrap_or_default()
        }
        _ => Vec::new(),
    };
    let parts = ChatParts {
        content: choice.message.content,
        refusal: choice.message.refusal,
        finish_reason: choice.finish_reason,
        usage: parsed.usage,
        model: parsed.model,
        logprobs: choice.logprobs.and_then(|logprobs| logprobs.content),
        id: parsed.id,
        filtered,
    };
    Ok(parts.into_reply(
        requested_model,
        raw.request_id(REQUEST_ID_HEADER).map(str::to_owned),
    ))
}

/// The refusal of a reply a content filter withheld without naming why.
pub(crate) const CONTENT_FILTERED: &str =
    "the provider's content filter withheld the reply (stopped for content_filter)";

/// What a Chat Completions reply is made of, read from one response or gathered from
/// the chunks of a stream; both become a [`ProviderReply`] the same way.
#[derive(Default)]
pub(crate) struct ChatParts {
    pub(crate) content: Option<String>,
    pub(crate) refusal: Option<String>,
    pub(crate) finish_reason: Option<String>,
    pub(crate) usage: Option<ChatUsage>,
    pub(crate) model: Option<String>,
    pub(crate) logprobs: Option<Vec<TokenLogprob>>,
    /// The completion's `id` (`chatcmpl-...`).
    pub(crate) id: Option<String>,
    /// The content-filter categories that withheld the reply (Azure OpenAI's
    /// `content_filter_results`), each with its severity.
    pub(crate) filtered: Vec<String>,
}

impl ChatParts {
    /// The reply: refusal and truncation read before the text.
    pub(crate) fn into_reply(
        self,
        requested_model: &str,
        request_id: Option<String>,
    ) -> ProviderReply {
        // The refusal is carried into an issue and the next prompt: an excerpt, like any
        // provider message.
        let mut refusal = self
            .refusal
            .filter(|text| !text.is_empty())
            .map(bounded_message);
        let content_filtered = self.finish_reason.as_deref() == Some("content_filter");
        // A filtered reply is a refusal, whether or not the filter names what it withheld
        // (Azure does, OpenAI does not): the same input would be withheld again, so it is
        // not a cut to retry with a shorter answer.
        if content_filtered && refusal.is_none() {
            refusal = Some(if self.filtered.is_empty() {
                CONTENT_FILTERED.to_owned()
            } else {
                format!(
                    "the provider's content filter withheld the reply ({})",
                    self.filtered.join(", ")
                )
            });
        }
        let refusal_categories = if content_filtered {
            self.filtered
        } else {
            Vec::new()
        };
        let truncated = refusal.is_none() && self.finish_reason.as_deref() == Some("length");
        let text = if refusal.is_some() {
            String::new()
        } else {
            self.content.unwrap_or_default()
        };
        let usage = self.usage.map_or_else(Usage::default, |usage| Usage {
            input_tokens: usage.prompt_tokens.unwrap_or(0),
            output_tokens: usage.completion_tokens.unwrap_or(0),
            cached_input_tokens: usage
                .prompt_tokens_details
                .and_then(|details| details.cached_tokens)
                .unwrap_or(0),
            cache_write_input_tokens: 0,
            reasoning_tokens: usage
                .completion_tokens_details
                .and_then(|details| details.reasoning_tokens)
                .unwrap_or(0),
        });
        ProviderReply {
            text,
            refusal,
            refusal_categories,
            truncated,
            stop_reason: self.finish_reason,
            usage,
            model: self
                .model
                .filter(|model| !model.is_empty())
                .unwrap_or_else(|| requested_model.to_owned()),
            request_id,
            response_id: self.id.filter(|id| !id.is_empty()),
            logprobs: self.logprobs,
            replayed: false,
            route: None,
        }
    }
}

/// The categories of a `content_filter_results` object that filtered, as `name (severity)`
/// (`violence (medium)`), or `name` when the category has no severity (`jailbreak`).
pub(crate) fn filtered_categories(results: &Map<String, Value>) -> Vec<String> {
    results
        .iter()
        .filter(|(_, verdict)| verdict.get("filtered").and_then(Value::as_bool) == Some(true))
        .map(
            |(category, verdict)| match verdict.get("severity").and_then(Value::as_str) {
                Some(severity) => format!("{category} ({severity})"),
                None => category.clone(),
            },
        )
        .collect()
}

#[derive(Deserialize)]
struct FilteredPrompt {
    error: FilteredPromptError,
}

#[derive(Deserialize)]
struct FilteredPromptError {
    code: Option<String>,
    message: Option<String>,
    #[serde(default)]
    innererror: Option<InnerError>,
}

#[derive(Deserialize)]
struct InnerError {
    #[serde(default)]
    content_filter_result: Option<Map<String, Value>>,
}

/// The refusal an error reply carries when the provider's content filter blocked the
/// prompt (Azure OpenAI's 400 with `code: content_filter`): the same prompt would be
/// blocked again, so it is answered as a refusal rather than failed as a bad request.
pub(crate) fn prompt_filter_refusal(raw: &RawResponse, secret: Option<&str>) -> Option<String> {
    if raw.status != StatusCode::BAD_REQUEST {
        return None;
    }
    let parsed: FilteredPrompt = serde_json::from_slice(&raw.body).ok()?;
    if parsed.error.code.as_deref() != Some("content_filter") {
        return None;
    }
    let categories = parsed
        .error
        .innererror
        .and_then(|inner| inner.content_filter_result)
        .map(|results| filtered_categories(&results))
        .unwrap_or_default();
    let mut text = String::from("the provider's content filter blocked the prompt");
    if !categories.is_empty() {
        text.push_str(&format!(" ({})", categories.join(", ")));
    }
    if let Some(message) = parsed
        .error
        .message
        .filter(|message| !message.trim().is_empty())
    {
        text.push_str(": ");
        text.push_str(&redact(&message, secret));
    }
    Some(bounded_message(text))
}

/// The kind of a Chat Completions error reply.
///
/// OpenAI documents 400 invalid request, 401, 403, 404, 422, 429 and 5xx; a 400 that names
/// the response schema is [`ProviderErrorKind::SchemaRejected`], because the schema, not the
/// prompt, has to change.
pub(crate) fn classify(status: StatusCode, error: &ErrorBody) -> ProviderErrorKind {
    if status == StatusCode::BAD_REQUEST && names_schema(error, SCHEMA_WORDS) {
        return ProviderErrorKind::SchemaRejected;
    }
    base_kind(status)
}
