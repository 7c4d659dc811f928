//! Google's Gemini API as a [`Provider`]: `generateContent` and
//! `streamGenerateContent` with the key in `x-goog-api-key`, strict schemas through
//! `responseJsonSchema` (rewritten to the keywords Gemini honours), the system
//! instruction, finish reasons and blocked prompts mapped onto refusal and truncation,
//! usage with cached and thinking tokens, log-probabilities, and Google's error bodies.

mod batch;
mod errors;
mod reply;
mod request;
mod schema;
mod stream;

use std::borrow::Cow;
use std::fmt;

pub use schema::{GEMINI_SCHEMA_KEYWORDS, GeminiSchema, gemini_schema};

use self::errors::{REQUEST_ID_HEADER, error_reply};
use self::reply::parse_reply;
use self::request::{BodySettings, GenerateBody, ModelThinking, request_body};
use self::schema::gemini_schema_json;
use self::stream::GeminiStream;
use crate::media::{MediaLimits, MediaType};
use crate::provider::http::{
    Connection, Holds, ProviderConfigError, Route, RouteCell, WireApi, base_kind, checked_variable,
    set_variable, transport_settings, warn_unknown_variables,
};
use crate::provider::{
    Provider, ProviderError, ProviderErrorKind, ProviderReply, ProviderRequest, ReplyStream,
    ResponseFormat,
};

/// The name Gemini goes by in errors, logs and telemetry (`gen_ai.provider.name`, as
/// the OpenTelemetry conventions name the Gemini API).
pub const GEMINI_PROVIDER_NAME: &str = "gcp.gemini";

/// The Gemini API root, version included (`/models/{model}:generateContent` is appended).
pub const GEMINI_DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The model used when neither the request nor `GEMINI_MODEL` names one.
pub const GEMINI_DEFAULT_MODEL: &str = "gemini-2.5-flash";

/// The most alternatives per output token Gemini reports (`generationConfig.logprobs`
/// takes 1 to 20). Not every model returns log-probabilities: one that does not answers
/// `400 INVALID_ARGUMENT` naming them, and
/// [`Gemini::with_max_top_logprobs`]`(None)` turns them off.
pub const GEMINI_MAX_TOP_LOGPROBS: u8 = 20;

const MIB: usize = 1024 * 1024;

/// What the Gemini API takes of media inline: PNG, JPEG and WebP images (not GIF), up to
/// 3,600 images, PDFs of up to 50 MB and 1,000 pages, and 100 MB of base64 per request
/// (Google writes MB; read as MiB, 2^20 bytes); larger files go through the Files API,
/// which this provider does not upload to.
pub const GEMINI_MEDIA_LIMITS: MediaLimits = MediaLimits {
    image_types: &[MediaType::Png, MediaType::Jpeg, MediaType::Webp],
    documents: true,
    document_urls: true,
    max_image_bytes: 100 * MIB / 4 * 3,
    max_images: 3_600,
    max_image_bytes_per_request: usize::MAX,
    max_document_bytes: 50 * MIB,
    max_document_pages: 1_000,
    max_request_bytes: 100 * MIB,
};

/// The Gemini API (`POST {base}/models/{model}:generateContent`).
///
/// The API key is never printed: not by `Debug`, not in errors, not in logs; it travels
/// in the `x-goog-api-key` header, never in the URL.
#[derive(Clone)]
pub struct Gemini {
    connection: Connection,
    max_top_logprobs: Option<u8>,
    thinking_budget: Option<i32>,
    /// The routes of the default model (other models' routes are built per call): the
    /// model is in the URL, so the connection's one route does not serve.
    generate_route: RouteCell,
    stream_route: RouteCell,
}

/// `generateContent` as the shared send path sees it. Gemini reads its own error replies
/// (Google's status names, `RetryInfo`, quota details: [`errors`]), so `classify` only
/// serves a caller that has nothing better.
const GENERATE_CONTENT: WireApi = WireApi {
    call: "generateContent request",
    request_id_header: REQUEST_ID_HEADER,
    classify: |status, _| base_kind(status),
};

