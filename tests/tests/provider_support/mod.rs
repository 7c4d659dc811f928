//! Helpers shared by the provider tests: raw TCP servers for failures `wiremock` cannot
//! produce, a log capture, and the OpenAI request-schema check.

#![allow(dead_code)] // each test crate uses a different subset

use std::fmt::{self, Write as _};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A key distinctive enough that finding it anywhere means it leaked.
pub const SECRET_KEY: &str = "sk-test-LEAKCHECK-5f3a9c1e7d";

// ---------------------------------------------------------------------------------------
// Raw servers

async fn listener() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

/// Reads one HTTP/1.1 request (headers and `content-length` body); `None` at end of stream.
pub async fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Vec<u8>> {
    loop {
        if let Some(end) = find(buffer, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse().ok())
                .unwrap_or(0);
            let total = end + 4 + length;
            if buffer.len() >= total {
                let request: Vec<u8> = buffer.drain(..total).collect();
                return Some(request);
            }
        }
        let mut chunk = [0u8; 4096];
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A server that reads each request and closes the connection without answering.
pub async fn closes_without_reply() -> String {
    let (listener, addr) = listener().await;
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buffer = Vec::new();
            let _ = read_request(&mut stream, &mut buffer).await;
            drop(stream);
        }
    });
    format!("http://{addr}")
}

/// A server that starts a 200 reply, sends half its promised body, and hangs up.
pub async fn drops_mid_reply() -> String {
    let (listener, addr) = listener().await;
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buffer = Vec::new();
            let _ = read_request(&mut stream, &mut buffer).await;
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 400\r\n\r\n";
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream
                .write_all(br#"{"choices":[{"message":{"content":"hal"#)
                .await;
            let _ = stream.shutdown().await;
        }
    });
    format!("http://{addr}")
}

/// A keep-alive server answering every request with `body`; counts accepted connections.
pub async fn keep_alive_server(body: Value) -> (String, Arc<AtomicUsize>) {
    let (listener, addr) = listener().await;
    let connections = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&connections);
    let body = body.to_string();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            let body = body.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                while read_request(&mut stream, &mut buffer).await.is_some() {
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if stream.write_all(reply.as_bytes()).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    (format!("http://{addr}"), connections)
}

/// A base URL where nothing listens.
pub async fn refuses_connections() -> String {
    let (listener, addr) = listener().await;
    drop(listener);
    format!("http://{addr}")
}

// ---------------------------------------------------------------------------------------
// Log capture

/// Every event (and span field) logged by the test process, as text.
#[derive(Clone, Default)]
pub struct CapturedLogs(Arc<Mutex<Vec<String>>>);

impl CapturedLogs {
    /// The process-wide capture, installed as the global subscriber on first use.
    ///
    /// Global rather than per-thread: `tracing` caches whether a log site is enabled, and a
    /// per-thread subscriber raced with parallel tests and missed lines. Every test's lines
    /// land in it, which only widens the leak checks.
    pub fn start() -> Self {
        static LOGS: OnceLock<CapturedLogs> = OnceLock::new();
        LOGS.get_or_init(|| {
            let logs = Self::default();
            tracing::subscriber::set_global_default(logs.clone()).unwrap();
            logs
        })
        .clone()
    }

    /// All lines captured so far, joined.
    pub fn text(&self) -> String {
        self.0.lock().unwrap().join("\n")
    }

    fn push(&self, line: String) {
        self.0.lock().unwrap().push(line);
    }
}

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
}

impl Subscriber for CapturedLogs {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut line = Line(format!("span {} ", span.metadata().name()));
        span.record(&mut line);
        self.push(line.0);
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, values: &Record<'_>) {
        let mut line = Line(String::new());
        values.record(&mut line);
        self.push(line.0);
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut line = Line(format!(
            "{} {} ",
            event.metadata().level(),
            event.metadata().target()
        ));
        event.record(&mut line);
        self.push(line.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

// ---------------------------------------------------------------------------------------
// OpenAI request schema

/// The top-level fields the OpenAI provider may send.
pub const OPENAI_FIELDS: &[&str] = &[
    "model",
    "messages",
    "max_completion_tokens",
    "temperature",
    "response_format",
];

fn openai_request_validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Value = serde_json::from_str(include_str!(
            "../../fixtures/openai-chat-request.schema.json"
        ))
        .unwrap();
        jsonschema::validator_for(&schema).unwrap()
    })
}

/// The schema errors of `body` as a `CreateChatCompletionRequest`, as text.
pub fn openai_schema_errors(body: &Value) -> Vec<String> {
    openai_request_validator()
        .iter_errors(body)
        .map(|err| format!("{err} at {}", err.instance_path()))
        .collect()
}

/// Asserts `body` is a valid `CreateChatCompletionRequest` with only `allowed` top-level
/// fields, and that any schema name matches `[a-zA-Z0-9_-]{1,64}`.
pub fn assert_valid_chat_request(body: &Value, allowed: &[&str]) {
    let errors = openai_schema_errors(body);
    assert!(
        errors.is_empty(),
        "request breaks the OpenAI schema: {errors:#?}\n{body:#}"
    );
    for key in body.as_object().unwrap().keys() {
        assert!(
            allowed.contains(&key.as_str()),
            "unexpected top-level field `{key}`"
        );
    }
    if let Some(name) = body.pointer("/response_format/json_schema/name") {
        let name = name.as_str().unwrap();
        assert!((1..=64).contains(&name.len()), "{name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }
}

/// The JSON bodies of every request `server` received.
pub async fn received_bodies(server: &wiremock::MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap())
        .collect()
}

// ---------------------------------------------------------------------------------------
// Oversized replies

/// A server answering every request with a 200 whose body never ends (JSON whitespace,
/// chunk after chunk), or announces `content_length` bytes and then sends the same; counts
/// the body bytes it managed to write, so a test can see when the client stopped reading.
pub async fn endless_body(content_length: Option<u64>) -> (String, Arc<AtomicUsize>) {
    let (listener, addr) = listener().await;
    let written = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&written);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let counter = Arc::clone(&counter);
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                if read_request(&mut stream, &mut buffer).await.is_none() {
                    return;
                }
                let framing = match content_length {
                    Some(length) => format!("content-length: {length}"),
                    None => "transfer-encoding: chunked".to_owned(),
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-request-id: req-endless\r\n{framing}\r\n\r\n"
                );
                if stream.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let piece = vec![b' '; 64 * 1024];
                loop {
                    let sent = match content_length {
                        Some(_) => stream.write_all(&piece).await,
                        None => {
                            let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
                            chunk.extend_from_slice(&piece);
                            chunk.extend_from_slice(b"\r\n");
                            stream.write_all(&chunk).await
                        }
                    };
                    if sent.is_err() {
                        break;
                    }
                    counter.fetch_add(piece.len(), Ordering::SeqCst);
                }
            });
        }
    });
    (format!("http://{addr}"), written)
}
