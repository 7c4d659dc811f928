//! Quickstart: a trait of intent methods, a generated client, and what happened.
//!
//! `cargo run --example quickstart` runs offline on a scripted model whose first answer
//! to the sentiment question is broken, so you can see the retry that fixes it. Set
//! `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` or `OPENAI_COMPATIBLE_BASE_URL` to ask a real model.

use intent_examples::{choose_provider, print_attempts};
use intent_rs::provider::{ScriptedProvider, ScriptedReply};
use intent_rs::{AIResult, IntentClient, IntentError, StrictCompatible, intents};
use schemars::JsonSchema;
use serde::Deserialize;

/// How a review feels.
#[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
enum Sentiment {
    Positive,
    Neutral,
    Negative,
}

/// Who wrote to us.
#[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
struct Contact {
    name: String,
    email: Option<String>,
    company: Option<String>,
}

impl std::fmt::Display for Contact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)?;
        if let Some(email) = &self.email {
            write!(f, " <{email}>")?;
        }
        if let Some(company) = &self.company {
            write!(f, " of {company}")?;
        }
        Ok(())
    }
}

/// Reading customer messages.
#[intents]
trait Reviews {
    /// The sentiment of a review.
    #[intent("Classify the sentiment of the review")]
    async fn sentiment(&self, review: &str) -> Result<Sentiment, IntentError>;

    /// Who wrote the message, with every check recorded.
    #[intent("Extract the sender's contact details")]
    async fn contact(&self, message: &str) -> AIResult<Contact>;

    /// A one-sentence summary.
    #[intent("Summarize the text in one sentence")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

/// The offline model: answers by intent; its first sentiment answer is not a member.
fn scripted_model() -> ScriptedProvider {
    ScriptedProvider::from_fn(|request, _| {
        let retry = request.is_retry();
        let reply = if request.user().contains("Classify the sentiment") {
            if retry {
                r#"{"value": "Positive"}"#
            } else {
                r#"{"value": "Very positive"}"#
            }
        } else if request.user().contains("contact details") {
            r#"```json
{"value": {"Name": "Ada Lovelace", "email": "ada@example.com", "company": null}}
```"#
        } else {
            "A delighted customer praises the fast delivery and asks for a second unit."
        };
        ScriptedReply::text(reply)
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chosen = choose_provider(scripted_model());
    let client = IntentClient::builder()
        .shared_provider(chosen.provider)
        .build()?;
    let reviews = ReviewsClient::new(client.clone());

    let review =
        "Arrived a day early and works perfectly. Loved it! -- Ada Lovelace <ada@example.com>";

    let mood = reviews.sentiment(review).await?;
    println!("sentiment: {mood:?}");

    let contact = reviews.contact(review).await;
    match &contact.value {
        Some(found) => println!("contact: {found} ({} attempt(s))", contact.attempts.len()),
        None => println!("no contact: {}", contact.failure_summary()),
    }
    print_attempts(&contact);

    let summary = reviews.summary(review).await?;
    println!("summary: {summary}");

    println!(
        "\nmodel calls: {}, tokens in/out: {}/{}",
        client.total_model_calls(),
        client.total_usage().input_tokens,
        client.total_usage().output_tokens
    );
    if chosen.offline {
        // The typed method hides the retry; the same question through the runtime shows it.
        let record = client
            .transform::<_, Sentiment>(
                review,
                "Classify the sentiment of the review",
                Default::default(),
            )
            .await;
        println!("\nthe sentiment call, attempt by attempt:");
        print_attempts(&record);
        assert_eq!(
            record.attempts.len(),
            2,
            "the scripted model's first answer is fixed by a retry"
        );
    }
    Ok(())
}
