//! Intents over collections: what the collection code costs the client per item, and
//! whether it keeps to a rate limit without falling far under it.
//!
//! - a `filter` over 10,000 tickets against a provider that answers at once with
//!   log-probabilities (no network): wall time, this thread's CPU time, allocations and
//!   bytes allocated per item, and the most memory live at once;
//! - the same filter on a client with an in-memory response cache, asked then served
//!   from the cache: CPU per item each way;
//! - the memory of items waiting: 10,000 items let in at once (`concurrency(10_000)`)
//!   and all held by a spent rate limiter, measured while they wait, per item; and the
//!   same run at the default concurrency, where the items wait in the caller's iterator;
//! - throughput against a rate limit: 3,000 items through a limiter of 60,000 requests a
//!   minute (1,000 a second) whose burst is spent, against that limit.
//!
//! `cargo bench -p intent-rs --bench collection` (one run of each row; `-- --test` runs
//! small sizes).

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use intent_rs::IntentClient;
use intent_rs::collection::{Collection, Kept, Outcome};
use intent_rs::limits::RateLimiter;
use intent_rs::provider::{
    LogprobAlternative, Provider, ProviderError, ProviderReply, ProviderRequest, TokenLogprob,
};
use intent_rs::result::Usage;
use serde::Serialize;
use support::loopback::thread_cpu;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

