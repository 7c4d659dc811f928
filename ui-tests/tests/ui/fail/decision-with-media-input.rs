use intent_rs::media::{Document, Image};
use intent_rs::{intents, Binary, DecisionError};

#[intents]
trait Review {
    #[intent("Is the scan a signed contract?")]
    async fn signed(&self, note: &str, scan: &Image, contract: Document) -> Result<Binary, DecisionError>;
}

fn main() {}
