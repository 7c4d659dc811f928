//! Anthropic's Messages API as a [`Provider`]: top-level `system`, `max_tokens` always sent,
//! `output_config.format` for schemas Anthropic accepts, refusals, truncation and classified
//! errors.

mod batch;
mod cache_breakpoints;
mod reply;
mod request;
mod schema;
mod stream;

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::value::RawValue;

use self::cache_breakpoints::minimum_cacheable_tokens;
use self::reply::{REQUEST_ID_HEADER, classify, parse_reply};
use self::request::{MessagesBody, request_body};
pub use self::schema::anthropic_accepts_schema;
use self::schema::{output_schema, schema_verdict};
use self::stream::MessagesStream;
use super::http::{
    Connection, HttpTransport, ProviderConfigError, ProviderVariables, RawResponse, Route, WireApi,
    transport_settings,
};
use super::{Provider, ProviderError, ProviderReply, ProviderRequest, ReplyStream};
use crate::media::MediaLimits;

/// Anthropic's API root (the path `/v1/messages` is appended).
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The model used when neither the request nor `ANTHROPIC_MODEL` names one.
pub const ANTHROPIC_DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// The output-token limit sent when a request sets none (Anthropic requires one).
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 4096;

/// The API version this provider speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Messages as the send path sees it.
const MESSAGES: WireApi = WireApi {
    call: "message request",
    request_id_header: REQUEST_ID_HEADER,
    classify,
};

/// The variables Anthropic's provider reads.
const ANTHROPIC_VARIABLES: ProviderVariables = ProviderVariables {
    provider: "Anthropic",
    key: "ANTHROPIC_API_KEY",
    base_url: "ANTHROPIC_BASE_URL",
    model: "ANTHROPIC_MODEL",
};

/// Anthropic Messages (`POST {base}/v1/messages`).
///
/// The API key is never printed: not by `Debug`, not in errors, not in logs.
#[derive(Clone, Debug)]
pub struct Anthropic {
    connection: Connection,
    max_tokens: u32,
    prompt_cache: bool,
}

impl Anthropic {
    /// A provider for Anthropic's API with this key, the default base URL and model.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            connection: Connection::new(
                "anthropic",
                ANTHROPIC_DEFAULT_BASE_URL,
                ANTHROPIC_DEFAULT_MODEL,
                Some(api_key.into()),
                MediaLimits::ANTHROPIC,
            ),
            max_tokens: ANTHROPIC_DEFAULT_MAX_TOKENS,
            prompt_cache: true,
        }
    }

    /// Reads `ANTHROPIC_API_KEY` (required), `ANTHROPIC_BASE_URL` and `ANTHROPIC_MODEL`
    /// (optional).
    pub fn from_env() -> Result<Self, ProviderConfigError> {
        super::http::warn_unknown_variables(&["ANTHROPIC_"]);
        Self::from_lookup(&|name| std::env::var(name).ok())
    }

    /// [`Self::from_env`] reading the same variables from `lookup` instead of the
    /// process environment: a map in a test, a secrets store, a file. The values are
    /// checked as `from_env` checks them; unknown variables are not looked for (a lookup
    /// cannot list its names). See [`crate::provider::from_lookup`] for an example.
    pub fn from_lookup(
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ProviderConfigError> {
        let settings = ANTHROPIC_VARIABLES.read(lookup)?;
        let mut provider = Self::new(settings.key);
        if let Some(base_url) = settings.base_url {
            provider = provider.with_base_url(base_url);
        }
        if let Some(model) = settings.model {
            provider = provider.with_model(model);
        }
        Ok(provider)
    }

    /// Sends requests to another API root (without `/v1`).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.connection.set_base_url(base_url);
        self
    }

    /// Uses this model when a request names none.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.connection.model = model.into();
        self
    }

    /// The `max_tokens` sent when a request sets no limit (default 4096).
    pub fn with_default_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Whether requests mark their stable prefixes with `cache_control` breakpoints
    /// (default `true`): the system prompt, the first turn and, on a retry, the last turn,
    /// each when it may reach the model's minimum cacheable length.
    ///
    /// Anthropic bills a cache write at 1.25 times the input price and a cache read at a
    /// tenth of it, so the marks pay for themselves when a prefix is sent again within the
    /// cache's lifetime (five minutes): by a retry, or by another call of the same method
    /// with the same system prompt. Turn them off for one-off calls that never repeat.
    pub fn with_prompt_cache(mut self, enabled: bool) -> Self {
        self.prompt_cache = enabled;
        self
    }

    /// What the API takes of images and PDFs (default [`MediaLimits::ANTHROPIC`]); a
    /// request over a limit is refused before it is sent.
    pub fn with_media_limits(mut self, limits: MediaLimits) -> Self {
        self.connection.media_limits = limits;
        self
    }

    transport_settings!(connection.transport);

    /// The API root requests go to.
    pub fn base_url(&self) -> &str {
        self.connection.base_url()
    }

    /// The Messages URL and the key and version headers, built on the first call.
    fn route(&self) -> Result<&Route, ProviderError> {
        self.connection.route(|connection| {
            let headers = vec![
                Route::secret_header(
                    &connection.provider,
                    "x-api-key",
                    connection.secret().unwrap_or_default(),
                )?,
                (
                    HeaderName::from_static("anthropic-version"),
                    HeaderValue::from_static(ANTHROPIC_VERSION),
                ),
            ];
            let url = format!("{}/v1/messages", connection.base_url());
            Route::new(&connection.provider, &url, headers)
        })
    }

    /// The model `request` goes to: its own, else the provider's default.
    pub(crate) fn model_of<'a>(&'a self, request: &'a ProviderRequest) -> &'a str {
        self.connection.model_of(request)
    }

    /// The body of one request (the same for a streamed one, but for its flag); a
    /// request whose media break [`MediaLimits`] is refused here, before anything is sent.
    pub(crate) fn body<'a>(
        &self,
        request: &'a ProviderRequest,
        model: &'a str,
        schema: Option<&'a RawValue>,
    ) -> Result<MessagesBody<'a>, ProviderError> {
        self.connection.check_media(request)?;
        let cache_minimum = self.prompt_cache.then(|| minimum_cacheable_tokens(model));
        Ok(request_body(
            request,
            model,
            self.max_tokens,
            schema,
            cache_minimum,
        ))
    }

    /// The key and version headers (the key marked sensitive).
    pub(crate) fn auth_headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>, ProviderError> {
        Ok(self.route()?.headers().to_vec())
    }

    /// The key, for redacting it from anything a server echoes back.
    pub(crate) fn secret(&self) -> Option<&str> {
        self.connection.secret()
    }

    /// The HTTP transport (client, timeouts, response limit) live calls use.
    pub(crate) fn transport(&self) -> &HttpTransport {
        &self.connection.transport
    }

    /// The classified error of a reply with an error status.
    pub(crate) fn error_reply(&self, raw: &RawResponse) -> ProviderError {
        self.connection.error_reply(raw, &MESSAGES)
    }
}

