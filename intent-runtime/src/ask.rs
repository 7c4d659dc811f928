//! Typed decision questions asked through a client: one [`Binary`], [`Choice`] or
//! [`Score`] question about a state, answered by the client's decision client through its
//! rate limiter, with the tokens and the model that answered. The generated decision
//! methods (through `__private`) and the collection operations share these.

use serde_json::Value;
use tracing::Instrument;

use crate::client::IntentClient;
use crate::cost::CostTally;
use crate::decision::typed::EnumOptions;
use crate::decision::{
    Binary, BinaryQuestion, Choice, ChoiceQuestion, DecisionError, DecisionQuestion,
    DecisionRequest, DecisionResponse, FailureKind, Score, ScoreQuestion,
};
use crate::pricing::{self, PricedCall};
use crate::result::Usage;
use crate::telemetry::CallTrace;

/// A typed answer, the tokens the response that carried it used, and the model that
/// answered.
#[derive(Debug)]
pub(crate) struct Asked<T> {
    pub answer: T,
    pub usage: Usage,
    pub model: String,
}

impl<T> Asked<T> {
    /// The answer turned into another, with the same tokens and model.
    pub(crate) fn map<U>(self, turn: impl FnOnce(T) -> U) -> Asked<U> {
        Asked {
            answer: turn(self.answer),
            usage: self.usage,
            model: self.model,
        }
    }

    /// What the answer cost on `client`'s price table.
    pub(crate) fn cost(&self, client: &IntentClient) -> CostTally {
        let mut tally = CostTally::default();
        let inner = client.inner();
        let call = PricedCall {
            model: &self.model,
            // The provider's name finds its own price entry, when the decision client is
            // the one made from the client's provider.
            provider: inner.decisions_from_provider.then(|| inner.provider.name()),
            usage: &self.usage,
            // Inside a batch job, the job's decision client asks through the batch API;
            // a decision client the client was given (System One) is asked live there
            // too, at the live price.
            batch: inner.in_batch && inner.decisions_from_provider,
        };
        match pricing::price(&inner.prices, call) {
            Some(cost) => tally.priced += cost,
            None => tally.unpriced(&self.model),
        }
        tally
    }
}

/// A typed answer, or why there is none.
pub(crate) type Decided<T> = Result<Asked<T>, DecisionError>;

/// Asks one question through the client's decision client, in a call span naming
/// `method` (`intent <method>`; the question's id is the method's name) as every
/// generated method's call runs, so the decision client's `chat` spans open inside it.
/// `A` is the method's answer type.
///
/// The request waits for the client's rate limiter first, as every model call does: a
/// decision is a model call too, and a loop of them would otherwise run past the quota.
async fn ask<A>(
    client: &IntentClient,
    method: &str,
    state: Result<Value, DecisionError>,
    question: Result<DecisionQuestion, DecisionError>,
    model: Option<&str>,
) -> Result<DecisionResponse, DecisionError> {
    let mut request = DecisionRequest::new(state?, [question?])?;
    if let Some(model) = model {
        request = request.with_model(model);
    }
    let inner = client.inner();
    let telemetry = &inner.telemetry;
    // The model asked for: the method's own, else the provider's default, which the
    // default decision client (built on the client's provider) uses.
    let model = request
        .model()
        .unwrap_or(telemetry.primary.default_model.as_str());
    let trace = CallTrace::start(telemetry, Some(method), std::any::type_name::<A>(), model);
    // A state's JSON as the limiter's token estimate, as a prompt's length is for a call.
    let estimated_tokens = request.state().to_string().len().div_ceil(4) as u64;
    if let Some(limiter) = &inner.rate_limiter {
        let admitted = limiter
            .admit(estimated_tokens)
            .instrument(trace.span().clone())
            .await;
        if let Err(refused) = admitted {
            let error =
                DecisionError::new(FailureKind::SharedStateUnavailable, refused.to_string());
            trace.decided(Some(error.kind()));
            return Err(error);
        }
    }
    let response = client
        .decide(&request)
        .instrument(trace.span().clone())
        .await;
    if let (Some(limiter), Ok(response)) = (&inner.rate_limiter, &response) {
        let usage = response.usage();
        limiter
            .settle(estimated_tokens, usage.input_tokens + usage.output_tokens)
            .await;
    }
    trace.decided(response.as_ref().err().map(DecisionError::kind));
    response
}

fn missing(id: &str) -> DecisionError {
    DecisionError::invalid_response(format!(
        "the response has no answer of the right kind to `{id}`"
    ))
}

fn asked<T>(answer: T, response: &DecisionResponse) -> Asked<T> {
    Asked {
        answer,
        usage: response.usage(),
        model: response.model().to_owned(),
    }
}

/// A yes/no question with this id and text about `state`.
pub(crate) async fn binary(
    client: &IntentClient,
    id: &str,
    question: &str,
    state: Result<Value, DecisionError>,
    model: Option<&str>,
) -> Decided<Binary> {
    let question = BinaryQuestion::new(id, question).map(DecisionQuestion::from);
    let response = ask::<Binary>(client, id, state, question, model).await?;
    let answer = response.binary(id).ok_or_else(|| missing(id))?;
    let binary = Binary {
        probability: answer.probability(),
        source: response.source(),
    };
    Ok(asked(binary, &response))
}

/// A choice among `E`'s variants.
pub(crate) async fn choice<E>(
    client: &IntentClient,
    enum_options: EnumOptions<E>,
    id: &str,
    question: &str,
    state: Result<Value, DecisionError>,
    model: Option<&str>,
) -> Decided<Choice<E>> {
    let question =
        ChoiceQuestion::new(id, question, enum_options.options()).map(DecisionQuestion::from);
    let response = ask::<Choice<E>>(client, id, state, question, model).await?;
    let answer = response.choice(id).ok_or_else(|| missing(id))?;
    let selected = answer
        .probabilities()
        .iter()
        .position(|(name, _)| name == answer.selected())
        .ok_or_else(|| missing(id))?;
    let choice = Choice {
        probabilities: enum_options.variants(id, answer.probabilities())?,
        selected: enum_options.variant(id, selected)?,
        source: response.source(),
    };
    Ok(asked(choice, &response))
}

/// A level among `E`'s variants, lowest first.
pub(crate) async fn score<E>(
    client: &IntentClient,
    enum_options: EnumOptions<E>,
    id: &str,
    question: &str,
    state: Result<Value, DecisionError>,
    model: Option<&str>,
) -> Decided<Score<E>> {
    let question =
        ScoreQuestion::new(id, question, enum_options.options()).map(DecisionQuestion::from);
    let response = ask::<Score<E>>(client, id, state, question, model).await?;
    let answer = response.score(id).ok_or_else(|| missing(id))?;
    let score = Score {
        probabilities: enum_options.variants(id, answer.probabilities())?,
        most_likely: enum_options.variant(id, answer.most_likely_index())?,
        expected: answer.expected(),
        source: response.source(),
    };
    Ok(asked(score, &response))
}
