use intent_rs::{intents, IntentError, StrictCompatible};
use serde::Deserialize;

// The ui-tests build intent-rs without its `chrono` feature.
#[derive(Deserialize, StrictCompatible)]
struct Meeting {
    title: String,
    on: chrono::NaiveDate,
}

#[intents]
trait Calendar {
    #[intent("When is the meeting?")]
    async fn day(&self, text: &str) -> Result<chrono::NaiveDate, IntentError>;
}

fn main() {}
