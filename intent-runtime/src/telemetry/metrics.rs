//! The metrics, through the `opentelemetry` metrics API: the GenAI conventions' token
//! usage and operation duration per model request, and the library's own per call.
//!
//! The API rather than `tracing` events read by `tracing-opentelemetry`'s metrics layer:
//! the conventions fix each instrument's unit and bucket boundaries, which only the API
//! can set, and metrics then reach whatever meter provider the application installed
//! (OTLP, Prometheus) whatever its `tracing` filters say.

use std::fmt;
use std::time::Duration;

use opentelemetry::metrics::{Counter, Histogram, Meter};
use opentelemetry::{InstrumentationScope, KeyValue};

use super::names::*;
use super::{Endpoint, repair_kind};
use crate::provider::ProviderReply;
use crate::result::Repair;

/// The conventions' advised boundaries for `gen_ai.client.token.usage`.
const TOKEN_BOUNDARIES: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The conventions' advised boundaries for `gen_ai.client.operation.duration`, seconds.
const DURATION_BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// A client's instruments.
#[derive(Clone)]
pub(crate) struct Metrics {
    token_usage: Histogram<u64>,
    duration: Histogram<f64>,
    attempts: Histogram<u64>,
    repairs: Counter<u64>,
    verification_failures: Counter<u64>,
    judge_verdicts: Counter<u64>,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// The instruments, from `meter` or else from the global meter provider.
    pub(crate) fn new(meter: Option<Meter>) -> Self {
        let meter = meter.unwrap_or_else(|| {
            let scope = InstrumentationScope::builder(env!("CARGO_PKG_NAME"))
                .with_version(env!("CARGO_PKG_VERSION"))
                .with_schema_url(format!(
                    "https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
                ))
                .build();
            opentelemetry::global::meter_with_scope(scope)
        });
        Self {
            token_usage: meter
                .u64_histogram(METRIC_TOKEN_USAGE)
                .with_unit("{token}")
                .with_description("Number of input and output tokens used.")
                .with_boundaries(TOKEN_BOUNDARIES.to_vec())
                .build(),
            duration: meter
                .f64_histogram(METRIC_OPERATION_DURATION)
                .with_unit("s")
                .with_description("GenAI operation duration.")
                .with_boundaries(DURATION_BOUNDARIES.to_vec())
                .build(),
            attempts: meter
                .u64_histogram(METRIC_ATTEMPTS)
                .with_unit("{attempt}")
                .with_description("Attempts made by one intent call.")
                .with_boundaries(vec![1.0, 2.0, 3.0, 4.0, 5.0, 8.0, 13.0])
                .build(),
            repairs: meter
                .u64_counter(METRIC_REPAIRS)
                .with_unit("{repair}")
                .with_description("Repairs made to model replies before reading them.")
                .build(),
            verification_failures: meter
                .u64_counter(METRIC_VERIFICATION_FAILURES)
                .with_unit("{attempt}")
                .with_description(
                    "Attempts whose reply failed a check, by the first check that failed.",
                )
                .build(),
            judge_verdicts: meter
                .u64_counter(METRIC_JUDGE_VERDICTS)
                .with_unit("{verdict}")
                .with_description("Verdicts of the judge.")
                .build(),
        }
    }

    /// A model request's duration and tokens.
    pub(crate) fn replied(
        &self,
        mut attributes: Vec<KeyValue>,
        reply: &ProviderReply,
        elapsed: Duration,
    ) {
        if !reply.model.is_empty() {
            attributes.push(KeyValue::new(GEN_AI_RESPONSE_MODEL, reply.model.clone()));
        }
        self.duration.record(elapsed.as_secs_f64(), &attributes);
        for (token_type, tokens) in [
            ("input", reply.usage.input_tokens),
            ("output", reply.usage.output_tokens),
        ] {
            attributes.push(KeyValue::new(GEN_AI_TOKEN_TYPE, token_type));
            self.token_usage.record(tokens, &attributes);
            attributes.pop();
        }
    }

    /// A failed model request's duration; it used no token the provider reported.
    pub(crate) fn failed(
        &self,
        mut attributes: Vec<KeyValue>,
        error_type: &str,
        elapsed: Duration,
    ) {
        attributes.push(KeyValue::new(ERROR_TYPE, error_type.to_owned()));
        self.duration.record(elapsed.as_secs_f64(), &attributes);
    }

    /// A verified reply: its repairs by kind, and the first check that failed, if any.
    pub(crate) fn verified(
        &self,
        method: Option<&str>,
        failed_step: Option<&str>,
        repairs: &[Repair],
    ) {
        let method = method_attribute(method);
        for repair in repairs {
            self.repairs.add(
                1,
                &[
                    method.clone(),
                    KeyValue::new(INTENT_REPAIR_KIND, repair_kind(repair)),
                ],
            );
        }
        if let Some(step) = failed_step {
            self.verification_failures.add(
                1,
                &[method, KeyValue::new(INTENT_VERIFY_STEP, step.to_owned())],
            );
        }
    }

    /// A judge verdict: `pass`, `fail` or `missing`.
    pub(crate) fn judged(&self, method: Option<&str>, verdict: &'static str) {
        self.judge_verdicts.add(
            1,
            &[
                method_attribute(method),
                KeyValue::new(INTENT_JUDGE_VERDICT, verdict),
            ],
        );
    }

    /// A finished call: its attempts, by outcome.
    pub(crate) fn finished(&self, method: Option<&str>, outcome: &'static str, attempts: usize) {
        self.attempts.record(
            attempts as u64,
            &[
                method_attribute(method),
                KeyValue::new(INTENT_OUTCOME, outcome),
            ],
        );
    }
}

/// The attributes every measurement of a model request carries.
pub(crate) fn request_attributes(endpoint: &Endpoint, model: &str) -> Vec<KeyValue> {
    let mut attributes = vec![
        KeyValue::new(GEN_AI_OPERATION_NAME, OPERATION_CHAT),
        KeyValue::new(GEN_AI_PROVIDER_NAME, endpoint.provider.clone()),
        KeyValue::new(GEN_AI_REQUEST_MODEL, model.to_owned()),
    ];
    if let (Some(address), Some(port)) = (&endpoint.address, endpoint.port) {
        attributes.push(KeyValue::new(SERVER_ADDRESS, address.clone()));
        attributes.push(KeyValue::new(SERVER_PORT, i64::from(port)));
    }
    attributes
}

fn method_attribute(method: Option<&str>) -> KeyValue {
    KeyValue::new(INTENT_METHOD, method.unwrap_or(TRANSFORM).to_owned())
}
