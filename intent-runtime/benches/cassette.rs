//! What replaying from a cassette costs a call: the invoice `transform` through a provider
//! that replies at once, bare and wrapped in a replay-only cassette (fingerprint,
//! sanitizing, lookup, the recorded reply rebuilt), and the cassette's size per exchange.
//!
//! A cassette serves each recorded exchange once, so every measured call gets a freshly
//! opened cassette and client, built in the untimed setup; the bare rows build a fresh
//! client the same way. No network, one thread: the time is the client's CPU.
//!
//! `cargo bench -p intent-rs --bench cassette`; quick check: `-- --test`.

mod support;

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use intent_rs::provider::{Cassette, CassetteMode};
use intent_rs::{IntentClient, IntentOptions};
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

fn replay(c: &mut Criterion) {
    let rt = runtime();
    let path = recorded_cassette(&rt);
    let bytes = std::fs::read(&path).expect("the cassette").len();
    println!("cassette: 1 exchange (the invoice call), {bytes} bytes");

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
