//! The report of an evaluation: per-case records and a summary, printed as a table for
//! people and written as JSON and JUnit XML for machines, from the same data.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use intent_rs::CostTally;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::dataset::Case;
use crate::error::EvalError;
use crate::stats::{Z_95, millis, percentile, wilson_interval};
use crate::validation::{Tokens, ValidationResult};

/// How a case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The answer passed its validator.
    Passed,
    /// The answer was rejected, or the task gave none (it failed or panicked).
    Failed,
    /// The case could not be graded: the provider failed before any model answered (an
    /// outage, a rate limit, a dropped connection), or the validator could not grade the
    /// answer (a judge without a verdict, an external command that crashed). Neither a
    /// pass nor a fair failure of the task; JUnit reports it as an `<error>`.
    Error,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Passed => "pass",
            Status::Failed => "FAIL",
            Status::Error => "ERROR",
        })
    }
}

/// One issue the task's call met, as the report keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseIssue {
    /// Which check raised it (`provider`, `verification`, `validator`, `judge`, ...).
    pub source: String,
    /// What was wrong.
    pub message: String,
    /// The attempt it belongs to.
    pub attempt: u32,
}

/// One case's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseReport {
    /// The case's name.
    pub name: String,
    /// How it ended.
    pub status: Status,
    /// The task's answer, when it gave one.
    pub answer: Option<Value>,
    /// The validator's result, when the answer was graded.
    pub validation: Option<ValidationResult>,
    /// Why there is no validation: the task failed or panicked, or the validator erred.
    pub message: Option<String>,
    /// Attempts the task's call made.
    pub attempts: u32,
    /// Repairs made to the task's replies.
    pub repairs: Vec<Value>,
    /// Issues the task's call met.
    pub issues: Vec<CaseIssue>,
    /// The task's wall time, in milliseconds.
    pub latency_ms: f64,
    /// Tokens the task used (the validator's are in `validation.usage`).
    pub tokens: Tokens,
    /// What the task's calls cost (the validator's is in `validation.cost`).
    #[serde(default)]
    pub cost: CostTally,
    /// The case's metadata.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl CaseReport {
    pub(crate) fn new<I>(case: &Case<I>, latency: Duration) -> Self {
        Self {
            name: case.name.clone(),
            status: Status::Failed,
            answer: None,
            validation: None,
            message: None,
            attempts: 0,
            repairs: Vec::new(),
            issues: Vec::new(),
            latency_ms: millis(latency),
            tokens: Tokens::default(),
            cost: CostTally::default(),
            metadata: case.metadata.clone(),
        }
    }

    /// Whether the case passed.
    pub fn passed(&self) -> bool {
        self.status == Status::Passed
    }

    /// Why the case passed or failed, in one line.
    pub fn explanation(&self) -> String {
        match (&self.validation, &self.message) {
            (_, Some(message)) => message.clone(),
            (Some(validation), None) => validation.explanation.clone(),
            (None, None) => String::new(),
        }
    }

    /// The validator that graded the case, or `-`.
    pub fn validator(&self) -> &str {
        self.validation
            .as_ref()
            .map_or("-", |validation| validation.title.as_str())
    }
}

/// Latency percentiles, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// The median.
    pub p50: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The slowest case.
    pub max: f64,
    /// The mean.
    pub mean: f64,
}

/// The summary of a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Cases run.
    pub total: usize,
    /// Cases passed.
    pub passed: usize,
    /// Cases failed.
    pub failed: usize,
    /// Cases that could not be graded ([`Status::Error`]): the provider failed, or the
    /// validator could not grade.
    pub errors: usize,
    /// `passed / total` (0 for an empty dataset).
    pub pass_rate: f64,
    /// The lower bound of the pass rate's 95 % Wilson interval.
    pub pass_rate_low: f64,
    /// The upper bound of the pass rate's 95 % Wilson interval.
    pub pass_rate_high: f64,
    /// Task latency percentiles.
    pub latency_ms: Latency,
    /// Tokens used by the tasks.
    pub task_tokens: Tokens,
    /// Tokens used by the validators (judges).
    pub validation_tokens: Tokens,
    /// What the tasks cost, as far as the price tables know: see
    /// [`CostTally::total`] for the total or the models with no price.
    #[serde(default)]
    pub task_cost: CostTally,
    /// What the validators (judges) cost.
    #[serde(default)]
    pub validation_cost: CostTally,
    /// Wall time of the whole evaluation, in milliseconds.
    pub elapsed_ms: f64,
}

