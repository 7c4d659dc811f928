//! What the runtime asks a model: the [`ProviderRequest`], its messages and their parts,
//! and the reply format it wants.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::media::{Media, MediaLimits};
use crate::provider::ProviderError;

/// How the model is asked to format its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResponseFormat {
    /// Plain text: no JSON mode, no schema.
    Text,
    /// Any JSON object (`json_object`); the prompt carries the contract.
    JsonObject,
    /// A strict JSON schema (`json_schema` with `strict: true`).
    JsonSchema,
}

/// The default schema name sent with a strict schema.
pub const DEFAULT_SCHEMA_NAME: &str = "intent_output";

/// Who speaks a turn of the conversation that follows the system prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The caller: the request, and on a retry the problems with the previous reply.
    User,
    /// The model: on a retry, its previous reply.
    Assistant,
}

impl Role {
    /// The role's name on the wire (`"user"`, `"assistant"`), the same for every provider.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said: the whole text of the turn, media labels included.
    pub content: String,
    /// Images and documents sent in this turn, each at a place in `content` (only the
    /// first user turn carries any).
    pub media: Vec<MediaPart>,
}

/// An image or a document in a turn: sent as its own content part, between the text
/// before byte `at` of the turn's `content` and the text from there on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MediaPart {
    /// The byte offset in the turn's text where the media sits.
    pub at: usize,
    /// The media.
    pub media: Media,
}

/// A piece of a turn as providers send it: text, or an image or a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'a> {
    /// Text (never empty).
    Text(&'a str),
    /// An image or a document.
    Media(&'a Media),
}

impl Message {
    /// A user turn.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
            media: Vec::new(),
        }
    }

    /// A user turn with media placed in its text.
    pub fn user_with_media(content: impl Into<String>, media: Vec<MediaPart>) -> Self {
        Self {
            media,
            ..Self::user(content)
        }
    }

    /// An assistant turn.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
            media: Vec::new(),
        }
    }

    /// The turn as content parts, in order: text up to each media part's place, the
    /// media, and the text after the last. Empty texts are left out. A place past the
    /// text's end or inside a character is taken as the nearest place before it, so a
    /// malformed place never loses text.
    pub fn parts(&self) -> impl Iterator<Item = Part<'_>> {
        let text = self.content.as_str();
        let mut from = 0;
        let mut media = self.media.iter();
        let mut pending: Option<&Media> = None;
        std::iter::from_fn(move || {
            loop {
                if let Some(next) = pending.take() {
                    return Some(Part::Media(next));
                }
                match media.next() {
                    Some(part) => {
                        let mut at = part.at.clamp(from, text.len());
                        while !text.is_char_boundary(at) {
                            at -= 1;
                        }
                        let piece = &text[from..at];
                        from = at;
                        pending = Some(&part.media);
                        if !piece.is_empty() {
                            return Some(Part::Text(piece));
                        }
                    }
                    None => {
                        let piece = &text[from..];
                        from = text.len();
                        return (!piece.is_empty()).then_some(Part::Text(piece));
                    }
                }
            }
        })
    }
}

/// One fully rendered model call.
///
/// The conversation is the system prompt and then `messages`, which start with the user's
/// request and alternate between user and assistant. A retry sends the first request's
/// messages unchanged, followed by the previous reply (an assistant turn) and the problems
/// with it (a user turn), so the provider's prompt cache can serve the repeated prefix.
#[derive(Clone, PartialEq)]
pub struct ProviderRequest {
    /// The system prompt (empty for none).
    pub system: String,
    /// The turns after the system prompt: user first, alternating, user last.
    pub messages: Vec<Message>,
    /// The reply format to ask for.
    pub response_format: ResponseFormat,
    /// The strict schema, when `response_format` is [`ResponseFormat::JsonSchema`].
    pub schema: Option<Arc<Value>>,
    /// The schema's name (`[a-zA-Z0-9_-]{1,64}`).
    pub schema_name: String,
    /// The model to ask; `None` uses the provider's default.
    pub model: Option<String>,
    /// Maximum output tokens.
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Asks for the log-probabilities of each output token and of this many most likely
    /// alternatives (`logprobs` / `top_logprobs` on Chat Completions); `None` asks for
    /// none. Only a provider whose [`Provider::max_top_logprobs`](crate::provider::Provider::max_top_logprobs) is set honours it.
    pub top_logprobs: Option<u8>,
    /// The reply is a short answer that needs no thinking (a decision's label or stated
    /// distribution), and `max_output_tokens` is meant for the answer alone: a provider
    /// whose models think before answering turns thinking off where the model allows it
    /// and otherwise gives the thinking room beyond `max_output_tokens` (Gemini 2.5: see
    /// [`Gemini`](crate::provider::Gemini)). Decision requests set it.
    pub minimal_thinking: bool,
}

