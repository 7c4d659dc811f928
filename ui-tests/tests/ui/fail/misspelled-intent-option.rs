use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize", temprature = 0.2)]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
