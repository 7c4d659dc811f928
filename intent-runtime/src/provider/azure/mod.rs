//! Azure OpenAI: Chat Completions served by an Azure resource, through the `openai`
//! folder's wire format, with Azure's addresses (the v1 API and the older deployment
//! URLs with `api-version`), its `api-key` header or an Entra ID bearer token, and its
//! content filter answered as a refusal.

use super::batch::BatchProvider;
use super::http::{
    Holds, ProviderConfigError, checked_variable, set_variable, transport_settings,
    warn_unknown_variables,
};
use super::openai::batch_for_endpoint;
use super::openai::endpoint::{ChatAddress, ChatEndpoint, KeyHeader};
use super::{
    Provider, ProviderError, ProviderErrorKind, ProviderReply, ProviderRequest, ReplyStream,
};
use crate::media::MediaLimits;

/// The name Azure OpenAI goes by in errors, logs and telemetry (`gen_ai.provider.name`,
/// as the OpenTelemetry conventions name it).
pub const AZURE_OPENAI_PROVIDER_NAME: &str = "azure.ai.openai";

/// The `api-version` sent to deployment URLs when none is given: the GA inference
/// version that has strict structured outputs.
pub const AZURE_OPENAI_DEFAULT_API_VERSION: &str = "2024-10-21";

/// The variables whose value is checked when read: the endpoint a URL, the key and the
/// token each one run of characters.
const AZURE_CHECKED: [(&str, Holds); 3] = [
    ("AZURE_OPENAI_ENDPOINT", Holds::Url),
    ("AZURE_OPENAI_API_KEY", Holds::Key),
    ("AZURE_OPENAI_AD_TOKEN", Holds::Key),
];

/// How requests reach the resource.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Addressing {
    /// `{endpoint}/openai/v1/chat/completions`, the deployment named by `model`.
    V1,
    /// `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...`.
    Deployment { api_version: String },
}

/// Azure OpenAI's Chat Completions.
///
/// - [`AzureOpenAi::new`] speaks the v1 API (`{endpoint}/openai/v1/chat/completions`,
///   the deployment named in the body's `model`), which needs no `api-version` and has
///   the Batch API.
/// - [`AzureOpenAi::with_api_version`] switches to the older deployment URLs
///   (`{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...`).
///
/// The key goes in the `api-key` header; [`AzureOpenAi::with_entra_token`] sends a
/// Microsoft Entra ID token as `Authorization: Bearer` instead. Never both.
///
/// A completion withheld by the content filter (`finish_reason: content_filter` with the
/// filtered categories), and a prompt the filter blocked (HTTP 400 with `code:
/// content_filter`), are answered as refusals naming the categories: the same input would
/// be filtered again, so they are neither retried as transient failures nor read as
/// malformed replies. The key is never printed.
///
/// ```
/// use intent_rs::provider::AzureOpenAi;
///
/// let azure = AzureOpenAi::new("https://myres.openai.azure.com", "key", "gpt-4o-mini-prod");
/// assert_eq!(azure.base_url(), "https://myres.openai.azure.com");
/// ```
#[derive(Clone, Debug)]
pub struct AzureOpenAi {
    endpoint: ChatEndpoint,
    /// The resource's endpoint (`https://{resource}.openai.azure.com`), without a path.
    resource: String,
    addressing: Addressing,
    key_header: KeyHeader,
}

impl AzureOpenAi {
    /// The v1 API of the resource at `endpoint` (`https://{resource}.openai.azure.com`, or
    /// a Foundry `https://{resource}.services.ai.azure.com`), authenticated with
    /// `api_key`, asking `deployment` when a request names no model.
    pub fn new(
        endpoint: impl Into<String>,
        api_key: impl Into<String>,
        deployment: impl Into<String>,
    ) -> Self {
        let mut provider = Self {
            endpoint: ChatEndpoint::new(
                AZURE_OPENAI_PROVIDER_NAME,
                "",
                deployment.into(),
                Some(api_key.into()),
                MediaLimits::OPENAI,
            ),
            resource: String::new(),
            addressing: Addressing::V1,
            key_header: KeyHeader::ApiKey,
        };
        provider.set_resource(endpoint.into());
        provider
    }

    /// Reads `AZURE_OPENAI_ENDPOINT` and `AZURE_OPENAI_DEPLOYMENT` (required), the key
    /// from `AZURE_OPENAI_API_KEY` or else an Entra ID token from `AZURE_OPENAI_AD_TOKEN`
    /// (one is required), and `AZURE_OPENAI_API_VERSION` (or `OPENAI_API_VERSION`, as
    /// OpenAI's SDKs read it), which when set switches to the deployment URLs.
    pub fn from_env() -> Result<Self, ProviderConfigError> {
        warn_unknown_variables(&["AZURE_OPENAI_"]);
        Self::from_lookup(&|name| std::env::var(name).ok())
    }

