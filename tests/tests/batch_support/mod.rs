//! Loopback servers speaking OpenAI's Batch API, Anthropic's Message Batches and Gemini's
//! Batch Mode, with the
//! behaviours the batch tests need: results out of order, per-item errors, a failed batch,
//! cancellation, batches held back until released, and a record of every submitted
//! request.

#![allow(dead_code)] // each test crate uses a different subset

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use intent_rs::IntentClient;
use intent_rs::provider::{Anthropic, Gemini, OpenAi};
use serde_json::{Value, json};
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// A test key distinctive enough that finding it anywhere means it leaked.
/// A client of OpenAI's Batch API at the fake `fake`.
pub fn openai_client(fake: &Fake) -> IntentClient {
    let provider = OpenAi::new(KEY)
        .with_base_url(format!("{}/v1", fake.server.uri()))
        .with_model("gpt-test");
    IntentClient::builder().provider(provider).build().unwrap()
}

/// A client of Anthropic's Message Batches at the fake `fake`.
pub fn anthropic_client(fake: &Fake) -> IntentClient {
    let provider = Anthropic::new(KEY)
        .with_base_url(fake.server.uri())
        .with_model("claude-test");
    IntentClient::builder().provider(provider).build().unwrap()
}

pub const KEY: &str = "sk-batch-LEAKCHECK-9d1e";

/// How a fake answers one request: `Ok(text)` for a reply, `Err((status, message))` for a
/// per-item error (on OpenAI, status 0 is an `error` line of the error file rather than a
/// response with that status).
pub type Answer = Arc<dyn Fn(&Value) -> Result<String, (u16, String)> + Send + Sync>;

/// The last user turn of a Chat Completions or Messages body.
pub fn last_user(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|messages| messages.iter().rev().find(|m| m["role"] == "user"))
        .map(|message| match &message["content"] {
            Value::String(text) => text.clone(),
            blocks => blocks[0]["text"].as_str().unwrap_or_default().to_owned(),
        })
        .unwrap_or_default()
}

/// Whether the body continues an earlier attempt.
pub fn is_retry(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .is_some_and(|messages| messages.iter().any(|m| m["role"] == "assistant"))
}

#[derive(Default)]
pub struct FakeState {
    /// Every submitted line, by batch, in submission order.
    pub batches: Vec<(String, Vec<Value>)>,
    files: HashMap<String, Vec<u8>>,
    status: HashMap<String, String>,
    outputs: HashMap<String, (Vec<Value>, Vec<Value>)>,
    looks: HashMap<String, u32>,
    pub canceled: Vec<String>,
    pub uploads: usize,
    pub polls: usize,
    /// Bodies of live Chat Completions / Messages calls.
    pub live: Vec<Value>,
    /// Each submission's body (OpenAI's upload, Anthropic's create): its length, and the
    /// `content-length` it was announced with (none when sent chunked).
    pub submitted: Vec<(usize, Option<usize>)>,
    /// Reads of a batch's results (OpenAI's output and error files, Anthropic's results).
    pub result_reads: usize,
    /// Each batch's metadata (OpenAI) and creation time (seconds since the epoch).
    metadata: HashMap<String, Value>,
    created_at: HashMap<String, u64>,
    /// When each batch creation and each look at a batch came (OpenAI).
    pub creates_at: Vec<std::time::Instant>,
    pub looks_at: Vec<std::time::Instant>,
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn announced_length(request: &Request) -> Option<usize> {
    request
        .headers
        .get("content-length")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
}

/// What a fake does beyond answering.
#[derive(Clone, Default)]
pub struct Behaviour {
    /// Results in reverse order of submission.
    pub reversed: bool,
    /// Batches stay in progress until `release` is set...
    pub hold: Option<Arc<AtomicBool>>,
    /// ...but for the first `hold_after`.
    pub hold_after: usize,
    /// Looks before a batch ends.
    pub looks: u32,
    /// The batch fails as a whole (OpenAI: validation failed).
    pub fail: bool,
    /// On cancel, the batch ends with only the first `answered_on_cancel` items answered.
    pub answered_on_cancel: usize,
    /// While set, the reply to a batch's creation is held back (the batch is created at
    /// once): a client stopped meanwhile never learns its id.
    pub stall_creates: Option<Arc<AtomicBool>>,
    /// The provider has forgotten this many of the first batches and their results (404),
    /// as it does some days after a batch ended.
    pub forget: Option<Arc<AtomicUsize>>,
    /// Gemini: a done batch shows its results only under the operation's `response`,
    /// not under `metadata.output`.
    pub results_in_response: bool,
    /// Gemini: a done batch's results are in a responses file to download (JSONL).
    pub results_in_file: bool,
    /// OpenAI: the first batch creation and the first look at a batch are answered 429
    /// with this `retry-after`.
    pub busy_once: Option<&'static str>,
}

impl Behaviour {
    /// Whether batch `id` is held back.
    fn holds(&self, state: &FakeState, id: &str) -> bool {
        let index = state.batches.iter().position(|(batch, _)| batch == id);
        self.hold
            .as_ref()
            .is_some_and(|hold| !hold.load(Ordering::SeqCst))
            && index.is_some_and(|index| index >= self.hold_after)
    }

