//! A streamed method in the common cases, with nothing imported but this crate: awaited
//! for its final verified record without looking at the partials, and read event by
//! event with the stream's own `next`.

use intent_rs::provider::ScriptedProvider;
use intent_rs::stream::StreamEvent;
use intent_rs::{IntentClient, IntentStream, Partial, StrictCompatible, intents};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
pub struct Invoice {
    number: String,
    total_cents: i64,
}

#[intents]
trait Documents {
    #[intent("Extract the invoice fields")]
    fn invoice(&self, document: &str) -> IntentStream<Invoice>;
}

const BAD: &str = r#"{"value": {"number": "9"}}"#;
const GOOD: &str = r#"{"value": {"number": "9", "total_cents": 650}}"#;

fn documents(replies: &[&'static str]) -> DocumentsClient {
    let model = ScriptedProvider::new(replies.iter().copied())
        .with_stream_chunks(8, Some(std::time::Duration::ZERO));
    DocumentsClient::new(
        IntentClient::builder()
            .provider(model)
            .build()
            .expect("a client"),
    )
}

#[tokio::test]
async fn awaiting_a_stream_gives_the_final_verified_record() {
    let result = documents(&[BAD, GOOD]).invoice("Invoice 9").await;
    assert_eq!(result.attempts.len(), 2, "the missing field was fed back");
    assert_eq!(
        result.into_result().expect("a value"),
        Invoice {
            number: "9".into(),
            total_cents: 650
        }
    );
}

#[tokio::test]
async fn a_stream_is_read_with_its_own_next() {
    let mut events = documents(&[GOOD]).invoice("Invoice 9");
    let (mut partials, mut finals) = (0, 0);
    while let Some(event) = events.next().await {
        match event {
            StreamEvent::Partial { .. } => partials += 1,
            StreamEvent::Final(result) => {
                finals += 1;
                assert!(result.is_success());
            }
            StreamEvent::Retry { .. } => panic!("the reply is valid"),
        }
    }
    assert!(
        partials >= 1 && finals == 1,
        "{partials} partials, {finals} finals"
    );
    assert!(
        events.next().await.is_none(),
        "nothing after the final event"
    );
}
