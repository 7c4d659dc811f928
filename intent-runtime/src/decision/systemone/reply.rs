//! Reading a decision model's reply: every question answered, with its kind, over exactly
//! the options asked; probabilities in [0, 1]; distributions summing to 1 within the
//! host's rounding; a score consistent with its distribution. Nothing is trusted.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::decision::{
    BinaryAnswer, ChoiceAnswer, DecisionAnswer, DecisionError, DecisionQuestion, DecisionRequest,
    ScoreAnswer,
};
use crate::result::Usage;

/// How far a decision model's distribution may stray from summing to 1: hosts round
/// (TypeSafe to two decimals, Cloudflare to four), and 0.05 is the tolerance the
/// ecosystem's conformance suite applies. Within it the distribution is normalised.
pub const DECISION_MODEL_SUM_TOLERANCE: f64 = 0.05;

/// What a reply carried, checked.
#[derive(Debug)]
pub(super) struct Answers {
    pub(super) answers: Vec<DecisionAnswer>,
    pub(super) usage: Usage,
    pub(super) model: Option<String>,
}

#[derive(Deserialize)]
struct SystemOneReply {
    #[serde(default)]
    model: Option<String>,
    answers: Map<String, Value>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct DecisionsReply {
    #[serde(default)]
    model: Option<String>,
    answers: Vec<Value>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
}

#[derive(Deserialize, Default)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: u64,
    #[serde(default)]
    cache_write_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Self {
        let details = usage.input_tokens_details.unwrap_or_default();
        Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cached_input_tokens: details.cached_tokens,
            cache_write_input_tokens: details.cache_write_tokens,
            ..Usage::default()
        }
    }
}

fn unreadable(format: &str, error: &serde_json::Error) -> DecisionError {
    // serde's message names the field and position, never the value.
    DecisionError::invalid_response(format!("the reply is not a {format} body ({error})"))
}

/// Reads a System One reply (answers keyed by question id).
pub(super) fn read_system_one(
    request: &DecisionRequest,
    body: &[u8],
) -> Result<Answers, DecisionError> {
    let reply: SystemOneReply =
        serde_json::from_slice(body).map_err(|error| unreadable("System One", &error))?;
    let answers = read_each(
        request,
        |_, id| reply.answers.get(id),
        ["noul", "choice", "score"],
        |question, answer| read_answer(Shape::SystemOne, question, answer),
    )?;
    Ok(Answers {
        answers,
        usage: reply.usage.unwrap_or_default().into(),
        model: reply.model,
    })
}

/// Each question's answer, found by `find` (from the question's index and id), checked to
/// be of the question's wire type (`types`: binary, choice, score), then read by `read`.
fn read_each<'r>(
    request: &DecisionRequest,
    find: impl Fn(usize, &str) -> Option<&'r Value>,
    types: [&str; 3],
    read: impl Fn(&DecisionQuestion, &Value) -> Result<DecisionAnswer, DecisionError>,
) -> Result<Vec<DecisionAnswer>, DecisionError> {
    let mut answers = Vec::with_capacity(request.questions().len());
    for (index, question) in request.questions().iter().enumerate() {
        let id = question.id();
        let answer = find(index, id)
            .ok_or_else(|| DecisionError::invalid_response(format!("no answer to `{id}`")))?;
        let found = answer.get("type").and_then(Value::as_str).unwrap_or("");
        if found == "refusal" {
            return Err(DecisionError::invalid_response(format!(
                "the model refused to answer `{id}`"
            )));
        }
        let expected = match question {
            DecisionQuestion::Binary(_) => types[0],
            DecisionQuestion::Choice(_) => types[1],
            DecisionQuestion::Score(_) => types[2],
        };
        if found != expected {
            return Err(DecisionError::invalid_response(format!(
                "the answer to `{id}` is of type `{found}`, not `{expected}`"
            )));
        }
        answers.push(read(question, answer)?);
    }
    Ok(answers)
}

