//! Decision models over their own API (`SystemOneClient`): against the real jevcompat mock
//! server (answers, validation, authentication, rate limits, deliberate contract breaks),
//! and against loopback servers for what a real server cannot be made to do (each host's
//! error envelopes, rounding, retry headers, the OpenAI-shaped Decisions API).

mod provider_support;
mod test_servers;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use intent_rs::decision::{
    BinaryQuestion, ChoiceQuestion, DecisionClient, DecisionError, DecisionEvaluator, DecisionHost,
    DecisionLimits, DecisionQuestion, DecisionRequest, FailureKind, ProbabilitySource,
    ScoreQuestion, SystemOneClient, WireFormat,
};
use intent_rs::provider::ScriptedProvider;
use intent_rs::{Binary, Choice, DecisionEnum, GateOutcome, IntentClient, Score, intents};
use provider_support::{CapturedLogs, SECRET_KEY, received_bodies};
use serde_json::{Value, json};
use test_servers::jevcompat::{JevMock, MOCK_KEY};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A state no message or log line may quote.
const STATE_SECRET: &str = "customer-4471-STATE";

fn mixed_request() -> DecisionRequest {
    DecisionRequest::new(
        json!({"message": format!("I was charged twice. Please fix this ASAP. {STATE_SECRET}")}),
        [
            DecisionQuestion::from(
                BinaryQuestion::new("is_billing", "Is this about billing?").unwrap(),
            ),
            ChoiceQuestion::new(
                "team",
                "Which team should handle it?",
                [
                    ("Billing", "Payments and refunds"),
                    ("Technical", ""),
                    ("Other", ""),
                ],
            )
            .unwrap()
            .into(),
            ScoreQuestion::new(
                "urgency",
                "How urgent is it?",
                ["Low", "Medium", "High", "Critical"],
            )
            .unwrap()
            .into(),
        ],
    )
    .unwrap()
}

fn mock_client(mock: &JevMock) -> SystemOneClient {
    SystemOneClient::compatible(&mock.url).with_api_key(MOCK_KEY)
}

