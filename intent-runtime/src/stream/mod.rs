//! Streamed calls: the reply read as the model writes it, typed partial values out, and
//! at the end the same verified [`AIResult`] a call that waits returns.
//!
//! A streamed call runs the very attempt loop a non-streamed one does (verification,
//! repairs, the judge, retries with the problems fed back, the guardrails); only the
//! model request differs: it asks the provider to stream ([`Provider::stream`]) and
//! passes each piece of text on as it arrives. [`IntentStream`] turns those pieces into
//! [`StreamEvent`]s:
//!
//! - [`StreamEvent::Partial`]: the value as far as it is written, each time it has grown
//!   by a completed field or item (a plain-text target gets the text so far);
//! - [`StreamEvent::Retry`]: the reply shown so far is discarded (it failed verification
//!   or the judge, or the connection failed) and another request starts;
//! - [`StreamEvent::Final`]: exactly once, last, the call's whole record.
//!
//! Nothing runs unless the stream is polled, and dropping it drops the request: the
//! connection is closed, and the model call is still counted.
//!
//! [`Provider::stream`]: crate::provider::Provider::stream

mod partial;
mod partial_json;

use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_core::Stream;

pub use partial::{Partial, PartialOf, read_whole};
pub use partial_json::{PartialJson, PartialNode};

use crate::result::{AIResult, IssueSource, ResultIssue, Usage};

/// What the attempt loop tells a stream while it runs.
#[derive(Debug)]
pub(crate) enum AttemptEvent {
    /// More text of attempt `attempt`'s reply.
    Text { attempt: u32, piece: String },
    /// The reply of the request so far is discarded: another request starts, for attempt
    /// `attempt`, because of `problems`.
    Restart {
        attempt: u32,
        problems: Vec<ResultIssue>,
    },
}

/// Where the attempt loop sends its [`AttemptEvent`]s: a queue shared with the
/// [`IntentStream`], which reads it after every poll of the call, on the same task (so
/// nothing needs waking). Not a channel: a stream sends an event per piece of text,
/// thousands for a long reply, and text queued for the same attempt joins the text
/// already waiting, so the stream takes in one event whatever arrived since it last
/// looked.
pub(crate) struct EventSink(Arc<Mutex<VecDeque<AttemptEvent>>>);

/// The stream's end of the queue.
pub(crate) struct EventQueue(Arc<Mutex<VecDeque<AttemptEvent>>>);

/// A queue for a streamed call's events.
pub(crate) fn event_queue() -> (EventSink, EventQueue) {
    let queue = Arc::new(Mutex::new(VecDeque::new()));
    (EventSink(Arc::clone(&queue)), EventQueue(queue))
}

// Nothing runs while the lock is held that could panic and leave the queue half-changed.
fn lock(queue: &Mutex<VecDeque<AttemptEvent>>) -> MutexGuard<'_, VecDeque<AttemptEvent>> {
    queue.lock().unwrap_or_else(PoisonError::into_inner)
}

impl EventSink {
    /// Queues `event`; it comes back when the stream was dropped (nobody listens).
    pub(crate) fn send(&self, event: AttemptEvent) -> Result<(), AttemptEvent> {
        if Arc::strong_count(&self.0) == 1 {
            return Err(event);
        }
        let mut queue = lock(&self.0);
        if let (
            AttemptEvent::Text { attempt, piece },
            Some(AttemptEvent::Text {
                attempt: waiting_attempt,
                piece: waiting,
            }),
        ) = (&event, queue.back_mut())
            && attempt == waiting_attempt
        {
            waiting.push_str(piece);
            return Ok(());
        }
        queue.push_back(event);
        Ok(())
    }
}

impl EventQueue {
    fn next(&self) -> Option<AttemptEvent> {
        lock(&self.0).pop_front()
    }
}

/// One event of a streamed call.
pub enum StreamEvent<T: Partial> {
    /// The value as far as the model has written it, in attempt `attempt`. For a
    /// plain-text target, the text so far; otherwise `T`'s partial form (every field
    /// optional), taken out of the `{"value": ...}` envelope. A later partial of the same
    /// attempt only adds to it.
    Partial {
        /// The attempt (1-based) whose reply this is.
        attempt: u32,
        /// The value so far.
        value: T::Partial,
    },
    /// What was shown is discarded and attempt `attempt` (or another request of the same
    /// attempt, after a transient failure) starts, because of `problems`.
    Retry {
        /// The attempt (1-based) that starts.
        attempt: u32,
        /// Why the previous reply was not accepted.
        problems: Vec<ResultIssue>,
    },
    /// The call's whole record, exactly as a non-streamed call returns it; always the
    /// last event.
    Final(AIResult<T>),
}

