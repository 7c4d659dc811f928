use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize")]
    #[validate(not_too_long)]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