impl Summary {
    fn of(cases: &[CaseReport], elapsed: Duration) -> Self {
        let total = cases.len();
        let count = |status| cases.iter().filter(|c| c.status == status).count();
        let passed = count(Status::Passed);
        let (pass_rate_low, pass_rate_high) = wilson_interval(passed, total, Z_95);
        let mut latencies: Vec<f64> = cases.iter().map(|c| c.latency_ms).collect();
        latencies.sort_by(f64::total_cmp);
        let at = |q| percentile(&latencies, q).unwrap_or(0.0);
        let mut task_tokens = Tokens::default();
        let mut validation_tokens = Tokens::default();
        let mut task_cost = CostTally::default();
        let mut validation_cost = CostTally::default();
        for case in cases {
            task_tokens += case.tokens;
            task_cost += &case.cost;
            if let Some(validation) = &case.validation {
                validation_tokens += validation.usage;
                validation_cost += &validation.cost;
            }
        }
        Self {
            total,
            passed,
            failed: count(Status::Failed),
            errors: count(Status::Error),
            pass_rate: if total == 0 {
                0.0
            } else {
                passed as f64 / total as f64
            },
            pass_rate_low,
            pass_rate_high,
            latency_ms: Latency {
                p50: at(50.0),
                p90: at(90.0),
                p99: at(99.0),
                max: latencies.last().copied().unwrap_or(0.0),
                mean: if total == 0 {
                    0.0
                } else {
                    latencies.iter().sum::<f64>() / total as f64
                },
            },
            task_tokens,
            validation_tokens,
            task_cost,
            validation_cost,
            elapsed_ms: millis(elapsed),
        }
    }
}

/// The report of one evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The evaluation's name.
    pub name: String,
    /// The dataset's name.
    pub dataset: String,
    /// Every case, in dataset order.
    pub cases: Vec<CaseReport>,
    /// The summary.
    pub summary: Summary,
}

impl Report {
    /// A report of `cases`, summarized.
    pub fn new(name: &str, dataset: &str, cases: Vec<CaseReport>, elapsed: Duration) -> Self {
        let summary = Summary::of(&cases, elapsed);
        Self {
            name: name.to_owned(),
            dataset: dataset.to_owned(),
            cases,
            summary,
        }
    }

    /// The pass rate.
    pub fn pass_rate(&self) -> f64 {
        self.summary.pass_rate
    }

    /// The cases that did not pass.
    pub fn failures(&self) -> impl Iterator<Item = &CaseReport> {
        self.cases.iter().filter(|case| !case.passed())
    }

