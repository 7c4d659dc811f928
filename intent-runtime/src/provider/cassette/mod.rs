//! Cassettes: real model exchanges recorded once to a readable file and replayed in tests,
//! through [`CassetteProvider`], a wrapper around any [`Provider`].
//!
//! A cassette is JSON Lines, one exchange per line: the request (every field that
//! shapes the answer, sanitized; media by digest), then the reply, a stream's pieces or
//! the error. Field order is fixed and nothing in a line changes between runs (no
//! timestamps, no HTTP request ids), so a re-recorded cassette diffs line by line.
//!
//! A request is matched by a fingerprint of what determines its answer: the model, the
//! system prompt, the turns, the media digests, the response format and schema, the
//! temperature, the output-token limit, `top_logprobs` and minimal thinking, and how it
//! was asked (`complete` or `stream`). The same request recorded several times (a retry
//! after a rate limit) is served in recorded order.
//!
//! A replayed reply is marked ([`ProviderReply::replayed`], and
//! [`AttemptRecord::replayed`](crate::AttemptRecord::replayed) in the result) and goes
//! through the verifier, the validators and the judge like any reply: a recorded answer
//! that no longer fits today's type fails its checks, and the retry that would feed them
//! back is not in the cassette, so the call fails naming the cassette, the exchange and
//! (in the first attempt's issue) the check. A request that differs from a recorded one
//! only in its schema is served that recorded answer, so a changed type is checked
//! against what the model really said instead of failing on the schema alone.
//!
//! Decision questions answered through a provider (log-probabilities, stated
//! probabilities) are recorded like any call. A decision client that speaks its own API
//! ([`SystemOneClient`](crate::decision::SystemOneClient)) is wrapped with
//! [`Cassette::decision_client`] instead
//! ([`CassetteDecisionClient`](crate::decision::CassetteDecisionClient)): its exchanges
//! are lines of the kind `decide` in the same file, which this wrapper leaves alone.
//!
//! Lines are appended under an exclusive lock on the file, so processes recording into
//! one cassette (test binaries run in parallel) never interleave them.

pub(crate) mod file;
pub(crate) mod fingerprint;
mod sanitize;

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;

pub use sanitize::Sanitizer;

use file::{Appender, Exchange, RecordedError, RecordedReply};
use fingerprint::{CallKind, RecordedRequest};

use crate::provider::{
    Provider, ProviderError, ProviderErrorKind, ProviderReply, ProviderRequest, ReplyPiece,
    ReplyStream,
};

/// When a [`CassetteProvider`] asks the model and when it replays, as VCR's record modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CassetteMode {
    /// Record once: with no cassette file yet, every call goes to the model and is
    /// recorded; once the file exists, every call is replayed from it, as
    /// [`ReplayOnly`](Self::ReplayOnly). The default.
    #[default]
    Record,
    /// Only replay: a call the cassette does not hold fails with a
    /// [`Configuration`](ProviderErrorKind::Configuration) error naming the cassette and
    /// what differs from the nearest recorded exchange. Nothing is ever sent. For CI.
    ReplayOnly,
    /// Replay what the cassette holds, ask the model for the rest and append it.
    RecordNew,
}

impl CassetteMode {
    /// Whether a cassette in this mode replays and whether it records, given whether its
    /// file exists; replay-only of a cassette that does not exist is an error.
    pub(crate) fn plan(self, path: &Path, exists: bool) -> Result<(bool, bool), CassetteError> {
        Ok(match (self, exists) {
            (CassetteMode::ReplayOnly, false) => {
                return Err(CassetteError::Missing {
                    path: path.to_owned(),
                });
            }
            (CassetteMode::ReplayOnly, true) | (CassetteMode::Record, true) => (true, false),
            (CassetteMode::Record, false) => (false, true),
            (CassetteMode::RecordNew, _) => (true, true),
        })
    }
}

crate::failure::debug_as_message!(CassetteError);

