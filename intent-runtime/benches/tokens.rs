//! Token economy: the prompt tokens of whole requests, counted with the o200k encoding
//! (GPT-4o and later), next to the requests two peer libraries send for the same target;
//! then what retries cost and how much of them a provider's prompt cache can serve.
//!
//! Every intent-rs request is captured from a provider, so what is counted is exactly what
//! the provider receives. Counting, the same for every row: the messages' text, OpenAI's
//! framing of a chat (3 tokens per message plus its role, 3 to prime the reply), and the
//! JSON text of the schema as the request carries it (`response_format`, or `tools` and
//! `tool_choice`). OpenAI renders schemas into the prompt its own way, so absolute figures
//! differ from its bills; the comparison between rows holds.
//!
//! Parts:
//! 1. Requests per target, with the schema enforced (the OpenAI provider) and described
//!    (a provider that does not show the model the schema).
//! 2. The invoice, and a small invoice sized like the outside check's
//!    (`../shared/specs/peer-requests`), as each peer would send them, rebuilt from their
//!    public source: Instructor (Python, OpenAI in its default `TOOLS` mode and in
//!    `TOOLS_STRICT`) and rstructor (Rust, OpenAI structured outputs).
//! 3. Three-attempt calls with a 2 KB input: the share of the retries' prompt tokens that
//!    repeat, byte for byte, a prefix of an earlier request. Two targets: the invoice,
//!    whose every reply is as long as the input, and a short answer about the same
//!    document. A retry's new turns are the previous reply and its problems, so the share
//!    falls as the replies grow.
//! 4. The same calls through the real `OpenAi` provider against a loopback server that
//!    applies OpenAI's documented caching rule (a repeated prefix of at least 1,024 tokens,
//!    counted in 128-token steps) and reports `cached_tokens`: what `Usage` records.
//! 5. Three typed calls of part 1, the two invoices and the enum, through each HTTP provider
//!    (OpenAI's Chat Completions, Azure OpenAI, OpenAI's Responses API, Gemini) against a
//!    loopback server answering in that API's shape: the tokens of the request body each
//!    API's wire format costs, by part (the prompts' text, the member that carries the
//!    schema: `response_format`, `text` with its flat `format`, or Gemini's rewritten
//!    `responseJsonSchema`; the rest of the body), counted over the JSON text as sent.
//!
//! `cargo bench -p intent-rs --bench tokens`; `-- --quick` (or `--test`) prints the
//! same tables (it is fast) without the rendered requests.

mod support;

use std::sync::{Arc, Mutex};

use intent_rs::IntentOptions;
use intent_rs::provider::{OpenAi, Provider, ProviderRequest, Role, ScriptedProvider};
use intent_rs::schema::make_strict;
use intent_rs::{AIResult, IntentClient};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use support::loopback::{Api, Loopback};
use support::{INVOICE_DOCUMENT, Invoice, Line, captured, invoice, totals_add_up};
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
const INVOICE_INTENT: &str = "Extract the invoice.";
const SENTIMENT_INTENT: &str = "Classify the sentiment of the review.";

/// The small invoice of the outside check (`../shared/specs/peer-requests`): three
/// fields, one nested line list, no descriptions (the captured peer requests carry none),
/// named as there, so every library's request names the same things.
mod small {
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    // No doc comments on purpose: a doc comment becomes a `description` the captured
    // requests do not have.
    #[allow(missing_docs)]
    #[derive(Debug, Serialize, Deserialize, JsonSchema)]
    pub struct Invoice {
        pub number: String,
        pub total_cents: i64,
        pub lines: Vec<Line>,
    }

    #[allow(missing_docs)]
    #[derive(Debug, Serialize, Deserialize, JsonSchema)]
    pub struct Line {
        pub sku: String,
        pub qty: u32,
    }
}

const SMALL_INTENT: &str = "Extract the invoice fields.";
const SMALL_DOCUMENT: &str = "Invoice INV-7: 2 x A-100, 1 x B-200. Total 45.00 EUR.";
/// The outside check's text for the small invoice ("Extract the invoice fields from
/// document -1", one user turn in the peers' captured requests), split as this library
/// sends it: the intent, then the input.
const CAPTURED_INTENT: &str = "Extract the invoice fields";
const CAPTURED_DOCUMENT: &str = "from document -1";
/// The peers' requests for the small invoice as captured from the wire
/// (`../shared/specs/peer-requests`), counted as the outside check counts them: the whole
/// body as the file holds it.
const CAPTURED_PEERS: [(&str, &str); 2] = [
    (
        "Instructor 1.17, JSON_SCHEMA",
        include_str!("support/peer-requests/instructor-invoice.json"),
    ),
    (
        "rstructor 0.6.0",
        include_str!("support/peer-requests/rstructor-invoice.json"),
    ),
];

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

