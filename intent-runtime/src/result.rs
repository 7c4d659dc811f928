//! What a call returns: the value, every issue found, and every attempt as it happened.
//!
//! There is no confidence score anywhere: a result carries only facts that were checked
//! (DESIGN.md, "Nothing is guessed").

use std::fmt;
use std::time::Duration;

pub use crate::failure::{
    Cause, FailureKind, Guardrail, IssueDetail, NotSent, ProviderFacts, Refusal, SchemaMismatch,
};

/// Where an issue came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueSource {
    /// The provider refused, truncated the reply, or failed (HTTP error, timeout, transport).
    Provider,
    /// The reply was empty, not JSON, a broken envelope, or did not match the target type.
    Verification,
    /// A validator (the caller's or one built from the full schema) rejected the value.
    Validator,
    /// The judge model listed a problem.
    Judge,
    /// A guardrail (model-call ceiling, time budget) stopped the request.
    Guardrail,
    /// The request could not be built (input over the size limit, a schema that cannot be
    /// used); no model was called.
    Input,
}

impl fmt::Display for IssueSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IssueSource::Provider => "provider",
            IssueSource::Verification => "verification",
            IssueSource::Validator => "validator",
            IssueSource::Judge => "judge",
            IssueSource::Guardrail => "guardrail",
            IssueSource::Input => "input",
        })
    }
}

/// One problem found with an attempt: a message worded so that a model (and a person)
/// can act on it, and the typed facts a program reads instead ([`IssueDetail`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ResultIssue {
    /// Which check raised it.
    pub source: IssueSource,
    /// What is wrong and what to do instead.
    pub message: String,
    /// The attempt it belongs to (1-based). Issues raised when the loop stops early carry
    /// the number of the attempt that was not made.
    pub attempt: u32,
    /// The typed facts: the JSON path of a schema mismatch, the validator's name, the
    /// provider failure's kind and status, the guardrail that stopped the call.
    pub detail: IssueDetail,
    /// The error it came from (a [`ProviderError`](crate::provider::ProviderError), an
    /// [`InputError`](crate::input::InputError), a
    /// [`RateLimitError`](crate::limits::RateLimitError)), for `source()` chains.
    #[serde(skip)]
    pub cause: Option<Cause>,
}

impl ResultIssue {
    /// A new issue with no typed facts.
    pub fn new(source: IssueSource, message: impl Into<String>, attempt: u32) -> Self {
        Self {
            source,
            message: message.into(),
            attempt,
            detail: IssueDetail::None,
            cause: None,
        }
    }

    /// The same issue with its typed facts.
    pub fn with_detail(mut self, detail: IssueDetail) -> Self {
        self.detail = detail;
        self
    }

    /// The same issue with the error it came from.
    pub fn with_cause(mut self, cause: Cause) -> Self {
        self.cause = Some(cause);
        self
    }

    /// The kind of failure this issue is, were it the one that ended the call.
    pub fn kind(&self) -> FailureKind {
        match (&self.detail, self.source) {
            (IssueDetail::Refused(_), _) => FailureKind::Refused,
            (IssueDetail::Truncated { .. }, _) => FailureKind::Truncated,
            (IssueDetail::Provider(facts), _) => FailureKind::of_provider(facts.kind, facts.sent),
            (IssueDetail::NotSent(_), _) => FailureKind::NotSent,
            (IssueDetail::Decision { kind, .. }, _) => *kind,
            (IssueDetail::Guardrail(_), _) => FailureKind::Guardrail,
            (IssueDetail::SharedStateUnavailable { .. }, _) => FailureKind::SharedStateUnavailable,
            (_, IssueSource::Provider) => FailureKind::Unavailable,
            (_, IssueSource::Verification | IssueSource::Validator) => {
                FailureKind::VerificationExhausted
            }
            (_, IssueSource::Judge) => FailureKind::JudgeRejected,
            (_, IssueSource::Guardrail) => FailureKind::Guardrail,
            (_, IssueSource::Input) => FailureKind::NotSent,
        }
    }
}

