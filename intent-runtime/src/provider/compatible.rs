//! Any server speaking OpenAI's Chat Completions (Ollama, vLLM, llama.cpp, LM Studio,
//! OpenRouter) as a [`Provider`], with settings for what each supports differently.

use std::fmt;

use serde_json::{Value, json};

use super::http::{
    Holds, ProviderConfigError, checked_variable, set_variable, transport_settings,
    warn_unknown_variables,
};
use super::openai::endpoint::ChatEndpoint;
use super::{Provider, ProviderError, ProviderReply, ProviderRequest, ReplyStream};
use crate::media::MediaLimits;

pub use super::openai::request::{MaxTokensField, StructuredOutput};

/// The model [`OpenAiCompatible::from_env`] asks for when `OPENAI_COMPATIBLE_MODEL` is
/// unset: a small model Ollama serves under this name.
pub const OPENAI_COMPATIBLE_DEFAULT_MODEL: &str = "llama3.2";

/// A Chat Completions server at a base URL (`{base}/chat/completions`).
///
/// Start from a preset ([`ollama`](Self::ollama), [`vllm`](Self::vllm),
/// [`llama_cpp`](Self::llama_cpp), [`lm_studio`](Self::lm_studio),
/// [`openrouter`](Self::openrouter)) or from [`new`](Self::new), and adjust. The API key is
/// optional (local servers need none) and, when set, never printed.
#[derive(Clone)]
pub struct OpenAiCompatible {
    endpoint: ChatEndpoint,
}

