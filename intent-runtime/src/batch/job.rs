//! The driver of a batch job: runs every item's call, submits the requests they make in
//! batches within the provider's limits, polls with backoff, hands results back, records
//! every step, reads again what its directory lost, stops or cancels on request, and
//! cancels at the time limit.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use tokio::sync::Notify;
use tokio::task::JoinSet;
use tracing::{Instrument, Span};

use super::router::{Earlier, Queued, Routed, Router, Taken, as_item};
use super::state::{Fingerprint, Inflight, JobState, RequestRef, Unconfirmed};
use super::verdicts::RecordedJudge;
use super::{BatchError, BatchItem, BatchOptions, BatchProgress, BatchProvider, ProgressFn};
use crate::client::IntentClient;
use crate::cost::CostTally;
use crate::judge::Judge;
use crate::provider::batch::{
    BatchApi, BatchLimits, BatchState, Input, Outcome, Submitting, parse_custom_id,
};
use crate::provider::{ProviderError, ProviderErrorKind};
use crate::result::{AIResult, IssueSource, ResultIssue, Usage};
use crate::telemetry::names::GEN_AI_PROVIDER_NAME;

/// How many times a submission that failed transiently is tried before its items fail.
const SUBMIT_TRIES: u32 = 3;

/// Cancels a running [`BatchJob`] from anywhere (another task, a signal handler).
///
/// Cancelling stops submitting, asks the provider to cancel the job's batches, waits for
/// them to end, and hands back every item: those answered before the cancellation
/// verified as usual, the others failed with a `canceled` provider issue. The directory
/// records the cancellation: the same job run again with it submits nothing, and its
/// unfinished items say that the job was canceled and how to start afresh. To interrupt
/// a job and resume it later, stop it instead ([`BatchStop`]).
#[derive(Debug, Clone, Default)]
pub struct BatchCancel {
    inner: Arc<CancelInner>,
}

/// Stops a running [`BatchJob`] from anywhere (another task, a signal handler), leaving
/// it resumable.
///
/// The job stops at its next step and returns [`BatchError::Stopped`]; the provider's
/// batches go on, and the directory keeps everything: the same job run again with the
/// same directory polls those batches and finishes. Nothing is canceled or paid twice;
/// requests that were waiting for their submission are made again by the next run.
#[derive(Debug, Clone)]
pub struct BatchStop {
    inner: Arc<CancelInner>,
}

impl BatchStop {
    /// Asks the job to stop.
    pub fn stop(&self) {
        self.inner.stopped.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    /// Whether a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        self.inner.stopped.load(Ordering::SeqCst)
    }
}

#[derive(Debug, Default)]
struct CancelInner {
    canceled: AtomicBool,
    stopped: AtomicBool,
    notify: Notify,
}

