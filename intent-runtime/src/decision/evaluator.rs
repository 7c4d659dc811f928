//! A verdict from one yes/no decision: a completion threshold, deterministic feedback,
//! and explicit behaviours for a decision client that fails. Usable in a caller's own
//! loop, and as the cheap gate in front of the generative judge.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

use super::{BinaryQuestion, DecisionClient, DecisionError, DecisionRequest, ProbabilitySource};
use crate::prompt::PromptPlan;
pub use crate::result::FailureBehavior;
use crate::result::{GateOutcome, GateRecord, IssueDetail, IssueSource, ResultIssue, Usage};

/// The probability of yes at or above which the answer counts as satisfied.
pub const DEFAULT_COMPLETION_THRESHOLD: f64 = 0.90;

/// The question a standalone evaluator asks unless told another.
const COMPLETE_ID: &str = "complete";
const COMPLETE_QUESTION: &str = "Has the task been fully completed, with every requirement met?";

/// The question the judge's gate asks unless told another.
const GATE_ID: &str = "satisfies_intent";
const GATE_QUESTION: &str = "Does the candidate output carry out the intent on the input and meet every output requirement?";

/// What an evaluation concluded.
#[derive(Debug, Clone, PartialEq)]
pub enum EvaluationOutcome {
    /// The probability of yes reached the threshold.
    Satisfied,
    /// The probability of yes fell short of the threshold.
    NotSatisfied {
        /// Deterministic feedback naming the question, the probability and the threshold.
        feedback: String,
    },
    /// The decision client failed and the behaviour says to try again: no sooner than
    /// [`failure.retry_after()`](DecisionError::retry_after), when the host advised a
    /// wait (the decision gate waits so).
    Retry {
        /// The failure.
        failure: DecisionError,
    },
    /// The decision client failed and the behaviour says to defer to what comes next.
    Defer {
        /// The failure.
        failure: DecisionError,
    },
}

/// One evaluation: the question asked, the answer and the verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// The id of the question asked.
    pub question_id: String,
    /// The probability of yes, when the decision client answered.
    pub probability: Option<f64>,
    /// Where the probability came from, when there is one.
    pub source: Option<ProbabilitySource>,
    /// The threshold applied.
    pub threshold: f64,
    /// The verdict.
    pub outcome: EvaluationOutcome,
    /// Tokens the decision used.
    pub usage: Usage,
    /// How long the decision took.
    pub elapsed: Duration,
}

impl Evaluation {
    /// Whether the answer reached the threshold.
    pub fn is_satisfied(&self) -> bool {
        self.outcome == EvaluationOutcome::Satisfied
    }
}

/// Asks one yes/no question about a state and compares the probability of yes with a
/// completion threshold (default [`DEFAULT_COMPLETION_THRESHOLD`]).
///
/// Below the threshold the outcome carries feedback that names the question and the
/// probability, the same words for the same numbers. When the decision client fails,
/// [`on_failure`](Self::on_failure) (default [`FailureBehavior::Fail`]) says what happens,
/// or [`on_transient_failure`](Self::on_transient_failure) for a transient failure (rate
/// limit, overload, outage, timeout).
///
/// Each decision is logged at debug level (question id, probability, threshold,
/// outcome, latency) and each applied failure behaviour at warn level (failure kind,
/// status, transience); the state never is.
///
/// The probability is a model's judgment: do not use it to authorize or approve
/// anything (see the [module documentation](super)).
///
/// ```
/// use intent_rs::decision::{DecisionEvaluator, LogprobDecisionClient};
/// use intent_rs::provider::{ScriptedProvider, ScriptedReply};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let model = ScriptedProvider::new([ScriptedReply::logprobs([("yes", -0.02), ("no", -4.0)])])
///     .with_max_top_logprobs(Some(20));
/// let evaluator = DecisionEvaluator::new(LogprobDecisionClient::new(model));
/// let evaluation = evaluator.evaluate("Wrote the report and sent it.").await.unwrap();
/// assert!(evaluation.is_satisfied());
/// # });
/// ```
#[derive(Clone)]
pub struct DecisionEvaluator {
    client: Arc<dyn DecisionClient>,
    threshold: f64,
    question: Option<(String, String)>,
    criteria: Option<String>,
    model: Option<String>,
    on_failure: FailureBehavior,
    on_transient_failure: FailureBehavior,
}

impl fmt::Debug for DecisionEvaluator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DecisionEvaluator")
            .field("client", &self.client)
            .field("threshold", &self.threshold)
            .field("question", &self.question)
            .field("on_failure", &self.on_failure)
            .field("on_transient_failure", &self.on_transient_failure)
            .finish_non_exhaustive()
    }
}

