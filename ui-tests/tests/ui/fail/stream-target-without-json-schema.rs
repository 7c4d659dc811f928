use intent_rs::{intents, IntentStream, Partial, StrictCompatible};
use serde::Deserialize;

#[derive(Deserialize, Partial, StrictCompatible)]
struct Contact {
    name: String,
}

#[intents]
trait Docs {
    #[intent("Extract the contact")]
    fn contact_live(&self, text: &str) -> IntentStream<Contact>;
}

fn main() {}
