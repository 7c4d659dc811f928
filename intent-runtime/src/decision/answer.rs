//! What a decision client answers: a probability, or a distribution over the options
//! asked, each checked when it is built, and the response that carries them.
//!
//! Each type reads back what it serializes (a cassette keeps responses so): through the
//! same constructors and checks, so a stored answer that is out of range, does not sum
//! to 1 or selects a less probable choice is refused as a model's would be.

use serde::{Deserialize, Serialize};

use super::{DecisionError, DecisionQuestion, DecisionRequest};
use crate::result::Usage;

/// How far a distribution's sum may stray from 1 (floating-point rounding, not a
/// model's arithmetic: stated distributions are normalised before they get here).
pub const SUM_TOLERANCE: f64 = 1e-6;

/// Where the probabilities came from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ProbabilitySource {
    /// Measured: read from the token log-probabilities of the model's one-token answer.
    LogProbabilities,
    /// Stated: the model wrote the numbers down. They are its claim, not a measurement,
    /// and are often poorly calibrated.
    Stated,
    /// Reported by a decision model (a System One or Decisions API), which answers typed
    /// questions with distributions instead of text.
    DecisionModel,
}

fn check_probability(what: &str, p: f64) -> Result<(), DecisionError> {
    if p.is_finite() && (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(DecisionError::invalid_response(format!(
            "{what} has the probability {p}, outside [0, 1]"
        )))
    }
}

/// How an answer's errors name option `index` of its distribution.
type Namer<'a> = &'a dyn Fn(usize) -> String;

/// Options named by position: a distribution a caller built may carry any names (a
/// host's words, which may quote the state), so they are never quoted.
fn by_position(index: usize) -> String {
    format!("option {}", index + 1)
}

fn check_distribution(
    probabilities: &[(String, f64)],
    name: Namer<'_>,
) -> Result<(), DecisionError> {
    let mut sum = 0.0;
    for (index, (option, p)) in probabilities.iter().enumerate() {
        if option.trim().is_empty() {
            return Err(DecisionError::invalid_response(format!(
                "an answer gives {} a blank name",
                name(index)
            )));
        }
        if let Some(first) = probabilities[..index]
            .iter()
            .position(|(other, _)| other == option)
        {
            return Err(DecisionError::invalid_response(format!(
                "an answer names {} and {} the same",
                name(first),
                name(index)
            )));
        }
        check_probability(&name(index), *p)?;
        sum += p;
    }
    if probabilities.len() < 2 || (sum - 1.0).abs() > SUM_TOLERANCE {
        return Err(DecisionError::invalid_response(format!(
            "the probabilities of {} options sum to {sum}, not 1",
            probabilities.len()
        )));
    }
    Ok(())
}

/// The labels of `question` as a namer, once `probabilities` is known to be over exactly
/// them, in their order: labels this crate sent may be named.
fn question_labels<'q>(
    question: &'q DecisionQuestion,
    probabilities: &[(String, f64)],
) -> Result<impl Fn(usize) -> String + 'q, DecisionError> {
    let options = question.options();
    let same = probabilities.len() == options.len()
        && probabilities
            .iter()
            .zip(options)
            .all(|((name, _), option)| name == option.name());
    if !same {
        return Err(DecisionError::invalid_response(format!(
            "the answer to `{}` is not a distribution over the {} options asked, in their order",
            question.id(),
            options.len()
        )));
    }
    Ok(move |index: usize| {
        options.get(index).map_or_else(
            || by_position(index),
            |option| format!("`{}`", option.name()),
        )
    })
}

fn check_coverage(coverage: Option<f64>) -> Result<(), DecisionError> {
    coverage.map_or(Ok(()), |c| check_probability("the coverage", c))
}

/// The answer to a yes/no question.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BinaryAnswer {
    probability: f64,
    coverage: Option<f64>,
}

impl BinaryAnswer {
    /// The answer "yes with probability `probability`", which must lie in [0, 1].
    pub fn new(probability: f64) -> Result<Self, DecisionError> {
        check_probability("yes", probability)?;
        Ok(Self {
            probability,
            coverage: None,
        })
    }

    /// With the share of the answer token's probability that fell on the allowed
    /// labels (log-probability answers only).
    pub fn with_coverage(mut self, coverage: f64) -> Result<Self, DecisionError> {
        check_coverage(Some(coverage))?;
        self.coverage = Some(coverage);
        Ok(self)
    }

    /// The probability of yes.
    pub fn probability(&self) -> f64 {
        self.probability
    }

    /// The share of the answer token's probability on the allowed labels, for a
    /// log-probability answer.
    pub fn coverage(&self) -> Option<f64> {
        self.coverage
    }
}

