//! What a decision client is asked: a state and typed questions about it, each checked
//! when it is built so that a client never sees a malformed one.

use std::collections::HashSet;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::DecisionError;
use crate::schema::json_kind;

/// One answer a choice or score question allows: a name and an optional description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionOption {
    name: String,
    description: Option<String>,
}

impl DecisionOption {
    /// An option with this name and no description.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: None,
        }
    }

    /// This option, described (a blank description is dropped).
    pub fn described(mut self, description: impl Into<String>) -> Self {
        let description = description.into();
        self.description = (!description.trim().is_empty()).then_some(description);
        self
    }

    /// The option's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the option means, when given.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }
}

impl From<&str> for DecisionOption {
    fn from(name: &str) -> Self {
        Self::new(name)
    }
}

impl From<(&str, &str)> for DecisionOption {
    fn from((name, description): (&str, &str)) -> Self {
        Self::new(name).described(description)
    }
}

/// A yes/no question, answered with the probability of yes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryQuestion {
    id: String,
    question: String,
    criteria: Option<String>,
}

impl BinaryQuestion {
    /// A question with a non-blank id and text.
    pub fn new(id: impl Into<String>, question: impl Into<String>) -> Result<Self, DecisionError> {
        let (id, question) = (id.into(), question.into());
        check_id_and_text(&id, &question)?;
        Ok(Self {
            id,
            question,
            criteria: None,
        })
    }

    /// What "yes" requires, spelled out (a blank text is dropped).
    pub fn with_criteria(mut self, criteria: impl Into<String>) -> Self {
        let criteria = criteria.into();
        self.criteria = (!criteria.trim().is_empty()).then_some(criteria);
        self
    }

    /// The question's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The question.
    pub fn question(&self) -> &str {
        &self.question
    }

    /// What "yes" requires, when given.
    pub fn criteria(&self) -> Option<&str> {
        self.criteria.as_deref()
    }
}

/// A question with named choices, answered with a probability per choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChoiceQuestion {
    id: String,
    question: String,
    choices: Vec<DecisionOption>,
}

impl ChoiceQuestion {
    /// A question with at least two choices whose names are non-blank and distinct.
    pub fn new<I>(
        id: impl Into<String>,
        question: impl Into<String>,
        choices: I,
    ) -> Result<Self, DecisionError>
    where
        I: IntoIterator,
        I::Item: Into<DecisionOption>,
    {
        let (id, question) = (id.into(), question.into());
        check_id_and_text(&id, &question)?;
        let choices = check_options(&id, "choice", choices)?;
        Ok(Self {
            id,
            question,
            choices,
        })
    }

    /// The question's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The question.
    pub fn question(&self) -> &str {
        &self.question
    }

    /// The choices, in order.
    pub fn choices(&self) -> &[DecisionOption] {
        &self.choices
    }
}

/// A question with ordered levels, lowest first, answered with a probability per level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoreQuestion {
    id: String,
    question: String,
    levels: Vec<DecisionOption>,
}

impl ScoreQuestion {
    /// A question with at least two levels, lowest first, whose names are non-blank and
    /// distinct.
    pub fn new<I>(
        id: impl Into<String>,
        question: impl Into<String>,
        levels: I,
    ) -> Result<Self, DecisionError>
    where
        I: IntoIterator,
        I::Item: Into<DecisionOption>,
    {
        let (id, question) = (id.into(), question.into());
        check_id_and_text(&id, &question)?;
        let levels = check_options(&id, "level", levels)?;
        Ok(Self {
            id,
            question,
            levels,
        })
    }

    /// The question's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The question.
    pub fn question(&self) -> &str {
        &self.question
    }

    /// The levels, lowest first.
    pub fn levels(&self) -> &[DecisionOption] {
        &self.levels
    }
}

