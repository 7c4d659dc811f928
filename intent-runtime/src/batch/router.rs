//! The provider a batch job's items call through: each request is answered from what an
//! earlier run stored, or joins the next submission (or the batch it is already in), and
//! its item waits until the batch's results come back.
//!
//! Every item runs the ordinary attempt loop (prompt, verify, judge, retry with the
//! problems fed back); only the transport differs. That is what makes a batch item's
//! record the same as a live call's.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::{oneshot, watch};

use super::BatchError;
use super::spool::{Placed, Spool};
use super::state::{Fingerprint, item_difference};
use crate::provider::batch::{BatchApi, Outcome, custom_id};
use crate::provider::{
    Provider, ProviderError, ProviderErrorKind, ProviderReply, ProviderRequest, Role,
};

tokio::task_local! {
    /// The item whose call is running in this task.
    static ITEM: u32;
}

/// The item whose call runs in this task, inside a batch job.
pub(crate) fn current_item() -> Option<u32> {
    ITEM.try_with(|item| *item).ok()
}

/// Runs `future` as item `item`'s call: its requests are routed as that item's.
pub(crate) async fn as_item<F: Future>(item: u32, future: F) -> F::Output {
    ITEM.scope(item, future).await
}

/// A request waiting for its submission; its line is in its model's queue file.
#[derive(Debug)]
pub(crate) struct Queued {
    pub item: u32,
    pub k: u32,
    pub model: String,
    pub fingerprint: Fingerprint,
    pub placed: Placed,
}

/// The requests queued since the last submission, and their files by model.
#[derive(Debug, Default)]
pub(crate) struct Taken {
    pub queued: Vec<Queued>,
    pub files: HashMap<String, PathBuf>,
}

#[derive(Debug)]
struct Shared {
    /// Requests made so far, per item: the next one's number.
    calls: Vec<u32>,
    /// Outcomes already known (stored by an earlier run, or delivered before asked for),
    /// each with the fingerprint of the request it answers.
    replay: HashMap<(u32, u32), (Fingerprint, Outcome)>,
    /// Requests in a provider batch created by an earlier run, with their fingerprints.
    pending: HashMap<(u32, u32), Fingerprint>,
    waiters: HashMap<(u32, u32), oneshot::Sender<Outcome>>,
    queue: Vec<Queued>,
    /// The queued requests' lines, on disk.
    spool: Spool,
    canceled: Option<String>,
    /// The first request (by item, then request number) that differs from what the
    /// directory stored for it, and how.
    mismatch: Option<((u32, u32), String)>,
    /// Why the job cannot go on (its queue could not be written).
    failure: Option<BatchError>,
    /// Requests whose stored results were lost and that the provider no longer has: they
    /// go out again, and their items say so.
    resend: HashSet<(u32, u32)>,
    /// Those of them queued again so far.
    resent: Vec<(u32, u32)>,
    /// Items running locally: neither finished nor waiting for a batch.
    running: usize,
    /// Each item's requests waiting for their outcomes: an item counts as running unless
    /// every one of them is queued or in a batch (a decision of several questions asks
    /// them at once, and its item waits only once all of them wait).
    requests: HashMap<u32, ItemRequests>,
    /// Items started and not finished: running locally or waiting for a batch.
    in_memory: usize,
    /// The most items in memory at once so far.
    peak_in_memory: usize,
    done: usize,
    failed: usize,
}

/// What earlier runs of a job left for this one.
#[derive(Debug, Default)]
pub(crate) struct Earlier {
    /// Stored outcomes, by (item, request number), each with the fingerprint of the
    /// request it answers.
    pub replay: HashMap<(u32, u32), (Fingerprint, Outcome)>,
    /// Requests in provider batches that have not ended, with their fingerprints.
    pub pending: HashMap<(u32, u32), Fingerprint>,
    /// Requests whose stored results were lost and that the provider no longer has.
    pub resend: HashSet<(u32, u32)>,
}

/// Counts for progress reports.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Counts {
    pub queued: usize,
    pub waiting: usize,
    pub running: usize,
    pub done: usize,
    pub failed: usize,
    pub resubmitted: usize,
    pub in_memory: usize,
    pub peak_in_memory: usize,
}

/// Routes a job's requests into its batches.
#[derive(Debug)]
pub(crate) struct Router {
    shared: Mutex<Shared>,
    running: watch::Sender<usize>,
    api: Arc<dyn BatchApi>,
    live: Arc<dyn Provider>,
    live_from: Option<u32>,
}

fn canceled_error(provider: &str, reason: &str) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::Canceled,
        provider,
        format!("not answered: {reason}"),
    )
    .not_sent()
}

