//! Sending a 4 MiB image: the client's CPU time and its peak heap per call, through the
//! `OpenAi` provider to a loopback Chat Completions server.
//!
//! Three rows: the first call (the image is encoded as base64 then), the same call again
//! (the encoding is reused), and a call whose first reply fails verification, so its
//! retry sends the image a second time. The peak is the most heap the client's thread
//! held above what it held before the call (the image's own bytes are already there), in
//! copies of the base64 text: the encoded text and the request body that carries it make
//! two, and a call should never hold much more.
//!
//! `cargo bench -p intent-rs --bench media` (20 calls per row); `-- --quick` (or `--test`)
//! for 2.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use intent_rs::media::Image;
use intent_rs::provider::OpenAi;
use intent_rs::{IntentClient, IntentOptions};
use schemars::JsonSchema;
use serde::Deserialize;
use support::loopback::{Loopback, chat_completion};

const IMAGE_BYTES: usize = 4 * 1024 * 1024;

struct Tracking;

static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

thread_local! {
    /// Whether this thread's heap is tracked: only the client's (the main thread, where
    /// its current-thread runtime runs), so the loopback server's is left out.
    static TRACKED: Cell<bool> = const { Cell::new(false) };
}

fn tracked() -> bool {
    TRACKED.try_with(Cell::get).unwrap_or(false)
}

fn grow(bytes: i64) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

// SAFETY: delegates every operation to the system allocator unchanged; only tracks sizes.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if tracked() {
            grow(layout.size() as i64);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if tracked() {
            LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if tracked() {
            grow(new_size as i64 - layout.size() as i64);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)] // read only to check the reply
struct Scan {
    number: String,
}

/// The marker in the intent of the row whose first reply fails.
const RETRY_MARK: &str = "(answer twice)";

fn thread_cpu() -> Duration {
    let mut spec = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `spec` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut spec) };
    Duration::new(spec.tv_sec as u64, spec.tv_nsec as u32)
}

/// PNG's signature and then pseudo-random bytes, which neither compress nor repeat.
fn image() -> Image {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    while bytes.len() < IMAGE_BYTES {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        bytes.extend_from_slice(&state.to_le_bytes());
    }
    bytes.truncate(IMAGE_BYTES);
    Image::from_bytes(bytes).expect("a PNG signature")
}

struct Row {
    cpu: Vec<Duration>,
    peak: Vec<i64>,
    attempts: usize,
}

fn run_row(
    rt: &tokio::runtime::Runtime,
    client: &IntentClient,
    image: &Image,
    intent: &str,
    calls: usize,
) -> Row {
    let mut row = Row {
        cpu: Vec::with_capacity(calls),
        peak: Vec::with_capacity(calls),
        attempts: 0,
    };
    for _ in 0..calls {
        let input = intent_rs::input::PreparedInput::from(image.clone());
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let started = thread_cpu();
        let result =
            rt.block_on(client.transform_prepared::<Scan>(input, intent, IntentOptions::new()));
        row.cpu.push(thread_cpu() - started);
        row.peak.push(PEAK.load(Ordering::Relaxed) - before);
        assert!(result.is_success(), "{:?}", result.issues);
        row.attempts = result.attempts.len();
    }
    row
}

fn median<T: Copy + Ord>(values: &mut [T]) -> T {
    values.sort_unstable();
    values[values.len() / 2]
}

fn print_row(name: &str, row: &mut Row, encoded: usize) {
    let cpu = median(&mut row.cpu);
    let peak = median(&mut row.peak);
    println!(
        "{name:<28} {:>2} attempt(s)  client CPU {:>7.2} ms  peak heap {:>6.2} MiB = {:.2} x the base64 text",
        row.attempts,
        cpu.as_secs_f64() * 1e3,
        peak as f64 / (1024.0 * 1024.0),
        peak as f64 / encoded as f64,
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick" || a == "--test");
    let calls = if quick { 2 } else { 20 };
    let ok = chat_completion(r#"{"value": {"number": "42"}}"#);
    let broken = chat_completion(r#"{"value": {}}"#);
    let server = Loopback::start_fn(move |body| {
        let has = |needle: &str| memchr::memmem::find(body, needle.as_bytes()).is_some();
        // The retry row's first request fails verification; its retry carries the reply.
        if has(RETRY_MARK) && !has("\"assistant\"") {
            broken.clone()
        } else {
            ok.clone()
        }
    });
    TRACKED.with(|tracked| tracked.set(true));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = IntentClient::builder()
        .provider(OpenAi::new("sk-bench").with_base_url(server.base_url()))
        .build()
        .expect("client");
    let encoded = IMAGE_BYTES.div_ceil(3) * 4;
    println!(
        "## a {} MiB image ({:.2} MiB as base64), medians of {calls} calls",
        IMAGE_BYTES / (1024 * 1024),
        encoded as f64 / (1024.0 * 1024.0)
    );
    let image = image();
    let mut first = run_row(&rt, &client, &image, "Read the invoice number", 1);
    print_row("first call (encodes)", &mut first, encoded);
    let mut again = run_row(&rt, &client, &image, "Read the invoice number", calls);
    print_row("same image again", &mut again, encoded);
    let retry_intent = format!("Read the invoice number {RETRY_MARK}");
    let mut retried = run_row(&rt, &client, &image, &retry_intent, calls);
    print_row("retried call", &mut retried, encoded);
    assert_eq!(retried.attempts, 2, "the retry row retries");
    // The shared encoding is alive through every row, so the first call holds it plus one
    // body; later calls hold a body at a time. More than about two copies is a regression.
    for (name, row) in [
        ("first", &mut first),
        ("again", &mut again),
        ("retried", &mut retried),
    ] {
        let peak = median(&mut row.peak);
        assert!(
            (peak as f64) < 2.6 * encoded as f64,
            "{name}: {peak} bytes at once is more than two copies of {encoded}"
        );
    }
}
