//! OpenAI's Batch API for `/v1/responses`: the requests as a JSONL file uploaded with
//! `purpose` `batch`, one batch per file within 24 hours, polled, its output and error
//! files read back line by line; each output line's `response.body` is a Response object,
//! read as a live reply is.
//!
//! The files and batches endpoints are the ones Chat Completions batches use; what
//! differs is the `url` of each line and the batch's `endpoint`, the line's body and the
//! reply's parser.

use reqwest::header::{CONTENT_TYPE, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::json;
use serde_json::value::RawValue;

use super::request::ResponsesBody;
use super::{OPENAI_RESPONSES_PROVIDER_NAME, OpenAiResponses};
use crate::provider::batch::{
    BatchApi, BatchLimits, BatchProvider, BatchState, Input, Lines, Outcome, Sink, Submitting,
};
use crate::provider::http::{self, RawResponse};
use crate::provider::{ProviderError, ProviderErrorKind, ProviderRequest};

/// OpenAI's limits on one batch's input file: 50,000 requests and 200 MB.
const LIMITS: BatchLimits = BatchLimits {
    max_requests: 50_000,
    max_bytes: 200 * 1024 * 1024,
};

/// The endpoint every line asks for (the path as the Batch API names it).
const ENDPOINT: &str = "/v1/responses";

/// The metadata key of a batch's submission tag (the same key Chat Completions batches
/// carry).
const TAG_KEY: &str = "intent_submission";

/// How far the provider's clock may be behind this machine's, in seconds, when a
/// restarted job looks for a batch it created.
const CLOCK_MARGIN_S: u64 = 15 * 60;

/// The most pages of 100 batches a restarted job reads looking for its batch.
const MAX_PAGES: usize = 50;

impl BatchProvider {
    /// OpenAI's Batch API for `/v1/responses` (`/v1/files`, `/v1/batches`) with this
    /// provider's key, base URL, model, `store` setting and HTTP settings.
    pub fn openai_responses(provider: OpenAiResponses) -> Self {
        Self::from_api(ResponsesBatch { provider })
    }
}

#[derive(Debug)]
struct ResponsesBatch {
    provider: OpenAiResponses,
}

#[derive(Serialize)]
struct Line<'a> {
    custom_id: &'a str,
    method: &'static str,
    url: &'static str,
    body: ResponsesBody<'a>,
}

#[derive(Deserialize)]
struct Created {
    id: String,
}

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

#[derive(Deserialize)]
struct OutputLine {
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

impl ResponsesBatch {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.provider.base_url())
    }

    /// Sends a request and reads its JSON reply as `R`, a non-success status classified
    /// as a live call's would be.
    async fn call<R: for<'de> Deserialize<'de>>(
        &self,
        build: impl FnOnce(&reqwest::Client) -> reqwest::RequestBuilder,
        what: &str,
    ) -> Result<R, ProviderError> {
        let headers = self.provider.auth_headers()?;
        let connection = self.provider.connection();
        let raw = connection
            .transport
            .send_built(&connection.provider, build, &headers, connection.secret())
            .await?;
        if !raw.status.is_success() {
            return Err(self.provider.error_reply(&raw));
        }
        serde_json::from_slice(&raw.body).map_err(|error| {
            http::invalid_response(
                OPENAI_RESPONSES_PROVIDER_NAME,
                &raw,
                &format!("the reply is not {what} ({error})"),
                super::REQUEST_ID_HEADER,
                self.provider.connection().secret(),
            )
        })
    }

    /// One output or error line as the item's outcome.
    fn outcome(&self, line: OutputLine) -> (String, Outcome) {
        let name = OPENAI_RESPONSES_PROVIDER_NAME;
        let outcome = match (line.response, line.error) {
            (Some(response), _) => {
                let raw = RawResponse {
                    status: reqwest::StatusCode::from_u16(response.status_code)
                        .unwrap_or(reqwest::StatusCode::INTERNAL_SERVER_ERROR),
                    headers: reqwest::header::HeaderMap::new(),
                    body: bytes::Bytes::copy_from_slice(response.body.get().as_bytes()),
                };
                let outcome = if raw.status.is_success() {
                    self.provider.parse_reply(&raw, "")
                } else {
                    Err(self.provider.error_reply(&raw))
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
                error.code.as_deref(),
                error.message,
                self.provider.connection().secret(),
            )),
            (None, None) => Err(ProviderError::new(
                ProviderErrorKind::InvalidResponse,
                name,
                "the batch's result line holds neither a response nor an error",
            )),
        };
        (line.custom_id, outcome)
    }
}

/// A per-line error of the batch (`batch_expired`, `batch_cancelled`, or a request the
/// batch refused) as a classified error, the key redacted (the message can quote the
/// request).
fn line_error(code: Option<&str>, message: Option<String>, secret: Option<&str>) -> ProviderError {
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
    ProviderError::new(
        kind,
        OPENAI_RESPONSES_PROVIDER_NAME,
        http::redact(&message, secret),
    )
}

