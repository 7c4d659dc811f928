use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;

use super::*;
use crate::input::prepare_input;
use crate::provider::Role;
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

/// The whole request as one text, the way a snapshot shows it: the system prompt, then
/// every turn under its role.
fn shown(prompt: &RenderedPrompt) -> String {
    let mut text = format!("=== system ===\n{}", prompt.system);
    for message in &prompt.messages {
        text.push_str(&format!(
            "\n=== {} ===\n{}",
            message.role.as_str(),
            message.content
        ));
    }
    text
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
    insta::assert_snapshot!(shown(&render(&plan, &[])));
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
    insta::assert_snapshot!(shown(&render(&plan, &[])));
}

#[test]
fn snapshot_enum_target() {
    let plan = PromptPlan::new(
        "Classify the sentiment of the review.",
        text_input("Loved it"),
        typed::<Sentiment>(),
    );
    insta::assert_snapshot!(shown(&render(&plan, &[])));
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
    insta::assert_snapshot!(shown(&render(&plan, &[])));
}

fn retry_plan(enforced: bool) -> PromptPlan {
    let mut plan = PromptPlan::new(
        "Extract the invoice fields.",
        text_input("Invoice 7: 2 x A-1"),
        typed::<Invoice>(),
    );
    plan.examples = vec![Example::new(
        "Invoice 1: 1 x Z-9",
        r#"{"value": {"number": "1", "lines": [{"sku": "Z-9", "qty": 1}], "due": null}}"#,
    )];
    plan.schema_enforced = enforced;
    plan
}

fn two_failures() -> [AttemptRecord; 2] {
    [
        failed_attempt(
            r#"{"value": {"number": 7, "lines": []}}"#,
            &[
                "`value.number` must be a string, not a number.",
                "`value.lines` is empty; list every line of the invoice.",
            ],
        ),
        failed_attempt(
            r#"{"value": {"number": "7", "lines": []}}"#,
            &["`value.lines` is empty; list every line of the invoice."],
        ),
    ]
}

#[test]
fn snapshot_retry() {
    insta::assert_snapshot!(shown(&render(&retry_plan(false), &two_failures()[..1])));
}

#[test]
fn snapshot_third_attempt() {
    insta::assert_snapshot!(shown(&render(&retry_plan(false), &two_failures())));
}

#[test]
fn snapshot_third_attempt_when_the_provider_enforces_the_schema() {
    insta::assert_snapshot!(shown(&render(&retry_plan(true), &two_failures())));
}

#[test]
fn a_retry_keeps_every_earlier_turn_byte_for_byte() {
    for enforced in [false, true] {
        let plan = retry_plan(enforced);
        let failures = two_failures();
        let first = render(&plan, &[]);
        let second = render(&plan, &failures[..1]);
        let third = render(&plan, &failures);
        assert_eq!(first, first_request(&plan));
        for (earlier, later) in [(&first, &second), (&second, &third)] {
            assert_eq!(earlier.system, later.system);
            assert_eq!(later.messages.len(), earlier.messages.len() + 2);
            assert_eq!(
                earlier.messages[..],
                later.messages[..earlier.messages.len()]
            );
        }
        let roles: Vec<Role> = third.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::User,
                Role::Assistant,
                Role::User
            ]
        );
        assert_eq!(third.messages[1].content, failures[0].raw_output);
        assert_eq!(third.messages[3].content, failures[1].raw_output);
    }
}

#[test]
fn the_problems_turn_lists_every_issue() {
    let previous = failed_attempt("bad", &["wrong", "also wrong"]);
    let [reply, problems] = retry_turns(&previous).unwrap();
    assert_eq!(reply, Message::assistant("bad"));
    assert_eq!(
        problems,
        Message::user("Fix these and reply again:\n- wrong\n- also wrong")
    );
}

#[test]
fn sections_come_in_order() {
    let mut plan = PromptPlan::new("Do it.", text_input("x"), typed::<Invoice>());
    plan.examples = vec![Example::new("a", "b")];
    let prompt = render(&plan, &[failed_attempt("bad", &["wrong"])]);
    let headings: Vec<&str> = prompt
        .user()
        .lines()
        .filter(|l| l.starts_with("## "))
        .collect();
    assert_eq!(
        headings,
        [
            "## Intent",
            "## Input (String)",
            "## Output requirements",
            "## Examples",
        ]
    );
}

#[test]
fn no_examples_and_no_issues_add_nothing() {
    let plan = PromptPlan::new("Do it.", text_input("x"), OutputTarget::Text);
    let fresh = render(&plan, &[]);
    assert_eq!(
        fresh.user(),
        "## Intent\nDo it.\n\n## Input (String)\nx\n\n## Output requirements\nReply with plain text only."
    );
    assert_eq!(fresh.messages.len(), 1);
    assert_eq!(render(&plan, &[failed_attempt("ok", &[])]), fresh);
    assert_eq!(retry_turns(&failed_attempt("ok", &[])), None);
    assert_eq!(fresh.system, SYSTEM_PREAMBLE);
}

#[test]
fn blank_system_instructions_and_requirements_are_left_out() {
    for enforced in [false, true] {
        let mut plan = PromptPlan::new("Do it.", text_input("x"), typed::<Invoice>());
        plan.system = Some("  ".to_owned());
        plan.output_requirements = Some("\n".to_owned());
        plan.schema_enforced = enforced;
        let prompt = render(&plan, &[]);
        let expected = if enforced { "Do it." } else { SYSTEM_PREAMBLE };
        assert_eq!(prompt.system, expected);
        assert!(!prompt.user().contains("Additional output requirements"));
    }
}

