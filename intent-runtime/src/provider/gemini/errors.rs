//! Google's error bodies (`{"error": {"code", "message", "status", "details"}}`) read into
//! classified [`ProviderError`]s: the RPC status name decides the kind, `RetryInfo` the
//! wait, and a per-day quota is not worth retrying within a call.
//!
//! | status (HTTP) | kind | transient |
//! | --- | --- | --- |
//! | `INVALID_ARGUMENT` (400) naming the schema | `SchemaRejected` | no |
//! | `INVALID_ARGUMENT` (400) with `API_KEY_INVALID`, `UNAUTHENTICATED` (401) | `Authentication` | no |
//! | `INVALID_ARGUMENT`, `OUT_OF_RANGE`, `ALREADY_EXISTS`, `UNIMPLEMENTED` | `InvalidRequest` | no |
//! | `FAILED_PRECONDITION` (400: free tier not in the region, billing), `PERMISSION_DENIED` (403) | `Permission` | no |
//! | `NOT_FOUND` (404) | `NotFound` | no |
//! | `RESOURCE_EXHAUSTED` (429) | `RateLimited` | yes, unless a per-day quota |
//! | `UNAVAILABLE` (503) | `Overloaded` | yes |
//! | `DEADLINE_EXCEEDED` (504) | `Timeout` | yes |
//! | `INTERNAL`, `UNKNOWN`, `DATA_LOSS`, `ABORTED`, `CANCELLED` (5xx, 409, 499) | `Server` | yes |
//! | anything else | by HTTP status, as for every provider | |

use super::GEMINI_PROVIDER_NAME;
use std::time::Duration;

use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::Value;

use crate::provider::http::{
    ErrorBody, RawResponse, base_kind, error_from_response, redact, status_decides,
};
use crate::provider::{ProviderError, ProviderErrorKind};

/// The header a request id is read from first (then the shared list).
pub(crate) const REQUEST_ID_HEADER: &str = "x-request-id";

/// Words that, in an `INVALID_ARGUMENT` message, mean the response schema was refused.
const SCHEMA_WORDS: &[&str] = &["schema"];

/// The `error` object of a Google API error body.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
pub(crate) struct GoogleError {
    /// The HTTP status, repeated.
    #[serde(default)]
    pub(crate) code: Option<u16>,
    /// What went wrong, in Google's words.
    #[serde(default)]
    pub(crate) message: Option<String>,
    /// The RPC status name (`RESOURCE_EXHAUSTED`).
    #[serde(default)]
    pub(crate) status: Option<String>,
    /// Typed details (`google.rpc.RetryInfo`, `QuotaFailure`, `ErrorInfo`, `Help`).
    #[serde(default)]
    pub(crate) details: Vec<Value>,
}

#[derive(Deserialize)]
struct Envelope {
    error: GoogleError,
}

impl GoogleError {
    /// Reads `{"error": {...}}`, or the same wrapped in a one-element array (how Google
    /// APIs answer a streamed call without `alt=sse`); `None` for anything else.
    pub(crate) fn parse(body: &str) -> Option<Self> {
        let value: Value = serde_json::from_str(body.trim()).ok()?;
        let value = match value {
            Value::Array(mut items) if !items.is_empty() => items.swap_remove(0),
            other => other,
        };
        serde_json::from_value::<Envelope>(value)
            .ok()
            .map(|envelope| envelope.error)
    }

    /// The details whose `@type` ends with `.{name}` (`RetryInfo`).
    fn details_of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.details.iter().filter(move |detail| {
            detail
                .get("@type")
                .and_then(Value::as_str)
                .and_then(|kind| kind.rsplit_once('.'))
                .is_some_and(|(_, last)| last == name)
        })
    }

    /// `RetryInfo.retryDelay`: how long Google asked the caller to wait.
    pub(crate) fn retry_delay(&self) -> Option<Duration> {
        self.details_of("RetryInfo")
            .find_map(|detail| detail.get("retryDelay").and_then(proto_duration))
    }

    /// The `reason`s of `ErrorInfo` details (`API_KEY_INVALID`).
    fn reasons(&self) -> impl Iterator<Item = &str> {
        self.details_of("ErrorInfo")
            .filter_map(|detail| detail.get("reason").and_then(Value::as_str))
    }

    /// The `quotaId`s (else `quotaMetric`s) of the `QuotaFailure` violations.
    fn quotas(&self) -> Vec<&str> {
        self.details_of("QuotaFailure")
            .filter_map(|detail| detail.get("violations").and_then(Value::as_array))
            .flatten()
            .filter_map(|violation| {
                violation
                    .get("quotaId")
                    .or_else(|| violation.get("quotaMetric"))
                    .and_then(Value::as_str)
            })
            .collect()
    }

    /// Whether a quota that was exceeded is counted per day: it will not clear within the
    /// seconds a call's retries wait.
    fn daily_quota(&self) -> bool {
        self.quotas()
            .iter()
            .any(|quota| quota.to_ascii_lowercase().contains("perday"))
    }
}

