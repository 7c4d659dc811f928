//! Datasets: typed cases from JSON Lines and JSON; a malformed case is an error naming the
//! file, the line (or case) and the field.

use intent_rs_eval::{Dataset, EvalError, JudgeSelector, Location, ValueSet, Whitespace};
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
struct Review {
    text: String,
    stars: u8,
}

fn dataset_error(
    result: Result<Dataset<Review>, EvalError>,
) -> (String, Location, Option<String>, String) {
    match result {
        Err(EvalError::Dataset {
            file,
            location,
            field,
            message,
        }) => (file.display().to_string(), location, field, message),
        other => panic!("expected a dataset error, got {other:?}"),
    }
}

#[test]
fn json_lines_read_into_typed_cases() {
    let text = r#"{"name": "happy", "input": {"text": "Loved it", "stars": 5}, "expected": "Positive"}

{"input": {"text": "Meh", "stars": 3}, "expected_any": ["Neutral", "Mixed"], "rules": {"case_sensitive": false, "whitespace": "collapse", "judge": {"name": "strict", "variant": "cheap"}}, "metadata": {"lang": "en"}}
{"name": "shape", "input": {"text": "x", "stars": 1}, "expected_schema": {"type": "string"}}
"#;
    let dataset: Dataset<Review> = Dataset::from_jsonl_str("reviews.jsonl", text).unwrap();
    assert_eq!(dataset.name, "reviews");
    assert_eq!(dataset.len(), 3);
    let [happy, meh, shape] = &dataset.cases[..] else {
        panic!("three cases")
    };
    assert_eq!(happy.name, "happy");
    assert_eq!(
        happy.input,
        Review {
            text: "Loved it".into(),
            stars: 5
        }
    );
    assert_eq!(happy.expected, ValueSet::one("Positive"));
    // An unnamed case is named by its line (blank lines count).
    assert_eq!(meh.name, "line 3");
    assert_eq!(meh.expected, ValueSet::any_of(["Neutral", "Mixed"]));
    assert!(!meh.rules.case_sensitive);
    assert_eq!(meh.rules.whitespace, Whitespace::Collapse);
    assert_eq!(
        meh.rules.judge,
        Some(JudgeSelector::variant("strict", "cheap"))
    );
    assert_eq!(meh.metadata["lang"], json!("en"));
    assert_eq!(shape.expected, ValueSet::schema(json!({"type": "string"})));
}

#[test]
fn a_line_that_is_not_json_names_file_and_line() {
    let text = "{\"input\": {\"text\": \"a\", \"stars\": 1}, \"expected\": 1}\n{\"input\": oops}\n";
    let (file, location, field, message) =
        dataset_error(Dataset::from_jsonl_str("cases.jsonl", text));
    assert_eq!(file, "cases.jsonl");
    assert_eq!(location, Location::Line(2));
    assert_eq!(field, None);
    assert!(message.starts_with("not JSON"), "{message}");
}

#[test]
fn a_wrong_input_field_is_named_by_its_path() {
    let text = "{\"input\": {\"text\": \"a\", \"stars\": 1}, \"expected\": 1}\n\
                {\"input\": {\"text\": \"b\", \"stars\": \"five\"}, \"expected\": 1}\n";
    let error = Dataset::<Review>::from_jsonl_str("cases.jsonl", text).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("cases.jsonl: line 2: field `input.stars`: invalid type"),
        "{error}"
    );
    let (_, _, field, message) = dataset_error(Dataset::from_jsonl_str(
        "cases.jsonl",
        "{\"input\": {\"text\": \"b\"}, \"expected\": 1}",
    ));
    assert_eq!(field.as_deref(), Some("input"));
    assert!(message.contains("missing field `stars`"), "{message}");
}

