use intent_runtime::{intents, IntentError};

#[intents(model = "small")]
trait Docs {
    #[intent("Summarize")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
