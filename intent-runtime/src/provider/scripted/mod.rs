//! A provider that answers from a script and records every request: what the project's
//! tests use, and what users use to test their own code without a model.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures_core::Stream;

mod batch;

pub(crate) use batch::offline_batch;

use super::{
    LogprobAlternative, Provider, ProviderError, ProviderErrorKind, ProviderReply, ProviderRequest,
    ReplyPiece, ReplyStream, ResponseFormat, TokenLogprob,
};
use crate::result::Usage;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum ScriptedReply {
    /// A complete text reply.
    Text(String),
    /// A refusal with this message.
    Refusal(String),
    /// A reply cut off at the output-token limit, with the text that came before.
    Truncated(String),
    /// A failed call.
    Error(ProviderError),
    /// A full reply, as given.
    Reply(ProviderReply),
    /// A one-token reply with the log-probabilities of the alternatives at that token:
    /// its text is the most likely alternative. See [`ScriptedReply::logprobs`].
    Logprobs(Vec<LogprobAlternative>),
    /// Another reply, sent after a delay.
    Delayed(Duration, Box<ScriptedReply>),
    /// A reply cut by a failure: streamed, the text arrives and then the error; not
    /// streamed, the call fails with the error.
    FailAfter(String, ProviderError),
}

impl ScriptedReply {
    /// A complete text reply.
    pub fn text(text: impl Into<String>) -> Self {
        ScriptedReply::Text(text.into())
    }

    /// A refusal.
    pub fn refusal(message: impl Into<String>) -> Self {
        ScriptedReply::Refusal(message.into())
    }

    /// A truncated reply.
    pub fn truncated(partial_text: impl Into<String>) -> Self {
        ScriptedReply::Truncated(partial_text.into())
    }

    /// A failed call.
    pub fn error(error: ProviderError) -> Self {
        ScriptedReply::Error(error)
    }

    /// A one-token reply whose alternatives have these log-probabilities (`ln p`), as a
    /// model asked for `top_logprobs` reports them; the reply's text is the most likely
    /// one. The provider must report log-probabilities
    /// ([`ScriptedProvider::with_max_top_logprobs`]); the reply then carries the most
    /// likely alternatives, as many as the request asked for and the limit allows, and
    /// none when the request asked for none.
    ///
    /// ```
    /// use intent_rs::provider::ScriptedReply;
    /// let reply = ScriptedReply::logprobs([("yes", -0.05), ("no", -3.0)]);
    /// ```
    pub fn logprobs<I, S>(alternatives: I) -> Self
    where
        I: IntoIterator<Item = (S, f64)>,
        S: Into<String>,
    {
        ScriptedReply::Logprobs(
            alternatives
                .into_iter()
                .map(|(token, logprob)| LogprobAlternative::new(token, logprob))
                .collect(),
        )
    }

    /// A streamed reply that sends `text` and then fails with `error` (a dropped
    /// connection, an error event in the middle of the stream).
    pub fn fail_after(text: impl Into<String>, error: ProviderError) -> Self {
        ScriptedReply::FailAfter(text.into(), error)
    }

    /// This reply, sent after `delay`.
    pub fn after(self, delay: Duration) -> Self {
        ScriptedReply::Delayed(delay, Box::new(self))
    }
}

impl From<&str> for ScriptedReply {
    fn from(text: &str) -> Self {
        ScriptedReply::text(text)
    }
}

impl From<String> for ScriptedReply {
    fn from(text: String) -> Self {
        ScriptedReply::Text(text)
    }
}

type ReplyFn = dyn Fn(&ProviderRequest, usize) -> ScriptedReply + Send + Sync;

enum Script {
    List {
        replies: VecDeque<ScriptedReply>,
        scripted: usize,
    },
    Function(Box<ReplyFn>),
}

struct Inner {
    script: Mutex<Script>,
    requests: Mutex<Vec<ProviderRequest>>,
}

