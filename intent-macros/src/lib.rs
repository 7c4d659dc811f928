//! Procedural macros for intent-rs. Use them through `intent_rs`, which re-exports them
//! and whose version this crate is pinned to:
//!
//! - `#[intents]` turns a trait of intent methods into a typed client;
//! - `#[derive(StrictCompatible)]` proves at compile time that a type has a strict schema;
//! - `#[derive(DecisionEnum)]` makes an enum the choices or levels of a decision question;
//! - `#[derive(Partial)]` gives a type the form a streamed call shows while the model is
//!   still writing it.
//!
//! The stages follow serde's and thiserror's layout: `attr` reads the attributes, `model`
//! builds the typed model of the trait, `check` validates it, `expand` writes the client
//! (calls of `intent_rs::__private` through absolute paths), and `fallback` keeps the
//! trait compiling next to the errors so that one mistake does not cascade. The derives
//! have a module each (`strict`, `decision`, `partial`).

mod attr;
mod check;
mod ctxt;
mod decision;
mod expand;
mod fallback;
mod model;
mod partial;
mod serde_attrs;
mod strict;

use proc_macro::TokenStream;

/// Turns a trait of intent methods into a typed client, `<Trait>Client`.
///
/// ```
/// use intent_rs::{intents, AIResult, IntentError, StrictCompatible};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
/// enum Sentiment { Positive, Neutral, Negative }
///
/// #[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
/// struct Invoice { number: String, total_cents: i64 }
///
/// fn positive_total(invoice: &Invoice) -> Result<(), String> {
///     (invoice.total_cents > 0).then_some(()).ok_or("Return a positive total.".into())
/// }
///
/// /// Reads documents.
/// #[intents]
/// pub trait Documents {
///     #[intent("Classify the sentiment of the review", model = "gpt-4o-mini")]
///     async fn sentiment(&self, review: &str) -> Result<Sentiment, IntentError>;
///
///     #[intent("Extract the invoice fields", max_attempts = 4)]
///     #[guardrail(require_judge, max_model_calls = 8)]
///     #[validate(positive_total)]
///     #[example(input = "Invoice 7: 3 EUR", output = r#"{"value": {"number": "7", "total_cents": 300}}"#)]
///     async fn invoice(&self, document: &str) -> AIResult<Invoice>;
///
///     #[intent("Summarize in one sentence")]
///     async fn summary(&self, text: &str, audience: &str) -> Result<String, IntentError>;
/// }
///
/// fn wire(client: intent_rs::IntentClient) -> DocumentsClient {
///     DocumentsClient::new(client) // implements `Documents`
/// }
/// ```
///
/// The trait stays a plain trait (code can take `impl Documents`, tests can pass a fake),
/// with each `async fn` turned into a function returning a `Send` future.
/// `DocumentsClient` holds an [`IntentClient`] (`new`, `client`) and implements it.
/// A method with a default body and no `#[intent]` is left as written.
///
/// # Methods
///
/// `async fn name(&self, inputs...) -> R`, with at least one input. One input is sent as
/// itself; several are sent as one JSON object keyed by parameter name. Images and
/// documents (`intent_rs::media::{Image, Document}`, recognized by name) are content parts
/// instead, one per medium in parameter order: a parameter is `Image`, `&Image`,
/// `Option<Image>` (nothing for `None`), or a list (`Vec<Image>`, `&[Image]`, `[Image; N]`;
/// each numbered, nothing when empty); the same for `Document`. Other shapes holding
/// media are a compile error. `R` is
/// `Result<T, IntentError>` (the value, or an error whose message is the failure summary)
/// or `AIResult<T>` (the whole record). The macro recognizes these by their last path
/// segment, so a type alias of them is not recognized.
///
/// - `T = String`: plain text, no schema.
/// - `T = serde_json::Value` (or `Value`): a runtime shape, with the schema of
///   `schema = "..."` or, without it, any JSON object. Like the wrappers, it is
///   recognized by name: a type of your own named `Value` or `String` is taken for these.
/// - Any other `T` must implement `StrictCompatible` (checked at compile time), unless
///   the method sets `json_mode`.
///
/// # Attributes
///
/// - `#[intent("what to do", model = "...", max_attempts = N, temperature = 0.2,
///   schema = "path.json", json_mode, recover_answer)]`, required. `schema` is read
///   relative to the crate's directory when the crate is compiled, checked to be a JSON
///   object and embedded; the binary never reads it. `json_mode` asks for a JSON object
///   instead of a strict schema, for a type that cannot be strict. `recover_answer` (or
///   `recover_answer = true` / `false`, overriding the client's setting) reads the one
///   JSON answer of a reply that wraps it in prose, for chatty local models; not for a
///   `String` target.
/// - `#[guardrail(require_judge, max_model_calls = N, time_budget_ms = N, max_cost = 0.05)]`,
///   any of them, in one or several attributes. `max_cost` is a budget in US dollars
///   (a number or a string such as `"$0.05"`, read exactly), checked before each attempt
///   against the client's price table (see `IntentOptions::max_cost`).
/// - `#[validate(path)]`, repeatable: a function `fn(&T) -> P` where `P` is
///   `Result<(), String>`, `Vec<String>`, `Option<String>`, `bool` or any
///   `IntoProblems`.
/// - `#[example(input = "...", output = "...")]`, repeatable; for a non-`String` target
///   the output is the JSON reply (`{"value": ...}`) and is checked to be JSON.
/// - `#[system("...")]` (added to the system prompt) and `#[output("...")]` (additional
///   output requirements).
///
/// # Decision questions
///
/// A method returning `Result<Binary, DecisionError>`, `Result<Choice<E>, DecisionError>`
/// or `Result<Score<E>, DecisionError>` is a decision question: its `#[intent("...")]` is
/// the question, its parameters are the state (one as itself, several as an object), and
/// it is answered with probabilities by the client's decision client. `E` is an enum
/// deriving `DecisionEnum`. It takes `#[intent("...", model = "...")]` and no other
/// option or attribute.
///
/// Every mistake is a compile error at the offending token, all of them in one build.
///
/// [`IntentClient`]: https://docs.rs/intent-rs/latest/intent_rs/client/struct.IntentClient.html
#[proc_macro_attribute]
pub fn intents(args: TokenStream, item: TokenStream) -> TokenStream {
    match syn::parse::<syn::ItemTrait>(item.clone()) {
        Ok(item) => expand::intents(args.into(), &item)
            .unwrap_or_else(|error| fallback::with_error(&item, error))
            .into(),
        Err(_) => fallback::not_a_trait(item.into()).into(),
    }
}

