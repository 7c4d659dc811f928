use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize", time_budget_ms = 300)]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
