//! The decision types of the DSL: a method returning [`Binary`], [`Choice<E>`] or
//! [`Score<E>`] is a decision question, its `#[intent]` the question and its parameters
//! the state.

use std::fmt;

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{DecisionError, DecisionOption, DecisionResponse, ProbabilitySource};

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
    /// declaration order; the answer's options must be the variants' names, in that
    /// order (a question asked with another enum's options is not read as this one).
    pub(crate) fn variants(
        &self,
        id: &str,
        probabilities: &[(String, f64)],
    ) -> Result<Vec<(E, f64)>, DecisionError> {
        let names = || {
            self.variants
                .iter()
                .map(|variant| variant.name)
                .collect::<Vec<_>>()
                .join(", ")
        };
        if probabilities.len() != self.variants.len() {
            return Err(DecisionError::invalid_response(format!(
                "the answer to `{id}` has {} options, and the enum has {} variants ({}); ask it with this enum's options",
                probabilities.len(),
                self.variants.len(),
                names()
            )));
        }
        probabilities
            .iter()
            .zip(self.variants)
            .enumerate()
            .map(|(index, ((name, p), variant))| {
                if name != variant.name {
                    return Err(DecisionError::invalid_response(format!(
                        "the answer to `{id}` has the option `{name}` where the enum has `{}` (its variants: {}); ask it with this enum's options",
                        variant.name,
                        names()
                    )));
                }
                self.variant(id, index).map(|variant| (variant, *p))
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

    /// The answer to the choice question `id` in `response`, as `E`'s variants.
    pub(crate) fn choice(
        &self,
        response: &DecisionResponse,
        id: &str,
    ) -> Result<Choice<E>, DecisionError> {
        let answer = response
            .choice(id)
            .ok_or_else(|| no_answer(response, id, "choice"))?;
        let selected = answer
            .probabilities()
            .iter()
            .position(|(name, _)| name == answer.selected())
            .ok_or_else(|| no_answer(response, id, "choice"))?;
        Ok(Choice {
            probabilities: self.variants(id, answer.probabilities())?,
            selected: self.variant(id, selected)?,
            source: response.source(),
        })
    }

    /// The answer to the score question `id` in `response`, as `E`'s variants.
    pub(crate) fn score(
        &self,
        response: &DecisionResponse,
        id: &str,
    ) -> Result<Score<E>, DecisionError> {
        let answer = response
            .score(id)
            .ok_or_else(|| no_answer(response, id, "score"))?;
        Ok(Score {
            probabilities: self.variants(id, answer.probabilities())?,
            most_likely: self.variant(id, answer.most_likely_index())?,
            expected: answer.expected(),
            source: response.source(),
        })
    }
}

/// The answer to the yes/no question `id` in `response`.
pub(crate) fn binary(response: &DecisionResponse, id: &str) -> Result<Binary, DecisionError> {
    let answer = response
        .binary(id)
        .ok_or_else(|| no_answer(response, id, "yes/no"))?;
    Ok(Binary {
        probability: answer.probability(),
        source: response.source(),
    })
}

/// Why `response` gives no `kind` answer to `id`: it answers no question of that id, or
/// answers it as another kind of question.
fn no_answer(response: &DecisionResponse, id: &str, kind: &str) -> DecisionError {
    let problem = match response.answer(id) {
        Some(_) => format!("the answer to `{id}` is not a {kind} answer"),
        None => {
            let ids: Vec<&str> = response
                .answers()
                .iter()
                .map(|(id, _)| id.as_str())
                .collect();
            format!(
                "the response has no answer to `{id}` (it answers {})",
                if ids.is_empty() {
                    "nothing".to_owned()
                } else {
                    format!("`{}`", ids.join("`, `"))
                }
            )
        }
    };
    DecisionError::invalid_response(problem)
}

/// The answer to a yes/no decision question.
///
/// It serializes as `{"probability": 0.82, "source": "log_probabilities"}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
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
///
/// It serializes with the variants' names, so that it can be stored, cached and compared
/// in evaluations without `E` implementing serde's traits:
/// `{"selected": "Billing", "probabilities": {"Billing": 0.74, "Support": 0.26},
/// "source": "stated"}`, the probabilities in declaration order.
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
///
/// It serializes with the levels' names, like [`Choice`]: `{"most_likely": "High",
/// "expected": 1.6, "probabilities": {"Low": 0.1, "Medium": 0.2, "High": 0.7}, "source":
/// "decision_model"}`.
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

impl<E: DecisionEnum> Choice<E> {
    /// The selected variant's name, as the model was shown it.
    pub fn selected_name(&self) -> &'static str {
        variant_name::<E>(&self.selected)
    }
}

impl<E: DecisionEnum> Score<E> {
    /// The most likely level's name, as the model was shown it.
    pub fn most_likely_name(&self) -> &'static str {
        variant_name::<E>(&self.most_likely)
    }
}

fn variant_name<E: DecisionEnum>(variant: &E) -> &'static str {
    E::VARIANTS
        .get(variant.index())
        .map_or("", |described| described.name)
}

/// A distribution written as an object of variant names to probabilities, in order.
struct NamedDistribution<'a, E>(&'a [(E, f64)]);

