use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent(42)]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
