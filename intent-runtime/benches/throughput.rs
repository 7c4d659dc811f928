//! Throughput and concurrency over real HTTP: `IntentClient::transform` of the invoice
//! through the real `OpenAi` provider against an in-process loopback server, next to a
//! raw `reqwest` loop against the same server (the ceiling: it posts a prepared body and
//! reads the reply's bytes, no JSON work at all) and a hand-written typed client (writes
//! the same request, reads the reply and the invoice with serde, runs the validator; no
//! checks, repairs or records).
//!
//! `PROFILE_ONLY=raw|typed|intent` (with `PROFILE_C`, default 16) runs one loop alone,
//! five times as long, for a profiler.
//!
//! Two parts, each selectable by name:
//! - `throughput`: N calls at concurrency 1, 16 and 256 against a server that answers at
//!   once. Calls per second, p50 / p99 latency, the latency the client adds over the raw
//!   loop, CPU time per call (client and server apart) and peak RSS.
//! - `latency`: 1,000 calls at concurrency 1,000 against a server that waits 200 ms. The
//!   total must stay under 400 ms: nothing may serialize the calls.
//!
//! The typed and intent loops are measured in alternating rounds, so that other work on
//! the machine weighs on both alike; `THROUGHPUT_CALLS` sets N for a shorter run.
//!
//! `cargo bench -p intent-rs --bench throughput` (both parts, N = 10,000);
//! `-- latency` or `-- throughput` for one part; `-- --quick` (or `--test`) for a short
//! run that checks everything works without judging the figures.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use intent_rs::provider::OpenAi;
use intent_rs::{IntentClient, IntentOptions};
use support::loopback::{
    CpuTimes, Loopback, chat_completion, peak_rss_kib, percentile, reset_peak_rss,
};
use support::{INVOICE_DOCUMENT, Invoice, invoice_reply, totals_add_up};

const INTENT: &str = "Extract the invoice";
const LATENCY_DELAY: Duration = Duration::from_millis(200);
const LATENCY_TARGET: Duration = Duration::from_millis(400);

/// One call in flight; `true` when it succeeded.
type CallFuture = Pin<Box<dyn Future<Output = bool> + Send>>;

/// What one measured run produced.
struct Run {
    calls: usize,
    failures: usize,
    wall: Duration,
    /// Per-call latencies, sorted.
    latencies: Vec<Duration>,
    cpu: CpuTimes,
    peak_rss_kib: Option<u64>,
}

impl Run {
    fn calls_per_second(&self) -> f64 {
        self.calls as f64 / self.wall.as_secs_f64()
    }

    fn p(&self, percent: f64) -> Duration {
        percentile(&self.latencies, percent)
    }

    fn cpu_per_call(&self, cpu: Duration) -> Duration {
        cpu / self.calls.max(1) as u32
    }

    /// Two runs of the same loop as one: calls, time and CPU added, latencies pooled.
    fn merge(mut self, other: Run) -> Run {
        self.calls += other.calls;
        self.failures += other.failures;
        self.wall += other.wall;
        self.cpu.process += other.cpu.process;
        self.cpu.server += other.cpu.server;
        self.latencies.extend(other.latencies);
        self.latencies.sort_unstable();
        self.peak_rss_kib = self.peak_rss_kib.max(other.peak_rss_kib);
        self
    }
}

/// How many alternating rounds the typed and intent loops are measured in.
///
/// Other work on the machine changes over a run; measured in alternating rounds (typed,
/// intent, intent, typed, ...), both loops see the same mix of quiet and busy moments.
const ROUNDS: usize = 4;

