use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize")]
    #[guardrail(max_model_calls = 0, time_budget_ms = 1.5)]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
