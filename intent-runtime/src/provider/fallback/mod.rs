//! [`FallbackProvider`]: a provider made of an ordered list of providers, any mix of wire
//! APIs. A request goes to the first member that can take it; on an outage, a timeout, a
//! rate limit, a 5xx, a transport error or an authentication failure of one, it goes on
//! to the next (on a refusal only when [`FallbackProvider::on_refusal`] says so). The
//! reply's [`route`](crate::provider::ProviderReply::route) says which member answered
//! and why the ones before it were passed over.
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`breaker`] | cooldowns: the circuit breaker per member, and where its state lives |
//!
//! # Which failures move on
//!
//! By default ([`DEFAULT_FALL_OVER_ON`]), failures of the provider, not of the request:
//! [`ProviderErrorKind::Authentication`], [`Permission`](ProviderErrorKind::Permission),
//! [`RateLimited`](ProviderErrorKind::RateLimited),
//! [`Overloaded`](ProviderErrorKind::Overloaded), [`Server`](ProviderErrorKind::Server),
//! [`Timeout`](ProviderErrorKind::Timeout) and [`Transport`](ProviderErrorKind::Transport).
//! Any other failure (an invalid request, a rejected schema, an unreadable reply) is
//! returned at once: the next provider would be sent the same request.
//! [`FallbackProvider::with_fall_over_on`] sets the kinds instead (a model one provider
//! lacks, [`NotFound`](ProviderErrorKind::NotFound), is a common addition). When every
//! member fails, the last failure is returned, its message naming every member's.
//!
//! A failure that moves on counts towards the member's cooldown; so does one of those
//! kinds that ends a stream after its first piece, although that stream does not move
//! on.
//!
//! # Verification failures
//!
//! A reply that fails the checks stays with the attempt loop, which asks the same model
//! again with the problems. [`FallbackProvider::escalate_after`] moves on instead after
//! `n` failed attempts: it reads the attempt from the request itself (every failed
//! attempt adds the model's reply to the conversation as an assistant turn), so it works
//! through the [`Provider`] interface with nothing added to it.
//!
//! # Models
//!
//! A model name belongs to one provider's catalogue: the call's model (its options, the
//! client's) goes to the first member only; the others are asked for their own default
//! unless a model is pinned with [`Member::model`], which always wins.
//!
//! # Streaming
//!
//! A streamed request falls over only before its first piece has been delivered (an
//! error when the stream opens, or as its first item); once text has been passed on, a
//! failure ends the stream like any other provider's. It still counts towards the
//! member's cooldown when it is of a kind that falls over: a member whose streams keep
//! breaking is cooled down like one whose requests keep failing.
//!
//! # Batch jobs
//!
//! A batch job is submitted once, to the first member's batch API; it does not fall over.

pub mod breaker;

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;

use self::breaker::{Admission, CooldownPolicy, CooldownStore, LocalCooldowns};
use super::batch::BatchProvider;
use super::{
    Provider, ProviderError, ProviderErrorKind, ProviderReply, ProviderRequest, ReplyPiece,
    ReplyStream, Role,
};
use crate::route::{Route, Skip, SkipReason};

/// The default name of a chain, in logs and telemetry.
pub const DEFAULT_FALLBACK_NAME: &str = "fallback";

/// The failures that move a request on to the next member unless
/// [`FallbackProvider::with_fall_over_on`] says otherwise: those of the provider, not of
/// the request.
pub const DEFAULT_FALL_OVER_ON: [ProviderErrorKind; 7] = [
    ProviderErrorKind::Authentication,
    ProviderErrorKind::Permission,
    ProviderErrorKind::RateLimited,
    ProviderErrorKind::Overloaded,
    ProviderErrorKind::Server,
    ProviderErrorKind::Timeout,
    ProviderErrorKind::Transport,
];

/// One member of a [`FallbackProvider`]: a provider, the model it is asked for, and the
/// name its breaker and the route use. Any [`Provider`] converts into one.
#[derive(Debug, Clone)]
pub struct Member {
    provider: Arc<dyn Provider>,
    model: Option<String>,
    name: Option<String>,
}

