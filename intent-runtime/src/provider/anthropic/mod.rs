//! Anthropic's Messages API as a [`Provider`]: top-level `system`, `max_tokens` always sent,
//! `output_config.format` for schemas Anthropic accepts, refusals, truncation and classified
//! errors.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::header::{HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

mod batch;
mod cache_breakpoints;
mod stream;

use self::cache_breakpoints::{Breakpoints, minimum_cacheable_tokens};
use self::stream::MessagesStream;
use super::ReplyStream;
use super::error::bounded_message;
use super::http::{
    self, ErrorBody, HttpTransport, ProviderConfigError, RawResponse, Route, RouteCell, base_kind,
    base_url_variable, decode, error_from_response, invalid_response, names_schema, set_variable,
    sse_events, trim_base_url,
};
use super::{
    Message, Part, Provider, ProviderError, ProviderErrorKind, ProviderReply, ProviderRequest,
    ResponseFormat,
};
use crate::media::{Media, MediaLimits};
use crate::result::Usage;
use crate::schema::derived::DerivedCache;

/// Anthropic's API root (the path `/v1/messages` is appended).
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The model used when neither the request nor `ANTHROPIC_MODEL` names one.
pub const ANTHROPIC_DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// The output-token limit sent when a request sets none (Anthropic requires one).
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 4096;

/// The API version this provider speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

const REQUEST_ID_HEADER: &str = "request-id";

/// Words that, in a 400's message, mean the output schema was refused.
const SCHEMA_WORDS: &[&str] = &["output_config", "schema"];

/// Keywords Anthropic's structured outputs reject: numeric and length constraints.
const UNSUPPORTED_KEYWORDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
    "minProperties",
    "maxProperties",
];

/// Anthropic Messages (`POST {base}/v1/messages`).
///
/// The API key is never printed: not by `Debug`, not in errors, not in logs.
#[derive(Clone)]
pub struct Anthropic {
    api_key: String,
    base_url: String,
    model: String,
    max_tokens: u32,
    prompt_cache: bool,
    media_limits: MediaLimits,
    transport: HttpTransport,
    route: RouteCell,
}

impl Anthropic {
    /// A provider for Anthropic's API with this key, the default base URL and model.
    pub fn new(api_key: impl Into<String>) -> Self {
        Self {
            api_key: api_key.into(),
            base_url: ANTHROPIC_DEFAULT_BASE_URL.to_owned(),
            model: ANTHROPIC_DEFAULT_MODEL.to_owned(),
            max_tokens: ANTHROPIC_DEFAULT_MAX_TOKENS,
            prompt_cache: true,
            media_limits: MediaLimits::ANTHROPIC,
            transport: HttpTransport::default(),
            route: RouteCell::default(),
        }
    }

    /// Reads `ANTHROPIC_API_KEY` (required), `ANTHROPIC_BASE_URL` and `ANTHROPIC_MODEL`
    /// (optional).
    pub fn from_env() -> Result<Self, ProviderConfigError> {
        Self::from_lookup(&|name| std::env::var(name).ok())
    }

    /// [`Self::from_env`] over any source of variables.
    pub(crate) fn from_lookup(
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ProviderConfigError> {
        let set = |name: &str| set_variable(lookup, name);
        let api_key = set("ANTHROPIC_API_KEY").ok_or(ProviderConfigError::MissingApiKey {
            variable: "ANTHROPIC_API_KEY",
            provider: "Anthropic",
        })?;
        let mut provider = Self::new(api_key);
        if let Some(base_url) = base_url_variable(lookup, "ANTHROPIC_BASE_URL") {
            provider = provider.with_base_url(base_url);
        }
        if let Some(model) = set("ANTHROPIC_MODEL") {
            provider = provider.with_model(model);
        }
        Ok(provider)
    }

    /// Sends requests to another API root (without `/v1`).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = trim_base_url(base_url);
        self.route.reset();
        self
    }

