//! Batch jobs: many calls sent through a provider's batch API (OpenAI's Batch API,
//! Anthropic's Message Batches, Gemini's Batch Mode: half the price, answered within a
//! day), every reply
//! verified, judged and retried exactly as a live call's, and the job's progress kept in a
//! directory so that a stopped process resumes where it was.
//!
//! # How a job runs
//!
//! Each item is an ordinary call ([`BatchItem`]: a `transform`, or a generated method's
//! `<method>_batch_item`: every method but a streaming one has a companion, decision
//! methods included), run by the same attempt loop as a live call: the same prompt,
//! the same request body, the same verifier and judge, the same record. Only the model
//! request travels differently: it joins the next provider batch, and the item waits
//! until that batch's results come back. Replies that fail verification are asked again,
//! with the previous reply and its problems in the conversation, in a follow-up batch, up
//! to the call's attempt limit; [`BatchOptions::live_from_attempt`] sends the last
//! attempts as live calls instead, for a job that would rather finish early than save.
//!
//! The per-call time budget does not apply inside a batch (a batch answers within
//! hours); the job's own [`BatchOptions::time_limit`] does. Judge calls, when the method
//! asks for the judge, are live calls; their verdicts are kept in the job's directory, so
//! a resumed job does not ask the judge again about an item it already judged.
//!
//! A decision method's companion asks its question through the job: a log-probability
//! question (OpenAI) is an ordinary Chat Completions request in the batch, its
//! log-probabilities stored with its reply; a stated-probability one is a request like
//! any intent's. Its result holds the typed answer and its tokens, or the decision's
//! error as its one issue (a decision is never retried). A client given its own decision
//! client ([`IntentClientBuilder::decision_client`](crate::IntentClientBuilder::decision_client))
//! asks that one, live.
//!
//! # Resuming
//!
//! After every step (a submission recorded, a batch created, a batch's results read) the
//! job's directory is updated by writing a temporary file and renaming it. Run the same
//! job (the same items, in the same order) with the same directory after a crash, and it
//! resumes: batches already created are polled rather than submitted again, results
//! already read are used as they are, and item ids (`item-<index>-<request>`) map every
//! result back exactly.
//!
//! Nothing stored is used before it is checked: every request the job records (in a
//! submission, beside its result, beside a judge's verdict) carries a fingerprint of the
//! request, one hash per part (model, system prompt, messages, format and settings), and
//! a stored result answers a request of a later run only when the fingerprints agree. A
//! directory that holds another job (another number of items, another provider, or any
//! item whose request differs, even one edited input among many) is refused with
//! [`BatchError::OtherJob`], naming the first differing item and the part that differs,
//! before anything is sent or handed out. (Queued requests are not checked: a run never
//! reads an earlier run's queue, it makes its requests again.)
//!
//! A results file that lost lines (a full disk, a crash while writing) is not a reason to
//! pay twice: the job reads the batch's results again from the provider, which keeps them
//! for days. Only when the provider no longer has them are those requests sent again,
//! counted in [`BatchProgress::resubmitted`] and noted on their items.
//!
//! # Stopping and canceling
//!
//! [`BatchJob::stop_handle`] stops a job at its next step: the provider's batches run on,
//! [`BatchJob::run`] returns [`BatchError::Stopped`], and the same job run again with the
//! directory resumes. [`BatchJob::cancel_handle`] cancels the batches instead, and
//! [`BatchOptions::time_limit`] cancels at a deadline; either way every unfinished item
//! says which, and the directory records it: run again, the job sends nothing, and its
//! unfinished items say that an earlier run canceled it and how to start afresh.
//!
//! A process stopped after asking the provider to create a batch but before its answer
//! was recorded does not send those requests twice either: every submission is recorded
//! with a tag first, and the next run looks for its batch. OpenAI batches carry the tag in
//! their `metadata` and are found by it. Anthropic's message batches carry no metadata, so
//! the batch is recognised by its number of requests and its creation time (within
//! minutes of the record) among the batches the job does not know; should another client
//! of the workspace have created a batch of the same size in those minutes, the job
//! cannot tell which is its own and submits the requests again.
//!
//! # Memory
//!
//! A job's memory is bounded by a setting, not by its number of items:
//! [`BatchOptions::max_items_in_memory`] (default [`DEFAULT_MAX_ITEMS_IN_MEMORY`], 10,000)
//! is the most items whose calls are in memory at once. An item in memory has started
//! and not finished: it runs here, or waits for its batch, holding its call's state and
//! its request (about 6.5 KB for a small item). The others stay as they were given (the
//! [`BatchItem`]s, not started) until an item that finishes makes room; the new items'
//! requests go out in the next submission, with the retries. A job of more items than
//! the bound so runs in waves, at least `items / bound` batch turnarounds: raise the
//! bound for fewer rounds, memory allowing. [`BatchProgress::in_memory`] and
//! [`BatchProgress::peak_in_memory`] say where a job stands. The finished items' results
//! are kept until the job returns them all, in the items' order.
//!
//! On a resume, the items the directory holds something for start first, so that what
//! it stored for them is checked before anything is sent (see above). A run given a lower
//! bound than the run before it may find every item in memory waiting for a submission
//! while some of those items are still to start; it then submits, and checks them after.
//!
//! The requests waiting for a submission are written to files in the job's directory as
//! the items make them, and each submission is uploaded as a stream read from there: a
//! job holds its items' calls, not a second copy of their requests nor the upload.
//!
//! ```
//! use intent_rs::batch::{BatchItem, BatchOptions};
//! use intent_rs::provider::ScriptedProvider;
//! use intent_rs::{IntentClient, IntentOptions};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let model = ScriptedProvider::new([r#"{"value": 3}"#, r#"{"value": 2}"#]);
//! let client = IntentClient::builder().provider(model).build().unwrap();
//! let items = ["one two three", "four five"]
//!     .map(|text| BatchItem::transform(text, "Count the words", IntentOptions::<u32>::new()));
//! let dir = std::env::temp_dir().join(format!("intent-batch-doc-{}", std::process::id()));
//! # let _ = std::fs::remove_dir_all(&dir);
//! let results = client
//!     .batch(items, BatchOptions::new(&dir).poll_interval(std::time::Duration::from_millis(1)))
//!     .run()
//!     .await
//!     .unwrap();
//! let counts: Vec<Option<u32>> = results.into_iter().map(|result| result.value).collect();
//! assert_eq!(counts, [Some(3), Some(2)]);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # });
//! ```

