//! Several questions about each item in one request: the questions
//! ([`Questions`]) and the typed view of their answers ([`Answers`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::decision::typed::{self, EnumOptions};
use crate::decision::{
    Binary, BinaryQuestion, Choice, ChoiceQuestion, DecisionEnum, DecisionError, DecisionQuestion,
    DecisionRequest, DecisionResponse, Score, ScoreQuestion,
};

/// The questions [`Collection::decide`](super::Collection::decide) asks of every item,
/// each under its own id: yes/no questions, choices and scores over a
/// [`DecisionEnum`]'s variants, or any [`DecisionQuestion`] built by hand.
///
/// A question that is not valid (an empty id, two questions under one id) is reported
/// when the operation runs, before anything is sent.
#[derive(Debug, Clone, Default)]
pub struct Questions {
    questions: Vec<DecisionQuestion>,
    /// The first question that could not be built.
    invalid: Option<DecisionError>,
}

impl Questions {
    /// No questions yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a yes/no question; its answer is [`Answers::binary`].
    pub fn binary(self, id: &str, question: &str) -> Self {
        self.with(BinaryQuestion::new(id, question).map(DecisionQuestion::from))
    }

    /// Adds a choice among `E`'s variants; its answer is [`Answers::choice`].
    pub fn choice<E: DecisionEnum>(self, id: &str, question: &str) -> Self {
        let options = EnumOptions::<E>::of().options();
        self.with(ChoiceQuestion::new(id, question, options).map(DecisionQuestion::from))
    }

    /// Adds a level among `E`'s variants, lowest first; its answer is [`Answers::score`].
    pub fn score<E: DecisionEnum>(self, id: &str, question: &str) -> Self {
        let options = EnumOptions::<E>::of().options();
        self.with(ScoreQuestion::new(id, question, options).map(DecisionQuestion::from))
    }

    /// Adds a question built by hand (with criteria, or options of your own, read from
    /// [`Answers::response`]).
    pub fn question(self, question: impl Into<DecisionQuestion>) -> Self {
        self.with(Ok(question.into()))
    }

    fn with(mut self, question: Result<DecisionQuestion, DecisionError>) -> Self {
        match question {
            Ok(question) => self.questions.push(question),
            Err(error) => {
                self.invalid.get_or_insert(error);
            }
        }
        self
    }

    /// The questions, or why they cannot be asked: each valid, at least one, and no two
    /// under one id (checked on an empty state, as every item's request will be).
    pub(super) fn checked(self) -> Result<Vec<DecisionQuestion>, DecisionError> {
        if let Some(invalid) = self.invalid {
            return Err(invalid);
        }
        DecisionRequest::new(
            Value::Object(serde_json::Map::new()),
            self.questions.clone(),
        )?;
        Ok(self.questions)
    }
}

/// The answers to an item's [`Questions`], read by id as the types they were asked with.
///
/// Each reader checks the answer it reads: a question the response does not answer, or
/// answers as another kind, or a `Choice`/`Score` read with an enum whose variants are not
/// the question's options, is an invalid-response [`DecisionError`] naming the id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Answers {
    response: DecisionResponse,
}

impl Answers {
    pub(super) fn new(response: DecisionResponse) -> Self {
        Self { response }
    }

    /// The answer to the yes/no question `id`.
    pub fn binary(&self, id: &str) -> Result<Binary, DecisionError> {
        typed::binary(&self.response, id)
    }

    /// The answer to the choice `id`, as `E`'s variants.
    pub fn choice<E: DecisionEnum>(&self, id: &str) -> Result<Choice<E>, DecisionError> {
        EnumOptions::<E>::of().choice(&self.response, id)
    }

    /// The answer to the score `id`, as `E`'s variants.
    pub fn score<E: DecisionEnum>(&self, id: &str) -> Result<Score<E>, DecisionError> {
        EnumOptions::<E>::of().score(&self.response, id)
    }

    /// The whole response: every answer, its tokens, the model that answered, and where
    /// its probabilities came from.
    pub fn response(&self) -> &DecisionResponse {
        &self.response
    }
}
