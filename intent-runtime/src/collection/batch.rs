//! Above a size: an operation's items sent through the provider's batch API as one batch
//! job (see the module docs' "Above a size: the batch API"), at the batch price, and
//! resumable from the job's directory and the journal.
//!
//! The batch directory holds, per operation (by its fingerprint), a small file naming
//! the pending job (`collection-<fingerprint>.json`: the job's folder beside it, and the
//! keys of its items in the job's order). The file is written before the job starts and,
//! with a journal, removed once every answer the job gave is in the journal. While it is
//! there, a rerun resumes exactly that job with exactly those items, even when the journal
//! answers some of them by then (a crash cut its appends short): the job's directory
//! answers them again for nothing, so the rerun neither pays twice nor finds a directory
//! holding another job (which [`BatchJob`](crate::batch::BatchJob) refuses). Without a
//! journal the file stays, and the job's folder is the store: a rerun over the same items
//! reads every answer back from it.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use futures_core::Stream;
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::journal::Journal;
use super::progress::Tracker;
use super::{
    Answer, Collection, CollectionError, ItemFuture, MapResult, Op, Order, Outcome, Outcomes, rank,
};
use crate::ask::Admission;
use crate::batch::{BatchError, BatchItem, BatchOptions, BatchProgress};
use crate::client::IntentClient;
use crate::cost::CostTally;
use crate::decision::DecisionError;
use crate::decision::typed::to_state;
use crate::failure::Cause;
use crate::result::AIResult;

/// [`Collection::batch_above`]'s setting.
#[derive(Debug, Clone)]
pub(super) struct BatchAbove {
    /// Runs over more items than this go through a batch job.
    pub(super) items: usize,
    /// The job's options; its folder is made inside their directory.
    pub(super) options: BatchOptions,
}

impl Collection {
    /// Sends an operation run over more than `items` items through the provider's batch
    /// API as one batch job ([`IntentClient::batch`]) kept in `options`' directory: half
    /// the price of live requests, answered within the provider's window (hours, at most a
    /// day), and resumable from that directory. At or under `items`, operations run live.
    ///
    /// The size is the iterator's exact [`size_hint`](Iterator::size_hint) when it has
    /// one; otherwise (a stream, a filtered iterator) up to `items + 1` items are read
    /// first to tell, and the run goes on with them. Filter, classify, score and rank ask
    /// their questions through the job; a map needs its batch form
    /// ([`Op::batch_item`]), and a map above the size without one is refused with
    /// [`CollectionError::Setting`] before anything is sent. See "Above a size: the batch
    /// API" in the [module](crate::collection) docs.
    pub fn batch_above(mut self, items: usize, options: BatchOptions) -> Self {
        self.batch = Some(BatchAbove { items, options });
        self
    }
}

impl<'c, I, T> Op<'c, I, T>
where
    T: Serialize + DeserializeOwned + Send + 'static,
{
    /// The batch form of this operation's call, used when it runs above
    /// [`Collection::batch_above`]'s size: `item` makes each item's [`BatchItem`], the same
    /// call not yet sent (a generated client's `<method>_batch_item` companion, or
    /// [`BatchItem::transform`]). The outcome's value or typed failure, tokens and cost
    /// come from the job's [`AIResult`] as a live call's do; a request that went through
    /// the batch API is priced at the batch rates.
    ///
    /// The journal does not tell the two forms apart: give both the same call, so that
    /// an answer written by either is right for the other.
    pub fn batch_item(mut self, item: impl Fn(I) -> BatchItem<T> + Send + Sync + 'c) -> Self {
        self.batch = Some(BatchForm::of(item, map_glance, map_settle));
        self
    }
}

/// Tells the job's counter of each item as it finishes: its place in the job, whether it
/// failed, what it cost.
type Counter = Arc<dyn Fn(usize, bool, &CostTally) + Send + Sync>;
/// Told of each step of the job (a submission, a look at the batches).
type Step = Arc<dyn Fn(&BatchProgress) + Send + Sync>;
/// A running job: each item's answer, in the job's order.
type JobRun<T> = Pin<Box<dyn Future<Output = Result<Vec<Answer<T>>, BatchError>> + Send>>;
/// Starts a job of these items with these options.
type StartJob<'c, I, T> =
    Box<dyn Fn(&IntentClient, Vec<I>, BatchOptions, Counter, Step) -> JobRun<T> + Send + Sync + 'c>;

/// How an operation's items go through a batch job. Built where the answer type is known
/// to outlive any borrow (a batch job's items must), so that running one needs no such
/// bound on the operation.
pub(super) struct BatchForm<'c, I, T> {
    start: StartJob<'c, I, T>,
}

