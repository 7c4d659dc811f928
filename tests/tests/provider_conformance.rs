//! One table of expected behaviour, run against every HTTP provider over loopback: how an
//! error reply's status, body and headers become a `ProviderError` (kind, transient flag,
//! `retry_after`, request id, message), the response size limit, timeouts and broken
//! connections, and the API key never leaking. What is particular to one API (its
//! documented error types, its reply shapes) stays in that provider's own test file.
//!
//! A new provider joins by adding a [`Subject`] to [`subjects`]: every row then runs
//! against it, and against the decision client it gets. The status rows also run against
//! the System One client in each wire format ([`decision_subjects`]), read as decision
//! failures.

mod provider_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use intent_rs::decision::{
    BinaryQuestion, DecisionClient, DecisionHost, DecisionRequest, FailureKind, SystemOneClient,
    WireFormat, decision_client_for,
};
use intent_rs::limits::RetryPolicy;
use intent_rs::provider::{
    Anthropic, AzureOpenAi, Gemini, OpenAi, OpenAiCompatible, OpenAiResponses, Provider,
    ProviderError, ProviderErrorKind, ProviderRequest,
};
use intent_rs::{IntentClient, IntentOptions};
use provider_support::{CapturedLogs, SECRET_KEY};
use serde_json::{Value, json};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The settings a row may change from a provider's defaults.
#[derive(Clone, Copy, Default)]
struct Settings {
    timeout: Option<Duration>,
    max_response_bytes: Option<usize>,
}

/// One provider under test: how to build it against a server, and how its API writes what
/// the table needs.
struct Subject {
    /// The provider's name, as its errors report it.
    name: &'static str,
    /// The provider with [`SECRET_KEY`], sending to `base_url` (a server's root).
    build: fn(base_url: &str, settings: Settings) -> Arc<dyn Provider>,
    /// A success reply whose text is `text`.
    success: fn(text: &str) -> Value,
    /// An error reply in the API's shape: the type the API documents for `status`, and
    /// `message`.
    error: fn(status: u16, message: &str) -> Value,
    /// An error reply whose type says "invalid request" whatever the status (OpenAI's
    /// body for a wrong key is one, with 401).
    invalid_request: fn(status: u16, message: &str) -> Value,
    /// The header the API sends its request id in.
    request_id_header: &'static str,
    /// What its debug log calls a call (so the log capture is known to have seen it).
    logged_as: &'static str,
}

/// A provider built by `$provider`, with the row's settings applied (every HTTP provider
/// has the same `with_timeout` and `with_max_response_bytes`).
macro_rules! configured {
    ($provider:expr, $settings:expr) => {{
        let mut provider = $provider;
        if let Some(timeout) = $settings.timeout {
            provider = provider.with_timeout(timeout);
        }
        if let Some(bytes) = $settings.max_response_bytes {
            provider = provider.with_max_response_bytes(bytes);
        }
        Arc::new(provider) as Arc<dyn Provider>
    }};
}

fn openai_error(status: u16, message: &str) -> Value {
    let error_type = match status {
        429 => "requests",
        500..=599 => "server_error",
        _ => "invalid_request_error",
    };
    json!({"error": {"message": message, "type": error_type, "param": null, "code": null}})
}

/// OpenAI's real body for a wrong key (with 401), its type saying "invalid request".
fn openai_invalid_request(_status: u16, message: &str) -> Value {
    json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}})
}

fn openai_success(text: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": null}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    })
}

fn anthropic_error(status: u16, message: &str) -> Value {
    let error_type = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": error_type, "message": message}})
}

fn anthropic_invalid_request(_status: u16, message: &str) -> Value {
    json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
}

fn anthropic_success(text: &str) -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 3, "output_tokens": 1}
    })
}

fn gemini_error(status: u16, message: &str) -> Value {
    let status_name = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    };
    json!({"error": {"code": status, "message": message, "status": status_name}})
}

fn gemini_invalid_request(status: u16, message: &str) -> Value {
    json!({"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}})
}

fn gemini_success(text: &str) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1, "totalTokenCount": 4},
        "modelVersion": "gemini-2.5-flash", "responseId": "r-1"
    })
}

