//! Call language models as typed Rust methods.
//!
//! Declare what a model should do as the methods of a trait annotated with
//! [`intents`]; the macro generates a typed client that plans the prompt, calls a
//! [`Provider`](provider::Provider), verifies the reply step by step, asks a judge when
//! told to, and retries with every problem fed back to the model.
//!
//! The crate is organised one module per concept; see each module's documentation.

#![warn(missing_docs)]
// docs.rs builds every feature and marks the items a feature gates (`[package.metadata.docs.rs]`).
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod attempt;
pub mod batch;
pub mod cache;
pub mod client;
pub mod decision;
pub mod error;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod fleet;
pub mod input;
pub mod judge;
pub mod limits;
pub mod media;
pub mod options;
pub mod parse;
pub mod prompt;
pub mod provider;
pub mod result;
pub mod schema;
mod shared;
pub mod stream;
pub mod strict;
mod summary;
pub mod telemetry;
pub mod verify;

#[doc(hidden)]
pub mod __private;

pub use client::{BuildError, IntentClient, IntentClientBuilder};
pub use decision::{Binary, Choice, DecisionEnum, DecisionError, Score};
pub use error::IntentError;
pub use judge::JudgeMode;
pub use options::{Example, IntentOptions, IntoProblems, Overrides, Validator};
pub use result::{
    AIResult, AttemptRecord, GateOutcome, GateRecord, IssueSource, Repair, ResultIssue, Usage,
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
