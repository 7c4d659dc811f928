//! Decision answers are values like any other method's: `Binary`, `Choice<E>` and
//! `Score<E>` serialize with the variants' names, read back, describe themselves with a
//! JSON Schema, and a decision method runs through an evaluation.

use intent_rs::decision::ProbabilitySource;
use intent_rs::provider::{ScriptedProvider, ScriptedReply};
use intent_rs::{Binary, Choice, DecisionEnum, DecisionError, IntentClient, Score, intents};
use intent_rs_eval::{Dataset, Evaluation};
use serde_json::json;

#[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
pub enum Team {
    /// Payments, invoices and refunds.
    Billing,
    /// Anything that does not work.
    Support,
}

#[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
pub enum Urgency {
    Low,
    Medium,
    High,
}

#[intents]
pub trait Triage {
    #[intent("Which team should take the ticket?")]
    async fn team(&self, ticket: &str) -> Result<Choice<Team>, DecisionError>;
}

fn choice() -> Choice<Team> {
    Choice {
        probabilities: vec![(Team::Billing, 0.74), (Team::Support, 0.26)],
        selected: Team::Billing,
        source: ProbabilitySource::Stated,
    }
}

fn score() -> Score<Urgency> {
    Score {
        probabilities: vec![
            (Urgency::Low, 0.1),
            (Urgency::Medium, 0.2),
            (Urgency::High, 0.7),
        ],
        most_likely: Urgency::High,
        expected: 1.6,
        source: ProbabilitySource::DecisionModel,
    }
}

#[test]
fn answers_serialize_with_the_variants_names_and_read_back() {
    let stored = serde_json::to_value(choice()).expect("a choice serializes");
    assert_eq!(
        stored,
        json!({"selected": "Billing", "probabilities": {"Billing": 0.74, "Support": 0.26}, "source": "stated"})
    );
    let read: Choice<Team> = serde_json::from_value(stored).expect("and reads back");
    assert_eq!(read, choice());
    assert_eq!(read.selected_name(), "Billing");

    let stored = serde_json::to_value(score()).expect("a score serializes");
    assert_eq!(
        stored,
        json!({"most_likely": "High", "expected": 1.6, "probabilities": {"Low": 0.1, "Medium": 0.2, "High": 0.7}, "source": "decision_model"})
    );
    let read: Score<Urgency> = serde_json::from_value(stored).expect("and reads back");
    assert_eq!(read, score());
    assert_eq!(read.most_likely_name(), "High");

    let binary = Binary {
        probability: 0.82,
        source: ProbabilitySource::LogProbabilities,
    };
    let stored = serde_json::to_value(binary).expect("a binary serializes");
    assert_eq!(
        stored,
        json!({"probability": 0.82, "source": "log_probabilities"})
    );
    assert_eq!(serde_json::from_value::<Binary>(stored).ok(), Some(binary));
}

#[test]
fn a_stored_answer_naming_no_option_or_missing_one_is_refused_with_the_options() {
    let unknown = json!({"selected": "Sales", "probabilities": {"Billing": 0.5, "Support": 0.5}, "source": "stated"});
    let error = serde_json::from_value::<Choice<Team>>(unknown).expect_err("no such option");
    assert!(
        error.to_string().contains("`Sales` is not an option")
            && error.to_string().contains("Billing, Support"),
        "{error}"
    );
    let missing =
        json!({"selected": "Billing", "probabilities": {"Billing": 1.0}, "source": "stated"});
    let error = serde_json::from_value::<Choice<Team>>(missing).expect_err("a missing option");
    assert!(error.to_string().contains("no `Support`"), "{error}");
}

#[test]
fn the_schema_of_an_answer_accepts_what_it_serializes_to_and_names_the_options() {
    let schema = serde_json::to_value(schemars::schema_for!(Choice<Team>)).expect("a schema");
    assert_eq!(
        schema["properties"]["selected"]["enum"],
        json!(["Billing", "Support"])
    );
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    assert!(validator.is_valid(&serde_json::to_value(choice()).expect("json")));
    assert!(
        !validator.is_valid(&json!({"selected": "Sales", "probabilities": {}, "source": "stated"}))
    );

    let schema = serde_json::to_value(schemars::schema_for!(Score<Urgency>)).expect("a schema");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    assert!(validator.is_valid(&serde_json::to_value(score()).expect("json")));
}

#[tokio::test]
async fn a_decision_method_runs_through_an_evaluation() {
    let model = ScriptedProvider::new([
        ScriptedReply::logprobs([("A", 0.9f64.ln()), ("B", 0.1f64.ln())]),
        ScriptedReply::logprobs([("A", 0.2f64.ln()), ("B", 0.8f64.ln())]),
    ])
    .with_max_top_logprobs(Some(20));
    let triage = TriageClient::new(
        IntentClient::builder()
            .provider(model)
            .build()
            .expect("a client"),
    );
    let cases = r#"{"name": "refund", "input": "I was charged twice", "expected_schema": {"type": "object", "properties": {"selected": {"const": "Billing"}}, "required": ["selected"]}}
{"name": "crash", "input": "The app crashes", "expected_schema": {"type": "object", "properties": {"selected": {"const": "Billing"}}, "required": ["selected"]}}"#;
    let dataset: Dataset<String> =
        Dataset::from_jsonl_str("triage.jsonl", cases).expect("a dataset");
    let report = Evaluation::new("triage")
        .concurrency(1)
        .run(&dataset, |ticket: &String| triage.team(ticket))
        .await
        .expect("the evaluation runs");
    // The second answer selects Support: graded as a wrong answer, not an error.
    assert_eq!(report.pass_rate(), 0.5);
    let failed: Vec<_> = report.failures().collect();
    assert_eq!(failed.len(), 1);
}

#[intents]
pub trait Helpdesk {
    #[intent("Which team should take the ticket?")]
    async fn team(&self, ticket: &str) -> Result<Choice<Team>, DecisionError>;

    #[intent("Summarize the ticket")]
    async fn summary(&self, ticket: &str) -> Result<String, intent_rs::IntentError>;
}

#[tokio::test]
async fn a_client_for_decisions_only_needs_no_chat_provider() {
    let decider = ScriptedProvider::new([ScriptedReply::logprobs([
        ("A", 0.3f64.ln()),
        ("B", 0.7f64.ln()),
    ])])
    .with_max_top_logprobs(Some(20));
    let client = IntentClient::builder()
        .decision_client(intent_rs::decision::decision_client_for(
            std::sync::Arc::new(decider.clone()),
        ))
        .build()
        .expect("a decision client is enough");
    let helpdesk = HelpdeskClient::new(client);

    let team = helpdesk.team("The app crashes").await.expect("an answer");
    assert_eq!(team.selected, Team::Support);

    let error = helpdesk
        .summary("The app crashes")
        .await
        .expect_err("no provider for intent methods");
    assert!(
        error
            .to_string()
            .contains("give it a provider with `.provider(...)`"),
        "{error}"
    );
    assert_eq!(decider.requests().len(), 1, "only the decision was sent");
}