fn assert_no_leak(error: &DecisionError, secrets: &[&str]) {
    let texts = [
        error.to_string(),
        format!("{error:?}"),
        error.provider_message().unwrap_or_default().to_owned(),
    ];
    for text in texts {
        for secret in secrets {
            assert!(!text.contains(secret), "`{secret}` leaked into: {text}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Against the real jevcompat mock

#[tokio::test]
async fn the_mocks_reference_choice_is_read_exactly() {
    let Some(mock) = JevMock::start(&[]) else {
        return;
    };
    // The spec's example B: the mock's reply to these JSON values is fixed.
    let request = DecisionRequest::new(
        json!({"message": "The app crashes every time I open settings.", "channel": "support"}),
        [ChoiceQuestion::new(
            "intent",
            "Which team should handle this ticket?",
            [
                ("billing", "Payments, invoices, refunds"),
                ("technical", "Bugs, crashes, errors"),
                ("account", ""),
            ],
        )
        .unwrap()],
    )
    .unwrap();

    let response = mock_client(&mock).decide(&request).await.unwrap();

    assert_eq!(response.source(), ProbabilitySource::DecisionModel);
    assert_eq!(response.model(), "jevcompat-mock-0.1");
    assert_eq!(response.request_id(), Some("req_mock"));
    assert_eq!(response.usage().input_tokens, 63);
    let intent = response.choice("intent").unwrap();
    assert_eq!(intent.selected(), "account");
    assert!((intent.probability("account").unwrap() - 0.8034677087518979).abs() < 1e-12);
    assert!((intent.probability("billing").unwrap() - 0.07615735717026294).abs() < 1e-12);
    assert!((intent.confidence().unwrap() - 0.7052015631278468).abs() < 1e-12);
}

#[tokio::test]
async fn a_mixed_request_is_answered_by_the_mock_in_one_request() {
    let Some(mock) = JevMock::start(&[]) else {
        return;
    };
    let response = mock_client(&mock).decide(&mixed_request()).await.unwrap();

    let billing = response.binary("is_billing").unwrap().probability();
    assert!((0.0..=1.0).contains(&billing));
    let team = response.choice("team").unwrap();
    let sum: f64 = team.probabilities().iter().map(|(_, p)| p).sum();
    assert!((sum - 1.0).abs() < 1e-9);
    assert!(team.confidence().is_some());
    let urgency = response.score("urgency").unwrap();
    assert_eq!(urgency.probabilities().len(), 4);
    assert_eq!(urgency.probabilities()[3].0, "Critical");
    assert!((0.0..=3.0).contains(&urgency.expected()));
    assert!(response.usage().output_tokens > 0);
}

#[tokio::test]
async fn the_mocks_authentication_failures_are_classified_without_the_key() {
    let Some(mock) = JevMock::start(&[]) else {
        return;
    };
    let wrong = SystemOneClient::compatible(&mock.url).with_api_key(SECRET_KEY);
    let error = wrong.decide(&mixed_request()).await.unwrap_err();
    assert_eq!(error.kind(), FailureKind::Authentication);
    assert_eq!(error.status(), Some(401));
    assert!(!error.is_transient());
    assert_eq!(error.request_id(), Some("req_mock"));
    assert_no_leak(&error, &[SECRET_KEY, STATE_SECRET]);

    // TypeSafe answers a missing key with 403, which is still an authentication failure.
    let keyless = SystemOneClient::new(DecisionHost::TypeSafe).with_base_url(&mock.url);
    let error = keyless.decide(&mixed_request()).await.unwrap_err();
    assert_eq!(error.kind(), FailureKind::Authentication);
    assert_eq!(error.status(), Some(403));
    assert_eq!(error.provider_message(), Some("Must supply an API key!"));
}

#[tokio::test]
async fn the_mocks_validation_message_is_kept_and_limits_stop_requests_before_it() {
    let Some(mock) = JevMock::start(&[]) else {
        return;
    };
    let levels: Vec<String> = (0..11).map(|n| format!("level {n}")).collect();
    let request = DecisionRequest::new(
        json!(format!("state {STATE_SECRET}")),
        [ScoreQuestion::new("q", "How much?", levels.iter().map(String::as_str)).unwrap()],
    )
    .unwrap();

    // TypeSafe's limit of 10 levels is enforced here: nothing is sent.
    let error = mock_client(&mock).decide(&request).await.unwrap_err();
    assert_eq!(error.kind(), FailureKind::InvalidRequest);
    assert_eq!(error.status(), None, "refused before sending");
    assert!(error.to_string().contains("`q` has 11 levels"), "{error}");

    // With the limit lifted the server refuses it, and its validation message is kept.
    let lifted = mock_client(&mock).with_limits(DecisionLimits {
        max_levels: 20,
        ..DecisionLimits::TYPESAFE
    });
    let error = lifted.decide(&request).await.unwrap_err();
    assert_eq!(error.kind(), FailureKind::InvalidRequest);
    assert_eq!(error.status(), Some(422));
    assert_eq!(
        error.provider_message(),
        Some(
            "questions.q.score.criteria: List should have at most 10 items after validation, not 11"
        )
    );
    assert_no_leak(&error, &[STATE_SECRET, MOCK_KEY]);

    let unknown_model = mock_client(&mock)
        .decide(&mixed_request().with_model("gpt-4o"))
        .await
        .unwrap_err();
    assert_eq!(unknown_model.kind(), FailureKind::InvalidRequest);
    assert_eq!(
        unknown_model.provider_message(),
        Some("Unknown model: gpt-4o")
    );
}

#[tokio::test]
async fn a_busy_mock_is_a_transient_rate_limit_and_is_not_retried() {
    let Some(mock) = JevMock::start_busy() else {
        return;
    };
    let error = mock_client(&mock)
        .decide(&mixed_request())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), FailureKind::RateLimited);
    assert!(error.is_transient());
    assert_eq!(error.provider_message(), Some("slow down"));
    // The mock's `Retry-After: 0` is advice: retry now.
    assert_eq!(error.retry_after(), Some(Duration::ZERO));
}

/// Each deliberate contract break of the mock is caught, naming the question. (Its
/// `score-argmax` break moves the score less than hosts' rounding does here; a score far
/// from its distribution is checked on a loopback server below.)
#[tokio::test]
async fn the_mocks_contract_breaks_are_invalid_responses_naming_the_question() {
    let cases = [
        ("first-question-only", "no answer to `team`"),
        // A type outside the wire's words is described, not quoted.
        (
            "boolean-type",
            "`is_billing` is of a type this client does not know, not `noul`",
        ),
        (
            "noul-range",
            "`is_billing` gives the probability of yes the value",
        ),
        ("choice-sum", "the probabilities of `team` sum to"),
        (
            "choice-key-case",
            "`team` gives no probability for `Billing`",
        ),
        (
            "score-keys-1-based",
            "`urgency` gives no probability for `0`",
        ),
        ("score-sum", "the probabilities of `urgency` sum to"),
        ("confidence-over", "`team` gives the confidence the value"),
    ];
    for (fault, expected) in cases {
        let Some(mock) = JevMock::start(&[fault]) else {
            return;
        };
        let error = mock_client(&mock)
            .decide(&mixed_request())
            .await
            .unwrap_err();
        assert_eq!(
            error.kind(),
            FailureKind::InvalidResponse,
            "{fault}: {error}"
        );
        assert!(error.to_string().contains(expected), "{fault}: {error}");
        assert!(!error.is_transient());
        assert_eq!(error.request_id(), Some("req_mock"), "{fault}");
        assert_no_leak(&error, &[STATE_SECRET, MOCK_KEY]);
    }
}

/// Where a team goes.
#[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
enum Team {
    /// Payments, invoices and refunds.
    Billing,
    /// Something does not work.
    Support,
    /// Questions before buying.
    Sales,
}

/// How urgent a ticket is, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
enum Urgency {
    /// Can wait.
    Low,
    /// This week.
    Medium,
    /// Today.
    High,
    /// Now.
    Critical,
}

#[intents]
trait Desk {
    #[intent("Does the customer ask for a refund?")]
    async fn refund(&self, ticket: &str) -> Result<Binary, DecisionError>;

    #[intent("Which team should take the ticket?")]
    async fn team(&self, ticket: &str) -> Result<Choice<Team>, DecisionError>;

    #[intent("How urgent is the ticket?")]
    async fn urgency(&self, ticket: &str) -> Result<Score<Urgency>, DecisionError>;
}

#[tokio::test]
async fn every_way_of_asking_a_decision_uses_the_configured_decision_model() {
    let Some(mock) = JevMock::start(&[]) else {
        return;
    };
    // The chat model has nothing to say: a decision that reached it would fail.
    let chat = ScriptedProvider::new(Vec::<String>::new());
    let client = IntentClient::builder()
        .provider(chat.clone())
        .decision_client(mock_client(&mock))
        .build()
        .unwrap();

    let decided = client.decide(&mixed_request()).await.unwrap();
    assert_eq!(decided.source(), ProbabilitySource::DecisionModel);

    let desk = DeskClient::new(client);
    let ticket = "I was charged twice for March; please refund one payment.";
    let refund = desk.refund(ticket).await.unwrap();
    assert_eq!(refund.source, ProbabilitySource::DecisionModel);
    let team = desk.team(ticket).await.unwrap();
    assert_eq!(team.probabilities.len(), 3);
    assert_eq!(team.source, ProbabilitySource::DecisionModel);
    let urgency = desk.urgency(ticket).await.unwrap();
    assert_eq!(urgency.probabilities[0].0, Urgency::Low);
    assert_eq!(
        chat.request_count(),
        0,
        "no decision reached the chat model"
    );

    // The evaluator alone.
    let evaluator = DecisionEvaluator::new(mock_client(&mock)).with_threshold(0.0);
    let evaluation = evaluator.evaluate(ticket).await.unwrap();
    assert!(evaluation.is_satisfied());
    assert_eq!(evaluation.source, Some(ProbabilitySource::DecisionModel));
    assert!(evaluation.usage.input_tokens > 0);
}

#[tokio::test]
async fn the_decision_model_gates_the_generative_judge() {
    let Some(mock) = JevMock::start(&[]) else {
        return;
    };
    let judge = ScriptedProvider::new(Vec::<String>::new());
    // No probability from a softmax reaches 1: every attempt is rejected by the gate.
    let gate = DecisionEvaluator::new(mock_client(&mock)).with_threshold(1.0);
    let client = IntentClient::builder()
        .provider(ScriptedProvider::new(["a summary", "another summary"]))
        .judge_provider(judge.clone())
        .decision_gate(gate)
        .build()
        .unwrap();
    let result: intent_rs::AIResult<String> = client
        .transform(
            "Our refund policy is 30 days",
            "Summarize in one sentence",
            intent_rs::IntentOptions::new()
                .require_judge()
                .max_attempts(2),
        )
        .await;
    assert!(!result.is_success());
    assert_eq!(judge.request_count(), 0, "the judge was never asked");
    let gate = result.attempts[0].gate.as_ref().unwrap();
    assert_eq!(gate.outcome, GateOutcome::Rejected);
    assert!(gate.probability.is_some_and(|p| p < 1.0));
    assert!(gate.usage.input_tokens > 0);
}

// ---------------------------------------------------------------------------------------
// Loopback servers

async fn server_answering(route: &str, response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(route))
        .respond_with(response)
        .mount(&server)
        .await;
    server
}

fn mixed_reply(team: Value, urgency: Value) -> Value {
    json!({
        "model": "jev-1.14.0",
        "answers": {
            "is_billing": {"type": "noul", "noul": 0.99},
            "team": team,
            "urgency": urgency,
        },
        "usage": {"input_tokens": 365, "output_tokens": 55}
    })
}

fn team_answer(billing: f64, technical: f64, other: f64, choice: &str) -> Value {
    json!({"type": "choice", "choice": choice, "confidence": 1.0,
        "probabilities": {"Billing": billing, "Technical": technical, "Other": other}})
}

fn urgency_answer(probabilities: [f64; 4], score: f64) -> Value {
    json!({"type": "score", "score": score, "confidence": 0.5,
        "legend": {"0": "Low", "1": "Medium", "2": "High", "3": "Critical"},
        "probabilities": {"0": probabilities[0], "1": probabilities[1], "2": probabilities[2], "3": probabilities[3]}})
}

fn loopback(server: &MockServer) -> SystemOneClient {
    SystemOneClient::compatible(server.uri()).with_api_key(SECRET_KEY)
}

#[tokio::test]
async fn one_request_carries_every_question_with_the_key_and_the_request_id_is_kept() {
    let reply = mixed_reply(
        team_answer(1.0, 0.0, 0.0, "Billing"),
        urgency_answer([0.0, 0.0, 1.0, 0.0], 2.0),
    );
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/systemone"))
        .and(header(
            "authorization",
            format!("Bearer {SECRET_KEY}").as_str(),
        ))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(reply)
                .insert_header("x-typesafe-request-id", "req_42"),
        )
        .expect(1)
        .mount(&server)
        .await;

    let response = loopback(&server).decide(&mixed_request()).await.unwrap();

    assert_eq!(response.request_id(), Some("req_42"));
    assert_eq!(response.model(), "jev-1.14.0");
    assert_eq!(response.usage().input_tokens, 365);
    let bodies = received_bodies(&server).await;
    assert_eq!(bodies.len(), 1, "one HTTP request for three questions");
    let questions = bodies[0]["questions"].as_object().unwrap();
    assert_eq!(questions.len(), 3);
    assert_eq!(bodies[0]["model"], "jev-latest");
    assert_eq!(questions["is_billing"]["type"], "noul");
    assert_eq!(
        questions["team"]["criteria"],
        json!({"Billing": "Payments and refunds", "Technical": null, "Other": null})
    );
    assert_eq!(
        questions["urgency"]["criteria"],
        json!(["Low", "Medium", "High", "Critical"])
    );
    assert!(questions.values().all(|q| q["instructions"].is_string()));
}

