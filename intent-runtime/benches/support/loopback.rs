//! An in-process loopback HTTP/1.1 server that answers every request with one canned Chat
//! Completions reply (or one computed from the request), optionally after a fixed delay,
//! plus the process measurements the HTTP benches report (peak RSS, CPU time by thread,
//! percentiles).
//!
//! The server runs on its own single-threaded runtime in a thread named
//! [`SERVER_THREAD_NAME`], so its CPU time can be told apart from the client's.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpSocket;
use tokio::sync::oneshot;

/// The name of the server's thread (at most 15 bytes: Linux cuts `comm` there).
pub const SERVER_THREAD_NAME: &str = "loopback-server";

/// The listen backlog: above the largest burst of simultaneous connects (1,000), so no SYN
/// is dropped and retried a second later.
const LISTEN_BACKLOG: u32 = 4096;

/// A running loopback server; stopped when dropped.
pub struct Loopback {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Loopback {
    /// Starts a server answering every request with `reply` (a JSON body), `delay` after
    /// the request body was read.
    pub fn start(reply: String, delay: Option<Duration>) -> Loopback {
        Loopback::start_with(reply, delay, || {})
    }

    /// [`Loopback::start`], running `on_thread_start` first on the server's thread (the
    /// allocation bench uses it to leave the server's allocations uncounted).
    pub fn start_with(reply: String, delay: Option<Duration>, on_thread_start: fn()) -> Loopback {
        let reply = Bytes::from(reply);
        Loopback::start_inner(Reply::Canned(reply), delay, on_thread_start)
    }

    /// Starts a server answering each request with what `reply` returns for its body.
    pub fn start_fn(reply: impl Fn(&[u8]) -> String + Send + Sync + 'static) -> Loopback {
        Loopback::start_inner(Reply::Computed(Arc::new(reply)), None, || {})
    }

    /// Starts a server answering each request with what `reply` returns for its method,
    /// path and body (the batch bench's Batch API).
    pub fn start_routed(
        reply: impl Fn(&str, &str, &[u8]) -> String + Send + Sync + 'static,
    ) -> Loopback {
        Loopback::start_inner(Reply::Routed(Arc::new(reply)), None, || {})
    }

    /// [`Loopback::start_routed`], each reply sent `delay` after the request was read.
    pub fn start_routed_after(
        delay: Duration,
        reply: impl Fn(&str, &str, &[u8]) -> String + Send + Sync + 'static,
    ) -> Loopback {
        Loopback::start_inner(Reply::Routed(Arc::new(reply)), Some(delay), || {})
    }

