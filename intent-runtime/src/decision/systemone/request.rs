//! What goes on the wire: the limits checked before sending, and the System One and
//! Decisions bodies, serialized straight from the request (no intermediate JSON tree).

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

use super::hosts::DecisionLimits;
use crate::decision::{DecisionError, DecisionOption, DecisionQuestion, DecisionRequest};

/// Refuses `request` when it passes one of `limits`, naming the question, the count and
/// the limit, so that nothing is sent that the host would refuse.
pub(super) fn check_limits(
    request: &DecisionRequest,
    limits: &DecisionLimits,
    host: &str,
) -> Result<(), DecisionError> {
    let questions = request.questions().len();
    if let Some(max) = limits.max_questions.filter(|max| questions > *max) {
        return Err(DecisionError::invalid_request(format!(
            "the request has {questions} questions; {host} takes at most {max} per request (the questions-per-request limit): split it into several requests"
        )));
    }
    for question in request.questions() {
        let (count, max, what, limit) = match question {
            DecisionQuestion::Binary(_) => continue,
            DecisionQuestion::Choice(q) => (
                q.choices().len(),
                limits.max_choices,
                "choices",
                "choice limit",
            ),
            DecisionQuestion::Score(q) => (
                q.levels().len(),
                limits.max_levels,
                "levels",
                "score-level limit",
            ),
        };
        if count > max {
            return Err(DecisionError::invalid_request(format!(
                "question `{}` has {count} {what}; {host} takes at most {max} (the {limit})",
                question.id()
            )));
        }
    }
    Ok(())
}

/// A level or choice as one text: its name, and what it means when described.
fn option_text(option: &DecisionOption) -> String {
    match option.description() {
        Some(description) => format!("{}: {description}", option.name()),
        None => option.name().to_owned(),
    }
}

/// A System One request body: `{"model", "state", "questions": {id: question}}`.
pub(super) struct SystemOneBody<'a> {
    pub(super) model: &'a str,
    pub(super) request: &'a DecisionRequest,
}

impl Serialize for SystemOneBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut body = serializer.serialize_map(Some(3))?;
        body.serialize_entry("model", self.model)?;
        body.serialize_entry("state", self.request.state())?;
        body.serialize_entry("questions", &SystemOneQuestions(self.request.questions()))?;
        body.end()
    }
}

struct SystemOneQuestions<'a>(&'a [DecisionQuestion]);

impl Serialize for SystemOneQuestions<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for question in self.0 {
            map.serialize_entry(question.id(), &SystemOneQuestion(question))?;
        }
        map.end()
    }
}

struct SystemOneQuestion<'a>(&'a DecisionQuestion);

impl Serialize for SystemOneQuestion<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let question = self.0;
        let mut map = serializer.serialize_map(Some(3))?;
        // Instructions go out on every question: TypeSafe accepts criteria alone, but the
        // Ollama contract and Clef require them.
        match question {
            DecisionQuestion::Binary(q) => {
                map.serialize_entry("type", "noul")?;
                map.serialize_entry("instructions", q.question())?;
                if let Some(criteria) = q.criteria() {
                    map.serialize_entry("criteria", &SingleEntry("true", criteria))?;
                }
            }
            DecisionQuestion::Choice(q) => {
                map.serialize_entry("type", "choice")?;
                map.serialize_entry("instructions", q.question())?;
                map.serialize_entry("criteria", &Labels(q.choices()))?;
            }
            DecisionQuestion::Score(q) => {
                map.serialize_entry("type", "score")?;
                map.serialize_entry("instructions", q.question())?;
                let levels: Vec<String> = q.levels().iter().map(option_text).collect();
                map.serialize_entry("criteria", &levels)?;
            }
        }
        map.end()
    }
}

struct SingleEntry<'a>(&'a str, &'a str);

impl Serialize for SingleEntry<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(self.0, self.1)?;
        map.end()
    }
}

/// Choice labels as `{label: description | null}`, in the question's order.
struct Labels<'a>(&'a [DecisionOption]);

impl Serialize for Labels<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for option in self.0 {
            map.serialize_entry(option.name(), &option.description())?;
        }
        map.end()
    }
}

