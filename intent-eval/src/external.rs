//! External validators: a trusted command that grades an answer and prints a JSON
//! verdict, `{"pass": true|false, "explanation": "..."}`, on stdout.
//!
//! Its arguments, environment variables and input files are `minijinja` templates filled
//! from the case. The variables are `name` (the case's), `expected` (the list of
//! acceptable answers, or the expected schema), `expected_kind` (`any_of` or `schema`),
//! `actual`, `prompt`, `response_format`, `metadata`, and in arguments and environment
//! `files` (each input file's path by its name). Use `| tojson` for JSON.
//!
//! The command is trusted: it runs with the harness's rights. To confine it, configure a
//! command that does (`docker run --rm ...`, `bwrap ...`).

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use minijinja::{Environment, UndefinedBehavior};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::EvalError;
use crate::grade::ValueSet;
use crate::validation::{CaseContext, Tokens, ValidationResult};

/// The variables templates may use; anything else is a typo found before the first case.
const VARIABLES: [&str; 8] = [
    "name",
    "expected",
    "expected_kind",
    "actual",
    "prompt",
    "response_format",
    "metadata",
    "files",
];

/// How much of the command's output an error quotes.
const EXCERPT_CHARS: usize = 300;

/// The default time a command may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A trusted command that grades answers.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalValidator {
    name: String,
    program: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    files: Vec<(String, String)>,
    timeout: Duration,
}

// What the command prints: nothing more, nothing less.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    pass: bool,
    #[serde(default)]
    explanation: String,
}

impl ExternalValidator {
    /// A validator named `name` that runs `program` (looked up on `PATH` when it has no
    /// slash) with no arguments, within [`DEFAULT_TIMEOUT`].
    pub fn new(name: impl Into<String>, program: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            files: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Adds an argument template.
    pub fn arg(mut self, template: impl Into<String>) -> Self {
        self.args.push(template.into());
        self
    }

    /// Adds an environment variable whose value is a template.
    pub fn env(mut self, name: impl Into<String>, template: impl Into<String>) -> Self {
        self.env.push((name.into(), template.into()));
        self
    }

    /// Adds an input file, written for each case into a fresh temporary folder; its path
    /// is `files["file_name"]` in argument and environment templates.
    pub fn file(mut self, file_name: impl Into<String>, template: impl Into<String>) -> Self {
        self.files.push((file_name.into(), template.into()));
        self
    }

    /// The time the command may run before it is stopped (and the case errs).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The validator's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn templates(&self) -> impl Iterator<Item = (String, &str)> {
        let args = self
            .args
            .iter()
            .enumerate()
            .map(|(i, t)| (format!("args[{i}]"), t.as_str()));
        let env = self
            .env
            .iter()
            .map(|(name, t)| (format!("env.{name}"), t.as_str()));
        let files = self
            .files
            .iter()
            .map(|(name, t)| (format!("files.{name}"), t.as_str()));
        args.chain(env).chain(files)
    }

    fn template_error(&self, template: &str, message: impl Into<String>) -> EvalError {
        EvalError::ExternalTemplate {
            validator: self.name.clone(),
            template: template.to_owned(),
            message: message.into(),
        }
    }

    /// Checks that every template compiles and uses only known variables, and that every
    /// input file has a plain name. Run before the first case.
    pub fn check(&self) -> Result<(), EvalError> {
        let env = environment();
        for (label, source) in self.templates() {
            let template = env
                .template_from_str(source)
                .map_err(|error| self.template_error(&label, error.to_string()))?;
            let mut unknown: Vec<String> = template
                .undeclared_variables(false)
                .into_iter()
                .filter(|name| !VARIABLES.contains(&name.as_str()))
                .collect();
            if label.starts_with("files.") && template.undeclared_variables(false).contains("files")
            {
                unknown.push("files (input files cannot name each other)".into());
            }
            if !unknown.is_empty() {
                unknown.sort();
                return Err(self.template_error(
                    &label,
                    format!(
                        "unknown variable {}; the variables are {}",
                        unknown.join(", "),
                        VARIABLES.join(", ")
                    ),
                ));
            }
        }
        for (file_name, _) in &self.files {
            let plain = !file_name.is_empty()
                && file_name != "."
                && file_name != ".."
                && !file_name.contains(['/', '\\']);
            if !plain {
                return Err(self.template_error(
                    &format!("files.{file_name}"),
                    "an input file needs a plain file name, without folders",
                ));
            }
        }
        Ok(())
    }