impl fmt::Display for ResultIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{} issue, attempt {}] {}",
            self.source, self.attempt, self.message
        )
    }
}

/// A change the lenient parser made to a reply before reading it. Recorded on the
/// attempt so that no repair is silent.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Repair {
    /// A surrounding Markdown code fence was removed.
    FenceStripped,
    /// Comments were skipped.
    CommentsSkipped,
    /// Trailing commas were skipped.
    TrailingCommasSkipped,
    /// The reply was not JSON but was read as a bare primitive (number, bool, enum member).
    BarePrimitive,
    /// The reply was the bare value, without the `{"value": ...}` envelope.
    MissingEnvelope,
    /// The reply held prose around its answer and answer recovery was on: the one JSON
    /// answer in it (a fenced block, or an object or array in the text) was read.
    JsonExtractedFromProse,
    /// A property name was matched to the schema's name ignoring case.
    KeyCaseChanged {
        /// The JSON pointer of the object holding the key.
        path: String,
        /// The name the model wrote.
        from: String,
        /// The name the schema declares.
        to: String,
    },
    /// A number was read from a string where the schema wants a number.
    NumberFromString {
        /// The JSON pointer of the value.
        path: String,
    },
    /// An enum member was matched to the schema's member ignoring case (providers such
    /// as Anthropic do not guarantee the capitalisation of a member).
    EnumCaseChanged {
        /// The JSON pointer of the value.
        path: String,
        /// The member as the model wrote it.
        from: String,
        /// The member the schema declares.
        to: String,
    },
}

/// Tokens used by one or more model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    /// Input (prompt) tokens.
    pub input_tokens: u64,
    /// Output (completion) tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache, billed at its cached rate
    /// (OpenAI's `prompt_tokens_details.cached_tokens`, Anthropic's
    /// `cache_read_input_tokens`); part of `input_tokens`.
    pub cached_input_tokens: u64,
    /// Input tokens written to the provider's prompt cache (Anthropic's
    /// `cache_creation_input_tokens`, billed above the normal rate); part of
    /// `input_tokens`. OpenAI reports none: its cache writes cost nothing extra.
    pub cache_write_input_tokens: u64,
    /// Output tokens the model spent reasoning (thinking) before its answer, never shown:
    /// OpenAI's `completion_tokens_details.reasoning_tokens`, the Responses API's
    /// `output_tokens_details.reasoning_tokens`, Gemini's `thoughtsTokenCount`; part of
    /// `output_tokens`, as they are billed as output. Anthropic reports none apart.
    pub reasoning_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.cached_input_tokens += rhs.cached_input_tokens;
        self.cache_write_input_tokens += rhs.cache_write_input_tokens;
        self.reasoning_tokens += rhs.reasoning_tokens;
    }
}

impl std::ops::Add for Usage {
    type Output = Usage;
    fn add(mut self, rhs: Self) -> Usage {
        self += rhs;
        self
    }
}

/// What the judge said about one attempt.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum JudgeRecord {
    /// The judge gave a verdict.
    Verdict {
        /// Whether the candidate passed.
        passes: bool,
        /// The problems it listed.
        problems: Vec<String>,
    },
    /// The judge's reply could not be read, so the attempt was accepted without a
    /// verdict (fail-open, the default) or rejected (fail-closed).
    Missing {
        /// Why there is no verdict.
        reason: String,
        /// Whether the attempt was accepted anyway.
        accepted: bool,
    },
}

// The decision module's failure behaviour lives here, below it, because the gate's record
// names it; `decision` re-exports it.