/// The answer to a choice question: a probability per choice, and the selected one.
///
/// The selected choice is always a most probable one, whichever client answered: read
/// from the log-probabilities, from the distribution a model stated (a stated answer
/// names no choice of its own), or given to [`ChoiceAnswer::new`], which refuses any
/// other.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChoiceAnswer {
    probabilities: Vec<(String, f64)>,
    selected: String,
    coverage: Option<f64>,
    confidence: Option<f64>,
}

impl ChoiceAnswer {
    /// A distribution over named choices (each in [0, 1], summing to 1) and the choice
    /// selected, which must be one of them and as probable as any other (one of the
    /// most probable on a tie): an answer whose selection contradicts its own
    /// distribution is an invalid response.
    pub fn new(
        probabilities: Vec<(String, f64)>,
        selected: impl Into<String>,
    ) -> Result<Self, DecisionError> {
        Self::checked(probabilities, selected.into(), &by_position)
    }

    /// [`ChoiceAnswer::new`] for `question`, whose labels the distribution must be over
    /// (in their order); `selected` is the most probable choice when `None`. Its errors
    /// name the question and its labels.
    pub(crate) fn answering(
        question: &DecisionQuestion,
        probabilities: Vec<(String, f64)>,
        selected: Option<String>,
    ) -> Result<Self, DecisionError> {
        let id = question.id();
        let name = question_labels(question, &probabilities)?;
        let selected = selected.unwrap_or_else(|| most_probable(&probabilities));
        Self::checked(probabilities, selected, &name).map_err(|error| error.about(id))
    }

    fn checked(
        probabilities: Vec<(String, f64)>,
        selected: String,
        name: Namer<'_>,
    ) -> Result<Self, DecisionError> {
        check_distribution(&probabilities, name)?;
        let Some((index, chosen)) = probabilities
            .iter()
            .enumerate()
            .find(|(_, (option, _))| *option == selected)
            .map(|(index, (_, p))| (index, *p))
        else {
            // The selection is not quoted: it is not one of the names checked above, and
            // may be anything a host wrote.
            return Err(DecisionError::invalid_response(format!(
                "the selected choice is not one of the {} choices of the answer",
                probabilities.len()
            )));
        };
        if let Some((likelier, (_, p))) = probabilities
            .iter()
            .enumerate()
            .find(|(_, (_, p))| *p > chosen)
        {
            return Err(DecisionError::invalid_response(format!(
                "the selected choice {} has the probability {chosen}, but {} has {p}: the selected choice must be the most probable one",
                name(index),
                name(likelier)
            )));
        }
        Ok(Self {
            probabilities,
            selected,
            coverage: None,
            confidence: None,
        })
    }

    /// A distribution whose most likely choice is the selected one (the first on a tie).
    pub fn most_likely(probabilities: Vec<(String, f64)>) -> Result<Self, DecisionError> {
        let selected = most_probable(&probabilities);
        Self::new(probabilities, selected)
    }

    /// With the share of the answer token's probability on the allowed labels.
    pub fn with_coverage(mut self, coverage: f64) -> Result<Self, DecisionError> {
        check_coverage(Some(coverage))?;
        self.coverage = Some(coverage);
        Ok(self)
    }

    /// With the confidence a decision model reported, a statistic of the distribution's
    /// shape in [0, 1] (not the probability that the answer is right).
    pub fn with_confidence(mut self, confidence: f64) -> Result<Self, DecisionError> {
        check_probability("the confidence", confidence)?;
        self.confidence = Some(confidence);
        Ok(self)
    }

    /// The confidence a decision model reported, when it reported one. Hosts compute it
    /// differently: compare probabilities, not confidences, across hosts.
    pub fn confidence(&self) -> Option<f64> {
        self.confidence
    }

    /// The probability of each choice, in the question's order.
    pub fn probabilities(&self) -> &[(String, f64)] {
        &self.probabilities
    }

    /// The probability of the choice named `name`.
    pub fn probability(&self, name: &str) -> Option<f64> {
        self.probabilities
            .iter()
            .find(|(choice, _)| choice == name)
            .map(|(_, p)| *p)
    }

    /// The selected choice: the most probable one (the first of them on a tie, unless
    /// the client chose another of equal probability).
    pub fn selected(&self) -> &str {
        &self.selected
    }

    /// The share of the answer token's probability on the allowed labels, for a
    /// log-probability answer.
    pub fn coverage(&self) -> Option<f64> {
        self.coverage
    }
}

/// The answer to a score question: a probability per level, the most likely level and
/// the expected level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoreAnswer {
    probabilities: Vec<(String, f64)>,
    most_likely: usize,
    expected: f64,
    coverage: Option<f64>,
    confidence: Option<f64>,
}

impl ScoreAnswer {
    /// A distribution over the levels, lowest first (each in [0, 1], summing to 1).
    pub fn new(probabilities: Vec<(String, f64)>) -> Result<Self, DecisionError> {
        Self::checked(probabilities, &by_position)
    }