fn responses_success(text: &str) -> Value {
    json!({
        "id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
        "error": null, "incomplete_details": null, "model": "m",
        "output": [{"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "annotations": [], "text": text}]}],
        "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}
    })
}

fn subjects() -> Vec<Subject> {
    vec![
        Subject {
            name: "openai",
            build: |base_url, settings| {
                configured!(
                    OpenAi::new(SECRET_KEY).with_base_url(format!("{base_url}/v1")),
                    settings
                )
            },
            success: openai_success,
            error: openai_error,
            invalid_request: openai_invalid_request,
            request_id_header: "x-request-id",
            logged_as: "sending a chat completion",
        },
        Subject {
            name: "openai-compatible",
            build: |base_url, settings| {
                configured!(
                    OpenAiCompatible::openrouter(SECRET_KEY, "m")
                        .with_name("openai-compatible")
                        .with_base_url(format!("{base_url}/v1")),
                    settings
                )
            },
            success: openai_success,
            error: openai_error,
            invalid_request: openai_invalid_request,
            request_id_header: "x-request-id",
            logged_as: "sending a chat completion",
        },
        Subject {
            name: "openai-responses",
            build: |base_url, settings| {
                configured!(
                    OpenAiResponses::new(SECRET_KEY).with_base_url(format!("{base_url}/v1")),
                    settings
                )
            },
            success: responses_success,
            error: openai_error,
            invalid_request: openai_invalid_request,
            request_id_header: "x-request-id",
            logged_as: "sending a response",
        },
        Subject {
            name: "gcp.gemini",
            build: |base_url, settings| {
                configured!(
                    Gemini::new(SECRET_KEY).with_base_url(format!("{base_url}/v1beta")),
                    settings
                )
            },
            success: gemini_success,
            error: gemini_error,
            invalid_request: gemini_invalid_request,
            request_id_header: "x-request-id",
            logged_as: "sending a generateContent request",
        },
        Subject {
            name: "azure.ai.openai",
            build: |base_url, settings| {
                configured!(
                    AzureOpenAi::new(base_url, SECRET_KEY, "deployment-1"),
                    settings
                )
            },
            success: openai_success,
            error: openai_error,
            invalid_request: openai_invalid_request,
            request_id_header: "x-request-id",
            logged_as: "sending a chat completion",
        },
        Subject {
            name: "anthropic",
            build: |base_url, settings| {
                configured!(Anthropic::new(SECRET_KEY).with_base_url(base_url), settings)
            },
            success: anthropic_success,
            error: anthropic_error,
            invalid_request: anthropic_invalid_request,
            request_id_header: "request-id",
            logged_as: "sending a message request",
        },
    ]
}

fn request() -> ProviderRequest {
    ProviderRequest::text("Answer briefly.", "hi")
}

/// The error `subject` makes of one reply from a server that answers every request with
/// `template`.
async fn error_for(subject: &Subject, template: ResponseTemplate) -> ProviderError {
    error_with(subject, template, Settings::default()).await
}

async fn error_with(
    subject: &Subject,
    template: ResponseTemplate,
    settings: Settings,
) -> ProviderError {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(template)
        .mount(&server)
        .await;
    let provider = (subject.build)(&server.uri(), settings);
    match provider.complete(&request()).await {
        Ok(reply) => panic!("{}: expected an error, got {reply:?}", subject.name),
        Err(err) => err,
    }
}

/// One row of the status table: an error status (with the API's documented error body and
/// its own request-id header, plus `headers`) and what it must become.
struct StatusRow {
    status: u16,
    headers: &'static [(&'static str, &'static str)],
    /// The body's type says "invalid request" instead of the type documented for the
    /// status: the status must decide.
    says_invalid_request: bool,
    kind: ProviderErrorKind,
    transient: bool,
    retry_after: Option<Duration>,
}

const fn row(status: u16, kind: ProviderErrorKind, transient: bool) -> StatusRow {
    StatusRow {
        status,
        headers: &[],
        says_invalid_request: false,
        kind,
        transient,
        retry_after: None,
    }
}

fn status_rows() -> Vec<StatusRow> {
    use ProviderErrorKind::*;
    vec![
        row(400, InvalidRequest, false),
        row(401, Authentication, false),
        row(403, Permission, false),
        row(404, NotFound, false),
        row(429, RateLimited, true),
        row(500, Server, true),
        row(502, Server, true),
        row(503, Overloaded, true),
        StatusRow {
            headers: &[("retry-after-ms", "1500"), ("retry-after", "2")],
            retry_after: Some(Duration::from_millis(1500)),
            ..row(429, RateLimited, true)
        },
        StatusRow {
            headers: &[("retry-after", "7")],
            retry_after: Some(Duration::from_secs(7)),
            ..row(500, Server, true)
        },
        // Zero is advice too: retry now.
        StatusRow {
            headers: &[("retry-after", "0")],
            retry_after: Some(Duration::ZERO),
            ..row(429, RateLimited, true)
        },
        // A 401 and a 403 are credentials failures whatever the body's type says.
        StatusRow {
            says_invalid_request: true,
            ..row(401, Authentication, false)
        },
        StatusRow {
            says_invalid_request: true,
            ..row(403, Permission, false)
        },
        // The provider knows better than the status whether a retry can help.
        StatusRow {
            headers: &[("x-should-retry", "false")],
            ..row(429, RateLimited, false)
        },
        StatusRow {
            headers: &[("x-should-retry", "true")],
            ..row(400, InvalidRequest, true)
        },
    ]
}

#[tokio::test]
async fn every_status_becomes_the_same_kind_with_the_same_advice_on_every_provider() {
    for subject in subjects() {
        for row in status_rows() {
            let message = format!("documented failure {}", row.status);
            let body = if row.says_invalid_request {
                (subject.invalid_request)(row.status, &message)
            } else {
                (subject.error)(row.status, &message)
            };
            let mut template = ResponseTemplate::new(row.status)
                .set_body_json(body)
                .insert_header(subject.request_id_header, "req-table");
            for (name, value) in row.headers {
                template = template.insert_header(*name, *value);
            }
            let err = error_for(&subject, template).await;
            let label = format!(
                "{} HTTP {} {:?} invalid request body: {}",
                subject.name, row.status, row.headers, row.says_invalid_request
            );
            assert_eq!(err.kind(), row.kind, "{label}: {err}");
            assert_eq!(err.is_transient(), row.transient, "{label}");
            assert_eq!(err.retry_after(), row.retry_after, "{label}");
            assert_eq!(err.status(), Some(row.status), "{label}");
            assert_eq!(err.message(), message, "{label}");
            assert_eq!(err.request_id(), Some("req-table"), "{label}");
            assert_eq!(err.provider(), subject.name, "{label}");
            assert!(err.request_sent(), "{label}");
        }
    }
}

/// Every status row, through a typed intent call on every provider: the call's error has
/// the row's kind and data, read without a message, and never shows the provider's words.
#[tokio::test]
async fn every_status_row_ends_an_intent_call_with_its_kind_on_every_provider() {
    for subject in subjects() {
        for row in status_rows() {
            let words = format!("PROVIDER-WORDS-{}", row.status);
            let body = if row.says_invalid_request {
                (subject.invalid_request)(row.status, &words)
            } else {
                (subject.error)(row.status, &words)
            };
            let mut template = ResponseTemplate::new(row.status)
                .set_body_json(body)
                .insert_header(subject.request_id_header, "req-table");
            for (name, value) in row.headers {
                template = template.insert_header(*name, *value);
            }
            let server = MockServer::start().await;
            Mock::given(wiremock::matchers::any())
                .respond_with(template)
                .mount(&server)
                .await;
            let client = IntentClient::builder()
                .shared_provider((subject.build)(&server.uri(), Settings::default()))
                .max_attempts(1)
                .retry_policy(RetryPolicy {
                    max_retries: 0,
                    ..RetryPolicy::default()
                })
                .build()
                .expect("a client");
            let error = client
                .transform::<_, u32>("the ticket", "Count the words", IntentOptions::default())
                .await
                .into_result()
                .expect_err("a failed call");
            let label = format!("{} HTTP {} {:?}", subject.name, row.status, row.headers);
            assert_eq!(error.kind(), decision_kind(row.kind), "{label}");
            let facts = error.provider().expect("the provider's facts");
            assert_eq!(facts.kind, row.kind, "{label}");
            assert_eq!(facts.status, Some(row.status), "{label}");
            assert_eq!(facts.request_id.as_deref(), Some("req-table"), "{label}");
            assert_eq!(error.retry_after(), row.retry_after, "{label}");
            assert_eq!(error.model_calls(), 1, "{label}");
            let source = std::error::Error::source(&error).expect("a source");
            let provider = source
                .downcast_ref::<ProviderError>()
                .expect("the source is the provider error");
            assert_eq!(provider.message(), words, "{label}");
            for shown in [error.to_string(), format!("{error:?}")] {
                assert!(!shown.contains(&words), "{label}: {shown}");
            }
        }
    }
}

#[tokio::test]
async fn a_retry_after_date_is_a_wait_on_every_provider() {
    for subject in subjects() {
        let template = ResponseTemplate::new(503)
            .set_body_json((subject.error)(503, "overloaded"))
            .insert_header("retry-after", "Fri, 01 Jan 2100 00:00:00 GMT");
        let err = error_for(&subject, template).await;
        let wait = err.retry_after().unwrap_or_default();
        assert!(
            wait > Duration::from_secs(365 * 24 * 3600),
            "{}",
            subject.name
        );
    }
}

#[tokio::test]
async fn a_gateways_request_id_is_read_when_the_api_sends_none() {
    for subject in subjects() {
        let template = ResponseTemplate::new(500)
            .set_body_json((subject.error)(500, "boom"))
            .insert_header("apim-request-id", "gateway-7");
        let err = error_for(&subject, template).await;
        assert_eq!(err.request_id(), Some("gateway-7"), "{}", subject.name);
    }
}

#[tokio::test]
async fn error_pages_that_are_not_the_apis_json_keep_a_short_excerpt() {
    let html = format!(
        "<html><head><title>502 Bad Gateway</title></head><body>{}</body></html>",
        "x".repeat(400)
    );
    for subject in subjects() {
        let err = error_for(
            &subject,
            ResponseTemplate::new(502).set_body_raw(html.clone(), "text/html"),
        )
        .await;
        assert_eq!(err.kind(), ProviderErrorKind::Server, "{}", subject.name);
        assert!(err.is_transient());
        let quoted = err
            .message()
            .strip_prefix("unexpected error body: ")
            .unwrap_or_else(|| panic!("{}: {}", subject.name, err.message()));
        assert!(quoted.starts_with("<html><head><title>502 Bad Gateway"));
        assert_eq!(quoted.chars().count(), 200, "{}", subject.name);

        let empty = error_for(&subject, ResponseTemplate::new(502)).await;
        assert_eq!(empty.message(), "HTTP Bad Gateway with an empty body");
    }
}

#[tokio::test]
async fn a_success_status_with_a_body_that_is_not_the_api_is_an_invalid_response() {
    for subject in subjects() {
        let err = error_for(
            &subject,
            ResponseTemplate::new(200)
                .set_body_raw("<!DOCTYPE html><html>Sign in</html>", "text/html")
                .insert_header(subject.request_id_header, "req-bad"),
        )
        .await;
        assert_eq!(err.kind(), ProviderErrorKind::InvalidResponse, "{err}");
        assert!(!err.is_transient(), "{}", subject.name);
        assert!(
            err.message().contains("body starts: <!DOCTYPE html>"),
            "{}: {}",
            subject.name,
            err.message()
        );
        assert_eq!(err.request_id(), Some("req-bad"), "{}", subject.name);
    }
}

#[tokio::test]
async fn a_reply_past_the_size_limit_fails_at_once_and_is_not_retried() {
    for subject in subjects() {
        let limit = 256;
        let template = ResponseTemplate::new(200)
            .set_body_json((subject.success)(&"many words ".repeat(100)))
            .insert_header(subject.request_id_header, "req-big");
        let settings = Settings {
            max_response_bytes: Some(limit),
            ..Settings::default()
        };
        let err = error_with(&subject, template, settings).await;
        assert_eq!(err.kind(), ProviderErrorKind::InvalidResponse, "{err}");
        assert!(!err.is_transient(), "{}", subject.name);
        assert!(
            err.message()
                .contains(&format!("larger than the {limit} bytes")),
            "{}: {err}",
            subject.name
        );
        assert_eq!(err.request_id(), Some("req-big"), "{}", subject.name);
    }
}

#[tokio::test]
async fn a_slow_reply_past_the_timeout_is_a_transient_timeout() {
    for subject in subjects() {
        let template = ResponseTemplate::new(200)
            .set_body_json((subject.success)("late"))
            .set_delay(Duration::from_secs(3));
        let settings = Settings {
            timeout: Some(Duration::from_millis(200)),
            ..Settings::default()
        };
        let started = Instant::now();
        let err = error_with(&subject, template, settings).await;
        assert_eq!(err.kind(), ProviderErrorKind::Timeout, "{}", subject.name);
        assert!(err.is_transient() && err.is_timeout(), "{}", subject.name);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{}",
            subject.name
        );
    }
}

#[tokio::test]
async fn broken_connections_are_transport_errors_and_a_refused_one_sent_nothing() {
    for subject in subjects() {
        for url in [
            provider_support::closes_without_reply().await,
            provider_support::drops_mid_reply().await,
        ] {
            let provider = (subject.build)(&url, Settings::default());
            let err = provider.complete(&request()).await.unwrap_err();
            assert_eq!(err.kind(), ProviderErrorKind::Transport, "{}", subject.name);
            assert!(err.is_transient(), "{}", subject.name);
            assert_eq!(err.status(), None, "{}", subject.name);
        }
        let refused = provider_support::refuses_connections().await;
        let err = (subject.build)(&refused, Settings::default())
            .complete(&request())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ProviderErrorKind::Transport, "{}", subject.name);
        assert!(
            !err.request_sent(),
            "{}: a refused connection sent nothing",
            subject.name
        );
    }
}

