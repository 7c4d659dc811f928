//! The prompt plan and its rendering: system preamble, sections, examples, retries.
//!
//! Every request is one system prompt and one user message. The user message has these
//! sections, in order, separated by blank lines:
//!
//! 1. `## Intent`: the trimmed intent;
//! 2. `## Input (<label>)`: the prepared input, unchanged;
//! 3. `## Output requirements`: the output contract, then `Additional output
//!    requirements: ...` when set;
//! 4. `## Examples`, only when there are examples: each numbered from 1, then a line
//!    asking for the same judgement and format;
//! 5. on a retry whose previous attempt has issues, `## Previous attempt` (the raw reply,
//!    cut at [`PREVIOUS_OUTPUT_MAX_CHARS`] characters) and `## Problems with the previous
//!    attempt` (one bullet per issue, then a request for a corrected reply).
//!
//! Wording is kept short on purpose: every word is paid for in tokens on every call.

use std::sync::Arc;

use serde_json::Value;

use crate::input::{PreparedInput, describe_target};
use crate::options::Example;
use crate::provider::ResponseFormat;
use crate::result::AttemptRecord;
use crate::schema::{ENVELOPE_PROPERTY, SchemaError, TargetSchema, runtime_target_schema};

/// The system prompt's opening, before any caller instructions.
pub const SYSTEM_PREAMBLE: &str = "Carry out the intent on the input exactly as stated, using only the input and the intent. Reply with the result alone: no preamble, no explanation, no code fences.";

/// The most characters of a previous reply shown again on a retry; a longer reply is cut
/// (at a character boundary) and marked as cut.
pub const PREVIOUS_OUTPUT_MAX_CHARS: usize = 6000;

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

impl OutputTarget {
    /// The target for a typed value: [`OutputTarget::Typed`] when its schema is
    /// strict-compatible and `json_mode` is off, otherwise
    /// [`OutputTarget::TypedJsonObject`].
    pub fn typed(schema: Arc<TargetSchema>, json_mode: bool) -> Self {
        if schema.strict_compatible && !json_mode {
            OutputTarget::Typed(schema)
        } else {
            OutputTarget::TypedJsonObject(schema)
        }
    }

    /// The target for a `serde_json::Value` result: [`OutputTarget::RuntimeSchema`] with
    /// the caller's schema when one is given, otherwise [`OutputTarget::AnyJson`].
    pub fn runtime(schema: Option<&Value>) -> Result<Self, SchemaError> {
        Ok(match schema {
            Some(schema) => OutputTarget::RuntimeSchema(Arc::new(runtime_target_schema(schema)?)),
            None => OutputTarget::AnyJson,
        })
    }
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
    /// Whether the provider shows the model the strict schema and holds it to it
    /// ([`Provider::enforces_schema`](crate::provider::Provider::enforces_schema)): the
    /// contract of a schema target then points at the schema instead of describing the
    /// type. It has no effect on a target that sends no schema.
    pub schema_enforced: bool,
}

impl PromptPlan {
    /// A plan with no examples, system instructions or extra output requirements.
    pub fn new(intent: impl Into<String>, input: PreparedInput, target: OutputTarget) -> Self {
        Self {
            intent: intent.into(),
            input,
            target,
            examples: Vec::new(),
            system: None,
            output_requirements: None,
            schema_enforced: false,
        }
    }

    /// The reply format the target asks for.
    pub fn response_format(&self) -> ResponseFormat {
        match self.target {
            OutputTarget::Text => ResponseFormat::Text,
            OutputTarget::Typed(_) | OutputTarget::RuntimeSchema(_) => ResponseFormat::JsonSchema,
            OutputTarget::TypedJsonObject(_) | OutputTarget::AnyJson => ResponseFormat::JsonObject,
        }
    }

    /// The strict schema to send: present exactly when
    /// [`response_format`](Self::response_format) is [`ResponseFormat::JsonSchema`].
    pub fn schema(&self) -> Option<Arc<Value>> {
        match &self.target {
            OutputTarget::Typed(schema) | OutputTarget::RuntimeSchema(schema) => {
                Some(Arc::clone(&schema.strict))
            }
            OutputTarget::Text | OutputTarget::TypedJsonObject(_) | OutputTarget::AnyJson => None,
        }
    }

