//! OpenAI's Batch API: the requests as a JSONL file uploaded with `purpose` `batch`, one
//! batch per file within 24 hours, polled, its output and error files read back line by
//! line.
//!
//! One adapter, [`OpenAiBatch`], speaks it for every endpoint a batch can ask for; what
//! differs between them (the connection, the `url` of each line and the batch's
//! `endpoint`, the line's body, the reply's parser) is a [`BatchEndpoint`]: Chat
//! Completions' ([`ChatEndpoint`], `/v1/chat/completions`, used by OpenAI and Azure
//! OpenAI) here, the Responses API's (`/v1/responses`) in its own folder.

use std::fmt;

use reqwest::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::json;
use serde_json::value::RawValue;

use super::OpenAi;
use super::endpoint::ChatEndpoint;
use super::reply::{REQUEST_ID_HEADER, parse_reply};
use super::request::ChatBody;
use crate::provider::batch::{
    BatchApi, BatchLimits, BatchProvider, BatchState, Input, Lines, Outcome, Sink, Submitting,
};
use crate::provider::http::{self, Connection, RawResponse};
use crate::provider::{ProviderError, ProviderErrorKind, ProviderReply, ProviderRequest};

/// OpenAI's limits on one batch's input file: 50,000 requests and 200 MB.
pub(crate) const OPENAI_BATCH_LIMITS: BatchLimits = BatchLimits {
    max_requests: 50_000,
    max_bytes: 200 * 1024 * 1024,
};

/// What one endpoint a batch asks for brings to [`OpenAiBatch`]: the files and batches
/// calls are the same for every endpoint; the lines and their results are the endpoint's.
pub(crate) trait BatchEndpoint: fmt::Debug + Send + Sync + 'static {
    /// The body of one request, as a live call sends it.
    type Body<'a>: Serialize
    where
        Self: 'a;

    /// The connection (API root, key, model, transport) the batch shares with live calls;
    /// its provider name is the batch's.
    fn connection(&self) -> &Connection;

    /// The headers that carry the key, marked sensitive.
    fn auth_headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>, ProviderError>;

    /// The `url` every line asks for and the batch's `endpoint` (the path as the Batch API
    /// names it: `/v1/chat/completions`, `/v1/responses`).
    fn line_url(&self) -> &'static str;

    /// The body of `request` in a line; `schema` is `http::schema_json` of its schema. A
    /// request the endpoint would refuse before sending is refused here.
    fn line_body<'a>(
        &'a self,
        request: &'a ProviderRequest,
        schema: Option<&'a RawValue>,
    ) -> Result<Self::Body<'a>, ProviderError>;

    /// About how many bytes `body` serialises to (the line's buffer is sized by it).
    fn body_size_hint(body: &Self::Body<'_>) -> usize;

    /// A result line's body with a success status, read as a live reply is.
    fn parse_result(&self, raw: &RawResponse) -> Result<ProviderReply, ProviderError>;

    /// The classified error of a reply with an error status (a batch call's, or a result
    /// line's).
    fn error_reply(&self, raw: &RawResponse) -> ProviderError;
}

/// Chat Completions: the line's `url` is the address's (`/v1/chat/completions` on OpenAI,
/// `/chat/completions` on Azure's v1 API), its body a live call's.
impl BatchEndpoint for ChatEndpoint {
    type Body<'a> = ChatBody<'a>;

    fn connection(&self) -> &Connection {
        &self.connection
    }

    fn auth_headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>, ProviderError> {
        ChatEndpoint::auth_headers(self)
    }

    fn line_url(&self) -> &'static str {
        self.address.batch_line_url
    }

    fn line_body<'a>(
        &'a self,
        request: &'a ProviderRequest,
        schema: Option<&'a RawValue>,
    ) -> Result<ChatBody<'a>, ProviderError> {
        self.body(request, schema)
    }

    fn body_size_hint(body: &ChatBody<'_>) -> usize {
        body.size_hint()
    }

    fn parse_result(&self, raw: &RawResponse) -> Result<ProviderReply, ProviderError> {
        parse_reply(&self.connection.provider, raw, "", self.connection.secret())
    }

    fn error_reply(&self, raw: &RawResponse) -> ProviderError {
        ChatEndpoint::error_reply(self, raw)
    }
}

/// The Batch API for one endpoint.
#[derive(Debug)]
pub(crate) struct OpenAiBatch<E> {
    endpoint: E,
}