    /// Uses this model when a request names none.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// The `max_tokens` sent when a request sets no limit (default 4096).
    pub fn with_default_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Whether requests mark their stable prefixes with `cache_control` breakpoints
    /// (default `true`): the system prompt, the first turn and, on a retry, the last turn,
    /// each when it may reach the model's minimum cacheable length.
    ///
    /// Anthropic bills a cache write at 1.25 times the input price and a cache read at a
    /// tenth of it, so the marks pay for themselves when a prefix is sent again within the
    /// cache's lifetime (five minutes): by a retry, or by another call of the same method
    /// with the same system prompt. Turn them off for one-off calls that never repeat.
    pub fn with_prompt_cache(mut self, enabled: bool) -> Self {
        self.prompt_cache = enabled;
        self
    }

    /// What the API takes of images and PDFs (default [`MediaLimits::ANTHROPIC`]); a
    /// request over a limit is refused before it is sent.
    pub fn with_media_limits(mut self, limits: MediaLimits) -> Self {
        self.media_limits = limits;
        self
    }

    /// How long to wait for a connection (default 10 s).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.transport.set_connect_timeout(timeout);
        self
    }

    /// The most bytes read from one response (default
    /// [`DEFAULT_MAX_RESPONSE_BYTES`](crate::provider::DEFAULT_MAX_RESPONSE_BYTES), 32 MiB);
    /// a longer reply fails the call at once with a non-transient
    /// [`InvalidResponse`](crate::provider::ProviderErrorKind::InvalidResponse).
    pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        self.transport.set_max_response_bytes(bytes);
        self
    }

    /// How long one whole request may take (default 120 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.transport.set_request_timeout(timeout);
        self
    }

    /// Uses this `reqwest` client instead of building one.
    pub fn with_http_client(mut self, client: reqwest::Client) -> Self {
        self.transport.set_client(client);
        self
    }

    /// The API root requests go to.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The Messages URL and the key and version headers, built on the first call.
    fn route(&self) -> Result<&Route, ProviderError> {
        self.route.get_or_build(|| {
            let headers = vec![
                Route::secret_header("anthropic", "x-api-key", &self.api_key)?,
                (
                    HeaderName::from_static("anthropic-version"),
                    HeaderValue::from_static(ANTHROPIC_VERSION),
                ),
            ];
            Route::new(
                "anthropic",
                &format!("{}/v1/messages", self.base_url),
                headers,
            )
        })
    }
}

impl Anthropic {
    /// The model `request` goes to: its own, else the provider's default.
    pub(crate) fn model_of<'a>(&'a self, request: &'a ProviderRequest) -> &'a str {
        request.model.as_deref().unwrap_or(&self.model)
    }

    /// The body of one request (the same for a streamed one, but for its flag); a
    /// request whose media break [`MediaLimits`] is refused here, before anything is sent.
    pub(crate) fn body<'a>(
        &self,
        request: &'a ProviderRequest,
        model: &'a str,
        schema: Option<&'a RawValue>,
    ) -> Result<MessagesBody<'a>, ProviderError> {
        request.check_media("anthropic", &self.media_limits)?;
        let cache_minimum = self.prompt_cache.then(|| minimum_cacheable_tokens(model));
        Ok(request_body(
            request,
            model,
            self.max_tokens,
            schema,
            cache_minimum,
        ))
    }

    /// The key and version headers (the key marked sensitive).
    pub(crate) fn auth_headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>, ProviderError> {
        Ok(self.route()?.headers().to_vec())
    }

    /// The key, for redacting it from anything a server echoes back.
    pub(crate) fn secret(&self) -> Option<&str> {
        Some(self.api_key.as_str())
    }

    /// The HTTP transport (client, timeouts, response limit) live calls use.
    pub(crate) fn transport(&self) -> &HttpTransport {
        &self.transport
    }

    /// The classified error of a reply with an error status.
    pub(crate) fn error_reply(&self, raw: &RawResponse) -> ProviderError {
        let error = ErrorBody::parse(&raw.body_text());
        let kind = classify(raw.status, &error);
        error_from_response(
            "anthropic",
            raw,
            kind,
            &error,
            REQUEST_ID_HEADER,
            Some(self.api_key.as_str()),
        )
    }
}

impl fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Anthropic")
            .field("api_key", &"[redacted]")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("prompt_cache", &self.prompt_cache)
            .field("media_limits", &self.media_limits)
            .field("transport", &self.transport)
            .finish()
    }
}

