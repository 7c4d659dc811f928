use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize", max_attempts = "3", model = small, temperature = "hot")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
