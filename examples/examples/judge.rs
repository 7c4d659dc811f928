//! The judge: `#[guardrail(require_judge)]` asks a second model call whether the answer
//! really carries out the intent; its problems are fed back like any other.
//!
//! `cargo run --example judge` (offline: the scripted judge rejects the first summary).

use intent_examples::{choose_provider, print_attempts};
use intent_rs::provider::{ScriptedProvider, ScriptedReply};
use intent_rs::{AIResult, IntentClient, intents};

#[intents]
trait Editor {
    #[intent("Write a headline for the article")]
    #[guardrail(require_judge)]
    #[output("At most eight words; no clickbait.")]
    async fn headline(&self, article: &str) -> AIResult<String>;
}

/// The offline model plays both roles: the writer and, for the strict verdict schema,
/// the judge.
fn scripted_model() -> ScriptedProvider {
    ScriptedProvider::from_fn(|request, _| {
        let judging = request.schema_name == intent_rs::judge::JUDGE_SCHEMA_NAME;
        let retry = request.is_retry();
        let reply = match (judging, request.user().contains("You Won't Believe")) {
            (true, true) => {
                r#"{"passes": false, "problems": ["The headline is clickbait; state the finding plainly."]}"#
            }
            (true, false) => r#"{"passes": true, "problems": []}"#,
            (false, _) if retry => "City Cuts Bus Fares by Half From March",
            (false, _) => "You Won't Believe What the City Did to Bus Fares",
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
    let editor = EditorClient::new(client);

    let article = "From March, single bus fares in the city fall from 3.00 to 1.50, the council decided on Monday.";
    let result = editor.headline(article).await;
    print_attempts(&result);
    println!("headline: {}", result.into_result()?);
    Ok(())
}