/// Runs the typed and intent loops in [`ROUNDS`] alternating rounds of `calls / ROUNDS`.
fn interleaved<T, I, FT, FI>(
    rt: &tokio::runtime::Runtime,
    calls: usize,
    concurrency: usize,
    typed: T,
    intent: I,
) -> (Run, Run)
where
    T: Fn() -> FT + Clone + Send + 'static,
    FT: Future<Output = bool> + Send,
    I: Fn() -> FI + Clone + Send + 'static,
    FI: Future<Output = bool> + Send,
{
    let chunk = (calls / ROUNDS).max(1);
    let mut typed_runs = Vec::with_capacity(ROUNDS);
    let mut intent_runs = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            typed_runs.push(run_concurrent(rt, chunk, concurrency, typed.clone()));
            intent_runs.push(run_concurrent(rt, chunk, concurrency, intent.clone()));
        } else {
            intent_runs.push(run_concurrent(rt, chunk, concurrency, intent.clone()));
            typed_runs.push(run_concurrent(rt, chunk, concurrency, typed.clone()));
        }
    }
    let merge = |runs: Vec<Run>| runs.into_iter().reduce(Run::merge).expect("one round");
    (merge(typed_runs), merge(intent_runs))
}

/// Runs `calls` calls of `call` with at most `concurrency` in flight, on `rt`.
fn run_concurrent<F, Fut>(
    rt: &tokio::runtime::Runtime,
    calls: usize,
    concurrency: usize,
    call: F,
) -> Run
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = bool> + Send,
{
    reset_peak_rss();
    let cpu_before = CpuTimes::now();
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let results = rt.block_on(async {
        let workers: Vec<_> = (0..concurrency.min(calls))
            .map(|_| {
                let next = next.clone();
                let call = call.clone();
                tokio::spawn(async move {
                    let mut latencies = Vec::new();
                    let mut failures = 0;
                    while next.fetch_add(1, Ordering::Relaxed) < calls {
                        let started = Instant::now();
                        if !call().await {
                            failures += 1;
                        }
                        latencies.push(started.elapsed());
                    }
                    (latencies, failures)
                })
            })
            .collect();
        let mut all = Vec::with_capacity(workers.len());
        for worker in workers {
            all.push(worker.await.expect("a bench worker panicked"));
        }
        all
    });
    let wall = started.elapsed();
    let cpu = CpuTimes::now().since(cpu_before);
    let mut latencies: Vec<Duration> = Vec::with_capacity(calls);
    let mut failures = 0;
    for (worker_latencies, worker_failures) in results {
        latencies.extend(worker_latencies);
        failures += worker_failures;
    }
    latencies.sort_unstable();
    Run {
        calls,
        failures,
        wall,
        latencies,
        cpu,
        peak_rss_kib: peak_rss_kib(),
    }
}

fn intent_client(server: &Loopback) -> IntentClient {
    IntentClient::builder()
        .provider(OpenAi::new("sk-bench").with_base_url(server.base_url()))
        .build()
        .expect("client")
}

fn intent_call(client: &IntentClient) -> impl Fn() -> CallFuture + Clone + Send + 'static {
    let client = client.clone();
    move || {
        let client = client.clone();
        Box::pin(async move {
            client
                .transform(
                    INVOICE_DOCUMENT,
                    INTENT,
                    IntentOptions::<Invoice>::new().validate(totals_add_up),
                )
                .await
                .is_success()
        })
    }
}

fn raw_call(server: &Loopback, body: &str) -> impl Fn() -> CallFuture + Clone + Send + 'static {
    let http = reqwest::Client::new();
    let url = server.completions_url();
    let body = hyper::body::Bytes::from(body.to_owned());
    move || {
        let request = http
            .post(&url)
            .header("content-type", "application/json")
            .header("authorization", "Bearer sk-bench")
            .body(body.clone());
        Box::pin(async move {
            match request.send().await {
                Ok(response) => response.status().is_success() && response.bytes().await.is_ok(),
                Err(_) => false,
            }
        })
    }
}

