//! The attempt loop: render the prompt, call the provider, verify, ask the judge, feed
//! every problem back, and stop on success, on the attempt limit, or at a guardrail.

mod judge_step;

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tracing::Instrument;

use self::judge_step::{JudgeStep, judge_attempt};
use crate::cache::CacheKey;
use crate::limits::Deadline;
use crate::prompt::{PromptPlan, first_request, retry_turns};
use crate::provider::ReplyPiece;
use crate::provider::{DEFAULT_SCHEMA_NAME, ProviderError, ProviderReply, ProviderRequest};
use crate::result::{
    AIResult, AttemptRecord, CacheUse, Guardrail, IssueDetail, IssueSource, NotSent, ResultIssue,
    Usage,
};
use crate::shared::ClientInner;
use crate::spend::PricedAs;
use crate::stream::{AttemptEvent, EventSink};
use crate::telemetry::{CallTrace, ModelRequest, RequestKind};
use crate::verify::Verification;

/// The settings of one call, resolved from the client's and the call's options.
#[derive(Debug, Clone)]
pub(crate) struct CallSettings {
    pub max_attempts: u32,
    pub max_model_calls: Option<u32>,
    pub max_cost: Option<crate::cost::Cost>,
    pub deadline: Deadline,
    pub use_judge: bool,
    pub model: Option<String>,
    pub temperature: Option<f32>,
    pub max_output_tokens: Option<u32>,
    /// The generated method's name, for telemetry (`None` for `transform`).
    pub method: Option<Cow<'static, str>>,
    /// The target type's name, for telemetry.
    pub target_type: &'static str,
}

/// Why a provider call produced no reply.
enum CallFailure {
    Provider(ProviderError),
    /// The time budget ran out while waiting (for the provider, a backoff or the limiter).
    Budget,
    /// The rate limiter would not admit the request (its shared quota is unreachable and
    /// it fails closed): nothing was sent, and it is not retried.
    Refused(crate::limits::RateLimitError),
}

/// The running state of one call.
struct Loop<'a> {
    client: &'a ClientInner,
    settings: &'a CallSettings,
    trace: &'a CallTrace<'a>,
    model_calls: u32,
    /// Set for a streamed call: model requests stream, and their text and restarts are
    /// told here as they happen.
    events: Option<&'a EventSink>,
    /// When the decision gate may be asked again: its host asked to wait (a 429's
    /// `retry-after`) before a failure whose behaviour is to retry.
    gate_not_before: Option<Instant>,
}

