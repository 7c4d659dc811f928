//! Shared HTTP plumbing of the HTTP providers: the pooled `reqwest` client, timeouts, turning
//! transport failures and error replies into [`ProviderError`]s, `retry-after` parsing and
//! short body excerpts.
//!
//! How failures are classified (every provider; `x-should-retry: true|false` overrides the
//! transient flag, `retry-after-ms` / `retry-after` fill [`ProviderError::retry_after`]):
//!
//! | kind | OpenAI and compatible servers | Anthropic | transient |
//! | --- | --- | --- | --- |
//! | `Authentication` | 401 | 401 `authentication_error` | no |
//! | `Permission` | 402, 403 | 402 `billing_error`, 403 `permission_error` | no |
//! | `NotFound` | 404 | 404 `not_found_error` | no |
//! | `InvalidRequest` | 400, 413, 422, other 4xx | 400 `invalid_request_error`, 413 `request_too_large` | no |
//! | `SchemaRejected` | 400 whose message or `param` names `response_format` / `schema` | 400 naming `output_config` / `schema` | no |
//! | `RateLimited` | 429 | 429 `rate_limit_error` | yes |
//! | `Overloaded` | 503 | 529 `overloaded_error` (and 503) | yes |
//! | `Server` | 408, 409, 500 and other 5xx | 500 `api_error`, other 5xx | yes |
//! | `Timeout` | the request timeout elapsed | 504 `timeout_error`, or the timeout elapsed | yes |
//! | `Transport` | connection refused, reset, or dropped mid-reply | same | yes |
//! | `InvalidResponse` | a 2xx body that is not JSON or lacks `choices` (with an excerpt); any body past the size limit | a 2xx body without `content`; any body past the size limit | no |
//! | `Configuration` | a base URL that is not an absolute `http(s)` URL (nothing is sent) | same | no |
//!
//! A reply body is read chunk by chunk and never past the provider's limit
//! ([`DEFAULT_MAX_RESPONSE_BYTES`] unless set otherwise): a server that sends an endless or
//! huge body costs at most that much memory and fails the call at once, without a retry.
//! The request id is read from the provider's own header, else from the first of
//! [`REQUEST_ID_HEADERS`] present, so a call through a gateway keeps an id to quote.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::{Duration, SystemTime};

use bytes::{Bytes, BytesMut};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{ProviderError, ProviderErrorKind};
use crate::schema::derived::DerivedCache;

/// How long a provider waits for a TCP and TLS connection by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one whole request (connect, send, wait, read the body) may take by default.
///
/// Generous because long structured replies are slow; the attempt loop's time budget is the
/// tighter bound in practice.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// The most characters of a reply body an error message quotes.
pub const EXCERPT_MAX_CHARS: usize = 200;

/// The most bytes read from one provider response by default (32 MiB): far above any
/// model reply (a 128k-token completion is well under 1 MiB of JSON), far below what would
/// hurt a service running many calls at once. Each HTTP provider can set its own
/// (`with_max_response_bytes`).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

/// The headers a request id is read from, after the provider's own, in this order:
/// `x-request-id` (OpenAI, vLLM, and most proxies: nginx, Envoy, Kong), `request-id`
/// (Anthropic), `x-litellm-call-id` (the LiteLLM proxy), `apim-request-id` and
/// `x-ms-request-id` (Azure OpenAI and Azure API Management), `x-amzn-requestid` (AWS API
/// Gateway, Bedrock), `x-correlation-id` (gateways that name it so) and `cf-ray`
/// (Cloudflare, in front of many hosted servers).
pub const REQUEST_ID_HEADERS: &[&str] = &[
    "x-request-id",
    "request-id",
    "x-litellm-call-id",
    "apim-request-id",
    "x-ms-request-id",
    "x-amzn-requestid",
    "x-correlation-id",
    "cf-ray",
];

