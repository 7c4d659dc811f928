//! Decision questions: a mixed batch of yes/no, choice and score questions about one
//! state, answered with probabilities, the same questions as typed trait methods, and a
//! cheap decision gate in front of the generative judge.
//!
//! `cargo run --example decisions` (offline: a scripted model reports log-probabilities).
//! With `OPENAI_API_KEY` the probabilities are read from OpenAI's log-probabilities; with
//! `ANTHROPIC_API_KEY` Claude states them. With `TYPESAFE_API_KEY` (TypeSafe's API) or
//! `TYPESAFE_BASE_URL` (any System One server, such as the jevcompat mock:
//! `TYPESAFE_BASE_URL=http://127.0.0.1:8787 TYPESAFE_API_KEY=sk-test-123`) a decision
//! model answers every decision instead, all questions of a request in one request
//! (`TYPESAFE_HOST`, `TYPESAFE_DEFAULT_MODEL` and `TYPESAFE_WIRE_FORMAT` choose the host's
//! quirks, the model and the OpenAI-shaped Decisions API). Either way the probabilities
//! are a model's judgment: never use them to authorize or approve anything.

use std::sync::Arc;

use intent_examples::{choose_provider, print_attempts};
use intent_rs::decision::{
    BinaryQuestion, ChoiceQuestion, DecisionClient, DecisionEvaluator, DecisionQuestion,
    DecisionRequest, ScoreQuestion, SystemOneClient, SystemOneConfigError, decision_client_for,
};
use intent_rs::provider::{ScriptedProvider, ScriptedReply};
use intent_rs::{AIResult, Choice, DecisionEnum, DecisionError, IntentClient, intents};

/// Where a ticket goes.
#[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
enum Team {
    /// Payments, invoices and refunds.
    Billing,
    /// Something does not work.
    Support,
    /// Questions before buying.
    Sales,
}

#[intents]
trait Desk {
    #[intent("Which team should take the ticket?")]
    async fn team(&self, ticket: &str) -> Result<Choice<Team>, DecisionError>;

    #[intent("Write a headline for the article")]
    #[guardrail(require_judge)]
    #[output("At most eight words; no clickbait.")]
    async fn headline(&self, article: &str) -> AIResult<String>;
}

/// The offline model: one-token answers with log-probabilities for decision questions, a
/// writer whose first headline is clickbait, and a judge that passes what reaches it.
fn scripted_model() -> ScriptedProvider {
    ScriptedProvider::from_fn(|request, _| {
        let user = request.user();
        if request.top_logprobs.is_some() {
            let clickbait = user.contains("You Won't Believe");
            return if user.contains("one of: A, B, C") {
                ScriptedReply::logprobs([("A", -0.11), (" B", -2.4), ("C", -4.1)])
            } else if user.contains("one of: 0, 1, 2") {
                ScriptedReply::logprobs([("2", -0.36), ("1", -1.2), ("0", -4.6)])
            } else if clickbait {
                ScriptedReply::logprobs([("no", -0.05), ("yes", -3.2)])
            } else {
                ScriptedReply::logprobs([("yes", -0.02), ("no", -4.5)])
            };
        }
        if request.schema_name == intent_rs::judge::JUDGE_SCHEMA_NAME {
            return ScriptedReply::text(r#"{"passes": true, "problems": []}"#);
        }
        if request.is_retry() {
            ScriptedReply::text("City Cuts Bus Fares by Half From March")
        } else {
            ScriptedReply::text("You Won't Believe What the City Did to Bus Fares")
        }
    })
    .with_max_top_logprobs(Some(20))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chosen = choose_provider(scripted_model());
    // A decision model over its own API when one is configured, else the chat model.
    let (decisions, decision_model): (Arc<dyn DecisionClient>, bool) =
        match SystemOneClient::from_env() {
            Ok(client) => {
                println!(
                    "(decisions: decision model {} at {}, {:?} wire format)\n",
                    client.model(),
                    client.endpoint(),
                    client.wire_format()
                );
                (Arc::new(client), true)
            }
            Err(SystemOneConfigError::NotConfigured) => {
                println!(
                    "(decisions: the chat model, by log-probabilities or stated probabilities)\n"
                );
                (decision_client_for(chosen.provider.clone()), false)
            }
            Err(other) => return Err(other.into()),
        };
    let plain = IntentClient::builder()
        .shared_provider(chosen.provider.clone())
        .decision_client(decisions.clone())
        .build()?;

    // 1. A mixed batch about one state.
    let ticket = serde_json_ticket();
    let request = DecisionRequest::new(
        ticket,
        [
            DecisionQuestion::from(BinaryQuestion::new(
                "refund_asked",
                "Does the customer ask for a refund?",
            )?),
            ChoiceQuestion::new(
                "team",
                "Which team should take the ticket?",
                [
                    ("billing", "Payments, invoices and refunds"),
                    ("support", "Something does not work"),
                    ("sales", "Questions before buying"),
                ],
            )?
            .into(),
            ScoreQuestion::new(
                "urgency",
                "How urgent is the ticket?",
                ["low", "medium", "high"],
            )?
            .into(),
        ],
    )?;
    let response = plain.decide(&request).await?;
    println!(
        "mixed batch ({:?} probabilities, {}{}):",
        response.source(),
        response.model(),
        response
            .request_id()
            .map(|id| format!(", request {id}"))
            .unwrap_or_default()
    );
    if let Some(refund) = response.binary("refund_asked") {
        println!("  refund asked: p(yes) = {:.2}", refund.probability());
    }
    if let Some(team) = response.choice("team") {
        let shares: Vec<String> = team
            .probabilities()
            .iter()
            .map(|(name, p)| format!("{name} {p:.2}"))
            .collect();
        let confidence = team
            .confidence()
            .map(|c| format!(", the host's confidence {c:.2}"))
            .unwrap_or_default();
        println!(
            "  team: {} ({}{confidence})",
            team.selected(),
            shares.join(", ")
        );
    }
    if let Some(urgency) = response.score("urgency") {
        println!(
            "  urgency: most likely {}, expected level {:.2} of 0..2",
            urgency.most_likely(),
            urgency.expected()
        );
    }

    // 2. The same kind of question as a typed method.
    let desk = DeskClient::new(plain);
    let team = desk.team("I was charged twice for March").await?;
    println!("\ntyped choice: {:?} ({:?})", team.selected, team.source);

    // 3. A gated judge: the cheap decision rejects the clickbait headline itself; only a
    //    headline it finds likely to pass costs a generative judge call.
    let gate = DecisionEvaluator::shared(decisions).with_threshold(0.9);
    let gated = IntentClient::builder()
        .shared_provider(chosen.provider)
        .decision_gate(gate)
        .build()?;
    let desk = DeskClient::new(gated);
    let article = "From March, single bus fares in the city fall from 3.00 to 1.50, the council decided on Monday.";
    let result = desk.headline(article).await;
    println!("\ngated judge:");
    print_attempts(&result);
    let judge_calls = result.attempts.iter().filter(|a| a.judge.is_some()).count();
    println!(
        "headline: {} ({} attempts, {judge_calls} generative judge call)",
        result.value.as_deref().unwrap_or("(none)"),
        result.attempts.len()
    );
    if chosen.offline && !decision_model {
        assert_eq!(
            judge_calls, 1,
            "the gate spared the judge the clickbait headline"
        );
    }
    Ok(())
}

fn serde_json_ticket() -> serde_json::Value {
    serde_json::json!({
        "subject": "Charged twice",
        "body": "I was charged twice for my March invoice. Please refund one of the payments."
    })
}
