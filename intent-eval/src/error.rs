//! The errors of evaluations: one enum for the layer, each variant a distinct failure the
//! caller can match on.

use std::path::PathBuf;

/// Where in a dataset file a problem was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// A 1-based line of a JSON Lines file.
    Line(usize),
    /// A 1-based case of a JSON file (an array of cases).
    Case(usize),
    /// The file as a whole (it could not be read, or its top level is wrong).
    File,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Line(line) => write!(f, "line {line}"),
            Location::Case(case) => write!(f, "case {case}"),
            Location::File => f.write_str("the file"),
        }
    }
}

/// What went wrong in an evaluation. A rejected answer is never an error: it is a result
/// whose pass flag is false. Errors are configuration mistakes and validators that could
/// not give a verdict.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A dataset file holds a case that cannot be read. Such a case is never skipped.
    #[error("{}: {location}: {}{message}", file.display(), field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
    Dataset {
        /// The file.
        file: PathBuf,
        /// The line (JSON Lines) or case (JSON) at fault.
        location: Location,
        /// The field at fault, as a path (`input.lines[0].cents`), when one is.
        field: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// A schema (expected answer, passing verdicts) is not a valid JSON Schema, or names
    /// an external reference, which is never fetched.
    #[error("malformed JSON Schema: {0}")]
    MalformedSchema(String),
    /// A case asks for a judge that is not configured.
    #[error("judge `{0}` is not configured")]
    JudgeNotFound(String),
    /// A case asks for a variant its judge does not have.
    #[error("judge `{judge}` has no variant `{variant}`")]
    JudgeVariantNotFound {
        /// The judge.
        judge: String,
        /// The variant asked for.
        variant: String,
    },
    /// The judge model gave no usable verdict (its call failed after every attempt).
    #[error("judge `{judge}` gave no verdict: {message}")]
    JudgeFailed {
        /// The judge.
        judge: String,
        /// The judge call's failure summary.
        message: String,
    },
    /// A case asks for an external validator that is not configured.
    #[error("external validator `{0}` is not configured")]
    ExternalNotFound(String),
    /// A template of an external validator does not compile, names an unknown variable,
    /// or cannot be rendered for a case.
    #[error("external validator `{validator}`: template {template}: {message}")]
    ExternalTemplate {
        /// The validator.
        validator: String,
        /// Which template (`args[0]`, `env.NAME`, `files.answer.json`).
        template: String,
        /// What is wrong.
        message: String,
    },
    /// The external validator's command could not be started, exited unsuccessfully or
    /// ran past its timeout.
    #[error("external validator `{validator}` did not run to completion: {message}")]
    ExternalExecution {
        /// The validator.
        validator: String,
        /// What happened.
        message: String,
    },
    /// The external validator printed something other than its JSON verdict.
    #[error("external validator `{validator}` answered something other than a verdict: {message}")]
    ExternalResponse {
        /// The validator.
        validator: String,
        /// What is wrong, with an excerpt of what it printed.
        message: String,
    },
    /// A report could not be written or read.
    #[error("report {}: {message}", path.display())]
    Report {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

impl std::fmt::Debug for EvalError {
    /// The sentence: what `main` returning this error prints (the variant's fields are
    /// reachable by `match`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}
