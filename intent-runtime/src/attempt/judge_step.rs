//! The judge's step of an attempt: whether the call's guardrails (model-call ceiling, time
//! budget, rate limiter) leave room to ask, the decision gate in front of the judge, and the
//! judge's call itself. What the judge is asked and what its answer means live in
//! [`crate::judge`].

use std::time::Instant;

use tracing::Instrument;

use super::Loop;
use crate::decision::{self, GateStep};
use crate::judge::{self, JudgeReading, JudgeRequest, render_judge_request};
use crate::prompt::PromptPlan;
use crate::result::AttemptRecord;
use crate::spend::PricedAs;

pub(super) enum JudgeStep {
    Accepted,
    Rejected,
    /// A guardrail stopped the call before or during the judge's call.
    Stopped,
}

/// Asks the judge about an attempt that passed the deterministic checks.
pub(super) async fn judge_attempt(
    state: &mut Loop<'_>,
    plan: &PromptPlan,
    candidate: &str,
    record: &mut AttemptRecord,
) -> JudgeStep {
    let number = record.number;
    let Some(judge) = state.client.judge.clone() else {
        return JudgeStep::Accepted;
    };
    if state.ceiling_reached() {
        record
            .issues
            .push(state.ceiling_issue(number, "the judge could check the reply"));
        return JudgeStep::Stopped;
    }
    // A cheap decision first: only a candidate it finds likely to pass reaches the judge.
    if let Some(gate) = &state.client.decision_gate {
        if let Some(at) = state.gate_not_before.take() {
            // The wait the decision host advised runs from its failure; the attempt's
            // own model call has already spent part of it.
            let advised = Box::pin(tokio::time::sleep_until(at.into()));
            if state.within_budget(advised).await.is_none() {
                let issue =
                    state.budget_issue(number, "while waiting to ask the decision gate again");
                record.issues.push(issue);
                return JudgeStep::Stopped;
            }
        }
        let max_wait = state.client.retry_policy.max_delay;
        let asked = Box::pin(decision::gate(gate, plan, candidate, number, max_wait));
        let Some((gate_record, step)) = state.within_budget(asked).await else {
            let issue = state.budget_issue(number, "while waiting for the decision gate");
            record.issues.push(issue);
            return JudgeStep::Stopped;
        };
        state.count_call(record);
        state.add_usage(record, gate_record.usage, PricedAs::Gate(gate.model()));
        record.gate = Some(gate_record);
        match step {
            GateStep::Judge if state.ceiling_reached() => {
                let issue = state.ceiling_issue(number, "the judge could check the reply");
                record.issues.push(issue);
                return JudgeStep::Stopped;
            }
            GateStep::Judge => {}
            GateStep::Rejected(issue) => {
                record.issues.push(issue);
                return JudgeStep::Rejected;
            }
            GateStep::Again(issue, wait) => {
                record.issues.push(issue);
                if let Some(wait) = wait {
                    if !state.settings.deadline.allows(wait) {
                        let issue = state.budget_issue(
                            number,
                            &format!(
                                "before the decision gate could be asked again (its host asked to wait {} ms)",
                                wait.as_millis()
                            ),
                        );
                        record.issues.push(issue);
                        return JudgeStep::Stopped;
                    }
                    state.gate_not_before = Some(Instant::now() + wait);
                }
                return JudgeStep::Rejected;
            }
            GateStep::Stopped(issue) => {
                record.issues.push(issue);
                return JudgeStep::Stopped;
            }
        }
    }
    if let Some(limiter) = &state.client.rate_limiter {
        let estimated_tokens = (plan.input.text.len() + candidate.len()).div_ceil(4) as u64;
        match state.within_budget(limiter.admit(estimated_tokens)).await {
            None => {
                record
                    .issues
                    .push(state.budget_issue(number, "while waiting for the judge"));
                return JudgeStep::Stopped;
            }
            Some(Err(refused)) => {
                record.issues.push(refused.issue(number));
                return JudgeStep::Stopped;
            }
            Some(Ok(admission)) => record.admitted(admission.by),
        }
    }
    let request = JudgeRequest {
        intent: &plan.intent,
        input: &plan.input.text,
        candidate,
        instructions: plan.system.as_deref(),
        output_requirements: plan.output_requirements.as_deref(),
        model: state.client.judge_model.as_deref(),
    };
    let trace = state
        .trace
        .judge_request(request.model, number, || render_judge_request(&request));
    state.count_call(record);
    let judged = judge.judge(&request).instrument(trace.span().clone());
    let Some(result) = state.within_budget(judged).await else {
        trace.out_of_time();
        record
            .issues
            .push(state.budget_issue(number, "while waiting for the judge"));
        return JudgeStep::Stopped;
    };
    let reading = match result {
        Ok(response) => {
            trace.replied(&response.reply, state.trace.records_content());
            state.add_usage(
                record,
                response.reply.usage,
                PricedAs::Judge(&response.reply.model),
            );
            response.reading
        }
        Err(error) => {
            state.uncount_unsent(record, &error);
            trace.failed(&error);
            JudgeReading::Unreadable(format!("the judge call failed: {error}"))
        }
    };
    let judged = judge::interpret(
        reading,
        number,
        state.client.judge_fail_closed,
        &plan.intent,
    );
    record.judge = Some(judged.record);
    record.issues.extend(judged.issues);
    if judged.accepted {
        JudgeStep::Accepted
    } else {
        JudgeStep::Rejected
    }
}
