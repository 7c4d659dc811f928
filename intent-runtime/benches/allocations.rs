//! Allocations per call: a counting global allocator around one `transform` of the
//! invoice through a scripted provider that replies at once, with and without a retry,
//! and the same figures for each stage of a call on its own (input preparation, cached
//! schema lookup, prompt rendering, verification), so a miss can be traced to its stage.
//! A last row runs the call through a bare provider that records nothing, which leaves
//! out the scripted provider's own bookkeeping. The `http/` rows make the same call over
//! HTTP through each HTTP provider (OpenAI's Chat Completions, Azure OpenAI, OpenAI's
//! Responses API, Gemini) against a loopback server answering in that API's shape, next
//! to a raw `reqwest` post: time, the client's CPU time and allocations per call.
//!
//! `cargo bench -p intent-rs --bench allocations` (2,000 calls per row);
//! `-- --quick` (or `--test`) for 50.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use intent_rs::__private::repair_against_schema;
use intent_rs::__private::verify_typed;
use intent_rs::input::prepare_input;
use intent_rs::prompt::{OutputTarget, PromptPlan, render};
use intent_rs::provider::{ProviderReply, ScriptedProvider};
use intent_rs::schema::target_schema;
use intent_rs::{IntentClient, IntentOptions, Validator};
use serde::Deserialize;
use serde_json::Value;
use support::loopback::{Api, Loopback, chat_completion, thread_cpu};
use support::{
    INVOICE_DOCUMENT, InstantProvider, Invoice, broken_invoice_reply, invoice_reply, totals_add_up,
};

const INTENT: &str = "Extract the invoice";
const TARGET_ALLOCATIONS: u64 = 300;
const TARGET_MICROS: f64 = 50.0;
/// The HTTP rows are measured in this many rounds, each row in turn.
const HTTP_ROUNDS: usize = 10;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Whether this thread's allocations are counted: all but the loopback server's, so
    /// the HTTP rows count the client's side alone.
    static COUNTED: Cell<bool> = const { Cell::new(true) };
}

fn counted() -> bool {
    COUNTED.try_with(Cell::get).unwrap_or(false)
}

// SAFETY: delegates every operation to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counted() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counted() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Medians over many repetitions of one piece of work.
#[derive(Clone, Copy)]
struct Medians {
    nanos: u64,
    /// This thread's CPU time (read around the timed work, not inside it).
    cpu_nanos: u64,
    allocations: u64,
    bytes: u64,
}

fn median(values: &mut [u64]) -> u64 {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or(0)
}

/// Per-repetition figures of one piece of work.
#[derive(Default)]
struct Samples {
    nanos: Vec<u64>,
    cpu_nanos: Vec<u64>,
    allocations: Vec<u64>,
    bytes: Vec<u64>,
}

impl Samples {
    /// Runs `work` `repetitions` times and adds each run's figures.
    fn add(&mut self, repetitions: usize, mut work: impl FnMut()) {
        for _ in 0..repetitions {
            let (a0, b0) = (
                ALLOCATIONS.load(Ordering::Relaxed),
                BYTES.load(Ordering::Relaxed),
            );
            let cpu_before = thread_cpu();
            let started = Instant::now();
            work();
            let elapsed = started.elapsed();
            let cpu = thread_cpu().saturating_sub(cpu_before);
            self.allocations
                .push(ALLOCATIONS.load(Ordering::Relaxed) - a0);
            self.bytes.push(BYTES.load(Ordering::Relaxed) - b0);
            self.nanos
                .push(u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
            self.cpu_nanos
                .push(u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX));
        }
    }

    fn medians(mut self) -> Medians {
        Medians {
            nanos: median(&mut self.nanos),
            cpu_nanos: median(&mut self.cpu_nanos),
            allocations: median(&mut self.allocations),
            bytes: median(&mut self.bytes),
        }
    }
}

/// Runs `work` `repetitions` times (after one warm-up run) and takes the medians.
fn measure(repetitions: usize, mut work: impl FnMut()) -> Medians {
    work();
    let mut samples = Samples::default();
    samples.add(repetitions, work);
    samples.medians()
}

