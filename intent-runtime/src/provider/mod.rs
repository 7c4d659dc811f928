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
mod reply;
pub(crate) mod reply_text;
mod request;
pub mod responses;
pub mod scripted;
mod stream;
pub mod test_model;

use std::fmt;
use std::sync::Arc;

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

pub use reply::ProviderReply;
pub use request::{
    DEFAULT_SCHEMA_NAME, MediaPart, Message, Part, ProviderRequest, ResponseFormat, Role,
};
pub use stream::{ReplyPiece, ReplyStream};

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