    /// [`Self::from_env`] reading the same variables from `lookup` instead of the
    /// process environment: a map in a test, a secrets store, a file. The values are
    /// checked as `from_env` checks them; unknown variables are not looked for (a lookup
    /// cannot list its names). See [`crate::provider::from_lookup`] for an example.
    pub fn from_lookup(
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ProviderConfigError> {
        let set = |name: &str| set_variable(lookup, name);
        for (name, holds) in AZURE_CHECKED {
            checked_variable(lookup, name, holds)?;
        }
        let endpoint = set("AZURE_OPENAI_ENDPOINT").ok_or(ProviderConfigError::MissingBaseUrl {
            variable: "AZURE_OPENAI_ENDPOINT",
            example: "your Azure OpenAI resource's endpoint, such as \
                      https://my-resource.openai.azure.com",
        })?;
        let deployment =
            set("AZURE_OPENAI_DEPLOYMENT").ok_or(ProviderConfigError::MissingSetting {
                variable: "AZURE_OPENAI_DEPLOYMENT",
                what: "the name of the Azure OpenAI deployment to call, such as gpt-4o-mini-prod",
            })?;
        let mut provider = match (set("AZURE_OPENAI_API_KEY"), set("AZURE_OPENAI_AD_TOKEN")) {
            (Some(key), _) => Self::new(endpoint, key, deployment),
            (None, Some(token)) => Self::new(endpoint, "", deployment).with_entra_token(token),
            (None, None) => {
                return Err(ProviderConfigError::MissingApiKey {
                    variable: "AZURE_OPENAI_API_KEY",
                    provider: "Azure OpenAI (or an Entra ID token in AZURE_OPENAI_AD_TOKEN)",
                });
            }
        };
        let version = [("AZURE_OPENAI_API_VERSION"), ("OPENAI_API_VERSION")]
            .into_iter()
            .find_map(|variable| set(variable).map(|version| (variable, version)));
        if let Some((variable, version)) = version {
            // Refused here, naming the variable, rather than at the first request.
            if let Some(problem) = api_version_problem(&version) {
                return Err(ProviderConfigError::InvalidSetting {
                    variable,
                    value: version.chars().take(100).collect(),
                    problem: problem.to_owned(),
                    expected: "an Azure OpenAI API version, such as 2024-10-21",
                });
            }
            if !is_deployment_name(provider.deployment()) {
                return Err(ProviderConfigError::InvalidSetting {
                    variable: "AZURE_OPENAI_DEPLOYMENT",
                    value: provider.deployment().chars().take(100).collect(),
                    problem: "cannot go in a deployment URL".to_owned(),
                    expected: "the name of an Azure OpenAI deployment (letters, digits, `-`, \
                               `_`, `.`)",
                });
            }
            provider = provider.with_api_version(version);
        }
        Ok(provider)
    }

    /// Sends to the deployment URLs with this `api-version` (such as
    /// [`AZURE_OPENAI_DEFAULT_API_VERSION`]) instead of the v1 API. The deployment is the
    /// request's model, else the default one; strict structured outputs need
    /// `2024-08-01-preview` or later. The Batch API is used through the v1 API only.
    ///
    /// A version that is empty or would change the URL's query (anything but letters,
    /// digits, `-`, `.` and `_`, such as `2024-10-21&x=y` or `2024-10-21#x`) is never sent:
    /// every request is refused before sending, saying why (`from_env` refuses it when
    /// reading the variable).
    pub fn with_api_version(mut self, api_version: impl Into<String>) -> Self {
        self.addressing = Addressing::Deployment {
            api_version: api_version.into(),
        };
        self.readdress();
        self
    }

    /// Authenticates with a Microsoft Entra ID access token (scope
    /// `https://cognitiveservices.azure.com/.default`) sent as `Authorization: Bearer`,
    /// instead of the key.
    pub fn with_entra_token(mut self, token: impl Into<String>) -> Self {
        self.endpoint.connection.set_api_key(token.into());
        self.key_header = KeyHeader::Bearer;
        self.readdress();
        self
    }

    /// Sends requests to another resource endpoint (or a test server), without a path.
    pub fn with_base_url(mut self, endpoint: impl Into<String>) -> Self {
        self.set_resource(endpoint.into());
        self
    }

    /// Asks this deployment when a request names none.
    pub fn with_deployment(mut self, deployment: impl Into<String>) -> Self {
        self.endpoint.connection.model = deployment.into();
        self.readdress();
        self
    }

    /// What the deployment takes of images and PDFs (default [`MediaLimits::OPENAI`]); a
    /// request over a limit is refused before it is sent.
    pub fn with_media_limits(mut self, limits: MediaLimits) -> Self {
        self.endpoint.connection.media_limits = limits;
        self
    }

    transport_settings!(endpoint.connection.transport);

    /// The resource endpoint requests go to.
    pub fn base_url(&self) -> &str {
        &self.resource
    }

    /// The deployment asked when a request names none.
    pub fn deployment(&self) -> &str {
        &self.endpoint.connection.model
    }

    /// The `api-version` of the deployment URLs, or `None` on the v1 API.
    pub fn api_version(&self) -> Option<&str> {
        match &self.addressing {
            Addressing::V1 => None,
            Addressing::Deployment { api_version } => Some(api_version),
        }
    }

    fn set_resource(&mut self, endpoint: String) {
        self.resource = super::http::trim_base_url(endpoint);
        self.readdress();
    }

    /// Points the endpoint at the address the settings name.
    fn readdress(&mut self) {
        let (base, path) = match &self.addressing {
            Addressing::V1 => (
                format!("{}/openai/v1", self.resource),
                "/chat/completions".to_owned(),
            ),
            Addressing::Deployment { api_version } => (
                format!(
                    "{}/openai/deployments/{}",
                    self.resource, self.endpoint.connection.model
                ),
                format!("/chat/completions?api-version={api_version}"),
            ),
        };
        self.endpoint.connection.set_base_url(base);
        self.endpoint.set_address(ChatAddress {
            path,
            key_header: self.key_header,
            batch_line_url: "/chat/completions",
        });
    }

    /// The endpoint a request is sent to: on deployment URLs, a request naming another
    /// deployment goes to that deployment's URL. A deployment name that could change the
    /// URL's meaning (a `/`, `?`, `#`, `..`) is refused before anything is sent.
    fn endpoint_for(
        &self,
        request: &ProviderRequest,
    ) -> Result<std::borrow::Cow<'_, ChatEndpoint>, ProviderError> {
        let Addressing::Deployment { api_version } = &self.addressing else {
            return Ok(std::borrow::Cow::Borrowed(&self.endpoint));
        };
        if let Some(problem) = api_version_problem(api_version) {
            return Err(ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                AZURE_OPENAI_PROVIDER_NAME,
                format!(
                    "the api-version `{}` {problem}; give `with_api_version` an Azure OpenAI \
                     API version, such as {AZURE_OPENAI_DEFAULT_API_VERSION}",
                    api_version.chars().take(100).collect::<String>()
                ),
            )
            .not_sent());
        }
        let deployment = self.endpoint.connection.model_of(request);
        if !is_deployment_name(deployment) {
            return Err(ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                AZURE_OPENAI_PROVIDER_NAME,
                format!(
                    "the deployment name `{}` cannot go in a deployment URL; use the name \
                     of an Azure OpenAI deployment (letters, digits, `-`, `_`, `.`)",
                    deployment.chars().take(100).collect::<String>()
                ),
            )
            .not_sent());
        }
        Ok(if deployment == self.endpoint.connection.model {
            std::borrow::Cow::Borrowed(&self.endpoint)
        } else {
            std::borrow::Cow::Owned(self.clone().with_deployment(deployment).endpoint)
        })
    }
}

