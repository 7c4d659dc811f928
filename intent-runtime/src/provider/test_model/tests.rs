use std::collections::BTreeMap;

use futures_util::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;

use super::*;
use crate::decision::{
    BinaryQuestion, ChoiceQuestion, DecisionClient, DecisionQuestion, DecisionRequest,
    LogprobDecisionClient, ProbabilitySource, ScoreQuestion, StatedDecisionClient,
};
use crate::judge::{Judge, JudgeReading, JudgeRequest, ModelJudge};
use crate::{IntentClient, IntentOptions};

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
        .block_on(future)
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
enum Status {
    Open,
    Closed,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(tag = "kind")]
enum Payment {
    Card { last4: String },
    Transfer { iban: String, days: u8 },
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
struct Line {
    #[schemars(length(min = 3, max = 8))]
    sku: String,
    #[schemars(range(min = 1, max = 9))]
    quantity: u32,
    price: f64,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
struct Order {
    #[schemars(regex(pattern = r"^ORD-[0-9]{4}$"))]
    number: String,
    status: Status,
    payment: Payment,
    #[schemars(length(min = 2, max = 4))]
    lines: Vec<Line>,
    note: Option<String>,
    tags: Vec<String>,
    discount: Option<u8>,
}

fn order_client(model: TestModel) -> IntentClient {
    IntentClient::builder()
        .provider(model)
        .build()
        .expect("a client")
}

#[test]
fn typed_answers_verify_for_nested_types_with_bounds_and_patterns() {
    for seed in 0..40 {
        let client = order_client(TestModel::seeded(seed));
        let result: crate::AIResult<Order> =
            block_on(client.transform("an order", "Extract the order", IntentOptions::default()));
        assert!(result.is_success(), "seed {seed}: {:?}", result.issues);
        assert_eq!(
            result.attempts.len(),
            1,
            "seed {seed}: valid on the first attempt"
        );
        let order = result.value.unwrap();
        assert!((2..=4).contains(&order.lines.len()));
        assert!(order.number.starts_with("ORD-"));
    }
}

#[test]
fn the_same_seed_answers_the_same_and_another_seed_differently() {
    let order = |seed| -> Order {
        block_on(order_client(TestModel::seeded(seed)).transform(
            "o",
            "Extract",
            IntentOptions::default(),
        ))
        .into_result()
        .unwrap()
    };
    assert_eq!(order(5), order(5));
    assert_ne!(order(5), order(6));
}

#[test]
fn pins_replace_generated_fields_and_skip_what_the_type_lacks() {
    let model = TestModel::seeded(1)
        .pin("/number", "ORD-0042")
        .pin("/lines/0/sku", json!("PINNED"))
        .pin("/status", json!("Closed"))
        .pin("/no_such_field", json!(1))
        .pin("/status", json!("Open"));
    let order: Order =
        block_on(order_client(model).transform("o", "Extract", IntentOptions::default()))
            .into_result()
            .unwrap();
    assert_eq!(order.number, "ORD-0042");
    assert_eq!(order.lines[0].sku, "PINNED");
    assert_eq!(order.status, Status::Open, "the later pin wins");
}

#[test]
fn a_pin_that_cannot_be_serialized_fails_the_call_naming_it() {
    let keys = BTreeMap::from([((1, 2), "x")]);
    let model = TestModel::new().pin("/odd", keys);
    let error = block_on(model.complete(&ProviderRequest::text("s", "u"))).unwrap_err();
    assert_eq!(error.kind(), ProviderErrorKind::Configuration);
    assert!(error.message().contains("`/odd`"), "{error}");
}

#[test]
fn json_object_mode_answers_an_empty_object_with_the_pins_added() {
    let model = TestModel::new().pin("/apples", json!(3));
    let counts: BTreeMap<String, u32> =
        block_on(order_client(model).transform("o", "Count", IntentOptions::default()))
            .into_result()
            .unwrap();
    assert_eq!(counts, BTreeMap::from([("apples".to_owned(), 3)]));
}

#[test]
fn invalid_first_fails_that_many_attempts_then_answers_validly() {
    let model = TestModel::seeded(3).invalid_first(2);
    let result: crate::AIResult<Order> =
        block_on(order_client(model.clone()).transform("o", "Extract", IntentOptions::default()));
    assert!(result.is_success(), "{:?}", result.issues);
    assert_eq!(result.attempts.len(), 3);
    assert!(!result.attempts[0].issues.is_empty());
    assert!(!result.attempts[1].issues.is_empty());
    assert_eq!(result.attempts[0].raw_output, r#"{"value":true}"#);
    assert_eq!(model.request_count(), 3);

    // At the attempt limit the call fails with the verification issues.
    let failing = TestModel::seeded(3).invalid_first(3);
    let result: crate::AIResult<Order> =
        block_on(order_client(failing).transform("o", "Extract", IntentOptions::default()));
    assert!(!result.is_success());
    assert_eq!(result.attempts.len(), 3);
}

#[test]
fn an_invalid_answer_has_a_type_the_schema_does_not_allow() {
    let envelope = |value: Value| json!({"type": "object", "properties": {"value": value}});
    assert_eq!(
        invalid_answer(&envelope(json!({"type": "boolean"}))),
        r#"{"value":["invalid"]}"#
    );
    assert_eq!(
        invalid_answer(&envelope(
            json!({"anyOf": [{"type": "boolean"}, {"type": "array"}, {"type": "null"}]})
        )),
        r#"{"value":{"invalid":true}}"#
    );
    assert_eq!(
        invalid_answer(&envelope(json!({"enum": [true, [1], {"a": 1}]}))),
        r#"{"value":"invalid"}"#
    );
    assert_eq!(invalid_answer(&envelope(json!({}))), INVALID_TEXT);
}

#[test]
fn plain_text_targets_get_words() {
    let text: String = block_on(order_client(TestModel::new()).transform(
        "a long text",
        "Summarize",
        IntentOptions::default(),
    ))
    .into_result()
    .unwrap();
    assert!(text.ends_with('.') && text.len() > 5, "{text}");
}

#[test]
fn the_judge_passes_by_default_and_rejects_when_told() {
    let request = JudgeRequest {
        intent: "Extract",
        input: "x",
        candidate: "{\"value\": 1}",
        instructions: None,
        output_requirements: None,
        model: None,
    };
    let passing = ModelJudge::new(Arc::new(TestModel::new()));
    match block_on(passing.judge(&request)).unwrap().reading {
        JudgeReading::Verdict(verdict) => assert!(verdict.passes && verdict.problems.is_empty()),
        other => panic!("{other:?}"),
    }
    let rejecting = ModelJudge::new(Arc::new(TestModel::new().judge_passes(false)));
    match block_on(rejecting.judge(&request)).unwrap().reading {
        JudgeReading::Verdict(verdict) => {
            assert!(!verdict.passes);
            assert_eq!(verdict.problems, [JUDGE_REJECTION]);
        }
        other => panic!("{other:?}"),
    }
    // And through the client, with the judge required.
    let client = order_client(TestModel::seeded(2));
    let options = IntentOptions::<Order> {
        use_judge: true,
        ..IntentOptions::default()
    };
    let result = block_on(client.transform("o", "Extract", options));
    assert!(result.is_success(), "{:?}", result.issues);
    assert!(result.attempts[0].judge.is_some(), "the judge was asked");
}

fn questions() -> DecisionRequest {
    DecisionRequest::new(
        json!({"ticket": "refund"}),
        [
            DecisionQuestion::from(BinaryQuestion::new("done", "Is it done?").unwrap()),
            ChoiceQuestion::new("team", "Which team?", ["billing", "tech", "sales"])
                .unwrap()
                .into(),
            ScoreQuestion::new("tone", "How polite?", ["rude", "neutral", "kind"])
                .unwrap()
                .into(),
        ],
    )
    .unwrap()
}

#[test]
fn decision_questions_are_answered_with_log_probabilities_and_stated_ones() {
    let measured = LogprobDecisionClient::new(TestModel::seeded(4)).log_probabilities_only();
    let response = block_on(measured.decide(&questions())).unwrap();
    assert_eq!(response.source(), ProbabilitySource::LogProbabilities);
    assert!(response.binary("done").unwrap().probability() >= 0.95);

    let stated = StatedDecisionClient::new(TestModel::seeded(4));
    let response = block_on(stated.decide(&questions())).unwrap();
    assert_eq!(response.source(), ProbabilitySource::Stated);
    assert!(response.binary("done").unwrap().probability() >= 0.95);

    let low = StatedDecisionClient::new(TestModel::new().probability_yes(0.1));
    let response = block_on(low.decide(&questions())).unwrap();
    assert!((response.binary("done").unwrap().probability() - 0.1).abs() < 1e-9);
    let low = LogprobDecisionClient::new(TestModel::new().probability_yes(0.1));
    let response = block_on(low.decide(&questions())).unwrap();
    assert!((response.binary("done").unwrap().probability() - 0.1).abs() < 1e-6);
}

#[test]
fn streamed_answers_come_in_pieces_that_join_to_the_answer() {
    let model = TestModel::seeded(8).with_stream_chunks(5);
    let mut request = ProviderRequest::text("s", "u");
    request.response_format = ResponseFormat::JsonSchema;
    request.schema = Some(
        crate::schema::target_schema::<Order>()
            .unwrap()
            .strict
            .clone(),
    );
    let whole = model.answer(&request).unwrap();
    let mut stream = block_on(model.stream(&request)).unwrap();
    let (mut joined, mut pieces, mut finished) = (String::new(), 0, None);
    block_on(async {
        while let Some(piece) = stream.next().await {
            match piece.unwrap() {
                ReplyPiece::Text(text) => {
                    assert!(text.len() <= 5);
                    joined.push_str(&text);
                    pieces += 1;
                }
                ReplyPiece::Finished(reply) => finished = Some(reply),
            }
        }
    });
    assert!(pieces > 10, "{pieces} pieces");
    assert_eq!(joined, whole.text);
    assert_eq!(finished.unwrap().text, whole.text);
    assert_eq!(model.request_count(), 1);
}

#[test]
fn batch_jobs_run_on_the_offline_batch_api() {
    let model = TestModel::seeded(2);
    assert_eq!(model.batch().unwrap().api.name(), "test-model");
}
