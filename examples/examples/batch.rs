//! Batch jobs: many reviews classified through the provider's batch API, every reply
//! verified and retried as a live call's would be, the job's progress kept in a directory.
//!
//! `cargo run --example batch` runs offline against a scripted batch API whose first answer
//! for one review is not a member of the enum, so you can see the follow-up batch that
//! retries it. With `OPENAI_API_KEY` or `ANTHROPIC_API_KEY` set, the job goes through
//! OpenAI's Batch API or Anthropic's Message Batches (half the price; answers within 24
//! hours: press Ctrl-C whenever you like, which stops the job without canceling the
//! provider's batches, and run the program again to resume). The state directory is
//! `BATCH_DIR`, or `intent-batch-example-<provider>` in the temporary directory: one per
//! provider, so that an offline run first and a real one next do not share a job.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use intent_examples::{batch_dir, choose_provider, print_attempts};
use intent_rs::batch::{BatchError, BatchOptions, BatchProgress};
use intent_rs::provider::{ScriptedProvider, ScriptedReply};
use intent_rs::{IntentClient, IntentError, StrictCompatible, intents};
use schemars::JsonSchema;
use serde::Deserialize;

/// How a review feels.
#[derive(Debug, PartialEq, Deserialize, JsonSchema, StrictCompatible)]
enum Sentiment {
    Positive,
    Neutral,
    Negative,
}

/// Reading customer reviews.
#[intents]
trait Reviews {
    /// The sentiment of a review.
    #[intent("Classify the sentiment of the review", max_attempts = 3)]
    async fn sentiment(&self, review: &str) -> Result<Sentiment, IntentError>;
}

const REVIEWS: [&str; 6] = [
    "Arrived a day early and works perfectly. Loved it!",
    "It does what it says. Nothing more.",
    "Broke after two days and support never answered.",
    "Best purchase this year, my kids adore it.",
    "The colour is fine, the size is fine. It's fine.",
    "Not bad, not great: mixed feelings about the strap.",
];

/// The offline model: answers by the review's words; its first answer to the mixed review
/// is not a member of the enum.
fn scripted_model() -> ScriptedProvider {
    ScriptedProvider::from_fn(|request, _| {
        let review = request.user();
        let answer = if review.contains("mixed") && !request.is_retry() {
            "Mixed"
        } else if review.contains("Loved") || review.contains("Best") {
            "Positive"
        } else if review.contains("Broke") {
            "Negative"
        } else {
            "Neutral"
        };
        ScriptedReply::text(format!(r#"{{"value": "{answer}"}}"#))
    })
}

/// One line of progress: a bar on an interactive terminal, plain lines otherwise.
fn show(progress: &BatchProgress) {
    let finished = progress.finished();
    let line = format!(
        "{finished}/{} finished ({} failed), {} in provider batches, {} queued, {} batch(es)",
        progress.items, progress.failed, progress.submitted, progress.queued, progress.batches
    );
    if std::io::stdout().is_terminal() {
        let width = 24;
        let filled = finished * width / progress.items.max(1);
        print!(
            "\r[{}{}] {line}   ",
            "#".repeat(filled),
            " ".repeat(width - filled)
        );
        let _ = std::io::stdout().flush();
    } else {
        println!("{line}");
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chosen = choose_provider(scripted_model());
    let provider = chosen.provider.name().to_owned();
    let client = IntentClient::builder()
        .shared_provider(chosen.provider)
        .build()?;
    let reviews = ReviewsClient::new(client.clone());
    // A directory holds one job: the provider is part of the default one's name, so
    // the scripted job of an offline run is never the one a real provider resumes.
    let dir = batch_dir(&provider);
    let mut options = BatchOptions::new(&dir);
    if chosen.offline {
        // The scripted batches end at once; a fresh directory for every offline run.
        let _ = std::fs::remove_dir_all(&dir);
        options = options.poll_interval(Duration::from_millis(20));
    }
    println!("job state in {}", dir.display());

    // The method's batch companion takes the method's arguments.
    let items = REVIEWS
        .iter()
        .map(|review| reviews.sentiment_batch_item(review));
    let job = client.batch(items, options).on_progress(show);
    let stop = job.stop_handle();
    // Ctrl-C stops the job and leaves the provider's batches running: the next run
    // resumes it. (`job.cancel_handle()` would cancel them instead.)
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            stop.stop();
        }
    });
    let results = match job.run().await {
        Ok(results) => results,
        Err(stopped @ BatchError::Stopped { .. }) => {
            println!("\n{stopped}");
            return Ok(());
        }
        Err(error) => return Err(error.into()),
    };
    println!();

    for (review, result) in REVIEWS.iter().zip(&results) {
        match &result.value {
            Some(sentiment) => println!("{sentiment:?}: {review}"),
            None => println!("(failed: {}) {review}", result.failure_summary()),
        }
    }
    let retried = results.iter().position(|result| result.attempts.len() > 1);
    if let Some(index) = retried {
        println!("\nreview {index}, attempt by attempt (the retry went out in a follow-up batch):");
        print_attempts(&results[index]);
    }
    // The same question as a live call: the same request, the same checks.
    let live = reviews.sentiment(REVIEWS[0]).await?;
    println!("\nasked live, the first review is {live:?}");
    println!(
        "model calls: {}, tokens in/out: {}/{}",
        client.total_model_calls(),
        client.total_usage().input_tokens,
        client.total_usage().output_tokens
    );
    if chosen.offline {
        assert_eq!(results[5].value, Some(Sentiment::Neutral));
        assert_eq!(
            results[5].attempts.len(),
            2,
            "the mixed review is retried once"
        );
        assert_eq!(results[0].value, Some(Sentiment::Positive));
    }
    Ok(())
}
