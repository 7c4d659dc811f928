//! Why a decision host's client could not be built, and how its error replies are read:
//! each host's envelope, the message in the order the official SDK reads it, and the
//! kind from the body's error type before the status.

use reqwest::StatusCode;
use serde_json::Value;

use super::hosts::DecisionHost;
use crate::provider::http::{
    ErrorBody, MalformedVariable, RawResponse, base_kind, error_from_response, excerpt,
};
use crate::provider::{ProviderError, ProviderErrorKind};

/// The header TypeSafe names the request with.
pub(super) const REQUEST_ID_HEADER: &str = "x-typesafe-request-id";

crate::failure::debug_as_message!(SystemOneConfigError);

/// What a decision-model client could not be configured with.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SystemOneConfigError {
    /// Neither the key nor the base URL variable is set: no decision model is configured.
    #[error(
        "no decision model is configured: set TYPESAFE_API_KEY (TypeSafe's API) or \
         TYPESAFE_BASE_URL (any System One server, such as a local one at http://127.0.0.1:8787)"
    )]
    NotConfigured,
    /// A hosted API was chosen without a key.
    #[error("{host} needs an API key: set TYPESAFE_API_KEY")]
    MissingApiKey {
        /// The host chosen.
        host: &'static str,
    },
    /// `TYPESAFE_HOST` names no host this client knows.
    #[error(
        "TYPESAFE_HOST is `{value}`, which names no known host; use typesafe, openrouter, \
         litellm, fireworks, ollama or compatible"
    )]
    UnknownHost {
        /// The value read.
        value: String,
    },
    /// A variable holds something it cannot be used as: a base URL that is not an
    /// absolute http(s) URL, a key with a line break or a space inside.
    #[error("the environment variable {variable} {problem}")]
    MalformedVariable {
        /// The variable read.
        variable: &'static str,
        /// What is wrong with it and what to set (a key's value is never quoted).
        problem: String,
    },
    /// `TYPESAFE_WIRE_FORMAT` names no wire format.
    #[error(
        "TYPESAFE_WIRE_FORMAT is `{value}`, which names no wire format; use systemone or \
         openai-decisions"
    )]
    UnknownWireFormat {
        /// The value read.
        value: String,
    },
}

impl SystemOneConfigError {
    /// A variable read with a value it cannot hold.
    pub(super) fn malformed(malformed: MalformedVariable) -> Self {
        SystemOneConfigError::MalformedVariable {
            variable: malformed.variable,
            problem: malformed.problem,
        }
    }
}

/// The classified error of a reply with an error status.
pub(super) fn error_reply(
    host: DecisionHost,
    provider: &str,
    raw: &RawResponse,
    secret: Option<&str>,
) -> ProviderError {
    let text = raw.body_text();
    let (error_type, message) = match serde_json::from_str::<Value>(&text) {
        Ok(body) => (error_type(&body), message(&body)),
        // Not JSON: a proxy's or a server's own page, which quotes no request.
        Err(_) if !text.trim().is_empty() => (None, Some(excerpt(&text))),
        Err(_) => (None, None),
    };
    let kind = classify(host, raw.status, error_type.as_deref());
    let message = message.or_else(|| match error_type.as_deref() {
        Some("max_tokens_exceeded") => Some(
            "the state and the questions are longer than the model reads \
             (max_tokens_exceeded): send less state or fewer questions"
                .to_owned(),
        ),
        Some(other) => Some(format!("the host answered `{other}` without a message")),
        // A JSON body in no known shape may quote the request: it is not excerpted.
        None if !text.trim().is_empty() => {
            Some("the error body is in no shape this client reads".to_owned())
        }
        None => None,
    });
    let body = ErrorBody {
        message,
        ..ErrorBody::default()
    };
    error_from_response(provider, raw, kind, &body, REQUEST_ID_HEADER, secret)
}

