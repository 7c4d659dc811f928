//! Intents over collections: ask the same question of every item of an iterator or a
//! `Stream` (keep the ones that pass, label them, score them, extract a typed value from
//! each, or order them), with bounded concurrency, progress, and a journal that lets a
//! rerun after a crash pay only for what was not answered.
//!
//! A [`Collection`] holds the settings (the client, how many items are in flight at
//! once, the order of the outcomes, the journal, the progress callback); each operation
//! returns an [`Op`], which takes an optional [key](Op::key) per item and then
//! [runs](Op::run) over the items:
//!
//! | operation | asks, per item | answer |
//! | --- | --- | --- |
//! | [`filter`](Collection::filter) | a yes/no question, kept at a probability threshold | [`Kept`] |
//! | [`classify`](Collection::classify) | a choice among a [`DecisionEnum`]'s variants | [`Choice<E>`] |
//! | [`score`](Collection::score) | a level among a [`DecisionEnum`]'s variants | [`Score<E>`] |
//! | [`map`](Collection::map) | any intent method, or your own typed transform | your `T` |
//! | [`rank`](Collection::rank) | a yes/no question; items ordered by its probability | [`Binary`] |
//! | [`decide`](Collection::decide) | several [`Questions`] at once | [`Answers`], read by id |
//!
//! Filter, classify, score, rank and decide ask through the client's decision client
//! ([`IntentClient::decide`]: log-probabilities, stated probabilities, or a decision model
//! such as System One), one small request per item, through the client's rate limiter;
//! `decide` puts all its questions about an item in that one request (a log-probability
//! client, which reads one answer token per request, asks them one by one). An item waits
//! for the rate limiter as it was given: its state, request and span are built once it
//! may be asked.
//! A map calls whatever you give it; an intent method goes through the client's attempt
//! loop, its rate limiter and its response cache.
//!
//! Every input gets one [`Outcome`]: its index and key, its value or its typed failure
//! ([`ItemError`], whose [`kind`](ItemError::kind) is the crate's [`FailureKind`](crate::FailureKind)), and
//! what it cost on the client's price table. Nothing is dropped: a failed item is an
//! outcome, and the run goes on. The outcomes come in input order, or as they complete
//! ([`Order`]).
//!
//! # The journal, and the cache
//!
//! With [`Collection::journal`], every answered item is appended to a JSON Lines file as
//! soon as it is answered, under its key and a fingerprint of the operation: its kind,
//! question, options and answer type, and who answers (the model, and the client's
//! provider or its own decision client). A decision's line also keeps a digest of the
//! item's content, so an item edited or moved between runs is asked again; a map's items
//! need not serialize, so give a map a key that names the item's content. A rerun with
//! the same file reads those answers back instead of asking (they count as
//! [`cached`](Progress::cached) and cost nothing), and asks only the rest, failures
//! included.
//!
//! With a response cache on the client
//! ([`IntentClientBuilder::cache`](crate::IntentClientBuilder::cache): in memory, or
//! `fleet::RedisCache` shared by a fleet), it is asked first: a mapped intent call's first
//! attempt, as every call's, and a decision asked before about the same state, with the
//! same questions and model (by any clone of the client, or any process sharing the
//! cache), which is served without a request and without waiting for the rate limiter
//! ([`Outcome::from_cache`], counted as [`cached`](Progress::cached), costing nothing).
//! An item then builds its state before it waits, to look it up. The journal is the
//! run's own record, kept without a cache.
//!
//! # Above a size: the batch API
//!
//! With [`Collection::batch_above`], an operation run over more items than the size you
//! set sends its requests through the provider's batch API as one batch job
//! ([`IntentClient::batch`](crate::IntentClient::batch), see the [`batch`](crate::batch)
//! module), at the batch price (half the live one at OpenAI, Anthropic and Gemini), answered
//! within the provider's window (hours, at most a day); at or under the size it runs live.
//! The size is the iterator's exact `size_hint` when it has one; otherwise (a stream, a
//! filtered iterator) the first `items + 1` items are read to tell, and the run goes on
//! with them. A job holds all its items at once, so a run above the size reads every item
//! before anything is sent.
//!
//! Filter, classify, score, rank and decide build their batch items themselves: each
//! outcome keeps its typed answer or its typed [`ItemError::Decision`], its tokens, and its
//! cost at the batch rates (a client given its own decision client, such as System One,
//! asks that one live inside the job, at the live price). A map needs its batch form,
//! [`Op::batch_item`] (a generated client's `<method>_batch_item`, or
//! [`BatchItem::transform`](crate::batch::BatchItem::transform)); a map above the size
//! without one is refused with [`CollectionError::Setting`] before anything is sent,
//! never run live instead. An item the job could not answer (its batch canceled, say)
//! keeps its typed failure: a decision's [`ItemError::Decision`], a map's
//! [`ItemError::Intent`] from its call's issues. A job that could not run or was stopped
//! (no batch API, a directory holding another job, the provider failing) is a
//! [`CollectionError::Batch`].
//!
//! Items the journal answers are left out of the job, and the job's answers are appended
//! to the journal when it ends. The job's folder in the options' directory makes a rerun
//! after a crash pay nothing again: batches already created are polled, not sent again.
//! Beside that folder, a small file names the job's items; while it is there (until every
//! answer of the job is in the journal) a rerun resumes exactly that job, with exactly
//! those items, so that a crash while the answers were being journaled costs nothing
//! either. With a journal the job's folder is removed once its answers are all in it (a
//! rerun then asks the failed items again, in a new job); without one it stays, and a
//! rerun over the same items reads every answer back from it. A rerun over other items
//! while a job is pending is refused ([`BatchError::OtherJob`]): finish that job first,
//! or give it a new directory.
//!
//! [`Progress`] follows the job: `in_flight` counts its items waiting (queued, in a
//! provider batch, or running here), `done`, `failed` and `cost` grow as its items
//! finish, after each step of the job and each item.
//!
//! # Example
//!
//! ```
//! use intent_rs::collection::Collection;
//! use intent_rs::provider::TestModel;
//! use intent_rs::{DecisionEnum, IntentClient};
//!
//! #[derive(Debug, DecisionEnum)]
//! enum Team {
//!     Billing,
//!     Support,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let client = IntentClient::builder().provider(TestModel::new()).build()?;
//! let tickets = ["I was charged twice", "The app crashes on start"];
//! let teams = Collection::new(&client)
//!     .concurrency(4)
//!     .classify::<Team, _>("Which team should handle the ticket?")
//!     .run(tickets)
//!     .await?;
//! for outcome in &teams {
//!     match &outcome.result {
//!         Ok(choice) => println!("{}: {:?}", outcome.key, choice.selected),
//!         Err(error) => println!("{}: failed ({:?})", outcome.key, error.kind()),
//!     }
//! }
//! assert_eq!(teams.len(), 2);
//! # Ok(())
//! # }
//! ```