/// One request as OpenAI receives it: the messages and the JSON that carries the schema.
struct Wire {
    messages: Vec<(&'static str, String)>,
    /// `response_format`, or `tools` with `tool_choice`, as JSON text.
    schema: Option<String>,
}

impl Wire {
    /// What the OpenAI provider sends for `request` (an empty system prompt is left out).
    fn of(request: &ProviderRequest) -> Wire {
        let mut messages = Vec::new();
        if !request.system.is_empty() {
            messages.push(("system", request.system.clone()));
        }
        for message in &request.messages {
            messages.push((message.role.as_str(), message.content.clone()));
        }
        let schema = request.schema.as_deref().map(|schema| {
            json!({"type": "json_schema", "json_schema": {
                "name": request.schema_name, "schema": schema, "strict": true
            }})
            .to_string()
        });
        Wire { messages, schema }
    }

    /// The text a prefix cache sees, in order: the schema, then each message.
    fn linear(&self) -> String {
        let mut text = self.schema.clone().unwrap_or_default();
        for (role, content) in &self.messages {
            text.push('\n');
            text.push_str(role);
            text.push('\n');
            text.push_str(content);
        }
        text
    }
}

/// Token counts of one request, by part.
struct Tokens {
    system: usize,
    turns: usize,
    schema: usize,
    framing: usize,
}

impl Tokens {
    fn of(bpe: &CoreBPE, wire: &Wire) -> Tokens {
        let count = |text: &str| bpe.encode_ordinary(text).len();
        let system = wire
            .messages
            .iter()
            .filter(|(role, _)| *role == "system")
            .map(|(_, text)| count(text))
            .sum();
        let turns = wire
            .messages
            .iter()
            .filter(|(role, _)| *role != "system")
            .map(|(_, text)| count(text))
            .sum();
        let schema = wire.schema.as_deref().map_or(0, count);
        // OpenAI's published counting: 3 per message, plus the role (1), plus 3 for the reply.
        let framing = 4 * wire.messages.len() + 3;
        Tokens {
            system,
            turns,
            schema,
            framing,
        }
    }

