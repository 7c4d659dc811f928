//! Streaming: what a caller gains (the first partial long before the whole reply) and
//! what it costs the client (CPU for a reply read in many small pieces).
//!
//! Parts:
//! 1. Latency: a loopback Chat Completions server streams a 2 KB invoice in 20-byte
//!    pieces, one every 4 ms; the time to the first partial value (the invoice number)
//!    against the time to the final, verified value.
//! 2. Client CPU for a 10 KB reply, measured as the CPU time of the thread that runs the
//!    client (`CLOCK_THREAD_CPUTIME_ID`; the servers run on other threads), median of
//!    the runs, each call run as a task of a current-thread runtime: streamed in 5-byte
//!    pieces against the same reply not streamed, through the scripted provider handing
//!    over each piece after a wake-up of its own (the runtime's own cost: partial
//!    reading, events, the attempt loop, a poll of the whole call per piece) and through
//!    the OpenAI provider against a loopback server (the same, plus HTTP, server-sent
//!    events and one JSON chunk of about 150 bytes per piece). Each is also run with the
//!    pieces there together (the scripted provider with no delay; the server writing
//!    every event at once), which separates the cost of a wake-up and a read per piece
//!    from the cost of decoding it.
//!
//! `cargo bench -p intent-rs --bench streaming`; `-- --quick` (or `--test`) runs
//! each part a few times, quickly; `-- --only ROW[,ROW]` runs only those rows
//! (`latency`, `scripted-whole`, `scripted-piece`, `scripted-ready`, `http-whole`,
//! `http-piece`, `http-at-once`, `http-bytes`, `http-bytes-at-once`), for a profiler;
//! `-- --runs N` sets the number of calls per row.
//!
//! The `http-bytes` rows only read the streamed response's bytes with `reqwest` (no
//! event framing, no JSON, no runtime): the floor that the HTTP stack alone puts under
//! the streamed HTTP rows.

mod support;

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use intent_rs::provider::{OpenAi, ScriptedProvider};
use intent_rs::stream::StreamEvent;
use intent_rs::{IntentClient, IntentOptions, Partial};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use support::loopback::thread_cpu;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One line of an invoice.
#[derive(Debug, Deserialize, JsonSchema, Partial)]
struct Line {
    /// What was sold.
    item: String,
    /// Its price in cents.
    cents: i64,
}

/// An invoice.
#[derive(Debug, Deserialize, JsonSchema, Partial)]
struct Invoice {
    /// The invoice number.
    number: String,
    /// The lines, in order.
    lines: Vec<Line>,
}

/// Asserts the call read the invoice whole.
fn check(invoice: Option<Invoice>) {
    let invoice = invoice.expect("a verified invoice");
    assert_eq!(invoice.number, "INV-2026-118");
    assert!(
        invoice
            .lines
            .iter()
            .all(|line| !line.item.is_empty() && line.cents >= 1000)
    );
}

/// An invoice reply of at least `bytes` bytes, in the envelope.
fn invoice_reply(bytes: usize) -> String {
    let mut lines = Vec::new();
    let mut index = 0;
    loop {
        let reply = json!({"value": {"number": "INV-2026-118", "lines": lines}}).to_string();
        if reply.len() >= bytes {
            return reply;
        }
        lines.push(json!({"item": format!("Item number {index}, boxed"), "cents": 1000 + index}));
        index += 1;
    }
}

/// How a loopback connection answers.
#[derive(Clone)]
enum Answer {
    /// One Chat Completions response.
    Whole(String),
    /// The reply in `size`-byte pieces, `delay` apart; with `at_once`, every event in one
    /// write (the client then reads many events per read).
    Streamed {
        reply: String,
        size: usize,
        delay: Duration,
        at_once: bool,
    },
}

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

fn chunk_event(content: Option<&str>, finish: Option<&str>) -> String {
    let delta = content.map_or_else(|| json!({}), |text| json!({"content": text}));
    let chunk = json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": "gpt-bench", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {chunk}\n\n")
}

