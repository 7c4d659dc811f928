use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize")]
    #[guardrail(require_judge, max_tokens = 10)]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