impl Member {
    /// `provider`, asked for the call's model when it comes first, else for its default.
    pub fn new(provider: impl Provider + 'static) -> Self {
        Self::shared(Arc::new(provider))
    }

    /// A provider already shared.
    pub fn shared(provider: Arc<dyn Provider>) -> Self {
        Self {
            provider,
            model: None,
            name: None,
        }
    }

    /// Always asks for `model`, whatever the call asks for.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The member's name in routes, errors and cooldown keys (default: the provider's
    /// name and model, `openai/gpt-4o-mini`). Processes that share cooldowns through
    /// Redis share them by this name.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    fn resolved_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| {
            let model = self
                .model
                .as_deref()
                .unwrap_or_else(|| self.provider.default_model());
            format!("{}/{model}", self.provider.name())
        })
    }
}

impl<P: Provider + 'static> From<P> for Member {
    fn from(provider: P) -> Self {
        Member::new(provider)
    }
}

/// A member with its resolved name.
#[derive(Debug)]
struct Entry {
    provider: Arc<dyn Provider>,
    model: Option<String>,
    name: String,
}

/// A provider made of an ordered list of providers, tried in order (see the
/// [module docs](self)). Cheap to clone: clones share the members and the cooldowns.
///
/// ```
/// use intent_rs::IntentClient;
/// use intent_rs::provider::fallback::FallbackProvider;
/// use intent_rs::provider::{ProviderError, ProviderErrorKind, ScriptedProvider, ScriptedReply};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let down = ScriptedProvider::new([ScriptedReply::error(ProviderError::new(
///     ProviderErrorKind::Overloaded,
///     "primary",
///     "overloaded",
/// ))]);
/// let backup = ScriptedProvider::new([r#"{"value": 3}"#]);
/// let chain = FallbackProvider::new(down).then(backup.clone());
/// let client = IntentClient::builder().provider(chain).max_attempts(1).build().unwrap();
/// let result = client
///     .transform::<_, u32>("one two three", "Count the words", Default::default())
///     .await;
/// assert_eq!(result.value, Some(3));
/// let route = result.attempts[0].route.as_ref().unwrap();
/// assert_eq!(route.position, 1);
/// assert_eq!(backup.request_count(), 1);
/// # });
/// ```
#[derive(Clone)]
pub struct FallbackProvider {
    inner: Arc<Chain>,
}

struct Chain {
    name: String,
    members: Vec<Entry>,
    on_refusal: bool,
    /// The failure kinds that move on ([`DEFAULT_FALL_OVER_ON`] unless set).
    fall_over_on: Vec<ProviderErrorKind>,
    escalate_after: Option<u32>,
    policy: CooldownPolicy,
    store: Arc<dyn CooldownStore>,
}

impl Chain {
    /// Whether a failure of `kind` moves on to the next member (and counts towards the
    /// member's cooldown).
    fn falls_over(&self, kind: ProviderErrorKind) -> bool {
        self.fall_over_on.contains(&kind)
    }
}

impl fmt::Debug for FallbackProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let chain = &self.inner;
        f.debug_struct("FallbackProvider")
            .field("name", &chain.name)
            .field("members", &chain.members)
            .field("on_refusal", &chain.on_refusal)
            .field("fall_over_on", &chain.fall_over_on)
            .field("escalate_after", &chain.escalate_after)
            .field("policy", &chain.policy)
            .field("store", &chain.store)
            .finish()
    }
}

impl FallbackProvider {
    /// A chain whose first member is `first`; add the others with
    /// [`then`](Self::then). Cooldowns are kept in this chain with the default
    /// [`CooldownPolicy`].
    pub fn new(first: impl Into<Member>) -> Self {
        Self {
            inner: Arc::new(Chain {
                name: DEFAULT_FALLBACK_NAME.to_owned(),
                members: Vec::new(),
                on_refusal: false,
                fall_over_on: DEFAULT_FALL_OVER_ON.to_vec(),
                escalate_after: None,
                policy: CooldownPolicy::default(),
                store: Arc::new(LocalCooldowns::new()),
            }),
        }
        .then(first)
    }