crate::error::debug_as_message!(ProviderConfigError);

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
    #[error(
        "the environment variable {variable} is not set; set it to the server's base URL, \
         such as http://localhost:11434/v1 for Ollama"
    )]
    MissingBaseUrl {
        /// The variable that was read.
        variable: &'static str,
    },
    /// No provider is configured in the environment ([`from_env`](super::from_env)).
    #[error(
        "no model provider is configured: set OPENAI_API_KEY (OpenAI), ANTHROPIC_API_KEY \
         (Anthropic) or OPENAI_COMPATIBLE_BASE_URL (any Chat Completions server, such as \
         Ollama at http://localhost:11434/v1)"
    )]
    NoProvider,
}

/// How long the provider asked us to wait, from the headers of an error reply.
///
/// Reads `retry-after-ms` (milliseconds) first, then `retry-after` as seconds or as an HTTP
/// date. A zero wait, a date in the past, or an unreadable value gives `None`: the caller's own
/// backoff decides then.
pub fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    parse_retry_after_at(headers, SystemTime::now())
}

/// [`parse_retry_after`] with the current time given, so dates can be tested.
pub fn parse_retry_after_at(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let millis = header_str(headers, "retry-after-ms")
        .and_then(|value| value.parse::<f64>().ok())
        .and_then(|ms| positive_duration(ms / 1000.0));
    millis.or_else(|| {
        let value = header_str(headers, "retry-after")?;
        match value.parse::<f64>() {
            Ok(seconds) => positive_duration(seconds),
            Err(_) => {
                let date = httpdate::parse_http_date(value).ok()?;
                date.duration_since(now).ok().filter(|wait| !wait.is_zero())
            }
        }
    })
}

/// What the `x-should-retry` header says, when it says `true` or `false`.
///
/// The provider knows better than the status code whether a retry can help, so this
/// overrides the kind's default.
pub fn parse_should_retry(headers: &HeaderMap) -> Option<bool> {
    let value = header_str(headers, "x-should-retry")?;
    if value.eq_ignore_ascii_case("true") {
        Some(true)
    } else if value.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// At most [`EXCERPT_MAX_CHARS`] characters of `body`, whitespace runs folded into one space,
/// ending in `…` when it was cut.
pub fn excerpt(body: &str) -> String {
    let folded = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.chars().count() <= EXCERPT_MAX_CHARS {
        return folded;
    }
    let mut cut: String = folded.chars().take(EXCERPT_MAX_CHARS - 1).collect();
    cut.push('…');
    cut
}

fn positive_duration(seconds: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|wait| !wait.is_zero())
}

fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name)?.to_str().ok().map(str::trim)
}

/// Replaces every occurrence of the API key in `text`, so a proxy or server that echoes the
/// request back cannot leak it into an error.
pub(crate) fn redact(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(secret) if !secret.is_empty() => text.replace(secret, "[redacted]"),
        _ => text.to_owned(),
    }
}

/// The status, headers and body of one reply, read in full.
#[derive(Debug)]
pub(crate) struct RawResponse {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    /// The body as received: success bodies are parsed from the bytes, never copied into
    /// a `String` first.
    pub(crate) body: Bytes,
}

impl RawResponse {
    /// The status and headers of a response whose body is read elsewhere (a stream).
    pub(crate) fn head(response: &reqwest::Response) -> Self {
        Self {
            status: response.status(),
            headers: response.headers().clone(),
            body: Bytes::new(),
        }
    }

    /// The value of a header, when present and printable.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        header_str(&self.headers, name).filter(|value| !value.is_empty())
    }

    /// The request id: the provider's own header `own`, else the first of
    /// [`REQUEST_ID_HEADERS`] present.
    pub(crate) fn request_id(&self, own: &str) -> Option<&str> {
        std::iter::once(own)
            .chain(REQUEST_ID_HEADERS.iter().copied())
            .find_map(|name| self.header(name))
    }

    /// The body as text, invalid UTF-8 replaced: for error bodies and excerpts.
    pub(crate) fn body_text(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.body)
    }
}

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