impl BatchCancel {
    /// Asks the job to cancel.
    pub fn cancel(&self) {
        self.inner.canceled.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    /// Whether cancellation was asked for.
    pub fn is_canceled(&self) -> bool {
        self.inner.canceled.load(Ordering::SeqCst)
    }

    /// Whether the job was asked to stop (see [`BatchStop`]).
    fn is_stopped(&self) -> bool {
        self.inner.stopped.load(Ordering::SeqCst)
    }

    /// Sleeps for `wait`, or less when cancellation or a stop is asked for meanwhile.
    async fn sleep(&self, wait: Duration) {
        let notified = self.inner.notify.notified();
        if self.is_canceled() || self.is_stopped() {
            return;
        }
        let _ = tokio::time::timeout(wait, notified).await;
    }

    /// Waits until a stop is asked for.
    async fn stopped(&self) {
        loop {
            // Created before the check: a stop asked for in between still wakes it.
            let notified = self.inner.notify.notified();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }
}

/// A batch job, ready to run: see [`IntentClient::batch`].
#[must_use = "a batch job does nothing until it is run"]
pub struct BatchJob<T> {
    client: IntentClient,
    items: Vec<BatchItem<T>>,
    options: BatchOptions,
    progress: Option<ProgressFn>,
    cancel: BatchCancel,
}

impl<T> std::fmt::Debug for BatchJob<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchJob")
            .field("items", &self.items.len())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// A submitted batch whose results are awaited.
struct Running {
    seq: u64,
    batch_id: String,
    requests: HashMap<(u32, u32), Fingerprint>,
}

impl From<Inflight> for Running {
    fn from(inflight: Inflight) -> Self {
        Running {
            seq: inflight.seq,
            batch_id: inflight.batch_id,
            requests: inflight.requests,
        }
    }
}

impl<T: Send + 'static> BatchJob<T> {
    pub(crate) fn new(
        client: IntentClient,
        items: Vec<BatchItem<T>>,
        options: BatchOptions,
    ) -> Self {
        Self {
            client,
            items,
            options,
            progress: None,
            cancel: BatchCancel::default(),
        }
    }

    /// Calls `report` with the job's counts after every step (a submission, a look at
    /// the batches, results handed back).
    pub fn on_progress(mut self, report: impl Fn(&BatchProgress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(report));
        self
    }

    /// A handle that cancels the job (see [`BatchCancel`]).
    pub fn cancel_handle(&self) -> BatchCancel {
        self.cancel.clone()
    }

    /// A handle that stops the job, to resume it later (see [`BatchStop`]).
    pub fn stop_handle(&self) -> BatchStop {
        BatchStop {
            inner: self.cancel.inner.clone(),
        }
    }

    /// Runs the job to its end and returns one result per item, in the items' order, each
    /// with the record a live call has (attempts, raw replies, repairs, issues, usage).
    ///
    /// Fails only when the job cannot go on or was stopped (see [`BatchError`]); the
    /// directory then keeps the job, to resume later.
    pub async fn run(self) -> Result<Vec<AIResult<T>>, BatchError> {
        let BatchJob {
            client,
            items,
            options,
            progress,
            cancel,
        } = self;
        let live = client.inner().provider.clone();
        let provider: BatchProvider = match options.provider.clone().or_else(|| live.batch()) {
            Some(provider) => provider,
            None => {
                return Err(BatchError::NoBatchApi {
                    provider: live.name().to_owned(),
                });
            }
        };
        let api = provider.api;
        let count = items.len();
        if u32::try_from(count).is_err() {
            return Err(BatchError::TooManyItems {
                max: u32::MAX as usize,
            });
        }
        let (mut state, loaded) = JobState::open(&options.dir, api.name(), count)?;
        let mut inflight = loaded.inflight;
        for unconfirmed in loaded.unconfirmed {
            inflight.extend(confirm(api.as_ref(), &mut state, &unconfirmed).await?);
        }
        let mut replay = loaded.replay;
        let mut resend = HashSet::new();
        for cut in loaded.cut_short {
            match reread(api.as_ref(), &mut state, cut, &mut replay).await? {
                Reread::Read => {}
                Reread::Running(cut) => inflight.push(cut),
                Reread::Gone(keys) => resend.extend(keys),
            }
        }
        // The items the directory holds something for start first, so that what it
        // stored for them is checked before anything is sent.
        let mut known: Vec<u32> = replay
            .keys()
            .chain(resend.iter())
            .map(|&(item, _)| item)
            .collect();
        let mut pending = HashMap::new();
        for inflight in &inflight {
            known.extend(inflight.requests.keys().map(|&(item, _)| item));
            pending.extend(
                inflight
                    .requests
                    .iter()
                    .map(|(key, fingerprint)| (*key, *fingerprint)),
            );
        }
        let router = Arc::new(Router::new(
            api.clone(),
            live,
            options.live_from_attempt,
            count,
            &options.dir,
            Earlier {
                replay,
                pending,
                resend,
            },
        ));
        // The judge's verdicts are kept with the job, so that a resumed item is not
        // judged again.
        let judge = match client.inner().judge.clone() {
            Some(judge) => Some(Arc::new(RecordedJudge::open(
                judge,
                &options.dir,
                count,
                router.clone(),
            )?) as Arc<dyn Judge>),
            None => None,
        };
        let job_client = client.for_batch(
            Arc::new(Routed(router.clone())),
            judge,
            options.live_from_attempt,
        );
        if let Some(reason) = state.canceled() {
            // Every unfinished item says why, and how to run it after all.
            router.cancel(&format!(
                "{reason} in an earlier run, as its directory {} records; to send these items again, remove that directory or give the job a new one",
                options.dir.display()
            ));
        }
        let mut feeder = Feeder::new(items, known);
        let mut tasks = JoinSet::new();
        let mut results: Vec<Option<AIResult<T>>> =
            std::iter::repeat_with(|| None).take(count).collect();
        // Starts items while fewer than the bound are in memory; whether any started.
        let top_up = |feeder: &mut Feeder<T>, tasks: &mut JoinSet<(u32, AIResult<T>)>| {
            let mut started = false;
            while router.in_memory() < options.max_items_in_memory {
                let Some((index, item)) = feeder.next() else {
                    break;
                };
                router.item_started();
                let item_client = job_client.clone();
                let finished = Finished {
                    router: router.clone(),
                    succeeded: None,
                };
                tasks.spawn(async move {
                    let mut finished = finished;
                    let result = as_item(index, (item.run)(item_client)).await;
                    finished.succeeded = Some(result.is_success());
                    (index, result)
                });
                started = true;
            }
            started
        };
        let mut driver = Driver {
            api: api.as_ref(),
            router: &router,
            state: &mut state,
            running: inflight.into_iter().map(Running::from).collect(),
            limits: options
                .limits
                .map_or(api.limits(), |limits| limits.min(api.limits())),
            progress,
            items: count,
            advised: None,
        };
        let deadline = options
            .time_limit
            .map(|limit| driver.state.started_at() + limit);
        let mut wait = options.poll_interval;
        loop {
            // Items start (up to the bound) and run until each finishes or waits for a
            // batch; those that finish make room for more. A stop does not wait for
            // items still being verified or judged here.
            loop {
                futures_util::future::select(
                    std::pin::pin!(cancel.stopped()),
                    std::pin::pin!(router.settled()),
                )
                .await;
                collect(&mut tasks, &mut results);
                if cancel.is_stopped()
                    || router.mismatch().is_some()
                    || router.failure().is_some()
                    || !top_up(&mut feeder, &mut tasks)
                {
                    break;
                }
            }
            if cancel.is_stopped() {
                let counts = router.counts();
                return Err(BatchError::Stopped {
                    dir: options.dir.clone(),
                    finished: counts.done + counts.failed,
                    items: count,
                });
            }
            // Checked before anything is submitted: a directory that holds another job
            // neither answers this one nor is sent its requests.
            if let Some(difference) = router.mismatch() {
                return Err(BatchError::OtherJob {
                    dir: options.dir.clone(),
                    difference,
                });
            }
            if let Some(failure) = router.failure() {
                return Err(failure);
            }
            if router.finished() {
                break;
            }
            if driver.state.canceled().is_none() {
                let reason = if cancel.is_canceled() {
                    Some("the batch job was canceled")
                } else if deadline.is_some_and(|at| SystemTime::now() >= at) {
                    Some("the batch job's time limit ran out")
                } else {
                    None
                };
                if let Some(reason) = reason {
                    driver.cancel(reason).await?;
                    continue;
                }
            }
            // Nothing is sent while items the directory holds something for are still to
            // be checked, unless nothing else can move: every item in memory waits for
            // the next submission (a bound lower than an earlier run's).
            let hold = feeder.unchecked() && router.counts().queued > 0;
            if hold && !driver.running.is_empty() {
                // Wait for the running batches instead: their items finish and make room.
            } else {
                if hold {
                    tracing::warn!(
                        "every item in memory waits for a submission while items the job's directory holds something for are still unchecked (the bound is lower than an earlier run's); submitting before checking them"
                    );
                }
                let queued = router.take_queue()?;
                if !queued.queued.is_empty() {
                    driver
                        .submit(queued, &cancel, options.poll_interval)
                        .await?;
                    driver.report();
                    wait = options.poll_interval;
                    continue;
                }
            }
            if driver.running.is_empty() {
                // Every item waits, yet nothing is queued or submitted: cannot happen, but
                // waiting forever would be the worst way to find out.
                router.cancel("the batch job lost track of its requests");
                continue;
            }
            let sleep = match deadline.and_then(|at| at.duration_since(SystemTime::now()).ok()) {
                Some(left) => wait.min(left),
                None => wait,
            };
            cancel.sleep(sleep).await;
            let ended = driver.poll().await?;
            driver.report();
            wait = if ended {
                options.poll_interval
            } else {
                (wait * 2).min(options.max_poll_interval)
            };
            // A provider that asked for a longer wait is not looked at before it.
            if let Some(advised) = driver.advised {
                wait = wait.max(advised);
            }
        }
        while let Some(joined) = tasks.join_next().await {
            keep(joined, &mut results);
        }
        let mut results: Vec<AIResult<T>> = results
            .into_iter()
            .map(|result| result.unwrap_or_else(panicked))
            .collect();
        for (item, k) in router.resent() {
            if let Some(result) = results.get_mut(item as usize) {
                result.issues.push(ResultIssue::new(
                    IssueSource::Provider,
                    "the job's directory lost this item's stored result, and the provider no longer had it: its request was sent again (and billed again)",
                    k + 1,
                ));
            }
        }
        // Items were priced as they ran, at the batch rates for what went through a
        // batch; the job's total joins the client's.
        let mut cost = CostTally::default();
        for result in &results {
            cost += &result.cost_tally();
        }
        tracing::info!(
            items = results.len(),
            cost = %cost.total().map_or_else(|unpriced| unpriced.to_string(), |cost| cost.to_string()),
            "batch job finished"
        );
        client.add_totals(
            results
                .iter()
                .map(|result| u64::from(result.model_calls()))
                .sum(),
            results
                .iter()
                .fold(Usage::default(), |sum, result| sum + result.usage),
            &cost,
        );
        driver.report();
        Ok(results)
    }
}

/// The items not started yet, handed out in the order the job starts them: first those
/// its directory holds something for (so that what it stored for them is checked before
/// anything is sent), then the others, each in the items' order.
struct Feeder<T> {
    items: Vec<Option<BatchItem<T>>>,
    /// The items the directory holds something for, in order, without repeats.
    known: Vec<u32>,
    next_known: usize,
    next: usize,
}

impl<T> Feeder<T> {
    fn new(items: Vec<BatchItem<T>>, mut known: Vec<u32>) -> Self {
        known.sort_unstable();
        known.dedup();
        known.retain(|&item| (item as usize) < items.len());
        Self {
            items: items.into_iter().map(Some).collect(),
            known,
            next_known: 0,
            next: 0,
        }
    }

