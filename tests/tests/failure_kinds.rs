//! One table of failures, provoked through the public API (the scripted model and
//! loopback servers), each asserted by its `FailureKind` and its typed data: no assertion
//! reads a message. The HTTP status rows of every provider are in `provider_conformance`
//! (`every_status_row_ends_an_intent_call_with_its_kind_on_every_provider`).

mod support;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use intent_rs::fleet::{OnRedisFailure, Redis, RedisQuota};
use intent_rs::limits::{RateLimiter, RetryPolicy};
use intent_rs::media::{Image, MediaLimits, MediaRefusal};
use intent_rs::provider::{
    AzureOpenAi, OpenAi, ProviderError, ProviderErrorKind, ScriptedProvider, ScriptedReply,
};
use intent_rs::result::{Guardrail, IssueDetail, NotSent};
use intent_rs::{FailureKind, IntentClient, IntentClientBuilder, IntentError, IntentOptions};
use intent_rs::{intents, provider::Provider};
use serde_json::json;
use support::Person;
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, ResponseTemplate};

const PNG: &[u8] = include_bytes!("../../examples/data/invoice.png");
const PERSON: &str = r#"{"value":{"name":"Ada","age":36,"nickname":null}}"#;

#[intents]
trait Scans {
    /// Counts the people on a scan.
    #[intent("Count the people on the scan")]
    async fn people(&self, scan: Image) -> Result<u32, IntentError>;
}

type Call = Pin<Box<dyn Future<Output = IntentError>>>;

/// A client over `provider` that makes one attempt and retries no provider failure.
fn strict(provider: impl Provider + 'static) -> IntentClientBuilder {
    IntentClient::builder()
        .provider(provider)
        .max_attempts(1)
        .retry_policy(RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        })
}

/// The error of asking `client` for a person.
fn person(client: IntentClient, options: IntentOptions<Person>) -> Call {
    Box::pin(async move {
        client
            .transform("Ada, 36", "Read the person", options)
            .await
            .into_result()
            .expect_err("a failed call")
    })
}

/// The error of one scripted reply.
fn scripted(reply: ScriptedReply) -> Call {
    person(
        strict(ScriptedProvider::new([reply])).build().unwrap(),
        IntentOptions::new(),
    )
}

fn provider_error(kind: ProviderErrorKind) -> ProviderError {
    ProviderError::new(kind, "scripted", "the provider's own words")
}

async fn loopback(template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(template)
        .mount(&server)
        .await;
    server
}

fn openai(base: &str) -> OpenAi {
    OpenAi::new("sk-test").with_base_url(base).with_model("m")
}

/// One row: what is provoked, the kind it must be, and what else must hold of it.
struct Row {
    name: &'static str,
    call: Call,
    kind: FailureKind,
    check: fn(&IntentError),
}

fn row(name: &'static str, call: Call, kind: FailureKind, check: fn(&IntentError)) -> Row {
    Row {
        name,
        call,
        kind,
        check,
    }
}