impl Loop<'_> {
    fn ceiling_reached(&self) -> bool {
        self.settings
            .max_model_calls
            .is_some_and(|max| self.model_calls >= max)
    }

    fn ceiling_issue(&self, attempt: u32, what: &str) -> ResultIssue {
        ResultIssue::new(
            IssueSource::Guardrail,
            format!(
                "Stopped: the model-call ceiling of {} was reached before {what}.",
                self.settings.max_model_calls.unwrap_or_default()
            ),
            attempt,
        )
        .with_detail(IssueDetail::Guardrail(Guardrail::ModelCalls {
            ceiling: self.settings.max_model_calls.unwrap_or_default(),
        }))
    }

    fn budget_issue(&self, attempt: u32, what: &str) -> ResultIssue {
        let budget = self.settings.deadline.budget().unwrap_or_default();
        ResultIssue::new(
            IssueSource::Guardrail,
            format!(
                "Stopped: the time budget of {} ms ran out {what}.",
                budget.as_millis()
            ),
            attempt,
        )
        .with_detail(IssueDetail::Guardrail(Guardrail::TimeBudget { budget }))
    }

    /// Counts a model call as its request goes out, before the reply is awaited: a call
    /// cut by the time budget, or dropped by its caller, was still sent and billed.
    fn count_call(&mut self, record: &mut AttemptRecord) {
        self.model_calls += 1;
        record.model_calls += 1;
        self.client
            .totals
            .model_calls
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Takes back the count of a request the provider says never went out.
    fn uncount_unsent(&mut self, record: &mut AttemptRecord, error: &ProviderError) {
        if error.request_sent() {
            return;
        }
        self.model_calls -= 1;
        record.model_calls -= 1;
        self.client
            .totals
            .model_calls
            .fetch_sub(1, Ordering::Relaxed);
    }

    /// Adds one model call's tokens, and its cost on the model that answered it.
    fn add_usage(&self, record: &mut AttemptRecord, usage: Usage, call: PricedAs<'_>) {
        record.usage += usage;
        self.client.totals.add(usage);
        let requested = requested_model(self.client, self.settings);
        crate::spend::price_call(self.client, requested, record, &usage, call);
    }

    /// Runs `future` within the call's time budget.
    ///
    /// The timer is boxed: it is as large as the rest of a call's state, which every
    /// caller that spawns or boxes a call allocates whole.
    async fn within_budget<F: Future>(&self, future: F) -> Option<F::Output> {
        match self.settings.deadline.instant() {
            None => Some(future.await),
            Some(at) => Box::pin(tokio::time::timeout_at(at.into(), future))
                .await
                .ok(),
        }
    }

    /// One model call in its own span (see [`Loop::call_with_retries`]).
    async fn call(
        &mut self,
        request: &ProviderRequest,
        record: &mut AttemptRecord,
    ) -> Result<ProviderReply, CallFailure> {
        let trace = self
            .trace
            .model_request(RequestKind::Answer, request, record.number);
        let span = trace.span().clone();
        let result = self
            .call_with_retries(request, record, &trace)
            .instrument(span)
            .await;
        match &result {
            Ok(reply) => trace.replied(reply, self.trace.records_content()),
            Err(CallFailure::Provider(error)) => trace.failed(error),
            Err(CallFailure::Budget) => trace.out_of_time(),
            Err(CallFailure::Refused(_)) => trace.refused_by_limiter(),
        }
        result
    }

    /// One model call through the rate limiter, retrying transient failures with backoff
    /// inside the budget; every retry is noted on the record.
    async fn call_with_retries(
        &mut self,
        request: &ProviderRequest,
        record: &mut AttemptRecord,
        trace: &ModelRequest<'_>,
    ) -> Result<ProviderReply, CallFailure> {
        let mut retries = 0;
        loop {
            let estimated_tokens = request.prompt_len().div_ceil(4) as u64;
            if let Some(limiter) = &self.client.rate_limiter {
                // Boxed, as the timer above: only calls through a limiter carry its state.
                let admission = self
                    .within_budget(Box::pin(limiter.admit(estimated_tokens)))
                    .await
                    .ok_or(CallFailure::Budget)?
                    .map_err(CallFailure::Refused)?;
                record.admitted(admission.by);
            }
            self.count_call(record);
            let result = match self.events {
                None => {
                    self.within_budget(self.client.provider.complete(request))
                        .await
                }
                Some(events) => {
                    let streamed = self.stream_reply(request, events, record.number);
                    self.within_budget(streamed).await
                }
            }
            .ok_or(CallFailure::Budget)?;
            let error = match result {
                Ok(reply) => {
                    if let Some(limiter) = &self.client.rate_limiter {
                        let used = reply.usage.input_tokens + reply.usage.output_tokens;
                        limiter.settle(estimated_tokens, used).await;
                    }
                    return Ok(reply);
                }
                Err(error) => error,
            };
            self.uncount_unsent(record, &error);
            let policy = &self.client.retry_policy;
            if !error.is_transient() || retries >= policy.max_retries || self.ceiling_reached() {
                return Err(CallFailure::Provider(error));
            }
            retries += 1;
            let wait = policy.delay(retries, &error);
            if !self.settings.deadline.allows(wait) {
                return Err(CallFailure::Provider(error));
            }
            trace.retrying(&error, wait, retries);
            if let Some(events) = self.events {
                // Whatever the failed request streamed is void.
                let problem = error.issue(record.number);
                let _ = events.send(AttemptEvent::Restart {
                    attempt: record.number,
                    problems: vec![problem],
                });
            }
            record
                .provider_retries
                .push(format!("{error} (retried after {} ms)", wait.as_millis()));
            Box::pin(tokio::time::sleep(wait)).await;
        }
    }
}