    /// The next item to start, with its index.
    fn next(&mut self) -> Option<(u32, BatchItem<T>)> {
        while let Some(&index) = self.known.get(self.next_known) {
            self.next_known += 1;
            if let Some(item) = self.items.get_mut(index as usize).and_then(Option::take) {
                return Some((index, item));
            }
        }
        while let Some(slot) = self.items.get_mut(self.next) {
            let index = self.next as u32;
            self.next += 1;
            if let Some(item) = slot.take() {
                return Some((index, item));
            }
        }
        None
    }

    /// Whether items the directory holds something for are still to start.
    fn unchecked(&self) -> bool {
        self.next_known < self.known.len()
    }
}

/// Tells the router that an item's call ended, when its task ends: with its result, or
/// failed when the call panicked (it was running here then); a task dropped unfinished
/// (the job ended early: stopped, another job's directory) only leaves memory.
struct Finished {
    router: Arc<Router>,
    succeeded: Option<bool>,
}

impl Drop for Finished {
    fn drop(&mut self) {
        match self.succeeded {
            Some(succeeded) => self.router.item_finished(succeeded),
            None if std::thread::panicking() => self.router.item_finished(false),
            None => self.router.item_dropped(),
        }
    }
}

/// Moves the results of the items' tasks that ended into `results`, freeing the tasks.
fn collect<T: 'static>(
    tasks: &mut JoinSet<(u32, AIResult<T>)>,
    results: &mut [Option<AIResult<T>>],
) {
    while let Some(joined) = tasks.try_join_next() {
        keep(joined, results);
    }
}