impl<T: Partial> fmt::Debug for StreamEvent<T>
where
    T: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamEvent::Partial { attempt, value } => f
                .debug_struct("Partial")
                .field("attempt", attempt)
                .field("value", value)
                .finish(),
            StreamEvent::Retry { attempt, problems } => f
                .debug_struct("Retry")
                .field("attempt", attempt)
                .field("problems", problems)
                .finish(),
            StreamEvent::Final(result) => f.debug_tuple("Final").field(result).finish(),
        }
    }
}

/// When something new completed, a partial is shown once this long has passed since the
/// previous read: checked at the next piece that completes a value, or at the latest
/// [`CLOCK_EVERY`] pieces later.
const MAX_PARTIAL_INTERVAL: Duration = Duration::from_millis(50);

/// Between those, a partial is shown when the reply has grown to this multiple of its
/// length at the previous one. Reading a partial costs time in proportion to the reply so
/// far; growing geometrically keeps the total linear in the reply's length: on a fast
/// stream (pieces there faster than every [`MAX_PARTIAL_INTERVAL`]) the reads add up to
/// about twice the reply's length. (With a quarter's growth they added up to four times,
/// a third of a fast stream's client CPU for a 10 KB reply.) A slow stream is shown by
/// the interval, which is what a reader sees.
const GROWTH_FACTOR: usize = 2;

/// While a completed value waits for its partial and pieces bring nothing new, the time
/// is looked at on every this many pieces (see [`IntentStream`]'s reading of partials).
const CLOCK_EVERY: usize = 8;

type Call<T> = Pin<Box<dyn Future<Output = AIResult<T>> + Send>>;

/// A streamed call: a [`Stream`] of [`StreamEvent`]s that ends with one
/// [`StreamEvent::Final`].
///
/// The call runs only while the stream is polled; dropping the stream cancels it (the
/// connection is closed). It is `Send`, owns everything it needs, and can be moved to
/// another task.
///
/// The type names any `T`, but only a `T: Partial` stream can be made or read: a trait
/// method declared `-> IntentStream<T>` for a `T` without `Partial` is well-formed, so
/// that the generated client reports the missing derive once, at its one check, not at
/// every signature that names the stream.
pub struct IntentStream<T> {
    call: Option<Call<T>>,
    events: EventQueue,
    finished: Option<AIResult<T>>,
    /// A plain-text target: partials are the text so far.
    text_target: bool,
    attempt: u32,
    /// The reply's text so far, kept for a plain-text target (a JSON target's is in
    /// `reader`).
    text: String,
    /// The length of the reply so far.
    received: usize,
    reader: PartialJson,
    /// Something completed since the last partial shown.
    pending: bool,
    /// Pieces taken in since `pending` was set, when nothing completed in them.
    idle_pieces: usize,
    /// The last partial shown, a `T::Partial` (erased, so that the struct needs no
    /// bound).
    last: Option<Box<dyn Any + Send>>,
    /// The reply's length and the time at the last partial read.
    read_len: usize,
    read_at: Instant,
    /// [`MAX_PARTIAL_INTERVAL`] (a test sets another).
    interval: Duration,
    /// How many partial reads there were, and the reply bytes they covered in all: the
    /// work that grows with the reply besides the one pass of `reader`.
    reads: usize,
    read_bytes: usize,
}

// Nothing is pinned in place but the call, which is boxed.
impl<T> Unpin for IntentStream<T> {}

impl<T> fmt::Debug for IntentStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntentStream")
            .field("running", &self.call.is_some())
            .field("attempt", &self.attempt)
            .field("received", &self.received)
            .field("partial_reads", &self.reads)
            .field("partial_read_bytes", &self.read_bytes)
            .finish_non_exhaustive()
    }
}

