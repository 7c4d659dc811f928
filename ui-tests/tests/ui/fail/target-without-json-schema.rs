use intent_rs::{intents, IntentError, StrictCompatible};
use serde::Deserialize;

#[derive(Deserialize, StrictCompatible)]
struct Contact {
    name: String,
}

#[intents]
trait Docs {
    #[intent("Extract the contact")]
    async fn contact(&self, text: &str) -> Result<Contact, IntentError>;
}

fn main() {}
