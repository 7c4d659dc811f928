use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

use super::*;
use crate::input::prepare_input;
use crate::result::{IssueSource, ResultIssue};
use crate::schema::target_schema;

#[derive(Serialize, JsonSchema)]
struct Line {
    sku: String,
    qty: u32,
}

#[derive(Serialize, JsonSchema)]
struct Invoice {
    number: String,
    lines: Vec<Line>,
    due: Option<String>,
}

#[allow(dead_code)] // only described
#[derive(JsonSchema)]
enum Sentiment {
    Positive,
    Neutral,
    Negative,
}

fn text_input(text: &str) -> PreparedInput {
    prepare_input(text).unwrap()
}

fn typed<T: JsonSchema + 'static>() -> OutputTarget {
    OutputTarget::typed(target_schema::<T>().unwrap(), false)
}

/// The whole prompt as one text, the way a snapshot shows it.
fn shown(prompt: &RenderedPrompt) -> String {
    format!(
        "=== system ===\n{}\n=== user ===\n{}",
        prompt.system, prompt.user
    )
}

fn failed_attempt(raw: &str, messages: &[&str]) -> AttemptRecord {
    let mut attempt = AttemptRecord::new(1);
    attempt.raw_output = raw.to_owned();
    attempt.issues = messages
        .iter()
        .map(|m| ResultIssue::new(IssueSource::Verification, *m, 1))
        .collect();
    attempt
}

#[test]
fn snapshot_string_target() {
    let plan = PromptPlan::new(
        "  Summarize the review in one sentence.\n",
        text_input("The battery lasts two days. The screen scratches easily."),
        OutputTarget::Text,
    );
    insta::assert_snapshot!(shown(&render(&plan, None)));
}

#[test]
fn snapshot_struct_target_with_system_and_output_requirements() {
    let mut plan = PromptPlan::new(
        "Extract the invoice fields.",
        text_input("Invoice 7, due 2026-12-01: 2 x A-1, 1 x B-2"),
        typed::<Invoice>(),
    );
    plan.system = Some("You work for the accounts team.".to_owned());
    plan.output_requirements = Some("Use the SKU exactly as written.".to_owned());
    insta::assert_snapshot!(shown(&render(&plan, None)));
}

#[test]
fn snapshot_enum_target() {
    let plan = PromptPlan::new(
        "Classify the sentiment of the review.",
        text_input("Loved it"),
        typed::<Sentiment>(),
    );
    insta::assert_snapshot!(shown(&render(&plan, None)));
}