mod batch;
mod journal;
mod outcome;
mod progress;
mod questions;
mod rank;

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_core::Stream;
use futures_util::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ask::{self, Admission};
use crate::batch::BatchError;
use crate::client::IntentClient;
use crate::cost::CostTally;
use crate::decision::typed::{EnumOptions, to_state};
use crate::decision::{Binary, Choice, DecisionEnum, DecisionError, DecisionQuestion, Score};
use crate::error::IntentError;
use crate::result::{AIResult, Usage};

pub use outcome::{ItemError, Kept, Outcome, Outcomes};
pub use progress::Progress;
pub use questions::{Answers, Questions};

use journal::Journal;
use progress::{OnProgress, Tracker};

/// Items in flight at once when [`Collection::concurrency`] is not set.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// The order outcomes come back in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Order {
    /// The inputs' order (the default).
    #[default]
    Input,
    /// The order the items finished in.
    Completed,
}

/// Why an operation could not run at all (an item's own failure is an [`ItemError`] in
/// its [`Outcome`], not this).
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum CollectionError {
    /// The journal could not be opened, read or written.
    #[error(
        "the collection's journal `{}` could not be read or written ({message}); check that its folder is writable, or run without `Collection::journal`",
        path.display()
    )]
    Journal {
        /// The journal's path.
        path: PathBuf,
        /// What the file system said.
        message: String,
        /// The I/O error.
        #[source]
        cause: std::io::Error,
    },
    /// A setting of the collection or the operation is out of its range.
    #[error("`{setting}` {problem}")]
    Setting {
        /// The setting, as its method is named.
        setting: &'static str,
        /// What is wrong with it, and what it takes.
        problem: String,
    },
    /// The batch job the items went through ([`Collection::batch_above`]) could not run
    /// or was stopped; its directory and the journal keep what it did.
    #[error(
        "the operation's batch job did not finish: {0}; nothing it answered is lost: its directory (and the journal) keep it for a rerun of the same operation over the same items"
    )]
    Batch(#[from] BatchError),
}

