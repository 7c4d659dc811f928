use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize")]
    #[guardrail(max_cost = "five cents")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;

    #[intent("Translate")]
    #[guardrail(max_cost = 0)]
    async fn translate(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
