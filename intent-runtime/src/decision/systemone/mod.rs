//! Decision models over their own API: the System One API (`POST /v1/systemone`, served
//! by TypeSafe, OpenRouter, LiteLLM, Fireworks, Ollama and local runtimes) and OpenAI's
//! Decisions API (`POST /v1/decisions`), through one [`SystemOneClient`].
//!
//! A decision model reads the state once and answers every typed question of a request
//! in one pass, with a distribution per question and no prose: one HTTP request per
//! [`DecisionRequest`], whatever it holds.

mod errors;
mod hosts;
mod reply;
mod request;

use std::fmt;
use std::sync::Arc;

use tracing::Instrument;

pub use errors::SystemOneConfigError;
pub use hosts::{DecisionHost, DecisionLimits, WireFormat};
pub use reply::DECISION_MODEL_SUM_TOLERANCE;

use super::{DecisionClient, DecisionError, DecisionRequest, DecisionResponse, ProbabilitySource};
use crate::provider::http::{
    Holds, HttpTransport, RawResponse, Route, RouteCell, read_checked, set_variable,
    transport_settings, trim_base_url, warn_unknown_variables,
};
use crate::provider::{ProviderError, ProviderReply};
use crate::telemetry::Telemetry;
use errors::{REQUEST_ID_HEADER, error_reply};
use request::{DecisionsBody, SystemOneBody, check_limits, size_hint};

/// The model asked unless another is set: TypeSafe's alias for its newest Jev model.
pub const SYSTEM_ONE_DEFAULT_MODEL: &str = "jev-latest";

/// Answers decisions with a decision model over its own API: the System One API, or
/// OpenAI's Decisions API when [`with_wire_format`](Self::with_wire_format) says so.
///
/// All questions of a request go out in one HTTP request: a binary question as `noul`
/// (`predicate`), a choice as `choice` (each label with its description, such as a
/// `DecisionEnum` variant's doc comment), a score as `score` (levels lowest first), each
/// with its text as `instructions`. Before anything is sent the request is checked
/// against the host's [limits](DecisionLimits) (choices, levels, questions per request);
/// the state is a JSON string, object or array, as [`DecisionRequest`] guarantees.
///
/// Nothing in the reply is trusted: every question must be answered with its kind, a
/// choice must be one of the labels asked, each probability must lie in [0, 1], each
/// distribution must sum to 1 within [`DECISION_MODEL_SUM_TOLERANCE`] (it is then
/// normalised), and a score must agree with its distribution. A reply that fails is an
/// invalid response naming the question. The host's `confidence` and request id
/// (`x-typesafe-request-id`, or a gateway's) are kept.
///
/// Failures are classified like every provider's, each host's error envelope read; a
/// rate limit carries the wait the host asked for
/// ([`DecisionError::retry_after`]). The client never retries: the caller, the gate's
/// failure behaviours or the attempt loop decide. The key never appears in an error,
/// a log line, a span or this type's `Debug`; the state never does either.
///
/// ```
/// use intent_rs::decision::{DecisionHost, SystemOneClient, WireFormat};
///
/// let typesafe = SystemOneClient::typesafe("apikey_...");
/// let local = SystemOneClient::compatible("http://127.0.0.1:8787");
/// let openai_shape = SystemOneClient::new(DecisionHost::LiteLlm)
///     .with_base_url("http://localhost:4000")
///     .with_wire_format(WireFormat::OpenAiDecisions)
///     .with_model("jev");
/// # let _ = (typesafe, local, openai_shape);
/// ```
#[derive(Clone)]
pub struct SystemOneClient {
    host: DecisionHost,
    base_url: String,
    model: String,
    api_key: Option<String>,
    format: WireFormat,
    limits: DecisionLimits,
    transport: HttpTransport,
    route: RouteCell,
    telemetry: Arc<Telemetry>,
}

impl fmt::Debug for SystemOneClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SystemOneClient")
            .field("host", &self.host)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("format", &self.format)
            .field("limits", &self.limits)
            .field("transport", &self.transport)
            .finish()
    }
}

impl SystemOneClient {
    /// A client of `host` at its default base URL, asking
    /// [`SYSTEM_ONE_DEFAULT_MODEL`], in the System One format, without a key.
    pub fn new(host: DecisionHost) -> Self {
        let format = WireFormat::SystemOne;
        let mut client = Self {
            host,
            base_url: host.default_base_url().to_owned(),
            model: SYSTEM_ONE_DEFAULT_MODEL.to_owned(),
            api_key: None,
            format,
            limits: host.limits(format),
            transport: HttpTransport::default(),
            route: RouteCell::default(),
            telemetry: Arc::default(),
        };
        client.refresh();
        client
    }