/// Whether `deployment` can go in a deployment URL's path unchanged.
fn is_deployment_name(deployment: &str) -> bool {
    !deployment.is_empty()
        && deployment != ".."
        && deployment
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// What keeps `api_version` from being sent as the `api-version` query parameter, if
/// anything: empty, Azure answers "Resource not found"; a `&`, `#`, space or other
/// character would add a parameter, cut the URL or be sent altered.
fn api_version_problem(api_version: &str) -> Option<&'static str> {
    if api_version.trim().is_empty() {
        return Some("is empty");
    }
    let plain = api_version
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    (!plain).then_some(
        "would change the URL's query (an API version holds only letters, digits, `-`, `.` \
         and `_`)",
    )
}

#[async_trait::async_trait]
impl Provider for AzureOpenAi {
    fn name(&self) -> &str {
        AZURE_OPENAI_PROVIDER_NAME
    }

    fn default_model(&self) -> &str {
        self.deployment()
    }

    fn server_url(&self) -> Option<&str> {
        Some(&self.resource)
    }

    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        self.endpoint_for(request)?.complete(request).await
    }

    /// Streams with `"stream": true` and `stream_options.include_usage`; chunks that carry
    /// only the content filter's results (no choices) are read past.
    async fn stream(&self, request: &ProviderRequest) -> Result<ReplyStream, ProviderError> {
        self.endpoint_for(request)?.stream(request).await
    }

    /// `true` for a strict-schema request, as on OpenAI.
    fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        self.endpoint.enforces_schema(request)
    }

    /// 20, as Chat Completions on OpenAI.
    fn max_top_logprobs(&self) -> Option<u8> {
        self.endpoint.max_top_logprobs()
    }

    /// The Batch API of the v1 API (`/openai/v1/files`, `/openai/v1/batches`), which needs
    /// a Global Batch or Data Zone Batch deployment; `None` on deployment URLs.
    fn batch(&self) -> Option<BatchProvider> {
        match self.addressing {
            Addressing::V1 => Some(BatchProvider::azure_openai(self.clone())),
            Addressing::Deployment { .. } => None,
        }
    }
}

