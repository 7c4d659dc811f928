//! The deterministic verifier: the ordered checks of a reply, each failure an actionable
//! [`ResultIssue`].
//!
//! STUB: the verification issue (#3) fills this module in; the signatures are the contract.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::options::Validator;
use crate::provider::ProviderReply;
use crate::result::{Repair, ResultIssue};
use crate::schema::TargetSchema;

/// What the verifier found in one reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Verification<T> {
    /// The parsed value, when the reply could be read as the target.
    pub value: Option<T>,
    /// Every issue found, in step order.
    pub issues: Vec<ResultIssue>,
    /// Every repair made before reading the reply.
    pub repairs: Vec<Repair>,
    /// Whether the reply was truncated (such an attempt always fails).
    pub truncated: bool,
}

impl<T> Verification<T> {
    /// Whether the attempt passed: a value, no issue other than provider issues, and no
    /// truncation.
    pub fn passed(&self) -> bool {
        self.value.is_some()
            && !self.truncated
            && self
                .issues
                .iter()
                .all(|i| i.source == crate::result::IssueSource::Provider)
    }
}

/// Verifies a reply for a plain-text (`String`) target.
pub fn verify_text(
    reply: &ProviderReply,
    validators: &[Validator<String>],
    attempt: u32,
) -> Verification<String> {
    let _ = (reply, validators, attempt);
    unimplemented!("verification issue")
}

/// Verifies a reply for a typed target described by `target`.
pub fn verify_typed<T: DeserializeOwned>(
    reply: &ProviderReply,
    target: &TargetSchema,
    validators: &[Validator<T>],
    attempt: u32,
) -> Verification<T> {
    let _ = (reply, target, validators, attempt);
    unimplemented!("verification issue")
}

/// Verifies a reply for a runtime shape, with the caller's schema when one was given.
pub fn verify_value(
    reply: &ProviderReply,
    target: Option<&TargetSchema>,
    validators: &[Validator<Value>],
    attempt: u32,
) -> Verification<Value> {
    let _ = (reply, target, validators, attempt);
    unimplemented!("verification issue")
}
