use intent_rs::media::Image;
use intent_rs::{intents, IntentError};

#[intents]
trait Receipts {
    #[intent("Total the receipt")]
    async fn total(&self, note: &str, photos: Option<Vec<Image>>) -> Result<u32, IntentError>;
}

fn main() {}
