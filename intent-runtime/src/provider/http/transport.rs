//! The HTTP transport every provider sends through: the pooled `reqwest` client, timeouts,
//! routes (URL and headers built once), and reading replies whole or chunk by chunk, never
//! past the size limit.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use reqwest::header::{CONTENT_TYPE, HeaderName, HeaderValue};

use super::classify::{error_chain, transport_error};
use super::response::{REQUEST_ID_HEADERS, RawResponse};
use crate::provider::{ProviderError, ProviderErrorKind};

/// How long a provider waits for a TCP and TLS connection by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one whole request (connect, send, wait, read the body) may take by default.
///
/// Generous because long structured replies are slow; the attempt loop's time budget is the
/// tighter bound in practice.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// The most bytes read from one provider response by default (32 MiB): far above any
/// model reply (a 128k-token completion is well under 1 MiB of JSON), far below what would
/// hurt a service running many calls at once. Each HTTP provider can set its own
/// (`with_max_response_bytes`).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

/// Where one endpoint's requests go and the headers each of them carries (the key among
/// them), built once: parsing the URL and formatting the key on every call showed in the
/// throughput profile.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    url: reqwest::Url,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl Route {
    /// A route to `url` with `headers`; fails, as a configuration error, when `url` is not
    /// an absolute `http` or `https` URL (the only schemes the HTTP client speaks: any
    /// other would fail on every call, so it is refused before anything is sent).
    pub(crate) fn new(
        provider: &str,
        url: &str,
        headers: Vec<(HeaderName, HeaderValue)>,
    ) -> Result<Route, ProviderError> {
        let parsed = reqwest::Url::parse(url).map_err(|err| {
            ProviderError::new(
                ProviderErrorKind::Configuration,
                provider,
                format!(
                    "the endpoint `{url}` is not a valid URL ({err}); set the base URL to an \
                     absolute http(s) URL"
                ),
            )
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ProviderError::new(
                ProviderErrorKind::Configuration,
                provider,
                format!(
                    "the endpoint `{url}` uses the scheme `{}`, which the HTTP client does not \
                     speak; set the base URL to an absolute http(s) URL",
                    parsed.scheme()
                ),
            ));
        }
        Ok(Route {
            url: parsed,
            headers,
        })
    }

    /// The header carrying `key`, marked sensitive so `reqwest` and `http` never print it;
    /// fails when the key holds characters a header cannot carry.
    pub(crate) fn secret_header(
        provider: &str,
        name: &'static str,
        key: &str,
    ) -> Result<(HeaderName, HeaderValue), ProviderError> {
        let mut value = HeaderValue::from_str(key).map_err(|_| {
            ProviderError::new(
                ProviderErrorKind::Authentication,
                provider,
                "the API key contains characters an HTTP header cannot carry",
            )
            .not_sent()
        })?;
        value.set_sensitive(true);
        Ok((HeaderName::from_static(name), value))
    }

    /// The URL requests go to.
    pub(crate) fn url(&self) -> &str {
        self.url.as_str()
    }

    /// The headers every request along the route carries (the key among them).
    pub(crate) fn headers(&self) -> &[(HeaderName, HeaderValue)] {
        &self.headers
    }
}

/// A [`Route`] built on a provider's first call and shared by its clones. A builder
/// setting that changes the URL or the key replaces the cell, so the next call builds it
/// again; a failure is kept too, and reported by every call.
#[derive(Debug, Clone, Default)]
pub(crate) struct RouteCell(Arc<OnceLock<Result<Route, ProviderError>>>);

impl RouteCell {
    /// The route, built by `build` on first use.
    pub(crate) fn get_or_build(
        &self,
        build: impl FnOnce() -> Result<Route, ProviderError>,
    ) -> Result<&Route, ProviderError> {
        self.0.get_or_init(build).as_ref().map_err(Clone::clone)
    }

    /// Forgets the route (a setting it was built from changed).
    pub(crate) fn reset(&mut self) {
        self.0 = Arc::new(OnceLock::new());
    }
}

/// The `reqwest` client of one provider and its timeouts.
///
/// The client is built on first use and then reused by every call (and every clone), so
/// connections are pooled; building lazily lets the builder-style constructors return `Self`
/// and report a build failure from the call instead.
#[derive(Clone)]
pub(crate) struct HttpTransport {
    connect_timeout: Duration,
    request_timeout: Duration,
    max_response_bytes: usize,
    client: Arc<OnceLock<reqwest::Client>>,
}

impl Default for HttpTransport {
    fn default() -> Self {
        Self {
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            client: Arc::new(OnceLock::new()),
        }
    }
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish_non_exhaustive()
    }
}

impl HttpTransport {
    /// Sets the connect timeout; a client built with the old one is dropped.
    pub(crate) fn set_connect_timeout(&mut self, timeout: Duration) {
        self.connect_timeout = timeout;
        self.client = Arc::new(OnceLock::new());
    }