    /// [`ScoreAnswer::new`] for `question`, whose levels the distribution must be over
    /// (lowest first). Its errors name the question and its levels.
    pub(crate) fn answering(
        question: &DecisionQuestion,
        probabilities: Vec<(String, f64)>,
    ) -> Result<Self, DecisionError> {
        let name = question_labels(question, &probabilities)?;
        Self::checked(probabilities, &name).map_err(|error| error.about(question.id()))
    }

    fn checked(probabilities: Vec<(String, f64)>, name: Namer<'_>) -> Result<Self, DecisionError> {
        check_distribution(&probabilities, name)?;
        let most_likely = argmax(probabilities.iter().map(|(_, p)| *p));
        let expected = probabilities
            .iter()
            .enumerate()
            .map(|(index, (_, p))| index as f64 * p)
            .sum();
        Ok(Self {
            probabilities,
            most_likely,
            expected,
            coverage: None,
            confidence: None,
        })
    }

    /// With the share of the answer token's probability on the allowed labels.
    pub fn with_coverage(mut self, coverage: f64) -> Result<Self, DecisionError> {
        check_coverage(Some(coverage))?;
        self.coverage = Some(coverage);
        Ok(self)
    }

    /// With the confidence a decision model reported, a statistic of the distribution's
    /// shape in [0, 1] (not the probability that the answer is right).
    pub fn with_confidence(mut self, confidence: f64) -> Result<Self, DecisionError> {
        check_probability("the confidence", confidence)?;
        self.confidence = Some(confidence);
        Ok(self)
    }

    /// The confidence a decision model reported, when it reported one. Hosts compute it
    /// differently: compare probabilities, not confidences, across hosts.
    pub fn confidence(&self) -> Option<f64> {
        self.confidence
    }

    /// The probability of each level, lowest first.
    pub fn probabilities(&self) -> &[(String, f64)] {
        &self.probabilities
    }

    /// The index of the most likely level (0 is the lowest; the lower one on a tie).
    pub fn most_likely_index(&self) -> usize {
        self.most_likely
    }

    /// The name of the most likely level.
    pub fn most_likely(&self) -> &str {
        &self.probabilities[self.most_likely].0
    }

    /// The probability-weighted level index, from 0 (the lowest level) to one less than
    /// the number of levels.
    pub fn expected(&self) -> f64 {
        self.expected
    }

    /// The share of the answer token's probability on the allowed labels, for a
    /// log-probability answer.
    pub fn coverage(&self) -> Option<f64> {
        self.coverage
    }
}

/// The name of the first most probable option (empty for none).
fn most_probable(probabilities: &[(String, f64)]) -> String {
    probabilities
        .get(argmax(probabilities.iter().map(|(_, p)| *p)))
        .map(|(name, _)| name.clone())
        .unwrap_or_default()
}

/// The first index of the largest value (0 for none).
fn argmax(values: impl Iterator<Item = f64>) -> usize {
    let mut best = (0, f64::NEG_INFINITY);
    for (index, value) in values.enumerate() {
        if value > best.1 {
            best = (index, value);
        }
    }
    best.0
}

/// One answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum DecisionAnswer {
    /// To a yes/no question.
    Binary(BinaryAnswer),
    /// To a choice question.
    Choice(ChoiceAnswer),
    /// To a score question.
    Score(ScoreAnswer),
}

impl DecisionAnswer {
    /// Whether this answers `question`: the same kind, and a distribution over exactly
    /// the options asked, in their order.
    fn answers(&self, question: &DecisionQuestion) -> bool {
        let same_options = |probabilities: &[(String, f64)]| {
            probabilities.len() == question.options().len()
                && probabilities
                    .iter()
                    .zip(question.options())
                    .all(|((name, _), option)| name == option.name())
        };
        match (self, question) {
            (DecisionAnswer::Binary(_), DecisionQuestion::Binary(_)) => true,
            (DecisionAnswer::Choice(a), DecisionQuestion::Choice(_)) => {
                same_options(&a.probabilities)
            }
            (DecisionAnswer::Score(a), DecisionQuestion::Score(_)) => {
                same_options(&a.probabilities)
            }
            _ => false,
        }
    }
}

/// Every answer to a request, what it cost and where its probabilities came from.
///
/// It reads back what it serializes, each answer through its constructor's checks (an
/// error names the question); a response read so is not checked against a request, as
/// none is at hand: a cassette checks it against the request it replays it for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecisionResponse {
    answers: Vec<(String, DecisionAnswer)>,
    usage: Usage,
    model: String,
    source: ProbabilitySource,
    request_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fallback: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    replayed: bool,
    /// Served from the client's response cache: true only for the response in hand,
    /// never stored.
    #[serde(skip)]
    cached: bool,
}

