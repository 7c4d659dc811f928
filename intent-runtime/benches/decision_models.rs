//! One mixed decision (a binary question, a 3-way choice and a 4-level score) against a
//! loopback server that answers each request 50 ms after reading it, asked three ways:
//! a decision model over the System One API (`SystemOneClient`), a chat model's
//! log-probabilities (`LogprobDecisionClient`, one request per question) and a chat
//! model's stated distributions (`StatedDecisionClient`, one request with a strict
//! schema). Reported per decision: wall time, HTTP requests and request bytes sent, and
//! the client's CPU time (the CPU time of the thread running the client's single-threaded
//! runtime, where its requests and their connections run; the server has its own thread).
//!
//! `cargo bench -p intent-rs --bench decision_models` (`-- --test` asks each client
//! three times, to keep the bench compiling and working in CI).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use intent_rs::decision::{
    BinaryQuestion, ChoiceQuestion, DecisionClient, DecisionQuestion, DecisionRequest,
    LogprobDecisionClient, ScoreQuestion, StatedDecisionClient, SystemOneClient,
};
use intent_rs::provider::OpenAiCompatible;
use serde_json::{Value, json};
use support::loopback::{Loopback, percentile, thread_cpu};

const LATENCY: Duration = Duration::from_millis(50);

fn request() -> DecisionRequest {
    DecisionRequest::new(
        json!({"subject": "Charged twice", "body": "I was charged twice for my March invoice. Please refund one of the payments today."}),
        [
            DecisionQuestion::from(
                BinaryQuestion::new("refund_asked", "Does the customer ask for a refund?")
                    .expect("question"),
            ),
            ChoiceQuestion::new(
                "team",
                "Which team should take the ticket?",
                [
                    ("billing", "Payments, invoices and refunds"),
                    ("support", "Something does not work"),
                    ("sales", "Questions before buying"),
                ],
            )
            .expect("question")
            .into(),
            ScoreQuestion::new(
                "urgency",
                "How urgent is the ticket?",
                [("low", "Can wait"), ("medium", "This week"), ("high", "Today"), ("critical", "Now")],
            )
            .expect("question")
            .into(),
        ],
    )
    .expect("request")
}

fn system_one_reply() -> String {
    json!({
        "model": "jev-1.14.0",
        "answers": {
            "refund_asked": {"type": "noul", "noul": 0.97},
            "team": {"type": "choice", "choice": "billing", "confidence": 0.9,
                "probabilities": {"billing": 0.93, "support": 0.05, "sales": 0.02}},
            "urgency": {"type": "score", "score": 1.9, "confidence": 0.6,
                "legend": {"0": "low", "1": "medium", "2": "high", "3": "critical"},
                "probabilities": {"0": 0.05, "1": 0.15, "2": 0.65, "3": 0.15}},
        },
        "usage": {"input_tokens": 160, "output_tokens": 40}
    })
    .to_string()
}

fn chat(content: &str, logprobs: Option<&[(&str, f64)]>) -> String {
    let logprobs = logprobs.map(|alternatives| {
        let top: Vec<Value> = alternatives
            .iter()
            .map(|(token, logprob)| json!({"token": token, "logprob": logprob, "bytes": null}))
            .collect();
        json!({"content": [{"token": alternatives[0].0, "logprob": alternatives[0].1,
            "bytes": null, "top_logprobs": top}], "refusal": null})
    });
    json!({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 1_764_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": null},
            "logprobs": logprobs, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 300, "completion_tokens": 1, "total_tokens": 301}
    })
    .to_string()
}

/// The Chat Completions answers: a one-token label with alternatives when the request
/// asks for log-probabilities, else the stated distributions.
fn chat_reply(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if text.contains("\"top_logprobs\"") {
        if text.contains("one of: A, B, C") {
            chat("A", Some(&[("A", -0.07), ("B", -3.0), ("C", -4.0)]))
        } else if text.contains("one of: 0, 1, 2, 3") {
            chat(
                "2",
                Some(&[("2", -0.43), ("1", -1.9), ("3", -1.9), ("0", -3.0)]),
            )
        } else {
            chat("yes", Some(&[("yes", -0.03), ("no", -3.5)]))
        }
    } else {
        let stated = json!({"value": {
            "refund_asked": {"probability_yes": 0.97},
            "team": {"probabilities": {"billing": 0.93, "support": 0.05, "sales": 0.02}},
            "urgency": {"probabilities": {"low": 0.05, "medium": 0.15, "high": 0.65, "critical": 0.15}},
        }});
        chat(&stated.to_string(), None)
    }
}