    /// TypeSafe's API with this key.
    pub fn typesafe(api_key: impl Into<String>) -> Self {
        Self::new(DecisionHost::TypeSafe).with_api_key(api_key)
    }

    /// Any server of the System One API at `base_url` (the root the `/v1/...` paths go
    /// under), with TypeSafe's limits and no key (a local runtime needs none).
    pub fn compatible(base_url: impl Into<String>) -> Self {
        Self::new(DecisionHost::Compatible).with_base_url(base_url)
    }

    /// Reads the client from the environment:
    ///
    /// | variable | meaning | default |
    /// | --- | --- | --- |
    /// | `TYPESAFE_API_KEY` | the key, sent as `Authorization: Bearer` | none (required for TypeSafe, OpenRouter and Fireworks) |
    /// | `TYPESAFE_BASE_URL` | the server's root | TypeSafe's API |
    /// | `TYPESAFE_HOST` | the host's quirks: `typesafe`, `openrouter`, `litellm`, `fireworks`, `ollama`, `compatible` | `typesafe` without a base URL, `compatible` with one |
    /// | `TYPESAFE_DEFAULT_MODEL` | the model asked | [`SYSTEM_ONE_DEFAULT_MODEL`] |
    /// | `TYPESAFE_WIRE_FORMAT` | `systemone` or `openai-decisions` | `systemone` |
    ///
    /// Values are trimmed; a key with a line break or a space inside, or a base URL that is
    /// not an absolute http(s) URL, is refused naming its variable. A base URL may end in
    /// `/v1` (as OpenAI's variable does): the paths are not doubled. A variable starting
    /// with `TYPESAFE_` that is not one of these (a misspelt `TYPESAFE_URL`) is named in a
    /// warning, once, with the nearest one read.
    ///
    /// With neither the key nor the base URL set the error is
    /// [`SystemOneConfigError::NotConfigured`], so a program can fall back to another
    /// decision client on exactly that error.
    pub fn from_env() -> Result<Self, SystemOneConfigError> {
        warn_unknown_variables(&["TYPESAFE_"]);
        Self::from_lookup(&|name| std::env::var(name).ok())
    }

    /// [`Self::from_env`] reading the same variables from `lookup` instead of the
    /// process environment: a map in a test, a secrets store, a file. The values are
    /// checked as `from_env` checks them; unknown variables are not looked for (a lookup
    /// cannot list its names). See [`crate::provider::from_lookup`] for an example.
    pub fn from_lookup(
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, SystemOneConfigError> {
        let set = |name: &str| set_variable(lookup, name);
        let checked = |name, holds| {
            read_checked(lookup, name, holds).map_err(SystemOneConfigError::malformed)
        };
        let key = checked("TYPESAFE_API_KEY", Holds::Key)?;
        let base_url = checked("TYPESAFE_BASE_URL", Holds::Url)?;
        if key.is_none() && base_url.is_none() {
            return Err(SystemOneConfigError::NotConfigured);
        }
        let host = match set("TYPESAFE_HOST") {
            Some(name) => DecisionHost::from_name(&name)
                .ok_or(SystemOneConfigError::UnknownHost { value: name })?,
            None if base_url.is_some() => DecisionHost::Compatible,
            None => DecisionHost::TypeSafe,
        };
        if key.is_none() && host.needs_key() {
            return Err(SystemOneConfigError::MissingApiKey { host: host.name() });
        }
        let format = match set("TYPESAFE_WIRE_FORMAT") {
            Some(name) => WireFormat::from_name(&name)
                .ok_or(SystemOneConfigError::UnknownWireFormat { value: name })?,
            None => WireFormat::SystemOne,
        };
        let mut client = Self::new(host).with_wire_format(format);
        if let Some(base_url) = base_url {
            client = client.with_base_url(base_url);
        }
        if let Some(model) = set("TYPESAFE_DEFAULT_MODEL") {
            client = client.with_model(model);
        }
        if let Some(key) = key {
            client = client.with_api_key(key);
        }
        Ok(client)
    }

    /// Sends `Authorization: Bearer <key>`.
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self.refresh();
        self
    }

