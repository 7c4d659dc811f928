//! Client CPU per call on the test model against the scripted provider: one `transform`
//! of the bench invoice, each call on a current-thread runtime, timed with the calling
//! thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`); the median of the rounds' means. Both
//! providers keep every request, as tests use them, and both enforce the schema, so the
//! prompts are the same.
//!
//! Rows: the scripted provider with the ~2 KB invoice reply (20 lines); the test model
//! generating an invoice (1 to 3 lines); the test model with `/lines` pinned to the same
//! 20 lines (about the same reply); and the test model's answer alone (generation from
//! the strict schema, no client).
//!
//! `cargo bench -p intent-rs --bench test_model`; quick check: `-- --test`.

mod support;

use std::hint::black_box;
use std::time::Duration;

use intent_rs::provider::{
    Provider, ProviderRequest, ResponseFormat, ScriptedProvider, ScriptedReply, TestModel,
};
use intent_rs::schema::target_schema;
use intent_rs::{IntentClient, IntentOptions};
use support::loopback::thread_cpu;
use support::{INVOICE_DOCUMENT, Invoice, invoice, invoice_reply};

fn client(provider: impl Provider + 'static) -> IntentClient {
    IntentClient::builder()
        .provider(provider)
        .build()
        .expect("client")
}

/// The median over `rounds` of the mean CPU time per call of `calls` calls.
fn per_call(rounds: usize, calls: usize, mut call: impl FnMut()) -> Duration {
    let mut means: Vec<Duration> = (0..rounds)
        .map(|_| {
            let start = thread_cpu();
            for _ in 0..calls {
                call();
            }
            (thread_cpu() - start) / calls as u32
        })
        .collect();
    means.sort();
    means[means.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|arg| arg == "--test");
    let (rounds, calls) = if quick { (1, 20) } else { (7, 3_000) };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let run = |client: &IntentClient| {
        let result = rt.block_on(client.transform(
            INVOICE_DOCUMENT,
            "Extract the invoice",
            IntentOptions::<Invoice>::new(),
        ));
        assert!(result.is_success(), "{:?}", result.issues);
        black_box(result);
    };

    let reply = invoice_reply();
    let scripted = client(
        ScriptedProvider::from_fn(move |_, _| ScriptedReply::text(reply.clone()))
            .with_schema_enforced(true),
    );
    let generated = client(TestModel::seeded(1));
    let pinned = client(TestModel::seeded(1).pin("/lines", invoice().lines));

    let mut request = ProviderRequest::text("system", INVOICE_DOCUMENT);
    request.response_format = ResponseFormat::JsonSchema;
    request.schema = Some(target_schema::<Invoice>().expect("schema").strict.clone());
    let model = TestModel::seeded(1);

    let rows = [
        (
            "transform, scripted provider (2 KB reply, 20 lines)",
            per_call(rounds, calls, || run(&scripted)),
        ),
        (
            "transform, test model (generated, 1-3 lines)",
            per_call(rounds, calls, || run(&generated)),
        ),
        (
            "transform, test model, /lines pinned to the 20 lines",
            per_call(rounds, calls, || run(&pinned)),
        ),
        (
            "TestModel::answer alone (generated invoice)",
            per_call(rounds, calls, || {
                black_box(model.answer(&request).expect("answer"));
            }),
        ),
    ];
    println!("| call | client CPU per call |");
    println!("| --- | --- |");
    for (label, cpu) in rows {
        println!("| {label} | {:.1} µs |", cpu.as_secs_f64() * 1e6);
    }
}
