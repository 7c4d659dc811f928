//! The harness: runs a dataset through any async task with bounded concurrency, grades
//! every answer, and collects the report.

use std::any::Any;
use std::fmt::Display;
use std::future::Future;
use std::io::IsTerminal;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use futures_util::{FutureExt, StreamExt, stream};
use indicatif::{ProgressBar, ProgressStyle};
use intent_rs::decision::{DecisionError, FailureKind};
use intent_rs::schema::{SchemaError, TargetSchema, target_schema};
use intent_rs::schemars::JsonSchema;
use intent_rs::{AIResult, AttemptRecord, CostTally, IssueSource};
use serde::Serialize;
use serde_json::Value;

use crate::dataset::{AnswerCheck, Case, Dataset};
use crate::error::EvalError;
use crate::external::ExternalValidator;
use crate::judge::Judge;
use crate::report::{CaseIssue, CaseReport, Report, Status};
use crate::validate::Validators;
use crate::validation::{CaseContext, Tokens};

/// The default number of cases run at once.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// What a task produced for one case, in the form the harness grades and reports.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskOutcome {
    /// The answer as JSON, or why there is none.
    pub answer: Result<Value, String>,
    /// Attempts the call made.
    pub attempts: u32,
    /// Repairs the parser made to the replies, as JSON.
    pub repairs: Vec<Value>,
    /// Issues met on the way (also on success: those of retried attempts).
    pub issues: Vec<CaseIssue>,
    /// Tokens the call used.
    pub tokens: Tokens,
    /// What the call cost, as far as the client's price table knows (nothing known for
    /// a plain `Result`, which keeps no record of its calls).
    pub cost: CostTally,
    /// Whether the task has no answer because the provider failed (an outage, a rate
    /// limit, a dropped connection, a refused key) rather than because the model answered
    /// wrongly: such a case could not be graded, and is reported as an error, not a
    /// failure.
    pub provider_failed: bool,
}

/// What a task may return: a generated client's `AIResult<T>` (with its attempts,
/// repairs and issues) or a plain `Result<T, E>` (one attempt).
///
/// A provider failure is told from a wrong answer for an `AIResult` (its last attempt
/// got no reply from any model) and for a decision method's `Result<_, DecisionError>`
/// (any failure but an invalid response); another `Result`'s error counts as the task's
/// failure.
pub trait TaskOutput {
    /// The outcome the harness grades.
    fn into_outcome(self) -> TaskOutcome;

    /// The answer type's schema, against which [`Evaluation::run`] checks every case's
    /// expected values before the first task runs; `None` checks nothing.
    fn answer_schema() -> Option<Result<Arc<TargetSchema>, SchemaError>>
    where
        Self: Sized,
    {
        None
    }
}

impl<T: Serialize + JsonSchema + 'static> TaskOutput for AIResult<T> {
    fn answer_schema() -> Option<Result<Arc<TargetSchema>, SchemaError>> {
        Some(target_schema::<T>())
    }

    fn into_outcome(self) -> TaskOutcome {
        let answer = match &self.value {
            Some(value) => serde_json::to_value(value)
                .map_err(|error| format!("the answer cannot be written as JSON: {error}")),
            None => Err(self.failure_summary()),
        };
        TaskOutcome {
            answer,
            attempts: u32::try_from(self.attempts.len()).unwrap_or(u32::MAX),
            repairs: self
                .attempts
                .iter()
                .flat_map(|attempt| &attempt.repairs)
                .filter_map(|repair| serde_json::to_value(repair).ok())
                .collect(),
            issues: self
                .issues
                .iter()
                .map(|issue| CaseIssue {
                    source: issue.source.to_string(),
                    message: issue.message.clone(),
                    attempt: issue.attempt,
                })
                .collect(),
            tokens: self.usage.into(),
            cost: self.cost_tally(),
            provider_failed: self.value.is_none() && ended_without_a_reply(&self.attempts),
        }
    }
}

/// Whether the last attempt ended on a provider failure: it has a provider issue and no
/// model answered it (a reply, even a refusal, names the model that answered).
fn ended_without_a_reply(attempts: &[AttemptRecord]) -> bool {
    attempts.last().is_some_and(|attempt| {
        attempt.model.is_empty()
            && attempt
                .issues
                .iter()
                .any(|issue| issue.source == IssueSource::Provider)
    })
}