/// A provider that replies from a list or a closure and records every request.
///
/// Clones share the script and the record, so a test can keep one clone and hand the
/// other to the client.
///
/// Usage is estimated at one token per four characters, so that token totals are not
/// zero in tests.
///
/// ```
/// use intent_rs::provider::{Provider, ProviderRequest, ScriptedProvider};
/// # tokio_test_block_on(async {
/// let provider = ScriptedProvider::new(["{\"value\": 42}"]);
/// let reply = provider.complete(&ProviderRequest::text("system", "user")).await.unwrap();
/// assert_eq!(reply.text, "{\"value\": 42}");
/// assert_eq!(provider.requests()[0].user(), "user");
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Clone)]
pub struct ScriptedProvider {
    inner: Arc<Inner>,
    model: String,
    enforces_schema: bool,
    max_top_logprobs: Option<u8>,
    stream_chunks: StreamChunks,
}

/// How a scripted reply is streamed.
#[derive(Debug, Clone, Copy)]
struct StreamChunks {
    bytes: usize,
    delay: Option<Duration>,
}

impl fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedProvider")
            .field("model", &self.model)
            .field("enforces_schema", &self.enforces_schema)
            .field("max_top_logprobs", &self.max_top_logprobs)
            .field("stream_chunks", &self.stream_chunks)
            .field("requests", &lock(&self.inner.requests).len())
            .finish()
    }
}

