//! How a failed call is classified: an error reply's status and body to a
//! [`ProviderErrorKind`], the provider's advice on retrying (`retry-after`,
//! `x-should-retry`), the request id, and redaction of the key from anything quoted.

use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;

use super::response::{RawResponse, header_str};
use crate::provider::error::redact;
use crate::provider::{ProviderError, ProviderErrorKind};

/// The most characters of a reply body an error message quotes.
pub const EXCERPT_MAX_CHARS: usize = 200;

/// How long the provider asked us to wait, from the headers of an error reply.
///
/// Reads `retry-after-ms` (milliseconds) first, then `retry-after` as seconds or as an HTTP
/// date. A zero wait or a date already past is advice too, to retry now
/// (`Some(Duration::ZERO)`); only a missing or unreadable value gives `None`, and the
/// caller's own backoff decides then.
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
                Some(date.duration_since(now).unwrap_or(Duration::ZERO))
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

/// What is wrong with JSON that could not be read, by category and position only: the
/// JSON reader's own message may quote the text it read (`invalid type: string "..."`),
/// and a reply may quote the request, state included.
pub(crate) fn json_error_position(error: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let what = match error.classify() {
        Category::Io => "could not be read",
        Category::Syntax => "is not valid JSON",
        Category::Eof => "ends before its JSON is complete",
        Category::Data => "holds a value of another type than expected",
    };
    format!("{what} (line {}, column {})", error.line(), error.column())
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

/// A wait of `seconds`, zero included; `None` for a negative, infinite or NaN one.
fn positive_duration(seconds: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(seconds).ok()
}

/// A `reqwest` failure as a provider error: a timeout, or a transport failure. A failure
/// to connect sent nothing, so it is no model call.
///
/// The `reqwest` error is kept as the source, without its URL (which could carry a key
/// in its query).
pub(crate) fn transport_error(
    provider: &str,
    err: reqwest::Error,
    secret: Option<&str>,
) -> ProviderError {
    let kind = if err.is_timeout() {
        ProviderErrorKind::Timeout
    } else {
        ProviderErrorKind::Transport
    };
    let message = redact(&error_chain(&err), secret);
    tracing::trace!(provider, %kind, %message, "provider request failed before a reply");
    let connect = err.is_connect();
    let error = ProviderError::new(kind, provider, message).with_source(err.without_url());
    if connect { error.not_sent() } else { error }
}

/// An error and its sources, `: `-joined, because `reqwest`'s own message hides the cause
/// ("error sending request") that says what to fix.
pub(super) fn error_chain(err: &dyn std::error::Error) -> String {
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

/// `kind` as the status allows: a 401 is an authentication failure and a 403 a
/// permission one, whatever the body's error type says (OpenAI answers a wrong key with
/// 401 and `"type": "invalid_request_error"`). A 403 a classifier made an authentication
/// failure (a host whose 403 means a missing key) stays one.
pub(crate) fn status_decides(status: u16, kind: ProviderErrorKind) -> ProviderErrorKind {
    match status {
        401 => ProviderErrorKind::Authentication,
        403 if kind == ProviderErrorKind::Authentication => kind,
        403 => ProviderErrorKind::Permission,
        _ => kind,
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
    let kind = status_decides(raw.status.as_u16(), kind);
    let mut err = ProviderError::new(kind, provider, redact(&message, secret))
        .from_provider_words()
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
    tracing::trace!(
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
    // What is wrong is this crate's to say; the body is the provider's (or a proxy's)
    // words, which may quote the request: kept in the message, never displayed.
    let message = format!("{what}; body starts: {}", excerpt(&raw.body_text()));
    let mut err = ProviderError::new(
        ProviderErrorKind::InvalidResponse,
        provider,
        redact(&message, secret),
    )
    .with_provider_words_from(what.len())
    .with_status(raw.status.as_u16());
    if let Some(id) = raw.request_id(request_id_header) {
        err = err.with_request_id(id);
    }
    err
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

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
    fn retry_after_zero_or_in_the_past_means_retry_now() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2026 07:28:00 GMT").unwrap();
        let past = headers(&[("retry-after", "Wed, 21 Oct 2026 07:27:00 GMT")]);
        assert_eq!(parse_retry_after_at(&past, now), Some(Duration::ZERO));
        for zero in [
            ("retry-after", "0"),
            ("retry-after-ms", "0"),
            ("retry-after", "0.0"),
        ] {
            assert_eq!(
                parse_retry_after(&headers(&[zero])),
                Some(Duration::ZERO),
                "{zero:?}"
            );
        }
        // `retry-after-ms: 0` is advice, and wins over a longer `retry-after`.
        let both = headers(&[("retry-after-ms", "0"), ("retry-after", "9")]);
        assert_eq!(parse_retry_after(&both), Some(Duration::ZERO));
    }

    #[test]
    fn a_401_or_403_is_a_credentials_failure_whatever_the_body_says() {
        use ProviderErrorKind as K;
        assert_eq!(status_decides(401, K::InvalidRequest), K::Authentication);
        assert_eq!(status_decides(403, K::InvalidRequest), K::Permission);
        assert_eq!(status_decides(403, K::RateLimited), K::Permission);
        assert_eq!(status_decides(403, K::Authentication), K::Authentication);
        assert_eq!(status_decides(401, K::Permission), K::Authentication);
        assert_eq!(status_decides(400, K::Authentication), K::Authentication);
        assert_eq!(status_decides(429, K::RateLimited), K::RateLimited);
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
    fn a_json_error_is_described_by_its_position_never_by_what_it_read() {
        #[derive(Debug, serde::Deserialize)]
        struct Line {
            #[allow(dead_code)]
            count: u64,
        }
        let error = serde_json::from_str::<Line>(r#"{"count": "SECRET text"}"#).unwrap_err();
        assert!(
            error.to_string().contains("SECRET"),
            "serde quotes it: {error}"
        );
        let described = json_error_position(&error);
        assert_eq!(
            described,
            "holds a value of another type than expected (line 1, column 23)"
        );
        let cut = serde_json::from_str::<Value>(r#"{"a": "SECRET"#).unwrap_err();
        assert_eq!(
            json_error_position(&cut),
            "ends before its JSON is complete (line 1, column 13)"
        );
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
}