impl Loop<'_> {
    /// One streamed model request: its text is passed on piece by piece, and the
    /// finished reply returned as `complete` would return it. A stream that ends before
    /// the reply is finished was cut: a transport failure, as a dropped connection is.
    async fn stream_reply(
        &self,
        request: &ProviderRequest,
        events: &EventSink,
        attempt: u32,
    ) -> Result<ProviderReply, ProviderError> {
        use std::task::Poll;

        use futures_util::StreamExt;

        let provider = &self.client.provider;
        let mut pieces = provider.stream(request).await?;
        // Pieces that are already there when one arrives (several events in one read) go
        // on as one: a reader cannot show them apart, and each event costs a partial.
        // What has arrived is passed on when the stream has nothing more for now, and
        // the task then waits for the stream's wake-up like any other.
        let mut ready = String::new();
        loop {
            let piece = std::future::poll_fn(|cx| match pieces.poll_next_unpin(cx) {
                Poll::Pending => {
                    send_text(events, attempt, &mut ready);
                    Poll::Pending
                }
                arrived => arrived,
            })
            .await;
            match piece {
                Some(Ok(ReplyPiece::Text(piece))) if ready.is_empty() => ready = piece,
                Some(Ok(ReplyPiece::Text(piece))) => ready.push_str(&piece),
                Some(Ok(ReplyPiece::Finished(reply))) => {
                    send_text(events, attempt, &mut ready);
                    return Ok(reply);
                }
                Some(Err(error)) => return Err(error),
                None => {
                    return Err(ProviderError::new(
                        crate::provider::ProviderErrorKind::Transport,
                        provider.name(),
                        "the reply stream ended before the reply was complete",
                    ));
                }
            }
        }
    }
}

/// Passes `text` on (and empties it). A stream dropped by its caller drops this call too:
/// a refused event only means the caller stopped listening.
fn send_text(events: &EventSink, attempt: u32, text: &mut String) {
    if !text.is_empty() {
        let piece = std::mem::take(text);
        let _ = events.send(AttemptEvent::Text { attempt, piece });
    }
}

/// The model a call asks for: its own setting, else the provider's default.
fn requested_model<'a>(client: &'a ClientInner, settings: &'a CallSettings) -> &'a str {
    settings
        .model
        .as_deref()
        .unwrap_or_else(|| client.provider.default_model())
}

/// Why a call cannot be sent at all (an empty intent, an empty model name), so that it
/// fails before any model call rather than sending something no model can act on.
fn refusal_before_sending(
    client: &ClientInner,
    plan: &PromptPlan,
    settings: &CallSettings,
) -> Option<String> {
    if plan.intent.trim().is_empty() {
        return Some(
            "The intent is empty: say in plain words what the model should do; nothing was sent."
                .to_owned(),
        );
    }
    // Only media parameters, all empty (`Vec::new()`, `None`): the model would get a turn
    // with nothing in it, which some APIs refuse and none can answer.
    if !plan.input.has_text() && plan.input.media.is_empty() {
        return Some(
            "The call has no input: its images and documents are all empty (an empty list or \
             `None`) and it has no other input; pass at least one, or skip the call; nothing \
             was sent."
                .to_owned(),
        );
    }
    if requested_model(client, settings).trim().is_empty() {
        return Some(format!(
            "The model name is empty: name a model in the call's options, on the client, or as \
             the `{}` provider's default; nothing was sent.",
            client.provider.name()
        ));
    }
    None
}

/// Runs the attempt loop for one call, in the call's span. `verify` checks a reply for
/// attempt `n`.
/// `events` is set for a streamed call (see [`crate::stream`]).
pub(crate) async fn run_attempts<T, V>(
    client: &ClientInner,
    plan: PromptPlan,
    settings: &CallSettings,
    events: Option<&EventSink>,
    verify: V,
) -> AIResult<T>
where
    T: Send,
    V: Fn(&ProviderReply, u32) -> Verification<T> + Send + Sync,
{
    let model = requested_model(client, settings);
    let trace = CallTrace::start(
        &client.telemetry,
        settings.method.as_deref(),
        settings.target_type,
        model,
    );
    trace.media_inputs(&plan.input.media);
    let span = trace.span().clone();
    let result = attempt_loop(client, plan, settings, events, verify, &trace)
        .instrument(span)
        .await;
    trace.finish(&result);
    result
}

