//! The failure summary: a failed call told to a person, attempt by attempt. It sits
//! above `result`, whose record it reads.

use crate::result::{AIResult, AttemptRecord, IssueSource, ResultIssue};

impl<T> AIResult<T> {
    /// Why the call failed, for a person: how many attempts were made and why each
    /// failed (consecutive attempts that failed alike are told once), then what stopped
    /// the loop; empty on success.
    ///
    /// The feedback the verifier, the validators and the judge wrote for the model is
    /// quoted as such (`feedback to the model: "…"`): it is addressed to the model, the
    /// rest of the sentence to the reader. [`AIResult::issues`] holds every issue as it
    /// was raised.
    pub fn failure_summary(&self) -> String {
        if self.is_success() {
            return String::new();
        }
        failure_summary(&self.attempts, &self.issues)
    }
}

/// The summary of a call that made `attempts` and raised `issues`.
pub(crate) fn failure_summary(attempts: &[AttemptRecord], issues: &[ResultIssue]) -> String {
    if issues.is_empty() {
        return "the call produced no value".to_owned();
    }
    let made = attempts_made(attempts, issues);
    // Each attempt made, with why it failed; then the issues raised past the last one
    // (a guardrail that stopped the loop before the next attempt).
    let mut told: Vec<(u32, u32, String)> = Vec::new();
    for number in 1..=made {
        let reason = reasons(issues.iter().filter(|issue| issue.attempt == number));
        let reason = if reason.is_empty() {
            "no reason was recorded".to_owned()
        } else {
            reason
        };
        match told.last_mut() {
            Some((_, last, previous)) if *previous == reason => *last = number,
            _ => told.push((number, number, reason)),
        }
    }
    let stopped = reasons(issues.iter().filter(|issue| issue.attempt > made));
    let mut summary = match made {
        0 => "no attempt was made".to_owned(),
        1 => "the one attempt failed".to_owned(),
        n => format!("all {n} attempts failed"),
    };
    let parts: Vec<String> = told
        .into_iter()
        .enumerate()
        .map(|(index, (first, last, reason))| {
            // The first follows a colon, the others a full stop.
            let word = if index == 0 { "attempt" } else { "Attempt" };
            match (made, last - first) {
                (1, _) => reason,
                (_, 0) => format!("{word} {first}: {reason}"),
                (_, 1) => format!("{word}s {first} and {last}: {reason}"),
                _ => format!("{word}s {first} to {last}: {reason}"),
            }
        })
        .collect();
    if !parts.is_empty() {
        summary.push_str(": ");
        summary.push_str(&parts.join(". "));
    }
    if !stopped.is_empty() {
        summary.push_str(if made == 0 { ": " } else { ". Then " });
        summary.push_str(&stopped);
    }
    summary
}

/// The attempts made: those recorded, or for a result without records (a decision's
/// batch item), the attempts its issues name, issues raised before any model call (the
/// request could not be built, a guardrail stopped the loop) aside.
fn attempts_made(attempts: &[AttemptRecord], issues: &[ResultIssue]) -> u32 {
    if !attempts.is_empty() {
        return u32::try_from(attempts.len()).unwrap_or(u32::MAX);
    }
    issues
        .iter()
        .filter(|issue| !matches!(issue.source, IssueSource::Input | IssueSource::Guardrail))
        .map(|issue| issue.attempt)
        .max()
        .unwrap_or(0)
}

/// Why `issues` (one attempt's) failed: each source once, in order of first appearance,
/// with its distinct messages.
fn reasons<'a>(issues: impl Iterator<Item = &'a ResultIssue>) -> String {
    let mut by_source: Vec<(IssueSource, Vec<&str>)> = Vec::new();
    for issue in issues {
        let message = issue.message.trim();
        match by_source
            .iter_mut()
            .find(|(source, _)| *source == issue.source)
        {
            Some((_, messages)) => {
                if !messages.contains(&message) {
                    messages.push(message);
                }
            }
            None => by_source.push((issue.source, vec![message])),
        }
    }
    let told: Vec<String> = by_source
        .into_iter()
        .map(|(source, messages)| {
            if to_the_model(source) {
                let quoted: Vec<String> = messages.iter().map(|m| format!("\"{m}\"")).collect();
                format!(
                    "{} (feedback to the model: {})",
                    what_failed(source),
                    quoted.join(", ")
                )
            } else {
                format!("{}: {}", what_failed(source), messages.join("; "))
            }
        })
        .collect();
    told.join("; ")
}

