use intent_rs::{intents, Choice, DecisionError};

#[intents]
trait Triage {
    #[intent("Which team should take the ticket?")]
    async fn route(&self, ticket: &str) -> Result<Choice, DecisionError>;
}

fn main() {}
