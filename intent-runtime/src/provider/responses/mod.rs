//! OpenAI's Responses API (`POST /v1/responses`) as a [`Provider`]: the system prompt as
//! `instructions`, the turns as `input` messages, the strict schema in `text.format`,
//! refusals, incomplete replies, usage with cached and reasoning tokens, streamed events,
//! log-probabilities for decision questions, and the Batch API for `/v1/responses`.
//!
//! `store` is `false` unless [`OpenAiResponses::with_store`] says otherwise: the library
//! keeps its own record of every call, and a stored response would be a second copy of
//! the prompt at OpenAI.

mod batch;
mod reply;
mod request;
mod stream;

use std::fmt;

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::value::RawValue;

use self::reply::REQUEST_ID_HEADER;
use self::request::ResponsesBody;
use self::stream::ResponsesStream;
use super::http::{
    self, Connection, ProviderConfigError, RawResponse, Route, WireApi, transport_settings,
};
use super::openai::reply::classify;
use super::openai::{OPENAI_DEFAULT_BASE_URL, OPENAI_DEFAULT_MODEL, OPENAI_VARIABLES};
use super::{Provider, ProviderError, ProviderReply, ProviderRequest, ReplyStream, ResponseFormat};
use crate::media::MediaLimits;

/// The name the provider reports (in errors, logs, records and batch jobs).
pub const OPENAI_RESPONSES_PROVIDER_NAME: &str = "openai-responses";

/// The most alternatives per token the Responses API reports (`top_logprobs` 0..20).
const MAX_TOP_LOGPROBS: u8 = 20;

/// The Responses API as the send path sees it: HTTP errors are classified as Chat
/// Completions' are (the same error bodies; a 400 naming the schema is a rejected schema).
pub(crate) const RESPONSES: WireApi = WireApi {
    call: "response",
    request_id_header: REQUEST_ID_HEADER,
    classify,
};

impl MediaLimits {
    /// OpenAI's Responses API: as [`MediaLimits::OPENAI`], and PDFs may also be given by
    /// URL (`input_file.file_url`, which the server downloads).
    pub const OPENAI_RESPONSES: MediaLimits = MediaLimits {
        document_urls: true,
        ..MediaLimits::OPENAI
    };
}

/// OpenAI's Responses API (`POST {base}/responses`).
///
/// Sends the system prompt as `instructions`, the conversation as `input` messages, a
/// strict schema as `text.format` (`{"type": "json_schema", "name", "schema", "strict":
/// true}`), `max_output_tokens` (at least 16, the API's minimum) and `store: false`. A
/// reply's `message` items are the text; reasoning items are skipped; an `incomplete`
/// response is a truncated reply, a `failed` one a classified error.
///
/// ```
/// use intent_rs::provider::{OpenAiResponses, Provider};
///
/// let provider = OpenAiResponses::new("sk-...").with_model("gpt-4.1-mini");
/// assert_eq!(provider.default_model(), "gpt-4.1-mini");
/// assert!(!provider.store());
/// ```
///
/// The API key is never printed: not by `Debug`, not in errors, not in logs.
#[derive(Clone)]
pub struct OpenAiResponses {
    connection: Connection,
    store: bool,
}

