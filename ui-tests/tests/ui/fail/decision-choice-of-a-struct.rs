use intent_rs::{intents, Choice, DecisionError};

pub struct Route {
    pub team: String,
}

#[intents]
trait Triage {
    #[intent("Which team should take the ticket?")]
    async fn route(&self, ticket: &str) -> Result<Choice<Route>, DecisionError>;
}

fn main() {}
