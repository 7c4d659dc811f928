use intent_rs::{intents, AIResult, Binary, IntentError};

#[intents]
trait Triage {
    #[intent("Is the ticket solved?")]
    async fn solved(&self, ticket: &str) -> AIResult<Binary>;

    #[intent("Is the ticket urgent?")]
    async fn urgent(&self, ticket: &str) -> Result<Binary, IntentError>;
}

fn main() {}