impl<E: DecisionEnum> Serialize for NamedDistribution<'_, E> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (variant, probability) in self.0 {
            map.serialize_entry(variant_name::<E>(variant), probability)?;
        }
        map.end()
    }
}

/// The variant of `E` named `name`.
fn variant_named<E: DecisionEnum, Er: serde::de::Error>(name: &str) -> Result<E, Er> {
    E::VARIANTS
        .iter()
        .position(|variant| variant.name == name)
        .and_then(E::from_index)
        .ok_or_else(|| {
            let names: Vec<&str> = E::VARIANTS.iter().map(|v| v.name).collect();
            Er::custom(format!(
                "`{name}` is not an option of this question; the options are {}",
                names.join(", ")
            ))
        })
}

/// A distribution read back: every variant named once, put in declaration order.
fn read_distribution<E: DecisionEnum, Er: serde::de::Error>(
    named: BTreeMap<String, f64>,
) -> Result<Vec<(E, f64)>, Er> {
    let mut by_index: Vec<Option<f64>> = vec![None; E::VARIANTS.len()];
    for (name, probability) in named {
        let variant: E = variant_named(&name)?;
        by_index[variant.index()] = Some(probability);
    }
    by_index
        .into_iter()
        .enumerate()
        .map(|(index, probability)| {
            let name = E::VARIANTS[index].name;
            let probability = probability
                .ok_or_else(|| Er::custom(format!("the probabilities have no `{name}`")))?;
            let variant = E::from_index(index)
                .ok_or_else(|| Er::custom(format!("`{name}` has no variant")))?;
            Ok((variant, probability))
        })
        .collect()
}

impl<E: DecisionEnum> Serialize for Choice<E> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("selected", self.selected_name())?;
        map.serialize_entry("probabilities", &NamedDistribution(&self.probabilities))?;
        map.serialize_entry("source", &self.source)?;
        map.end()
    }
}

impl<'de, E: DecisionEnum> Deserialize<'de> for Choice<E> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Stored {
            selected: String,
            probabilities: BTreeMap<String, f64>,
            source: ProbabilitySource,
        }
        let stored = Stored::deserialize(deserializer)?;
        Ok(Choice {
            selected: variant_named(&stored.selected)?,
            probabilities: read_distribution(stored.probabilities)?,
            source: stored.source,
        })
    }
}

impl<E: DecisionEnum> Serialize for Score<E> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("most_likely", self.most_likely_name())?;
        map.serialize_entry("expected", &self.expected)?;
        map.serialize_entry("probabilities", &NamedDistribution(&self.probabilities))?;
        map.serialize_entry("source", &self.source)?;
        map.end()
    }
}

impl<'de, E: DecisionEnum> Deserialize<'de> for Score<E> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Stored {
            most_likely: String,
            expected: f64,
            probabilities: BTreeMap<String, f64>,
            source: ProbabilitySource,
        }
        let stored = Stored::deserialize(deserializer)?;
        Ok(Score {
            most_likely: variant_named(&stored.most_likely)?,
            expected: stored.expected,
            probabilities: read_distribution(stored.probabilities)?,
            source: stored.source,
        })
    }
}

/// The schema of a stored distribution: one probability per variant name.
fn distribution_schema<E: DecisionEnum>() -> Value {
    let names = names_of::<E>();
    let properties: serde_json::Map<String, Value> = names
        .iter()
        .map(|name| {
            let probability = serde_json::json!({"type": "number", "minimum": 0, "maximum": 1});
            ((*name).to_owned(), probability)
        })
        .collect();
    serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": names,
        "additionalProperties": false,
    })
}

fn names_of<E: DecisionEnum>() -> Vec<&'static str> {
    E::VARIANTS.iter().map(|v| v.name).collect()
}

// The schemas are inlined: their shape depends on `E`'s variants, so one shared
// definition name would stand for different shapes.
impl<E: DecisionEnum> JsonSchema for Choice<E> {
    fn schema_name() -> Cow<'static, str> {
        "Choice".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {
                "selected": {"type": "string", "enum": names_of::<E>()},
                "probabilities": distribution_schema::<E>(),
                "source": generator.subschema_for::<ProbabilitySource>(),
            },
            "required": ["selected", "probabilities", "source"],
            "additionalProperties": false,
        })
    }
}

impl<E: DecisionEnum> JsonSchema for Score<E> {
    fn schema_name() -> Cow<'static, str> {
        "Score".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "properties": {
                "most_likely": {"type": "string", "enum": names_of::<E>()},
                "expected": {"type": "number", "minimum": 0},
                "probabilities": distribution_schema::<E>(),
                "source": generator.subschema_for::<ProbabilitySource>(),
            },
            "required": ["most_likely", "expected", "probabilities", "source"],
            "additionalProperties": false,
        })
    }
}

/// `value` as JSON, for a state.
pub(crate) fn to_state<T: Serialize + ?Sized>(value: &T) -> Result<Value, DecisionError> {
    serde_json::to_value(value).map_err(|error| {
        DecisionError::invalid_request(format!("the state cannot be serialized ({error})"))
    })
}
