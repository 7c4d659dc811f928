use intent_rs::{intents, AIResult, StrictCompatible};
use schemars::JsonSchema;

#[derive(JsonSchema, StrictCompatible)]
struct Contact {
    name: String,
}

#[intents]
trait Docs {
    #[intent("Extract the contact")]
    async fn contact(&self, text: &str) -> AIResult<Contact>;
}

fn main() {}