    /// Sends requests under another root (the part before `/v1/...`; a root ending in
    /// `/v1` is read without it, and a Fireworks root may end in `/inference` or not).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = trim_base_url(base_url);
        self.refresh();
        self
    }

    /// Asks this model when a request names none (as the host names it; OpenRouter's
    /// bare TypeSafe ids are mapped).
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self.refresh();
        self
    }

    /// Speaks this wire format; the limits become the host's for it.
    pub fn with_wire_format(mut self, format: WireFormat) -> Self {
        self.format = format;
        self.limits = self.host.limits(format);
        self.refresh();
        self
    }

    /// Enforces other limits (a model with tighter caps than its host's).
    pub fn with_limits(mut self, limits: DecisionLimits) -> Self {
        self.limits = limits;
        self
    }

    // The transport's settings, as every provider has them (`with_timeout`,
    // `with_connect_timeout`, `with_max_response_bytes`, `with_http_client`).
    transport_settings!(transport);

    /// The host whose quirks the client follows.
    pub fn host(&self) -> DecisionHost {
        self.host
    }

    /// The wire format spoken.
    pub fn wire_format(&self) -> WireFormat {
        self.format
    }

    /// The limits enforced before sending.
    pub fn limits(&self) -> DecisionLimits {
        self.limits
    }

    /// The model asked when a request names none.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> String {
        self.host.endpoint(&self.base_url, self.format)
    }

    /// Rebuilds what depends on the URL, key and model: the route on its next use, the
    /// telemetry endpoint now.
    fn refresh(&mut self) {
        self.route.reset();
        self.telemetry = Arc::new(Telemetry::decision_host(
            self.host.name(),
            &self.model,
            &self.endpoint(),
        ));
    }

    fn route(&self) -> Result<&Route, ProviderError> {
        self.route.get_or_build(|| {
            let mut headers = Vec::with_capacity(1);
            if let Some(key) = &self.api_key {
                headers.push(Route::secret_header(
                    self.host.name(),
                    "authorization",
                    &format!("Bearer {key}"),
                )?);
            }
            Route::new(self.host.name(), &self.endpoint(), headers)
        })
    }

    /// Sends the body and reads the whole reply (any status).
    async fn post(
        &self,
        request: &DecisionRequest,
        model: &str,
    ) -> Result<RawResponse, ProviderError> {
        let route = self.route()?;
        let provider = self.host.name();
        let secret = self.api_key.as_deref();
        let hint = size_hint(request);
        // The same trace lines as every provider's send path: where, and never what.
        tracing::trace!(provider, model, url = %route.url(), "sending a decision request");
        let started = std::time::Instant::now();
        let raw = match self.format {
            WireFormat::SystemOne => {
                let body = SystemOneBody { model, request };
                self.transport
                    .post_json(provider, route, &body, hint, secret)
                    .await
            }
            WireFormat::OpenAiDecisions => {
                let body = DecisionsBody { model, request };
                self.transport
                    .post_json(provider, route, &body, hint, secret)
                    .await
            }
        }?;
        tracing::trace!(
            provider,
            status = raw.status.as_u16(),
            request_id = raw.request_id(REQUEST_ID_HEADER),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "decision request answered"
        );
        Ok(raw)
    }

    /// One request: sent, classified, read and checked.
    async fn exchange(
        &self,
        request: &DecisionRequest,
        model: &str,
    ) -> Result<(DecisionResponse, ProviderReply), Failure> {
        let provider = self.host.name();
        let raw = self.post(request, model).await.map_err(Failure::Provider)?;
        if !raw.status.is_success() {
            return Err(Failure::Provider(error_reply(
                self.host,
                provider,
                &raw,
                self.api_key.as_deref(),
            )));
        }
        let request_id = raw.request_id(REQUEST_ID_HEADER).map(str::to_owned);
        let read = match self.format {
            WireFormat::SystemOne => reply::read_system_one(request, &raw.body),
            WireFormat::OpenAiDecisions => reply::read_decisions(request, &raw.body),
        };
        let answers =
            read.map_err(|error| Failure::Checked(error.with_request_id(request_id.as_deref())))?;
        let answered_by = answers.model.unwrap_or_else(|| model.to_owned());
        let mut response = DecisionResponse::new(
            request,
            answers.answers,
            answers.usage,
            answered_by.clone(),
            ProbabilitySource::DecisionModel,
        )
        .map_err(|error| Failure::Checked(error.with_request_id(request_id.as_deref())))?;
        if let Some(id) = &request_id {
            response = response.with_request_id(id.clone());
        }
        for note in &answers.notes {
            // A note names a field and a JSON type, never a value.
            tracing::warn!(
                provider,
                request_id = request_id.as_deref(),
                note = note.as_str(),
                "part of a decision reply could not be read; the answers stand"
            );
        }
        response = response.with_notes(answers.notes);
        // What the span records: the answering model, the usage and the request id.
        let trace = ProviderReply {
            model: answered_by,
            usage: answers.usage,
            request_id,
            ..ProviderReply::default()
        };
        Ok((response, trace))
    }
}

/// How a request failed: at the host (or on the way), or in the client's checks.
enum Failure {
    Provider(ProviderError),
    Checked(DecisionError),
}

