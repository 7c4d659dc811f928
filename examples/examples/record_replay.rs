//! Record and replay: real exchanges recorded once to a cassette, then replayed with no
//! model and no key, each replayed answer checked against today's type.
//!
//! `cargo run --example record_replay` runs offline: it starts a small server on the
//! loopback interface that speaks OpenAI's Chat Completions, records two calls through
//! the real OpenAI provider into a cassette (JSON Lines), stops the server, and replays
//! the same calls from the cassette. It then asks one call the cassette does not hold,
//! to show the error that names what differs. With a provider configured in the
//! environment (as for every example), the calls are recorded from that model instead.

use std::path::PathBuf;
use std::sync::Arc;

use intent_rs::provider::{self, Cassette, CassetteMode, OpenAi, Provider, Sanitizer};
use intent_rs::{AIResult, IntentClient, StrictCompatible, intents};
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How urgent a ticket is.
#[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
enum Priority {
    Low,
    High,
}

/// A support ticket.
#[derive(Debug, Deserialize, JsonSchema, StrictCompatible)]
struct Ticket {
    /// A short title.
    title: String,
    /// How urgent it is.
    priority: Priority,
}

/// Support's intents.
#[intents]
trait Support {
    /// A ticket from a customer's email.
    #[intent("Turn the email into a support ticket")]
    async fn ticket(&self, email: &str) -> AIResult<Ticket>;
}

/// The ticket in one line, or why there is none.
fn shown(result: &AIResult<Ticket>) -> String {
    match &result.value {
        Some(ticket) => format!(
            "{:?}: {} (replayed: {})",
            ticket.priority, ticket.title, result.attempts[0].replayed
        ),
        None => result.failure_summary(),
    }
}

/// A stand-in for the real API, in-process: answers every Chat Completions request with
/// a ticket. Returns its base URL and the task serving it.
async fn loopback_openai() -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    let task = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buffer = [0u8; 8192];
                // Read the head and the body its content-length promises.
                loop {
                    let Ok(read) = socket.read(&mut buffer).await else {
                        return;
                    };
                    if read == 0 {
                        return;
                    }
                    request.extend_from_slice(&buffer[..read]);
                    let text = String::from_utf8_lossy(&request);
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let urgent = String::from_utf8_lossy(&request).contains("today");
                let answer = if urgent {
                    r#"{"value": {"title": "Site down since this morning", "priority": "High"}}"#
                } else {
                    r#"{"value": {"title": "Question about an invoice", "priority": "Low"}}"#
                };
                let body = serde_json::json!({
                    "id": "chatcmpl-loopback", "object": "chat.completion", "created": 1,
                    "model": "gpt-4o-mini-2024-07-18",
                    "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": answer, "refusal": null}}],
                    "usage": {"prompt_tokens": 90, "completion_tokens": 14, "total_tokens": 104}
                })
                .to_string();
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-request-id: req_1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    Ok((url, task))
}

const EMAILS: [&str; 2] = [
    "Hello, the site has been down since this morning and we need it today.",
    "Hi, could you explain line 3 of invoice 2026-118?",
];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path: PathBuf = std::env::temp_dir().join(format!(
        "intent-example-record-replay-{}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    // A key that must never reach the cassette.
    let key = "sk-example-0123456789abcdef-NOT-A-REAL-KEY";

    // 1. Record: the cassette does not exist yet, so `Record` asks the model: the one
    // the environment names (as every example does), else the loopback stand-in.
    let (url, server) = loopback_openai().await?;
    let model: Arc<dyn Provider> = match provider::from_env() {
        Ok(real) => {
            println!(
                "(recording from {}, model {})",
                real.name(),
                real.default_model()
            );
            real
        }
        Err(_) => Arc::new(OpenAi::new(key).with_base_url(&url)),
    };
    let recorder = Cassette::new(&path)
        .sanitizer(Sanitizer::new().secret(key))
        .wrap(Arc::clone(&model))?;
    let support = SupportClient::new(IntentClient::builder().provider(recorder).build()?);
    println!("Recording into {}:", path.display());
    for email in EMAILS {
        println!("  {}", shown(&support.ticket(email).await));
    }
    server.abort();

    let cassette = std::fs::read_to_string(&path)?;
    println!(
        "\nThe cassette: {} exchanges, {} bytes, the key in it: {}",
        cassette.lines().count(),
        cassette.len(),
        cassette.contains(key)
    );
    if let Some(line) = cassette.lines().next() {
        let excerpt: String = line.chars().take(220).collect();
        println!("  {excerpt}…");
    }

    // 2. Replay: the server is gone and replay-only sends nothing, so no key is needed.
    let replayer = Cassette::new(&path)
        .mode(CassetteMode::ReplayOnly)
        .wrap(model)?;
    let support = SupportClient::new(IntentClient::builder().provider(replayer).build()?);
    println!("\nReplaying, in the other order:");
    for email in EMAILS.iter().rev() {
        println!("  {}", shown(&support.ticket(email).await));
    }

    // 3. A call the cassette does not hold fails, naming the nearest exchange.
    let missing = support.ticket("Hello, the site is slow.").await;
    println!(
        "\nA call that was never recorded:\n  {}",
        missing.failure_summary()
    );

    let _ = std::fs::remove_file(&path);
    Ok(())
}