fn keep<T>(
    joined: Result<(u32, AIResult<T>), tokio::task::JoinError>,
    results: &mut [Option<AIResult<T>>],
) {
    match joined {
        Ok((index, result)) => {
            if let Some(slot) = results.get_mut(index as usize) {
                *slot = Some(result);
            }
        }
        // Its slot stays empty: the item's result says that its call panicked.
        Err(error) => tracing::error!(%error, "a batch item's call panicked"),
    }
}

/// Asks the provider whether it created the batch of a submission whose creation an
/// earlier run did not live to record: found, the batch is adopted (in flight); not
/// found, the submission is abandoned and its requests go out again. A failed look
/// stops the job, leaving the question for the next run.
async fn confirm(
    api: &dyn BatchApi,
    state: &mut JobState,
    unconfirmed: &Unconfirmed,
) -> Result<Option<Inflight>, BatchError> {
    let span = tracing::info_span!(
        "batch",
        otel.name = "batch find",
        { GEN_AI_PROVIDER_NAME } = api.name(),
        intent.batch.id = tracing::field::Empty,
    );
    let known = state.batch_ids();
    let submitting = Submitting {
        tag: &unconfirmed.tag,
        requests: unconfirmed.requests,
        began_at_ms: unconfirmed.began_at_ms,
        known: &known,
    };
    let found = api
        .find(&submitting)
        .instrument(span.clone())
        .await
        .map_err(BatchError::Provider)?;
    match found {
        Some(batch_id) => {
            span.record("intent.batch.id", batch_id.as_str());
            tracing::info!(parent: &span, "a batch created before the process stopped was found; its results are awaited");
            state.adopted(unconfirmed.seq, &batch_id).map(Some)
        }
        None => {
            state.abandoned(unconfirmed.seq)?;
            Ok(None)
        }
    }
}