#[tokio::test]
async fn rounded_distributions_are_accepted_and_normalised_within_the_tolerance() {
    // Four-decimal rounding that sums to 1.0001, and a score reported to two decimals.
    let reply = mixed_reply(
        team_answer(0.1726, 0.6549, 0.1726, "Technical"),
        urgency_answer([0.1, 0.2, 0.3, 0.4], 2.0),
    );
    let server = server_answering(
        "/v1/systemone",
        ResponseTemplate::new(200).set_body_json(reply),
    )
    .await;
    let response = loopback(&server).decide(&mixed_request()).await.unwrap();
    let team = response.choice("team").unwrap();
    let sum: f64 = team.probabilities().iter().map(|(_, p)| p).sum();
    assert!((sum - 1.0).abs() < 1e-12, "normalised: {sum}");
    assert_eq!(team.selected(), "Technical");
    assert_eq!(team.confidence(), Some(1.0));
    let urgency = response.score("urgency").unwrap();
    assert!((urgency.expected() - 2.0).abs() < 1e-9);
    assert_eq!(urgency.confidence(), Some(0.5));

    // A tie after rounding: the host's choice stands, it is one of the labels.
    let tied = mixed_reply(
        team_answer(0.5, 0.5, 0.0, "Technical"),
        urgency_answer([0.25, 0.25, 0.25, 0.25], 1.5),
    );
    let server = server_answering(
        "/v1/systemone",
        ResponseTemplate::new(200).set_body_json(tied),
    )
    .await;
    let response = loopback(&server).decide(&mixed_request()).await.unwrap();
    assert_eq!(response.choice("team").unwrap().selected(), "Technical");
}