#[async_trait::async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn default_model(&self) -> &str {
        &self.model
    }

    fn server_url(&self) -> Option<&str> {
        Some(Anthropic::base_url(self))
    }

    async fn complete(&self, request: &ProviderRequest) -> Result<ProviderReply, ProviderError> {
        let model = self.model_of(request);
        let route = self.route()?;
        let schema = output_schema(request);
        let body = self.body(request, model, schema.as_deref())?;
        let secret = Some(self.api_key.as_str());
        tracing::debug!(provider = "anthropic", %model, url = %route.url(), "sending a message request");
        let started = Instant::now();
        let raw = self
            .transport
            .post_json("anthropic", route, &body, body.size_hint(), secret)
            .await?;
        tracing::debug!(
            provider = "anthropic",
            status = raw.status.as_u16(),
            request_id = raw.request_id(REQUEST_ID_HEADER),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "message request answered"
        );
        if !raw.status.is_success() {
            return Err(self.error_reply(&raw));
        }
        parse_reply(&raw, model, secret)
    }

    /// Sends the request with `"stream": true` and reads its events as they arrive.
    async fn stream(&self, request: &ProviderRequest) -> Result<ReplyStream, ProviderError> {
        let model = request.model.as_deref().unwrap_or(&self.model);
        let route = self.route()?;
        let schema = output_schema(request);
        let mut body = self.body(request, model, schema.as_deref())?;
        body.stream = true;
        let secret = Some(self.api_key.as_str());
        tracing::debug!(provider = "anthropic", %model, url = %route.url(), "streaming a message request");
        let response = self
            .transport
            .post_json_streaming("anthropic", route, &body, body.size_hint(), secret)
            .await?;
        let response = response.map_err(|raw| self.error_reply(&raw))?;
        let request_id = RawResponse::head(&response)
            .request_id(REQUEST_ID_HEADER)
            .map(str::to_owned);
        let events = sse_events(
            "anthropic",
            response,
            self.transport.max_response_bytes(),
            secret,
        );
        Ok(decode(
            events,
            MessagesStream::new(model, request_id, secret),
        ))
    }

    /// `true` when the request's schema goes out as `output_config.format`: a strict
    /// schema that [`anthropic_accepts_schema`] accepts. A refused schema is not sent, so
    /// the prompt's full contract is all the model has.
    fn enforces_schema(&self, request: &ProviderRequest) -> bool {
        matches!(schema_verdict(request), Some(Ok(_)))
    }

    /// Anthropic's Message Batches, with this provider's key, base URL and model.
    fn batch(&self) -> Option<crate::provider::batch::BatchProvider> {
        Some(crate::provider::batch::BatchProvider::anthropic(
            self.clone(),
        ))
    }
}

/// The body of one Messages request, serialized straight from the request: the prompts
/// and the schema are borrowed, never deep-copied into a `Value` tree.
#[derive(Serialize)]
pub(crate) struct MessagesBody<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<Content<'a>>,
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'a>>,
    /// Asks for the reply as server-sent events.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Content<'a>,
}