impl DecisionResponse {
    /// A response to `request`: `answers` holds one answer per question, in the
    /// questions' order, each of the question's kind and over exactly its options.
    pub fn new(
        request: &DecisionRequest,
        answers: Vec<DecisionAnswer>,
        usage: Usage,
        model: impl Into<String>,
        source: ProbabilitySource,
    ) -> Result<Self, DecisionError> {
        if answers.len() != request.questions().len() {
            return Err(DecisionError::invalid_response(format!(
                "{} answers for {} questions",
                answers.len(),
                request.questions().len()
            )));
        }
        let mut keyed = Vec::with_capacity(answers.len());
        for (question, answer) in request.questions().iter().zip(answers) {
            if !answer.answers(question) {
                return Err(DecisionError::invalid_response(format!(
                    "the answer to `{}` does not match the question's kind and options",
                    question.id()
                )));
            }
            keyed.push((question.id().to_owned(), answer));
        }
        Ok(Self {
            answers: keyed,
            usage,
            model: model.into(),
            source,
            request_id: None,
            fallback: None,
            notes: Vec::new(),
            replayed: false,
            cached: false,
        })
    }

    /// This response, if it answers `request`: the same question ids in the same order,
    /// each answer of its question's kind and over exactly its options. A response read
    /// back from storage is checked so before it is served for a request.
    pub(crate) fn answering(self, request: &DecisionRequest) -> Result<Self, DecisionError> {
        let asked: Vec<&str> = request.questions().iter().map(|q| q.id()).collect();
        let answered: Vec<&str> = self.answers.iter().map(|(id, _)| id.as_str()).collect();
        if asked != answered {
            return Err(DecisionError::invalid_response(format!(
                "the response answers the questions {} but the request asks {}",
                quoted_ids(&answered),
                quoted_ids(&asked)
            )));
        }
        for (question, (_, answer)) in request.questions().iter().zip(&self.answers) {
            if !answer.answers(question) {
                return Err(DecisionError::invalid_response(format!(
                    "the answer to `{}` does not match the question's kind and options",
                    question.id()
                )));
            }
        }
        Ok(self)
    }

    /// This response as a cassette keeps it: without the host's request id (it changes on
    /// every run and determines nothing), its model, fallback reason and notes passed
    /// through `clean`.
    pub(crate) fn for_cassette(&self, clean: impl Fn(&str) -> String) -> Self {
        Self {
            answers: self.answers.clone(),
            usage: self.usage,
            model: clean(&self.model),
            source: self.source,
            request_id: None,
            fallback: self.fallback.as_deref().map(&clean),
            notes: self.notes.iter().map(|note| clean(note)).collect(),
            replayed: false,
            cached: false,
        }
    }

    /// This response, marked as served from a cassette.
    pub(crate) fn mark_replayed(mut self) -> Self {
        self.replayed = true;
        self
    }

    /// This response, marked as served from the client's response cache.
    pub(crate) fn mark_cached(mut self) -> Self {
        self.cached = true;
        self
    }

    /// Whether the response was served from the client's response cache
    /// ([`IntentClientBuilder::cache`](crate::IntentClientBuilder::cache)) instead of
    /// asked: it cost nothing now, and its [`usage`](Self::usage) is the tokens the
    /// decision took when it was asked and stored.
    pub fn cached(&self) -> bool {
        self.cached
    }

    /// Whether the response was replayed from a cassette
    /// ([`CassetteDecisionClient`](crate::decision::CassetteDecisionClient)) instead of
    /// coming from the model. A replayed response has no
    /// [`request_id`](Self::request_id): a cassette does not keep the host's ids.
    pub fn replayed(&self) -> bool {
        self.replayed
    }

    /// These answers, given by a second method because the first could not answer (log
    /// probabilities the provider did not give): why, and the tokens the first spent.
    pub(crate) fn instead_of_first(mut self, reason: String, spent: Usage) -> Self {
        self.fallback = Some(reason);
        self.usage += spent;
        self
    }

    /// Why these answers came from a second method: a log-probability client whose
    /// provider gave no log-probabilities (none reported, none in the reply, or the
    /// request for them refused) answers with stated probabilities instead, and says so
    /// here and in [`source`](Self::source). `None` when the first method answered.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// With what the client noted about the reply without refusing it.
    pub(crate) fn with_notes(mut self, notes: Vec<String>) -> Self {
        self.notes.extend(notes);
        self
    }

    /// What the client could not read in the reply outside the answers (a usage block
    /// whose counts are not whole numbers, a model that is not a string), each naming
    /// the field. The answers stand; a count that could not be read is counted as 0 in
    /// [`usage`](Self::usage). Empty for a reply read whole.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// With the id the host gave the request, to quote when asking it about one.
    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// The id the host gave the request, when it sent one.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// The answers by question id, in the questions' order.
    pub fn answers(&self) -> &[(String, DecisionAnswer)] {
        &self.answers
    }

    /// The answer to question `id`.
    pub fn answer(&self, id: &str) -> Option<&DecisionAnswer> {
        self.answers
            .iter()
            .find(|(question, _)| question == id)
            .map(|(_, answer)| answer)
    }

