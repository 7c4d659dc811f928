//! What every HTTP provider is configured with, and the one path its calls are sent by.
//!
//! A provider holds a [`Connection`] (its name, API root, default model, key, transport
//! and media limits) and describes its wire API's error replies with an [`WireApi`];
//! [`Connection::post`] and [`Connection::post_streaming`] then send, log and classify
//! the same way for every API. What differs between APIs (the URL, the auth headers, the
//! body, the reply) stays in each API's folder.

use std::fmt;
use std::time::Instant;

use reqwest::StatusCode;
use serde::Serialize;

use super::classify::{ErrorBody, error_from_response};
use super::response::RawResponse;
use super::sse::{Decoder, decode, sse_events};
use super::transport::{HttpTransport, Route, RouteCell};
use crate::media::MediaLimits;
use crate::provider::{ProviderError, ProviderErrorKind, ProviderRequest, ReplyStream};

/// What the send path needs to know of one wire API: what its calls are called in logs,
/// which header carries its request id, and how a status and error body map to a
/// [`ProviderErrorKind`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct WireApi {
    /// What one call is called in debug logs (`"chat completion"`).
    pub(crate) call: &'static str,
    /// The API's own request-id header, tried before the common ones.
    pub(crate) request_id_header: &'static str,
    /// The kind of an error reply.
    pub(crate) classify: fn(StatusCode, &ErrorBody) -> ProviderErrorKind,
}

/// Where an HTTP provider sends its requests and how: the settings every provider's
/// builder sets (API root, default model, key, timeouts, response limit, HTTP client,
/// media limits), and the route built from them on the first call.
///
/// The key is never printed: `Debug` shows `[redacted]`, and everything a server echoes
/// back is redacted of it.
#[derive(Clone)]
pub(crate) struct Connection {
    /// The provider's name in logs, errors and telemetry.
    pub(crate) provider: String,
    base_url: String,
    /// The model used when a request names none.
    pub(crate) model: String,
    api_key: Option<String>,
    /// The HTTP client, timeouts and response limit.
    pub(crate) transport: HttpTransport,
    /// What the server takes of images and documents, checked before sending.
    pub(crate) media_limits: MediaLimits,
    route: RouteCell,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("media_limits", &self.media_limits)
            .field("transport", &self.transport)
            .finish()
    }
}

impl Connection {
    /// A connection for `provider` to `base_url` (trailing slashes trimmed).
    pub(crate) fn new(
        provider: &str,
        base_url: impl Into<String>,
        model: impl Into<String>,
        api_key: Option<String>,
        media_limits: MediaLimits,
    ) -> Self {
        Self {
            provider: provider.to_owned(),
            base_url: super::trim_base_url(base_url),
            model: model.into(),
            api_key,
            transport: HttpTransport::default(),
            media_limits,
            route: RouteCell::default(),
        }
    }

    /// The API root requests go to.
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Sends requests to another API root (trailing slashes trimmed).
    pub(crate) fn set_base_url(&mut self, base_url: impl Into<String>) {
        self.base_url = super::trim_base_url(base_url);
        self.route.reset();
    }

    /// Authenticates with this key.
    pub(crate) fn set_api_key(&mut self, api_key: String) {
        self.api_key = Some(api_key);
        self.route.reset();
    }

    /// The key, for the auth header and for redacting it from anything a server echoes
    /// back.
    pub(crate) fn secret(&self) -> Option<&str> {
        self.api_key.as_deref()
    }

    /// The model `request` goes to: its own, else the default.
    pub(crate) fn model_of<'a>(&'a self, request: &'a ProviderRequest) -> &'a str {
        request.model.as_deref().unwrap_or(&self.model)
    }

    /// Refuses `request` when its media break the limits, before anything is sent.
    pub(crate) fn check_media(&self, request: &ProviderRequest) -> Result<(), ProviderError> {
        request.check_media(&self.provider, &self.media_limits)
    }

    /// Forgets the route (something it was built from changed).
    pub(crate) fn reset_route(&mut self) {
        self.route.reset();
    }

    /// The route `build` makes from these settings, built on the first call and kept
    /// until a setting it depends on changes.
    pub(crate) fn route(
        &self,
        build: impl FnOnce(&Self) -> Result<Route, ProviderError>,
    ) -> Result<&Route, ProviderError> {
        self.route.get_or_build(|| build(self))
    }

    /// The classified error of a reply with an error status (a live call's, a streamed
    /// call's, or a batch request's).
    pub(crate) fn error_reply(&self, raw: &RawResponse, api: &WireApi) -> ProviderError {
        let error = ErrorBody::parse(&raw.body_text());
        let kind = (api.classify)(raw.status, &error);
        error_from_response(
            &self.provider,
            raw,
            kind,
            &error,
            api.request_id_header,
            self.secret(),
        )
    }