#[async_trait::async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        &self.connection.provider
    }

    fn default_model(&self) -> &str {
        &self.connection.model
    }

    fn server_url(&self) -> Option<&str> {
        Some(Anthropic::base_url(self))
    }

    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        let model = self.model_of(request);
        let route = self.route()?;
        let schema = output_schema(request);
        let body = self.body(request, model, schema.as_deref())?;
        let raw = self
            .connection
            .post(route, &body, body.size_hint(), &MESSAGES, model)
            .await?;
        parse_reply(&raw, model, self.secret())
    }

    /// Sends the request with `"stream": true` and reads its events as they arrive.
    async fn stream(&self, request: &ProviderRequest) -> Result<ReplyStream, ProviderError> {
        let model = self.model_of(request);
        let route = self.route()?;
        let schema = output_schema(request);
        let mut body = self.body(request, model, schema.as_deref())?;
        body.stream = true;
        let secret = self.secret();
        self.connection
            .post_streaming(
                route,
                &body,
                body.size_hint(),
                &MESSAGES,
                model,
                |request_id| MessagesStream::new(model, request_id, secret),
            )
            .await
    }

    /// `true` when the request's schema goes out as `output_config.format`: a strict
    /// schema that [`anthropic_accepts_schema`] accepts. A refused schema is not sent, so
    /// the prompt's full contract is all the model has.
    fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        matches!(schema_verdict(request), Some(Ok(_)))
    }

    /// Anthropic's Message Batches, with this provider's key, base URL and model.
    fn batch(&self) -> Option<crate::provider::batch::BatchProvider> {
        Some(crate::provider::batch::BatchProvider::anthropic(
            self.clone(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use reqwest::StatusCode;
    use serde_json::{Value, json};

    use super::*;
    use crate::provider::http::ErrorBody;
    use crate::provider::{ProviderErrorKind, ResponseFormat};

    fn strict_object() -> Value {
        json!({
            "type": "object",
            "properties": {
                "value": {"type": "array", "items": {"$ref": "#/$defs/Line"}, "minItems": 1}
            },
            "required": ["value"],
            "additionalProperties": false,
            "$defs": {"Line": {
                "type": "object",
                "properties": {"minimum": {"type": "integer"}},
                "required": ["minimum"],
                "additionalProperties": false
            }}
        })
    }

    #[test]
    fn a_strict_schema_is_accepted() {
        assert_eq!(anthropic_accepts_schema(&strict_object()), Ok(()));
    }

    #[test]
    fn recursion_is_rejected() {
        let schema = json!({
            "$ref": "#/$defs/Node",
            "$defs": {"Node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
            }, "additionalProperties": false}}
        });
        let reason = anthropic_accepts_schema(&schema).unwrap_err();
        assert!(
            reason.starts_with("recursive `$ref` \"#/$defs/Node\""),
            "{reason}"
        );
        let root = json!({"type": "object", "properties": {"next": {"$ref": "#"}}});
        assert!(
            anthropic_accepts_schema(&root)
                .unwrap_err()
                .starts_with("recursive")
        );
    }

    #[test]
    fn shared_definitions_are_not_recursion() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/X"}, "b": {"$ref": "#/$defs/X"}},
            "$defs": {"X": {"type": "string"}}
        });
        assert_eq!(anthropic_accepts_schema(&schema), Ok(()));
    }

    #[test]
    fn constraints_and_open_objects_are_rejected() {
        let cases = [
            (json!({"type": "integer", "minimum": 0}), "`minimum` at #"),
            (
                json!({"type": "object", "properties": {"s": {"type": "string", "maxLength": 3}}}),
                "`maxLength` at #/properties/s",
            ),
            (
                json!({"type": "array", "minItems": 2}),
                "`minItems: 2` at #",
            ),
            (
                json!({"type": "object", "additionalProperties": true}),
                "`additionalProperties` other than false at #",
            ),
            (
                json!({"type": "object", "additionalProperties": {"type": "string"}}),
                "`additionalProperties` other than false at #",
            ),
            (
                json!({"$ref": "https://example.com/s.json"}),
                "external `$ref` \"https://example.com/s.json\" at #",
            ),
            (
                json!({"$ref": "#/$defs/Missing"}),
                "`$ref` \"#/$defs/Missing\" at # points nowhere",
            ),
            (
                json!({"anyOf": [{"type": "null"}, {"type": "number", "multipleOf": 2}]}),
                "`multipleOf` at #/anyOf/1",
            ),
        ];
        for (schema, expected) in cases {
            let reason = anthropic_accepts_schema(&schema).unwrap_err();
            assert!(reason.starts_with(expected), "{reason} vs {expected}");
        }
    }

    #[test]
    fn request_body_carries_output_config_only_for_accepted_schemas() {
        let mut request = ProviderRequest::text("sys", "hi");
        request.response_format = ResponseFormat::JsonSchema;
        request.schema = Some(Arc::new(strict_object()));
        let body = serde_json::to_value(request_body(
            &request,
            "m",
            4096,
            output_schema(&request).as_deref(),
            None,
        ))
        .unwrap();
        assert_eq!(
            body["output_config"],
            json!({"format": {"type": "json_schema", "schema": strict_object()}})
        );
        request.schema = Some(Arc::new(json!({"type": "integer", "minimum": 1})));
        assert!(
            serde_json::to_value(request_body(
                &request,
                "m",
                4096,
                output_schema(&request).as_deref(),
                None,
            ))
            .unwrap()
            .get("output_config")
            .is_none()
        );
        request.response_format = ResponseFormat::JsonObject;
        request.schema = Some(Arc::new(strict_object()));
        assert!(
            serde_json::to_value(request_body(
                &request,
                "m",
                4096,
                output_schema(&request).as_deref(),
                None,
            ))
            .unwrap()
            .get("output_config")
            .is_none()
        );
    }

    #[test]
    fn only_a_schema_that_is_sent_is_enforced() {
        let provider = Anthropic::new("key");
        let mut request = ProviderRequest::text("", "");
        request.response_format = ResponseFormat::JsonSchema;
        request.schema = Some(Arc::new(strict_object()));
        assert!(provider.enforces_schema(&request), "accepted schema");
        request.schema = Some(Arc::new(json!({"type": "integer", "minimum": 1})));
        assert!(!provider.enforces_schema(&request), "refused schema");
        request.response_format = ResponseFormat::JsonObject;
        request.schema = Some(Arc::new(strict_object()));
        assert!(!provider.enforces_schema(&request), "json_object");
        assert!(
            !provider.enforces_schema(&ProviderRequest::text("", "")),
            "text"
        );
    }

    #[test]
    fn undocumented_statuses_fall_back_to_the_error_type() {
        let overloaded = ErrorBody {
            error_type: Some("overloaded_error".into()),
            ..ErrorBody::default()
        };
        assert_eq!(
            classify(StatusCode::from_u16(520).unwrap(), &overloaded),
            ProviderErrorKind::Overloaded
        );
        assert_eq!(
            classify(StatusCode::from_u16(418).unwrap(), &ErrorBody::default()),
            ProviderErrorKind::InvalidRequest
        );
    }

    #[test]
    fn from_env_reads_key_base_url_and_model() {
        let vars: HashMap<&str, &str> = [
            ("ANTHROPIC_API_KEY", "sk-ant-test"),
            ("ANTHROPIC_BASE_URL", "http://localhost:9/"),
            ("ANTHROPIC_MODEL", "claude-test"),
        ]
        .into();
        let provider = Anthropic::from_lookup(&|n| vars.get(n).map(|v| (*v).to_owned())).unwrap();
        assert_eq!(provider.base_url(), "http://localhost:9");
        assert_eq!(provider.default_model(), "claude-test");
        let err = Anthropic::from_lookup(&|_| None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the environment variable ANTHROPIC_API_KEY is not set; set it to your Anthropic API key"
        );
    }

    #[test]
    fn debug_never_shows_the_key() {
        let printed = format!("{:#?}", Anthropic::new("sk-ant-very-secret"));
        assert!(!printed.contains("sk-ant-very-secret"), "{printed}");
        assert!(printed.contains("[redacted]"));
    }
}
