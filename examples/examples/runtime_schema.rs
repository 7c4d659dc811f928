//! A runtime schema from a file: `#[intent("...", schema = "schemas/order.json")]` on a
//! method returning `serde_json::Value`. The file is read and checked at compile time and
//! embedded in the binary; constraints the strict schema cannot carry (`minimum`,
//! `minItems`) are still checked locally against the full schema.
//!
//! `cargo run --example runtime_schema` (offline: the first answer orders zero units).

use intent_examples::{choose_provider, print_attempts};
use intent_rs::provider::{ScriptedProvider, ScriptedReply};
use intent_rs::{AIResult, IntentClient, intents};

#[intents]
trait Orders {
    #[intent(
        "Turn the customer's email into an order",
        schema = "schemas/order.json"
    )]
    async fn order(&self, email: &str) -> AIResult<serde_json::Value>;
}

fn scripted_model() -> ScriptedProvider {
    ScriptedProvider::new([
        ScriptedReply::text(
            r#"{"value": {"customer": "Grace", "items": [{"sku": "KB-101", "quantity": 0}], "rush": null}}"#,
        ),
        ScriptedReply::text(
            r#"{"value": {"customer": "Grace", "items": [{"sku": "KB-101", "quantity": 2}], "rush": true}}"#,
        ),
    ])
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chosen = choose_provider(scripted_model());
    let client = IntentClient::builder()
        .shared_provider(chosen.provider)
        .build()?;
    let orders = OrdersClient::new(client);

    let email = "Hi, it's Grace. Please send two KB-101 keyboards, as soon as you can!";
    let result = orders.order(email).await;
    print_attempts(&result);
    println!("order: {}", result.into_result()?);
    Ok(())
}