/// A cassette that could not be opened or written.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// The file exists but could not be read.
    #[error("cannot read the cassette {}: {source}", path.display())]
    Read {
        /// The cassette's path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line of the file is not an exchange (hand-edited wrongly, or written by another
    /// tool).
    #[error("line {line} of the cassette {} is not an exchange: {reason}; fix or delete the line, or delete the cassette to record it again", path.display())]
    Malformed {
        /// The cassette's path.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What the JSON reader said.
        reason: String,
    },
    /// An exchange could not be appended.
    #[error("cannot write to the cassette {}: {source}", path.display())]
    Write {
        /// The cassette's path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// [`CassetteMode::ReplayOnly`] was asked of a cassette that does not exist.
    #[error("the cassette {} does not exist, and replay-only mode records nothing; record it first (CassetteMode::Record)", path.display())]
    Missing {
        /// The cassette's path.
        path: PathBuf,
    },
}

/// Where a cassette lives, its mode and its sanitizer: [`wrap`](Self::wrap) a provider in
/// it to get a [`CassetteProvider`].
///
/// ```no_run
/// use intent_rs::IntentClient;
/// use intent_rs::provider::{Cassette, CassetteMode, OpenAi, Sanitizer};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // Records on the first run (a real key needed), replays from then on (any key will do).
/// let key = std::env::var("OPENAI_API_KEY").unwrap_or_else(|_| "replay".into());
/// let provider = Cassette::new("tests/cassettes/invoices.jsonl")
///     .mode(CassetteMode::Record)
///     .sanitizer(Sanitizer::new().field("customer_email"))
///     .wrap(OpenAi::new(key))?;
/// let client = IntentClient::builder().provider(provider).build()?;
/// # let _ = client;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Cassette {
    path: PathBuf,
    mode: CassetteMode,
    sanitizer: Sanitizer,
}

impl Cassette {
    /// A cassette at `path` (conventionally `tests/cassettes/<test>.jsonl`), recording once
    /// ([`CassetteMode::Record`]) with the default [`Sanitizer`].
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            mode: CassetteMode::default(),
            sanitizer: Sanitizer::new(),
        }
    }

    /// Sets the mode.
    pub fn mode(mut self, mode: CassetteMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets what is removed before an exchange is written.
    pub fn sanitizer(mut self, sanitizer: Sanitizer) -> Self {
        self.sanitizer = sanitizer;
        self
    }

    /// The cassette's path, mode and sanitizer, for the wrappers built elsewhere
    /// ([`Cassette::decision_client`]).
    pub(crate) fn into_parts(self) -> (PathBuf, CassetteMode, Sanitizer) {
        (self.path, self.mode, self.sanitizer)
    }

    /// Reads the cassette (when it exists) and wraps `provider` in it. In replay the
    /// provider is never called, but still answers what shapes the prompt
    /// ([`Provider::enforces_schema`], [`Provider::max_top_logprobs`]) and names the
    /// default model: build it as for recording (any key will do).
    pub fn wrap<P: Provider>(self, provider: P) -> Result<CassetteProvider<P>, CassetteError> {
        let loaded = file::read(&self.path)?;
        let (replay, record) = self.mode.plan(&self.path, loaded.is_some())?;
        let mut recorded = Vec::new();
        let mut queues: HashMap<(String, CallKind), VecDeque<usize>> = HashMap::new();
        for (line, mut exchange) in loaded.unwrap_or_default() {
            // Cleaned again with today's sanitizer, as live requests are before matching.
            exchange.request = clean_request(&self.sanitizer, exchange.request);
            let key = (exchange.request.fingerprint(), exchange.kind);
            queues.entry(key).or_default().push_back(recorded.len());
            recorded.push(Recorded {
                line,
                exchange,
                served: false,
            });
        }
        Ok(CassetteProvider {
            inner: provider,
            shared: Arc::new(Shared {
                appender: Appender::new(self.path.clone()),
                path: self.path,
                sanitizer: self.sanitizer,
                replay,
                record,
                tape: Mutex::new(Tape { recorded, queues }),
            }),
        })
    }
}

struct Recorded {
    /// The 1-based line of the file: the exchange's name in messages.
    line: usize,
    exchange: Exchange,
    served: bool,
}

struct Tape {
    recorded: Vec<Recorded>,
    /// The unserved exchanges of each fingerprint and kind, in recorded order.
    queues: HashMap<(String, CallKind), VecDeque<usize>>,
}

struct Shared {
    path: PathBuf,
    sanitizer: Sanitizer,
    replay: bool,
    record: bool,
    appender: Appender,
    tape: Mutex<Tape>,
}