impl<T: Serialize + JsonSchema + 'static, E: Display + 'static> TaskOutput for Result<T, E> {
    fn answer_schema() -> Option<Result<Arc<TargetSchema>, SchemaError>> {
        Some(target_schema::<T>())
    }

    fn into_outcome(self) -> TaskOutcome {
        // A decision that failed for any reason but the model's reply (a provider error,
        // or a question the client cannot ask) has no answer to grade.
        let provider_failed = self.as_ref().err().is_some_and(|error| {
            (error as &dyn Any)
                .downcast_ref::<DecisionError>()
                .is_some_and(|error| error.kind() != FailureKind::InvalidResponse)
        });
        TaskOutcome {
            provider_failed,
            answer: match self {
                Ok(value) => serde_json::to_value(&value)
                    .map_err(|error| format!("the answer cannot be written as JSON: {error}")),
                Err(error) => Err(error.to_string()),
            },
            attempts: 1,
            repairs: Vec::new(),
            issues: Vec::new(),
            tokens: Tokens::default(),
            cost: CostTally::default(),
        }
    }
}

/// Whether to draw a progress bar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Progress {
    /// On an interactive terminal only: never in CI logs or pipes (the default).
    #[default]
    Auto,
    /// Never.
    Hidden,
}

/// An evaluation: how to run a dataset, and how to grade it.
#[derive(Debug, Clone)]
pub struct Evaluation {
    name: String,
    concurrency: usize,
    validators: Validators,
    prompt: String,
    response_format: Value,
    progress: Progress,
}

