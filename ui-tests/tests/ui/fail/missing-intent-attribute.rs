use intent_runtime::{intents, IntentError};

#[intents]
trait Docs {
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
