//! The harness: a dataset through a generated client and through plain async tasks,
//! bounded concurrency, panics, checks before anything runs, and the report's forms.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use intent_rs::pricing::{ModelPrice, TokenRates};
use intent_rs::provider::{
    ProviderError, ProviderErrorKind, ProviderReply, ScriptedProvider, ScriptedReply,
};
use intent_rs::{
    AIResult, Choice, Cost, DecisionEnum, DecisionError, IntentClient, PriceTable,
    StrictCompatible, Usage, intents,
};
use intent_rs_eval::{
    Case, Dataset, EvalError, Evaluation, ExternalValidator, Judge, JudgeSelector, Progress,
    Report, Rules, Status, ValueSet,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, StrictCompatible)]
enum Sentiment {
    Positive,
    Neutral,
    Negative,
}

// Graded answers have a schema: the run checks the expected values against it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema, DecisionEnum)]
enum Mood {
    Glad,
    Cross,
}

#[intents]
trait Reviews {
    #[intent("Classify the sentiment of the review", max_attempts = 2)]
    async fn sentiment(&self, review: &str) -> AIResult<Sentiment>;

    #[intent("Which mood is the reviewer in?")]
    async fn mood(&self, review: &str) -> Result<Choice<Mood>, DecisionError>;
}

/// A provider that is down: every request fails with a server error.
fn outage() -> ScriptedReply {
    ScriptedReply::Error(
        ProviderError::new(ProviderErrorKind::Server, "scripted", "the service is down")
            .with_status(503)
            .with_transient(false),
    )
}

fn reply(text: &str, input_tokens: u64) -> ScriptedReply {
    ScriptedReply::Reply(ProviderReply {
        text: text.to_owned(),
        usage: Usage {
            input_tokens,
            output_tokens: 3,
            ..Usage::default()
        },
        ..ProviderReply::default()
    })
}

fn numbers(count: usize) -> Dataset<usize> {
    Dataset::new(
        "numbers",
        (0..count)
            .map(|n| Case::new(format!("n{n}"), n, n * 2))
            .collect(),
    )
}

#[tokio::test]
async fn a_generated_client_fills_answers_attempts_repairs_issues_and_tokens() {
    let model = ScriptedProvider::new([
        reply(r#"{"value": "Positive"}"#, 10),
        reply("I think it is negative", 10),
        reply(r#"{"value": "Negative"}"#, 12),
        reply("```json\n{\"value\": \"Neutral\"}\n```", 10),
    ]);
    let client = ReviewsClient::new(IntentClient::builder().provider(model).build().unwrap());
    let dataset = Dataset::new(
        "reviews",
        vec![
            Case::new("loved", "Loved it".to_owned(), "Positive"),
            Case::new("broke", "It broke".to_owned(), "negative").rules(Rules::lenient()),
            Case::new("fine", "It is fine".to_owned(), "Positive"),
        ],
    );
    // One at a time, so that the scripted replies meet the cases in order.
    let report = Evaluation::new("sentiment")
        .concurrency(1)
        .run(&dataset, |review: &String| client.sentiment(review))
        .await
        .unwrap();
    let [loved, broke, fine] = &report.cases[..] else {
        panic!("three cases")
    };
    assert_eq!(loved.status, Status::Passed);
    assert_eq!(loved.answer, Some(json!("Positive")));
    assert_eq!((loved.attempts, loved.tokens.input), (1, 10));
    assert_eq!(broke.status, Status::Passed);
    assert_eq!(broke.attempts, 2);
    assert_eq!(broke.tokens.input, 22);
    assert!(
        broke
            .issues
            .iter()
            .any(|issue| issue.source == "verification" && issue.attempt == 1),
        "{:?}",
        broke.issues
    );
    assert_eq!(fine.status, Status::Failed);
    assert_eq!(fine.repairs, vec![json!({"kind": "fence_stripped"})]);
    assert_eq!(
        fine.validation.as_ref().unwrap().explanation,
        r#"expected "Positive", got "Neutral""#
    );
    assert!(loved.latency_ms >= 0.0);
    let summary = &report.summary;
    assert_eq!(
        (
            summary.total,
            summary.passed,
            summary.failed,
            summary.errors
        ),
        (3, 2, 1, 0)
    );
    assert_eq!(summary.task_tokens.input, 42);
    assert!(summary.pass_rate_low < 2.0 / 3.0 && summary.pass_rate_high > 2.0 / 3.0);
}

#[tokio::test]
async fn a_call_without_a_value_fails_its_case_with_the_reason() {
    let model = ScriptedProvider::new(["nothing useful", "still nothing"]);
    let client = ReviewsClient::new(IntentClient::builder().provider(model).build().unwrap());
    let dataset = Dataset::new("one", vec![Case::new("x", "text".to_owned(), "Positive")]);
    let report = Evaluation::new("e")
        .run(&dataset, |r: &String| client.sentiment(r))
        .await
        .unwrap();
    let case = &report.cases[0];
    assert_eq!(case.status, Status::Failed);
    assert_eq!(case.attempts, 2);
    assert!(
        case.explanation().starts_with("no answer: "),
        "{}",
        case.explanation()
    );
    assert!(case.validation.is_none());
}

#[tokio::test]
async fn at_most_the_configured_number_of_cases_run_at_once() {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let task = |n: &usize| {
        let (in_flight, most, n) = (in_flight.clone(), most.clone(), *n);
        async move {
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(15)).await;
            in_flight.fetch_sub(1, Ordering::SeqCst);
            Ok::<_, String>(n * 2)
        }
    };
    let report = Evaluation::new("bounded")
        .concurrency(3)
        .progress(Progress::Hidden)
        .run(&numbers(24), task)
        .await
        .unwrap();
    assert_eq!(report.summary.passed, 24);
    assert_eq!(most.load(Ordering::SeqCst), 3);
    // Reported in dataset order whatever order they finished in.
    let names: Vec<&str> = report.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names[..3], ["n0", "n1", "n2"]);
}

