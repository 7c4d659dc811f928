//! Per-case validation rules, and the canonical form of values they define.
//!
//! Canonicalization is what makes two answers "the same" for value matching and for
//! literal judge verdicts: strings (at any depth inside objects and arrays) are folded
//! to lower case unless the comparison is case sensitive and have their whitespace
//! trimmed or collapsed as asked; numbers are compared by value, so `1`, `1.0` and `1e0`
//! are one answer. Object keys are left alone: they are field names, not answers.

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

/// How whitespace inside strings counts when comparing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Whitespace {
    /// Every character counts.
    #[default]
    Keep,
    /// Leading and trailing whitespace is ignored.
    Trim,
    /// Trimmed, and every run of whitespace inside counts as one space.
    Collapse,
}

/// Which judge (and which of its variants) grades a case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "SelectorForm")]
pub struct JudgeSelector {
    /// The judge's name.
    pub name: String,
    /// The variant; `None` is the judge's default variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl JudgeSelector {
    /// The judge `name` with its default variant.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            variant: None,
        }
    }

    /// The judge `name` with the variant `variant`.
    pub fn variant(name: impl Into<String>, variant: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            variant: Some(variant.into()),
        }
    }
}

// A dataset may name a judge by a bare string, or by an object with a variant.
#[derive(Deserialize)]
#[serde(untagged)]
enum SelectorForm {
    Name(String),
    Full {
        name: String,
        #[serde(default)]
        variant: Option<String>,
    },
}

impl From<SelectorForm> for JudgeSelector {
    fn from(form: SelectorForm) -> Self {
        match form {
            SelectorForm::Name(name) => JudgeSelector::new(name),
            SelectorForm::Full { name, variant } => JudgeSelector { name, variant },
        }
    }
}

/// How a case's answer is compared and which validator grades it.
///
/// The default compares exactly: case sensitive, every whitespace character counted,
/// graded by value match (or by schema, when the case expects a schema).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Rules {
    /// Whether upper and lower case differ (default `true`).
    pub case_sensitive: bool,
    /// How whitespace inside strings counts (default: every character).
    pub whitespace: Whitespace,
    /// Grade with this judge model instead of a value match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeSelector>,
    /// Grade with this external validator (takes precedence over a judge).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external: Option<String>,
}

impl Default for Rules {
    fn default() -> Self {
        Self {
            case_sensitive: true,
            whitespace: Whitespace::Keep,
            judge: None,
            external: None,
        }
    }
}

impl Rules {
    /// Exact comparison (the default).
    pub fn exact() -> Self {
        Self::default()
    }

    /// Case-insensitive comparison with whitespace collapsed: the usual choice for short
    /// free-text answers.
    pub fn lenient() -> Self {
        Self {
            case_sensitive: false,
            whitespace: Whitespace::Collapse,
            ..Self::default()
        }
    }

    /// These rules with case sensitivity set.
    pub fn case_sensitive(mut self, sensitive: bool) -> Self {
        self.case_sensitive = sensitive;
        self
    }

    /// These rules with the whitespace handling set.
    pub fn whitespace(mut self, whitespace: Whitespace) -> Self {
        self.whitespace = whitespace;
        self
    }

    /// These rules, graded by the judge `selector`.
    pub fn judge(mut self, selector: JudgeSelector) -> Self {
        self.judge = Some(selector);
        self
    }

    /// These rules, graded by the external validator `name`.
    pub fn external(mut self, name: impl Into<String>) -> Self {
        self.external = Some(name.into());
        self
    }

    /// The canonical form of `value` under these rules.
    pub fn canonical(&self, value: &Value) -> Value {
        match value {
            Value::String(text) => Value::String(self.canonical_str(text)),
            Value::Number(number) => Value::Number(canonical_number(number)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.canonical(v)).collect()),
            Value::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(key, v)| (key.clone(), self.canonical(v)))
                    .collect(),
            ),
            Value::Null | Value::Bool(_) => value.clone(),
        }
    }

    fn canonical_str(&self, text: &str) -> String {
        let spaced = match self.whitespace {
            Whitespace::Keep => text.to_owned(),
            Whitespace::Trim => text.trim().to_owned(),
            Whitespace::Collapse => text.split_whitespace().collect::<Vec<_>>().join(" "),
        };
        if self.case_sensitive {
            spaced
        } else {
            spaced.to_lowercase()
        }
    }
}

/// Integral numbers become integers, so that a number's value, not its spelling, decides
/// equality; other numbers stay as they are.
fn canonical_number(number: &Number) -> Number {
    // i64 and u64 already have one spelling each (serde_json keeps non-negative integers
    // as u64); only floats with an integral value have a second one.
    match number.as_f64() {
        Some(float) if number.is_f64() && float.fract() == 0.0 => {
            // 2^63 and 2^64 are exact as f64; inside these bounds the cast is lossless.
            if (-9_223_372_036_854_775_808.0..0.0).contains(&float) {
                Number::from(float as i64)
            } else if (0.0..18_446_744_073_709_551_616.0).contains(&float) {
                Number::from(float as u64)
            } else {
                number.clone()
            }
        }
        _ => number.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_are_folded_and_trimmed_at_any_depth() {
        let rules = Rules::lenient();
        let value = json!({"Name": "  Ada   LOVELACE ", "tags": ["  A  b", {"x": "Y "}]});
        assert_eq!(
            rules.canonical(&value),
            json!({"Name": "ada lovelace", "tags": ["a b", {"x": "y"}]})
        );
    }

    #[test]
    fn trim_keeps_inner_whitespace_and_exact_keeps_everything() {
        let trim = Rules::exact().whitespace(Whitespace::Trim);
        assert_eq!(trim.canonical(&json!(" a  B ")), json!("a  B"));
        assert_eq!(Rules::exact().canonical(&json!(" a  B ")), json!(" a  B "));
    }

    #[test]
    fn integral_floats_become_integers() {
        let rules = Rules::exact();
        assert_eq!(rules.canonical(&json!(1.0)), json!(1));
        assert_eq!(rules.canonical(&json!(-3.0)), json!(-3));
        assert_eq!(rules.canonical(&json!(0.5)), json!(0.5));
        assert_eq!(rules.canonical(&json!(-0.0)), json!(0));
    }

    #[test]
    fn selectors_read_from_a_name_or_an_object() {
        let rules: Rules =
            serde_json::from_value(json!({"judge": "strict", "case_sensitive": false})).unwrap();
        assert_eq!(rules.judge, Some(JudgeSelector::new("strict")));
        let rules: Rules =
            serde_json::from_value(json!({"judge": {"name": "strict", "variant": "cheap"}}))
                .unwrap();
        assert_eq!(rules.judge, Some(JudgeSelector::variant("strict", "cheap")));
        assert!(serde_json::from_value::<Rules>(json!({"case_sensitiv": false})).is_err());
    }
}
