//! Decision questions end to end: OpenAI's log-probability format and Anthropic's
//! structured output over loopback HTTP, mixed batches, the DSL's `Binary`, `Choice` and
//! `Score` methods, and the decision gate in front of the judge.

mod provider_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use intent_rs::decision::{
    BinaryQuestion, ChoiceQuestion, DecisionClient, DecisionError, DecisionEvaluator,
    DecisionQuestion, DecisionRequest, FailureBehavior, FailureKind, LogprobDecisionClient,
    ProbabilitySource, ScoreQuestion, StatedDecisionClient,
};
use intent_rs::provider::{
    Anthropic, OpenAi, Provider, ProviderError, ProviderErrorKind, ProviderReply, ProviderRequest,
    ScriptedProvider, ScriptedReply,
};
use intent_rs::{
    Binary, Choice, DecisionEnum, GateOutcome, IntentClient, IntentError, IssueSource, Score,
    intents,
};
use provider_support::{
    CapturedLogs, OPENAI_FIELDS, SECRET_KEY, assert_valid_chat_request, received_bodies,
};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// A state no message or log line may quote.
const STATE_SECRET: &str = "customer-4471-STATE";

fn state() -> Value {
    json!({"ticket": format!("I was charged twice, account {STATE_SECRET}"), "replies": 2})
}

fn mixed_questions() -> Vec<DecisionQuestion> {
    vec![
        BinaryQuestion::new("resolved", "Has the ticket been resolved?")
            .unwrap()
            .with_criteria("The customer confirmed the fix.")
            .into(),
        ChoiceQuestion::new(
            "route",
            "Which team should take it?",
            [
                ("billing", "Payments and refunds"),
                ("support", "Bugs"),
                ("sales", ""),
            ],
        )
        .unwrap()
        .into(),
        ScoreQuestion::new("urgency", "How urgent is it?", ["low", "medium", "high"])
            .unwrap()
            .into(),
    ]
}

/// A Chat Completions reply of one token, with these alternatives.
fn logprob_completion(alternatives: &[(&str, f64)]) -> Value {
    let top: Vec<Value> = alternatives
        .iter()
        .map(|(token, logprob)| json!({"token": token, "logprob": logprob, "bytes": null}))
        .collect();
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": alternatives[0].0, "refusal": null},
            "logprobs": {"content": [{
                "token": alternatives[0].0, "logprob": alternatives[0].1, "bytes": null,
                "top_logprobs": top
            }], "refusal": null},
            "finish_reason": "length"
        }],
        "usage": {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101}
    })
}

/// Answers each question by what its prompt offers: letters, digits, or yes/no.
struct ByQuestion;

impl Respond for ByQuestion {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let user = body["messages"][1]["content"].as_str().unwrap_or_default();
        let reply = if user.contains("one of: A, B, C") {
            logprob_completion(&[
                ("A", 0.7f64.ln()),
                (" B", 0.2f64.ln()),
                ("C", 0.05f64.ln()),
                ("I", 0.05f64.ln()),
            ])
        } else if user.contains("one of: 0, 1, 2") {
            logprob_completion(&[("2", 0.6f64.ln()), ("1", 0.4f64.ln())])
        } else {
            logprob_completion(&[
                ("Yes", 0.8f64.ln()),
                (" no", 0.15f64.ln()),
                ("Maybe", 0.05f64.ln()),
            ])
        };
        ResponseTemplate::new(200).set_body_json(reply)
    }
}

async fn openai_server(responder: impl Respond + 'static) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(responder)
        .mount(&server)
        .await;
    server
}

fn openai(server: &MockServer) -> OpenAi {
    OpenAi::new(SECRET_KEY).with_base_url(server.uri())
}

#[tokio::test]
async fn a_mixed_batch_is_answered_from_openai_log_probabilities() {
    let server = openai_server(ByQuestion).await;
    let client = LogprobDecisionClient::new(openai(&server));
    let request = DecisionRequest::new(state(), mixed_questions()).unwrap();

    let response = client.decide(&request).await.unwrap();

    assert_eq!(response.source(), ProbabilitySource::LogProbabilities);
    let resolved = response.binary("resolved").unwrap();
    assert!((resolved.probability() - 0.8 / 0.95).abs() < 1e-9);
    assert!((resolved.coverage().unwrap() - 0.95).abs() < 1e-9);
    let route = response.choice("route").unwrap();
    assert_eq!(route.selected(), "billing");
    assert!((route.probability("support").unwrap() - 0.2 / 0.95).abs() < 1e-9);
    let urgency = response.score("urgency").unwrap();
    assert_eq!(urgency.most_likely(), "high");
    assert!((urgency.expected() - 1.6).abs() < 1e-9);
    assert_eq!(response.usage().input_tokens, 300, "three requests");
    assert_eq!(response.model(), "gpt-4o-mini-2024-07-18");

    // One plain-text request per question, for one token, with 20 alternatives.
    let bodies = received_bodies(&server).await;
    assert_eq!(bodies.len(), 3);
    let mut allowed = OPENAI_FIELDS.to_vec();
    allowed.extend(["logprobs", "top_logprobs"]);
    for body in &bodies {
        assert_valid_chat_request(body, &allowed);
        assert_eq!(body["logprobs"], json!(true));
        assert_eq!(body["top_logprobs"], json!(20));
        assert_eq!(body["max_completion_tokens"], json!(1));
        assert_eq!(body["temperature"], json!(0.0));
        assert!(
            body.get("response_format").is_none(),
            "plain text: a JSON reply starts with `{{`"
        );
        let user = body["messages"][1]["content"].as_str().unwrap();
        assert!(user.contains("<<<STATE\n{"), "{user}");
    }
    let binary = bodies
        .iter()
        .find_map(|b| {
            b["messages"][1]["content"]
                .as_str()
                .filter(|u| u.contains("yes, no"))
        })
        .unwrap();
    assert!(
        binary.contains("Criteria for yes: The customer confirmed the fix."),
        "{binary}"
    );
}