/// A turn's or the system prompt's content: a plain string, one text block when it
/// carries a cache breakpoint (only a block can), or blocks when the turn has media.
#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(&'a str),
    Cached([CachedText<'a>; 1]),
    Blocks(Blocks<'a>),
}

impl<'a> Content<'a> {
    fn of_turn(message: &'a Message, cached: bool) -> Self {
        if message.media.is_empty() {
            Content::new(&message.content, cached)
        } else {
            Content::Blocks(Blocks { message, cached })
        }
    }

    fn new(text: &'a str, cached: bool) -> Self {
        if cached {
            Content::Cached([CachedText {
                kind: "text",
                text,
                cache_control: CacheControl { kind: "ephemeral" },
            }])
        } else {
            Content::Text(text)
        }
    }

    fn len(&self) -> usize {
        match self {
            Content::Text(text) => text.len(),
            Content::Cached([block]) => block.text.len() + 48,
            Content::Blocks(blocks) => {
                blocks.message.content.len()
                    + blocks
                        .message
                        .media
                        .iter()
                        .map(|part| part.media.wire_len() + 128)
                        .sum::<usize>()
            }
        }
    }
}

/// A turn with media as Messages content blocks: `text`, `image` and `document` (a PDF),
/// each source `base64` with the media type, or `url`. A cache breakpoint goes on the
/// turn's last block, so the cached prefix holds every image and document of the turn.
struct Blocks<'a> {
    message: &'a Message,
    cached: bool,
}

impl Serialize for Blocks<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let parts: Vec<Part<'_>> = self.message.parts().collect();
        let mut blocks = serializer.serialize_seq(Some(parts.len()))?;
        for (index, part) in parts.iter().enumerate() {
            let cache_control = (self.cached && index + 1 == parts.len())
                .then_some(CacheControl { kind: "ephemeral" });
            match part {
                Part::Text(text) => blocks.serialize_element(&Block {
                    kind: "text",
                    text: Some(text),
                    source: None,
                    cache_control,
                })?,
                Part::Media(media) => blocks.serialize_element(&Block {
                    kind: if media.is_image() {
                        "image"
                    } else {
                        "document"
                    },
                    text: None,
                    source: Some(Source::of(media)),
                    cache_control,
                })?,
            }
        }
        blocks.end()
    }
}

#[derive(Serialize)]
struct Block<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<Source<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Source<'a> {
    /// The media's shared base64 text, borrowed: nothing is encoded or copied per request.
    Base64 {
        media_type: &'static str,
        data: &'a str,
    },
    Url {
        url: &'a str,
    },
}

impl<'a> Source<'a> {
    fn of(media: &'a Media) -> Self {
        match media.url_str() {
            Some(url) => Source::Url { url },
            None => Source::Base64 {
                media_type: media.media_type().map_or("application/pdf", |t| t.as_str()),
                data: media.base64().unwrap_or_default(),
            },
        }
    }
}

/// What a turn's media weigh in the breakpoint estimate, as prompt bytes: Anthropic bills
/// an image at up to about 1,600 tokens and a PDF page at up to about 3,000 (its text and
/// its picture), and the estimate counts three bytes a token. Generous on purpose: a
/// breakpoint that turns out too early costs nothing.
fn media_prompt_bytes(message: &Message) -> usize {
    message
        .media
        .iter()
        .map(|part| {
            let tokens = if part.media.is_image() {
                1_600
            } else {
                3_000 * part.media.pages().unwrap_or(1)
            };
            tokens * 3
        })
        .sum()
}

#[derive(Serialize)]
struct CachedText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    cache_control: CacheControl,
}

#[derive(Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct OutputConfig<'a> {
    format: SchemaFormat<'a>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename = "json_schema")]
struct SchemaFormat<'a> {
    schema: &'a RawValue,
}

impl MessagesBody<'_> {
    /// About how long the JSON will be: the prompts, the schema and room for escapes and
    /// the other fields.
    pub(crate) fn size_hint(&self) -> usize {
        let prompts = self.system.as_ref().map_or(0, Content::len)
            + self
                .messages
                .iter()
                .map(|turn| turn.content.len() + 32)
                .sum::<usize>();
        let schema = self
            .output_config
            .as_ref()
            .map_or(0, |config| config.format.schema.get().len());
        prompts + prompts / 16 + schema + 256
    }
}

/// The body of one request; `schema` is what [`output_schema`] gave for it, and
/// `cache_minimum` the model's minimum cacheable prompt in tokens (`None`: no breakpoints).
fn request_body<'a>(
    request: &'a ProviderRequest,
    model: &'a str,
    default_max_tokens: u32,
    schema: Option<&'a RawValue>,
    cache_minimum: Option<u64>,
) -> MessagesBody<'a> {
    let marks = cache_minimum.map_or_else(Breakpoints::default, |minimum| {
        let turns: Vec<usize> = request
            .messages
            .iter()
            .map(|m| m.content.len() + media_prompt_bytes(m))
            .collect();
        Breakpoints::place(request.system.len(), &turns, minimum)
    });
    let count = request.messages.len();
    MessagesBody {
        model,
        max_tokens: request.max_output_tokens.unwrap_or(default_max_tokens),
        system: Some(request.system.as_str())
            .filter(|system| !system.is_empty())
            .map(|system| Content::new(system, marks.system)),
        messages: request
            .messages
            .iter()
            .enumerate()
            .map(|(index, message)| Turn {
                role: message.role.as_str(),
                content: Content::of_turn(message, marks.marks_turn(index, count)),
            })
            .collect(),
        temperature: request.temperature.and_then(http::temperature_value),
        output_config: schema.map(|schema| OutputConfig {
            format: SchemaFormat { schema },
        }),
        stream: false,
    }
}