    fn start_inner(reply: Reply, delay: Option<Duration>, on_thread_start: fn()) -> Loopback {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(SERVER_THREAD_NAME.to_owned())
            .spawn(move || {
                on_thread_start();
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("server runtime");
                runtime.block_on(serve(reply, delay, addr_tx, stop_rx));
            })
            .expect("server thread");
        let addr = addr_rx.recv().expect("the server reports its address");
        Loopback {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// The base URL an OpenAI-style provider is given (`http://127.0.0.1:port/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The Chat Completions endpoint.
    pub fn completions_url(&self) -> String {
        format!("{}/chat/completions", self.base_url())
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Computes a reply body from a request body.
type ReplyFn = dyn Fn(&[u8]) -> String + Send + Sync;

/// Computes a reply body from a request's method, path and body.
type RoutedFn = dyn Fn(&str, &str, &[u8]) -> String + Send + Sync;

/// What the server answers.
#[derive(Clone)]
enum Reply {
    /// The same body every time.
    Canned(Bytes),
    /// A body computed from the request's body.
    Computed(Arc<ReplyFn>),
    /// A body computed from the request's method, path and body.
    Routed(Arc<RoutedFn>),
}

async fn serve(
    reply: Reply,
    delay: Option<Duration>,
    addr_tx: std::sync::mpsc::Sender<SocketAddr>,
    mut stop: oneshot::Receiver<()>,
) {
    let socket = TcpSocket::new_v4().expect("socket");
    socket.set_reuseaddr(true).expect("reuseaddr");
    socket
        .bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .expect("bind");
    let listener = socket.listen(LISTEN_BACKLOG).expect("listen");
    addr_tx
        .send(listener.local_addr().expect("local addr"))
        .expect("report address");
    loop {
        let stream = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => continue,
            },
        };
        let _ = stream.set_nodelay(true);
        let reply = reply.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let reply = reply.clone();
                async move {
                    let method = request.method().as_str().to_owned();
                    let path = request.uri().path().to_owned();
                    // Read the whole request as a real server would before answering.
                    let body = request.into_body().collect().await;
                    let reply = match reply {
                        Reply::Canned(reply) => reply,
                        Reply::Computed(reply) => {
                            let body = body.map(|b| b.to_bytes()).unwrap_or_default();
                            Bytes::from(reply(&body))
                        }
                        Reply::Routed(reply) => {
                            let body = body.map(|b| b.to_bytes()).unwrap_or_default();
                            Bytes::from(reply(&method, &path, &body))
                        }
                    };
                    if let Some(delay) = delay {
                        tokio::time::sleep(delay).await;
                    }
                    Ok::<_, Infallible>(
                        Response::builder()
                            .header("content-type", "application/json")
                            .header("x-request-id", "req_bench")
                            .body(Full::new(reply))
                            .expect("response"),
                    )
                }
            });
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// A Chat Completions reply whose message content is `content`.
pub fn chat_completion(content: &str) -> String {
    serde_json::json!({
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1_764_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": null},
            "logprobs": null,
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 480, "completion_tokens": 610, "total_tokens": 1090}
    })
    .to_string()
}

/// An Azure OpenAI Chat Completions reply whose message content is `content`: the Chat
/// Completions shape with the content filter's verdicts on the prompt and the choice (the
/// reply of example B1 in `tests/tests/provider_azure.rs`).
pub fn azure_chat_completion(content: &str) -> String {
    let clean = serde_json::json!({
        "hate": {"filtered": false, "severity": "safe"},
        "self_harm": {"filtered": false, "severity": "safe"},
        "sexual": {"filtered": false, "severity": "safe"},
        "violence": {"filtered": false, "severity": "safe"}
    });
    serde_json::json!({
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1_764_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": clean}],
        "choices": [{
            "index": 0,
            "finish_reason": "stop",
            "logprobs": null,
            "message": {"role": "assistant", "content": content, "refusal": null},
            "content_filter_results": clean
        }],
        "system_fingerprint": "fp_bench",
        "usage": {"prompt_tokens": 480, "completion_tokens": 610, "total_tokens": 1090,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0}}
    })
    .to_string()
}

/// An OpenAI Responses API reply (a `response` object) with one message whose output text
/// is `content` (the shape of example C1 in `tests/tests/provider_responses.rs`).
pub fn responses_reply(content: &str) -> String {
    serde_json::json!({
        "id": "resp_bench", "object": "response", "created_at": 1_764_000_000,
        "status": "completed", "error": null, "incomplete_details": null,
        "instructions": null, "max_output_tokens": null,
        "model": "gpt-4o-mini-2024-07-18",
        "output": [{
            "id": "msg_bench", "type": "message", "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": content}]
        }],
        "parallel_tool_calls": true, "previous_response_id": null, "store": false,
        "temperature": 1.0, "tool_choice": "auto", "tools": [], "top_p": 1.0, "metadata": {},
        "usage": {"input_tokens": 480, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 610, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 1090}
    })
    .to_string()
}

/// A Gemini `generateContent` reply with one candidate whose text is `content` (the shape
/// of example A1 in `tests/tests/provider_gemini.rs`).
pub fn gemini_reply(content: &str) -> String {
    serde_json::json!({
        "candidates": [{
            "content": {"role": "model", "parts": [{"text": content}]},
            "finishReason": "STOP",
            "index": 0
        }],
        "usageMetadata": {
            "promptTokenCount": 480, "candidatesTokenCount": 610, "thoughtsTokenCount": 0,
            "totalTokenCount": 1090, "cachedContentTokenCount": 0,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 480}]
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "bench-response"
    })
    .to_string()
}

/// The HTTP providers the benches call through a loopback server, each answered in its
/// own API's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `OpenAi`, Chat Completions.
    OpenAi,
    /// `AzureOpenAi`, the v1 API of a resource (Chat Completions with an `api-key`).
    AzureOpenAi,
    /// `OpenAiResponses`, the Responses API.
    OpenAiResponses,
    /// `Gemini`, `generateContent`.
    Gemini,
}

