//! A `GenerateContentResponse` read into a [`ProviderReply`]: the text of
//! `candidates[0]` without thought parts, the finish reason or a blocked prompt mapped
//! onto refusal and truncation, usage with cached and thinking tokens, the ids, and the
//! log-probabilities.
//!
//! | Gemini says | the reply |
//! | --- | --- |
//! | `STOP`, `FINISH_REASON_UNSPECIFIED`, none | a complete reply |
//! | `MAX_TOKENS` | truncated |
//! | `SAFETY`, `RECITATION`, `LANGUAGE`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII`, `IMAGE_SAFETY`, `IMAGE_PROHIBITED_CONTENT`, `IMAGE_RECITATION` | a refusal (no text), naming the reason |
//! | `promptFeedback.blockReason` (no candidates) | a refusal naming the block reason |
//! | `OTHER`, `MALFORMED_FUNCTION_CALL`, the tool and image reasons, any new value | truncated: the reply did not end as a reply should |

use super::GEMINI_PROVIDER_NAME;
use serde::Deserialize;

use super::errors::{GoogleError, REQUEST_ID_HEADER};
use crate::provider::error::bounded_message;
use crate::provider::http::{RawResponse, invalid_response};
use crate::provider::{LogprobAlternative, ProviderError, ProviderReply, TokenLogprob};
use crate::result::Usage;

/// A `GenerateContentResponse`, or one chunk of a streamed one. Proto3 JSON leaves out
/// fields at their default (a count of 0, a log-probability of 0.0), so every field
/// defaults.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateResponse {
    #[serde(default)]
    pub(crate) candidates: Option<Vec<Candidate>>,
    #[serde(default)]
    pub(crate) prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    pub(crate) usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    pub(crate) model_version: Option<String>,
    #[serde(default)]
    pub(crate) response_id: Option<String>,
    /// Set only on a streamed event that reports a failure.
    #[serde(default)]
    pub(crate) error: Option<GoogleError>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Candidate {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    finish_message: Option<String>,
    #[serde(default)]
    logprobs_result: Option<LogprobsResult>,
}

#[derive(Debug, Default, Deserialize)]
struct Content {
    #[serde(default)]
    parts: Option<Vec<ContentPart>>,
}

#[derive(Debug, Default, Deserialize)]
struct ContentPart {
    #[serde(default)]
    text: Option<String>,
    /// A thought summary of a thinking model: not part of the answer.
    #[serde(default)]
    thought: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
    #[serde(default)]
    block_reason_message: Option<String>,
}

/// `usageMetadata`; streamed chunks carry running totals, so the last one is kept.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UsageMetadata {
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    #[serde(default)]
    thoughts_token_count: u64,
    #[serde(default)]
    cached_content_token_count: u64,
    #[serde(default)]
    tool_use_prompt_token_count: u64,
}

