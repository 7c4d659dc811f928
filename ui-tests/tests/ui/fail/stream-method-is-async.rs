use intent_rs::{intents, IntentStream};

#[intents]
trait Docs {
    #[intent("Summarize")]
    async fn summary_live(&self, text: &str) -> IntentStream<String>;
}

fn main() {}