/// What reading a cut-short submission's results again came to.
enum Reread {
    /// The provider had them: they are stored again, and answer their requests.
    Read,
    /// The provider's batch has not ended (a results file written for a batch that was
    /// still running): it is awaited like any other.
    Running(Inflight),
    /// The provider no longer has the batch or its results: these requests go out again.
    Gone(Vec<(u32, u32)>),
}

/// Reads again, from the provider, the results that a collected submission's file lost
/// (a write cut short by a full disk or a crash): the provider keeps a batch's results
/// for days, and reading them again is free where sending the requests again is paid
/// again. Only when the provider no longer has them do the requests go out again, and
/// the job says so (in the log, its progress and the items). A failed look stops the
/// job, leaving the question for the next run.
async fn reread(
    api: &dyn BatchApi,
    state: &mut JobState,
    cut: Inflight,
    replay: &mut HashMap<(u32, u32), (Fingerprint, Outcome)>,
) -> Result<Reread, BatchError> {
    let span = tracing::info_span!(
        "batch",
        otel.name = "batch reread",
        { GEN_AI_PROVIDER_NAME } = api.name(),
        intent.batch.id = cut.batch_id.as_str(),
        intent.batch.requests = cut.requests.len(),
    );
    let gone = |error: &ProviderError| error.kind() == ProviderErrorKind::NotFound;
    let ended = if cut.batch_id.is_empty() {
        // A submission the provider refused has no batch to read from.
        None
    } else {
        match api.state(&cut.batch_id).instrument(span.clone()).await {
            Ok(BatchState::Running) => return Ok(Reread::Running(cut)),
            Ok(BatchState::Ended { handles, missing }) => Some((Some(handles), missing)),
            Ok(BatchState::Failed(reason)) => {
                Some((None, (ProviderErrorKind::InvalidRequest, reason)))
            }
            Err(error) if gone(&error) => None,
            Err(error) => return Err(BatchError::Provider(error)),
        }
    };
    if let Some((handles, missing)) = ended {
        let mut writer = state.results_writer(cut.seq)?;
        let read = read_ended(
            api,
            &cut.batch_id,
            &cut.requests,
            handles.as_deref(),
            missing,
            state.canceled(),
            &span,
            &mut |item, k, fingerprint, outcome| {
                writer.write(item, k, &outcome);
                replay.insert((item, k), (fingerprint, outcome));
            },
        )
        .await;
        match read {
            Ok(()) => {
                state.collected(writer)?;
                tracing::info!(parent: &span, "results the job's directory lost were read again from the provider");
                return Ok(Reread::Read);
            }
            Err(error) if gone(&error) => {}
            Err(error) => return Err(BatchError::Provider(error)),
        }
    }
    tracing::warn!(
        parent: &span,
        "the job's directory lost results that the provider no longer has; their requests are sent again"
    );
    let mut keys: Vec<(u32, u32)> = cut.requests.into_keys().collect();
    keys.sort_unstable();
    Ok(Reread::Gone(keys))
}

