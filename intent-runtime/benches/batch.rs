//! A batch job's client cost: 10,000 invoice extractions (`BATCH_ITEMS` for another size)
//! through the real OpenAI batch client against an in-process loopback server speaking the
//! Batch API (upload, create, poll, output file), every reply verified as a live call's.
//!
//! Reports wall time, the client's CPU time (the process's less the server thread's) in
//! all and per item, the process's peak resident memory over the job next to the memory
//! the inputs alone hold, and the client's own heap at its peak (bytes allocated and not
//! yet freed on the client's threads, counted by this binary's allocator, the inputs
//! left out). The server reads each upload whole and writes each output file whole: the
//! process's peak holds those copies, the client's heap does not.
//!
//! `cargo bench -p intent-rs --bench batch`; `-- --test` (or `--quick`) runs 200
//! items to check that it works, without judging the figures.
//!
//! `-- --memory`: a job's memory against its bound. 200,000 small items (a few words to
//! count; `BATCH_ITEMS` for another size) through the same client and loopback server,
//! once per bound (`BatchOptions::max_items_in_memory`: 1,000, the default 10,000,
//! 50,000 and none), each row in a process of its own so that its peak RSS is its own.
//! Each row reports the items as given (the unstarted `BatchItem`s, which hold their
//! prepared inputs), the client heap at its peak above them, the results the job
//! returns, the most items in memory at once, the batches, and the process's peak RSS
//! (the loopback server's buffers included). With `--test` it runs 3,000 items, bounds
//! 500 and none.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use intent_rs::batch::{BatchItem, BatchOptions};
use intent_rs::provider::OpenAi;
use intent_rs::{IntentClient, IntentOptions};
use serde_json::{Value, json};
use support::loopback::{CpuTimes, Loopback, chat_completion, peak_rss_kib, reset_peak_rss};
use support::{INVOICE_DOCUMENT, Invoice, invoice_reply, totals_add_up};

/// Counts the bytes live on the client's threads (the job's runtime and the main thread).
struct ClientHeap;

thread_local! {
    static CLIENT: Cell<bool> = const { Cell::new(false) };
}

static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

