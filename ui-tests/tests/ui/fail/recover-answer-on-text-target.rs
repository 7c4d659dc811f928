use intent_runtime::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize", recover_answer)]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
