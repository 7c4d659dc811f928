use std::collections::HashMap;

use intent_rs::media::Image;
use intent_rs::{intents, IntentError};

#[intents]
trait Scans {
    #[intent("Describe the scans")]
    async fn describe(&self, scans: HashMap<String, Image>) -> Result<String, IntentError>;
}

fn main() {}
