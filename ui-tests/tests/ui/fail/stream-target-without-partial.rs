use intent_rs::{intents, IntentStream, StrictCompatible};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema, StrictCompatible)]
struct Contact {
    name: String,
}

#[intents]
trait Docs {
    #[intent("Extract the contact")]
    fn contact_live(&self, text: &str) -> IntentStream<Contact>;
}

fn main() {}