#[test]
fn snapshot_with_examples() {
    let mut plan = PromptPlan::new(
        "Classify the sentiment of the review.",
        text_input("It broke after a week."),
        typed::<Sentiment>(),
    );
    plan.examples = vec![
        Example::new(" Works great \n", r#"{"value": "Positive"}"#),
        Example::new("It is a phone.", "\n{\"value\": \"Neutral\"}\n"),
    ];
    insta::assert_snapshot!(shown(&render(&plan, None)));
}

#[test]
fn snapshot_retry() {
    let mut plan = PromptPlan::new(
        "Extract the invoice fields.",
        text_input("Invoice 7: 2 x A-1"),
        typed::<Invoice>(),
    );
    plan.examples = vec![Example::new(
        "Invoice 1: 1 x Z-9",
        r#"{"value": {"number": "1", "lines": [{"sku": "Z-9", "qty": 1}], "due": null}}"#,
    )];
    let previous = failed_attempt(
        r#"{"value": {"number": 7, "lines": []}}"#,
        &[
            "`value.number` must be a string, not a number.",
            "`value.lines` is empty; list every line of the invoice.",
        ],
    );
    insta::assert_snapshot!(shown(&render(&plan, Some(&previous))));
}

#[test]
fn sections_come_in_order() {
    let mut plan = PromptPlan::new("Do it.", text_input("x"), typed::<Invoice>());
    plan.examples = vec![Example::new("a", "b")];
    let user = render(&plan, Some(&failed_attempt("bad", &["wrong"]))).user;
    let headings: Vec<&str> = user.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(
        headings,
        [
            "## Intent",
            "## Input (String)",
            "## Output requirements",
            "## Examples",
            "## Previous attempt",
            "## Problems with the previous attempt"
        ]
    );
}

#[test]
fn no_examples_and_no_issues_add_no_sections() {
    let plan = PromptPlan::new("Do it.", text_input("x"), OutputTarget::Text);
    let fresh = render(&plan, None);
    assert_eq!(
        fresh.user,
        "## Intent\nDo it.\n\n## Input (String)\nx\n\n## Output requirements\nReply with plain text only."
    );
    assert_eq!(render(&plan, Some(&failed_attempt("ok", &[]))), fresh);
    assert_eq!(fresh.system, SYSTEM_PREAMBLE);
}

#[test]
fn blank_system_instructions_and_requirements_are_left_out() {
    let mut plan = PromptPlan::new("Do it.", text_input("x"), OutputTarget::Text);
    plan.system = Some("  ".to_owned());
    plan.output_requirements = Some("\n".to_owned());
    let prompt = render(&plan, None);
    assert_eq!(prompt.system, SYSTEM_PREAMBLE);
    assert!(!prompt.user.contains("Additional output requirements"));
}

#[test]
fn the_input_text_is_not_trimmed() {
    let plan = PromptPlan::new("Do it.", text_input("  indented\n"), OutputTarget::Text);
    assert!(
        render(&plan, None)
            .user
            .contains("## Input (String)\n  indented\n\n\n## Output")
    );
}

#[test]
fn cut_chars_counts_characters_and_never_splits_one() {
    assert_eq!(cut_chars("h\u{e9}llo", 2), "h\u{e9}");
    assert_eq!(cut_chars("\u{1F600}\u{1F600}", 1), "\u{1F600}");
    assert_eq!(cut_chars("abc", 3), "abc");
    assert_eq!(cut_chars("abc", 10), "abc");
    assert_eq!(cut_chars("abc", 0), "");
}

#[test]
fn the_previous_output_is_cut_at_6000_characters() {
    let plan = PromptPlan::new("Do it.", text_input("x"), OutputTarget::Text);
    let long = "\u{e9}".repeat(PREVIOUS_OUTPUT_MAX_CHARS + 5);
    let user = render(&plan, Some(&failed_attempt(&long, &["too long"]))).user;
    let kept = "\u{e9}".repeat(PREVIOUS_OUTPUT_MAX_CHARS);
    assert!(user.contains(&format!(
        "## Previous attempt\n{kept}\n[cut after 6000 characters]\n\n## Problems"
    )));

    let exact = "a".repeat(PREVIOUS_OUTPUT_MAX_CHARS);
    let user = render(&plan, Some(&failed_attempt(&exact, &["x"]))).user;
    assert!(user.contains(&format!("## Previous attempt\n{exact}\n\n## Problems")));
}

#[test]
fn an_empty_previous_reply_is_named() {
    let plan = PromptPlan::new("Do it.", text_input("x"), OutputTarget::Text);
    let user = render(
        &plan,
        Some(&failed_attempt("", &["The provider timed out."])),
    )
    .user;
    assert!(user.contains("## Previous attempt\n(empty reply)\n\n"));
}

#[test]
fn contracts_of_json_object_and_runtime_targets() {
    let map = OutputTarget::typed(target_schema::<HashMap<String, u32>>().unwrap(), false);
    let plan = PromptPlan::new("Count words.", text_input("a b a"), map);
    assert_eq!(
        plan.output_contract(),
        "Reply with one JSON object {\"value\": <result>}.\n<result>: Map<String, u32>\nUse JSON types faithfully: numbers, booleans and null unquoted."
    );
    assert_eq!(plan.response_format(), ResponseFormat::JsonObject);
    assert_eq!(plan.schema(), None);

    let runtime = OutputTarget::runtime(Some(&json!({"type": "integer"}))).unwrap();
    let plan = PromptPlan::new("Count.", text_input("a"), runtime);
    assert_eq!(
        plan.output_contract(),
        "Reply with one JSON object {\"value\": <result>}.\n<result>: i64"
    );
    assert_eq!(plan.response_format(), ResponseFormat::JsonSchema);
    assert_eq!(
        plan.schema().unwrap()["properties"]["value"],
        json!({"type": "integer"})
    );

    let plan = PromptPlan::new(
        "Count.",
        text_input("a"),
        OutputTarget::runtime(None).unwrap(),
    );
    assert_eq!(
        plan.output_contract(),
        "Reply with one JSON object {\"value\": <result>}.\n<result>: any JSON value."
    );
    assert_eq!(plan.response_format(), ResponseFormat::JsonObject);
    assert_eq!(plan.schema(), None);

    assert!(OutputTarget::runtime(Some(&json!(1))).is_err());
}

#[test]
fn a_runtime_schema_is_described_with_its_field_names() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Who asks."},
            "budget_eur": {"type": "integer"},
            "tier": {"enum": ["basic", "pro"]},
            "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}}
        },
        "required": ["name", "budget_eur", "tier", "lines"],
        "$defs": {"Line": {"type": "object", "properties": {"sku": {"type": "string"}}}}
    });
    let plan = PromptPlan::new(
        "Read the request.",
        text_input("Ann, 5000 EUR"),
        OutputTarget::runtime(Some(&schema)).unwrap(),
    );
    assert_eq!(
        plan.output_contract(),
        "Reply with one JSON object {\"value\": <result>}.\n<result>: { name: String /* Who asks. */, budget_eur: i64, tier: (one of: basic, pro), lines: Vec<Line> } where Line { sku: String }"
    );
}