    /// Panics, listing every case that did not pass, when the pass rate is under
    /// `minimum` (0 to 1): one line turns an evaluation into a failing `cargo test`. The
    /// message says how many cases failed and how many could not be graded (a provider
    /// outage is not the model's failure, but no pass either).
    #[track_caller]
    pub fn assert_pass_rate(&self, minimum: f64) {
        if self.summary.pass_rate < minimum {
            let failures: Vec<String> = self
                .failures()
                .map(|case| format!("  {} ({}): {}", case.name, case.status, case.explanation()))
                .collect();
            let ungraded = match self.summary.errors {
                0 => String::new(),
                errors => format!(
                    "; {errors} of them could not be graded (a provider failure or a validator without a verdict): rerun once the provider answers"
                ),
            };
            panic!(
                "evaluation `{}`: pass rate {:.1} % ({} of {}) is under the required {:.1} %: {} did not pass{ungraded}\n{}",
                self.name,
                self.summary.pass_rate * 100.0,
                self.summary.passed,
                self.summary.total,
                minimum * 100.0,
                self.summary.failed + self.summary.errors,
                failures.join("\n")
            );
        }
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Reads a report back from JSON.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Writes the report as JSON to `path`.
    pub fn write_json(&self, path: impl AsRef<Path>) -> Result<(), EvalError> {
        write(path.as_ref(), &self.to_json())
    }

    /// Reads a report written by [`Report::write_json`].
    pub fn read_json(path: impl AsRef<Path>) -> Result<Self, EvalError> {
        let path = path.as_ref();
        let fail = |message: String| EvalError::Report {
            path: path.to_owned(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
        Self::from_json(&text).map_err(|e| fail(e.to_string()))
    }
}

/// Writes `text` to `path`, as every `Report::write_*` method does.
pub(crate) fn write(path: &Path, text: &str) -> Result<(), EvalError> {
    std::fs::write(path, text).map_err(|error| EvalError::Report {
        path: path.to_owned(),
        message: error.to_string(),
    })
}

/// Explanations in the table are cut to this many characters.
const TABLE_EXPLANATION_CHARS: usize = 60;

impl fmt::Display for Report {
    /// A table of the cases, then the summary.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = [
            "case",
            "status",
            "validator",
            "tries",
            "ms",
            "tokens",
            "why",
        ];
        let rows: Vec<[String; 7]> = self
            .cases
            .iter()
            .map(|case| {
                [
                    case.name.clone(),
                    case.status.to_string(),
                    case.validator().to_owned(),
                    case.attempts.to_string(),
                    format!("{:.1}", case.latency_ms),
                    case.tokens.total().to_string(),
                    cut(&case.explanation(), TABLE_EXPLANATION_CHARS),
                ]
            })
            .collect();
        let mut widths = header.map(|h| h.chars().count());
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let line = |f: &mut fmt::Formatter<'_>, cells: &[String]| -> fmt::Result {
            let padded: Vec<String> = cells
                .iter()
                .zip(widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            writeln!(f, "{}", padded.join("  ").trim_end())
        };
        writeln!(f, "evaluation {} on {}", self.name, self.dataset)?;
        line(f, &header.map(str::to_owned))?;
        line(f, &widths.map(|w| "-".repeat(w)))?;
        for row in &rows {
            line(f, row)?;
        }
        let s = &self.summary;
        writeln!(
            f,
            "\npassed {} of {} ({:.1} %, 95 % interval {:.1}–{:.1} %); failed {}, errors {}",
            s.passed,
            s.total,
            s.pass_rate * 100.0,
            s.pass_rate_low * 100.0,
            s.pass_rate_high * 100.0,
            s.failed,
            s.errors
        )?;
        writeln!(
            f,
            "latency ms: p50 {:.1}, p90 {:.1}, p99 {:.1}, max {:.1}, mean {:.1}",
            s.latency_ms.p50,
            s.latency_ms.p90,
            s.latency_ms.p99,
            s.latency_ms.max,
            s.latency_ms.mean
        )?;
        writeln!(
            f,
            "tokens: task {} in / {} out, validators {} in / {} out; wall time {:.1} ms",
            s.task_tokens.input,
            s.task_tokens.output,
            s.validation_tokens.input,
            s.validation_tokens.output,
            s.elapsed_ms
        )?;
        write!(
            f,
            "cost: task {}, validators {}",
            cost_text(&s.task_cost),
            cost_text(&s.validation_cost)
        )
    }
}

/// A tally for a person: the cost, or the priced part and the models with no price.
fn cost_text(cost: &CostTally) -> String {
    match cost.total() {
        Ok(total) => total.to_string(),
        Err(unpriced) => format!(
            "unknown ({} priced; no price for {})",
            unpriced.priced,
            unpriced.models.join(", ")
        ),
    }
}

fn cut(text: &str, chars: usize) -> String {
    let one_line = text.replace(['\n', '\r'], " ");
    if one_line.chars().count() <= chars {
        one_line
    } else {
        let cut: String = one_line.chars().take(chars.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}
