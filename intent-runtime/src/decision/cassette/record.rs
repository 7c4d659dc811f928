//! What a decision cassette keeps of one exchange: the request as a readable record (the
//! model, the state, the questions), its fingerprint, what differs between two records,
//! and the response or the failure.
//!
//! The host's request id is left out on purpose: it changes from run to run without
//! changing what the model is asked or answers.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::decision::{
    BinaryQuestion, ChoiceQuestion, DecisionError, DecisionOption, DecisionQuestion,
    DecisionRequest, DecisionResponse, FailureKind, ScoreQuestion,
};
use crate::provider::Sanitizer;
use crate::provider::cassette::fingerprint::{
    fingerprint_of, first_difference, first_value_difference,
};

/// The kind of a decision exchange in a cassette, beside a provider's `complete` and
/// `stream`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum DecideKind {
    /// [`DecisionClient::decide`](crate::decision::DecisionClient::decide).
    Decide,
}

/// The kind name lines of decision exchanges carry.
pub(super) const DECIDE: &str = "decide";

/// A choice or a level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct RecordedOption {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct RecordedQuestion {
    pub id: String,
    /// `binary`, `choice` or `score`.
    pub kind: String,
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criteria: Option<String>,
    /// The choices, or the levels lowest first; none for a binary question.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<RecordedOption>,
}

/// A decision request as a cassette keeps it, in a fixed order, so that a re-recorded
/// cassette diffs line by line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct RecordedDecisionRequest {
    /// The model asked: the request's own, else the client's default when it names one;
    /// none when neither is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The state, sanitized.
    pub state: Value,
    /// The questions, in order; their texts sanitized.
    pub questions: Vec<RecordedQuestion>,
}

impl RecordedDecisionRequest {
    /// The record of `request`, the model resolved against the client's `default_model`,
    /// the state and the texts passed through `sanitizer`. Ids and option names are kept
    /// as they are: they are code, and the answers are keyed by them.
    pub(super) fn of(
        request: &DecisionRequest,
        default_model: Option<&str>,
        sanitizer: &Sanitizer,
    ) -> Self {
        let clean = |text: &str| sanitizer.clean(text);
        let options = |options: &[DecisionOption]| {
            options
                .iter()
                .map(|option| RecordedOption {
                    name: option.name().to_owned(),
                    description: option.description().map(clean),
                })
                .collect()
        };
        let questions = request
            .questions()
            .iter()
            .map(|question| {
                let (kind, criteria) = match question {
                    DecisionQuestion::Binary(q) => ("binary", q.criteria().map(clean)),
                    DecisionQuestion::Choice(_) => ("choice", None),
                    DecisionQuestion::Score(_) => ("score", None),
                };
                RecordedQuestion {
                    id: question.id().to_owned(),
                    kind: kind.to_owned(),
                    question: clean(question.text()),
                    criteria,
                    options: options(question.options()),
                }
            })
            .collect();
        Self {
            model: request.model().or(default_model).map(str::to_owned),
            state: clean_state(sanitizer, request.state()),
            questions,
        }
    }

    /// SHA-256 (64 hex digits) of the record's canonical JSON.
    pub(super) fn fingerprint(&self) -> String {
        fingerprint_of(self)
    }

    /// The request this record was made from, rebuilt through the public constructors
    /// (so a hand-edited record is checked as a caller's request is), with its model.
    pub(super) fn to_request(&self) -> Result<DecisionRequest, DecisionError> {
        let options = |options: &[RecordedOption]| -> Vec<DecisionOption> {
            options
                .iter()
                .map(|option| {
                    let built = DecisionOption::new(option.name.clone());
                    match &option.description {
                        Some(description) => built.described(description.clone()),
                        None => built,
                    }
                })
                .collect()
        };
        let mut questions = Vec::with_capacity(self.questions.len());
        for q in &self.questions {
            let question: DecisionQuestion = match q.kind.as_str() {
                "binary" => {
                    let binary = BinaryQuestion::new(q.id.clone(), q.question.clone())?;
                    match &q.criteria {
                        Some(criteria) => binary.with_criteria(criteria.clone()),
                        None => binary,
                    }
                    .into()
                }
                "choice" => {
                    ChoiceQuestion::new(q.id.clone(), q.question.clone(), options(&q.options))?
                        .into()
                }
                "score" => {
                    ScoreQuestion::new(q.id.clone(), q.question.clone(), options(&q.options))?
                        .into()
                }
                other => {
                    return Err(DecisionError::invalid_request(format!(
                        "question `{}` is of the kind `{other}`, not binary, choice or score",
                        q.id
                    )));
                }
            };
            questions.push(question);
        }
        let request = DecisionRequest::new(self.state.clone(), questions)?;
        Ok(match &self.model {
            Some(model) => request.with_model(model.clone()),
            None => request,
        })
    }

