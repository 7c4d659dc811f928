//! Validators: `#[validate(path)]` checks the typed value; every problem it reports is
//! fed back to the model, which corrects its answer on the next attempt.
//!
//! `cargo run --example validators` (offline: the scripted model's first total is wrong).

use intent_examples::{choose_provider, print_attempts};
use intent_rs::provider::{ScriptedProvider, ScriptedReply};
use intent_rs::{AIResult, IntentClient, StrictCompatible, intents};
use schemars::JsonSchema;
use serde::Deserialize;

/// One invoice line.
#[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
struct Line {
    description: String,
    quantity: u32,
    unit_cents: i64,
}

/// An invoice as extracted from a document.
#[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
struct Invoice {
    number: String,
    lines: Vec<Line>,
    total_cents: i64,
}

/// The total must be the sum of the lines; the message tells the model how to fix it.
fn totals_add_up(invoice: &Invoice) -> Result<(), String> {
    let sum: i64 = invoice
        .lines
        .iter()
        .map(|l| i64::from(l.quantity) * l.unit_cents)
        .sum();
    if sum == invoice.total_cents {
        Ok(())
    } else {
        Err(format!(
            "total_cents is {} but the lines add up to {sum}; recompute the total from the lines.",
            invoice.total_cents
        ))
    }
}

/// Every line needs a description.
fn lines_are_described(invoice: &Invoice) -> Vec<String> {
    invoice
        .lines
        .iter()
        .enumerate()
        .filter(|(_, line)| line.description.trim().is_empty())
        .map(|(i, _)| {
            format!(
                "Line {} has no description; copy it from the document.",
                i + 1
            )
        })
        .collect()
}

#[intents]
trait Documents {
    #[intent("Extract the invoice fields")]
    #[validate(totals_add_up)]
    #[validate(lines_are_described)]
    #[output("Amounts are integers in cents.")]
    async fn invoice(&self, document: &str) -> AIResult<Invoice>;
}

fn scripted_model() -> ScriptedProvider {
    ScriptedProvider::new([
        ScriptedReply::text(
            r#"{"value": {"number": "7", "lines": [{"description": "Widget", "quantity": 2, "unit_cents": 1250}, {"description": "Gadget", "quantity": 1, "unit_cents": 999}], "total_cents": 3000}}"#,
        ),
        ScriptedReply::text(
            r#"{"value": {"number": "7", "lines": [{"description": "Widget", "quantity": 2, "unit_cents": 1250}, {"description": "Gadget", "quantity": 1, "unit_cents": 999}], "total_cents": 3499}}"#,
        ),
    ])
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chosen = choose_provider(scripted_model());
    let client = IntentClient::builder()
        .shared_provider(chosen.provider)
        .build()?;
    let documents = DocumentsClient::new(client);

    let document = "Invoice 7\n2 x Widget at 12.50\n1 x Gadget at 9.99\nTotal: 34.99";
    let result = documents.invoice(document).await;
    print_attempts(&result);
    let invoice = result.into_result()?;
    println!(
        "invoice {} totals {} cents over {} lines",
        invoice.number,
        invoice.total_cents,
        invoice.lines.len()
    );
    Ok(())
}