/// A protobuf `Duration` as JSON: `"27s"`, `"1.5s"`, or `{"seconds", "nanos"}` (zero
/// meaning "retry now", as `retry-after: 0` does); `None` for anything unreadable.
pub(crate) fn proto_duration(value: &Value) -> Option<Duration> {
    let seconds = match value {
        Value::String(text) => text.trim().strip_suffix('s')?.trim().parse::<f64>().ok()?,
        Value::Object(map) => {
            let whole = match map.get("seconds") {
                Some(Value::String(text)) => text.parse::<f64>().ok()?,
                Some(other) => other.as_f64()?,
                None => 0.0,
            };
            whole + map.get("nanos").and_then(Value::as_f64).unwrap_or(0.0) / 1e9
        }
        _ => return None,
    };
    Duration::try_from_secs_f64(seconds).ok()
}

/// The kind of a Google error: by its RPC status name, else by the HTTP status.
pub(crate) fn classify(status: StatusCode, error: Option<&GoogleError>) -> ProviderErrorKind {
    let Some(error) = error else {
        return base_kind(status);
    };
    if error.reasons().any(|reason| reason == "API_KEY_INVALID") {
        return ProviderErrorKind::Authentication;
    }
    let names_schema = error.message.as_deref().is_some_and(|message| {
        let lower = message.to_ascii_lowercase();
        SCHEMA_WORDS.iter().any(|word| lower.contains(word))
    });
    let by_name = error.status.as_deref().and_then(kind_of_status);
    let invalid_argument = match error.status.as_deref() {
        Some(name) => name == "INVALID_ARGUMENT",
        None => status == StatusCode::BAD_REQUEST,
    };
    if invalid_argument && names_schema {
        return ProviderErrorKind::SchemaRejected;
    }
    // An unknown status name says nothing the HTTP status does not.
    by_name.unwrap_or_else(|| base_kind(status))
}

/// The kind an RPC status name stands for.
pub(crate) fn kind_of_status(status: &str) -> Option<ProviderErrorKind> {
    Some(match status {
        "INVALID_ARGUMENT" | "OUT_OF_RANGE" | "ALREADY_EXISTS" | "UNIMPLEMENTED" => {
            ProviderErrorKind::InvalidRequest
        }
        "FAILED_PRECONDITION" | "PERMISSION_DENIED" => ProviderErrorKind::Permission,
        "UNAUTHENTICATED" => ProviderErrorKind::Authentication,
        "NOT_FOUND" => ProviderErrorKind::NotFound,
        "RESOURCE_EXHAUSTED" => ProviderErrorKind::RateLimited,
        "UNAVAILABLE" => ProviderErrorKind::Overloaded,
        "DEADLINE_EXCEEDED" => ProviderErrorKind::Timeout,
        "INTERNAL" | "UNKNOWN" | "DATA_LOSS" | "ABORTED" | "CANCELLED" => ProviderErrorKind::Server,
        _ => return None,
    })
}

/// Google's message, with what makes it actionable added: the quota that ran out, and
/// that a per-day quota will not clear by waiting seconds.
fn message(error: &GoogleError) -> Option<String> {
    let mut message = error.message.as_deref()?.trim().to_owned();
    let quotas = error.quotas();
    if !quotas.is_empty() {
        message.push_str(&format!(" (quota: {})", quotas.join(", ")));
    }
    if error.daily_quota() {
        message.push_str(
            "; this is a per-day quota, which retries within this call cannot outlast: \
             wait for it to reset or raise it in Google AI Studio",
        );
    }
    Some(message)
}

/// The classified error of a reply with an error status.
pub(crate) fn error_reply(raw: &RawResponse, secret: Option<&str>) -> ProviderError {
    let error = GoogleError::parse(&raw.body_text());
    let kind = classify(raw.status, error.as_ref());
    let body = ErrorBody {
        message: error.as_ref().and_then(message),
        error_type: error.as_ref().and_then(|error| error.status.clone()),
        param: None,
    };
    let mut err = error_from_response(
        GEMINI_PROVIDER_NAME,
        raw,
        kind,
        &body,
        REQUEST_ID_HEADER,
        secret,
    );
    if let Some(error) = &error {
        err = with_google_hints(err, error);
    }
    err
}

/// `RetryInfo` as the wait (when no header gave one), and a per-day quota as not
/// transient.
fn with_google_hints(mut err: ProviderError, error: &GoogleError) -> ProviderError {
    if err.retry_after().is_none()
        && let Some(wait) = error.retry_delay()
    {
        err = err.with_retry_after(wait);
    }
    if err.kind() == ProviderErrorKind::RateLimited && error.daily_quota() {
        err = err.with_transient(false);
    }
    err
}