    /// Edits the chain (copied first when a clone shares it: a chain in use never
    /// changes under its callers).
    fn edit(mut self, change: impl FnOnce(&mut Chain)) -> Self {
        let chain = match Arc::get_mut(&mut self.inner) {
            Some(chain) => chain,
            None => {
                let copy = Chain {
                    name: self.inner.name.clone(),
                    members: self
                        .inner
                        .members
                        .iter()
                        .map(|entry| Entry {
                            provider: entry.provider.clone(),
                            model: entry.model.clone(),
                            name: entry.name.clone(),
                        })
                        .collect(),
                    on_refusal: self.inner.on_refusal,
                    fall_over_on: self.inner.fall_over_on.clone(),
                    escalate_after: self.inner.escalate_after,
                    policy: self.inner.policy,
                    store: self.inner.store.clone(),
                };
                self.inner = Arc::new(copy);
                Arc::get_mut(&mut self.inner).expect("a fresh Arc has one owner")
            }
        };
        change(chain);
        self
    }

    /// Adds `member` at the end of the chain. Two members of the same name (the same
    /// provider and model twice) get `#2`, `#3` appended, so their breakers stay apart.
    pub fn then(self, member: impl Into<Member>) -> Self {
        let member = member.into();
        self.edit(|chain| {
            let base = member.resolved_name();
            let mut name = base.clone();
            let mut n = 1;
            while chain.members.iter().any(|entry| entry.name == name) {
                n += 1;
                name = format!("{base}#{n}");
            }
            chain.members.push(Entry {
                provider: member.provider,
                model: member.model,
                name,
            });
        })
    }

    /// The chain's name in logs and telemetry (default [`DEFAULT_FALLBACK_NAME`]).
    pub fn named(self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.edit(|chain| chain.name = name)
    }

    /// Whether a refusal moves on to the next member (default `false`: a refusal is the
    /// model's answer, and is returned). The last member's refusal is always returned.
    pub fn on_refusal(self, fall_over: bool) -> Self {
        self.edit(|chain| chain.on_refusal = fall_over)
    }

    /// The failures that move a request on to the next member, replacing
    /// [`DEFAULT_FALL_OVER_ON`]; a failure of any other kind is returned at once. Each
    /// failure that moves on also counts towards the member's cooldown.
    ///
    /// [`ProviderErrorKind::Canceled`] is never taken: the caller stopped the call, and
    /// the next member is not wanted either. Refusals are not a failure kind: see
    /// [`on_refusal`](Self::on_refusal).
    ///
    /// ```
    /// use intent_rs::provider::ProviderErrorKind;
    /// use intent_rs::provider::fallback::{DEFAULT_FALL_OVER_ON, FallbackProvider};
    /// use intent_rs::provider::ScriptedProvider;
    ///
    /// // Also move on when a member does not know the model; never on its keys.
    /// let kinds = DEFAULT_FALL_OVER_ON
    ///     .into_iter()
    ///     .filter(|kind| *kind != ProviderErrorKind::Authentication)
    ///     .chain([ProviderErrorKind::NotFound]);
    /// let chain = FallbackProvider::new(ScriptedProvider::new(["{}"]))
    ///     .then(ScriptedProvider::new(["{}"]))
    ///     .with_fall_over_on(kinds);
    /// # let _ = chain;
    /// ```
    pub fn with_fall_over_on(self, kinds: impl IntoIterator<Item = ProviderErrorKind>) -> Self {
        let mut set: Vec<ProviderErrorKind> = Vec::new();
        for kind in kinds {
            if kind != ProviderErrorKind::Canceled && !set.contains(&kind) {
                set.push(kind);
            }
        }
        self.edit(|chain| chain.fall_over_on = set)
    }