impl OpenAiResponses {
    /// A provider for OpenAI's Responses API with this key, the default base URL
    /// ([`OPENAI_DEFAULT_BASE_URL`]) and model ([`OPENAI_DEFAULT_MODEL`]).
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            connection: Connection::new(
                OPENAI_RESPONSES_PROVIDER_NAME,
                OPENAI_DEFAULT_BASE_URL,
                OPENAI_DEFAULT_MODEL,
                Some(api_key.into()),
                MediaLimits::OPENAI_RESPONSES,
            ),
            store: false,
        }
    }

    /// Reads `OPENAI_API_KEY` (required), `OPENAI_BASE_URL` and `OPENAI_MODEL` (optional),
    /// as [`OpenAi::from_env`](crate::provider::OpenAi::from_env) does.
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

    /// Sends requests to another API root (a proxy, a gateway, a test server); requests go
    /// to `{base_url}/responses`.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.connection.set_base_url(base_url);
        self
    }

    /// Uses this model when a request names none.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.connection.model = model.into();
        self
    }

    /// Whether OpenAI may keep the responses for later retrieval (`store`; default
    /// `false`: the library keeps its own record, and sends `store: false` on every
    /// request, since the API keeps responses unless told not to).
    pub fn with_store(mut self, store: bool) -> Self {
        self.store = store;
        self
    }

    /// What the API takes of images and PDFs (default [`MediaLimits::OPENAI_RESPONSES`]);
    /// a request over a limit is refused before it is sent.
    pub fn with_media_limits(mut self, limits: MediaLimits) -> Self {
        self.connection.media_limits = limits;
        self
    }

    transport_settings!(connection.transport);

    /// The API root requests go to.
    pub fn base_url(&self) -> &str {
        self.connection.base_url()
    }

    /// Whether requests ask OpenAI to keep the responses ([`Self::with_store`]).
    pub fn store(&self) -> bool {
        self.store
    }

    /// The endpoint's URL and `authorization` header, built on the first call.
    fn route(&self) -> Result<&Route, ProviderError> {
        self.connection.route(|connection| {
            let mut headers = Vec::with_capacity(1);
            if let Some(key) = connection.secret() {
                headers.push(Route::secret_header(
                    &connection.provider,
                    "authorization",
                    &format!("Bearer {key}"),
                )?);
            }
            let url = format!("{}/responses", connection.base_url());
            Route::new(&connection.provider, &url, headers)
        })
    }

    /// The connection (API root, key, transport) batch jobs share with live calls.
    pub(crate) fn connection(&self) -> &Connection {
        &self.connection
    }

    /// The `authorization` header, marked sensitive (for the Batch API's calls).
    pub(crate) fn auth_headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>, ProviderError> {
        Ok(self.route()?.headers().to_vec())
    }

    /// The body of `request`, as a live call sends it and as a batch line carries it;
    /// `schema` is `http::schema_json` of the request's schema. A request whose media the
    /// API does not take is refused here, before anything is sent.
    pub(crate) fn body<'a>(
        &'a self,
        request: &'a ProviderRequest,
        schema: Option<&'a RawValue>,
        stream: bool,
    ) -> Result<ResponsesBody<'a>, ProviderError> {
        self.connection.check_media(request)?;
        Ok(ResponsesBody {
            request,
            model: self.connection.model_of(request),
            schema,
            store: self.store,
            max_top_logprobs: MAX_TOP_LOGPROBS,
            stream,
        })
    }

    /// The classified error of a reply with an error status (a live call's, or a batch
    /// line's): the same classes as Chat Completions' errors.
    pub(crate) fn error_reply(&self, raw: &RawResponse) -> ProviderError {
        self.connection.error_reply(raw, &RESPONSES)
    }

    /// Reads a success reply (a live call's, or a batch line's body).
    pub(crate) fn parse_reply(
        &self,
        raw: &RawResponse,
        requested_model: &str,
    ) -> Result<ProviderReply, ProviderError> {
        reply::parse_reply(
            &self.connection.provider,
            raw,
            requested_model,
            self.connection.secret(),
        )
    }
}