/// A provider that records how many of its calls were in flight at once.
#[derive(Debug, Default)]
struct Overlap {
    in_flight: AtomicUsize,
    most: AtomicUsize,
}

#[async_trait::async_trait]
impl Provider for Overlap {
    fn name(&self) -> &str {
        "overlap"
    }
    fn default_model(&self) -> &str {
        "m"
    }
    fn max_top_logprobs(&self) -> Option<u8> {
        Some(20)
    }
    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let label = if request.user().contains("one of: A") {
            "A"
        } else if request.user().contains("one of: 0") {
            "0"
        } else {
            "yes"
        };
        Ok(ProviderReply {
            text: label.into(),
            logprobs: Some(vec![intent_rs::provider::TokenLogprob {
                token: label.into(),
                logprob: 0.0,
                top_logprobs: vec![intent_rs::provider::LogprobAlternative::new(label, 0.0)],
            }]),
            ..ProviderReply::default()
        })
    }
}

#[tokio::test]
async fn log_probability_questions_go_out_concurrently() {
    let provider = Arc::new(Overlap::default());
    let client = LogprobDecisionClient::shared(provider.clone());
    let request = DecisionRequest::new(state(), mixed_questions()).unwrap();
    client.decide(&request).await.unwrap();
    assert_eq!(provider.most.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn more_choices_than_openai_reports_are_refused_before_sending() {
    let server = openai_server(ByQuestion).await;
    let client = LogprobDecisionClient::new(openai(&server));
    let names: Vec<String> = (1..=21).map(|n| format!("team {n}")).collect();
    let question =
        ChoiceQuestion::new("route", "Which team?", names.iter().map(String::as_str)).unwrap();
    let binary = BinaryQuestion::new("resolved", "Resolved?").unwrap();
    let request =
        DecisionRequest::new(state(), [DecisionQuestion::from(binary), question.into()]).unwrap();

    let error = client.decide(&request).await.unwrap_err();

    assert_eq!(error.kind(), FailureKind::InvalidRequest);
    assert!(error.to_string().contains("21 choices"), "{error}");
    assert!(
        error.to_string().contains("at most 20 alternatives"),
        "{error}"
    );
    assert!(
        received_bodies(&server).await.is_empty(),
        "nothing was sent"
    );
}

#[tokio::test]
async fn a_failure_is_classified_never_retried_and_never_quotes_the_state_or_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(ResponseTemplate::new(429).set_body_json(json!({
            "error": {"message": format!("Rate limit reached; request was {STATE_SECRET}"), "type": "requests", "param": null, "code": "rate_limit_exceeded"}
        })))
        .mount(&server)
        .await;
    let client = LogprobDecisionClient::new(openai(&server));
    let request = DecisionRequest::new(
        state(),
        [BinaryQuestion::new("resolved", "Resolved?").unwrap()],
    )
    .unwrap();

    let error = client.decide(&request).await.unwrap_err();

    assert_eq!(error.kind(), FailureKind::RateLimited);
    assert!(error.is_transient());
    assert_eq!(error.status(), Some(429));
    assert_eq!(
        received_bodies(&server).await.len(),
        1,
        "no retry of its own"
    );
    // What `main` returning the error and `tracing::error!(?error)` print: its Debug form.
    let shown = format!("{error} {error:?} {error:#?}");
    assert!(!shown.contains(SECRET_KEY), "{shown}");
    assert!(!shown.contains(STATE_SECRET), "{shown}");
    assert!(format!("{error:?}").contains("withheld"), "{error:?}");
    // The provider's words stay readable for whoever may log the state.
    assert!(
        error
            .provider_message()
            .is_some_and(|m| m.contains(STATE_SECRET))
    );
}

#[tokio::test]
async fn a_reply_without_log_probabilities_is_an_invalid_response() {
    let server = openai_server(ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"message": {"content": "yes"}, "logprobs": null, "finish_reason": "length"}]
    })))
    .await;
    let client = LogprobDecisionClient::new(openai(&server)).log_probabilities_only();
    let request = DecisionRequest::new(
        state(),
        [BinaryQuestion::new("resolved", "Resolved?").unwrap()],
    )
    .unwrap();
    let error = client.decide(&request).await.unwrap_err();
    assert_eq!(error.kind(), FailureKind::InvalidResponse);
    assert!(
        error
            .to_string()
            .contains("the reply to `resolved` carries no log-probabilities"),
        "{error}"
    );
    assert!(!error.is_transient());
    assert_eq!(received_bodies(&server).await.len(), 1, "no second method");
}