fn print_row(name: &str, m: &Medians) {
    println!(
        "{name:<34} median {:>8.1} us  {:>6} allocations  {:>8} bytes allocated",
        Duration::from_nanos(m.nanos).as_secs_f64() * 1e6,
        m.allocations,
        m.bytes,
    );
}

/// The invoice's schema as a caller holding it at run time would pass it.
fn invoice_runtime_schema() -> Value {
    intent_rs::schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<Invoice>()
        .to_value()
}

fn transform_rows(rt: &tokio::runtime::Runtime, calls: usize) -> (Medians, Medians) {
    let reply = invoice_reply();
    let ok = reply.clone();
    let client = IntentClient::builder()
        .provider(ScriptedProvider::from_fn(move |_, _| ok.as_str().into()))
        .build()
        .expect("client");
    let single = measure(calls, || {
        let options = IntentOptions::<Invoice>::new().validate(totals_add_up);
        let result = rt.block_on(client.transform(INVOICE_DOCUMENT, INTENT, options));
        assert!(result.is_success(), "{:?}", result.issues);
        assert_eq!(result.attempts.len(), 1);
    });
    print_row("transform/invoice", &single);

    // First reply breaks the envelope (an extra key), the second is right.
    let broken = broken_invoice_reply();
    let retry_client = IntentClient::builder()
        .provider(ScriptedProvider::from_fn(move |_, index| {
            if index % 2 == 0 {
                broken.as_str().into()
            } else {
                reply.as_str().into()
            }
        }))
        .build()
        .expect("client");
    let retry = measure(calls, || {
        let options = IntentOptions::<Invoice>::new().validate(totals_add_up);
        let result = rt.block_on(retry_client.transform(INVOICE_DOCUMENT, INTENT, options));
        assert!(result.is_success(), "{:?}", result.issues);
        assert_eq!(result.attempts.len(), 2);
    });
    print_row("transform/invoice_with_retry", &retry);

    let bare_client = IntentClient::builder()
        .provider(InstantProvider::new(invoice_reply()))
        .build()
        .expect("client");
    let bare = measure(calls, || {
        let options = IntentOptions::<Invoice>::new().validate(totals_add_up);
        let result = rt.block_on(bare_client.transform(INVOICE_DOCUMENT, INTENT, options));
        assert!(result.is_success(), "{:?}", result.issues);
    });
    print_row("transform/invoice (bare provider)", &bare);

    // A runtime schema arrives as a `Value` on every call: its envelope is built per call.
    let schema = invoice_runtime_schema();
    let value_client = IntentClient::builder()
        .provider(InstantProvider::new(invoice_reply()))
        .build()
        .expect("client");
    let runtime = measure(calls, || {
        let result = rt.block_on(value_client.transform_value(
            INVOICE_DOCUMENT,
            INTENT,
            Some(&schema),
            IntentOptions::new(),
        ));
        assert!(result.is_success(), "{:?}", result.issues);
    });
    print_row("transform_value/invoice schema", &runtime);
    (single, bare)
}