    /// Posts `body` along `route` and reads the reply whole, whatever its status; `model`
    /// is the model asked, for the logs. [`Connection::post`] is this with the error
    /// status classified; an API that reads something from an error reply (a refusal)
    /// sends with this and classifies the rest with [`Connection::error_reply`].
    pub(crate) async fn send(
        &self,
        route: &Route,
        body: &(impl Serialize + ?Sized),
        size_hint: usize,
        api: &WireApi,
        model: &str,
    ) -> Result<RawResponse, ProviderError> {
        let provider = self.provider.as_str();
        tracing::trace!(provider, model, url = %route.url(), "sending a {}", api.call);
        let started = Instant::now();
        let raw = self
            .transport
            .post_json(provider, route, body, size_hint, self.secret())
            .await?;
        tracing::trace!(
            provider,
            status = raw.status.as_u16(),
            request_id = raw.request_id(api.request_id_header),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "{} answered",
            api.call
        );
        Ok(raw)
    }

    /// The send path of a call: posts `body` along `route`, reads the reply whole and
    /// returns it when its status is a success, or its classified error; `model` is the
    /// model asked, for the logs.
    pub(crate) async fn post(
        &self,
        route: &Route,
        body: &(impl Serialize + ?Sized),
        size_hint: usize,
        api: &WireApi,
        model: &str,
    ) -> Result<RawResponse, ProviderError> {
        let raw = self.send(route, body, size_hint, api, model).await?;
        if !raw.status.is_success() {
            return Err(self.error_reply(&raw, api));
        }
        Ok(raw)
    }

    /// Posts `body` along `route` for a reply that streams: a success comes back as the
    /// live response, an error status read whole (for the caller to classify, or to read
    /// something from first).
    pub(crate) async fn open_stream(
        &self,
        route: &Route,
        body: &(impl Serialize + ?Sized),
        size_hint: usize,
        api: &WireApi,
        model: &str,
    ) -> Result<Result<reqwest::Response, RawResponse>, ProviderError> {
        let provider = self.provider.as_str();
        tracing::trace!(provider, model, url = %route.url(), "streaming a {}", api.call);
        self.transport
            .post_json_streaming(provider, route, body, size_hint, self.secret())
            .await
    }

    /// Reads a streamed success's server-sent events into `decoder` as they arrive;
    /// `decoder` is made from the response's request id.
    pub(crate) fn decode_stream<D: Decoder + Send + 'static>(
        &self,
        response: reqwest::Response,
        api: &WireApi,
        decoder: impl FnOnce(Option<String>) -> D,
    ) -> ReplyStream {
        let request_id = RawResponse::head(&response)
            .request_id(api.request_id_header)
            .map(str::to_owned);
        let events = sse_events(
            &self.provider,
            response,
            self.transport.max_response_bytes(),
            self.secret(),
        );
        decode(events, decoder(request_id))
    }

    /// The send path of a streamed call: posts `body` along `route` and, on a success
    /// status, reads its server-sent events into `decoder` as they arrive; `decoder` is
    /// made from the response's request id. An error status is read whole and classified.
    pub(crate) async fn post_streaming<D: Decoder + Send + 'static>(
        &self,
        route: &Route,
        body: &(impl Serialize + ?Sized),
        size_hint: usize,
        api: &WireApi,
        model: &str,
        decoder: impl FnOnce(Option<String>) -> D,
    ) -> Result<ReplyStream, ProviderError> {
        let response = self
            .open_stream(route, body, size_hint, api, model)
            .await?
            .map_err(|raw| self.error_reply(&raw, api))?;
        Ok(self.decode_stream(response, api, decoder))
    }
}

/// The `with_*` methods every HTTP client of this crate (each provider, the System One
/// decision client) offers for its transport (connect timeout, response limit, request
/// timeout, HTTP client), written once: `$($field).+` is the path from the client to its
/// [`HttpTransport`].
macro_rules! transport_settings {
    ($($field:ident).+) => {
        /// How long to wait for a connection (default 10 s).
        pub fn with_connect_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.$($field).+.set_connect_timeout(timeout);
            self
        }

        /// The most bytes read from one response (default
        /// [`DEFAULT_MAX_RESPONSE_BYTES`](crate::provider::DEFAULT_MAX_RESPONSE_BYTES),
        /// 32 MiB); a longer reply fails the call at once with a non-transient
        /// [`InvalidResponse`](crate::provider::ProviderErrorKind::InvalidResponse).
        pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
            self.$($field).+.set_max_response_bytes(bytes);
            self
        }

        /// How long one whole request may take (default 120 s).
        pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.$($field).+.set_request_timeout(timeout);
            self
        }

        /// Uses this `reqwest` client (its proxy, TLS and pool settings) instead of
        /// building one; the connect timeout is then the client's own.
        pub fn with_http_client(mut self, client: reqwest::Client) -> Self {
            self.$($field).+.set_client(client);
            self
        }
    };
}

pub(crate) use transport_settings;
