use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize")]
    #[guardrail(model = "small")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