#[derive(Serialize)]
struct Line<'a, B> {
    custom_id: &'a str,
    method: &'static str,
    url: &'static str,
    body: B,
}

#[derive(Deserialize)]
struct Created {
    id: String,
}

/// The metadata key of a batch's submission tag.
const TAG_KEY: &str = "intent_submission";

/// How far the provider's clock may be behind this machine's, in seconds, when a
/// restarted job looks for a batch it created.
const CLOCK_MARGIN_S: u64 = 15 * 60;

/// The most pages of 100 batches a restarted job reads looking for its batch.
const MAX_PAGES: usize = 50;

#[derive(Deserialize)]
struct BatchList {
    #[serde(default)]
    data: Vec<Listed>,
    #[serde(default)]
    has_more: bool,
    last_id: Option<String>,
}

#[derive(Deserialize)]
struct Listed {
    id: String,
    created_at: Option<u64>,
    metadata: Option<std::collections::HashMap<String, serde_json::Value>>,
}

#[derive(Deserialize)]
struct Batch {
    status: String,
    output_file_id: Option<String>,
    error_file_id: Option<String>,
    errors: Option<BatchErrors>,
}

#[derive(Deserialize)]
struct BatchErrors {
    #[serde(default)]
    data: Vec<BatchErrorLine>,
}

#[derive(Deserialize)]
struct BatchErrorLine {
    code: Option<String>,
    message: Option<String>,
    line: Option<u64>,
}

/// One line of a batch's output or error file (crate-visible for the Responses adapter's
/// tests, which read lines through [`OpenAiBatch::outcome`]).
#[derive(Deserialize)]
pub(crate) struct OutputLine {
    custom_id: String,
    response: Option<OutputResponse>,
    error: Option<OutputError>,
}

#[derive(Deserialize)]
struct OutputResponse {
    status_code: u16,
    request_id: Option<String>,
    body: Box<RawValue>,
}

#[derive(Deserialize)]
struct OutputError {
    code: Option<String>,
    message: Option<String>,
}

impl<E: BatchEndpoint> OpenAiBatch<E> {
    pub(crate) fn new(endpoint: E) -> Self {
        Self { endpoint }
    }

    fn name(&self) -> &str {
        &self.endpoint.connection().provider
    }

    fn secret(&self) -> Option<&str> {
        self.endpoint.connection().secret()
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.endpoint.connection().base_url())
    }

    /// Sends a request and reads its JSON reply as `R`, a non-success status classified
    /// as a live call's would be.
    async fn call<R: for<'de> Deserialize<'de>>(
        &self,
        build: impl FnOnce(&reqwest::Client) -> reqwest::RequestBuilder,
        what: &str,
    ) -> Result<R, ProviderError> {
        let headers = self.endpoint.auth_headers()?;
        let raw = self
            .endpoint
            .connection()
            .transport
            .send_built(self.name(), build, &headers, self.secret())
            .await?;
        if !raw.status.is_success() {
            return Err(self.endpoint.error_reply(&raw));
        }
        serde_json::from_slice(&raw.body).map_err(|error| {
            http::invalid_response(
                self.name(),
                &raw,
                &format!("the reply is not {what} ({error})"),
                REQUEST_ID_HEADER,
                self.secret(),
            )
        })
    }

    /// One output or error line as the item's outcome.
    pub(crate) fn outcome(&self, line: OutputLine) -> (String, Outcome) {
        let outcome = match (line.response, line.error) {
            (Some(response), _) => {
                let raw = RawResponse {
                    status: reqwest::StatusCode::from_u16(response.status_code)
                        .unwrap_or(reqwest::StatusCode::INTERNAL_SERVER_ERROR),
                    headers: reqwest::header::HeaderMap::new(),
                    body: bytes::Bytes::copy_from_slice(response.body.get().as_bytes()),
                };
                let outcome = if raw.status.is_success() {
                    self.endpoint.parse_result(&raw)
                } else {
                    Err(self.endpoint.error_reply(&raw))
                };
                match response.request_id {
                    Some(id) => outcome
                        .map(|mut reply| {
                            reply.request_id = Some(id.clone());
                            reply
                        })
                        .map_err(|error| error.with_request_id(id)),
                    None => outcome,
                }
            }
            (None, Some(error)) => Err(line_error(
                self.name(),
                error.code.as_deref(),
                error.message,
                self.secret(),
            )),
            (None, None) => Err(ProviderError::new(
                ProviderErrorKind::InvalidResponse,
                self.name(),
                "the batch's result line holds neither a response nor an error",
            )),
        };
        (line.custom_id, outcome)
    }
}