impl<'c, I, T: Send + 'static> BatchForm<'c, I, T> {
    /// A job of `make`'s items, each result read at once by `glance` (failed, cost) for
    /// progress and turned into an answer by `settle` once the job is done.
    fn of<V: Send + 'static>(
        make: impl Fn(I) -> BatchItem<V> + Send + Sync + 'c,
        glance: fn(&AIResult<V>) -> (bool, CostTally),
        settle: fn(AIResult<V>) -> Answer<T>,
    ) -> Self {
        let start: StartJob<'c, I, T> = Box::new(move |client, items, options, counter, step| {
            let items: Vec<BatchItem<V>> = items
                .into_iter()
                .enumerate()
                .map(|(place, item)| {
                    let counter = counter.clone();
                    make(item).on_finished(move |result| {
                        let (failed, cost) = glance(result);
                        counter(place, failed, &cost);
                    })
                })
                .collect();
            let job = client
                .batch(items, options)
                .on_progress(move |progress| step(progress));
            Box::pin(async move {
                let results = job.run().await?;
                Ok(results.into_iter().map(settle).collect())
            })
        });
        BatchForm { start }
    }
}

/// A decision operation's batch form: `decide` asks each item's question on the job's
/// client (through the batch API, unless the client was given its own decision client),
/// which prices the answer at that client's rates.
pub(super) fn decision_form<'c, I, T, D>(decide: D, model: Option<String>) -> BatchForm<'c, I, T>
where
    I: Serialize,
    T: Send + 'static,
    D: Fn(
            IntentClient,
            Option<String>,
            Result<Value, DecisionError>,
            Admission,
        ) -> ItemFuture<'static, T>
        + Send
        + Sync
        + 'static,
{
    let decide = Arc::new(decide);
    BatchForm::of(
        move |item: I| {
            // The state is serialized here, so the item need not outlive the job.
            let state = to_state(&item);
            let (decide, model) = (decide.clone(), model.clone());
            BatchItem::from_fn(move |client| {
                Box::pin(async move {
                    let started = Instant::now();
                    // The job's client has no rate limiter (the batch API has its own);
                    // its response cache, when it has one, is asked first.
                    let answer = decide(client, model, state, Admission::InSpan).await;
                    // The item's value is the typed answer or the decision's typed error,
                    // with its tokens and cost, so that the outcome keeps them.
                    AIResult {
                        usage: answer.usage,
                        value: Some(answer),
                        issues: Vec::new(),
                        attempts: Vec::new(),
                        elapsed: started.elapsed(),
                    }
                })
            })
        },
        decision_glance,
        decision_settle,
    )
}

fn decision_glance<T>(result: &AIResult<Answer<T>>) -> (bool, CostTally) {
    match &result.value {
        Some(answer) => (answer.result.is_err(), answer.cost.clone()),
        None => (true, result.cost_tally()),
    }
}

/// A decision item's answer; one the job could not run (its call panicked) fails with
/// the job's issues.
fn decision_settle<T>(result: AIResult<Answer<T>>) -> Answer<T> {
    let (usage, cost) = (result.usage, result.cost_tally());
    match result.into_result() {
        Ok(answer) => answer,
        Err(error) => Answer {
            result: Err(error.into()),
            usage,
            cost,
            cached: false,
        },
    }
}

fn map_glance<T>(result: &AIResult<T>) -> (bool, CostTally) {
    (!result.is_success(), result.cost_tally())
}

fn map_settle<T>(result: AIResult<T>) -> Answer<T> {
    let (result, usage, cost) = result.into_parts();
    Answer {
        result,
        usage,
        cost,
        cached: false,
    }
}

/// Whether a run is above the batch size, with the items read to tell.
pub(super) enum Peeked<I> {
    /// Above: the run goes through a batch job, these items first.
    Over(Vec<I>),
    /// At or under: the run is live, these items first; the total, when now known.
    Under(Vec<I>, Option<usize>),
}

/// Tells whether a run of `items` (`total` of them, when known exactly) is above
/// `threshold`, reading at most `threshold + 1` items when the total is not known.
pub(super) async fn peek<I>(
    items: &mut (impl Stream<Item = I> + Unpin),
    total: Option<usize>,
    threshold: usize,
) -> Peeked<I> {
    if let Some(total) = total {
        return if total > threshold {
            Peeked::Over(Vec::new())
        } else {
            Peeked::Under(Vec::new(), Some(total))
        };
    }
    let mut read = Vec::new();
    while read.len() <= threshold {
        match items.next().await {
            Some(item) => read.push(item),
            None => {
                let total = read.len();
                return Peeked::Under(read, Some(total));
            }
        }
    }
    Peeked::Over(read)
}

/// One input of a batch run.
struct Entry<I> {
    key: String,
    digest: Option<String>,
    /// The item, until it is handed to a job.
    item: Option<I>,
    /// Whether the journal answered it (its outcome is placed already).
    journaled: bool,
}

