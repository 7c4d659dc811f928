//! Call language models as typed Rust methods.
//!
//! You declare what a model should do as the methods of a trait. Each method states an
//! intent in plain words and returns a Rust type. [`#[intents]`](intents) turns the trait
//! into a typed client; this crate's runtime builds the prompt, calls a
//! [`Provider`](provider::Provider), checks the reply step by step against the type's
//! strict JSON Schema and your validators, asks a judge model when told to, and retries
//! with every problem fed back to the model until the reply is right or a guardrail stops
//! the call. You get a value of your type, or a record ([`AIResult`]) of what was checked
//! and what failed. There is no confidence score: only facts that were checked.
//!
//! # A whole program
//!
//! It runs offline on a [`ScriptedProvider`](provider::ScriptedProvider) that answers
//! from a list and records every request; for a real model, build the client with
//! `.provider(OpenAi::from_env()?)` or [`provider::from_env()`] instead.
//!
//! ```
//! use intent_rs::provider::ScriptedProvider;
//! use intent_rs::{AIResult, IntentClient, IntentError, StrictCompatible, intents};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Debug, PartialEq, Deserialize, JsonSchema, StrictCompatible)]
//! pub enum Sentiment {
//!     Positive,
//!     Neutral,
//!     Negative,
//! }
//!
//! #[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
//! pub struct Order {
//!     item: String,
//!     quantity: u32,
//! }
//!
//! fn at_least_one(order: &Order) -> Result<(), String> {
//!     if order.quantity > 0 { Ok(()) } else { Err("quantity must be at least 1".into()) }
//! }
//!
//! #[intents]
//! pub trait Shop {
//!     #[intent("Classify the sentiment of the review")]
//!     async fn sentiment(&self, review: &str) -> Result<Sentiment, IntentError>;
//!
//!     #[intent("Extract the order from the message", max_attempts = 2)]
//!     #[validate(at_least_one)]
//!     async fn order(&self, message: &str) -> AIResult<Order>;
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let model = ScriptedProvider::new([
//!     r#"{"value": "Positive"}"#,
//!     r#"{"value": {"item": "tea", "quantity": 0}}"#, // fails the validator
//!     r#"{"value": {"item": "tea", "quantity": 2}}"#, // after the problem was fed back
//! ]);
//! let shop = ShopClient::new(IntentClient::builder().provider(model.clone()).build()?);
//!
//! assert_eq!(shop.sentiment("Loved it").await?, Sentiment::Positive);
//!
//! let order = shop.order("Two teas, please").await;
//! assert_eq!(order.attempts.len(), 2);
//! assert_eq!(order.into_result()?.quantity, 2);
//! # Ok(())
//! # }
//! ```
//!
//! # What is where
//!
//! | to | look at |
//! | --- | --- |
//! | declare methods and read every attribute the macro takes | [`intents`], [`StrictCompatible`], [`strict`] |
//! | build and configure a client (providers, judge, attempts, guardrails, cache, limiter) | [`IntentClient`], [`client`], [`limits`], [`cache`] |
//! | choose a model provider, or write your own | [`provider`] (OpenAI Chat Completions and Responses, Anthropic, Gemini, Azure OpenAI, OpenAI-compatible servers, the scripted model) |
//! | read what a call returns | [`AIResult`], [`ResultIssue`], [`AttemptRecord`], [`Usage`], [`IntentError`] |
//! | set options per call | [`IntentOptions`], [`Overrides`], [`options`] |
//! | see how the prompt is built and how replies are checked | [`prompt`], [`schema`], [`judge`], [`AnswerRecovery`] |
//! | ask yes/no, choice and score questions with probabilities | [`decision`], [`Binary`], [`Choice`], [`Score`] |
//! | read values while they stream | [`stream`], [`IntentStream`], [`Partial`] |
//! | survive an outage with a chain of providers, route methods to named providers | [`provider::fallback`], [`route`], [`IntentClientBuilder::provider_named`] |
//! | send images and PDFs | [`media`] |
//! | run large jobs through the batch APIs | [`batch`] |
//! | filter, classify, score, map or rank many items, with progress and resumption | [`collection`] |
//! | count calls in money, and cap what a call may spend | [`pricing`], [`Cost`], [`PriceTable`], [`AIResult::cost`] |
//! | trace calls with OpenTelemetry's GenAI conventions | [`telemetry`] |
//!
//! Evaluations over datasets live in the separate crate `intent-rs-eval`.
//!
//! # Cargo features
//!
//! None is on by default; the default build keeps only what every program needs.
//!
//! - `chrono`: `StrictCompatible` and ISO 8601 descriptions for `chrono`'s date and time
//!   types.
//! - `uuid`: `StrictCompatible` for `uuid::Uuid` (a string with the `uuid` format).
//! - `metrics`: OpenTelemetry GenAI metrics (token usage, operation duration) and the
//!   library's own (attempts, repairs, verification failures, judge verdicts). Spans need
//!   no feature.
//! - `redis`: the `fleet` module, a rate limiter, a response cache and fallback cooldowns
//!   shared by many replicas through Redis.
//!
//! # Where to go next
//!
//! The repository's README walks through streaming, batch jobs, images and documents,
//! decision questions, a fleet of workers, logs and telemetry, testing your intents
//! offline with [`TestModel`](provider::TestModel), and evaluations; its
//! `examples/` folder holds a program for each, all runnable offline
//! (`cargo run --example quickstart`).

#![warn(missing_docs)]
// docs.rs builds every feature and marks the items a feature gates (`[package.metadata.docs.rs]`).
#![cfg_attr(docsrs, feature(doc_cfg))]

mod ask;
mod attempt;
pub mod batch;
pub mod cache;
pub mod client;
pub mod collection;
pub mod cost;
pub mod decision;
pub mod error;
mod failure;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod fleet;
pub mod input;
pub mod judge;
pub mod limits;
pub mod media;
pub mod options;
mod parse;
pub mod pricing;
pub mod prompt;
pub mod provider;
pub mod result;
pub mod route;
pub mod schema;
mod shared;
mod spend;
pub mod stream;
pub mod strict;
mod summary;
pub mod telemetry;
mod verify;

#[doc(hidden)]
pub mod __private;

pub use client::{BuildError, IntentClient, IntentClientBuilder, UnknownProvider};
pub use cost::{Cost, CostParseError, CostTally, UnpricedModels};
pub use decision::{Binary, Choice, DecisionEnum, DecisionError, Score};
pub use error::IntentError;
pub use judge::JudgeMode;
pub use options::{Example, IntentOptions, IntoProblems, Overrides, Validator};
pub use pricing::{PriceTable, total_cost};
pub use result::{
    AIResult, AttemptRecord, FailureKind, GateOutcome, GateRecord, IssueDetail, IssueSource,
    Repair, ResultIssue, Usage,
};
pub use stream::{IntentStream, Partial, PartialOf, StreamEvent};
pub use strict::StrictCompatible;
pub use verify::AnswerRecovery;

pub use intent_rs_macros::{DecisionEnum, Partial, StrictCompatible, intents};

/// The attribute a [`Provider`](provider::Provider) or [`Judge`](judge::Judge)
/// implementation needs (`#[intent_rs::async_trait]` on the `impl`), re-exported so
/// that implementing one takes no dependency of its own; see the `Provider` docs for a
/// whole custom provider.
pub use async_trait::async_trait;

/// The `schemars` this crate builds schemas with; derive `JsonSchema` from here or from a
/// `schemars` of the same major version.
pub use schemars;

// The README's examples are compiled and run as doc tests, so they cannot go stale. Its
// fleet section needs the `redis` feature, which `cargo test --workspace` turns on.
#[cfg(all(doctest, feature = "redis"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
