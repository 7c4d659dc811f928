//! Cases and datasets: typed inputs with their expected answers, read from JSON Lines or
//! JSON files. A case that cannot be read is an error that names the file, the line and
//! the field; it is never skipped.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use intent_rs::schema::{ENVELOPE_PROPERTY, TargetSchema, target_schema};
use intent_rs::schemars::JsonSchema;
use jsonschema::error::ValidationErrorKind;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::error::{EvalError, Location};
use crate::grade::{ValueSet, compile};
use crate::rules::{Rules, Whitespace};

const FIELDS: [&str; 7] = [
    "name",
    "input",
    "expected",
    "expected_any",
    "expected_schema",
    "rules",
    "metadata",
];

/// One case: an input of the method's input type and what answers are acceptable.
#[derive(Debug, Clone, PartialEq)]
pub struct Case<I> {
    /// A name unique within the dataset (reports compare cases by name).
    pub name: String,
    /// The input handed to the task.
    pub input: I,
    /// The acceptable answers.
    pub expected: ValueSet,
    /// Free-form metadata, shown to external validators and kept in the report.
    pub metadata: Map<String, Value>,
    /// How the answer is compared, and by which validator.
    pub rules: Rules,
}

impl<I> Case<I> {
    /// A case whose answer must be `expected` (exactly, unless [`Case::rules`] say
    /// otherwise).
    pub fn new(name: impl Into<String>, input: I, expected: impl Into<Value>) -> Self {
        Self::with_expected(name, input, ValueSet::one(expected))
    }

    /// A case with any [`ValueSet`] of acceptable answers.
    pub fn with_expected(name: impl Into<String>, input: I, expected: ValueSet) -> Self {
        Self {
            name: name.into(),
            input,
            expected,
            metadata: Map::new(),
            rules: Rules::default(),
        }
    }

    /// This case with `rules`.
    pub fn rules(mut self, rules: Rules) -> Self {
        self.rules = rules;
        self
    }

    /// This case with one more metadata entry.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }
}

/// A named list of cases.
///
/// One case, as a JSON object (one per line in a `.jsonl` file, or the items of an array
/// in a `.json` file):
///
/// ```json
/// {"name": "sarcasm", "input": {"review": "Great, it broke."},
///  "expected_any": ["Negative", "Neutral"],
///  "rules": {"case_sensitive": false, "judge": "strict"},
///  "metadata": {"source": "support tickets"}}
/// ```
///
/// The expected answer is exactly one of `expected` (one value), `expected_any` (a
/// non-empty list of acceptable values) or `expected_schema` (a JSON Schema the answer
/// must satisfy). `name`, `rules` and `metadata` are optional.
///
/// Every `expected` and `expected_any` value of a case graded by value match is checked
/// against the answer type's JSON Schema before anything is asked of a model:
/// [`Evaluation::run`](crate::Evaluation::run) checks them against its task's answer
/// type, whichever constructor read the dataset, and [`Dataset::from_file_checked`] (or
/// [`Dataset::from_jsonl_str_checked`]) as the dataset is read. A misspelt field or enum
/// member is an error naming the file, the line and the field, not a failure the model
/// is blamed for (and paid for) on every case.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset<I> {
    /// The dataset's name (the file stem when read from a file).
    pub name: String,
    /// The cases, in order.
    pub cases: Vec<Case<I>>,
    /// Where the cases were read from, so that a later check names the file and line.
    origin: Option<Origin>,
}

/// The file a dataset was read from, and where in it each case (by name) was.
#[derive(Debug, Clone, PartialEq)]
struct Origin {
    file: PathBuf,
    cases: HashMap<String, Read>,
}

/// Where a case was read, and whether its answers were listed (`expected_any`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Read {
    location: Location,
    listed: bool,
}

impl<I> Dataset<I> {
    /// A dataset of `cases`.
    pub fn new(name: impl Into<String>, cases: Vec<Case<I>>) -> Self {
        Self {
            name: name.into(),
            cases,
            origin: None,
        }
    }

    fn read(file: &Path, cases: Vec<(Case<I>, Read)>) -> Self {
        let origin = Origin {
            file: file.to_owned(),
            cases: cases
                .iter()
                .map(|(case, read)| (case.name.clone(), *read))
                .collect(),
        };
        Self {
            name: stem(file),
            cases: cases.into_iter().map(|(case, _)| case).collect(),
            origin: Some(origin),
        }
    }

