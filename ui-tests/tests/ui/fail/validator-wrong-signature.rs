use intent_rs::{intents, IntentError};

fn positive(value: &i64) -> Result<(), String> {
    if *value > 0 { Ok(()) } else { Err("Return a positive number.".into()) }
}

fn returns_a_number(_: &String) -> u32 {
    0
}

#[intents]
trait Docs {
    #[intent("Summarize")]
    #[validate(positive, returns_a_number)]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;
}

fn main() {}