    /// Moves on to the next member after every `attempts` failed verifications of a call
    /// (the attempt loop's retries): with `escalate_after(2)`, attempts 1 and 2 go to the
    /// first member, 3 and 4 to the second, and so on, the last member keeping the rest.
    /// `0` is taken as 1.
    pub fn escalate_after(self, attempts: u32) -> Self {
        self.edit(|chain| chain.escalate_after = Some(attempts.max(1)))
    }

    /// When a member is cooled down (default [`CooldownPolicy::default`]).
    pub fn cooldown(self, policy: CooldownPolicy) -> Self {
        self.edit(|chain| chain.policy = policy)
    }

    /// Where the breakers' state lives: a [`LocalCooldowns`] shared with other chains,
    /// or the fleet's Redis (`fleet::RedisCooldowns`).
    pub fn cooldowns(self, store: impl CooldownStore + 'static) -> Self {
        let store: Arc<dyn CooldownStore> = Arc::new(store);
        self.edit(|chain| chain.store = store)
    }

    /// The rest of a stream `position` opened, its first piece delivered: the route
    /// rides on the finished reply, and the member's breaker hears how the stream ended.
    /// A failure of a kind that falls over counts towards its cooldown, though the stream
    /// cannot move on (text was delivered); so does a stream cut before its reply (the
    /// runtime reads that as a transport failure). A stream dropped by its caller reports
    /// nothing: the member did not fail.
    fn delivering(
        &self,
        position: usize,
        admission: Admission,
        first: ReplyPiece,
        rest: ReplyStream,
        route: Route,
    ) -> ReplyStream {
        /// Where the stream stands: what the breaker still needs to hear.
        struct Delivery<S> {
            pieces: S,
            chain: Arc<Chain>,
            route: Option<Route>,
            /// Whether the breaker has heard how the stream ended.
            reported: bool,
        }
        let pieces = futures_util::stream::iter([Ok(first)]).chain(rest);
        let state = Delivery {
            pieces,
            chain: Arc::clone(&self.inner),
            route: Some(route),
            reported: false,
        };
        ReplyStream::new(futures_util::stream::unfold(
            state,
            move |mut state| async move {
                let chain = Arc::clone(&state.chain);
                let name = &chain.members[position].name;
                let piece = match state.pieces.next().await {
                    Some(Ok(ReplyPiece::Finished(mut reply))) => {
                        if let Some(mut route) = state.route.take() {
                            route.model.clone_from(&reply.model);
                            reply.route = Some(Box::new(route));
                        }
                        // As `Walk::settle`: a breaker that counted nothing needs no word.
                        if !state.reported && admission != (Admission::Closed { failures: 0 }) {
                            chain.store.succeeded(name, &chain.policy).await;
                        }
                        state.reported = true;
                        Ok(ReplyPiece::Finished(reply))
                    }
                    Some(Err(error)) => {
                        if !state.reported && chain.falls_over(error.kind()) {
                            chain.store.failed(name, &chain.policy).await;
                        }
                        state.reported = true;
                        Err(error)
                    }
                    Some(other) => other,
                    None => {
                        if !state.reported && chain.falls_over(ProviderErrorKind::Transport) {
                            chain.store.failed(name, &chain.policy).await;
                        }
                        return None;
                    }
                };
                Some((piece, state))
            },
        ))
    }

    /// The members' names, in order.
    pub fn member_names(&self) -> Vec<&str> {
        self.inner
            .members
            .iter()
            .map(|entry| entry.name.as_str())
            .collect()
    }
}

/// How the route names a member passed over for a failure of this kind.
fn skip_reason(kind: ProviderErrorKind) -> SkipReason {
    match kind {
        ProviderErrorKind::Authentication => SkipReason::Authentication,
        ProviderErrorKind::Permission => SkipReason::Permission,
        ProviderErrorKind::RateLimited => SkipReason::RateLimited,
        ProviderErrorKind::Overloaded => SkipReason::Overloaded,
        ProviderErrorKind::Server => SkipReason::Server,
        ProviderErrorKind::Timeout => SkipReason::Timeout,
        ProviderErrorKind::Transport => SkipReason::Transport,
        ProviderErrorKind::NotFound => SkipReason::NotFound,
        ProviderErrorKind::InvalidRequest
        | ProviderErrorKind::SchemaRejected
        | ProviderErrorKind::Configuration => SkipReason::InvalidRequest,
        ProviderErrorKind::InvalidResponse => SkipReason::InvalidResponse,
        // `Canceled` never moves on (`with_fall_over_on` drops it); a kind added later
        // reads as the provider failing until it gets its own reason.
        _ => SkipReason::Server,
    }
}