/// Reads the results of the ended batch `batch_id` (from `handles`; `None` when the
/// batch failed as a whole) and hands `each` the outcome of every one of `requests`:
/// those the results do not name fail with `missing`. Every outcome passes here, so the
/// key is redacted from every error a provider wrote, and a request the job's
/// cancellation left unanswered says why the job canceled (`canceled`).
#[allow(clippy::too_many_arguments)] // one call per caller; a struct would only rename them
async fn read_ended(
    api: &dyn BatchApi,
    batch_id: &str,
    requests: &HashMap<(u32, u32), Fingerprint>,
    handles: Option<&[String]>,
    missing: (ProviderErrorKind, String),
    canceled: Option<&str>,
    span: &Span,
    each: &mut (dyn FnMut(u32, u32, Fingerprint, Outcome) + Send),
) -> Result<(), ProviderError> {
    let secret = api.secret();
    let settle = |outcome: Outcome| -> Outcome {
        outcome.map_err(|error| {
            let error = error.redacted(secret);
            match canceled {
                Some(reason) if error.kind() == ProviderErrorKind::Canceled => {
                    canceled_by_job(&error, reason)
                }
                _ => error,
            }
        })
    };
    let mut answered = HashSet::new();
    if let Some(handles) = handles {
        let mut sink = |custom_id: &str, outcome: Outcome| {
            let Some(key) = parse_custom_id(custom_id) else {
                return;
            };
            if let Some(fingerprint) = requests.get(&key)
                && answered.insert(key)
            {
                each(key.0, key.1, *fingerprint, settle(outcome));
            }
        };
        api.results(batch_id, handles, &mut sink)
            .instrument(span.clone())
            .await?;
    }
    for (&(item, k), fingerprint) in requests {
        if !answered.contains(&(item, k)) {
            let outcome = Err(ProviderError::new(
                missing.0,
                api.name(),
                missing.1.as_str(),
            ));
            each(item, k, *fingerprint, settle(outcome));
        }
    }
    Ok(())
}

/// A request the provider canceled because the job canceled its batch: the error says
/// why the job did (asked to, or its time limit), beside the provider's own words.
fn canceled_by_job(error: &ProviderError, reason: &str) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::Canceled,
        error.provider(),
        format!(
            "not answered: {reason} (its batch was canceled at the provider: {})",
            error.message()
        ),
    )
}

fn panicked<T>() -> AIResult<T> {
    AIResult {
        value: None,
        issues: vec![ResultIssue::new(
            IssueSource::Input,
            "the item's call panicked (a validator or the input's serialization); see the log",
            1,
        )],
        attempts: Vec::new(),
        usage: Usage::default(),
        elapsed: Duration::ZERO,
    }
}

struct Driver<'a> {
    api: &'a dyn BatchApi,
    router: &'a Router,
    state: &'a mut JobState,
    running: Vec<Running>,
    limits: BatchLimits,
    progress: Option<ProgressFn>,
    items: usize,
    /// The longest wait a provider asked for while the last look failed transiently: the
    /// next look waits at least this long.
    advised: Option<Duration>,
}