    /// Sets the whole-request timeout (applied per request, so the client is kept).
    pub(crate) fn set_request_timeout(&mut self, timeout: Duration) {
        self.request_timeout = timeout;
    }

    /// Sets the most bytes read from one response.
    pub(crate) fn set_max_response_bytes(&mut self, bytes: usize) {
        self.max_response_bytes = bytes;
    }

    /// Uses a caller's client (its own proxy, TLS roots, pool) instead of building one.
    pub(crate) fn set_client(&mut self, client: reqwest::Client) {
        self.client = Arc::new(OnceLock::from(client));
    }

    pub(crate) fn max_response_bytes(&self) -> usize {
        self.max_response_bytes
    }

    fn client(&self, provider: &str) -> Result<reqwest::Client, ProviderError> {
        if let Some(client) = self.client.get() {
            return Ok(client.clone());
        }
        let built = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .build()
            .map_err(|err| {
                ProviderError::new(
                    ProviderErrorKind::Configuration,
                    provider,
                    format!("could not build the HTTP client: {}", error_chain(&err)),
                )
            })?;
        // Two first calls may race; both clients work and the loser is dropped.
        Ok(self.client.get_or_init(|| built).clone())
    }

    /// Posts `body` as JSON along `route` and reads the whole reply, up to the response
    /// limit. `size_hint` is the expected length of the JSON, so the buffer is allocated
    /// once rather than grown.
    ///
    /// Fails only on transport problems (connect, timeout, dropped connection), on a body
    /// that cannot be JSON, and on a reply past the limit; any HTTP status is returned for
    /// the provider to classify.
    pub(crate) async fn post_json(
        &self,
        provider: &str,
        route: &Route,
        body: &(impl serde::Serialize + ?Sized),
        size_hint: usize,
        secret: Option<&str>,
    ) -> Result<RawResponse, ProviderError> {
        let response = self.send(provider, route, body, size_hint, secret).await?;
        self.read(provider, response, secret).await
    }

    /// Posts `body` like [`HttpTransport::post_json`], for a reply that streams: a success
    /// comes back as the live response, whose body the caller reads as it arrives
    /// (dropping it closes the connection); an error status is read whole, as
    /// `post_json` reads it, for the provider to classify.
    pub(crate) async fn post_json_streaming(
        &self,
        provider: &str,
        route: &Route,
        body: &(impl serde::Serialize + ?Sized),
        size_hint: usize,
        secret: Option<&str>,
    ) -> Result<Result<reqwest::Response, RawResponse>, ProviderError> {
        let response = self.send(provider, route, body, size_hint, secret).await?;
        if response.status().is_success() {
            return Ok(Ok(response));
        }
        self.read(provider, response, secret).await.map(Err)
    }

    /// Sends the request and waits for the status and headers.
    async fn send(
        &self,
        provider: &str,
        route: &Route,
        body: &(impl serde::Serialize + ?Sized),
        size_hint: usize,
        secret: Option<&str>,
    ) -> Result<reqwest::Response, ProviderError> {
        let client = self.client(provider)?;
        let mut json = Vec::with_capacity(size_hint);
        serde_json::to_writer(&mut json, body).map_err(|err| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                provider,
                format!("the request could not be written as JSON: {err}"),
            )
            .with_transient(false)
            .not_sent()
        })?;
        let mut request = client
            .post(route.url.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .timeout(self.request_timeout);
        for (name, value) in &route.headers {
            request = request.header(name.clone(), value.clone());
        }
        request
            .body(json)
            .send()
            .await
            .map_err(|err| transport_error(provider, err, secret))
    }

    /// Reads a response whole, up to the response limit.
    async fn read(
        &self,
        provider: &str,
        mut response: reqwest::Response,
        secret: Option<&str>,
    ) -> Result<RawResponse, ProviderError> {
        let status = response.status();
        let headers = std::mem::take(response.headers_mut());
        let mut raw = RawResponse {
            status,
            headers,
            body: Bytes::new(),
        };
        raw.body = read_body(&mut response, self.max_response_bytes)
            .await
            .map_err(|failure| match failure {
                BodyFailure::Transport(err) => transport_error(provider, err, secret),
                BodyFailure::TooLarge => too_large(provider, &raw, self.max_response_bytes),
            })?;
        Ok(raw)
    }
}

impl HttpTransport {
    /// Sends the request `build` makes on the transport's client, with `headers` and the
    /// request timeout, and reads the whole reply up to the response limit; any HTTP status
    /// is returned for the caller to classify, as [`HttpTransport::post_json`] does.
    pub(crate) async fn send_built(
        &self,
        provider: &str,
        build: impl FnOnce(&reqwest::Client) -> reqwest::RequestBuilder,
        headers: &[(HeaderName, HeaderValue)],
        secret: Option<&str>,
    ) -> Result<RawResponse, ProviderError> {
        let client = self.client(provider)?;
        let mut request = build(&client).timeout(self.request_timeout);
        for (name, value) in headers {
            request = request.header(name.clone(), value.clone());
        }
        let response = request
            .send()
            .await
            .map_err(|err| transport_error(provider, err, secret))?;
        self.read(provider, response, secret).await
    }

