//! The `metrics` feature: what a call records through the `opentelemetry` metrics API,
//! seen by a capturing meter (`cargo test -p intent-rs --features metrics`).

#![cfg(feature = "metrics")]

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use intent_rs::provider::{ProviderReply, ScriptedProvider, ScriptedReply};
use intent_rs::{IntentClient, IntentOptions, Usage};
use opentelemetry::KeyValue;
use opentelemetry::metrics::{
    Counter, Histogram, HistogramBuilder, InstrumentBuilder, InstrumentProvider, Meter,
    SyncInstrument,
};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Clone)]
struct Measurement {
    name: String,
    unit: Option<String>,
    boundaries: Option<Vec<f64>>,
    value: f64,
    attributes: BTreeMap<String, String>,
}

#[derive(Clone, Default)]
struct Recorded(Arc<Mutex<Vec<Measurement>>>);

impl Recorded {
    fn named(&self, name: &str) -> Vec<Measurement> {
        let all = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        all.iter().filter(|m| m.name == name).cloned().collect()
    }
}

struct Instrument {
    name: Cow<'static, str>,
    unit: Option<Cow<'static, str>>,
    boundaries: Option<Vec<f64>>,
    recorded: Recorded,
}

impl Instrument {
    fn keep(&self, value: f64, attributes: &[KeyValue]) {
        let attributes = attributes
            .iter()
            .map(|kv| (kv.key.to_string(), kv.value.to_string()))
            .collect();
        self.recorded
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Measurement {
                name: self.name.to_string(),
                unit: self.unit.as_ref().map(|u| u.to_string()),
                boundaries: self.boundaries.clone(),
                value,
                attributes,
            });
    }
}

impl SyncInstrument<u64> for Instrument {
    fn measure(&self, value: u64, attributes: &[KeyValue]) {
        self.keep(value as f64, attributes);
    }
}

impl SyncInstrument<f64> for Instrument {
    fn measure(&self, value: f64, attributes: &[KeyValue]) {
        self.keep(value, attributes);
    }
}

/// A meter that keeps every measurement: the API alone, no SDK.
struct Capturing(Recorded);

impl Capturing {
    fn instrument(
        &self,
        name: Cow<'static, str>,
        unit: Option<Cow<'static, str>>,
        boundaries: Option<Vec<f64>>,
    ) -> Arc<Instrument> {
        Arc::new(Instrument {
            name,
            unit,
            boundaries,
            recorded: self.0.clone(),
        })
    }
}

impl InstrumentProvider for Capturing {
    fn u64_counter(&self, builder: InstrumentBuilder<'_, Counter<u64>>) -> Counter<u64> {
        Counter::new(self.instrument(builder.name, builder.unit, None))
    }
    fn u64_histogram(&self, builder: HistogramBuilder<'_, Histogram<u64>>) -> Histogram<u64> {
        Histogram::new(self.instrument(builder.name, builder.unit, builder.boundaries))
    }
    fn f64_histogram(&self, builder: HistogramBuilder<'_, Histogram<f64>>) -> Histogram<f64> {
        Histogram::new(self.instrument(builder.name, builder.unit, builder.boundaries))
    }
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Person {
    name: String,
    age: u32,
}

fn reply(text: &str) -> ScriptedReply {
    ScriptedReply::Reply(ProviderReply {
        text: text.to_owned(),
        usage: Usage {
            input_tokens: 300,
            output_tokens: 20,
            cached_input_tokens: 0,
            ..Usage::default()
        },
        model: "people-model-1".to_owned(),
        stop_reason: Some("stop".to_owned()),
        ..ProviderReply::default()
    })
}

fn attribute<'a>(measurement: &'a Measurement, key: &str) -> Option<&'a str> {
    measurement.attributes.get(key).map(String::as_str)
}