/// What to do when the decision client fails. A failure is never read as "not
/// satisfied": the answer is missing, not negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureBehavior {
    /// Return the error: an evaluator's `evaluate` fails, the gate fails the call.
    #[default]
    Fail,
    /// Try again: the caller's loop makes another iteration, the gate makes another
    /// attempt (the output was not assessed) and asks its decision client again no
    /// sooner than the wait the host advised (`retry-after`), when it advised one.
    Retry,
    /// Leave the verdict to whatever comes next: the gate hands the candidate to the
    /// generative judge.
    Defer,
}

/// What the decision gate in front of the judge decided about one attempt.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GateRecord {
    /// The id of the yes/no question asked.
    pub question_id: String,
    /// The probability of yes, when the decision client answered.
    pub probability: Option<f64>,
    /// The threshold it was compared with.
    pub threshold: f64,
    /// What the gate did.
    pub outcome: GateOutcome,
    /// Tokens the decision used.
    pub usage: Usage,
    /// How long the decision took.
    pub duration: Duration,
}

/// What the decision gate did with an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum GateOutcome {
    /// The probability reached the threshold: the generative judge was asked to confirm.
    Passed,
    /// The probability fell short: the attempt was rejected without asking the judge.
    Rejected,
    /// The decision client failed, and this behaviour was applied (never read as a
    /// rejection).
    Failed {
        /// The failure's kind.
        kind: FailureKind,
        /// The HTTP status, when there was one.
        status: Option<u16>,
        /// Whether the failure was transient.
        transient: bool,
        /// What was done about it.
        behavior: FailureBehavior,
    },
}

/// How the rate limiter admitted an attempt's requests.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum LimiterUse {
    /// This process's limiter, as configured.
    Local,
    /// The quota shared by the fleet in Redis.
    Shared,
    /// The shared quota could not be reached and the limiter fails open: this process's
    /// own limiter with the same quota admitted the request, so the fleet together may
    /// have gone past the quota.
    LocalFallback {
        /// What failed.
        reason: String,
    },
}

/// What the response cache did for an attempt that could be served from it (a first
/// attempt).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum CacheUse {
    /// The reply came from the cache.
    Hit,
    /// Nothing was cached for the request: the model was asked.
    Miss,
    /// The cache's store (a shared Redis) could not be reached: the call went on without
    /// the cache.
    Unavailable {
        /// What failed.
        reason: String,
    },
}

/// One attempt: the request's reply exactly as it came, and what was found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AttemptRecord {
    /// 1-based attempt number.
    pub number: u32,
    /// The reply text as the model sent it (empty when the provider failed).
    pub raw_output: String,
    /// The issues found with this attempt.
    pub issues: Vec<ResultIssue>,
    /// The repairs the parser made before reading the reply.
    pub repairs: Vec<Repair>,
    /// The judge's verdict, when the judge ran.
    pub judge: Option<JudgeRecord>,
    /// The decision gate's decision, when a gate ran before the judge.
    pub gate: Option<GateRecord>,
    /// Tokens used by this attempt, judge call included.
    pub usage: Usage,
    /// Model calls made by this attempt (the primary call, plus the judge's).
    pub model_calls: u32,
    /// Transient provider failures retried inside this attempt, with their messages.
    pub provider_retries: Vec<String>,
    /// Wall time of the attempt.
    pub duration: Duration,
    /// The model that answered, as the provider named it.
    pub model: String,
    /// Whether the reply was served from the response cache.
    pub cached: bool,
    /// What the response cache did, when the client has one and the attempt could be
    /// served from it.
    pub cache: Option<CacheUse>,
    /// How the rate limiter admitted this attempt's requests, when the client has one: a
    /// fallback to the local limiter on any of them is kept.
    pub limiter: Option<LimiterUse>,
    /// Whether the reply was replayed from a cassette rather than asked of a model.
    pub replayed: bool,
    /// What the attempt's model calls cost, each priced on the model that answered it
    /// (see the [`pricing`](crate::pricing) module).
    pub cost: crate::cost::CostTally,
    /// Which member of a fallback chain answered, and why earlier ones were passed over.
    pub route: Option<crate::route::Route>,
}