/// An OpenAI-shaped Decisions body: `{"model", "input", "questions": [question]}`.
pub(super) struct DecisionsBody<'a> {
    pub(super) model: &'a str,
    pub(super) request: &'a DecisionRequest,
}

impl Serialize for DecisionsBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut body = serializer.serialize_map(Some(3))?;
        body.serialize_entry("model", self.model)?;
        // `input` is text (or messages): a structured state goes as its JSON text.
        match self.request.state() {
            Value::String(text) => body.serialize_entry("input", text)?,
            other => body.serialize_entry("input", &other.to_string())?,
        }
        body.serialize_entry("questions", &DecisionsQuestions(self.request.questions()))?;
        body.end()
    }
}

struct DecisionsQuestions<'a>(&'a [DecisionQuestion]);

impl Serialize for DecisionsQuestions<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut list = serializer.serialize_seq(Some(self.0.len()))?;
        for question in self.0 {
            list.serialize_element(&DecisionsQuestion(question))?;
        }
        list.end()
    }
}

struct DecisionsQuestion<'a>(&'a DecisionQuestion);

impl Serialize for DecisionsQuestion<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let question = self.0;
        let mut map = serializer.serialize_map(Some(4))?;
        match question {
            DecisionQuestion::Binary(q) => {
                map.serialize_entry("type", "predicate")?;
                map.serialize_entry("name", q.id())?;
                // A predicate has no criteria field: what "yes" requires joins the text.
                match q.criteria() {
                    Some(criteria) => map.serialize_entry(
                        "instructions",
                        &format!("{}\nYes requires: {criteria}", q.question()),
                    )?,
                    None => map.serialize_entry("instructions", q.question())?,
                }
            }
            DecisionQuestion::Choice(q) => {
                map.serialize_entry("type", "choice")?;
                map.serialize_entry("name", q.id())?;
                map.serialize_entry("instructions", q.question())?;
                map.serialize_entry("choices", &Described("value", q.choices()))?;
            }
            DecisionQuestion::Score(q) => {
                map.serialize_entry("type", "score")?;
                map.serialize_entry("name", q.id())?;
                map.serialize_entry("instructions", q.question())?;
                map.serialize_entry("levels", &Described("label", q.levels()))?;
            }
        }
        map.end()
    }
}

/// Options as `[{<key>: name, "description"?: text}]`.
struct Described<'a>(&'static str, &'a [DecisionOption]);

impl Serialize for Described<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut list = serializer.serialize_seq(Some(self.1.len()))?;
        for option in self.1 {
            list.serialize_element(&DescribedOption(self.0, option))?;
        }
        list.end()
    }
}

struct DescribedOption<'a>(&'static str, &'a DecisionOption);

impl Serialize for DescribedOption<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let option = self.1;
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry(self.0, option.name())?;
        if let Some(description) = option.description() {
            map.serialize_entry("description", description)?;
        }
        map.end()
    }
}