impl DecisionEvaluator {
    /// An evaluator asking `client`.
    pub fn new(client: impl DecisionClient + 'static) -> Self {
        Self::shared(Arc::new(client))
    }

    /// An evaluator asking a shared client.
    pub fn shared(client: Arc<dyn DecisionClient>) -> Self {
        Self {
            client,
            threshold: DEFAULT_COMPLETION_THRESHOLD,
            question: None,
            criteria: None,
            model: None,
            on_failure: FailureBehavior::Fail,
            on_transient_failure: FailureBehavior::Fail,
        }
    }

    /// The least probability of yes that counts as satisfied, clamped to [0, 1] (a NaN
    /// keeps the default).
    pub fn with_threshold(mut self, threshold: f64) -> Self {
        if !threshold.is_nan() {
            self.threshold = threshold.clamp(0.0, 1.0);
        }
        self
    }

    /// The yes/no question to ask, with its id (checked when asked: a blank one fails
    /// as an invalid request).
    pub fn with_question(mut self, id: impl Into<String>, question: impl Into<String>) -> Self {
        self.question = Some((id.into(), question.into()));
        self
    }

    /// What "yes" requires.
    pub fn with_criteria(mut self, criteria: impl Into<String>) -> Self {
        self.criteria = Some(criteria.into());
        self
    }

    /// The model to ask instead of the decision client's default.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The model it asks, when it names one (what the decision gate's calls are priced
    /// on).
    pub(crate) fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// What to do when the decision client fails for a reason that asking again will
    /// not cure (default [`FailureBehavior::Fail`]).
    pub fn on_failure(mut self, behavior: FailureBehavior) -> Self {
        self.on_failure = behavior;
        self
    }

    /// What to do when it fails transiently: rate limited, overloaded, unavailable,
    /// timed out (default [`FailureBehavior::Fail`]).
    pub fn on_transient_failure(mut self, behavior: FailureBehavior) -> Self {
        self.on_transient_failure = behavior;
        self
    }

    /// The threshold applied.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// Asks the question about `state` and compares the answer with the threshold.
    ///
    /// An error is a decision-client failure whose behaviour is [`FailureBehavior::Fail`].
    pub async fn evaluate<T: Serialize + ?Sized>(
        &self,
        state: &T,
    ) -> Result<Evaluation, DecisionError> {
        self.evaluate_with(state, (COMPLETE_ID, COMPLETE_QUESTION))
            .await
    }

    async fn evaluate_with<T: Serialize + ?Sized>(
        &self,
        state: &T,
        default_question: (&str, &str),
    ) -> Result<Evaluation, DecisionError> {
        let (id, text) = self
            .question
            .as_ref()
            .map_or(default_question, |(id, text)| (id.as_str(), text.as_str()));
        let started = Instant::now();
        let answered = self.ask(state, id, text).await;
        let elapsed = started.elapsed();
        let mut evaluation = Evaluation {
            question_id: id.to_owned(),
            probability: None,
            source: None,
            threshold: self.threshold,
            outcome: EvaluationOutcome::Satisfied,
            usage: Usage::default(),
            elapsed,
        };
        match answered {
            Ok((probability, source, usage)) => {
                evaluation.probability = Some(probability);
                evaluation.source = Some(source);
                evaluation.usage = usage;
                if probability < self.threshold {
                    evaluation.outcome = EvaluationOutcome::NotSatisfied {
                        feedback: feedback(id, text, probability, self.threshold),
                    };
                }
                tracing::debug!(
                    question_id = id,
                    probability,
                    threshold = self.threshold,
                    outcome = if evaluation.is_satisfied() {
                        "satisfied"
                    } else {
                        "not_satisfied"
                    },
                    latency_ms = elapsed.as_millis() as u64,
                    "decision evaluated"
                );
                Ok(evaluation)
            }
            Err(failure) => {
                let behavior = if failure.is_transient() {
                    self.on_transient_failure
                } else {
                    self.on_failure
                };
                tracing::warn!(
                    question_id = id,
                    kind = %failure.kind(),
                    status = failure.status(),
                    transient = failure.is_transient(),
                    behavior = ?behavior,
                    "the decision client failed; applying the failure behaviour"
                );
                evaluation.outcome = match behavior {
                    FailureBehavior::Fail => return Err(failure),
                    FailureBehavior::Retry => EvaluationOutcome::Retry { failure },
                    FailureBehavior::Defer => EvaluationOutcome::Defer { failure },
                };
                Ok(evaluation)
            }
        }
    }