/// A [`Provider`] that records its inner provider's exchanges to a [`Cassette`] and
/// replays them; see the [module documentation](self) for the format and the matching.
///
/// Replayed replies are marked [`replayed`](ProviderReply::replayed); recorded ones are
/// appended as they finish (a stream's when it ends), one line each under a lock, so
/// concurrent calls never mix and a crash loses at most the exchanges in flight.
/// Concurrent calls finish in any order, so their lines may come in another order on a
/// re-recording; matching does not depend on it.
///
/// Batch APIs are not recorded: [`Provider::batch`] answers `None`, so a batch job cannot
/// reach the model around the cassette.
pub struct CassetteProvider<P> {
    inner: P,
    shared: Arc<Shared>,
}

impl<P: fmt::Debug> fmt::Debug for CassetteProvider<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CassetteProvider")
            .field("inner", &self.inner)
            .field("path", &self.shared.path)
            .field("replay", &self.shared.replay)
            .field("record", &self.shared.record)
            .finish_non_exhaustive()
    }
}

impl<P> CassetteProvider<P> {
    /// The cassette's path.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// How many recorded exchanges have not been served yet: zero at the end of a test
    /// that made every recorded call.
    pub fn unserved(&self) -> usize {
        let tape = self
            .shared
            .tape
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        tape.recorded.iter().filter(|r| !r.served).count()
    }
}

/// `request` with every text sanitized (the schema is code, not data, and is kept).
fn clean_request(sanitizer: &Sanitizer, mut request: RecordedRequest) -> RecordedRequest {
    request.system = sanitizer.clean(&request.system);
    for message in &mut request.messages {
        message.content = sanitizer.clean(&message.content);
    }
    request
}

/// What the tape has for a request.
enum Lookup {
    Found(Box<Served>),
    Missing(String),
}

/// The recorded answer served for a request (the request itself is not copied).
struct Served {
    pieces: Option<Vec<String>>,
    reply: Option<RecordedReply>,
    error: Option<RecordedError>,
}

impl Served {
    fn of(exchange: &Exchange) -> Box<Self> {
        Box::new(Self {
            pieces: exchange.pieces.clone(),
            reply: exchange.reply.clone(),
            error: exchange.error.clone(),
        })
    }
}

impl Shared {
    fn tape(&self) -> std::sync::MutexGuard<'_, Tape> {
        self.tape
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes the next unserved exchange recorded for `request`, or says why there is none.
    fn take(&self, request: &RecordedRequest, fingerprint: &str, kind: CallKind) -> Lookup {
        let mut tape = self.tape();
        let key = (fingerprint.to_owned(), kind);
        if let Some(index) = tape.queues.get_mut(&key).and_then(VecDeque::pop_front) {
            tape.recorded[index].served = true;
            return Lookup::Found(Served::of(&tape.recorded[index].exchange));
        }
        // A request that differs only in its schema: the recorded answer is served, to be
        // checked against today's type.
        let drifted = tape.recorded.iter().position(|r| {
            !r.served && r.exchange.kind == kind && {
                let mut same = r.exchange.request.clone();
                same.schema.clone_from(&request.schema);
                same.schema_name.clone_from(&request.schema_name);
                same == *request
            }
        });
        if let Some(index) = drifted {
            let line = tape.recorded[index].line;
            let old = (
                tape.recorded[index].exchange.request.fingerprint(),
                tape.recorded[index].exchange.kind,
            );
            if let Some(queue) = tape.queues.get_mut(&old) {
                queue.retain(|&i| i != index);
            }
            tape.recorded[index].served = true;
            tracing::warn!(
                cassette = %self.path.display(),
                exchange = line,
                "the request's schema differs from the recorded one: replaying the recorded answer, to be checked against today's type"
            );
            return Lookup::Found(Served::of(&tape.recorded[index].exchange));
        }
        Lookup::Missing(self.explain_missing(&tape, request, fingerprint, kind))
    }

