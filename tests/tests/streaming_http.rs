//! Streamed calls over loopback HTTP servers that speak each wire format's server-sent
//! events: the reassembled text is the reply, partials only grow, usage is read,
//! refusal and truncation end the attempt, a mid-stream error and a dropped connection
//! are classified and retried, and dropping the stream closes the connection.

mod provider_support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use intent_rs::limits::RetryPolicy;
use intent_rs::provider::{Anthropic, OpenAi, OpenAiCompatible, Provider};
use intent_rs::stream::StreamEvent;
use intent_rs::{
    AIResult, IntentClient, IntentOptions, IntentStream, IssueSource, Partial, PartialOf,
    StrictCompatible,
};
use provider_support::{OPENAI_FIELDS, SECRET_KEY, assert_valid_chat_request, read_request};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
struct Line {
    item: String,
    cents: i64,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema, StrictCompatible, Partial)]
struct Invoice {
    number: String,
    lines: Vec<Line>,
    note: Option<String>,
}

const INVOICE: &str = r#"{"value": {"number": "INV-7", "lines": [{"item": "Paper, A4", "cents": 1250}, {"item": "Ink \"black\"", "cents": 4999}, {"item": "Stapler", "cents": 800}], "note": "Paid in full – thank you"}}"#;

fn invoice() -> Invoice {
    Invoice {
        number: "INV-7".into(),
        lines: vec![
            Line {
                item: "Paper, A4".into(),
                cents: 1250,
            },
            Line {
                item: "Ink \"black\"".into(),
                cents: 4999,
            },
            Line {
                item: "Stapler".into(),
                cents: 800,
            },
        ],
        note: Some("Paid in full – thank you".into()),
    }
}

// ---------------------------------------------------------------------------------------
// The server

/// How one connection ends after its events.
#[derive(Clone, Copy, PartialEq)]
enum End {
    /// The chunked body is finished properly.
    Complete,
    /// The connection is closed in the middle of the body.
    Drop,
    /// Events keep coming, slowly, until the client goes away.
    Endless,
}

/// One scripted reply: a status, and server-sent events written one by one.
#[derive(Clone)]
struct Reply {
    status: u16,
    events: Vec<String>,
    delay: Duration,
    end: End,
}

impl Reply {
    fn events(events: Vec<String>) -> Self {
        Self {
            status: 200,
            events,
            delay: Duration::from_millis(1),
            end: End::Complete,
        }
    }
}

/// What the server saw.
#[derive(Default)]
struct Seen {
    bodies: Mutex<Vec<Value>>,
    connections: AtomicUsize,
    /// Set when writing to a client failed: it closed the connection.
    client_closed: AtomicBool,
}

/// A server answering the `n`-th request with `replies[n]`, writing each event as one
/// HTTP chunk.
async fn sse_server(replies: Vec<Reply>) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let index = log.connections.fetch_add(1, Ordering::SeqCst);
            let Some(reply) = replies.get(index).cloned() else {
                return;
            };
            let log = log.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let Some(request) = read_request(&mut stream, &mut buffer).await else {
                    return;
                };
                let body_start = request.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                let body: Value = serde_json::from_slice(&request[body_start..]).unwrap();
                log.bodies.lock().unwrap().push(body);
                if reply.status != 200 {
                    let text = r#"{"error":{"message":"slow down","type":"rate_limit_error"}}"#;
                    let head = format!(
                        "HTTP/1.1 {} Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                        reply.status,
                        text.len()
                    );
                    let _ = stream.write_all(head.as_bytes()).await;
                    return;
                }
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nx-request-id: req-stream-1\r\nrequest-id: req-stream-1\r\nconnection: close\r\n\r\n";
                if stream.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = |event: &str| format!("{:x}\r\n{event}\r\n", event.len());
                let mut written = 0;
                loop {
                    let event = match (reply.events.get(written), reply.end) {
                        (Some(event), _) => event.clone(),
                        (None, End::Endless) => ": keep-alive\n\n".to_owned(),
                        (None, _) => break,
                    };
                    written += 1;
                    let sent = stream.write_all(chunk(&event).as_bytes()).await;
                    let flushed = stream.flush().await;
                    if sent.is_err() || flushed.is_err() {
                        log.client_closed.store(true, Ordering::SeqCst);
                        return;
                    }
                    tokio::time::sleep(reply.delay).await;
                }
                match reply.end {
                    End::Complete => {
                        let _ = stream.write_all(b"0\r\n\r\n").await;
                    }
                    // Half a chunk, then the connection goes.
                    End::Drop => {
                        let _ = stream.write_all(b"40\r\ndata: {\"cho").await;
                    }
                    End::Endless => {}
                }
                let _ = stream.shutdown().await;
            });
        }
    });
    (format!("http://{addr}"), seen)
}