    async fn ask<T: Serialize + ?Sized>(
        &self,
        state: &T,
        id: &str,
        text: &str,
    ) -> Result<(f64, ProbabilitySource, Usage), DecisionError> {
        let mut question = BinaryQuestion::new(id, text)?;
        if let Some(criteria) = &self.criteria {
            question = question.with_criteria(criteria.clone());
        }
        let mut request = DecisionRequest::about(state, [question])?;
        if let Some(model) = &self.model {
            request = request.with_model(model.clone());
        }
        let response = self.client.decide(&request).await?;
        let probability = response
            .binary(id)
            .map(|answer| answer.probability())
            .ok_or_else(|| DecisionError::invalid_response(format!("no answer to `{id}`")))?;
        Ok((probability, response.source(), response.usage()))
    }
}

/// The same words for the same numbers, so that a retry's prompt is reproducible.
fn feedback(id: &str, question: &str, probability: f64, threshold: f64) -> String {
    format!(
        "The decision question `{id}` (\"{question}\") was answered yes with probability {probability:.2}, below the threshold of {threshold:.2}. Re-read the intent and every requirement, and correct the output where it falls short."
    )
}

/// What the gate in front of the judge tells the attempt loop.
pub(crate) enum GateStep {
    /// Ask the generative judge to confirm.
    Judge,
    /// Reject the attempt with this issue; the judge is not asked.
    Rejected(ResultIssue),
    /// The gate could not assess the attempt and its behaviour says to try again: reject
    /// the attempt with this issue, and ask the decision client again no sooner than the
    /// wait its host advised (capped), when it advised one.
    Again(ResultIssue, Option<Duration>),
    /// Stop the call with this issue.
    Stopped(ResultIssue),
}

/// Asks the gate's question about attempt `attempt`'s candidate: the intent, the
/// requirements, the input and the candidate, as data. A wait the decision host advises
/// is capped at `max_wait` (the retry policy's longest delay).
pub(crate) async fn gate(
    evaluator: &DecisionEvaluator,
    plan: &PromptPlan,
    candidate: &str,
    attempt: u32,
    max_wait: Duration,
) -> (GateRecord, GateStep) {
    let state = json!({
        "intent": plan.intent,
        "output_requirements": plan.output_requirements,
        "input": plan.input.text,
        "candidate_output": candidate,
    });
    let evaluated = evaluator
        .evaluate_with(&state, (GATE_ID, GATE_QUESTION))
        .await;
    let failed = |failure: &DecisionError, behavior| GateOutcome::Failed {
        kind: failure.kind(),
        status: failure.status(),
        transient: failure.is_transient(),
        behavior,
    };
    let unassessed = |failure: &DecisionError, then: &str| {
        format!(
            "The decision gate could not assess the output ({}{}, {}); {then}",
            failure.kind(),
            failure
                .status()
                .map(|s| format!(", HTTP {s}"))
                .unwrap_or_default(),
            if failure.is_transient() {
                "transient"
            } else {
                "not transient"
            },
        )
    };
    let id = evaluator
        .question
        .as_ref()
        .map_or(GATE_ID, |(id, _)| id.as_str());
    let mut record = GateRecord {
        question_id: id.to_owned(),
        probability: None,
        threshold: evaluator.threshold,
        outcome: GateOutcome::Passed,
        usage: Usage::default(),
        duration: Duration::ZERO,
    };
    let evaluation = match evaluated {
        Ok(evaluation) => evaluation,
        Err(failure) => {
            record.outcome = failed(&failure, FailureBehavior::Fail);
            let issue = failure.issue(
                IssueSource::Provider,
                unassessed(
                    &failure,
                    "the call stops, as the gate's failure behaviour says.",
                ),
                attempt,
            );
            return (record, GateStep::Stopped(issue));
        }
    };
    record.probability = evaluation.probability;
    record.usage = evaluation.usage;
    record.duration = evaluation.elapsed;
    let step = match evaluation.outcome {
        EvaluationOutcome::Satisfied => GateStep::Judge,
        EvaluationOutcome::NotSatisfied { feedback } => {
            record.outcome = GateOutcome::Rejected;
            GateStep::Rejected(
                ResultIssue::new(IssueSource::Judge, feedback, attempt)
                    .with_detail(IssueDetail::Judge),
            )
        }
        EvaluationOutcome::Retry { failure } => {
            record.outcome = failed(&failure, FailureBehavior::Retry);
            let wait = failure.retry_after().map(|wait| wait.min(max_wait));
            let then = match wait {
                Some(wait) => format!(
                    "the output was not assessed and is asked for again; the decision host is asked again after {} ms, as it advised.",
                    wait.as_millis()
                ),
                None => "the output was not assessed and is asked for again.".to_owned(),
            };
            GateStep::Again(
                failure.issue(IssueSource::Provider, unassessed(&failure, &then), attempt),
                wait,
            )
        }
        EvaluationOutcome::Defer { failure } => {
            record.outcome = failed(&failure, FailureBehavior::Defer);
            GateStep::Judge
        }
    };
    (record, step)
}