    /// What differs between this recorded request and `asked`, each as a short phrase a
    /// person can act on (the state's values are never quoted: only where they differ);
    /// empty when they are the same.
    pub(super) fn differences(&self, asked: &RecordedDecisionRequest) -> Vec<String> {
        let mut out = Vec::new();
        if self.model != asked.model {
            out.push(format!(
                "model (recorded {}, asked {})",
                model_shown(self.model.as_deref()),
                model_shown(asked.model.as_deref())
            ));
        }
        if self.state != asked.state {
            let path = first_value_difference(&self.state, &asked.state, String::new());
            out.push(format!(
                "state (first difference at `{}`)",
                if path.is_empty() { "/" } else { &path }
            ));
        }
        let ids = |questions: &[RecordedQuestion]| -> Vec<String> {
            questions.iter().map(|q| format!("`{}`", q.id)).collect()
        };
        if ids(&self.questions) != ids(&asked.questions) {
            out.push(format!(
                "questions (recorded {}, asked {})",
                ids(&self.questions).join(", "),
                ids(&asked.questions).join(", ")
            ));
            return out;
        }
        for (was, now) in self.questions.iter().zip(&asked.questions) {
            let id = &now.id;
            if was.kind != now.kind {
                out.push(format!(
                    "question `{id}`: kind (recorded {}, asked {})",
                    was.kind, now.kind
                ));
                continue;
            }
            if was.question != now.question {
                out.push(format!(
                    "question `{id}`: its text differs from character {}",
                    first_difference(&was.question, &now.question)
                ));
            }
            if was.criteria != now.criteria {
                out.push(format!("question `{id}`: its criteria"));
            }
            let names = |options: &[RecordedOption]| -> Vec<String> {
                options.iter().map(|o| o.name.clone()).collect()
            };
            if names(&was.options) != names(&now.options) {
                out.push(format!(
                    "question `{id}`: options (recorded {}, asked {})",
                    names(&was.options).join(", "),
                    names(&now.options).join(", ")
                ));
            } else if was.options != now.options {
                out.push(format!("question `{id}`: option descriptions"));
            }
        }
        out
    }
}

fn model_shown(model: Option<&str>) -> String {
    model.map_or_else(
        || "the client's default (not named)".to_owned(),
        |model| format!("`{model}`"),
    )
}

/// The state with its texts sanitized: the JSON text cleaned and read back (a redacted
/// value is the string `[redacted]`); a text that no longer reads as JSON (a secret that
/// spanned the syntax) is kept as one string.
fn clean_state(sanitizer: &Sanitizer, state: &Value) -> Value {
    let text = state.to_string();
    let cleaned = sanitizer.clean(&text);
    if cleaned == text {
        return state.clone();
    }
    serde_json::from_str(&cleaned).unwrap_or(Value::String(cleaned))
}

/// A failed decision as a cassette keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct RecordedDecisionError {
    pub kind: FailureKind,
    /// This crate's message (never the state).
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub transient: bool,
    /// The host's words, sanitized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_message: Option<String>,
}

impl RecordedDecisionError {
    pub(super) fn of(error: &DecisionError, clean: impl Fn(&str) -> String) -> Self {
        Self {
            kind: error.kind(),
            message: clean(error.message()),
            status: error.status(),
            transient: error.is_transient(),
            provider_message: error.provider_message().map(clean),
        }
    }

    /// The failure served on replay.
    pub(super) fn to_error(&self) -> DecisionError {
        DecisionError::replayed(
            self.kind,
            self.message.clone(),
            self.status,
            self.transient,
            self.provider_message.clone(),
        )
    }
}

/// One recorded decision: the request, and the response or the failure it met. The
/// response is read through [`DecisionResponse`]'s checked deserialization.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct DecisionExchange {
    pub kind: DecideKind,
    /// The request's fingerprint when it was recorded: for a person reading the file;
    /// matching recomputes it from `request`.
    pub fingerprint: String,
    pub request: RecordedDecisionRequest,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<DecisionResponse>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordedDecisionError>,
}