#[async_trait::async_trait]
impl DecisionClient for SystemOneClient {
    fn default_model(&self) -> Option<&str> {
        Some(&self.model)
    }

    async fn decide(&self, request: &DecisionRequest) -> Result<DecisionResponse, DecisionError> {
        check_limits(request, &self.limits, self.host.name())?;
        let model = self
            .host
            .wire_model(request.model().unwrap_or(&self.model))
            .into_owned();
        let trace = self.telemetry.decision_call(&model);
        let outcome = self
            .exchange(request, &model)
            .instrument(trace.span().clone())
            .await;
        match outcome {
            Ok((response, reply)) => {
                trace.replied(&reply, false);
                Ok(response)
            }
            Err(Failure::Provider(error)) => {
                trace.failed(&error);
                Err(DecisionError::from_provider(&error))
            }
            Err(Failure::Checked(error)) => {
                trace.failed_decision(error.kind());
                tracing::debug!(
                    provider = self.host.name(),
                    %error,
                    request_id = error.request_id(),
                    "decision reply refused"
                );
                Err(error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Result<SystemOneClient, SystemOneConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        SystemOneClient::from_lookup(&|name| map.get(name).cloned())
    }

    #[test]
    fn the_environment_picks_typesafe_by_key_and_any_host_by_url() {
        assert_eq!(env(&[]).unwrap_err(), SystemOneConfigError::NotConfigured);
        let typesafe = env(&[("TYPESAFE_API_KEY", "apikey_1")]).unwrap();
        assert_eq!(typesafe.host(), DecisionHost::TypeSafe);
        assert_eq!(typesafe.endpoint(), "https://api.typesafe.ai/v1/systemone");
        assert_eq!(typesafe.model(), SYSTEM_ONE_DEFAULT_MODEL);
        let local = env(&[("TYPESAFE_BASE_URL", "http://127.0.0.1:8787/")]).unwrap();
        assert_eq!(local.host(), DecisionHost::Compatible);
        assert_eq!(local.endpoint(), "http://127.0.0.1:8787/v1/systemone");
        let litellm = env(&[
            ("TYPESAFE_BASE_URL", "http://localhost:4000"),
            ("TYPESAFE_HOST", "litellm"),
            ("TYPESAFE_WIRE_FORMAT", "openai-decisions"),
            ("TYPESAFE_DEFAULT_MODEL", "jev"),
        ])
        .unwrap();
        assert_eq!(litellm.endpoint(), "http://localhost:4000/v1/decisions");
        assert_eq!(litellm.limits().max_questions, Some(128));
        assert_eq!(litellm.model(), "jev");
        assert_eq!(
            env(&[
                ("TYPESAFE_BASE_URL", "http://x"),
                ("TYPESAFE_HOST", "fireworks")
            ])
            .unwrap_err(),
            SystemOneConfigError::MissingApiKey { host: "fireworks" }
        );
        let unknown = env(&[("TYPESAFE_API_KEY", "k"), ("TYPESAFE_HOST", "vercel")]).unwrap_err();
        assert!(unknown.to_string().contains("`vercel`"), "{unknown}");
        let format =
            env(&[("TYPESAFE_API_KEY", "k"), ("TYPESAFE_WIRE_FORMAT", "xml")]).unwrap_err();
        assert!(format.to_string().contains("openai-decisions"), "{format}");
    }

    #[test]
    fn malformed_variables_are_refused_naming_them_and_a_v1_base_url_is_read() {
        for (pairs, variable) in [
            (
                &[("TYPESAFE_BASE_URL", "127.0.0.1 port 8787")][..],
                "TYPESAFE_BASE_URL",
            ),
            (
                &[("TYPESAFE_API_KEY", "apikey_1\napikey_2")][..],
                "TYPESAFE_API_KEY",
            ),
        ] {
            let error = env(pairs).unwrap_err();
            let message = error.to_string();
            assert!(
                message.starts_with(&format!("the environment variable {variable} ")),
                "{message}"
            );
            assert!(!message.contains("apikey_2"), "{message}");
        }
        let padded = env(&[
            ("TYPESAFE_BASE_URL", " http://127.0.0.1:8787/v1/ \n"),
            ("TYPESAFE_API_KEY", " apikey_1\n"),
        ])
        .unwrap();
        assert_eq!(padded.endpoint(), "http://127.0.0.1:8787/v1/systemone");
        assert_eq!(padded.api_key.as_deref(), Some("apikey_1"));
    }

    #[test]
    fn debug_never_shows_the_key() {
        let client = SystemOneClient::typesafe("apikey_SECRET_123");
        let debug = format!("{client:?}");
        assert!(!debug.contains("SECRET"), "{debug}");
        assert!(debug.contains("[redacted]"), "{debug}");
    }
}
