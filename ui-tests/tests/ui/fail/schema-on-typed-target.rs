use intent_rs::{intents, IntentError};

#[intents]
trait Orders {
    #[intent("Count the items", schema = "count.json")]
    async fn count(&self, text: &str) -> Result<u32, IntentError>;
}

fn main() {}