/// What a careful hand-written client without intent-rs would do for the same call: write
/// the same prompts and schema as JSON from borrowed parts, post them, read the Chat
/// Completions reply, read the invoice from its content and run the same validator. No
/// envelope or schema checks, no repairs, no records, no retries.
fn typed_call(server: &Loopback) -> impl Fn() -> CallFuture + Clone + Send + 'static {
    #[derive(serde::Serialize)]
    struct Body<'a> {
        model: &'a str,
        messages: [Message<'a>; 2],
        response_format: &'a serde_json::Value,
    }
    #[derive(serde::Serialize)]
    struct Message<'a> {
        role: &'a str,
        content: &'a str,
    }
    #[derive(serde::Deserialize)]
    struct Completion {
        choices: Vec<Choice>,
    }
    #[derive(serde::Deserialize)]
    struct Choice {
        message: Content,
    }
    #[derive(serde::Deserialize)]
    struct Content {
        content: String,
    }
    #[derive(serde::Deserialize)]
    struct Envelope {
        value: Invoice,
    }

    let request = Arc::new(support::invoice_request());
    let response_format = Arc::new(serde_json::json!({
        "type": "json_schema",
        "json_schema": {"name": request.schema_name, "schema": request.schema.as_deref(), "strict": true}
    }));
    let http = reqwest::Client::new();
    let url = server.completions_url();
    move || {
        let body = serde_json::to_vec(&Body {
            model: "gpt-4o-mini",
            messages: [
                Message {
                    role: "system",
                    content: &request.system,
                },
                Message {
                    role: "user",
                    content: request.user(),
                },
            ],
            response_format: &response_format,
        })
        .expect("body");
        let pending = http
            .post(&url)
            .header("content-type", "application/json")
            .header("authorization", "Bearer sk-bench")
            .body(body)
            .send();
        Box::pin(async move {
            let Ok(response) = pending.await else {
                return false;
            };
            let Ok(bytes) = response.bytes().await else {
                return false;
            };
            let Ok(completion) = serde_json::from_slice::<Completion>(&bytes) else {
                return false;
            };
            completion.choices.first().is_some_and(|choice| {
                serde_json::from_str::<Envelope>(&choice.message.content)
                    .is_ok_and(|envelope| totals_add_up(&envelope.value).is_ok())
            })
        })
    }
}

fn client_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("client runtime")
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn print_run(label: &str, concurrency: usize, run: &Run) {
    println!(
        "{label:<7} c={concurrency:<4} {:>8.0} calls/s  p50 {:>8.1} us  p99 {:>8.1} us  \
         cpu/call client {:>6.1} us server {:>6.1} us  peak RSS {:>7} KiB  ({} calls, {} failed, {:.2} s)",
        run.calls_per_second(),
        us(run.p(50.0)),
        us(run.p(99.0)),
        us(run.cpu_per_call(run.cpu.client())),
        us(run.cpu_per_call(run.cpu.server)),
        run.peak_rss_kib.map_or("?".to_owned(), |k| k.to_string()),
        run.calls,
        run.failures,
        ms(run.wall) / 1e3,
    );
}