    /// What the reply must look like, as the `## Output requirements` section states it
    /// (without the additional requirements).
    ///
    /// When [`schema_enforced`](Self::schema_enforced) is set, a target that sends a
    /// schema gets one line that names the envelope and points at the schema; the type's
    /// description is then never built.
    pub fn output_contract(&self) -> String {
        // `concat` sizes the text once; `format!` grew it (a `realloc` per growth, which
        // takes the allocator's lock on a multi-threaded runtime) on every attempt.
        const OPEN: &str = "Reply with one JSON object {\"";
        const CLOSE: &str = "\": <result>}.\n<result>: ";
        match &self.target {
            // The schema already carries the envelope, every field and its doc comment;
            // the envelope is still named so that retries about it make sense.
            OutputTarget::Typed(_) | OutputTarget::RuntimeSchema(_) if self.schema_enforced => [
                OPEN,
                ENVELOPE_PROPERTY,
                "\": <result>} matching the provided JSON schema.",
            ]
            .concat(),
            OutputTarget::Text => "Reply with plain text only.".to_owned(),
            // A runtime schema is described as readably as a Rust type: its field names
            // are the model's only account of the shape when nothing enforces it.
            OutputTarget::Typed(schema) | OutputTarget::RuntimeSchema(schema) => {
                [OPEN, ENVELOPE_PROPERTY, CLOSE, &describe_target(schema)].concat()
            }
            OutputTarget::TypedJsonObject(schema) => [
                OPEN,
                ENVELOPE_PROPERTY,
                CLOSE,
                &describe_target(schema),
                "\nUse JSON types faithfully: numbers, booleans and null unquoted.",
            ]
            .concat(),
            OutputTarget::AnyJson => [OPEN, ENVELOPE_PROPERTY, CLOSE, "any JSON value."].concat(),
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
/// are fed back. A previous attempt without issues adds nothing.
pub fn render(plan: &PromptPlan, previous: Option<&AttemptRecord>) -> RenderedPrompt {
    RenderedPrompt {
        system: system_prompt(plan),
        user: user_message(plan, previous),
    }
}

fn system_prompt(plan: &PromptPlan) -> String {
    match non_blank(plan.system.as_deref()) {
        Some(instructions) => [SYSTEM_PREAMBLE, "\n\n", instructions].concat(),
        None => SYSTEM_PREAMBLE.to_owned(),
    }
}

fn user_message(plan: &PromptPlan, previous: Option<&AttemptRecord>) -> String {
    let mut sections = vec![
        section("Intent", plan.intent.trim()),
        section(
            &["Input (", &plan.input.label, ")"].concat(),
            &plan.input.text,
        ),
        section("Output requirements", &output_requirements(plan)),
    ];
    if !plan.examples.is_empty() {
        sections.push(section("Examples", &examples(&plan.examples)));
    }
    if let Some(previous) = previous.filter(|attempt| !attempt.issues.is_empty()) {
        sections.push(section(
            "Previous attempt",
            &previous_output(&previous.raw_output),
        ));
        sections.push(section(
            "Problems with the previous attempt",
            &problems(previous),
        ));
    }
    sections.join("\n\n")
}

// The hot path's texts are joined with `concat`/`join`, which size them once, rather
// than `format!`, which grows them as it writes.
fn section(title: &str, body: &str) -> String {
    ["## ", title, "\n", body].concat()
}

fn output_requirements(plan: &PromptPlan) -> String {
    let contract = plan.output_contract();
    match non_blank(plan.output_requirements.as_deref()) {
        Some(extra) => [&contract, "\nAdditional output requirements: ", extra].concat(),
        None => contract,
    }
}

fn examples(examples: &[Example]) -> String {
    let numbered: Vec<String> = examples
        .iter()
        .zip(1..)
        .map(|(example, n)| {
            format!(
                "Example {n} input:\n{}\nExample {n} output:\n{}",
                example.input.trim(),
                example.output.trim()
            )
        })
        .collect();
    format!(
        "{}\n\nApply the same judgement and format to the input above.",
        numbered.join("\n\n")
    )
}

fn previous_output(raw: &str) -> String {
    if raw.is_empty() {
        return "(empty reply)".to_owned();
    }
    let kept = cut_chars(raw, PREVIOUS_OUTPUT_MAX_CHARS);
    if kept.len() < raw.len() {
        format!("{kept}\n[cut after {PREVIOUS_OUTPUT_MAX_CHARS} characters]")
    } else {
        kept.to_owned()
    }
}

fn problems(previous: &AttemptRecord) -> String {
    let bullets: Vec<String> = previous
        .issues
        .iter()
        .map(|issue| format!("- {}", issue.message))
        .collect();
    format!(
        "{}\nWrite a corrected response that fixes every problem above and still satisfies the intent.",
        bullets.join("\n")
    )
}

/// The first `max_chars` characters of `text`; never splits a UTF-8 character.
pub(crate) fn cut_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

fn non_blank(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|text| !text.is_empty())
}

#[cfg(test)]
mod tests;
