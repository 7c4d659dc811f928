//! A provider that answers every request with a value valid for the request's own schema:
//! for tests of the code around intent methods, without a model, a key or a script.
//!
//! | module | what it holds |
//! | --- | --- |
//! | `bounds` | a schema node's bounds, from its keywords or the words the strict walk left in their place |
//! | `pattern` | strings matching the simple regular expressions schemas carry |
//! | `generate` | a value valid for a schema, from a seeded random source |
//! | `decision` | answers to the decision clients' questions (log-probabilities and stated) |

mod bounds;
mod decision;
mod generate;
mod pattern;

use std::fmt;
use std::hash::Hasher;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use fastrand::Rng;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::batch::BatchProvider;
use super::scripted::{offline_batch, split_text};
use super::{
    Provider, ProviderError, ProviderErrorKind, ProviderReply, ProviderRequest, ReplyPiece,
    ReplyStream, ResponseFormat, Role,
};
use crate::result::Usage;
use generate::Generator;

/// The schema name of the judge's verdict (`judge::JUDGE_SCHEMA_NAME`; the judge sits
/// above the providers, so the name is repeated here and a test holds the two together).
const JUDGE_SCHEMA_NAME: &str = "judge_verdict";

/// The schema name of the stated decision client's answers (repeated for the same reason).
const STATED_SCHEMA_NAME: &str = "decision_answers";

/// The envelope's property (`schema::ENVELOPE_PROPERTY`).
const ENVELOPE: &str = "value";

/// What an answer made invalid on purpose says, in place of a reply that parses.
pub const INVALID_TEXT: &str = "This answer is invalid on purpose (TestModel::invalid_first).";

/// The problem a rejecting judge names ([`TestModel::judge_passes`]).
pub const JUDGE_REJECTION: &str =
    "The test model's judge rejects every candidate (TestModel::judge_passes(false)).";

/// A provider that answers every request with a value generated from the request's own
/// schema, deterministically for a seed: the offline model for tests of the code around
/// intent methods, where [`ScriptedProvider`](super::ScriptedProvider) needs every reply
/// written by hand.
///
/// What it answers:
///
/// - **a schema target** (a strict `{"value": ...}` envelope): a value valid for it:
///   every property of every object, `$ref`s into `$defs`, `anyOf` branches (an `Option`
///   is `null` about one time in four), `enum` and `const`, arrays and tuples, the
///   string formats providers accept (`date`, `date-time`, `time`, `duration`, `email`,
///   `hostname`, `ipv4`, `ipv6`, `uuid`), and the bounds of numbers, lengths, item counts
///   and patterns, which the strict schema states in words ([`make_strict`] moves them
///   into descriptions) and the model reads back. Numbers without bounds are drawn from
///   0 to 100, so every integer type holds them;
/// - **a plain-text target** (`String`): a few words;
/// - **a JSON-object-mode target** (a type that cannot be strict, such as a map): the
///   request carries no schema, so the answer is `{"value": {}}` (an empty map), plus
///   the [pins](TestModel::pin);
/// - **the judge**: a passing verdict (see [`judge_passes`](TestModel::judge_passes));
/// - **decision questions**, from either chat-model client: the log-probability client's
///   label request gets a distribution over the labels it offers, reported as
///   log-probabilities (the model reports up to 20 alternatives, as OpenAI does; see
///   [`with_max_top_logprobs`](TestModel::with_max_top_logprobs)), and the stated
///   client's request gets a valid distribution per question. A yes/no question is
///   answered yes with a probability from 0.95 to 0.99, above the decision gate's default
///   threshold, unless [`probability_yes`](TestModel::probability_yes) says otherwise;
///   choices and levels get a random distribution;
/// - **streamed calls**: the same answer in pieces of 16 bytes;
/// - **batch jobs**: the offline batch API of the scripted provider
///   ([`BatchProvider::scripted`]), answering each request as this model does.
///
/// Answers are deterministic: the random source of each request is seeded from the
/// model's seed and the request's contents, so the same request gets the same answer in
/// any order and from any task, and a retry (which carries the previous reply) gets a
/// new one. A different seed gives different answers. (The draws come from `fastrand`,
/// whose sequence for a seed may change with its version.)
///
/// What it does not satisfy: your validators (`#[validate(...)]`) and the judge's
/// criteria are your code and your words, not the schema, so a generated value meets
/// them only by chance ([pin](TestModel::pin) the fields they read); patterns beyond the
/// subset it covers (look-around, back-references, `\b`, Unicode classes: it writes
/// plain words there, which the verifier refuses); a pattern together with length bounds
/// on one string (the pattern wins); chrono's `NaiveDateTime` and `NaiveTime`, whose
/// formats the strict schema does not keep (`DateTime`, `NaiveDate` and `Uuid` work);
/// and the shape of a JSON-object-mode target beyond its pins.
///
/// Clones share the record of requests, as [`ScriptedProvider`](super::ScriptedProvider)'s
/// do.
///
/// ```
/// use intent_rs::IntentClient;
/// use intent_rs::provider::TestModel;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
/// struct Contact {
///     name: String,
///     age: u8,
///     email: Option<String>,
/// }
///
/// let model = TestModel::seeded(7).pin("/name", "Ada");
/// let client = IntentClient::builder().provider(model.clone()).build().unwrap();
/// let contact: Contact = client
///     .transform("Ada, 36", "Extract the contact", Default::default())
///     .await
///     .into_result()
///     .unwrap();
/// assert_eq!(contact.name, "Ada");
/// assert_eq!(model.request_count(), 1);
/// # });
/// ```
///
/// [`make_strict`]: crate::schema::make_strict
#[derive(Clone)]
pub struct TestModel {
    requests: Arc<Mutex<Vec<ProviderRequest>>>,
    seed: u64,
    model: String,
    /// Pointers and their values, or why a value could not be serialized.
    pins: Arc<Vec<(String, Result<Value, String>)>>,
    invalid_first: usize,
    judge_passes: bool,
    probability_yes: Option<f64>,
    max_top_logprobs: Option<u8>,
    stream_bytes: usize,
}