#[tokio::test]
async fn answers_that_fail_a_check_are_invalid_responses_naming_the_question() {
    let missing = json!({"model": "m", "answers": {"is_billing": {"type": "noul", "noul": 0.5}}});
    let cases = [
        (missing, "no answer to `team`"),
        (
            mixed_reply(
                team_answer(0.9, 0.1, 0.0, "Refunds"),
                urgency_answer([1.0, 0.0, 0.0, 0.0], 0.0),
            ),
            "`team` selects none of the 3 choices asked (`Billing`, `Technical`, `Other`)",
        ),
        (
            mixed_reply(
                team_answer(0.5, 0.3, 0.1, "Billing"),
                urgency_answer([1.0, 0.0, 0.0, 0.0], 0.0),
            ),
            "the probabilities of `team` sum to 0.9",
        ),
        (
            mixed_reply(
                team_answer(1.2, -0.2, 0.0, "Billing"),
                urgency_answer([1.0, 0.0, 0.0, 0.0], 0.0),
            ),
            "`team` gives `Billing` the value 1.2, outside [0, 1]",
        ),
        (
            mixed_reply(
                team_answer(1.0, 0.0, 0.0, "Billing"),
                urgency_answer([0.0, 0.0, 0.0, 1.0], 1.0),
            ),
            "`urgency` reports the score 1, but its probabilities give 3.0000",
        ),
        (
            mixed_reply(
                team_answer(1.0, 0.0, 0.0, "Billing"),
                json!({"type": "choice"}),
            ),
            "`urgency` is of type `choice`, not `score`",
        ),
        (
            json!({"answers": []}),
            "the reply's `answers` is an array, not an object keyed by question id",
        ),
        // The selection must be the most probable choice; the refusal names the question.
        (
            mixed_reply(
                team_answer(0.75, 0.25, 0.0, "Technical"),
                urgency_answer([1.0, 0.0, 0.0, 0.0], 0.0),
            ),
            "the answer to `team`: the selected choice `Technical` has the probability 0.25, but `Billing` has 0.75",
        ),
    ];
    for (reply, expected) in cases {
        let server = server_answering(
            "/v1/systemone",
            ResponseTemplate::new(200)
                .set_body_json(reply)
                .insert_header("x-typesafe-request-id", "req_bad"),
        )
        .await;
        let error = loopback(&server)
            .decide(&mixed_request())
            .await
            .unwrap_err();
        assert_eq!(error.kind(), FailureKind::InvalidResponse, "{error}");
        assert!(error.to_string().contains(expected), "{expected}: {error}");
        assert_eq!(error.request_id(), Some("req_bad"));
    }
}

/// Each host's error envelope, read for its kind, message and retry hint.
#[tokio::test]
async fn each_hosts_error_envelope_is_classified_with_its_message_and_wait() {
    struct Case {
        host: DecisionHost,
        status: u16,
        body: &'static str,
        headers: &'static [(&'static str, &'static str)],
        kind: FailureKind,
        message: &'static str,
        retry_after: Option<Duration>,
    }
    let cases = [
        Case {
            host: DecisionHost::TypeSafe,
            status: 422,
            body: r#"{"detail":[{"loc":["body","state"],"msg":"Input should be a valid string, object or array","type":"union_type","input":"customer-4471-STATE"}]}"#,
            headers: &[],
            kind: FailureKind::InvalidRequest,
            message: "state: Input should be a valid string, object or array",
            retry_after: None,
        },
        Case {
            host: DecisionHost::TypeSafe,
            status: 429,
            body: r#"{"detail":{"error_type":"rate_limit_error","message":"slow down"}}"#,
            headers: &[("retry-after-ms", "1500"), ("retry-after", "9")],
            kind: FailureKind::RateLimited,
            message: "slow down",
            retry_after: Some(Duration::from_millis(1500)),
        },
        Case {
            host: DecisionHost::TypeSafe,
            status: 429,
            body: r#"{"detail":{"error_type":"rate_limit_error","message":"slow down"}}"#,
            headers: &[("retry-after", "2")],
            kind: FailureKind::RateLimited,
            message: "slow down",
            retry_after: Some(Duration::from_secs(2)),
        },
        Case {
            host: DecisionHost::TypeSafe,
            status: 400,
            body: r#"{"detail":{"error_type":"max_tokens_exceeded"}}"#,
            headers: &[],
            kind: FailureKind::InvalidRequest,
            message: "the state and the questions are longer than the model reads (max_tokens_exceeded): send less state or fewer questions",
            retry_after: None,
        },
        Case {
            host: DecisionHost::OpenRouter,
            status: 503,
            body: r#"{"error":{"code":503,"message":"No available model provider"}}"#,
            headers: &[],
            kind: FailureKind::Unavailable,
            message: "No available model provider",
            retry_after: None,
        },
        Case {
            host: DecisionHost::OpenRouter,
            status: 502,
            body: r#"{"error":{"code":502,"message":"model down"}}"#,
            headers: &[],
            kind: FailureKind::Unavailable,
            message: "model down",
            retry_after: None,
        },
        Case {
            host: DecisionHost::LiteLlm,
            status: 429,
            body: r#"{"error":{"message":"litellm.RateLimitError: slow down","type":"throttling_error","param":null,"code":"429"}}"#,
            headers: &[],
            kind: FailureKind::RateLimited,
            message: "litellm.RateLimitError: slow down",
            retry_after: None,
        },
        Case {
            host: DecisionHost::LiteLlm,
            status: 400,
            body: r#"{"error":{"message":"/systemone: Invalid model name passed in model=nope.","type":"invalid_request_error","param":null,"code":"400"}}"#,
            headers: &[],
            kind: FailureKind::InvalidRequest,
            message: "/systemone: Invalid model name passed in model=nope.",
            retry_after: None,
        },
        Case {
            host: DecisionHost::LiteLlm,
            status: 500,
            body: "Internal Server Error",
            headers: &[],
            kind: FailureKind::Unavailable,
            message: "Internal Server Error",
            retry_after: None,
        },
        Case {
            host: DecisionHost::Ollama,
            status: 400,
            body: r#"{"error":"questions.team.choice.instructions: Field required"}"#,
            headers: &[],
            kind: FailureKind::InvalidRequest,
            message: "questions.team.choice.instructions: Field required",
            retry_after: None,
        },
        Case {
            host: DecisionHost::Ollama,
            status: 413,
            body: r#"{"error":"request body must not exceed 64 KiB without images"}"#,
            headers: &[],
            kind: FailureKind::InvalidRequest,
            message: "request body must not exceed 64 KiB without images",
            retry_after: None,
        },
        // A 401 or 403 is a credentials failure whatever the body's type says: this is
        // OpenAI's body for a wrong key.
        Case {
            host: DecisionHost::Compatible,
            status: 401,
            body: r#"{"error":{"message":"Incorrect API key provided: sk-te**3.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
            headers: &[],
            kind: FailureKind::Authentication,
            message: "Incorrect API key provided: sk-te**3.",
            retry_after: None,
        },
        Case {
            host: DecisionHost::Compatible,
            status: 403,
            body: r#"{"error":{"message":"bad field","type":"invalid_request_error"}}"#,
            headers: &[],
            kind: FailureKind::Authentication,
            message: "bad field",
            retry_after: None,
        },
        // `retry-after: 0` is advice too: retry now.
        Case {
            host: DecisionHost::TypeSafe,
            status: 429,
            body: r#"{"detail":{"error_type":"rate_limit_error","message":"slow down"}}"#,
            headers: &[("retry-after", "0")],
            kind: FailureKind::RateLimited,
            message: "slow down",
            retry_after: Some(Duration::ZERO),
        },
        Case {
            host: DecisionHost::Compatible,
            status: 408,
            body: r#"{"error":{"code":408,"message":"timed out upstream"}}"#,
            headers: &[],
            kind: FailureKind::Timeout,
            message: "timed out upstream",
            retry_after: None,
        },
        Case {
            host: DecisionHost::Compatible,
            status: 500,
            body: r#"{"unexpected":{"echo":"customer-4471-STATE"}}"#,
            headers: &[],
            kind: FailureKind::Unavailable,
            message: "the error body is in no shape this client reads",
            retry_after: None,
        },
    ];
    let logs = CapturedLogs::start();
    for case in cases {
        let mut response = ResponseTemplate::new(case.status)
            .set_body_raw(case.body, "application/json")
            .insert_header("x-typesafe-request-id", "req_err");
        for (name, value) in case.headers {
            response = response.insert_header(*name, *value);
        }
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(response)
            .expect(1) // no silent retry
            .mount(&server)
            .await;
        let client = SystemOneClient::new(case.host)
            .with_base_url(server.uri())
            .with_api_key(SECRET_KEY);
        let error = client.decide(&mixed_request()).await.unwrap_err();
        assert_eq!(error.kind(), case.kind, "{}: {error}", case.body);
        assert_eq!(error.status(), Some(case.status));
        assert_eq!(error.is_transient(), case.kind.is_transient());
        assert_eq!(
            error.provider_message(),
            Some(case.message),
            "{}",
            case.body
        );
        assert_eq!(error.retry_after(), case.retry_after, "{}", case.body);
        assert_eq!(error.request_id(), Some("req_err"));
        assert_no_leak(&error, &[SECRET_KEY, STATE_SECRET]);
    }
    let text = logs.text();
    assert!(!text.contains(SECRET_KEY), "the key was logged");
    assert!(!text.contains(STATE_SECRET), "the state was logged");
}