crate::failure::debug_as_message!(CollectionError);

impl CollectionError {
    pub(crate) fn journal(path: &Path, cause: std::io::Error) -> Self {
        CollectionError::Journal {
            path: path.to_owned(),
            message: cause.to_string(),
            cause,
        }
    }
}

/// The settings operations over many items run with; see the [module](self) docs.
#[derive(Clone)]
pub struct Collection {
    client: IntentClient,
    concurrency: usize,
    order: Order,
    journal: Option<PathBuf>,
    on_progress: Option<OnProgress>,
    model: Option<String>,
    batch: Option<batch::BatchAbove>,
}

impl std::fmt::Debug for Collection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collection")
            .field("concurrency", &self.concurrency)
            .field("order", &self.order)
            .field("journal", &self.journal)
            .field("model", &self.model)
            .field("batch_above", &self.batch)
            .finish_non_exhaustive()
    }
}

impl Collection {
    /// Operations on `client` (a clone of it: clones share the rate limiter, the cache
    /// and the totals), [`DEFAULT_CONCURRENCY`] items at once, outcomes in input order.
    pub fn new(client: &IntentClient) -> Self {
        Collection {
            client: client.clone(),
            concurrency: DEFAULT_CONCURRENCY,
            order: Order::Input,
            journal: None,
            on_progress: None,
            model: None,
            batch: None,
        }
    }

    /// At most `items` asked at once (at least 1). The client's rate limiter paces the
    /// requests below that.
    pub fn concurrency(mut self, items: usize) -> Self {
        self.concurrency = items;
        self
    }

    /// The order outcomes come back in.
    pub fn order(mut self, order: Order) -> Self {
        self.order = order;
        self
    }

    /// Appends each answered item to the JSON Lines file at `path` (created with its
    /// folder when missing), and reads back the answers an earlier run of the same
    /// operation wrote there instead of asking again.
    pub fn journal(mut self, path: impl Into<PathBuf>) -> Self {
        self.journal = Some(path.into());
        self
    }

    /// Calls `report` after every finished item (on the task that runs the operation, or
    /// above [`batch_above`](Self::batch_above)'s size on the batch job's tasks, after each
    /// of its steps too: keep it quick). The same counts go to `tracing`
    /// (`intent_rs::collection`, at `debug` per item and `info` at the end).
    pub fn on_progress(mut self, report: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        self.on_progress = Some(Arc::new(report));
        self
    }