/// The schema to send as `output_config.format` (its JSON text), when the request wants
/// one and Anthropic accepts it; otherwise the prompt's contract alone shapes the reply.
pub(crate) fn output_schema(request: &ProviderRequest) -> Option<Arc<RawValue>> {
    match schema_verdict(request)? {
        Ok(text) => Some(text),
        Err(reason) => {
            tracing::debug!(
                provider = "anthropic",
                schema = %request.schema_name,
                %reason,
                "structured outputs would reject this schema; sending the prompt contract without a schema"
            );
            None
        }
    }
}

/// For a strict-schema request, whether Anthropic accepts its schema: the schema's JSON
/// text, or the reason it would be refused. `None` when the request sends no schema.
///
/// The verdict and the text are kept per schema: both walk the whole schema, and every
/// request for a typed target sends the same one (and asks twice: once whether the schema
/// is enforced, once to send it).
fn schema_verdict(request: &ProviderRequest) -> Option<Result<Arc<RawValue>, Arc<str>>> {
    static ACCEPTED: LazyLock<DerivedCache<Result<Arc<RawValue>, Arc<str>>>> =
        LazyLock::new(DerivedCache::new);
    if request.response_format != ResponseFormat::JsonSchema {
        return None;
    }
    let schema = request.schema.as_ref()?;
    Some(ACCEPTED.get_or_derive(schema, || {
        anthropic_accepts_schema(schema)
            .map(|()| http::schema_json(schema))
            .map_err(Arc::from)
    }))
}

/// Whether Anthropic's structured outputs accept `schema`; the reason when they do not.
///
/// Rejected: recursion (a `$ref` cycle), external or dangling `$ref`s, numeric and length
/// constraints, `minItems` above 1, and `additionalProperties` other than `false`.
pub fn anthropic_accepts_schema(schema: &Value) -> Result<(), String> {
    SchemaCheck {
        root: schema,
        expanding: Vec::new(),
        expanded: HashSet::new(),
    }
    .check(schema, "#")
}

struct SchemaCheck<'a> {
    root: &'a Value,
    /// The `$ref`s being expanded on the current path: meeting one again is recursion.
    expanding: Vec<&'a str>,
    /// `$ref`s already checked in full, so shared definitions are walked once.
    expanded: HashSet<&'a str>,
}

impl<'a> SchemaCheck<'a> {
    fn check(&mut self, node: &'a Value, at: &str) -> Result<(), String> {
        let Value::Object(map) = node else {
            return Ok(());
        };
        if let Some(keyword) = UNSUPPORTED_KEYWORDS.iter().find(|k| map.contains_key(**k)) {
            return Err(format!(
                "`{keyword}` at {at} (numeric and length constraints are not supported)"
            ));
        }
        if let Some(min) = map
            .get("minItems")
            .and_then(Value::as_u64)
            .filter(|min| *min > 1)
        {
            return Err(format!(
                "`minItems: {min}` at {at} (only 0 or 1 is supported)"
            ));
        }
        match map.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => {
                return Err(format!("`additionalProperties` other than false at {at}"));
            }
        }
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            self.follow(reference, at)?;
        }
        for (keyword, child) in map {
            match keyword.as_str() {
                "properties" | "patternProperties" | "$defs" | "definitions" => {
                    for (name, schema) in child.as_object().into_iter().flatten() {
                        self.check(schema, &format!("{at}/{keyword}/{name}"))?;
                    }
                }
                "items" | "not" | "contains" | "if" | "then" | "else" | "propertyNames" => {
                    if let Value::Array(schemas) = child {
                        for (index, schema) in schemas.iter().enumerate() {
                            self.check(schema, &format!("{at}/{keyword}/{index}"))?;
                        }
                    } else {
                        self.check(child, &format!("{at}/{keyword}"))?;
                    }
                }
                "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                    for (index, schema) in child.as_array().into_iter().flatten().enumerate() {
                        self.check(schema, &format!("{at}/{keyword}/{index}"))?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn follow(&mut self, reference: &'a str, at: &str) -> Result<(), String> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(format!("external `$ref` \"{reference}\" at {at}"));
        };
        if self.expanding.contains(&reference) {
            return Err(format!("recursive `$ref` \"{reference}\" at {at}"));
        }
        if self.expanded.contains(reference) {
            return Ok(());
        }
        let Some(target) = self.root.pointer(pointer) else {
            return Err(format!("`$ref` \"{reference}\" at {at} points nowhere"));
        };
        self.expanding.push(reference);
        let result = self.check(target, reference);
        self.expanding.pop();
        self.expanded.insert(reference);
        result
    }
}