    /// Checks every case's `expected` and `expected_any` values against the answer type
    /// (as [`Dataset::from_file_checked`] does while reading): the first value no answer
    /// can equal is an error naming the file and line (or, for a dataset built in code,
    /// the dataset and the case's position) and the field.
    pub(crate) fn check_expected(&self, answers: &AnswerCheck) -> Result<(), EvalError> {
        for (index, case) in self.cases.iter().enumerate() {
            let read = self
                .origin
                .as_ref()
                .and_then(|origin| origin.cases.get(&case.name));
            let listed = read.map_or(
                matches!(&case.expected, ValueSet::AnyOf(values) if values.len() > 1),
                |read| read.listed,
            );
            check_answers(answers, &case.expected, &case.rules, listed).map_err(
                |(field, message)| EvalError::Dataset {
                    file: self.origin.as_ref().map_or_else(
                        || PathBuf::from(format!("dataset `{}`", self.name)),
                        |origin| origin.file.clone(),
                    ),
                    location: read.map_or(Location::Case(index + 1), |read| read.location),
                    field: Some(field),
                    message,
                },
            )?;
        }
        Ok(())
    }

    /// The number of cases.
    pub fn len(&self) -> usize {
        self.cases.len()
    }

    /// Whether there is no case.
    pub fn is_empty(&self) -> bool {
        self.cases.is_empty()
    }
}

impl<I: DeserializeOwned> Dataset<I> {
    /// Reads a file: JSON Lines when its name ends in `.jsonl` or `.ndjson`, a JSON array
    /// of cases (or an object with a `cases` array) otherwise.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, EvalError> {
        Self::read_file(path.as_ref(), None)
    }

    fn read_file(path: &Path, answers: Option<&AnswerCheck>) -> Result<Self, EvalError> {
        let text = std::fs::read_to_string(path).map_err(|error| EvalError::Dataset {
            file: path.to_owned(),
            location: Location::File,
            field: None,
            message: format!("cannot be read: {error}"),
        })?;
        let lines = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("jsonl" | "ndjson")
        );
        let cases = if lines {
            read_lines(path, &text, answers)?
        } else {
            read_json(path, &text, answers)?
        };
        Ok(Self::read(path, cases))
    }

    /// Reads JSON Lines text; `file` names it in errors. Blank lines are allowed.
    pub fn from_jsonl_str(file: impl Into<PathBuf>, text: &str) -> Result<Self, EvalError> {
        let file = file.into();
        let cases = read_lines(&file, text, None)?;
        Ok(Self::read(&file, cases))
    }

    /// Reads JSON text (an array of cases, or an object with a `cases` array); `file`
    /// names it in errors.
    pub fn from_json_str(file: impl Into<PathBuf>, text: &str) -> Result<Self, EvalError> {
        let file = file.into();
        let cases = read_json(&file, text, None)?;
        Ok(Self::read(&file, cases))
    }

    /// Reads a file as [`Dataset::from_file`] does, and checks every case's `expected`
    /// and `expected_any` values against `O`, the answer type of the method evaluated, as
    /// [`Evaluation::run`](crate::Evaluation::run) does for any dataset (this reports it
    /// as the file is read, before a run is set up):
    /// a value no `O` can equal (a misspelt field, an unknown enum member, a string
    /// where a number belongs) is an error naming the file, the line (or case) and the
    /// field, before any case runs.
    ///
    /// The check uses the schema the model is given (every field required, no other
    /// field allowed). Cases graded by a judge or an external validator are not checked
    /// (their expected value is a reference, not necessarily an answer), nor are
    /// `expected_schema` cases; under case-insensitive or whitespace-folding
    /// [`Rules`], enum members are compared as the rules compare answers.
    pub fn from_file_checked<O: JsonSchema + 'static>(
        path: impl AsRef<Path>,
    ) -> Result<Self, EvalError> {
        let answers = AnswerCheck::of::<O>()?;
        Self::read_file(path.as_ref(), Some(&answers))
    }

    /// Reads JSON Lines text as [`Dataset::from_jsonl_str`] does, checking the expected
    /// values against `O` as [`Dataset::from_file_checked`] does.
    pub fn from_jsonl_str_checked<O: JsonSchema + 'static>(
        file: impl Into<PathBuf>,
        text: &str,
    ) -> Result<Self, EvalError> {
        let file = file.into();
        let cases = read_lines(&file, text, Some(&AnswerCheck::of::<O>()?))?;
        Ok(Self::read(&file, cases))
    }
}

