//! The decision types of the DSL: a method returning [`Binary`], [`Choice<E>`] or
//! [`Score<E>`] is a decision question, its `#[intent]` the question and its parameters
//! the state.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::{DecisionError, DecisionOption, ProbabilitySource};

/// One variant of a [`DecisionEnum`]: its name and its doc comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecisionVariant {
    /// The variant's name, as the model is shown it.
    pub name: &'static str,
    /// The variant's doc comment, when it has one.
    pub description: Option<&'static str>,
}

/// An enum whose variants are the choices of a [`Choice`] or the levels of a [`Score`]
/// (lowest first): derive it with `#[derive(DecisionEnum)]` on an enum of two or more
/// variants without data. Doc comments on the variants describe them to the model.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the options of a decision question",
    label = "not an enum deriving `DecisionEnum`",
    note = "`Choice<..>` and `Score<..>` take an enum of two or more variants without data that derives `DecisionEnum`, like `#[derive(DecisionEnum)] enum Route {{ Billing, Support }}`"
)]
pub trait DecisionEnum: Sized + Send + 'static {
    /// The variants in declaration order.
    const VARIANTS: &'static [DecisionVariant];

    /// The variant at `index` in declaration order.
    fn from_index(index: usize) -> Option<Self>;

    /// This variant's index in declaration order.
    fn index(&self) -> usize;
}

/// What a question over `E`'s variants needs of `E`, as values: its variants and the way
/// from an index back to a variant. The functions that ask such questions take this
/// instead of an `E: DecisionEnum` bound, so that the bound is checked where the value is
/// made ([`EnumOptions::of`]), once, and not again at every function it passes through.
pub struct EnumOptions<E> {
    variants: &'static [DecisionVariant],
    from_index: fn(usize) -> Option<E>,
}

// Not derived: a derive would ask `E: Clone`/`E: Copy`, and the fields are copies anyway.
impl<E> Clone for EnumOptions<E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for EnumOptions<E> {}

impl<E> fmt::Debug for EnumOptions<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnumOptions")
            .field("variants", &self.variants)
            .finish_non_exhaustive()
    }
}

impl<E: DecisionEnum> EnumOptions<E> {
    /// `E`'s variants.
    pub fn of() -> Self {
        Self {
            variants: E::VARIANTS,
            from_index: E::from_index,
        }
    }
}

impl<E> EnumOptions<E> {
    /// The options of the question, described by the variants' doc comments.
    pub(crate) fn options(&self) -> Vec<DecisionOption> {
        self.variants
            .iter()
            .map(|variant| {
                let option = DecisionOption::new(variant.name);
                match variant.description {
                    Some(description) => option.described(description),
                    None => option,
                }
            })
            .collect()
    }

    /// A distribution over the variants from the probabilities of the answer to `id`, in
    /// declaration order.
    pub(crate) fn variants(
        &self,
        id: &str,
        probabilities: &[(String, f64)],
    ) -> Result<Vec<(E, f64)>, DecisionError> {
        probabilities
            .iter()
            .enumerate()
            .map(|(index, (_, p))| {
                (self.from_index)(index)
                    .map(|variant| (variant, *p))
                    .ok_or_else(|| {
                        DecisionError::invalid_response(format!(
                            "the answer to `{id}` has more options than the enum's {} variants",
                            self.variants.len()
                        ))
                    })
            })
            .collect()
    }

    /// The variant at `index` of the answer to `id`, or an invalid response.
    pub(crate) fn variant(&self, id: &str, index: usize) -> Result<E, DecisionError> {
        (self.from_index)(index).ok_or_else(|| {
            DecisionError::invalid_response(format!(
                "the answer to `{id}` names no variant of the enum"
            ))
        })
    }
}

/// The answer to a yes/no decision question.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Binary {
    /// The probability of yes.
    pub probability: f64,
    /// Whether it was measured or stated.
    pub source: ProbabilitySource,
}

impl Binary {
    /// Whether the probability of yes reaches `threshold`.
    pub fn is_yes(&self, threshold: f64) -> bool {
        self.probability >= threshold
    }
}

/// The answer to a choice question over `E`'s variants.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice<E> {
    /// The probability of each variant, in declaration order.
    pub probabilities: Vec<(E, f64)>,
    /// The selected variant: the most probable one in `probabilities`, on every path
    /// (measured log-probabilities or stated probabilities alike; the first in
    /// declaration order on a tie).
    pub selected: E,
    /// Whether the probabilities were measured or stated.
    pub source: ProbabilitySource,
}

/// The answer to a score question over `E`'s variants, the lowest level first.
#[derive(Debug, Clone, PartialEq)]
pub struct Score<E> {
    /// The probability of each level, lowest first.
    pub probabilities: Vec<(E, f64)>,
    /// The most likely level: the most probable one in `probabilities`, on every path
    /// (the lower level on a tie).
    pub most_likely: E,
    /// The probability-weighted level index (0 is the lowest level).
    pub expected: f64,
    /// Whether the probabilities were measured or stated.
    pub source: ProbabilitySource,
}

/// `value` as JSON, for a state.
pub(crate) fn to_state<T: Serialize + ?Sized>(value: &T) -> Result<Value, DecisionError> {
    serde_json::to_value(value).map_err(|error| {
        DecisionError::invalid_request(format!("the state cannot be serialized ({error})"))
    })
}
