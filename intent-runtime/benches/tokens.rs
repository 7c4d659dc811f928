//! Token economy: the input tokens of whole requests for five representative targets,
//! counted with the o200k encoding (GPT-4o and later), and where they go.
//!
//! Each request is captured from a scripted provider, so what is counted is exactly what
//! a provider receives: the system prompt, the user message and the strict schema. The
//! user message is split into its parts: section headings, the caller's intent and input,
//! the output contract and, inside it, the type's description.
//!
//! The scripted provider enforces the schema as OpenAI does (`with_schema_enforced`), so
//! the prompts are the ones OpenAI is sent; a last table compares them with the prompts a
//! provider that does not read the schema gets (the type described in full).
//!
//! `cargo bench -p intent-runtime --bench tokens`; `-- --quick` (or `--test`) prints the
//! same table (it is fast) without the rendered prompts.

mod support;

use intent_runtime::IntentOptions;
use intent_runtime::input::describe_target;
use intent_runtime::provider::ProviderRequest;
use intent_runtime::schema::target_schema;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use support::{INVOICE_DOCUMENT, Invoice, Line, captured};
use tiktoken_rs::CoreBPE;

/// The sentiment of a review.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
enum Sentiment {
    /// Mostly favourable.
    Positive,
    /// Neither favourable nor unfavourable.
    Neutral,
    /// Mostly unfavourable.
    Negative,
}

/// A person's contact details.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Contact {
    /// Full name.
    name: String,
    /// Email address, when given.
    email: Option<String>,
    /// Phone number, when given.
    phone: Option<String>,
    /// Employer, when given.
    company: Option<String>,
    /// Job title, when given.
    title: Option<String>,
}

const REVIEW: &str =
    "The battery lasts two days and the screen is sharp, but the case scratches easily.";
const SIGNATURE: &str = "Best regards,\nMaria Lopez\nHead of Procurement, Example Industries Ltd\n+44 20 7946 0000 | maria.lopez@example.com";

fn product_schema() -> Value {
    json!({
        "title": "Product",
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Product name"},
            "price_cents": {"type": "integer", "minimum": 0},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5}
        },
        "required": ["name", "price_cents", "tags"]
    })
}

/// Token counts of one request, by part.
#[derive(Default)]
struct Breakdown {
    preamble: usize,
    headings: usize,
    intent: usize,
    input: usize,
    contract: usize,
    description: usize,
    schema: usize,
    /// The system prompt, the user message and the schema each counted whole.
    total: usize,
}

fn typed_request<T, I>(enforced: bool, input: &I, intent: &str) -> (ProviderRequest, Option<String>)
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
    I: Serialize + JsonSchema + ?Sized + Sync,
{
    let request = captured(enforced, |client| async move {
        let _ = client
            .transform(input, intent, IntentOptions::<T>::new())
            .await;
    });
    let description = describe_target(&target_schema::<T>().expect("schema"));
    (request, Some(description))
}

fn runtime_request(
    enforced: bool,
    input: &str,
    intent: &str,
    schema: &Value,
) -> (ProviderRequest, Option<String>) {
    let request = captured(enforced, |client| async move {
        let _ = client
            .transform_value(input, intent, Some(schema), IntentOptions::new())
            .await;
    });
    (request, None)
}

/// The `response_format` the OpenAI provider sends with a strict schema.
fn response_format(request: &ProviderRequest) -> Option<String> {
    let schema = request.schema.as_deref()?;
    Some(
        json!({
            "type": "json_schema",
            "json_schema": {"name": request.schema_name, "schema": schema, "strict": true}
        })
        .to_string(),
    )
}

fn breakdown(bpe: &CoreBPE, request: &ProviderRequest, description: Option<&str>) -> Breakdown {
    let count = |text: &str| bpe.encode_ordinary(text).len();
    let mut parts = Breakdown {
        preamble: count(&request.system),
        ..Breakdown::default()
    };
    // Sections start with `## Title` on their own line and are separated by blank lines.
    for section in request.user().split("\n\n## ") {
        let section = section.strip_prefix("## ").unwrap_or(section);
        let (title, body) = section.split_once('\n').unwrap_or((section, ""));
        parts.headings += count(&format!("## {title}\n"));
        let body_tokens = count(body);
        if title == "Intent" {
            parts.intent += body_tokens;
        } else if title.starts_with("Input") {
            parts.input += body_tokens;
        } else {
            let described = description.filter(|d| body.contains(*d)).map_or(0, &count);
            parts.description += described;
            parts.contract += body_tokens.saturating_sub(described);
        }
    }
    parts.schema = response_format(request).map_or(0, |format| count(&format));
    parts.total = count(&request.system) + count(request.user()) + parts.schema;
    parts
}

/// Parts of a request that say again what the strict schema already enforces.
struct Repeated {
    /// The type's description in the contract: the schema describes the same type.
    description: usize,
    /// The rest of the output contract (`Reply with one JSON object {"value": <result>}`
    /// and its joints): the schema's envelope says the same.
    contract: usize,
    /// `title` members in the schema (type names such as `Array_of_Line`).
    titles: usize,
    /// The preamble's `Reply with the result alone: no preamble, no explanation, no code
    /// fences.`, which structured output makes true by construction.
    format_rules: usize,
}