impl Router {
    /// A router for `items` items, queuing requests in files in `dir`, starting from what
    /// `earlier` runs left.
    pub(crate) fn new(
        api: Arc<dyn BatchApi>,
        live: Arc<dyn Provider>,
        live_from: Option<u32>,
        items: usize,
        dir: &Path,
        earlier: Earlier,
    ) -> Self {
        let Earlier {
            replay,
            pending,
            resend,
        } = earlier;
        let shared = Shared {
            calls: vec![0; items],
            replay,
            pending,
            waiters: HashMap::new(),
            queue: Vec::new(),
            spool: Spool::new(dir),
            canceled: None,
            mismatch: None,
            failure: None,
            resend,
            resent: Vec::new(),
            running: 0,
            requests: HashMap::new(),
            in_memory: 0,
            peak_in_memory: 0,
            done: 0,
            failed: 0,
        };
        Self {
            shared: Mutex::new(shared),
            running: watch::Sender::new(0),
            api,
            live,
            live_from,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        // Every change is made whole under the lock: a panic elsewhere leaves it sound.
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn publish(&self, shared: &Shared) {
        self.running.send_replace(shared.running);
    }

    /// Waits until no item runs locally: every one is finished or waits for a batch.
    pub(crate) async fn settled(&self) {
        let mut running = self.running.subscribe();
        // The sender lives as long as `self`: the wait cannot fail.
        let _ = running.wait_for(|running| *running == 0).await;
    }

    /// Takes the requests waiting for a submission, and their files.
    pub(crate) fn take_queue(&self) -> Result<Taken, BatchError> {
        let mut shared = self.lock();
        let queued = std::mem::take(&mut shared.queue);
        let files = shared.spool.take()?;
        Ok(Taken { queued, files })
    }

    /// Why the job cannot go on, when it cannot.
    pub(crate) fn failure(&self) -> Option<BatchError> {
        self.lock().failure.clone()
    }

    /// Whether every item finished.
    pub(crate) fn finished(&self) -> bool {
        let shared = self.lock();
        shared.done + shared.failed == shared.calls.len()
    }

    /// How the first request of this run that differs from what the directory stored
    /// for it differs, when one does: the directory holds another job.
    pub(crate) fn mismatch(&self) -> Option<String> {
        self.lock()
            .mismatch
            .as_ref()
            .map(|(_, difference)| difference.clone())
    }

    /// Records that request `k` of `item` differs from what the directory stored for it
    /// (`difference`), keeping the first by item; the error its call fails with, so that
    /// nothing stored answers it and nothing is sent for it.
    pub(crate) fn other_job(&self, item: u32, k: u32, difference: String) -> ProviderError {
        let mut shared = self.lock();
        shared.note_mismatch(item, k, difference);
        other_job_error(self.api.name())
    }

    pub(crate) fn counts(&self) -> Counts {
        let shared = self.lock();
        Counts {
            queued: shared.queue.len(),
            waiting: shared.waiters.len() - shared.queue.len().min(shared.waiters.len()),
            running: shared.running,
            done: shared.done,
            failed: shared.failed,
            resubmitted: shared.resent.len(),
            in_memory: shared.in_memory,
            peak_in_memory: shared.peak_in_memory,
        }
    }

    /// Items started and not finished.
    pub(crate) fn in_memory(&self) -> usize {
        self.lock().in_memory
    }

    /// Records that an item's call is about to start: it runs locally until it waits for
    /// a batch or finishes. Counted before the item's task is spawned, so that the job
    /// does not find its items settled before the new one made its request.
    pub(crate) fn item_started(&self) {
        let mut shared = self.lock();
        shared.running += 1;
        shared.in_memory += 1;
        shared.peak_in_memory = shared.peak_in_memory.max(shared.in_memory);
        self.publish(&shared);
    }

    /// The requests sent again because their stored results were lost for good.
    pub(crate) fn resent(&self) -> Vec<(u32, u32)> {
        self.lock().resent.clone()
    }

    /// Hands request `k` of `item` (whose fingerprint is `fingerprint`) its outcome, kept
    /// for later when it was not asked for yet.
    pub(crate) fn deliver(&self, item: u32, k: u32, fingerprint: Fingerprint, outcome: Outcome) {
        let mut shared = self.lock();
        match shared.waiters.remove(&(item, k)) {
            Some(waiter) => {
                let delivered = waiter.send(outcome).is_ok();
                shared.answered(item, delivered);
                self.publish(&shared);
            }
            None => {
                shared.replay.insert((item, k), (fingerprint, outcome));
            }
        }
    }

    /// Stops submitting: queued requests fail as canceled, and so will any later one.
    pub(crate) fn cancel(&self, reason: &str) {
        let mut shared = self.lock();
        shared.canceled = Some(reason.to_owned());
        for queued in std::mem::take(&mut shared.queue) {
            if let Some(waiter) = shared.waiters.remove(&(queued.item, queued.k)) {
                let delivered = waiter
                    .send(Err(canceled_error(self.api.name(), reason)))
                    .is_ok();
                shared.answered(queued.item, delivered);
            }
        }
        self.publish(&shared);
    }

    /// Records that an item's call was dropped unfinished, the job having ended: it
    /// leaves memory, and nothing else is counted.
    pub(crate) fn item_dropped(&self) {
        let mut shared = self.lock();
        shared.in_memory = shared.in_memory.saturating_sub(1);
    }

    /// Records that an item's call ended.
    pub(crate) fn item_finished(&self, succeeded: bool) {
        let mut shared = self.lock();
        shared.running -= 1;
        shared.in_memory -= 1;
        if succeeded {
            shared.done += 1;
        } else {
            shared.failed += 1;
        }
        self.publish(&shared);
    }

    async fn route(&self, item: u32, request: &ProviderRequest) -> Outcome {
        let fingerprint = Fingerprint::of(request);
        let (k, receiver, needs_line) = match self.step(item, request, fingerprint) {
            Step::Answered(outcome) => return *outcome,
            Step::Live => return self.live.complete(request).await,
            Step::Wait {
                k,
                receiver,
                needs_line,
            } => (k, receiver, needs_line),
        };
        if needs_line {
            let line = self.api.line(&custom_id(item, k), request).await;
            self.enqueue(item, k, request, fingerprint, line)?;
        }
        receiver
            .await
            .unwrap_or_else(|_| Err(canceled_error(self.api.name(), "the batch job stopped")))
    }

    /// What to do with the next request of `item`, decided under the lock.
    fn step(&self, item: u32, request: &ProviderRequest, fingerprint: Fingerprint) -> Step {
        let mut shared = self.lock();
        let Some(calls) = shared.calls.get_mut(item as usize) else {
            return Step::Live;
        };
        let k = *calls;
        *calls += 1;
        // Nothing stored answers a request before its fingerprint says it is the very
        // request it answers: a directory reused for other inputs would hand back
        // another job's replies.
        if let Some((stored, outcome)) = shared.replay.remove(&(item, k)) {
            return Step::Answered(Box::new(match stored.difference(&fingerprint) {
                // A request the job's cancellation left unanswered says why, in this
                // run's words (a resumed canceled job says how to start afresh).
                None => match (&shared.canceled, outcome) {
                    (Some(reason), Err(error)) if error.kind() == ProviderErrorKind::Canceled => {
                        Err(canceled_error(self.api.name(), reason))
                    }
                    (_, outcome) => outcome,
                },
                Some(what) => {
                    shared.note_mismatch(item, k, item_difference(item, k, what));
                    Err(other_job_error(self.api.name()))
                }
            }));
        }
        if let Some(reason) = &shared.canceled {
            return Step::Answered(Box::new(Err(canceled_error(self.api.name(), reason))));
        }
        let attempt = 1 + request
            .messages
            .iter()
            .filter(|message| message.role == Role::Assistant)
            .count() as u32;
        if self.live_from.is_some_and(|from| attempt >= from) {
            return Step::Live;
        }
        // A request already in a batch an earlier run created waits for that batch, once
        // its fingerprint says it is the same request; any other joins the next
        // submission.
        let needs_line = match shared.pending.remove(&(item, k)) {
            Some(stored) => match stored.difference(&fingerprint) {
                None => false,
                Some(what) => {
                    shared.note_mismatch(item, k, item_difference(item, k, what));
                    return Step::Answered(Box::new(Err(other_job_error(self.api.name()))));
                }
            },
            None => true,
        };
        let (sender, receiver) = oneshot::channel();
        shared.waiters.insert((item, k), sender);
        shared.change(item, |requests| {
            requests.waiting += 1;
            // Already in a batch an earlier run created: it waits from now on.
            requests.queued += u32::from(!needs_line);
        });
        if !needs_line {
            self.publish(&shared);
        }
        Step::Wait {
            k,
            receiver,
            needs_line,
        }
    }

    /// Queues request `k` of `item` for the next submission, unless the job was canceled
    /// meanwhile or the line could not be written.
    fn enqueue(
        &self,
        item: u32,
        k: u32,
        request: &ProviderRequest,
        fingerprint: Fingerprint,
        line: Result<Vec<u8>, ProviderError>,
    ) -> Result<(), ProviderError> {
        let mut shared = self.lock();
        let refusal = match line {
            Ok(_) if shared.canceled.is_some() => canceled_error(
                self.api.name(),
                shared.canceled.as_deref().unwrap_or_default(),
            ),
            Ok(line) => {
                let model = self.api.model_of(request);
                let placed = shared.spool.push(&model, &line);
                // The line is on disk now; only where it is stays in memory.
                drop(line);
                match placed {
                    Ok(placed) => {
                        if shared.resend.remove(&(item, k)) {
                            shared.resent.push((item, k));
                        }
                        shared.queue.push(Queued {
                            item,
                            k,
                            model,
                            fingerprint,
                            placed,
                        });
                        shared.change(item, |requests| requests.queued += 1);
                        self.publish(&shared);
                        return Ok(());
                    }
                    Err(failure) => {
                        let error = ProviderError::new(
                            ProviderErrorKind::Configuration,
                            self.api.name(),
                            format!("the request could not be queued: {failure}"),
                        )
                        .not_sent();
                        shared.failure.get_or_insert(failure);
                        error
                    }
                }
            }
            Err(error) => error,
        };
        shared.waiters.remove(&(item, k));
        // Refused before it waited: the item goes on here with the error.
        shared.change(item, |requests| {
            requests.waiting = requests.waiting.saturating_sub(1);
        });
        Err(refusal)
    }
}

/// One item's requests that wait for their outcomes.
#[derive(Debug, Default, Clone, Copy)]
struct ItemRequests {
    /// Requests handed to the router and not answered yet.
    waiting: u32,
    /// Of those, the ones queued for a submission or in a batch.
    queued: u32,
}

impl ItemRequests {
    /// Whether the item runs here: it does unless all its waiting requests are queued
    /// or in a batch.
    fn running(self) -> bool {
        self.waiting == 0 || self.queued < self.waiting
    }
}

impl Shared {
    /// Applies `change` to `item`'s waiting requests, and counts the item as running or
    /// not by what they are now.
    fn change(&mut self, item: u32, change: impl FnOnce(&mut ItemRequests)) {
        let requests = self.requests.entry(item).or_default();
        let was_running = requests.running();
        change(requests);
        let now = *requests;
        if now.waiting == 0 {
            self.requests.remove(&item);
        }
        match (was_running, now.running()) {
            (true, false) => self.running -= 1,
            (false, true) => self.running += 1,
            _ => {}
        }
    }

    /// A queued or batched request of `item` got its outcome; when it was not
    /// `delivered` (the item's call is gone: the job is ending), the item does not run
    /// again.
    fn answered(&mut self, item: u32, delivered: bool) {
        if delivered {
            self.change(item, |requests| {
                requests.waiting = requests.waiting.saturating_sub(1);
                requests.queued = requests.queued.saturating_sub(1);
            });
        } else {
            self.requests.remove(&item);
        }
    }

    /// Keeps `difference` when it is the first mismatch by item and request number: the
    /// items run at once, so the one found first is not always the first.
    fn note_mismatch(&mut self, item: u32, k: u32, difference: String) {
        if self
            .mismatch
            .as_ref()
            .is_none_or(|(first, _)| (item, k) < *first)
        {
            self.mismatch = Some(((item, k), difference));
        }
    }
}

/// The error a request that differs from what the directory stored fails with; the job
/// then stops with [`BatchError::OtherJob`], before anything is submitted.
fn other_job_error(provider: &str) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::Configuration,
        provider,
        "not answered: the batch job's directory holds another job",
    )
    .not_sent()
}

/// What the router does with a request.
enum Step {
    /// Boxed: a reply is far larger than the other steps.
    Answered(Box<Outcome>),
    Live,
    Wait {
        k: u32,
        receiver: oneshot::Receiver<Outcome>,
        needs_line: bool,
    },
}

/// The provider seen by a job's items: the client's own, with every answer request routed
/// through the job.
#[derive(Debug, Clone)]
pub(crate) struct Routed(pub(crate) Arc<Router>);

#[async_trait::async_trait]
impl Provider for Routed {
    fn name(&self) -> &str {
        self.0.live.name()
    }

    fn default_model(&self) -> &str {
        self.0.live.default_model()
    }

    fn server_url(&self) -> Option<&str> {
        self.0.live.server_url()
    }

    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        match ITEM.try_with(|item| *item) {
            Ok(item) => self.0.route(item, request).await,
            // Not inside an item (nothing in the runtime does this): a live call.
            Err(_) => self.0.live.complete(request).await,
        }
    }

    fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        self.0.live.enforces_schema(request)
    }

    fn max_top_logprobs(&self) -> Option<u8> {
        self.0.live.max_top_logprobs()
    }
}
