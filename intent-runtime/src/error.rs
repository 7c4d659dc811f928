//! The error a call returns when it produced no value.

use crate::result::ResultIssue;

/// Why an intent call produced no value.
///
/// Its `Display` is the failure summary: the distinct issue messages of every attempt,
/// so that logging the error tells a person what went wrong.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum IntentError {
    /// Every attempt failed, a guardrail stopped the call, or the request could not be
    /// built. The issues say why.
    #[error("{summary}")]
    Failed {
        /// The distinct issue messages, joined.
        summary: String,
        /// Every issue, in order.
        issues: Vec<ResultIssue>,
    },
}

impl IntentError {
    /// The issues behind the error.
    pub fn issues(&self) -> &[ResultIssue] {
        match self {
            IntentError::Failed { issues, .. } => issues,
        }
    }
}
