use intent_rs::{intents, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize", model = "small", model = "large")]
    #[system("Be brief.")]
    #[system("Be kind.")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
