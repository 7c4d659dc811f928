use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;

    fn summary_batch_item(&self) {}
}

fn main() {}