impl fmt::Debug for TestModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestModel")
            .field("seed", &self.seed)
            .field("model", &self.model)
            .field(
                "pins",
                &self.pins.iter().map(|(p, _)| p).collect::<Vec<_>>(),
            )
            .field("invalid_first", &self.invalid_first)
            .field("judge_passes", &self.judge_passes)
            .field("probability_yes", &self.probability_yes)
            .field("max_top_logprobs", &self.max_top_logprobs)
            .field("requests", &lock(&self.requests).len())
            .finish()
    }
}

impl Default for TestModel {
    fn default() -> Self {
        Self::new()
    }
}

// A panic in a test must not turn every later call into a poisoned-lock panic.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl TestModel {
    /// A test model with seed 0.
    pub fn new() -> Self {
        Self::seeded(0)
    }

    /// A test model whose answers are drawn from `seed`.
    pub fn seeded(seed: u64) -> Self {
        Self {
            requests: Arc::default(),
            seed,
            model: "test-model".to_owned(),
            pins: Arc::default(),
            invalid_first: 0,
            judge_passes: true,
            probability_yes: None,
            max_top_logprobs: Some(20),
            stream_bytes: 16,
        }
    }

    /// Answers `value` at `pointer` (a JSON pointer into the value, as `/name` or
    /// `/lines/0/sku`; `""` is the whole value) instead of a generated one, for the
    /// fields your validators or assertions read. Repeatable; a later pin of the same
    /// place wins.
    ///
    /// A pin replaces what was generated there and adds nothing a schema does not have:
    /// where the pointer reaches no generated field (another method's type, an `Option`
    /// generated as `null`: pin the whole field then) it is skipped, so one model serves
    /// methods of different types. In JSON-object mode, where nothing is generated, a pin
    /// adds its key to the object it names. The pinned value is not checked: a value that
    /// breaks the schema fails verification, as it would from a model.
    ///
    /// A value that cannot be serialized to JSON (a map with keys that are not strings)
    /// makes every call fail with a configuration error that names the pointer.
    pub fn pin(mut self, pointer: impl Into<String>, value: impl Serialize) -> Self {
        let pointer = pointer.into();
        let value = serde_json::to_value(value).map_err(|error| {
            format!("the value pinned at `{pointer}` cannot be serialized to JSON ({error}); pin a value that can")
        });
        Arc::make_mut(&mut self.pins).push((pointer, value));
        self
    }

    /// Answers the first `attempts` attempts of every call wrongly on purpose, then
    /// validly: for tests of retries and of failure handling (with `attempts` at or above
    /// the call's attempt limit, the call fails with its verification issues).
    ///
    /// An answer for a schema target is then `{"value": <x>}` with `x` of a JSON type
    /// the schema does not allow there (`true`, `["invalid"]`, `{"invalid": true}` or
    /// `"invalid"`, the first that does not fit); a target that allows any JSON, and a
    /// JSON-object-mode target, get [`INVALID_TEXT`], which is not JSON. Plain-text
    /// targets, the judge and decision questions are always answered validly. The
    /// attempt is counted from the request (a retry carries the previous replies), so
    /// concurrent calls each get their own count.
    pub fn invalid_first(mut self, attempts: usize) -> Self {
        self.invalid_first = attempts;
        self
    }

    /// Whether the judge's verdict passes (default `true`); `false` answers every judge
    /// request with a failing verdict naming [`JUDGE_REJECTION`], for tests of judge
    /// rejection.
    pub fn judge_passes(mut self, passes: bool) -> Self {
        self.judge_passes = passes;
        self
    }

    /// The probability of yes for every yes/no decision question (clamped to [0, 1]);
    /// default a draw from 0.95 to 0.99. Set it low to test a decision gate that stops
    /// a call, or a `Binary` answer of no.
    pub fn probability_yes(mut self, probability: f64) -> Self {
        self.probability_yes = Some(if probability.is_nan() {
            0.5
        } else {
            probability.clamp(0.0, 1.0)
        });
        self
    }

    /// Reports log-probabilities for up to `limit` alternatives per token (default 20, as
    /// OpenAI); `None` reports none, so decisions are asked with stated probabilities.
    pub fn with_max_top_logprobs(mut self, limit: Option<u8>) -> Self {
        self.max_top_logprobs = limit;
        self
    }

    /// Names the model the replies claim to come from (default `test-model`).
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Streams answers in pieces of `bytes` bytes (at least one; default 16).
    pub fn with_stream_chunks(mut self, bytes: usize) -> Self {
        self.stream_bytes = bytes.max(1);
        self
    }

    /// Every request received so far, in order (judge and decision requests included).
    pub fn requests(&self) -> Vec<ProviderRequest> {
        lock(&self.requests).clone()
    }

    /// How many requests were received.
    pub fn request_count(&self) -> usize {
        lock(&self.requests).len()
    }

    /// The answer to `request`, as [`complete`](Provider::complete) gives it, without
    /// recording the request: for a [`ScriptedProvider::from_fn`](super::ScriptedProvider::from_fn)
    /// that answers some requests by hand and the rest with this model. It fails only
    /// when a [pinned](TestModel::pin) value cannot be serialized.
    pub fn answer(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        if let Some(Err(reason)) = self
            .pins
            .iter()
            .map(|(_, value)| value)
            .find(|v| v.is_err())
        {
            return Err(ProviderError::new(
                ProviderErrorKind::Configuration,
                self.name(),
                reason.clone(),
            )
            .not_sent());
        }
        let mut rng = Rng::with_seed(self.seed ^ fingerprint(request));
        let attempt = request
            .messages
            .iter()
            .filter(|message| message.role == Role::Assistant)
            .count();
        let invalid = attempt < self.invalid_first;
        let mut logprobs = None;
        let text = match (&request.response_format, request.schema.as_deref()) {
            (ResponseFormat::JsonSchema, Some(_)) if request.schema_name == JUDGE_SCHEMA_NAME => {
                self.verdict()
            }
            (ResponseFormat::JsonSchema, Some(schema))
                if request.schema_name == STATED_SCHEMA_NAME =>
            {
                let answers = schema
                    .pointer("/properties/value")
                    .map(|answers| {
                        decision::stated_answers(answers, self.probability_yes, &mut rng)
                    })
                    .unwrap_or_default();
                json!({ ENVELOPE: answers }).to_string()
            }
            (ResponseFormat::JsonSchema, Some(schema)) if invalid => invalid_answer(schema),
            (ResponseFormat::JsonSchema, Some(schema)) => {
                let mut value = Generator::new(schema, &mut rng).value(schema);
                let enveloped = is_envelope(schema);
                if let Some(target) = if enveloped {
                    value.get_mut(ENVELOPE)
                } else {
                    Some(&mut value)
                } {
                    self.apply_pins(target, false);
                }
                value.to_string()
            }
            (ResponseFormat::JsonObject, _) | (ResponseFormat::JsonSchema, None) if invalid => {
                INVALID_TEXT.to_owned()
            }
            (ResponseFormat::JsonObject, _) | (ResponseFormat::JsonSchema, None) => {
                let mut value = Value::Object(Map::new());
                self.apply_pins(&mut value, true);
                json!({ ENVELOPE: value }).to_string()
            }
            (ResponseFormat::Text, _) => match (
                request.top_logprobs,
                self.max_top_logprobs,
                decision::offered_labels(request.last_user()),
            ) {
                (Some(asked), Some(limit), Some(labels)) => {
                    let (text, tokens) = decision::label_reply(
                        &labels,
                        self.probability_yes,
                        usize::from(asked.min(limit)),
                        &mut rng,
                    );
                    logprobs = Some(tokens);
                    text
                }
                _ => plain_text(&mut rng),
            },
        };
        let stop_reason = if logprobs.is_some() { "length" } else { "stop" };
        Ok(ProviderReply {
            usage: usage(request, &text),
            text,
            stop_reason: Some(stop_reason.to_owned()),
            model: request.model.clone().unwrap_or_else(|| self.model.clone()),
            logprobs,
            ..ProviderReply::default()
        })
    }

    fn verdict(&self) -> String {
        let problems: &[&str] = if self.judge_passes {
            &[]
        } else {
            &[JUDGE_REJECTION]
        };
        json!({"passes": self.judge_passes, "problems": problems}).to_string()
    }

    /// Sets each pin in `value`; `add` lets a pin add a key to an object that exists.
    fn apply_pins(&self, value: &mut Value, add: bool) {
        for (pointer, pinned) in self.pins.iter() {
            // A value that failed to serialize has already failed the call.
            let Ok(pinned) = pinned else {
                continue;
            };
            if pointer.is_empty() {
                *value = pinned.clone();
                continue;
            }
            if let Some(place) = value.pointer_mut(pointer) {
                *place = pinned.clone();
                continue;
            }
            if !add {
                continue;
            }
            let Some((parent, key)) = pointer.rsplit_once('/') else {
                continue;
            };
            if let Some(Value::Object(object)) = value.pointer_mut(parent) {
                let key = key.replace("~1", "/").replace("~0", "~");
                object.insert(key, pinned.clone());
            }
        }
    }
}