/// A per-line error of OpenAI's batch (`batch_expired`, `batch_cancelled`, or a request
/// the batch refused) as a classified error, the key redacted (the message can quote the
/// request).
fn line_error(
    provider: &str,
    code: Option<&str>,
    message: Option<String>,
    secret: Option<&str>,
) -> ProviderError {
    let kind = match code {
        Some("batch_expired") => ProviderErrorKind::Timeout,
        Some("batch_cancelled") => ProviderErrorKind::Canceled,
        _ => ProviderErrorKind::InvalidRequest,
    };
    let message = match (code, message) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (None, Some(message)) => message,
        (Some(code), None) => code.to_owned(),
        (None, None) => "the batch refused this request".to_owned(),
    };
    ProviderError::new(kind, provider, http::redact(&message, secret)).from_provider_words()
}

#[async_trait::async_trait]
impl<E: BatchEndpoint> BatchApi for OpenAiBatch<E> {
    fn name(&self) -> &str {
        OpenAiBatch::name(self)
    }

    fn limits(&self) -> BatchLimits {
        OPENAI_BATCH_LIMITS
    }

    fn secret(&self) -> Option<&str> {
        OpenAiBatch::secret(self)
    }

    fn model_of(&self, request: &ProviderRequest) -> String {
        self.endpoint.connection().model_of(request).to_owned()
    }