impl AttemptRecord {
    /// An empty record for attempt `number`.
    pub fn new(number: u32) -> Self {
        Self {
            number,
            raw_output: String::new(),
            issues: Vec::new(),
            repairs: Vec::new(),
            judge: None,
            gate: None,
            usage: Usage::default(),
            model_calls: 0,
            provider_retries: Vec::new(),
            duration: Duration::ZERO,
            model: String::new(),
            cached: false,
            cache: None,
            limiter: None,
            replayed: false,
            cost: crate::cost::CostTally::default(),
            route: None,
        }
    }

    /// Notes how the limiter admitted one of the attempt's requests; a fallback, once
    /// recorded, stays.
    pub(crate) fn admitted(&mut self, by: LimiterUse) {
        if !matches!(self.limiter, Some(LimiterUse::LocalFallback { .. })) {
            self.limiter = Some(by);
        }
    }

    /// Why shared state (the fleet's quota or cache) was not used for this attempt, when
    /// it fell back to this process's own.
    pub fn fallback(&self) -> Option<&str> {
        match (&self.limiter, &self.cache) {
            (Some(LimiterUse::LocalFallback { reason }), _) => Some(reason),
            (_, Some(CacheUse::Unavailable { reason })) => Some(reason),
            _ => None,
        }
    }
}

/// The whole record of one call: the value when it succeeded, and every fact checked.
#[derive(Debug, Clone)]
pub struct AIResult<T> {
    /// The value; present exactly when the call succeeded.
    pub value: Option<T>,
    /// Every issue from every attempt, plus those raised when the loop stopped.
    pub issues: Vec<ResultIssue>,
    /// Every attempt, in order.
    pub attempts: Vec<AttemptRecord>,
    /// Tokens used by all attempts and judge calls.
    pub usage: Usage,
    /// Wall time of the whole call.
    pub elapsed: Duration,
}

impl<T> AIResult<T> {
    /// Whether the call produced a value that passed every check.
    pub fn is_success(&self) -> bool {
        self.value.is_some()
    }

    /// Whether any attempt ran without the shared state it was configured with: the
    /// fleet's quota in Redis (admitted by this process's limiter instead) or its cache.
    /// Each attempt's [`limiter`](AttemptRecord::limiter) and
    /// [`cache`](AttemptRecord::cache) say which, and why.
    pub fn used_local_fallback(&self) -> bool {
        self.attempts
            .iter()
            .any(|attempt| attempt.fallback().is_some())
    }

    /// Total model calls made, judge calls included.
    pub fn model_calls(&self) -> u32 {
        self.attempts.iter().map(|a| a.model_calls).sum()
    }

    /// Maps the value, keeping the record.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> AIResult<U> {
        AIResult {
            value: self.value.map(f),
            issues: self.issues,
            attempts: self.attempts,
            usage: self.usage,
            elapsed: self.elapsed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(messages: &[&str]) -> AIResult<u8> {
        AIResult {
            value: None,
            issues: messages
                .iter()
                .map(|m| ResultIssue::new(IssueSource::Verification, *m, 1))
                .collect(),
            attempts: vec![],
            usage: Usage::default(),
            elapsed: Duration::ZERO,
        }
    }

    #[test]
    fn a_successful_call_has_no_failure_summary() {
        let mut result = failed(&["b broke"]);
        result.value = Some(1);
        assert_eq!(result.failure_summary(), "");
    }

    #[test]
    fn usage_adds_field_by_field() {
        let a = Usage {
            input_tokens: 1,
            output_tokens: 2,
            cached_input_tokens: 3,
            cache_write_input_tokens: 4,
            reasoning_tokens: 5,
        };
        assert_eq!(
            a + a,
            Usage {
                input_tokens: 2,
                output_tokens: 4,
                cached_input_tokens: 6,
                cache_write_input_tokens: 8,
                reasoning_tokens: 10,
            }
        );
    }
}
