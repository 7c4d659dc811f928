use intent_rs::{intents, IntentError};

#[intents(model = "small")]
trait Docs {
    #[intent("Summarize")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