impl UsageMetadata {
    /// Input is the whole prompt (`promptTokenCount` includes the cached part, tool-use
    /// prompts are billed as input too); output is the answer and the thinking, both
    /// billed as output.
    pub(crate) fn usage(self) -> Usage {
        Usage {
            input_tokens: self.prompt_token_count + self.tool_use_prompt_token_count,
            output_tokens: self.candidates_token_count + self.thoughts_token_count,
            cached_input_tokens: self.cached_content_token_count,
            cache_write_input_tokens: 0,
            reasoning_tokens: self.thoughts_token_count,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogprobsResult {
    #[serde(default)]
    top_candidates: Vec<TopCandidates>,
    #[serde(default)]
    chosen_candidates: Vec<LogprobCandidate>,
}

#[derive(Debug, Default, Deserialize)]
struct TopCandidates {
    #[serde(default)]
    candidates: Vec<LogprobCandidate>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogprobCandidate {
    #[serde(default)]
    token: String,
    #[serde(default)]
    log_probability: f64,
}

/// What a reply is made of, read from one response or gathered from a stream's chunks;
/// both become a [`ProviderReply`] the same way.
#[derive(Debug, Default)]
pub(crate) struct ReplyParts {
    pub(crate) text: String,
    pub(crate) finish_reason: Option<String>,
    finish_message: Option<String>,
    pub(crate) block_reason: Option<String>,
    block_message: Option<String>,
    usage: Option<UsageMetadata>,
    model: Option<String>,
    response_id: Option<String>,
    logprobs: Option<Vec<TokenLogprob>>,
    /// Whether any chunk had a candidate (a reply without one and without a block reason
    /// is not a reply).
    pub(crate) saw_candidate: bool,
}

impl ReplyParts {
    /// Adds what `response` (a whole reply, or the next chunk of a stream) carries; a
    /// stream's `piece` gets the text of its non-thought parts too.
    pub(crate) fn add(&mut self, response: GenerateResponse, piece: Option<&mut String>) {
        if let Some(feedback) = response.prompt_feedback
            && feedback.block_reason.is_some()
        {
            self.block_reason = feedback.block_reason;
            self.block_message = feedback.block_reason_message;
        }
        if response.usage_metadata.is_some() {
            self.usage = response.usage_metadata;
        }
        if let Some(model) = response.model_version.filter(|model| !model.is_empty()) {
            self.model = Some(model);
        }
        if let Some(id) = response.response_id.filter(|id| !id.is_empty()) {
            self.response_id = Some(id);
        }
        let Some(candidate) = response.candidates.into_iter().flatten().next() else {
            return;
        };
        self.saw_candidate = true;
        let start = self.text.len();
        for part in candidate
            .content
            .and_then(|content| content.parts)
            .into_iter()
            .flatten()
        {
            if !part.thought
                && let Some(part_text) = part.text
            {
                self.text.push_str(&part_text);
            }
        }
        if let Some(piece) = piece {
            piece.push_str(&self.text[start..]);
        }
        if candidate.finish_reason.is_some() {
            self.finish_reason = candidate.finish_reason;
        }
        if candidate.finish_message.is_some() {
            self.finish_message = candidate.finish_message;
        }
        if let Some(result) = candidate.logprobs_result {
            self.logprobs
                .get_or_insert_with(Vec::new)
                .extend(token_logprobs(result));
        }
    }

    /// Whether the reply is complete: it has a finish reason, or the prompt was blocked.
    pub(crate) fn is_finished(&self) -> bool {
        self.block_reason.is_some()
            || self
                .finish_reason
                .as_deref()
                .is_some_and(|reason| reason != "FINISH_REASON_UNSPECIFIED")
    }

    /// The reply: a blocked prompt or a blocked answer is a refusal, a reply cut off by
    /// the output limit (or ended for any other reason) is truncated.
    pub(crate) fn into_reply(
        self,
        requested_model: &str,
        request_id: Option<String>,
    ) -> ProviderReply {
        let (refusal, truncated, stop_reason) = match (&self.block_reason, &self.finish_reason) {
            (Some(block), _) => {
                let message = self
                    .block_message
                    .clone()
                    .filter(|message| !message.trim().is_empty())
                    .unwrap_or_else(|| {
                        format!(
                            "Gemini blocked the prompt: {} (promptFeedback.blockReason: {block})",
                            block_reason_meaning(block)
                        )
                    });
                (Some(bounded_message(message)), false, Some(block.clone()))
            }
            (None, Some(reason)) => {
                let refusal = refusal_meaning(reason).map(|meaning| {
                    let message = self
                        .finish_message
                        .clone()
                        .filter(|message| !message.trim().is_empty())
                        .unwrap_or_else(|| {
                            format!("Gemini stopped the reply: {meaning} (finishReason: {reason})")
                        });
                    bounded_message(message)
                });
                let truncated = refusal.is_none()
                    && !matches!(reason.as_str(), "STOP" | "FINISH_REASON_UNSPECIFIED");
                (refusal, truncated, Some(reason.clone()))
            }
            (None, None) => (None, false, None),
        };
        // Gemini names the filter that withheld the reply by its block or finish reason.
        let refusal_categories = match (&refusal, &stop_reason) {
            (Some(_), Some(reason)) => vec![reason.clone()],
            _ => Vec::new(),
        };
        ProviderReply {
            text: if refusal.is_some() {
                String::new()
            } else {
                self.text
            },
            refusal,
            refusal_categories,
            truncated,
            stop_reason,
            usage: self.usage.map_or_else(Usage::default, UsageMetadata::usage),
            model: self.model.unwrap_or_else(|| requested_model.to_owned()),
            request_id,
            response_id: self.response_id,
            logprobs: self.logprobs,
            replayed: false,
            route: None,
        }
    }
}

/// What a finish reason that withholds the answer means; `None` for the others.
fn refusal_meaning(reason: &str) -> Option<&'static str> {
    Some(match reason {
        "SAFETY" => "its safety filters flagged the answer",
        "RECITATION" => "the answer recited training data too closely",
        "LANGUAGE" => "the answer was in a language Gemini does not support",
        "BLOCKLIST" => "the answer contained a blocklisted term",
        "PROHIBITED_CONTENT" => "the answer was flagged as prohibited content",
        "SPII" => "the answer contained sensitive personal information",
        "IMAGE_SAFETY" | "IMAGE_PROHIBITED_CONTENT" | "IMAGE_RECITATION" => {
            "a generated image was blocked"
        }
        _ => return None,
    })
}

/// What a prompt block reason means.
fn block_reason_meaning(reason: &str) -> &'static str {
    match reason {
        "SAFETY" => "its safety filters flagged the prompt",
        "BLOCKLIST" => "the prompt contains a blocklisted term",
        "PROHIBITED_CONTENT" => "the prompt was flagged as prohibited content",
        "IMAGE_SAFETY" => "an image in the prompt was flagged as unsafe",
        _ => "the prompt was refused",
    }
}

/// One entry per decoding step: the chosen token and the most likely ones at its place.
fn token_logprobs(result: LogprobsResult) -> impl Iterator<Item = TokenLogprob> {
    let mut tops = result.top_candidates.into_iter();
    result.chosen_candidates.into_iter().map(move |chosen| {
        let top_logprobs = tops
            .next()
            .map(|top| {
                top.candidates
                    .into_iter()
                    .map(|alternative| {
                        LogprobAlternative::new(alternative.token, alternative.log_probability)
                    })
                    .collect()
            })
            .unwrap_or_default();
        TokenLogprob {
            token: chosen.token,
            logprob: chosen.log_probability,
            top_logprobs,
        }
    })
}

/// Reads a success reply whole.
pub(crate) fn parse_reply(
    raw: &RawResponse,
    requested_model: &str,
    secret: Option<&str>,
) -> Result<ProviderReply, ProviderError> {
    let invalid =
        |what: &str| invalid_response(GEMINI_PROVIDER_NAME, raw, what, REQUEST_ID_HEADER, secret);
    let response: GenerateResponse = serde_json::from_slice(&raw.body).map_err(|err| {
        invalid(&format!(
            "the reply is not a GenerateContentResponse ({err})"
        ))
    })?;
    let mut parts = ReplyParts::default();
    parts.add(response, None);
    if !parts.saw_candidate && parts.block_reason.is_none() {
        return Err(invalid(
            "the reply has no candidates and no promptFeedback.blockReason",
        ));
    }
    Ok(parts.into_reply(
        requested_model,
        raw.request_id(REQUEST_ID_HEADER).map(str::to_owned),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn reply(body: Value) -> ProviderReply {
        let response: GenerateResponse = serde_json::from_value(body).unwrap();
        let mut parts = ReplyParts::default();
        parts.add(response, None);
        parts.into_reply("gemini-test", None)
    }

    fn finishing(reason: &str) -> ProviderReply {
        reply(json!({"candidates": [{
            "content": {"role": "model", "parts": [{"text": "partial"}]},
            "finishReason": reason
        }]}))
    }

    #[test]
    fn thought_parts_are_skipped_and_usage_counts_thinking_as_output() {
        let reply = reply(json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"text": "plan", "thought": true}, {"text": "{\"value\": "}, {"text": "1}"}
            ]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 41, "candidatesTokenCount": 19,
                "thoughtsTokenCount": 88, "cachedContentTokenCount": 32, "totalTokenCount": 148},
            "modelVersion": "gemini-2.5-flash", "responseId": "r1"
        }));
        assert_eq!(reply.text, "{\"value\": 1}");
        assert_eq!(reply.usage.input_tokens, 41);
        assert_eq!(reply.usage.cached_input_tokens, 32);
        assert_eq!(reply.usage.output_tokens, 107);
        assert_eq!(reply.model, "gemini-2.5-flash");
        assert_eq!(reply.response_id.as_deref(), Some("r1"));
        assert_eq!(reply.stop_reason.as_deref(), Some("STOP"));
        assert!(!reply.truncated && reply.refusal.is_none());
    }

    #[test]
    fn every_finish_reason_is_mapped() {
        for reason in ["STOP", "FINISH_REASON_UNSPECIFIED"] {
            let reply = finishing(reason);
            assert!(!reply.truncated && reply.refusal.is_none(), "{reason}");
            assert_eq!(reply.text, "partial");
        }
        for reason in [
            "SAFETY",
            "RECITATION",
            "LANGUAGE",
            "BLOCKLIST",
            "PROHIBITED_CONTENT",
            "SPII",
            "IMAGE_SAFETY",
            "IMAGE_PROHIBITED_CONTENT",
            "IMAGE_RECITATION",
        ] {
            let reply = finishing(reason);
            let refusal = reply.refusal.unwrap_or_default();
            assert!(refusal.contains(reason), "{reason}: {refusal}");
            assert!(reply.text.is_empty() && !reply.truncated, "{reason}");
        }
        for reason in [
            "MAX_TOKENS",
            "OTHER",
            "MALFORMED_FUNCTION_CALL",
            "UNEXPECTED_TOOL_CALL",
            "TOO_MANY_TOOL_CALLS",
            "IMAGE_OTHER",
            "NO_IMAGE",
            "A_REASON_FROM_THE_FUTURE",
        ] {
            let reply = finishing(reason);
            assert!(reply.truncated && reply.refusal.is_none(), "{reason}");
            assert_eq!(reply.stop_reason.as_deref(), Some(reason));
            assert_eq!(reply.text, "partial");
        }
    }

    #[test]
    fn a_finish_message_is_the_refusal_when_given() {
        let reply = reply(json!({"candidates": [{
            "finishReason": "SAFETY", "finishMessage": "Blocked for safety."
        }]}));
        assert_eq!(reply.refusal.as_deref(), Some("Blocked for safety."));
    }

    #[test]
    fn a_blocked_prompt_is_a_refusal() {
        let reply = reply(json!({
            "promptFeedback": {"blockReason": "SAFETY", "safetyRatings": [
                {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}]},
            "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 12},
            "modelVersion": "gemini-2.5-flash"
        }));
        let refusal = reply.refusal.unwrap();
        assert!(refusal.contains("blockReason: SAFETY"), "{refusal}");
        assert_eq!(reply.stop_reason.as_deref(), Some("SAFETY"));
        assert_eq!(reply.usage.input_tokens, 12);
        assert_eq!(reply.usage.output_tokens, 0);
    }

    #[test]
    fn log_probabilities_pair_chosen_and_top_candidates() {
        let reply = reply(json!({"candidates": [{
            "content": {"parts": [{"text": "yes"}]},
            "finishReason": "MAX_TOKENS",
            "logprobsResult": {
                "topCandidates": [{"candidates": [
                    {"token": "yes", "tokenId": 1},
                    {"token": "no", "tokenId": 2, "logProbability": -3.5}
                ]}],
                "chosenCandidates": [{"token": "yes", "tokenId": 1}]
            }
        }]}));
        let logprobs = reply.logprobs.unwrap();
        assert_eq!(logprobs.len(), 1);
        // Proto3 JSON leaves a log-probability of 0.0 out.
        assert_eq!(logprobs[0].logprob, 0.0);
        assert_eq!(
            logprobs[0].top_logprobs,
            [
                LogprobAlternative::new("yes", 0.0),
                LogprobAlternative::new("no", -3.5)
            ]
        );
    }
}
