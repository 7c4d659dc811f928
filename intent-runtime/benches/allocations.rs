//! Allocations per call: a counting global allocator around one `transform` of the
//! invoice through a scripted provider that replies at once, with and without a retry.
//!
//! `cargo bench -p intent-runtime --bench allocations` (add `-- --quick` for a short run).

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use intent_runtime::provider::ScriptedProvider;
use intent_runtime::{IntentClient, IntentOptions};
use support::{INVOICE_DOCUMENT, Invoice, invoice_reply, totals_add_up};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: delegates every operation to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn median(values: &mut [u64]) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

fn measure(
    name: &str,
    client: &IntentClient,
    rt: &tokio::runtime::Runtime,
    calls: usize,
    expected_attempts: usize,
) {
    let mut allocations = Vec::with_capacity(calls);
    let mut bytes = Vec::with_capacity(calls);
    let mut nanos = Vec::with_capacity(calls);
    for _ in 0..calls {
        let options = IntentOptions::<Invoice>::new().validate(totals_add_up);
        let (a0, b0) = (
            ALLOCATIONS.load(Ordering::Relaxed),
            BYTES.load(Ordering::Relaxed),
        );
        let started = Instant::now();
        let result =
            rt.block_on(client.transform(INVOICE_DOCUMENT, "Extract the invoice", options));
        let elapsed = started.elapsed();
        allocations.push(ALLOCATIONS.load(Ordering::Relaxed) - a0);
        bytes.push(BYTES.load(Ordering::Relaxed) - b0);
        nanos.push(elapsed.as_nanos() as u64);
        assert!(result.is_success(), "{:?}", result.issues);
        assert_eq!(result.attempts.len(), expected_attempts);
    }
    println!(
        "{name:<28} median {:>8.1} us/call  {:>6} allocations/call  {:>8} bytes allocated/call  ({calls} calls)",
        median(&mut nanos) as f64 / 1000.0,
        median(&mut allocations),
        median(&mut bytes),
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick" || a == "--test");
    let calls = if quick { 50 } else { 2000 };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let reply = invoice_reply();

    let ok = reply.clone();
    let client = IntentClient::builder()
        .provider(ScriptedProvider::from_fn(move |_, _| ok.as_str().into()))
        .build()
        .expect("client");
    measure("transform/invoice", &client, &rt, calls, 1);

    let broken = format!(
        "{{\"value\": {}, \"note\": \"here you go\"}}",
        &reply[9..reply.len() - 1]
    );
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
    measure("transform/invoice_with_retry", &retry_client, &rt, calls, 2);
}
