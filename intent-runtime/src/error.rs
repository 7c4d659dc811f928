//! The error a call returns when it produced no value, and the conversion of a call's
//! record into it. It sits above `result` and `provider`: the record knows nothing of
//! this error.

use std::fmt;
use std::time::Duration;

use crate::provider::ProviderError;
use crate::result::{
    AIResult, FailureKind, Guardrail, IssueDetail, IssueSource, NotSent, ProviderFacts, Refusal,
    ResultIssue, SchemaMismatch,
};

/// Why an intent call produced no value: a [`FailureKind`] to match on, the typed facts
/// of the issue that ended the call, and every issue.
///
/// Its `Display` is the failure summary ([`AIResult::failure_summary`]): how many attempts
/// were made and why each failed. Its `Debug` (what `main` prints for a returned error)
/// is the same sentence followed by the kind. Its [`source`](std::error::Error::source)
/// is the error that ended the call, when one did: a
/// [`ProviderError`] (whose own source is the transport's error), an
/// [`InputError`](crate::input::InputError), a
/// [`RateLimitError`](crate::limits::RateLimitError).
///
/// ```
/// # use intent_rs::{FailureKind, IntentError};
/// fn what_to_do(error: &IntentError) -> String {
///     match error.kind() {
///         FailureKind::RateLimited => format!("wait {:?}", error.retry_after()),
///         FailureKind::Refused => format!("refused: {:?}", error.refusal()),
///         FailureKind::VerificationExhausted => format!("{} issues", error.last_attempt_issues().len()),
///         _ => error.to_string(),
///     }
/// }
/// ```
#[derive(Clone)]
pub struct IntentError {
    kind: FailureKind,
    summary: String,
    issues: Vec<ResultIssue>,
    /// The index in `issues` of the issue that ended the call.
    decisive: Option<usize>,
    /// The number of the last attempt made (0 when none was).
    last_attempt: u32,
    attempts: u32,
    model_calls: u32,
}

impl fmt::Display for IntentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary)
    }
}

impl fmt::Debug for IntentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.summary, self.kind.as_str())
    }
}

impl std::error::Error for IntentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        let cause = self.decisive_issue()?.cause.as_ref()?;
        Some(cause.error() as _)
    }
}

impl IntentError {
    /// Why the call failed.
    pub fn kind(&self) -> FailureKind {
        self.kind
    }

    /// The failure summary, for people (the error's `Display`).
    pub fn summary(&self) -> &str {
        &self.summary
    }

    /// Every issue of every attempt, in order, and those raised when the loop stopped.
    pub fn issues(&self) -> &[ResultIssue] {
        &self.issues
    }

    /// The issues of the last attempt made, and any raised when the loop stopped after
    /// it: what the call ended on.
    pub fn last_attempt_issues(&self) -> &[ResultIssue] {
        let from = self
            .issues
            .iter()
            .position(|issue| issue.attempt >= self.last_attempt)
            .unwrap_or(self.issues.len());
        &self.issues[from..]
    }

    /// The issue that ended the call, when one did.
    pub fn decisive_issue(&self) -> Option<&ResultIssue> {
        self.decisive.and_then(|index| self.issues.get(index))
    }

    /// Attempts made (a model was asked, or the cache answered).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Model calls made, judge and gate calls included: zero when nothing was sent.
    pub fn model_calls(&self) -> u32 {
        self.model_calls
    }

    /// Whether calling again later may succeed (a rate limit, an outage, a timeout, a
    /// dropped connection).
    pub fn is_transient(&self) -> bool {
        self.kind.is_transient()
    }

    /// The refusal's reason and categories, for [`FailureKind::Refused`].
    pub fn refusal(&self) -> Option<&Refusal> {
        match &self.decisive_issue()?.detail {
            IssueDetail::Refused(refusal) => Some(&**refusal),
            _ => None,
        }
    }

    /// The failed provider call's facts (kind, status, request id, retry-after), when a
    /// provider failure ended the call.
    pub fn provider(&self) -> Option<&ProviderFacts> {
        match &self.decisive_issue()?.detail {
            IssueDetail::Provider(facts) => Some(&**facts),
            _ => None,
        }
    }

    /// The failed provider call, when one ended the call (also the error's `source()`).
    pub fn provider_error(&self) -> Option<&ProviderError> {
        self.decisive_issue()?.cause.as_ref()?.downcast_ref()
    }

    /// How long the provider asked to wait before calling again, when it said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.provider()?.retry_after
    }

    /// Why nothing was sent, for [`FailureKind::NotSent`].
    pub fn not_sent(&self) -> Option<&NotSent> {
        match &self.decisive_issue()?.detail {
            IssueDetail::NotSent(reason) => Some(reason),
            _ => None,
        }
    }

    /// Which guardrail stopped the call, for [`FailureKind::Guardrail`].
    pub fn guardrail(&self) -> Option<&Guardrail> {
        match &self.decisive_issue()?.detail {
            IssueDetail::Guardrail(guardrail) => Some(guardrail),
            _ => None,
        }
    }

    /// The schema mismatches of the last attempt: where, what was expected and what was
    /// found (by type).
    pub fn schema_mismatches(&self) -> impl Iterator<Item = &SchemaMismatch> {
        self.last_attempt_issues()
            .iter()
            .filter_map(|issue| match &issue.detail {
                IssueDetail::Schema(mismatch) => Some(&**mismatch),
                _ => None,
            })
    }
}

