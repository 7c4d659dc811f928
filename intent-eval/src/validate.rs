//! Validators and their selection: every case is graded by exactly one of an external
//! validator, a judge, a schema or a value match, picked from its rules in that order.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::diff::{first_difference, quote};
use crate::error::EvalError;
use crate::external::ExternalValidator;
use crate::grade::{ValueSet, grade, schema_failures};
use crate::judge::Judge;
use crate::rules::{JudgeSelector, Rules};
// What every validator takes and gives; defined below the validators so that `external`
// and `judge` need not import this module, which imports them.
pub use crate::validation::{CaseContext, JudgeDetails, Tokens, ValidationResult};

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
            cost: Default::default(),
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
            let values = format!(
                "expected {}{}, got {}",
                if wanted.len() > 1 { "one of " } else { "" },
                wanted.join(", "),
                quote(case.actual)
            );
            // The differing field first: values too long to quote whole are cut, and a
            // report's table cuts the explanation too.
            let canonical = |value: &Value| case.rules.canonical(value);
            let differences: Vec<String> = expected
                .iter()
                .enumerate()
                .filter_map(|(index, value)| {
                    let difference = first_difference(value, case.actual, canonical)?;
                    Some(if expected.len() > 1 {
                        format!("{difference} (expected value {})", index + 1)
                    } else {
                        difference
                    })
                })
                .collect();
            if differences.is_empty() {
                values
            } else {
                format!("{}; {values}", differences.join("; "))
            }
        }
    };
    ValidationResult {
        passed: position.is_some(),
        title: "value match".into(),
        explanation,
        usage: Tokens::default(),
        cost: Default::default(),
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
        cost: Default::default(),
        judge: None,
    })
}