    async fn line(
        &self,
        custom_id: &str,
        request: &ProviderRequest,
    ) -> Result<Vec<u8>, ProviderError> {
        let schema = request.schema.as_ref().map(http::schema_json);
        let body = self.endpoint.line_body(request, schema.as_deref())?;
        let mut line = Vec::with_capacity(E::body_size_hint(&body) + 96);
        serde_json::to_writer(
            &mut line,
            &Line {
                custom_id,
                method: "POST",
                url: self.endpoint.line_url(),
                body,
            },
        )
        .map_err(|error| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                self.name(),
                format!("the request could not be written as JSON: {error}"),
            )
            .not_sent()
        })?;
        Ok(line)
    }

    async fn submit(
        &self,
        _model: &str,
        input: &Input,
        tag: &str,
    ) -> Result<String, ProviderError> {
        // The file goes up as a stream read from the job's queue, with its length, so
        // neither the client nor the upload holds it whole.
        let chunks = input.stream(self.name(), None).await?;
        let part = reqwest::multipart::Part::stream_with_length(
            reqwest::Body::wrap_stream(chunks),
            input.stream_len(None),
        )
        .file_name("batch.jsonl")
        .mime_str("application/jsonl")
        .map_err(|error| {
            ProviderError::new(
                ProviderErrorKind::Configuration,
                self.name(),
                error.to_string(),
            )
        })?;
        let form = reqwest::multipart::Form::new()
            .text("purpose", "batch")
            .part("file", part);
        let url = self.url("/files");
        let uploaded: Created = self
            .call(
                |client| client.post(url).multipart(form),
                "an uploaded file",
            )
            .await?;
        let url = self.url("/batches");
        // The tag lets a restarted job find this batch should the process stop before
        // the reply is recorded (`find`).
        let body = json!({
            "input_file_id": uploaded.id,
            "endpoint": self.endpoint.line_url(),
            "completion_window": "24h",
            "metadata": {TAG_KEY: tag},
        })
        .to_string();
        let created: Created = self
            .call(
                |client| {
                    client
                        .post(url)
                        .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                        .body(body)
                },
                "a batch",
            )
            .await?;
        Ok(created.id)
    }

    async fn find(&self, submission: &Submitting<'_>) -> Result<Option<String>, ProviderError> {
        // Newest first; pages stop at batches created well before the submission was
        // recorded (a margin for the two clocks), or after `MAX_PAGES`.
        let oldest = (submission.began_at_ms / 1000).saturating_sub(CLOCK_MARGIN_S);
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut url = self.url("/batches?limit=100");
            if let Some(after) = &after {
                url.push_str("&after=");
                url.push_str(after);
            }
            let page: BatchList = self
                .call(|client| client.get(url), "a list of batches")
                .await?;
            for batch in &page.data {
                let tagged = batch
                    .metadata
                    .as_ref()
                    .and_then(|metadata| metadata.get(TAG_KEY))
                    .and_then(serde_json::Value::as_str)
                    == Some(submission.tag);
                if tagged {
                    return Ok(Some(batch.id.clone()));
                }
            }
            let older = page
                .data
                .last()
                .is_some_and(|batch| batch.created_at.is_some_and(|at| at < oldest));
            if !page.has_more || older {
                return Ok(None);
            }
            after = page
                .last_id
                .or_else(|| page.data.last().map(|b| b.id.clone()));
            if after.is_none() {
                return Ok(None);
            }
        }
        Ok(None)
    }

    async fn state(&self, id: &str) -> Result<BatchState, ProviderError> {
        let url = self.url(&format!("/batches/{id}"));
        let batch: Batch = self.call(|client| client.get(url), "a batch").await?;
        let missing = match batch.status.as_str() {
            "validating" | "in_progress" | "finalizing" | "cancelling" => {
                return Ok(BatchState::Running);
            }
            "failed" => {
                let reasons: Vec<String> = batch
                    .errors
                    .map(|errors| errors.data)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|error| {
                        let mut text = error.message.unwrap_or_else(|| "refused".to_owned());
                        if let Some(code) = error.code {
                            text = format!("{code}: {text}");
                        }
                        if let Some(line) = error.line {
                            text = format!("line {line}: {text}");
                        }
                        text
                    })
                    .collect();
                let reason = if reasons.is_empty() {
                    "the batch failed".to_owned()
                } else {
                    format!("the batch failed: {}", reasons.join("; "))
                };
                return Ok(BatchState::Failed(http::redact(&reason, self.secret())));
            }
            "expired" => (
                ProviderErrorKind::Timeout,
                "the batch expired before this request was answered".to_owned(),
            ),
            "cancelled" => (
                ProviderErrorKind::Canceled,
                "the batch was canceled before this request was answered".to_owned(),
            ),
            _ => (
                ProviderErrorKind::InvalidResponse,
                "the batch's results do not name this request".to_owned(),
            ),
        };
        let handles = [batch.output_file_id, batch.error_file_id]
            .into_iter()
            .flatten()
            .filter(|id| !id.is_empty())
            .collect();
        Ok(BatchState::Ended { handles, missing })
    }

    async fn results(
        &self,
        _id: &str,
        handles: &[String],
        sink: &mut Sink<'_>,
    ) -> Result<(), ProviderError> {
        let (name, secret) = (self.name(), self.secret());
        let headers = self.endpoint.auth_headers()?;
        let transport = &self.endpoint.connection().transport;
        for file in handles {
            let url = self.url(&format!("/files/{file}/content"));
            let mut response = transport.open_get(name, &url, &headers, secret).await?;
            if !response.status().is_success() {
                return Err(self.endpoint.error_reply(&http::read_error(response).await));
            }
            let mut lines = Lines::default();
            let mut each = |line: &[u8]| {
                if line.iter().all(u8::is_ascii_whitespace) {
                    return;
                }
                match serde_json::from_slice::<OutputLine>(line) {
                    Ok(parsed) => {
                        let (custom_id, outcome) = self.outcome(parsed);
                        sink(&custom_id, outcome);
                    }
                    Err(error) => tracing::warn!(
                        provider = name,
                        // The reader's message may quote the line, and the line the state.
                        error = %crate::provider::http::json_error_position(&error),
                        "a batch result line could not be read; its item is reported as unanswered"
                    ),
                }
            };
            while let Some(chunk) = transport.next_chunk(name, &mut response, secret).await? {
                lines.push(&chunk, &mut each);
            }
            lines.finish(&mut each);
        }
        Ok(())
    }

    async fn cancel(&self, id: &str) -> Result<(), ProviderError> {
        let url = self.url(&format!("/batches/{id}/cancel"));
        let _: serde_json::Value = self.call(|client| client.post(url), "a batch").await?;
        Ok(())
    }
}

impl BatchProvider {
    /// OpenAI's Batch API (`/v1/files`, `/v1/batches`) with this provider's key, base URL,
    /// model and HTTP settings.
    pub fn openai(provider: OpenAi) -> Self {
        batch_for_endpoint(provider.endpoint().clone())
    }
}

/// The Batch API of the server `endpoint` is on (OpenAI's, or another speaking it, such as
/// Azure OpenAI's v1 API), with its key, base URL and model.
pub(crate) fn batch_for_endpoint(endpoint: ChatEndpoint) -> BatchProvider {
    BatchProvider::from_api(OpenAiBatch::new(endpoint))
}