impl<T: Partial + Send + 'static> IntentStream<T> {
    /// A stream that runs `call`, which reports through the sender of `events`.
    pub(crate) fn new(call: Call<T>, events: EventQueue, text_target: bool) -> Self {
        Self {
            call: Some(call),
            events,
            finished: None,
            text_target,
            attempt: 1,
            text: String::new(),
            received: 0,
            reader: PartialJson::new(),
            pending: false,
            idle_pieces: 0,
            last: None,
            read_len: 0,
            read_at: Instant::now(),
            interval: MAX_PARTIAL_INTERVAL,
            reads: 0,
            read_bytes: 0,
        }
    }

    /// A stream whose only event is the final `result`: a call refused before it started.
    pub(crate) fn ended(result: AIResult<T>) -> Self {
        let (_, events) = event_queue();
        Self::new(Box::pin(std::future::ready(result)), events, false)
    }

    /// Runs the call to its end without looking at the partials, and returns its
    /// record (what the [`StreamEvent::Final`] carries).
    pub async fn finish(mut self) -> AIResult<T> {
        match (self.call.take(), self.finished.take()) {
            (Some(call), _) => call.await,
            (None, Some(result)) => result,
            // The final event was taken already: a record without a value says so.
            (None, None) => AIResult {
                value: None,
                issues: vec![ResultIssue::new(
                    IssueSource::Input,
                    "The stream's final event was already taken; nothing was run again.",
                    1,
                )],
                attempts: Vec::new(),
                usage: Usage::default(),
                elapsed: Duration::ZERO,
            },
        }
    }

    fn reset(&mut self, attempt: u32) {
        self.attempt = attempt;
        self.text.clear();
        self.received = 0;
        self.reader = PartialJson::new();
        self.pending = false;
        self.idle_pieces = 0;
        self.last = None;
        self.read_len = 0;
    }

    fn handle(&mut self, event: AttemptEvent) -> Option<StreamEvent<T>> {
        match event {
            AttemptEvent::Restart { attempt, problems } => {
                self.reset(attempt);
                Some(StreamEvent::Retry { attempt, problems })
            }
            AttemptEvent::Text { attempt, piece } => {
                if attempt != self.attempt {
                    self.reset(attempt);
                }
                self.received += piece.len();
                let completed = if self.text_target {
                    self.text.push_str(&piece);
                    true
                } else {
                    self.reader.push(&piece);
                    self.reader.take_progress()
                };
                self.pending |= completed;
                self.partial(completed)
            }
        }
    }

    /// The partial to show now, if something new completed and it is time.
    /// `completed`: something completed in the piece just taken in.
    fn partial(&mut self, completed: bool) -> Option<StreamEvent<T>> {
        let len = self.received;
        if !self.pending {
            return None;
        }
        // The clock is read when something new completed, and otherwise on every
        // `CLOCK_EVERY`th piece while a completed value waits: on a stream of tiny pieces
        // reading it for every piece cost as much as the rest of the piece's handling.
        let clock = completed || {
            self.idle_pieces += 1;
            self.idle_pieces.is_multiple_of(CLOCK_EVERY)
        };
        let due = self.read_len == 0
            || len >= self.read_len * GROWTH_FACTOR
            || (clock && self.read_at.elapsed() >= self.interval);
        if !due {
            return None;
        }
        self.idle_pieces = 0;
        // Counted as a read whatever it shows: a read that finds nothing new must not
        // make the next piece read again (that would cost the reply's length per piece).
        self.pending = false;
        self.read_len = len;
        self.read_at = Instant::now();
        self.reads += 1;
        self.read_bytes += len;
        let value = if self.text_target {
            cast::<String, T::Partial>(self.text.clone())
        } else {
            self.reader
                .root()
                .and_then(|root| root.field("value"))
                .and_then(T::read_partial)
        }?;
        let last = self
            .last
            .as_ref()
            .and_then(|last| last.downcast_ref::<T::Partial>());
        if last == Some(&value) {
            return None;
        }
        self.last = Some(Box::new(value.clone()));
        Some(StreamEvent::Partial {
            attempt: self.attempt,
            value,
        })
    }
}

fn cast<A: 'static, B: 'static>(value: A) -> Option<B> {
    (Box::new(value) as Box<dyn Any>)
        .downcast::<B>()
        .ok()
        .map(|boxed| *boxed)
}

impl<T: Partial + Send + 'static> Stream for IntentStream<T> {
    type Item = StreamEvent<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        // Events left over when a partial was returned early.
        if let Some(out) = this.take_events() {
            return Poll::Ready(Some(out));
        }
        let Some(call) = this.call.as_mut() else {
            return Poll::Ready(this.finished.take().map(StreamEvent::Final));
        };
        if let Poll::Ready(result) = call.as_mut().poll(cx) {
            this.call = None;
            this.finished = Some(result);
        }
        // The attempt loop sends its events while the call is polled, on this task:
        // whatever it sent is queued by the time the poll returns. A call still running
        // is not polled again here: it returned pending, so it has arranged its wake-up
        // (polling it again would walk the whole call for nothing, once per piece).
        if let Some(out) = this.take_events() {
            return Poll::Ready(Some(out));
        }
        match this.call {
            Some(_) => Poll::Pending,
            None => Poll::Ready(this.finished.take().map(StreamEvent::Final)),
        }
    }
}