fn stem(file: &Path) -> String {
    file.file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn read_lines<I: DeserializeOwned>(
    file: &Path,
    text: &str,
    answers: Option<&AnswerCheck>,
) -> Result<Vec<(Case<I>, Read)>, EvalError> {
    let mut cases = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let location = Location::Line(index + 1);
        let value: Value = serde_json::from_str(line).map_err(|error| EvalError::Dataset {
            file: file.to_owned(),
            location,
            field: None,
            message: format!("not JSON: {error}"),
        })?;
        cases.push(read_case(file, location, value, answers)?);
    }
    check_unique_names(file, &cases)?;
    Ok(cases)
}

fn read_json<I: DeserializeOwned>(
    file: &Path,
    text: &str,
    answers: Option<&AnswerCheck>,
) -> Result<Vec<(Case<I>, Read)>, EvalError> {
    let fail = |field: Option<&str>, message: String| EvalError::Dataset {
        file: file.to_owned(),
        location: Location::File,
        field: field.map(str::to_owned),
        message,
    };
    let value: Value = serde_json::from_str(text).map_err(|error| {
        if looks_like_json_lines(text) {
            let renamed = file.with_extension("jsonl");
            let renamed = renamed.file_name().map_or_else(
                || "a `.jsonl` file".to_owned(),
                |name| format!("`{}`", name.to_string_lossy()),
            );
            fail(
                None,
                format!(
                    "holds one JSON object per line (JSON Lines), but a `.json` file is read as one JSON document ({error}); rename it to {renamed} (or `.ndjson`), or put the cases in one array `[{{...}}, {{...}}]`"
                ),
            )
        } else {
            fail(None, format!("not JSON: {error}"))
        }
    })?;
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut object) => match object.remove("cases") {
            Some(Value::Array(items)) => items,
            _ => {
                return Err(fail(
                    Some("cases"),
                    "expected an array of cases under `cases`".to_owned(),
                ));
            }
        },
        _ => {
            return Err(fail(
                None,
                "expected an array of cases, or an object with a `cases` array".to_owned(),
            ));
        }
    };
    let cases = items
        .into_iter()
        .enumerate()
        .map(|(index, item)| read_case(file, Location::Case(index + 1), item, answers))
        .collect::<Result<Vec<_>, _>>()?;
    check_unique_names(file, &cases)?;
    Ok(cases)
}

fn read_case<I: DeserializeOwned>(
    file: &Path,
    location: Location,
    value: Value,
    answers: Option<&AnswerCheck>,
) -> Result<(Case<I>, Read), EvalError> {
    let fail = |field: Option<String>, message: String| EvalError::Dataset {
        file: file.to_owned(),
        location,
        field,
        message,
    };
    let Value::Object(mut object) = value else {
        return Err(fail(None, "a case must be a JSON object".to_owned()));
    };
    if let Some(unknown) = object.keys().find(|key| !FIELDS.contains(&key.as_str())) {
        return Err(fail(
            Some(unknown.clone()),
            format!("unknown field; expected one of {}", FIELDS.join(", ")),
        ));
    }
    let name = match object.remove("name") {
        None => match location {
            Location::Line(n) => format!("line {n}"),
            Location::Case(n) => format!("case {n}"),
            Location::File => String::new(),
        },
        Some(Value::String(name)) if !name.trim().is_empty() => name,
        Some(_) => {
            return Err(fail(
                Some("name".into()),
                "must be a non-empty string".into(),
            ));
        }
    };
    let input = object
        .remove("input")
        .ok_or_else(|| fail(Some("input".into()), "missing".into()))?;
    let input: I = serde_path_to_error::deserialize(input).map_err(|error| {
        let inner = error.path().to_string();
        let field = if inner == "." {
            "input".to_owned()
        } else {
            format!("input.{inner}")
        };
        fail(Some(field), error.into_inner().to_string())
    })?;
    let listed = object.contains_key("expected_any");
    let expected =
        read_expected(&mut object).map_err(|(field, message)| fail(Some(field), message))?;
    let rules = match object.remove("rules") {
        None => Rules::default(),
        Some(rules) => serde_path_to_error::deserialize(rules).map_err(|error| {
            let inner = error.path().to_string();
            let field = if inner == "." {
                "rules".to_owned()
            } else {
                format!("rules.{inner}")
            };
            fail(Some(field), error.into_inner().to_string())
        })?,
    };
    if let Some(answers) = answers {
        check_answers(answers, &expected, &rules, listed)
            .map_err(|(field, message)| fail(Some(field), message))?;
    }
    let metadata = match object.remove("metadata") {
        None => Map::new(),
        Some(Value::Object(metadata)) => metadata,
        Some(_) => return Err(fail(Some("metadata".into()), "must be an object".into())),
    };
    let case = Case {
        name,
        input,
        expected,
        metadata,
        rules,
    };
    Ok((case, Read { location, listed }))
}