impl Driver<'_> {
    fn report(&self) {
        let Some(report) = &self.progress else {
            return;
        };
        let counts = self.router.counts();
        report(&BatchProgress {
            items: self.items,
            queued: counts.queued,
            submitted: counts.waiting,
            running: counts.running,
            done: counts.done,
            failed: counts.failed,
            batches: self.state.batches(),
            resubmitted: counts.resubmitted,
            in_memory: counts.in_memory,
            peak_in_memory: counts.peak_in_memory,
        });
    }

    /// Splits the queued requests by model and by the limits, and submits each part
    /// from its model's queue file; the file is removed once all its parts are.
    async fn submit(
        &mut self,
        taken: Taken,
        cancel: &BatchCancel,
        backoff: Duration,
    ) -> Result<(), BatchError> {
        let mut by_model: BTreeMap<String, Vec<Queued>> = BTreeMap::new();
        for request in taken.queued {
            by_model
                .entry(request.model.clone())
                .or_default()
                .push(request);
        }
        for (model, requests) in by_model {
            let Some(path) = taken.files.get(&model) else {
                return Err(BatchError::State {
                    path: PathBuf::new(),
                    message: format!("the queue file of the requests to {model} is missing"),
                    cause: None,
                });
            };
            for part in split(requests, self.limits) {
                self.submit_part(&model, path, part, cancel, backoff)
                    .await?;
            }
            let _ = std::fs::remove_file(path);
        }
        Ok(())
    }

    async fn submit_part(
        &mut self,
        model: &str,
        path: &Path,
        part: Vec<Queued>,
        cancel: &BatchCancel,
        backoff: Duration,
    ) -> Result<(), BatchError> {
        let refs: Vec<RequestRef> = part
            .iter()
            .map(|request| RequestRef {
                item: request.item,
                k: request.k,
                fingerprint: request.fingerprint,
            })
            .collect();
        // The parts of one model's file are consecutive runs of its lines.
        let input = Input {
            path: path.to_owned(),
            start: part.first().map_or(0, |request| request.placed.start),
            len: part.iter().map(|request| request.placed.len).sum(),
            count: part.len(),
        };
        drop(part);
        let seq = self.state.begin(model, &refs)?;
        let tag = self.state.tag(seq);
        let span = tracing::info_span!(
            "batch",
            otel.name = "batch submit",
            { GEN_AI_PROVIDER_NAME } = self.api.name(),
            gen_ai.request.model = model,
            intent.batch.requests = input.count,
            intent.batch.id = tracing::field::Empty,
        );
        let mut tries = 0;
        let outcome = loop {
            tries += 1;
            match self
                .api
                .submit(model, &input, &tag)
                .instrument(span.clone())
                .await
            {
                Ok(id) => break Ok(id),
                Err(error) if error.is_transient() && tries < SUBMIT_TRIES => {
                    // The provider's advice, when it gave one, rather than the backoff.
                    let wait = error.retry_after().unwrap_or(backoff * tries);
                    tracing::warn!(parent: &span, %error, wait_ms = wait.as_millis() as u64, "a batch submission failed; trying again");
                    cancel.sleep(wait).await;
                }
                Err(error) => break Err(error),
            }
        };
        match outcome {
            Ok(batch_id) => {
                span.record("intent.batch.id", batch_id.as_str());
                self.state.submitted(seq, &batch_id)?;
                self.running.push(Running {
                    seq,
                    batch_id,
                    requests: refs
                        .iter()
                        .map(|r| ((r.item, r.k), r.fingerprint))
                        .collect(),
                });
            }
            Err(error) => {
                tracing::warn!(parent: &span, %error, "a batch submission was refused; its items fail");
                if !error.request_sent() || error.kind() == ProviderErrorKind::Authentication {
                    // Nothing the provider kept: an invalid key or a refused connection
                    // ends the job, to resume once fixed.
                    self.state.abandoned(seq)?;
                    return Err(BatchError::Provider(error));
                }
                let mut writer = self.state.results_writer(seq)?;
                for request in &refs {
                    let outcome: Outcome = Err(error.clone());
                    writer.write(request.item, request.k, &outcome);
                    self.router
                        .deliver(request.item, request.k, request.fingerprint, outcome);
                }
                self.state.collected(writer)?;
            }
        }
        Ok(())
    }

    /// Looks at every running batch once and reads the results of those that ended;
    /// whether any did.
    async fn poll(&mut self) -> Result<bool, BatchError> {
        let mut ended_any = false;
        self.advised = None;
        let mut index = 0;
        while index < self.running.len() {
            let batch_id = self.running[index].batch_id.clone();
            let span = tracing::info_span!(
                "batch",
                otel.name = "batch poll",
                { GEN_AI_PROVIDER_NAME } = self.api.name(),
                intent.batch.id = batch_id.as_str(),
                intent.batch.state = tracing::field::Empty,
            );
            let state = match self.api.state(&batch_id).instrument(span.clone()).await {
                Ok(state) => state,
                Err(error) if error.is_transient() => {
                    tracing::warn!(parent: &span, %error, "looking at a batch failed; looking again later");
                    self.advise(&error);
                    index += 1;
                    continue;
                }
                Err(error) => return Err(BatchError::Provider(error)),
            };
            let (handles, missing) = match state {
                BatchState::Running => {
                    span.record("intent.batch.state", "running");
                    index += 1;
                    continue;
                }
                BatchState::Failed(reason) => {
                    span.record("intent.batch.state", "failed");
                    (None, (ProviderErrorKind::InvalidRequest, reason))
                }
                BatchState::Ended { handles, missing } => {
                    span.record("intent.batch.state", "ended");
                    (Some(handles), missing)
                }
            };
            let running = &self.running[index];
            let mut writer = self.state.results_writer(running.seq)?;
            let router = self.router;
            let read = read_ended(
                self.api,
                &batch_id,
                &running.requests,
                handles.as_deref(),
                missing,
                self.state.canceled(),
                &span,
                &mut |item, k, fingerprint, outcome| {
                    writer.write(item, k, &outcome);
                    router.deliver(item, k, fingerprint, outcome);
                },
            )
            .await;
            if let Err(error) = read {
                if error.is_transient() {
                    // Read again on the next look; what was handed back is handed back
                    // again then, and kept aside by the router.
                    tracing::warn!(parent: &span, %error, "reading a batch's results failed; reading again later");
                    self.advise(&error);
                    index += 1;
                    continue;
                }
                return Err(BatchError::Provider(error));
            }
            self.state.collected(writer)?;
            self.running.swap_remove(index);
            ended_any = true;
        }
        Ok(ended_any)
    }

    /// Keeps the wait `error` asks for, the longest of this look's.
    fn advise(&mut self, error: &ProviderError) {
        if let Some(wait) = error.retry_after() {
            self.advised = Some(self.advised.map_or(wait, |other| other.max(wait)));
        }
    }

    /// Cancels the job: queued requests fail at once, running batches are asked to stop.
    async fn cancel(&mut self, reason: &str) -> Result<(), BatchError> {
        self.state.set_canceled(reason)?;
        self.router.cancel(reason);
        for running in &self.running {
            let span = tracing::info_span!(
                "batch",
                otel.name = "batch cancel",
                { GEN_AI_PROVIDER_NAME } = self.api.name(),
                intent.batch.id = running.batch_id.as_str(),
            );
            if let Err(error) = self
                .api
                .cancel(&running.batch_id)
                .instrument(span.clone())
                .await
            {
                tracing::warn!(parent: &span, %error, "canceling a batch failed; its results are still read when it ends");
            }
        }
        Ok(())
    }
}

