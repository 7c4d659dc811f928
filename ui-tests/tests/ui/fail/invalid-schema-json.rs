use intent_rs::{intents, IntentError};
use serde_json::Value;

// trybuild builds each case in its own crate, whose manifest is not JSON.
#[intents]
trait Orders {
    #[intent("Extract the order", schema = "Cargo.toml")]
    async fn order(&self, text: &str) -> Result<Value, IntentError>;
}

fn main() {}