    /// Runs the command for one case and reads its verdict. A verdict that rejects the
    /// answer is a result; a template that cannot be rendered, a command that cannot run,
    /// fails or times out, and an answer that is not a verdict are errors.
    pub async fn validate(&self, case: &CaseContext<'_>) -> Result<ValidationResult, EvalError> {
        let env = environment();
        let mut context = json!({
            "name": case.name,
            "expected": case.expected.to_value(),
            "expected_kind": match case.expected {
                ValueSet::AnyOf(_) => "any_of",
                ValueSet::Schema(_) => "schema",
            },
            "actual": case.actual,
            "prompt": case.prompt,
            "response_format": case.response_format,
            "metadata": case.metadata,
        });
        let render = |label: &str, source: &str, context: &Value| {
            env.render_str(source, context)
                .map_err(|error| self.template_error(label, error.to_string()))
        };
        let execution = |message: String| EvalError::ExternalExecution {
            validator: self.name.clone(),
            message,
        };

        // The folder lives until the command has finished, and is removed with it.
        let folder = tempfile::tempdir()
            .map_err(|error| execution(format!("cannot create its input folder: {error}")))?;
        let mut paths = BTreeMap::new();
        for (file_name, source) in &self.files {
            let content = render(&format!("files.{file_name}"), source, &context)?;
            let path = folder.path().join(file_name);
            tokio::fs::write(&path, content).await.map_err(|error| {
                execution(format!("cannot write input file {file_name}: {error}"))
            })?;
            paths.insert(file_name.clone(), path.to_string_lossy().into_owned());
        }
        context["files"] = json!(paths);
        let args = self
            .args
            .iter()
            .enumerate()
            .map(|(i, source)| render(&format!("args[{i}]"), source, &context))
            .collect::<Result<Vec<_>, _>>()?;
        let vars = self
            .env
            .iter()
            .map(|(name, source)| Ok((name, render(&format!("env.{name}"), source, &context)?)))
            .collect::<Result<Vec<_>, EvalError>>()?;

        let child = tokio::process::Command::new(&self.program)
            .args(&args)
            .envs(vars)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A command past its timeout is killed when its future is dropped.
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| execution(format!("cannot start `{}`: {error}", self.program)))?;
        let output = tokio::time::timeout(self.timeout, child.wait_with_output())
            .await
            .map_err(|_| {
                execution(format!(
                    "ran longer than its timeout of {:?} and was stopped",
                    self.timeout
                ))
            })?
            .map_err(|error| execution(format!("could not be waited for: {error}")))?;
        if !output.status.success() {
            return Err(execution(format!(
                "exited with {}; stderr: {}",
                output.status,
                excerpt(&String::from_utf8_lossy(&output.stderr))
            )));
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let answer: Answer = serde_json::from_str(stdout.trim()).map_err(|error| {
            EvalError::ExternalResponse {
                validator: self.name.clone(),
                message: format!(
                    "expected {{\"pass\": true|false, \"explanation\": \"...\"}} ({error}); it printed: {}",
                    excerpt(&stdout)
                ),
            }
        })?;
        Ok(ValidationResult {
            passed: answer.pass,
            title: format!("external {}", self.name),
            explanation: answer.explanation,
            usage: Tokens::default(),
            cost: Default::default(),
            judge: None,
        })
    }
}

/// The template environment: an undefined variable is an error, never an empty string,
/// and nothing is HTML-escaped (the output is arguments and files, not a page).
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env
}

fn excerpt(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= EXCERPT_CHARS {
        format!("{text:?}")
    } else {
        let cut: String = text.chars().take(EXCERPT_CHARS).collect();
        format!("{cut:?}…")
    }
}