    /// Whether `path` names a batch the provider has forgotten, or one of its files.
    fn forgets(&self, state: &FakeState, path: &str) -> bool {
        let count = self
            .forget
            .as_ref()
            .map_or(0, |forget| forget.load(Ordering::SeqCst));
        state.batches.iter().take(count).any(|(id, _)| {
            path.split('/').any(|segment| {
                segment == id
                    || segment == format!("file-out-{id}")
                    || segment == format!("file-err-{id}")
            })
        })
    }

    /// The reply to a creation, held back while `stall_creates` is set.
    fn created(&self, reply: ResponseTemplate) -> ResponseTemplate {
        match &self.stall_creates {
            Some(stall) if stall.load(Ordering::SeqCst) => {
                reply.set_delay(std::time::Duration::from_secs(60))
            }
            _ => reply,
        }
    }
}

/// Batches listed newest first, `PAGE` to a page from the one after `after`, as the
/// providers list them.
fn page<'a>(
    ids: impl DoubleEndedIterator<Item = &'a String>,
    after: Option<&str>,
) -> (Vec<String>, bool) {
    let newest_first: Vec<&String> = ids.rev().collect();
    let start = match after {
        Some(after) => newest_first
            .iter()
            .position(|id| *id == after)
            .map_or(newest_first.len(), |at| at + 1),
        None => 0,
    };
    let rest = &newest_first[start.min(newest_first.len())..];
    let page: Vec<String> = rest.iter().take(PAGE).map(|id| (*id).clone()).collect();
    (page, rest.len() > PAGE)
}

/// Batches on one page of a list: small, so that a search reads several pages.
const PAGE: usize = 1;

fn query(request: &Request, name: &str) -> Option<String> {
    request
        .url
        .query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

pub struct Fake {
    pub server: MockServer,
    pub state: Arc<Mutex<FakeState>>,
}

impl Fake {
    pub fn state(&self) -> std::sync::MutexGuard<'_, FakeState> {
        self.state.lock().unwrap()
    }

    /// Every custom id submitted, across batches.
    pub fn submitted_ids(&self) -> Vec<String> {
        self.state()
            .batches
            .iter()
            .flat_map(|(_, lines)| {
                lines.iter().map(|l| {
                    l["custom_id"]
                        .as_str()
                        .or(l["metadata"]["key"].as_str())
                        .unwrap()
                        .to_owned()
                })
            })
            .collect()
    }

    /// The bodies submitted in batch `index` (OpenAI's `body`, Anthropic's `params`).
    pub fn bodies(&self, index: usize) -> Vec<Value> {
        self.state().batches[index]
            .1
            .iter()
            .map(|line| {
                line.get("body")
                    .or_else(|| line.get("params"))
                    .or_else(|| line.get("request"))
                    .cloned()
                    .unwrap()
            })
            .collect()
    }
}