/// The error a streamed event carries (`data: {"error": {...}}`), classified like a
/// reply's; an unknown status after the reply started is most likely the server's failure.
pub(crate) fn stream_error(
    error: &GoogleError,
    request_id: Option<&str>,
    secret: Option<&str>,
) -> ProviderError {
    let kind = error
        .status
        .as_deref()
        .and_then(kind_of_status)
        .or_else(|| {
            error
                .code
                .and_then(|code| StatusCode::from_u16(code).ok())
                .map(base_kind)
        })
        .unwrap_or(ProviderErrorKind::Server);
    let kind = error.code.map_or(kind, |code| status_decides(code, kind));
    let text = message(error)
        .filter(|text| !text.is_empty())
        .unwrap_or_else(|| "the server reported an error in the middle of the reply".to_owned());
    let mut err =
        ProviderError::new(kind, GEMINI_PROVIDER_NAME, redact(&text, secret)).from_provider_words();
    if let Some(code) = error.code {
        err = err.with_status(code);
    }
    if let Some(id) = request_id {
        err = err.with_request_id(id);
    }
    with_google_hints(err, error)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn google(body: Value) -> GoogleError {
        GoogleError::parse(&body.to_string()).unwrap()
    }

    #[test]
    fn retry_delays_are_protobuf_durations() {
        assert_eq!(proto_duration(&json!("27s")), Some(Duration::from_secs(27)));
        assert_eq!(
            proto_duration(&json!("1.5s")),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            proto_duration(&json!({"seconds": "2", "nanos": 500000000})),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(proto_duration(&json!("0s")), Some(Duration::ZERO));
        for bad in [json!("soon"), json!("-3s"), json!(5), json!("1e400s")] {
            assert_eq!(proto_duration(&bad), None, "{bad}");
        }
    }

    #[test]
    fn status_names_decide_the_kind() {
        let cases = [
            ("INVALID_ARGUMENT", 400, ProviderErrorKind::InvalidRequest),
            ("FAILED_PRECONDITION", 400, ProviderErrorKind::Permission),
            ("UNAUTHENTICATED", 401, ProviderErrorKind::Authentication),
            ("PERMISSION_DENIED", 403, ProviderErrorKind::Permission),
            ("NOT_FOUND", 404, ProviderErrorKind::NotFound),
            ("RESOURCE_EXHAUSTED", 429, ProviderErrorKind::RateLimited),
            ("INTERNAL", 500, ProviderErrorKind::Server),
            ("UNAVAILABLE", 503, ProviderErrorKind::Overloaded),
            ("DEADLINE_EXCEEDED", 504, ProviderErrorKind::Timeout),
            ("SOMETHING_NEW", 503, ProviderErrorKind::Overloaded),
        ];
        for (status, code, kind) in cases {
            let error = google(json!({"error": {"code": code, "message": "m", "status": status}}));
            let http = StatusCode::from_u16(code).unwrap();
            assert_eq!(classify(http, Some(&error)), kind, "{status}");
        }
        assert_eq!(
            classify(StatusCode::BAD_GATEWAY, None),
            ProviderErrorKind::Server
        );
    }

    #[test]
    fn a_schema_complaint_and_a_bad_key_are_told_apart() {
        let schema = google(json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
            "message": "Invalid JSON payload received. Unknown name \"foo\" at 'generation_config.response_json_schema'"}}));
        assert_eq!(
            classify(StatusCode::BAD_REQUEST, Some(&schema)),
            ProviderErrorKind::SchemaRejected
        );
        let key = google(json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
            "message": "API key not valid. Please pass a valid API key.",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                         "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}}));
        assert_eq!(
            classify(StatusCode::BAD_REQUEST, Some(&key)),
            ProviderErrorKind::Authentication
        );
    }

    #[test]
    fn an_array_wrapped_error_is_read() {
        let error = GoogleError::parse(
            r#"[{"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}]"#,
        )
        .unwrap();
        assert_eq!(error.status.as_deref(), Some("UNAVAILABLE"));
        assert_eq!(GoogleError::parse("<html>"), None);
        assert_eq!(GoogleError::parse(r#"{"error": "text"}"#), None);
    }

    #[test]
    fn a_daily_quota_is_named_and_not_transient() {
        let error = google(
            json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
            "message": "You exceeded your current quota.",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                 "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}
            ]}}),
        );
        let err = stream_error(&error, Some("req-1"), None);
        assert_eq!(err.kind(), ProviderErrorKind::RateLimited);
        assert!(!err.is_transient());
        assert_eq!(err.retry_after(), Some(Duration::from_secs(3)));
        assert!(
            err.message()
                .contains("GenerateRequestsPerDayPerProjectPerModel-FreeTier")
        );
        assert!(err.message().contains("per-day quota"), "{}", err.message());
    }
}
