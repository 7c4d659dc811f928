use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize")]
    async fn summary(&self, text: &str) -> Result<String, IntentError> {
        Ok(text.to_owned())
    }
}

fn main() {}
