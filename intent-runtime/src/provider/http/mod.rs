//! The HTTP layer every provider sends through, which knows no wire API: the pooled
//! `reqwest` client, timeouts and the response size limit (`transport`), one reply as read
//! (`response`), turning transport failures and error replies into
//! [`ProviderError`](crate::provider::ProviderError)s with `retry-after` advice and key
//! redaction (`classify`), server-sent-event framing (`sse`), the settings every HTTP
//! provider has and the one send path they use (`connection`), and reading settings from
//! the environment (`variables`). Each wire API's folder above it builds its bodies and
//! reads its replies; Gemini reads its own error bodies (Google's status names and
//! `RetryInfo`, see `gemini/errors.rs`). The same expectations are tested against every
//! provider by the repository's conformance table.
//!
//! How failures are classified (every provider; `x-should-retry: true|false` overrides the
//! transient flag, `retry-after-ms` / `retry-after` fill [`ProviderError::retry_after`](crate::provider::ProviderError::retry_after),
//! a zero or past wait meaning "retry now"). A 401 and a 403 are classified by their
//! status whatever the body's error type says (OpenAI answers a wrong key with 401 and
//! `invalid_request_error`):
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

mod body;
mod classify;
mod config_error;
mod connection;
mod response;
pub(crate) mod sse;
mod transport;
pub(crate) mod variables;

pub(crate) use crate::provider::error::redact;
pub(crate) use body::{schema_json, temperature_value, trim_base_url};
pub use classify::{
    EXCERPT_MAX_CHARS, excerpt, parse_retry_after, parse_retry_after_at, parse_should_retry,
};
pub(crate) use classify::{
    ErrorBody, base_kind, error_from_response, invalid_response, json_error_position, names_schema,
    status_decides,
};
pub use config_error::ProviderConfigError;
pub(crate) use connection::{Connection, WireApi, transport_settings};
pub use response::REQUEST_ID_HEADERS;
pub(crate) use response::RawResponse;
pub use transport::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_REQUEST_TIMEOUT};
pub(crate) use transport::{HttpTransport, Route, RouteCell, read_error};
pub(crate) use variables::{
    Holds, MalformedVariable, PROVIDER_PREFIXES, ProviderVariables, checked_variable, read_checked,
    set_variable, warn_unknown_variables,
};
