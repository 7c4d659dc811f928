//! A request's outcome as a batch job stores it (and as the scripted batch API carries
//! it): everything the attempt loop reads from a reply or an error.

use serde::{Deserialize, Serialize};

use super::Outcome;
use crate::provider::{ProviderError, ProviderErrorKind, ProviderReply, TokenLogprob};
use crate::result::Usage;

/// An outcome as stored: everything the attempt loop reads from a reply or an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum StoredOutcome {
    Reply {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refusal: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        refusal_categories: Vec<String>,
        #[serde(default)]
        truncated: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<String>,
        #[serde(default)]
        usage: StoredUsage,
        #[serde(default)]
        model: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
        /// The output tokens' log-probabilities, when the request asked for them: what a
        /// decision question's answer is read from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        logprobs: Option<Vec<TokenLogprob>>,
    },
    Error {
        kind: String,
        provider: String,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        transient: bool,
    },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredUsage {
    input: u64,
    output: u64,
    #[serde(default)]
    cached: u64,
    #[serde(default)]
    cache_write: u64,
    #[serde(default)]
    reasoning: u64,
}

impl StoredOutcome {
    pub(crate) fn of(outcome: &Outcome) -> Self {
        match outcome {
            Ok(reply) => StoredOutcome::Reply {
                text: reply.text.clone(),
                refusal: reply.refusal.clone(),
                refusal_categories: reply.refusal_categories.clone(),
                truncated: reply.truncated,
                stop_reason: reply.stop_reason.clone(),
                usage: StoredUsage {
                    input: reply.usage.input_tokens,
                    output: reply.usage.output_tokens,
                    cached: reply.usage.cached_input_tokens,
                    cache_write: reply.usage.cache_write_input_tokens,
                    reasoning: reply.usage.reasoning_tokens,
                },
                model: reply.model.clone(),
                request_id: reply.request_id.clone(),
                logprobs: reply.logprobs.clone(),
            },
            Err(error) => StoredOutcome::Error {
                kind: error.kind().as_str().to_owned(),
                provider: error.provider().to_owned(),
                message: error.message().to_owned(),
                status: error.status(),
                transient: error.is_transient(),
            },
        }
    }

    pub(crate) fn into_outcome(self) -> Outcome {
        match self {
            StoredOutcome::Reply {
                text,
                refusal,
                refusal_categories,
                truncated,
                stop_reason,
                usage,
                model,
                request_id,
                logprobs,
            } => Ok(ProviderReply {
                text,
                refusal,
                refusal_categories,
                truncated,
                stop_reason,
                usage: Usage {
                    input_tokens: usage.input,
                    output_tokens: usage.output,
                    cached_input_tokens: usage.cached,
                    cache_write_input_tokens: usage.cache_write,
                    reasoning_tokens: usage.reasoning,
                },
                model,
                request_id,
                response_id: None,
                logprobs,
                replayed: false,
                route: None,
            }),
            StoredOutcome::Error {
                kind,
                provider,
                message,
                status,
                transient,
            } => {
                let kind = ProviderErrorKind::from_name(&kind).unwrap_or(ProviderErrorKind::Server);
                let mut error =
                    ProviderError::new(kind, provider, message).with_transient(transient);
                if let Some(status) = status {
                    error = error.with_status(status);
                }
                Err(error)
            }
        }
    }
}
