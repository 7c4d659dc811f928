//! One Chat Completions endpoint: the connection it sends through and the send path of
//! a live and a streamed call, shared by [`OpenAi`](super::OpenAi),
//! [`OpenAiCompatible`](crate::provider::OpenAiCompatible) and the batch adapter.

use std::fmt;
use std::time::Instant;

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::reply::{REQUEST_ID_HEADER, classify, parse_reply};
use super::request::{ChatBody, StructuredOutput, WireSettings};
use super::stream::ChatStream;
use crate::media::MediaLimits;
use crate::provider::ReplyStream;
use crate::provider::http::{
    self, ErrorBody, HttpTransport, RawResponse, Route, RouteCell, decode, error_from_response,
    sse_events,
};
use crate::provider::{ProviderError, ProviderReply, ProviderRequest, ResponseFormat};

/// One Chat Completions endpoint: where it is, how to authenticate, what to send.
#[derive(Clone)]
pub(crate) struct ChatEndpoint {
    pub(crate) provider_name: String,
    base_url: String,
    pub(crate) model: String,
    api_key: Option<String>,
    pub(crate) settings: WireSettings,
    pub(crate) extra_body: Map<String, Value>,
    pub(crate) transport: HttpTransport,
    /// What the server takes of images and documents, checked before sending.
    pub(crate) media_limits: MediaLimits,
    route: RouteCell,
}

impl fmt::Debug for ChatEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatEndpoint")
            .field("provider", &self.provider_name)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("settings", &self.settings)
            .field("extra_body", &self.extra_body)
            .field("media_limits", &self.media_limits)
            .field("connect_timeout", &self.transport.connect_timeout())
            .field("request_timeout", &self.transport.request_timeout())
            .field("max_response_bytes", &self.transport.max_response_bytes())
            .finish()
    }
}

impl ChatEndpoint {
    /// Sends one request and reads the reply.
    /// An endpoint at `base_url` (trimmed of trailing slashes by the caller).
    pub(crate) fn new(
        provider_name: &str,
        base_url: String,
        model: String,
        api_key: Option<String>,
    ) -> Self {
        Self {
            provider_name: provider_name.to_owned(),
            base_url,
            model,
            api_key,
            settings: WireSettings::OPENAI,
            extra_body: Map::new(),
            transport: HttpTransport::default(),
            media_limits: MediaLimits::OPENAI,
            route: RouteCell::default(),
        }
    }

    /// The HTTP transport (client, timeouts, response limit) live calls use.
    pub(crate) fn transport(&self) -> &HttpTransport {
        &self.transport
    }

    /// The API root requests go to.
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Sends requests to another API root (already trimmed).
    pub(crate) fn set_base_url(&mut self, base_url: String) {
        self.base_url = base_url;
        self.route.reset();
    }

    /// Authenticates with this key.
    pub(crate) fn set_api_key(&mut self, api_key: String) {
        self.api_key = Some(api_key);
        self.route.reset();
    }

    /// The endpoint's URL and `authorization` header, built on the first call.
    fn route(&self) -> Result<&Route, ProviderError> {
        self.route.get_or_build(|| {
            let mut headers = Vec::with_capacity(1);
            if let Some(key) = &self.api_key {
                headers.push(Route::secret_header(
                    &self.provider_name,
                    "authorization",
                    &format!("Bearer {key}"),
                )?);
            }
            let url = format!("{}/chat/completions", self.base_url);
            Route::new(&self.provider_name, &url, headers)
        })
    }

    /// Whether `request` goes out as a strict `json_schema` the model reads
    /// ([`Provider::enforces_schema`](super::super::Provider::enforces_schema)); the same
    /// conditions as [`response_format`] sending the schema.
    /// The most `top_logprobs` this endpoint reports per token
    /// ([`Provider::max_top_logprobs`](super::super::Provider::max_top_logprobs)).
    pub(crate) fn max_top_logprobs(&self) -> Option<u8> {
        self.settings.max_top_logprobs
    }