/// `text` cut into pieces of `size` bytes (at character boundaries).
fn pieces(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = size.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out
}

fn data(value: Value) -> String {
    format!("data: {value}\n\n")
}

/// Chat Completions chunks carrying `text`, then the finish reason, usage and `[DONE]`.
fn openai_events(text: &str, size: usize, finish: &str) -> Vec<String> {
    let mut events = vec![data(json!({
        "id": "c1", "object": "chat.completion.chunk", "model": "gpt-stream-2026",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]
    }))];
    events.extend(pieces(text, size).into_iter().map(|piece| {
        data(json!({
            "id": "c1", "object": "chat.completion.chunk", "model": "gpt-stream-2026",
            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]
        }))
    }));
    events.push(data(json!({
        "id": "c1", "object": "chat.completion.chunk", "model": "gpt-stream-2026",
        "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]
    })));
    events.push(data(json!({
        "id": "c1", "object": "chat.completion.chunk", "model": "gpt-stream-2026", "choices": [],
        "usage": {"prompt_tokens": 321, "completion_tokens": 54, "total_tokens": 375,
                  "prompt_tokens_details": {"cached_tokens": 256}}
    })));
    events.push("data: [DONE]\n\n".to_owned());
    events
}

fn anthropic_event(name: &str, value: Value) -> String {
    format!("event: {name}\ndata: {value}\n\n")
}

/// Messages events carrying `text`, with `stop_reason`.
fn anthropic_events(text: &str, size: usize, stop_reason: &str) -> Vec<String> {
    let mut events = vec![
        anthropic_event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                "model": "claude-stream-2026", "content": [], "stop_reason": null,
                "usage": {"input_tokens": 300, "cache_read_input_tokens": 20, "cache_creation_input_tokens": 1, "output_tokens": 1}}}),
        ),
        anthropic_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        anthropic_event("ping", json!({"type": "ping"})),
    ];
    events.extend(pieces(text, size).into_iter().map(|piece| {
        anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
        )
    }));
    events.push(anthropic_event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    events.push(anthropic_event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 61}}),
    ));
    events.push(anthropic_event(
        "message_stop",
        json!({"type": "message_stop"}),
    ));
    events
}

fn client(provider: impl Provider + 'static) -> IntentClient {
    IntentClient::builder()
        .provider(provider)
        .retry_policy(RetryPolicy {
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
            ..RetryPolicy::default()
        })
        .build()
        .unwrap()
}

fn openai(base: &str) -> OpenAi {
    OpenAi::new(SECRET_KEY)
        .with_base_url(base)
        .with_model("gpt-stream")
}

fn anthropic(base: &str) -> Anthropic {
    Anthropic::new(SECRET_KEY)
        .with_base_url(base)
        .with_model("claude-stream")
}

/// Everything a stream sent, in order.
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
    assert!(
        events.iter().all(|e| !matches!(e, StreamEvent::Final(_))),
        "one final event"
    );
    (events, result)
}

fn invoice_stream(client: &IntentClient, max_attempts: u32) -> IntentStream<Invoice> {
    client.transform_stream(
        "Invoice INV-7 ...",
        "Extract the invoice",
        IntentOptions::<Invoice>::new().max_attempts(max_attempts),
    )
}

/// The invoice partials of one attempt, in order.
fn partials(events: &[StreamEvent<Invoice>]) -> Vec<PartialOf<Invoice>> {
    events
        .iter()
        .filter_map(|event| match event {
            StreamEvent::Partial { value, .. } => Some(value.clone()),
            _ => None,
        })
        .collect()
}

