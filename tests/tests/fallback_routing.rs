//! Fallback chains and routing: a chain of loopback servers speaking different wire APIs
//! with the first going down mid-run (nothing lost, every request counted), refusals,
//! streams falling over before their first piece only, and named providers chosen per
//! method and per call, a missing one found when the client is made.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use intent_rs::batch::BatchOptions;
use intent_rs::provider::fallback::{FallbackProvider, Member};
use intent_rs::provider::{
    Anthropic, OpenAi, ProviderError, ProviderErrorKind, ScriptedProvider, ScriptedReply,
};
use intent_rs::result::NotSent;
use intent_rs::route::SkipReason;
use intent_rs::stream::StreamEvent;
use intent_rs::{
    AIResult, BuildError, FailureKind, IntentClient, IntentError, IntentOptions, IssueSource,
    Overrides, intents,
};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

#[intents]
trait Counter {
    #[intent("Count the words")]
    async fn words(&self, text: &str) -> AIResult<u32>;

    #[intent("Count the words", provider = "cheap")]
    async fn cheap_words(&self, text: &str) -> Result<u32, IntentError>;

    #[intent("Count the words", provider = "strong")]
    async fn strong_words(&self, text: &str) -> Result<u32, IntentError>;
}

#[intents]
trait Plain {
    #[intent("Count the words")]
    async fn words(&self, text: &str) -> AIResult<u32>;

    #[intent("Count the words")]
    fn streamed(&self, text: &str) -> intent_rs::IntentStream<u32>;
}

fn chat_reply(content: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_767_000_000,
        "model": "gpt-primary",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": null},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}
    }))
}

fn chat_refusal() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "created": 1_767_000_000,
        "model": "gpt-primary",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": null, "refusal": "I can't help with that."},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}
    }))
}

fn messages_reply(text: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-backup",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": 100, "output_tokens": 5}
    }))
}

fn data(value: serde_json::Value) -> String {
    format!("data: {value}\n\n")
}

