use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize", retries = 3)]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
