//! The prompt plan and its rendering: the first request, and the turns a retry adds.
//!
//! A request is a system prompt and a conversation. The first request has one user turn;
//! a retry keeps every earlier turn byte for byte and adds the previous reply as an
//! assistant turn and the problems with it as a user turn (see [`retry_turns`]), so the
//! provider's prompt cache can serve everything already sent.
//!
//! The first request takes one of two layouts.
//!
//! **The schema enforced** ([`PromptPlan::schema_enforced`]): the provider shows the model
//! the strict schema and holds it to it, so nothing that the schema says is repeated. The
//! system prompt is the trimmed intent, then the caller's system instructions, additional
//! output requirements and examples, each when set; the user turn is the input (after an
//! `Input (<label>):` line unless the input is a plain string). Intent and examples sit in
//! the system prompt because they are the same for every call of a method: a stable prefix
//! the provider can cache across calls.
//!
//! **Otherwise** the prompt is the model's only account of the shape. The system prompt
//! is [`SYSTEM_PREAMBLE`] and the caller's instructions; the user turn has these sections,
//! in order, separated by blank lines:
//!
//! 1. `## Intent`: the trimmed intent;
//! 2. `## Input (<label>)`: the prepared input, unchanged;
//! 3. `## Output requirements`: the output contract, then `Additional output
//!    requirements: ...` when set;
//! 4. `## Examples`, only when there are examples: each numbered from 1, then a line
//!    asking for the same judgement and format.
//!
//! Images and documents ([`PreparedInput::media`]) follow the text input, each under its
//! own `Input <name> (<type>)` heading and sent as a content part right after it
//! ([`Message::media`]). They stay in the first user turn: a retry adds only text turns.
//!
//! Wording is kept short on purpose: every word is paid for in tokens on every call.

use std::sync::Arc;

use serde_json::Value;