async fn attempt_loop<T, V>(
    client: &ClientInner,
    mut plan: PromptPlan,
    settings: &CallSettings,
    events: Option<&EventSink>,
    verify: V,
    trace: &CallTrace<'_>,
) -> AIResult<T>
where
    T: Send,
    V: Fn(&ProviderReply, u32) -> Verification<T> + Send + Sync,
{
    let started = Instant::now();
    if let Some(reason) = refusal_before_sending(client, &plan, settings) {
        return AIResult {
            value: None,
            issues: vec![
                ResultIssue::new(IssueSource::Input, reason, 1)
                    .with_detail(IssueDetail::NotSent(NotSent::InvalidInput)),
            ],
            attempts: Vec::new(),
            usage: Usage::default(),
            elapsed: started.elapsed(),
        };
    }
    let mut state = Loop {
        client,
        settings,
        trace,
        model_calls: 0,
        events,
        gate_not_before: None,
    };
    let mut attempts: Vec<AttemptRecord> = Vec::new();
    let mut issues: Vec<ResultIssue> = Vec::new();
    let mut value = None;
    let mut first_key: Option<CacheKey> = None;
    // Every attempt sends the same request but for its conversation. The provider is asked
    // before the first render whether it shows and enforces the schema: once per call, and
    // the prompt never describes the type when it does.
    let mut request = ProviderRequest {
        system: String::new(),
        messages: Vec::new(),
        response_format: plan.response_format(),
        schema: plan.schema(),
        schema_name: DEFAULT_SCHEMA_NAME.to_owned(),
        model: settings.model.clone(),
        max_output_tokens: settings.max_output_tokens,
        temperature: settings.temperature,
        top_logprobs: None,
        minimal_thinking: false,
    };
    plan.schema_enforced = request.schema.is_some() && client.provider.enforces_schema(&request);

    for number in 1..=settings.max_attempts.max(1) {
        if state.ceiling_reached() {
            issues.push(state.ceiling_issue(number, &format!("attempt {number}")));
            break;
        }
        if settings.deadline.expired() {
            issues.push(state.budget_issue(number, &format!("before attempt {number}")));
            break;
        }
        if let (Some(events), Some(previous)) = (events, attempts.last()) {
            // The stream's reader discards the reply it showed and starts again.
            let _ = events.send(AttemptEvent::Restart {
                attempt: number,
                problems: previous.issues.clone(),
            });
        }
        let attempt_started = Instant::now();
        let mut record = AttemptRecord::new(number);
        // The first request is rendered once; a retry appends the previous reply and its
        // problems, so every earlier turn goes out again byte for byte and the provider's
        // prompt cache can serve it.
        match attempts.last() {
            None => {
                let prompt = first_request(&plan);
                request.system = prompt.system;
                request.messages = prompt.messages;
            }
            Some(previous) => {
                if let Some(turns) = retry_turns(previous) {
                    request.messages.extend(turns);
                }
            }
        }

        // Only a first attempt may be served from the cache: a retry's request carries the
        // previous failure, and asking again is the point of it.
        let cache_key = match (&client.cache, number) {
            (Some(_), 1) => Some(CacheKey::of(&request, requested_model(client, settings))),
            _ => None,
        };
        let cached = match (cache_key, &client.cache) {
            (Some(key), Some(cache)) => match cache.lookup(&key).await {
                Ok(Some(reply)) => {
                    record.cache = Some(CacheUse::Hit);
                    Some(reply)
                }
                Ok(None) => {
                    record.cache = Some(CacheUse::Miss);
                    None
                }
                Err(unavailable) => {
                    record.cache = Some(CacheUse::Unavailable {
                        reason: unavailable.reason,
                    });
                    None
                }
            },
            _ => None,
        };
        // The key the call's answer is stored under: the first request's.
        if cache_key.is_some() {
            first_key = cache_key;
        }
        // The money budget: an attempt the cache does not serve is sent only if what the
        // call spent plus the most it may cost stays within it.
        if cached.is_none()
            && let Some(refused) = crate::spend::budget_refusal(
                client,
                settings.max_cost,
                requested_model(client, settings),
                &attempts,
                &request,
                number,
            )
        {
            issues.push(refused);
            break;
        }
        let reply = match cached {
            Some(reply) => {
                record.cached = true;
                Ok(reply)
            }
            None => state.call(&request, &mut record).await,
        };

        let stop = match reply {
            Err(CallFailure::Provider(error)) => {
                record.issues.push(error.issue(number));
                true
            }
            Err(CallFailure::Budget) => {
                record
                    .issues
                    .push(state.budget_issue(number, "while waiting for the provider"));
                true
            }
            Err(CallFailure::Refused(refused)) => {
                record.issues.push(refused.issue(number));
                true
            }
            Ok(mut reply) => {
                if !record.cached {
                    state.add_usage(&mut record, reply.usage, PricedAs::Answer(&reply.model));
                }
                record.replayed = reply.replayed;
                // Fallback members sent the request before the one that answered were
                // model calls too.
                if let Some(route) = reply.route.take() {
                    (0..route.sent_before()).for_each(|_| state.count_call(&mut record));
                    record.route = Some(*route);
                }
                let verification = verify(&reply, number);
                let passed = verification.passed();
                trace.verified(number, passed, &verification.issues, &verification.repairs);
                record.issues = verification.issues;
                record.repairs = verification.repairs;
                let mut candidate = if passed { verification.value } else { None };
                // An input issue (a schema that cannot be compiled) is not the model's
                // doing: asking again cannot fix it.
                let mut stop = record.issues.iter().any(|i| i.source == IssueSource::Input);
                if candidate.is_some() && settings.use_judge {
                    // Boxed: only judged calls carry the judge's state.
                    let judged =
                        Box::pin(judge_attempt(&mut state, &plan, &reply.text, &mut record));
                    let step = judged.await;
                    if let Some(verdict) = &record.judge {
                        trace.judged(number, verdict);
                    }
                    match step {
                        JudgeStep::Accepted => {}
                        JudgeStep::Rejected => candidate = None,
                        JudgeStep::Stopped => {
                            candidate = None;
                            stop = true;
                        }
                    }
                }
                // The reply's text and model move into the record; they are copied only
                // when the cache keeps the reply too (a 2 KB reply is worth not copying).
                // The cache holds, under the first request's key, the reply that passed:
                // a first reply that passes, or the answer of a later attempt whose first
                // reply (cached or not) failed. A cached reply that failed its checks is
                // removed at once, so that the next call does not meet it again.
                let cache_it = candidate.is_some() && !record.cached;
                match (first_key, &client.cache) {
                    (Some(key), Some(cache)) if cache_it => {
                        record.raw_output.clone_from(&reply.text);
                        record.model.clone_from(&reply.model);
                        if let Err(unavailable) = cache.store(key, reply).await {
                            record.cache = Some(CacheUse::Unavailable {
                                reason: unavailable.reason,
                            });
                        }
                    }
                    // A guardrail that stopped the judge said nothing against the reply.
                    (Some(key), Some(cache)) if record.cached && candidate.is_none() && !stop => {
                        record.raw_output = reply.text;
                        record.model = reply.model;
                        if let Err(unavailable) = cache.evict(&key).await {
                            record.cache = Some(CacheUse::Unavailable {
                                reason: unavailable.reason,
                            });
                        }
                    }
                    _ => {
                        record.raw_output = reply.text;
                        record.model = reply.model;
                    }
                }
                // A reply that names no model came from the one asked for.
                if record.model.is_empty() {
                    record.model = requested_model(client, settings).to_owned();
                }
                if candidate.is_some() {
                    value = candidate;
                }
                stop
            }
        };
        record.duration = attempt_started.elapsed();
        trace.attempt_finished(&record, value.is_some());
        issues.extend(record.issues.iter().cloned());
        attempts.push(record);
        if value.is_some() || stop {
            break;
        }
    }

    let usage = attempts
        .iter()
        .fold(Usage::default(), |sum, a| sum + a.usage);
    AIResult {
        value,
        issues,
        attempts,
        usage,
        elapsed: started.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;

    use crate::input::describe_target;
    use crate::provider::{
        Message, ProviderReply, ProviderRequest, ResponseFormat, Role, ScriptedProvider,
        ScriptedReply,
    };
    use crate::result::Usage;
    use crate::schema::target_schema;
    use crate::{IntentClient, IntentOptions};

    /// A contact card.
    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    struct Contact {
        /// Full name.
        name: String,
        /// Age in years.
        age: u32,
    }

    /// The requests a `Contact` call sends when the first reply misses a field.
    async fn contact_call_requests(provider: ScriptedProvider) -> Vec<ProviderRequest> {
        let client = IntentClient::builder()
            .provider(provider.clone())
            .build()
            .unwrap();
        let result = client
            .transform(
                "Ann, 41",
                "Extract the contact.",
                IntentOptions::<Contact>::new(),
            )
            .await;
        assert_eq!(
            result.value,
            Some(Contact {
                name: "Ann".to_owned(),
                age: 41
            })
        );
        let requests = provider.requests();
        assert!(requests.iter().all(|request| {
            request.response_format == ResponseFormat::JsonSchema && request.schema.is_some()
        }));
        assert_eq!(requests.len(), 2);
        requests
    }

    const REPLIES: [&str; 2] = [
        r#"{"value": {"name": "Ann"}}"#,
        r#"{"value": {"name": "Ann", "age": 41}}"#,
    ];

    /// The retry sends the first request's turns unchanged, then the reply and the problems.
    fn assert_retry_continues(requests: &[ProviderRequest]) {
        let [first, retry] = requests else {
            panic!("two requests expected")
        };
        assert_eq!(retry.system, first.system);
        assert_eq!(retry.messages[..1], first.messages[..]);
        assert_eq!(retry.messages[1], Message::assistant(REPLIES[0]));
        assert_eq!(retry.messages[2].role, Role::User);
        assert!(
            retry.messages[2].content.contains("field `age` is missing"),
            "{}",
            retry.messages[2].content
        );
        assert_eq!(retry.messages.len(), 3);
    }

    #[tokio::test]
    async fn a_provider_that_enforces_the_schema_gets_the_lean_layout_on_every_attempt() {
        let provider = ScriptedProvider::new(REPLIES).with_schema_enforced(true);
        let requests = contact_call_requests(provider).await;
        assert_eq!(requests[0].system, "Extract the contact.");
        assert_eq!(requests[0].messages, [Message::user("Ann, 41")]);
        assert_retry_continues(&requests);
        let description = describe_target(&target_schema::<Contact>().unwrap());
        for request in &requests {
            assert!(!request.system.contains(&description));
            assert!(request.messages.iter().all(|m| !m.content.contains("## ")));
        }
    }

    #[tokio::test]
    async fn a_provider_that_does_not_enforce_the_schema_gets_the_type_described() {
        let requests = contact_call_requests(ScriptedProvider::new(REPLIES)).await;
        let description = describe_target(&target_schema::<Contact>().unwrap());
        let contract = format!(
            "## Output requirements\nReply with one JSON object {{\"value\": <result>}}.\n<result>: {description}"
        );
        assert_eq!(
            requests[0].user(),
            format!("## Intent\nExtract the contact.\n\n## Input (String)\nAnn, 41\n\n{contract}")
        );
        assert_retry_continues(&requests);
    }

    const REPLY: &str = r#"{"value": 3}"#;

    #[tokio::test]
    async fn cached_and_cache_written_tokens_add_up_in_the_record_and_the_totals() {
        let reply = |text: &str, cached: u64, written: u64| {
            ScriptedReply::Reply(ProviderReply {
                text: text.to_owned(),
                usage: Usage {
                    input_tokens: 100,
                    output_tokens: 5,
                    cached_input_tokens: cached,
                    cache_write_input_tokens: written,
                    reasoning_tokens: 2,
                },
                ..ProviderReply::default()
            })
        };
        let provider = ScriptedProvider::new([
            reply("not json", 0, 60),
            reply(REPLY, 60, 10),
            reply(REPLY, 70, 0),
        ]);
        let client = IntentClient::builder().provider(provider).build().unwrap();
        let options = || IntentOptions::<u32>::new();
        let first = client
            .transform("a b c", "Count the words", options())
            .await;
        assert_eq!(first.value, Some(3));
        assert_eq!(first.usage.cached_input_tokens, 60);
        assert_eq!(first.usage.cache_write_input_tokens, 70);
        assert_eq!(first.usage.reasoning_tokens, 4);
        let second = client
            .transform("a b c", "Count the words", options())
            .await;
        assert_eq!(second.usage.cached_input_tokens, 70);
        let totals = client.total_usage();
        assert_eq!(totals.input_tokens, 300);
        assert_eq!(totals.output_tokens, 15);
        assert_eq!(totals.cached_input_tokens, 130);
        assert_eq!(totals.cache_write_input_tokens, 70);
        assert_eq!(totals.reasoning_tokens, 6);
    }

    #[tokio::test]
    async fn the_record_keeps_the_raw_reply_and_the_model_with_or_without_a_cache() {
        for cached in [false, true] {
            let provider = ScriptedProvider::new([REPLY, REPLY]).with_model("model-7");
            let mut builder = IntentClient::builder().provider(provider);
            if cached {
                builder = builder.in_memory_cache(4);
            }
            let client = builder.build().unwrap();
            for call in 0..2 {
                let result = client
                    .transform(
                        "one two three",
                        "Count the words",
                        IntentOptions::<u32>::new(),
                    )
                    .await;
                assert_eq!(result.value, Some(3), "cache {cached}, call {call}");
                let record = &result.attempts[0];
                assert_eq!(record.raw_output, REPLY, "cache {cached}, call {call}");
                assert_eq!(record.model, "model-7", "cache {cached}, call {call}");
                assert_eq!(record.cached, cached && call == 1);
            }
        }
    }

    /// A cached reply that fails this call's checks (here a validator the first call did
    /// not have) is removed, or replaced by the answer that passes: it is never met again.
    #[tokio::test]
    async fn a_cached_reply_that_fails_is_removed_or_replaced() {
        use crate::result::CacheUse;
        let plain = || IntentOptions::<u32>::new();
        let not_three = || IntentOptions::<u32>::new().require(|n| *n != 3, "not 3");
        let count = |client: &IntentClient, options| {
            let client = client.clone();
            async move { client.transform("a b c", "Count the words", options).await }
        };

        // One attempt: the bad entry fails the call, and is gone for the next one.
        let provider = ScriptedProvider::new([REPLY, r#"{"value": 4}"#]);
        let client = IntentClient::builder()
            .provider(provider.clone())
            .in_memory_cache(4)
            .max_attempts(1)
            .build()
            .unwrap();
        assert_eq!(count(&client, plain()).await.value, Some(3));
        let refused = count(&client, not_three()).await;
        assert_eq!(refused.value, None);
        assert_eq!(refused.attempts[0].cache, Some(CacheUse::Hit));
        let after = count(&client, plain()).await;
        assert_eq!(after.attempts[0].cache, Some(CacheUse::Miss));
        assert_eq!(after.value, Some(4));
        assert_eq!(provider.request_count(), 2);

        // Two attempts: the answer that passed takes the bad entry's place.
        let provider = ScriptedProvider::new([REPLY, r#"{"value": 4}"#]);
        let client = IntentClient::builder()
            .provider(provider.clone())
            .in_memory_cache(4)
            .max_attempts(2)
            .build()
            .unwrap();
        assert_eq!(count(&client, plain()).await.value, Some(3));
        let retried = count(&client, not_three()).await;
        assert_eq!(retried.value, Some(4));
        let served = count(&client, not_three()).await;
        assert_eq!(served.value, Some(4));
        assert!(served.attempts[0].cached);
        assert_eq!(served.attempts.len(), 1);
        assert_eq!(provider.request_count(), 2);
    }

    /// The answer of a retry is cached under the first request's key: the next identical
    /// call is served it, without paying for the failed first reply again.
    #[tokio::test]
    async fn the_answer_of_a_retry_is_cached_for_the_first_request() {
        let provider = ScriptedProvider::new(["not json", REPLY]);
        let client = IntentClient::builder()
            .provider(provider.clone())
            .in_memory_cache(4)
            .build()
            .unwrap();
        let options = || IntentOptions::<u32>::new();
        let first = client
            .transform("a b c", "Count the words", options())
            .await;
        assert_eq!((first.value, first.attempts.len()), (Some(3), 2));
        let second = client
            .transform("a b c", "Count the words", options())
            .await;
        assert_eq!(second.value, Some(3));
        assert!(second.attempts[0].cached);
        assert_eq!(provider.request_count(), 2);
        assert!(!second.used_local_fallback());
    }
}
