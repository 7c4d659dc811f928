use intent_rs::{intents, AIResult, IntentError};

#[intents]
trait Docs {
    #[intent("Summarize", modle = "small")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;

    #[intent("Count the words")]
    fn words(&self, text: &str) -> AIResult<u32>;

    async fn title(&self, text: &str) -> Result<String, IntentError>;
}

// The fallback keeps the trait and the client, so code using them adds no errors.
fn use_it(docs: &DocsClient) -> impl std::future::Future + '_ {
    docs.summary("text")
}

fn main() {}