/// About how long `request`'s body is, so the buffer is allocated once.
pub(super) fn size_hint(request: &DecisionRequest) -> usize {
    let state = match request.state() {
        Value::String(text) => text.len(),
        // A structured state is rarely much longer than a string of its fields would be.
        _ => 512,
    };
    let questions: usize = request
        .questions()
        .iter()
        .map(|q| {
            64 + q.id().len()
                + q.text().len()
                + q.options()
                    .iter()
                    .map(|o| 8 + o.name().len() + o.description().map_or(4, str::len))
                    .sum::<usize>()
        })
        .sum();
    64 + state + questions
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::decision::{BinaryQuestion, ChoiceQuestion, FailureKind, ScoreQuestion};

    fn mixed() -> DecisionRequest {
        DecisionRequest::new(
            json!({"message": "I was charged twice."}),
            [
                DecisionQuestion::from(
                    BinaryQuestion::new("is_billing", "Is this about billing?")
                        .unwrap()
                        .with_criteria("A charge, payment or refund."),
                ),
                ChoiceQuestion::new(
                    "team",
                    "Which team?",
                    [("billing", "Payments and refunds"), ("technical", "")],
                )
                .unwrap()
                .into(),
                ScoreQuestion::new("urgency", "How urgent?", [("low", ""), ("high", "Today")])
                    .unwrap()
                    .into(),
            ],
        )
        .unwrap()
    }

    #[test]
    fn a_system_one_body_keys_questions_by_id_with_instructions_on_each() {
        let request = mixed();
        let body = serde_json::to_value(SystemOneBody {
            model: "jev-latest",
            request: &request,
        })
        .unwrap();
        assert_eq!(
            body,
            json!({
                "model": "jev-latest",
                "state": {"message": "I was charged twice."},
                "questions": {
                    "is_billing": {"type": "noul", "instructions": "Is this about billing?",
                        "criteria": {"true": "A charge, payment or refund."}},
                    "team": {"type": "choice", "instructions": "Which team?",
                        "criteria": {"billing": "Payments and refunds", "technical": null}},
                    "urgency": {"type": "score", "instructions": "How urgent?",
                        "criteria": ["low", "high: Today"]},
                }
            })
        );
        // Labels keep the question's order on the wire.
        let text = serde_json::to_string(&SystemOneBody {
            model: "m",
            request: &request,
        })
        .unwrap();
        assert!(text.find("\"billing\"").unwrap() < text.find("\"technical\"").unwrap());
        assert!(size_hint(&request) >= 200);
    }

    #[test]
    fn a_decisions_body_lists_named_questions_and_sends_the_state_as_text() {
        let request = mixed();
        let body = serde_json::to_value(DecisionsBody {
            model: "gpt-6-luna",
            request: &request,
        })
        .unwrap();
        assert_eq!(
            body,
            json!({
                "model": "gpt-6-luna",
                "input": "{\"message\":\"I was charged twice.\"}",
                "questions": [
                    {"type": "predicate", "name": "is_billing",
                        "instructions": "Is this about billing?\nYes requires: A charge, payment or refund."},
                    {"type": "choice", "name": "team", "instructions": "Which team?",
                        "choices": [{"value": "billing", "description": "Payments and refunds"}, {"value": "technical"}]},
                    {"type": "score", "name": "urgency", "instructions": "How urgent?",
                        "levels": [{"label": "low"}, {"label": "high", "description": "Today"}]},
                ]
            })
        );
        let text = DecisionRequest::new(json!("plain"), [BinaryQuestion::new("q", "Q?").unwrap()])
            .unwrap();
        let body = serde_json::to_value(DecisionsBody {
            model: "m",
            request: &text,
        })
        .unwrap();
        assert_eq!(body["input"], "plain");
    }

    #[test]
    fn each_limit_is_named_when_passed() {
        let request = mixed();
        let tight = |max_choices, max_levels, max_questions| DecisionLimits {
            max_choices,
            max_levels,
            max_questions,
        };
        assert!(check_limits(&request, &tight(2, 2, Some(3)), "h").is_ok());
        let error = check_limits(&request, &tight(2, 2, Some(2)), "ollama").unwrap_err();
        assert_eq!(error.kind(), FailureKind::InvalidRequest);
        assert!(
            error
                .to_string()
                .contains("3 questions; ollama takes at most 2"),
            "{error}"
        );
        assert!(
            error.to_string().contains("questions-per-request limit"),
            "{error}"
        );
        let many: Vec<String> = (0..27).map(|n| format!("c{n}")).collect();
        let wide = DecisionRequest::new(
            json!("s"),
            [ChoiceQuestion::new("route", "Where?", many.iter().map(String::as_str)).unwrap()],
        )
        .unwrap();
        let error = check_limits(&wide, &tight(26, 26, None), "ollama").unwrap_err();
        assert!(
            error.to_string().contains("`route` has 27 choices"),
            "{error}"
        );
        assert!(
            error.to_string().contains("at most 26 (the choice limit)"),
            "{error}"
        );
        let error = check_limits(&request, &tight(26, 1, None), "h").unwrap_err();
        assert!(
            error.to_string().contains("`urgency` has 2 levels"),
            "{error}"
        );
        assert!(error.to_string().contains("score-level limit"), "{error}");
    }
}