fn grew(by: i64) {
    let live = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

// SAFETY: delegates every operation to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        grew(layout.size() as i64);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        grew(new_size as i64 - layout.size() as i64);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Answers every decision question yes at once, with log-probabilities, recording
/// nothing: the collection's and the decision client's own costs alone.
#[derive(Debug)]
struct InstantYes;

#[intent_rs::async_trait]
impl Provider for InstantYes {
    fn name(&self) -> &str {
        "instant"
    }
    fn default_model(&self) -> &str {
        "instant-model"
    }
    fn max_top_logprobs(&self) -> Option<u8> {
        Some(20)
    }
    async fn complete(&self, _request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        Ok(ProviderReply {
            text: "yes".to_owned(),
            logprobs: Some(vec![TokenLogprob {
                token: "yes".to_owned(),
                logprob: -0.1,
                top_logprobs: vec![
                    LogprobAlternative::new("yes", -0.1),
                    LogprobAlternative::new("no", -2.4),
                ],
            }]),
            usage: Usage {
                input_tokens: 120,
                output_tokens: 1,
                ..Usage::default()
            },
            model: "instant-model".to_owned(),
            ..ProviderReply::default()
        })
    }
}

/// A support ticket of about 200 bytes of JSON.
#[derive(Serialize)]
struct Ticket {
    id: u32,
    subject: String,
    body: String,
}

fn tickets(count: usize) -> impl Iterator<Item = Ticket> {
    (0..count as u32).map(|id| Ticket {
        id,
        subject: format!("Sync stuck at {}%", id % 100),
        body: "The mobile app has been stuck syncing since yesterday. Reinstalling did not help; \
               our field team cannot see today's orders."
            .to_owned(),
    })
}

const QUESTION: &str = "Is this ticket urgent: is a customer blocked?";

fn client(limiter: Option<RateLimiter>) -> IntentClient {
    let builder = IntentClient::builder().provider(InstantYes);
    match limiter {
        Some(limiter) => builder.rate_limiter(limiter),
        None => builder,
    }
    .build()
    .expect("client")
}

async fn drained(per_minute: u32) -> RateLimiter {
    let limiter = RateLimiter::per_minute(per_minute);
    for _ in 0..per_minute {
        limiter.acquire(0).await.expect("a local limiter admits");
    }
    limiter
}

/// Row 1: CPU, allocations and peak memory per item.
async fn per_item(items: usize, concurrency: usize) {
    let client = client(None);
    let collection = Collection::new(&client).concurrency(concurrency);
    let (allocations, bytes) = (
        ALLOCATIONS.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
    );
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let (wall, cpu) = (Instant::now(), thread_cpu());
    let outcomes = collection
        .filter(QUESTION, 0.5)
        .run(tickets(items))
        .await
        .expect("run");
    let (wall, cpu) = (wall.elapsed(), thread_cpu() - cpu);
    let peak = PEAK.load(Ordering::Relaxed) - base;
    let outputs = LIVE.load(Ordering::Relaxed) - base;
    assert_eq!(outcomes.len(), items);
    assert_eq!(outcomes.failed().count(), 0);
    black_box(&outcomes);
    let per = |value: u64| value as f64 / items as f64;
    println!(
        "filter, {items} items, concurrency {concurrency}: {:.1} µs wall, {:.1} µs CPU, {:.0} allocations, {:.0} bytes allocated per item; peak live {:.0} bytes per item, of which the outcomes kept {:.0}",
        wall.as_secs_f64() * 1e6 / items as f64,
        cpu.as_secs_f64() * 1e6 / items as f64,
        per(ALLOCATIONS.load(Ordering::Relaxed) - allocations),
        per(BYTES.load(Ordering::Relaxed) - bytes),
        peak as f64 / items as f64,
        outputs as f64 / items as f64,
    );
}

/// Row 1b: the same filter run twice on a client with an in-memory response cache: the
/// second run is served from it (no request), at what CPU per item.
async fn from_cache(items: usize) {
    let client = IntentClient::builder()
        .provider(InstantYes)
        .in_memory_cache(items)
        .build()
        .expect("client");
    let collection = Collection::new(&client);
    let (wall, cpu) = (Instant::now(), thread_cpu());
    let asked = collection
        .filter(QUESTION, 0.5)
        .run(tickets(items))
        .await
        .expect("run");
    let (asked_wall, asked_cpu) = (wall.elapsed(), thread_cpu() - cpu);
    let (wall, cpu) = (Instant::now(), thread_cpu());
    let served = collection
        .filter(QUESTION, 0.5)
        .run(tickets(items))
        .await
        .expect("run");
    let (served_wall, served_cpu) = (wall.elapsed(), thread_cpu() - cpu);
    assert_eq!(asked.progress().cached, 0);
    assert_eq!(served.progress().cached, items);
    let per = |time: Duration| time.as_secs_f64() * 1e6 / items as f64;
    println!(
        "filter, {items} items, in-memory cache: asked and stored {:.1} µs CPU ({:.1} wall) per item; served from the cache {:.1} µs CPU ({:.1} wall), no request",
        per(asked_cpu),
        per(asked_wall),
        per(served_cpu),
        per(served_wall),
    );
}

/// Row 2: the memory of items waiting for the rate limiter, measured while they wait.
async fn waiting(items: usize, concurrency: usize) {
    // One request a minute, spent: every item waits for about a minute.
    let client = client(Some(drained(1).await));
    let collection = Collection::new(&client).concurrency(concurrency);
    let base = LIVE.load(Ordering::Relaxed);
    let run = collection.filter(QUESTION, 0.5).run(tickets(items));
    let stopped = tokio::time::timeout(Duration::from_millis(500), run).await;
    assert!(stopped.is_err(), "the items were to be still waiting");
    // The run is dropped by now; what it held at its peak is gone, so the figure is read
    // from a second run held open below.
    let run = collection.filter(QUESTION, 0.5).run(tickets(items));
    let mut run = std::pin::pin!(run);
    let held = tokio::select! {
        _ = &mut run => panic!("the items were to be still waiting"),
        () = tokio::time::sleep(Duration::from_millis(500)) => LIVE.load(Ordering::Relaxed) - base,
    };
    let admitted = items.min(concurrency);
    // The outcome vector is reserved for every input up front (the iterator says its
    // length): the result's memory, not the waiting items'.
    let reserved = (items * std::mem::size_of::<Outcome<Kept>>()) as i64;
    let waiting = held - reserved;
    println!(
        "{items} items, concurrency {concurrency}, all waiting for the limiter: {held} bytes live, of which the outcome vector reserved {reserved}; the rest is {:.0} bytes per item let in ({admitted}), {:.1} bytes per item of the input",
        waiting as f64 / admitted as f64,
        waiting as f64 / items as f64,
    );
}

/// Row 3: throughput against a rate limit.
async fn throughput(items: usize, per_minute: u32) {
    let client = client(Some(drained(per_minute).await));
    let collection = Collection::new(&client).concurrency(64);
    let started = Instant::now();
    let outcomes = collection
        .filter(QUESTION, 0.5)
        .run(tickets(items))
        .await
        .expect("run");
    let elapsed = started.elapsed();
    assert_eq!(outcomes.len(), items);
    let limit = f64::from(per_minute) / 60.0;
    let rate = items as f64 / elapsed.as_secs_f64();
    println!(
        "{items} items against {per_minute} a minute ({limit:.0}/s), burst spent: {:.2} s, {rate:.1} items/s, {:.1}% of the limit",
        elapsed.as_secs_f64(),
        100.0 * rate / limit
    );
}

fn main() {
    let quick = std::env::args().any(|arg| arg == "--test" || arg == "--quick");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let items = if quick { 500 } else { 10_000 };
        // Warm-up: the shipped price table and the first allocations of each kind.
        per_item(200, 8).await;
        per_item(items, 8).await;
        per_item(items, 64).await;
        from_cache(items).await;
        waiting(items, items).await;
        waiting(items, 8).await;
        throughput(if quick { 300 } else { 3_000 }, 60_000).await;
    });
}