// A panic in a test's closure must not turn every later call into a poisoned-lock panic.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ScriptedProvider {
    /// Replies with each of `replies` in turn; a call after the last one fails with an
    /// invalid-response error that says the script ran out.
    pub fn new<I>(replies: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<ScriptedReply>,
    {
        let replies: VecDeque<ScriptedReply> = replies.into_iter().map(Into::into).collect();
        let scripted = replies.len();
        Self::with_script(Script::List { replies, scripted })
    }

    /// Replies with whatever `reply` returns for the request and its 0-based index.
    pub fn from_fn<F>(reply: F) -> Self
    where
        F: Fn(&ProviderRequest, usize) -> ScriptedReply + Send + Sync + 'static,
    {
        Self::with_script(Script::Function(Box::new(reply)))
    }

    fn with_script(script: Script) -> Self {
        Self {
            inner: Arc::new(Inner {
                script: Mutex::new(script),
                requests: Mutex::new(Vec::new()),
            }),
            model: "scripted-model".to_owned(),
            enforces_schema: false,
            max_top_logprobs: None,
            stream_chunks: StreamChunks {
                bytes: 16,
                delay: None,
            },
        }
    }

    /// Streams replies in pieces of `bytes` bytes (at least one character; default 16),
    /// with `delay` before each piece after the first (default none), so that streaming
    /// code can be tested offline as a model would feed it. With no delay the pieces are
    /// all there at once (and a streamed call reads them as one); a zero delay hands each
    /// piece over in its own turn of the runtime, as a network would.
    pub fn with_stream_chunks(mut self, bytes: usize, delay: Option<Duration>) -> Self {
        self.stream_chunks = StreamChunks {
            bytes: bytes.max(1),
            delay,
        };
        self
    }

    /// Names the model the replies claim to come from (default `scripted-model`).
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Answers [`Provider::enforces_schema`] with `true` for strict-schema requests, as
    /// OpenAI does (default `false`, as a provider that ignores schemas): prompts then
    /// carry the short output contract, which is how a test sees what OpenAI is sent.
    pub fn with_schema_enforced(mut self, enforced: bool) -> Self {
        self.enforces_schema = enforced;
        self
    }

    /// Reports log-probabilities for up to `limit` alternatives per token
    /// ([`Provider::max_top_logprobs`]), as OpenAI does with 20 (default `None`, as a
    /// provider without them). Script them with [`ScriptedReply::logprobs`].
    pub fn with_max_top_logprobs(mut self, limit: Option<u8>) -> Self {
        self.max_top_logprobs = limit;
        self
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ProviderRequest> {
        lock(&self.inner.requests).clone()
    }

    /// How many requests were received.
    pub fn request_count(&self) -> usize {
        lock(&self.inner.requests).len()
    }

    fn next_reply(&self, request: &ProviderRequest) -> ScriptedReply {
        let index = {
            let mut requests = lock(&self.inner.requests);
            requests.push(request.clone());
            requests.len() - 1
        };
        match &mut *lock(&self.inner.script) {
            Script::List { replies, scripted } => replies.pop_front().unwrap_or_else(|| {
                ScriptedReply::Error(ProviderError::new(
                    ProviderErrorKind::InvalidResponse,
                    "scripted",
                    format!("the script has no reply left: {scripted} replies were scripted and request {} was made", index + 1),
                ))
            }),
            Script::Function(reply) => reply(request, index),
        }
    }

    fn usage(request: &ProviderRequest, output: &str) -> Usage {
        let estimate = |chars: usize| chars.div_ceil(4) as u64;
        let schema_chars = request.schema.as_deref().map_or(0, serialized_len);
        Usage {
            input_tokens: estimate(request.prompt_len() + schema_chars),
            output_tokens: estimate(output.len()),
            ..Usage::default()
        }
    }

    /// A one-token reply: the most likely alternative as the text, and the alternatives
    /// the request asked for, as many as the limit allows.
    fn logprob_reply(
        &self,
        request: &ProviderRequest,
        mut alternatives: Vec<LogprobAlternative>,
        model: String,
    ) -> ProviderReply {
        alternatives.sort_by(|a, b| b.logprob.total_cmp(&a.logprob));
        let text = alternatives
            .first()
            .map(|first| first.token.clone())
            .unwrap_or_default();
        let logprobs = match (request.top_logprobs, self.max_top_logprobs) {
            (Some(asked), Some(limit)) => {
                let logprob = alternatives
                    .first()
                    .map_or(f64::NEG_INFINITY, |a| a.logprob);
                alternatives.truncate(usize::from(asked.min(limit)));
                Some(vec![TokenLogprob {
                    token: text.clone(),
                    logprob,
                    top_logprobs: alternatives,
                }])
            }
            _ => None,
        };
        ProviderReply {
            usage: Self::usage(request, &text),
            text,
            stop_reason: Some("length".to_owned()),
            model,
            logprobs,
            ..ProviderReply::default()
        }
    }

    fn model_for(&self, request: &ProviderRequest) -> String {
        request.model.clone().unwrap_or_else(|| self.model.clone())
    }
}

/// The length of `value`'s JSON text, counted without building the text.
fn serialized_len(value: &serde_json::Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing to a counter cannot fail, and a `Value` always serializes.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

#[async_trait::async_trait]
impl Provider for ScriptedProvider {
    /// An offline batch API answering from this script
    /// ([`BatchProvider::scripted`](crate::provider::batch::BatchProvider::scripted)).
    fn batch(&self) -> Option<crate::provider::batch::BatchProvider> {
        Some(crate::provider::batch::BatchProvider::scripted(
            self.clone(),
        ))
    }

    fn name(&self) -> &str {
        "scripted"
    }

    fn default_model(&self) -> &str {
        &self.model
    }

    /// `false` unless turned on with
    /// [`with_schema_enforced`](ScriptedProvider::with_schema_enforced), and then only for
    /// a strict-schema request that carries a schema.
    fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        self.enforces_schema
            && request.response_format == ResponseFormat::JsonSchema
            && request.schema.is_some()
    }

    /// As set with [`with_max_top_logprobs`](ScriptedProvider::with_max_top_logprobs).
    fn max_top_logprobs(&self) -> Option<u8> {
        self.max_top_logprobs
    }

    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        self.scripted(request).await.map_err(|(_, error)| error)
    }

    /// The scripted reply in pieces of the set size, with the set delay between them; a
    /// [`ScriptedReply::fail_after`] sends its text, then its error.
    async fn stream(&self, request: &ProviderRequest) -> Result<ReplyStream, ProviderError> {
        let (text, outcome) = match self.scripted(request).await {
            Ok(reply) => (reply.text.clone(), Ok(ReplyPiece::Finished(reply))),
            Err((text, error)) if !text.is_empty() => (text, Err(error)),
            Err((_, error)) => return Err(error),
        };
        Ok(ReplyStream::new(Chunks {
            text,
            sent: 0,
            chunks: self.stream_chunks,
            first: true,
            yielded: false,
            sleep: None,
            outcome: Some(outcome),
        }))
    }
}

