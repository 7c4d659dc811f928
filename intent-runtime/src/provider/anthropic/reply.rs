//! Messages replies: a message read into a [`ProviderReply`] (text, refusal, truncation,
//! usage, ids), and error replies classified.

use reqwest::StatusCode;
use serde::Deserialize;

use crate::provider::error::bounded_message;
use crate::provider::http::{ErrorBody, RawResponse, base_kind, invalid_response, names_schema};
use crate::provider::{ProviderError, ProviderErrorKind, ProviderReply};
use crate::result::Usage;

/// The header that carries Anthropic's request id.
pub(crate) const REQUEST_ID_HEADER: &str = "request-id";

/// Words that, in a 400's message, mean the output schema was refused.
const SCHEMA_WORDS: &[&str] = &["output_config", "schema"];

#[derive(Deserialize)]
struct MessagesResponse {
    #[serde(default)]
    id: Option<String>,
    content: Vec<ContentBlock>,
    model: Option<String>,
    stop_reason: Option<String>,
    usage: Option<MessagesUsage>,
}

#[derive(Deserialize)]
struct ContentBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize, Default, Clone, Copy)]
pub(crate) struct MessagesUsage {
    pub(crate) input_tokens: Option<u64>,
    pub(crate) output_tokens: Option<u64>,
    pub(crate) cache_creation_input_tokens: Option<u64>,
    pub(crate) cache_read_input_tokens: Option<u64>,
}

pub(crate) fn parse_reply(
    raw: &RawResponse,
    requested_model: &str,
    secret: Option<&str>,
) -> Result<ProviderReply, ProviderError> {
    let parsed: MessagesResponse = serde_json::from_slice(&raw.body).map_err(|err| {
        invalid_response(
            "anthropic",
            raw,
            &format!("the reply is not a Messages response ({err})"),
            REQUEST_ID_HEADER,
            secret,
        )
    })?;
    let text: String = parsed
        .content
        .iter()
        .filter(|block| block.kind == "text")
        .filter_map(|block| block.text.as_deref())
        .collect();
    Ok(ProviderReply {
        response_id: parsed.id.filter(|id| !id.is_empty()),
        ..messages_reply(
            text,
            parsed.stop_reason,
            parsed.usage.map_or_else(Usage::default, usage),
            parsed.model,
            requested_model,
            raw.request_id(REQUEST_ID_HEADER).map(str::to_owned),
        )
    })
}

/// The reply from its parts, read from one response or gathered from a stream's events:
/// the stop reason says whether it was truncated or refused (a refusal's text becomes
/// its message).
pub(crate) fn messages_reply(
    text: String,
    stop_reason: Option<String>,
    usage: Usage,
    model: Option<String>,
    requested_model: &str,
    request_id: Option<String>,
) -> ProviderReply {
    let truncated = matches!(
        stop_reason.as_deref(),
        Some("max_tokens" | "model_context_window_exceeded")
    );
    let (text, refusal) = if stop_reason.as_deref() == Some("refusal") {
        let message = if text.trim().is_empty() {
            "the model declined to answer (stop_reason: refusal)".to_owned()
        } else {
            // Carried into an issue and the next prompt: an excerpt, like any provider
            // message.
            bounded_message(text)
        };
        (String::new(), Some(message))
    } else {
        (text, None)
    };
    ProviderReply {
        text,
        refusal,
        refusal_categories: Vec::new(),
        truncated,
        stop_reason,
        usage,
        model: model
            .filter(|model| !model.is_empty())
            .unwrap_or_else(|| requested_model.to_owned()),
        request_id,
        // The message's id is read by the caller: from the body, or from a stream's
        // `message_start`.
        response_id: None,
        // The Messages API reports no log-probabilities.
        logprobs: None,
        replayed: false,
        route: None,
    }
}

/// Anthropic's `input_tokens` excludes cached and cache-written tokens; all three are added
/// so `input_tokens` means the whole prompt, as it does for OpenAI.
pub(crate) fn usage(usage: MessagesUsage) -> Usage {
    let cache_read = usage.cache_read_input_tokens.unwrap_or(0);
    let cache_write = usage.cache_creation_input_tokens.unwrap_or(0);
    Usage {
        input_tokens: usage.input_tokens.unwrap_or(0) + cache_write + cache_read,
        output_tokens: usage.output_tokens.unwrap_or(0),
        cached_input_tokens: cache_read,
        cache_write_input_tokens: cache_write,
        // Anthropic counts thinking in `output_tokens` and reports no split.
        reasoning_tokens: 0,
    }
}

/// The kind of a Messages error reply, by documented status, and by the body's error type
/// for statuses Anthropic does not document.
pub(crate) fn classify(status: StatusCode, error: &ErrorBody) -> ProviderErrorKind {
    match status.as_u16() {
        400 if names_schema(error, SCHEMA_WORDS) => ProviderErrorKind::SchemaRejected,
        400 | 413 => ProviderErrorKind::InvalidRequest,
        504 => ProviderErrorKind::Timeout,
        401 | 402 | 403 | 404 | 429 | 500 | 529 => base_kind(status),
        _ => error
            .error_type
            .as_deref()
            .and_then(kind_of_error_type)
            .unwrap_or_else(|| base_kind(status)),
    }
}

pub(crate) fn kind_of_error_type(error_type: &str) -> Option<ProviderErrorKind> {
    Some(match error_type {
        "invalid_request_error" | "request_too_large" => ProviderErrorKind::InvalidRequest,
        "authentication_error" => ProviderErrorKind::Authentication,
        "billing_error" | "permission_error" => ProviderErrorKind::Permission,
        "not_found_error" => ProviderErrorKind::NotFound,
        "rate_limit_error" => ProviderErrorKind::RateLimited,
        "api_error" => ProviderErrorKind::Server,
        "timeout_error" => ProviderErrorKind::Timeout,
        "overloaded_error" => ProviderErrorKind::Overloaded,
        _ => return None,
    })
}