fn chat_stream(text: &str) -> ResponseTemplate {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        data(json!({
            "id": "c1", "object": "chat.completion.chunk", "model": "gpt-backup",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
        }))
    };
    let body = [
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": text}), None),
        chunk(json!({}), Some("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_raw(body, "text/event-stream")
}

fn openai_at(server: &MockServer) -> OpenAi {
    OpenAi::new("sk-test-not-a-real-key")
        .with_base_url(format!("{}/v1", server.uri()))
        .with_model("gpt-primary")
}

fn anthropic_at(server: &MockServer) -> Anthropic {
    Anthropic::new("sk-ant-test-not-a-real-key")
        .with_base_url(server.uri())
        .with_model("claude-backup")
}

async fn received(server: &MockServer) -> usize {
    server.received_requests().await.unwrap_or_default().len()
}

/// A primary (Chat Completions) that answers five requests and then is overloaded, in
/// front of a backup speaking the Messages API.
#[tokio::test]
async fn the_first_provider_down_mid_run_loses_nothing_and_every_request_is_counted() {
    let primary = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(chat_reply(r#"{"value": 3}"#))
        .up_to_n_times(5)
        .with_priority(1)
        .mount(&primary)
        .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(503)
                .set_body_json(json!({"error": {"message": "overloaded", "type": "server_error"}})),
        )
        .with_priority(2)
        .mount(&primary)
        .await;
    let backup = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(messages_reply(r#"{"value": 3}"#))
        .mount(&backup)
        .await;
    let chain = FallbackProvider::new(Member::new(openai_at(&primary)).named("primary"))
        .then(Member::new(anthropic_at(&backup)).named("backup"));
    let client = IntentClient::builder().provider(chain).build().unwrap();
    let plain = PlainClient::new(client.clone());

    let mut answered_by = Vec::new();
    for _ in 0..15 {
        let result = plain.words("one two three").await;
        assert_eq!(result.value, Some(3), "{:?}", result.issues);
        assert_eq!(result.attempts.len(), 1, "no call needed a retry");
        let route = result.attempts[0].route.clone().expect("a route");
        answered_by.push((route.provider, route.skipped.first().map(|s| s.reason)));
    }
    let expected: Vec<(String, Option<SkipReason>)> = (0..15)
        .map(|call| match call {
            0..=4 => ("primary".to_owned(), None),
            // Three failures in a row open the primary's breaker (the default policy).
            5..=7 => ("backup".to_owned(), Some(SkipReason::Overloaded)),
            _ => ("backup".to_owned(), Some(SkipReason::CoolingDown)),
        })
        .collect();
    assert_eq!(answered_by, expected);
    assert_eq!(received(&primary).await, 5 + 3, "asked until cooled down");
    assert_eq!(received(&backup).await, 10);
    // Every request that went out is a model call, the failed ones included.
    assert_eq!(client.total_model_calls(), 15 + 3);
}

/// A loopback Chat Completions server of our own (a pooled mock server outlives its
/// handle): answers every request with `{"value": 3}` and closes the connection; counts
/// what arrives; stopped by aborting its task, after which connections are refused.
async fn closing_server() -> (String, tokio::task::JoinHandle<()>, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}/v1", listener.local_addr().unwrap());
    let arrived = Arc::new(AtomicUsize::new(0));
    let counter = arrived.clone();
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_767_000_000,
        "model": "gpt-primary",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"value\": 3}"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}
    })
    .to_string();
    let task = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = Vec::new();
            let mut buffer = [0u8; 4096];
            // Headers, then as many body bytes as they announce.
            while let Ok(read) = socket.read(&mut buffer).await {
                if read == 0 {
                    break;
                }
                request.extend_from_slice(&buffer[..read]);
                let text = String::from_utf8_lossy(&request).to_lowercase();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text
                        .lines()
                        .find_map(|line| line.strip_prefix("content-length:"))
                        .and_then(|value| value.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if request.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            counter.fetch_add(1, Ordering::SeqCst);
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    });
    (address, task, arrived)
}

/// The primary's server goes away mid-run: its connections are refused, a transport
/// failure, and the backup answers every call.
#[tokio::test]
async fn a_primary_that_vanishes_mid_run_falls_over_to_the_backup() {
    let (address, primary, primary_arrived) = closing_server().await;
    let backup = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(messages_reply(r#"{"value": 3}"#))
        .mount(&backup)
        .await;
    let primary_provider = OpenAi::new("sk-test-not-a-real-key")
        .with_base_url(address)
        .with_model("gpt-primary");
    let chain = FallbackProvider::new(Member::new(primary_provider).named("primary"))
        .then(Member::new(anthropic_at(&backup)).named("backup"));
    let plain = PlainClient::new(IntentClient::builder().provider(chain).build().unwrap());
    for _ in 0..4 {
        assert_eq!(plain.words("one two three").await.value, Some(3));
    }
    primary.abort();
    let _ = primary.await;
    assert_eq!(primary_arrived.load(Ordering::SeqCst), 4);
    for call in 0..6 {
        let result = plain.words("one two three").await;
        assert_eq!(result.value, Some(3), "{:?}", result.issues);
        let route = result.attempts[0].route.clone().unwrap();
        assert_eq!(route.provider, "backup");
        let expected = if call < 3 {
            SkipReason::Transport
        } else {
            SkipReason::CoolingDown
        };
        assert_eq!(route.skipped[0].reason, expected, "call {call}");
    }
    assert_eq!(received(&backup).await, 6);
    assert_eq!(primary_arrived.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn a_refusal_does_not_fall_over_unless_asked() {
    let primary = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(chat_refusal())
        .mount(&primary)
        .await;
    let backup = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(messages_reply(r#"{"value": 3}"#))
        .mount(&backup)
        .await;
    let chain = FallbackProvider::new(openai_at(&primary)).then(anthropic_at(&backup));
    let client = IntentClient::builder()
        .provider(chain.clone())
        .max_attempts(1)
        .build()
        .unwrap();
    let result = PlainClient::new(client).words("one two three").await;
    assert_eq!(result.value, None);
    assert!(
        result
            .issues
            .iter()
            .any(|issue| issue.message.contains("refused")),
        "{:?}",
        result.issues
    );
    assert_eq!(received(&backup).await, 0);

    let client = IntentClient::builder()
        .provider(chain.on_refusal(true))
        .max_attempts(1)
        .build()
        .unwrap();
    let result = PlainClient::new(client).words("one two three").await;
    assert_eq!(result.value, Some(3));
    let route = result.attempts[0].route.clone().unwrap();
    assert_eq!(route.skipped[0].reason, SkipReason::Refused);
    assert_eq!(received(&backup).await, 1);
}

#[tokio::test]
async fn a_stream_falls_over_before_its_first_piece() {
    let primary = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(529)
                .set_body_json(json!({"error": {"message": "overloaded", "type": "server_error"}})),
        )
        .mount(&primary)
        .await;
    let backup = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(chat_stream(r#"{"value": 3}"#))
        .mount(&backup)
        .await;
    let backup_provider = OpenAi::new("sk-test-not-a-real-key")
        .with_base_url(format!("{}/v1", backup.uri()))
        .with_model("gpt-backup");
    let chain = FallbackProvider::new(openai_at(&primary)).then(backup_provider);
    let plain = PlainClient::new(IntentClient::builder().provider(chain).build().unwrap());
    let mut events = plain.streamed("one two three");
    let mut last = None;
    while let Some(event) = events.next().await {
        if let StreamEvent::Final(result) = event {
            last = Some(result);
        }
    }
    let result = last.expect("a final result");
    assert_eq!(result.value, Some(3), "{:?}", result.issues);
    assert_eq!(result.attempts[0].route.as_ref().unwrap().position, 1);
    assert_eq!((received(&primary).await, received(&backup).await), (1, 1));
}

#[tokio::test]
async fn a_stream_that_failed_after_its_first_piece_does_not_fall_over() {
    let cut = ProviderError::new(ProviderErrorKind::Transport, "scripted", "reset");
    let first = ScriptedProvider::new([ScriptedReply::fail_after(r#"{"value"#, cut)])
        .with_stream_chunks(4, Some(Duration::ZERO));
    let second = ScriptedProvider::new([r#"{"value": 3}"#]);
    let chain = FallbackProvider::new(first.clone()).then(second.clone());
    let client = IntentClient::builder()
        .provider(chain)
        .retry_policy(intent_rs::limits::RetryPolicy::none())
        .build()
        .unwrap();
    let mut events = PlainClient::new(client).streamed("one two three");
    let mut last = None;
    while let Some(event) = events.next().await {
        if let StreamEvent::Final(result) = event {
            last = Some(result);
        }
    }
    let result = last.unwrap();
    assert_eq!(result.value, None);
    assert_eq!((first.request_count(), second.request_count()), (1, 0));
}

fn routed_client(cheap: &ScriptedProvider, strong: &ScriptedProvider) -> IntentClient {
    IntentClient::builder()
        .provider(ScriptedProvider::from_fn(|_, _| {
            ScriptedReply::text(r#"{"value": 1}"#)
        }))
        .provider_named("cheap", cheap.clone())
        .provider_named("strong", strong.clone())
        .build()
        .unwrap()
}

#[tokio::test]
async fn methods_and_calls_choose_their_provider_by_name() {
    let cheap = ScriptedProvider::from_fn(|_, _| ScriptedReply::text(r#"{"value": 2}"#));
    let strong = ScriptedProvider::from_fn(|_, _| ScriptedReply::text(r#"{"value": 3}"#));
    let client = routed_client(&cheap, &strong);
    assert_eq!(client.provider_names(), ["cheap", "strong"]);
    let counter = CounterClient::try_new(client.clone()).unwrap();
    assert_eq!(CounterClient::PROVIDERS, ["cheap", "strong"]);
    // Per method.
    assert_eq!(counter.words("a").await.value, Some(1));
    assert_eq!(counter.cheap_words("a").await.unwrap(), 2);
    assert_eq!(counter.strong_words("a").await.unwrap(), 3);
    // Per call: the overrides win over the method's name.
    let strong_only = counter.with_options(Overrides::new().provider("strong"));
    assert_eq!(strong_only.cheap_words("a").await.unwrap(), 3);
    assert_eq!(strong_only.words("a").await.value, Some(3));
    let options = IntentOptions::<u32>::new().provider("cheap");
    assert_eq!(client.transform("a", "Count", options).await.value, Some(2));
    assert_eq!((cheap.request_count(), strong.request_count()), (2, 3));
    // Routes share the client's totals.
    assert_eq!(client.total_model_calls(), 6);
}

#[tokio::test]
async fn a_call_naming_a_provider_the_client_lacks_sends_nothing() {
    let cheap = ScriptedProvider::new(Vec::<String>::new());
    let strong = ScriptedProvider::new(Vec::<String>::new());
    let client = routed_client(&cheap, &strong);
    let options = IntentOptions::<u32>::new().provider("premium");
    let result = client.transform("a", "Count", options).await;
    assert_eq!(result.value, None);
    assert_eq!(result.issues[0].source, IssueSource::Input);
    // A configuration failure, typed: the program can tell it from a model's.
    let error = result.clone().into_result().unwrap_err();
    assert_eq!(error.kind(), FailureKind::NotSent);
    assert_eq!(
        error.not_sent(),
        Some(&NotSent::Configuration {
            provider: "premium".to_owned()
        })
    );
    assert!(
        result.issues[0].message.contains("`premium`")
            && result.issues[0].message.contains("cheap, strong"),
        "{}",
        result.issues[0].message
    );
    assert_eq!(client.total_model_calls(), 0);
}

#[tokio::test]
async fn a_batch_job_does_not_route_and_says_so_before_sending_anything() {
    let cheap = ScriptedProvider::new(Vec::<String>::new());
    let strong = ScriptedProvider::new(Vec::<String>::new());
    let client = routed_client(&cheap, &strong);
    let counter = CounterClient::try_new(client.clone()).unwrap();
    let dir = std::env::temp_dir().join(format!("intent-routing-batch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let options = BatchOptions::new(&dir).poll_interval(Duration::from_millis(1));
    let items = ["a", "b"].map(|text| counter.cheap_words_batch_item(text));
    let results = client.batch(items, options).run().await.unwrap();
    for result in results {
        let error = result.into_result().unwrap_err();
        assert_eq!(error.kind(), FailureKind::NotSent);
        assert_eq!(
            error.not_sent(),
            Some(&NotSent::Configuration {
                provider: "cheap".to_owned()
            })
        );
        let message = error.summary();
        assert!(message.contains("batch API"), "{message}");
    }
    // Neither the route nor the job's provider was asked.
    assert_eq!((cheap.request_count(), strong.request_count()), (0, 0));
    assert_eq!(client.total_model_calls(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_client_lacking_a_methods_provider_is_an_error_when_bound() {
    let client = IntentClient::builder()
        .provider_named("cheap", ScriptedProvider::new(Vec::<String>::new()))
        .build()
        .unwrap();
    let error = CounterClient::try_new(client).unwrap_err();
    assert_eq!(error.name, "strong");
    assert_eq!(error.known, ["cheap"]);
    let message = error.to_string();
    assert!(message.contains("CounterClient"), "{message}");
    assert!(message.contains("provider_named(\"strong\""), "{message}");
}

#[test]
#[should_panic(expected = "provider `strong`")]
fn new_panics_on_a_missing_provider() {
    let client = IntentClient::builder()
        .provider_named("cheap", ScriptedProvider::new(Vec::<String>::new()))
        .build()
        .unwrap();
    let _ = CounterClient::new(client);
}

#[test]
fn provider_names_must_be_distinct_and_not_empty() {
    for names in [["a", "a"], ["a", " "]] {
        let error = IntentClient::builder()
            .provider_named(names[0], ScriptedProvider::new(Vec::<String>::new()))
            .provider_named(names[1], ScriptedProvider::new(Vec::<String>::new()))
            .build()
            .unwrap_err();
        assert!(matches!(error, BuildError::ProviderName { .. }), "{error}");
    }
    // Named providers alone: the first is the default.
    let first = Arc::new(ScriptedProvider::new([r#"{"value": 5}"#]));
    let client = IntentClient::builder()
        .shared_provider_named("only", first.clone())
        .build()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let value = runtime.block_on(PlainClient::new(client).words("a")).value;
    assert_eq!(value, Some(5));
}
