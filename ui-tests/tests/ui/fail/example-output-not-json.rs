use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Count the words")]
    #[example(input = "one two", output = "two")]
    #[example(input = "one")]
    async fn words(&self, text: &str) -> Result<u32, IntentError>;
}

fn main() {}