fn throughput(calls: usize) {
    let server = Loopback::start(chat_completion(&invoice_reply()), None);
    let rt = client_runtime();
    let client = intent_client(&server);
    let intent = intent_call(&client);
    let raw = raw_call(&server, &support::invoice_request_body());
    let typed = typed_call(&server);
    println!(
        "## throughput: {calls} calls of the invoice per row, loopback server answering at once"
    );
    let profile = std::env::var("PROFILE_ONLY").ok();
    if let Some(which) = profile {
        let c: usize = std::env::var("PROFILE_C")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(16);
        let r = if which == "raw" {
            run_concurrent(&rt, c * 2, c, raw.clone());
            run_concurrent(&rt, calls * 5, c, raw.clone())
        } else if which == "typed" {
            run_concurrent(&rt, c * 2, c, typed.clone());
            run_concurrent(&rt, calls * 5, c, typed.clone())
        } else {
            run_concurrent(&rt, c * 2, c, intent.clone());
            run_concurrent(&rt, calls * 5, c, intent.clone())
        };
        print_run(&which, c, &r);
        return;
    }
    for concurrency in [1, 16, 256] {
        // Open `concurrency` pooled connections first, so both loops start warm.
        run_concurrent(&rt, concurrency * 2, concurrency, raw.clone());
        run_concurrent(&rt, concurrency * 2, concurrency, typed.clone());
        run_concurrent(&rt, concurrency * 2, concurrency, intent.clone());
        let raw_run = run_concurrent(&rt, calls, concurrency, raw.clone());
        let (typed_run, intent_run) =
            interleaved(&rt, calls, concurrency, typed.clone(), intent.clone());
        print_run("raw", concurrency, &raw_run);
        print_run("typed", concurrency, &typed_run);
        print_run("intent", concurrency, &intent_run);
        println!(
            "        c={concurrency:<4} intent/raw throughput {:>5.1}%  client-added latency p50 {:>7.1} us  p99 {:>7.1} us",
            100.0 * intent_run.calls_per_second() / raw_run.calls_per_second(),
            us(intent_run.p(50.0)) - us(raw_run.p(50.0)),
            us(intent_run.p(99.0)) - us(raw_run.p(99.0)),
        );
        println!(
            "        c={concurrency:<4} intent/typed throughput {:>5.1}%  typed/raw {:>5.1}%",
            100.0 * intent_run.calls_per_second() / typed_run.calls_per_second(),
            100.0 * typed_run.calls_per_second() / raw_run.calls_per_second(),
        );
        assert_eq!(raw_run.failures, 0, "raw calls failed");
        assert_eq!(typed_run.failures, 0, "hand-written typed calls failed");
        assert_eq!(intent_run.failures, 0, "intent calls failed");
    }
}

/// Spawns `calls` calls at once and waits for all of them; returns the total time.
fn burst<F, Fut>(rt: &tokio::runtime::Runtime, calls: usize, call: F) -> (Duration, usize)
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = bool> + Send + 'static,
{
    rt.block_on(async {
        let started = Instant::now();
        let tasks: Vec<_> = (0..calls).map(|_| tokio::spawn(call())).collect();
        let mut failures = 0;
        for task in tasks {
            if !task.await.unwrap_or(false) {
                failures += 1;
            }
        }
        (started.elapsed(), failures)
    })
}

fn latency_bound(calls: usize) {
    let server = Loopback::start(chat_completion(&invoice_reply()), Some(LATENCY_DELAY));
    let rt = client_runtime();
    println!(
        "## latency-bound: {calls} calls at concurrency {calls}, server waits {} ms",
        LATENCY_DELAY.as_millis()
    );
    let raw = raw_call(&server, &support::invoice_request_body());
    let client = intent_client(&server);
    let intent = intent_call(&client);
    // One call each first: builds the HTTP clients and caches the schema.
    burst(&rt, 1, raw.clone());
    burst(&rt, 1, intent.clone());
    let mut worst = Duration::ZERO;
    for (label, round) in [("new connections", 1), ("pooled", 2), ("pooled", 3)] {
        let (raw_total, raw_failed) = burst(&rt, calls, raw.clone());
        let (intent_total, intent_failed) = burst(&rt, calls, intent.clone());
        println!(
            "round {round} ({label:<15}) raw {:>6.1} ms  intent {:>6.1} ms  (failed: raw {raw_failed}, intent {intent_failed})",
            ms(raw_total),
            ms(intent_total),
        );
        assert_eq!(raw_failed + intent_failed, 0, "calls failed");
        worst = worst.max(intent_total);
    }
    let verdict = if worst < LATENCY_TARGET {
        "met"
    } else {
        "MISSED"
    };
    println!(
        "worst intent round {:.1} ms; target < {} ms {verdict}",
        ms(worst),
        LATENCY_TARGET.as_millis()
    );
}

pub fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick" || a == "--test");
    let parts: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(String::as_str)
        .collect();
    let wants = |part: &str| parts.is_empty() || parts.contains(&part);
    if wants("throughput") {
        let calls = std::env::var("THROUGHPUT_CALLS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(if quick { 512 } else { 10_000 });
        throughput(calls);
    }
    if wants("latency") {
        // Also in quick mode: the burst takes well under a second.
        latency_bound(1_000);
    }
}