impl Api {
    /// Every provider, OpenAI's Chat Completions first (the reference row).
    pub const ALL: [Api; 4] = [
        Api::OpenAi,
        Api::AzureOpenAi,
        Api::OpenAiResponses,
        Api::Gemini,
    ];

    /// The provider's type name.
    pub fn label(self) -> &'static str {
        match self {
            Api::OpenAi => "OpenAi",
            Api::AzureOpenAi => "AzureOpenAi",
            Api::OpenAiResponses => "OpenAiResponses",
            Api::Gemini => "Gemini",
        }
    }

    /// The path the provider posts to.
    pub fn path(self) -> &'static str {
        match self {
            Api::OpenAi => "/v1/chat/completions",
            Api::AzureOpenAi => "/openai/v1/chat/completions",
            Api::OpenAiResponses => "/v1/responses",
            Api::Gemini => "/v1beta/models/gemini-2.5-flash:generateContent",
        }
    }

    /// The provider, pointed at `server`.
    pub fn provider(self, server: &Loopback) -> Arc<dyn intent_rs::provider::Provider> {
        use intent_rs::provider::{AzureOpenAi, Gemini, OpenAi, OpenAiResponses};
        let root = format!("http://{}", server.addr);
        match self {
            Api::OpenAi => Arc::new(OpenAi::new("sk-bench").with_base_url(server.base_url())),
            Api::AzureOpenAi => Arc::new(AzureOpenAi::new(root, "bench-key", "gpt-4o-mini")),
            Api::OpenAiResponses => {
                Arc::new(OpenAiResponses::new("sk-bench").with_base_url(server.base_url()))
            }
            Api::Gemini => {
                Arc::new(Gemini::new("bench-key").with_base_url(format!("{root}/v1beta")))
            }
        }
    }

    /// A successful reply of the provider's API whose text is `content`.
    pub fn reply(self, content: &str) -> String {
        match self {
            Api::OpenAi => chat_completion(content),
            Api::AzureOpenAi => azure_chat_completion(content),
            Api::OpenAiResponses => responses_reply(content),
            Api::Gemini => gemini_reply(content),
        }
    }
}

/// Peak resident memory of this process since the last [`reset_peak_rss`], in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Resets the peak-RSS mark to the current RSS (Linux: `5` into `/proc/self/clear_refs`).
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// CPU time used so far (user + system): by the whole process, and by the server thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuTimes {
    /// Every thread of the process.
    pub process: Duration,
    /// The loopback server's thread(s).
    pub server: Duration,
}

impl CpuTimes {
    /// Reads `/proc/self/stat` and `/proc/self/task/*/stat` (clock ticks, 100 per second
    /// on Linux; the process figure includes threads that have ended).
    pub fn now() -> CpuTimes {
        let process = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|stat| stat_cpu(&stat).map(|(_, used)| used))
            .unwrap_or_default();
        let mut server = Duration::ZERO;
        if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
            for task in tasks.flatten() {
                let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
                    continue;
                };
                if let Some((comm, used)) = stat_cpu(&stat)
                    && comm == SERVER_THREAD_NAME
                {
                    server += used;
                }
            }
        }
        CpuTimes { process, server }
    }

    /// What was used between `earlier` and `self`.
    pub fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes {
            process: self.process.saturating_sub(earlier.process),
            server: self.server.saturating_sub(earlier.server),
        }
    }

    /// The process's CPU time less the server's: the client's share.
    pub fn client(self) -> Duration {
        self.process.saturating_sub(self.server)
    }
}

/// The command name and the user + system CPU time of a `stat` line.
fn stat_cpu(stat: &str) -> Option<(&str, Duration)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?;
    let fields: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // After `comm` the first field is the state (field 3); utime and stime are fields 14
    // and 15 (1-based), so indexes 11 and 12 here.
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    Some((comm, Duration::from_millis(ticks * 10)))
}

/// The CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`, nanoseconds).
pub fn thread_cpu() -> Duration {
    let mut spec = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `spec` is a valid, writable timespec; the clock id is a constant.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut spec) };
    Duration::new(spec.tv_sec as u64, spec.tv_nsec as u32)
}

/// The `p`-th percentile (0..=100) of sorted `values`, nearest rank.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