mod job;
mod router;
mod spool;
mod state;
mod verdicts;

use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use crate::provider::batch::{BatchLimits, BatchProvider};
pub use job::{BatchCancel, BatchJob, BatchStop};

use crate::client::IntentClient;
use crate::input::{InputError, PreparedInput, prepare_input};
use crate::options::IntentOptions;
use crate::provider::ProviderError;
use crate::result::{AIResult, Cause};

pub(crate) type ItemFuture<T> = Pin<Box<dyn Future<Output = AIResult<T>> + Send>>;

/// One call of a batch job: what a live call would send, not yet sent.
///
/// Build one with [`BatchItem::transform`] (or [`BatchItem::transform_value`]), or with a
/// generated client's `<method>_batch_item`, which takes the method's arguments.
pub struct BatchItem<T> {
    run: Box<dyn FnOnce(IntentClient) -> ItemFuture<T> + Send>,
}

impl<T> BatchItem<T> {
    /// An item that runs `call` on the job's client: what a generated method's companion
    /// builds (with the method's runtime schema, when it has one).
    pub(crate) fn from_fn(
        call: impl FnOnce(IntentClient) -> ItemFuture<T> + Send + 'static,
    ) -> Self {
        Self {
            run: Box::new(call),
        }
    }

    /// The same call, its result shown to `finished` when the call ends, on the job's
    /// task (a collection counts and prices its items there as they finish).
    pub(crate) fn on_finished(self, finished: impl FnOnce(&AIResult<T>) + Send + 'static) -> Self
    where
        T: 'static,
    {
        let run = self.run;
        Self::from_fn(move |client| {
            let call = run(client);
            Box::pin(async move {
                let result = call.await;
                finished(&result);
                result
            })
        })
    }
}

impl<T> fmt::Debug for BatchItem<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchItem").finish_non_exhaustive()
    }
}

