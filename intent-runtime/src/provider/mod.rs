//! The seam between the runtime and the models: the [`Provider`] trait, the request and
//! reply it exchanges, and the classified [`ProviderError`].
//!
//! A provider makes exactly one model call per [`Provider::complete`]; retrying transient
//! failures with backoff is the attempt loop's job, so every provider gets the same policy.
//!
//! # Layout
//!
//! One folder per wire API, above one shared HTTP layer that knows no API:
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`http`] | the transport (client, timeouts, size limit, routes), error classification and redaction, the server-sent-event framer, the connection settings every HTTP provider has and the one send path they all use |
//! | [`openai`] | Chat Completions: request bodies, replies, the stream decoder, the Batch API adapter, and [`OpenAi`] |
//! | [`compatible`] | [`OpenAiCompatible`]: other servers speaking Chat Completions, through the same folder |
//! | [`responses`] | OpenAI's Responses API: request bodies, replies, the stream decoder, the Batch API adapter for `/v1/responses`, and [`OpenAiResponses`] |
//! | [`azure`] | [`AzureOpenAi`]: Azure OpenAI's addresses, keys and content filter over the Chat Completions folder |
//! | [`gemini`] | Google's Gemini API: request bodies, the schema rewritten to what it honours, replies, errors with `RetryInfo`, the stream decoder, Batch Mode, and [`Gemini`] |
//! | [`anthropic`] | Messages: request bodies, schema acceptance, replies, the stream decoder, Message Batches, and [`Anthropic`] |
//! | [`scripted`] | [`ScriptedProvider`] and its offline batch API |
//! | [`test_model`] | [`TestModel`]: answers every request with a value valid for its schema, deterministically for a seed |
//! | [`cassette`] | [`CassetteProvider`]: real exchanges recorded to a cassette file, sanitized, and replayed |
//! | [`fallback`] | [`FallbackProvider`]: an ordered chain of providers that falls over on outages, with cooldowns |
//! | [`batch`] | what a batch API offers batch jobs, whatever the API |
//! | `env` | [`from_env`]: the one place providers are chosen from the environment |
//!
//! A new provider is one folder (its request builder, reply parser, stream decoder and
//! batch adapter over [`http`]'s connection and send path) and one line in `env`.

pub mod anthropic;
pub mod azure;
pub mod batch;
pub mod cassette;
pub mod compatible;
mod env;
mod error;
pub mod fallback;
pub mod gemini;
pub mod http;
mod logprobs;
pub mod openai;
pub(crate) mod reply_text;
pub mod responses;
pub mod scripted;
mod stream;
pub mod test_model;

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

pub use anthropic::{Anthropic, anthropic_accepts_schema};
pub use azure::AzureOpenAi;
pub use cassette::{Cassette, CassetteError, CassetteMode, CassetteProvider, Sanitizer};
pub use compatible::{
    MaxTokensField, OPENAI_COMPATIBLE_DEFAULT_MODEL, OpenAiCompatible, StructuredOutput,
};
pub use env::{from_env, from_lookup};
pub use error::{MESSAGE_MAX_CHARS, ProviderError, ProviderErrorKind};
pub use fallback::FallbackProvider;
pub use gemini::Gemini;
pub use http::{
    DEFAULT_MAX_RESPONSE_BYTES, ProviderConfigError, REQUEST_ID_HEADERS, parse_retry_after,
};
pub use logprobs::{LogprobAlternative, TokenLogprob};
pub use openai::OpenAi;
pub use responses::OpenAiResponses;
pub use scripted::{ScriptedProvider, ScriptedReply};
pub use test_model::TestModel;

use crate::media::{Media, MediaLimits};
use crate::result::Usage;
pub use stream::{ReplyPiece, ReplyStream};

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
    /// none. Only a provider whose [`Provider::max_top_logprobs`] is set honours it.
    pub top_logprobs: Option<u8>,
    /// The reply is a short answer that needs no thinking (a decision's label or stated
    /// distribution), and `max_output_tokens` is meant for the answer alone: a provider
    /// whose models think before answering turns thinking off where the model allows it
    /// and otherwise gives the thinking room beyond `max_output_tokens` (Gemini 2.5: see
    /// [`Gemini`]). Decision requests set it.
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

/// What a model answered.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProviderReply {
    /// The reply text (empty when the model refused).
    pub text: String,
    /// The refusal message, when the model refused.
    pub refusal: Option<String>,
    /// The content filter's categories that withheld the reply, when the provider named
    /// them (Azure OpenAI's `content_filter_results`, Gemini's safety ratings).
    pub refusal_categories: Vec<String>,
    /// Whether the reply was cut off (output-token limit, content filter, context window).
    pub truncated: bool,
    /// The provider's stop or finish reason, as it sent it.
    pub stop_reason: Option<String>,
    /// Tokens used.
    pub usage: Usage,
    /// The model that answered.
    pub model: String,
    /// The provider's id of the HTTP request (its request-id header), when it sent one:
    /// what its support asks for.
    pub request_id: Option<String>,
    /// The provider's id of the completion itself, read from the reply's body (a Chat
    /// Completion's `id`, a Message's `id`), when it sent one.
    pub response_id: Option<String>,
    /// The log-probabilities of the output tokens, in order, when the request asked for
    /// them ([`ProviderRequest::top_logprobs`]) and the provider returned them.
    pub logprobs: Option<Vec<TokenLogprob>>,
    /// Whether the reply was served from a cassette ([`cassette`]) instead of a model.
    pub replayed: bool,
    /// Which member of a fallback chain ([`FallbackProvider`]) answered and why the ones
    /// before it were passed over; `None` from any other provider. Boxed: most replies
    /// carry none, and every reply is moved through the attempt loop.
    pub route: Option<Box<crate::route::Route>>,
}

