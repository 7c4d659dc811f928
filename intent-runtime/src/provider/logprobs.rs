//! Token log-probabilities as providers report them: the sampled token and the most
//! likely alternatives at its position.

use serde::{Deserialize, Serialize};

/// One alternative at a token position, with its natural-log probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogprobAlternative {
    /// The token's text, as the tokenizer produced it (a leading space included).
    pub token: String,
    /// `ln p` of this token at this position.
    pub logprob: f64,
}

impl LogprobAlternative {
    /// An alternative with this token text and log-probability.
    pub fn new(token: impl Into<String>, logprob: f64) -> Self {
        Self {
            token: token.into(),
            logprob,
        }
    }
}

/// One output token: the token sampled, its log-probability, and the most likely
/// alternatives at its position (most likely first, as the provider sent them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    /// The token's text.
    pub token: String,
    /// `ln p` of the sampled token.
    pub logprob: f64,
    /// The most likely tokens at this position, the sampled one usually among them.
    #[serde(default)]
    pub top_logprobs: Vec<LogprobAlternative>,
}