    /// The answer to the yes/no question `id`.
    pub fn binary(&self, id: &str) -> Option<&BinaryAnswer> {
        match self.answer(id)? {
            DecisionAnswer::Binary(answer) => Some(answer),
            _ => None,
        }
    }

    /// The answer to the choice question `id`.
    pub fn choice(&self, id: &str) -> Option<&ChoiceAnswer> {
        match self.answer(id)? {
            DecisionAnswer::Choice(answer) => Some(answer),
            _ => None,
        }
    }

    /// The answer to the score question `id`.
    pub fn score(&self, id: &str) -> Option<&ScoreAnswer> {
        match self.answer(id)? {
            DecisionAnswer::Score(answer) => Some(answer),
            _ => None,
        }
    }

    /// Tokens used by every model call behind the response.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// The model that answered.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Whether the probabilities were measured or stated.
    pub fn source(&self) -> ProbabilitySource {
        self.source
    }
}

/// Question ids as a list for a message: `a`, `b`.
fn quoted_ids(ids: &[&str]) -> String {
    if ids.is_empty() {
        return "none".to_owned();
    }
    ids.iter()
        .map(|id| format!("`{id}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

// Reading back. Each stored form is what the type serializes; it becomes the type only
// through the public constructors, so a stored value is checked as a model's answer is.

/// A [`BinaryAnswer`] as serialized.
#[derive(Deserialize)]
struct StoredBinary {
    probability: f64,
    #[serde(default)]
    coverage: Option<f64>,
}

impl<'de> Deserialize<'de> for BinaryAnswer {
    fn deserialize<De: serde::Deserializer<'de>>(deserializer: De) -> Result<Self, De::Error> {
        StoredBinary::deserialize(deserializer)?
            .checked()
            .map_err(serde::de::Error::custom)
    }
}

impl StoredBinary {
    fn checked(self) -> Result<BinaryAnswer, DecisionError> {
        let stored = self;
        let answer = BinaryAnswer::new(stored.probability)?;
        match stored.coverage {
            Some(coverage) => answer.with_coverage(coverage),
            None => Ok(answer),
        }
    }
}

/// A [`ChoiceAnswer`] as serialized.
#[derive(Deserialize)]
struct StoredChoice {
    probabilities: Vec<(String, f64)>,
    selected: String,
    #[serde(default)]
    coverage: Option<f64>,
    #[serde(default)]
    confidence: Option<f64>,
}

impl<'de> Deserialize<'de> for ChoiceAnswer {
    fn deserialize<De: serde::Deserializer<'de>>(deserializer: De) -> Result<Self, De::Error> {
        StoredChoice::deserialize(deserializer)?
            .checked()
            .map_err(serde::de::Error::custom)
    }
}

impl StoredChoice {
    fn checked(self) -> Result<ChoiceAnswer, DecisionError> {
        let stored = self;
        let mut answer = ChoiceAnswer::new(stored.probabilities, stored.selected)?;
        if let Some(coverage) = stored.coverage {
            answer = answer.with_coverage(coverage)?;
        }
        if let Some(confidence) = stored.confidence {
            answer = answer.with_confidence(confidence)?;
        }
        Ok(answer)
    }
}

/// A [`ScoreAnswer`] as serialized: the most likely and expected levels are computed
/// again from the distribution, and stored ones must agree with them.
#[derive(Deserialize)]
struct StoredScore {
    probabilities: Vec<(String, f64)>,
    #[serde(default)]
    most_likely: Option<usize>,
    #[serde(default)]
    expected: Option<f64>,
    #[serde(default)]
    coverage: Option<f64>,
    #[serde(default)]
    confidence: Option<f64>,
}

/// How far a stored expected level may be from the one computed again (the same sum in
/// the same order gives the same bits; the slack is for a value written by hand).
const EXPECTED_TOLERANCE: f64 = 1e-9;

impl<'de> Deserialize<'de> for ScoreAnswer {
    fn deserialize<De: serde::Deserializer<'de>>(deserializer: De) -> Result<Self, De::Error> {
        StoredScore::deserialize(deserializer)?
            .checked()
            .map_err(serde::de::Error::custom)
    }
}

impl StoredScore {
    fn checked(self) -> Result<ScoreAnswer, DecisionError> {
        let stored = self;
        let mut answer = ScoreAnswer::new(stored.probabilities)?;
        if let Some(index) = stored
            .most_likely
            .filter(|&index| index != answer.most_likely)
        {
            return Err(DecisionError::invalid_response(format!(
                "the most likely level is stored as option {}, but the distribution's is option {}",
                index + 1,
                answer.most_likely + 1
            )));
        }
        if let Some(expected) = stored
            .expected
            .filter(|expected| (expected - answer.expected).abs() > EXPECTED_TOLERANCE)
        {
            return Err(DecisionError::invalid_response(format!(
                "the expected level is stored as {expected}, but the distribution's is {}",
                answer.expected
            )));
        }
        if let Some(coverage) = stored.coverage {
            answer = answer.with_coverage(coverage)?;
        }
        if let Some(confidence) = stored.confidence {
            answer = answer.with_confidence(confidence)?;
        }
        Ok(answer)
    }
}