/// The error's type: TypeSafe's `detail.error_type`, or `error.type` (OpenAI, LiteLLM,
/// Vercel).
fn error_type(body: &Value) -> Option<String> {
    body.pointer("/detail/error_type")
        .or_else(|| body.pointer("/error/type"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The message, in the order TypeSafe's SDK reads it: an `error` string, `error.message`,
/// `message`, a `detail` string, `detail.message`, then a validation list's entries as
/// `path: msg` (without the leading `body`). A validation entry's `input` is never read:
/// it echoes the request, state included.
fn message(body: &Value) -> Option<String> {
    let text = |value: Option<&Value>| {
        value
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
    };
    text(body.get("error"))
        .or_else(|| text(body.pointer("/error/message")))
        .or_else(|| text(body.get("message")))
        .or_else(|| text(body.get("detail")))
        .or_else(|| text(body.pointer("/detail/message")))
        .or_else(|| {
            let entries = body.get("detail")?.as_array()?;
            let joined: Vec<String> = entries.iter().filter_map(validation_entry).collect();
            (!joined.is_empty()).then(|| joined.join("; "))
        })
}

fn validation_entry(entry: &Value) -> Option<String> {
    let msg = entry.get("msg")?.as_str()?;
    let path: Vec<String> = entry
        .get("loc")
        .and_then(Value::as_array)
        .map(|loc| {
            loc.iter()
                .skip_while(|part| part.as_str() == Some("body"))
                .map(|part| match part {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    Some(if path.is_empty() {
        msg.to_owned()
    } else {
        format!("{}: {msg}", path.join("."))
    })
}

/// The kind: a 401 is an authentication failure and a 403 a permission one whatever the
/// body says (OpenAI's wrong-key body says `invalid_request_error`); TypeSafe's 403 is a
/// missing key, so an authentication failure. Otherwise the body's error type decides
/// where it says (LiteLLM answers a throttled request with its own type), then the
/// status.
fn classify(host: DecisionHost, status: StatusCode, error_type: Option<&str>) -> ProviderErrorKind {
    match status.as_u16() {
        401 => return ProviderErrorKind::Authentication,
        403 if host == DecisionHost::TypeSafe => return ProviderErrorKind::Authentication,
        403 if error_type == Some("authentication_error") => {
            return ProviderErrorKind::Authentication;
        }
        403 => return ProviderErrorKind::Permission,
        _ => {}
    }
    match error_type {
        Some("authentication_error") => return ProviderErrorKind::Authentication,
        Some("permission_error") => return ProviderErrorKind::Permission,
        Some("rate_limit_error" | "throttling_error") => return ProviderErrorKind::RateLimited,
        Some("overloaded_error") => return ProviderErrorKind::Overloaded,
        Some("invalid_request_error" | "max_tokens_exceeded") => {
            return ProviderErrorKind::InvalidRequest;
        }
        // A LiteLLM proxy without a database cannot check a virtual key at all.
        Some("no_db_connection") if host == DecisionHost::LiteLlm => {
            return ProviderErrorKind::Authentication;
        }
        _ => {}
    }
    match status.as_u16() {
        408 | 504 => ProviderErrorKind::Timeout,
        _ => base_kind(status),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn messages_are_read_in_the_sdks_order_and_never_quote_the_input() {
        assert_eq!(
            message(&json!({"error": "plain"})).as_deref(),
            Some("plain")
        );
        assert_eq!(
            message(&json!({"error": {"code": 503, "message": "No available model provider"}}))
                .as_deref(),
            Some("No available model provider")
        );
        assert_eq!(
            message(&json!({"detail": {"error_type": "rate_limit_error", "message": "slow down"}}))
                .as_deref(),
            Some("slow down")
        );
        assert_eq!(message(&json!({"detail": "gone"})).as_deref(), Some("gone"));
        let validation = json!({"detail": [
            {"loc": ["body", "questions", "q", "score", "criteria"], "msg": "List should have at most 10 items", "type": "too_long", "input": ["SECRET"]},
            {"loc": ["body", "state"], "msg": "Field required", "type": "missing"},
        ]});
        let read = message(&validation).unwrap();
        assert_eq!(
            read,
            "questions.q.score.criteria: List should have at most 10 items; state: Field required"
        );
        assert!(!read.contains("SECRET"));
        assert_eq!(
            message(&json!({"detail": {"error_type": "max_tokens_exceeded"}})),
            None
        );
    }

    #[test]
    fn the_error_type_decides_before_the_status() {
        let status = |s| StatusCode::from_u16(s).unwrap();
        let host = DecisionHost::TypeSafe;
        assert_eq!(
            classify(host, status(403), Some("authentication_error")),
            ProviderErrorKind::Authentication
        );
        // A 401 or 403 is a credentials failure whatever the body says: OpenAI's body
        // for a wrong key says `invalid_request_error`.
        for host in [DecisionHost::Compatible, DecisionHost::LiteLlm, host] {
            assert_eq!(
                classify(host, status(401), Some("invalid_request_error")),
                ProviderErrorKind::Authentication
            );
        }
        assert_eq!(
            classify(
                DecisionHost::Compatible,
                status(403),
                Some("invalid_request_error")
            ),
            ProviderErrorKind::Permission
        );
        assert_eq!(
            classify(host, status(403), Some("invalid_request_error")),
            ProviderErrorKind::Authentication
        );
        assert_eq!(
            classify(host, status(403), None),
            ProviderErrorKind::Authentication
        );
        assert_eq!(
            classify(DecisionHost::Compatible, status(403), None),
            ProviderErrorKind::Permission
        );
        assert_eq!(
            classify(DecisionHost::LiteLlm, status(500), Some("throttling_error")),
            ProviderErrorKind::RateLimited
        );
        assert_eq!(
            classify(DecisionHost::LiteLlm, status(400), Some("no_db_connection")),
            ProviderErrorKind::Authentication
        );
        assert_eq!(
            classify(host, status(400), Some("no_db_connection")),
            ProviderErrorKind::InvalidRequest
        );
        assert_eq!(
            classify(host, status(408), None),
            ProviderErrorKind::Timeout
        );
        assert_eq!(
            classify(host, status(529), None),
            ProviderErrorKind::Overloaded
        );
        assert_eq!(classify(host, status(502), None), ProviderErrorKind::Server);
        assert_eq!(
            classify(host, status(422), None),
            ProviderErrorKind::InvalidRequest
        );
    }
}