impl BatchProvider {
    /// Azure OpenAI's Batch API through the v1 API, with this provider's key, resource
    /// and deployment (a Global Batch or Data Zone Batch deployment).
    pub fn azure_openai(provider: AzureOpenAi) -> Self {
        batch_for_endpoint(provider.endpoint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::http::variables::tests::lookup;

    const ENDPOINT: (&str, &str) = ("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com");
    const DEPLOYMENT: (&str, &str) = ("AZURE_OPENAI_DEPLOYMENT", "prod-4o");
    const KEY: (&str, &str) = ("AZURE_OPENAI_API_KEY", "az-key");

    #[test]
    fn a_missing_endpoint_is_explained_with_an_azure_example() {
        let err = AzureOpenAi::from_lookup(&lookup(&[DEPLOYMENT, KEY])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the environment variable AZURE_OPENAI_ENDPOINT is not set; set it to your Azure \
             OpenAI resource's endpoint, such as https://my-resource.openai.azure.com"
        );
        let err = AzureOpenAi::from_lookup(&lookup(&[ENDPOINT, KEY])).unwrap_err();
        assert!(
            err.to_string().contains("such as gpt-4o-mini-prod"),
            "{err}"
        );
    }

    #[test]
    fn an_api_version_that_would_change_the_url_is_refused_naming_its_variable() {
        for (variable, version) in [
            ("AZURE_OPENAI_API_VERSION", "2024-10-21&foo=bar"),
            ("AZURE_OPENAI_API_VERSION", "2024-10-21#x"),
            ("OPENAI_API_VERSION", "2024-10-21 preview"),
            ("OPENAI_API_VERSION", "2024/10/21"),
        ] {
            let err = AzureOpenAi::from_lookup(&lookup(&[
                ENDPOINT,
                DEPLOYMENT,
                KEY,
                (variable, version),
            ]))
            .unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "the environment variable {variable} is `{version}`, which would change \
                     the URL's query (an API version holds only letters, digits, `-`, `.` and \
                     `_`); set it to an Azure OpenAI API version, such as 2024-10-21"
                )
            );
        }
        // A deployment that cannot go in the URL is refused when the URL would hold it.
        let err = AzureOpenAi::from_lookup(&lookup(&[
            ENDPOINT,
            KEY,
            ("AZURE_OPENAI_DEPLOYMENT", "prod/../other"),
            ("AZURE_OPENAI_API_VERSION", "2024-10-21"),
        ]))
        .unwrap_err();
        assert!(err.to_string().contains("AZURE_OPENAI_DEPLOYMENT"), "{err}");
        for version in ["2024-10-21", "2025-04-01-preview", "preview"] {
            let azure = AzureOpenAi::from_lookup(&lookup(&[
                ENDPOINT,
                DEPLOYMENT,
                KEY,
                ("AZURE_OPENAI_API_VERSION", version),
            ]))
            .unwrap();
            assert_eq!(azure.api_version(), Some(version));
        }
    }

    #[test]
    fn api_versions_are_told_apart() {
        assert_eq!(api_version_problem(""), Some("is empty"));
        assert_eq!(api_version_problem("  "), Some("is empty"));
        for bad in [
            "2024-10-21&foo=bar",
            "2024-10-21#x",
            "2024-10-21?x",
            "a=b",
            "é",
            "x%26",
        ] {
            assert!(api_version_problem(bad).is_some(), "{bad}");
        }
        for good in ["2024-10-21", "2024-08-01-preview", "v1", "latest"] {
            assert_eq!(api_version_problem(good), None, "{good}");
        }
    }
}