fn check_id_and_text(id: &str, question: &str) -> Result<(), DecisionError> {
    if id.trim().is_empty() {
        return Err(DecisionError::invalid_request("a question id is blank"));
    }
    if question.trim().is_empty() {
        return Err(DecisionError::invalid_request(format!(
            "question `{id}` has no text"
        )));
    }
    Ok(())
}

fn check_options<I>(id: &str, what: &str, options: I) -> Result<Vec<DecisionOption>, DecisionError>
where
    I: IntoIterator,
    I::Item: Into<DecisionOption>,
{
    let options: Vec<DecisionOption> = options.into_iter().map(Into::into).collect();
    if options.len() < 2 {
        return Err(DecisionError::invalid_request(format!(
            "question `{id}` needs at least two {what}s, it has {}",
            options.len()
        )));
    }
    let mut seen = HashSet::new();
    for option in &options {
        if option.name.trim().is_empty() {
            return Err(DecisionError::invalid_request(format!(
                "question `{id}` has a {what} with a blank name"
            )));
        }
        if !seen.insert(option.name.as_str()) {
            return Err(DecisionError::invalid_request(format!(
                "question `{id}` names the {what} `{}` twice",
                option.name
            )));
        }
    }
    Ok(options)
}

/// One typed question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecisionQuestion {
    /// Yes or no.
    Binary(BinaryQuestion),
    /// One of several named choices.
    Choice(ChoiceQuestion),
    /// A level on an ordered scale.
    Score(ScoreQuestion),
}

impl DecisionQuestion {
    /// The question's id.
    pub fn id(&self) -> &str {
        match self {
            DecisionQuestion::Binary(q) => q.id(),
            DecisionQuestion::Choice(q) => q.id(),
            DecisionQuestion::Score(q) => q.id(),
        }
    }

    /// The question's text.
    pub fn text(&self) -> &str {
        match self {
            DecisionQuestion::Binary(q) => q.question(),
            DecisionQuestion::Choice(q) => q.question(),
            DecisionQuestion::Score(q) => q.question(),
        }
    }

    /// The named answers a choice or score question allows; empty for a binary one.
    pub fn options(&self) -> &[DecisionOption] {
        match self {
            DecisionQuestion::Binary(_) => &[],
            DecisionQuestion::Choice(q) => q.choices(),
            DecisionQuestion::Score(q) => q.levels(),
        }
    }
}

impl From<BinaryQuestion> for DecisionQuestion {
    fn from(question: BinaryQuestion) -> Self {
        DecisionQuestion::Binary(question)
    }
}

impl From<ChoiceQuestion> for DecisionQuestion {
    fn from(question: ChoiceQuestion) -> Self {
        DecisionQuestion::Choice(question)
    }
}

impl From<ScoreQuestion> for DecisionQuestion {
    fn from(question: ScoreQuestion) -> Self {
        DecisionQuestion::Score(question)
    }
}

/// A state and one or more questions about it.
///
/// The state is a JSON string, object or array; anything else is refused here, before
/// any provider sees it. Question ids are unique.
///
/// Its `Debug` form shows the questions and the model but only the state's kind, so a
/// request logged with `?request` keeps the state out of the log.
#[derive(Clone, PartialEq)]
pub struct DecisionRequest {
    state: Value,
    questions: Vec<DecisionQuestion>,
    model: Option<String>,
}

impl fmt::Debug for DecisionRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DecisionRequest")
            .field(
                "state",
                &format_args!("<{} withheld>", json_kind(&self.state)),
            )
            .field("questions", &self.questions)
            .field("model", &self.model)
            .finish()
    }
}

