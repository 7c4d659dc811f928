use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize")]
    async fn summary(text: &str) -> Result<String, IntentError>;

    #[intent("Translate")]
    async fn translate(&mut self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