impl<T> AIResult<T> {
    /// Why the call failed, in the vocabulary every layer shares; `None` on success.
    ///
    /// The issue that ended the call decides: one raised when the loop stopped (a
    /// guardrail), else the last attempt's: a request that could not be built, a
    /// guardrail or shared state that stopped it, a provider failure, refusal or
    /// truncation, a reply that did not verify, the judge's rejection, in that order.
    pub fn failure_kind(&self) -> Option<FailureKind> {
        if self.is_success() {
            return None;
        }
        Some(kind_of(
            &self.issues,
            decisive_issue(&self.issues, self.attempts.len()),
        ))
    }

    /// The value, or an [`IntentError`] with the kind, the failure summary and the
    /// issues.
    pub fn into_result(self) -> Result<T, IntentError> {
        if let Some(value) = self.value {
            return Ok(value);
        }
        let decisive = decisive_issue(&self.issues, self.attempts.len());
        Err(IntentError {
            kind: kind_of(&self.issues, decisive),
            summary: crate::summary::failure_summary(&self.attempts, &self.issues),
            decisive,
            last_attempt: last_attempt(&self.issues, self.attempts.len()).unwrap_or(0),
            attempts: u32::try_from(self.attempts.len()).unwrap_or(u32::MAX),
            model_calls: self.attempts.iter().map(|a| a.model_calls).sum(),
            issues: self.issues,
        })
    }

    /// Same as [`AIResult::into_result`]; reads well at call sites that want the value.
    pub fn value_or_error(self) -> Result<T, IntentError> {
        self.into_result()
    }
}

/// The kind of a failed call whose deciding issue is `decisive` (a call without issues
/// failed its checks without saying more).
fn kind_of(issues: &[ResultIssue], decisive: Option<usize>) -> FailureKind {
    decisive
        .and_then(|index| issues.get(index))
        .map_or(FailureKind::VerificationExhausted, ResultIssue::kind)
}

/// The number of the last attempt of a call that made `attempts` attempts: the count, or
/// for a record without attempts (a batch item, a call stopped before its first), the
/// highest attempt its issues name.
fn last_attempt(issues: &[ResultIssue], attempts: usize) -> Option<u32> {
    if attempts > 0 {
        return Some(u32::try_from(attempts).unwrap_or(u32::MAX));
    }
    issues.iter().map(|issue| issue.attempt).max()
}

/// How strongly an issue of the last attempt explains the failure: what stopped the
/// request outright first, the judge's rejection last.
fn precedence(source: IssueSource) -> u8 {
    match source {
        IssueSource::Input => 0,
        IssueSource::Guardrail => 1,
        IssueSource::Provider => 2,
        IssueSource::Verification | IssueSource::Validator => 3,
        IssueSource::Judge => 4,
    }
}

/// The index of the issue that ended a call that made `attempts` attempts: the last one
/// raised after the last attempt (what stopped the loop), else the first of the last
/// attempt's issues of the highest [`precedence`].
fn decisive_issue(issues: &[ResultIssue], attempts: usize) -> Option<usize> {
    let last_attempt = last_attempt(issues, attempts)?;
    if let Some(index) = issues
        .iter()
        .rposition(|issue| issue.attempt > last_attempt)
    {
        return Some(index);
    }
    (0..issues.len())
        .filter(|&index| issues[index].attempt == last_attempt)
        .min_by_key(|&index| precedence(issues[index].source))
        .or_else(|| issues.len().checked_sub(1))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::result::{AttemptRecord, Usage};

    use super::*;

    #[test]
    fn an_error_returned_from_main_prints_its_sentence() {
        // `main` returning `Err(e)` prints `Error: {e:?}`: the sentence, never a variant name.
        let errors: Vec<Box<dyn std::error::Error>> = vec![
            Box::new(crate::BuildError::MissingProvider),
            Box::new(crate::provider::ProviderConfigError::NoProvider),
            Box::new(failed(&["the reply was empty"]).into_result().unwrap_err()),
        ];
        for error in errors {
            let shown = format!("{error:?}");
            assert!(shown.starts_with(&error.to_string()), "{shown}");
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
    fn into_result_carries_the_summary_and_the_kind() {
        let err = failed(&["not valid JSON"]).into_result().unwrap_err();
        assert_eq!(
            err.to_string(),
            "the one attempt failed: the reply did not verify (feedback to the model: \"not valid JSON\")"
        );
        assert_eq!(err.kind(), FailureKind::VerificationExhausted);
        assert_eq!(err.issues().len(), 1);
        assert!(format!("{err:?}").ends_with("[verification_exhausted]"));
    }

    #[test]
    fn into_result_without_issues_still_explains() {
        let err = failed(&[]).into_result().unwrap_err();
        assert_eq!(err.to_string(), "the call produced no value");
    }

    #[test]
    fn the_stop_after_the_last_attempt_decides_the_kind() {
        let mut result = failed(&["not valid JSON"]);
        result.attempts.push(AttemptRecord::new(1));
        result.issues.push(
            ResultIssue::new(IssueSource::Guardrail, "stopped", 2)
                .with_detail(IssueDetail::Guardrail(Guardrail::ModelCalls { ceiling: 1 })),
        );
        let err = result.into_result().unwrap_err();
        assert_eq!(err.kind(), FailureKind::Guardrail);
        assert_eq!(err.guardrail(), Some(&Guardrail::ModelCalls { ceiling: 1 }));
    }

    #[test]
    fn a_provider_failure_outranks_the_verification_of_its_attempt() {
        let mut result = failed(&["cut JSON"]);
        result.attempts.push(AttemptRecord::new(1));
        result.issues.insert(
            0,
            ResultIssue::new(IssueSource::Provider, "cut off", 1).with_detail(
                IssueDetail::Truncated {
                    stop_reason: Some("length".to_owned()),
                },
            ),
        );
        assert_eq!(result.failure_kind(), Some(FailureKind::Truncated));
    }
}
