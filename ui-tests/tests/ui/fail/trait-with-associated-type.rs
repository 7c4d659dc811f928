use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    type Output;

    #[intent("Summarize")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