#[tokio::test]
async fn a_retried_judged_call_records_the_conventions_metrics_and_the_librarys_own() {
    let recorded = Recorded::default();
    let meter = Meter::new(Arc::new(Capturing(recorded.clone())));
    let model = ScriptedProvider::new([
        // Key case repaired, then the validator fails: a verification failure at the
        // validator step.
        reply(r#"{"value": {"Name": "Ann", "age": 12}}"#),
        reply(r#"{"value": {"name": "Ann", "age": 41}}"#),
    ])
    .with_model("people-model");
    let judge = ScriptedProvider::new([r#"{"passes": true, "problems": []}"#]);
    let client = IntentClient::builder()
        .provider(model)
        .judge_provider(judge)
        .meter(meter)
        .build()
        .unwrap();
    let options = IntentOptions::<Person>::new()
        .require(|p| p.age >= 18, "age must be at least 18")
        .require_judge()
        .method("adult");
    let result = client
        .transform("Ann, 41", "Extract the adult", options)
        .await;
    assert!(result.is_success(), "{result:?}");

    // One duration per model request: two answers and the judge's.
    let durations = recorded.named("gen_ai.client.operation.duration");
    assert_eq!(durations.len(), 3, "{durations:#?}");
    let first = &durations[0];
    assert_eq!(first.unit.as_deref(), Some("s"));
    assert_eq!(
        first.boundaries.as_ref().map(|b| (b[0], b.len())),
        Some((0.01, 14))
    );
    assert_eq!(attribute(first, "gen_ai.operation.name"), Some("chat"));
    assert_eq!(attribute(first, "gen_ai.provider.name"), Some("scripted"));
    assert_eq!(
        attribute(first, "gen_ai.request.model"),
        Some("people-model")
    );
    assert_eq!(
        attribute(first, "gen_ai.response.model"),
        Some("people-model-1")
    );
    assert_eq!(attribute(first, "error.type"), None);
    assert!(first.value >= 0.0 && first.value < 10.0, "{first:?}");

    // Tokens: input and output per request, as reported.
    let tokens = recorded.named("gen_ai.client.token.usage");
    assert_eq!(tokens.len(), 6, "{tokens:#?}");
    assert_eq!(tokens[0].unit.as_deref(), Some("{token}"));
    assert_eq!(attribute(&tokens[0], "gen_ai.token.type"), Some("input"));
    assert_eq!(tokens[0].value, 300.0);
    assert_eq!(attribute(&tokens[1], "gen_ai.token.type"), Some("output"));
    assert_eq!(tokens[1].value, 20.0);

    let attempts = recorded.named("intent.client.call.attempts");
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].value, 2.0);
    assert_eq!(attribute(&attempts[0], "intent.method"), Some("adult"));
    assert_eq!(attribute(&attempts[0], "intent.outcome"), Some("success"));

    let repairs = recorded.named("intent.client.repairs");
    let kinds: Vec<Option<&str>> = repairs
        .iter()
        .map(|m| attribute(m, "intent.repair.kind"))
        .collect();
    assert_eq!(kinds, [Some("key_case_changed")]);

    let failures = recorded.named("intent.client.verification.failures");
    assert_eq!(failures.len(), 1, "{failures:#?}");
    assert_eq!(
        attribute(&failures[0], "intent.verify.step"),
        Some("validator")
    );

    let verdicts = recorded.named("intent.client.judge.verdicts");
    assert_eq!(verdicts.len(), 1);
    assert_eq!(
        attribute(&verdicts[0], "intent.judge.verdict"),
        Some("pass")
    );
}

#[tokio::test]
async fn a_failed_request_records_its_duration_with_the_error_type_and_no_tokens() {
    let recorded = Recorded::default();
    let meter = Meter::new(Arc::new(Capturing(recorded.clone())));
    let error = intent_rs::provider::ProviderError::new(
        intent_rs::provider::ProviderErrorKind::InvalidRequest,
        "scripted",
        "bad request",
    );
    let client = IntentClient::builder()
        .provider(ScriptedProvider::new([ScriptedReply::Error(error)]))
        .meter(meter)
        .build()
        .unwrap();
    let result = client
        .transform("x", "Count", IntentOptions::<u32>::new())
        .await;
    assert!(!result.is_success());
    let durations = recorded.named("gen_ai.client.operation.duration");
    assert_eq!(durations.len(), 1);
    assert_eq!(
        attribute(&durations[0], "error.type"),
        Some("invalid_request")
    );
    assert!(recorded.named("gen_ai.client.token.usage").is_empty());
    let attempts = recorded.named("intent.client.call.attempts");
    assert_eq!(attribute(&attempts[0], "intent.outcome"), Some("failure"));
    assert_eq!(attribute(&attempts[0], "intent.method"), Some("transform"));
}
