use intent_rs::media::Image;
use intent_rs::{intents, IntentError};

#[intents]
trait Albums {
    #[intent("Describe each album")]
    async fn describe(&self, albums: Vec<Vec<Image>>) -> Result<String, IntentError>;
}

fn main() {}