fn jsonl(lines: &[Value]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn lines_of(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
        .filter(|value| value.get("custom_id").is_some())
        .collect()
}

// ---------------------------------------------------------------------------------------
// OpenAI

struct OpenAiFake {
    state: Arc<Mutex<FakeState>>,
    answer: Answer,
    behaviour: Behaviour,
    base: String,
    /// The header the key must come in, and its value.
    auth: (&'static str, String),
    /// The `url` every line and the batch's `endpoint` must name.
    line_url: &'static str,
}

/// The completion of a request: when it asks for log-probabilities, `text` is written
/// `token=probability,token=probability` (most likely first): the reply is the first
/// token, with those alternatives.
fn completion_for(body: &Value, text: &str) -> Value {
    let mut reply = completion(text);
    if body["logprobs"] == true {
        let top: Vec<Value> = text
            .split(',')
            .filter_map(|pair| pair.split_once('='))
            .map(|(token, p)| json!({"token": token, "logprob": p.parse::<f64>().unwrap().ln(), "bytes": null}))
            .collect();
        let first = top[0].clone();
        reply["choices"][0]["message"]["content"] = first["token"].clone();
        reply["choices"][0]["logprobs"] = json!({"content": [{"token": first["token"], "logprob": first["logprob"], "bytes": null, "top_logprobs": top}]});
    }
    reply
}

fn completion(text: &str) -> Value {
    json!({
        "id": "chatcmpl-b", "object": "chat.completion", "model": "gpt-test-2025",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": null}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24}
    })
}

/// OpenAI's 429, asking the client to wait `retry_after` seconds.
fn busy(retry_after: &str) -> ResponseTemplate {
    ResponseTemplate::new(429)
        .insert_header("retry-after", retry_after)
        .set_body_json(json!({"error": {"message": "Too many requests", "type": "requests", "param": null, "code": null}}))
}

impl OpenAiFake {
    fn finish(&self, state: &mut FakeState, id: &str, answered: Option<usize>) {
        let lines = state
            .batches
            .iter()
            .find(|(batch, _)| batch == id)
            .map(|(_, lines)| lines.clone())
            .unwrap_or_default();
        let mut output = Vec::new();
        let mut errors = Vec::new();
        for (index, line) in lines.iter().enumerate() {
            let custom_id = line["custom_id"].clone();
            if answered.is_some_and(|answered| index >= answered) {
                errors.push(json!({"id": format!("r{index}"), "custom_id": custom_id, "response": null,
                    "error": {"code": "batch_cancelled", "message": "This request was not executed because the batch was cancelled."}}));
                continue;
            }
            match (self.answer)(&line["body"]) {
                Ok(text) => output.push(json!({"id": format!("r{index}"), "custom_id": custom_id,
                    "response": {"status_code": 200, "request_id": format!("req_{index}"), "body": completion_for(&line["body"], &text)},
                    "error": null})),
                Err((0, message)) => errors.push(json!({"id": format!("r{index}"), "custom_id": custom_id,
                    "response": null, "error": {"code": "invalid_request", "message": message}})),
                Err((status, message)) => errors.push(json!({"id": format!("r{index}"), "custom_id": custom_id,
                    "response": {"status_code": status, "request_id": format!("req_{index}"),
                        "body": {"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}}},
                    "error": null})),
            }
        }
        if self.behaviour.reversed {
            output.reverse();
            errors.reverse();
        }
        state.outputs.insert(id.to_owned(), (output, errors));
    }

    fn batch_json(&self, state: &FakeState, id: &str) -> Value {
        let status = state.status[id].clone();
        let mut batch = json!({"id": id, "object": "batch", "endpoint": "/v1/chat/completions",
            "input_file_id": format!("file-in-{id}"), "completion_window": "24h", "status": status,
            "output_file_id": null, "error_file_id": null, "created_at": state.created_at[id],
            "metadata": state.metadata.get(id).cloned().unwrap_or(Value::Null)});
        if status == "failed" {
            batch["errors"] = json!({"object": "list", "data": [{"code": "invalid_json_line", "message": "This line is not parseable as valid JSON.", "line": 1}]});
        }
        if let Some((output, errors)) = state.outputs.get(id) {
            if !output.is_empty() {
                batch["output_file_id"] = json!(format!("file-out-{id}"));
            }
            if !errors.is_empty() {
                batch["error_file_id"] = json!(format!("file-err-{id}"));
            }
        }
        batch
    }
}

impl Respond for OpenAiFake {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let auth = request
            .headers
            .get(self.auth.0)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if auth != self.auth.1 {
            return ResponseTemplate::new(401).set_body_json(
                json!({"error": {"message": "bad key", "type": "invalid_request_error"}}),
            );
        }
        let path = request.url.path().to_owned();
        let method = request.method.as_str().to_owned();
        let mut state = self.state.lock().unwrap();
        let base = self.base.as_str();
        let rest = path.strip_prefix(base).unwrap_or(&path);
        match (method.as_str(), rest) {
            ("POST", "/chat/completions") => {
                let body: Value = serde_json::from_slice(&request.body).unwrap();
                let text = (self.answer)(&body).unwrap_or_default();
                let reply = completion_for(&body, &text);
                state.live.push(body);
                ResponseTemplate::new(200).set_body_json(reply)
            }
            ("POST", "/files") => {
                let body = String::from_utf8_lossy(&request.body);
                assert!(
                    body.contains("name=\"purpose\"\r\n\r\nbatch"),
                    "purpose batch"
                );
                assert!(body.contains("filename=\"batch.jsonl\""), "a JSONL file");
                state.uploads += 1;
                state
                    .submitted
                    .push((request.body.len(), announced_length(request)));
                let id = format!("file-{}", state.uploads);
                state.files.insert(id.clone(), request.body.clone());
                ResponseTemplate::new(200)
                    .set_body_json(json!({"id": id, "object": "file", "purpose": "batch"}))
            }
            ("POST", "/batches") => {
                state.creates_at.push(std::time::Instant::now());
                if let (Some(wait), 1) = (self.behaviour.busy_once, state.creates_at.len()) {
                    return busy(wait);
                }
                let body: Value = serde_json::from_slice(&request.body).unwrap();
                assert_eq!(body["endpoint"], self.line_url);
                assert_eq!(body["completion_window"], "24h");
                let file = body["input_file_id"].as_str().unwrap();
                let lines = lines_of(&state.files[file]);
                for line in &lines {
                    assert_eq!(line["method"], "POST");
                    assert_eq!(line["url"], self.line_url);
                }
                let id = format!("batch_{}", state.batches.len() + 1);
                state.batches.push((id.clone(), lines));
                state.created_at.insert(id.clone(), now_s());
                state.metadata.insert(id.clone(), body["metadata"].clone());
                state.status.insert(
                    id.clone(),
                    if self.behaviour.fail {
                        "failed"
                    } else {
                        "validating"
                    }
                    .to_owned(),
                );
                self.behaviour
                    .created(ResponseTemplate::new(200).set_body_json(self.batch_json(&state, &id)))
            }
            ("GET", "/batches") => {
                let ids: Vec<String> = state.batches.iter().map(|(id, _)| id.clone()).collect();
                let (ids, has_more) = page(ids.iter(), query(request, "after").as_deref());
                let data: Vec<Value> = ids.iter().map(|id| self.batch_json(&state, id)).collect();
                ResponseTemplate::new(200).set_body_json(json!({"object": "list", "data": data,
                    "first_id": ids.first(), "last_id": ids.last(), "has_more": has_more}))
            }
            ("POST", p) if p.ends_with("/cancel") => {
                let id = p
                    .trim_start_matches("/batches/")
                    .trim_end_matches("/cancel")
                    .to_owned();
                state.canceled.push(id.clone());
                if state.status[&id] != "completed" {
                    state.status.insert(id.clone(), "cancelled".to_owned());
                    let answered = self.behaviour.answered_on_cancel;
                    self.finish(&mut state, &id, Some(answered));
                }
                ResponseTemplate::new(200).set_body_json(self.batch_json(&state, &id))
            }
            ("GET", p) if self.behaviour.forgets(&state, p) => {
                ResponseTemplate::new(404).set_body_json(json!({"error": {"message": "No such object", "type": "invalid_request_error"}}))
            }
            ("GET", p) if p.starts_with("/batches/") => {
                state.looks_at.push(std::time::Instant::now());
                if let (Some(wait), 1) = (self.behaviour.busy_once, state.looks_at.len()) {
                    return busy(wait);
                }
                let id = p.trim_start_matches("/batches/").to_owned();
                state.polls += 1;
                let looks = {
                    let looks = state.looks.entry(id.clone()).or_default();
                    *looks += 1;
                    *looks
                };
                let held = self.behaviour.holds(&state, &id);
                let status = state.status[&id].clone();
                if (status == "validating" || status == "in_progress")
                    && !held
                    && looks > self.behaviour.looks
                {
                    state.status.insert(id.clone(), "completed".to_owned());
                    self.finish(&mut state, &id, None);
                } else if status == "validating" {
                    state.status.insert(id.clone(), "in_progress".to_owned());
                }
                ResponseTemplate::new(200).set_body_json(self.batch_json(&state, &id))
            }
            ("GET", p) if p.starts_with("/files/") && p.ends_with("/content") => {
                let file = p.trim_start_matches("/files/").trim_end_matches("/content");
                let (kind, id) = file.trim_start_matches("file-").split_once('-').unwrap();
                let (output, errors) = &state.outputs[id];
                let lines = jsonl(if kind == "out" { output } else { errors });
                state.result_reads += 1;
                ResponseTemplate::new(200).set_body_string(lines)
            }
            _ => ResponseTemplate::new(404)
                .set_body_json(json!({"error": {"message": format!("no route {method} {path}")}})),
        }
    }
}

/// A loopback OpenAI at `<uri>/v1`.
pub async fn openai(answer: Answer, behaviour: Behaviour) -> Fake {
    let server = MockServer::start().await;
    let state = Arc::new(Mutex::new(FakeState::default()));
    Mock::given(any())
        .respond_with(OpenAiFake {
            state: state.clone(),
            answer,
            behaviour,
            base: "/v1".to_owned(),
            auth: ("authorization", format!("Bearer {KEY}")),
            line_url: "/v1/chat/completions",
        })
        .mount(&server)
        .await;
    Fake { server, state }
}

/// A loopback Azure OpenAI resource at `<uri>`, its v1 API at `<uri>/openai/v1`: the same
/// Batch API, with the key in `api-key` and lines naming `/chat/completions`.
pub async fn azure_openai(answer: Answer, behaviour: Behaviour) -> Fake {
    let server = MockServer::start().await;
    let state = Arc::new(Mutex::new(FakeState::default()));
    Mock::given(any())
        .respond_with(OpenAiFake {
            state: state.clone(),
            answer,
            behaviour,
            base: "/openai/v1".to_owned(),
            auth: ("api-key", KEY.to_owned()),
            line_url: "/chat/completions",
        })
        .mount(&server)
        .await;
    Fake { server, state }
}

// ---------------------------------------------------------------------------------------
// Anthropic

struct AnthropicFake {
    state: Arc<Mutex<FakeState>>,
    answer: Answer,
    behaviour: Behaviour,
    uri: String,
}

fn message(text: &str) -> Value {
    json!({"id": "msg_b", "type": "message", "role": "assistant", "model": "claude-test-2025",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 20, "output_tokens": 4}})
}

impl AnthropicFake {
    fn finish(&self, state: &mut FakeState, id: &str, answered: Option<usize>) {
        let lines = state
            .batches
            .iter()
            .find(|(batch, _)| batch == id)
            .map(|(_, lines)| lines.clone())
            .unwrap_or_default();
        let mut output: Vec<Value> = lines
            .iter()
            .enumerate()
            .map(|(index, line)| {
                let custom_id = line["custom_id"].clone();
                if answered.is_some_and(|answered| index >= answered) {
                    return json!({"custom_id": custom_id, "result": {"type": "canceled"}});
                }
                match (self.answer)(&line["params"]) {
                    Ok(text) => json!({"custom_id": custom_id, "result": {"type": "succeeded", "message": message(&text)}}),
                    Err((_, text)) => json!({"custom_id": custom_id, "result": {"type": "errored",
                        "error": {"type": "error", "error": {"type": "invalid_request_error", "message": text}}}}),
                }
            })
            .collect();
        if self.behaviour.reversed {
            output.reverse();
        }
        state.outputs.insert(id.to_owned(), (output, Vec::new()));
    }

    fn batch_json(&self, state: &FakeState, id: &str) -> Value {
        let status = state.status[id].clone();
        let results_url =
            (status == "ended").then(|| format!("{}/v1/messages/batches/{id}/results", self.uri));
        let size = state
            .batches
            .iter()
            .find(|(batch, _)| batch == id)
            .map_or(0, |(_, lines)| lines.len());
        let created = state.created_at[id];
        // RFC 3339, as Anthropic writes it (whole days from the epoch are enough here).
        let (days, seconds) = (created / 86_400, created % 86_400);
        let created_at = format!(
            "{}T{:02}:{:02}:{:02}.000000Z",
            civil(days),
            seconds / 3600,
            seconds / 60 % 60,
            seconds % 60
        );
        json!({"id": id, "type": "message_batch", "processing_status": status,
            "request_counts": {"processing": size, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
            "created_at": created_at, "results_url": results_url})
    }
}

impl Respond for AnthropicFake {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let key = request
            .headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let version = request
            .headers
            .get("anthropic-version")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if key != KEY || version != "2023-06-01" {
            return ResponseTemplate::new(401).set_body_json(json!({"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}));
        }
        let path = request.url.path().to_owned();
        let method = request.method.as_str().to_owned();
        let mut state = self.state.lock().unwrap();
        if path == "/v1/messages" {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            let text = (self.answer)(&body).unwrap_or_default();
            state.live.push(body);
            return ResponseTemplate::new(200).set_body_json(message(&text));
        }
        let rest = path
            .strip_prefix("/v1/messages/batches")
            .unwrap_or(&path)
            .to_owned();
        match (method.as_str(), rest.as_str()) {
            ("POST", "") => {
                state
                    .submitted
                    .push((request.body.len(), announced_length(request)));
                let body: Value = serde_json::from_slice(&request.body).unwrap();
                let lines = body["requests"].as_array().unwrap().clone();
                let id = format!("msgbatch_{}", state.batches.len() + 1);
                state.batches.push((id.clone(), lines));
                state.created_at.insert(id.clone(), now_s());
                state.status.insert(id.clone(), "in_progress".to_owned());
                self.behaviour
                    .created(ResponseTemplate::new(200).set_body_json(self.batch_json(&state, &id)))
            }
            ("GET", "") => {
                let ids: Vec<String> = state.batches.iter().map(|(id, _)| id.clone()).collect();
                let (ids, has_more) = page(ids.iter(), query(request, "after_id").as_deref());
                let data: Vec<Value> = ids.iter().map(|id| self.batch_json(&state, id)).collect();
                ResponseTemplate::new(200).set_body_json(json!({"data": data,
                    "first_id": ids.first(), "last_id": ids.last(), "has_more": has_more}))
            }
            ("POST", p) if p.ends_with("/cancel") => {
                let id = p.trim_start_matches('/').trim_end_matches("/cancel").to_owned();
                state.canceled.push(id.clone());
                if state.status[&id] != "ended" {
                    state.status.insert(id.clone(), "ended".to_owned());
                    let answered = self.behaviour.answered_on_cancel;
                    self.finish(&mut state, &id, Some(answered));
                }
                ResponseTemplate::new(200).set_body_json(self.batch_json(&state, &id))
            }
            ("GET", p) if self.behaviour.forgets(&state, p) => ResponseTemplate::new(404).set_body_json(
                json!({"type": "error", "error": {"type": "not_found_error", "message": "no such batch"}}),
            ),
            ("GET", p) if p.ends_with("/results") => {
                let id = p.trim_start_matches('/').trim_end_matches("/results");
                let lines = jsonl(&state.outputs[id].0);
                state.result_reads += 1;
                ResponseTemplate::new(200).set_body_string(lines)
            }
            ("GET", p) => {
                let id = p.trim_start_matches('/').to_owned();
                state.polls += 1;
                let looks = {
                    let looks = state.looks.entry(id.clone()).or_default();
                    *looks += 1;
                    *looks
                };
                let held = self.behaviour.holds(&state, &id);
                if state.status[&id] == "in_progress" && !held && looks > self.behaviour.looks {
                    state.status.insert(id.clone(), "ended".to_owned());
                    self.finish(&mut state, &id, None);
                }
                ResponseTemplate::new(200).set_body_json(self.batch_json(&state, &id))
            }
            _ => ResponseTemplate::new(404).set_body_json(json!({"type": "error", "error": {"type": "not_found_error", "message": "no route"}})),
        }
    }
}

/// The date `days` days after 1970-01-01, as `YYYY-MM-DD` (Howard Hinnant's algorithm).
fn civil(days: u64) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// A loopback Anthropic API.
pub async fn anthropic(answer: Answer, behaviour: Behaviour) -> Fake {
    let server = MockServer::start().await;
    let state = Arc::new(Mutex::new(FakeState::default()));
    Mock::given(any())
        .respond_with(AnthropicFake {
            state: state.clone(),
            answer,
            behaviour,
            uri: server.uri(),
        })
        .mount(&server)
        .await;
    Fake { server, state }
}

// ---------------------------------------------------------------------------------------
// Gemini

/// A client of Gemini's Batch Mode at the fake `fake`.
pub fn gemini_client(fake: &Fake) -> IntentClient {
    let provider = Gemini::new(KEY)
        .with_base_url(format!("{}/v1beta", fake.server.uri()))
        .with_model("gemini-test");
    IntentClient::builder().provider(provider).build().unwrap()
}

/// The first user turn of a `GenerateContentRequest`.
pub fn gemini_user(body: &Value) -> String {
    body["contents"]
        .as_array()
        .and_then(|contents| contents.iter().find(|c| c["role"] == "user"))
        .and_then(|content| content["parts"][0]["text"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// Whether a `GenerateContentRequest` continues an earlier attempt.
pub fn gemini_is_retry(body: &Value) -> bool {
    body["contents"]
        .as_array()
        .is_some_and(|contents| contents.iter().any(|c| c["role"] == "model"))
}

fn generate_response(text: &str) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 4, "totalTokenCount": 24},
        "modelVersion": "gemini-test-2025",
        "responseId": "resp-b"
    })
}

struct GeminiFake {
    state: Arc<Mutex<FakeState>>,
    answer: Answer,
    behaviour: Behaviour,
}

impl GeminiFake {
    /// Answers batch `id`'s requests (the first `answered` only, when canceled); an
    /// error of status 0 is written with a `google.rpc.Code` (3) rather than an HTTP
    /// status.
    fn finish(&self, state: &mut FakeState, id: &str, answered: Option<usize>) {
        let lines = state
            .batches
            .iter()
            .find(|(batch, _)| batch == id)
            .map(|(_, lines)| lines.clone())
            .unwrap_or_default();
        let mut output: Vec<Value> = lines
            .iter()
            .enumerate()
            .filter(|(index, _)| answered.is_none_or(|answered| *index < answered))
            .map(|(_, line)| {
                let metadata = line["metadata"].clone();
                match (self.answer)(&line["request"]) {
                    Ok(text) => json!({"response": generate_response(&text), "metadata": metadata}),
                    Err((0, message)) => {
                        json!({"error": {"code": 3, "message": message}, "metadata": metadata})
                    }
                    Err((status, message)) => json!({"error": {"code": status, "message": message,
                        "status": "INVALID_ARGUMENT"}, "metadata": metadata}),
                }
            })
            .collect();
        if self.behaviour.reversed {
            output.reverse();
        }
        state.outputs.insert(id.to_owned(), (output, Vec::new()));
    }

    fn operation(&self, state: &FakeState, id: &str) -> Value {
        let status = state.status[id].clone();
        let mut batch = state.metadata[id].clone();
        batch["state"] = json!(status);
        let mut operation = json!({"name": format!("batches/{id}"), "metadata": batch});
        match status.as_str() {
            "BATCH_STATE_PENDING" | "BATCH_STATE_RUNNING" => {}
            "BATCH_STATE_FAILED" => {
                operation["done"] = json!(true);
                operation["error"] = json!({"code": 3,
                    "message": format!("Request payload is invalid: the key {KEY} is not a model")});
            }
            _ => {
                operation["done"] = json!(true);
                let inlined = json!({"inlinedResponses": {"inlinedResponses":
                    state.outputs.get(id).map(|(output, _)| output.clone()).unwrap_or_default()}});
                if self.behaviour.results_in_file {
                    operation["metadata"]["output"] =
                        json!({"responsesFile": format!("files/out-{id}")});
                } else if self.behaviour.results_in_response {
                    let mut response = inlined;
                    response["@type"] = json!(
                        "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput"
                    );
                    operation["response"] = response;
                } else {
                    operation["metadata"]["output"] = inlined;
                }
            }
        }
        operation
    }
}

impl Respond for GeminiFake {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let key = request
            .headers
            .get("x-goog-api-key")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if key != KEY || request.url.query().is_some_and(|q| q.contains(KEY)) {
            return ResponseTemplate::new(400).set_body_json(json!({"error": {"code": 400,
                "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT"}}));
        }
        let path = request.url.path().to_owned();
        let method = request.method.as_str().to_owned();
        let mut state = self.state.lock().unwrap();
        if let Some(file) = path
            .strip_prefix("/download/v1beta/files/out-")
            .and_then(|rest| rest.strip_suffix(":download"))
        {
            assert_eq!(query(request, "alt").as_deref(), Some("media"));
            // The file's lines carry the key beside the response, not in metadata.
            let lines: Vec<Value> = state.outputs[file]
                .0
                .iter()
                .map(|item| {
                    let mut line = item.clone();
                    let key = line["metadata"]["key"].clone();
                    if let Some(line) = line.as_object_mut() {
                        line.remove("metadata");
                        line.insert("key".to_owned(), key);
                    }
                    line
                })
                .collect();
            state.result_reads += 1;
            return ResponseTemplate::new(200).set_body_string(jsonl(&lines));
        }
        let rest = path.strip_prefix("/v1beta/").unwrap_or(&path).to_owned();
        match (method.as_str(), rest.as_str()) {
            ("POST", p) if p.starts_with("models/") && p.ends_with(":generateContent") => {
                let body: Value = serde_json::from_slice(&request.body).unwrap();
                let text = (self.answer)(&body).unwrap_or_default();
                state.live.push(body);
                ResponseTemplate::new(200).set_body_json(generate_response(&text))
            }
            ("POST", p) if p.starts_with("models/") && p.ends_with(":batchGenerateContent") => {
                let model = p.trim_end_matches(":batchGenerateContent").to_owned();
                state
                    .submitted
                    .push((request.body.len(), announced_length(request)));
                let body: Value = serde_json::from_slice(&request.body).unwrap();
                let lines = body["batch"]["inputConfig"]["requests"]["requests"]
                    .as_array()
                    .unwrap()
                    .clone();
                let id = format!("gb{}", state.batches.len() + 1);
                state.batches.push((id.clone(), lines));
                state.created_at.insert(id.clone(), now_s());
                state.metadata.insert(id.clone(), json!({
                    "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
                    "model": model, "displayName": body["batch"]["displayName"]}));
                let status = if self.behaviour.fail {
                    "BATCH_STATE_FAILED"
                } else {
                    "BATCH_STATE_PENDING"
                };
                state.status.insert(id.clone(), status.to_owned());
                self.behaviour
                    .created(ResponseTemplate::new(200).set_body_json(self.operation(&state, &id)))
            }
            ("GET", "batches") => {
                let ids: Vec<String> = state.batches.iter().map(|(id, _)| id.clone()).collect();
                let (ids, has_more) = page(ids.iter(), query(request, "pageToken").as_deref());
                let operations: Vec<Value> =
                    ids.iter().map(|id| self.operation(&state, id)).collect();
                let mut list = json!({"operations": operations});
                if has_more {
                    list["nextPageToken"] = json!(ids.last());
                }
                ResponseTemplate::new(200).set_body_json(list)
            }
            ("POST", p) if p.starts_with("batches/") && p.ends_with(":cancel") => {
                let id = p
                    .trim_start_matches("batches/")
                    .trim_end_matches(":cancel")
                    .to_owned();
                state.canceled.push(id.clone());
                if state.status[&id] != "BATCH_STATE_SUCCEEDED" {
                    state
                        .status
                        .insert(id.clone(), "BATCH_STATE_CANCELLED".to_owned());
                    let answered = self.behaviour.answered_on_cancel;
                    self.finish(&mut state, &id, Some(answered));
                }
                ResponseTemplate::new(200).set_body_json(json!({}))
            }
            ("GET", p) if p.starts_with("batches/") => {
                let id = p.trim_start_matches("batches/").to_owned();
                if !state.status.contains_key(&id) {
                    return ResponseTemplate::new(404).set_body_json(json!({"error": {"code": 404,
                        "message": "Requested entity was not found.", "status": "NOT_FOUND"}}));
                }
                state.polls += 1;
                let looks = {
                    let looks = state.looks.entry(id.clone()).or_default();
                    *looks += 1;
                    *looks
                };
                let held = self.behaviour.holds(&state, &id);
                let status = state.status[&id].clone();
                if (status == "BATCH_STATE_PENDING" || status == "BATCH_STATE_RUNNING")
                    && !held
                    && looks > self.behaviour.looks
                {
                    state
                        .status
                        .insert(id.clone(), "BATCH_STATE_SUCCEEDED".to_owned());
                    self.finish(&mut state, &id, None);
                } else if status == "BATCH_STATE_PENDING" {
                    state
                        .status
                        .insert(id.clone(), "BATCH_STATE_RUNNING".to_owned());
                }
                ResponseTemplate::new(200).set_body_json(self.operation(&state, &id))
            }
            _ => ResponseTemplate::new(404).set_body_json(json!({"error": {"code": 404,
                "message": format!("no route {method} {path}"), "status": "NOT_FOUND"}})),
        }
    }
}

/// A loopback Gemini API at `<uri>/v1beta`.
pub async fn gemini(answer: Answer, behaviour: Behaviour) -> Fake {
    let server = MockServer::start().await;
    let state = Arc::new(Mutex::new(FakeState::default()));
    Mock::given(any())
        .respond_with(GeminiFake {
            state: state.clone(),
            answer,
            behaviour,
        })
        .mount(&server)
        .await;
    Fake { server, state }
}