impl DecisionRequest {
    /// A request about `state` (a string, object or array).
    pub fn new<I>(state: Value, questions: I) -> Result<Self, DecisionError>
    where
        I: IntoIterator,
        I::Item: Into<DecisionQuestion>,
    {
        match &state {
            Value::String(_) | Value::Object(_) | Value::Array(_) => {}
            other => {
                return Err(DecisionError::invalid_request(format!(
                    "the state must be a JSON string, object or array, not {}",
                    json_kind(other)
                )));
            }
        }
        let questions: Vec<DecisionQuestion> = questions.into_iter().map(Into::into).collect();
        if questions.is_empty() {
            return Err(DecisionError::invalid_request(
                "a decision request needs at least one question",
            ));
        }
        let mut ids = HashSet::new();
        for question in &questions {
            if !ids.insert(question.id()) {
                return Err(DecisionError::invalid_request(format!(
                    "the question id `{}` is used twice",
                    question.id()
                )));
            }
        }
        Ok(Self {
            state,
            questions,
            model: None,
        })
    }

    /// A request about any serializable state (it must serialize to a string, object or
    /// array).
    pub fn about<T, I>(state: &T, questions: I) -> Result<Self, DecisionError>
    where
        T: Serialize + ?Sized,
        I: IntoIterator,
        I::Item: Into<DecisionQuestion>,
    {
        let state = serde_json::to_value(state).map_err(|error| {
            DecisionError::invalid_request(format!("the state cannot be serialized ({error})"))
        })?;
        Self::new(state, questions)
    }

    /// Asks this model instead of the client's default.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The state.
    pub fn state(&self) -> &Value {
        &self.state
    }

    /// The questions, in order.
    pub fn questions(&self) -> &[DecisionQuestion] {
        &self.questions
    }

    /// The model asked for, when one was.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::decision::FailureKind;

    fn done() -> BinaryQuestion {
        BinaryQuestion::new("done", "Is it done?").unwrap()
    }

    #[test]
    fn debug_withholds_the_state() {
        let request = DecisionRequest::new(json!({"ticket": "SECRET-STATE-9"}), [done()]).unwrap();
        let debug = format!("{request:?}");
        assert!(!debug.contains("SECRET-STATE"), "{debug}");
        assert!(debug.contains("<an object withheld>"), "{debug}");
        assert!(debug.contains("Is it done?"), "{debug}");
    }

    #[test]
    fn the_state_is_a_string_an_object_or_an_array() {
        for state in [json!("text"), json!({"a": 1}), json!([1])] {
            assert!(DecisionRequest::new(state, [done()]).is_ok());
        }
        for (state, named) in [
            (json!(null), "null"),
            (json!(3), "a number"),
            (json!(true), "a boolean"),
        ] {
            let error = DecisionRequest::new(state, [done()]).unwrap_err();
            assert_eq!(error.kind(), FailureKind::InvalidRequest);
            assert!(
                error.to_string().ends_with(&format!("not {named}")),
                "{error}"
            );
        }
        assert!(DecisionRequest::about(&7u8, [done()]).is_err());
        assert!(DecisionRequest::about("a task", [done()]).is_ok());
    }

    #[test]
    fn ids_are_unique_and_non_blank_and_a_request_has_a_question() {
        let error = DecisionRequest::new(json!("s"), [done(), done()]).unwrap_err();
        assert!(
            error.to_string().contains("`done` is used twice"),
            "{error}"
        );
        assert!(DecisionRequest::new(json!("s"), Vec::<DecisionQuestion>::new()).is_err());
        assert!(BinaryQuestion::new(" ", "q").is_err());
        assert!(BinaryQuestion::new("id", "\n").is_err());
    }

    #[test]
    fn choices_and_levels_need_two_distinct_non_blank_names() {
        assert!(ChoiceQuestion::new("c", "Which?", ["a"]).is_err());
        let twice = ChoiceQuestion::new("c", "Which?", ["a", "a"]).unwrap_err();
        assert!(twice.to_string().contains("`a` twice"), "{twice}");
        assert!(ChoiceQuestion::new("c", "Which?", ["a", " "]).is_err());
        assert!(ScoreQuestion::new("s", "How good?", ["low"]).is_err());
        let score = ScoreQuestion::new("s", "How good?", [("low", "bad"), ("high", "")]).unwrap();
        assert_eq!(score.levels()[0].description(), Some("bad"));
        assert_eq!(score.levels()[1].description(), None);
    }
}