impl ProviderRequest {
    /// A plain-text request with the given system prompt and one user turn, and nothing
    /// else set.
    pub fn text(system: impl Into<String>, user: impl Into<String>) -> Self {
        Self {
            system: system.into(),
            messages: vec![Message::user(user)],
            response_format: ResponseFormat::Text,
            schema: None,
            schema_name: DEFAULT_SCHEMA_NAME.to_owned(),
            model: None,
            max_output_tokens: None,
            temperature: None,
            top_logprobs: None,
            minimal_thinking: false,
        }
    }

    /// The first user turn: the request as first asked (empty when there is none).
    pub fn user(&self) -> &str {
        self.messages
            .iter()
            .find(|message| message.role == Role::User)
            .map_or("", |message| message.content.as_str())
    }

    /// The last user turn: the request itself on a first attempt, the problems with the
    /// previous reply on a retry (empty when there is none).
    pub fn last_user(&self) -> &str {
        self.messages
            .iter()
            .rev()
            .find(|message| message.role == Role::User)
            .map_or("", |message| message.content.as_str())
    }

    /// Every image and document in the request's turns, in order.
    pub fn media(&self) -> impl Iterator<Item = &Media> {
        self.messages
            .iter()
            .flat_map(|message| message.media.iter().map(|part| &part.media))
    }

    /// Checks the request's images and documents against `limits` before it is sent to
    /// `provider`: every provider's request builder calls it, so live calls, streamed
    /// calls and batch lines are refused alike.
    pub(crate) fn check_media(
        &self,
        provider: &str,
        limits: &MediaLimits,
    ) -> Result<(), ProviderError> {
        if self.messages.iter().all(|message| message.media.is_empty()) {
            return Ok(());
        }
        let schema = self
            .schema
            .as_ref()
            .map_or(0, |schema| schema.to_string().len());
        Ok(limits.check(provider, self.media(), self.prompt_len() + schema)?)
    }

    /// Whether this request continues an earlier one (it carries a previous reply).
    pub fn is_retry(&self) -> bool {
        self.messages
            .iter()
            .any(|message| message.role == Role::Assistant)
    }

    /// The length in bytes of the system prompt and every turn: what a provider reads
    /// as the prompt, without the schema.
    pub fn prompt_len(&self) -> usize {
        self.system.len()
            + self
                .messages
                .iter()
                .map(|message| message.content.len())
                .sum::<usize>()
    }
}

impl fmt::Debug for ProviderRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let turns: Vec<(&str, usize)> = self
            .messages
            .iter()
            .map(|message| (message.role.as_str(), message.content.len()))
            .collect();
        f.debug_struct("ProviderRequest")
            .field("model", &self.model)
            .field("response_format", &self.response_format)
            .field("schema_name", &self.schema_name)
            .field("system_chars", &self.system.len())
            .field("message_chars", &turns)
            .field("media", &self.media().collect::<Vec<_>>())
            .field("max_output_tokens", &self.max_output_tokens)
            .field("temperature", &self.temperature)
            .field("top_logprobs", &self.top_logprobs)
            .field("minimal_thinking", &self.minimal_thinking)
            .finish_non_exhaustive()
    }
}
