//! What every validator takes and gives: the [`CaseContext`] it grades and the
//! [`ValidationResult`] it returns, with the [`Tokens`] and [`JudgeDetails`] a result
//! carries. Below the validators (`external`, `judge`) and their selection (`validate`,
//! which re-exports these types), so that each imports this module and none the others.

use intent_rs::CostTally;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::grade::ValueSet;
use crate::rules::Rules;

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
    /// What the validator's model calls cost (a judge's), as far as its client's price
    /// table knows.
    #[serde(default)]
    pub cost: CostTally,
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
