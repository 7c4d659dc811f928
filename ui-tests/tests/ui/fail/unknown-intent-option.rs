use intent_runtime::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize", modle = "small")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
