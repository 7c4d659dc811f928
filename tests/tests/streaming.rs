//! Streamed calls through the scripted provider and generated clients: the final record
//! is the one a non-streamed call returns, a reply that fails verification is withdrawn
//! with a retry event carrying its problems, plain text streams as text so far, and the
//! guardrails hold.

use std::time::Duration;

use intent_rs::provider::{ProviderError, ProviderErrorKind, ScriptedProvider, ScriptedReply};
use intent_rs::stream::StreamEvent;
use intent_rs::{
    AIResult, IntentClient, IntentOptions, IntentStream, IssueSource, Partial, StrictCompatible,
    intents,
};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
struct Line {
    item: String,
    cents: i64,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
struct Invoice {
    number: String,
    total_cents: i64,
    lines: Vec<Line>,
}

fn totals_add_up(invoice: &Invoice) -> Result<(), String> {
    let sum: i64 = invoice.lines.iter().map(|line| line.cents).sum();
    if sum == invoice.total_cents {
        Ok(())
    } else {
        Err(format!(
            "The lines add up to {sum} cents; make total_cents match them."
        ))
    }
}

#[intents]
trait Documents {
    #[intent("Extract the invoice fields")]
    #[validate(totals_add_up)]
    async fn invoice(&self, document: &str) -> AIResult<Invoice>;

    #[intent("Extract the invoice fields")]
    #[validate(totals_add_up)]
    fn invoice_live(&self, document: &str) -> IntentStream<Invoice>;

    #[intent("Summarize in one sentence")]
    fn summary_live(&self, text: &str) -> IntentStream<String>;
}

const WRONG_TOTAL: &str = r#"{"value": {"number": "7", "total_cents": 999, "lines": [{"item": "Pen", "cents": 150}, {"item": "Pad", "cents": 350}]}}"#;
const RIGHT: &str = r#"{"value": {"number": "7", "total_cents": 500, "lines": [{"item": "Pen", "cents": 150}, {"item": "Pad", "cents": 350}]}}"#;

fn documents(provider: ScriptedProvider) -> DocumentsClient {
    DocumentsClient::new(IntentClient::builder().provider(provider).build().unwrap())
}

async fn collect<T: Partial + Send + 'static>(
    mut stream: IntentStream<T>,
) -> (Vec<StreamEvent<T>>, AIResult<T>) {
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let Some(StreamEvent::Final(result)) = events.pop() else {
        panic!("the last event is not the final one")
    };
    (events, result)
}

fn assert_send<T: Send>(_: &T) {}

#[tokio::test]
async fn a_streamed_method_returns_the_record_a_waiting_method_returns() {
    let scripted =
        || ScriptedProvider::new([WRONG_TOTAL, RIGHT]).with_stream_chunks(6, Some(Duration::ZERO));
    let waited = documents(scripted()).invoice("Invoice 7").await;
    let stream = documents(scripted()).invoice_live("Invoice 7");
    assert_send(&stream);
    let (events, streamed) = collect(stream).await;
    assert_eq!(streamed.value, waited.value);
    assert!(streamed.value.is_some());
    assert_eq!(streamed.issues, waited.issues);
    assert_eq!(streamed.usage, waited.usage);
    assert_eq!(streamed.attempts.len(), 2);
    for (streamed, waited) in streamed.attempts.iter().zip(&waited.attempts) {
        assert_eq!(streamed.raw_output, waited.raw_output);
        assert_eq!(streamed.issues, waited.issues);
        assert_eq!(streamed.repairs, waited.repairs);
        assert_eq!(streamed.model_calls, waited.model_calls);
    }

    // The first reply was shown, then withdrawn with the validator's problem.
    let retry = events
        .iter()
        .position(|e| matches!(e, StreamEvent::Retry { .. }))
        .expect("a retry event");
    let StreamEvent::Retry { attempt, problems } = &events[retry] else {
        unreachable!()
    };
    assert_eq!(*attempt, 2);
    assert_eq!(problems[0].source, IssueSource::Validator);
    assert!(problems[0].message.contains("add up to 500 cents"));
    let first_attempt = &events[..retry];
    assert!(
        first_attempt
            .iter()
            .any(|e| matches!(e, StreamEvent::Partial { attempt: 1, value } if value.number.as_deref() == Some("7"))),
        "the number is shown before the reply ends"
    );
    assert!(
        events[retry..]
            .iter()
            .all(|e| !matches!(e, StreamEvent::Partial { attempt: 1, .. })),
        "nothing of the first attempt after its retry event"
    );
}