#[test]
fn typed_targets_send_the_strict_schema_unless_json_mode() {
    let schema = target_schema::<Invoice>().unwrap();
    let plan = PromptPlan::new(
        "x",
        text_input("x"),
        OutputTarget::typed(Arc::clone(&schema), false),
    );
    assert_eq!(plan.response_format(), ResponseFormat::JsonSchema);
    assert!(Arc::ptr_eq(&plan.schema().unwrap(), &schema.strict));

    let plan = PromptPlan::new("x", text_input("x"), OutputTarget::typed(schema, true));
    assert!(matches!(plan.target, OutputTarget::TypedJsonObject(_)));
    assert_eq!(plan.schema(), None);

    let plan = PromptPlan::new("x", text_input("x"), OutputTarget::Text);
    assert_eq!(plan.response_format(), ResponseFormat::Text);
    assert_eq!(plan.schema(), None);
}

#[test]
fn snapshot_struct_target_when_the_provider_enforces_the_schema() {
    let mut plan = PromptPlan::new(
        "Extract the invoice fields.",
        text_input("Invoice 7, due 2026-12-01: 2 x A-1, 1 x B-2"),
        typed::<Invoice>(),
    );
    plan.system = Some("You work for the accounts team.".to_owned());
    plan.output_requirements = Some("Use the SKU exactly as written.".to_owned());
    plan.schema_enforced = true;
    insta::assert_snapshot!(shown(&render(&plan, None)));
}

const ENFORCED_CONTRACT: &str =
    "Reply with one JSON object {\"value\": <result>} matching the provided JSON schema.";

#[test]
fn an_enforced_schema_shortens_the_contract_of_schema_targets_only() {
    let runtime = OutputTarget::runtime(Some(&json!({"type": "integer"}))).unwrap();
    for target in [typed::<Invoice>(), typed::<Sentiment>(), runtime] {
        let mut plan = PromptPlan::new("Do it.", text_input("x"), target);
        plan.schema_enforced = true;
        assert_eq!(
            plan.output_contract(),
            ENFORCED_CONTRACT,
            "{:?}",
            plan.target
        );
        assert_eq!(plan.response_format(), ResponseFormat::JsonSchema);
    }
    // Targets that send no schema keep their contract whatever the flag says: the
    // prompt is all the model has.
    let json_object = OutputTarget::typed(target_schema::<Invoice>().unwrap(), true);
    for target in [json_object, OutputTarget::AnyJson, OutputTarget::Text] {
        let mut plan = PromptPlan::new("Do it.", text_input("x"), target);
        let full = plan.output_contract();
        plan.schema_enforced = true;
        assert_eq!(plan.output_contract(), full, "{:?}", plan.target);
        assert_ne!(full, ENFORCED_CONTRACT);
    }
}

#[test]
fn a_retry_under_an_enforced_schema_keeps_the_short_contract_and_adds_the_problems() {
    let mut plan = PromptPlan::new("Do it.", text_input("x"), typed::<Invoice>());
    plan.schema_enforced = true;
    let user = render(&plan, Some(&failed_attempt("{}", &["`value` is missing."]))).user;
    assert_eq!(
        user,
        format!(
            "## Intent\nDo it.\n\n## Input (String)\nx\n\n## Output requirements\n{ENFORCED_CONTRACT}\n\n## Previous attempt\n{{}}\n\n## Problems with the previous attempt\n- `value` is missing.\nWrite a corrected response that fixes every problem above and still satisfies the intent."
        )
    );
}
