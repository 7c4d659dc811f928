use intent_runtime::{intents, IntentError};

#[intents]
trait Docs {
    type Output;

    #[intent("Summarize")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
