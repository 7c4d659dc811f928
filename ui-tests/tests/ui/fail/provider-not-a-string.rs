use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize", provider = cheap)]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
