//! Input serialization for the prompt, and readable descriptions of Rust types.
//!
//! STUB: the foundation issue (#2) fills this module in; the signatures are the contract.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// Why an input could not be prepared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The serialized input is longer than the client allows.
    #[error(
        "the input is {actual} characters long, over the limit of {max}; send a shorter input or raise the client's `max_input_chars` (nothing is truncated)"
    )]
    TooLarge {
        /// Characters in the serialized input.
        actual: usize,
        /// The limit.
        max: usize,
    },
    /// serde could not serialize the input.
    #[error("the input could not be serialized: {0}")]
    Serialize(String),
}

/// An input ready for the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedInput {
    /// The serialized input.
    pub text: String,
    /// The label of the `## Input (...)` section.
    pub label: String,
}

/// Serializes `input` and describes its type.
pub fn prepare_input<I: Serialize + JsonSchema + ?Sized>(
    input: &I,
) -> Result<PreparedInput, InputError> {
    let _ = input;
    unimplemented!("foundation issue")
}

/// Fails when `input` is longer than `max_chars` characters.
pub fn check_input_size(input: &PreparedInput, max_chars: Option<usize>) -> Result<(), InputError> {
    let _ = (input, max_chars);
    Ok(())
}

/// A readable description of the type whose root schema is `schema`.
pub fn describe_schema(schema: &Value) -> String {
    let _ = schema;
    unimplemented!("foundation issue")
}
