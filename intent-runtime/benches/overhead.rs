//! Criterion benches of the runtime's own cost, with no network: one `transform` of the
//! invoice through a provider that replies at once (with and without a retry), and the
//! schema work (first build vs cached lookup, runtime schema and strict walk of a large
//! schema: 200 properties over 5 levels). The `allocations` bench gives the same call's
//! medians through the scripted provider, with allocation counts. The `telemetry/` rows
//! run the invoice call under a subscriber that records every span field and event
//! (`transform/invoice` is the same call with no subscriber), with and without content.
//!
//! `cargo bench -p intent-rs --bench overhead`; quick check: `-- --test`.

mod support;

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use intent_rs::schema::{make_strict, runtime_target_schema, target_schema};
use intent_rs::schemars::generate::SchemaSettings;
use intent_rs::{IntentClient, IntentOptions};
use serde_json::{Map, Value, json};
use support::{
    INVOICE_DOCUMENT, InstantProvider, Invoice, broken_invoice_reply, invoice_reply, totals_add_up,
};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn per_call(c: &mut Criterion) {
    let rt = runtime();
    // A provider that records nothing: the scripted one keeps every request, which over
    // a criterion run's hundreds of thousands of calls grows to gigabytes.
    let client = IntentClient::builder()
        .provider(InstantProvider::new(invoice_reply()))
        .build()
        .expect("client");
    c.bench_function("transform/invoice", |b| {
        b.iter(|| {
            let result = rt.block_on(client.transform(
                INVOICE_DOCUMENT,
                "Extract the invoice",
                IntentOptions::<Invoice>::new().validate(totals_add_up),
            ));
            assert!(result.is_success());
            black_box(result)
        })
    });

    // First reply breaks the envelope, second is right: two plans, renders and parses.
    let retry_client = IntentClient::builder()
        .provider(InstantProvider::alternating(
            broken_invoice_reply(),
            invoice_reply(),
        ))
        .build()
        .expect("client");
    c.bench_function("transform/invoice_with_retry", |b| {
        b.iter(|| {
            let result = rt.block_on(retry_client.transform(
                INVOICE_DOCUMENT,
                "Extract the invoice",
                IntentOptions::<Invoice>::new().validate(totals_add_up),
            ));
            assert_eq!(result.attempts.len(), 2);
            black_box(result)
        })
    });
}

/// A runtime schema with 200 properties spread over 5 levels of nesting.
fn large_schema() -> Value {
    fn level(depth: u32, width: u32) -> Value {
        let mut properties = Map::new();
        for i in 0..width {
            let property = if depth < 5 && i == 0 {
                level(depth + 1, width)
            } else {
                json!({"type": "string", "minLength": 1, "maxLength": 80, "description": format!("field {i}")})
            };
            properties.insert(format!("p{depth}_{i}"), property);
        }
        json!({"type": "object", "properties": properties, "required": []})
    }
    level(1, 40)
}

fn schema_work(c: &mut Criterion) {
    c.bench_function("schema/envelope_cached", |b| {
        let _ = target_schema::<Invoice>();
        b.iter(|| black_box(target_schema::<Invoice>().expect("schema")))
    });
    // `target_schema` caches per type, so its first build is reproduced here with the same
    // steps: the type's draft 2020-12 schema, wrapped in the envelope, walked strict.
    c.bench_function("schema/envelope_first_build", |b| {
        b.iter(|| {
            let root = SchemaSettings::draft2020_12()
                .into_generator()
                .into_root_schema_for::<Invoice>()
                .to_value();
            black_box(runtime_target_schema(&root).expect("schema"))
        })
    });
    let schema = large_schema();
    c.bench_function("schema/runtime_schema_200_properties", |b| {
        b.iter(|| black_box(runtime_target_schema(&schema).expect("schema")))
    });
    c.bench_function("schema/strict_walk_200_properties", |b| {
        b.iter_batched(
            || schema.clone(),
            |mut copy| {
                make_strict(&mut copy);
                copy
            },
            BatchSize::SmallInput,
        )
    });
}

/// A subscriber that records everything: every field of every span, record and event is
/// formatted into a buffer, as an exporting subscriber would copy it out.
struct Recording {
    buffer: std::sync::Mutex<String>,
    next_id: std::sync::atomic::AtomicU64,
}

impl Recording {
    fn new() -> Self {
        Self {
            buffer: std::sync::Mutex::new(String::new()),
            next_id: std::sync::atomic::AtomicU64::new(1),
        }
    }

    fn keep(&self, record: impl FnOnce(&mut dyn tracing::field::Visit)) {
        let mut buffer = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
        buffer.clear();
        record(&mut Fields(&mut buffer));
        black_box(buffer.len());
    }
}

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        let _ = write!(self.0, "{}={value:?} ", field.name());
    }
}

impl tracing::Subscriber for Recording {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        self.keep(|visit| span.record(visit));
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::span::Id::from_u64(id)
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        self.keep(|visit| values.record(visit));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        self.keep(|visit| event.record(visit));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn telemetry(c: &mut Criterion) {
    let rt = runtime();
    for (name, content) in [
        ("telemetry/invoice_recording_subscriber", false),
        ("telemetry/invoice_recording_content", true),
    ] {
        let client = IntentClient::builder()
            .provider(InstantProvider::new(invoice_reply()))
            .record_content(content)
            .build()
            .expect("client");
        let _recording = tracing::subscriber::set_default(Recording::new());
        c.bench_function(name, |b| {
            b.iter(|| {
                let result = rt.block_on(
                    client.transform(
                        INVOICE_DOCUMENT,
                        "Extract the invoice",
                        IntentOptions::<Invoice>::new()
                            .validate(totals_add_up)
                            .method("invoice"),
                    ),
                );
                assert!(result.is_success());
                black_box(result)
            })
        });
    }
}

criterion_group!(benches, per_call, schema_work, telemetry);
criterion_main!(benches);