/// A later partial keeps every field an earlier one showed, and the full value agrees
/// with every partial.
fn assert_monotone(partials: &[PartialOf<Invoice>], full: &Invoice) {
    assert!(!partials.is_empty(), "no partial was shown");
    let line_agrees = |shown: &LinePartial, line: &Line| {
        shown.item.as_ref().is_none_or(|item| item == &line.item)
            && shown.cents.is_none_or(|cents| cents == line.cents)
    };
    for pair in partials.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        if before.number.is_some() {
            assert_eq!(before.number, after.number);
        }
        let (before_lines, after_lines) = (
            before.lines.as_deref().unwrap_or_default(),
            after.lines.as_deref().unwrap_or_default(),
        );
        assert!(after_lines.len() >= before_lines.len());
        for (index, line) in before_lines.iter().enumerate() {
            let later = &after_lines[index];
            assert!(line.item.is_none() || line.item == later.item);
            assert!(line.cents.is_none() || line.cents == later.cents);
        }
    }
    for shown in partials {
        assert!(shown.number.as_ref().is_none_or(|n| n == &full.number));
        for (index, line) in shown.lines.iter().flatten().enumerate() {
            assert!(line_agrees(line, &full.lines[index]), "{shown:?}");
        }
        assert!(shown.note.is_none() || shown.note == full.note);
    }
}

// ---------------------------------------------------------------------------------------
// OpenAI Chat Completions

#[tokio::test]
async fn openai_stream_reassembles_the_reply_with_growing_partials_and_usage() {
    let (base, seen) = sse_server(vec![Reply::events(openai_events(INVOICE, 7, "stop"))]).await;
    let client = client(openai(&base));
    let (events, result) = collect(invoice_stream(&client, 1)).await;
    assert_eq!(result.value, Some(invoice()), "{result:?}");
    let record = &result.attempts[0];
    assert_eq!(record.raw_output, INVOICE);
    assert_eq!(record.model, "gpt-stream-2026");
    assert_eq!(result.usage.input_tokens, 321);
    assert_eq!(result.usage.output_tokens, 54);
    assert_eq!(result.usage.cached_input_tokens, 256);
    let shown = partials(&events);
    assert_monotone(&shown, &invoice());
    assert!(
        shown.iter().any(|p| p.number.is_some() && p.note.is_none()),
        "a partial before the end: {shown:#?}"
    );
    // The request asked for a stream with usage, in a body OpenAI accepts.
    let body = seen.bodies.lock().unwrap()[0].clone();
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    let allowed: Vec<&str> = OPENAI_FIELDS
        .iter()
        .copied()
        .chain(["stream", "stream_options"])
        .collect();
    assert_valid_chat_request(&body, &allowed);
}

#[tokio::test]
async fn a_streamed_refusal_ends_the_attempt_as_a_refusal() {
    let refusal = |piece: &str, finish: Value| {
        data(
            json!({"choices": [{"index": 0, "delta": {"refusal": piece}, "finish_reason": finish}]}),
        )
    };
    let events = vec![
        refusal("I can't help ", Value::Null),
        refusal("with that.", json!("stop")),
        "data: [DONE]\n\n".to_owned(),
    ];
    let (base, _) = sse_server(vec![Reply::events(events)]).await;
    let (_, result) = collect(invoice_stream(&client(openai(&base)), 1)).await;
    assert!(result.value.is_none());
    let issue = &result.issues[0];
    assert_eq!(issue.source, IssueSource::Provider, "{issue:?}");
    assert!(
        issue.message.contains("I can't help with that."),
        "{issue:?}"
    );
}

#[tokio::test]
async fn a_streamed_truncation_ends_the_attempt_as_truncated() {
    let (base, _) = sse_server(vec![Reply::events(openai_events(
        &INVOICE[..60],
        9,
        "length",
    ))])
    .await;
    let (_, result) = collect(invoice_stream(&client(openai(&base)), 1)).await;
    assert!(result.value.is_none());
    assert!(
        result.issues[0].message.contains("cut off") || result.issues[0].message.contains("trunc"),
        "{:?}",
        result.issues
    );
    assert_eq!(result.attempts[0].raw_output, &INVOICE[..60]);
}

