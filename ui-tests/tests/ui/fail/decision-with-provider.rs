use intent_rs::{intents, Binary, DecisionError};

#[intents]
trait Triage {
    #[intent("Is the ticket solved?", provider = "cheap")]
    async fn solved(&self, ticket: &str) -> Result<Binary, DecisionError>;
}

fn main() {}
