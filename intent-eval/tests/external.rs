//! External validators: small shell scripts that accept, reject, crash, time out and
//! answer garbage, and the four distinct errors.

#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use intent_rs_eval::{CaseContext, EvalError, ExternalValidator, Rules, Validators, ValueSet};
use serde_json::{Map, Value, json};

fn script(folder: &Path, name: &str, body: &str) -> PathBuf {
    let path = folder.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Compares the answer file with the expected value given in the environment, and says
/// which case and metadata it saw.
const COMPARE: &str = r#"actual=$(cat "$1")
if [ "$actual" = "$EXPECTED" ]; then verdict=true; else verdict=false; fi
printf '{"pass": %s, "explanation": "case %s, lang %s, answer %s"}\n' "$verdict" "$CASE" "$LANG_TAG" "$2""#;

fn comparing(path: &Path) -> ExternalValidator {
    ExternalValidator::new("compare", path.to_string_lossy())
        .file("answer.json", "{{ actual | tojson }}")
        .arg("{{ files['answer.json'] }}")
        .arg("{{ actual }}")
        .env("EXPECTED", "{{ expected[0] | tojson }}")
        .env("CASE", "{{ name }}")
        .env("LANG_TAG", "{{ metadata.lang }}")
}

async fn run(
    validator: ExternalValidator,
    actual: Value,
) -> Result<intent_rs_eval::ValidationResult, EvalError> {
    let name = validator.name().to_owned();
    let validators = Validators::new().external(validator);
    let rules = Rules::exact().external(name);
    validators.check([&rules])?;
    let expected = ValueSet::one("Positive");
    let mut metadata = Map::new();
    metadata.insert("lang".into(), json!("en"));
    let context = CaseContext {
        name: "happy",
        expected: &expected,
        actual: &actual,
        prompt: "Classify",
        response_format: &json!("text"),
        metadata: &metadata,
        rules: &rules,
    };
    validators.validate(&context).await
}

#[tokio::test]
async fn an_accepting_script_passes_with_its_explanation() {
    let folder = tempfile::tempdir().unwrap();
    let path = script(folder.path(), "compare.sh", COMPARE);
    let result = run(comparing(&path), json!("Positive")).await.unwrap();
    assert!(result.passed, "{result:?}");
    assert_eq!(result.title, "external compare");
    assert_eq!(result.explanation, "case happy, lang en, answer Positive");
}

#[tokio::test]
async fn a_rejecting_script_is_a_result_not_an_error() {
    let folder = tempfile::tempdir().unwrap();
    let path = script(folder.path(), "compare.sh", COMPARE);
    let result = run(comparing(&path), json!("Negative")).await.unwrap();
    assert!(!result.passed);
    assert_eq!(result.explanation, "case happy, lang en, answer Negative");
}

#[tokio::test]
async fn a_crashing_script_is_an_execution_error_with_its_stderr() {
    let folder = tempfile::tempdir().unwrap();
    let path = script(
        folder.path(),
        "crash.sh",
        "echo 'validator blew up' >&2\nexit 3",
    );
    let error = run(
        ExternalValidator::new("crash", path.to_string_lossy()),
        json!(1),
    )
    .await
    .unwrap_err();
    let EvalError::ExternalExecution { validator, message } = &error else {
        panic!("expected an execution error, got {error:?}");
    };
    assert_eq!(validator, "crash");
    assert!(message.contains("exit status: 3"), "{message}");
    assert!(message.contains("validator blew up"), "{message}");
}

#[tokio::test]
async fn a_script_past_its_timeout_is_stopped_and_an_execution_error() {
    let folder = tempfile::tempdir().unwrap();
    let path = script(folder.path(), "slow.sh", "exec sleep 20");
    let started = Instant::now();
    let validator =
        ExternalValidator::new("slow", path.to_string_lossy()).timeout(Duration::from_millis(300));
    let error = run(validator, json!(1)).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        matches!(&error, EvalError::ExternalExecution { message, .. } if message.contains("timeout")),
        "{error:?}"
    );
}

#[tokio::test]
async fn garbage_on_stdout_is_a_response_error() {
    let folder = tempfile::tempdir().unwrap();
    for (name, body) in [
        ("prose.sh", "echo 'looks good to me'"),
        ("shape.sh", "echo '{\"passed\": true}'"),
        ("empty.sh", "true"),
    ] {
        let path = script(folder.path(), name, body);
        let error = run(
            ExternalValidator::new("garbage", path.to_string_lossy()),
            json!(1),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&error, EvalError::ExternalResponse { validator, .. } if validator == "garbage"),
            "{name}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_command_that_cannot_start_is_an_execution_error() {
    let error = run(
        ExternalValidator::new("gone", "/nonexistent/validator"),
        json!(1),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&error, EvalError::ExternalExecution { message, .. } if message.contains("cannot start")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_validator_that_is_not_configured_is_its_own_error() {
    let validators = Validators::new();
    let rules = Rules::exact().external("nowhere");
    assert!(
        matches!(validators.check([&rules]), Err(EvalError::ExternalNotFound(name)) if name == "nowhere")
    );
    let expected = ValueSet::one(1);
    let metadata = Map::new();
    let context = CaseContext {
        name: "c",
        expected: &expected,
        actual: &json!(1),
        prompt: "",
        response_format: &Value::Null,
        metadata: &metadata,
        rules: &rules,
    };
    assert!(matches!(
        validators.validate(&context).await,
        Err(EvalError::ExternalNotFound(_))
    ));
}

#[test]
fn templates_are_checked_before_any_case() {
    let broken = ExternalValidator::new("v", "true").arg("{{ actual | }}");
    assert!(
        matches!(broken.check(), Err(EvalError::ExternalTemplate { template, .. }) if template == "args[0]")
    );
    let typo = ExternalValidator::new("v", "true").env("ANSWER", "{{ acutal }}");
    let Err(EvalError::ExternalTemplate {
        template, message, ..
    }) = typo.check()
    else {
        panic!("a misspelt variable is a template error")
    };
    assert_eq!(template, "env.ANSWER");
    assert!(message.contains("acutal"), "{message}");
    let unclosed = ExternalValidator::new("v", "true").file("in.txt", "{% if actual %}yes");
    assert!(matches!(
        unclosed.check(),
        Err(EvalError::ExternalTemplate { .. })
    ));
    let nested = ExternalValidator::new("v", "true").file("../escape.txt", "{{ actual }}");
    assert!(matches!(
        nested.check(),
        Err(EvalError::ExternalTemplate { .. })
    ));
    let fine = ExternalValidator::new("v", "true")
        .file("in.json", "{{ actual | tojson }}")
        .arg("--file={{ files['in.json'] }}")
        .env("FORMAT", "{{ response_format | tojson }}");
    fine.check().unwrap();
}