/// What one member made of a request.
enum Outcome<T> {
    /// Its answer (or a failure that does not move on): returned.
    Done(Result<T, ProviderError>),
    /// A refusal, when refusals move on: kept in case no later member answers.
    Refused(ProviderReply),
    /// A failure that moves on.
    Failed(ProviderError),
}

/// The walk of one request down the chain.
struct Walk<'a> {
    chain: &'a Chain,
    skipped: Vec<Skip>,
    errors: Vec<ProviderError>,
    /// The soonest a cooling member may be asked again.
    soonest: Option<Duration>,
}

impl<'a> Walk<'a> {
    fn new(chain: &'a Chain) -> Self {
        Self {
            chain,
            skipped: Vec::new(),
            errors: Vec::new(),
            soonest: None,
        }
    }

    /// The first member this request may go to: past the members escalated over.
    fn start(&mut self, request: &ProviderRequest) -> usize {
        let Some(every) = self.chain.escalate_after else {
            return 0;
        };
        let failed = request
            .messages
            .iter()
            .filter(|message| message.role == Role::Assistant)
            .count();
        let start = (failed / every as usize).min(self.chain.members.len().saturating_sub(1));
        for (position, entry) in self.chain.members[..start].iter().enumerate() {
            self.skipped.push(Skip {
                provider: entry.name.clone(),
                position,
                reason: SkipReason::Escalated,
                sent: false,
                detail: format!("{failed} earlier attempts failed verification"),
            });
        }
        start
    }

    /// Whether `position` may be asked now; a cooling member is noted as skipped.
    async fn admit(&mut self, position: usize) -> Option<Admission> {
        let entry = &self.chain.members[position];
        match self
            .chain
            .store
            .admit(&entry.name, &self.chain.policy)
            .await
        {
            Admission::Open { retry_in } => {
                self.soonest = Some(self.soonest.map_or(retry_in, |s| s.min(retry_in)));
                self.skipped.push(Skip {
                    provider: entry.name.clone(),
                    position,
                    reason: SkipReason::CoolingDown,
                    sent: false,
                    detail: format!(
                        "failed repeatedly; not asked for another {} ms",
                        retry_in.as_millis()
                    ),
                });
                None
            }
            admission => Some(admission),
        }
    }