/// Checks a case's expected values against the answer type: the field at fault
/// (`expected`, `expected_any[1].customer.name`) and why. Cases graded by a judge or an
/// external validator, and `expected_schema` cases, are not checked.
fn check_answers(
    answers: &AnswerCheck,
    expected: &ValueSet,
    rules: &Rules,
    listed: bool,
) -> Result<(), (String, String)> {
    let ValueSet::AnyOf(values) = expected else {
        return Ok(());
    };
    if rules.judge.is_some() || rules.external.is_some() {
        return Ok(());
    }
    for (index, value) in values.iter().enumerate() {
        let field = if listed {
            format!("expected_any[{index}]")
        } else {
            "expected".to_owned()
        };
        answers
            .check(value, rules)
            .map_err(|(path, message)| (format!("{field}{path}"), message))?;
    }
    Ok(())
}

fn read_expected(object: &mut Map<String, Value>) -> Result<ValueSet, (String, String)> {
    let one = object.remove("expected");
    let any = object.remove("expected_any");
    let schema = object.remove("expected_schema");
    match (one, any, schema) {
        (Some(value), None, None) => Ok(ValueSet::one(value)),
        (None, Some(Value::Array(values)), None) if !values.is_empty() => {
            Ok(ValueSet::AnyOf(values))
        }
        (None, Some(_), None) => Err((
            "expected_any".into(),
            "must be a non-empty array of acceptable answers".into(),
        )),
        (None, None, Some(schema @ (Value::Object(_) | Value::Bool(_)))) => {
            crate::grade::compile(&schema)
                .map_err(|error| ("expected_schema".into(), error.to_string()))?;
            Ok(ValueSet::Schema(schema))
        }
        (None, None, Some(_)) => Err((
            "expected_schema".into(),
            "must be a JSON Schema (an object or a boolean)".into(),
        )),
        (None, None, None) => Err((
            "expected".into(),
            "missing; give one of `expected`, `expected_any` or `expected_schema`".into(),
        )),
        _ => Err((
            "expected".into(),
            "give only one of `expected`, `expected_any` or `expected_schema`".into(),
        )),
    }
}

fn check_unique_names<I>(file: &Path, cases: &[(Case<I>, Read)]) -> Result<(), EvalError> {
    let mut seen = std::collections::HashSet::new();
    for (case, read) in cases {
        if !seen.insert(case.name.as_str()) {
            return Err(EvalError::Dataset {
                file: file.to_owned(),
                location: read.location,
                field: Some("name".into()),
                message: format!(
                    "`{}` names an earlier case too; reports compare cases by name",
                    case.name
                ),
            });
        }
    }
    Ok(())
}

/// Whether `text` is JSON Lines: two or more lines, each one JSON value.
fn looks_like_json_lines(text: &str) -> bool {
    let mut count = 0;
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        if serde_json::from_str::<Value>(line).is_err() {
            return false;
        }
        count += 1;
    }
    count >= 2
}

/// A way of comparing strings: case sensitivity and whitespace, as [`Rules`] set them.
type Folding = (bool, Whitespace);

/// The answer type's schema, compiled once per way of comparing strings.
pub(crate) struct AnswerCheck {
    type_name: String,
    schema: Arc<Value>,
    /// Exact comparison, then each other string folding met, compiled on first use.
    compiled: RefCell<Vec<(Folding, Rc<jsonschema::Validator>)>>,
}