/// A scripted reply as it streams: the text in pieces, each after the set delay (but the
/// first), then its outcome. Written out rather than built from stream combinators: a
/// test or a bench streams thousands of pieces, and this keeps the provider's own cost
/// per piece to cutting the piece.
struct Chunks {
    text: String,
    /// The bytes of `text` sent so far.
    sent: usize,
    chunks: StreamChunks,
    first: bool,
    /// With a zero delay: the next piece has given its turn of the runtime away once.
    yielded: bool,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The finished reply or the error, after the text.
    outcome: Option<Result<ReplyPiece, ProviderError>>,
}

impl Stream for Chunks {
    type Item = Result<ReplyPiece, ProviderError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // Nothing is pinned in place but the boxed timer.
        let this = Pin::into_inner(self);
        if this.outcome.is_none() {
            return Poll::Ready(None);
        }
        match this.chunks.delay {
            _ if this.first => {}
            None => {}
            Some(delay) if delay.is_zero() && !this.yielded => {
                this.yielded = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Some(delay) if delay.is_zero() => {}
            Some(delay) => {
                let sleep = this
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(delay)));
                ready!(sleep.as_mut().poll(cx));
                this.sleep = None;
            }
        }
        this.first = false;
        this.yielded = false;
        let rest = &this.text[this.sent..];
        if rest.is_empty() {
            return Poll::Ready(this.outcome.take());
        }
        let piece = split_text(rest, this.chunks.bytes).next().unwrap_or(rest);
        this.sent += piece.len();
        Poll::Ready(Some(Ok(ReplyPiece::Text(piece.to_owned()))))
    }
}

/// `text` in pieces of about `bytes` bytes, each cut at a character boundary.
pub(crate) fn split_text(text: &str, bytes: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut cut = bytes.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (piece, after) = rest.split_at(cut);
        rest = after;
        Some(piece)
    })
}

impl ScriptedProvider {
    /// The next scripted reply, after its delay; a failure comes with the text sent
    /// before it (empty unless scripted with [`ScriptedReply::fail_after`]).
    async fn scripted(
        &self,
        request: &ProviderRequest,
    ) -> Result<ProviderReply, (String, ProviderError)> {
        let model = self.model_for(request);
        let mut next = self.next_reply(request);
        let reply = loop {
            next = match next {
                ScriptedReply::Delayed(delay, inner) => {
                    tokio::time::sleep(delay).await;
                    *inner
                }
                ScriptedReply::Text(text) => {
                    break ProviderReply {
                        usage: Self::usage(request, &text),
                        text,
                        stop_reason: Some("stop".to_owned()),
                        model,
                        ..ProviderReply::default()
                    };
                }
                ScriptedReply::Refusal(message) => {
                    break ProviderReply {
                        usage: Self::usage(request, &message),
                        refusal: Some(message),
                        stop_reason: Some("refusal".to_owned()),
                        model,
                        ..ProviderReply::default()
                    };
                }
                ScriptedReply::Truncated(text) => {
                    break ProviderReply {
                        usage: Self::usage(request, &text),
                        text,
                        truncated: true,
                        stop_reason: Some("length".to_owned()),
                        model,
                        ..ProviderReply::default()
                    };
                }
                ScriptedReply::Reply(reply) => break reply,
                ScriptedReply::Logprobs(alternatives) => {
                    break self.logprob_reply(request, alternatives, model);
                }
                ScriptedReply::Error(error) => return Err((String::new(), error)),
                ScriptedReply::FailAfter(text, error) => return Err((text, error)),
            };
        };
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime")
            .block_on(future)
    }

    #[test]
    fn replies_in_order_and_records_requests() {
        let provider = ScriptedProvider::new(["a", "b"]);
        let first = block_on(provider.complete(&ProviderRequest::text("s", "one"))).unwrap();
        let second = block_on(provider.complete(&ProviderRequest::text("s", "two"))).unwrap();
        assert_eq!((first.text.as_str(), second.text.as_str()), ("a", "b"));
        let users: Vec<_> = provider
            .requests()
            .into_iter()
            .map(|r| r.user().to_owned())
            .collect();
        assert_eq!(users, ["one", "two"]);
    }

