use intent_rs::{intents, Binary, DecisionError};

fn not_empty(_: &Binary) -> bool {
    true
}

#[intents]
trait Triage {
    #[intent("Is the ticket solved?", max_attempts = 2)]
    #[guardrail(require_judge)]
    #[validate(not_empty)]
    async fn solved(&self, ticket: &str) -> Result<Binary, DecisionError>;
}

fn main() {}
