//! Decision questions: bounded judgments (is this done, which route, how good) asked of a
//! model as typed questions and answered with probabilities instead of prose.
//!
//! A [`DecisionClient`] answers a [`DecisionRequest`] (a JSON state and one or more
//! [binary](BinaryQuestion), [choice](ChoiceQuestion) or [score](ScoreQuestion) questions)
//! with a [`DecisionResponse`]: one answer per question, token usage, the model, and
//! whether the probabilities were [measured or stated](ProbabilitySource).
//!
//! Two clients answer with the chat-model providers of this crate:
//! - [`LogprobDecisionClient`] (OpenAI, Gemini and compatible servers that return
//!   log-probabilities): one one-token request per question, the probabilities read from
//!   the answer token's log-probabilities; when none come, the stated client answers
//!   instead and the response says so
//!   ([`fallback_reason`](DecisionResponse::fallback_reason));
//! - [`StatedDecisionClient`] (Anthropic and any provider without log-probabilities):
//!   one request whose strict schema has the model state each distribution, verified as
//!   any intent's reply is.
//!
//! A decision model answers over its own API instead: [`SystemOneClient`] speaks the System
//! One API (`/v1/systemone`: TypeSafe, OpenRouter, LiteLLM, Fireworks, Ollama, local
//! runtimes) or OpenAI's Decisions API, every question of a request in one HTTP request,
//! with measured distributions ([`ProbabilitySource::DecisionModel`]). Give it to
//! [`IntentClientBuilder::decision_client`](crate::IntentClientBuilder::decision_client)
//! and `decide` and the DSL's decision methods use it; give it to a [`DecisionEvaluator`]
//! for the gate or your own loop.
//!
//! [`decision_client_for`] picks between the chat-model clients by what the provider
//! offers.
//! [`DecisionEvaluator`] turns a yes/no answer into a verdict with a threshold and
//! explicit failure behaviours, on its own or as the gate in front of the generative judge
//! ([`IntentClientBuilder::decision_gate`](crate::IntentClientBuilder::decision_gate)).
//!
//! A decision client never retries: a failure comes back as a [`DecisionError`] whose
//! [`is_transient`](DecisionError::is_transient) says whether asking again may help.
//!
//! # Not for authorization
//!
//! These probabilities are a model's judgment of a state it was shown, not a security
//! decision. Never use them to authorize an action, approve access or gate anything a
//! crafted state could talk its way through; send only the part of the state the
//! question needs, since the decision model is one more service that sees it.

mod answer;
mod cassette;
mod error;
mod evaluator;
mod logprobs;
mod prompt;
mod request;
mod stated;
mod systemone;
pub(crate) mod typed;

use std::fmt;
use std::sync::Arc;

pub use answer::{
    BinaryAnswer, ChoiceAnswer, DecisionAnswer, DecisionResponse, ProbabilitySource, SUM_TOLERANCE,
    ScoreAnswer,
};
pub use cassette::CassetteDecisionClient;
pub use error::{DecisionError, FailureKind};
pub use evaluator::{
    DEFAULT_COMPLETION_THRESHOLD, DecisionEvaluator, Evaluation, EvaluationOutcome, FailureBehavior,
};
pub use logprobs::{DEFAULT_COVERAGE_FLOOR, LogprobDecisionClient};
pub use request::{
    BinaryQuestion, ChoiceQuestion, DecisionOption, DecisionQuestion, DecisionRequest,
    ScoreQuestion,
};
pub use stated::{STATED_SUM_TOLERANCE, StatedDecisionClient};
pub use systemone::{
    DECISION_MODEL_SUM_TOLERANCE, DecisionHost, DecisionLimits, SYSTEM_ONE_DEFAULT_MODEL,
    SystemOneClient, SystemOneConfigError, WireFormat,
};
pub use typed::{Binary, Choice, DecisionEnum, DecisionVariant, Score};

pub(crate) use evaluator::{GateStep, gate};

use tracing::Instrument;

use crate::provider::{Provider, ProviderReply, ProviderRequest};
use crate::telemetry::Telemetry;

/// Sends one decision request in its own `chat <model>` span (marked as a decision
/// request), so a decision's cost shows next to the calls that asked for it.
async fn send(
    provider: &Arc<dyn Provider>,
    telemetry: &Telemetry,
    request: &ProviderRequest,
) -> Result<ProviderReply, DecisionError> {
    let trace = telemetry.decision_request(request);
    let outcome = provider
        .complete(request)
        .instrument(trace.span().clone())
        .await;
    match &outcome {
        Ok(reply) => trace.replied(reply, false),
        Err(error) => trace.failed(error),
    }
    outcome.map_err(|error| DecisionError::from_provider(&error))
}

/// Answers typed questions about a state with probabilities.
///
/// Implement it to connect a dedicated decision model; this crate's implementations are
/// [`LogprobDecisionClient`] and [`StatedDecisionClient`]. An implementation makes no
/// retries of its own and keeps the state out of its errors and logs.
#[async_trait::async_trait]
pub trait DecisionClient: Send + Sync + fmt::Debug {
    /// Answers every question of `request`, or says why it could not.
    async fn decide(&self, request: &DecisionRequest) -> Result<DecisionResponse, DecisionError>;

    /// The model asked when a request names none, when the client knows it. A
    /// [`CassetteDecisionClient`] counts it in a request's fingerprint, so that an answer
    /// recorded from one model is not replayed for another. `None` by default.
    fn default_model(&self) -> Option<&str> {
        None
    }
}

#[async_trait::async_trait]
impl<D: DecisionClient + ?Sized> DecisionClient for Arc<D> {
    async fn decide(&self, request: &DecisionRequest) -> Result<DecisionResponse, DecisionError> {
        (**self).decide(request).await
    }

    fn default_model(&self) -> Option<&str> {
        (**self).default_model()
    }
}

/// The decision client for `provider`: log-probabilities when it reports them
/// ([`Provider::max_top_logprobs`]), falling back to stated probabilities when a reply
/// carries none; stated probabilities otherwise.
pub fn decision_client_for(provider: Arc<dyn Provider>) -> Arc<dyn DecisionClient> {
    if provider.max_top_logprobs().is_some() {
        Arc::new(LogprobDecisionClient::shared(provider))
    } else {
        Arc::new(StatedDecisionClient::shared(provider))
    }
}
