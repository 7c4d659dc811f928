//! A Response object (`"object": "response"`) read into a [`ProviderReply`]: the text of
//! its `message` items, refusals, `incomplete` replies, a `failed` response's error, usage
//! and log-probabilities. The same reading serves a live reply, the terminal event of a
//! stream and a batch's result line.

use serde::Deserialize;

use crate::provider::error::bounded_message;
use crate::provider::http::{RawResponse, invalid_response, redact};
use crate::provider::openai::reply::CONTENT_FILTERED;
use crate::provider::{ProviderError, ProviderErrorKind, ProviderReply, TokenLogprob};
use crate::result::Usage;

/// The header that carries OpenAI's request id.
pub(crate) const REQUEST_ID_HEADER: &str = "x-request-id";

/// The parts of a Response object the reply is made of; everything else (the echoed
/// settings, reasoning items, annotations) is skipped unread.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ResponseObject {
    /// `resp_...`.
    #[serde(default)]
    pub(crate) id: Option<String>,
    /// `completed`, `incomplete`, `failed`, `cancelled`, `in_progress` or `queued`.
    #[serde(default)]
    pub(crate) status: Option<String>,
    /// Why a `failed` response failed.
    #[serde(default)]
    pub(crate) error: Option<ResponseFailure>,
    /// Why an `incomplete` response stopped.
    #[serde(default)]
    pub(crate) incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    pub(crate) model: Option<String>,
    /// Items in the model's order: reasoning, messages, tool calls.
    #[serde(default)]
    pub(crate) output: Vec<OutputItem>,
    #[serde(default)]
    pub(crate) usage: Option<ResponseUsage>,
}

/// `error` of a failed response: `{code, message}`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ResponseFailure {
    #[serde(default)]
    pub(crate) code: Option<String>,
    #[serde(default)]
    pub(crate) message: Option<String>,
}

/// `incomplete_details`: `{"reason": "max_output_tokens" | "content_filter"}`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct IncompleteDetails {
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

/// One item of `output`; only `message` items carry the reply.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct OutputItem {
    #[serde(rename = "type", default)]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) content: Option<Vec<ContentPart>>,
}

/// One part of a message's `content`: `output_text` or `refusal`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ContentPart {
    #[serde(rename = "type", default)]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) text: Option<String>,
    #[serde(default)]
    pub(crate) refusal: Option<String>,
    #[serde(default)]
    pub(crate) logprobs: Option<Vec<TokenLogprob>>,
}

/// `usage` of a Response.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) struct ResponseUsage {
    #[serde(default)]
    pub(crate) input_tokens: u64,
    #[serde(default)]
    pub(crate) input_tokens_details: Option<InputTokensDetails>,
    /// Output tokens, reasoning tokens included.
    #[serde(default)]
    pub(crate) output_tokens: u64,
    #[serde(default)]
    pub(crate) output_tokens_details: Option<OutputTokensDetails>,
}

/// `usage.input_tokens_details`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) struct InputTokensDetails {
    #[serde(default)]
    pub(crate) cached_tokens: u64,
    #[serde(default)]
    pub(crate) cache_write_tokens: u64,
}

/// `usage.output_tokens_details`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
pub(crate) struct OutputTokensDetails {
    #[serde(default)]
    pub(crate) reasoning_tokens: u64,
}

impl ResponseUsage {
    /// The usage as the runtime counts it; reasoning tokens are part of `output_tokens`
    /// and also counted apart.
    pub(crate) fn usage(&self) -> Usage {
        let input = self.input_tokens_details.unwrap_or_default();
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cached_input_tokens: input.cached_tokens,
            cache_write_input_tokens: input.cache_write_tokens,
            reasoning_tokens: self.reasoning_tokens(),
        }
    }

    /// The output tokens the model spent reasoning (billed as output, never shown).
    pub(crate) fn reasoning_tokens(&self) -> u64 {
        self.output_tokens_details
            .map_or(0, |details| details.reasoning_tokens)
    }
}