impl Evaluation {
    /// An evaluation named `name` (the report's name), with value match and schema
    /// validation only, [`DEFAULT_CONCURRENCY`] cases at once.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            concurrency: DEFAULT_CONCURRENCY,
            validators: Validators::new(),
            prompt: String::new(),
            response_format: Value::String("text".into()),
            progress: Progress::Auto,
        }
    }

    /// At most `cases` tasks at once (at least one).
    pub fn concurrency(mut self, cases: usize) -> Self {
        self.concurrency = cases.max(1);
        self
    }

    /// Adds a judge cases can name in their rules.
    pub fn judge(mut self, judge: Judge) -> Self {
        self.validators = self.validators.judge(judge);
        self
    }

    /// Adds an external validator cases can name in their rules.
    pub fn external(mut self, validator: ExternalValidator) -> Self {
        self.validators = self.validators.external(validator);
        self
    }

    /// What the task is asked to do (typically the method's intent), shown to judges and
    /// external validators with each case's input as the original prompt.
    pub fn prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = prompt.into();
        self
    }

    /// The expected response format: the answer's JSON Schema (`"text"` by default).
    pub fn response_format(mut self, format: Value) -> Self {
        self.response_format = format;
        self
    }

    /// Whether to draw a progress bar.
    pub fn progress(mut self, progress: Progress) -> Self {
        self.progress = progress;
        self
    }

    /// Runs every case of `dataset` through `task` and grades the answers.
    ///
    /// Before any task runs, every case's rules are checked against the configured
    /// judges and external validators (unknown names and variants, malformed verdict
    /// schemas, templates that do not compile are errors), and every expected value of a
    /// case graded by value match against the task's answer type (a misspelt field, an
    /// enum member that does not exist: an error naming the file, the line and the
    /// field, however the dataset was read). Then at most `concurrency`
    /// tasks run at once; a task that panics is that case's failure, and a validator
    /// that cannot grade is that case's error: the other cases still run.
    pub async fn run<'d, I, F, Fut, O>(
        &self,
        dataset: &'d Dataset<I>,
        task: F,
    ) -> Result<Report, EvalError>
    where
        I: Serialize,
        F: Fn(&'d I) -> Fut,
        Fut: Future<Output = O>,
        O: TaskOutput,
    {
        self.validators
            .check(dataset.cases.iter().map(|case| &case.rules))?;
        check_expected_values::<O, I>(dataset)?;
        let started = Instant::now();
        let bar = self.progress_bar(dataset.len());
        let task = &task;
        let bar_ref = &bar;
        let mut cases: Vec<(usize, CaseReport)> = stream::iter(dataset.cases.iter().enumerate())
            .map(|(index, case)| async move {
                let report = self.run_case(case, task).await;
                bar_ref.inc(1);
                (index, report)
            })
            .buffer_unordered(self.concurrency)
            .collect()
            .await;
        bar.finish_and_clear();
        cases.sort_by_key(|(index, _)| *index);
        Ok(Report::new(
            &self.name,
            &dataset.name,
            cases.into_iter().map(|(_, case)| case).collect(),
            started.elapsed(),
        ))
    }

    fn progress_bar(&self, cases: usize) -> ProgressBar {
        if !draws_progress(self.progress, std::io::stderr().is_terminal()) {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new(cases as u64);
        if let Ok(style) =
            ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} cases, {elapsed}, eta {eta}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(self.name.clone());
        bar
    }

    async fn run_case<'d, I, F, Fut, O>(&self, case: &'d Case<I>, task: &F) -> CaseReport
    where
        I: Serialize,
        F: Fn(&'d I) -> Fut,
        Fut: Future<Output = O>,
        O: TaskOutput,
    {
        let started = Instant::now();
        // The task is polled here, so a panic unwinds into this future: caught, it fails
        // this case and leaves the others running.
        let outcome = AssertUnwindSafe(async { task(&case.input).await.into_outcome() })
            .catch_unwind()
            .await;
        let latency = started.elapsed();
        let mut report = CaseReport::new(case, latency);
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(panic) => {
                report.status = Status::Failed;
                report.message = Some(format!("the task panicked: {}", panic_message(&panic)));
                return report;
            }
        };
        report.attempts = outcome.attempts;
        report.repairs = outcome.repairs;
        report.issues = outcome.issues;
        report.tokens = outcome.tokens;
        report.cost = outcome.cost;
        let answer = match outcome.answer {
            Ok(answer) => answer,
            Err(reason) if outcome.provider_failed => {
                report.status = Status::Error;
                report.message = Some(format!("not graded, the provider failed: {reason}"));
                return report;
            }
            Err(reason) => {
                report.status = Status::Failed;
                report.message = Some(format!("no answer: {reason}"));
                return report;
            }
        };
        let prompt = self.original_prompt(&case.input);
        let context = CaseContext {
            name: &case.name,
            expected: &case.expected,
            actual: &answer,
            prompt: &prompt,
            response_format: &self.response_format,
            metadata: &case.metadata,
            rules: &case.rules,
        };
        match self.validators.validate(&context).await {
            Ok(validation) => {
                report.status = if validation.passed {
                    Status::Passed
                } else {
                    Status::Failed
                };
                report.validation = Some(validation);
            }
            Err(error) => {
                report.status = Status::Error;
                report.message = Some(error.to_string());
            }
        }
        report.answer = Some(answer);
        report
    }

    fn original_prompt<I: Serialize>(&self, input: &I) -> String {
        let input = serde_json::to_string_pretty(input).unwrap_or_default();
        if self.prompt.is_empty() {
            format!("Input:\n{input}")
        } else {
            format!("{}\n\nInput:\n{input}", self.prompt)
        }
    }
}

/// Checks `dataset`'s expected values against `O`'s answer type. Not async: the check's
/// compiled schemas never live across an await of the run.
fn check_expected_values<O: TaskOutput, I>(dataset: &Dataset<I>) -> Result<(), EvalError> {
    let Some(schema) = O::answer_schema() else {
        return Ok(());
    };
    let schema = schema.map_err(|error| EvalError::MalformedSchema(error.to_string()))?;
    dataset.check_expected(&AnswerCheck::new(&schema))
}

/// A bar is drawn only for a person watching: CI logs and pipes get none, so they are
/// not filled with redraw sequences.
fn draws_progress(progress: Progress, interactive: bool) -> bool {
    progress == Progress::Auto && interactive
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(message) = panic.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = panic.downcast_ref::<String>() {
        message.clone()
    } else {
        "(a panic payload that is not a string)".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_bar_is_drawn_on_a_terminal_only() {
        assert!(draws_progress(Progress::Auto, true));
        assert!(!draws_progress(Progress::Auto, false));
        assert!(!draws_progress(Progress::Hidden, true));
    }
}
