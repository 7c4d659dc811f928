use intent_rs::{intents, IntentError};

/// A type of the caller's named like a media input: sent as media, so it must be one.
pub struct Image {
    pub path: String,
}

#[intents]
trait Scans {
    #[intent("Describe the scan")]
    async fn describe(&self, scan: Image) -> Result<String, IntentError>;
}

fn main() {}
