//! Shared bench fixtures: the medium "invoice" target and its ~2 KB reply.
#![allow(dead_code)]

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How an invoice is paid.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub enum PaymentTerms {
    /// Due on receipt.
    OnReceipt,
    /// Due in 30 days.
    Net30,
    /// Due in 60 days.
    Net60,
}

/// One line of an invoice.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Line {
    /// What was sold.
    pub description: String,
    /// How many.
    pub quantity: u32,
    /// Price per unit, in cents.
    pub unit_cents: i64,
    /// Tax category, when one applies.
    pub tax_code: Option<String>,
}

/// The medium target of the benches: 20 lines, an enum, optional fields.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Invoice {
    /// Invoice number.
    pub number: String,
    /// Who is billed.
    pub customer: String,
    /// Payment terms.
    pub terms: PaymentTerms,
    /// The lines.
    pub lines: Vec<Line>,
    /// Sum of the lines, in cents.
    #[schemars(range(min = 0))]
    pub total_cents: i64,
    /// Due date (ISO 8601), when stated.
    pub due: Option<String>,
}

pub fn invoice() -> Invoice {
    let lines: Vec<Line> = (1..=20)
        .map(|i| Line {
            description: format!("Consulting hours, work package {i}"),
            quantity: i,
            unit_cents: 1250 + i64::from(i),
            tax_code: if i % 2 == 0 {
                Some("VAT20".to_owned())
            } else {
                None
            },
        })
        .collect();
    let total_cents = lines
        .iter()
        .map(|l| i64::from(l.quantity) * l.unit_cents)
        .sum();
    Invoice {
        number: "INV-2026-0042".to_owned(),
        customer: "Example Industries Ltd".to_owned(),
        terms: PaymentTerms::Net30,
        lines,
        total_cents,
        due: Some("2026-12-30".to_owned()),
    }
}

/// The model's reply for [`invoice`]: the envelope, about 2 KB.
pub fn invoice_reply() -> String {
    serde_json::json!({ "value": invoice() }).to_string()
}

/// The document the invoice is extracted from.
pub const INVOICE_DOCUMENT: &str = "Invoice INV-2026-0042 for Example Industries Ltd, net 30, due 2026-12-30. \
20 lines of consulting work packages follow; see the attached table for quantities and unit prices.";

/// The validator the benches run: the total must add up.
pub fn totals_add_up(invoice: &Invoice) -> Result<(), String> {
    let sum: i64 = invoice
        .lines
        .iter()
        .map(|l| i64::from(l.quantity) * l.unit_cents)
        .sum();
    if sum == invoice.total_cents {
        Ok(())
    } else {
        Err(format!(
            "total_cents is {} but the lines add up to {sum}",
            invoice.total_cents
        ))
    }
}