impl OpenAiCompatible {
    /// A server at `base_url` (up to and including `/v1`) serving `model`, with OpenAI's own
    /// settings: `max_completion_tokens`, strict `json_schema` with `name` and `strict`,
    /// `logprobs` with up to 20 `top_logprobs` (vLLM and llama.cpp return them).
    ///
    /// One setting differs: the model is not assumed to read the schema (see
    /// [`with_schema_read_by_model`](Self::with_schema_read_by_model)), so prompts keep
    /// the full description of the type.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        let mut endpoint = ChatEndpoint::new(
            "openai-compatible",
            &base_url.into(),
            model.into(),
            None,
            MediaLimits::COMPATIBLE,
        );
        // Local servers (Ollama, vLLM, llama.cpp) turn the schema into a decoding grammar
        // and never show it to the model; Ollama's own guide advises repeating it in the
        // prompt.
        endpoint.settings.model_reads_schema = false;
        Self { endpoint }
    }

    /// Reads `OPENAI_COMPATIBLE_BASE_URL` (required: the server's base URL, up to and
    /// including `/v1`), `OPENAI_COMPATIBLE_MODEL` (optional, default
    /// [`OPENAI_COMPATIBLE_DEFAULT_MODEL`]) and `OPENAI_COMPATIBLE_API_KEY` (optional: local
    /// servers need none).
    ///
    /// The provider has [`new`](Self::new)'s settings; adjust them with the `with_*`
    /// methods for a server that differs (Ollama reads only `max_tokens`, for example).
    pub fn from_env() -> Result<Self, ProviderConfigError> {
        warn_unknown_variables(&["OPENAI_COMPATIBLE_"]);
        Self::from_lookup(&|name| std::env::var(name).ok())
    }

    /// [`Self::from_env`] reading the same variables from `lookup` instead of the
    /// process environment: a map in a test, a secrets store, a file. The values are
    /// checked as `from_env` checks them; unknown variables are not looked for (a lookup
    /// cannot list its names). See [`crate::provider::from_lookup`] for an example.
    pub fn from_lookup(
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ProviderConfigError> {
        let base_url = checked_variable(lookup, "OPENAI_COMPATIBLE_BASE_URL", Holds::Url)?.ok_or(
            ProviderConfigError::MissingBaseUrl {
                variable: "OPENAI_COMPATIBLE_BASE_URL",
                example: "the server's base URL, such as http://localhost:11434/v1 for Ollama",
            },
        )?;
        let model = set_variable(lookup, "OPENAI_COMPATIBLE_MODEL")
            .unwrap_or_else(|| OPENAI_COMPATIBLE_DEFAULT_MODEL.to_owned());
        let provider = Self::new(base_url, model);
        Ok(
            match checked_variable(lookup, "OPENAI_COMPATIBLE_API_KEY", Holds::Key)? {
                Some(key) => provider.with_api_key(key),
                None => provider,
            },
        )
    }

    /// Ollama's `/v1` endpoint on its default port.
    ///
    /// Ollama reads only `max_tokens`, forwards the schema but ignores `name` and `strict`
    /// (so they are left out), and its replies carry no `refusal` key. Log-probabilities
    /// are not assumed (older servers return none); turn them on with
    /// [`with_max_top_logprobs`](Self::with_max_top_logprobs) for a server that has them.
    pub fn ollama(model: impl Into<String>) -> Self {
        Self::new("http://localhost:11434/v1", model)
            .with_name("ollama")
            .with_max_tokens_field(MaxTokensField::MaxTokens)
            .with_schema_name_and_strict(false)
            .with_max_top_logprobs(None)
    }

    /// vLLM's OpenAI-compatible server on its default port.
    ///
    /// vLLM always enforces the schema, requires the schema `name`, and reads
    /// `max_completion_tokens`: OpenAI's settings.
    pub fn vllm(model: impl Into<String>) -> Self {
        Self::new("http://localhost:8000/v1", model).with_name("vllm")
    }

    /// The llama.cpp server on its default port.
    ///
    /// llama.cpp turns the schema into a grammar (silently skipping keywords it does not
    /// support, which the verifier still checks) and reads `max_completion_tokens`.
    pub fn llama_cpp(model: impl Into<String>) -> Self {
        Self::new("http://localhost:8080/v1", model).with_name("llama.cpp")
    }

    /// LM Studio's local server on its default port.
    ///
    /// LM Studio accepts OpenAI's `json_schema` format; its documented requests limit output
    /// with `max_tokens`. Log-probabilities are not assumed.
    pub fn lm_studio(model: impl Into<String>) -> Self {
        Self::new("http://localhost:1234/v1", model)
            .with_name("lm-studio")
            .with_max_tokens_field(MaxTokensField::MaxTokens)
            .with_max_top_logprobs(None)
    }

    /// OpenRouter, which routes to many providers.
    ///
    /// Schema support varies by model, so requests carry `provider.require_parameters: true`
    /// to be routed only where every parameter sent (the schema included) is supported;
    /// OpenRouter documents `max_tokens` as its output limit.
    pub fn openrouter(api_key: impl Into<String>, model: impl Into<String>) -> Self {
        Self::new("https://openrouter.ai/api/v1", model)
            .with_name("openrouter")
            .with_api_key(api_key)
            .with_max_tokens_field(MaxTokensField::MaxTokens)
            .with_body_field("provider", json!({"require_parameters": true}))
    }

    /// The name used in logs, records and errors (default `openai-compatible`).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.endpoint.connection.provider = name.into();
        self
    }

    /// Sends `Authorization: Bearer <key>`.
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.endpoint.connection.set_api_key(api_key.into());
        self
    }

    /// Sends requests to another base URL.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.endpoint.connection.set_base_url(base_url);
        self
    }

    /// Uses this model when a request names none.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.endpoint.connection.model = model.into();
        self
    }

    /// Which body field carries the output-token limit.
    pub fn with_max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.endpoint.settings.max_tokens_field = field;
        self
    }

    /// How strict-schema requests are sent: the schema, or `json_object` for servers that
    /// cannot enforce one.
    pub fn with_structured_output(mut self, mode: StructuredOutput) -> Self {
        self.endpoint.settings.structured_output = mode;
        self
    }

    /// Whether `json_schema` carries `name` and `strict: true` (some servers ignore or
    /// reject them).
    pub fn with_schema_name_and_strict(mut self, send: bool) -> Self {
        self.endpoint.settings.send_schema_name_and_strict = send;
        self
    }

    /// Whether the model reads the `json_schema` it is sent, field descriptions included
    /// (default `false`). Turn it on for a server that shows the schema to the model, as
    /// OpenAI does: prompts for schema targets then say "conform to the schema" instead of
    /// describing the type again. Leave it off for servers that only constrain decoding
    /// with the schema. It has no effect with [`StructuredOutput::JsonObject`], which
    /// sends no schema.
    pub fn with_schema_read_by_model(mut self, reads: bool) -> Self {
        self.endpoint.settings.model_reads_schema = reads;
        self
    }

    /// How many alternatives per token the server reports with their log-probabilities
    /// (`top_logprobs`), or `None` when it returns no log-probabilities: decision questions
    /// are then answered with stated probabilities. Default 20.
    pub fn with_max_top_logprobs(mut self, limit: Option<u8>) -> Self {
        self.endpoint.settings.max_top_logprobs = limit;
        self
    }

    /// Adds a top-level field to every request body (server-specific options); fields the
    /// provider sets itself (`model`, `messages`, ...) are never overridden.
    pub fn with_body_field(mut self, key: impl Into<String>, value: Value) -> Self {
        self.endpoint.extra_body.insert(key.into(), value);
        self
    }

    /// What the server takes of images and PDFs (default [`MediaLimits::COMPATIBLE`]:
    /// images as OpenAI takes them, no documents); a request over a limit is refused
    /// before it is sent. A server that reads PDFs sent as OpenAI's `file` parts takes
    /// `MediaLimits::COMPATIBLE.with_documents(true)`.
    pub fn with_media_limits(mut self, limits: MediaLimits) -> Self {
        self.endpoint.connection.media_limits = limits;
        self
    }

    transport_settings!(endpoint.connection.transport);

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        self.endpoint.connection.base_url()
    }

    /// Which body field carries the output-token limit.
    pub fn max_tokens_field(&self) -> MaxTokensField {
        self.endpoint.settings.max_tokens_field
    }

    /// How strict-schema requests are sent.
    pub fn structured_output(&self) -> StructuredOutput {
        self.endpoint.settings.structured_output
    }

    /// Whether `json_schema` carries `name` and `strict`.
    pub fn sends_schema_name_and_strict(&self) -> bool {
        self.endpoint.settings.send_schema_name_and_strict
    }

    /// Whether the model is taken to read the `json_schema` it is sent.
    pub fn schema_read_by_model(&self) -> bool {
        self.endpoint.settings.model_reads_schema
    }
}