    /// The model decision questions are asked of, instead of the decision client's
    /// default.
    pub fn decision_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Keeps the items for which the probability of yes to `question` is at least
    /// `threshold` (between 0 and 1): each outcome's [`Kept`] says whether, and with the
    /// probability that decided.
    ///
    /// The journal stores the probability, not the verdict: a rerun with another
    /// threshold reads the same answers back.
    pub fn filter<'c, I: Serialize + Send + 'c>(
        &'c self,
        question: &str,
        threshold: f64,
    ) -> Op<'c, I, Kept> {
        let asked: Arc<str> = Arc::from(question);
        let mut op = self.decision_op(
            "filter",
            &[question, ""],
            move |client, model, state, admission| {
                let question = Arc::clone(&asked);
                Box::pin(async move {
                    let asked = ask::binary(
                        &client,
                        "filter",
                        &question,
                        state,
                        model.as_deref(),
                        admission,
                    )
                    .await;
                    answer(
                        &client,
                        asked.map(|asked| asked.map(|b| Kept::at(b, threshold))),
                    )
                })
            },
        );
        op.revise = Some(Box::new(move |kept: Kept| Kept::at(kept.answer, threshold)));
        if !(0.0..=1.0).contains(&threshold) {
            op.invalid = Some(CollectionError::Setting {
                setting: "filter",
                problem: format!(
                    "threshold {threshold} is not a probability; give one between 0 and 1"
                ),
            });
        }
        op
    }

    /// Chooses one of `E`'s variants for each item, with the probability of each.
    pub fn classify<'c, E, I>(&'c self, question: &str) -> Op<'c, I, Choice<E>>
    where
        E: DecisionEnum,
        I: Serialize + Send + 'c,
    {
        let options = EnumOptions::<E>::of();
        let asked: Arc<str> = Arc::from(question);
        self.decision_op(
            "classify",
            &[question, &variant_names(E::VARIANTS)],
            move |client, model, state, admission| {
                let question = Arc::clone(&asked);
                Box::pin(async move {
                    let asked = ask::choice(
                        &client,
                        options,
                        "classify",
                        &question,
                        state,
                        model.as_deref(),
                        admission,
                    )
                    .await;
                    answer(&client, asked)
                })
            },
        )
    }

    /// Rates each item on `E`'s variants, lowest first, with the probability of each
    /// level and the expected level.
    pub fn score<'c, E, I>(&'c self, question: &str) -> Op<'c, I, Score<E>>
    where
        E: DecisionEnum,
        I: Serialize + Send + 'c,
    {
        let options = EnumOptions::<E>::of();
        let asked: Arc<str> = Arc::from(question);
        self.decision_op(
            "score",
            &[question, &variant_names(E::VARIANTS)],
            move |client, model, state, admission| {
                let question = Arc::clone(&asked);
                Box::pin(async move {
                    let asked = ask::score(
                        &client,
                        options,
                        "score",
                        &question,
                        state,
                        model.as_deref(),
                        admission,
                    )
                    .await;
                    answer(&client, asked)
                })
            },
        )
    }

    /// Orders the items by the probability of yes to `question` (“Is this ticket
    /// urgent?”), highest first; the items whose question failed come last, in input
    /// order. See "How items are ranked" below for why scores and not
    /// pairwise comparisons.
    ///
    /// # How items are ranked
    ///
    /// Each item is asked once, on its own, and the probability of yes is its score:
    /// `n` requests for `n` items, each as small as a filter's, run in parallel and
    /// resumable item by item from the journal. Pairwise comparisons (“is A more urgent
    /// than B?”) cost `n log n` requests at best, must run in rounds that depend on each
    /// other, and a model's pairwise answers need not be transitive, so the order they
    /// give can depend on which pairs were asked. A log-probability or decision-model
    /// answer is a measured distribution, fine-grained enough to order by; a stated
    /// probability is coarser, and ties keep the input order.
    ///
    /// The outcomes come in rank order whatever [`Collection::order`] says.
    pub fn rank<'c, I: Serialize + Send + 'c>(&'c self, question: &str) -> Op<'c, I, Binary> {
        let asked: Arc<str> = Arc::from(question);
        let mut op = self.decision_op(
            "rank",
            &[question, ""],
            move |client, model, state, admission| {
                let question = Arc::clone(&asked);
                Box::pin(async move {
                    let asked = ask::binary(
                        &client,
                        "rank",
                        &question,
                        state,
                        model.as_deref(),
                        admission,
                    )
                    .await;
                    answer(&client, asked)
                })
            },
        );
        op.rank_by = Some(|binary: &Binary| binary.probability);
        op
    }

    /// Asks several questions about each item in one request (see [`Questions`]): a
    /// decision model such as System One answers them all in one HTTP request, and
    /// bills the item's state once; a log-probability client asks them one by one, and
    /// a stated-probability client in one structured reply. Each outcome's [`Answers`]
    /// reads every answer by its id, typed.
    ///
    /// Questions that cannot be asked (none, an invalid one, two under one id) are a
    /// [`CollectionError::Setting`] when the operation runs, before anything is sent.
    ///
    /// ```
    /// use intent_rs::collection::{Collection, Questions};
    /// use intent_rs::provider::TestModel;
    /// use intent_rs::{DecisionEnum, IntentClient};
    ///
    /// #[derive(Debug, PartialEq, DecisionEnum)]
    /// enum Team {
    ///     Billing,
    ///     Support,
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = IntentClient::builder().provider(TestModel::new()).build()?;
    /// let questions = Questions::new()
    ///     .binary("urgent", "Is a customer blocked?")
    ///     .choice::<Team>("team", "Which team should handle the ticket?");
    /// let triage = Collection::new(&client)
    ///     .decide(questions)
    ///     .run(["I was charged twice"])
    ///     .await?;
    /// let answers = triage[0].value().expect("answered");
    /// let urgent = answers.binary("urgent")?.is_yes(0.5);
    /// let team = answers.choice::<Team>("team")?.selected;
    /// println!("urgent: {urgent}, team: {team:?}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn decide<'c, I>(&'c self, questions: Questions) -> Op<'c, I, Answers>
    where
        I: Serialize + Send + 'c,
    {
        let (questions, invalid): (Arc<[DecisionQuestion]>, _) = match questions.checked() {
            Ok(questions) => (questions.into(), None),
            Err(error) => (
                Arc::from([]),
                Some(CollectionError::Setting {
                    setting: "decide",
                    problem: format!("cannot ask these questions: {error}"),
                }),
            ),
        };
        // The questions' ids, texts and options name what is asked.
        let identity = format!("{:?}", &*questions);
        let mut op = self.decision_op(
            "decide",
            &[&identity],
            move |client, model, state, admission| {
                let questions = Arc::clone(&questions);
                Box::pin(async move {
                    let asked = ask::questions(
                        &client,
                        "decide",
                        &questions,
                        state,
                        model.as_deref(),
                        admission,
                    )
                    .await;
                    answer(&client, asked.map(|asked| asked.map(Answers::new)))
                })
            },
        );
        op.invalid = invalid;
        op
    }

    /// Calls `call` on each item: an intent method of a generated client, or any typed
    /// transform. `name` names the operation in the journal's fingerprint and in progress
    /// events: give another name when the call changes, so a journal does not answer the
    /// new call with the old one's values.
    ///
    /// `call` returns an [`AIResult<T>`] (its cost and usage are the outcome's) or a
    /// `Result<T, IntentError>` (which reports no usage: the outcome's cost is then
    /// zero; return the `AIResult` to see it). `T` is serializable, for the journal.
    pub fn map<'c, I, T, R, F, Fut>(&'c self, name: &str, call: F) -> Op<'c, I, T>
    where
        F: Fn(I) -> Fut + Send + Sync + 'c,
        Fut: Future<Output = R> + Send + 'c,
        R: MapResult<T>,
        T: 'c,
    {
        let work: Work<'c, I, T> = Box::new(move |_client: &IntentClient, item: I| {
            let called = call(item);
            Box::pin(async move {
                let (result, usage, cost) = called.await.into_parts();
                Answer {
                    result,
                    usage,
                    cost,
                    cached: false,
                }
            })
        });
        Op {
            collection: self,
            operation: "map",
            fingerprint: journal::fingerprint(&["map", name, std::any::type_name::<T>()]),
            key: None,
            work,
            revise: None,
            rank_by: None,
            invalid: None,
            digest: None,
            batch: None,
        }
    }

    /// An operation that asks about each item's state through `decide`; `identity` names
    /// what it asks (its question, its options), for the journal's fingerprint.
    fn decision_op<'c, I, T, D>(
        &'c self,
        operation: &'static str,
        identity: &[&str],
        decide: D,
    ) -> Op<'c, I, T>
    where
        I: Serialize + Send + 'c,
        T: Send + 'static,
        D: Fn(
                IntentClient,
                Option<String>,
                Result<Value, DecisionError>,
                Admission,
            ) -> ItemFuture<'static, T>
            + Clone
            + Send
            + Sync
            + 'static,
    {
        let model = self.model.clone();
        // The question first and the answer's type next, as the fingerprint has been.
        let (question, rest) = identity.split_first().unwrap_or((&"", &[]));
        // Who answers too (the model, and the provider or the decision client): answers
        // journaled from one are not read back for another.
        let answered_by = ask::answered_by(&self.client, model.as_deref());
        let mut parts = vec![operation, question, std::any::type_name::<T>()];
        parts.extend_from_slice(rest);
        parts.push(&answered_by);
        let fingerprint = journal::fingerprint(&parts);
        let batch = batch::decision_form(decide.clone(), model.clone());
        let decide = Arc::new(decide);
        let work: Work<'c, I, T> = Box::new(move |client: &IntentClient, item: I| {
            let (client, model) = (client.clone(), model.clone());
            let decide = Arc::clone(&decide);
            Box::pin(async move {
                // The item waits for the rate limiter as it is; its state (its JSON tree,
                // several times its size), its request and its span are built once it
                // may be asked, so thousands let in at once hold little more than
                // themselves while they wait.
                //
                // With a response cache, the state is built first instead: the cache is
                // asked before the limiter, and a decision it answers costs no request.
                let admission = if client.inner().cache.is_some() {
                    Admission::InSpan
                } else {
                    let estimated_tokens = ask::estimated_tokens(&item);
                    ask::admit(&client, estimated_tokens).await
                };
                let state = to_state(&item);
                drop(item);
                decide(client, model, state, admission).await
            })
        });
        Op {
            collection: self,
            operation,
            fingerprint,
            key: None,
            work,
            revise: None,
            rank_by: None,
            invalid: None,
            digest: Some(journal::item_digest::<I>),
            batch: Some(batch),
        }
    }
}