impl<T> BatchItem<T>
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
{
    /// [`IntentClient::transform`] of `input`, as a batch item.
    pub fn transform<I>(input: &I, intent: impl Into<String>, options: IntentOptions<T>) -> Self
    where
        I: Serialize + JsonSchema + ?Sized,
    {
        Self::transform_input(prepare_input(input), intent, options)
    }

    /// [`IntentClient::transform_prepared`] of an input prepared by hand, as a batch item.
    pub fn transform_prepared(
        input: PreparedInput,
        intent: impl Into<String>,
        options: IntentOptions<T>,
    ) -> Self {
        Self::transform_input(Ok(input), intent, options)
    }

    /// A batch item of an input that was prepared, or failed to be (generated code).
    pub(crate) fn transform_input(
        input: Result<PreparedInput, InputError>,
        intent: impl Into<String>,
        options: IntentOptions<T>,
    ) -> Self {
        let intent = intent.into();
        Self {
            run: Box::new(move |client| {
                Box::pin(async move { client.transform_input(input, &intent, options).await })
            }),
        }
    }
}

impl BatchItem<Value> {
    /// [`IntentClient::transform_value`] of `input` with a runtime schema, as a batch item.
    pub fn transform_value<I>(
        input: &I,
        intent: impl Into<String>,
        schema: Option<Value>,
        options: IntentOptions<Value>,
    ) -> Self
    where
        I: Serialize + JsonSchema + ?Sized,
    {
        let input = prepare_input(input);
        let intent = intent.into();
        Self {
            run: Box::new(move |client| {
                Box::pin(async move {
                    client
                        .transform_value_prepared(input, &intent, schema.as_ref(), options)
                        .await
                })
            }),
        }
    }
}

impl IntentClient {
    /// A batch job of `items`, sent through the provider's batch API (see the
    /// [`batch`](crate::batch) module): every item verified, judged and retried as a live
    /// call is, the job's state kept in the options' directory so that it can resume.
    /// Nothing happens until [`BatchJob::run`] is awaited.
    pub fn batch<T, I>(&self, items: I, options: BatchOptions) -> BatchJob<T>
    where
        T: Send + 'static,
        I: IntoIterator<Item = BatchItem<T>>,
    {
        BatchJob::new(self.clone(), items.into_iter().collect(), options)
    }
}

/// Progress callback.
pub(crate) type ProgressFn = Arc<dyn Fn(&BatchProgress) + Send + Sync>;

/// How a batch job runs: where its state lives, how often it looks, how long it may take.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    pub(crate) dir: PathBuf,
    pub(crate) provider: Option<BatchProvider>,
    pub(crate) poll_interval: Duration,
    pub(crate) max_poll_interval: Duration,
    pub(crate) time_limit: Option<Duration>,
    pub(crate) live_from_attempt: Option<u32>,
    pub(crate) limits: Option<BatchLimits>,
    pub(crate) max_items_in_memory: usize,
}

/// The default of [`BatchOptions::max_items_in_memory`]: about 65 MB of waiting calls
/// for small items.
pub const DEFAULT_MAX_ITEMS_IN_MEMORY: usize = 10_000;

impl BatchOptions {
    /// A job whose state is kept in `dir` (created when missing; give the same directory
    /// to resume the job after a stop).
    pub fn new(dir: impl AsRef<Path>) -> Self {
        Self {
            dir: dir.as_ref().to_owned(),
            provider: None,
            poll_interval: Duration::from_secs(10),
            max_poll_interval: Duration::from_secs(300),
            time_limit: None,
            live_from_attempt: None,
            limits: None,
            max_items_in_memory: DEFAULT_MAX_ITEMS_IN_MEMORY,
        }
    }

    /// The batch API to use; by default the client's provider's own
    /// ([`Provider::batch`](crate::provider::Provider::batch)).
    pub fn provider(mut self, provider: BatchProvider) -> Self {
        self.provider = Some(provider);
        self
    }