    #[test]
    fn running_out_of_replies_is_an_error_not_a_panic() {
        let provider = ScriptedProvider::new(Vec::<String>::new());
        let err = block_on(provider.complete(&ProviderRequest::text("s", "u"))).unwrap_err();
        assert_eq!(err.kind(), ProviderErrorKind::InvalidResponse);
        assert!(err.message().contains("0 replies were scripted"), "{err}");
    }

    #[test]
    fn refusal_and_truncation_are_flagged() {
        let provider = ScriptedProvider::new([
            ScriptedReply::refusal("no"),
            ScriptedReply::truncated("{\"va"),
        ]);
        let refused = block_on(provider.complete(&ProviderRequest::text("s", "u"))).unwrap();
        let truncated = block_on(provider.complete(&ProviderRequest::text("s", "u"))).unwrap();
        assert_eq!(refused.refusal.as_deref(), Some("no"));
        assert!(truncated.truncated);
    }

    #[test]
    fn closure_sees_the_request_and_its_index() {
        let provider = ScriptedProvider::from_fn(|request, index| {
            format!("{index}:{}", request.user()).into()
        });
        let reply = block_on(provider.complete(&ProviderRequest::text("s", "hi"))).unwrap();
        assert_eq!(reply.text, "0:hi");
    }

    #[test]
    fn usage_counts_the_schema_text() {
        let schema = serde_json::json!({"type": "object", "properties": {}});
        assert_eq!(serialized_len(&schema), schema.to_string().len());
        let mut request = ProviderRequest::text("", "");
        let without = ScriptedProvider::usage(&request, "").input_tokens;
        request.schema = Some(Arc::new(schema));
        assert!(ScriptedProvider::usage(&request, "").input_tokens > without);
    }

    #[test]
    fn the_schema_is_enforced_only_when_turned_on_and_sent() {
        let mut request = ProviderRequest::text("", "");
        request.response_format = crate::provider::ResponseFormat::JsonSchema;
        request.schema = Some(Arc::new(serde_json::json!({"type": "object"})));
        assert!(!ScriptedProvider::new(["x"]).enforces_schema(&request));
        let enforcing = Arc::new(ScriptedProvider::new(["x"]).with_schema_enforced(true));
        // Through `Arc`, as the client holds it.
        assert!(enforcing.enforces_schema(&request));
        assert!(!enforcing.enforces_schema(&ProviderRequest::text("", "")));
        request.schema = None;
        assert!(!enforcing.enforces_schema(&request));
    }

    #[test]
    fn scripted_log_probabilities_come_back_as_asked() {
        let script = || {
            ScriptedReply::logprobs([("no", -2.0), ("yes", -0.2), (" Yes", -3.0), ("maybe", -4.0)])
        };
        let provider =
            ScriptedProvider::new([script(), script(), script()]).with_max_top_logprobs(Some(3));
        assert_eq!(provider.max_top_logprobs(), Some(3));
        let mut request = ProviderRequest::text("s", "u");
        request.top_logprobs = Some(20);
        let reply = block_on(provider.complete(&request)).unwrap();
        assert_eq!(reply.text, "yes");
        let tokens = reply.logprobs.unwrap();
        let top: Vec<_> = tokens[0]
            .top_logprobs
            .iter()
            .map(|a| a.token.as_str())
            .collect();
        assert_eq!(
            top,
            ["yes", "no", " Yes"],
            "most likely first, cut at the limit"
        );
        request.top_logprobs = Some(1);
        let reply = block_on(provider.complete(&request)).unwrap();
        assert_eq!(reply.logprobs.unwrap()[0].top_logprobs.len(), 1);
        request.top_logprobs = None;
        let reply = block_on(provider.complete(&request)).unwrap();
        assert_eq!(reply.logprobs, None, "not asked for");
    }

    #[test]
    fn with_model_names_the_model() {
        let provider = ScriptedProvider::new(["x"]).with_model("m-1");
        let reply = block_on(provider.complete(&ProviderRequest::text("s", "u"))).unwrap();
        assert_eq!(reply.model, "m-1");
    }
}
