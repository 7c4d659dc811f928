//! What a collection operation gives back for each item: which input it answers, its value
//! or its typed failure, and what it cost.

use serde::{Deserialize, Serialize};

use crate::cost::{Cost, CostTally, UnpricedModels};
use crate::decision::{Binary, DecisionError};
use crate::error::IntentError;
use crate::failure::FailureKind;
use crate::result::Usage;

use super::Progress;

/// One item's answer: its input's position and key, its value or why it has none, and
/// its cost.
///
/// Every input gets exactly one outcome: an item that failed is an outcome with an
/// [`ItemError`], never a missing entry.
#[derive(Debug)]
#[non_exhaustive]
pub struct Outcome<T> {
    /// The input's position in the iterator or stream, from 0.
    pub index: usize,
    /// The input's key: the one [`Op::key`](super::Op::key) gave, else its index in
    /// decimal. The journal finds an answered item by it.
    pub key: String,
    /// The value, or the typed failure.
    pub result: Result<T, ItemError>,
    /// Tokens used for this item (zero when it came from the journal or the cache).
    pub usage: Usage,
    /// What this item cost on the client's price table (zero when it came from the
    /// journal or the cache: it was paid for by the call that stored it).
    pub cost: CostTally,
    /// Whether the value was read from the journal instead of asked.
    pub from_journal: bool,
    /// Whether the value was served from the client's response cache (a decision asked
    /// before about the same state, with the same questions and model) instead of asked.
    pub from_cache: bool,
}

impl<T> Outcome<T> {
    /// The value, when the item was answered.
    pub fn value(&self) -> Option<&T> {
        self.result.as_ref().ok()
    }

    /// The failure's kind, when the item failed.
    pub fn failure_kind(&self) -> Option<FailureKind> {
        self.result.as_ref().err().map(ItemError::kind)
    }

    /// What this item cost; an error naming the models that had no price.
    pub fn cost(&self) -> Result<Cost, UnpricedModels> {
        self.cost.total()
    }
}

/// Why one item has no value: the intent call's error or the decision's, in the crate's
/// one failure vocabulary ([`kind`](Self::kind)).
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum ItemError {
    /// A mapped intent call failed.
    #[error(transparent)]
    Intent(Box<IntentError>),
    /// A decision question (filter, classify, score, rank) failed: decisions are asked
    /// once, never retried, so a transient failure is worth a rerun.
    #[error(transparent)]
    Decision(DecisionError),
}

crate::failure::debug_as_message!(ItemError);

impl ItemError {
    /// The failure's kind, the same as [`IntentError::kind`] and [`DecisionError::kind`].
    pub fn kind(&self) -> FailureKind {
        match self {
            ItemError::Intent(error) => error.kind(),
            ItemError::Decision(error) => error.kind(),
        }
    }

    /// Whether asking again (a rerun) may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            ItemError::Intent(error) => error.is_transient(),
            ItemError::Decision(error) => error.is_transient(),
        }
    }
}

impl From<IntentError> for ItemError {
    fn from(error: IntentError) -> Self {
        ItemError::Intent(Box::new(error))
    }
}

impl From<DecisionError> for ItemError {
    fn from(error: DecisionError) -> Self {
        ItemError::Decision(error)
    }
}

/// A filter's answer for one item: whether it passes, and the yes/no answer that decided.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Kept {
    /// Whether the probability of yes reached the filter's threshold.
    pub keep: bool,
    /// The answer: the probability of yes, and whether it was measured or stated.
    pub answer: Binary,
}

impl Kept {
    pub(crate) fn at(answer: Binary, threshold: f64) -> Self {
        Kept {
            keep: answer.probability >= threshold,
            answer,
        }
    }
}

/// The outcomes of one operation, in the order the operation's settings chose, with the
/// last progress report.
#[derive(Debug)]
pub struct Outcomes<T> {
    pub(crate) outcomes: Vec<Outcome<T>>,
    pub(crate) progress: Progress,
}

impl<T> Outcomes<T> {
    /// The outcomes, one per input.
    pub fn iter(&self) -> std::slice::Iter<'_, Outcome<T>> {
        self.outcomes.iter()
    }

    /// The outcomes, one per input, as a slice.
    pub fn as_slice(&self) -> &[Outcome<T>] {
        &self.outcomes
    }

    /// The outcomes, one per input.
    pub fn into_vec(self) -> Vec<Outcome<T>> {
        self.outcomes
    }

    /// How many inputs there were.
    pub fn len(&self) -> usize {
        self.outcomes.len()
    }

    /// Whether there were no inputs.
    pub fn is_empty(&self) -> bool {
        self.outcomes.is_empty()
    }

    /// The outcomes that failed.
    pub fn failed(&self) -> impl Iterator<Item = &Outcome<T>> {
        self.outcomes
            .iter()
            .filter(|outcome| outcome.result.is_err())
    }

    /// The sum of every item's cost, as far as the price table knows it.
    pub fn cost_tally(&self) -> CostTally {
        let mut tally = CostTally::default();
        for outcome in &self.outcomes {
            tally += &outcome.cost;
        }
        tally
    }

    /// The sum of every item's cost; an error naming the models that had no price.
    pub fn cost(&self) -> Result<Cost, UnpricedModels> {
        self.cost_tally().total()
    }

    /// The last progress report: counts, cost and time of the whole run.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }
}

/// The outcome at a position of the operation's order (the input's, unless
/// [`Order::Completed`](super::Order::Completed) or a ranking chose another): panics past
/// the end, as a slice does.
impl<T> std::ops::Index<usize> for Outcomes<T> {
    type Output = Outcome<T>;

    fn index(&self, position: usize) -> &Outcome<T> {
        &self.outcomes[position]
    }
}

impl<T> IntoIterator for Outcomes<T> {
    type Item = Outcome<T>;
    type IntoIter = std::vec::IntoIter<Outcome<T>>;

    fn into_iter(self) -> Self::IntoIter {
        self.outcomes.into_iter()
    }
}

impl<'a, T> IntoIterator for &'a Outcomes<T> {
    type Item = &'a Outcome<T>;
    type IntoIter = std::slice::Iter<'a, Outcome<T>>;

    fn into_iter(self) -> Self::IntoIter {
        self.outcomes.iter()
    }
}
