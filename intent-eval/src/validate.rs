//! Validators and their selection: every case is graded by exactly one of an external
//! validator, a judge, a schema or a value match, picked from its rules in that order.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::EvalError;
use crate::external::ExternalValidator;
use crate::grade::{ValueSet, grade, schema_failures};
use crate::judge::Judge;
use crate::rules::{JudgeSelector, Rules};

/// Explanations quote values up to this many characters.
const QUOTE_CHARS: usize = 200;

/// Tokens used, as reports keep them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// Input (prompt) tokens.
    pub input: u64,
    /// Output (completion) tokens.
    pub output: u64,
    /// Input tokens served from the provider's prompt cache.
    #[serde(default)]
    pub cached_input: u64,
}

impl Tokens {
    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input + self.output
    }
}

impl From<intent_rs::Usage> for Tokens {
    fn from(usage: intent_rs::Usage) -> Self {
        Self {
            input: usage.input_tokens,
            output: usage.output_tokens,
            cached_input: usage.cached_input_tokens,
        }
    }
}

impl std::ops::AddAssign for Tokens {
    fn add_assign(&mut self, rhs: Self) {
        self.input += rhs.input;
        self.output += rhs.output;
        self.cached_input += rhs.cached_input;
    }
}

/// Which judge gave a verdict, and the verdict as it gave it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeDetails {
    /// The raw verdict.
    pub verdict: Value,
    /// The judge's name.
    pub judge: String,
    /// The provider the judge asked.
    pub provider: String,
    /// The judge's variant.
    pub variant: String,
    /// The model the judge asked.
    pub model: String,
}

/// The outcome of grading one answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidationResult {
    /// Whether the answer passed.
    pub passed: bool,
    /// Which validator graded it (`value match`, `schema`, `judge NAME`, `external NAME`).
    pub title: String,
    /// Why it passed or failed.
    pub explanation: String,
    /// Tokens the validator used (a judge's call).
    pub usage: Tokens,
    /// The judge's verdict and provenance, when a judge graded the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeDetails>,
}

/// Everything a validator may look at for one case.
#[derive(Debug, Clone, Copy)]
pub struct CaseContext<'a> {
    /// The case's name.
    pub name: &'a str,
    /// The acceptable answers.
    pub expected: &'a ValueSet,
    /// The answer to grade.
    pub actual: &'a Value,
    /// The original prompt (what the task was asked), for judges and external validators.
    pub prompt: &'a str,
    /// The expected response format (a JSON Schema, or `"text"`).
    pub response_format: &'a Value,
    /// The case's metadata.
    pub metadata: &'a Map<String, Value>,
    /// The case's rules.
    pub rules: &'a Rules,
}

/// The validator a case's rules select.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selected<'a> {
    /// An external command.
    External(&'a str),
    /// A judge model.
    Judge(&'a JudgeSelector),
    /// Validation against the expected JSON Schema.
    Schema,
    /// Comparison with the expected values.
    ValueMatch,
}

/// Picks the validator for `rules` and `expected`: an external validator, else a judge,
/// else a schema (when the expected answer is one), else a value match.
pub fn select<'a>(rules: &'a Rules, expected: &ValueSet) -> Selected<'a> {
    if let Some(name) = &rules.external {
        Selected::External(name)
    } else if let Some(judge) = &rules.judge {
        Selected::Judge(judge)
    } else if matches!(expected, ValueSet::Schema(_)) {
        Selected::Schema
    } else {
        Selected::ValueMatch
    }
}

/// The configured judges and external validators, by name.
#[derive(Debug, Clone, Default)]
pub struct Validators {
    judges: BTreeMap<String, Judge>,
    externals: BTreeMap<String, ExternalValidator>,
}

impl Validators {
    /// No judge and no external validator: value match and schema only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a judge under its name.
    pub fn judge(mut self, judge: Judge) -> Self {
        self.judges.insert(judge.name().to_owned(), judge);
        self
    }

