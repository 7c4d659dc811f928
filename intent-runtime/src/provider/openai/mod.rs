//! OpenAI's Chat Completions API as a [`Provider`]: strict `json_schema`, `json_object` and
//! text replies, refusals, truncation and classified errors.

pub(crate) mod batch;
pub(crate) mod endpoint;
pub(crate) mod reply;
pub(crate) mod request;
mod stream;

pub(crate) use self::batch::batch_for_endpoint;

use std::fmt;

use self::endpoint::ChatEndpoint;
use super::http::{ProviderConfigError, ProviderVariables, transport_settings};
use super::{Provider, ProviderError, ProviderReply, ProviderRequest, ReplyStream};
use crate::media::MediaLimits;

/// OpenAI's API root.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The model used when neither the request nor `OPENAI_MODEL` names one.
pub const OPENAI_DEFAULT_MODEL: &str = "gpt-4o-mini";

/// The variables OpenAI's providers read (Chat Completions and Responses alike).
pub(crate) const OPENAI_VARIABLES: ProviderVariables = ProviderVariables {
    provider: "OpenAI",
    key: "OPENAI_API_KEY",
    base_url: "OPENAI_BASE_URL",
    model: "OPENAI_MODEL",
};

/// OpenAI Chat Completions (`POST {base}/chat/completions`).
///
/// Sends `max_completion_tokens` (never `max_tokens`, which reasoning models reject) and a
/// strict `json_schema` response format for schema targets. The API key is never printed:
/// not by `Debug`, not in errors, not in logs.
#[derive(Clone)]
pub struct OpenAi {
    endpoint: ChatEndpoint,
}

impl OpenAi {
    /// A provider for OpenAI's API with this key, the default base URL and model.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            endpoint: ChatEndpoint::new(
                "openai",
                OPENAI_DEFAULT_BASE_URL,
                OPENAI_DEFAULT_MODEL.to_owned(),
                Some(api_key.into()),
                MediaLimits::OPENAI,
            ),
        }
    }

    /// Reads `OPENAI_API_KEY` (required), `OPENAI_BASE_URL` and `OPENAI_MODEL` (optional).
    pub fn from_env() -> Result<Self, ProviderConfigError> {
        super::http::warn_unknown_variables(&["OPENAI_"]);
        Self::from_lookup(&|name| std::env::var(name).ok())
    }

    /// [`Self::from_env`] reading the same variables from `lookup` instead of the
    /// process environment: a map in a test, a secrets store, a file. The values are
    /// checked as `from_env` checks them; unknown variables are not looked for (a lookup
    /// cannot list its names). See [`crate::provider::from_lookup`] for an example.
    pub fn from_lookup(
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ProviderConfigError> {
        let settings = OPENAI_VARIABLES.read(lookup)?;
        let mut provider = Self::new(settings.key);
        if let Some(base_url) = settings.base_url {
            provider = provider.with_base_url(base_url);
        }
        if let Some(model) = settings.model {
            provider = provider.with_model(model);
        }
        Ok(provider)
    }

    /// Sends requests to another API root (a proxy, Azure-style gateway, a test server).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.endpoint.connection.set_base_url(base_url);
        self
    }

    /// Uses this model when a request names none.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.endpoint.connection.model = model.into();
        self
    }

    /// What the API takes of images and PDFs (default [`MediaLimits::OPENAI`]); a request
    /// over a limit is refused before it is sent.
    pub fn with_media_limits(mut self, limits: MediaLimits) -> Self {
        self.endpoint.connection.media_limits = limits;
        self
    }

    transport_settings!(endpoint.connection.transport);

    /// The API root requests go to.
    pub fn base_url(&self) -> &str {
        self.endpoint.connection.base_url()
    }

    /// The Chat Completions endpoint: its body builder, key and transport, which batch
    /// jobs share with live calls.
    pub(crate) fn endpoint(&self) -> &ChatEndpoint {
        &self.endpoint
    }
}

impl fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAi")
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

#[async_trait::async_trait]
impl Provider for OpenAi {
    fn name(&self) -> &str {
        &self.endpoint.connection.provider
    }

    fn default_model(&self) -> &str {
        &self.endpoint.connection.model
    }

    fn server_url(&self) -> Option<&str> {
        Some(OpenAi::base_url(self))
    }

    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        self.endpoint.complete(request).await
    }

    /// Streams with `"stream": true` and `stream_options.include_usage`.
    async fn stream(&self, request: &ProviderRequest) -> Result<ReplyStream, ProviderError> {
        self.endpoint.stream(request).await
    }

    /// `true` for a strict-schema request: OpenAI shows the schema to the model and holds
    /// the reply to it.
    fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        self.endpoint.enforces_schema(request)
    }

    /// 20: Chat Completions reports up to 20 alternatives per token (reasoning models
    /// refuse log-probabilities; their refusal comes back as an invalid request).
    fn max_top_logprobs(&self) -> Option<u8> {
        self.endpoint.max_top_logprobs()
    }

    /// OpenAI's Batch API, with this provider's key, base URL and model.
    fn batch(&self) -> Option<crate::provider::batch::BatchProvider> {
        Some(crate::provider::batch::BatchProvider::openai(self.clone()))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn from_env_needs_a_key() {
        let err = OpenAi::from_lookup(&lookup(&[("OPENAI_API_KEY", "  ")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the environment variable OPENAI_API_KEY is not set; set it to your OpenAI API key"
        );
    }

    #[test]
    fn from_env_reads_base_url_and_model() {
        let provider = OpenAi::from_lookup(&lookup(&[
            ("OPENAI_API_KEY", "sk-test"),
            ("OPENAI_BASE_URL", "http://localhost:9/v1/"),
            ("OPENAI_MODEL", "gpt-test"),
        ]))
        .unwrap();
        assert_eq!(provider.base_url(), "http://localhost:9/v1");
        assert_eq!(provider.default_model(), "gpt-test");
        let defaults = OpenAi::from_lookup(&lookup(&[("OPENAI_API_KEY", "sk-test")])).unwrap();
        assert_eq!(defaults.base_url(), OPENAI_DEFAULT_BASE_URL);
        assert_eq!(defaults.default_model(), OPENAI_DEFAULT_MODEL);
    }

    #[test]
    fn only_a_strict_schema_request_is_enforced() {
        use std::sync::Arc;

        use crate::provider::ResponseFormat;

        let provider = OpenAi::new("sk-test");
        let mut request = ProviderRequest::text("", "");
        assert!(!provider.enforces_schema(&request), "text");
        request.response_format = ResponseFormat::JsonObject;
        assert!(!provider.enforces_schema(&request), "json_object");
        // Without a schema the request goes out as `json_object`.
        request.response_format = ResponseFormat::JsonSchema;
        assert!(
            !provider.enforces_schema(&request),
            "json_schema without a schema"
        );
        request.schema = Some(Arc::new(serde_json::json!({"type": "object"})));
        assert!(provider.enforces_schema(&request), "json_schema");
    }

    #[test]
    fn debug_never_shows_the_key() {
        let provider = OpenAi::new("sk-very-secret-1234");
        let printed = format!("{provider:?} {provider:#?}");
        assert!(!printed.contains("sk-very-secret-1234"), "{printed}");
        assert!(printed.contains("[redacted]"));
    }
}
