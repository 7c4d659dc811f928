use intent_rs::{intents, IntentError};

struct Contact {
    name: String,
}

#[intents]
trait Docs {
    #[intent("Extract the contact", json_mode)]
    async fn contact(&self, text: &str) -> Result<Contact, IntentError>;
}

fn main() {}