/// A server on its own runtime (its own threads) answering every request with `answer`.
fn server(answer: Answer) -> String {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("server runtime");
        runtime.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let _ = sender.send(listener.local_addr().expect("address"));
            while let Ok((mut stream, _)) = listener.accept().await {
                let answer = answer.clone();
                tokio::spawn(async move {
                    let mut buffer = Vec::new();
                    let mut chunk = [0u8; 8192];
                    // Keep-alive: one request after another on the connection.
                    loop {
                        let Some(end) = request_end(&buffer) else {
                            match stream.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(read) => buffer.extend_from_slice(&chunk[..read]),
                            }
                            continue;
                        };
                        buffer.drain(..end);
                        if respond(&mut stream, &answer).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
    });
    let address = receiver.recv().expect("server address");
    format!("http://{address}")
}

/// Where the first complete request in `buffer` ends.
fn request_end(buffer: &[u8]) -> Option<usize> {
    let head = buffer.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let text = String::from_utf8_lossy(&buffer[..head]).to_ascii_lowercase();
    let length: usize = text
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    (buffer.len() >= head + length).then_some(head + length)
}

async fn respond(stream: &mut tokio::net::TcpStream, answer: &Answer) -> std::io::Result<()> {
    match answer {
        Answer::Whole(reply) => {
            let body = json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000,
                "model": "gpt-bench",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply, "refusal": null}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 2500, "total_tokens": 2600}
            })
            .to_string();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body.as_bytes()).await
        }
        Answer::Streamed {
            reply,
            size,
            delay,
            at_once,
        } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
            stream.write_all(head.as_bytes()).await?;
            let mut events: Vec<String> = pieces(reply, *size)
                .into_iter()
                .map(|piece| chunk_event(Some(piece), None))
                .collect();
            events.push(chunk_event(None, Some("stop")));
            events.push("data: [DONE]\n\n".to_owned());
            let mut body = String::new();
            for event in events {
                body.push_str(&format!("{:x}\r\n{event}\r\n", event.len()));
                if *at_once {
                    continue;
                }
                stream.write_all(body.as_bytes()).await?;
                body.clear();
                if !delay.is_zero() {
                    tokio::time::sleep(*delay).await;
                }
            }
            stream.write_all(body.as_bytes()).await?;
            stream.write_all(b"0\r\n\r\n").await
        }
    }
}

fn client(provider: impl intent_rs::provider::Provider + 'static) -> IntentClient {
    IntentClient::builder()
        .provider(provider)
        .build()
        .expect("client")
}

fn options() -> IntentOptions<Invoice> {
    IntentOptions::new().max_attempts(1)
}

/// Runs a streamed call to its end; the time of the first partial and of the end.
async fn streamed(client: IntentClient) -> (Option<Duration>, Duration) {
    let started = Instant::now();
    let mut first = None;
    let mut events =
        client.transform_stream("Invoice 2026-118 ...", "Extract the invoice", options());
    while let Some(event) = events.next().await {
        match event {
            StreamEvent::Partial { .. } => {
                first.get_or_insert_with(|| started.elapsed());
            }
            StreamEvent::Final(result) => check(result.value),
            StreamEvent::Retry { problems, .. } => panic!("retry: {problems:?}"),
        }
    }
    (first, started.elapsed())
}

async fn waited(client: IntentClient) {
    let result = client
        .transform("Invoice 2026-118 ...", "Extract the invoice", options())
        .await;
    check(result.value);
}