#[test]
fn the_input_text_is_not_trimmed() {
    let plan = PromptPlan::new("Do it.", text_input("  indented\n"), OutputTarget::Text);
    assert!(
        render(&plan, &[])
            .user()
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
    let long = "\u{e9}".repeat(PREVIOUS_OUTPUT_MAX_CHARS + 5);
    let [reply, problems] = retry_turns(&failed_attempt(&long, &["too long"])).unwrap();
    assert_eq!(reply.content, "\u{e9}".repeat(PREVIOUS_OUTPUT_MAX_CHARS));
    assert!(
        problems.content.starts_with(
            "Fix these and reply again: (your reply is shown cut after 6000 characters)\n- too long"
        ),
        "{}",
        problems.content
    );

    let exact = "a".repeat(PREVIOUS_OUTPUT_MAX_CHARS);
    let [reply, problems] = retry_turns(&failed_attempt(&exact, &["x"])).unwrap();
    assert_eq!(reply.content, exact);
    assert!(!problems.content.contains("cut after"));
}

#[test]
fn an_empty_previous_reply_is_named() {
    let [reply, _] = retry_turns(&failed_attempt("", &["The provider timed out."])).unwrap();
    assert_eq!(reply, Message::assistant("(empty reply)"));
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
    insta::assert_snapshot!(shown(&render(&plan, &[])));
}

#[test]
fn an_enforced_schema_leaves_out_preamble_headings_and_contract() {
    let runtime = OutputTarget::runtime(Some(&json!({"type": "integer"}))).unwrap();
    for target in [typed::<Invoice>(), typed::<Sentiment>(), runtime] {
        let mut plan = PromptPlan::new("  Do it.\n", text_input("x y"), target);
        plan.schema_enforced = true;
        let prompt = render(&plan, &[]);
        assert_eq!(prompt.system, "Do it.", "{:?}", plan.target);
        assert_eq!(prompt.messages, [Message::user("x y")]);
        assert_eq!(plan.response_format(), ResponseFormat::JsonSchema);
    }
    // Targets that send no schema keep the full layout whatever the flag says: the
    // prompt is all the model has.
    let json_object = OutputTarget::typed(target_schema::<Invoice>().unwrap(), true);
    for target in [json_object, OutputTarget::AnyJson, OutputTarget::Text] {
        let mut plan = PromptPlan::new("Do it.", text_input("x"), target);
        let full = render(&plan, &[]);
        plan.schema_enforced = true;
        assert_eq!(render(&plan, &[]), full, "{:?}", plan.target);
        assert_eq!(full.system, SYSTEM_PREAMBLE);
        assert!(full.user().contains("## Output requirements\n"));
    }
}

#[test]
fn the_lean_layout_labels_inputs_that_are_not_plain_strings() {
    #[derive(Serialize, JsonSchema)]
    struct Order {
        id: u32,
    }
    let mut plan = PromptPlan::new(
        "Do it.",
        prepare_input(&Order { id: 7 }).unwrap(),
        typed::<Sentiment>(),
    );
    plan.schema_enforced = true;
    let label = plan.input.label.clone();
    assert_eq!(
        render(&plan, &[]).user(),
        format!("Input ({label}):\n{{\"id\":7}}")
    );
}

#[test]
fn the_lean_system_prompt_keeps_instructions_requirements_and_examples_in_order() {
    let mut plan = retry_plan(true);
    plan.system = Some("Be exact.".to_owned());
    plan.output_requirements = Some("Keep SKUs as written.".to_owned());
    assert_eq!(
        render(&plan, &[]).system,
        "Extract the invoice fields.\n\nBe exact.\n\nAdditional output requirements: Keep SKUs as written.\n\nExample 1 input:\nInvoice 1: 1 x Z-9\nExample 1 output:\n{\"value\": {\"number\": \"1\", \"lines\": [{\"sku\": \"Z-9\", \"qty\": 1}], \"due\": null}}\n\nApply the same judgement and format to the input."
    );
}

#[allow(dead_code)] // only described
#[derive(JsonSchema)]
struct Rated {
    #[schemars(range(min = 1, max = 5))]
    stars: u8,
    #[schemars(length(max = 80))]
    note: String,
    #[schemars(email)]
    contact: String,
}

#[test]
fn bounds_and_formats_the_verifier_checks_reach_the_model() {
    // Described, when the provider does not enforce the schema.
    let plan = PromptPlan::new("Rate", text_input("x"), typed::<Rated>());
    let contract = plan.output_contract();
    assert!(
        contract.contains(
            "stars: u8 (1 to 5), note: String (at most 80 characters), contact: String (email)"
        ),
        "{contract}"
    );
    // In the strict schema the provider is sent, which has no constraint keywords.
    let schema = plan.schema().unwrap();
    let rated = &schema["properties"]["value"]["properties"];
    assert_eq!(rated["stars"]["description"], "Allowed: 1 to 5.");
    assert!(rated["stars"].get("maximum").is_none());
    assert_eq!(
        rated["note"]["description"],
        "Allowed: at most 80 characters."
    );
    assert_eq!(rated["contact"]["format"], "email");
}