/// Whether issues from `source` are written for the model, as feedback on its reply.
fn to_the_model(source: IssueSource) -> bool {
    matches!(
        source,
        IssueSource::Verification | IssueSource::Validator | IssueSource::Judge
    )
}

/// What failed, for a person, by the check that raised the issue.
fn what_failed(source: IssueSource) -> &'static str {
    match source {
        IssueSource::Provider => "the provider failed",
        IssueSource::Verification => "the reply did not verify",
        IssueSource::Validator => "a validator rejected the answer",
        IssueSource::Judge => "the judge rejected the answer",
        IssueSource::Guardrail => "a guardrail stopped the call",
        IssueSource::Input => "the request could not be built",
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::result::Usage;

    use super::*;

    fn issue(source: IssueSource, message: &str, attempt: u32) -> ResultIssue {
        ResultIssue::new(source, message, attempt)
    }

    fn failed(attempts: u32, issues: Vec<ResultIssue>) -> AIResult<u8> {
        AIResult {
            value: None,
            issues,
            attempts: (1..=attempts).map(AttemptRecord::new).collect(),
            usage: Usage::default(),
            elapsed: Duration::ZERO,
        }
    }

    const MISSING: &str = "The required field \"total\" is missing from Invoice; include it.";

    #[test]
    fn every_attempt_is_counted_and_the_models_feedback_is_quoted_as_such() {
        let result = failed(
            3,
            vec![
                issue(IssueSource::Verification, MISSING, 1),
                issue(IssueSource::Verification, MISSING, 2),
                issue(IssueSource::Provider, "openai: rate limited (429)", 3),
            ],
        );
        assert_eq!(
            result.failure_summary(),
            format!(
                "all 3 attempts failed: attempts 1 and 2: the reply did not verify (feedback \
                 to the model: \"{MISSING}\"). Attempt 3: the provider failed: openai: rate \
                 limited (429)"
            )
        );
    }

    #[test]
    fn one_attempt_and_a_guardrail_that_stopped_the_next() {
        let result = failed(
            1,
            vec![
                issue(
                    IssueSource::Validator,
                    "3 is odd; return an even number.",
                    1,
                ),
                issue(IssueSource::Judge, "The total is wrong.", 1),
                issue(
                    IssueSource::Guardrail,
                    "Stopped: the model-call ceiling of 2 was reached before attempt 2.",
                    2,
                ),
            ],
        );
        assert_eq!(
            result.failure_summary(),
            "the one attempt failed: a validator rejected the answer (feedback to the model: \
             \"3 is odd; return an even number.\"); the judge rejected the answer (feedback to \
             the model: \"The total is wrong.\"). Then a guardrail stopped the call: Stopped: \
             the model-call ceiling of 2 was reached before attempt 2."
        );
    }

    #[test]
    fn a_request_that_could_not_be_built_made_no_attempt() {
        let result = failed(
            0,
            vec![issue(IssueSource::Input, "the input is over 1 MiB", 1)],
        );
        assert_eq!(
            result.failure_summary(),
            "no attempt was made: the request could not be built: the input is over 1 MiB"
        );
    }

    #[test]
    fn results_without_attempt_records_count_the_attempts_their_issues_name() {
        let result = failed(0, vec![issue(IssueSource::Provider, "timed out", 1)]);
        assert_eq!(
            result.failure_summary(),
            "the one attempt failed: the provider failed: timed out"
        );
        assert_eq!(
            failed(0, vec![]).failure_summary(),
            "the call produced no value"
        );
    }
}