#[tokio::test]
async fn the_key_never_appears_in_errors_debug_or_logs() {
    let logs = CapturedLogs::start();
    for subject in subjects() {
        // A server that echoes the key back must not make it leak either.
        let echoed = format!("Incorrect API key provided: {SECRET_KEY}.");
        let err = error_for(
            &subject,
            ResponseTemplate::new(401).set_body_json((subject.error)(401, &echoed)),
        )
        .await;
        assert_eq!(err.kind(), ProviderErrorKind::Authentication);
        assert_eq!(err.message(), "Incorrect API key provided: [redacted].");
        let dropped = (subject.build)(
            &provider_support::drops_mid_reply().await,
            Settings::default(),
        )
        .complete(&request())
        .await
        .unwrap_err();
        let provider = (subject.build)("http://127.0.0.1:9", Settings::default());
        let logged = logs.text();
        assert!(
            logged.contains(subject.logged_as),
            "{}: the capture saw nothing",
            subject.name
        );
        let printed = [
            format!("{provider:?}"),
            format!("{provider:#?}"),
            err.to_string(),
            format!("{err:?}"),
            dropped.to_string(),
            format!("{dropped:?}"),
            logged,
        ];
        for text in printed {
            assert!(
                !text.contains("LEAKCHECK"),
                "{}: the key leaked: {text}",
                subject.name
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Decision clients: the same status table, read as decision failures

/// Builds a decision client against a server's root.
type BuildDecisionClient = Box<dyn Fn(&str) -> Arc<dyn DecisionClient>>;

/// One decision client under test: how to build it against a server, and how its host
/// writes an error.
struct DecisionSubject {
    name: String,
    build: BuildDecisionClient,
    error: fn(status: u16, message: &str) -> Value,
    invalid_request: fn(status: u16, message: &str) -> Value,
    request_id_header: &'static str,
}

/// TypeSafe's error envelope (`detail.error_type`, `detail.message`).
fn typesafe_error(status: u16, message: &str) -> Value {
    let error_type = match status {
        400 => "invalid_request_error",
        401 | 403 => "authentication_error",
        429 => "rate_limit_error",
        503 => "overloaded_error",
        _ => "api_error",
    };
    json!({"detail": {"error_type": error_type, "message": message}})
}

fn typesafe_invalid_request(_status: u16, message: &str) -> Value {
    json!({"detail": {"error_type": "invalid_request_error", "message": message}})
}

/// The decision client each provider gets ([`decision_client_for`]: log-probabilities or
/// stated answers), and the System One client in each wire format.
fn decision_subjects() -> Vec<DecisionSubject> {
    let mut subjects: Vec<DecisionSubject> = subjects()
        .into_iter()
        .map(|subject| {
            let build = subject.build;
            DecisionSubject {
                name: format!("decision_client_for({})", subject.name),
                build: Box::new(move |url| decision_client_for(build(url, Settings::default()))),
                error: subject.error,
                invalid_request: subject.invalid_request,
                request_id_header: subject.request_id_header,
            }
        })
        .collect();
    subjects.push(DecisionSubject {
        name: "systemone typesafe".into(),
        build: Box::new(|url| {
            Arc::new(
                SystemOneClient::new(DecisionHost::TypeSafe)
                    .with_base_url(url)
                    .with_api_key(SECRET_KEY),
            )
        }),
        error: typesafe_error,
        invalid_request: typesafe_invalid_request,
        request_id_header: "x-typesafe-request-id",
    });
    subjects.push(DecisionSubject {
        name: "systemone compatible".into(),
        build: Box::new(|url| Arc::new(SystemOneClient::compatible(url).with_api_key(SECRET_KEY))),
        error: openai_error,
        invalid_request: openai_invalid_request,
        request_id_header: "x-request-id",
    });
    subjects.push(DecisionSubject {
        name: "decisions api (litellm)".into(),
        build: Box::new(|url| {
            Arc::new(
                SystemOneClient::new(DecisionHost::LiteLlm)
                    .with_base_url(url)
                    .with_api_key(SECRET_KEY)
                    .with_wire_format(WireFormat::OpenAiDecisions),
            )
        }),
        error: openai_error,
        invalid_request: openai_invalid_request,
        request_id_header: "x-request-id",
    });
    subjects
}

/// What a provider failure kind becomes for a decision, and for an intent call: the one
/// vocabulary of failures.
fn decision_kind(kind: ProviderErrorKind) -> FailureKind {
    use ProviderErrorKind as P;
    match kind {
        P::Authentication | P::Permission => FailureKind::Authentication,
        P::NotFound | P::InvalidRequest => FailureKind::InvalidRequest,
        P::RateLimited => FailureKind::RateLimited,
        P::Overloaded => FailureKind::Unavailable,
        P::Server => FailureKind::Unavailable,
        other => panic!("no status row has the kind {other}"),
    }
}

#[tokio::test]
async fn every_status_becomes_the_same_decision_failure_with_the_same_advice_on_every_decision_client()
 {
    let request = DecisionRequest::new(
        json!({"ticket": "hi"}),
        [BinaryQuestion::new("done", "Is it done?").unwrap()],
    )
    .unwrap();
    for subject in decision_subjects() {
        for row in status_rows() {
            let message = format!("documented failure {}", row.status);
            let body = if row.says_invalid_request {
                (subject.invalid_request)(row.status, &message)
            } else {
                (subject.error)(row.status, &message)
            };
            let mut template = ResponseTemplate::new(row.status)
                .set_body_json(body)
                .insert_header(subject.request_id_header, "req-table");
            for (name, value) in row.headers {
                template = template.insert_header(*name, *value);
            }
            let server = MockServer::start().await;
            Mock::given(wiremock::matchers::any())
                .respond_with(template)
                .mount(&server)
                .await;
            let label = format!(
                "{} HTTP {} {:?} invalid request body: {}",
                subject.name, row.status, row.headers, row.says_invalid_request
            );
            let err = (subject.build)(&server.uri())
                .decide(&request)
                .await
                .unwrap_err();
            assert_eq!(err.kind(), decision_kind(row.kind), "{label}: {err}");
            assert_eq!(err.is_transient(), row.transient, "{label}");
            assert_eq!(err.retry_after(), row.retry_after, "{label}");
            assert_eq!(err.status(), Some(row.status), "{label}");
            assert_eq!(err.provider_message(), Some(message.as_str()), "{label}");
            assert!(!err.to_string().contains(&message), "{label}: {err}");
            assert_eq!(err.request_id(), Some("req-table"), "{label}");
        }
    }
}
