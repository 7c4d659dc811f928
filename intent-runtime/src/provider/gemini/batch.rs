//! Gemini's Batch Mode: every request of a batch inline in one `batchGenerateContent`
//! call, the long-running operation `batches/{id}` polled, its inlined responses read
//! back by key (each a `GenerateContentResponse` read exactly as a live reply, or an
//! error status), and `batches/{id}:cancel`.
//!
//! Only inline input is sent (a batch stays under Gemini's 20 MB inline limit, see
//! [`GEMINI_BATCH_LIMITS`]), so results come back inline too; a batch whose results were
//! written to a responses file instead has that file downloaded and read line by line.

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::errors::{GoogleError, REQUEST_ID_HEADER, error_reply, stream_error};
use super::reply::parse_reply;
use super::request::GenerateBody;
use super::{GEMINI_PROVIDER_NAME, Gemini, model_path, response_schema};
use crate::provider::batch::{
    BatchApi, BatchLimits, BatchProvider, BatchState, Input, Lines, Sink, Submitting,
};
use crate::provider::http::{self, RawResponse, Route};
use crate::provider::{ProviderError, ProviderErrorKind, ProviderRequest};

/// Gemini's limits on one inline batch: the request body stays under 20 MB (counted in
/// decimal megabytes, to be safe). Gemini names no limit on the number of requests in
/// one batch; 100,000 keeps a submission's bookkeeping bounded.
pub(crate) const GEMINI_BATCH_LIMITS: BatchLimits = BatchLimits {
    max_requests: 100_000,
    max_bytes: 20_000_000,
};

/// Bytes of the create request around its lines, the display name included (a job's tag
/// is far shorter).
const ENVELOPE_BYTES: usize = 1024;

const SUFFIX: &[u8] = b"]}}}}";

/// The most bytes read of one batch operation (its inlined responses included): far
/// more than a live reply, as a batch's answers come back in one body.
const MAX_BATCH_REPLY_BYTES: usize = 1024 * 1024 * 1024;

/// Batches on one page of a list (each done one carries its inlined responses, so pages
/// are kept small).
const PAGE_SIZE: usize = 20;

/// The most pages a restarted job reads looking for its batch.
const MAX_PAGES: usize = 50;

/// Gemini's Batch Mode (`models/{model}:batchGenerateContent`, `batches/{id}`).
#[derive(Debug)]
pub(crate) struct GeminiBatch {
    provider: Gemini,
}

/// One request of the batch: the body a live call sends, under its custom id.
#[derive(Serialize)]
struct Line<'a> {
    request: GenerateBody<'a>,
    metadata: LineMetadata<'a>,
}

#[derive(Serialize)]
struct LineMetadata<'a> {
    key: &'a str,
}

/// The long-running operation of a batch, as far as creating and polling it needs.
#[derive(Deserialize)]
struct Operation {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    metadata: Option<BatchStatus>,
    /// Set once done, when the batch (or its output) is repeated here.
    #[serde(default)]
    response: Option<BatchStatus>,
    /// Why the operation failed.
    #[serde(default)]
    error: Option<GoogleError>,
}

/// The `GenerateContentBatch` of an operation's metadata (or response): its state and
/// display name.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BatchStatus {
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    display_name: Option<String>,
}

/// A page of `GET batches`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BatchList {
    #[serde(default, alias = "batches")]
    operations: Vec<Operation>,
    #[serde(default)]
    next_page_token: Option<String>,
}

/// An operation read for its results.
#[derive(Deserialize)]
struct Finished {
    #[serde(default)]
    metadata: Option<Outputs>,
    #[serde(default)]
    response: Option<Outputs>,
}

/// Where the inlined responses may be: under `output` (the batch), or at the top (the
/// batch's output itself).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Outputs {
    /// The batch's model (`models/{id}`).
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    output: Option<Output>,
    #[serde(default)]
    inlined_responses: Option<Inlined>,
    #[serde(default)]
    responses_file: Option<String>,
}

