use intent_rs::intents;

#[intents]
trait Docs {
    #[intent("Summarize")]
    async fn summary(&self, text: &str) -> Result<String, String>;

    #[intent("Count the words")]
    async fn words(&self, text: &str) -> Option<u32>;
}

fn main() {}
