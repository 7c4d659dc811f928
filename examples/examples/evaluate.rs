//! An evaluation: a dataset file of reviews with their expected topics, run through a
//! generated client, graded by value match (lenient) and by a judge model, reported as a
//! table, JSON and JUnit XML.
//!
//! `cargo run --example evaluate` (offline: scripted answers, one of them wrong and one
//! that only a value match rejects). In a test, end with `report.assert_pass_rate(0.9)`
//! to make the evaluation fail `cargo test` under 90 %.

use std::path::Path;

use intent_examples::choose_provider;
use intent_rs::provider::{ScriptedProvider, ScriptedReply};
use intent_rs::{AIResult, IntentClient, intents};
use intent_rs_eval::{Dataset, Evaluation, Judge};
use serde::{Deserialize, Serialize};

const INTENT: &str = "Name the main topic of the review in two or three words";

#[intents]
trait Reviews {
    #[intent("Name the main topic of the review in two or three words")]
    async fn topic(&self, review: &str) -> AIResult<String>;
}

/// A case's input, as the dataset file spells it.
#[derive(Debug, Serialize, Deserialize)]
struct Review {
    review: String,
}

/// The offline model's topics, in dataset order (the offline run goes one case at a
/// time, so the order holds).
fn scripted_topics() -> ScriptedProvider {
    ScriptedProvider::new([
        "Shipping",
        "  Battery   life ",
        "Support responsiveness",
        "Price",
        "Value for money",
    ])
}

/// The offline judge's verdicts for the two cases graded by the judge.
fn scripted_judge() -> ScriptedProvider {
    ScriptedProvider::new([
        ScriptedReply::text(
            r#"{"value": {"explanation": "Both name how support answers customers.", "verdict": true}}"#,
        ),
        ScriptedReply::text(
            r#"{"value": {"explanation": "The review is about the screen breaking, not the price.", "verdict": false}}"#,
        ),
    ])
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chosen = choose_provider(scripted_topics());
    // A real provider judges with the same model; offline, a scripted judge answers.
    let judge = if chosen.offline {
        Judge::new("semantic", scripted_judge())
    } else {
        Judge::shared("semantic", chosen.provider.clone())
    };
    let client = IntentClient::builder()
        .shared_provider(chosen.provider)
        .build()?;
    let reviews = ReviewsClient::new(client);

    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/review_topics.jsonl");
    let dataset: Dataset<Review> = Dataset::from_file(&file)?;
    let report = Evaluation::new("review-topics")
        .prompt(INTENT)
        .judge(judge)
        .concurrency(if chosen.offline { 1 } else { 4 })
        .run(&dataset, |case: &Review| reviews.topic(&case.review))
        .await?;

    println!("{report}\n");
    let folder = std::env::temp_dir();
    let json = folder.join("review-topics.json");
    let junit = folder.join("review-topics.junit.xml");
    report.write_json(&json)?;
    report.write_junit(&junit)?;
    println!("wrote {} and {}", json.display(), junit.display());

    // A later run (another prompt, another model) compares case by case with this one.
    let baseline = intent_rs_eval::Report::read_json(&json)?;
    println!("against itself: {}", report.compare(&baseline));
    Ok(())
}