/// A [`DecisionAnswer`] as serialized, read before it is checked so that the check's
/// error can name the question it answers.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
enum StoredAnswer {
    Binary(StoredBinary),
    Choice(StoredChoice),
    Score(StoredScore),
}

impl StoredAnswer {
    fn checked(self, id: &str) -> Result<DecisionAnswer, DecisionError> {
        let answer = match self {
            StoredAnswer::Binary(answer) => answer.checked().map(DecisionAnswer::Binary),
            StoredAnswer::Choice(answer) => answer.checked().map(DecisionAnswer::Choice),
            StoredAnswer::Score(answer) => answer.checked().map(DecisionAnswer::Score),
        };
        answer.map_err(|error| error.about(id))
    }
}

/// [`Usage`] as serialized; a count left out is 0.
#[derive(Deserialize)]
#[serde(default)]
#[derive(Default)]
struct StoredUsage {
    input_tokens: u64,
    output_tokens: u64,
    cached_input_tokens: u64,
    cache_write_input_tokens: u64,
    reasoning_tokens: u64,
}

/// A [`DecisionResponse`] as serialized.
#[derive(Deserialize)]
struct StoredResponse {
    answers: Vec<(String, StoredAnswer)>,
    #[serde(default)]
    usage: StoredUsage,
    model: String,
    source: ProbabilitySource,
    #[serde(default)]
    request_id: Option<String>,
    #[serde(default)]
    fallback: Option<String>,
    #[serde(default)]
    notes: Vec<String>,
    #[serde(default)]
    replayed: bool,
}

impl<'de> Deserialize<'de> for DecisionResponse {
    fn deserialize<De: serde::Deserializer<'de>>(deserializer: De) -> Result<Self, De::Error> {
        StoredResponse::deserialize(deserializer)?
            .checked()
            .map_err(serde::de::Error::custom)
    }
}