/// A Chat Completions server that answers a request for log-probabilities with
/// `logprobs` (a reply without them, or a refusal of the request), and a strict-schema
/// request with stated answers to [`mixed_questions`].
struct NoLogprobs {
    refuse: bool,
}

impl Respond for NoLogprobs {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let chat = |content: String, completion_tokens: u64| {
            json!({"id": "chatcmpl-2", "object": "chat.completion", "created": 1_700_000_000,
                "model": "local-model",
                "choices": [{"index": 0, "logprobs": null, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": completion_tokens,
                    "total_tokens": 100 + completion_tokens}})
        };
        if body.get("logprobs").is_some() {
            if self.refuse {
                return ResponseTemplate::new(400).set_body_json(json!({"error": {
                    "message": "logprobs is not supported with this model",
                    "type": "invalid_request_error", "param": "logprobs",
                    "code": "unsupported_parameter"}}));
            }
            return ResponseTemplate::new(200).set_body_json(chat("yes".into(), 1));
        }
        let answers = json!({"value": {
            "resolved": {"probability_yes": 0.25},
            "route": {"probabilities": {"billing": 0.6, "support": 0.3, "sales": 0.1}},
            "urgency": {"probabilities": {"low": 0.1, "medium": 0.2, "high": 0.7}}
        }});
        ResponseTemplate::new(200).set_body_json(chat(answers.to_string(), 40))
    }
}

#[tokio::test]
async fn without_log_probabilities_in_the_replies_the_answers_are_stated_and_say_so() {
    let server = openai_server(NoLogprobs { refuse: false }).await;
    let compatible = intent_rs::provider::OpenAiCompatible::new(server.uri(), "local-model");
    // Chosen by what the provider offers: it says it reports log-probabilities.
    let client = IntentClient::builder()
        .provider(compatible)
        .build()
        .unwrap();
    let request = DecisionRequest::new(state(), mixed_questions()).unwrap();

    let response = client.decide(&request).await.unwrap();

    assert_eq!(response.source(), ProbabilitySource::Stated);
    let reason = response.fallback_reason().unwrap();
    assert!(reason.contains("carries no log-probabilities"), "{reason}");
    assert!(!reason.contains(STATE_SECRET));
    assert_eq!(response.binary("resolved").unwrap().probability(), 0.25);
    assert_eq!(response.choice("route").unwrap().selected(), "billing");
    // Three one-token requests, then one stated request: all four are paid for.
    let bodies = received_bodies(&server).await;
    assert_eq!(bodies.len(), 4);
    assert_eq!(response.usage().input_tokens, 400);
    assert_eq!(response.usage().output_tokens, 3 + 40);
}

#[tokio::test]
async fn a_server_refusing_logprobs_gets_the_stated_request_unless_only_they_will_do() {
    let server = openai_server(NoLogprobs { refuse: true }).await;
    let provider = || openai(&server);
    let request = DecisionRequest::new(state(), mixed_questions()).unwrap();

    let response = LogprobDecisionClient::new(provider())
        .decide(&request)
        .await
        .unwrap();
    assert_eq!(response.source(), ProbabilitySource::Stated);
    assert_eq!(
        response.fallback_reason(),
        Some("openai refused the request for log-probabilities")
    );
    assert_eq!(response.score("urgency").unwrap().most_likely(), "high");

    // Measured or nothing: the provider's refusal, classified as it was.
    let error = LogprobDecisionClient::new(provider())
        .log_probabilities_only()
        .decide(&request)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), FailureKind::InvalidRequest);
    assert_eq!(error.status(), Some(400));

    // A measured answer records no fallback.
    let measured = openai_server(ByQuestion).await;
    let response = LogprobDecisionClient::new(openai(&measured))
        .decide(&request)
        .await
        .unwrap();
    assert_eq!(response.source(), ProbabilitySource::LogProbabilities);
    assert_eq!(response.fallback_reason(), None);
}

#[tokio::test]
async fn a_provider_reporting_no_log_probabilities_is_asked_for_stated_answers() {
    let answers = r#"{"value": {"resolved": {"probability_yes": 0.9}}}"#;
    let request = DecisionRequest::new(
        state(),
        [BinaryQuestion::new("resolved", "Resolved?").unwrap()],
    )
    .unwrap();
    let model = ScriptedProvider::new([answers]);
    let response = LogprobDecisionClient::new(model.clone())
        .decide(&request)
        .await
        .unwrap();
    assert_eq!(response.source(), ProbabilitySource::Stated);
    assert_eq!(
        response.fallback_reason(),
        Some("scripted reports no log-probabilities")
    );
    let error = LogprobDecisionClient::new(ScriptedProvider::new([answers]))
        .log_probabilities_only()
        .decide(&request)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), FailureKind::InvalidRequest);
    assert!(
        error.to_string().contains("reports no log-probabilities"),
        "{error}"
    );
}