impl<T: Partial + Send + 'static> IntentStream<T> {
    /// The next event, or `None` after the [`StreamEvent::Final`]: the stream read
    /// without importing a `Stream` extension trait (it is the same as
    /// `futures_util::StreamExt::next`).
    pub async fn next(&mut self) -> Option<StreamEvent<T>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }
}

/// Awaiting a stream runs the call to its end without looking at the partials, as
/// [`IntentStream::finish`] does: `client.invoice(text).await` is the verified record.
impl<T: Partial + Send + 'static> IntoFuture for IntentStream<T> {
    type Output = AIResult<T>;
    type IntoFuture = Pin<Box<dyn Future<Output = AIResult<T>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.finish())
    }
}

impl<T: Partial + Send + 'static> IntentStream<T> {
    /// Handles the queued events up to the first that makes an event for the caller.
    fn take_events(&mut self) -> Option<StreamEvent<T>> {
        while let Some(event) = self.events.next() {
            if let Some(out) = self.handle(event) {
                return Some(out);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::*;

    /// A list of rows of text: a target whose partials are read in full each time.
    type Rows = Vec<Vec<String>>;

    /// Streams a reply of `items` list items in 5-byte pieces, each taken in by the
    /// stream before the next is sent, as fast as the stream takes them (so only growth
    /// decides when a partial is read), and returns the reply's length, the partials
    /// shown, and the stream (its work counters).
    fn stream(items: usize) -> (usize, Vec<Rows>, IntentStream<Rows>) {
        use std::sync::atomic::{AtomicBool, Ordering};

        let list: Rows = (0..items)
            .map(|index| {
                vec![
                    format!("Item number {index}, boxed"),
                    format!("{}", 1000 + index),
                ]
            })
            .collect();
        let reply = serde_json::json!({ "value": list }).to_string();
        let (sink, events) = event_queue();
        let done = Arc::new(AtomicBool::new(false));
        let finished = Arc::clone(&done);
        let mut result = Some(AIResult {
            value: Some(list),
            issues: Vec::new(),
            attempts: Vec::new(),
            usage: Usage::default(),
            elapsed: Duration::ZERO,
        });
        // The call ends once every piece was sent.
        let call = Box::pin(futures_util::future::poll_fn(move |_| {
            match (finished.load(Ordering::SeqCst), result.take()) {
                (true, Some(result)) => Poll::Ready(result),
                (_, result_left) => {
                    result = result_left;
                    Poll::Pending
                }
            }
        }));
        let mut stream = IntentStream::new(call, events, false);
        // Only growth decides: the count does not depend on the machine's speed.
        stream.interval = Duration::MAX;
        let mut shown = Vec::new();
        let mut take = |stream: &mut IntentStream<_>| {
            while let Some(Some(event)) = stream.next().now_or_never() {
                if let StreamEvent::Partial { value, .. } = event {
                    shown.push(value);
                }
            }
        };
        for piece in reply.as_bytes().chunks(5) {
            let piece = String::from_utf8(piece.to_vec()).expect("an ASCII reply");
            sink.send(AttemptEvent::Text { attempt: 1, piece })
                .expect("the stream listens");
            take(&mut stream);
        }
        done.store(true, Ordering::SeqCst);
        take(&mut stream);
        assert!(
            stream.finished.is_none() && stream.call.is_none(),
            "the final event was taken"
        );
        (reply.len(), shown, stream)
    }

    #[test]
    fn the_work_of_a_streamed_reply_grows_linearly_with_its_length() {
        for items in [50, 200, 800, 3200] {
            let (len, shown, stream) = stream(items);
            // Every byte is read once by the reader; the partial reads cover at most
            // twice the reply, in a number of reads that grows with its logarithm.
            assert_eq!(stream.received, len);
            assert!(
                stream.read_bytes <= 2 * len,
                "{items} items: partial reads covered {} bytes of a {len}-byte reply",
                stream.read_bytes
            );
            let log2 = (usize::BITS - len.leading_zeros()) as usize;
            assert!(
                stream.reads <= log2,
                "{items} items: {} reads",
                stream.reads
            );
            // Still a partial each time the reply grew by a meaningful piece: the list
            // grows from its first item to most of it.
            assert_eq!(shown.first().map(Vec::len), Some(1), "{items} items");
            assert!(shown.len() >= 5, "{items} items: {} partials", shown.len());
            // Each partial only adds to the one before (the last item may have grown).
            for pair in shown.windows(2) {
                assert!(pair[1].len() >= pair[0].len());
                for (before, after) in pair[0].iter().zip(&pair[1]) {
                    assert!(after.starts_with(before), "{before:?} then {after:?}");
                }
            }
            assert!(
                shown.last().map_or(0, Vec::len) * 2 >= items,
                "{items} items"
            );
        }
    }
}