/// The names of `variants`, joined, for a fingerprint.
fn variant_names(variants: &[crate::decision::DecisionVariant]) -> String {
    let names: Vec<&str> = variants.iter().map(|variant| variant.name).collect();
    names.join("\u{1f}")
}

/// One item's answer before it is placed: the value or the failure, tokens and cost.
struct Answer<T> {
    result: Result<T, ItemError>,
    usage: Usage,
    cost: CostTally,
    /// Served from the client's response cache.
    cached: bool,
}

/// A decision's answer, priced.
fn answer<T>(client: &IntentClient, asked: ask::Decided<T>) -> Answer<T> {
    match asked {
        Ok(asked) => Answer {
            cost: asked.cost(client),
            usage: asked.usage,
            cached: asked.cached,
            result: Ok(asked.answer),
        },
        // A decision that failed reports no usage (its error carries none).
        Err(error) => Answer {
            result: Err(error.into()),
            usage: Usage::default(),
            cost: CostTally::default(),
            cached: false,
        },
    }
}

type ItemFuture<'a, T> = Pin<Box<dyn Future<Output = Answer<T>> + Send + 'a>>;
type Work<'c, I, T> = Box<dyn Fn(&IntentClient, I) -> ItemFuture<'c, T> + Send + Sync + 'c>;
type KeyOf<'c, I> = Box<dyn Fn(&I) -> String + Send + Sync + 'c>;