#[test]
fn every_case_field_is_checked() {
    let cases = [
        (r#"{"expected": 1}"#, "input", "missing"),
        (
            r#"{"input": {"text": "a", "stars": 1}}"#,
            "expected",
            "missing",
        ),
        (
            r#"{"input": {"text": "a", "stars": 1}, "expected": 1, "expected_any": [1]}"#,
            "expected",
            "only one",
        ),
        (
            r#"{"input": {"text": "a", "stars": 1}, "expected_any": []}"#,
            "expected_any",
            "non-empty",
        ),
        (
            r#"{"input": {"text": "a", "stars": 1}, "expected_schema": {"type": 3}}"#,
            "expected_schema",
            "malformed",
        ),
        (
            r#"{"input": {"text": "a", "stars": 1}, "expected": 1, "expcted": 2}"#,
            "expcted",
            "unknown field",
        ),
        (
            r#"{"input": {"text": "a", "stars": 1}, "expected": 1, "rules": {"whitespace": "squash"}}"#,
            "rules.whitespace",
            "unknown variant",
        ),
        (
            r#"{"input": {"text": "a", "stars": 1}, "expected": 1, "metadata": [1]}"#,
            "metadata",
            "object",
        ),
        (
            r#"{"input": {"text": "a", "stars": 1}, "expected": 1, "name": 7}"#,
            "name",
            "string",
        ),
    ];
    for (line, want_field, want_message) in cases {
        let (_, location, field, message) = dataset_error(Dataset::from_jsonl_str("d.jsonl", line));
        assert_eq!(location, Location::Line(1), "{line}");
        assert_eq!(field.as_deref(), Some(want_field), "{line}: {message}");
        assert!(message.contains(want_message), "{line}: {message}");
    }
}

#[test]
fn duplicate_names_are_an_error_on_the_second_line() {
    let text = "{\"name\": \"a\", \"input\": {\"text\": \"a\", \"stars\": 1}, \"expected\": 1}\n\n\
                {\"name\": \"a\", \"input\": {\"text\": \"b\", \"stars\": 2}, \"expected\": 2}\n";
    let (_, location, field, _) = dataset_error(Dataset::from_jsonl_str("d.jsonl", text));
    assert_eq!(location, Location::Line(3));
    assert_eq!(field.as_deref(), Some("name"));
}

#[test]
fn json_files_hold_an_array_or_an_object_with_cases() {
    let array = r#"[{"input": {"text": "a", "stars": 1}, "expected": "x"},
                    {"input": {"text": "b", "stars": 2}, "expected": "y"}]"#;
    let dataset: Dataset<Review> = Dataset::from_json_str("set.json", array).unwrap();
    assert_eq!(dataset.cases[1].name, "case 2");
    let object = r#"{"cases": [{"input": {"text": "a", "stars": 1}, "expected": "x"}]}"#;
    assert_eq!(
        Dataset::<Review>::from_json_str("set.json", object)
            .unwrap()
            .len(),
        1
    );
    let bad = r#"[{"input": {"text": "a", "stars": 1}, "expected": "x"}, {"input": {"text": 1, "stars": 2}, "expected": "y"}]"#;
    let (_, location, field, _) = dataset_error(Dataset::from_json_str("set.json", bad));
    assert_eq!(location, Location::Case(2));
    assert_eq!(field.as_deref(), Some("input.text"));
}

#[test]
fn files_are_read_by_extension() {
    let folder = tempfile::tempdir().unwrap();
    let lines = folder.path().join("reviews.jsonl");
    std::fs::write(
        &lines,
        "{\"input\": {\"text\": \"a\", \"stars\": 1}, \"expected\": 1}\n",
    )
    .unwrap();
    let json = folder.path().join("reviews.json");
    std::fs::write(
        &json,
        "[{\"input\": {\"text\": \"a\", \"stars\": 1}, \"expected\": 1}]",
    )
    .unwrap();
    assert_eq!(Dataset::<Review>::from_file(&lines).unwrap().len(), 1);
    assert_eq!(Dataset::<Review>::from_file(&json).unwrap().len(), 1);
    let missing = folder.path().join("missing.jsonl");
    let (file, location, _, message) = dataset_error(Dataset::from_file(&missing));
    assert!(file.ends_with("missing.jsonl"));
    assert_eq!(location, Location::File);
    assert!(message.contains("cannot be read"), "{message}");
}

// ---------------------------------------------------------------------------------------
// Expected values checked against the answer type

#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize, schemars::JsonSchema)]
enum Team {
    Billing,
    Support,
}

#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Customer {
    name: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Triage {
    team: Team,
    priority: u8,
    customer: Customer,
}

const GOOD: &str = r#"{"name": "good", "input": {"text": "a", "stars": 1}, "expected": {"team": "Billing", "priority": 2, "customer": {"name": "Ann"}}}"#;

fn checked(text: &str) -> Result<Dataset<Review>, EvalError> {
    Dataset::from_jsonl_str_checked::<Triage>("triage.jsonl", text)
}