#[async_trait::async_trait]
impl BatchApi for ResponsesBatch {
    fn name(&self) -> &str {
        OPENAI_RESPONSES_PROVIDER_NAME
    }

    fn limits(&self) -> BatchLimits {
        LIMITS
    }

    fn secret(&self) -> Option<&str> {
        self.provider.connection().secret()
    }

    fn model_of(&self, request: &ProviderRequest) -> String {
        self.provider.connection().model_of(request).to_owned()
    }

    async fn line(
        &self,
        custom_id: &str,
        request: &ProviderRequest,
    ) -> Result<Vec<u8>, ProviderError> {
        let schema = request.schema.as_ref().map(http::schema_json);
        let body = self.provider.body(request, schema.as_deref(), false)?;
        let mut line = Vec::with_capacity(body.size_hint() + 96);
        serde_json::to_writer(
            &mut line,
            &Line {
                custom_id,
                method: "POST",
                url: ENDPOINT,
                body,
            },
        )
        .map_err(|error| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                OPENAI_RESPONSES_PROVIDER_NAME,
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
        // The file goes up as a stream read from the job's queue, with its length.
        let chunks = input.stream(OPENAI_RESPONSES_PROVIDER_NAME, None).await?;
        let part = reqwest::multipart::Part::stream_with_length(
            reqwest::Body::wrap_stream(chunks),
            input.stream_len(None),
        )
        .file_name("batch.jsonl")
        .mime_str("application/jsonl")
        .map_err(|error| {
            ProviderError::new(
                ProviderErrorKind::Configuration,
                OPENAI_RESPONSES_PROVIDER_NAME,
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
            "endpoint": ENDPOINT,
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
            let tagged = page.data.iter().find(|batch| {
                batch
                    .metadata
                    .as_ref()
                    .and_then(|metadata| metadata.get(TAG_KEY))
                    .and_then(serde_json::Value::as_str)
                    == Some(submission.tag)
            });
            if let Some(batch) = tagged {
                return Ok(Some(batch.id.clone()));
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
                .or_else(|| page.data.last().map(|batch| batch.id.clone()));
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
                return Ok(BatchState::Failed(http::redact(
                    &reason,
                    self.provider.connection().secret(),
                )));
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
        let name = OPENAI_RESPONSES_PROVIDER_NAME;
        let headers = self.provider.auth_headers()?;
        let transport = &self.provider.connection().transport;
        let secret = self.provider.connection().secret();
        for file in handles {
            let url = self.url(&format!("/files/{file}/content"));
            let mut response = transport.open_get(name, &url, &headers, secret).await?;
            if !response.status().is_success() {
                return Err(self.provider.error_reply(&http::read_error(response).await));
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
                        %error,
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn batch() -> ResponsesBatch {
        ResponsesBatch {
            provider: OpenAiResponses::new("sk-secret").with_model("gpt-test"),
        }
    }

    #[tokio::test]
    async fn a_line_asks_for_v1_responses_with_the_live_body() {
        let request = ProviderRequest::text("sys", "hi");
        let line = batch().line("item-0-0", &request).await.unwrap();
        let line: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            line,
            json!({"custom_id": "item-0-0", "method": "POST", "url": "/v1/responses",
                "body": {"model": "gpt-test", "instructions": "sys",
                    "input": [{"role": "user", "content": "hi"}], "store": false}})
        );
    }

    #[test]
    fn output_lines_are_read_as_live_replies_and_errors() {
        let line: OutputLine = serde_json::from_value(json!({
            "id": "batch_req_1", "custom_id": "item-1-0",
            "response": {"status_code": 200, "request_id": "req_1", "body": {
                "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-test-1",
                "output": [{"type": "message", "content": [{"type": "output_text", "text": "{\"value\": 3}"}]}],
                "usage": {"input_tokens": 20, "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 4, "output_tokens_details": {"reasoning_tokens": 0}}}},
            "error": null
        }))
        .unwrap();
        let (id, outcome) = batch().outcome(line);
        assert_eq!(id, "item-1-0");
        let reply = outcome.unwrap();
        assert_eq!(reply.text, "{\"value\": 3}");
        assert_eq!(reply.request_id.as_deref(), Some("req_1"));
        assert_eq!(reply.response_id.as_deref(), Some("resp_1"));
        let line: OutputLine = serde_json::from_value(json!({
            "custom_id": "item-2-0",
            "response": {"status_code": 400, "request_id": "req_2", "body": {"error": {
                "message": "Invalid schema for response_format 'x'", "type": "invalid_request_error",
                "param": "text.format.schema", "code": null}}},
            "error": null
        }))
        .unwrap();
        let error = batch().outcome(line).1.unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::SchemaRejected);
        assert_eq!(error.request_id(), Some("req_2"));
        let line: OutputLine = serde_json::from_value(json!({
            "custom_id": "item-3-0", "response": null,
            "error": {"code": "batch_expired", "message": "expired (sk-secret)"}
        }))
        .unwrap();
        let error = batch().outcome(line).1.unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::Timeout);
        assert!(!error.message().contains("sk-secret"));
    }
}