impl StoredResponse {
    fn checked(self) -> Result<DecisionResponse, DecisionError> {
        let stored = self;
        if stored.answers.is_empty() {
            return Err(DecisionError::invalid_response(
                "the response holds no answer",
            ));
        }
        let mut answers = Vec::with_capacity(stored.answers.len());
        for (id, answer) in stored.answers {
            if id.trim().is_empty() {
                return Err(DecisionError::invalid_response(
                    "the response has an answer under a blank question id",
                ));
            }
            if answers
                .iter()
                .any(|(seen, _): &(String, DecisionAnswer)| *seen == id)
            {
                return Err(DecisionError::invalid_response(format!(
                    "the response answers `{id}` twice"
                )));
            }
            let answer = answer.checked(&id)?;
            answers.push((id, answer));
        }
        let usage = stored.usage;
        Ok(DecisionResponse {
            answers,
            usage: Usage {
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                cached_input_tokens: usage.cached_input_tokens,
                cache_write_input_tokens: usage.cache_write_input_tokens,
                reasoning_tokens: usage.reasoning_tokens,
            },
            model: stored.model,
            source: stored.source,
            request_id: stored.request_id,
            fallback: stored.fallback,
            notes: stored.notes,
            replayed: stored.replayed,
            cached: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::{BinaryQuestion, ChoiceQuestion};

    fn named(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
        pairs.iter().map(|(n, p)| ((*n).to_owned(), *p)).collect()
    }

    #[test]
    fn the_selected_choice_must_be_one_asked() {
        let error = ChoiceAnswer::new(named(&[("a", 0.5), ("b", 0.5)]), "c SECRET").unwrap_err();
        assert!(
            error.to_string().contains("not one of the 2 choices"),
            "{error}"
        );
        assert!(!error.to_string().contains("SECRET"), "{error}");
        assert_eq!(
            ChoiceAnswer::new(named(&[("a", 0.5), ("b", 0.5)]), "b")
                .unwrap()
                .selected(),
            "b",
            "either of a tie may be selected"
        );
        assert_eq!(
            ChoiceAnswer::most_likely(named(&[("a", 0.2), ("b", 0.8)]))
                .unwrap()
                .selected(),
            "b"
        );
    }

    #[test]
    fn a_selection_less_probable_than_another_choice_is_an_invalid_response() {
        let error =
            ChoiceAnswer::new(named(&[("billing", 0.15), ("tech", 0.85)]), "billing").unwrap_err();
        assert_eq!(error.kind(), crate::decision::FailureKind::InvalidResponse);
        // A caller's names may hold anything: the options are named by position.
        assert!(error.to_string().contains("option 2 has 0.85"), "{error}");
        assert!(error.to_string().contains("most probable"), "{error}");
        assert!(!error.to_string().contains("tech"), "{error}");
    }

    #[test]
    fn an_answer_to_a_question_names_the_question_and_its_labels() {
        let question: DecisionQuestion =
            ChoiceQuestion::new("route", "Where?", ["billing", "technical"])
                .unwrap()
                .into();
        let error = ChoiceAnswer::answering(
            &question,
            named(&[("billing", 0.74), ("technical", 0.26)]),
            Some("technical".to_owned()),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "decision invalid response: the answer to `route`: the selected choice `technical` has the probability 0.26, but `billing` has 0.74: the selected choice must be the most probable one"
        );
        let out_of_range =
            ScoreAnswer::answering(&question, named(&[("billing", 1.5), ("technical", -0.5)]))
                .unwrap_err();
        assert!(
            out_of_range
                .to_string()
                .contains("the answer to `route`: `billing` has the probability 1.5"),
            "{out_of_range}"
        );
        // A distribution over other names than the labels asked is refused without
        // quoting them.
        let other =
            ChoiceAnswer::answering(&question, named(&[("billing", 0.5), ("SECRET", 0.5)]), None)
                .unwrap_err();
        assert!(other.to_string().contains("`route`"), "{other}");
        assert!(!other.to_string().contains("SECRET"), "{other}");
    }

    #[test]
    fn a_score_has_its_most_likely_and_expected_level() {
        let score = ScoreAnswer::new(named(&[("low", 0.1), ("mid", 0.3), ("high", 0.6)])).unwrap();
        assert_eq!(score.most_likely(), "high");
        assert_eq!(score.most_likely_index(), 2);
        assert!((score.expected() - 1.5).abs() < 1e-12);
    }

    #[test]
    fn a_response_answers_every_question_with_its_kind_and_options() {
        let request = DecisionRequest::new(
            serde_json::json!("s"),
            [
                DecisionQuestion::from(BinaryQuestion::new("done", "Done?").unwrap()),
                ChoiceQuestion::new("route", "Where?", ["a", "b"])
                    .unwrap()
                    .into(),
            ],
        )
        .unwrap();
        let binary = DecisionAnswer::Binary(BinaryAnswer::new(0.9).unwrap());
        let choice = |names: &[(&str, f64)]| {
            DecisionAnswer::Choice(ChoiceAnswer::most_likely(named(names)).unwrap())
        };
        let build = |answers| {
            DecisionResponse::new(
                &request,
                answers,
                Usage::default(),
                "m",
                ProbabilitySource::Stated,
            )
        };
        let response = build(vec![binary.clone(), choice(&[("a", 0.3), ("b", 0.7)])]).unwrap();
        assert_eq!(response.binary("done").unwrap().probability(), 0.9);
        assert_eq!(response.choice("route").unwrap().selected(), "b");
        assert!(response.binary("route").is_none());
        assert!(
            build(vec![binary.clone()]).is_err(),
            "a question unanswered"
        );
        assert!(
            build(vec![binary.clone(), choice(&[("b", 0.3), ("a", 0.7)])]).is_err(),
            "options out of order"
        );
        assert!(build(vec![binary.clone(), binary]).is_err(), "wrong kind");
    }

    #[test]
    fn a_response_reads_back_what_it_serializes_through_the_checks() {
        let request = DecisionRequest::new(
            serde_json::json!("s"),
            [
                DecisionQuestion::from(BinaryQuestion::new("done", "Done?").unwrap()),
                ChoiceQuestion::new("route", "Where?", ["a", "b"])
                    .unwrap()
                    .into(),
                crate::decision::ScoreQuestion::new("level", "How much?", ["low", "high"])
                    .unwrap()
                    .into(),
            ],
        )
        .unwrap();
        let response = DecisionResponse::new(
            &request,
            vec![
                DecisionAnswer::Binary(
                    BinaryAnswer::new(0.9).unwrap().with_coverage(0.99).unwrap(),
                ),
                DecisionAnswer::Choice(
                    ChoiceAnswer::most_likely(named(&[("a", 0.3), ("b", 0.7)]))
                        .unwrap()
                        .with_confidence(0.4)
                        .unwrap(),
                ),
                DecisionAnswer::Score(
                    ScoreAnswer::new(named(&[("low", 0.25), ("high", 0.75)])).unwrap(),
                ),
            ],
            Usage {
                input_tokens: 5,
                ..Usage::default()
            },
            "m",
            ProbabilitySource::DecisionModel,
        )
        .unwrap()
        .with_request_id("req-1");
        let text = serde_json::to_string(&response).unwrap();
        assert!(!text.contains("replayed"), "{text}");
        let read: DecisionResponse = serde_json::from_str(&text).unwrap();
        assert_eq!(read, response);
        assert_eq!(read.clone().answering(&request).unwrap(), response);
        let replayed = response.for_cassette(str::to_owned).mark_replayed();
        assert_eq!(replayed.request_id(), None);
        let text = serde_json::to_string(&replayed).unwrap();
        assert!(
            serde_json::from_str::<DecisionResponse>(&text)
                .unwrap()
                .replayed()
        );

        // Each answer type alone goes through its constructor.
        let error = serde_json::from_str::<BinaryAnswer>(r#"{"probability": -0.1}"#).unwrap_err();
        assert!(error.to_string().contains("outside [0, 1]"), "{error}");
        let error = serde_json::from_str::<ChoiceAnswer>(
            r#"{"probabilities": [["a", 0.5], ["b", 0.5]], "selected": "c"}"#,
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("not one of the 2 choices"),
            "{error}"
        );
        let error = serde_json::from_str::<DecisionResponse>(
            r#"{"answers": [["x", {"kind": "binary", "probability": 0.5}], ["x", {"kind": "binary", "probability": 0.5}]], "model": "m", "source": "stated"}"#,
        )
        .unwrap_err();
        assert!(error.to_string().contains("answers `x` twice"), "{error}");
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        /// A distribution over `n` options: positive weights, normalised.
        fn distribution() -> impl Strategy<Value = Vec<(String, f64)>> {
            prop::collection::vec(0.001f64..10.0, 2..12).prop_map(|weights| {
                let total: f64 = weights.iter().sum();
                weights
                    .iter()
                    .enumerate()
                    .map(|(i, w)| (format!("option {i}"), w / total))
                    .collect()
            })
        }

        proptest! {
            #[test]
            fn binary_answers_accept_exactly_the_unit_interval(p in proptest::num::f64::ANY) {
                let accepted = BinaryAnswer::new(p).is_ok();
                prop_assert_eq!(accepted, (0.0..=1.0).contains(&p));
            }

            #[test]
            fn normalised_distributions_are_accepted_and_keep_their_order(probabilities in distribution()) {
                let choice = ChoiceAnswer::most_likely(probabilities.clone()).unwrap();
                prop_assert_eq!(choice.probabilities(), &probabilities[..]);
                let best = choice.probability(choice.selected()).unwrap();
                prop_assert!(probabilities.iter().all(|(_, p)| *p <= best));
                let score = ScoreAnswer::new(probabilities.clone()).unwrap();
                prop_assert!(score.expected() >= 0.0);
                prop_assert!(score.expected() <= (probabilities.len() - 1) as f64 + 1e-9);
                prop_assert_eq!(score.probabilities()[score.most_likely_index()].1, best);
            }

            #[test]
            fn a_distribution_that_does_not_sum_to_one_is_refused(
                probabilities in distribution(),
                factor in prop_oneof![0.5f64..0.999, 1.001f64..2.0],
            ) {
                let scaled: Vec<(String, f64)> =
                    probabilities.iter().map(|(n, p)| (n.clone(), p * factor)).collect();
                prop_assume!(scaled.iter().all(|(_, p)| *p <= 1.0));
                prop_assert!(ChoiceAnswer::most_likely(scaled.clone()).is_err());
                prop_assert!(ScoreAnswer::new(scaled).is_err());
            }

            #[test]
            fn a_probability_outside_the_unit_interval_is_refused(
                probabilities in distribution(),
                index in 0usize..12,
                bad in prop_oneof![-10.0f64..-0.0001, 1.0001f64..10.0, Just(f64::NAN), Just(f64::INFINITY)],
            ) {
                let mut broken = probabilities;
                let index = index % broken.len();
                broken[index].1 = bad;
                prop_assert!(ChoiceAnswer::most_likely(broken.clone()).is_err());
                prop_assert!(ScoreAnswer::new(broken).is_err());
            }

            #[test]
            fn the_selected_choice_is_always_one_asked_and_the_most_probable(probabilities in distribution(), other in "[a-z ]{1,8}") {
                prop_assume!(!probabilities.iter().any(|(name, _)| *name == other));
                prop_assert!(ChoiceAnswer::new(probabilities.clone(), other).is_err());
                let best = ChoiceAnswer::most_likely(probabilities.clone()).unwrap().selected().to_owned();
                prop_assert!(ChoiceAnswer::new(probabilities.clone(), best.clone()).is_ok());
                for (name, p) in &probabilities {
                    let accepted = ChoiceAnswer::new(probabilities.clone(), name.clone()).is_ok();
                    prop_assert_eq!(accepted, *p >= probabilities.iter().map(|(_, q)| *q).fold(0.0, f64::max));
                }
            }

            #[test]
            fn duplicate_or_blank_names_are_refused(probabilities in distribution(), blank in "[ \t]{0,3}") {
                let mut duplicated = probabilities.clone();
                duplicated[1].0 = duplicated[0].0.clone();
                prop_assert!(ChoiceAnswer::most_likely(duplicated).is_err());
                let mut blanked = probabilities;
                blanked[0].0 = blank;
                prop_assert!(ScoreAnswer::new(blanked).is_err());
            }
        }
    }
}
