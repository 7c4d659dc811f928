//! Typed decision questions asked through a client: one [`Binary`], [`Choice`] or
//! [`Score`] question about a state, answered by the client's decision client through its
//! rate limiter, with the tokens and the model that answered. The generated decision
//! methods (through `__private`) and the collection operations share these.

use serde::Serialize;
use serde_json::Value;
use tracing::Instrument;

use crate::cache::{CacheKey, ResponseCache};
use crate::client::IntentClient;
use crate::cost::CostTally;
use crate::decision::typed::{self, EnumOptions};
use crate::decision::{
    Binary, BinaryQuestion, Choice, ChoiceQuestion, DecisionError, DecisionQuestion,
    DecisionRequest, DecisionResponse, FailureKind, Score, ScoreQuestion,
};
use crate::limits::RateLimitError;
use crate::pricing::{self, PricedCall};
use crate::provider::ProviderReply;
use crate::result::Usage;
use crate::telemetry::CallTrace;

/// A typed answer, the tokens the response that carried it used, and the model that
/// answered.
#[derive(Debug)]
pub(crate) struct Asked<T> {
    pub answer: T,
    /// The tokens spent now: none for an answer served from the client's cache.
    pub usage: Usage,
    pub model: String,
    /// Whether the answer was served from the client's response cache.
    pub cached: bool,
}

impl<T> Asked<T> {
    /// The answer turned into another, with the same tokens and model.
    pub(crate) fn map<U>(self, turn: impl FnOnce(T) -> U) -> Asked<U> {
        Asked {
            answer: turn(self.answer),
            usage: self.usage,
            model: self.model,
            cached: self.cached,
        }
    }

