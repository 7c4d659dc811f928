use intent_rs::{intents, AIResult, IntentStream, Partial, StrictCompatible};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
enum Mood {
    Happy,
    Sad,
}

/// A contact.
#[derive(Deserialize, JsonSchema, StrictCompatible, Partial)]
#[serde(rename_all = "camelCase")]
pub struct Contact {
    /// The full name.
    pub full_name: String,
    mood: Mood,
    #[serde(skip)]
    _cache: (),
    emails: Vec<String>,
}

#[intents]
trait Docs {
    #[intent("Extract the contact")]
    async fn contact(&self, text: &str) -> AIResult<Contact>;

    #[intent("Extract the contact")]
    fn contact_live(&self, text: &str) -> IntentStream<Contact>;

    #[intent("Summarize")]
    fn summary_live(&self, text: &str, words: u32) -> IntentStream<String>;

    #[intent("Any shape")]
    fn anything_live(&self, text: &str) -> IntentStream<serde_json::Value>;
}

fn main() {
    let partial = ContactPartial::default();
    let _: Option<String> = partial.full_name;
    let _: Option<Mood> = partial.mood;
    let _: Option<Vec<String>> = partial.emails;
}
