//! The error a call returns when it produced no value, and the conversion of a call's
//! record into it. It sits above `result`: the record knows nothing of this error.

use crate::result::{AIResult, ResultIssue};

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

impl<T> AIResult<T> {
    /// The value, or [`IntentError::Failed`] carrying the failure summary and the issues.
    pub fn into_result(self) -> Result<T, IntentError> {
        match self.value {
            Some(value) => Ok(value),
            None => Err(IntentError::Failed {
                summary: if self.issues.is_empty() {
                    "the call produced no value".to_owned()
                } else {
                    self.failure_summary()
                },
                issues: self.issues,
            }),
        }
    }

    /// Same as [`AIResult::into_result`]; reads well at call sites that want the value.
    pub fn value_or_error(self) -> Result<T, IntentError> {
        self.into_result()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::result::{IssueSource, Usage};

    use super::*;

    fn failed(messages: &[&str]) -> AIResult<u8> {
        AIResult {
            value: None,
            issues: messages
                .iter()
                .map(|m| ResultIssue::new(IssueSource::Verification, *m, 1))
                .collect(),
            attempts: vec![],
            usage: Usage::default(),
            elapsed: Duration::ZERO,
        }
    }

    #[test]
    fn into_result_carries_the_summary() {
        let err = failed(&["not valid JSON"]).into_result().unwrap_err();
        assert_eq!(err.to_string(), "not valid JSON");
        assert_eq!(err.issues().len(), 1);
    }

    #[test]
    fn into_result_without_issues_still_explains() {
        let err = failed(&[]).into_result().unwrap_err();
        assert_eq!(err.to_string(), "the call produced no value");
    }
}
