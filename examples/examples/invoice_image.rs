//! A typed, validated invoice read from a scanned image and from a PDF.
//!
//! `cargo run --example invoice_image` runs offline on a scripted model that reads the
//! media type of what it is sent (its first answer from the image does not add up, so you
//! see the validator's retry). Set `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` or
//! `OPENAI_COMPATIBLE_BASE_URL` to send `examples/data/invoice.png` and `invoice.pdf` to a
//! real model (an OpenAI-compatible server is sent the image only unless it reads PDFs).

use std::path::Path;

use intent_examples::{choose_provider, print_attempts};
use intent_rs::media::{Document, Image, MediaType};
use intent_rs::provider::{ScriptedProvider, ScriptedReply};
use intent_rs::{AIResult, IntentClient, StrictCompatible, intents};
use schemars::JsonSchema;
use serde::Deserialize;

/// One line of an invoice.
#[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
struct Line {
    /// What was sold.
    item: String,
    /// Its price in cents.
    cents: i64,
}

/// An invoice as printed.
#[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
struct Invoice {
    /// The invoice number.
    number: String,
    lines: Vec<Line>,
    /// The printed total, in cents.
    total_cents: i64,
}

fn totals_add_up(invoice: &Invoice) -> Result<(), String> {
    let sum: i64 = invoice.lines.iter().map(|line| line.cents).sum();
    if sum == invoice.total_cents {
        Ok(())
    } else {
        Err(format!(
            "total_cents must be the sum of the lines' cents, {sum}"
        ))
    }
}

#[intents]
trait Invoices {
    /// An invoice from a photo or a scan.
    #[intent("Extract the invoice printed in the image", max_attempts = 3)]
    #[validate(totals_add_up)]
    async fn read_image(&self, scan: Image) -> AIResult<Invoice>;

    /// An invoice from a PDF.
    #[intent("Extract the invoice in the PDF", max_attempts = 3)]
    #[validate(totals_add_up)]
    async fn read_pdf(&self, document: Document) -> AIResult<Invoice>;
}

/// The offline model: answers by the type of media it was sent; its first answer from the
/// image has a total that does not add up.
fn scripted_model() -> ScriptedProvider {
    ScriptedProvider::from_fn(|request, _| {
        let sent = request.media().next().and_then(|media| media.media_type());
        let reply = match (sent, request.is_retry()) {
            (Some(MediaType::Pdf), _) => {
                r#"{"value": {"number": "43", "lines": [{"item": "Coffee", "cents": 320}], "total_cents": 320}}"#
            }
            (Some(_), false) => {
                r#"{"value": {"number": "42", "lines": [{"item": "Tea", "cents": 250}], "total_cents": 520}}"#
            }
            (Some(_), true) => {
                r#"{"value": {"number": "42", "lines": [{"item": "Tea", "cents": 250}], "total_cents": 250}}"#
            }
            (None, _) => r#"{"value": null}"#,
        };
        ScriptedReply::text(reply)
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chosen = choose_provider(scripted_model());
    let client = IntentClient::builder()
        .shared_provider(chosen.provider)
        .build()?;
    let invoices = InvoicesClient::new(client.clone());
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("data");

    // The type is read from the bytes, not from the file name.
    let scan = Image::from_path(data.join("invoice.png"))?;
    println!(
        "image: {:?}, {} bytes, sha256 {}",
        scan.media().media_type(),
        scan.media().len(),
        &scan.media().sha256_hex()[..16]
    );
    let from_image = invoices.read_image(scan).await;
    print_attempts(&from_image);
    println!("from the image: {:?}\n", from_image.value);

    let pdf = Document::from_path(data.join("invoice.pdf"))?;
    println!(
        "document: {} bytes, {:?} page(s)",
        pdf.media().len(),
        pdf.media().pages()
    );
    let from_pdf = invoices.read_pdf(pdf).await;
    print_attempts(&from_pdf);
    match &from_pdf.value {
        Some(invoice) => {
            println!("from the PDF: invoice {}", invoice.number);
            for line in &invoice.lines {
                println!("  {}: {} cents", line.item, line.cents);
            }
        }
        // A server that reads no PDFs refuses it before anything is sent, and says why.
        None => println!("no invoice from the PDF: {}", from_pdf.failure_summary()),
    }

    if chosen.offline {
        assert_eq!(from_image.attempts.len(), 2, "the validator's retry");
        assert_eq!(
            from_image.value.map(|invoice| invoice.total_cents),
            Some(250)
        );
        assert_eq!(
            from_pdf.value.map(|invoice| invoice.number),
            Some("43".to_owned())
        );
    }
    Ok(())
}