impl Gemini {
    /// A provider for the Gemini API with this key, the default base URL and model.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            connection: Connection::new(
                GEMINI_PROVIDER_NAME,
                GEMINI_DEFAULT_BASE_URL,
                GEMINI_DEFAULT_MODEL,
                Some(api_key.into()),
                GEMINI_MEDIA_LIMITS,
            ),
            max_top_logprobs: Some(GEMINI_MAX_TOP_LOGPROBS),
            thinking_budget: None,
            generate_route: RouteCell::default(),
            stream_route: RouteCell::default(),
        }
    }

    /// Reads the key from `GOOGLE_API_KEY` or `GEMINI_API_KEY` (one is required; when both
    /// are set `GOOGLE_API_KEY` wins, as in Google's own SDKs), and `GEMINI_BASE_URL` (the
    /// API root with its version, such as `https://generativelanguage.googleapis.com/v1beta`)
    /// and `GEMINI_MODEL` (optional). A variable set to blanks counts as unset.
    pub fn from_env() -> Result<Self, ProviderConfigError> {
        warn_unknown_variables(&["GEMINI_"]);
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
        let google = checked_variable(lookup, "GOOGLE_API_KEY", Holds::Key)?;
        let gemini = checked_variable(lookup, "GEMINI_API_KEY", Holds::Key)?;
        if let (Some(google), Some(gemini)) = (&google, &gemini)
            && google != gemini
        {
            tracing::warn!(
                "both GOOGLE_API_KEY and GEMINI_API_KEY are set, to different keys; using \
                 GOOGLE_API_KEY (unset one of them to silence this)"
            );
        }
        let api_key = google
            .or(gemini)
            .ok_or(ProviderConfigError::MissingApiKey {
                variable: "GEMINI_API_KEY",
                provider: "Gemini",
            })?;
        let mut provider = Self::new(api_key);
        if let Some(base_url) = checked_variable(lookup, "GEMINI_BASE_URL", Holds::Url)? {
            provider = provider.with_base_url(base_url);
        }
        if let Some(model) = set("GEMINI_MODEL") {
            provider = provider.with_model(model);
        }
        Ok(provider)
    }

    /// Sends requests to another API root, its version included
    /// (`http://localhost:8080/v1beta`).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.connection.set_base_url(base_url);
        self.generate_route.reset();
        self.stream_route.reset();
        self
    }

    /// Uses this model when a request names none: a bare id (`gemini-2.5-pro`), or a
    /// resource name with its collection (`models/gemini-2.5-pro`, `tunedModels/my-model`).
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.connection.model = model.into();
        self.generate_route.reset();
        self.stream_route.reset();
        self
    }

    /// What the API takes of images and PDFs (default [`GEMINI_MEDIA_LIMITS`]); a request
    /// over a limit is refused before it is sent.
    pub fn with_media_limits(mut self, limits: MediaLimits) -> Self {
        self.connection.media_limits = limits;
        self
    }

    /// How many alternatives per output token to ask for at most (default
    /// [`GEMINI_MAX_TOP_LOGPROBS`]); `None` for a model that returns no
    /// log-probabilities, so decision questions use stated probabilities instead.
    pub fn with_max_top_logprobs(mut self, limit: Option<u8>) -> Self {
        self.max_top_logprobs = limit.map(|limit| limit.clamp(1, GEMINI_MAX_TOP_LOGPROBS));
        self
    }

    /// Sends `generationConfig.thinkingConfig.thinkingBudget` with every request (default:
    /// not sent, the model's own default). On Gemini 2.5 models thinking tokens count
    /// against `maxOutputTokens`; `Some(0)` turns thinking off on the models that allow it
    /// (2.5 Flash and Flash-Lite).
    ///
    /// Decision requests (a one-token label, or a stated distribution) need no thinking,
    /// and without a budget set here they are sent so that Gemini 2.5 as shipped answers
    /// them: `thinkingBudget: 0` on the models that can stop thinking (2.5 Flash,
    /// Flash-Lite); the least budget (128) and 1,024 more output tokens than the answer
    /// needs on those that cannot (2.5 Pro, Gemini 3); 1,024 more output tokens on a model
    /// this library does not know. A budget set here is sent as it is, with room for it.
    pub fn with_thinking_budget(mut self, budget: Option<i32>) -> Self {
        self.thinking_budget = budget;
        self
    }

    transport_settings!(connection.transport);

    /// The API root requests go to.
    pub fn base_url(&self) -> &str {
        self.connection.base_url()
    }

    /// The model `request` goes to: its own, else the provider's default.
    fn model_of<'a>(&'a self, request: &'a ProviderRequest) -> &'a str {
        self.connection.model_of(request)
    }

    /// The key, sent in its header and redacted from anything a server echoes back.
    fn secret(&self) -> Option<&str> {
        self.connection.secret()
    }

    /// The route of `model`'s `generateContent` (or, with `stream`,
    /// `streamGenerateContent?alt=sse`): the default model's is built once and kept.
    fn route(&self, model: &str, stream: bool) -> Result<Cow<'_, Route>, ProviderError> {
        let build = || {
            let method = if stream {
                "streamGenerateContent?alt=sse"
            } else {
                "generateContent"
            };
            let url = format!(
                "{}/{}:{method}",
                self.connection.base_url(),
                model_path(model)?
            );
            let key = Route::secret_header(
                GEMINI_PROVIDER_NAME,
                "x-goog-api-key",
                self.secret().unwrap_or_default(),
            )?;
            Route::new(GEMINI_PROVIDER_NAME, &url, vec![key])
        };
        if model != self.connection.model {
            return build().map(Cow::Owned);
        }
        let cell = if stream {
            &self.stream_route
        } else {
            &self.generate_route
        };
        cell.get_or_build(build).map(Cow::Borrowed)
    }

    /// The body of `request`; media over the limits are refused here, before anything is
    /// sent.
    fn body<'a>(
        &self,
        request: &'a ProviderRequest,
        schema: Option<&'a serde_json::value::RawValue>,
    ) -> Result<GenerateBody<'a>, ProviderError> {
        self.connection.check_media(request)?;
        Ok(request_body(
            request,
            schema,
            BodySettings {
                max_top_logprobs: self.max_top_logprobs,
                thinking_budget: self.thinking_budget,
                thinking: ModelThinking::of(self.model_of(request)),
            },
        ))
    }
}

