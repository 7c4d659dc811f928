//! The optional features a user turns on for field types (`chrono`, `uuid`): a type with
//! such fields derives everything an intent method needs, its schema states the formats,
//! and a reply is read into it, whole and streamed.

use chrono::{DateTime, NaiveDate, Utc};
use intent_rs::provider::ScriptedProvider;
use intent_rs::stream::StreamEvent;
use intent_rs::{IntentClient, IntentError, IntentStream, Partial, StrictCompatible, intents};
use schemars::JsonSchema;
use serde::Deserialize;
use uuid::Uuid;

#[derive(Debug, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
pub struct Booking {
    id: Uuid,
    made_at: DateTime<Utc>,
    arrives: NaiveDate,
    departs: Option<NaiveDate>,
}

#[intents]
trait Bookings {
    #[intent("Read the booking")]
    async fn booking(&self, email: &str) -> Result<Booking, IntentError>;

    #[intent("Read the booking")]
    fn booking_stream(&self, email: &str) -> IntentStream<Booking>;
}

const REPLY: &str = r#"{"value": {"id": "67e55044-10b1-426f-9247-bb680e5fe0c8", "made_at": "2026-11-30T09:15:00Z", "arrives": "2026-12-24", "departs": null}}"#;

fn expected() -> Booking {
    Booking {
        id: Uuid::parse_str("67e55044-10b1-426f-9247-bb680e5fe0c8").expect("a uuid"),
        made_at: "2026-11-30T09:15:00Z".parse().expect("a time"),
        arrives: NaiveDate::from_ymd_opt(2026, 12, 24).expect("a date"),
        departs: None,
    }
}

#[tokio::test]
async fn uuid_and_chrono_fields_are_sent_with_their_formats_and_read_back() {
    let model = ScriptedProvider::new([REPLY]);
    let client = BookingsClient::new(
        IntentClient::builder()
            .provider(model.clone())
            .build()
            .expect("a client"),
    );

    assert_eq!(client.booking("…").await.expect("a booking"), expected());

    let schema = model.requests()[0]
        .schema
        .as_ref()
        .expect("a typed call sends its schema")
        .to_string();
    for format in [
        r#""format":"uuid""#,
        r#""format":"date-time""#,
        r#""format":"date""#,
    ] {
        assert!(schema.contains(format), "{format} in {schema}");
    }
}

#[tokio::test]
async fn uuid_and_chrono_fields_stream_and_end_verified() {
    let model =
        ScriptedProvider::new([REPLY]).with_stream_chunks(16, Some(std::time::Duration::ZERO));
    let client = BookingsClient::new(
        IntentClient::builder()
            .provider(model)
            .build()
            .expect("a client"),
    );
    let mut events = client.booking_stream("…");
    let mut partials = 0;
    let mut last = None;
    while let Some(event) = events.next().await {
        match event {
            StreamEvent::Partial { .. } => partials += 1,
            StreamEvent::Final(result) => last = Some(result),
            StreamEvent::Retry { .. } => panic!("the reply is valid"),
        }
    }
    assert!(
        partials > 1,
        "the reply arrived in pieces: {partials} partials"
    );
    let result = last.expect("a final event");
    assert_eq!(result.into_result().expect("a booking"), expected());
}