#[test]
fn a_misspelt_field_in_an_expected_value_names_file_line_and_field() {
    let typo = r#"{"input": {"text": "b", "stars": 2}, "expected": {"team": "Support", "priority": 1, "customer": {"nmae": "Bo"}}}"#;
    let text = format!("{GOOD}\n{typo}\n");
    // Unchecked, the typo would only show as the model's failure on every run.
    assert_eq!(
        Dataset::<Review>::from_jsonl_str("triage.jsonl", &text)
            .unwrap()
            .len(),
        2
    );
    let (file, location, field, message) = dataset_error(checked(&text));
    assert_eq!(file, "triage.jsonl");
    assert_eq!(location, Location::Line(2));
    assert_eq!(field.as_deref(), Some("expected.customer.nmae"));
    assert!(
        message.contains("`nmae` is not a field of the answer type `Triage`"),
        "{message}"
    );
    assert!(checked(GOOD).is_ok());
}

#[test]
fn a_misspelt_enum_member_or_a_wrong_type_names_the_field() {
    let member = r#"{"input": {"text": "b", "stars": 2}, "expected_any": [{"team": "Billing", "priority": 1, "customer": {"name": "Bo"}}, {"team": "Suport", "priority": 1, "customer": {"name": "Bo"}}]}"#;
    let (_, location, field, message) = dataset_error(checked(member));
    assert_eq!(location, Location::Line(1));
    assert_eq!(field.as_deref(), Some("expected_any[1].team"));
    assert!(message.contains("\"Suport\""), "{message}");
    assert!(message.contains("`Triage`"), "{message}");

    let number = r#"{"input": {"text": "b", "stars": 2}, "expected": {"team": "Billing", "priority": "high", "customer": {"name": "Bo"}}}"#;
    let (_, _, field, _) = dataset_error(checked(number));
    assert_eq!(field.as_deref(), Some("expected.priority"));
}

#[test]
fn members_are_compared_as_the_cases_rules_compare_answers() {
    let lower = r#"{"input": {"text": "b", "stars": 2}, "expected": {"team": "billing", "priority": 1, "customer": {"name": "Bo"}}, "rules": {"case_sensitive": false}}"#;
    assert!(checked(lower).is_ok());
    let exact = lower.replace(r#", "rules": {"case_sensitive": false}"#, "");
    let (_, _, field, _) = dataset_error(checked(&exact));
    assert_eq!(field.as_deref(), Some("expected.team"));
}

#[test]
fn judged_cases_and_expected_schemas_are_not_checked_against_the_answer_type() {
    let judged = r#"{"input": {"text": "b", "stars": 2}, "expected": "a polite reply that names the team", "rules": {"judge": "strict"}}"#;
    let schema = r#"{"input": {"text": "b", "stars": 2}, "expected_schema": {"type": "object"}}"#;
    assert_eq!(checked(&format!("{judged}\n{schema}")).unwrap().len(), 2);
}

#[test]
fn a_checked_json_file_names_the_case() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("triage.json");
    let typo = GOOD.replace("\"Billing\"", "\"Bililng\"");
    std::fs::write(&path, format!("[{GOOD}, {typo}]")).unwrap();
    let (file, location, field, _) = dataset_error(Dataset::from_file_checked::<Triage>(&path));
    assert!(file.ends_with("triage.json"), "{file}");
    assert_eq!(location, Location::Case(2));
    assert_eq!(field.as_deref(), Some("expected.team"));
}

#[test]
fn json_lines_in_a_json_file_say_what_the_file_is_and_what_to_rename_it_to() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("cases.json");
    std::fs::write(
        &path,
        "{\"input\": {\"text\": \"a\", \"stars\": 1}, \"expected\": 1}\n{\"input\": {\"text\": \"b\", \"stars\": 2}, \"expected\": 2}\n",
    )
    .unwrap();
    let (_, location, field, message) = dataset_error(Dataset::from_file(&path));
    assert_eq!(location, Location::File);
    assert_eq!(field, None);
    assert!(message.contains("JSON Lines"), "{message}");
    assert!(message.contains("rename it to `cases.jsonl`"), "{message}");
    // A `.json` file that is simply broken is still called not JSON.
    std::fs::write(&path, "[{\"input\": ").unwrap();
    let (_, _, _, message) = dataset_error(Dataset::from_file(&path));
    assert!(message.starts_with("not JSON"), "{message}");
}