/// `GenerateContentBatchOutput`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Output {
    #[serde(default)]
    inlined_responses: Option<Inlined>,
    #[serde(default)]
    responses_file: Option<String>,
}

/// `InlinedResponses`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Inlined {
    #[serde(default)]
    inlined_responses: Vec<InlinedResponse>,
}

/// One answer: a `GenerateContentResponse` or an error status, with the request's key.
#[derive(Deserialize)]
struct InlinedResponse {
    #[serde(default)]
    response: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<GoogleError>,
    #[serde(default)]
    metadata: Option<ItemMetadata>,
    #[serde(default)]
    key: Option<String>,
}

#[derive(Deserialize)]
struct ItemMetadata {
    #[serde(default)]
    key: Option<String>,
}

/// The RPC status name of a `google.rpc.Code` number (what a batch's error statuses
/// carry in `code`, where an error reply carries the HTTP status).
fn rpc_status_name(code: u16) -> Option<&'static str> {
    Some(match code {
        1 => "CANCELLED",
        2 => "UNKNOWN",
        3 => "INVALID_ARGUMENT",
        4 => "DEADLINE_EXCEEDED",
        5 => "NOT_FOUND",
        6 => "ALREADY_EXISTS",
        7 => "PERMISSION_DENIED",
        8 => "RESOURCE_EXHAUSTED",
        9 => "FAILED_PRECONDITION",
        10 => "ABORTED",
        11 => "OUT_OF_RANGE",
        12 => "UNIMPLEMENTED",
        13 => "INTERNAL",
        14 => "UNAVAILABLE",
        15 => "DATA_LOSS",
        16 => "UNAUTHENTICATED",
        _ => return None,
    })
}

/// An error status as a batch writes it, made to read like an error reply's: a
/// `google.rpc.Code` number becomes its status name, an HTTP status stays.
fn normalized(error: &GoogleError) -> GoogleError {
    let mut error = error.clone();
    if let Some(code) = error.code
        && !(100..=599).contains(&code)
    {
        if error.status.is_none() {
            error.status = rpc_status_name(code).map(str::to_owned);
        }
        error.code = None;
    }
    error
}

/// What a failed batch's error status says, for every item's issue.
fn failure_reason(error: Option<&GoogleError>, secret: Option<&str>) -> String {
    let error = error.map(normalized);
    let message = error
        .as_ref()
        .and_then(|error| error.message.as_deref())
        .map(str::trim)
        .filter(|message| !message.is_empty());
    let status = error.as_ref().and_then(|error| error.status.as_deref());
    let reason = match (message, status) {
        (Some(message), Some(status)) => format!("the batch failed: {message} ({status})"),
        (Some(message), None) => format!("the batch failed: {message}"),
        (None, Some(status)) => format!("the batch failed ({status})"),
        (None, None) => "the batch failed".to_owned(),
    };
    http::redact(&reason, secret)
}

/// Where the batch `operation` stands: its state (under `metadata`, or under `response`
/// once done; `BATCH_STATE_*` or `JOB_STATE_*`), else whether it is done and how.
fn state_of(operation: &Operation, secret: Option<&str>) -> BatchState {
    let state = [&operation.metadata, &operation.response]
        .into_iter()
        .flatten()
        .find_map(|batch| batch.state.as_deref())
        .map(|state| {
            state
                .trim_start_matches("BATCH_STATE_")
                .trim_start_matches("JOB_STATE_")
                .to_owned()
        });
    let missing = match state.as_deref() {
        Some("SUCCEEDED") => (
            ProviderErrorKind::InvalidResponse,
            "the batch's results do not name this request".to_owned(),
        ),
        Some("CANCELLED") => (
            ProviderErrorKind::Canceled,
            "the batch was canceled before this request was answered".to_owned(),
        ),
        Some("EXPIRED") => (
            ProviderErrorKind::Timeout,
            "the batch expired before this request was answered".to_owned(),
        ),
        Some("FAILED") => {
            return BatchState::Failed(failure_reason(operation.error.as_ref(), secret));
        }
        _ if operation.done && operation.error.is_some() => {
            return BatchState::Failed(failure_reason(operation.error.as_ref(), secret));
        }
        _ if operation.done => (
            ProviderErrorKind::InvalidResponse,
            "the batch's results do not name this request".to_owned(),
        ),
        _ => return BatchState::Running,
    };
    // The results are in the operation itself: `results` reads it again.
    BatchState::Ended {
        handles: Vec::new(),
        missing,
    }
}