/// The client takes the caller's `reqwest` client (its proxy, TLS and default headers), as
/// every provider does.
#[tokio::test]
async fn a_given_http_client_sends_the_decision_requests() {
    let reply = mixed_reply(
        team_answer(1.0, 0.0, 0.0, "Billing"),
        urgency_answer([0.0, 0.0, 1.0, 0.0], 2.0),
    );
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/systemone"))
        .and(header("x-through", "the-callers-client"))
        .respond_with(ResponseTemplate::new(200).set_body_json(reply))
        .expect(1)
        .mount(&server)
        .await;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        "x-through",
        reqwest::header::HeaderValue::from_static("the-callers-client"),
    );
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap();
    let client = loopback(&server).with_http_client(http);
    client.decide(&mixed_request()).await.unwrap();
}

#[tokio::test]
async fn a_host_slower_than_the_timeout_is_a_transient_timeout() {
    let server = server_answering(
        "/v1/systemone",
        ResponseTemplate::new(200).set_delay(Duration::from_secs(5)),
    )
    .await;
    let client = loopback(&server).with_timeout(Duration::from_millis(100));
    let error = client.decide(&mixed_request()).await.unwrap_err();
    assert_eq!(error.kind(), FailureKind::Timeout);
    assert!(error.is_transient());
}

#[tokio::test]
async fn a_request_over_the_hosts_limits_is_never_sent() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&server)
        .await;
    let ollama = SystemOneClient::new(DecisionHost::Ollama).with_base_url(server.uri());
    let many: Vec<String> = (0..27).map(|n| format!("option {n}")).collect();
    let wide = DecisionRequest::new(
        json!("s"),
        [ChoiceQuestion::new("route", "Where?", many.iter().map(String::as_str)).unwrap()],
    )
    .unwrap();
    let error = ollama.decide(&wide).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("ollama takes at most 26 (the choice limit)"),
        "{error}"
    );

    let questions: Vec<DecisionQuestion> = (0..65)
        .map(|n| BinaryQuestion::new(format!("q{n}"), "Yes?").unwrap().into())
        .collect();
    let long = DecisionRequest::new(json!("s"), questions).unwrap();
    let error = ollama.decide(&long).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("65 questions; ollama takes at most 64"),
        "{error}"
    );
}