/// What a [`Collection::map`] call returns: an [`AIResult<T>`] or a
/// `Result<T, IntentError>`.
pub trait MapResult<T>: sealed::Sealed {
    /// The value or the failure, the tokens used and the cost.
    fn into_parts(self) -> (Result<T, ItemError>, Usage, CostTally);
}

mod sealed {
    pub trait Sealed {}
    impl<T> Sealed for crate::result::AIResult<T> {}
    impl<T> Sealed for Result<T, crate::error::IntentError> {}
}

impl<T> MapResult<T> for AIResult<T> {
    fn into_parts(self) -> (Result<T, ItemError>, Usage, CostTally) {
        let cost = self.cost_tally();
        let usage = self.usage;
        (self.into_result().map_err(ItemError::from), usage, cost)
    }
}

impl<T> MapResult<T> for Result<T, IntentError> {
    fn into_parts(self) -> (Result<T, ItemError>, Usage, CostTally) {
        (
            self.map_err(ItemError::from),
            Usage::default(),
            CostTally::default(),
        )
    }
}

/// One operation over many items, not yet run: give it keys with [`key`](Self::key),
/// then [`run`](Self::run) it over an iterator or [`run_stream`](Self::run_stream) over a
/// stream.
#[must_use = "an operation does nothing until it is run"]
pub struct Op<'c, I, T> {
    collection: &'c Collection,
    operation: &'static str,
    fingerprint: String,
    key: Option<KeyOf<'c, I>>,
    work: Work<'c, I, T>,
    /// Applied to a value read back from the journal (a filter's verdict at today's
    /// threshold).
    revise: Option<Box<dyn Fn(T) -> T + Send + Sync + 'c>>,
    /// For a ranking: the score outcomes are ordered by.
    rank_by: Option<fn(&T) -> f64>,
    /// A setting out of range, reported when the operation runs.
    invalid: Option<CollectionError>,
    /// A digest of an item's content, kept beside its answer in the journal so that an
    /// answer is read back only for the same item under the same key (a decision's state;
    /// a map's items need not serialize, so its key alone names them).
    digest: Option<fn(&I) -> String>,
    /// How the items go through a batch job above [`Collection::batch_above`]'s size: a
    /// decision's own, a map's from [`Op::batch_item`].
    batch: Option<batch::BatchForm<'c, I, T>>,
}

