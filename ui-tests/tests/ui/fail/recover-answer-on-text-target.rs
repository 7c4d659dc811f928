use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize", recover_answer)]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