impl AnswerCheck {
    fn of<O: JsonSchema + 'static>() -> Result<Self, EvalError> {
        let target =
            target_schema::<O>().map_err(|error| EvalError::MalformedSchema(error.to_string()))?;
        Ok(Self::new(&target))
    }

    /// The check of answers of the type `target` describes.
    pub(crate) fn new(target: &TargetSchema) -> Self {
        Self {
            type_name: target.type_name.clone(),
            schema: answer_schema(target),
            compiled: RefCell::default(),
        }
    }

    /// Checks `expected` as the answer of a case graded under `rules`: the path of the
    /// first field at fault (`.customer.name`, empty for the value itself) and why.
    fn check(&self, expected: &Value, rules: &Rules) -> Result<(), (String, String)> {
        let validator = self
            .validator(rules)
            .map_err(|error| (String::new(), error.to_string()))?;
        let envelope = json!({ ENVELOPE_PROPERTY: rules.canonical(expected) });
        // A misspelt field is both an unknown field and a missing one: the unknown one
        // names what was written, so it is told first.
        let errors: Vec<_> = validator.iter_errors(&envelope).collect();
        let Some(error) = errors
            .iter()
            .find(|error| {
                matches!(
                    error.kind(),
                    ValidationErrorKind::AdditionalProperties { .. }
                )
            })
            .or(errors.first())
        else {
            return Ok(());
        };
        let mut path = field_path(&error.instance_path().to_string());
        let message = match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let names = unexpected.join("`, `");
                if let Some(first) = unexpected.first() {
                    path.push('.');
                    path.push_str(first);
                }
                format!(
                    "`{names}` is not a field of the answer type `{}` here; correct the name (expected values are checked against the answer type)",
                    self.type_name
                )
            }
            _ => format!(
                "{error}, so no answer of type `{}` can equal this value; correct the expected value (expected values are checked against the answer type)",
                self.type_name
            ),
        };
        Err((path, message))
    }

    /// The validator for `rules`' way of comparing strings: enum members and constants
    /// folded as the rules fold answers.
    fn validator(&self, rules: &Rules) -> Result<Rc<jsonschema::Validator>, EvalError> {
        let key: Folding = (rules.case_sensitive, rules.whitespace);
        let mut compiled = self.compiled.borrow_mut();
        if let Some((_, validator)) = compiled.iter().find(|(k, _)| *k == key) {
            return Ok(Rc::clone(validator));
        }
        let mut schema = (*self.schema).clone();
        if key != (true, Whitespace::Keep) {
            fold_literals(&mut schema, rules);
        }
        let validator = Rc::new(compile(&schema)?);
        compiled.push((key, Rc::clone(&validator)));
        Ok(validator)
    }
}

/// The schema an expected value is checked against: the strict envelope the model is
/// given (every field required, none other allowed), or the full one for a target the
/// strict form cannot describe (maps, recursive types).
fn answer_schema(target: &TargetSchema) -> Arc<Value> {
    if target.strict_compatible {
        Arc::clone(&target.strict)
    } else {
        Arc::clone(&target.full)
    }
}

/// Applies `rules`' folding to every `enum` member and `const` of `schema`.
fn fold_literals(schema: &mut Value, rules: &Rules) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object.iter_mut() {
                match key.as_str() {
                    "enum" | "const" => *value = rules.canonical(value),
                    // Maps of names to schemas: a property named `enum` is no keyword.
                    "properties" | "patternProperties" | "$defs" | "definitions" => {
                        if let Value::Object(schemas) = value {
                            for schema in schemas.values_mut() {
                                fold_literals(schema, rules);
                            }
                        }
                    }
                    _ => fold_literals(value, rules),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| fold_literals(item, rules)),
        _ => {}
    }
}

/// A JSON pointer inside the envelope (`/value/lines/0/cents`) as a field path after
/// the expected value's own name (`.lines[0].cents`).
fn field_path(pointer: &str) -> String {
    let inner = pointer
        .strip_prefix('/')
        .and_then(|rest| rest.strip_prefix(ENVELOPE_PROPERTY))
        .unwrap_or_default();
    let mut path = String::new();
    for segment in inner.split('/').filter(|segment| !segment.is_empty()) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if segment.bytes().all(|b| b.is_ascii_digit()) {
            path.push_str(&format!("[{segment}]"));
        } else {
            path.push('.');
            path.push_str(&segment);
        }
    }
    path
}