#[derive(Deserialize)]
struct MessagesResponse {
    #[serde(default)]
    id: Option<String>,
    content: Vec<ContentBlock>,
    model: Option<String>,
    stop_reason: Option<String>,
    usage: Option<MessagesUsage>,
}

#[derive(Deserialize)]
struct ContentBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize, Default, Clone, Copy)]
pub(crate) struct MessagesUsage {
    pub(crate) input_tokens: Option<u64>,
    pub(crate) output_tokens: Option<u64>,
    pub(crate) cache_creation_input_tokens: Option<u64>,
    pub(crate) cache_read_input_tokens: Option<u64>,
}

pub(crate) fn parse_reply(
    raw: &RawResponse,
    requested_model: &str,
    secret: Option<&str>,
) -> Result<ProviderReply, ProviderError> {
    let parsed: MessagesResponse = serde_json::from_slice(&raw.body).map_err(|err| {
        invalid_response(
            "anthropic",
            raw,
            &format!("the reply is not a Messages response ({err})"),
            REQUEST_ID_HEADER,
            secret,
        )
    })?;
    let text: String = parsed
        .content
        .iter()
        .filter(|block| block.kind == "text")
        .filter_map(|block| block.text.as_deref())
        .collect();
    Ok(ProviderReply {
        response_id: parsed.id.filter(|id| !id.is_empty()),
        ..messages_reply(
            text,
            parsed.stop_reason,
            parsed.usage.map_or_else(Usage::default, usage),
            parsed.model,
            requested_model,
            raw.request_id(REQUEST_ID_HEADER).map(str::to_owned),
        )
    })
}

/// The reply from its parts, read from one response or gathered from a stream's events:
/// the stop reason says whether it was truncated or refused (a refusal's text becomes
/// its message).
pub(crate) fn messages_reply(
    text: String,
    stop_reason: Option<String>,
    usage: Usage,
    model: Option<String>,
    requested_model: &str,
    request_id: Option<String>,
) -> ProviderReply {
    let truncated = matches!(
        stop_reason.as_deref(),
        Some("max_tokens" | "model_context_window_exceeded")
    );
    let (text, refusal) = if stop_reason.as_deref() == Some("refusal") {
        let message = if text.trim().is_empty() {
            "the model declined to answer (stop_reason: refusal)".to_owned()
        } else {
            // Carried into an issue and the next prompt: an excerpt, like any provider
            // message.
            bounded_message(text)
        };
        (String::new(), Some(message))
    } else {
        (text, None)
    };
    ProviderReply {
        text,
        refusal,
        truncated,
        stop_reason,
        usage,
        model: model
            .filter(|model| !model.is_empty())
            .unwrap_or_else(|| requested_model.to_owned()),
        request_id,
        // The message's id is read by the caller: from the body, or from a stream's
        // `message_start`.
        response_id: None,
        // The Messages API reports no log-probabilities.
        logprobs: None,
    }
}