/// `batches/{id}` (or a bare id) as the id, refused unless it is one path segment of
/// letters, digits, `-` and `_`, so an id can never change a URL's meaning.
fn batch_id(name: &str) -> Option<&str> {
    let id = name.strip_prefix("batches/").unwrap_or(name);
    let valid = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    valid.then_some(id)
}

impl GeminiBatch {
    pub(crate) fn new(provider: Gemini) -> Self {
        Self { provider }
    }

    /// The key header (marked sensitive).
    fn headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>, ProviderError> {
        Ok(vec![Route::secret_header(
            GEMINI_PROVIDER_NAME,
            "x-goog-api-key",
            self.provider.secret().unwrap_or_default(),
        )?])
    }

    /// The URL of batch `id`, with `suffix` (`:cancel`).
    fn batch_url(&self, id: &str, suffix: &str) -> Result<String, ProviderError> {
        let id = batch_id(id).ok_or_else(|| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                GEMINI_PROVIDER_NAME,
                format!(
                    "`{}` is not a Gemini batch id",
                    id.chars().take(100).collect::<String>()
                ),
            )
            .not_sent()
        })?;
        Ok(format!("{}/batches/{id}{suffix}", self.provider.base_url()))
    }

    /// Sends a request and reads its reply whole, a non-success status classified as a
    /// live call's would be.
    async fn call(
        &self,
        build: impl FnOnce(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<RawResponse, ProviderError> {
        let headers = self.headers()?;
        let secret = self.provider.secret();
        let raw = self
            .provider
            .connection
            .transport
            .send_built(GEMINI_PROVIDER_NAME, build, &headers, secret)
            .await?;
        if !raw.status.is_success() {
            return Err(error_reply(&raw, secret));
        }
        Ok(raw)
    }

    /// Reads the batch operation `id`, inlined responses and all (they can be far larger
    /// than a live reply, so the body is read here with its own bound).
    async fn get(&self, id: &str) -> Result<RawResponse, ProviderError> {
        let url = self.batch_url(id, "")?;
        self.fetch(&url).await
    }

    /// Reads `url` whole, up to [`MAX_BATCH_REPLY_BYTES`] (or the response limit, if
    /// larger).
    async fn fetch(&self, url: &str) -> Result<RawResponse, ProviderError> {
        let headers = self.headers()?;
        let secret = self.provider.secret();
        let transport = &self.provider.connection.transport;
        let mut response = transport
            .open_get(GEMINI_PROVIDER_NAME, url, &headers, secret)
            .await?;
        if !response.status().is_success() {
            return Err(error_reply(&http::read_error(response).await, secret));
        }
        let status = response.status();
        let headers = std::mem::take(response.headers_mut());
        let limit = transport.max_response_bytes().max(MAX_BATCH_REPLY_BYTES);
        let mut body = BytesMut::new();
        while let Some(chunk) = transport
            .next_chunk(GEMINI_PROVIDER_NAME, &mut response, secret)
            .await?
        {
            if body.len().saturating_add(chunk.len()) > limit {
                return Err(ProviderError::new(
                    ProviderErrorKind::InvalidResponse,
                    GEMINI_PROVIDER_NAME,
                    format!("the batch's reply is larger than {limit} bytes"),
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(RawResponse {
            status,
            headers,
            body: body.freeze(),
        })
    }

    /// `raw` read as `R` (`what`, for the error).
    fn read<R: for<'de> Deserialize<'de>>(
        &self,
        raw: &RawResponse,
        what: &str,
    ) -> Result<R, ProviderError> {
        serde_json::from_slice(&raw.body).map_err(|error| {
            http::invalid_response(
                GEMINI_PROVIDER_NAME,
                raw,
                &format!("the reply is not {what} ({error})"),
                REQUEST_ID_HEADER,
                self.provider.secret(),
            )
        })
    }

    /// Hands one answer to `sink` under its key; an answer without one is only logged
    /// (its item is reported as unanswered).
    fn deliver(&self, model: &str, mut item: InlinedResponse, sink: &mut Sink<'_>) {
        let key = item
            .metadata
            .take()
            .and_then(|metadata| metadata.key)
            .or_else(|| item.key.take());
        match key {
            Some(key) => sink(&key, self.outcome(model, item)),
            None => tracing::warn!(
                provider = GEMINI_PROVIDER_NAME,
                "a batch answer carries no key; its item is reported as unanswered"
            ),
        }
    }

    /// The download URL of `file` (`files/{id}`): the API root with `/download` before
    /// its version (`https://generativelanguage.googleapis.com/download/v1beta/files/x:download?alt=media`).
    fn download_url(&self, file: &str) -> Result<String, ProviderError> {
        let id = file
            .strip_prefix("files/")
            .filter(|id| batch_id(id) == Some(*id));
        let base = self.provider.base_url();
        match (id, base.rsplit_once('/')) {
            (Some(id), Some((root, version))) if !root.ends_with('/') => Ok(format!(
                "{root}/download/{version}/files/{id}:download?alt=media"
            )),
            _ => Err(ProviderError::new(
                ProviderErrorKind::InvalidResponse,
                GEMINI_PROVIDER_NAME,
                format!(
                    "the batch's responses file `{}` cannot be downloaded from {base}",
                    file.chars().take(100).collect::<String>()
                ),
            )),
        }
    }

    /// Reads the responses file `file` line by line, each answer handed to `sink`.
    async fn read_file(
        &self,
        file: &str,
        model: &str,
        sink: &mut Sink<'_>,
    ) -> Result<(), ProviderError> {
        let url = self.download_url(file)?;
        let headers = self.headers()?;
        let secret = self.provider.secret();
        let transport = &self.provider.connection.transport;
        let mut response = transport
            .open_get(GEMINI_PROVIDER_NAME, &url, &headers, secret)
            .await?;
        if !response.status().is_success() {
            return Err(error_reply(&http::read_error(response).await, secret));
        }
        let mut lines = Lines::default();
        let mut each = |line: &[u8]| {
            if line.iter().all(u8::is_ascii_whitespace) {
                return;
            }
            match serde_json::from_slice::<InlinedResponse>(line) {
                Ok(item) => self.deliver(model, item, sink),
                Err(error) => tracing::warn!(
                    provider = GEMINI_PROVIDER_NAME,
                    // The reader's message may quote the line, and the line the state.
                    error = %crate::provider::http::json_error_position(&error),
                    "a batch result line could not be read; its item is reported as unanswered"
                ),
            }
        };
        while let Some(chunk) = transport
            .next_chunk(GEMINI_PROVIDER_NAME, &mut response, secret)
            .await?
        {
            lines.push(&chunk, &mut each);
        }
        lines.finish(&mut each);
        Ok(())
    }

    /// One answer as a live call's reply would be read, or its error status classified
    /// (and redacted of the key: it can quote the request).
    fn outcome(&self, model: &str, item: InlinedResponse) -> crate::provider::batch::Outcome {
        let secret = self.provider.secret();
        match (item.response, item.error) {
            (_, Some(error)) => {
                let mut error = normalized(&error);
                if error
                    .message
                    .as_deref()
                    .is_none_or(|message| message.trim().is_empty())
                {
                    error.message = Some("the batch could not answer this request".to_owned());
                }
                Err(stream_error(&error, None, secret))
            }
            (Some(response), None) => {
                let raw = RawResponse {
                    status: reqwest::StatusCode::OK,
                    headers: reqwest::header::HeaderMap::new(),
                    body: Bytes::copy_from_slice(response.get().as_bytes()),
                };
                parse_reply(&raw, model, secret)
            }
            (None, None) => Err(ProviderError::new(
                ProviderErrorKind::InvalidResponse,
                GEMINI_PROVIDER_NAME,
                "the batch's answer to this request has neither a response nor an error",
            )),
        }
    }
}

#[async_trait::async_trait]
impl BatchApi for GeminiBatch {
    fn name(&self) -> &str {
        GEMINI_PROVIDER_NAME
    }

    fn limits(&self) -> BatchLimits {
        BatchLimits {
            max_bytes: GEMINI_BATCH_LIMITS.max_bytes - ENVELOPE_BYTES,
            ..GEMINI_BATCH_LIMITS
        }
    }

    fn secret(&self) -> Option<&str> {
        self.provider.secret()
    }

    fn model_of(&self, request: &ProviderRequest) -> String {
        self.provider.model_of(request).to_owned()
    }

    async fn line(
        &self,
        custom_id: &str,
        request: &ProviderRequest,
    ) -> Result<Vec<u8>, ProviderError> {
        // Refuse a model name that cannot be a URL path now, not at submission.
        model_path(self.provider.model_of(request))?;
        let schema = response_schema(request);
        let body = self
            .provider
            .body(request, schema.as_ref().map(|(text, _)| &**text))?;
        let mut line = Vec::with_capacity(body.size_hint() + 64);
        let line_value = Line {
            request: body,
            metadata: LineMetadata { key: custom_id },
        };
        serde_json::to_writer(&mut line, &line_value).map_err(|error| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                GEMINI_PROVIDER_NAME,
                format!("the request could not be written as JSON: {error}"),
            )
            .not_sent()
        })?;
        Ok(line)
    }

    async fn submit(&self, model: &str, input: &Input, tag: &str) -> Result<String, ProviderError> {
        // `{"batch":{"displayName":<tag>,"inputConfig":{"requests":{"requests":[` + the
        // queued lines joined by commas + `]}}}}`, read from the job's queue as it is sent.
        let url = format!(
            "{}/{}:batchGenerateContent",
            self.provider.base_url(),
            model_path(model)?
        );
        let display_name = serde_json::to_string(tag).unwrap_or_else(|_| "\"batch\"".to_owned());
        let prefix = Bytes::from(format!(
            "{{\"batch\":{{\"displayName\":{display_name},\"inputConfig\":{{\"requests\":{{\"requests\":["
        ));
        let lines = input.stream(GEMINI_PROVIDER_NAME, Some(b',')).await?;
        let len = input.stream_len(Some(b',')) + (prefix.len() + SUFFIX.len()) as u64;
        let body = futures_util::stream::once(async { Ok(prefix) })
            .chain(lines)
            .chain(futures_util::stream::once(async {
                Ok(Bytes::from_static(SUFFIX))
            }));
        let raw = self
            .call(|client| {
                client
                    .post(url)
                    .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                    .header(CONTENT_LENGTH, HeaderValue::from(len))
                    .body(reqwest::Body::wrap_stream(body))
            })
            .await?;
        let operation: Operation = self.read(&raw, "a batch operation")?;
        operation
            .name
            .as_deref()
            .and_then(batch_id)
            .map(str::to_owned)
            .ok_or_else(|| {
                http::invalid_response(
                    GEMINI_PROVIDER_NAME,
                    &raw,
                    "the batch operation has no name of the form `batches/{id}`",
                    REQUEST_ID_HEADER,
                    self.provider.secret(),
                )
            })
    }

    async fn find(&self, submission: &Submitting<'_>) -> Result<Option<String>, ProviderError> {
        // A batch keeps its display name, the submission's tag (unique to the job and the
        // submission): the batch created before the stop is the one that carries it.
        let list = format!("{}/batches", self.provider.base_url());
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut url = reqwest::Url::parse(&list).map_err(|error| {
                ProviderError::new(
                    ProviderErrorKind::Configuration,
                    GEMINI_PROVIDER_NAME,
                    format!("the base URL does not make a URL of batches: {error}"),
                )
                .not_sent()
            })?;
            url.query_pairs_mut()
                .append_pair("pageSize", &PAGE_SIZE.to_string());
            if let Some(token) = &token {
                url.query_pairs_mut().append_pair("pageToken", token);
            }
            let raw = self.fetch(url.as_str()).await?;
            let page: BatchList = self.read(&raw, "a list of batches")?;
            for operation in &page.operations {
                let tagged = operation
                    .metadata
                    .as_ref()
                    .and_then(|batch| batch.display_name.as_deref())
                    == Some(submission.tag);
                let id = operation.name.as_deref().and_then(batch_id);
                if let Some(id) = id
                    && tagged
                    && !submission.known.iter().any(|known| known == id)
                {
                    return Ok(Some(id.to_owned()));
                }
            }
            token = page.next_page_token.filter(|token| !token.is_empty());
            if token.is_none() {
                break;
            }
        }
        Ok(None)
    }

    async fn state(&self, id: &str) -> Result<BatchState, ProviderError> {
        let raw = self.get(id).await?;
        let operation: Operation = self.read(&raw, "a batch operation")?;
        Ok(state_of(&operation, self.provider.secret()))
    }

    async fn results(
        &self,
        id: &str,
        _handles: &[String],
        sink: &mut Sink<'_>,
    ) -> Result<(), ProviderError> {
        let raw = self.get(id).await?;
        let finished: Finished = self.read(&raw, "a batch operation with its results")?;
        // The model asked, for a reply that does not name its own version.
        let model = [&finished.metadata, &finished.response]
            .into_iter()
            .flatten()
            .find_map(|outputs| outputs.model.as_deref())
            .map(|model| model.strip_prefix("models/").unwrap_or(model).to_owned())
            .unwrap_or_else(|| self.provider.connection.model.clone());
        let model = model.as_str();
        let mut answered = false;
        let mut files = Vec::new();
        for outputs in [finished.metadata, finished.response].into_iter().flatten() {
            let (inlined, file) = match outputs.output {
                Some(output) => (
                    output.inlined_responses.or(outputs.inlined_responses),
                    output.responses_file.or(outputs.responses_file),
                ),
                None => (outputs.inlined_responses, outputs.responses_file),
            };
            files.extend(file);
            // The same answers may be repeated under `response`: read them once.
            if answered {
                continue;
            }
            let Some(inlined) = inlined else { continue };
            answered = !inlined.inlined_responses.is_empty();
            for item in inlined.inlined_responses {
                self.deliver(model, item, sink);
            }
        }
        if !answered {
            // Results too large to inline are in a JSONL file (`{"key", "response" |
            // "error"}` per line), downloaded and read line by line.
            files.dedup();
            for file in &files {
                self.read_file(file, model, sink).await?;
            }
        }
        Ok(())
    }

    async fn cancel(&self, id: &str) -> Result<(), ProviderError> {
        let url = self.batch_url(id, ":cancel")?;
        self.call(|client| client.post(url).body(Vec::new()))
            .await
            .map(|_| ())
    }
}

impl BatchProvider {
    /// Gemini's Batch Mode (`models/{model}:batchGenerateContent`, requests inline) with
    /// this provider's key, base URL, model and HTTP settings.
    pub fn gemini(provider: Gemini) -> Self {
        Self::from_api(GeminiBatch::new(provider))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(operation: serde_json::Value) -> BatchState {
        let operation: Operation = serde_json::from_value(operation).unwrap();
        state_of(&operation, Some("k-123"))
    }

    #[test]
    fn states_are_read_from_the_metadata_or_the_response() {
        use serde_json::json;
        let running = json!({"name": "batches/b", "metadata": {"state": "BATCH_STATE_RUNNING"}});
        assert_eq!(state(running), BatchState::Running);
        assert_eq!(state(json!({"name": "batches/b"})), BatchState::Running);
        let ended = |kind| BatchState::Ended {
            handles: Vec::new(),
            missing: (
                kind,
                match kind {
                    ProviderErrorKind::Canceled => {
                        "the batch was canceled before this request was answered"
                    }
                    ProviderErrorKind::Timeout => {
                        "the batch expired before this request was answered"
                    }
                    _ => "the batch's results do not name this request",
                }
                .to_owned(),
            ),
        };
        let succeeded = json!({"done": true, "metadata": {"state": "BATCH_STATE_SUCCEEDED"}});
        assert_eq!(state(succeeded), ended(ProviderErrorKind::InvalidResponse));
        let in_response =
            json!({"done": true, "metadata": {}, "response": {"state": "JOB_STATE_CANCELLED"}});
        assert_eq!(state(in_response), ended(ProviderErrorKind::Canceled));
        let expired = json!({"done": true, "metadata": {"state": "BATCH_STATE_EXPIRED"}});
        assert_eq!(state(expired), ended(ProviderErrorKind::Timeout));
        let done = json!({"done": true, "response": {}});
        assert_eq!(state(done), ended(ProviderErrorKind::InvalidResponse));
        let failed = json!({"done": true, "error": {"code": 9, "message": "key k-123 refused"}});
        assert_eq!(
            state(failed),
            BatchState::Failed(
                "the batch failed: key [redacted] refused (FAILED_PRECONDITION)".to_owned()
            )
        );
        let failed = json!({"done": true, "metadata": {"state": "BATCH_STATE_FAILED"}});
        assert_eq!(
            state(failed),
            BatchState::Failed("the batch failed".to_owned())
        );
    }

    #[test]
    fn responses_files_are_downloaded_from_beside_the_api_root() {
        let batch = GeminiBatch::new(Gemini::new("k").with_base_url("http://h:1/v1beta"));
        assert_eq!(
            batch.download_url("files/batch-out_1").unwrap(),
            "http://h:1/download/v1beta/files/batch-out_1:download?alt=media"
        );
        for bad in ["files/../x", "files/a?b", "other/x", "files/"] {
            assert!(batch.download_url(bad).is_err(), "{bad}");
        }
        let bare = GeminiBatch::new(Gemini::new("k").with_base_url("http://h:1"));
        assert!(bare.download_url("files/x").is_err());
    }

    #[test]
    fn batch_ids_are_one_safe_path_segment() {
        assert_eq!(batch_id("batches/abc-1_2"), Some("abc-1_2"));
        assert_eq!(batch_id("abc"), Some("abc"));
        for bad in ["", "batches/", "batches/a/b", "a?b", "../x", "a b"] {
            assert_eq!(batch_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn rpc_codes_become_status_names_and_failures_are_redacted() {
        let error = GoogleError {
            code: Some(3),
            message: Some("bad key k-123 in line 2".to_owned()),
            ..GoogleError::default()
        };
        let normal = normalized(&error);
        assert_eq!(normal.status.as_deref(), Some("INVALID_ARGUMENT"));
        assert_eq!(normal.code, None);
        let reason = failure_reason(Some(&error), Some("k-123"));
        assert_eq!(
            reason,
            "the batch failed: bad key [redacted] in line 2 (INVALID_ARGUMENT)"
        );
        assert_eq!(failure_reason(None, None), "the batch failed");
        let http = GoogleError {
            code: Some(400),
            ..GoogleError::default()
        };
        assert_eq!(normalized(&http).code, Some(400));
    }
}