fn repeated_in_strict_requests(
    bpe: &CoreBPE,
    request: &ProviderRequest,
    parts: &Breakdown,
) -> Repeated {
    let count = |text: &str| bpe.encode_ordinary(text).len();
    let Some(format) = response_format(request) else {
        return Repeated {
            description: 0,
            contract: 0,
            titles: 0,
            format_rules: 0,
        };
    };
    let mut untitled: Value = serde_json::from_str(&format).expect("json");
    remove_titles(&mut untitled);
    let format_rules = request
        .system
        .find("Reply with the result alone")
        .map_or(0, |start| count(&request.system[start..]));
    Repeated {
        description: parts.description,
        contract: parts.contract,
        titles: count(&format).saturating_sub(count(&untitled.to_string())),
        format_rules,
    }
}

/// Removes every `title` member of the schema's objects (not properties named `title`).
fn remove_titles(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.get("title").is_some_and(Value::is_string) {
                map.remove("title");
            }
            for (key, child) in map.iter_mut() {
                if key == "properties" || key == "$defs" {
                    if let Value::Object(named) = child {
                        named.values_mut().for_each(remove_titles);
                    }
                } else {
                    remove_titles(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(remove_titles),
        _ => {}
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick" || a == "--test");
    let bpe = tiktoken_rs::o200k_base().expect("the o200k encoding is embedded");
    let product = product_schema();
    let requests = |enforced: bool| {
        [
            (
                "enum (Sentiment)",
                typed_request::<Sentiment, str>(
                    enforced,
                    REVIEW,
                    "Classify the sentiment of the review.",
                ),
            ),
            (
                "flat struct (Contact)",
                typed_request::<Contact, str>(enforced, SIGNATURE, "Extract the contact details."),
            ),
            (
                "invoice (Invoice)",
                typed_request::<Invoice, str>(enforced, INVOICE_DOCUMENT, "Extract the invoice."),
            ),
            (
                "list (Vec<Line>)",
                typed_request::<Vec<Line>, str>(
                    enforced,
                    INVOICE_DOCUMENT,
                    "List the invoice lines.",
                ),
            ),
            (
                "runtime schema (Product)",
                runtime_request(
                    enforced,
                    "Blue mug, 350 ml, 12.50 EUR; kitchen, gift",
                    "Extract the product.",
                    &product,
                ),
            ),
        ]
    };
    let targets = requests(true);
    println!("## input tokens per request (o200k_base), by part");
    println!(
        "{:<26} {:>6} {:>8} {:>6} {:>6} {:>8} {:>11} {:>6} {:>6}",
        "target", "total", "preamble", "heads", "intent", "input", "contract", "descr", "schema"
    );
    for (name, (request, description)) in &targets {
        let b = breakdown(&bpe, request, description.as_deref());
        println!(
            "{name:<26} {:>6} {:>8} {:>6} {:>6} {:>8} {:>11} {:>6} {:>6}",
            b.total, b.preamble, b.headings, b.intent, b.input, b.contract, b.description, b.schema
        );
    }
    println!();
    println!("## what a strict-schema request repeats (tokens it could save)");
    println!(
        "{:<26} {:>6} {:>8} {:>8} {:>14} {:>13} {:>6}",
        "target", "total", "descr.", "contract", "schema titles", "format rules", "share"
    );
    for (name, (request, description)) in &targets {
        let parts = breakdown(&bpe, request, description.as_deref());
        let trims = repeated_in_strict_requests(&bpe, request, &parts);
        let repeated = trims.description + trims.contract + trims.titles + trims.format_rules;
        println!(
            "{name:<26} {:>6} {:>8} {:>8} {:>14} {:>13} {:>5.0}%",
            parts.total,
            trims.description,
            trims.contract,
            trims.titles,
            trims.format_rules,
            100.0 * repeated as f64 / parts.total.max(1) as f64
        );
    }
    println!();
    println!("## the schema enforced (OpenAI) against the type described in full");
    println!(
        "{:<26} {:>9} {:>9} {:>6}",
        "target", "enforced", "described", "saved"
    );
    for ((name, (request, _)), (_, (described, description))) in
        targets.iter().zip(&requests(false))
    {
        let enforced = breakdown(&bpe, request, None).total;
        let described = breakdown(&bpe, described, description.as_deref()).total;
        println!(
            "{name:<26} {enforced:>9} {described:>9} {:>5.0}%",
            100.0 * described.saturating_sub(enforced) as f64 / described.max(1) as f64
        );
    }
    if !quick {
        for (name, (request, _)) in &targets {
            println!(
                "\n=== {name}: system ===\n{}\n=== user ===\n{}",
                request.system,
                request.user()
            );
            if let Some(format) = response_format(request) {
                println!("=== response_format ===\n{format}");
            }
        }
    }
}