    /// What the answer cost on `client`'s price table.
    pub(crate) fn cost(&self, client: &IntentClient) -> CostTally {
        let mut tally = CostTally::default();
        // Paid for by the call that stored it, priced or not.
        if self.cached {
            return tally;
        }
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

/// How a decision's request gets past the client's rate limiter.
pub(crate) enum Admission {
    /// It waits for the limiter inside its call span, its state's size as the estimate
    /// (a generated decision method).
    InSpan,
    /// It waited already, before its state was built, with this estimate: a collection
    /// lets an item wait holding only the item itself, not its state, request and span.
    Admitted {
        /// The tokens the limiter booked, settled against the response's usage.
        estimated_tokens: u64,
    },
    /// The limiter refused it (a shared quota that fails closed could not be reached).
    Refused(DecisionError),
}

/// The limiter's token estimate for a decision about `item`: its JSON length, as a
/// state's is.
pub(crate) fn estimated_tokens<I: Serialize + ?Sized>(item: &I) -> u64 {
    json_len(item).div_ceil(4) as u64
}

/// Waits for the client's rate limiter for a decision estimated at `estimated_tokens`,
/// before its state is built (see [`Admission::Admitted`]).
pub(crate) async fn admit(client: &IntentClient, estimated_tokens: u64) -> Admission {
    match &client.inner().rate_limiter {
        Some(limiter) => match limiter.admit(estimated_tokens).await {
            Ok(_) => Admission::Admitted { estimated_tokens },
            Err(refused) => Admission::Refused(refused_by_limiter(&refused)),
        },
        None => Admission::Admitted { estimated_tokens },
    }
}

fn refused_by_limiter(refused: &RateLimitError) -> DecisionError {
    DecisionError::new(FailureKind::SharedStateUnavailable, refused.to_string())
}

/// The length of `value`'s JSON text, counted without building the text.
fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // A value that cannot be serialized fails again, with its reason, when its state is
    // built; its estimate does not matter.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// Asks questions through the client's decision client, in a call span naming
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
    questions: Result<impl IntoIterator<Item = DecisionQuestion>, DecisionError>,
    model: Option<&str>,
    admission: Admission,
) -> Result<DecisionResponse, DecisionError> {
    let mut request = DecisionRequest::new(state?, questions?)?;
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
    // The cache first: a decision asked before about the same state, with the same
    // questions and model, is served from it and costs nothing, the limiter included.
    let cache_key = inner.cache.as_ref().map(|_| cache_key(client, &request));
    if let (Some(cache), Some(key)) = (&inner.cache, &cache_key)
        && let Some(response) = cached_response(cache.as_ref(), key, &request).await
    {
        if let (Some(limiter), Admission::Admitted { estimated_tokens }) =
            (&inner.rate_limiter, &admission)
        {
            limiter.settle(*estimated_tokens, 0).await;
        }
        trace.decided(None);
        return Ok(response);
    }
    let estimated_tokens = match admission {
        Admission::Admitted { estimated_tokens } => estimated_tokens,
        Admission::Refused(error) => {
            trace.decided(Some(error.kind()));
            return Err(error);
        }
        Admission::InSpan => {
            // A state's JSON as the limiter's token estimate, as a prompt's length is for
            // a call.
            let estimated_tokens = estimated_tokens(request.state());
            if let Some(limiter) = &inner.rate_limiter {
                let admitted = limiter
                    .admit(estimated_tokens)
                    .instrument(trace.span().clone())
                    .await;
                if let Err(refused) = admitted {
                    let error = refused_by_limiter(&refused);
                    trace.decided(Some(error.kind()));
                    return Err(error);
                }
            }
            estimated_tokens
        }
    };
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
    if let (Some(cache), Some(key), Ok(response)) = (&inner.cache, cache_key, &response) {
        store_response(cache.as_ref(), key, response).await;
    }
    trace.decided(response.as_ref().err().map(DecisionError::kind));
    response
}

/// Who answers a decision `client` asks of `model` (the request's own, else the
/// decision client's default, else the provider's): the model's name and the answerer
/// (the client's provider, or a decision client of its own), so that answers kept from
/// one (in the cache, in a collection's journal) are not read back for another.
pub(crate) fn answered_by(client: &IntentClient, model: Option<&str>) -> String {
    let inner = client.inner();
    let model = model
        .or(inner.decisions.default_model())
        .unwrap_or(inner.telemetry.primary.default_model.as_str());
    let answerer = if inner.decisions_from_provider {
        inner.provider.name()
    } else {
        "decision client"
    };
    format!("{model}\u{1f}{answerer}")
}

/// The cache key of `request` as `client` asks it: who answers, the state and the
/// questions (ids, texts, options, criteria).
fn cache_key(client: &IntentClient, request: &DecisionRequest) -> CacheKey {
    let canonical = format!(
        "{}\u{1f}{}\u{1f}{:?}",
        answered_by(client, request.model()),
        request.state(),
        request.questions()
    );
    CacheKey::of_decision(&canonical)
}

/// The response the cache holds for `key`, if it reads back as an answer to `request`;
/// an entry that does not is removed, and the decision asked again.
async fn cached_response(
    cache: &dyn ResponseCache,
    key: &CacheKey,
    request: &DecisionRequest,
) -> Option<DecisionResponse> {
    let stored = cache.lookup(key).await.ok().flatten()?;
    // Where the stored text breaks, not what it says: it may hold a provider's words.
    let read = serde_json::from_str::<DecisionResponse>(&stored.text)
        .map_err(|error| {
            format!(
                "not a stored decision response (line {}, column {})",
                error.line(),
                error.column()
            )
        })
        .and_then(|response| {
            response
                .answering(request)
                .map_err(|error| error.to_string())
        });
    match read {
        Ok(response) => Some(response.mark_cached()),
        Err(problem) => {
            tracing::warn!(%problem, "a cached decision could not be read; asking again");
            // An unreachable cache was a miss already; its error says nothing more.
            let _ = cache.evict(key).await;
            None
        }
    }
}

/// Keeps `response` in the cache under `key`: its JSON as the stored reply's text.
async fn store_response(cache: &dyn ResponseCache, key: CacheKey, response: &DecisionResponse) {
    let Ok(text) = serde_json::to_string(response) else {
        return;
    };
    let stored = ProviderReply {
        text,
        model: response.model().to_owned(),
        usage: response.usage(),
        ..ProviderReply::default()
    };
    // A decision that could not be stored is asked again next time; nothing is lost.
    let _ = cache.store(key, stored).await;
}

fn asked<T>(answer: T, response: &DecisionResponse) -> Asked<T> {
    let cached = response.cached();
    Asked {
        answer,
        usage: if cached {
            Usage::default()
        } else {
            response.usage()
        },
        model: response.model().to_owned(),
        cached,
    }
}

/// A yes/no question with this id and text about `state`.
pub(crate) async fn binary(
    client: &IntentClient,
    id: &str,
    question: &str,
    state: Result<Value, DecisionError>,
    model: Option<&str>,
    admission: Admission,
) -> Decided<Binary> {
    let question = BinaryQuestion::new(id, question).map(DecisionQuestion::from);
    let response = ask::<Binary>(
        client,
        id,
        state,
        question.map(std::iter::once),
        model,
        admission,
    )
    .await?;
    let binary = typed::binary(&response, id)?;
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
    admission: Admission,
) -> Decided<Choice<E>> {
    let question =
        ChoiceQuestion::new(id, question, enum_options.options()).map(DecisionQuestion::from);
    let response = ask::<Choice<E>>(
        client,
        id,
        state,
        question.map(std::iter::once),
        model,
        admission,
    )
    .await?;
    let choice = enum_options.choice(&response, id)?;
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
    admission: Admission,
) -> Decided<Score<E>> {
    let question =
        ScoreQuestion::new(id, question, enum_options.options()).map(DecisionQuestion::from);
    let response = ask::<Score<E>>(
        client,
        id,
        state,
        question.map(std::iter::once),
        model,
        admission,
    )
    .await?;
    let score = enum_options.score(&response, id)?;
    Ok(asked(score, &response))
}

/// Several questions about `state` in one request (one System One request; a
/// log-probability client asks them one by one), spanned as `method`.
pub(crate) async fn questions(
    client: &IntentClient,
    method: &str,
    questions: &[DecisionQuestion],
    state: Result<Value, DecisionError>,
    model: Option<&str>,
    admission: Admission,
) -> Decided<DecisionResponse> {
    let questions = questions.iter().cloned();
    let response =
        ask::<DecisionResponse>(client, method, state, Ok(questions), model, admission).await?;
    Ok(asked((), &response).map(|()| response))
}