#[tokio::test]
async fn anthropic_states_the_probabilities_in_a_strict_schema() {
    let server = MockServer::start().await;
    let answers = json!({"value": {
        "resolved": {"probability_yes": 0.25},
        "route": {"probabilities": {"billing": 0.6, "support": 0.3, "sales": 0.1}},
        "urgency": {"probabilities": {"low": 0.1, "medium": 0.2, "high": 0.7}}
    }});
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test-1",
            "content": [{"type": "text", "text": answers.to_string()}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 400, "output_tokens": 60}
        })))
        .mount(&server)
        .await;
    let anthropic = Anthropic::new(SECRET_KEY)
        .with_base_url(server.uri())
        .with_model("claude-test");
    assert_eq!(anthropic.max_top_logprobs(), None);
    // Chosen by what the provider offers: no log-probabilities, so stated.
    let client = IntentClient::builder().provider(anthropic).build().unwrap();
    let request = DecisionRequest::new(state(), mixed_questions()).unwrap();

    let response = client.decide(&request).await.unwrap();

    assert_eq!(response.source(), ProbabilitySource::Stated);
    assert_eq!(response.binary("resolved").unwrap().probability(), 0.25);
    assert_eq!(response.binary("resolved").unwrap().coverage(), None);
    assert_eq!(response.choice("route").unwrap().selected(), "billing");
    assert_eq!(response.score("urgency").unwrap().most_likely(), "high");
    assert_eq!(response.usage().input_tokens, 400);
    let bodies = received_bodies(&server).await;
    assert_eq!(bodies.len(), 1, "one request for the whole batch");
    let schema = &bodies[0]["output_config"]["format"]["schema"];
    assert_eq!(bodies[0]["output_config"]["format"]["type"], "json_schema");
    // The selected choice is read from the distribution: the model is asked for no other.
    assert_eq!(
        schema["properties"]["value"]["properties"]["route"]["required"],
        json!(["probabilities"])
    );
    assert!(bodies[0].get("top_logprobs").is_none());
}

#[tokio::test]
async fn a_stated_answer_that_does_not_verify_is_refused_over_anthropic() {
    let server = MockServer::start().await;
    let answers = json!({"value": {"resolved": {"probability_yes": 7}}});
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "type": "message", "model": "claude-test-1",
            "content": [{"type": "text", "text": answers.to_string()}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}
        })))
        .mount(&server)
        .await;
    let client = StatedDecisionClient::new(Anthropic::new(SECRET_KEY).with_base_url(server.uri()));
    let request = DecisionRequest::new(
        state(),
        [BinaryQuestion::new("resolved", "Resolved?").unwrap()],
    )
    .unwrap();
    let error = client.decide(&request).await.unwrap_err();
    assert_eq!(error.kind(), FailureKind::InvalidResponse);
    assert!(error.to_string().contains("between 0 and 1"), "{error}");
}

/// A provider that echoes the state back, in every place its reply has: an answer token,
/// a refusal, a body that is no completion, stated probabilities, a reply that is the
/// state. Whatever it wrote, no decision error (Display, Debug) nor log line quotes it.
#[tokio::test]
async fn a_provider_that_echoes_the_state_never_puts_it_in_a_decision_error_or_a_log() {
    let logs = CapturedLogs::start();
    let echo = format!("I was charged twice, account {STATE_SECRET}");
    let request = DecisionRequest::new(state(), mixed_questions()).unwrap();
    let mut errors = Vec::new();

    // Log-probabilities (OpenAI).
    let refusal = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null, "refusal": echo},
        "logprobs": null, "finish_reason": "stop"}]});
    for reply in [
        ResponseTemplate::new(200).set_body_json(logprob_completion(&[
            (echo.as_str(), -0.01),
            ("yes", -6.0),
            ("A", -6.0),
            ("0", -6.0),
        ])),
        ResponseTemplate::new(200).set_body_json(refusal),
        ResponseTemplate::new(200).set_body_string(echo.clone()),
    ] {
        let server = openai_server(reply).await;
        let client = LogprobDecisionClient::new(openai(&server));
        errors.push(client.decide(&request).await.unwrap_err());
    }

    // Stated (Anthropic).
    for text in [
        json!({"value": {"resolved": {"probability_yes": echo},
            "route": {"probabilities": {"billing": 0.5, "support": 0.5, "sales": 0.0}},
            "urgency": {"probabilities": {"low": 0.5, "medium": 0.5, "high": 0.0}}}})
        .to_string(),
        json!({"value": {"resolved": {"probability_yes": 0.5},
            "route": {"probabilities": {"billing": 0.5, "support": 0.5, "sales": 0.0, echo.as_str(): 1.0}},
            "urgency": {"probabilities": {"low": 0.5, "medium": 0.5, "high": 0.0}}}})
        .to_string(),
        echo.clone(),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "type": "message", "model": "claude-test-1",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}
            })))
            .mount(&server)
            .await;
        let client =
            StatedDecisionClient::new(Anthropic::new(SECRET_KEY).with_base_url(server.uri()));
        errors.push(client.decide(&request).await.unwrap_err());
    }

    for error in &errors {
        assert_eq!(error.kind(), FailureKind::InvalidResponse, "{error}");
        for printed in [
            error.to_string(),
            format!("{error:?}"),
            format!("{error:#?}"),
        ] {
            assert!(!printed.contains(STATE_SECRET), "{printed}");
            assert!(!printed.contains("charged twice"), "{printed}");
        }
    }
    // Each says which question, or that the reply is not the answers asked for.
    assert!(
        errors[0].to_string().contains("`resolved`"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].to_string().contains("refused to answer"),
        "{}",
        errors[1]
    );
    let text = logs.text();
    assert!(!text.contains(STATE_SECRET), "the state was logged");
}