fn counted(delta: i64) {
    if CLIENT.try_with(Cell::get).unwrap_or(false) {
        let now = LIVE.fetch_add(delta, Ordering::Relaxed) + delta;
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed on to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for ClientHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        counted(layout.size() as i64);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        counted(layout.size() as i64);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        counted(new_size as i64 - layout.size() as i64);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        counted(-(layout.size() as i64));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: ClientHeap = ClientHeap;

/// What the loopback Batch API holds: the custom ids of each uploaded file.
#[derive(Default)]
struct Server {
    files: Vec<Vec<String>>,
    /// Bytes of every upload (multipart bodies).
    uploaded: usize,
}

/// The loopback Batch API: files, batches (ended on the first look) and output files,
/// every request answered with `content`.
fn batch_api(state: Arc<Mutex<Server>>, content: String) -> impl Fn(&str, &str, &[u8]) -> String {
    let reply = chat_completion(&content);
    let body: Value = serde_json::from_str(&reply).expect("a reply");
    move |method, path, request| {
        let mut server = state.lock().expect("server state");
        match (method, path) {
            ("POST", "/v1/files") => {
                server.uploaded += request.len();
                let text = String::from_utf8_lossy(request);
                let ids = text
                    .lines()
                    .filter_map(|line| line.split_once(r#"{"custom_id":""#))
                    .filter_map(|(_, rest)| rest.split_once('"'))
                    .map(|(id, _)| id.to_owned())
                    .collect();
                server.files.push(ids);
                json!({"id": format!("file-{}", server.files.len() - 1)}).to_string()
            }
            ("POST", "/v1/batches") => {
                let created: Value = serde_json::from_slice(request).unwrap_or_default();
                let file = created["input_file_id"].as_str().unwrap_or_default();
                let index = file.trim_start_matches("file-");
                json!({"id": format!("batch_{index}"), "status": "validating"}).to_string()
            }
            ("GET", path) if path.starts_with("/v1/batches/") => {
                let index = path.trim_start_matches("/v1/batches/batch_");
                json!({"id": format!("batch_{index}"), "status": "completed",
                    "output_file_id": format!("out-{index}"), "error_file_id": null})
                .to_string()
            }
            ("GET", path) if path.starts_with("/v1/files/out-") => {
                let index: usize = path
                    .trim_start_matches("/v1/files/out-")
                    .trim_end_matches("/content")
                    .parse()
                    .unwrap_or_default();
                let mut output = String::new();
                for id in &server.files[index] {
                    output.push_str(
                        &json!({"id": "r", "custom_id": id, "error": null,
                            "response": {"status_code": 200, "request_id": "req", "body": body}})
                        .to_string(),
                    );
                    output.push('\n');
                }
                output
            }
            _ => json!({"error": {"message": format!("no route {method} {path}")}}).to_string(),
        }
    }
}

fn main() {
    let quick = std::env::args().any(|arg| arg == "--test" || arg == "--quick");
    if let Ok(bound) = std::env::var(MEMORY_ROW) {
        memory_row(&bound);
        return;
    }
    if std::env::args().any(|arg| arg == "--memory") {
        memory(quick);
        return;
    }
    let items: usize = std::env::var("BATCH_ITEMS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(if quick { 200 } else { 10_000 });
    let server_state: Arc<Mutex<Server>> = Arc::default();
    let server = Loopback::start_routed(batch_api(server_state.clone(), invoice_reply()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_start(|| CLIENT.with(|client| client.set(true)))
        .build()
        .expect("runtime");
    let dir = std::env::temp_dir().join(format!("intent-batch-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let provider = OpenAi::new("sk-bench").with_base_url(server.base_url());
    let client = IntentClient::builder()
        .provider(provider)
        .build()
        .expect("client");
    // Distinct inputs, as a real job has.
    let documents: Vec<String> = (0..items)
        .map(|index| format!("{INVOICE_DOCUMENT} (scan {index})"))
        .collect();
    CLIENT.with(|client| client.set(true));
    let heap_before = LIVE.load(Ordering::Relaxed);
    PEAK.store(heap_before, Ordering::Relaxed);
    let rss_reset = reset_peak_rss();
    let inputs_rss = peak_rss_kib();
    let job_items = documents.iter().map(|document| {
        BatchItem::transform(
            document,
            "Extract the invoice",
            IntentOptions::<Invoice>::new().validate(totals_add_up),
        )
    });
    let options = BatchOptions::new(&dir).poll_interval(Duration::from_millis(1));
    let cpu_before = CpuTimes::now();
    let started = Instant::now();
    let results = runtime
        .block_on(client.batch(job_items, options).run())
        .expect("the job runs");
    let wall = started.elapsed();
    let cpu = CpuTimes::now().since(cpu_before);
    let peak = peak_rss_kib();
    let heap_peak = PEAK.load(Ordering::Relaxed) - heap_before;
    CLIENT.with(|client| client.set(false));
    let succeeded = results.iter().filter(|result| result.is_success()).count();
    assert_eq!(succeeded, items, "every item is verified");
    let state_bytes: u64 = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0);
    let _ = std::fs::remove_dir_all(&dir);
    let client_cpu = cpu.client();
    println!(
        "batch/{items} items: wall {:.0} ms, client CPU {:.0} ms ({:.1} µs per item), server CPU {:.0} ms",
        wall.as_secs_f64() * 1e3,
        client_cpu.as_secs_f64() * 1e3,
        client_cpu.as_secs_f64() * 1e6 / items as f64,
        cpu.server.as_secs_f64() * 1e3,
    );
    match (rss_reset, inputs_rss, peak) {
        (true, Some(before), Some(peak)) => println!(
            "batch/{items} items: peak RSS {:.1} MiB (inputs alone {:.1} MiB), state on disk {:.1} MiB",
            peak as f64 / 1024.0,
            before as f64 / 1024.0,
            state_bytes as f64 / (1024.0 * 1024.0)
        ),
        _ => println!("batch/{items} items: peak RSS not available on this system"),
    }
    let uploaded = server_state.lock().map_or(0, |server| server.uploaded);
    println!(
        "batch/{items} items: client heap at its peak {:.1} MiB (the inputs left out), uploads {:.1} MiB",
        heap_peak as f64 / (1024.0 * 1024.0),
        uploaded as f64 / (1024.0 * 1024.0)
    );
}

/// The variable that makes this binary run one row of the memory mode: the bound, or
/// `none`.
const MEMORY_ROW: &str = "BATCH_MEMORY_ROW";

/// `--memory`: one process per bound, each running the whole job.
fn memory(quick: bool) {
    let items: usize = std::env::var("BATCH_ITEMS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(if quick { 3_000 } else { 200_000 });
    let bounds: &[&str] = if quick {
        &["500", "none"]
    } else {
        &["1000", "10000", "50000", "none"]
    };
    let exe = std::env::current_exe().expect("this binary");
    println!(
        "batch memory/{items} small items | bound | items as given | client heap at peak above them | results returned | most items in memory | batches | peak RSS | wall"
    );
    for bound in bounds {
        let status = std::process::Command::new(&exe)
            .env(MEMORY_ROW, bound)
            .env("BATCH_ITEMS", items.to_string())
            .status()
            .expect("a row's process");
        assert!(status.success(), "the row with bound {bound} failed");
    }
}

/// One row of `--memory`, in a process of its own.
fn memory_row(bound: &str) {
    let items: usize = std::env::var("BATCH_ITEMS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200_000);
    let max = match bound {
        "none" => usize::MAX,
        bound => bound.parse().expect("a bound"),
    };
    let server_state: Arc<Mutex<Server>> = Arc::default();
    let server = Loopback::start_routed(batch_api(
        server_state.clone(),
        r#"{"value": 3}"#.to_owned(),
    ));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_start(|| CLIENT.with(|client| client.set(true)))
        .build()
        .expect("runtime");
    let dir =
        std::env::temp_dir().join(format!("intent-batch-memory-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let provider = OpenAi::new("sk-bench").with_base_url(server.base_url());
    let client = IntentClient::builder()
        .provider(provider)
        .build()
        .expect("client");
    CLIENT.with(|client| client.set(true));
    let start = LIVE.load(Ordering::Relaxed);
    let job_items: Vec<BatchItem<u32>> = (0..items)
        .map(|index| {
            BatchItem::transform(
                &format!("words: one two {index}"),
                "Count the words",
                IntentOptions::<u32>::new(),
            )
        })
        .collect();
    let given = LIVE.load(Ordering::Relaxed) - start;
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    let before = LIVE.load(Ordering::Relaxed);
    reset_peak_rss();
    let most = Arc::new(AtomicI64::new(0));
    let seen = most.clone();
    let options = BatchOptions::new(&dir)
        .poll_interval(Duration::from_millis(1))
        .max_items_in_memory(max);
    let started = Instant::now();
    let results = runtime
        .block_on(
            client
                .batch(job_items, options)
                .on_progress(move |progress| {
                    seen.fetch_max(progress.peak_in_memory as i64, Ordering::Relaxed);
                })
                .run(),
        )
        .expect("the job runs");
    let wall = started.elapsed();
    let peak = PEAK.load(Ordering::Relaxed) - before;
    let returned = LIVE.load(Ordering::Relaxed) - before;
    let rss = peak_rss_kib();
    CLIENT.with(|client| client.set(false));
    assert!(results.iter().all(|result| result.value == Some(3)));
    let _ = std::fs::remove_dir_all(&dir);
    let batches = server_state.lock().map_or(0, |server| server.files.len());
    let mib = |bytes: i64| bytes as f64 / (1024.0 * 1024.0);
    println!(
        "batch memory/{items} small items | {bound} | {:.1} MiB | {:.1} MiB | {:.1} MiB | {} | {batches} | {} | {:.1} s",
        mib(given),
        mib(peak),
        mib(returned),
        most.load(Ordering::Relaxed),
        rss.map_or("n/a".to_owned(), |kib| format!(
            "{:.1} MiB",
            kib as f64 / 1024.0
        )),
        wall.as_secs_f64(),
    );
}
