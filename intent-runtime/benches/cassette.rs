//! What replaying from a cassette costs a call: the invoice `transform` through a provider
//! that replies at once, bare and wrapped in a replay-only cassette (fingerprint,
//! sanitizing, lookup, the recorded reply rebuilt), and the cassette's size per exchange.
//!
//! A cassette serves each recorded exchange once, so every measured call gets a freshly
//! opened cassette and client, built in the untimed setup; the bare rows build a fresh
//! client the same way. No network, one thread: the time is the client's CPU.
//!
//! Next to criterion's wall-clock rows, the same two calls timed with the calling
//! thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`) around the call alone, the client built
//! outside it: the median of 7 rounds' means of 1,000 calls. A shared machine's other
//! load moves the wall clock much more than this one.
//!
//! `cargo bench -p intent-rs --bench cassette`; quick check: `-- --test`.

mod support;

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use intent_rs::provider::{Cassette, CassetteMode};
use intent_rs::{IntentClient, IntentOptions};
use support::loopback::thread_cpu;
use support::{INVOICE_DOCUMENT, InstantProvider, Invoice, invoice_reply, totals_add_up};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn call(client: &IntentClient, rt: &tokio::runtime::Runtime) -> intent_rs::AIResult<Invoice> {
    rt.block_on(client.transform(
        INVOICE_DOCUMENT,
        "Extract the invoice",
        IntentOptions::<Invoice>::new().validate(totals_add_up),
    ))
}

/// A cassette holding the invoice call, recorded through the instant provider.
fn recorded_cassette(rt: &tokio::runtime::Runtime) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "intent-bench-cassette-{}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    let recorder = Cassette::new(&path)
        .wrap(InstantProvider::new(invoice_reply()))
        .expect("cassette");
    let client = IntentClient::builder()
        .provider(recorder)
        .build()
        .expect("client");
    assert!(call(&client, rt).is_success());
    path
}

/// The median over `rounds` of the mean CPU time of `call` over `calls` clients, each
/// made by `setup` outside the timed part (and dropped outside it too).
fn cpu_per_call(
    rounds: usize,
    calls: usize,
    mut setup: impl FnMut() -> IntentClient,
    mut call: impl FnMut(&IntentClient),
) -> Duration {
    let mut means: Vec<Duration> = (0..rounds)
        .map(|_| {
            let mut spent = Duration::ZERO;
            for _ in 0..calls {
                let client = setup();
                let start = thread_cpu();
                call(&client);
                spent += thread_cpu() - start;
                drop(client);
            }
            spent / calls as u32
        })
        .collect();
    means.sort();
    means[means.len() / 2]
}

fn replay(c: &mut Criterion) {
    let rt = runtime();
    let path = recorded_cassette(&rt);
    let bytes = std::fs::read(&path).expect("the cassette").len();
    println!("cassette: 1 exchange (the invoice call), {bytes} bytes");

    let quick = std::env::args().any(|arg| arg == "--test");
    let (rounds, calls) = if quick { (1, 20) } else { (7, 1_000) };
    let bare = cpu_per_call(
        rounds,
        calls,
        || {
            IntentClient::builder()
                .provider(InstantProvider::new(invoice_reply()))
                .build()
                .expect("client")
        },
        |client| assert!(black_box(call(client, &rt)).is_success()),
    );
    let replayed = cpu_per_call(
        rounds,
        calls,
        || {
            let replayer = Cassette::new(&path)
                .mode(CassetteMode::ReplayOnly)
                .wrap(InstantProvider::new(String::new()))
                .expect("cassette");
            IntentClient::builder()
                .provider(replayer)
                .build()
                .expect("client")
        },
        |client| {
            let result = call(client, &rt);
            assert!(result.is_success() && result.attempts[0].replayed);
            black_box(result);
        },
    );
    println!(
        "client CPU per call (median of {rounds} rounds of {calls}): bare {bare:.2?}, replayed {replayed:.2?}, replay overhead {:.2?}",
        replayed.saturating_sub(bare)
    );

    c.bench_function("cassette/bare_provider", |b| {
        b.iter_batched(
            || {
                IntentClient::builder()
                    .provider(InstantProvider::new(invoice_reply()))
                    .build()
                    .expect("client")
            },
            |client| {
                let result = call(&client, &rt);
                assert!(result.is_success());
                black_box(result)
            },
            BatchSize::PerIteration,
        )
    });

    c.bench_function("cassette/replayed", |b| {
        b.iter_batched(
            || {
                let replayer = Cassette::new(&path)
                    .mode(CassetteMode::ReplayOnly)
                    .wrap(InstantProvider::new(String::new()))
                    .expect("cassette");
                IntentClient::builder()
                    .provider(replayer)
                    .build()
                    .expect("client")
            },
            |client| {
                let result = call(&client, &rt);
                assert!(result.is_success() && result.attempts[0].replayed);
                black_box(result)
            },
            BatchSize::PerIteration,
        )
    });
    let _ = std::fs::remove_file(&path);
}

criterion_group!(benches, replay);
criterion_main!(benches);
