use intent_rs::{intents, Choice, DecisionEnum, DecisionError, Score};

// One mistake, one error: the derive's message, not one more per method using the enum.
#[derive(Debug, DecisionEnum)]
enum Route {
    Billing,
}

#[intents]
trait Triage {
    #[intent("Which team should take the ticket?")]
    async fn route(&self, ticket: &str) -> Result<Choice<Route>, DecisionError>;

    #[intent("How far along is the ticket?")]
    async fn stage(&self, ticket: &str) -> Result<Score<Route>, DecisionError>;
}

fn main() {}