struct Counted {
    requests: AtomicUsize,
    bytes: AtomicUsize,
}

struct Row {
    name: &'static str,
    wall: Vec<Duration>,
    requests: f64,
    bytes: f64,
    client_cpu: Duration,
}

fn measure(
    runtime: &tokio::runtime::Runtime,
    name: &'static str,
    client: &dyn DecisionClient,
    counted: &Counted,
    decisions: usize,
) -> Row {
    let request = request();
    // One decision first, so connection set-up is not counted against any client.
    runtime.block_on(client.decide(&request)).expect("warm-up");
    counted.requests.store(0, Ordering::SeqCst);
    counted.bytes.store(0, Ordering::SeqCst);
    let cpu_before = thread_cpu();
    let mut wall = Vec::with_capacity(decisions);
    for _ in 0..decisions {
        let started = Instant::now();
        let response = runtime.block_on(client.decide(&request)).expect("decision");
        wall.push(started.elapsed());
        assert_eq!(
            response.choice("team").map(|c| c.selected()),
            Some("billing")
        );
    }
    let cpu = thread_cpu() - cpu_before;
    wall.sort();
    Row {
        name,
        wall,
        requests: counted.requests.load(Ordering::SeqCst) as f64 / decisions as f64,
        bytes: counted.bytes.load(Ordering::SeqCst) as f64 / decisions as f64,
        client_cpu: cpu / decisions as u32,
    }
}

fn main() {
    let quick = std::env::args().any(|arg| arg == "--test");
    let decisions = if quick { 3 } else { 100 };
    let counted = Arc::new(Counted {
        requests: AtomicUsize::new(0),
        bytes: AtomicUsize::new(0),
    });
    let server = {
        let counted = Arc::clone(&counted);
        Loopback::start_routed_after(LATENCY, move |_, path, body| {
            counted.requests.fetch_add(1, Ordering::SeqCst);
            counted.bytes.fetch_add(body.len(), Ordering::SeqCst);
            if path == "/v1/systemone" {
                system_one_reply()
            } else {
                chat_reply(body)
            }
        })
    };
    let root = format!("http://{}", server.addr);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    let system_one = SystemOneClient::compatible(&root);
    let chat_model = OpenAiCompatible::new(server.base_url(), "gpt-4o-mini");
    let logprobs = LogprobDecisionClient::new(chat_model.clone().with_max_top_logprobs(Some(20)));
    let stated = StatedDecisionClient::new(chat_model.with_max_top_logprobs(None));

    let rows = [
        measure(
            &runtime,
            "System One (`SystemOneClient`)",
            &system_one,
            &counted,
            decisions,
        ),
        measure(
            &runtime,
            "log-probabilities (`LogprobDecisionClient`)",
            &logprobs,
            &counted,
            decisions,
        ),
        measure(
            &runtime,
            "stated (`StatedDecisionClient`)",
            &stated,
            &counted,
            decisions,
        ),
    ];

    println!(
        "one mixed decision (binary + 3-way choice + 4-level score), server answers after {} ms, {decisions} decisions per client:",
        LATENCY.as_millis()
    );
    println!("| client | wall p50 | wall p95 | HTTP requests | request bytes | client CPU |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for row in &rows {
        println!(
            "| {} | {:.1} ms | {:.1} ms | {:.0} | {:.0} | {:.0} µs |",
            row.name,
            percentile(&row.wall, 50.0).as_secs_f64() * 1e3,
            percentile(&row.wall, 95.0).as_secs_f64() * 1e3,
            row.requests,
            row.bytes,
            row.client_cpu.as_secs_f64() * 1e6,
        );
    }
    assert_eq!(
        rows[0].requests, 1.0,
        "System One: one request per decision"
    );
    assert_eq!(
        rows[1].requests, 3.0,
        "log-probabilities: one request per question"
    );
    assert_eq!(rows[2].requests, 1.0, "stated: one request per decision");
}
