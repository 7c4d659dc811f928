use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize")]
    fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