    /// The request as `position` is sent it: with its pinned model, or without the
    /// call's model past the first member.
    fn request_for<'r>(
        &self,
        position: usize,
        request: &'r ProviderRequest,
    ) -> Cow<'r, ProviderRequest> {
        let entry = &self.chain.members[position];
        let model = match (&entry.model, position) {
            (Some(model), _) => Some(model.as_str()),
            (None, 0) => return Cow::Borrowed(request),
            (None, _) => None,
        };
        if request.model.as_deref() == model {
            return Cow::Borrowed(request);
        }
        let mut owned = request.clone();
        owned.model = model.map(str::to_owned);
        Cow::Owned(owned)
    }

    /// Reports a member's outcome to its breaker: `failure` when it failed in a way that
    /// moves on (noted as a skip), `None` when it answered.
    async fn settle(
        &mut self,
        position: usize,
        admission: Admission,
        failure: Option<&ProviderError>,
    ) {
        let chain = self.chain;
        let entry = &chain.members[position];
        match failure {
            Some(error) => {
                chain.store.failed(&entry.name, &chain.policy).await;
                self.skipped.push(Skip {
                    provider: entry.name.clone(),
                    position,
                    reason: skip_reason(error.kind()),
                    sent: error.request_sent(),
                    detail: error.to_string(),
                });
                self.errors.push(error.clone());
            }
            // The member answered (a failure that does not move on is the request's
            // fault, not the provider's): it is up. A breaker that counted nothing needs
            // no word, which keeps a shared store's traffic to one call per request.
            None if admission != (Admission::Closed { failures: 0 }) => {
                chain.store.succeeded(&entry.name, &chain.policy).await;
            }
            None => {}
        }
    }

    /// The route of a reply from `position`.
    fn route(&mut self, position: usize, model: &str) -> Route {
        let entry = &self.chain.members[position];
        Route {
            provider: entry.name.clone(),
            model: model.to_owned(),
            position,
            skipped: std::mem::take(&mut self.skipped),
        }
    }

    /// A refusal from `position`, kept with its route (the members before it) in case no
    /// later member answers; the members after it see it as skipped.
    fn refused(&mut self, position: usize, reply: ProviderReply) -> ProviderReply {
        let route = Route {
            provider: self.chain.members[position].name.clone(),
            model: reply.model.clone(),
            position,
            skipped: self.skipped.clone(),
        };
        self.skipped.push(Skip {
            provider: route.provider.clone(),
            position,
            reason: SkipReason::Refused,
            sent: true,
            detail: "the model refused; the chain falls over on refusals".to_owned(),
        });
        ProviderReply {
            route: Some(Box::new(route)),
            ..reply
        }
    }

    /// The failure of a request no member answered: the last failure, its message
    /// naming every member's; or, when every member was cooling down, a failure that
    /// says so and when to try again.
    fn failure(mut self) -> ProviderError {
        let chain = self.chain;
        let summary = self
            .skipped
            .iter()
            .map(|skip| format!("{} {}", skip.provider, skip.reason))
            .collect::<Vec<_>>()
            .join(", ");
        let Some(last) = self.errors.pop() else {
            let mut error = ProviderError::new(
                ProviderErrorKind::Overloaded,
                &chain.name,
                format!(
                    "no provider of the chain could be asked ({summary}); the call can be \
                     retried once a cooldown ends"
                ),
            )
            .not_sent()
            .with_transient(true);
            if let Some(soonest) = self.soonest {
                error = error.with_retry_after(soonest);
            }
            return error;
        };
        let transient = last.is_transient() || self.errors.iter().any(ProviderError::is_transient);
        let sent = last.request_sent() || self.errors.iter().any(ProviderError::request_sent);
        let mut error = ProviderError::new(
            last.kind(),
            last.provider(),
            format!(
                "every provider of the `{}` chain failed ({summary}); the last said: {}",
                chain.name,
                last.message()
            ),
        )
        .with_transient(transient);
        if let Some(status) = last.status() {
            error = error.with_status(status);
        }
        if let Some(request_id) = last.request_id() {
            error = error.with_request_id(request_id);
        }
        let wait = self
            .errors
            .iter()
            .chain([&last])
            .filter_map(ProviderError::retry_after)
            .min();
        if let Some(wait) = wait {
            error = error.with_retry_after(wait);
        }
        if !sent {
            error = error.not_sent();
        }
        error
    }
}

#[async_trait::async_trait]
impl Provider for FallbackProvider {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn default_model(&self) -> &str {
        let first = &self.inner.members[0];
        first
            .model
            .as_deref()
            .unwrap_or_else(|| first.provider.default_model())
    }