    fn total(&self) -> usize {
        self.system + self.turns + self.schema + self.framing
    }
}

fn typed_request<T, I>(enforced: bool, input: &I, intent: &str) -> ProviderRequest
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
    I: Serialize + JsonSchema + ?Sized + Sync,
{
    captured(enforced, |client| async move {
        let _ = client
            .transform(input, intent, IntentOptions::<T>::new())
            .await;
    })
}

fn runtime_request(enforced: bool, input: &str, intent: &str, schema: &Value) -> ProviderRequest {
    captured(enforced, |client| async move {
        let _ = client
            .transform_value(input, intent, Some(schema), IntentOptions::new())
            .await;
    })
}

/// The user's message to a peer library: the intent, then the input.
fn peer_prompt(intent: &str, input: &str) -> String {
    format!("{intent}\n\n{input}")
}

/// What Instructor (Python) sends OpenAI for a Pydantic model: its
/// `model_json_schema()`, with the root `title` and `description` moved into the
/// function's `name` and `description`, sent as the one tool the model must call.
///
/// Rebuilt from `instructor/processing/schema.py` (`generate_openai_schema`): `required`
/// is sorted; a model without a docstring gets the description ``Correctly extracted
/// `<name>` with all the required parameters with correct types``. `TOOLS_STRICT` adds
/// `strict: true`, which needs `additionalProperties: false` on the root and on every
/// definition.
fn instructor_tools(
    name: &str,
    description: Option<&str>,
    mut parameters: Value,
    strict: bool,
    prompt: String,
) -> Wire {
    if strict {
        parameters["additionalProperties"] = json!(false);
        if let Some(Value::Object(defs)) = parameters.get_mut("$defs") {
            for def in defs.values_mut() {
                if def.get("properties").is_some() {
                    def["additionalProperties"] = json!(false);
                }
            }
        }
    }
    let description = description.map_or_else(
        || {
            format!(
                "Correctly extracted `{name}` with all the required parameters with correct types"
            )
        },
        str::to_owned,
    );
    let mut function = json!({
        "name": name,
        "description": description,
        "parameters": parameters
    });
    if strict {
        function["strict"] = json!(true);
    }
    let tools = json!({
        "tools": [{"type": "function", "function": function}],
        "tool_choice": {"type": "function", "function": {"name": name}}
    });
    Wire {
        messages: vec![("user", prompt)],
        schema: Some(tools.to_string()),
    }
}

/// What Instructor sends for the bench's invoice.
///
/// The schema below is what Pydantic 2 gives for the invoice written as Pydantic models,
/// each field with `Field(description=...)` holding the same doc comment as the Rust type:
/// every property gets a `title`, an `Option` becomes `anyOf` with `null`, enums go to
/// `$defs`.
fn instructor_wire(strict: bool) -> Wire {
    let prop = |title: &str, description: &str, schema: Value| {
        let mut schema = schema;
        schema["title"] = json!(title);
        schema["description"] = json!(description);
        schema
    };
    let nullable_string = json!({"anyOf": [{"type": "string"}, {"type": "null"}]});
    let line = json!({
        "description": "One line of an invoice.",
        "properties": {
            "description": prop("Description", "What was sold.", json!({"type": "string"})),
            "quantity": prop("Quantity", "How many.", json!({"type": "integer"})),
            "unit_cents": prop("Unit Cents", "Price per unit, in cents.", json!({"type": "integer"})),
            "tax_code": prop("Tax Code", "Tax category, when one applies.", nullable_string.clone()),
        },
        "required": ["description", "quantity", "unit_cents", "tax_code"],
        "title": "Line",
        "type": "object"
    });
    let mut parameters = json!({
        "$defs": {
            "PaymentTerms": {
                "description": "How an invoice is paid.",
                "enum": ["OnReceipt", "Net30", "Net60"],
                "title": "PaymentTerms",
                "type": "string"
            }
        },
        "properties": {
            "number": prop("Number", "Invoice number.", json!({"type": "string"})),
            "customer": prop("Customer", "Who is billed.", json!({"type": "string"})),
            "terms": {"$ref": "#/$defs/PaymentTerms", "description": "Payment terms."},
            "lines": prop("Lines", "The lines.", json!({"type": "array", "items": {"$ref": "#/$defs/Line"}})),
            "total_cents": prop("Total Cents", "Sum of the lines, in cents.", json!({"type": "integer", "minimum": 0})),
            "due": prop("Due", "Due date (ISO 8601), when stated.", nullable_string),
        },
        "required": ["customer", "due", "lines", "number", "terms", "total_cents"],
        "type": "object"
    });
    parameters["$defs"]["Line"] = line;
    instructor_tools(
        "Invoice",
        Some("The medium target of the benches: 20 lines, an enum, optional fields."),
        parameters,
        strict,
        peer_prompt(INVOICE_INTENT, INVOICE_DOCUMENT),
    )
}

/// What Instructor sends for the small invoice: Pydantic 2's schema of the same models
/// as the captured request in `../shared/specs/peer-requests/instructor-invoice.json`
/// (no docstrings, no field descriptions), in `TOOLS` mode.
fn instructor_small_wire(strict: bool) -> Wire {
    let parameters = json!({
        "$defs": {
            "Line": {
                "properties": {
                    "sku": {"title": "Sku", "type": "string"},
                    "qty": {"title": "Qty", "type": "integer"}
                },
                "required": ["sku", "qty"],
                "title": "Line",
                "type": "object"
            }
        },
        "properties": {
            "number": {"title": "Number", "type": "string"},
            "total_cents": {"title": "Total Cents", "type": "integer"},
            "lines": {"items": {"$ref": "#/$defs/Line"}, "title": "Lines", "type": "array"}
        },
        "required": ["lines", "number", "total_cents"],
        "type": "object"
    });
    instructor_tools(
        "Invoice",
        None,
        parameters,
        strict,
        peer_prompt(SMALL_INTENT, SMALL_DOCUMENT),
    )
}

/// What rstructor sends OpenAI for `T`.
///
/// Rebuilt from `src/backend/openai.rs` (`materialize_internal`) and `request.rs`: the
/// prompt as the one user message, and `response_format` `json_schema` named after the type,
/// with a fixed description and the type's schema made strict (every object closed, every
/// property required) at the root, with no envelope. The type's schema here is the one
/// schemars derives for the same Rust type, made strict the same way (by [`make_strict`],
/// not by this library's request building, so that what intent-rs does to its own
/// requests does not move this row).
fn rstructor_wire<T: JsonSchema>(name: &str, prompt: String) -> Wire {
    let mut schema = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    make_strict(&mut schema);
    let format = json!({"type": "json_schema", "json_schema": {
        "name": name,
        "description": "Output in the specified format. Include ALL required fields and follow the schema exactly.",
        "schema": schema,
        "strict": true
    }});
    Wire {
        messages: vec![("user", prompt)],
        schema: Some(format.to_string()),
    }
}

/// A 2 KB invoice document: the header, every line written out and the terms.
fn invoice_document_2kb() -> String {
    let invoice = invoice();
    let mut text = format!(
        "Invoice {} for {}. Payment terms: net 30 days. Due 2026-12-30.\nLines:\n",
        invoice.number, invoice.customer
    );
    for (n, line) in (1..).zip(&invoice.lines) {
        text.push_str(&format!(
            "{n}. {}: {} hours at EUR {}.{:02} per hour{}\n",
            line.description,
            line.quantity,
            line.unit_cents / 100,
            line.unit_cents % 100,
            line.tax_code
                .as_deref()
                .map(|code| format!(", tax {code}"))
                .unwrap_or_default()
        ));
    }
    text.push_str("Please pay by bank transfer quoting the invoice number.\n");
    // The terms printed under every invoice bring the document to 2 KB.
    let terms = [
        "Late payments accrue interest at 8 percentage points above the base rate.",
        "Queries about this invoice must be raised within 14 days of its date.",
        "Work packages are billed monthly in arrears at the rates agreed in the contract.",
        "Travel and expenses are billed separately at cost, with receipts on request.",
        "Bank: Example Bank plc, IBAN GB33 BUKB 2020 1555 5555 55, BIC BUKBGB22.",
    ];
    for line in terms.iter().cycle() {
        if text.len() >= 2048 {
            break;
        }
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// The amount due on an invoice: a short answer read from a long document.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct AmountDue {
    /// Invoice number.
    number: String,
    /// The total due, in cents.
    total_cents: i64,
}

const AMOUNT_INTENT: &str = "Read the invoice number and the total due.";

/// A three-attempt call: two replies whose total is off, then the right one, checked by a
/// validator; a retry's turns carry the whole previous reply.
struct RetriedCall<T> {
    label: &'static str,
    intent: &'static str,
    replies: [String; 3],
    options: fn() -> IntentOptions<T>,
}

/// The invoice: every reply repeats the input's 20 lines.
fn invoice_call() -> RetriedCall<Invoice> {
    let right = invoice();
    let wrong = |off: i64| {
        let mut wrong = right.clone();
        wrong.total_cents += off;
        json!({ "value": wrong }).to_string()
    };
    RetriedCall {
        label: "invoice (each reply as long as the input)",
        intent: INVOICE_INTENT,
        replies: [wrong(100), wrong(1), json!({ "value": right }).to_string()],
        options: || IntentOptions::<Invoice>::new().validate(totals_add_up),
    }
}

/// The amount due: short replies about the same document.
fn amount_call() -> RetriedCall<AmountDue> {
    let right = AmountDue {
        number: invoice().number,
        total_cents: invoice().total_cents,
    };
    let wrong = |off: i64| {
        json!({ "value": AmountDue { total_cents: right.total_cents + off, ..right.clone() } })
            .to_string()
    };
    RetriedCall {
        label: "amount due (short replies)",
        intent: AMOUNT_INTENT,
        replies: [wrong(100), wrong(1), json!({ "value": right }).to_string()],
        options: || {
            IntentOptions::<AmountDue>::new().validate(|due: &AmountDue| {
                let expected = invoice().total_cents;
                if due.total_cents == expected {
                    Ok(())
                } else {
                    Err(format!(
                        "total_cents must be the sum of the lines, {expected}"
                    ))
                }
            })
        },
    }
}

/// The requests of one three-attempt call, as the OpenAI provider would send them.
fn three_attempt_requests<T>(input: &str, call: &RetriedCall<T>) -> Vec<ProviderRequest>
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
{
    let provider = Arc::new(ScriptedProvider::new(call.replies.clone()).with_schema_enforced(true));
    let client = IntentClient::builder()
        .shared_provider(provider.clone())
        .max_attempts(3)
        .build()
        .expect("client");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let result = rt.block_on(client.transform(input, call.intent, (call.options)()));
    assert!(result.is_success(), "{:?}", result.issues);
    assert_eq!(result.attempts.len(), 3);
    provider.requests()
}

fn common_prefix_len(a: &str, b: &str) -> usize {
    let bytes = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    // Back to a character boundary of both.
    (0..=bytes)
        .rev()
        .find(|&end| a.is_char_boundary(end) && b.is_char_boundary(end))
        .unwrap_or(0)
}

/// OpenAI's documented prompt-cache rule, applied by the loopback server: the longest
/// prefix of earlier prompts, when it is at least 1,024 tokens, in steps of 128.
fn cached_tokens(seen: &[Vec<u32>], tokens: &[u32]) -> usize {
    let longest = seen
        .iter()
        .map(|earlier| {
            earlier
                .iter()
                .zip(tokens)
                .take_while(|(a, b)| a == b)
                .count()
        })
        .max()
        .unwrap_or(0);
    if longest >= 1024 {
        longest / 128 * 128
    } else {
        0
    }
}

/// A loopback Chat Completions server that answers a three-attempt call (by the number of
/// assistant turns the request carries) and reports prompt and cached tokens.
fn caching_server(bpe: Arc<CoreBPE>, replies: [String; 3]) -> Loopback {
    let seen: Mutex<Vec<Vec<u32>>> = Mutex::new(Vec::new());
    Loopback::start_fn(move |body| {
        let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let messages: Vec<(&'static str, String)> = body["messages"]
            .as_array()
            .map(|messages| {
                messages
                    .iter()
                    .map(|m| {
                        let role = match m["role"].as_str() {
                            Some("system") => "system",
                            Some("assistant") => "assistant",
                            _ => "user",
                        };
                        (role, m["content"].as_str().unwrap_or_default().to_owned())
                    })
                    .collect()
            })
            .unwrap_or_default();
        let retries = messages
            .iter()
            .filter(|(role, _)| *role == "assistant")
            .count();
        let wire = Wire {
            schema: body.get("response_format").map(Value::to_string),
            messages,
        };
        let tokens: Vec<u32> = bpe.encode_ordinary(&wire.linear());
        let mut seen = seen.lock().expect("lock");
        let cached = cached_tokens(&seen, &tokens);
        let prompt = Tokens::of(&bpe, &wire).total();
        seen.push(tokens);
        json!({
            "id": "chatcmpl-cache",
            "object": "chat.completion",
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": {"role": "assistant",
                "content": replies[retries.min(2)], "refusal": null}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 600,
                "prompt_tokens_details": {"cached_tokens": cached}}
        })
        .to_string()
    })
}

fn print_targets(bpe: &CoreBPE) {
    let product = product_schema();
    let requests = |enforced: bool| {
        [
            (
                "enum (Sentiment)",
                typed_request::<Sentiment, str>(enforced, REVIEW, SENTIMENT_INTENT),
            ),
            (
                "flat struct (Contact)",
                typed_request::<Contact, str>(enforced, SIGNATURE, "Extract the contact details."),
            ),
            (
                "invoice (Invoice)",
                typed_request::<Invoice, str>(enforced, INVOICE_DOCUMENT, INVOICE_INTENT),
            ),
            (
                "small invoice",
                typed_request::<small::Invoice, str>(enforced, SMALL_DOCUMENT, SMALL_INTENT),
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
    println!("## 1. prompt tokens per request (o200k_base), by part");
    println!(
        "{:<26} {:>9} {:>7} {:>6} {:>7} {:>8} {:>10}",
        "target", "enforced", "system", "turns", "schema", "framing", "described"
    );
    for ((name, enforced), (_, described)) in requests(true).iter().zip(&requests(false)) {
        let parts = Tokens::of(bpe, &Wire::of(enforced));
        let described = Tokens::of(bpe, &Wire::of(described)).total();
        println!(
            "{name:<26} {:>9} {:>7} {:>6} {:>7} {:>8} {:>10}",
            parts.total(),
            parts.system,
            parts.turns,
            parts.schema,
            parts.framing,
            described
        );
    }
}

fn print_peers(bpe: &CoreBPE, quick: bool) {
    let invoice = (
        "the invoice (Invoice)",
        Wire::of(&typed_request::<Invoice, str>(
            true,
            INVOICE_DOCUMENT,
            INVOICE_INTENT,
        )),
        [
            ("Instructor, TOOLS", instructor_wire(false)),
            ("Instructor, TOOLS_STRICT", instructor_wire(true)),
            (
                "rstructor",
                rstructor_wire::<Invoice>("Invoice", peer_prompt(INVOICE_INTENT, INVOICE_DOCUMENT)),
            ),
        ],
    );
    let small_invoice = (
        "the small invoice (small::Invoice)",
        Wire::of(&typed_request::<small::Invoice, str>(
            true,
            SMALL_DOCUMENT,
            SMALL_INTENT,
        )),
        [
            ("Instructor, TOOLS", instructor_small_wire(false)),
            ("Instructor, TOOLS_STRICT", instructor_small_wire(true)),
            (
                "rstructor",
                rstructor_wire::<small::Invoice>(
                    "Invoice",
                    peer_prompt(SMALL_INTENT, SMALL_DOCUMENT),
                ),
            ),
        ],
    );
    for (n, (target, ours, peers)) in [invoice, small_invoice].into_iter().enumerate() {
        println!();
        println!(
            "## 2{}. {target} as each library sends it to OpenAI (schema enforced)",
            ["a", "b"][n]
        );
        println!(
            "{:<26} {:>6} {:>9} {:>7} {:>8}",
            "request", "total", "messages", "schema", "framing"
        );
        let row = |name: &str, wire: &Wire| {
            let t = Tokens::of(bpe, wire);
            println!(
                "{name:<26} {:>6} {:>9} {:>7} {:>8}",
                t.total(),
                t.system + t.turns,
                t.schema,
                t.framing
            );
            t.total()
        };
        let ours_total = row("intent-rs", &ours);
        let instructor = row(peers[0].0, &peers[0].1);
        let leanest = peers[1..]
            .iter()
            .map(|(name, wire)| row(name, wire))
            .fold(instructor, usize::min);
        println!(
            "intent-rs minus Instructor TOOLS: {:+} tokens (target: at most 0); minus the leanest peer: {:+}",
            ours_total as i64 - instructor as i64,
            ours_total as i64 - leanest as i64
        );
        if !quick {
            for (name, wire) in
                std::iter::once(("intent-rs", &ours)).chain(peers.iter().map(|(n, w)| (*n, w)))
            {
                println!("\n=== {name} ===");
                for (role, content) in &wire.messages {
                    println!("--- {role} ---\n{content}");
                }
                if let Some(schema) = &wire.schema {
                    println!("--- schema ---\n{schema}");
                }
            }
        }
    }
}

fn print_retries(bpe: &CoreBPE, quick: bool) {
    let input = invoice_document_2kb();
    println!();
    println!(
        "## 3. three-attempt calls on a {}-byte input: prefix repeated by retries",
        input.len()
    );
    print_retried_call(bpe, quick, &input, &invoice_call());
    print_retried_call(bpe, quick, &input, &amount_call());
}

fn print_retried_call<T>(bpe: &CoreBPE, quick: bool, input: &str, call: &RetriedCall<T>)
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
{
    let requests = three_attempt_requests(input, call);
    let wires: Vec<Wire> = requests.iter().map(Wire::of).collect();
    println!("{}:", call.label);
    println!(
        "{:<8} {:>7} {:>15} {:>7}",
        "attempt", "prompt", "repeated prefix", "share"
    );
    let (mut repeated_sum, mut retry_sum) = (0, 0);
    for (n, wire) in wires.iter().enumerate() {
        let total = Tokens::of(bpe, wire).total();
        let linear = wire.linear();
        // The longest byte-identical prefix of any earlier request.
        let shared = wires[..n]
            .iter()
            .map(|earlier| common_prefix_len(&earlier.linear(), &linear))
            .max()
            .unwrap_or(0);
        let repeated = bpe.encode_ordinary(&linear[..shared]).len();
        if n > 0 {
            repeated_sum += repeated;
            retry_sum += total;
        }
        println!(
            "{:<8} {:>7} {:>15} {:>6.1}%",
            n + 1,
            total,
            repeated,
            100.0 * repeated as f64 / total as f64
        );
    }
    println!(
        "retries: {repeated_sum} of {retry_sum} prompt tokens repeat an earlier request's prefix: {:.1}% (target: at least 90%)",
        100.0 * repeated_sum as f64 / retry_sum.max(1) as f64
    );
    if !quick {
        let roles: Vec<Vec<Role>> = requests
            .iter()
            .map(|r| r.messages.iter().map(|m| m.role).collect())
            .collect();
        println!("turns per attempt: {roles:?}");
    }
}

fn print_cached(bpe: Arc<CoreBPE>) {
    println!();
    println!(
        "## 4. the same calls through the OpenAi provider, against a loopback server applying OpenAI's caching rule"
    );
    print_cached_call(Arc::clone(&bpe), &invoice_call());
    print_cached_call(bpe, &amount_call());
}

fn print_cached_call<T>(bpe: Arc<CoreBPE>, call: &RetriedCall<T>)
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
{
    let server = caching_server(bpe, call.replies.clone());
    let client = IntentClient::builder()
        .provider(OpenAi::new("sk-bench").with_base_url(server.base_url()))
        .max_attempts(3)
        .build()
        .expect("client");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let input = invoice_document_2kb();
    println!("{}:", call.label);
    println!(
        "{:<10} {:<8} {:>7} {:>7} {:>7}",
        "call", "attempt", "prompt", "cached", "share"
    );
    for repetition in ["first", "repeated"] {
        let result: AIResult<T> =
            rt.block_on(client.transform(&input, call.intent, (call.options)()));
        assert!(result.is_success(), "{:?}", result.issues);
        for attempt in &result.attempts {
            let usage = attempt.usage;
            println!(
                "{repetition:<10} {:<8} {:>7} {:>7} {:>6.1}%",
                attempt.number,
                usage.input_tokens,
                usage.cached_input_tokens,
                100.0 * usage.cached_input_tokens as f64 / usage.input_tokens.max(1) as f64
            );
        }
    }
    let totals = client.total_usage();
    println!(
        "client totals: {} prompt tokens, {} at the cached rate ({:.1}%)",
        totals.input_tokens,
        totals.cached_input_tokens,
        100.0 * totals.cached_input_tokens as f64 / totals.input_tokens.max(1) as f64
    );
}

/// The prompts' texts in a request body and the member that carries the schema, as each
/// API writes them.
fn body_parts(api: Api, body: &Value) -> (Vec<String>, Option<Value>) {
    let texts = |items: Option<&Value>, key: &str| -> Vec<String> {
        items
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|item| item[key].as_str().map(str::to_owned))
            .collect()
    };
    match api {
        Api::OpenAi | Api::AzureOpenAi => (
            texts(body.get("messages"), "content"),
            body.get("response_format").cloned(),
        ),
        Api::OpenAiResponses => {
            let mut prompts: Vec<String> = body["instructions"]
                .as_str()
                .map(str::to_owned)
                .into_iter()
                .collect();
            prompts.extend(texts(body.get("input"), "content"));
            (prompts, body.get("text").cloned())
        }
        Api::Gemini => {
            let mut prompts = texts(body.pointer("/systemInstruction/parts"), "text");
            for content in body["contents"].as_array().into_iter().flatten() {
                prompts.extend(texts(content.get("parts"), "text"));
            }
            (
                prompts,
                body.pointer("/generationConfig/responseJsonSchema")
                    .cloned(),
            )
        }
    }
}

/// The request body one provider sends for a typed call of part 1, the path it posts to
/// and whether the provider enforces the call's schema, captured by a loopback server
/// answering `reply` in the provider's API's shape.
fn provider_body<T>(api: Api, input: &str, intent: &str, reply: &str) -> (String, String, bool)
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
{
    let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let reply = api.reply(reply);
    let server = {
        let seen = Arc::clone(&seen);
        Loopback::start_routed(move |_, path, body| {
            seen.lock()
                .expect("lock")
                .push((path.to_owned(), String::from_utf8_lossy(body).into_owned()));
            reply.clone()
        })
    };
    let provider = api.provider(&server);
    let enforced = provider.enforces_schema(&typed_request::<T, str>(true, input, intent));
    let client = IntentClient::builder()
        .shared_provider(provider)
        .max_attempts(1)
        .build()
        .expect("client");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let result: AIResult<T> =
        rt.block_on(client.transform(input, intent, IntentOptions::<T>::new()));
    assert!(result.is_success(), "{}: {:?}", api.label(), result.issues);
    let (path, body) = seen
        .lock()
        .expect("lock")
        .pop()
        .expect("the call sent a request");
    assert_eq!(path, api.path(), "{} posts to its API's path", api.label());
    (path, body, enforced)
}

fn print_providers(bpe: &CoreBPE, quick: bool) {
    println!();
    println!(
        "## 5. typed calls of part 1 through each HTTP provider: tokens of the request body as sent"
    );
    println!(
        "{:<17} {:<16} {:>6} {:>8} {:>7} {:>7} {:>5} {:>6} {:>6} {:>9}  path",
        "target",
        "provider",
        "body",
        "prompts",
        "schema",
        "(alone)",
        "rest",
        "as 1.",
        "bytes",
        "enforced",
    );
    let count = |text: &str| bpe.encode_ordinary(text).len();
    let mut bodies = Vec::new();
    let sentiment = json!({"value": "Positive"}).to_string();
    let small_reply = json!({"value": {"number": "INV-7", "total_cents": 4500, "lines": [
        {"sku": "A-100", "qty": 2}, {"sku": "B-200", "qty": 1}
    ]}})
    .to_string();
    let targets = [
        ("invoice (Invoice)", INVOICE_DOCUMENT, INVOICE_INTENT),
        ("small invoice", SMALL_DOCUMENT, SMALL_INTENT),
        ("small, captured", CAPTURED_DOCUMENT, CAPTURED_INTENT),
        ("enum (Sentiment)", REVIEW, SENTIMENT_INTENT),
    ];
    let calls = targets
        .iter()
        .flat_map(|target| Api::ALL.map(|api| (*target, api)));
    for ((target, input, intent), api) in calls {
        let (path, body, enforced) = if target.starts_with("invoice") {
            provider_body::<Invoice>(api, input, intent, &support::invoice_reply())
        } else if target.starts_with("small") {
            provider_body::<small::Invoice>(api, input, intent, &small_reply)
        } else {
            provider_body::<Sentiment>(api, input, intent, &sentiment)
        };
        let parsed: Value = serde_json::from_str(&body).expect("the body is JSON");
        let (prompts, schema) = body_parts(api, &parsed);
        let total = count(&body);
        let prompt_tokens: usize = prompts.iter().map(|text| count(text)).sum();
        let schema_text = schema.as_ref().map(Value::to_string).unwrap_or_default();
        let schema_tokens = count(&schema_text);
        // The schema object alone, without the member's wrapping (name, strict, type).
        let bare = match api {
            Api::OpenAi | Api::AzureOpenAi => schema
                .as_ref()
                .and_then(|s| s.pointer("/json_schema/schema")),
            Api::OpenAiResponses => schema.as_ref().and_then(|s| s.pointer("/format/schema")),
            Api::Gemini => schema.as_ref(),
        };
        let bare_tokens = bare.map_or(0, |bare| count(&bare.to_string()));
        // Counted as part 1 counts a request: the prompts, OpenAI's chat framing, the schema.
        let as_part_1 = prompt_tokens + 4 * prompts.len() + 3 + schema_tokens;
        println!(
            "{target:<17} {:<16} {total:>6} {prompt_tokens:>8} {schema_tokens:>7} {bare_tokens:>7} {:>5} {as_part_1:>6} {:>6} {:>9}  {path}",
            api.label(),
            total.saturating_sub(prompt_tokens + schema_tokens),
            body.len(),
            if enforced { "yes" } else { "no" },
        );
        bodies.push((target, api, body));
    }
    println!(
        "\nthe small invoice as the outside check counts it (the whole body; the peers' as captured):"
    );
    let ours = bodies
        .iter()
        .find(|(target, api, _)| *target == "small, captured" && *api == Api::OpenAi)
        .map(|(_, _, body)| count(body))
        .unwrap_or_default();
    println!("{:<30} {ours:>5}", "intent-rs (OpenAi)");
    for (peer, body) in CAPTURED_PEERS {
        let tokens = count(body.trim());
        println!(
            "{peer:<30} {tokens:>5}  (intent-rs minus it: {})",
            ours as i64 - tokens as i64
        );
    }
    if !quick {
        for (target, api, body) in bodies {
            println!("\n=== {target}, {} ===\n{body}", api.label());
        }
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick" || a == "--test");
    let bpe = Arc::new(tiktoken_rs::o200k_base().expect("the o200k encoding is embedded"));
    print_targets(&bpe);
    print_peers(&bpe, quick);
    print_retries(&bpe, quick);
    print_cached(Arc::clone(&bpe));
    print_providers(&bpe, quick);
}
