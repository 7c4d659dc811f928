use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Tell a joke")]
    async fn joke(&self) -> Result<String, IntentError>;
}

fn main() {}
