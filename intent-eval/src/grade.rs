//! The one grading function: does a value (an answer, or a judge's verdict) pass, given
//! the acceptable values or a schema of acceptable values?

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::EvalError;
use crate::rules::Rules;

/// What counts as passing: one or more literal values, or a JSON Schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueSet {
    /// Any of these values (compared after canonicalization).
    AnyOf(Vec<Value>),
    /// Any value the schema accepts (checked as is, without canonicalization).
    Schema(Value),
}

impl ValueSet {
    /// Exactly this value.
    pub fn one(value: impl Into<Value>) -> Self {
        ValueSet::AnyOf(vec![value.into()])
    }

    /// Any of these values.
    pub fn any_of<V: Into<Value>>(values: impl IntoIterator<Item = V>) -> Self {
        ValueSet::AnyOf(values.into_iter().map(Into::into).collect())
    }

    /// Any value `schema` accepts.
    pub fn schema(schema: Value) -> Self {
        ValueSet::Schema(schema)
    }

    /// The values as a JSON list, or the schema: what a judge or a template is shown.
    pub fn to_value(&self) -> Value {
        match self {
            ValueSet::AnyOf(values) => Value::Array(values.clone()),
            ValueSet::Schema(schema) => schema.clone(),
        }
    }
}

/// Whether `actual` passes against `passing` under `rules`.
///
/// Literal values: both sides are canonicalized with `rules` (see [`Rules::canonical`])
/// and compared as a JSON Schema `const` (one value) or `enum` (several) compares them:
/// numbers by value, object members in any order. A schema: `actual` is validated
/// against it directly, without canonicalization, because the schema states the exact
/// shape of a passing value and folding case would change its meaning.
///
/// A value that does not pass is `Ok(false)`; only a malformed schema is an error.
pub fn grade(rules: &Rules, passing: &ValueSet, actual: &Value) -> Result<bool, EvalError> {
    match passing {
        ValueSet::AnyOf(values) => {
            let actual = rules.canonical(actual);
            Ok(values.iter().any(|value| rules.canonical(value) == actual))
        }
        ValueSet::Schema(schema) => Ok(compile(schema)?.is_valid(actual)),
    }
}

/// Compiles `schema` with Draft 2020-12 and no fetching or reading of external
/// references: a dataset is data, and must not make the harness reach out.
pub(crate) fn compile(schema: &Value) -> Result<jsonschema::Validator, EvalError> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .offline()
        .build(schema)
        .map_err(|error| EvalError::MalformedSchema(error.to_string()))
}

/// The first few reasons `actual` fails `schema`, for an explanation.
pub(crate) fn schema_failures(schema: &Value, actual: &Value) -> Result<Vec<String>, EvalError> {
    let validator = compile(schema)?;
    Ok(validator
        .iter_errors(actual)
        .take(3)
        .map(|error| {
            let path = error.instance_path().to_string();
            if path.is_empty() {
                error.to_string()
            } else {
                format!("at {path}: {error}")
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn literal_values_pass_after_canonicalization() {
        let rules = Rules::lenient();
        let passing = ValueSet::any_of(["Positive", "Good"]);
        assert!(grade(&rules, &passing, &json!("  positive ")).unwrap());
        assert!(grade(&rules, &passing, &json!("GOOD")).unwrap());
        assert!(!grade(&rules, &passing, &json!("negative")).unwrap());
        assert!(!grade(&Rules::exact(), &passing, &json!("positive")).unwrap());
    }

    #[test]
    fn a_schema_is_applied_without_canonicalization() {
        let passing = ValueSet::schema(json!({"enum": ["A", "B"]}));
        assert!(grade(&Rules::lenient(), &passing, &json!("A")).unwrap());
        // The lenient rules would fold "a" onto "A" for literals; a schema is exact.
        assert!(!grade(&Rules::lenient(), &passing, &json!("a")).unwrap());
    }

    #[test]
    fn a_malformed_schema_is_an_error_and_a_miss_is_not() {
        let malformed = ValueSet::schema(json!({"type": 12}));
        assert!(matches!(
            grade(&Rules::exact(), &malformed, &json!(1)),
            Err(EvalError::MalformedSchema(_))
        ));
        let fine = ValueSet::schema(json!({"type": "integer", "minimum": 4}));
        assert!(!grade(&Rules::exact(), &fine, &json!(3)).unwrap());
        assert!(!grade(&Rules::exact(), &fine, &json!("five")).unwrap());
    }

    #[test]
    fn external_references_are_never_fetched() {
        let remote = ValueSet::schema(json!({"$ref": "https://example.com/schema.json"}));
        assert!(matches!(
            grade(&Rules::exact(), &remote, &json!(1)),
            Err(EvalError::MalformedSchema(_))
        ));
        let file = ValueSet::schema(json!({"$ref": "file:///etc/passwd"}));
        assert!(grade(&Rules::exact(), &file, &json!(1)).is_err());
    }
}