#[tokio::test]
async fn openrouter_and_fireworks_get_their_model_ids_and_paths() {
    let reply = mixed_reply(
        team_answer(1.0, 0.0, 0.0, "Billing"),
        urgency_answer([1.0, 0.0, 0.0, 0.0], 0.0),
    );
    let openrouter = server_answering(
        "/api/v1/systemone",
        ResponseTemplate::new(200).set_body_json(reply.clone()),
    )
    .await;
    SystemOneClient::new(DecisionHost::OpenRouter)
        .with_base_url(format!("{}/api", openrouter.uri()))
        .with_api_key(SECRET_KEY)
        .decide(&mixed_request())
        .await
        .unwrap();
    assert_eq!(
        received_bodies(&openrouter).await[0]["model"],
        "~typesafe/jev-latest"
    );

    let fireworks = server_answering(
        "/inference/v1/systemone",
        ResponseTemplate::new(200).set_body_json(reply),
    )
    .await;
    SystemOneClient::new(DecisionHost::Fireworks)
        .with_base_url(fireworks.uri())
        .with_model("accounts/acme/models/jev")
        .with_api_key(SECRET_KEY)
        .decide(&mixed_request())
        .await
        .unwrap();
    assert_eq!(
        received_bodies(&fireworks).await[0]["model"],
        "accounts/acme/models/jev"
    );
}

// ---------------------------------------------------------------------------------------
// The OpenAI-shaped Decisions API

/// The spec's example D request.
fn example_d() -> DecisionRequest {
    DecisionRequest::new(
        json!("I was charged twice. Please fix this ASAP."),
        [
            DecisionQuestion::from(
                BinaryQuestion::new("is_billing", "The message is about billing.").unwrap(),
            ),
            ChoiceQuestion::new(
                "team",
                "Which team should handle it?",
                [
                    ("billing", "Payments and refunds"),
                    ("technical", ""),
                    ("other", ""),
                ],
            )
            .unwrap()
            .into(),
            ScoreQuestion::new(
                "urgency",
                "How urgent is it?",
                [("Low", ""), ("Medium", ""), ("High", "Needs action today")],
            )
            .unwrap()
            .into(),
        ],
    )
    .unwrap()
    .with_model("jev")
}

