use intent_rs::{intents, IntentError};

#[intents]
unsafe trait Docs {
    #[intent("Summarize")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
