//! Reading a decision model's reply: every question answered, with its kind, over exactly
//! the options asked; probabilities in [0, 1]; distributions summing to 1 within the
//! host's rounding; a score consistent with its distribution. Nothing is trusted.

use serde_json::{Map, Value};

use crate::decision::{
    BinaryAnswer, ChoiceAnswer, DecisionAnswer, DecisionError, DecisionQuestion, DecisionRequest,
    ScoreAnswer,
};
use crate::provider::http::json_error_position;
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
    /// What could not be read outside the answers (a usage block, the model), each
    /// naming the field: recorded, never a reason to throw valid answers away.
    pub(super) notes: Vec<String>,
}

/// What a JSON value is, to say what was found where something else was expected
/// without quoting it (a host may echo the state anywhere).
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A body that is not JSON, described by where it broke and how, never by what it holds.
fn unreadable(format: &str, error: &serde_json::Error) -> DecisionError {
    DecisionError::invalid_response(format!(
        "the reply {}, so it is not a {format} body",
        json_error_position(error)
    ))
}

/// The reply's top-level object.
fn reply_object(format: &str, body: &[u8]) -> Result<Map<String, Value>, DecisionError> {
    match serde_json::from_slice(body) {
        Ok(Value::Object(reply)) => Ok(reply),
        Ok(other) => Err(DecisionError::invalid_response(format!(
            "the reply is {}, not a {format} body (an object)",
            kind_of(&other)
        ))),
        Err(error) => Err(unreadable(format, &error)),
    }
}

/// The reply's `answers`, as `read` takes it (`what` it must be, for the message).
fn answers_field<'r, T>(
    reply: &'r Map<String, Value>,
    read: impl Fn(&'r Value) -> Option<T>,
    what: &str,
) -> Result<T, DecisionError> {
    match reply.get("answers") {
        None | Some(Value::Null) => Err(DecisionError::invalid_response(
            "the reply has no `answers`",
        )),
        Some(answers) => read(answers).ok_or_else(|| {
            DecisionError::invalid_response(format!(
                "the reply's `answers` is {}, not {what}",
                kind_of(answers)
            ))
        }),
    }
}

/// The model the host says answered; anything but a string is noted and ignored.
fn model_field(reply: &Map<String, Value>, notes: &mut Vec<String>) -> Option<String> {
    match reply.get("model") {
        None | Some(Value::Null) => None,
        Some(Value::String(model)) => Some(model.clone()),
        Some(other) => {
            notes.push(format!(
                "the reply's `model` is {}, not a string; the model asked is recorded instead",
                kind_of(other)
            ));
            None
        }
    }
}

/// The reply's token counts. A count is a whole number, written as an integer or as a
/// float with no fraction (`97.0`, as some servers write it); a count that is neither is
/// noted, naming its field, and counted as 0, and the answers stand.
fn usage_field(reply: &Map<String, Value>, notes: &mut Vec<String>) -> Usage {
    let usage = match reply.get("usage") {
        None | Some(Value::Null) => return Usage::default(),
        Some(Value::Object(usage)) => usage,
        Some(other) => {
            notes.push(format!(
                "the reply's `usage` is {}, not an object; its token counts are unknown and counted as 0",
                kind_of(other)
            ));
            return Usage::default();
        }
    };
    let mut tokens = |path: &str, value: Option<&Value>| -> u64 {
        match value {
            None | Some(Value::Null) => 0,
            Some(value) => whole_number(value).unwrap_or_else(|| {
                notes.push(format!(
                    "the reply's `{path}` is {}, not a whole number of tokens; it is counted as 0",
                    match value {
                        Value::Number(_) => "a number with a fraction, negative or too large",
                        other => kind_of(other),
                    }
                ));
                0
            }),
        }
    };
    let details = usage.get("input_tokens_details");
    Usage {
        input_tokens: tokens("usage.input_tokens", usage.get("input_tokens")),
        output_tokens: tokens("usage.output_tokens", usage.get("output_tokens")),
        cached_input_tokens: tokens(
            "usage.input_tokens_details.cached_tokens",
            details.and_then(|d| d.get("cached_tokens")),
        ),
        cache_write_input_tokens: tokens(
            "usage.input_tokens_details.cache_write_tokens",
            details.and_then(|d| d.get("cache_write_tokens")),
        ),
        ..Usage::default()
    }
}

/// A whole, non-negative number that fits a `u64` (`97` or `97.0`).
fn whole_number(value: &Value) -> Option<u64> {
    if let Some(whole) = value.as_u64() {
        return Some(whole);
    }
    let float = value.as_f64()?;
    // 2^64 as a float: every whole float below it fits.
    let fits = (0.0..18_446_744_073_709_551_616.0).contains(&float);
    (fits && float.fract() == 0.0).then_some(float as u64)
}