impl fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiCompatible")
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiCompatible {
    fn name(&self) -> &str {
        &self.endpoint.connection.provider
    }

    fn default_model(&self) -> &str {
        &self.endpoint.connection.model
    }

    fn server_url(&self) -> Option<&str> {
        Some(OpenAiCompatible::base_url(self))
    }

    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        self.endpoint.complete(request).await
    }

    /// Streams with `"stream": true` and `stream_options.include_usage`.
    async fn stream(&self, request: &ProviderRequest) -> Result<ReplyStream, ProviderError> {
        self.endpoint.stream(request).await
    }

    /// `true` only for a strict-schema request sent as `json_schema`
    /// ([`StructuredOutput::JsonSchema`]) to a server whose model reads it
    /// ([`with_schema_read_by_model`](Self::with_schema_read_by_model)).
    fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        self.endpoint.enforces_schema(request)
    }

    /// As set with [`with_max_top_logprobs`](Self::with_max_top_logprobs).
    fn max_top_logprobs(&self) -> Option<u8> {
        self.endpoint.max_top_logprobs()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::provider::ResponseFormat;

    fn schema_request() -> ProviderRequest {
        ProviderRequest {
            response_format: ResponseFormat::JsonSchema,
            schema: Some(Arc::new(json!({"type": "object"}))),
            ..ProviderRequest::text("", "")
        }
    }

    #[test]
    fn from_env_needs_a_base_url_and_reads_model_and_key() {
        use crate::provider::http::variables::tests::lookup;

        let err = OpenAiCompatible::from_lookup(&lookup(&[("OPENAI_COMPATIBLE_MODEL", "m")]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the environment variable OPENAI_COMPATIBLE_BASE_URL is not set; set it to the \
             server's base URL, such as http://localhost:11434/v1 for Ollama"
        );
        let provider = OpenAiCompatible::from_lookup(&lookup(&[
            ("OPENAI_COMPATIBLE_BASE_URL", "http://localhost:8000/v1/"),
            ("OPENAI_COMPATIBLE_MODEL", "qwen3"),
            ("OPENAI_COMPATIBLE_API_KEY", "sk-local-secret"),
        ]))
        .unwrap();
        assert_eq!(provider.base_url(), "http://localhost:8000/v1");
        assert_eq!(provider.default_model(), "qwen3");
        let printed = format!("{provider:?}");
        assert!(printed.contains("[redacted]") && !printed.contains("sk-local-secret"));
        let defaults = OpenAiCompatible::from_lookup(&lookup(&[(
            "OPENAI_COMPATIBLE_BASE_URL",
            "http://localhost:11434/v1",
        )]))
        .unwrap();
        assert_eq!(defaults.default_model(), OPENAI_COMPATIBLE_DEFAULT_MODEL);
        assert!(!format!("{defaults:?}").contains("[redacted]"), "no key");
    }

    #[test]
    fn the_schema_is_enforced_only_when_sent_to_a_model_that_reads_it() {
        let request = schema_request();
        let local = OpenAiCompatible::new("http://localhost:8000/v1", "m");
        assert!(!local.schema_read_by_model());
        assert!(!local.enforces_schema(&request), "default");
        for preset in [
            OpenAiCompatible::ollama("m"),
            OpenAiCompatible::vllm("m"),
            OpenAiCompatible::llama_cpp("m"),
            OpenAiCompatible::lm_studio("m"),
            OpenAiCompatible::openrouter("key", "m"),
        ] {
            assert!(!preset.enforces_schema(&request), "{preset:?}");
        }

        let reading = local.with_schema_read_by_model(true);
        assert!(reading.enforces_schema(&request), "json_schema, read");
        let json_object = reading
            .clone()
            .with_structured_output(StructuredOutput::JsonObject);
        assert!(
            !json_object.enforces_schema(&request),
            "json_object sends no schema"
        );
        let text = ProviderRequest::text("", "");
        assert!(!reading.enforces_schema(&text), "text");
    }

    #[test]
    fn log_probabilities_are_assumed_only_where_the_server_returns_them() {
        assert_eq!(OpenAiCompatible::vllm("m").max_top_logprobs(), Some(20));
        assert_eq!(
            OpenAiCompatible::llama_cpp("m").max_top_logprobs(),
            Some(20)
        );
        assert_eq!(OpenAiCompatible::ollama("m").max_top_logprobs(), None);
        assert_eq!(OpenAiCompatible::lm_studio("m").max_top_logprobs(), None);
        let turned_on = OpenAiCompatible::ollama("m").with_max_top_logprobs(Some(5));
        assert_eq!(turned_on.max_top_logprobs(), Some(5));
    }
}
