use intent_rs::{intents, IntentError};
use serde_json::Value;

#[intents]
trait Orders {
    #[intent("Extract the order", schema = "schemas/no-such-file.json")]
    async fn order(&self, text: &str) -> Result<Value, IntentError>;
}

fn main() {}