/// Reads a System One reply (answers keyed by question id).
pub(super) fn read_system_one(
    request: &DecisionRequest,
    body: &[u8],
) -> Result<Answers, DecisionError> {
    let reply = reply_object("System One", body)?;
    let keyed = answers_field(&reply, Value::as_object, "an object keyed by question id")?;
    let answers = read_each(
        request,
        |_, id| keyed.get(id),
        ["noul", "choice", "score"],
        |question, answer| read_answer(Shape::SystemOne, question, answer),
    )?;
    let mut notes = Vec::new();
    Ok(Answers {
        answers,
        usage: usage_field(&reply, &mut notes),
        model: model_field(&reply, &mut notes),
        notes,
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
        let expected = match question {
            DecisionQuestion::Binary(_) => types[0],
            DecisionQuestion::Choice(_) => types[1],
            DecisionQuestion::Score(_) => types[2],
        };
        // A type is quoted only when it is one of the wire's own words; anything else
        // the host wrote there is described, not quoted.
        let wrong = match answer.get("type") {
            _ if !answer.is_object() => Some(format!("is {}, not an object", kind_of(answer))),
            Some(Value::String(found)) if found == "refusal" => {
                return Err(DecisionError::invalid_response(format!(
                    "the model refused to answer `{id}`"
                )));
            }
            Some(Value::String(found)) if found == expected => None,
            Some(Value::String(found)) if types.contains(&found.as_str()) => {
                Some(format!("is of type `{found}`, not `{expected}`"))
            }
            Some(Value::String(_)) => Some(format!(
                "is of a type this client does not know, not `{expected}`"
            )),
            None | Some(Value::Null) => Some(format!("has no `type` (expected `{expected}`)")),
            Some(other) => Some(format!(
                "has a `type` that is {}, not the string `{expected}`",
                kind_of(other)
            )),
        };
        if let Some(wrong) = wrong {
            return Err(DecisionError::invalid_response(format!(
                "the answer to `{id}` {wrong}"
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
    let answer = BinaryAnswer::new(p).map_err(|error| error.about(id))?;
    Ok(DecisionAnswer::Binary(answer))
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
        DecisionError::invalid_response(format!("the answer to `{id}` has no `choice` string"))
    })?;
    if !question.options().iter().any(|o| o.name() == selected) {
        // What the host selected is not quoted (it may echo the state); the labels
        // asked are.
        let asked: Vec<String> = question
            .options()
            .iter()
            .map(|o| format!("`{}`", o.name()))
            .collect();
        return Err(DecisionError::invalid_response(format!(
            "the answer to `{id}` selects none of the {} choices asked ({})",
            asked.len(),
            asked.join(", ")
        )));
    }
    let probabilities = named(question, normalised(id, values)?);
    let mut answer = ChoiceAnswer::answering(question, probabilities, Some(selected.to_owned()))?;
    if let Some(confidence) = confidence(id, reported)? {
        answer = answer
            .with_confidence(confidence)
            .map_err(|error| error.about(id))?;
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
    let mut answer = ScoreAnswer::answering(question, named(question, distribution))?;
    if let Some(confidence) = confidence(id, reported_confidence)? {
        answer = answer
            .with_confidence(confidence)
            .map_err(|error| error.about(id))?;
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
    let reply = reply_object("Decisions", body)?;
    let listed = answers_field(&reply, Value::as_array, "a list of answers")?;
    let find = |index: usize, id: &str| {
        let by_name = listed
            .iter()
            .find(|a| a.get("name").and_then(Value::as_str) == Some(id));
        let unnamed = listed
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
    let mut notes = Vec::new();
    Ok(Answers {
        answers,
        usage: usage_field(&reply, &mut notes),
        model: model_field(&reply, &mut notes),
        notes,
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
    let mut positions: Vec<String> = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        let name = match entry.get("value") {
            Some(Value::String(label)) => label.clone(),
            Some(Value::Number(level)) => level.to_string(),
            _ => {
                return Err(DecisionError::invalid_response(format!(
                    "entry {} of the answer to `{id}`'s `probabilities` has no `value` it belongs to",
                    index + 1
                )));
            }
        };
        let p = entry.get("probability").cloned().unwrap_or(Value::Null);
        if map.insert(name.clone(), p).is_some() {
            let first = positions.iter().position(|seen| *seen == name).unwrap_or(0);
            // A value asked for may be named; any other is what the host wrote.
            let named = if keys.contains(&name) {
                format!(" (`{name}`)")
            } else {
                String::new()
            };
            return Err(DecisionError::invalid_response(format!(
                "entries {} and {} of the answer to `{id}`'s `probabilities` are for the same value{named}",
                first + 1,
                index + 1
            )));
        }
        positions.push(name);
    }
    keyed(
        id,
        Some(&Value::Object(map)),
        keys.iter().map(String::as_str),
    )
}