/// Whether `schema` is the `{"value": ...}` envelope.
fn is_envelope(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|properties| properties.len() == 1 && properties.contains_key(ENVELOPE))
}

/// An answer that breaks `schema`: the envelope with a value of a JSON type its schema
/// does not allow, or [`INVALID_TEXT`] when it allows every type.
fn invalid_answer(schema: &Value) -> String {
    let target = if is_envelope(schema) {
        schema.pointer("/properties/value")
    } else {
        Some(schema)
    };
    let allowed = target.map(|target| allowed_kinds(schema, target, 0));
    let candidates = [
        ("boolean", json!(true)),
        ("array", json!(["invalid"])),
        ("object", json!({"invalid": true})),
        ("string", json!("invalid")),
    ];
    let wrong = allowed.and_then(|allowed| {
        candidates
            .into_iter()
            .find(|(kind, _)| !allowed.contains(kind))
    });
    match wrong {
        Some((_, value)) if is_envelope(schema) => json!({ ENVELOPE: value }).to_string(),
        Some((_, value)) => value.to_string(),
        None => INVALID_TEXT.to_owned(),
    }
}

/// The JSON types `node` allows at its top (through `$ref`s and branches); every type
/// for a node that does not say.
fn allowed_kinds(root: &Value, node: &Value, depth: usize) -> Vec<&'static str> {
    const ALL: &[&str] = &[
        "boolean", "array", "object", "string", "number", "integer", "null",
    ];
    let Value::Object(map) = node else {
        return ALL.to_vec();
    };
    if depth > 16 {
        return ALL.to_vec();
    }
    if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
        return reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
            .map_or(ALL.to_vec(), |target| {
                allowed_kinds(root, target, depth + 1)
            });
    }
    let kind_of = |value: &Value| match value {
        Value::Bool(_) => "boolean",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Null => "null",
    };
    if let Some(constant) = map.get("const") {
        return vec![kind_of(constant)];
    }
    if let Some(Value::Array(choices)) = map.get("enum") {
        return choices.iter().map(kind_of).collect();
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(keyword) {
            return branches
                .iter()
                .flat_map(|branch| allowed_kinds(root, branch, depth + 1))
                .collect();
        }
    }
    let named = |kind: &str| ALL.iter().copied().find(|known| *known == kind);
    match map.get("type") {
        Some(Value::String(kind)) => named(kind).into_iter().collect(),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .filter_map(named)
            .collect(),
        _ if map.contains_key("properties") => vec!["object"],
        _ => ALL.to_vec(),
    }
}