// ---------------------------------------------------------------------------------------
// The DSL

#[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
pub enum Team {
    /// Payments, invoices and refunds.
    Billing,
    /// Anything that does not work.
    Support,
}

#[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
pub enum Urgency {
    Low,
    Medium,
    High,
}

#[intents]
pub trait Triage {
    #[intent("Has the customer's problem been solved?")]
    async fn solved(&self, ticket: &str) -> Result<Binary, DecisionError>;

    #[intent("Which team should take the ticket?", model = "small-model")]
    async fn team(&self, ticket: &str, customer: &str) -> Result<Choice<Team>, DecisionError>;

    #[intent("How urgent is the ticket?")]
    async fn urgency(&self, ticket: &str) -> Result<Score<Urgency>, DecisionError>;

    #[intent("Summarize the ticket")]
    async fn summary(&self, ticket: &str) -> Result<String, IntentError>;
}

#[tokio::test]
async fn decision_methods_ask_the_clients_decision_client() {
    let model = ScriptedProvider::new([
        ScriptedReply::logprobs([("yes", -0.1), ("no", -2.5)]),
        ScriptedReply::logprobs([("B", 0.9f64.ln()), ("A", 0.1f64.ln())]),
        ScriptedReply::logprobs([("0", 0.5f64.ln()), ("2", 0.5f64.ln())]),
        ScriptedReply::text("A double charge."),
    ])
    .with_max_top_logprobs(Some(20));
    let triage = TriageClient::new(
        IntentClient::builder()
            .provider(model.clone())
            .build()
            .unwrap(),
    );

    let solved = triage.solved("Works now, thanks").await.unwrap();
    assert!(solved.is_yes(0.9) && solved.probability < 1.0, "{solved:?}");
    assert_eq!(solved.source, ProbabilitySource::LogProbabilities);
    let team = triage
        .team("My card was charged twice", "Ann")
        .await
        .unwrap();
    assert_eq!(team.selected, Team::Support);
    assert_eq!(team.probabilities[0].0, Team::Billing);
    let urgency = triage.urgency("Site down").await.unwrap();
    assert_eq!(
        urgency.most_likely,
        Urgency::Low,
        "the lower level on a tie"
    );
    assert!((urgency.expected - 1.0).abs() < 1e-9);
    assert_eq!(triage.summary("...").await.unwrap(), "A double charge.");

    let requests = model.requests();
    // The intent is the question; the parameters are the state; doc comments describe.
    assert!(
        requests[0]
            .user()
            .contains("Has the customer's problem been solved?")
    );
    assert!(
        requests[0]
            .user()
            .contains("<<<STATE\n\"Works now, thanks\"\nSTATE>>>"),
        "{}",
        requests[0].user()
    );
    assert!(
        requests[1]
            .user()
            .contains(r#"{"ticket":"My card was charged twice","customer":"Ann"}"#),
        "{}",
        requests[1].user()
    );
    assert!(
        requests[1]
            .user()
            .contains("- A: Billing (Payments, invoices and refunds.)"),
        "{}",
        requests[1].user()
    );
    assert_eq!(requests[1].model.as_deref(), Some("small-model"));
    assert!(
        requests[2].user().contains("- 2: High"),
        "{}",
        requests[2].user()
    );
    assert_eq!(requests[0].top_logprobs, Some(20));
}

#[tokio::test]
async fn without_log_probabilities_the_methods_get_stated_answers() {
    let model = ScriptedProvider::new([
        r#"{"value": {"team": {"probabilities": {"Billing": 0.8, "Support": 0.2}}}}"#,
    ]);
    let triage = TriageClient::new(IntentClient::builder().provider(model).build().unwrap());
    let team = triage.team("Refund please", "Bo").await.unwrap();
    assert_eq!(team.selected, Team::Billing);
    assert_eq!(team.source, ProbabilitySource::Stated);
}

#[tokio::test]
async fn the_selected_choice_is_the_most_probable_on_both_paths() {
    // Measured: 0.15 on Billing, 0.85 on Support.
    let measured = ScriptedProvider::new([ScriptedReply::logprobs([
        ("A", 0.15f64.ln()),
        ("B", 0.85f64.ln()),
    ])])
    .with_max_top_logprobs(Some(20));
    // Stated: the same numbers. A model that also names Billing (as the old schema asked)
    // is not believed over its own distribution: the schema no longer has the field.
    let stated = ScriptedProvider::new([
        r#"{"value": {"team": {"probabilities": {"Billing": 0.15, "Support": 0.85}}}}"#,
    ]);
    for (model, source) in [
        (measured, ProbabilitySource::LogProbabilities),
        (stated, ProbabilitySource::Stated),
    ] {
        let triage = TriageClient::new(IntentClient::builder().provider(model).build().unwrap());
        let team = triage.team("The app crashes", "Cy").await.unwrap();
        assert_eq!(team.source, source);
        assert_eq!(team.selected, Team::Support, "{source:?}");
        let most_probable = team
            .probabilities
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(team, _)| *team);
        assert_eq!(Some(team.selected), most_probable, "{source:?}");
    }
}