    /// Adds (or replaces) an external validator under its name.
    pub fn external(mut self, validator: ExternalValidator) -> Self {
        self.externals
            .insert(validator.name().to_owned(), validator);
        self
    }

    /// Checks, before anything runs, that every judge's verdict schemas compile, every
    /// external validator's templates compile, and every rule names a configured judge,
    /// variant and external validator.
    pub fn check<'r>(&self, rules: impl IntoIterator<Item = &'r Rules>) -> Result<(), EvalError> {
        for judge in self.judges.values() {
            judge.check()?;
        }
        for validator in self.externals.values() {
            validator.check()?;
        }
        for rules in rules {
            if let Some(name) = &rules.external {
                self.external_named(name)?;
            }
            if let Some(selector) = &rules.judge {
                self.judge_named(&selector.name)?.resolve(selector)?;
            }
        }
        Ok(())
    }

    fn judge_named(&self, name: &str) -> Result<&Judge, EvalError> {
        self.judges
            .get(name)
            .ok_or_else(|| EvalError::JudgeNotFound(name.to_owned()))
    }

    fn external_named(&self, name: &str) -> Result<&ExternalValidator, EvalError> {
        self.externals
            .get(name)
            .ok_or_else(|| EvalError::ExternalNotFound(name.to_owned()))
    }

    /// Grades one answer with the validator its rules select.
    pub async fn validate(&self, case: &CaseContext<'_>) -> Result<ValidationResult, EvalError> {
        match select(case.rules, case.expected) {
            Selected::External(name) => self.external_named(name)?.validate(case).await,
            Selected::Judge(selector) => {
                self.judge_named(&selector.name)?
                    .judge(selector, case)
                    .await
            }
            Selected::Schema => schema_match(case),
            Selected::ValueMatch => Ok(value_match(case)),
        }
    }
}

/// Grades by comparing canonical values: any expected value that matches passes.
pub fn value_match(case: &CaseContext<'_>) -> ValidationResult {
    let ValueSet::AnyOf(expected) = case.expected else {
        return schema_match(case).unwrap_or_else(|error| ValidationResult {
            passed: false,
            title: "value match".into(),
            explanation: error.to_string(),
            usage: Tokens::default(),
            judge: None,
        });
    };
    let actual = case.rules.canonical(case.actual);
    let position = expected
        .iter()
        .position(|value| case.rules.canonical(value) == actual);
    let explanation = match position {
        Some(_) if expected.len() == 1 => "matches the expected value".to_owned(),
        Some(index) => format!("matches expected value {} of {}", index + 1, expected.len()),
        None => {
            let wanted: Vec<String> = expected.iter().map(quote).collect();
            format!(
                "expected {}{}, got {}",
                if wanted.len() > 1 { "one of " } else { "" },
                wanted.join(", "),
                quote(case.actual)
            )
        }
    };
    ValidationResult {
        passed: position.is_some(),
        title: "value match".into(),
        explanation,
        usage: Tokens::default(),
        judge: None,
    }
}

/// Grades by validating the answer against the expected JSON Schema.
pub fn schema_match(case: &CaseContext<'_>) -> Result<ValidationResult, EvalError> {
    let passed = grade(case.rules, case.expected, case.actual)?;
    let explanation = match case.expected {
        ValueSet::Schema(schema) if !passed => {
            format!(
                "does not satisfy the expected schema: {}",
                schema_failures(schema, case.actual)?.join("; ")
            )
        }
        _ if passed => "satisfies the expected schema".to_owned(),
        _ => "does not match".to_owned(),
    };
    Ok(ValidationResult {
        passed,
        title: "schema".into(),
        explanation,
        usage: Tokens::default(),
        judge: None,
    })
}

/// `value` as compact JSON, cut to a readable length.
pub(crate) fn quote(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= QUOTE_CHARS {
        text
    } else {
        let cut: String = text.chars().take(QUOTE_CHARS).collect();
        format!("{cut}…")
    }
}