#[tokio::test]
async fn a_transient_error_in_the_middle_of_a_stream_is_retried() {
    let mut broken = openai_events(&INVOICE[..50], 10, "stop");
    broken.truncate(4);
    broken.push(data(
        json!({"error": {"message": "The server had an error while processing your request", "type": "server_error"}}),
    ));
    let (base, seen) = sse_server(vec![
        Reply::events(broken),
        Reply::events(openai_events(INVOICE, 16, "stop")),
    ])
    .await;
    let client = client(openai(&base));
    let (events, result) = collect(invoice_stream(&client, 1)).await;
    assert_eq!(result.value, Some(invoice()), "{result:?}");
    let record = &result.attempts[0];
    assert_eq!(record.provider_retries.len(), 1, "{record:?}");
    // The retry names the kind; the server's words are kept on the error, not shown.
    assert!(
        record.provider_retries[0].contains("server error"),
        "{:?}",
        record.provider_retries
    );
    assert_eq!(record.model_calls, 2);
    assert_eq!(client.total_model_calls(), 2);
    assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
    // The partials of the failed request are withdrawn before the new request's.
    let retry = events
        .iter()
        .position(|e| matches!(e, StreamEvent::Retry { .. }))
        .expect("a retry event");
    let StreamEvent::Retry { attempt, problems } = &events[retry] else {
        unreachable!()
    };
    assert_eq!(*attempt, 1);
    assert_eq!(problems[0].kind(), intent_rs::FailureKind::Unavailable);
    assert_monotone(&partials(&events[retry..]), &invoice());
}

#[tokio::test]
async fn a_non_transient_error_in_the_middle_of_a_stream_ends_the_call() {
    let mut broken = openai_events(INVOICE, 10, "stop");
    broken.truncate(3);
    broken.push(data(
        json!({"error": {"message": "Invalid content", "type": "invalid_request_error"}}),
    ));
    let (base, seen) = sse_server(vec![Reply::events(broken)]).await;
    let (_, result) = collect(invoice_stream(&client(openai(&base)), 3)).await;
    assert!(result.value.is_none());
    assert_eq!(result.issues[0].source, IssueSource::Provider);
    let provider = result.issues[0]
        .cause
        .as_ref()
        .and_then(|cause| cause.downcast_ref::<intent_rs::provider::ProviderError>())
        .expect("the provider error");
    assert!(provider.message().contains("Invalid content"));
    assert!(!result.issues[0].message.contains("Invalid content"));
    assert_eq!(seen.connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_connection_dropped_in_the_middle_of_a_stream_is_retried() {
    let mut dropped = Reply::events(openai_events(INVOICE, 10, "stop"));
    dropped.events.truncate(5);
    dropped.end = End::Drop;
    let (base, seen) = sse_server(vec![
        dropped,
        Reply::events(openai_events(INVOICE, 10, "stop")),
    ])
    .await;
    let (events, result) = collect(invoice_stream(&client(openai(&base)), 1)).await;
    assert_eq!(result.value, Some(invoice()), "{result:?}");
    assert_eq!(result.attempts[0].provider_retries.len(), 1);
    assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::Retry { attempt: 1, .. }))
    );
}