#[tokio::test]
async fn a_stated_selection_beside_the_distribution_is_an_invalid_response() {
    // The reply shape a model sent when it was asked to name a choice too: a choice
    // named against its own numbers is never taken for the answer.
    let model = ScriptedProvider::new([
        r#"{"value": {"team": {"probabilities": {"Billing": 0.15, "Support": 0.85}, "selected": "Billing"}}}"#,
    ]);
    let triage = TriageClient::new(IntentClient::builder().provider(model).build().unwrap());
    let error = triage.team("The app crashes", "Cy").await.unwrap_err();
    assert_eq!(error.kind(), FailureKind::InvalidResponse);
    assert!(
        error
            .to_string()
            .contains("does not match the answers' schema"),
        "{error}"
    );
}

/// Twelve levels: more than there are digits.
#[derive(Debug, Clone, Copy, PartialEq, DecisionEnum)]
pub enum Twelve {
    L0,
    L1,
    L2,
    L3,
    L4,
    L5,
    L6,
    L7,
    L8,
    L9,
    L10,
    L11,
}

#[intents]
pub trait Graded {
    #[intent("How good is the answer?")]
    async fn grade(&self, answer: &str) -> Result<Score<Twelve>, DecisionError>;
}

#[tokio::test]
async fn a_score_with_more_levels_than_digits_names_the_limit_and_the_clients_that_accept_it() {
    let model = ScriptedProvider::new([ScriptedReply::logprobs([("1", -0.1)])])
        .with_max_top_logprobs(Some(20));
    let graded = GradedClient::new(
        IntentClient::builder()
            .provider(model.clone())
            .build()
            .unwrap(),
    );
    let error = graded.grade("42").await.unwrap_err();
    assert_eq!(error.kind(), FailureKind::InvalidRequest);
    let message = error.to_string();
    for named in [
        "12 levels",
        "at most 10 levels",
        "StatedDecisionClient",
        "a decision model (System One)",
    ] {
        assert!(message.contains(named), "{named} in {message}");
    }
    assert!(model.requests().is_empty(), "nothing is sent");

    // The stated client the message names answers the same method.
    let stated = ScriptedProvider::new([format!(
        r#"{{"value": {{"grade": {{"probabilities": {{{}}}}}}}}}"#,
        (0..12)
            .map(|level| format!(r#""L{level}": {}"#, if level == 7 { 0.89 } else { 0.01 }))
            .collect::<Vec<_>>()
            .join(", ")
    )]);
    let graded = GradedClient::new(
        IntentClient::builder()
            .provider(model)
            .decision_client(StatedDecisionClient::new(stated))
            .build()
            .unwrap(),
    );
    assert_eq!(graded.grade("42").await.unwrap().most_likely, Twelve::L7);
}

/// A decision client that answers every yes/no question with one probability, or fails.
#[derive(Debug)]
struct Fixed(Result<f64, DecisionError>, Arc<AtomicUsize>);

#[async_trait::async_trait]
impl DecisionClient for Fixed {
    async fn decide(
        &self,
        request: &DecisionRequest,
    ) -> Result<intent_rs::decision::DecisionResponse, DecisionError> {
        self.1.fetch_add(1, Ordering::SeqCst);
        let p = self.0.clone()?;
        intent_rs::decision::DecisionResponse::new(
            request,
            vec![intent_rs::decision::DecisionAnswer::Binary(
                intent_rs::decision::BinaryAnswer::new(p).unwrap(),
            )],
            intent_rs::Usage {
                input_tokens: 10,
                output_tokens: 1,
                ..intent_rs::Usage::default()
            },
            "fixed",
            ProbabilitySource::Stated,
        )
    }
}

#[tokio::test]
async fn the_builders_decision_client_answers_the_methods() {
    let asked = Arc::new(AtomicUsize::new(0));
    let client = IntentClient::builder()
        .provider(ScriptedProvider::new(Vec::<String>::new()))
        .decision_client(Fixed(Ok(0.3), asked.clone()))
        .build()
        .unwrap();
    let solved = TriageClient::new(client)
        .solved("Still broken")
        .await
        .unwrap();
    assert_eq!(solved.probability, 0.3);
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

// ---------------------------------------------------------------------------------------
// The gate in front of the judge

fn gated(
    outcome: Result<f64, DecisionError>,
    configure: impl FnOnce(DecisionEvaluator) -> DecisionEvaluator,
    replies: Vec<&str>,
    judge_replies: Vec<&str>,
) -> (IntentClient, ScriptedProvider, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let judge = ScriptedProvider::new(judge_replies);
    let client = IntentClient::builder()
        .provider(ScriptedProvider::new(replies))
        .judge_provider(judge.clone())
        .decision_gate(configure(DecisionEvaluator::new(Fixed(
            outcome,
            asked.clone(),
        ))))
        .build()
        .unwrap();
    (client, judge, asked)
}

async fn judged(client: &IntentClient) -> intent_rs::AIResult<String> {
    client
        .transform(
            "Our refund policy is 30 days",
            "Summarize in one sentence",
            intent_rs::IntentOptions::new().require_judge(),
        )
        .await
}

const PASS: &str = r#"{"passes": true, "problems": []}"#;

#[tokio::test]
async fn below_the_threshold_the_judge_is_not_called_and_the_feedback_names_the_question() {
    let (client, judge, asked) = gated(Ok(0.42), |e| e, vec!["first", "second"], vec![]);
    let result = judged(&client).await;
    assert!(!result.is_success());
    assert_eq!(
        judge.request_count(),
        0,
        "the generative judge was never asked"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    let gate = result.attempts[0].gate.as_ref().unwrap();
    assert_eq!(gate.outcome, GateOutcome::Rejected);
    assert_eq!(gate.probability, Some(0.42));
    assert_eq!(gate.threshold, 0.90);
    assert_eq!(result.attempts[0].judge, None);
    let issue = &result.attempts[0].issues[0];
    assert_eq!(issue.source, IssueSource::Judge);
    assert!(
        issue.message.contains("`satisfies_intent`"),
        "{}",
        issue.message
    );
    assert!(
        issue
            .message
            .contains("probability 0.42, below the threshold of 0.90"),
        "{}",
        issue.message
    );
    // The same words for the same numbers.
    assert_eq!(result.attempts[1].issues[0].message, issue.message);
}

#[tokio::test]
async fn at_the_threshold_the_generative_judge_confirms() {
    let (client, judge, _) = gated(Ok(0.9), |e| e, vec!["a summary"], vec![PASS]);
    let result = judged(&client).await;
    assert!(result.is_success(), "{:?}", result.issues);
    assert_eq!(judge.request_count(), 1);
    let attempt = &result.attempts[0];
    assert_eq!(attempt.gate.as_ref().unwrap().outcome, GateOutcome::Passed);
    assert!(attempt.judge.is_some());
    assert_eq!(attempt.model_calls, 3, "the call, the gate and the judge");
}

#[tokio::test]
async fn a_custom_threshold_and_question_are_used() {
    let (client, judge, _) = gated(
        Ok(0.6),
        |e| {
            e.with_threshold(0.5)
                .with_question("faithful", "Is the summary faithful?")
        },
        vec!["a summary"],
        vec![PASS],
    );
    let result = judged(&client).await;
    assert!(result.is_success());
    assert_eq!(judge.request_count(), 1);
    assert_eq!(
        result.attempts[0].gate.as_ref().unwrap().question_id,
        "faithful"
    );
}

fn outage() -> DecisionError {
    DecisionError::from_provider(
        &ProviderError::new(ProviderErrorKind::Overloaded, "openai", "busy").with_status(529),
    )
}

fn refused() -> DecisionError {
    DecisionError::from_provider(
        &ProviderError::new(ProviderErrorKind::Authentication, "openai", "bad key")
            .with_status(401),
    )
}

#[tokio::test]
async fn a_failing_gate_fails_the_call_by_default_and_never_reads_as_not_satisfied() {
    let (client, judge, _) = gated(
        Err(refused()),
        |e| e,
        vec!["a summary", "again"],
        vec![PASS],
    );
    let result = judged(&client).await;
    assert!(!result.is_success());
    assert_eq!(result.attempts.len(), 1, "the call stopped");
    assert_eq!(judge.request_count(), 0);
    let gate = result.attempts[0].gate.as_ref().unwrap();
    assert_eq!(
        gate.outcome,
        GateOutcome::Failed {
            kind: FailureKind::Authentication,
            status: Some(401),
            transient: false,
            behavior: FailureBehavior::Fail
        }
    );
    assert_eq!(gate.probability, None);
    let issue = &result.attempts[0].issues[0];
    assert_eq!(issue.source, IssueSource::Provider);
    assert!(
        issue.message.contains("could not assess"),
        "{}",
        issue.message
    );
    assert!(!issue.message.contains("below the threshold"));
}

#[tokio::test]
async fn transient_failures_have_their_own_behaviour() {
    // Transient: retried; any other failure would have failed the call.
    let (client, judge, asked) = gated(
        Err(outage()),
        |e| e.on_transient_failure(FailureBehavior::Retry),
        vec!["one", "two", "three"],
        vec![],
    );
    let result = judged(&client).await;
    assert_eq!(result.attempts.len(), 3, "each attempt was made again");
    assert_eq!(asked.load(Ordering::SeqCst), 3);
    assert_eq!(judge.request_count(), 0);
    assert!(matches!(
        result.attempts[0].gate.as_ref().unwrap().outcome,
        GateOutcome::Failed {
            transient: true,
            behavior: FailureBehavior::Retry,
            ..
        }
    ));

    // A non-transient failure with the same settings still fails the call.
    let (client, _, _) = gated(
        Err(refused()),
        |e| e.on_transient_failure(FailureBehavior::Retry),
        vec!["one", "two"],
        vec![],
    );
    assert_eq!(judged(&client).await.attempts.len(), 1);
}

#[tokio::test]
async fn deferring_hands_the_candidate_to_the_generative_judge() {
    let (client, judge, _) = gated(
        Err(refused()),
        |e| e.on_failure(FailureBehavior::Defer),
        vec!["a summary"],
        vec![PASS],
    );
    let result = judged(&client).await;
    assert!(result.is_success());
    assert_eq!(judge.request_count(), 1);
    assert!(matches!(
        result.attempts[0].gate.as_ref().unwrap().outcome,
        GateOutcome::Failed {
            behavior: FailureBehavior::Defer,
            ..
        }
    ));
}

#[tokio::test]
async fn decisions_are_logged_without_the_state() {
    let logs = CapturedLogs::start();
    let model = ScriptedProvider::new([ScriptedReply::logprobs([("no", -0.1), ("yes", -2.5)])])
        .with_max_top_logprobs(Some(20));
    let evaluator = DecisionEvaluator::new(LogprobDecisionClient::new(model))
        .with_question("logged_question", "Is it done?");
    let evaluation = evaluator.evaluate(&state()).await.unwrap();
    assert!(!evaluation.is_satisfied());

    let failing = DecisionEvaluator::new(Fixed(Err(outage()), Arc::default()))
        .with_question("failing_question", "Is it done?")
        .on_transient_failure(FailureBehavior::Defer);
    let deferred = failing.evaluate(&state()).await.unwrap();
    assert!(matches!(
        deferred.outcome,
        intent_rs::decision::EvaluationOutcome::Defer { .. }
    ));

    let text = logs.text();
    let debug = text
        .lines()
        .find(|l| l.contains("logged_question"))
        .unwrap();
    for field in [
        "probability=",
        "threshold=0.9",
        "outcome=\"not_satisfied\"",
        "latency_ms=",
    ] {
        assert!(debug.contains(field), "{field}: {debug}");
    }
    let warn = text
        .lines()
        .find(|l| l.contains("failing_question"))
        .unwrap();
    assert!(warn.starts_with("WARN"), "{warn}");
    for field in [
        "kind=unavailable",
        "status=529",
        "transient=true",
        "behavior=Defer",
    ] {
        assert!(warn.contains(field), "{field}: {warn}");
    }
    assert!(!text.contains(STATE_SECRET), "the state was logged");
}

#[tokio::test]
async fn the_evaluator_works_in_a_callers_own_loop() {
    let model = ScriptedProvider::new([
        ScriptedReply::logprobs([("no", -0.05), ("yes", -3.0)]),
        ScriptedReply::logprobs([("yes", -0.01), ("no", -5.0)]),
    ])
    .with_max_top_logprobs(Some(20));
    let evaluator = DecisionEvaluator::new(LogprobDecisionClient::new(model));
    let mut work = vec!["drafted the report"];
    let mut feedback = Vec::new();
    for step in ["sent the report"] {
        let evaluation = evaluator.evaluate(&work).await.unwrap();
        if let intent_rs::decision::EvaluationOutcome::NotSatisfied { feedback: text } =
            evaluation.outcome
        {
            feedback.push(text);
        }
        work.push(step);
    }
    assert!(evaluator.evaluate(&work).await.unwrap().is_satisfied());
    assert_eq!(feedback.len(), 1);
    assert!(feedback[0].contains("`complete`"), "{}", feedback[0]);

    // With `Fail` (the default) a failure is an error, not a "no".
    let failing = DecisionEvaluator::new(Fixed(Err(outage()), Arc::default()));
    let error = failing.evaluate(&work).await.unwrap_err();
    assert_eq!(error.kind(), FailureKind::Unavailable);
}
