//! Criterion benches of the runtime's own cost, with no network: one `transform` of the
//! invoice through a scripted provider that replies at once (with and without a retry),
//! and the schema work (first build vs cached lookup, strict walk of a large schema).
//!
//! `cargo bench -p intent-runtime --bench overhead`; quick check: `-- --test`.

mod support;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use intent_runtime::provider::ScriptedProvider;
use intent_runtime::schema::{make_strict, runtime_target_schema, target_schema};
use intent_runtime::{IntentClient, IntentOptions};
use serde_json::{Map, Value, json};
use support::{INVOICE_DOCUMENT, Invoice, invoice_reply, totals_add_up};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn per_call(c: &mut Criterion) {
    let rt = runtime();
    let reply = invoice_reply();
    let ok = reply.clone();
    let client = IntentClient::builder()
        .provider(ScriptedProvider::from_fn(move |_, _| ok.as_str().into()))
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
    c.bench_function("schema/envelope_first_build", |b| {
        b.iter(|| {
            let mut envelope = json!({
                "type": "object",
                "properties": {"value": schemars::schema_for!(Invoice)},
                "required": ["value"],
                "additionalProperties": false
            });
            make_strict(&mut envelope);
            black_box(envelope)
        })
    });
    let schema = large_schema();
    c.bench_function("schema/runtime_schema_200_properties", |b| {
        b.iter(|| black_box(runtime_target_schema(&schema).expect("schema")))
    });
}

criterion_group!(benches, per_call, schema_work);
criterion_main!(benches);