/// The probabilities of an object keyed by `names`, in that order; an object with other
/// keys, or without one of them, is refused.
fn keyed<'n>(
    id: &str,
    probabilities: Option<&Value>,
    names: impl ExactSizeIterator<Item = &'n str>,
) -> Result<Vec<f64>, DecisionError> {
    let Some(map) = probabilities.and_then(Value::as_object) else {
        return Err(DecisionError::invalid_response(format!(
            "the answer to `{id}` has no `probabilities` object"
        )));
    };
    let count = names.len();
    let mut values = Vec::with_capacity(count);
    for name in names {
        let p = map.get(name).ok_or_else(|| {
            DecisionError::invalid_response(format!(
                "the answer to `{id}` gives no probability for `{name}`"
            ))
        })?;
        values.push(number(id, &format!("`{name}`"), Some(p))?);
    }
    if map.len() != count {
        return Err(DecisionError::invalid_response(format!(
            "the answer to `{id}` gives probabilities for {} options, not the {count} asked",
            map.len()
        )));
    }
    Ok(values)
}

/// A number in [0, 1].
fn number(id: &str, what: &str, value: Option<&Value>) -> Result<f64, DecisionError> {
    let p = value.and_then(Value::as_f64).ok_or_else(|| {
        DecisionError::invalid_response(format!("the answer to `{id}` has no number for {what}"))
    })?;
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(DecisionError::invalid_response(format!(
            "the answer to `{id}` gives {what} the value {p}, outside [0, 1]"
        )))
    }
}

/// `values` normalised, when their sum is within [`DECISION_MODEL_SUM_TOLERANCE`] of 1.
fn normalised(id: &str, values: Vec<f64>) -> Result<Vec<f64>, DecisionError> {
    let sum: f64 = values.iter().sum();
    if (sum - 1.0).abs() > DECISION_MODEL_SUM_TOLERANCE {
        return Err(DecisionError::invalid_response(format!(
            "the probabilities of `{id}` sum to {sum}, not 1 (within {DECISION_MODEL_SUM_TOLERANCE})"
        )));
    }
    Ok(values.into_iter().map(|p| p / sum).collect())
}

fn named(question: &DecisionQuestion, values: Vec<f64>) -> Vec<(String, f64)> {
    question
        .options()
        .iter()
        .map(|o| o.name().to_owned())
        .zip(values)
        .collect()
}

fn binary(id: &str, probability: Option<&Value>) -> Result<DecisionAnswer, DecisionError> {
    let p = number(id, "the probability of yes", probability)?;
    Ok(DecisionAnswer::Binary(BinaryAnswer::new(p)?))
}

fn confidence(id: &str, value: Option<&Value>) -> Result<Option<f64>, DecisionError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        some => number(id, "the confidence", some).map(Some),
    }
}

/// A choice answer: the host's selection must be one of the labels asked; it is kept as
/// the host sent it (after rounding, two labels may tie, and the host knows which won).
fn choice(
    question: &DecisionQuestion,
    values: Vec<f64>,
    selected: Option<&Value>,
    reported: Option<&Value>,
) -> Result<DecisionAnswer, DecisionError> {
    let id = question.id();
    let selected = selected.and_then(Value::as_str).ok_or_else(|| {
        DecisionError::invalid_response(format!("the answer to `{id}` names no choice"))
    })?;
    if !question.options().iter().any(|o| o.name() == selected) {
        return Err(DecisionError::invalid_response(format!(
            "the answer to `{id}` chose `{selected}`, which is not one of the choices asked"
        )));
    }
    let probabilities = named(question, normalised(id, values)?);
    let mut answer = ChoiceAnswer::new(probabilities, selected)?;
    if let Some(confidence) = confidence(id, reported)? {
        answer = answer.with_confidence(confidence)?;
    }
    Ok(DecisionAnswer::Choice(answer))
}

/// How far a reported score may stray from the expected level of its distribution: the
/// host's rounding of each probability, weighted by the level numbers.
fn score_tolerance(levels: usize) -> f64 {
    DECISION_MODEL_SUM_TOLERANCE * levels.saturating_sub(1).max(1) as f64
}

/// A score answer: the reported score must lie on the scale and agree with the expected
/// level of the reported distribution.
fn score(
    question: &DecisionQuestion,
    values: Vec<f64>,
    reported_score: Option<&Value>,
    reported_confidence: Option<&Value>,
) -> Result<DecisionAnswer, DecisionError> {
    let id = question.id();
    let levels = values.len();
    let reported = reported_score.and_then(Value::as_f64).ok_or_else(|| {
        DecisionError::invalid_response(format!("the answer to `{id}` has no number `score`"))
    })?;
    let expected: f64 = values.iter().enumerate().map(|(i, p)| i as f64 * p).sum();
    let distribution = normalised(id, values)?;
    let tolerance = score_tolerance(levels);
    if !(reported - expected).abs().le(&tolerance) {
        return Err(DecisionError::invalid_response(format!(
            "the answer to `{id}` reports the score {reported}, but its probabilities give {expected:.4} (more than {tolerance:.2} apart)"
        )));
    }
    let mut answer = ScoreAnswer::new(named(question, distribution))?;
    if let Some(confidence) = confidence(id, reported_confidence)? {
        answer = answer.with_confidence(confidence)?;
    }
    Ok(DecisionAnswer::Score(answer))
}