#[tokio::test]
async fn a_panicking_task_fails_only_its_case() {
    let task = |n: &usize| {
        let n = *n;
        async move {
            if n == 3 {
                panic!("boom on three");
            }
            Ok::<_, String>(n * 2)
        }
    };
    let report = Evaluation::new("panics")
        .run(&numbers(6), task)
        .await
        .unwrap();
    assert_eq!(report.summary.passed, 5);
    let three = &report.cases[3];
    assert_eq!(three.status, Status::Failed);
    assert_eq!(three.explanation(), "the task panicked: boom on three");
}

#[tokio::test]
async fn unknown_judges_and_broken_templates_stop_the_run_before_any_task() {
    let calls = AtomicUsize::new(0);
    let task = |n: &usize| {
        calls.fetch_add(1, Ordering::SeqCst);
        let n = *n;
        async move { Ok::<_, String>(n) }
    };
    let mut dataset = numbers(3);
    dataset.cases[2].rules = Rules::exact().judge(JudgeSelector::new("missing"));
    let error = Evaluation::new("e").run(&dataset, task).await.unwrap_err();
    assert!(matches!(error, EvalError::JudgeNotFound(_)), "{error}");

    dataset.cases[2].rules = Rules::exact().judge(JudgeSelector::variant("semantic", "missing"));
    let judge = Judge::new("semantic", ScriptedProvider::new(Vec::<&str>::new()));
    let error = Evaluation::new("e")
        .judge(judge)
        .run(&dataset, task)
        .await
        .unwrap_err();
    assert!(
        matches!(error, EvalError::JudgeVariantNotFound { .. }),
        "{error}"
    );

    dataset.cases[2].rules = Rules::exact();
    let broken = ExternalValidator::new("unused", "true").arg("{{ actual ");
    let error = Evaluation::new("e")
        .external(broken)
        .run(&dataset, task)
        .await
        .unwrap_err();
    assert!(
        matches!(error, EvalError::ExternalTemplate { .. }),
        "{error}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[cfg(unix)]
#[tokio::test]
async fn a_validator_error_is_that_cases_error_and_the_run_goes_on() {
    let mut dataset = numbers(3);
    dataset.cases[1].rules = Rules::exact().external("crash");
    let crash = ExternalValidator::new("crash", "false");
    let report = Evaluation::new("e")
        .external(crash)
        .run(&dataset, |n: &usize| {
            let n = *n;
            async move { Ok::<_, String>(n * 2) }
        })
        .await
        .unwrap();
    let statuses: Vec<Status> = report.cases.iter().map(|c| c.status).collect();
    assert_eq!(statuses, [Status::Passed, Status::Error, Status::Passed]);
    assert!(
        report.cases[1]
            .explanation()
            .contains("did not run to completion")
    );
    assert_eq!(report.summary.errors, 1);
}

#[tokio::test]
async fn a_judge_grades_in_the_harness_with_the_original_prompt() {
    let judge_model = ScriptedProvider::new([reply(
        r#"{"value": {"explanation": "both say Paris", "verdict": true}}"#,
        50,
    )]);
    let dataset = Dataset::new(
        "capitals",
        vec![
            Case::new("fr", "France".to_owned(), "Paris")
                .rules(Rules::exact().judge(JudgeSelector::new("semantic"))),
        ],
    );
    let report = Evaluation::new("capitals")
        .prompt("Name the capital")
        .judge(Judge::new("semantic", judge_model.clone()))
        .run(&dataset, |_: &String| async {
            Ok::<_, String>("It is Paris.".to_owned())
        })
        .await
        .unwrap();
    assert_eq!(report.cases[0].status, Status::Passed);
    assert_eq!(report.summary.validation_tokens.input, 50);
    let request = &judge_model.requests()[0];
    assert!(request.user().contains("Name the capital"));
    assert!(request.user().contains("France"));
}

#[tokio::test]
async fn the_summary_totals_what_the_tasks_cost() {
    let model = ScriptedProvider::new([
        reply(r#"{"value": "Positive"}"#, 1_000),
        reply(r#"{"value": "Negative"}"#, 2_000),
    ])
    .with_model("house-model");
    // $1 per million input tokens, $2 per million output tokens.
    let mut prices = PriceTable::empty();
    prices.insert(
        "house-model",
        ModelPrice::new(TokenRates::new(
            Cost::from_pico_usd(1_000_000),
            Cost::from_pico_usd(2_000_000),
        )),
    );
    let client = IntentClient::builder()
        .provider(model)
        .price_table(prices)
        .build()
        .unwrap();
    let client = ReviewsClient::new(client);
    let dataset = Dataset::new(
        "reviews",
        vec![
            Case::new("loved", "Loved it".to_owned(), "Positive"),
            Case::new("broke", "It broke".to_owned(), "Negative"),
        ],
    );
    let report = Evaluation::new("sentiment")
        .concurrency(1)
        .run(&dataset, |review: &String| client.sentiment(review))
        .await
        .unwrap();
    let dollars = |text: &str| text.parse::<Cost>().unwrap();
    // 1,000 × $1/M + 3 × $2/M, then 2,000 × $1/M + 3 × $2/M.
    assert_eq!(report.cases[0].cost.total(), Ok(dollars("0.001006")));
    assert_eq!(report.cases[1].cost.total(), Ok(dollars("0.002006")));
    assert_eq!(report.summary.task_cost.total(), Ok(dollars("0.003012")));
    assert_eq!(report.summary.validation_cost.total(), Ok(Cost::ZERO));
    let text = report.to_string();
    assert!(
        text.contains("cost: task $0.003012, validators $0.00"),
        "{text}"
    );
    // The JSON report keeps the figures exact, and reads back.
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["summary"]["task_cost"]["priced"], "0.003012");
    let back: Report = serde_json::from_value(json).unwrap();
    assert_eq!(back.summary.task_cost, report.summary.task_cost);
}

fn mixed_report() -> Report {
    let cases = vec![intent_rs_eval::CaseReport {
        name: "ok".into(),
        status: Status::Passed,
        answer: Some(json!(1)),
        validation: None,
        message: None,
        attempts: 1,
        repairs: vec![],
        issues: vec![],
        latency_ms: 12.0,
        tokens: Default::default(),
        cost: Default::default(),
        metadata: Default::default(),
    }];
    Report::new("mixed", "set", cases, Duration::from_millis(20))
}

async fn sample_report(pass_second: bool) -> Report {
    let dataset = Dataset::new(
        "set",
        vec![
            Case::new("first", 1usize, 1),
            Case::new("second <&>", 2usize, 2),
            Case::with_expected("third", 3usize, ValueSet::schema(json!({"type": "string"}))),
        ],
    );
    Evaluation::new("sample")
        .run(&dataset, |n: &usize| {
            let n = *n;
            async move {
                match n {
                    2 if !pass_second => Ok(json!("two")),
                    3 => Err("no model today".to_owned()),
                    _ => Ok(json!(n)),
                }
            }
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn the_report_round_trips_through_json_and_its_junit_parses() {
    let report = sample_report(false).await;
    let folder = tempfile::tempdir().unwrap();
    let json_path = folder.path().join("report.json");
    report.write_json(&json_path).unwrap();
    assert_eq!(Report::read_json(&json_path).unwrap(), report);

    let xml_path = folder.path().join("junit.xml");
    report.write_junit(&xml_path).unwrap();
    let xml = std::fs::read_to_string(&xml_path).unwrap();
    let parsed = quick_junit::Report::deserialize_from_str(&xml).unwrap();
    assert_eq!(parsed.name.as_ref().map(|n| n.as_str()), Some("sample"));
    assert_eq!((parsed.tests, parsed.failures, parsed.errors), (3, 2, 0));
    let suite = &parsed.test_suites[0];
    assert_eq!(suite.name.as_str(), "set");
    let names: Vec<&str> = suite.test_cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["first", "second <&>", "third"]);
    assert!(matches!(
        suite.test_cases[0].status,
        quick_junit::TestCaseStatus::Success { .. }
    ));
    let quick_junit::TestCaseStatus::NonSuccess { kind, message, .. } = &suite.test_cases[1].status
    else {
        panic!("the second case failed")
    };
    assert_eq!(*kind, quick_junit::NonSuccessKind::Failure);
    assert_eq!(
        message.as_ref().unwrap().as_str(),
        r#"expected 2, got "two""#
    );
}

#[tokio::test]
async fn a_validator_error_is_a_junit_error() {
    let mut report = mixed_report();
    report.cases[0].status = Status::Error;
    report.cases[0].message = Some("judge gave no verdict".into());
    let parsed = quick_junit::Report::deserialize_from_str(&report.to_junit()).unwrap();
    assert_eq!((parsed.tests, parsed.failures, parsed.errors), (1, 0, 1));
}

#[tokio::test]
async fn two_reports_compare_case_by_case() {
    let before = sample_report(false).await;
    let mut after = sample_report(true).await;
    after.cases[0].status = Status::Failed;
    after.cases.push(mixed_report().cases.remove(0));
    let comparison = after.compare(&before);
    assert_eq!(comparison.regressions, ["first"]);
    assert_eq!(comparison.fixes, ["second <&>"]);
    assert_eq!(comparison.added, ["ok"]);
    assert!(comparison.removed.is_empty());
    assert!(comparison.has_regressions());
    let text = comparison.to_string();
    assert!(text.contains("regressions (1): first"), "{text}");
}

#[tokio::test]
async fn the_table_lists_every_case_and_the_summary() {
    let report = sample_report(false).await;
    let table = report.to_string();
    for needle in [
        "first",
        "second <&>",
        "third",
        "FAIL",
        "pass",
        "value match",
        "passed 1 of 3 (33.3 %, 95 % interval",
        "latency ms: p50",
        "no answer: no model today",
    ] {
        assert!(table.contains(needle), "missing {needle:?} in\n{table}");
    }
}

#[tokio::test]
async fn assert_pass_rate_passes_at_or_above_the_minimum() {
    let report = sample_report(true).await;
    report.assert_pass_rate(0.6);
}

#[tokio::test]
#[should_panic(expected = "pass rate 33.3 % (1 of 3) is under the required 90.0 %")]
async fn assert_pass_rate_fails_under_the_minimum() {
    sample_report(false).await.assert_pass_rate(0.9);
}

#[tokio::test]
async fn a_provider_outage_is_an_error_not_a_failure_and_the_gate_counts_it() {
    // Case one: the model answers wrongly. Case two: the provider is down. Case three:
    // the model refuses, which is its answer, not an outage.
    let model = ScriptedProvider::new([
        reply(r#"{"value": "Negative"}"#, 10),
        outage(),
        ScriptedReply::Refusal("I cannot help with that.".to_owned()),
        ScriptedReply::Refusal("I cannot help with that.".to_owned()),
    ]);
    let client = ReviewsClient::new(IntentClient::builder().provider(model).build().unwrap());
    let dataset = Dataset::new(
        "outage",
        vec![
            Case::new("wrong", "Loved it".to_owned(), "Positive"),
            Case::new("down", "Fine".to_owned(), "Neutral"),
            Case::new("refused", "Meh".to_owned(), "Neutral"),
        ],
    );
    let report = Evaluation::new("e")
        .concurrency(1)
        .run(&dataset, |r: &String| client.sentiment(r))
        .await
        .unwrap();
    let statuses: Vec<Status> = report.cases.iter().map(|case| case.status).collect();
    assert_eq!(statuses, [Status::Failed, Status::Error, Status::Failed]);
    let down = &report.cases[1];
    assert!(
        down.explanation().contains("the provider failed") && down.explanation().contains("503"),
        "{}",
        down.explanation()
    );
    assert_eq!((report.summary.failed, report.summary.errors), (2, 1));

    let junit = quick_junit::Report::deserialize_from_str(&report.to_junit()).unwrap();
    assert_eq!((junit.tests, junit.failures, junit.errors), (3, 2, 1));

    let gate = std::panic::catch_unwind(|| report.assert_pass_rate(0.5)).unwrap_err();
    let message = gate.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.contains("3 did not pass; 1 of them could not be graded"),
        "{message}"
    );
}

#[tokio::test]
async fn a_decision_method_that_the_provider_failed_is_an_error() {
    let model = ScriptedProvider::new([
        ScriptedReply::logprobs([("B", -0.1), ("A", -2.5)]),
        ScriptedReply::Error(
            ProviderError::new(ProviderErrorKind::RateLimited, "scripted", "slow down")
                .with_status(429),
        ),
        // An answer whose probability lies mostly off the labels: the model's fault.
        ScriptedReply::logprobs([("Maybe", -0.01), ("A", -6.0)]),
    ])
    .with_max_top_logprobs(Some(20));
    let client = ReviewsClient::new(IntentClient::builder().provider(model).build().unwrap());
    let dataset = Dataset::new(
        "moods",
        vec![
            Case::new("cross", "Broke in a day".to_owned(), "Cross"),
            Case::new("limited", "Fine".to_owned(), "Glad"),
            Case::new("unsure", "Hm".to_owned(), "Glad"),
        ],
    );
    let client = &client;
    let report = Evaluation::new("e")
        .concurrency(1)
        .run(&dataset, |r: &String| async move {
            client.mood(r).await.map(|choice| choice.selected)
        })
        .await
        .unwrap();
    let statuses: Vec<Status> = report.cases.iter().map(|case| case.status).collect();
    assert_eq!(statuses, [Status::Passed, Status::Error, Status::Failed]);
    assert!(
        report.cases[1].explanation().contains("rate limited"),
        "{}",
        report.cases[1].explanation()
    );
}

/// An answer type with a field to misspell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Contact {
    name: String,
    sentiment: Sentiment,
}

#[tokio::test]
async fn expected_values_no_answer_can_equal_stop_the_run_before_any_task_naming_file_line_and_field()
 {
    let calls = AtomicUsize::new(0);
    let task = |_: &String| {
        calls.fetch_add(1, Ordering::SeqCst);
        async {
            Ok::<_, String>(Contact {
                name: "Ann".into(),
                sentiment: Sentiment::Positive,
            })
        }
    };
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("contacts.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"name": "ok", "input": "Ann, happy", "expected": {"name": "Ann", "sentiment": "Positive"}}"#,
            "\n",
            r#"{"name": "typo", "input": "Bob", "expected": {"nmae": "Bob", "sentiment": "Neutral"}}"#,
            "\n",
        ),
    )
    .unwrap();
    // Read unchecked, as the README and the example read datasets: the run checks.
    let dataset: Dataset<String> = Dataset::from_file(&file).unwrap();
    let error = Evaluation::new("e").run(&dataset, task).await.unwrap_err();
    let EvalError::Dataset {
        file: at,
        location,
        field,
        message,
    } = &error
    else {
        panic!("a dataset error: {error}")
    };
    assert_eq!(at, &file);
    assert_eq!(*location, intent_rs_eval::Location::Line(2));
    assert_eq!(field.as_deref(), Some("expected.nmae"), "{error}");
    assert!(
        message.contains("not a field of the answer type"),
        "{error}"
    );

    // An enum member that does not exist, in a list of answers read from text.
    let text = r#"{"name": "member", "input": "Cy", "expected_any": [{"name": "Cy", "sentiment": "Neutral"}, {"name": "Cy", "sentiment": "Meh"}]}"#;
    let dataset: Dataset<String> = Dataset::from_jsonl_str("moods.jsonl", text).unwrap();
    let error = Evaluation::new("e").run(&dataset, task).await.unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("moods.jsonl: line 1: field `expected_any[1].sentiment`: "),
        "{error}"
    );

    // Built in code: the dataset and the case's position are named.
    let dataset = Dataset::new(
        "built",
        vec![
            Case::new(
                "fine",
                "Ann".to_owned(),
                json!({"name": "Ann", "sentiment": "Positive"}),
            ),
            Case::new(
                "wrong",
                "Bo".to_owned(),
                json!({"name": 7, "sentiment": "Positive"}),
            ),
        ],
    );
    let error = Evaluation::new("e").run(&dataset, task).await.unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("dataset `built`: case 2: field `expected.name`: "),
        "{error}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // A case graded by a judge keeps its reference answer unchecked.
    let judged = Dataset::new(
        "judged",
        vec![
            Case::new("ref", "Ann".to_owned(), json!({"summary": "any reference"}))
                .rules(Rules::exact().judge(JudgeSelector::new("semantic"))),
        ],
    );
    let judge = Judge::new(
        "semantic",
        ScriptedProvider::new([r#"{"value": {"explanation": "same", "verdict": true}}"#]),
    );
    let report = Evaluation::new("e")
        .judge(judge)
        .run(&judged, task)
        .await
        .unwrap();
    assert_eq!(report.cases[0].status, Status::Passed);
}
