use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize")]
    async fn summary<T>(&self, (a, b): (T, T)) -> Result<String, IntentError>;
}

fn main() {}