impl<I, T> std::fmt::Debug for Op<'_, I, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Op")
            .field("operation", &self.operation)
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

impl<'c, I, T> Op<'c, I, T>
where
    T: Serialize + DeserializeOwned + Send + 'c,
{
    /// Names each item by `key` (a ticket's id, a row's primary key) instead of its index:
    /// the outcome carries it, and the journal finds answered items by it, so a rerun
    /// over the same items in another order still skips them. Keys should be unique.
    pub fn key(mut self, key: impl Fn(&I) -> String + Send + Sync + 'c) -> Self {
        self.key = Some(Box::new(key));
        self
    }

    /// Runs the operation over `items`. The iterator is read as items are asked, never
    /// collected up front.
    pub async fn run(
        self,
        items: impl IntoIterator<Item = I>,
    ) -> Result<Outcomes<T>, CollectionError> {
        let items = items.into_iter();
        let total = match items.size_hint() {
            (low, Some(high)) if low == high => Some(low),
            _ => None,
        };
        self.drive(futures_util::stream::iter(items), total).await
    }

    /// Runs the operation over a stream of items, read as items are asked.
    pub async fn run_stream(
        self,
        items: impl Stream<Item = I>,
    ) -> Result<Outcomes<T>, CollectionError> {
        self.drive(items, None).await
    }

    async fn drive(
        mut self,
        items: impl Stream<Item = I>,
        total: Option<usize>,
    ) -> Result<Outcomes<T>, CollectionError> {
        // Settings are checked before any item is read or anything sent.
        if let Some(invalid) = self.invalid.take() {
            return Err(invalid);
        }
        let settings = self.collection;
        if settings.concurrency == 0 {
            return Err(CollectionError::Setting {
                setting: "concurrency",
                problem: "is 0, so no item would ever be asked; give 1 or more".to_owned(),
            });
        }
        if settings
            .model
            .as_deref()
            .is_some_and(|model| model.trim().is_empty())
        {
            return Err(CollectionError::Setting {
                setting: "decision_model",
                problem: "is blank, so no model would be named; give a model's name, or leave it unset for the decision client's default".to_owned(),
            });
        }
        // Above `batch_above`'s size the items go through one batch job; a stream (or an
        // iterator of no exact size) is read that far first to tell.
        let mut items = std::pin::pin!(items);
        let (read, total) = match &settings.batch {
            Some(above) => match batch::peek(&mut items, total, above.items).await {
                batch::Peeked::Over(read) => {
                    let items = futures_util::stream::iter(read).chain(items);
                    return batch::run(self, above, items).await;
                }
                batch::Peeked::Under(read, total) => (read, total),
            },
            None => (Vec::new(), total),
        };
        let items = futures_util::stream::iter(read).chain(items);
        let mut journal = match &settings.journal {
            Some(path) => Some(Journal::open(path, self.fingerprint.clone())?),
            None => None,
        };
        let answered = journal.as_ref().map(Journal::answers);
        let mut tracker = Tracker::new(self.operation, total, settings.on_progress.clone());
        // Items asked so far, for the in-flight count: `buffer_unordered` starts them.
        let asked = AtomicUsize::new(0);
        let (key, work, revise) = (&self.key, &self.work, &self.revise);
        // Only a journal needs the items' digests.
        let digest = self.digest.filter(|_| journal.is_some());
        let client = &settings.client;
        let asked_ref = &asked;
        let answered_ref = &answered;
        let mut finished = std::pin::pin!(
            items
                .enumerate()
                .map(move |(index, item)| {
                    let key = match key {
                        Some(key) => key(&item),
                        None => index.to_string(),
                    };
                    let item_digest = digest.map(|digest| digest(&item));
                    let stored = answered_ref
                        .as_ref()
                        .and_then(|answers| answers.get::<T>(&key, item_digest.as_deref()));
                    let future: Pin<Box<dyn Future<Output = Placed<T>> + Send + 'c>> = match stored
                    {
                        Some(value) => {
                            let value = match revise {
                                Some(revise) => revise(value),
                                None => value,
                            };
                            Box::pin(std::future::ready(Placed {
                                index,
                                key,
                                item_digest,
                                answer: Answer {
                                    result: Ok(value),
                                    usage: Usage::default(),
                                    cost: CostTally::default(),
                                    cached: false,
                                },
                                from_journal: true,
                            }))
                        }
                        None => {
                            asked_ref.fetch_add(1, Ordering::Relaxed);
                            let call = work(client, item);
                            Box::pin(async move {
                                Placed {
                                    index,
                                    key,
                                    item_digest,
                                    answer: call.await,
                                    from_journal: false,
                                }
                            })
                        }
                    };
                    future
                })
                .buffer_unordered(settings.concurrency)
        );
        let mut outcomes = Vec::with_capacity(total.unwrap_or(0));
        let mut asked_seen = 0;
        while let Some(placed) = finished.next().await {
            // Items started since the last one finished are in flight now.
            let now_asked = asked.load(Ordering::Relaxed);
            for _ in asked_seen..now_asked {
                tracker.started();
            }
            asked_seen = now_asked;
            let Placed {
                index,
                key,
                item_digest,
                answer,
                from_journal,
            } = placed;
            if let (Some(journal), Ok(value), false) = (&mut journal, &answer.result, from_journal)
            {
                journal.append(&key, item_digest.as_deref(), value)?;
            }
            tracker.finished(
                !from_journal,
                from_journal || answer.cached,
                answer.result.is_err(),
                &answer.cost,
            );
            outcomes.push(Outcome {
                index,
                key,
                result: answer.result,
                usage: answer.usage,
                cost: answer.cost,
                from_journal,
                from_cache: answer.cached,
            });
        }
        match (self.rank_by, settings.order) {
            (Some(score), _) => rank::order(&mut outcomes, score),
            (None, Order::Input) => outcomes.sort_by_key(|outcome| outcome.index),
            (None, Order::Completed) => {}
        }
        Ok(Outcomes {
            outcomes,
            progress: tracker.finish(),
        })
    }
}

/// A finished item with its place.
struct Placed<T> {
    index: usize,
    key: String,
    /// The item's digest, for its journal line.
    item_digest: Option<String>,
    answer: Answer<T>,
    from_journal: bool,
}