use crate::input::{MediaInput, PreparedInput, describe_target};
use crate::media::Media;
use crate::options::Example;
use crate::provider::{MediaPart, Message, ResponseFormat};
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
    /// ([`Provider::enforces_schema`](crate::provider::Provider::enforces_schema)): a
    /// schema target then gets the lean layout, which leaves out what the schema already
    /// says (preamble, headings, output contract). It has no effect on a target that
    /// sends no schema.
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
    /// (without the additional requirements). The lean layout of an enforced schema sends
    /// no contract: the schema is the contract.
    pub fn output_contract(&self) -> String {
        // `concat` sizes the text once; `format!` grew it (a `realloc` per growth, which
        // takes the allocator's lock on a multi-threaded runtime) on every attempt.
        const OPEN: &str = "Reply with one JSON object {\"";
        const CLOSE: &str = "\": <result>}.\n<result>: ";
        match &self.target {
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

/// A rendered request: the system prompt and the conversation after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedPrompt {
    /// The system prompt.
    pub system: String,
    /// The turns: the first request's user turn, then two turns per retry.
    pub messages: Vec<Message>,
}

impl RenderedPrompt {
    /// The first user turn: the request as first asked.
    pub fn user(&self) -> &str {
        self.messages
            .first()
            .map_or("", |message| message.content.as_str())
    }
}

/// Renders the request that follows `previous` (the attempts made so far, in order): the
/// first request, then the two [`retry_turns`] of every previous attempt that has issues.
///
/// The attempt loop renders the first request once and appends each retry's turns to it,
/// which gives the same request without rendering the first one again.
pub fn render(plan: &PromptPlan, previous: &[AttemptRecord]) -> RenderedPrompt {
    let mut prompt = first_request(plan);
    for attempt in previous {
        if let Some(turns) = retry_turns(attempt) {
            prompt.messages.extend(turns);
        }
    }
    prompt
}

/// The first request of a call: the system prompt and one user turn.
pub fn first_request(plan: &PromptPlan) -> RenderedPrompt {
    let (system, user) = if plan.lean() {
        (lean_system_prompt(plan), lean_user_message(plan))
    } else {
        (system_prompt(plan), user_message(plan))
    };
    RenderedPrompt {
        system,
        messages: vec![user],
    }
}

/// The turns a retry adds after `previous` failed: its reply as the assistant's turn (cut
/// at [`PREVIOUS_OUTPUT_MAX_CHARS`] characters) and the problems as the user's, one bullet
/// per issue under [`PROBLEMS_HEADING`]. `None` when the attempt has no issues: there is nothing to correct.
pub fn retry_turns(previous: &AttemptRecord) -> Option<[Message; 2]> {
    if previous.issues.is_empty() {
        return None;
    }
    let raw = previous.raw_output.as_str();
    let kept = cut_chars(raw, PREVIOUS_OUTPUT_MAX_CHARS);
    // A provider refuses an empty turn; the placeholder also tells the model what happened.
    let reply = if raw.is_empty() {
        "(empty reply)"
    } else {
        kept
    };
    Some([
        Message::assistant(reply),
        Message::user(problems(previous, kept.len() < raw.len())),
    ])
}

impl PromptPlan {
    /// Whether the first request takes the lean layout: the provider enforces the strict
    /// schema this target sends.
    fn lean(&self) -> bool {
        self.schema_enforced && self.schema().is_some()
    }
}

fn lean_system_prompt(plan: &PromptPlan) -> String {
    let mut parts = vec![plan.intent.trim()];
    if let Some(instructions) = non_blank(plan.system.as_deref()) {
        parts.push(instructions);
    }
    let requirements;
    if let Some(extra) = non_blank(plan.output_requirements.as_deref()) {
        requirements = ["Additional output requirements: ", extra].concat();
        parts.push(&requirements);
    }
    let examples_text;
    if !plan.examples.is_empty() {
        examples_text = examples(&plan.examples);
        parts.push(&examples_text);
    }
    parts.join("\n\n")
}

fn lean_user_message(plan: &PromptPlan) -> Message {
    let input = &plan.input;
    let text = if !input.has_text() {
        String::new()
    } else if input.label == STRING_LABEL {
        input.text.clone()
    } else {
        ["Input (", &input.label, "):\n", &input.text].concat()
    };
    if input.media.is_empty() {
        return Message::user(text);
    }
    let mut turn = MediaTurn::new(text);
    for media in &input.media {
        let title = media_title("Input", media);
        turn.push_media(&[&title, ":\n"].concat(), &media.media);
    }
    turn.finish()
}

/// `Input <name> (PNG image)`, or `Input (PDF document)` for a call's only input; one of
/// several in a parameter is numbered: `Input photos, 2 of 3 (PNG image)`.
fn media_title(word: &str, input: &MediaInput) -> String {
    let place = input
        .position
        .map(|at| [&at.number.to_string(), " of ", &at.of.to_string()].concat());
    let label = input.media.label();
    match (&input.name, place) {
        (Some(name), None) => [word, " ", name, " (", label, ")"].concat(),
        (None, None) => [word, " (", label, ")"].concat(),
        (Some(name), Some(place)) => [word, " ", name, ", ", &place, " (", label, ")"].concat(),
        (None, Some(place)) => [word, " ", &place, " (", label, ")"].concat(),
    }
}

/// A user turn being written: its text, and the media placed in it.
struct MediaTurn {
    text: String,
    media: Vec<MediaPart>,
}

impl MediaTurn {
    fn new(text: String) -> Self {
        Self {
            text,
            media: Vec::new(),
        }
    }

    /// Adds a blank line unless the turn is empty, then `heading`, then the media.
    fn push_media(&mut self, heading: &str, media: &Media) {
        if !self.text.is_empty() {
            self.text.push_str("\n\n");
        }
        self.text.push_str(heading);
        self.media.push(MediaPart {
            at: self.text.len(),
            media: media.clone(),
        });
    }

    fn push_section(&mut self, section: &str) {
        if !self.text.is_empty() {
            self.text.push_str("\n\n");
        }
        self.text.push_str(section);
    }

    fn finish(self) -> Message {
        Message::user_with_media(self.text, self.media)
    }
}

/// The label of a plain string input, which needs no label in the lean layout.
const STRING_LABEL: &str = "String";

fn system_prompt(plan: &PromptPlan) -> String {
    match non_blank(plan.system.as_deref()) {
        Some(instructions) => [SYSTEM_PREAMBLE, "\n\n", instructions].concat(),
        None => SYSTEM_PREAMBLE.to_owned(),
    }
}

fn user_message(plan: &PromptPlan) -> Message {
    let input = &plan.input;
    if input.media.is_empty() {
        let mut sections = vec![
            section("Intent", plan.intent.trim()),
            section(&["Input (", &input.label, ")"].concat(), &input.text),
            section("Output requirements", &output_requirements(plan)),
        ];
        if !plan.examples.is_empty() {
            sections.push(section("Examples", &examples(&plan.examples)));
        }
        return Message::user(sections.join("\n\n"));
    }
    // With media the sections are the same; each medium gets its own `## Input` heading
    // after the text input, the medium itself sent right after the heading.
    let mut turn = MediaTurn::new(section("Intent", plan.intent.trim()));
    if input.has_text() {
        turn.push_section(&section(
            &["Input (", &input.label, ")"].concat(),
            &input.text,
        ));
    }
    for media in &input.media {
        turn.push_media(&section(&media_title("Input", media), ""), &media.media);
    }
    turn.push_section(&section("Output requirements", &output_requirements(plan)));
    if !plan.examples.is_empty() {
        turn.push_section(&section("Examples", &examples(&plan.examples)));
    }
    turn.finish()
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
        "{}\n\nApply the same judgement and format to the input.",
        numbered.join("\n\n")
    )
}

/// The user turn after a failed reply: one bullet per issue under a short heading. The
/// issues say what to change and where; the wording around them is kept to a line, since
/// a retry pays for it in tokens and the model needs no more than the list.
fn problems(previous: &AttemptRecord, cut: bool) -> String {
    let mut text = String::from(PROBLEMS_HEADING);
    if cut {
        text.push_str(&format!(
            " (your reply is shown cut after {PREVIOUS_OUTPUT_MAX_CHARS} characters)"
        ));
    }
    for issue in &previous.issues {
        text.push_str("\n- ");
        text.push_str(&issue.message);
    }
    text
}

/// The first line of the turn that lists a failed reply's problems.
pub const PROBLEMS_HEADING: &str = "Fix these and reply again:";

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