/// The spec's example D reply (LiteLLM's translation of the mock's).
fn example_d_reply() -> Value {
    json!({"model":"jevcompat-mock-0.1","answers":[
        {"type":"predicate","name":"is_billing","probability":0.7485202869402497},
        {"type":"choice","name":"team","choice":"billing","probabilities":[{"value":"billing","probability":0.503190839939299},{"value":"technical","probability":0.32948324266993356},{"value":"other","probability":0.16732591739076744}],"confidence":0.25478625990894854},
        {"type":"score","name":"urgency","score":0.7666187420835067,"probabilities":[{"value":0,"label":"Low","probability":0.5885200873816334},{"value":1,"label":"Medium","probability":0.056341083153226404},{"value":2,"label":"High","probability":0.35513882946514014}],"confidence":0.0}],
        "usage":{"input_tokens":86,"input_tokens_details":{"cached_tokens":0,"cache_write_tokens":0},"output_tokens":6,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":92}})
}

fn decisions_client(server: &MockServer) -> SystemOneClient {
    SystemOneClient::new(DecisionHost::LiteLlm)
        .with_base_url(server.uri())
        .with_api_key(SECRET_KEY)
        .with_wire_format(WireFormat::OpenAiDecisions)
}

#[tokio::test]
async fn the_decisions_api_sends_example_d_and_reads_its_reply() {
    let server = server_answering(
        "/v1/decisions",
        ResponseTemplate::new(200).set_body_json(example_d_reply()),
    )
    .await;

    let response = decisions_client(&server)
        .decide(&example_d())
        .await
        .unwrap();

    let body = &received_bodies(&server).await[0];
    assert_eq!(
        *body,
        json!({"model":"jev","input":"I was charged twice. Please fix this ASAP.","questions":[
            {"type":"predicate","name":"is_billing","instructions":"The message is about billing."},
            {"type":"choice","name":"team","instructions":"Which team should handle it?","choices":[{"value":"billing","description":"Payments and refunds"},{"value":"technical"},{"value":"other"}]},
            {"type":"score","name":"urgency","instructions":"How urgent is it?","levels":[{"label":"Low"},{"label":"Medium"},{"label":"High","description":"Needs action today"}]}]})
    );
    assert_eq!(response.source(), ProbabilitySource::DecisionModel);
    assert!(
        (response.binary("is_billing").unwrap().probability() - 0.7485202869402497).abs() < 1e-12
    );
    let team = response.choice("team").unwrap();
    assert_eq!(team.selected(), "billing");
    assert!((team.confidence().unwrap() - 0.25478625990894854).abs() < 1e-12);
    let urgency = response.score("urgency").unwrap();
    assert_eq!(urgency.most_likely(), "Low");
    assert!((urgency.expected() - 0.7666187420835067).abs() < 1e-9);
    assert_eq!(response.usage().input_tokens, 86);
    assert_eq!(response.usage().output_tokens, 6);
}

#[tokio::test]
async fn decisions_answers_match_by_name_or_position_and_a_refusal_names_the_question() {
    // Out of order and named: matched by name.
    let mut reply = example_d_reply();
    reply["answers"].as_array_mut().unwrap().reverse();
    let server = server_answering(
        "/v1/decisions",
        ResponseTemplate::new(200).set_body_json(reply),
    )
    .await;
    let response = decisions_client(&server)
        .decide(&example_d())
        .await
        .unwrap();
    assert_eq!(response.choice("team").unwrap().selected(), "billing");

    // Unnamed (`name: null`): matched by position.
    let mut reply = example_d_reply();
    for answer in reply["answers"].as_array_mut().unwrap() {
        answer["name"] = Value::Null;
    }
    let server = server_answering(
        "/v1/decisions",
        ResponseTemplate::new(200).set_body_json(reply),
    )
    .await;
    assert!(decisions_client(&server).decide(&example_d()).await.is_ok());

    let mut reply = example_d_reply();
    reply["answers"][1] = json!({"type": "refusal", "name": "team"});
    let server = server_answering(
        "/v1/decisions",
        ResponseTemplate::new(200).set_body_json(reply),
    )
    .await;
    let error = decisions_client(&server)
        .decide(&example_d())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), FailureKind::InvalidResponse);
    assert!(
        error.to_string().contains("refused to answer `team`"),
        "{error}"
    );

    let mut reply = example_d_reply();
    reply["answers"][1]["probabilities"][2]["value"] = json!("sales");
    let server = server_answering(
        "/v1/decisions",
        ResponseTemplate::new(200).set_body_json(reply),
    )
    .await;
    let error = decisions_client(&server)
        .decide(&example_d())
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`team` gives no probability for `other`"),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------------
// A host that echoes the state

/// What a host that echoes its input writes back: the user's text, state marker included.
fn echoed() -> String {
    format!("refund (I was charged twice. Please fix this ASAP. {STATE_SECRET})")
}

/// Every reply shape that once put what the host wrote into an error, as a body and the
/// words the error says instead.
fn echoing_replies() -> Vec<(WireFormat, String, &'static str)> {
    let echo = echoed();
    let urgency = urgency_answer([1.0, 0.0, 0.0, 0.0], 0.0);
    let body = |value: Value| value.to_string();
    vec![
        // A selection that is not a label asked.
        (
            WireFormat::SystemOne,
            body(mixed_reply(
                team_answer(1.0, 0.0, 0.0, &echo),
                urgency.clone(),
            )),
            "`team` selects none of the 3 choices asked (`Billing`, `Technical`, `Other`)",
        ),
        // What the JSON reader would have quoted: `answers` of another type, a body that
        // is a string, a body that is not JSON or is cut off.
        (
            WireFormat::SystemOne,
            body(json!({"model": "m", "answers": echo})),
            "the reply's `answers` is a string, not an object keyed by question id",
        ),
        (
            WireFormat::SystemOne,
            body(json!(echo)),
            "the reply is a string, not a System One body",
        ),
        (
            WireFormat::SystemOne,
            echo.clone(),
            "the reply is not valid JSON (line 1, column 1)",
        ),
        (
            WireFormat::SystemOne,
            format!(r#"{{"answers": {{"team": "{echo}"#),
            "the reply ends before its JSON is complete",
        ),
        // An answer type the wire does not have, and an answer that is not an object.
        (
            WireFormat::SystemOne,
            body(mixed_reply(json!({"type": echo}), urgency.clone())),
            "`team` is of a type this client does not know, not `choice`",
        ),
        (
            WireFormat::SystemOne,
            body(mixed_reply(json!(echo), urgency.clone())),
            "the answer to `team` is a string, not an object",
        ),
        // A probability for an option not asked.
        (
            WireFormat::SystemOne,
            body(mixed_reply(
                json!({"type": "choice", "choice": "Billing", "probabilities": {"Billing": 1.0, "Technical": 0.0, "Other": 0.0, echo.clone(): 0.0}}),
                urgency,
            )),
            "`team` gives probabilities for 4 options, not the 3 asked",
        ),
        // The Decisions API's list shapes.
        (
            WireFormat::OpenAiDecisions,
            body(json!({"answers": echo})),
            "the reply's `answers` is a string, not a list of answers",
        ),
        (
            WireFormat::OpenAiDecisions,
            body(json!({"answers": [
                {"type": "predicate", "name": "is_billing", "probability": 0.5},
                {"type": "choice", "name": "team", "choice": "Billing", "probabilities": [
                    {"value": echo.clone(), "probability": 0.5},
                    {"value": echo.clone(), "probability": 0.5}]}]})),
            "entries 1 and 2 of the answer to `team`'s `probabilities` are for the same value",
        ),
        (
            WireFormat::OpenAiDecisions,
            body(json!({"answers": [
                {"type": "predicate", "name": "is_billing", "probability": 0.5},
                {"type": echo.clone(), "name": "team"}]})),
            "`team` is of a type this client does not know, not `choice`",
        ),
        (
            WireFormat::OpenAiDecisions,
            body(json!({"answers": [
                {"type": "predicate", "name": "is_billing", "probability": 0.5},
                {"type": "choice", "name": "team", "choice": echo.clone(), "probabilities": [
                    {"value": "Billing", "probability": 1.0},
                    {"value": "Technical", "probability": 0.0},
                    {"value": "Other", "probability": 0.0}]}]})),
            "`team` selects none of the 3 choices asked",
        ),
    ]
}

#[tokio::test]
async fn a_host_that_echoes_the_state_never_puts_it_in_an_error_or_a_log() {
    let logs = CapturedLogs::start();
    for (format, reply, expected) in echoing_replies() {
        let route = match format {
            WireFormat::SystemOne => "/v1/systemone",
            _ => "/v1/decisions",
        };
        let server = server_answering(
            route,
            ResponseTemplate::new(200)
                .set_body_raw(reply.clone(), "application/json")
                .insert_header("x-typesafe-request-id", "req_echo"),
        )
        .await;
        let error = loopback(&server)
            .with_wire_format(format)
            .decide(&mixed_request())
            .await
            .unwrap_err();
        assert_eq!(
            error.kind(),
            FailureKind::InvalidResponse,
            "{reply}: {error}"
        );
        assert!(
            error.to_string().contains(expected),
            "{expected}\n  got: {error}\n  for: {reply}"
        );
        assert_eq!(error.request_id(), Some("req_echo"));
        // Nothing the host wrote is kept: the error was raised here, on the reply.
        assert_eq!(error.provider_message(), None);
        for printed in [
            error.to_string(),
            format!("{error:?}"),
            format!("{error:#?}"),
        ] {
            assert!(!printed.contains(STATE_SECRET), "{printed}");
            assert!(!printed.contains("charged twice"), "{printed}");
        }
    }
    let text = logs.text();
    assert!(
        text.contains("decision reply refused"),
        "the capture saw the refusals"
    );
    assert!(!text.contains(STATE_SECRET), "the state was logged");
    assert!(!text.contains("charged twice"), "the state was logged");
}

#[tokio::test]
async fn usage_counts_written_as_floats_are_read_and_an_unreadable_usage_keeps_the_answers() {
    let answered = |usage: Value| {
        let mut reply = mixed_reply(
            team_answer(1.0, 0.0, 0.0, "Billing"),
            urgency_answer([0.0, 0.0, 1.0, 0.0], 2.0),
        );
        reply["usage"] = usage;
        reply
    };
    let decide = |reply: Value, format: WireFormat| async move {
        let route = match format {
            WireFormat::SystemOne => "/v1/systemone",
            _ => "/v1/decisions",
        };
        let server = server_answering(route, ResponseTemplate::new(200).set_body_json(reply)).await;
        loopback(&server)
            .with_wire_format(format)
            .decide(&mixed_request())
            .await
    };

    // Whole numbers written as floats are whole numbers.
    let response = decide(
        answered(json!({"input_tokens": 97.0, "output_tokens": 55.0,
            "input_tokens_details": {"cached_tokens": 12.0}})),
        WireFormat::SystemOne,
    )
    .await
    .unwrap();
    assert_eq!(response.usage().input_tokens, 97);
    assert_eq!(response.usage().output_tokens, 55);
    assert_eq!(response.usage().cached_input_tokens, 12);
    assert!(response.notes().is_empty(), "{:?}", response.notes());
    let mut decisions = example_d_reply();
    decisions["usage"]["input_tokens"] = json!(86.0);
    let server = server_answering(
        "/v1/decisions",
        ResponseTemplate::new(200).set_body_json(decisions),
    )
    .await;
    let response = decisions_client(&server)
        .decide(&example_d())
        .await
        .unwrap();
    assert_eq!(response.usage().input_tokens, 86);

    // A count that is not a whole number, or a usage block that is no object: the
    // answers stand, and what could not be read is noted by field, never quoted.
    let logs = CapturedLogs::start();
    let response = decide(
        answered(json!({"input_tokens": 97.5, "output_tokens": echoed()})),
        WireFormat::SystemOne,
    )
    .await
    .unwrap();
    assert_eq!(response.choice("team").unwrap().selected(), "Billing");
    assert_eq!(response.usage().input_tokens, 0);
    assert_eq!(response.usage().output_tokens, 0);
    let notes = response.notes().join(" | ");
    assert!(
        notes.contains("`usage.input_tokens` is a number with a fraction"),
        "{notes}"
    );
    assert!(
        notes.contains("`usage.output_tokens` is a string"),
        "{notes}"
    );
    assert!(!notes.contains(STATE_SECRET), "{notes}");
    let response = decide(answered(json!(echoed())), WireFormat::SystemOne)
        .await
        .unwrap();
    assert_eq!(
        response.notes(),
        [
            "the reply's `usage` is a string, not an object; its token counts are unknown and counted as 0"
        ]
    );
    let text = logs.text();
    assert!(text.contains("usage.input_tokens"), "the note is logged");
    assert!(!text.contains(STATE_SECRET), "the state was logged");
}

/// A decision host that answers its first request 429 with `retry-after: 1`, then a yes,
/// and notes when each request came.
struct BusyOnce(Arc<Mutex<Vec<Instant>>>, &'static str);

impl wiremock::Respond for BusyOnce {
    fn respond(&self, _: &wiremock::Request) -> ResponseTemplate {
        let mut times = self.0.lock().unwrap();
        times.push(Instant::now());
        if times.len() == 1 {
            ResponseTemplate::new(429)
                .insert_header("retry-after", self.1)
                .set_body_json(
                    json!({"detail": {"error_type": "rate_limit_error", "message": "slow down"}}),
                )
        } else {
            ResponseTemplate::new(200).set_body_json(json!({"model": "jev",
                "answers": {"satisfies_intent": {"type": "noul", "noul": 0.99}}}))
        }
    }
}

async fn busy_once(retry_after: &'static str) -> (MockServer, Arc<Mutex<Vec<Instant>>>) {
    let times = Arc::new(Mutex::new(Vec::new()));
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(BusyOnce(times.clone(), retry_after))
        .mount(&server)
        .await;
    (server, times)
}

fn gated_by(server: &MockServer) -> IntentClient {
    let gate = DecisionEvaluator::new(loopback(server))
        .on_transient_failure(intent_rs::decision::FailureBehavior::Retry);
    IntentClient::builder()
        .provider(ScriptedProvider::new(["a summary", "another summary"]))
        .judge_provider(ScriptedProvider::new([
            r#"{"passes": true, "problems": []}"#,
        ]))
        .decision_gate(gate)
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_gate_set_to_retry_waits_as_long_as_the_decision_host_asked() {
    let (server, times) = busy_once("1").await;
    let result: intent_rs::AIResult<String> = gated_by(&server)
        .transform(
            "Our refund policy is 30 days",
            "Summarize in one sentence",
            intent_rs::IntentOptions::new().require_judge(),
        )
        .await;
    assert!(result.is_success(), "{:?}", result.issues);
    let times = times.lock().unwrap().clone();
    assert_eq!(times.len(), 2, "asked once more");
    let gap = times[1] - times[0];
    assert!(
        gap >= Duration::from_secs(1),
        "asked again {gap:?} after a 429 with retry-after: 1"
    );
    let issue = &result.attempts[0].issues[0];
    assert!(
        issue
            .message
            .contains("asked again after 1000 ms, as it advised"),
        "{}",
        issue.message
    );

    // A wait the time budget cannot cover stops the call at once.
    let (server, times) = busy_once("60").await;
    let started = Instant::now();
    let result: intent_rs::AIResult<String> = gated_by(&server)
        .transform(
            "Our refund policy is 30 days",
            "Summarize in one sentence",
            intent_rs::IntentOptions::new()
                .require_judge()
                .time_budget(Duration::from_secs(5)),
        )
        .await;
    assert!(!result.is_success());
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(times.lock().unwrap().len(), 1, "not asked again");
    assert_eq!(result.attempts.len(), 1);
    let last = result.attempts[0].issues.last().unwrap();
    assert!(
        last.message.contains("asked to wait 30000 ms"),
        "{}",
        last.message
    );
}