#[tokio::test]
async fn a_half_written_invoice_shows_its_number_and_first_lines() {
    let reply = r#"{"value": {"number": "INV-9", "total_cents": 600, "lines": [{"item": "A", "cents": 100}, {"item": "B", "cents": 200}, {"item": "C", "cents": 300}]}}"#;
    // The first piece ends after the second line: the reply as it stands when half
    // written. (On a fast stream of small pieces a partial is read each time the reply
    // has doubled, so which intermediate states show depends on where pieces end.)
    let half_written = reply.find(r#", {"item": "C""#).expect("a third line");
    let provider =
        ScriptedProvider::new([reply]).with_stream_chunks(half_written, Some(Duration::ZERO));
    let (events, result) = collect(documents(provider).invoice_live("Invoice 9")).await;
    assert!(result.is_success(), "{result:?}");
    let shown: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Partial { value, .. } => Some(value),
            _ => None,
        })
        .collect();
    let half = shown
        .iter()
        .find(|p| p.lines.as_ref().is_some_and(|lines| lines.len() == 2))
        .expect("a partial with two lines");
    assert_eq!(half.number.as_deref(), Some("INV-9"));
    let lines = half.lines.as_ref().unwrap();
    assert_eq!(lines[0].item.as_deref(), Some("A"));
    assert_eq!(lines[0].cents, Some(100));
}

#[tokio::test]
async fn a_plain_text_target_streams_the_text_so_far() {
    let text = "The quarter closed with revenue up four percent on strong exports.";
    let provider = ScriptedProvider::new([text]).with_stream_chunks(5, Some(Duration::ZERO));
    let (events, result) = collect(documents(provider).summary_live("Q3 report")).await;
    assert_eq!(result.value.as_deref(), Some(text));
    let shown: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Partial { value, .. } => Some(value),
            _ => None,
        })
        .collect();
    assert!(shown.len() >= 2, "{shown:?}");
    for pair in shown.windows(2) {
        assert!(pair[1].starts_with(pair[0].as_str()) && pair[1].len() > pair[0].len());
    }
    assert!(text.starts_with(shown[0].as_str()) && shown[0].len() < text.len());
}

#[tokio::test]
async fn a_transient_failure_mid_stream_starts_a_new_request_within_the_call_ceiling() {
    let dropped = || {
        ScriptedReply::fail_after(
            &RIGHT[..30],
            ProviderError::new(
                ProviderErrorKind::Transport,
                "scripted",
                "connection reset mid-stream",
            ),
        )
    };
    let provider = ScriptedProvider::new([dropped(), dropped(), dropped()])
        .with_stream_chunks(10, Some(Duration::ZERO));
    let client = IntentClient::builder()
        .provider(provider)
        .max_model_calls(2)
        .retry_policy(intent_rs::limits::RetryPolicy {
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
            ..Default::default()
        })
        .build()
        .unwrap();
    let stream = client.transform_stream(
        "Invoice 7",
        "Extract the invoice fields",
        IntentOptions::<Invoice>::new().max_attempts(1),
    );
    let (events, result) = collect(stream).await;
    assert!(result.value.is_none());
    assert_eq!(client.total_model_calls(), 2, "the ceiling holds");
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Retry { .. }))
            .count(),
        1
    );
    assert!(
        result.issues[0]
            .message
            .contains("connection reset mid-stream")
    );
}

#[tokio::test]
async fn the_time_budget_stops_a_slow_stream() {
    let provider =
        ScriptedProvider::new([RIGHT]).with_stream_chunks(4, Some(Duration::from_millis(20)));
    let client = IntentClient::builder()
        .provider(provider)
        .time_budget(Duration::from_millis(150))
        .build()
        .unwrap();
    let stream = client.transform_stream(
        "Invoice 7",
        "Extract the invoice fields",
        IntentOptions::<Invoice>::new(),
    );
    let (_, result) = collect(stream).await;
    assert!(result.value.is_none());
    assert_eq!(result.issues[0].source, IssueSource::Guardrail);
    assert_eq!(client.total_model_calls(), 1);
}

#[tokio::test]
async fn finish_ignores_the_partials_and_returns_the_record() {
    let provider = ScriptedProvider::new([RIGHT]).with_stream_chunks(2, Some(Duration::ZERO));
    let result = documents(provider).invoice_live("Invoice 7").finish().await;
    assert_eq!(result.value.map(|invoice| invoice.total_cents), Some(500));
}

#[tokio::test]
async fn a_provider_without_streaming_serves_streamed_calls_whole() {
    #[derive(Debug)]
    struct Whole;
    #[intent_rs::async_trait]
    impl intent_rs::provider::Provider for Whole {
        fn name(&self) -> &str {
            "whole"
        }
        fn default_model(&self) -> &str {
            "whole-1"
        }
        async fn complete(
            &self,
            _: &intent_rs::provider::ProviderRequest,
        ) -> Result<intent_rs::provider::ProviderReply, ProviderError> {
            Ok(intent_rs::provider::ProviderReply::text(RIGHT))
        }
    }
    let client = IntentClient::builder().provider(Whole).build().unwrap();
    let stream = client.transform_stream(
        "Invoice 7",
        "Extract the invoice fields",
        IntentOptions::<Invoice>::new(),
    );
    let (events, result) = collect(stream).await;
    assert_eq!(result.value.map(|invoice| invoice.total_cents), Some(500));
    assert_eq!(events.len(), 1, "one partial: the whole value");
}