/// Anthropic's `input_tokens` excludes cached and cache-written tokens; all three are added
/// so `input_tokens` means the whole prompt, as it does for OpenAI.
pub(crate) fn usage(usage: MessagesUsage) -> Usage {
    let cache_read = usage.cache_read_input_tokens.unwrap_or(0);
    let cache_write = usage.cache_creation_input_tokens.unwrap_or(0);
    Usage {
        input_tokens: usage.input_tokens.unwrap_or(0) + cache_write + cache_read,
        output_tokens: usage.output_tokens.unwrap_or(0),
        cached_input_tokens: cache_read,
        cache_write_input_tokens: cache_write,
    }
}

/// The kind of a Messages error reply, by documented status, and by the body's error type
/// for statuses Anthropic does not document.
fn classify(status: StatusCode, error: &ErrorBody) -> ProviderErrorKind {
    match status.as_u16() {
        400 if names_schema(error, SCHEMA_WORDS) => ProviderErrorKind::SchemaRejected,
        400 | 413 => ProviderErrorKind::InvalidRequest,
        504 => ProviderErrorKind::Timeout,
        401 | 402 | 403 | 404 | 429 | 500 | 529 => base_kind(status),
        _ => error
            .error_type
            .as_deref()
            .and_then(kind_of_error_type)
            .unwrap_or_else(|| base_kind(status)),
    }
}

