//! The prompt plan and its rendering: system preamble, sections, examples, retries.
//!
//! STUB: the foundation issue (#2) fills this module in; the signatures are the contract.

use std::sync::Arc;

use crate::input::PreparedInput;
use crate::options::Example;
use crate::provider::ResponseFormat;
use crate::result::AttemptRecord;
use crate::schema::TargetSchema;

/// What shape the reply must have.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputTarget {
    /// Plain text (`String` target): text format, no schema.
    Text,
    /// A typed value in the envelope, with a strict schema.
    Typed(Arc<TargetSchema>),
    /// A typed value in the envelope, asked for in JSON-object mode (a type that cannot
    /// be strict, or `json_mode`); carries the type's description.
    TypedJsonObject(Arc<TargetSchema>),
    /// A runtime shape (`serde_json::Value`) with the caller's schema, sent strict.
    RuntimeSchema(Arc<TargetSchema>),
    /// A runtime shape with no schema: any JSON value, in JSON-object mode.
    AnyJson,
}

/// Everything that shapes the request of one call.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptPlan {
    /// What the model is to do.
    pub intent: String,
    /// The serialized input and its label.
    pub input: PreparedInput,
    /// The shape of the reply.
    pub target: OutputTarget,
    /// Worked examples.
    pub examples: Vec<Example>,
    /// Instructions appended to the system prompt.
    pub system: Option<String>,
    /// Requirements added to the output contract.
    pub output_requirements: Option<String>,
}

impl PromptPlan {
    /// The reply format the target asks for.
    pub fn response_format(&self) -> ResponseFormat {
        match self.target {
            OutputTarget::Text => ResponseFormat::Text,
            OutputTarget::Typed(_) | OutputTarget::RuntimeSchema(_) => ResponseFormat::JsonSchema,
            OutputTarget::TypedJsonObject(_) | OutputTarget::AnyJson => ResponseFormat::JsonObject,
        }
    }

    /// The strict schema to send, for targets that send one.
    pub fn schema(&self) -> Option<Arc<serde_json::Value>> {
        match &self.target {
            OutputTarget::Typed(schema) | OutputTarget::RuntimeSchema(schema) => {
                Some(schema.strict.clone())
            }
            _ => None,
        }
    }
}

/// A rendered prompt: one system prompt and one user message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedPrompt {
    /// The system prompt.
    pub system: String,
    /// The user message.
    pub user: String,
}

/// Renders `plan`; on a retry, `previous` is the failed attempt whose output and issues
/// are fed back.
pub fn render(plan: &PromptPlan, previous: Option<&AttemptRecord>) -> RenderedPrompt {
    let _ = (plan, previous);
    unimplemented!("foundation issue")
}