impl ProviderReply {
    /// A complete text reply.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }
}

/// A model provider: makes one model call.
///
/// Implement it to connect another model service; the runtime's own implementations are
/// [`ScriptedProvider`] and the HTTP providers. The trait's methods are `async` through
/// [`async_trait`](crate::async_trait), re-exported by this crate, so an implementation
/// needs no dependency beyond `intent-rs`:
///
/// ```
/// use intent_rs::provider::{
///     Provider, ProviderError, ProviderErrorKind, ProviderReply, ProviderRequest,
/// };
/// use intent_rs::{IntentClient, Usage, async_trait};
///
/// /// A model service reached some other way (another SDK, a queue, a local library); this
/// /// one always answers 3, or fails on an empty prompt.
/// #[derive(Debug)]
/// struct MyModel;
///
/// #[async_trait]
/// impl Provider for MyModel {
///     fn name(&self) -> &str {
///         "my-model"
///     }
///
///     fn default_model(&self) -> &str {
///         "my-model-1"
///     }
///
///     async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
///         if request.user().is_empty() {
///             // Classify failures: the runtime retries only the transient ones.
///             return Err(ProviderError::new(
///                 ProviderErrorKind::InvalidRequest,
///                 self.name(),
///                 "the prompt is empty",
///             ));
///         }
///         Ok(ProviderReply {
///             // Schema targets are asked for in the `{"value": ...}` envelope.
///             text: r#"{"value": 3}"#.to_owned(),
///             model: request.model.clone().unwrap_or_else(|| self.default_model().to_owned()),
///             usage: Usage { input_tokens: 120, output_tokens: 4, ..Usage::default() },
///             ..ProviderReply::default()
///         })
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let client = IntentClient::builder().provider(MyModel).build().unwrap();
/// let count: u32 = client
///     .transform("one two three", "Count the words", Default::default())
///     .await
///     .into_result()
///     .unwrap();
/// assert_eq!(count, 3);
/// # });
/// ```
#[async_trait::async_trait]
pub trait Provider: Send + Sync + fmt::Debug {
    /// A short name for logs and records (`"openai"`, `"anthropic"`, `"scripted"`).
    fn name(&self) -> &str;

    /// The model used when a request names none.
    fn default_model(&self) -> &str;

    /// The API root requests go to (`https://api.openai.com/v1`), from which telemetry
    /// takes `server.address` and `server.port`; `None` (the default) for a provider that
    /// is not reached over the network. Never include credentials.
    fn server_url(&self) -> Option<&str> {
        None
    }

    /// Sends one request and returns the reply, or a classified error.
    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError>;

    /// Sends one request and returns its reply as the model writes it: text pieces, then
    /// the whole reply as [`Provider::complete`] would return it (see [`ReplyStream`]).
    /// An error before the first piece is returned here, one in the middle as an item of
    /// the stream; both are classified as `complete`'s are. Dropping the stream must
    /// cancel the request (close the connection).
    ///
    /// The default calls [`Provider::complete`] and sends its text as one piece, so a
    /// provider that cannot stream still serves streamed calls.
    async fn stream(&self, request: &ProviderRequest) -> Result<ReplyStream, ProviderError> {
        Ok(ReplyStream::whole(self.complete(request).await?))
    }

    /// Whether the model is shown the request's strict schema and held to it, so that
    /// the prompt need not describe the type again.
    ///
    /// The runtime asks once per call, before any prompt is rendered: `request` then
    /// carries everything but the prompts (`system` and `messages` are empty). When this is
    /// `true`, the output contract of a schema target shrinks to one line that points at
    /// the schema; when `false` it describes the type in full.
    ///
    /// Return `true` only when both hold for this request: the schema is sent as a
    /// strict response format, and the model reads it (its `description`s included)
    /// rather than only being constrained by it. A server that turns the schema into a
    /// decoding grammar without showing it to the model should answer `false`: the
    /// prompt is then the model's only account of the fields' meaning.
    ///
    /// The default is `false`, which keeps the full contract: always right, only longer.
    fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        let _ = request;
        false
    }

    /// How many most likely alternatives per output token this provider can report with
    /// their log-probabilities ([`ProviderRequest::top_logprobs`]), or `None` when it
    /// reports none (the default).
    ///
    /// Decision questions answered from log-probabilities need it: a question with more
    /// answers than this limit is refused before anything is sent, and a provider without
    /// log-probabilities gets its questions answered with stated probabilities instead.
    fn max_top_logprobs(&self) -> Option<u8> {
        None
    }

    /// The provider's batch API, which batch jobs
    /// ([`IntentClient::batch`](crate::IntentClient::batch)) use unless their options name
    /// another; `None` (the default) for a provider
    /// without one.
    fn batch(&self) -> Option<batch::BatchProvider> {
        None
    }
}

#[async_trait::async_trait]
impl<P: Provider + ?Sized> Provider for Arc<P> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn default_model(&self) -> &str {
        (**self).default_model()
    }
    fn server_url(&self) -> Option<&str> {
        (**self).server_url()
    }
    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        (**self).complete(request).await
    }
    async fn stream(&self, request: &ProviderRequest) -> Result<ReplyStream, ProviderError> {
        (**self).stream(request).await
    }
    fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        (**self).enforces_schema(request)
    }
    fn max_top_logprobs(&self) -> Option<u8> {
        (**self).max_top_logprobs()
    }
    fn batch(&self) -> Option<batch::BatchProvider> {
        (**self).batch()
    }
}