impl fmt::Debug for OpenAiResponses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiResponses")
            .field("connection", &self.connection)
            .field("store", &self.store)
            .finish()
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiResponses {
    fn name(&self) -> &str {
        &self.connection.provider
    }

    fn default_model(&self) -> &str {
        &self.connection.model
    }

    fn server_url(&self) -> Option<&str> {
        Some(self.connection.base_url())
    }

    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        let model = self.connection.model_of(request);
        let route = self.route()?;
        let schema = request.schema.as_ref().map(http::schema_json);
        let body = self.body(request, schema.as_deref(), false)?;
        let raw = self
            .connection
            .post(route, &body, body.size_hint(), &RESPONSES, model)
            .await?;
        self.parse_reply(&raw, model)
    }

    /// Streams with `"stream": true`: the text arrives in `response.output_text.delta`
    /// events, usage in the terminal event.
    async fn stream(&self, request: &ProviderRequest) -> Result<ReplyStream, ProviderError> {
        let model = self.connection.model_of(request);
        let route = self.route()?;
        let schema = request.schema.as_ref().map(http::schema_json);
        let body = self.body(request, schema.as_deref(), true)?;
        let connection = &self.connection;
        connection
            .post_streaming(
                route,
                &body,
                body.size_hint(),
                &RESPONSES,
                model,
                |request_id| {
                    ResponsesStream::new(
                        &connection.provider,
                        model,
                        request_id,
                        connection.secret(),
                    )
                },
            )
            .await
    }

    /// `true` for a strict-schema request with a schema: OpenAI shows the schema in
    /// `text.format` to the model and holds the reply to it.
    fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        request.response_format == ResponseFormat::JsonSchema && request.schema.is_some()
    }

    /// 20: the Responses API reports up to 20 alternatives per token (reasoning models
    /// refuse log-probabilities; their refusal comes back as an invalid request).
    fn max_top_logprobs(&self) -> Option<u8> {
        Some(MAX_TOP_LOGPROBS)
    }

    /// OpenAI's Batch API for `/v1/responses`, with this provider's key, base URL, model
    /// and `store` setting.
    fn batch(&self) -> Option<crate::provider::batch::BatchProvider> {
        Some(crate::provider::batch::BatchProvider::openai_responses(
            self.clone(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn from_env_reads_the_openai_variables() {
        let err = OpenAiResponses::from_lookup(&lookup(&[("OPENAI_API_KEY", " ")])).unwrap_err();
        assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
        let provider = OpenAiResponses::from_lookup(&lookup(&[
            ("OPENAI_API_KEY", "sk-test"),
            ("OPENAI_BASE_URL", "http://localhost:9/v1/"),
            ("OPENAI_MODEL", "gpt-test"),
        ]))
        .unwrap();
        assert_eq!(provider.base_url(), "http://localhost:9/v1");
        assert_eq!(provider.default_model(), "gpt-test");
        assert_eq!(provider.name(), "openai-responses");
        let defaults =
            OpenAiResponses::from_lookup(&lookup(&[("OPENAI_API_KEY", "sk-test")])).unwrap();
        assert_eq!(defaults.base_url(), OPENAI_DEFAULT_BASE_URL);
        assert_eq!(defaults.default_model(), OPENAI_DEFAULT_MODEL);
        assert!(!defaults.store());
        assert!(defaults.with_store(true).store());
    }

    #[test]
    fn only_a_strict_schema_request_with_a_schema_is_enforced() {
        let provider = OpenAiResponses::new("sk-test");
        let mut request = ProviderRequest::text("", "");
        assert!(!provider.enforces_schema(&request));
        request.response_format = ResponseFormat::JsonObject;
        assert!(!provider.enforces_schema(&request));
        request.response_format = ResponseFormat::JsonSchema;
        assert!(!provider.enforces_schema(&request));
        request.schema = Some(Arc::new(serde_json::json!({"type": "object"})));
        assert!(provider.enforces_schema(&request));
        assert_eq!(provider.max_top_logprobs(), Some(20));
        assert!(provider.batch().is_some());
    }

    #[test]
    fn debug_never_shows_the_key() {
        let provider = OpenAiResponses::new("sk-very-secret-1234");
        let printed = format!("{provider:?} {provider:#?}");
        assert!(!printed.contains("sk-very-secret-1234"), "{printed}");
        assert!(printed.contains("[redacted]"));
    }

    #[test]
    fn store_is_sent_as_configured() {
        let request = ProviderRequest::text("", "hi");
        for store in [false, true] {
            let provider = OpenAiResponses::new("sk").with_store(store);
            let body = provider.body(&request, None, false).unwrap();
            let value = serde_json::to_value(&body).unwrap();
            assert_eq!(value["store"], serde_json::json!(store));
        }
    }
}
