use intent_runtime::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize", json_mode)]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