/// Posts a request to a streaming server and reads the response's bytes, nothing more.
async fn only_bytes(client: reqwest::Client, base: String) {
    let response = client
        .post(format!("{base}/chat/completions"))
        .header("content-type", "application/json")
        .body(r#"{"model":"gpt-bench","stream":true}"#)
        .send()
        .await
        .expect("a response");
    let mut bytes = response.bytes_stream();
    let mut read = 0;
    while let Some(chunk) = bytes.next().await {
        read += chunk.expect("bytes").len();
    }
    assert!(read > 10 * 1024);
}

/// Runs `call` to its end as a task of `runtime`, as an application runs its calls. (A
/// future polled by `block_on` itself pays for every wake-up it gives itself with a trip
/// through the runtime's I/O driver, an `epoll_wait`; a task is put back in the queue.)
fn run<F>(runtime: &tokio::runtime::Runtime, call: F) -> F::Output
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    runtime.block_on(async { tokio::spawn(call).await.expect("the call's task") })
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

/// The value following `name` among the arguments.
fn argument(name: &str) -> Option<String> {
    let mut args = std::env::args().skip_while(|a| a != name);
    args.next()?;
    args.next()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick" || a == "--test");
    let only = argument("--only");
    let wanted = |row: &str| {
        only.as_deref()
            .is_none_or(|only| only.split(',').any(|name| name == row))
    };
    let runs_argument: Option<usize> = argument("--runs").and_then(|runs| runs.parse().ok());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");

    // 1. Latency.
    if wanted("latency") {
        let reply = invoice_reply(2 * 1024);
        let delay = Duration::from_millis(if quick { 1 } else { 4 });
        let base = server(Answer::Streamed {
            reply: reply.clone(),
            size: 20,
            delay,
            at_once: false,
        });
        let openai = client(OpenAi::new("sk-bench").with_base_url(&base));
        let runs = runs_argument.unwrap_or(if quick { 1 } else { 5 });
        let (firsts, wholes): (Vec<_>, Vec<_>) = (0..runs)
            .map(|_| {
                let (first, whole) = run(&runtime, streamed(openai.clone()));
                (first.expect("a partial"), whole)
            })
            .unzip();
        let pieces_count = reply.len().div_ceil(20);
        println!(
            "1. latency: {} B reply, {pieces_count} pieces of 20 B, one every {} ms (median of {runs})",
            reply.len(),
            delay.as_millis()
        );
        println!(
            "   first partial {:>8.1} ms | whole reply, verified {:>8.1} ms",
            median(firsts).as_secs_f64() * 1e3,
            median(wholes).as_secs_f64() * 1e3
        );
    }

    // 2. Client CPU, 10 KB in 5-byte pieces.
    let reply = invoice_reply(10 * 1024);
    let runs = runs_argument.unwrap_or(if quick { 2 } else { 41 });
    let cpu = |row: &str, call: &dyn Fn()| {
        if !wanted(row) {
            return None;
        }
        call(); // warm-up: connections, schemas
        Some(median(
            (0..runs)
                .map(|_| {
                    let before = thread_cpu();
                    call();
                    thread_cpu() - before
                })
                .collect(),
        ))
    };
    println!(
        "2. client CPU for a {} B reply (thread CPU time, median of {runs})",
        reply.len()
    );
    let scripted_whole = cpu("scripted-whole", &|| {
        let client = client(ScriptedProvider::new([reply.as_str()]));
        run(&runtime, waited(client));
    });
    // Each piece handed over in its own turn of the runtime: the worst case, as if every
    // 5-byte piece came in its own network read.
    let scripted_streamed = cpu("scripted-piece", &|| {
        let client = client(
            ScriptedProvider::new([reply.as_str()]).with_stream_chunks(5, Some(Duration::ZERO)),
        );
        run(&runtime, streamed(client));
    });
    let scripted_ready = cpu("scripted-ready", &|| {
        let client = client(ScriptedProvider::new([reply.as_str()]).with_stream_chunks(5, None));
        run(&runtime, streamed(client));
    });
    let base_whole = server(Answer::Whole(reply.clone()));
    let base_streamed = server(Answer::Streamed {
        reply: reply.clone(),
        size: 5,
        delay: Duration::ZERO,
        at_once: false,
    });
    let base_at_once = server(Answer::Streamed {
        reply: reply.clone(),
        size: 5,
        delay: Duration::ZERO,
        at_once: true,
    });
    let http_whole_client = client(OpenAi::new("sk-bench").with_base_url(&base_whole));
    let http_streamed_client = client(OpenAi::new("sk-bench").with_base_url(&base_streamed));
    let http_at_once_client = client(OpenAi::new("sk-bench").with_base_url(&base_at_once));
    let http_whole = cpu("http-whole", &|| {
        run(&runtime, waited(http_whole_client.clone()))
    });
    let http_streamed = cpu("http-piece", &|| {
        run(&runtime, streamed(http_streamed_client.clone()));
    });
    let http_at_once = cpu("http-at-once", &|| {
        run(&runtime, streamed(http_at_once_client.clone()));
    });
    let raw = reqwest::Client::new();
    let http_bytes = cpu("http-bytes", &|| {
        run(&runtime, only_bytes(raw.clone(), base_streamed.clone()));
    });
    let http_bytes_at_once = cpu("http-bytes-at-once", &|| {
        run(&runtime, only_bytes(raw.clone(), base_at_once.clone()));
    });
    let micros = |time: Option<Duration>| {
        time.map_or_else(
            || format!("{:>8}", "-"),
            |time| format!("{:>8.1}", time.as_secs_f64() * 1e6),
        )
    };
    for (name, whole, streamed) in [
        (
            "scripted, piece by piece",
            scripted_whole,
            scripted_streamed,
        ),
        ("scripted, pieces together", scripted_whole, scripted_ready),
        ("OpenAI HTTP, event by event", http_whole, http_streamed),
        ("OpenAI HTTP, events at once", http_whole, http_at_once),
        ("HTTP bytes only, by event", http_whole, http_bytes),
        ("HTTP bytes only, at once", http_whole, http_bytes_at_once),
    ] {
        if whole.is_none() && streamed.is_none() {
            continue;
        }
        let ratio = match (whole, streamed) {
            (Some(whole), Some(streamed)) => {
                format!("{:.2}x", streamed.as_secs_f64() / whole.as_secs_f64())
            }
            _ => "-".to_owned(),
        };
        println!(
            "   {name:<28} not streamed {} µs | streamed in 5 B pieces {} µs | {ratio}",
            micros(whole),
            micros(streamed),
        );
    }
}