async fn rows() -> Vec<Row> {
    let slow = loopback(
        ResponseTemplate::new(200)
            .set_body_json(json!({}))
            .set_delay(Duration::from_secs(2)),
    )
    .await;
    let html =
        loopback(ResponseTemplate::new(200).set_body_raw("<html>login</html>", "text/html")).await;
    let filtered = loopback(ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "content_filter",
            "message": {"role": "assistant", "content": null, "refusal": null},
            "content_filter_results": {"hate": {"filtered": false, "severity": "safe"},
                "violence": {"filtered": true, "severity": "medium"}}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 0, "total_tokens": 5}
    })))
    .await;
    let media = loopback(ResponseTemplate::new(500)).await;
    let judge_says_no = {
        let judge =
            ScriptedProvider::new([r#"{"passes": false, "problems": ["The age is a guess."]}"#]);
        strict(ScriptedProvider::new([PERSON]))
            .judge_provider(judge)
            .build()
            .unwrap()
    };
    let ceiling = {
        let judge = ScriptedProvider::new([r#"{"passes": true, "problems": []}"#]);
        strict(ScriptedProvider::new([PERSON]))
            .judge_provider(judge)
            .max_model_calls(1)
            .build()
            .unwrap()
    };
    let closed_redis = Redis::new("redis://127.0.0.1:1")
        .unwrap()
        .with_timeout(Duration::from_millis(200))
        .with_on_failure(OnRedisFailure::FailClosed);

    vec![
        row(
            "the model refused",
            scripted(ScriptedReply::refusal("I cannot read people.")),
            FailureKind::Refused,
            |error| {
                let refusal = error.refusal().expect("the refusal");
                assert_eq!(refusal.reason.as_deref(), Some("I cannot read people."));
                assert!(refusal.categories.is_empty());
            },
        ),
        row(
            "a content filter withheld the reply",
            person(
                strict(AzureOpenAi::new(filtered.uri(), "key", "deployment"))
                    .build()
                    .unwrap(),
                IntentOptions::new(),
            ),
            FailureKind::Refused,
            |error| {
                let refusal = error.refusal().expect("the refusal");
                assert_eq!(refusal.categories, ["violence (medium)"]);
            },
        ),
        row(
            "the reply was cut off",
            scripted(ScriptedReply::truncated(r#"{"value":{"name":"A"#)),
            FailureKind::Truncated,
            |error| assert_eq!(error.model_calls(), 1),
        ),
        row(
            "an image over the provider's limit",
            Box::pin(async move {
                let provider = openai(&media.uri())
                    .with_media_limits(MediaLimits::OPENAI.with_max_image_bytes(100));
                let scans = ScansClient::new(strict(provider).build().unwrap());
                scans
                    .people(Image::from_bytes(PNG).unwrap())
                    .await
                    .expect_err("refused")
            }),
            FailureKind::NotSent,
            |error| {
                assert_eq!(
                    error.not_sent(),
                    Some(&NotSent::MediaLimit {
                        provider: "openai".to_owned()
                    })
                );
                assert_eq!(error.model_calls(), 0);
                let refusal = error
                    .provider_error()
                    .and_then(std::error::Error::source)
                    .and_then(|source| source.downcast_ref::<MediaRefusal>());
                assert!(
                    matches!(refusal, Some(MediaRefusal::TooLarge { max: 100, .. })),
                    "{refusal:?}"
                );
            },
        ),
        row(
            "an input over max_input_chars",
            person(
                strict(ScriptedProvider::new([PERSON]))
                    .max_input_chars(3)
                    .build()
                    .unwrap(),
                IntentOptions::new(),
            ),
            FailureKind::NotSent,
            |error| {
                assert!(matches!(
                    error.not_sent(),
                    Some(NotSent::InputTooLarge { max: 3, .. })
                ));
                assert!(std::error::Error::source(error).is_some());
            },
        ),
        row(
            "an empty intent",
            Box::pin(async {
                strict(ScriptedProvider::new([PERSON]))
                    .build()
                    .unwrap()
                    .transform::<_, Person>("Ada", " ", IntentOptions::new())
                    .await
                    .into_result()
                    .expect_err("refused")
            }),
            FailureKind::NotSent,
            |error| assert_eq!(error.not_sent(), Some(&NotSent::InvalidInput)),
        ),
        row(
            "a provider configured wrongly",
            scripted(ScriptedReply::error(provider_error(
                ProviderErrorKind::Configuration,
            ))),
            FailureKind::NotSent,
            |error| {
                assert!(matches!(
                    error.not_sent(),
                    Some(NotSent::Configuration { .. })
                ));
                assert_eq!(error.model_calls(), 0);
            },
        ),
        row(
            "a rate limit with a wait",
            scripted(ScriptedReply::error(
                provider_error(ProviderErrorKind::RateLimited)
                    .with_status(429)
                    .with_retry_after(Duration::from_secs(7)),
            )),
            FailureKind::RateLimited,
            |error| {
                assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
                assert!(error.is_transient());
            },
        ),
        row(
            "a wrong key",
            scripted(ScriptedReply::error(
                provider_error(ProviderErrorKind::Authentication).with_status(401),
            )),
            FailureKind::Authentication,
            |error| assert_eq!(error.provider().and_then(|facts| facts.status), Some(401)),
        ),
        row(
            "an outage",
            scripted(ScriptedReply::error(
                provider_error(ProviderErrorKind::Overloaded).with_status(529),
            )),
            FailureKind::Unavailable,
            |error| {
                let facts = error.provider().expect("facts");
                assert_eq!(facts.kind, ProviderErrorKind::Overloaded);
            },
        ),
        row(
            "a slow provider past its timeout",
            person(
                strict(openai(&slow.uri()).with_timeout(Duration::from_millis(100)))
                    .build()
                    .unwrap(),
                IntentOptions::new(),
            ),
            FailureKind::Timeout,
            |error| assert!(error.is_transient()),
        ),
        row(
            "nothing listening",
            person(
                strict(openai("http://127.0.0.1:1/v1")).build().unwrap(),
                IntentOptions::new(),
            ),
            FailureKind::Transport,
            |error| {
                assert_eq!(error.model_calls(), 0, "a refused connection sent nothing");
                let transport = error.provider_error().and_then(std::error::Error::source);
                assert!(transport.is_some(), "the transport's error is the source");
            },
        ),
        row(
            "a login page instead of the API",
            person(
                strict(openai(&html.uri())).build().unwrap(),
                IntentOptions::new(),
            ),
            FailureKind::InvalidResponse,
            |error| assert_eq!(error.provider().and_then(|facts| facts.status), Some(200)),
        ),
        row(
            "replies that never fit the type",
            person(
                IntentClient::builder()
                    .provider(ScriptedProvider::new([
                        r#"{"value":{"name":"Ada","age":"old","nickname":null}}"#,
                        r#"{"value":{"name":"Ada","age":"older","nickname":null}}"#,
                    ]))
                    .max_attempts(2)
                    .build()
                    .unwrap(),
                IntentOptions::new(),
            ),
            FailureKind::VerificationExhausted,
            |error| {
                assert_eq!(error.attempts(), 2);
                let mismatch = error.schema_mismatches().next().expect("a mismatch");
                assert_eq!(mismatch.path, "/age");
                assert_eq!(mismatch.keyword, "type");
                assert_eq!(mismatch.found, "a string");
            },
        ),
        row(
            "a validator that always objects",
            person(
                strict(ScriptedProvider::new([PERSON])).build().unwrap(),
                IntentOptions::new().require(|person: &Person| person.age > 40, "Too young."),
            ),
            FailureKind::VerificationExhausted,
            |error| {
                let last = error.last_attempt_issues();
                assert!(
                    last.iter()
                        .any(|issue| issue.detail == IssueDetail::Validator)
                );
            },
        ),
        row(
            "the judge rejected the answer",
            person(judge_says_no, IntentOptions::new().require_judge()),
            FailureKind::JudgeRejected,
            |error| {
                let last = error.last_attempt_issues();
                assert!(last.iter().all(|issue| issue.detail == IssueDetail::Judge));
            },
        ),
        row(
            "the model-call ceiling before the judge",
            person(ceiling, IntentOptions::new().require_judge()),
            FailureKind::Guardrail,
            |error| {
                assert_eq!(
                    error.guardrail(),
                    Some(&Guardrail::ModelCalls { ceiling: 1 })
                );
            },
        ),
        row(
            "the time budget",
            person(
                strict(ScriptedProvider::new([
                    ScriptedReply::text(PERSON).after(Duration::from_secs(2))
                ]))
                .time_budget(Duration::from_millis(50))
                .build()
                .unwrap(),
                IntentOptions::new(),
            ),
            FailureKind::Guardrail,
            |error| {
                assert!(matches!(
                    error.guardrail(),
                    Some(Guardrail::TimeBudget { .. })
                ));
            },
        ),
        row(
            "the budget in money",
            person(
                strict(ScriptedProvider::new([PERSON]).with_model("gpt-4o-mini"))
                    .build()
                    .unwrap(),
                IntentOptions::new().max_cost(intent_rs::Cost::from_pico_usd(1)),
            ),
            FailureKind::Guardrail,
            |error| {
                assert_eq!(
                    error.guardrail(),
                    Some(&Guardrail::Cost {
                        budget: intent_rs::Cost::from_pico_usd(1)
                    })
                );
                assert_eq!(error.model_calls(), 0, "refused before sending");
            },
        ),
        row(
            "the fleet's quota unreachable, failing closed",
            person(
                strict(ScriptedProvider::new([PERSON]))
                    .rate_limiter(
                        RateLimiter::per_minute(100)
                            .with_shared_quota(RedisQuota::new(&closed_redis, "kinds")),
                    )
                    .build()
                    .unwrap(),
                IntentOptions::new(),
            ),
            FailureKind::SharedStateUnavailable,
            |error| {
                assert_eq!(error.model_calls(), 0);
                assert!(error.decisive_issue().is_some_and(|issue| issue.detail
                    == IssueDetail::SharedStateUnavailable { fail_closed: true }));
            },
        ),
        row(
            "a canceled request",
            scripted(ScriptedReply::error(provider_error(
                ProviderErrorKind::Canceled,
            ))),
            FailureKind::Cancelled,
            |error| assert!(!error.is_transient()),
        ),
    ]
}

#[tokio::test]
async fn every_failure_maps_to_one_kind_with_its_data() {
    let mut seen = Vec::new();
    for row in rows().await {
        let error = row.call.await;
        assert_eq!(error.kind(), row.kind, "{}: {error:?}", row.name);
        (row.check)(&error);
        // The kind is also on the record and in what `main` prints.
        assert!(
            format!("{error:?}").ends_with(&format!("[{}]", row.kind.as_str())),
            "{}: {error:?}",
            row.name
        );
        seen.push(row.kind);
    }
    // Every kind but the HTTP status kinds' data rows (in provider_conformance) is here.
    for kind in [
        FailureKind::Refused,
        FailureKind::Truncated,
        FailureKind::NotSent,
        FailureKind::RateLimited,
        FailureKind::Authentication,
        FailureKind::Unavailable,
        FailureKind::Timeout,
        FailureKind::Transport,
        FailureKind::InvalidResponse,
        FailureKind::VerificationExhausted,
        FailureKind::JudgeRejected,
        FailureKind::Guardrail,
        FailureKind::SharedStateUnavailable,
        FailureKind::Cancelled,
    ] {
        assert!(seen.contains(&kind), "no row provokes {kind}");
    }
}

#[tokio::test]
async fn a_failed_result_knows_its_kind_without_converting() {
    let client = strict(ScriptedProvider::new([ScriptedReply::refusal("no")]))
        .build()
        .unwrap();
    let result = client
        .transform::<_, Person>("Ada", "Read the person", IntentOptions::new())
        .await;
    assert_eq!(result.failure_kind(), Some(FailureKind::Refused));
    let ok = strict(ScriptedProvider::new([PERSON]))
        .build()
        .unwrap()
        .transform::<_, Person>("Ada", "Read the person", IntentOptions::new())
        .await;
    assert_eq!(ok.failure_kind(), None);
}