    fn server_url(&self) -> Option<&str> {
        self.inner.members[0].provider.server_url()
    }

    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        let chain = &*self.inner;
        let mut walk = Walk::new(chain);
        let last = chain.members.len() - 1;
        let mut refusal: Option<ProviderReply> = None;
        for position in walk.start(request)..=last {
            let Some(admission) = walk.admit(position).await else {
                continue;
            };
            let sent = walk.request_for(position, request);
            let outcome = match chain.members[position].provider.complete(&sent).await {
                Ok(reply) if reply.refusal.is_some() && chain.on_refusal && position < last => {
                    Outcome::Refused(reply)
                }
                Ok(reply) => Outcome::Done(Ok(reply)),
                Err(error) if chain.falls_over(error.kind()) => Outcome::Failed(error),
                Err(error) => Outcome::Done(Err(error)),
            };
            let failure = match &outcome {
                Outcome::Failed(error) => Some(error.clone()),
                _ => None,
            };
            walk.settle(position, admission, failure.as_ref()).await;
            match outcome {
                Outcome::Done(Ok(mut reply)) => {
                    reply.route = Some(Box::new(walk.route(position, &reply.model)));
                    return Ok(reply);
                }
                Outcome::Done(Err(error)) => return Err(error),
                Outcome::Refused(reply) => refusal = Some(walk.refused(position, reply)),
                Outcome::Failed(_) => {}
            }
        }
        match refusal {
            Some(reply) => Ok(reply),
            None => Err(walk.failure()),
        }
    }

    async fn stream(&self, request: &ProviderRequest) -> Result<ReplyStream, ProviderError> {
        let chain = &*self.inner;
        let mut walk = Walk::new(chain);
        let last = chain.members.len() - 1;
        let mut refusal: Option<ProviderReply> = None;
        for position in walk.start(request)..=last {
            let Some(admission) = walk.admit(position).await else {
                continue;
            };
            let sent = walk.request_for(position, request);
            let provider = &chain.members[position].provider;
            // Nothing has been delivered until the first piece is handed on: a failure
            // up to there moves on like a failed `complete`.
            let opened = match provider.stream(&sent).await {
                Ok(mut pieces) => match pieces.next().await {
                    Some(Ok(first)) => Ok((first, pieces)),
                    Some(Err(error)) => Err(error),
                    None => Err(ProviderError::new(
                        ProviderErrorKind::Transport,
                        provider.name(),
                        "the reply stream ended before its first piece",
                    )),
                },
                Err(error) => Err(error),
            };
            let outcome = match opened {
                Ok((ReplyPiece::Finished(reply), _))
                    if reply.refusal.is_some() && chain.on_refusal && position < last =>
                {
                    Outcome::Refused(reply)
                }
                Ok(opened) => Outcome::Done(Ok(opened)),
                Err(error) if chain.falls_over(error.kind()) => Outcome::Failed(error),
                Err(error) => Outcome::Done(Err(error)),
            };
            let failure = match &outcome {
                Outcome::Failed(error) => Some(error.clone()),
                _ => None,
            };
            // An opened stream reports to the breaker when it ends: how it ends is not
            // known yet (a success reported now would clear the failures of earlier
            // streams that broke after their first piece).
            if !matches!(outcome, Outcome::Done(Ok(_))) {
                walk.settle(position, admission, failure.as_ref()).await;
            }
            match outcome {
                Outcome::Done(Ok((first, rest))) => {
                    // The route is known now; it rides on the finished reply.
                    let route = walk.route(position, "");
                    return Ok(self.delivering(position, admission, first, rest, route));
                }
                Outcome::Done(Err(error)) => return Err(error),
                Outcome::Refused(reply) => refusal = Some(walk.refused(position, reply)),
                Outcome::Failed(_) => {}
            }
        }
        match refusal {
            Some(reply) => Ok(ReplyStream::whole(reply)),
            None => Err(walk.failure()),
        }
    }

    fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        // The prompt is rendered once per call, before the member is known: it may leave
        // the type out only when every member would be held to the schema.
        self.inner
            .members
            .iter()
            .enumerate()
            .all(|(position, entry)| {
                let walk = Walk::new(&self.inner);
                entry
                    .provider
                    .enforces_schema(&walk.request_for(position, request))
            })
    }

    fn max_top_logprobs(&self) -> Option<u8> {
        // A request asking for more than one member reports would fail there.
        self.inner
            .members
            .iter()
            .map(|entry| entry.provider.max_top_logprobs())
            .try_fold(u8::MAX, |least, most| most.map(|most| least.min(most)))
    }

    fn batch(&self) -> Option<BatchProvider> {
        self.inner.members[0].provider.batch()
    }
}

#[cfg(test)]
mod tests;