pub(crate) fn kind_of_error_type(error_type: &str) -> Option<ProviderErrorKind> {
    Some(match error_type {
        "invalid_request_error" | "request_too_large" => ProviderErrorKind::InvalidRequest,
        "authentication_error" => ProviderErrorKind::Authentication,
        "billing_error" | "permission_error" => ProviderErrorKind::Permission,
        "not_found_error" => ProviderErrorKind::NotFound,
        "rate_limit_error" => ProviderErrorKind::RateLimited,
        "api_error" => ProviderErrorKind::Server,
        "timeout_error" => ProviderErrorKind::Timeout,
        "overloaded_error" => ProviderErrorKind::Overloaded,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::*;
    use serde_json::json;

    fn strict_object() -> Value {
        json!({
            "type": "object",
            "properties": {
                "value": {"type": "array", "items": {"$ref": "#/$defs/Line"}, "minItems": 1}
            },
            "required": ["value"],
            "additionalProperties": false,
            "$defs": {"Line": {
                "type": "object",
                "properties": {"minimum": {"type": "integer"}},
                "required": ["minimum"],
                "additionalProperties": false
            }}
        })
    }

    #[test]
    fn a_strict_schema_is_accepted() {
        assert_eq!(anthropic_accepts_schema(&strict_object()), Ok(()));
    }

    #[test]
    fn recursion_is_rejected() {
        let schema = json!({
            "$ref": "#/$defs/Node",
            "$defs": {"Node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
            }, "additionalProperties": false}}
        });
        let reason = anthropic_accepts_schema(&schema).unwrap_err();
        assert!(
            reason.starts_with("recursive `$ref` \"#/$defs/Node\""),
            "{reason}"
        );
        let root = json!({"type": "object", "properties": {"next": {"$ref": "#"}}});
        assert!(
            anthropic_accepts_schema(&root)
                .unwrap_err()
                .starts_with("recursive")
        );
    }

    #[test]
    fn shared_definitions_are_not_recursion() {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/X"}, "b": {"$ref": "#/$defs/X"}},
            "$defs": {"X": {"type": "string"}}
        });
        assert_eq!(anthropic_accepts_schema(&schema), Ok(()));
    }

    #[test]
    fn constraints_and_open_objects_are_rejected() {
        let cases = [
            (json!({"type": "integer", "minimum": 0}), "`minimum` at #"),
            (
                json!({"type": "object", "properties": {"s": {"type": "string", "maxLength": 3}}}),
                "`maxLength` at #/properties/s",
            ),
            (
                json!({"type": "array", "minItems": 2}),
                "`minItems: 2` at #",
            ),
            (
                json!({"type": "object", "additionalProperties": true}),
                "`additionalProperties` other than false at #",
            ),
            (
                json!({"type": "object", "additionalProperties": {"type": "string"}}),
                "`additionalProperties` other than false at #",
            ),
            (
                json!({"$ref": "https://example.com/s.json"}),
                "external `$ref` \"https://example.com/s.json\" at #",
            ),
            (
                json!({"$ref": "#/$defs/Missing"}),
                "`$ref` \"#/$defs/Missing\" at # points nowhere",
            ),
            (
                json!({"anyOf": [{"type": "null"}, {"type": "number", "multipleOf": 2}]}),
                "`multipleOf` at #/anyOf/1",
            ),
        ];
        for (schema, expected) in cases {
            let reason = anthropic_accepts_schema(&schema).unwrap_err();
            assert!(reason.starts_with(expected), "{reason} vs {expected}");
        }
    }

    #[test]
    fn request_body_carries_output_config_only_for_accepted_schemas() {
        let mut request = ProviderRequest::text("sys", "hi");
        request.response_format = ResponseFormat::JsonSchema;
        request.schema = Some(Arc::new(strict_object()));
        let body = serde_json::to_value(request_body(
            &request,
            "m",
            4096,
            output_schema(&request).as_deref(),
            None,
        ))
        .unwrap();
        assert_eq!(
            body["output_config"],
            json!({"format": {"type": "json_schema", "schema": strict_object()}})
        );
        request.schema = Some(Arc::new(json!({"type": "integer", "minimum": 1})));
        assert!(
            serde_json::to_value(request_body(
                &request,
                "m",
                4096,
                output_schema(&request).as_deref(),
                None,
            ))
            .unwrap()
            .get("output_config")
            .is_none()
        );
        request.response_format = ResponseFormat::JsonObject;
        request.schema = Some(Arc::new(strict_object()));
        assert!(
            serde_json::to_value(request_body(
                &request,
                "m",
                4096,
                output_schema(&request).as_deref(),
                None,
            ))
            .unwrap()
            .get("output_config")
            .is_none()
        );
    }

    #[test]
    fn only_a_schema_that_is_sent_is_enforced() {
        let provider = Anthropic::new("key");
        let mut request = ProviderRequest::text("", "");
        request.response_format = ResponseFormat::JsonSchema;
        request.schema = Some(Arc::new(strict_object()));
        assert!(provider.enforces_schema(&request), "accepted schema");
        request.schema = Some(Arc::new(json!({"type": "integer", "minimum": 1})));
        assert!(!provider.enforces_schema(&request), "refused schema");
        request.response_format = ResponseFormat::JsonObject;
        request.schema = Some(Arc::new(strict_object()));
        assert!(!provider.enforces_schema(&request), "json_object");
        assert!(
            !provider.enforces_schema(&ProviderRequest::text("", "")),
            "text"
        );
    }

    #[test]
    fn undocumented_statuses_fall_back_to_the_error_type() {
        let overloaded = ErrorBody {
            error_type: Some("overloaded_error".into()),
            ..ErrorBody::default()
        };
        assert_eq!(
            classify(StatusCode::from_u16(520).unwrap(), &overloaded),
            ProviderErrorKind::Overloaded
        );
        assert_eq!(
            classify(StatusCode::from_u16(418).unwrap(), &ErrorBody::default()),
            ProviderErrorKind::InvalidRequest
        );
    }

    #[test]
    fn from_env_reads_key_base_url_and_model() {
        let vars: HashMap<&str, &str> = [
            ("ANTHROPIC_API_KEY", "sk-ant-test"),
            ("ANTHROPIC_BASE_URL", "http://localhost:9/"),
            ("ANTHROPIC_MODEL", "claude-test"),
        ]
        .into();
        let provider = Anthropic::from_lookup(&|n| vars.get(n).map(|v| (*v).to_owned())).unwrap();
        assert_eq!(provider.base_url(), "http://localhost:9");
        assert_eq!(provider.default_model(), "claude-test");
        let err = Anthropic::from_lookup(&|_| None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the environment variable ANTHROPIC_API_KEY is not set; set it to your Anthropic API key"
        );
    }

    #[test]
    fn debug_never_shows_the_key() {
        let printed = format!("{:#?}", Anthropic::new("sk-ant-very-secret"));
        assert!(!printed.contains("sk-ant-very-secret"), "{printed}");
        assert!(printed.contains("[redacted]"));
    }
}
