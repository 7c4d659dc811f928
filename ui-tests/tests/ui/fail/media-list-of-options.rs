use intent_rs::media::Document;
use intent_rs::{intents, IntentError};

#[intents]
trait Contracts {
    #[intent("Compare the contracts")]
    async fn compare(&self, contracts: &[Option<Document>]) -> Result<String, IntentError>;
}

fn main() {}
