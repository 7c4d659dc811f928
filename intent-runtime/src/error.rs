//! The error a call returns when it produced no value, and the conversion of a call's
//! record into it. It sits above `result`: the record knows nothing of this error.

use crate::result::{AIResult, ResultIssue};

/// Implements `Debug` for error types as their message.
///
/// `fn main() -> Result<(), Box<dyn Error>>` prints a returned error with `Debug`
/// (`Error: {e:?}`), as do `unwrap()`, `expect()` and `tracing`'s `?e`: there a person must
/// read the sentence that says what to set or do, not a variant's name and fields. The
/// structured details stay reachable through each type's accessors and `match`.
macro_rules! debug_as_message {
    ($($error:ty),+ $(,)?) => {$(
        impl ::std::fmt::Debug for $error {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Display::fmt(self, f)
            }
        }
    )+};
}
pub(crate) use debug_as_message;

debug_as_message!(IntentError);

/// Why an intent call produced no value.
///
/// Its `Display` is the failure summary ([`AIResult::failure_summary`]): how many
/// attempts were made and why each failed, so that logging the error tells a person what
/// went wrong.
#[derive(Clone, thiserror::Error)]
#[non_exhaustive]
pub enum IntentError {
    /// Every attempt failed, a guardrail stopped the call, or the request could not be
    /// built. The issues say why.
    #[error("{summary}")]
    Failed {
        /// The failure summary: the attempts made and why each failed.
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
                summary: self.failure_summary(),
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

    #[test]
    fn an_error_returned_from_main_prints_its_sentence() {
        // `main` returning `Err(e)` prints `Error: {e:?}`: the sentence, never a variant name.
        let errors: Vec<Box<dyn std::error::Error>> = vec![
            Box::new(crate::BuildError::MissingProvider),
            Box::new(crate::provider::ProviderConfigError::NoProvider),
            Box::new(
                crate::provider::ProviderError::new(
                    crate::provider::ProviderErrorKind::RateLimited,
                    "openai",
                    "slow down",
                )
                .with_status(429),
            ),
            Box::new(failed(&["the reply was empty"]).into_result().unwrap_err()),
        ];
        for error in errors {
            let shown = format!("{error:?}");
            assert_eq!(shown, error.to_string());
            assert!(shown.contains(' '), "a sentence, not a name: {shown}");
        }
        let shown = format!("{:?}", crate::provider::ProviderConfigError::NoProvider);
        assert!(shown.contains("set OPENAI_API_KEY"), "{shown}");
    }

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
        assert_eq!(
            err.to_string(),
            "the one attempt failed: the reply did not verify (feedback to the model: \"not valid JSON\")"
        );
        assert_eq!(err.issues().len(), 1);
    }

    #[test]
    fn into_result_without_issues_still_explains() {
        let err = failed(&[]).into_result().unwrap_err();
        assert_eq!(err.to_string(), "the call produced no value");
    }
}
