//! The test model behind a generated client: typed answers that verify for nested types
//! with bounds, patterns, formats (chrono, uuid) and maps; the judge and the decision
//! gate passing by default; decision methods; streamed and batched calls; pins, and
//! answers invalid on purpose that exercise the retry loop and its failure.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use intent_rs::batch::BatchOptions;
use intent_rs::decision::{DecisionEvaluator, LogprobDecisionClient};
use intent_rs::provider::{ResponseFormat, TestModel};
use intent_rs::{
    AIResult, Binary, Choice, DecisionEnum, DecisionError, IntentClient, IntentError, IntentStream,
    JudgeMode, Partial, Score, StrictCompatible, intents,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
enum Priority {
    Low,
    High,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
enum Contact {
    Email { address: String },
    Phone(String),
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
struct Step {
    #[schemars(length(min = 1, max = 40))]
    title: String,
    #[schemars(range(min = 1, max = 480))]
    minutes: u16,
    done: bool,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
struct Ticket {
    id: Uuid,
    #[schemars(regex(pattern = r"^TCK-[A-Z]{2}\d{3}$"))]
    reference: String,
    opened: DateTime<Utc>,
    due: Option<NaiveDate>,
    priority: Priority,
    contact: Contact,
    #[schemars(length(min = 2, max = 5))]
    steps: Vec<Step>,
    #[schemars(range(min = 0.0, max = 1.0))]
    confidence: f64,
    assignee: Option<String>,
    #[schemars(length(max = 3))]
    labels: Vec<Priority>,
}

#[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
enum Team {
    /// Payments.
    Billing,
    /// Bugs.
    Support,
    /// New customers.
    Sales,
}

#[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
enum Urgency {
    Low,
    Medium,
    High,
}

fn steps_are_short(ticket: &Ticket) -> Result<(), String> {
    let total: u32 = ticket.steps.iter().map(|s| u32::from(s.minutes)).sum();
    if total <= 2000 {
        Ok(())
    } else {
        Err(format!(
            "The steps take {total} minutes; keep them under 2000."
        ))
    }
}

#[intents]
trait Desk {
    #[intent("Read the ticket")]
    #[validate(steps_are_short)]
    async fn ticket(&self, text: &str) -> AIResult<Ticket>;

    #[intent("Read the ticket")]
    fn ticket_live(&self, text: &str) -> IntentStream<Ticket>;

    #[intent("Read the ticket")]
    #[guardrail(require_judge)]
    async fn judged(&self, text: &str) -> AIResult<Ticket>;

    #[intent("Count the words per language", json_mode)]
    async fn counts(&self, text: &str) -> Result<HashMap<String, u32>, IntentError>;

    #[intent("Summarize the ticket")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;

    #[intent("Is the ticket solved?")]
    async fn solved(&self, text: &str) -> Result<Binary, DecisionError>;

    #[intent("Which team takes it?")]
    async fn team(&self, text: &str) -> Result<Choice<Team>, DecisionError>;

    #[intent("How urgent is it?")]
    async fn urgency(&self, text: &str) -> Result<Score<Urgency>, DecisionError>;
}

fn desk(model: TestModel) -> DeskClient {
    DeskClient::new(IntentClient::builder().provider(model).build().unwrap())
}

#[tokio::test]
async fn typed_answers_verify_with_formats_bounds_patterns_and_enums() {
    let mut seen_none = false;
    for seed in 0..30 {
        let result = desk(TestModel::seeded(seed)).ticket("ticket text").await;
        assert!(result.is_success(), "seed {seed}: {:?}", result.issues);
        assert_eq!(result.attempts.len(), 1, "seed {seed}");
        let ticket = result.value.unwrap();
        assert!((2..=5).contains(&ticket.steps.len()));
        assert!(ticket.labels.len() <= 3);
        assert!((0.0..=1.0).contains(&ticket.confidence));
        assert!(ticket.reference.starts_with("TCK-"));
        assert_eq!(ticket.id.get_version_num(), 4);
        seen_none |= ticket.due.is_none();
    }
    assert!(seen_none, "an Option is sometimes None");
}

#[tokio::test]
async fn the_same_seed_gives_the_same_ticket() {
    let first = desk(TestModel::seeded(11)).ticket("t").await.value.unwrap();
    let again = desk(TestModel::seeded(11)).ticket("t").await.value.unwrap();
    let other = desk(TestModel::seeded(12)).ticket("t").await.value.unwrap();
    assert_eq!(first, again);
    assert_ne!(first, other);
}

#[tokio::test]
async fn pins_fix_the_fields_a_test_reads() {
    let model = TestModel::seeded(1)
        .pin("/reference", json!("TCK-AB123"))
        .pin("/priority", json!("High"))
        .pin("/steps", json!([{"title": "Call", "minutes": 5, "done": false}, {"title": "Fix", "minutes": 60, "done": true}]));
    let ticket = desk(model).ticket("t").await.value.unwrap();
    assert_eq!(ticket.reference, "TCK-AB123");
    assert_eq!(ticket.priority, Priority::High);
    assert_eq!(ticket.steps[1].minutes, 60);
}

#[tokio::test]
async fn a_map_is_asked_in_json_object_mode_and_answered_from_its_pins() {
    let model = TestModel::new().pin("/en", json!(3)).pin("/fr", json!(1));
    let counts = desk(model.clone())
        .counts("one two three un")
        .await
        .unwrap();
    assert_eq!(
        counts,
        HashMap::from([("en".to_owned(), 3), ("fr".to_owned(), 1)])
    );
    assert_eq!(
        model.requests()[0].response_format,
        ResponseFormat::JsonObject
    );
}

#[tokio::test]
async fn answers_invalid_on_purpose_are_retried_and_then_exhaust_the_attempts() {
    let model = TestModel::seeded(2).invalid_first(1);
    let result = desk(model.clone()).ticket("t").await;
    assert!(result.is_success(), "{:?}", result.issues);
    assert_eq!(result.attempts.len(), 2);
    assert!(
        !result.attempts[0].issues.is_empty(),
        "the first answer was refused"
    );
    assert!(model.requests()[1].is_retry());

    let failing = TestModel::seeded(2).invalid_first(usize::MAX);
    let error = desk(failing).summary("t").await;
    assert!(
        error.is_ok(),
        "a plain-text target is always answered validly"
    );
    let failing = TestModel::seeded(2).invalid_first(usize::MAX);
    let result = desk(failing.clone()).ticket("t").await;
    assert!(!result.is_success());
    assert_eq!(failing.request_count(), 3, "the default attempt limit");
}

#[tokio::test]
async fn the_judge_and_the_decision_gate_pass_by_default() {
    let model = TestModel::seeded(3);
    let client = IntentClient::builder()
        .provider(model.clone())
        .judge_mode(JudgeMode::OnRequest)
        .decision_gate(DecisionEvaluator::new(LogprobDecisionClient::new(
            model.clone(),
        )))
        .build()
        .unwrap();
    let result = DeskClient::new(client).judged("t").await;
    assert!(result.is_success(), "{:?}", result.issues);
    let attempt = &result.attempts[0];
    assert!(attempt.gate.is_some(), "the gate was asked");
    assert!(attempt.judge.is_some(), "the judge was asked");

    let rejecting = TestModel::seeded(3).judge_passes(false);
    let result = desk(rejecting).judged("t").await;
    assert!(!result.is_success());
    assert!(
        result
            .issues
            .iter()
            .any(|i| i.message.contains("judge_passes(false)")),
        "{:?}",
        result.issues
    );
}

#[tokio::test]
async fn decision_methods_get_valid_distributions() {
    for logprobs in [Some(20), None] {
        let desk = desk(TestModel::seeded(4).with_max_top_logprobs(logprobs));
        let solved = desk.solved("t").await.unwrap();
        assert!(solved.is_yes(0.9), "{solved:?}");
        let team = desk.team("t").await.unwrap();
        let total: f64 = team.probabilities.iter().map(|(_, p)| p).sum();
        assert!((total - 1.0).abs() < 1e-6);
        let urgency = desk.urgency("t").await.unwrap();
        assert_eq!(urgency.probabilities.len(), 3);
    }
    let no = desk(TestModel::new().probability_yes(0.05))
        .solved("t")
        .await
        .unwrap();
    assert!(!no.is_yes(0.5));
}

#[tokio::test]
async fn a_streamed_call_arrives_in_pieces_and_ends_verified() {
    let model = TestModel::seeded(5).with_stream_chunks(8);
    let desk = desk(model);
    let streamed = desk.ticket_live("t").finish().await;
    let waited = desk.ticket("t").await;
    assert!(streamed.is_success(), "{:?}", streamed.issues);
    assert_eq!(
        streamed.value, waited.value,
        "the same request, the same answer"
    );
}

#[tokio::test]
async fn a_batch_job_runs_on_the_offline_batch_api() {
    let model = TestModel::seeded(6);
    let client = IntentClient::builder()
        .provider(model.clone())
        .build()
        .unwrap();
    let desk = DeskClient::new(client.clone());
    let items = ["first", "second", "third"].map(|text| desk.ticket_batch_item(text));
    let dir = std::env::temp_dir().join(format!("intent-test-model-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let results = client
        .batch(
            items,
            BatchOptions::new(&dir).poll_interval(Duration::from_millis(5)),
        )
        .run()
        .await
        .unwrap();
    assert_eq!(results.len(), 3);
    for result in &results {
        assert!(result.is_success(), "{:?}", result.issues);
    }
    assert_eq!(model.request_count(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}
