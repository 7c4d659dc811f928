//! Shared bench fixtures: the medium "invoice" target and its ~2 KB reply.
#![allow(dead_code)]

pub mod loopback;

use std::sync::Arc;

use intent_rs::provider::ScriptedProvider;
use intent_rs::{IntentClient, IntentOptions};
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

/// A provider that answers at once and records nothing: the runtime's own cost per call,
/// without the scripted provider's bookkeeping (it keeps every request, which grows
/// without bound over a long bench, and serializes the schema to estimate usage).
///
/// With [`InstantProvider::alternating`], even-numbered requests get the first reply and
/// odd-numbered ones the second: a broken reply then a right one makes every call retry
/// once.
#[derive(Debug)]
pub struct InstantProvider {
    replies: [String; 2],
    next: std::sync::atomic::AtomicUsize,
}

impl InstantProvider {
    /// A provider answering `reply` to every request.
    pub fn new(reply: impl Into<String>) -> Self {
        let reply = reply.into();
        Self::alternating(reply.clone(), reply)
    }

    /// A provider answering `first` and `second` in turn.
    pub fn alternating(first: impl Into<String>, second: impl Into<String>) -> Self {
        Self {
            replies: [first.into(), second.into()],
            next: std::sync::atomic::AtomicUsize::new(0),
        }
    }
}

#[async_trait::async_trait]
impl intent_rs::provider::Provider for InstantProvider {
    fn name(&self) -> &str {
        "instant"
    }

    fn default_model(&self) -> &str {
        "instant-model"
    }

    async fn complete(
        &self,
        _request: &intent_rs::provider::ProviderRequest,
    ) -> Result<intent_rs::provider::ProviderReply, intent_rs::provider::ProviderError> {
        let index = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2;
        Ok(intent_rs::provider::ProviderReply {
            text: self.replies[index].clone(),
            stop_reason: Some("stop".to_owned()),
            model: "instant-model".to_owned(),
            ..Default::default()
        })
    }
}

/// The invoice reply broken the way a model breaks an envelope (a key beside `value`),
/// which fails the first attempt and makes the runtime retry.
pub fn broken_invoice_reply() -> String {
    let reply = invoice_reply();
    let inner = reply
        .strip_prefix("{\"value\":")
        .and_then(|rest| rest.strip_suffix('}'))
        .unwrap_or(&reply);
    format!("{{\"value\": {inner}, \"note\": \"here you go\"}}")
}

/// Captures the first request a call sends to a provider that enforces the schema (as
/// OpenAI does) or not.
pub fn captured<F, Fut>(enforced: bool, call: F) -> intent_rs::provider::ProviderRequest
where
    F: FnOnce(IntentClient) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let provider =
        Arc::new(ScriptedProvider::new(["{\"value\": null}"]).with_schema_enforced(enforced));
    let client = IntentClient::builder()
        .shared_provider(provider.clone())
        .max_attempts(1)
        .build()
        .expect("client");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(call(client));
    provider
        .requests()
        .into_iter()
        .next()
        .expect("the call sent a request")
}

/// The request the runtime makes of the `OpenAi` provider for the invoice (system prompt,
/// user message, schema): the schema is enforced, so the contract is the short one.
pub fn invoice_request() -> intent_rs::provider::ProviderRequest {
    captured(true, |client| async move {
        let options = IntentOptions::<Invoice>::new().validate(totals_add_up);
        client
            .transform(INVOICE_DOCUMENT, "Extract the invoice", options)
            .await;
    })
}

/// The JSON body the `OpenAi` provider sends for the invoice, rebuilt from
/// [`invoice_request`], so the raw loop posts a body of the same size.
pub fn invoice_request_body() -> String {
    let request = invoice_request();
    serde_json::json!({
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": request.system},
            {"role": "user", "content": request.user()},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": request.schema_name, "schema": request.schema.as_deref(), "strict": true}
        }
    })
    .to_string()
}
