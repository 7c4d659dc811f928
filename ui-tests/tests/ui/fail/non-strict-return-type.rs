use std::collections::HashMap;

use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Count each word")]
    async fn counts(&self, text: &str) -> Result<HashMap<String, u32>, IntentError>;
}

fn main() {}
