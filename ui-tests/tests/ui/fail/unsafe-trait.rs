use intent_runtime::{intents, IntentError};

#[intents]
unsafe trait Docs {
    #[intent("Summarize")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
