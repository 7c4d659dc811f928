//! The harness's own cost per case: 10,000 cases of a generated client's method through
//! the scripted provider, with and without the harness around the same calls, and the
//! harness alone around a task that answers at once.
//!
//! `cargo bench -p intent-rs-eval --bench harness`; quick check: `-- --test` (200 cases,
//! one run).

use std::hint::black_box;
use std::time::{Duration, Instant};

use intent_rs::provider::{ScriptedProvider, ScriptedReply};
use intent_rs::{AIResult, IntentClient, StrictCompatible, intents};
use intent_rs_eval::{Case, Dataset, Evaluation, Progress};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, StrictCompatible)]
enum Sentiment {
    Positive,
    Neutral,
    Negative,
}

#[intents]
trait Reviews {
    #[intent("Classify the sentiment of the review")]
    async fn sentiment(&self, review: &str) -> AIResult<Sentiment>;
}

fn client() -> ReviewsClient {
    let model = ScriptedProvider::from_fn(|_, _| ScriptedReply::text(r#"{"value": "Positive"}"#));
    ReviewsClient::new(
        IntentClient::builder()
            .provider(model)
            .build()
            .expect("client"),
    )
}

fn dataset(cases: usize) -> Dataset<String> {
    Dataset::new(
        "reviews",
        (0..cases)
            .map(|n| {
                Case::new(
                    format!("review {n}"),
                    format!("Review number {n}: loved it, would buy again."),
                    "Positive",
                )
            })
            .collect(),
    )
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn per_case(total: Duration, cases: usize) -> f64 {
    total.as_secs_f64() * 1e6 / cases as f64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick" || a == "--test");
    let (cases, runs) = if quick { (200, 1) } else { (10_000, 5) };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let data = dataset(cases);

    // The calls alone: the same method on the same inputs, checked the same way.
    let mut direct = Vec::new();
    for _ in 0..runs {
        let reviews = client();
        let started = Instant::now();
        rt.block_on(async {
            for case in &data.cases {
                let result = reviews.sentiment(&case.input).await;
                assert_eq!(result.value, Some(Sentiment::Positive));
                black_box(result);
            }
        });
        direct.push(started.elapsed());
    }

    // The same calls inside the harness, one at a time and eight at once.
    let mut harnessed = Vec::new();
    let mut harnessed_8 = Vec::new();
    for _ in 0..runs {
        for (concurrency, into) in [(1, &mut harnessed), (8, &mut harnessed_8)] {
            let reviews = client();
            let evaluation = Evaluation::new("bench")
                .concurrency(concurrency)
                .progress(Progress::Hidden);
            let started = Instant::now();
            let report = rt
                .block_on(evaluation.run(&data, |review: &String| reviews.sentiment(review)))
                .expect("report");
            into.push(started.elapsed());
            assert_eq!(report.summary.passed, cases);
        }
    }

    // The harness around a task that answers at once: grading, records and the summary.
    let mut alone = Vec::new();
    for _ in 0..runs {
        let evaluation = Evaluation::new("bench").progress(Progress::Hidden);
        let started = Instant::now();
        let report = rt
            .block_on(evaluation.run(&data, |_: &String| async {
                Ok::<_, std::convert::Infallible>(Sentiment::Positive)
            }))
            .expect("report");
        alone.push(started.elapsed());
        assert_eq!(report.summary.passed, cases);
    }

    let direct = median(direct);
    let harnessed = median(harnessed);
    let harnessed_8 = median(harnessed_8);
    let alone = median(alone);
    println!("harness bench: {cases} cases, median of {runs} runs");
    println!(
        "  calls alone                    {:>9.1} ms total, {:>6.2} µs per case",
        direct.as_secs_f64() * 1e3,
        per_case(direct, cases)
    );
    println!(
        "  calls in the harness (1 at once) {:>7.1} ms total, {:>6.2} µs per case",
        harnessed.as_secs_f64() * 1e3,
        per_case(harnessed, cases)
    );
    println!(
        "  calls in the harness (8 at once) {:>7.1} ms total, {:>6.2} µs per case",
        harnessed_8.as_secs_f64() * 1e3,
        per_case(harnessed_8, cases)
    );
    println!(
        "  harness overhead per case (1 at once) {:>6.2} µs",
        per_case(harnessed, cases) - per_case(direct, cases)
    );
    println!(
        "  harness alone, instant task   {:>9.1} ms total, {:>6.2} µs per case",
        alone.as_secs_f64() * 1e3,
        per_case(alone, cases)
    );
}