    /// How long to wait before the first look at a batch (default 10 s); the wait
    /// doubles while nothing ends, up to [`BatchOptions::max_poll_interval`].
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self.max_poll_interval = self.max_poll_interval.max(interval);
        self
    }

    /// The longest wait between two looks (default 5 minutes).
    pub fn max_poll_interval(mut self, interval: Duration) -> Self {
        self.max_poll_interval = interval.max(self.poll_interval);
        self
    }

    /// How long the job may take, counted from its first start (across restarts): past
    /// it the job is canceled as by [`BatchCancel::cancel`], and every unfinished item
    /// says that the time limit ran out.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = Some(limit);
        self
    }

    /// Sends attempts from number `attempt` on (a retry) as live calls rather than in a
    /// follow-up batch: the job finishes sooner, at the live price for those calls.
    pub fn live_from_attempt(mut self, attempt: u32) -> Self {
        self.live_from_attempt = Some(attempt.max(2));
        self
    }

    /// Tighter limits on one batch than the provider's own (requests, bytes).
    pub fn limits(mut self, limits: BatchLimits) -> Self {
        self.limits = Some(limits);
        self
    }

    /// The most items whose calls are in memory at once (default
    /// [`DEFAULT_MAX_ITEMS_IN_MEMORY`], 10,000; at least 1; `usize::MAX` for no bound):
    /// the job's memory is bounded by this, not by its number of items. See
    /// [the module's section on memory](crate::batch#memory).
    ///
    /// An item in memory is one whose call has started and not finished: it runs here,
    /// or waits for its batch. It holds its call's state and its request (about 6.5 KB
    /// for a small item, more for a long input). The other items stay as they were
    /// given, not started. A job of more items than this runs in waves: an item that
    /// finishes makes room for the next, whose request goes out in the next submission
    /// with the retries; so such a job takes at least `items / max` batch turnarounds.
    /// Raise it (memory allowing) for fewer rounds: one OpenAI batch holds up to
    /// 50,000 requests, one Anthropic batch 100,000.
    pub fn max_items_in_memory(mut self, max: usize) -> Self {
        self.max_items_in_memory = max.max(1);
        self
    }
}

/// Where a batch job stands, handed to [`BatchJob::on_progress`] after every step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BatchProgress {
    /// Items in the job.
    pub items: usize,
    /// Requests waiting for the next submission.
    pub queued: usize,
    /// Requests in provider batches, not answered yet.
    pub submitted: usize,
    /// Items being verified (or judged, or retried live) on this machine.
    pub running: usize,
    /// Items finished with a verified value.
    pub done: usize,
    /// Items finished without one.
    pub failed: usize,
    /// Provider batches created for the job so far (by earlier runs too).
    pub batches: usize,
    /// Requests sent again because the job's directory lost their stored results and the
    /// provider no longer had them (billed again); each such item says so in its issues.
    pub resubmitted: usize,
    /// Items whose calls are in memory now: started and not finished (running here or
    /// waiting for a batch); never more than [`BatchOptions::max_items_in_memory`].
    pub in_memory: usize,
    /// The most items in memory at once so far in this run.
    pub peak_in_memory: usize,
}

impl BatchProgress {
    /// Items finished, with or without a value.
    pub fn finished(&self) -> usize {
        self.done + self.failed
    }
}

crate::failure::debug_as_message!(BatchError);

/// Why a batch job could not run; the failures of single items are on their results.
#[derive(Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    /// The client's provider has no batch API and none was given.
    #[error(
        "the provider `{provider}` has no batch API; use OpenAi or Anthropic, or pass one with `BatchOptions::provider`"
    )]
    NoBatchApi {
        /// The client's provider.
        provider: String,
    },
    /// The job has more items than item ids can number.
    #[error("a batch job holds at most {max} items; split the job")]
    TooManyItems {
        /// The most items one job holds.
        max: usize,
    },
    /// The state directory could not be read or written.
    #[error("the batch state at {path} could not be used: {message}")]
    State {
        /// The file or directory.
        path: PathBuf,
        /// What went wrong.
        message: String,
        /// The error below (the operating system's, the JSON reader's), when there was one.
        #[source]
        cause: Option<Cause>,
    },
    /// The directory holds another job: another number of items or another provider, or
    /// an item whose request differs from the one the directory stored for it (another
    /// input, instructions, model or settings). Nothing was sent, and nothing stored was
    /// handed out.
    #[error(
        "{dir} holds another batch job: {difference}; to resume that job, run it with the same items, in the same order, and the same provider; to run these items, give the job a new directory"
    )]
    OtherJob {
        /// The directory.
        dir: PathBuf,
        /// How it differs from this job: the first differing item (by index, counted
        /// from 0) and what differs in its request.
        difference: String,
    },
    /// The job was stopped ([`BatchStop::stop`]) before every item finished. Its provider
    /// batches go on, and its directory keeps everything: run the same job with it again
    /// to resume.
    #[error(
        "the batch job was stopped with {finished} of {items} items finished; its provider batches go on: run the same job with {dir} again to resume it"
    )]
    Stopped {
        /// The job's directory.
        dir: PathBuf,
        /// Items finished when it stopped.
        finished: usize,
        /// Items in the job.
        items: usize,
    },
    /// The provider's batch API failed in a way retrying cannot help (an invalid key, a
    /// batch that disappeared); the directory keeps the job for a later resume.
    #[error("the batch API failed: {0}")]
    Provider(#[from] ProviderError),
}