/// Runs `op` (its settings checked by the caller) over `items` through batch jobs kept
/// in `above`'s directory: the journal's answers first, then the job the directory holds
/// pending for this operation (resumed with exactly its items), then one job of the
/// items still unanswered.
pub(super) async fn run<'c, I, T>(
    op: Op<'c, I, T>,
    above: &BatchAbove,
    items: impl Stream<Item = I>,
) -> Result<Outcomes<T>, CollectionError>
where
    T: Serialize + DeserializeOwned + Send + 'c,
{
    let Op {
        collection: settings,
        operation,
        fingerprint,
        key,
        revise,
        rank_by,
        digest,
        batch: form,
        ..
    } = op;
    let Some(form) = form else {
        return Err(CollectionError::Setting {
            setting: "batch_above",
            problem: format!(
                "sends an operation over more than {} items through the batch API, and this `{operation}` has no batch form; add one with `.batch_item(|item| client.<method>_batch_item(...))` (a generated method's batch companion, or `BatchItem::transform`), or raise `batch_above` to run it live. Nothing was sent",
                above.items
            ),
        });
    };
    let mut journal = match &settings.journal {
        Some(path) => Some(Journal::open(path, fingerprint.clone())?),
        None => None,
    };
    let answered = journal.as_ref().map(Journal::answers);
    // Only a journal needs the items' digests.
    let digest = digest.filter(|_| journal.is_some());

    let mut entries = Vec::new();
    let mut outcomes = Vec::new();
    let mut items = std::pin::pin!(items);
    while let Some(item) = items.next().await {
        let index = entries.len();
        let key = match &key {
            Some(key) => key(&item),
            None => index.to_string(),
        };
        let item_digest = digest.map(|digest| digest(&item));
        let stored = answered
            .as_ref()
            .and_then(|answers| answers.get::<T>(&key, item_digest.as_deref()));
        let journaled = stored.is_some();
        if let Some(value) = stored {
            let value = match &revise {
                Some(revise) => revise(value),
                None => value,
            };
            outcomes.push(Outcome {
                index,
                key: key.clone(),
                result: Ok(value),
                usage: Default::default(),
                cost: CostTally::default(),
                from_journal: true,
                from_cache: false,
            });
        }
        entries.push(Entry {
            key,
            digest: item_digest,
            item: Some(item),
            journaled,
        });
    }

    let tracker = Arc::new(Mutex::new(Tracker::new(
        operation,
        Some(entries.len()),
        settings.on_progress.clone(),
    )));
    for _ in &outcomes {
        lock(&tracker).finished(false, true, false, &CostTally::default());
    }
    // The inputs the job's items answer, in the order they finished.
    let finished: Arc<Mutex<Vec<usize>>> = Arc::default();
    let dir = &above.options.dir;
    let manifest_path = dir.join(format!("collection-{fingerprint}.json"));
    let mut asked = vec![false; entries.len()];
    loop {
        let (folder, members) = match read_manifest(&manifest_path)? {
            Some(manifest) => {
                let members = members(&manifest, &entries, journal.is_some()).map_err(
                    |difference| BatchError::OtherJob {
                        dir: dir.clone(),
                        difference: format!(
                            "the `{operation}` job it holds (its items are named in {}) {difference}; to start a new job over these items, remove that file",
                            manifest_path.display()
                        ),
                    },
                )?;
                (manifest.job, members)
            }
            None => {
                let members: Vec<usize> = (0..entries.len())
                    .filter(|&at| !entries[at].journaled && !asked[at])
                    .collect();
                if members.is_empty() {
                    break;
                }
                let manifest = Manifest {
                    job: format!("collection-{fingerprint}-{:016x}", fastrand::u64(..)),
                    keys: members.iter().map(|&at| entries[at].key.clone()).collect(),
                };
                write_manifest(&manifest_path, &manifest)?;
                (manifest.job, members)
            }
        };
        let mut job_items = Vec::with_capacity(members.len());
        for &at in &members {
            asked[at] = true;
            // A job takes each input once: a resumed job's items are read from the
            // manifest once, a new job's are those no job took.
            if let Some(item) = entries[at].item.take() {
                job_items.push(item);
            }
        }
        // The job's items whose answers count here (not the journal's), by their input.
        let counted: Vec<Option<usize>> = members
            .iter()
            .map(|&at| (!entries[at].journaled).then_some(at))
            .collect();
        let counter: Counter = {
            let (tracker, finished) = (tracker.clone(), finished.clone());
            Arc::new(move |place, failed, cost| {
                if let Some(Some(at)) = counted.get(place) {
                    lock(&tracker).finished(true, false, failed, cost);
                    lock(&finished).push(*at);
                }
            })
        };
        let step: Step = {
            let tracker = tracker.clone();
            Arc::new(move |progress: &BatchProgress| {
                lock(&tracker).waiting(progress.queued + progress.submitted + progress.running)
            })
        };
        let mut options = above.options.clone();
        options.dir = dir.join(&folder);
        let answers = (form.start)(&settings.client, job_items, options, counter, step).await?;
        for (&at, answer) in members.iter().zip(answers) {
            let entry = &entries[at];
            if entry.journaled {
                // Its outcome is the journal's; the job only answered it again, for free.
                continue;
            }
            if let (Some(journal), Ok(value)) = (&mut journal, &answer.result) {
                journal.append(&entry.key, entry.digest.as_deref(), value)?;
            }
            outcomes.push(Outcome {
                index: at,
                key: entry.key.clone(),
                result: answer.result,
                usage: answer.usage,
                cost: answer.cost,
                from_journal: false,
                from_cache: answer.cached,
            });
        }
        if journal.is_none() {
            // The job's folder is the store: a rerun over the same items reads it back.
            break;
        }
        // Every answer is in the journal: the job is spent, and the next run asks the
        // items it failed in a new one.
        std::fs::remove_file(&manifest_path)
            .map_err(|error| state_error(&manifest_path, "could not be removed", error))?;
        if let Err(error) = std::fs::remove_dir_all(dir.join(&folder)) {
            tracing::warn!(
                target: "intent_rs::collection",
                folder = %dir.join(&folder).display(),
                %error,
                "a finished batch job's folder could not be removed; nothing reads it again, remove it by hand"
            );
        }
    }

    match (rank_by, settings.order) {
        (Some(score), _) => rank::order(&mut outcomes, score),
        (None, Order::Input) => outcomes.sort_by_key(|outcome| outcome.index),
        (None, Order::Completed) => {
            // The journal's answers first, as a live run reads them, then the job's in
            // the order its items finished.
            let finished = lock(&finished);
            let rank: HashMap<usize, usize> = finished
                .iter()
                .enumerate()
                .map(|(rank, &at)| (at, rank))
                .collect();
            outcomes.sort_by_key(|outcome| {
                (
                    !outcome.from_journal,
                    rank.get(&outcome.index).copied().unwrap_or(usize::MAX),
                )
            });
        }
    }
    let progress = lock(&tracker).finish();
    Ok(Outcomes { outcomes, progress })
}