    pub(crate) fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        request.response_format == ResponseFormat::JsonSchema
            && request.schema.is_some()
            && self.settings.structured_output == StructuredOutput::JsonSchema
            && self.settings.model_reads_schema
    }

    /// The model `request` goes to: its own, else the endpoint's default.
    pub(crate) fn model_of<'a>(&'a self, request: &'a ProviderRequest) -> &'a str {
        request.model.as_deref().unwrap_or(&self.model)
    }

    /// The body of `request`, as a live call sends it and as a batch line carries it;
    /// `schema` is `http::schema_json` of the request's schema. A request whose media the
    /// server does not take ([`MediaLimits`]) is refused here, before anything is sent.
    pub(crate) fn body<'a>(
        &'a self,
        request: &'a ProviderRequest,
        schema: Option<&'a RawValue>,
    ) -> Result<ChatBody<'a>, ProviderError> {
        request.check_media(&self.provider_name, &self.media_limits)?;
        Ok(ChatBody {
            request,
            model: self.model_of(request),
            settings: &self.settings,
            extra: &self.extra_body,
            schema,
            stream: false,
        })
    }

    /// The `authorization` header (when the endpoint has a key), marked sensitive.
    pub(crate) fn auth_headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>, ProviderError> {
        Ok(self.route()?.headers().to_vec())
    }

    /// The key, for redacting it from anything a server echoes back.
    pub(crate) fn secret(&self) -> Option<&str> {
        self.api_key.as_deref()
    }

    pub(crate) async fn complete(
        &self,
        request: &ProviderRequest,
    ) -> Result<ProviderReply, ProviderError> {
        let model = self.model_of(request);
        let route = self.route()?;
        let schema = request.schema.as_ref().map(http::schema_json);
        let body = self.body(request, schema.as_deref())?;
        let secret = self.api_key.as_deref();
        tracing::debug!(provider = %self.provider_name, %model, url = %route.url(), "sending a chat completion");
        let started = Instant::now();
        let raw = self
            .transport
            .post_json(&self.provider_name, route, &body, body.size_hint(), secret)
            .await?;
        tracing::debug!(
            provider = %self.provider_name,
            status = raw.status.as_u16(),
            request_id = raw.request_id(REQUEST_ID_HEADER),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "chat completion answered"
        );
        if !raw.status.is_success() {
            return Err(self.error_reply(&raw));
        }
        parse_reply(&self.provider_name, &raw, model, secret)
    }

    /// Sends one request with `"stream": true` and reads the chunks as they arrive.
    pub(crate) async fn stream(
        &self,
        request: &ProviderRequest,
    ) -> Result<ReplyStream, ProviderError> {
        let model = request.model.as_deref().unwrap_or(&self.model);
        let route = self.route()?;
        let schema = request.schema.as_ref().map(http::schema_json);
        let body = ChatBody {
            stream: true,
            ..self.body(request, schema.as_deref())?
        };
        let secret = self.api_key.as_deref();
        tracing::debug!(provider = %self.provider_name, %model, url = %route.url(), "streaming a chat completion");
        let response = self
            .transport
            .post_json_streaming(&self.provider_name, route, &body, body.size_hint(), secret)
            .await?;
        let response = response.map_err(|raw| self.error_reply(&raw))?;
        let request_id = RawResponse::head(&response)
            .request_id(REQUEST_ID_HEADER)
            .map(str::to_owned);
        let events = sse_events(
            &self.provider_name,
            response,
            self.transport.max_response_bytes(),
            secret,
        );
        let decoder = ChatStream::new(&self.provider_name, model, request_id, secret);
        Ok(decode(events, decoder))
    }

    /// The classified error of a reply with an error status (a live call's, or a batch
    /// line's).
    pub(crate) fn error_reply(&self, raw: &RawResponse) -> ProviderError {
        let error = ErrorBody::parse(&raw.body_text());
        let kind = classify(raw.status, &error);
        error_from_response(
            &self.provider_name,
            raw,
            kind,
            &error,
            REQUEST_ID_HEADER,
            self.api_key.as_deref(),
        )
    }
}