impl DecisionExchange {
    /// Why this exchange cannot be served, when it cannot: it holds neither a response nor
    /// an error, its request is not one a caller could make, or its response does not
    /// answer its request (a line edited by hand, or written by a version of this crate
    /// that checked less).
    /// Returns the request rebuilt.
    pub(super) fn check(&self) -> Result<DecisionRequest, String> {
        let request = self
            .request
            .to_request()
            .map_err(|error| format!("its request is not valid: {}", error.message()))?;
        match (&self.response, &self.error) {
            (Some(response), _) => {
                if let Err(error) = response.clone().answering(&request) {
                    return Err(format!(
                        "its response does not answer its request: {}",
                        error.message()
                    ));
                }
            }
            (None, Some(_)) => {}
            (None, None) => return Err("it holds neither a response nor an error".to_owned()),
        }
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request() -> DecisionRequest {
        DecisionRequest::new(
            json!({"ticket": "Charged twice", "customer": {"tier": "gold"}}),
            [
                DecisionQuestion::from(
                    BinaryQuestion::new("refund", "Is a refund asked for?")
                        .unwrap()
                        .with_criteria("An explicit ask"),
                ),
                ChoiceQuestion::new(
                    "team",
                    "Which team?",
                    [("billing", "Payments"), ("tech", "")],
                )
                .unwrap()
                .into(),
                ScoreQuestion::new("urgency", "How urgent?", ["low", "high"])
                    .unwrap()
                    .into(),
            ],
        )
        .unwrap()
    }

    fn bare() -> Sanitizer {
        Sanitizer::new()
    }

    #[test]
    fn the_fingerprint_ignores_the_states_key_order_and_keeps_what_shapes_the_answer() {
        let base = RecordedDecisionRequest::of(&request(), Some("jev"), &bare());
        let reordered = DecisionRequest::new(
            json!({"customer": {"tier": "gold"}, "ticket": "Charged twice"}),
            request().questions().to_vec(),
        )
        .unwrap();
        assert_eq!(
            base.fingerprint(),
            RecordedDecisionRequest::of(&reordered, Some("jev"), &bare()).fingerprint()
        );
        // The default model counts as the model asked.
        assert_eq!(
            base.fingerprint(),
            RecordedDecisionRequest::of(&request().with_model("jev"), None, &bare()).fingerprint()
        );
        let questions = request().questions().to_vec();
        let changed = [
            RecordedDecisionRequest::of(&request(), Some("other"), &bare()),
            RecordedDecisionRequest::of(&request(), None, &bare()),
            RecordedDecisionRequest::of(
                &DecisionRequest::new(json!({"ticket": "Charged once"}), questions.clone())
                    .unwrap(),
                Some("jev"),
                &bare(),
            ),
            RecordedDecisionRequest::of(
                &DecisionRequest::new(request().state().clone(), questions[..2].to_vec()).unwrap(),
                Some("jev"),
                &bare(),
            ),
        ];
        for other in changed {
            assert_ne!(base.fingerprint(), other.fingerprint(), "{other:?}");
        }
    }

    #[test]
    fn differences_name_the_field_and_where_without_quoting_the_state() {
        let recorded = RecordedDecisionRequest::of(&request(), Some("jev"), &bare());
        let asked = DecisionRequest::new(
            json!({"ticket": "SECRET changed", "customer": {"tier": "gold"}}),
            [
                DecisionQuestion::from(
                    BinaryQuestion::new("refund", "Is a refund wanted?")
                        .unwrap()
                        .with_criteria("An explicit ask"),
                ),
                ChoiceQuestion::new("team", "Which team?", ["billing", "sales"])
                    .unwrap()
                    .into(),
                ScoreQuestion::new("urgency", "How urgent?", ["low", "high"])
                    .unwrap()
                    .into(),
            ],
        )
        .unwrap();
        let asked = RecordedDecisionRequest::of(&asked, Some("jev-2"), &bare());
        assert_eq!(
            recorded.differences(&asked),
            vec![
                "model (recorded `jev`, asked `jev-2`)".to_owned(),
                "state (first difference at `/ticket`)".to_owned(),
                "question `refund`: its text differs from character 13".to_owned(),
                "question `team`: options (recorded billing, tech, asked billing, sales)"
                    .to_owned(),
            ]
        );
        assert!(recorded.differences(&recorded).is_empty());
    }

    #[test]
    fn a_record_is_rebuilt_into_the_same_request() {
        let record = RecordedDecisionRequest::of(&request(), None, &bare());
        assert_eq!(record.to_request().unwrap(), request());
        let mut broken = record.clone();
        broken.questions[1].options.truncate(1);
        let error = broken.to_request().unwrap_err();
        assert!(
            error.to_string().contains("`team` needs at least two"),
            "{error}"
        );
    }

    #[test]
    fn secrets_and_named_fields_in_the_state_are_redacted_and_it_stays_json() {
        let sanitizer = bare().secret("hunter2-password").field("email");
        let request = DecisionRequest::new(
            json!({"note": "pw hunter2-password", "email": "ann@example.com", "n": 3}),
            [BinaryQuestion::new("q", "Is it done?").unwrap()],
        )
        .unwrap();
        let record = RecordedDecisionRequest::of(&request, None, &sanitizer);
        assert_eq!(
            record.state,
            json!({"note": "pw [redacted]", "email": "[redacted]", "n": 3})
        );
    }
}