/// The entries a pending job's manifest names, in the job's order; what differs when
/// this run lacks one of them, or (without a journal, which would answer the others)
/// has items the job lacks.
fn members<I>(
    manifest: &Manifest,
    entries: &[Entry<I>],
    journaled: bool,
) -> Result<Vec<usize>, String> {
    let mut by_key: HashMap<&str, VecDeque<usize>> = HashMap::new();
    for (at, entry) in entries.iter().enumerate() {
        by_key.entry(entry.key.as_str()).or_default().push_back(at);
    }
    let mut members = Vec::with_capacity(manifest.keys.len());
    for key in &manifest.keys {
        match by_key.get_mut(key.as_str()).and_then(VecDeque::pop_front) {
            Some(at) => members.push(at),
            None => return Err(format!("has the item `{key}`, which this run does not")),
        }
    }
    if !journaled && members.len() < entries.len() {
        return Err(format!(
            "has {} items and this run {}, with no journal to answer the others",
            members.len(),
            entries.len()
        ));
    }
    Ok(members)
}

/// The pending job of an operation, as its file in the batch directory names it.
#[derive(Serialize, Deserialize)]
struct Manifest {
    /// The job's folder, in the batch directory.
    job: String,
    /// Its items' keys, in the job's order.
    keys: Vec<String>,
}

fn read_manifest(path: &Path) -> Result<Option<Manifest>, CollectionError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(state_error(path, "could not be read", error)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|error| state_error(path, "is not a collection's batch job file", error))
}

/// Writes the manifest whole: to a temporary file renamed over it, so a crash leaves the
/// old file or the new one.
fn write_manifest(path: &Path, manifest: &Manifest) -> Result<(), CollectionError> {
    let temporary = path.with_extension("json.tmp");
    let written = (|| {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let json = serde_json::to_vec(manifest).map_err(std::io::Error::other)?;
        std::fs::write(&temporary, json)?;
        std::fs::rename(&temporary, path)
    })();
    written.map_err(|error| state_error(path, "could not be written", error))
}

fn state_error(
    path: &Path,
    problem: &str,
    error: impl std::error::Error + Send + Sync + 'static,
) -> CollectionError {
    CollectionError::Batch(BatchError::State {
        path: PathBuf::from(path),
        message: format!("{problem} ({error})"),
        cause: Some(Cause::new(error)),
    })
}

fn lock<X>(mutex: &Mutex<X>) -> MutexGuard<'_, X> {
    // A callback that panicked leaves whole counts behind: each update is one statement.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