/// `model` as the path of its resource: a bare id goes under `models/`, a name with its
/// collection (`models/x`, `tunedModels/x`) stays. Characters a path segment cannot carry
/// as they are refuse the request, so a model name can never change the URL's meaning.
fn model_path(model: &str) -> Result<Cow<'_, str>, ProviderError> {
    let valid = !model.is_empty()
        && model
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && !model
            .split('/')
            .any(|segment| segment.is_empty() || segment == "..");
    if !valid {
        return Err(ProviderError::new(
            ProviderErrorKind::InvalidRequest,
            GEMINI_PROVIDER_NAME,
            format!(
                "the model name `{}` is not a Gemini model id; use an id such as \
                 `gemini-2.5-flash` (letters, digits, `-`, `_`, `.`), optionally as \
                 `models/<id>` or `tunedModels/<id>`",
                model.chars().take(100).collect::<String>()
            ),
        )
        .not_sent());
    }
    Ok(if model.contains('/') {
        Cow::Borrowed(model)
    } else {
        Cow::Owned(format!("models/{model}"))
    })
}

impl fmt::Debug for Gemini {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gemini")
            .field("connection", &self.connection)
            .field("max_top_logprobs", &self.max_top_logprobs)
            .field("thinking_budget", &self.thinking_budget)
            .finish()
    }
}

/// The schema `request` sends as `responseJsonSchema` (rewritten), with whether it says all
/// the original does; `None` unless the request asks for a strict schema and has one.
fn response_schema(
    request: &ProviderRequest,
) -> Option<(std::sync::Arc<serde_json::value::RawValue>, bool)> {
    if request.response_format != ResponseFormat::JsonSchema {
        return None;
    }
    request.schema.as_ref().map(gemini_schema_json)
}

#[async_trait::async_trait]
impl Provider for Gemini {
    fn name(&self) -> &str {
        GEMINI_PROVIDER_NAME
    }

    fn default_model(&self) -> &str {
        &self.connection.model
    }