/// A strict schema as JSON text, serialized once per schema and kept while the schema
/// lives: every request for a typed target sends the same schema, and serializing its
/// `Value` tree was a tenth of the client's work per call.
pub(crate) fn schema_json(schema: &Arc<Value>) -> Arc<RawValue> {
    static CACHE: LazyLock<DerivedCache<Arc<RawValue>>> = LazyLock::new(DerivedCache::new);
    CACHE.get_or_derive(schema, || {
        // A `Value` always serializes; the fallback only keeps this total.
        serde_json::value::to_raw_value(schema.as_ref())
            .unwrap_or_else(|_| RawValue::NULL.to_owned())
            .into()
    })
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

    pub(crate) fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    pub(crate) fn request_timeout(&self) -> Duration {
        self.request_timeout
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
            .map_err(|err| transport_error(provider, &err, secret))
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
                BodyFailure::Transport(err) => transport_error(provider, &err, secret),
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
            .map_err(|err| transport_error(provider, &err, secret))?;
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
            Ok(result) => result.map_err(|err| transport_error(provider, &err, secret)),
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
            Ok(result) => result.map_err(|err| transport_error(provider, &err, secret)),
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

/// A `reqwest` failure as a provider error: a timeout, or a transport failure. A failure
/// to connect sent nothing, so it is no model call.
pub(crate) fn transport_error(
    provider: &str,
    err: &reqwest::Error,
    secret: Option<&str>,
) -> ProviderError {
    let kind = if err.is_timeout() {
        ProviderErrorKind::Timeout
    } else {
        ProviderErrorKind::Transport
    };
    let message = redact(&error_chain(err), secret);
    tracing::debug!(provider, %kind, %message, "provider request failed before a reply");
    let error = ProviderError::new(kind, provider, message);
    if err.is_connect() {
        error.not_sent()
    } else {
        error
    }
}

/// An error and its sources, `: `-joined, because `reqwest`'s own message hides the cause
/// ("error sending request") that says what to fix.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// The parts of an error body the providers use, whatever its exact shape.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct ErrorBody {
    pub(crate) message: Option<String>,
    pub(crate) error_type: Option<String>,
    pub(crate) param: Option<String>,
}

impl ErrorBody {
    /// Reads `{"error":{"message","type","param"}}` (OpenAI, Anthropic, most compatible
    /// servers), `{"error":"text"}` (Ollama) and `{"message","type"}` (vLLM).
    pub(crate) fn parse(body: &str) -> Self {
        let Ok(value) = serde_json::from_str::<Value>(body) else {
            return Self::default();
        };
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
        match value.get("error") {
            Some(Value::String(message)) => Self {
                message: Some(message.clone()),
                ..Self::default()
            },
            Some(error @ Value::Object(_)) => Self {
                message: text(error, "message"),
                error_type: text(error, "type"),
                param: text(error, "param"),
            },
            _ => Self {
                message: text(&value, "message"),
                error_type: text(&value, "type"),
                param: text(&value, "param"),
            },
        }
    }
}

/// The classification every provider starts from; each adjusts what its documentation says
/// differently.
pub(crate) fn base_kind(status: StatusCode) -> ProviderErrorKind {
    match status.as_u16() {
        401 => ProviderErrorKind::Authentication,
        402 | 403 => ProviderErrorKind::Permission,
        404 => ProviderErrorKind::NotFound,
        // Request timeout and conflict: the request itself was fine; try again.
        408 | 409 => ProviderErrorKind::Server,
        429 => ProviderErrorKind::RateLimited,
        503 | 529 => ProviderErrorKind::Overloaded,
        500..=599 => ProviderErrorKind::Server,
        _ => ProviderErrorKind::InvalidRequest,
    }
}

/// Whether a 400's message or parameter points at the response schema.
pub(crate) fn names_schema(error: &ErrorBody, schema_words: &[&str]) -> bool {
    let mentions = |text: &str| {
        let lower = text.to_ascii_lowercase();
        schema_words.iter().any(|word| lower.contains(word))
    };
    error.message.as_deref().is_some_and(mentions) || error.param.as_deref().is_some_and(mentions)
}

/// Builds the error for a non-success reply: the provider's own message (or an excerpt of
/// the body), the status, the request id, `retry-after` and `x-should-retry`.
pub(crate) fn error_from_response(
    provider: &str,
    raw: &RawResponse,
    kind: ProviderErrorKind,
    error: &ErrorBody,
    request_id_header: &str,
    secret: Option<&str>,
) -> ProviderError {
    let message = match error.message.as_deref().map(str::trim) {
        Some(message) if !message.is_empty() => message.to_owned(),
        _ if raw.body_text().trim().is_empty() => format!(
            "HTTP {} with an empty body",
            raw.status.canonical_reason().unwrap_or("error")
        ),
        _ => format!("unexpected error body: {}", excerpt(&raw.body_text())),
    };
    let mut err = ProviderError::new(kind, provider, redact(&message, secret))
        .with_status(raw.status.as_u16());
    if let Some(id) = raw.request_id(request_id_header) {
        err = err.with_request_id(id);
    }
    if let Some(wait) = parse_retry_after(&raw.headers) {
        err = err.with_retry_after(wait);
    }
    if let Some(transient) = parse_should_retry(&raw.headers) {
        err = err.with_transient(transient);
    }
    tracing::debug!(
        provider,
        status = raw.status.as_u16(),
        %kind,
        request_id = raw.request_id(request_id_header),
        transient = err.is_transient(),
        "provider answered with an error"
    );
    err
}

/// An error for a success status whose body is not the documented shape.
pub(crate) fn invalid_response(
    provider: &str,
    raw: &RawResponse,
    what: &str,
    request_id_header: &str,
    secret: Option<&str>,
) -> ProviderError {
    let message = format!("{what}; body starts: {}", excerpt(&raw.body_text()));
    let mut err = ProviderError::new(
        ProviderErrorKind::InvalidResponse,
        provider,
        redact(&message, secret),
    )
    .with_status(raw.status.as_u16());
    if let Some(id) = raw.request_id(request_id_header) {
        err = err.with_request_id(id);
    }
    err
}

/// `base` without trailing slashes, so `{base}/path` never has `//`.
pub(crate) fn trim_base_url(base: impl Into<String>) -> String {
    let mut base = base.into();
    while base.ends_with('/') {
        base.pop();
    }
    base
}

/// `temperature` as a JSON number in its shortest decimal form (`0.2`, not
/// `0.20000000298023224`), or `None` when it is not finite.
pub(crate) fn temperature_value(temperature: f32) -> Option<Value> {
    if !temperature.is_finite() {
        return None;
    }
    let shortest: f64 = temperature.to_string().parse().ok()?;
    serde_json::Number::from_f64(shortest).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_ms_wins_over_retry_after() {
        let map = headers(&[("retry-after-ms", "1500"), ("retry-after", "9")]);
        assert_eq!(parse_retry_after(&map), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn retry_after_reads_fractional_milliseconds() {
        let map = headers(&[("retry-after-ms", "2.5")]);
        assert_eq!(parse_retry_after(&map), Some(Duration::from_micros(2500)));
    }

    #[test]
    fn retry_after_reads_seconds() {
        let map = headers(&[("retry-after", "20")]);
        assert_eq!(parse_retry_after(&map), Some(Duration::from_secs(20)));
    }

    #[test]
    fn retry_after_reads_an_http_date() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2026 07:28:00 GMT").unwrap();
        let map = headers(&[("retry-after", "Wed, 21 Oct 2026 07:28:30 GMT")]);
        assert_eq!(
            parse_retry_after_at(&map, now),
            Some(Duration::from_secs(30))
        );
    }

    #[test]
    fn retry_after_in_the_past_or_zero_is_no_advice() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2026 07:28:00 GMT").unwrap();
        let past = headers(&[("retry-after", "Wed, 21 Oct 2026 07:27:00 GMT")]);
        assert_eq!(parse_retry_after_at(&past, now), None);
        assert_eq!(parse_retry_after(&headers(&[("retry-after", "0")])), None);
    }

    #[test]
    fn retry_after_garbage_is_ignored() {
        for value in ["soon", "-3", "NaN", "inf", "1e400", ""] {
            let map = headers(&[("retry-after", value)]);
            assert_eq!(parse_retry_after(&map), None, "{value}");
        }
        let bad_ms = headers(&[("retry-after-ms", "lots"), ("retry-after", "4")]);
        assert_eq!(parse_retry_after(&bad_ms), Some(Duration::from_secs(4)));
        assert_eq!(parse_retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn should_retry_reads_true_and_false_only() {
        assert_eq!(
            parse_should_retry(&headers(&[("x-should-retry", "true")])),
            Some(true)
        );
        assert_eq!(
            parse_should_retry(&headers(&[("x-should-retry", "False")])),
            Some(false)
        );
        assert_eq!(
            parse_should_retry(&headers(&[("x-should-retry", "maybe")])),
            None
        );
        assert_eq!(parse_should_retry(&HeaderMap::new()), None);
    }

    #[test]
    fn excerpt_folds_whitespace_and_cuts_at_the_limit() {
        assert_eq!(
            excerpt("  <html>\n  <body>  oops </body>\n"),
            "<html> <body> oops </body>"
        );
        let long = "é".repeat(500);
        let cut = excerpt(&long);
        assert_eq!(cut.chars().count(), EXCERPT_MAX_CHARS);
        assert!(cut.ends_with('…'));
        assert_eq!(excerpt(&"x".repeat(200)), "x".repeat(200));
    }

    #[test]
    fn error_body_reads_each_known_shape() {
        let openai = ErrorBody::parse(
            r#"{"error":{"message":"bad","type":"invalid_request_error","param":"response_format","code":null}}"#,
        );
        assert_eq!(openai.message.as_deref(), Some("bad"));
        assert_eq!(openai.param.as_deref(), Some("response_format"));
        let anthropic = ErrorBody::parse(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(anthropic.error_type.as_deref(), Some("overloaded_error"));
        assert_eq!(anthropic.message.as_deref(), Some("Overloaded"));
        let ollama = ErrorBody::parse(r#"{"error":"model 'x' not found"}"#);
        assert_eq!(ollama.message.as_deref(), Some("model 'x' not found"));
        let vllm =
            ErrorBody::parse(r#"{"object":"error","message":"too long","type":"BadRequestError"}"#);
        assert_eq!(vllm.message.as_deref(), Some("too long"));
        assert_eq!(ErrorBody::parse("<html>"), ErrorBody::default());
    }

    #[test]
    fn base_kind_follows_the_status() {
        let kind = |s: u16| base_kind(StatusCode::from_u16(s).unwrap());
        assert_eq!(kind(401), ProviderErrorKind::Authentication);
        assert_eq!(kind(402), ProviderErrorKind::Permission);
        assert_eq!(kind(408), ProviderErrorKind::Server);
        assert_eq!(kind(409), ProviderErrorKind::Server);
        assert_eq!(kind(418), ProviderErrorKind::InvalidRequest);
        assert_eq!(kind(503), ProviderErrorKind::Overloaded);
        assert_eq!(kind(529), ProviderErrorKind::Overloaded);
        assert_eq!(kind(502), ProviderErrorKind::Server);
    }

    #[test]
    fn redact_removes_every_copy_of_the_secret() {
        assert_eq!(
            redact("key sk-1 and sk-1 again", Some("sk-1")),
            "key [redacted] and [redacted] again"
        );
        assert_eq!(redact("nothing", Some("")), "nothing");
        assert_eq!(redact("nothing", None), "nothing");
    }

    #[test]
    fn temperature_keeps_its_short_decimal_form() {
        assert_eq!(temperature_value(0.2).unwrap().to_string(), "0.2");
        assert_eq!(temperature_value(1.0).unwrap().to_string(), "1.0");
        assert_eq!(temperature_value(f32::NAN), None);
    }

    #[test]
    fn base_url_loses_trailing_slashes() {
        assert_eq!(trim_base_url("http://x/v1//"), "http://x/v1");
    }
}
