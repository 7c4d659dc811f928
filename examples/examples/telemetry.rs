//! Telemetry: every call is an OpenTelemetry GenAI span tree, emitted through `tracing`.
//!
//! `cargo run --example telemetry` (offline: the scripted model is rate limited once, then
//! its first answer fails a validator). It prints the span tree of that retried call as a
//! `tracing` subscriber sees it (`RUST_LOG` filters it; by default `intent_rs=trace`, every
//! step; `intent_rs=info` prints one line per attempt), then runs the call again with
//! `tracing-opentelemetry` exporting the same spans through OpenTelemetry's stdout
//! exporter.

use std::time::Duration;

use intent_examples::{choose_provider, print_attempts};
use intent_rs::limits::RetryPolicy;
use intent_rs::provider::{ProviderError, ProviderErrorKind, ScriptedProvider, ScriptedReply};
use intent_rs::{AIResult, IntentClient, StrictCompatible, intents};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use schemars::JsonSchema;
use serde::Deserialize;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{EnvFilter, Registry};

/// A hotel booking as read from an email.
#[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
struct Booking {
    guest: String,
    nights: u32,
}

fn at_least_one_night(booking: &Booking) -> Result<(), String> {
    if booking.nights >= 1 {
        Ok(())
    } else {
        Err("nights must be at least 1: count the nights between arrival and departure.".into())
    }
}

#[intents]
trait Hotel {
    #[intent("Extract the booking from the email")]
    #[validate(at_least_one_night)]
    async fn booking(&self, email: &str) -> AIResult<Booking>;
}

/// Rate limited once, then a booking of 0 nights, then the right one; and again.
fn scripted_model() -> ScriptedProvider {
    ScriptedProvider::from_fn(|_, index| match index % 3 {
        0 => ScriptedReply::Error(ProviderError::new(
            ProviderErrorKind::RateLimited,
            "scripted",
            "too many requests",
        )),
        1 => ScriptedReply::Text(r#"{"value": {"guest": "Ann Lee", "nights": 0}}"#.to_owned()),
        _ => ScriptedReply::Text(r#"{"value": {"guest": "Ann Lee", "nights": 3}}"#.to_owned()),
    })
    .with_model("scripted-hotel-model")
}

const EMAIL: &str = "Hi, Ann Lee here: I arrive on 3 March and leave on 6 March.";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chosen = choose_provider(scripted_model());
    let client = IntentClient::builder()
        .shared_provider(chosen.provider)
        .retry_policy(RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(20),
            max_delay: Duration::from_secs(5),
        })
        .build()?;
    let hotel = HotelClient::new(client);

    println!("== The span tree of one call, as any `tracing` subscriber sees it\n");
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("intent_rs=trace"));
    let tree = tracing_tree::HierarchicalLayer::new(2)
        .with_writer(std::io::stdout)
        .with_ansi(false)
        .with_targets(false)
        .with_bracketed_fields(true);
    let result = {
        let _terminal =
            tracing::subscriber::set_default(Registry::default().with(filter).with(tree));
        hotel.booking(EMAIL).await
    };
    println!();
    print_attempts(&result);
    if let Some(booking) = &result.value {
        println!("  value: {} for {} nights", booking.guest, booking.nights);
    }

    println!("\n== The same call exported through OpenTelemetry (the stdout span exporter)\n");
    let exporter = SdkTracerProvider::builder()
        .with_simple_exporter(opentelemetry_stdout::SpanExporter::default())
        .build();
    let otel = tracing_opentelemetry::layer().with_tracer(exporter.tracer("intent-examples"));
    {
        let subscriber = Registry::default()
            .with(EnvFilter::new("intent_rs=info"))
            .with(otel);
        let _exported = tracing::subscriber::set_default(subscriber);
        hotel.booking(EMAIL).await;
    }
    exporter.shutdown()?;
    Ok(())
}