/// `requests` in parts within `limits` (a line is never split; one larger than the byte
/// limit goes alone, for the provider to refuse).
fn split(requests: Vec<Queued>, limits: BatchLimits) -> Vec<Vec<Queued>> {
    let mut parts = Vec::new();
    let mut part: Vec<Queued> = Vec::new();
    let mut bytes = 0;
    for request in requests {
        let size = usize::try_from(request.placed.len).unwrap_or(usize::MAX);
        if !part.is_empty()
            && (part.len() >= limits.max_requests.max(1) || bytes + size > limits.max_bytes)
        {
            parts.push(std::mem::take(&mut part));
            bytes = 0;
        }
        bytes += size;
        part.push(request);
    }
    if !part.is_empty() {
        parts.push(part);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::spool::Placed;

    fn queued(item: u32, size: usize) -> Queued {
        Queued {
            item,
            k: 0,
            model: "m".into(),
            fingerprint: Fingerprint::test(0),
            placed: Placed {
                start: 0,
                len: size as u64 + 1,
            },
        }
    }

    #[test]
    fn items_the_directory_knows_start_first_then_the_others_in_order() {
        let items = (0..6)
            .map(|_| BatchItem::<u32>::from_fn(|_| Box::pin(async { panicked() })))
            .collect();
        let mut feeder = Feeder::new(items, vec![4, 1, 4, 9]);
        assert!(feeder.unchecked());
        let mut order = Vec::new();
        while let Some((index, _)) = feeder.next() {
            order.push(index);
            if index == 4 {
                assert!(!feeder.unchecked());
            }
        }
        assert_eq!(order, [1, 4, 0, 2, 3, 5]);
    }

    #[test]
    fn requests_are_split_by_count_and_by_bytes() {
        let limits = BatchLimits {
            max_requests: 2,
            max_bytes: 25,
        };
        let parts = split((0..5).map(|i| queued(i, 9)).collect(), limits);
        let items: Vec<Vec<u32>> = parts
            .iter()
            .map(|part| part.iter().map(|q| q.item).collect())
            .collect();
        assert_eq!(items, [vec![0, 1], vec![2, 3], vec![4]]);
        let limits = BatchLimits {
            max_requests: 10,
            max_bytes: 25,
        };
        let parts = split(
            vec![queued(0, 30), queued(1, 10), queued(2, 10), queued(3, 10)],
            limits,
        );
        let sizes: Vec<usize> = parts.iter().map(Vec::len).collect();
        assert_eq!(sizes, [1, 2, 1]);
    }
}
