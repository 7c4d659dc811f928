use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Count the words", recover_answer = "yes")]
    async fn words(&self, text: &str) -> Result<u32, IntentError>;
}

fn main() {}