/// What the text of a Response's messages is made of.
#[derive(Debug, Default)]
pub(crate) struct OutputText {
    pub(crate) text: String,
    pub(crate) refusal: Option<String>,
    pub(crate) logprobs: Option<Vec<TokenLogprob>>,
}

impl ResponseObject {
    /// The text, refusal and log-probabilities of every `message` item, in order
    /// (reasoning and other items skipped).
    pub(crate) fn take_output(&mut self) -> OutputText {
        let mut out = OutputText::default();
        for item in std::mem::take(&mut self.output) {
            if item.kind != "message" {
                continue;
            }
            for part in item.content.unwrap_or_default() {
                match part.kind.as_str() {
                    "output_text" => {
                        if let Some(text) = part.text {
                            if out.text.is_empty() {
                                out.text = text;
                            } else {
                                out.text.push_str(&text);
                            }
                        }
                        if let Some(tokens) = part.logprobs.filter(|tokens| !tokens.is_empty()) {
                            out.logprobs.get_or_insert_with(Vec::new).extend(tokens);
                        }
                    }
                    "refusal" => {
                        if let Some(refusal) = part.refusal {
                            out.refusal
                                .get_or_insert_with(String::new)
                                .push_str(&refusal);
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }
}

/// Where a reply comes from, for the errors it may turn into.
pub(crate) struct Origin<'a> {
    pub(crate) provider: &'a str,
    pub(crate) requested_model: &'a str,
    pub(crate) request_id: Option<String>,
    pub(crate) secret: Option<&'a str>,
}

/// A Response and the text it carries, as a reply: `completed` and `incomplete`
/// responses are replies (an `incomplete` one truncated, as Chat Completions' `length` is,
/// unless the content filter stopped it: that is a refusal, as Chat Completions'
/// `content_filter` is); `failed` and `cancelled` ones are
/// errors, classified by the error's code.
pub(crate) fn into_reply(
    mut response: ResponseObject,
    output: OutputText,
    origin: Origin<'_>,
) -> Result<ProviderReply, ProviderError> {
    let status = response.status.take().unwrap_or_else(|| "completed".into());
    let (truncated, stop_reason) = match status.as_str() {
        "completed" => (false, status),
        "incomplete" => {
            let reason = response
                .incomplete_details
                .take()
                .and_then(|details| details.reason)
                .filter(|reason| !reason.is_empty())
                .unwrap_or(status);
            // A filtered reply is a refusal (below), not a cut to retry shorter.
            (reason != "content_filter", reason)
        }
        "failed" => return Err(failed(response.error.take().unwrap_or_default(), &origin)),
        "cancelled" => {
            return Err(with_request_id(
                ProviderError::new(
                    ProviderErrorKind::Canceled,
                    origin.provider,
                    "the response was cancelled before it completed",
                ),
                &origin,
            ));
        }
        other => {
            return Err(with_request_id(
                ProviderError::new(
                    ProviderErrorKind::InvalidResponse,
                    origin.provider,
                    format!(
                        "the response is `{}`, not completed; this provider never asks for \
                         background responses",
                        redact(other, origin.secret)
                    ),
                )
                .with_transient(false),
                &origin,
            ));
        }
    };
    // The refusal is carried into an issue and the next prompt: an excerpt, like any
    // provider message.
    let refusal = output
        .refusal
        .filter(|text| !text.is_empty())
        .map(bounded_message)
        .or_else(|| (stop_reason == "content_filter").then(|| CONTENT_FILTERED.to_owned()));
    let text = if refusal.is_some() {
        String::new()
    } else {
        output.text
    };
    let usage = response.usage.unwrap_or_default();
    if usage.reasoning_tokens() > 0 {
        tracing::debug!(
            provider = origin.provider,
            reasoning_tokens = usage.reasoning_tokens(),
            output_tokens = usage.output_tokens,
            "the model reasoned before answering"
        );
    }
    Ok(ProviderReply {
        text,
        refusal,
        refusal_categories: Vec::new(),
        truncated,
        stop_reason: Some(stop_reason),
        usage: usage.usage(),
        model: response
            .model
            .filter(|model| !model.is_empty())
            .unwrap_or_else(|| origin.requested_model.to_owned()),
        request_id: origin.request_id,
        response_id: response.id.filter(|id| !id.is_empty()),
        logprobs: output.logprobs,
        replayed: false,
        route: None,
    })
}

fn with_request_id(error: ProviderError, origin: &Origin<'_>) -> ProviderError {
    match &origin.request_id {
        Some(id) => error.with_request_id(id),
        None => error,
    }
}

/// The error of a `failed` response.
fn failed(failure: ResponseFailure, origin: &Origin<'_>) -> ProviderError {
    let code = failure.code.as_deref().unwrap_or_default();
    let message = match (failure.message, code) {
        (Some(message), "") => message,
        (Some(message), code) => format!("{code}: {message}"),
        (None, "") => "the response failed".to_owned(),
        (None, code) => format!("the response failed ({code})"),
    };
    with_request_id(
        ProviderError::new(
            failure_kind(code),
            origin.provider,
            redact(&message, origin.secret),
        )
        .from_provider_words(),
        origin,
    )
}

/// The kind of a failure named by its code: a `failed` response's `error.code`
/// (`ResponseErrorCode`), or a streamed `error` event's `code` or `type`. A failure after
/// the model began is most likely the server's, so an unknown code is a (transient)
/// server error, as for Chat Completions' errors in the middle of a stream.
pub(crate) fn failure_kind(code: &str) -> ProviderErrorKind {
    match code {
        "rate_limit_exceeded" | "rate_limit_error" | "tokens" | "requests" => {
            ProviderErrorKind::RateLimited
        }
        "overloaded" | "overloaded_error" | "service_unavailable" => ProviderErrorKind::Overloaded,
        "vector_store_timeout" | "timeout" | "timeout_error" => ProviderErrorKind::Timeout,
        "authentication_error" | "invalid_api_key" => ProviderErrorKind::Authentication,
        "permission_error" | "data_residency_mismatch" => ProviderErrorKind::Permission,
        // The request itself is at fault: the prompt or an image was refused.
        "invalid_request_error" | "invalid_prompt" | "bio_policy" | "empty_image_file" => {
            ProviderErrorKind::InvalidRequest
        }
        image if image.starts_with("image_") || image.starts_with("invalid_") => {
            ProviderErrorKind::InvalidRequest
        }
        "unsupported_image_media_type" | "failed_to_download_image" => {
            ProviderErrorKind::InvalidRequest
        }
        _ => ProviderErrorKind::Server,
    }
}

/// Reads a success reply of `POST /v1/responses` (or a batch line's body).
pub(crate) fn parse_reply(
    provider: &str,
    raw: &RawResponse,
    requested_model: &str,
    secret: Option<&str>,
) -> Result<ProviderReply, ProviderError> {
    let mut response: ResponseObject = serde_json::from_slice(&raw.body).map_err(|err| {
        invalid_response(
            provider,
            raw,
            &format!("the reply is not a Response object ({err})"),
            REQUEST_ID_HEADER,
            secret,
        )
    })?;
    let output = response.take_output();
    into_reply(
        response,
        output,
        Origin {
            provider,
            requested_model,
            request_id: raw.request_id(REQUEST_ID_HEADER).map(str::to_owned),
            secret,
        },
    )
}

#[cfg(test)]
mod tests {
    use reqwest::StatusCode;
    use serde_json::{Value, json};

    use super::*;

    fn raw(body: &Value) -> RawResponse {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(REQUEST_ID_HEADER, "req_9".parse().unwrap());
        RawResponse {
            status: StatusCode::OK,
            headers,
            body: body.to_string().into(),
        }
    }

    fn parse(body: Value) -> Result<ProviderReply, ProviderError> {
        parse_reply("openai-responses", &raw(&body), "asked", Some("sk-secret"))
    }

    /// The spec's example C1 reply.
    fn c1() -> Value {
        json!({
            "id": "resp_68a1f0c2d4e8819b", "object": "response", "created_at": 1764600000,
            "status": "completed", "error": null, "incomplete_details": null,
            "instructions": "Answer with JSON only.", "max_output_tokens": 512,
            "model": "gpt-4.1-mini-2025-04-14",
            "output": [{
                "id": "msg_68a1f0c3e1f0819b", "type": "message", "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "annotations": [], "logprobs": [],
                    "text": "{\"value\":{\"number\":\"INV-0007\",\"total_cents\":125000}}"}]
            }],
            "parallel_tool_calls": true, "previous_response_id": null, "store": false,
            "temperature": 1.0,
            "text": {"format": {"type": "json_schema", "name": "invoice", "strict": true, "schema": {"type": "object"}}, "verbosity": "medium"},
            "tool_choice": "auto", "tools": [], "top_p": 1.0, "metadata": {},
            "usage": {"input_tokens": 61, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 17, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 78}
        })
    }

    #[test]
    fn the_specs_example_c1_is_a_complete_reply() {
        let reply = parse(c1()).unwrap();
        assert_eq!(
            reply.text,
            r#"{"value":{"number":"INV-0007","total_cents":125000}}"#
        );
        assert!(!reply.truncated && reply.refusal.is_none());
        assert_eq!(reply.stop_reason.as_deref(), Some("completed"));
        assert_eq!(reply.model, "gpt-4.1-mini-2025-04-14");
        assert_eq!(reply.response_id.as_deref(), Some("resp_68a1f0c2d4e8819b"));
        assert_eq!(reply.request_id.as_deref(), Some("req_9"));
        assert_eq!(
            (reply.usage.input_tokens, reply.usage.output_tokens),
            (61, 17)
        );
        // An empty list of log-probabilities is none.
        assert_eq!(reply.logprobs, None);
    }

    #[test]
    fn the_specs_example_c2_is_truncated_with_reasoning_skipped() {
        let reply = parse(json!({
            "id": "resp_68a1f1aa0b7c819b", "object": "response", "status": "incomplete",
            "error": null, "incomplete_details": {"reason": "max_output_tokens"},
            "model": "o4-mini-2025-04-16",
            "output": [{"id": "rs_68a1f1ab11c4819b", "type": "reasoning", "summary": []}],
            "usage": {"input_tokens": 61, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 64, "output_tokens_details": {"reasoning_tokens": 64},
                "total_tokens": 125}
        }))
        .unwrap();
        assert!(reply.truncated);
        assert_eq!(reply.text, "");
        assert_eq!(reply.stop_reason.as_deref(), Some("max_output_tokens"));
        assert_eq!(reply.usage.output_tokens, 64);
    }

    #[test]
    fn items_are_read_in_order_and_a_refusal_empties_the_text() {
        let mut body = c1();
        body["output"] = json!([
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "xyz"},
            {"type": "message", "content": [{"type": "output_text", "text": "a"}]},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            {"type": "message", "content": [{"type": "output_text", "text": "b"}]}
        ]);
        assert_eq!(parse(body.clone()).unwrap().text, "ab");
        body["output"] = json!([{"type": "message", "content": [
            {"type": "refusal", "refusal": "I can't help with that."}
        ]}]);
        let reply = parse(body).unwrap();
        assert_eq!(reply.refusal.as_deref(), Some("I can't help with that."));
        assert_eq!(reply.text, "");
    }

    #[test]
    fn a_content_filter_stop_is_a_refusal_with_its_reason() {
        let mut body = c1();
        body["status"] = json!("incomplete");
        body["incomplete_details"] = json!({"reason": "content_filter"});
        let reply = parse(body).unwrap();
        assert!(!reply.truncated);
        assert_eq!(reply.refusal.as_deref(), Some(CONTENT_FILTERED));
        assert_eq!(reply.text, "");
        assert_eq!(reply.stop_reason.as_deref(), Some("content_filter"));
    }

    #[test]
    fn cached_cache_write_and_reasoning_tokens_are_read() {
        let mut body = c1();
        body["usage"] = json!({"input_tokens": 2000,
            "input_tokens_details": {"cached_tokens": 1536, "cache_write_tokens": 64},
            "output_tokens": 300, "output_tokens_details": {"reasoning_tokens": 256},
            "total_tokens": 2300});
        let reply = parse(body.clone()).unwrap();
        assert_eq!(
            reply.usage,
            Usage {
                input_tokens: 2000,
                output_tokens: 300,
                cached_input_tokens: 1536,
                cache_write_input_tokens: 64,
                reasoning_tokens: 256,
            }
        );
        let usage: ResponseUsage = serde_json::from_value(body["usage"].clone()).unwrap();
        assert_eq!(usage.reasoning_tokens(), 256);
    }

    #[test]
    fn log_probabilities_of_the_output_text_are_read() {
        let mut body = c1();
        body["output"][0]["content"][0] = json!({"type": "output_text", "text": "yes",
            "annotations": [],
            "logprobs": [{"token": "yes", "logprob": -0.1, "bytes": [121, 101, 115],
                "top_logprobs": [{"token": "yes", "logprob": -0.1, "bytes": [121, 101, 115]},
                                 {"token": "no", "logprob": -2.4, "bytes": [110, 111]}]}]});
        let tokens = parse(body).unwrap().logprobs.unwrap();
        assert_eq!(tokens.len(), 1);
        assert_eq!(tokens[0].token, "yes");
        assert_eq!(tokens[0].top_logprobs[1].token, "no");
        assert_eq!(tokens[0].top_logprobs[1].logprob, -2.4);
    }

    #[test]
    fn a_failed_response_is_an_error_classified_by_its_code() {
        let mut body = c1();
        body["status"] = json!("failed");
        body["output"] = json!([]);
        body["error"] = json!({"code": "server_error", "message": "The model crashed (sk-secret)"});
        let error = parse(body.clone()).unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::Server);
        assert!(error.is_transient());
        assert_eq!(error.request_id(), Some("req_9"));
        assert!(!error.message().contains("sk-secret"), "{error}");
        assert!(error.message().contains("server_error: The model crashed"));
        // The provider's words are kept for `message`, never displayed.
        assert!(!error.to_string().contains("The model crashed"), "{error}");
        body["error"] = json!({"code": "invalid_image_url", "message": "bad url"});
        let error = parse(body.clone()).unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::InvalidRequest);
        assert!(!error.is_transient());
        body["error"] = json!({"code": "rate_limit_exceeded", "message": "slow"});
        assert_eq!(
            parse(body.clone()).unwrap_err().kind(),
            ProviderErrorKind::RateLimited
        );
        body["status"] = json!("cancelled");
        assert_eq!(
            parse(body.clone()).unwrap_err().kind(),
            ProviderErrorKind::Canceled
        );
        body["status"] = json!("queued");
        assert_eq!(
            parse(body).unwrap_err().kind(),
            ProviderErrorKind::InvalidResponse
        );
    }

    #[test]
    fn a_body_that_is_not_a_response_is_an_invalid_response() {
        let error = parse_reply(
            "openai-responses",
            &RawResponse {
                status: StatusCode::OK,
                headers: reqwest::header::HeaderMap::new(),
                body: "<html>oops</html>".into(),
            },
            "m",
            None,
        )
        .unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::InvalidResponse);
        // The body is kept for the message, and never displayed: it may quote the request.
        assert!(error.message().contains("<html>oops"), "{error}");
        assert!(!error.to_string().contains("<html>oops"), "{error}");
    }
}