    /// Why no exchange answers `request`: the nearest recorded one and what differs.
    fn explain_missing(
        &self,
        tape: &Tape,
        request: &RecordedRequest,
        fingerprint: &str,
        kind: CallKind,
    ) -> String {
        let path = self.path.display();
        let short = &fingerprint[..fingerprint.len().min(12)];
        let head = format!(
            "the cassette {path} has no exchange left for this `{}` request (fingerprint {short})",
            kind.as_str()
        );
        let advice = "re-record it (CassetteMode::RecordNew appends what is missing; deleting the file records it all again)";
        let same: Vec<usize> = tape
            .recorded
            .iter()
            .filter(|r| r.exchange.kind == kind && r.exchange.request.fingerprint() == fingerprint)
            .map(|r| r.line)
            .collect();
        if !same.is_empty() {
            return format!(
                "{head}: it was recorded {} time(s) (exchange(s) {}) and each was served already: the code asks it more often than when it was recorded; {advice}",
                same.len(),
                joined(&same)
            );
        }
        // A retry after a replayed answer failed today's checks.
        if let Some(retried) = tape
            .recorded
            .iter()
            .find(|r| r.served && r.exchange.kind == kind && is_retry_of(request, &r.exchange))
        {
            return format!(
                "{head}: it is the retry after the answer replayed from exchange {} (line {} of {path}) failed today's checks (see the attempt before this one for the check); the recorded answer no longer fits the code: fix the code, or {advice}",
                retried.line, retried.line
            );
        }
        let nearest = tape
            .recorded
            .iter()
            .map(|r| {
                (
                    r,
                    r.exchange
                        .request
                        .differences(r.exchange.kind, request, kind),
                )
            })
            .min_by_key(|(_, differences)| differences.len());
        match nearest {
            None => format!("{head}: the cassette holds no exchange; {advice}"),
            Some((r, differences)) => format!(
                "{head}: the nearest recorded exchange, exchange {} (line {} of {path}), differs in {}; {advice}",
                r.line,
                r.line,
                differences.join("; ")
            ),
        }
    }

    /// Appends an exchange; a failure to write is logged, not raised: the call itself
    /// succeeded, and the next run will record what is missing.
    fn append(&self, exchange: &Exchange) {
        if let Err(error) = self.appender.append(exchange) {
            tracing::error!(cassette = %self.path.display(), %error, "an exchange could not be recorded");
        }
    }

    fn missing(&self, message: String) -> ProviderError {
        ProviderError::new(ProviderErrorKind::Configuration, "cassette", message)
    }

    fn exchange(
        &self,
        provider: &str,
        kind: CallKind,
        request: RecordedRequest,
        fingerprint: String,
    ) -> Exchange {
        Exchange {
            kind,
            fingerprint,
            provider: provider.to_owned(),
            request,
            pieces: None,
            reply: None,
            error: None,
        }
    }
}

/// Whether `asked` is `recorded`'s request continued by its recorded answer and a user
/// turn: the retry that feeds back the problems with the answer.
fn is_retry_of(asked: &RecordedRequest, recorded: &Exchange) -> bool {
    let Some(reply) = &recorded.reply else {
        return false;
    };
    let first = &recorded.request;
    let n = first.messages.len();
    asked.messages.len() >= n + 2
        && asked.messages[..n] == first.messages[..]
        && asked.messages[n].role == "assistant"
        && asked.messages[n].content == reply.text
        && asked.system == first.system
        && asked.model == first.model
}

fn joined(lines: &[usize]) -> String {
    lines
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl<P: Provider> CassetteProvider<P> {
    /// The request's sanitized record and the fingerprint matching uses.
    fn identify(&self, request: &ProviderRequest) -> (RecordedRequest, String) {
        let record = clean_request(
            &self.shared.sanitizer,
            RecordedRequest::of(request, self.inner.default_model()),
        );
        let fingerprint = record.fingerprint();
        (record, fingerprint)
    }

    fn clean(&self) -> impl Fn(&str) -> String + '_ {
        |text| self.shared.sanitizer.clean(text)
    }
}