/// The stages of one call, each alone; what is left of the whole call is the attempt
/// loop's own bookkeeping and the provider call.
fn stage_rows(calls: usize, whole: &Medians) {
    let schema = target_schema::<Invoice>().expect("schema");
    let input = prepare_input(INVOICE_DOCUMENT).expect("input");
    let plan = PromptPlan::new(INTENT, input, OutputTarget::typed(schema.clone(), false));
    let reply = ProviderReply::text(invoice_reply());
    let validators: Vec<Validator<Invoice>> = IntentOptions::<Invoice>::new()
        .validate(totals_add_up)
        .validators;

    let stages = [
        (
            "stage/prepare_input",
            measure(calls, || {
                black_box(prepare_input(black_box(INVOICE_DOCUMENT)).expect("input"));
            }),
        ),
        (
            "stage/target_schema (cached)",
            measure(calls, || {
                black_box(target_schema::<Invoice>().expect("schema"));
            }),
        ),
        (
            "stage/render",
            measure(calls, || {
                black_box(render(black_box(&plan), &[]));
            }),
        ),
        (
            "stage/verify_typed",
            measure(calls, || {
                let verification = verify_typed::<Invoice>(&reply, &schema, &validators, 1);
                assert!(verification.passed(), "{:?}", verification.issues);
                assert!(verification.repairs.is_empty());
                black_box(verification);
            }),
        ),
    ];
    let (mut nanos, mut cpu_nanos, mut allocations, mut bytes) = (0, 0, 0, 0);
    for (name, medians) in &stages {
        nanos += medians.nanos;
        cpu_nanos += medians.cpu_nanos;
        allocations += medians.allocations;
        bytes += medians.bytes;
        print_row(name, medians);
    }
    print_row(
        "rest (loop, records, provider)",
        &Medians {
            nanos: whole.nanos.saturating_sub(nanos),
            cpu_nanos: whole.cpu_nanos.saturating_sub(cpu_nanos),
            allocations: whole.allocations.saturating_sub(allocations),
            bytes: whole.bytes.saturating_sub(bytes),
        },
    );
    // The row above is a clean reply, which the fast path reads. A reply without its
    // envelope takes the ordinary steps (a `Value`, the repair walk) and is repaired.
    let bare = ProviderReply::text(serde_json::to_string(&support::invoice()).expect("json"));
    print_row(
        "stage/verify_typed, bare reply",
        &measure(calls, || {
            let verification = verify_typed::<Invoice>(&bare, &schema, &validators, 1);
            assert!(verification.passed(), "{:?}", verification.issues);
            assert!(!verification.repairs.is_empty());
            black_box(verification);
        }),
    );
    verify_rows(calls, &schema.full, reply.text.as_str());
}

/// The ordinary steps that a reply off the fast path takes, each alone: parsing into a
/// `Value`, the schema-guided repair walk, serde and the full-schema check.
fn verify_rows(calls: usize, full: &Value, reply: &str) {
    let inner = full
        .pointer("/properties/value")
        .expect("the envelope has a value");
    let parsed: Value = serde_json::from_str(reply).expect("json");
    let value = parsed.get("value").cloned().expect("value");
    let validator = jsonschema::validator_for(full).expect("the full schema compiles");
    let parse = measure(calls, || {
        black_box(serde_json::from_str::<Value>(black_box(reply)).expect("json"));
    });
    let parse_and_repair = measure(calls, || {
        let mut parsed: Value = serde_json::from_str(black_box(reply)).expect("json");
        let walked = repair_against_schema(&mut parsed["value"], full, inner, "/value", None);
        assert!(walked.repairs.is_empty());
        black_box(walked);
    });
    let rows = [
        ("  verify/parse reply (serde_json)", parse),
        (
            "  verify/repair walk (no repair)",
            Medians {
                nanos: parse_and_repair.nanos.saturating_sub(parse.nanos),
                cpu_nanos: parse_and_repair.cpu_nanos.saturating_sub(parse.cpu_nanos),
                allocations: parse_and_repair
                    .allocations
                    .saturating_sub(parse.allocations),
                bytes: parse_and_repair.bytes.saturating_sub(parse.bytes),
            },
        ),
        (
            "  verify/deserialize Invoice",
            measure(calls, || {
                black_box(Invoice::deserialize(black_box(&value)).expect("invoice"));
            }),
        ),
        (
            "  verify/full-schema check",
            measure(calls, || {
                assert!(validator.is_valid(black_box(&parsed)));
            }),
        ),
    ];
    for (name, medians) in &rows {
        print_row(name, medians);
    }
}

/// A row of one call over HTTP: the median time, the client's CPU time and allocations.
fn print_http_row(name: &str, m: &Medians) {
    println!(
        "{name:<42} median {:>7.1} us  client CPU {:>7.1} us  {:>5} allocations  {:>7} bytes allocated",
        Duration::from_nanos(m.nanos).as_secs_f64() * 1e6,
        Duration::from_nanos(m.cpu_nanos).as_secs_f64() * 1e6,
        m.allocations,
        m.bytes,
    );
}

