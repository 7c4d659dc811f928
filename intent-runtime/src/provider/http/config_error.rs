//! What an HTTP provider can fail to be configured with.

crate::failure::debug_as_message!(ProviderConfigError);

/// What an HTTP provider could not be configured with.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderConfigError {
    /// The environment variable that should hold the API key is unset or empty.
    #[error("the environment variable {variable} is not set; set it to your {provider} API key")]
    MissingApiKey {
        /// The variable that was read.
        variable: &'static str,
        /// The provider it is for.
        provider: &'static str,
    },
    /// The environment variable that should hold a server's base URL is unset or empty.
    #[error("the environment variable {variable} is not set; set it to {example}")]
    MissingBaseUrl {
        /// The variable that was read.
        variable: &'static str,
        /// What it should hold, with an example of this provider's own.
        example: &'static str,
    },
    /// The environment variable that should hold a required setting is unset or empty.
    #[error("the environment variable {variable} is not set; set it to {what}")]
    MissingSetting {
        /// The variable that was read.
        variable: &'static str,
        /// What it should hold.
        what: &'static str,
    },
    /// An environment variable holds a value the provider cannot use.
    #[error(
        "the environment variable {variable} is `{value}`, which {problem}; set it to {expected}"
    )]
    InvalidSetting {
        /// The variable that was read.
        variable: &'static str,
        /// What it holds (cut at 100 characters).
        value: String,
        /// What is wrong with it.
        problem: String,
        /// What it may hold.
        expected: &'static str,
    },
    /// An environment variable that chooses between a provider's APIs names none of them.
    #[error("the environment variable {variable} is `{value}`; set it to {accepted}")]
    UnknownApi {
        /// The variable that was read.
        variable: &'static str,
        /// What it holds.
        value: String,
        /// What it may hold.
        accepted: &'static str,
    },
    /// An environment variable holds something it cannot be used as: a URL that does not
    /// parse or is not http(s), a key with a line break or a space inside. Refused when
    /// the provider is built, rather than failing every call.
    #[error("the environment variable {variable} {problem}")]
    MalformedVariable {
        /// The variable that was read.
        variable: &'static str,
        /// What is wrong with it and what to set (a key's value is never quoted).
        problem: String,
    },
    /// No provider is configured in the environment ([`from_env`](crate::provider::from_env)).
    #[error(
        "no model provider is configured: set OPENAI_API_KEY (OpenAI), ANTHROPIC_API_KEY \
         (Anthropic), GEMINI_API_KEY (Gemini), AZURE_OPENAI_ENDPOINT (Azure OpenAI) or \
         OPENAI_COMPATIBLE_BASE_URL (any Chat Completions server, such as Ollama at \
         http://localhost:11434/v1)"
    )]
    NoProvider,
}