    /// Opens a `GET` of `url` whose body is read by the caller, chunk by chunk (a batch's
    /// results, which may be far larger than any reply). Only the connection and the
    /// headers are bounded by the request timeout; [`HttpTransport::next_chunk`] bounds
    /// each chunk.
    pub(crate) async fn open_get(
        &self,
        provider: &str,
        url: &str,
        headers: &[(HeaderName, HeaderValue)],
        secret: Option<&str>,
    ) -> Result<reqwest::Response, ProviderError> {
        let client = self.client(provider)?;
        let mut request = client.get(url);
        for (name, value) in headers {
            request = request.header(name.clone(), value.clone());
        }
        match tokio::time::timeout(self.request_timeout, request.send()).await {
            Ok(result) => result.map_err(|err| transport_error(provider, err, secret)),
            Err(_) => Err(ProviderError::new(
                ProviderErrorKind::Timeout,
                provider,
                format!("no reply from {url} within the request timeout"),
            )),
        }
    }

    /// The next chunk of a body opened by [`HttpTransport::open_get`]; `None` at its end.
    pub(crate) async fn next_chunk(
        &self,
        provider: &str,
        response: &mut reqwest::Response,
        secret: Option<&str>,
    ) -> Result<Option<Bytes>, ProviderError> {
        match tokio::time::timeout(self.request_timeout, response.chunk()).await {
            Ok(result) => result.map_err(|err| transport_error(provider, err, secret)),
            Err(_) => Err(ProviderError::new(
                ProviderErrorKind::Timeout,
                provider,
                "the body stopped arriving within the request timeout",
            )),
        }
    }
}

/// A non-success reply opened by [`HttpTransport::open_get`], its body read (up to an
/// error's excerpt) for classification.
pub(crate) async fn read_error(mut response: reqwest::Response) -> RawResponse {
    let status = response.status();
    let headers = std::mem::take(response.headers_mut());
    let body = read_body(&mut response, 64 * 1024)
        .await
        .unwrap_or_default();
    RawResponse {
        status,
        headers,
        body,
    }
}

/// Why a reply body could not be read.
enum BodyFailure {
    Transport(reqwest::Error),
    TooLarge,
}

/// Reads `response`'s body chunk by chunk, failing as soon as it passes `limit` bytes (or
/// announces more in `content-length`), so memory stays bounded whatever the server sends.
/// A body that arrives in one chunk is kept as it came, without a copy.
async fn read_body(response: &mut reqwest::Response, limit: usize) -> Result<Bytes, BodyFailure> {
    let announced = response.content_length();
    if announced.is_some_and(|length| length > limit as u64) {
        return Err(BodyFailure::TooLarge);
    }
    let mut first: Option<Bytes> = None;
    let mut joined: Option<BytesMut> = None;
    let mut read = 0usize;
    while let Some(chunk) = response.chunk().await.map_err(BodyFailure::Transport)? {
        read = read.saturating_add(chunk.len());
        if read > limit {
            return Err(BodyFailure::TooLarge);
        }
        match (&mut joined, first.take()) {
            (Some(buffer), _) => buffer.extend_from_slice(&chunk),
            (None, None) => first = Some(chunk),
            (None, Some(earlier)) => {
                // `content-length` (checked against the limit above) sizes the buffer once.
                let capacity = announced.map_or(0, |length| length as usize).max(read);
                let mut buffer = BytesMut::with_capacity(capacity);
                buffer.extend_from_slice(&earlier);
                buffer.extend_from_slice(&chunk);
                joined = Some(buffer);
            }
        }
    }
    Ok(match joined {
        Some(buffer) => buffer.freeze(),
        None => first.unwrap_or_default(),
    })
}

/// The error for a reply past the size limit: not transient, since the same request
/// would bring the same reply.
fn too_large(provider: &str, raw: &RawResponse, limit: usize) -> ProviderError {
    let mut err = ProviderError::new(
        ProviderErrorKind::InvalidResponse,
        provider,
        format!(
            "the reply (HTTP {}) is larger than the {limit} bytes this provider reads; \
             reading stopped there. Raise the limit with `with_max_response_bytes` if replies \
             this large are expected",
            raw.status.as_u16()
        ),
    )
    .with_status(raw.status.as_u16())
    .with_transient(false);
    // The providers' own headers lead the list, so no provider's own is needed here.
    if let Some(id) = raw.request_id(REQUEST_ID_HEADERS[0]) {
        err = err.with_request_id(id);
    }
    tracing::debug!(provider, limit, "provider reply past the size limit");
    err
}
