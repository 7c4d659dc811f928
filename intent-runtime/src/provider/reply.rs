//! What a model answered: the [`ProviderReply`].

use crate::provider::TokenLogprob;
use crate::result::Usage;

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
    /// them ([`ProviderRequest::top_logprobs`](crate::provider::ProviderRequest::top_logprobs)) and the provider returned them.
    pub logprobs: Option<Vec<TokenLogprob>>,
    /// Whether the reply was served from a cassette ([`cassette`](crate::provider::cassette)) instead of a model.
    pub replayed: bool,
    /// Which member of a fallback chain ([`FallbackProvider`](crate::provider::FallbackProvider)) answered and why the ones
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