/// A few words: the answer to a plain-text request.
fn plain_text(rng: &mut Rng) -> String {
    const WORDS: &[&str] = &[
        "test", "model", "answer", "plain", "text", "offline", "seeded",
    ];
    let count = rng.usize(3..=6);
    let words: Vec<&str> = (0..count)
        .map(|_| WORDS[rng.usize(..WORDS.len())])
        .collect();
    let mut text = words.join(" ");
    text.push('.');
    text
}

/// Usage estimated at one token per four characters, as the scripted provider counts it.
fn usage(request: &ProviderRequest, output: &str) -> Usage {
    let estimate = |chars: usize| chars.div_ceil(4) as u64;
    Usage {
        input_tokens: estimate(request.prompt_len()),
        output_tokens: estimate(output.len()),
        ..Usage::default()
    }
}

/// FNV-1a, 64 bits: a fingerprint of what determines the answer, stable across runs and
/// platforms (std's hasher promises neither).
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

impl std::io::Write for Fnv {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        Hasher::write(self, bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The fingerprint of a request: its prompts, its format and its schema.
fn fingerprint(request: &ProviderRequest) -> u64 {
    let mut hash = Fnv(0xcbf2_9ce4_8422_2325);
    hash.write(request.system.as_bytes());
    for message in &request.messages {
        hash.write(message.role.as_str().as_bytes());
        hash.write(message.content.as_bytes());
    }
    hash.write(request.schema_name.as_bytes());
    hash.write(&[request.response_format as u8]);
    if let Some(schema) = &request.schema {
        // Writing to a hasher cannot fail, and a `Value` always serializes.
        let _ = serde_json::to_writer(&mut hash, &**schema);
    }
    hash.finish()
}

#[async_trait::async_trait]
impl Provider for TestModel {
    fn name(&self) -> &str {
        "test-model"
    }

    fn default_model(&self) -> &str {
        &self.model
    }

    /// `true` for a strict-schema request that carries a schema: the model reads only
    /// the schema, so the prompt need not describe the type.
    fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        request.response_format == ResponseFormat::JsonSchema && request.schema.is_some()
    }

    /// As set with [`with_max_top_logprobs`](TestModel::with_max_top_logprobs) (default 20).
    fn max_top_logprobs(&self) -> Option<u8> {
        self.max_top_logprobs
    }

    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        lock(&self.requests).push(request.clone());
        self.answer(request)
    }

    /// The answer in pieces of the set size, then the whole reply.
    async fn stream(&self, request: &ProviderRequest) -> Result<ReplyStream, ProviderError> {
        let reply = self.complete(request).await?;
        let pieces: Vec<Result<ReplyPiece, ProviderError>> =
            split_text(&reply.text, self.stream_bytes)
                .map(|piece| Ok(ReplyPiece::Text(piece.to_owned())))
                .chain([Ok(ReplyPiece::Finished(reply.clone()))])
                .collect();
        Ok(ReplyStream::new(futures_util::stream::iter(pieces)))
    }

    /// The scripted provider's offline batch API, answering as this model does: each
    /// request is answered as it is queued, and each batch ends on its second look.
    fn batch(&self) -> Option<BatchProvider> {
        Some(offline_batch(Arc::new(self.clone())))
    }
}

#[cfg(test)]
mod tests;