/// Derives `DecisionEnum` for an enum of two or more variants without data: its variants
/// are the choices of a `Choice<E>` or the levels of a `Score<E>` (lowest first), and
/// their doc comments describe them to the model.
///
/// ```
/// use intent_rs::DecisionEnum;
///
/// #[derive(Debug, PartialEq, DecisionEnum)]
/// enum Route {
///     /// Payments, invoices and refunds.
///     Billing,
///     /// Anything that does not work.
///     Support,
/// }
/// ```
///
/// ```compile_fail
/// use intent_rs::DecisionEnum;
///
/// #[derive(DecisionEnum)]
/// enum Route { Billing(u32), Support }
/// ```
#[proc_macro_derive(DecisionEnum)]
pub fn derive_decision_enum(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    decision::derive(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives `StrictCompatible` for a struct or enum whose fields are all strict-compatible.
///
/// Each field type must be `StrictCompatible` (an error points at the field's type).
/// A type that names itself, directly or through `Box`, `Vec`, `Option` and the like, is
/// rejected: a recursive schema has no strict form. Serde attributes are followed:
/// `skip` / `skip_deserializing` fields are not checked, `flatten` fields must be structs
/// with named fields, `#[schemars(with = "T")]` checks `T`, `#[serde(from = "T")]`
/// checks `T`. Tuple structs and variants with several fields are rejected (arrays of
/// positional items), and so are newtype variants of internally tagged enums.
///
/// ```
/// use intent_rs::StrictCompatible;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, StrictCompatible)]
/// #[serde(rename_all = "camelCase")]
/// struct Line { item_name: String, cents: i64, note: Option<String> }
///
/// #[derive(Deserialize, StrictCompatible)]
/// #[serde(tag = "kind", content = "data")]
/// enum Change { Added(Line), Removed { index: u32 }, Cleared }
/// ```
///
/// ```compile_fail
/// use intent_rs::StrictCompatible;
///
/// #[derive(StrictCompatible)]
/// struct Counts { by_word: std::collections::HashMap<String, u32> }
/// ```
#[proc_macro_derive(StrictCompatible, attributes(serde, schemars))]
pub fn derive_strict_compatible(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    strict::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives `Partial`: the form of a type that a streamed call shows while the model is
/// still writing it.
///
/// For a struct with named fields it generates `<Name>Partial`, of the same visibility,
/// with every field optional and of its type's partial form (a nested struct's partial,
/// the items of a list so far), read under serde's names (`rename`, `rename_all`;
/// `flatten`ed fields from the same object; skipped fields left out). A field appears
/// once it is certain and never changes afterwards. A newtype struct is its field's
/// partial form; an enum appears whole once complete, so it must be
/// `Clone + Debug + PartialEq`. Generic types, tuple structs and unions are rejected.
///
/// ```
/// use intent_rs::{Partial, PartialOf, StrictCompatible};
/// use serde::Deserialize;
///
/// #[derive(Debug, Clone, PartialEq, Deserialize, StrictCompatible, Partial)]
/// enum Currency { Eur, Usd }
///
/// #[derive(Deserialize, StrictCompatible, Partial)]
/// struct Line { item: String, cents: i64 }
///
/// #[derive(Deserialize, StrictCompatible, Partial)]
/// struct Invoice { number: String, currency: Currency, lines: Vec<Line> }
///
/// let shown: PartialOf<Invoice> = InvoicePartial::default();
/// assert_eq!(shown.number, None);
/// let _lines: Option<Vec<LinePartial>> = shown.lines;
/// ```
///
/// ```compile_fail
/// use intent_rs::Partial;
///
/// #[derive(Partial)]
/// struct Page<T> { items: Vec<T> }
/// ```
#[proc_macro_derive(Partial, attributes(serde, schemars))]
pub fn derive_partial(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    partial::expand(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
