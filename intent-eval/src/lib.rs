//! Evaluations for intent-rs: run an intent method over cases with expected answers and
//! learn how often it gets them right, before and after every prompt or model change.
//!
//! - [`Dataset`] and [`Case`]: typed inputs with acceptable answers, read from JSON Lines
//!   or JSON files ([`Dataset`] shows the format). Every expected value is checked
//!   against the answer type before the first request ([`Evaluation::run`] does it,
//!   [`from_file_checked`](Dataset::from_file_checked) as the file is read), so a typo is
//!   reported where it is, not as the model's failure.
//! - Grading: each case's [`Rules`] pick one validator, in this order: an
//!   [`ExternalValidator`] command, a [`Judge`] model, the expected JSON Schema, or a
//!   value match of canonical values. One function, [`grade()`], decides pass or fail
//!   for answers and for judge verdicts of any shape.
//! - [`Evaluation::run`]: any async task (a generated client's method) over a dataset,
//!   with bounded concurrency; a case whose provider failed (an outage, a rate limit) is
//!   an error, not a failure, since no answer could be graded. The [`Report`] prints as a
//!   table, writes JSON and JUnit XML, compares with an earlier report, and
//!   [`assert_pass_rate`](Report::assert_pass_rate) makes the evaluation a `cargo test`.
//!
//! ```
//! use intent_rs_eval::{Case, Dataset, Evaluation, Rules};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), intent_rs_eval::EvalError> {
//! let dataset = Dataset::new("capitals", vec![
//!     Case::new("france", "France".to_owned(), "Paris"),
//!     Case::new("japan", "Japan".to_owned(), "tokyo").rules(Rules::lenient()),
//! ]);
//! // Any async task; typically `|input| client.capital(input)` of a generated client.
//! let task = |country: &String| {
//!     let answer = if country == "France" { "Paris" } else { "Tokyo " };
//!     async move { Ok::<_, std::convert::Infallible>(answer.to_owned()) }
//! };
//! let report = Evaluation::new("capitals").run(&dataset, task).await?;
//! println!("{report}");
//! report.assert_pass_rate(1.0);
//! # Ok(())
//! # }
//! ```
//!
//! This crate is separate from the runtime so that its dependencies (templating,
//! progress bars, JUnit) never enter a build that does not evaluate: add it as a
//! dev-dependency.

#![warn(missing_docs)]

mod compare;
mod dataset;
mod diff;
mod error;
mod external;
mod grade;
mod harness;
mod judge;
mod junit;
mod report;
mod rules;
mod stats;
mod validate;
mod validation;

pub use compare::Comparison;
pub use dataset::{Case, Dataset};
pub use error::{EvalError, Location};
pub use external::{DEFAULT_TIMEOUT, ExternalValidator};
pub use grade::{ValueSet, grade};
pub use harness::{DEFAULT_CONCURRENCY, Evaluation, Progress, TaskOutcome, TaskOutput};
pub use judge::{DEFAULT_VARIANT, Judge, JudgeVariant, Verdict};
pub use report::{CaseIssue, CaseReport, Latency, Report, Status, Summary};
pub use rules::{JudgeSelector, Rules, Whitespace};
pub use validate::{
    CaseContext, JudgeDetails, Selected, Tokens, ValidationResult, Validators, schema_match,
    select, value_match,
};
