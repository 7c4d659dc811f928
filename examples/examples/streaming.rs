//! Streaming: an invoice's fields printed as the model writes them, then the verified
//! value.
//!
//! `cargo run --example streaming` runs offline on a scripted model that streams its
//! replies in small pieces, slowly; its first invoice does not add up, so you also see
//! the retry event that withdraws what was shown. Set `OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY` or `OPENAI_COMPATIBLE_BASE_URL` to stream from a real model.

use std::time::Duration;

use intent_examples::{choose_provider, print_attempts};
use intent_rs::provider::ScriptedProvider;
use intent_rs::stream::StreamEvent;
use intent_rs::{IntentClient, IntentStream, Partial, StrictCompatible, intents};
use schemars::JsonSchema;
use serde::Deserialize;

/// One line of an invoice.
#[derive(Debug, Deserialize, JsonSchema, StrictCompatible, Partial)]
struct Line {
    /// What was sold.
    item: String,
    /// Its price in cents.
    cents: i64,
}

/// An invoice.
#[derive(Debug, Deserialize, JsonSchema, StrictCompatible, Partial)]
struct Invoice {
    /// The invoice number.
    number: String,
    /// The total in cents.
    total_cents: i64,
    /// The lines, in order.
    lines: Vec<Line>,
}

fn totals_add_up(invoice: &Invoice) -> Result<(), String> {
    let sum: i64 = invoice.lines.iter().map(|line| line.cents).sum();
    if sum == invoice.total_cents {
        Ok(())
    } else {
        Err(format!(
            "The lines add up to {sum} cents; make total_cents match them."
        ))
    }
}

/// Reading documents, as they are written.
#[intents]
trait Documents {
    /// The invoice's fields, streamed.
    #[intent("Extract the invoice fields")]
    #[validate(totals_add_up)]
    fn invoice(&self, document: &str) -> IntentStream<Invoice>;
}

const DOCUMENT: &str =
    "Invoice 2026-118. 3 x paper (12.50), 1 x ink (49.99), 1 x stapler (8.00). Total 70.49.";

/// The offline model: a first invoice whose total is wrong, then the right one, each in
/// 6-byte pieces 15 ms apart.
fn scripted_model() -> ScriptedProvider {
    ScriptedProvider::new([
        r#"{"value": {"number": "2026-118", "total_cents": 7094, "lines": [{"item": "paper", "cents": 1250}, {"item": "ink", "cents": 4999}, {"item": "stapler", "cents": 800}]}}"#,
        r#"{"value": {"number": "2026-118", "total_cents": 7049, "lines": [{"item": "paper", "cents": 1250}, {"item": "ink", "cents": 4999}, {"item": "stapler", "cents": 800}]}}"#,
    ])
    .with_stream_chunks(6, Some(Duration::from_millis(15)))
}

/// One line of what is known so far.
fn render(invoice: &InvoicePartial) -> String {
    let mut text = format!("number {}", invoice.number.as_deref().unwrap_or("…"));
    if let Some(total) = invoice.total_cents {
        text.push_str(&format!(", total {total}"));
    }
    for line in invoice.lines.iter().flatten() {
        let item = line.item.as_deref().unwrap_or("…");
        match line.cents {
            Some(cents) => text.push_str(&format!(" | {item}: {cents}")),
            None => text.push_str(&format!(" | {item}")),
        }
    }
    text
}

#[tokio::main]
async fn main() {
    let chosen = choose_provider(scripted_model());
    let client = IntentClient::builder()
        .shared_provider(chosen.provider)
        .build()
        .expect("a client with a provider");
    let documents = DocumentsClient::new(client);

    let mut events = documents.invoice(DOCUMENT);
    while let Some(event) = events.next().await {
        match event {
            StreamEvent::Partial { attempt, value } => {
                println!("  [attempt {attempt}] {}", render(&value));
            }
            StreamEvent::Retry { attempt, problems } => {
                println!("  -- withdrawn; attempt {attempt} starts because:");
                for problem in problems {
                    println!("     {}: {}", problem.source, problem.message);
                }
            }
            StreamEvent::Final(result) => {
                match &result.value {
                    Some(invoice) => {
                        let lines: Vec<String> = invoice
                            .lines
                            .iter()
                            .map(|line| format!("{} {}", line.item, line.cents))
                            .collect();
                        println!(
                            "\nverified: invoice {}, total {}, lines {}",
                            invoice.number,
                            invoice.total_cents,
                            lines.join(", ")
                        );
                    }
                    None => println!("\nno verified invoice"),
                }
                print_attempts(&result);
            }
        }
    }
}
