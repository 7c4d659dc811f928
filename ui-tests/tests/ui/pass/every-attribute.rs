//! Every method attribute together, every kind of target, and `Send` futures.

use intent_rs::{intents, AIResult, IntentClient, IntentError, StrictCompatible};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
enum Sentiment {
    Positive,
    Neutral,
    Negative,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema, StrictCompatible)]
struct Line {
    item: String,
    cents: i64,
}

#[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
struct Invoice {
    number: String,
    total_cents: i64,
    lines: Vec<Line>,
    due: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Loose {
    fields: std::collections::HashMap<String, String>,
}

#[derive(Serialize, JsonSchema)]
struct Currency {
    code: String,
}

fn totals_add_up(invoice: &Invoice) -> Result<(), String> {
    let sum: i64 = invoice.lines.iter().map(|line| line.cents).sum();
    (sum == invoice.total_cents)
        .then_some(())
        .ok_or_else(|| format!("The lines add up to {sum}, not {}.", invoice.total_cents))
}

fn has_number(invoice: &Invoice) -> Vec<String> {
    if invoice.number.is_empty() { vec!["Fill in the invoice number.".into()] } else { vec![] }
}

fn short(text: &String) -> bool {
    text.len() < 200
}

mod checks {
    pub fn any_keys(value: &serde_json::Value) -> Option<String> {
        value.as_object().map_or(Some("Return an object.".into()), |_| None)
    }
}

/// Reads documents.
#[intents]
pub trait Documents {
    /// Classifies the review.
    #[intent("Classify the sentiment of the review", model = "small", max_attempts = 3, temperature = 0.0)]
    async fn sentiment(&self, review: &str) -> Result<Sentiment, IntentError>;

    #[intent("Extract the invoice fields", temperature = 1)]
    #[guardrail(require_judge)]
    #[guardrail(max_model_calls = 6, time_budget_ms = 30000, max_cost = "$0.25")]
    #[validate(totals_add_up)]
    #[validate(has_number)]
    #[example(input = "Invoice 7: 2 pens, 300 cents", output = r#"{"value": {"number": "7", "total_cents": 300, "lines": [{"item": "pen", "cents": 300}], "due": null}}"#)]
    #[example(input = "Invoice 8: nothing", output = r#"{"value": {"number": "8", "total_cents": 0, "lines": [], "due": null}}"#)]
    #[system("Amounts are in cents.")]
    #[output("Keep line order.")]
    async fn invoice(&self, document: String, currency: &Currency) -> AIResult<Invoice>;

    #[intent("Summarize in one sentence", provider = "cheap")]
    #[validate(short)]
    #[example(input = "A long story", output = "A story.")]
    async fn summary(&self, text: &str) -> Result<String, IntentError>;

    #[intent("Extract any key facts as JSON", recover_answer = false)]
    #[validate(checks::any_keys)]
    async fn facts(&self, text: &str) -> Result<Value, IntentError>;

    #[intent("Extract loose fields", json_mode, recover_answer)]
    async fn loose(&self, text: &str, hint: Option<u8>) -> Result<Loose, IntentError>;

    #[intent("Pick the most urgent message")]
    async fn most_urgent<'a>(&self, messages: &'a [String], limit: u8) -> Result<String, IntentError>;

    /// Not an intent: the client inherits it.
    fn describe(&self) -> &'static str {
        "documents"
    }
}

/// A generic trait keeps its generics and bounds.
#[intents]
pub(crate) trait Translate<I: Serialize + JsonSchema + Sync> {
    #[intent("Translate to French")]
    async fn french(&self, input: &I) -> Result<String, IntentError>;
}

fn assert_send<T: Send>(_: T) {}

fn uses_the_trait(docs: &impl Documents) -> &'static str {
    docs.describe()
}

#[allow(dead_code)]
fn futures_are_send(client: IntentClient) {
    let docs = DocumentsClient::new(client.clone());
    let _: &[&str] = DocumentsClient::PROVIDERS;
    let _: Result<DocumentsClient, intent_rs::UnknownProvider> = DocumentsClient::try_new(client.clone());
    assert_send(docs.sentiment("Loved it"));
    assert_send(docs.invoice("Invoice 9".to_owned(), &Currency { code: "EUR".into() }));
    assert_send(docs.summary("text"));
    assert_send(docs.facts("text"));
    assert_send(docs.loose("text", Some(1)));
    let messages = vec!["Server down".to_owned()];
    assert_send(docs.most_urgent(&messages, 1));
    let translate = TranslateClient::new(client);
    assert_send(Translate::<Line>::french(&translate, &Line { item: "pen".into(), cents: 1 }));
    let _: &IntentClient = docs.client();
    let _ = uses_the_trait(&docs);
}

fn main() {}
