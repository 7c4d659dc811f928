//! A batch job's submission goes up as a stream read from the job's queue file: the
//! client never holds a submission (OpenAI's JSONL upload, Anthropic's request body) in
//! one buffer, so a job's memory does not grow with a second copy of its requests.
//!
//! The test binary counts the largest single allocation made on the client's threads
//! (the loopback servers run on threads of their own and are not counted) and compares
//! it with the submission's size.

mod batch_support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use batch_support::{Answer, Behaviour, Fake, anthropic_client, openai_client};
use intent_rs::batch::{BatchItem, BatchOptions};
use intent_rs::{IntentClient, IntentOptions};
use serde_json::Value;

struct Tracking;

thread_local! {
    /// Whether this thread's allocations are counted (the client's threads).
    static TRACKED: Cell<bool> = const { Cell::new(false) };
}

static LARGEST: AtomicUsize = AtomicUsize::new(0);

fn note(size: usize) {
    if TRACKED.try_with(Cell::get).unwrap_or(false) {
        LARGEST.fetch_max(size, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed on to the system allocator unchanged; only sizes are noted.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

const ITEMS: usize = 300;

/// Every request answered with the number 7.
fn answer() -> Answer {
    Arc::new(|_: &Value| Ok(r#"{"value": 7}"#.to_owned()))
}

/// Distinct inputs of about 2 KB each.
fn items() -> Vec<BatchItem<i64>> {
    (0..ITEMS)
        .map(|index| {
            let text = format!("document {index}: {}", "lorem ipsum dolor ".repeat(110));
            BatchItem::transform(&text, "Count the words", IntentOptions::<i64>::new())
        })
        .collect()
}

/// Runs a job on a runtime whose threads are counted; the largest allocation made
/// meanwhile, the fake, and the job's directory.
fn run_counted(
    name: &str,
    fake: impl Future<Output = Fake>,
    client: fn(&Fake) -> IntentClient,
) -> (usize, Fake, std::path::PathBuf) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(|| TRACKED.with(|tracked| tracked.set(true)))
        .build()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("intent-batch-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (largest, fake) = runtime.block_on(async {
        let fake = fake.await;
        let client = client(&fake);
        let items = items();
        let options = BatchOptions::new(&dir).poll_interval(Duration::from_millis(5));
        TRACKED.with(|tracked| tracked.set(true));
        LARGEST.store(0, Ordering::Relaxed);
        let results = client.batch(items, options).run().await.unwrap();
        let largest = LARGEST.load(Ordering::Relaxed);
        TRACKED.with(|tracked| tracked.set(false));
        assert!(results.iter().all(|result| result.value == Some(7)));
        (largest, fake)
    });
    (largest, fake, dir)
}

fn assert_streamed(largest: usize, fake: &Fake, dir: &std::path::Path) {
    let submitted = fake.state().submitted.clone();
    assert_eq!(submitted.len(), 1, "one submission");
    let (size, announced) = submitted[0];
    assert!(size > 400_000, "a submission of {size} bytes");
    assert_eq!(
        announced,
        Some(size),
        "the body is sent with its length, read from the queue file"
    );
    assert!(
        largest < size / 4,
        "the client allocated {largest} bytes at once for a submission of {size} bytes"
    );
    // The queue file is gone once its batch is created.
    let left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("queue-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_openai_upload_is_streamed_from_the_queue_file_never_held_whole() {
    let fake = batch_support::openai(answer(), Behaviour::default());
    let (largest, fake, dir) = run_counted("stream-openai", fake, openai_client);
    assert_streamed(largest, &fake, &dir);
}

#[test]
fn the_anthropic_create_body_is_streamed_from_the_queue_file_never_held_whole() {
    let fake = batch_support::anthropic(answer(), Behaviour::default());
    let (largest, fake, dir) = run_counted("stream-anthropic", fake, anthropic_client);
    assert_streamed(largest, &fake, &dir);
}
