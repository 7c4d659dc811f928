//! One reply as read from the wire: its status, headers and body, and the request id it
//! carries.

use std::borrow::Cow;

use bytes::Bytes;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;

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

/// The value of a header, trimmed, when present and printable.
pub(super) fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name)?.to_str().ok().map(str::trim)
}