/// The loopback server's thread is left out of the counts.
fn uncounted() {
    COUNTED.with(|counted| counted.set(false));
}

/// One call over HTTP to a loopback server on another thread (not counted): the raw
/// `reqwest` post of the same body, then `transform` through each HTTP provider (OpenAI's
/// Chat Completions, Azure OpenAI, OpenAI's Responses API, Gemini), each against a server
/// answering the invoice in its own API's shape. The client runs on a current-thread
/// runtime, so every allocation of the call (hyper's connection task included) is on this
/// thread and counted, and this thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`) is the
/// client's whole CPU time per call. The rows are measured in [`HTTP_ROUNDS`] rounds of
/// `calls / HTTP_ROUNDS`, each round in another order, and the medians taken over all.
fn http_rows(rt: &tokio::runtime::Runtime, calls: usize) {
    let raw_server = Loopback::start_with(chat_completion(&invoice_reply()), None, uncounted);
    let http = reqwest::Client::new();
    let url = raw_server.completions_url();
    let body = hyper::body::Bytes::from(support::invoice_request_body());
    let raw = || {
        let response = rt.block_on(
            http.post(&url)
                .header("content-type", "application/json")
                .header("authorization", "Bearer sk-bench")
                .body(body.clone())
                .send(),
        );
        let bytes = rt.block_on(response.expect("reply").bytes());
        black_box(bytes.expect("body"));
    };
    let clients: Vec<(Api, Loopback, IntentClient)> = Api::ALL
        .into_iter()
        .map(|api| {
            let server = Loopback::start_with(api.reply(&invoice_reply()), None, uncounted);
            let client = IntentClient::builder()
                .shared_provider(api.provider(&server))
                .build()
                .expect("client");
            (api, server, client)
        })
        .collect();
    let call = |api: Api, client: &IntentClient| {
        let options = IntentOptions::<Invoice>::new().validate(totals_add_up);
        let result = rt.block_on(client.transform(INVOICE_DOCUMENT, INTENT, options));
        assert!(result.is_success(), "{}: {:?}", api.label(), result.issues);
    };
    // One call each first (connections, schema caches), then the rows in rounds, each
    // round in another order, so that other work on the machine weighs on all alike.
    raw();
    for (api, _, client) in &clients {
        call(*api, client);
    }
    let rows = clients.len() + 1;
    let mut samples: Vec<Samples> = (0..rows).map(|_| Samples::default()).collect();
    let chunk = (calls / HTTP_ROUNDS).max(1);
    for round in 0..HTTP_ROUNDS {
        for turn in 0..rows {
            let row = (turn + round) % rows;
            match row.checked_sub(1) {
                None => samples[row].add(chunk, raw),
                Some(i) => {
                    let (api, _, client) = &clients[i];
                    samples[row].add(chunk, || call(*api, client));
                }
            }
        }
    }
    let mut samples = samples.into_iter();
    if let Some(raw) = samples.next() {
        print_http_row("http/raw reqwest post", &raw.medians());
    }
    for ((api, _, _), intent) in clients.iter().zip(samples) {
        print_http_row(
            &format!("http/transform through {}", api.label()),
            &intent.medians(),
        );
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick" || a == "--test");
    let calls = if quick { 50 } else { 2000 };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("## allocations and time per call (medians of {calls} calls)");
    let (whole, bare) = transform_rows(&rt, calls);
    stage_rows(calls, &whole);
    http_rows(&rt, calls);
    for (provider, medians) in [("scripted", &whole), ("bare", &bare)] {
        let micros = Duration::from_nanos(medians.nanos).as_secs_f64() * 1e6;
        println!(
            "targets ({provider} provider): < {TARGET_MICROS} us per call {}, < {TARGET_ALLOCATIONS} allocations per call {}",
            if micros < TARGET_MICROS {
                "met"
            } else {
                "MISSED"
            },
            if medians.allocations < TARGET_ALLOCATIONS {
                "met"
            } else {
                "MISSED"
            },
        );
    }
}