#[tokio::test]
async fn a_status_error_on_a_streamed_request_is_classified_and_retried() {
    let limited = Reply {
        status: 429,
        ..Reply::events(Vec::new())
    };
    let (base, _) = sse_server(vec![
        limited,
        Reply::events(openai_events(INVOICE, 32, "stop")),
    ])
    .await;
    let (_, result) = collect(invoice_stream(&client(openai(&base)), 1)).await;
    assert_eq!(result.value, Some(invoice()), "{result:?}");
    // The provider's words ("slow down") are withheld: the retry names the kind and status.
    assert!(
        result.attempts[0].provider_retries[0].contains("rate limited (HTTP 429)"),
        "{:?}",
        result.attempts[0].provider_retries
    );
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection_and_the_call_is_counted() {
    let mut slow = Reply::events(openai_events(INVOICE, 4, "stop"));
    slow.events.truncate(12);
    slow.delay = Duration::from_millis(10);
    slow.end = End::Endless;
    let (base, seen) = sse_server(vec![slow]).await;
    let client = client(openai(&base));
    let mut stream = invoice_stream(&client, 1);
    // Wait for the first partial (the invoice number), then walk away.
    loop {
        match stream.next().await {
            Some(StreamEvent::Partial { .. }) => break,
            Some(StreamEvent::Final(result)) => panic!("ended early: {result:?}"),
            Some(_) => {}
            None => panic!("no final event"),
        }
    }
    drop(stream);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !seen.client_closed.load(Ordering::SeqCst) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server still writes to an open connection"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(client.total_model_calls(), 1);
}

#[tokio::test]
async fn an_openai_compatible_server_streams_the_same_way() {
    let (base, seen) = sse_server(vec![Reply::events(openai_events(INVOICE, 11, "stop"))]).await;
    let provider = OpenAiCompatible::new(base, "local-model");
    let (events, result) = collect(invoice_stream(&client(provider), 1)).await;
    assert_eq!(result.value, Some(invoice()), "{result:?}");
    assert_monotone(&partials(&events), &invoice());
    assert_eq!(seen.bodies.lock().unwrap()[0]["stream"], json!(true));
}

// ---------------------------------------------------------------------------------------
// Anthropic Messages

#[tokio::test]
async fn anthropic_stream_reassembles_the_reply_with_growing_partials_and_usage() {
    let (base, seen) = sse_server(vec![Reply::events(anthropic_events(
        INVOICE, 5, "end_turn",
    ))])
    .await;
    let (events, result) = collect(invoice_stream(&client(anthropic(&base)), 1)).await;
    assert_eq!(result.value, Some(invoice()), "{result:?}");
    let record = &result.attempts[0];
    assert_eq!(record.raw_output, INVOICE);
    assert_eq!(record.model, "claude-stream-2026");
    assert_eq!(result.usage.input_tokens, 321);
    assert_eq!(result.usage.cached_input_tokens, 20);
    assert_eq!(result.usage.cache_write_input_tokens, 1);
    assert_eq!(result.usage.output_tokens, 61);
    assert_monotone(&partials(&events), &invoice());
    assert_eq!(seen.bodies.lock().unwrap()[0]["stream"], json!(true));
}

#[tokio::test]
async fn anthropic_refusal_and_max_tokens_in_the_stream_end_the_attempt() {
    let (base, _) = sse_server(vec![
        Reply::events(anthropic_events("I won't do that.", 5, "refusal")),
        Reply::events(anthropic_events(&INVOICE[..40], 5, "max_tokens")),
    ])
    .await;
    let client = client(anthropic(&base));
    let (_, refused) = collect(invoice_stream(&client, 1)).await;
    assert_eq!(refused.issues[0].source, IssueSource::Provider);
    assert!(refused.issues[0].message.contains("I won't do that."));
    let (_, truncated) = collect(invoice_stream(&client, 1)).await;
    assert!(truncated.value.is_none());
    assert_eq!(truncated.attempts[0].raw_output, &INVOICE[..40]);
}

#[tokio::test]
async fn an_anthropic_error_event_in_the_middle_is_classified_and_retried() {
    let mut overloaded = anthropic_events(INVOICE, 8, "end_turn");
    overloaded.truncate(6);
    overloaded.push(anthropic_event(
        "error",
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ));
    let (base, seen) = sse_server(vec![
        Reply::events(overloaded),
        Reply::events(anthropic_events(INVOICE, 8, "end_turn")),
    ])
    .await;
    let (_, result) = collect(invoice_stream(&client(anthropic(&base)), 1)).await;
    assert_eq!(result.value, Some(invoice()), "{result:?}");
    assert!(
        result.attempts[0].provider_retries[0].contains("overloaded"),
        "{:?}",
        result.attempts[0].provider_retries
    );
    assert_eq!(seen.connections.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_api_key_never_appears_in_a_streamed_error() {
    let mut leaking = openai_events(INVOICE, 10, "stop");
    leaking.truncate(2);
    leaking.push(data(
        json!({"error": {"message": format!("bad key {SECRET_KEY}"), "type": "invalid_request_error"}}),
    ));
    let (base, _) = sse_server(vec![Reply::events(leaking)]).await;
    let (_, result) = collect(invoice_stream(&client(openai(&base)), 1)).await;
    let text = format!("{result:?}");
    assert!(!text.contains(SECRET_KEY), "{text}");
}