    fn server_url(&self) -> Option<&str> {
        Some(Gemini::base_url(self))
    }

    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        let model = self.model_of(request);
        let route = self.route(model, false)?;
        let schema = response_schema(request);
        let body = self.body(request, schema.as_ref().map(|(text, _)| &**text))?;
        let secret = self.secret();
        let raw = self
            .connection
            .send(&route, &body, body.size_hint(), &GENERATE_CONTENT, model)
            .await?;
        if !raw.status.is_success() {
            return Err(error_reply(&raw, secret));
        }
        parse_reply(&raw, model, secret)
    }

    /// Sends the request to `streamGenerateContent?alt=sse` and reads its chunks as they
    /// arrive.
    async fn stream(&self, request: &ProviderRequest) -> Result<ReplyStream, ProviderError> {
        let model = self.model_of(request);
        let route = self.route(model, true)?;
        let schema = response_schema(request);
        let body = self.body(request, schema.as_ref().map(|(text, _)| &**text))?;
        let secret = self.secret();
        let response = self
            .connection
            .open_stream(&route, &body, body.size_hint(), &GENERATE_CONTENT, model)
            .await?
            .map_err(|raw| error_reply(&raw, secret))?;
        Ok(self
            .connection
            .decode_stream(response, &GENERATE_CONTENT, |request_id| {
                GeminiStream::new(model, request_id, secret)
            }))
    }

    /// `true` for a strict-schema request whose schema Gemini is shown whole: the rewrite
    /// for `responseJsonSchema` removed nothing that shapes the value (see
    /// [`gemini_schema`]), so the prompt need not describe the type again.
    fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        response_schema(request).is_some_and(|(_, complete)| complete)
    }

    fn max_top_logprobs(&self) -> Option<u8> {
        self.max_top_logprobs
    }

    /// Gemini's Batch Mode, with this provider's key, base URL and model.
    fn batch(&self) -> Option<crate::provider::batch::BatchProvider> {
        Some(crate::provider::batch::BatchProvider::gemini(self.clone()))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn from_env_reads_either_key_base_url_and_model() {
        let provider = Gemini::from_lookup(&lookup(&[
            ("GEMINI_API_KEY", "g-key"),
            ("GEMINI_BASE_URL", "http://localhost:9/v1beta/"),
            ("GEMINI_MODEL", "gemini-test"),
        ]))
        .unwrap();
        assert_eq!(provider.base_url(), "http://localhost:9/v1beta");
        assert_eq!(provider.default_model(), "gemini-test");
        assert_eq!(provider.secret(), Some("g-key"));
        let both = Gemini::from_lookup(&lookup(&[
            ("GEMINI_API_KEY", "g-key"),
            ("GOOGLE_API_KEY", "google-key"),
        ]))
        .unwrap();
        assert_eq!(both.secret(), Some("google-key"));
        assert_eq!(both.base_url(), GEMINI_DEFAULT_BASE_URL);
        assert_eq!(both.default_model(), GEMINI_DEFAULT_MODEL);
        let err = Gemini::from_lookup(&lookup(&[("GEMINI_API_KEY", "  ")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the environment variable GEMINI_API_KEY is not set; set it to your Gemini API key"
        );
    }

    #[test]
    fn model_names_become_resource_paths_or_are_refused() {
        assert_eq!(
            model_path("gemini-2.5-flash").unwrap(),
            "models/gemini-2.5-flash"
        );
        assert_eq!(
            model_path("models/gemini-2.5-pro").unwrap(),
            "models/gemini-2.5-pro"
        );
        assert_eq!(
            model_path("tunedModels/abc_1").unwrap(),
            "tunedModels/abc_1"
        );
        for bad in ["", "a b", "x?key=1", "../admin", "models/", "a#b", "é"] {
            let err = model_path(bad).unwrap_err();
            assert_eq!(err.kind(), ProviderErrorKind::InvalidRequest, "{bad}");
            assert!(!err.request_sent());
        }
    }

    #[test]
    fn routes_carry_the_model_and_the_method() {
        let provider = Gemini::new("k").with_base_url("http://h/v1beta");
        let route = provider.route(GEMINI_DEFAULT_MODEL, false).unwrap();
        assert_eq!(
            route.url(),
            "http://h/v1beta/models/gemini-2.5-flash:generateContent"
        );
        assert!(matches!(route, Cow::Borrowed(_)));
        let route = provider.route("gemini-other", true).unwrap();
        assert_eq!(
            route.url(),
            "http://h/v1beta/models/gemini-other:streamGenerateContent?alt=sse"
        );
    }

    #[test]
    fn only_a_complete_schema_is_enforced() {
        let provider = Gemini::new("k");
        let mut request = ProviderRequest::text("", "");
        request.response_format = ResponseFormat::JsonSchema;
        request.schema = Some(Arc::new(json!({"type": "object", "properties": {
            "value": {"type": "string"}}, "required": ["value"], "additionalProperties": false})));
        assert!(provider.enforces_schema(&request));
        request.schema = Some(Arc::new(json!({"type": "object", "properties": {
            "value": {"not": {"type": "null"}}}})));
        assert!(!provider.enforces_schema(&request));
        request.response_format = ResponseFormat::JsonObject;
        assert!(!provider.enforces_schema(&request));
    }

    #[test]
    fn debug_never_shows_the_key() {
        let printed = format!("{:#?}", Gemini::new("AIza-very-secret"));
        assert!(!printed.contains("AIza-very-secret"), "{printed}");
        assert!(printed.contains("[redacted]"));
    }

    #[test]
    fn gif_is_refused_before_sending() {
        let gif = crate::media::Image::from_bytes(b"GIF89a\x01\x00\x01\x00".to_vec()).unwrap();
        let request = ProviderRequest {
            messages: vec![crate::provider::Message::user_with_media(
                "x",
                vec![crate::provider::MediaPart {
                    at: 0,
                    media: gif.media().clone(),
                }],
            )],
            ..ProviderRequest::text("", "")
        };
        let err = Gemini::new("k").body(&request, None).err().unwrap();
        assert_eq!(err.kind(), ProviderErrorKind::InvalidRequest);
        assert!(!err.request_sent());
    }
}