#[async_trait::async_trait]
impl<P: Provider> Provider for CassetteProvider<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn default_model(&self) -> &str {
        self.inner.default_model()
    }

    fn server_url(&self) -> Option<&str> {
        self.inner.server_url()
    }

    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        let (record, fingerprint) = self.identify(request);
        if self.shared.replay {
            match self.shared.take(&record, &fingerprint, CallKind::Complete) {
                Lookup::Found(exchange) => return replayed_reply(*exchange, self.name()),
                Lookup::Missing(why) if !self.shared.record => {
                    return Err(self.shared.missing(why));
                }
                Lookup::Missing(_) => {}
            }
        }
        let answer = self.inner.complete(request).await;
        let mut exchange =
            self.shared
                .exchange(self.name(), CallKind::Complete, record, fingerprint);
        match &answer {
            Ok(reply) => exchange.reply = Some(RecordedReply::of(reply, self.clean())),
            Err(error) => exchange.error = Some(RecordedError::of(error, self.clean())),
        }
        self.shared.append(&exchange);
        answer
    }

    async fn stream(&self, request: &ProviderRequest) -> Result<ReplyStream, ProviderError> {
        let (record, fingerprint) = self.identify(request);
        if self.shared.replay {
            match self.shared.take(&record, &fingerprint, CallKind::Stream) {
                Lookup::Found(exchange) => return Ok(replayed_stream(*exchange, self.name())),
                Lookup::Missing(why) if !self.shared.record => {
                    return Err(self.shared.missing(why));
                }
                Lookup::Missing(_) => {}
            }
        }
        let mut exchange = self
            .shared
            .exchange(self.name(), CallKind::Stream, record, fingerprint);
        let stream = match self.inner.stream(request).await {
            Ok(stream) => stream,
            Err(error) => {
                exchange.pieces = Some(Vec::new());
                exchange.error = Some(RecordedError::of(&error, self.clean()));
                self.shared.append(&exchange);
                return Err(error);
            }
        };
        // The pieces are kept as they pass; the exchange is written when the stream ends
        // with its reply or an error. A stream dropped before then records nothing.
        let shared = Arc::clone(&self.shared);
        let mut pieces = Vec::new();
        let mut exchange = Some(exchange);
        let recording = stream.map(move |item| {
            match &item {
                Ok(ReplyPiece::Text(text)) => pieces.push(shared.sanitizer.clean(text)),
                Ok(ReplyPiece::Finished(reply)) => {
                    if let Some(mut done) = exchange.take() {
                        done.pieces = Some(std::mem::take(&mut pieces));
                        done.reply = Some(RecordedReply::of(reply, |t| shared.sanitizer.clean(t)));
                        shared.append(&done);
                    }
                }
                Err(error) => {
                    if let Some(mut done) = exchange.take() {
                        done.pieces = Some(std::mem::take(&mut pieces));
                        done.error = Some(RecordedError::of(error, |t| shared.sanitizer.clean(t)));
                        shared.append(&done);
                    }
                }
            }
            item
        });
        Ok(ReplyStream::new(recording))
    }

    fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        self.inner.enforces_schema(request)
    }

    fn max_top_logprobs(&self) -> Option<u8> {
        self.inner.max_top_logprobs()
    }

    fn batch(&self) -> Option<crate::provider::batch::BatchProvider> {
        None
    }
}

/// The recorded answer of a `complete` exchange.
fn replayed_reply(exchange: Served, provider: &str) -> Result<ProviderReply, ProviderError> {
    match (exchange.reply, &exchange.error) {
        (Some(reply), _) => Ok(reply.into_reply()),
        (None, Some(error)) => Err(error.to_error(provider)),
        (None, None) => Err(ProviderError::new(
            ProviderErrorKind::InvalidResponse,
            provider,
            "the recorded exchange holds neither a reply nor an error",
        )),
    }
}

/// The recorded pieces of a `stream` exchange, then its reply or error.
fn replayed_stream(exchange: Served, provider: &str) -> ReplyStream {
    let mut items: Vec<Result<ReplyPiece, ProviderError>> = exchange
        .pieces
        .unwrap_or_default()
        .into_iter()
        .map(|text| Ok(ReplyPiece::Text(text)))
        .collect();
    match (exchange.reply, exchange.error) {
        (Some(reply), _) => items.push(Ok(ReplyPiece::Finished(reply.into_reply()))),
        (None, Some(error)) => items.push(Err(error.to_error(provider))),
        // No reply and no error: the stream ends cut, as it did when recorded.
        (None, None) => {}
    }
    // Each piece after the first waits for one turn of the scheduler, so a reader sees
    // the pieces arrive one by one as they did from the model, not all at once.
    let pieces = futures_util::stream::iter(items.into_iter().enumerate()).then(
        |(index, item)| async move {
            if index > 0 {
                tokio::task::yield_now().await;
            }
            item
        },
    );
    ReplyStream::new(pieces)
}

#[cfg(test)]
mod tests;