/// Reads an OpenAI-shaped Decisions reply (a list of answers, matched to the questions by
/// `name`, or by position when the host leaves names out). A `refusal` answer is an
/// invalid response naming the question.
pub(super) fn read_decisions(
    request: &DecisionRequest,
    body: &[u8],
) -> Result<Answers, DecisionError> {
    let reply: DecisionsReply =
        serde_json::from_slice(body).map_err(|error| unreadable("Decisions", &error))?;
    let find = |index: usize, id: &str| {
        let by_name = reply
            .answers
            .iter()
            .find(|a| a.get("name").and_then(Value::as_str) == Some(id));
        let unnamed = reply
            .answers
            .get(index)
            .filter(|a| a.get("name").is_none_or(Value::is_null));
        by_name.or(unnamed)
    };
    let answers = read_each(
        request,
        find,
        ["predicate", "choice", "score"],
        |question, answer| read_answer(Shape::Decisions, question, answer),
    )?;
    Ok(Answers {
        answers,
        usage: reply.usage.unwrap_or_default().into(),
        model: reply.model,
    })
}

/// The two reply shapes: where a binary answer's probability is, and how distributions
/// are written (an object keyed by label or level number, or a list of entries).
#[derive(Clone, Copy)]
enum Shape {
    SystemOne,
    Decisions,
}

/// Reads `answer` (already of `question`'s type) in `shape`.
fn read_answer(
    shape: Shape,
    question: &DecisionQuestion,
    answer: &Value,
) -> Result<DecisionAnswer, DecisionError> {
    let id = question.id();
    if let DecisionQuestion::Binary(_) = question {
        let field = match shape {
            Shape::SystemOne => "noul",
            Shape::Decisions => "probability",
        };
        return binary(id, answer.get(field));
    }
    // Choices are keyed by label; levels by their number, lowest first.
    let keys: Vec<String> = match question {
        DecisionQuestion::Score(q) => (0..q.levels().len()).map(|i| i.to_string()).collect(),
        _ => question
            .options()
            .iter()
            .map(|o| o.name().to_owned())
            .collect(),
    };
    let probabilities = answer.get("probabilities");
    let values = match shape {
        Shape::SystemOne => keyed(id, probabilities, keys.iter().map(String::as_str))?,
        Shape::Decisions => listed(id, probabilities, &keys)?,
    };
    let confidence = answer.get("confidence");
    match question {
        DecisionQuestion::Score(_) => score(question, values, answer.get("score"), confidence),
        _ => choice(question, values, answer.get("choice"), confidence),
    }
}

/// The probabilities of a list of `{"value", "probability"}` entries, in the order of
/// `keys`: a choice's value is its label, a level's its number.
fn listed(
    id: &str,
    probabilities: Option<&Value>,
    keys: &[String],
) -> Result<Vec<f64>, DecisionError> {
    let Some(entries) = probabilities.and_then(Value::as_array) else {
        return Err(DecisionError::invalid_response(format!(
            "the answer to `{id}` has no `probabilities` list"
        )));
    };
    let mut map = Map::with_capacity(entries.len());
    for entry in entries {
        let name = match entry.get("value") {
            Some(Value::String(label)) => label.clone(),
            Some(Value::Number(level)) => level.to_string(),
            _ => {
                return Err(DecisionError::invalid_response(format!(
                    "the answer to `{id}` has a probability without a value it belongs to"
                )));
            }
        };
        let p = entry.get("probability").cloned().unwrap_or(Value::Null);
        if map.insert(name.clone(), p).is_some() {
            return Err(DecisionError::invalid_response(format!(
                "the answer to `{id}` gives `{name}` two probabilities"
            )));
        }
    }
    keyed(
        id,
        Some(&Value::Object(map)),
        keys.iter().map(String::as_str),
    )
}
