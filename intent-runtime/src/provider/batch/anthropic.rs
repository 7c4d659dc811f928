//! Anthropic's Message Batches: one request per item in one create call, its
//! `processing_status` polled, its results read line by line from `results_url`
//! (succeeded, errored, canceled or expired per item).

use reqwest::header::{CONTENT_TYPE, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{BatchApi, BatchLimits, BatchState, Lines, Outcome, Sink};
use crate::provider::anthropic::{MessagesBody, kind_of_error_type, output_schema, parse_reply};
use crate::provider::http::{self, RawResponse};
use crate::provider::{Anthropic, ProviderError, ProviderErrorKind, ProviderRequest};

/// Anthropic's limits on one message batch: 100,000 requests and 256 MB.
pub(crate) const ANTHROPIC_BATCH_LIMITS: BatchLimits = BatchLimits {
    max_requests: 100_000,
    max_bytes: 256 * 1024 * 1024,
};

/// Bytes of the create request around its lines (`{"requests":[`, `]}`).
const ENVELOPE_BYTES: usize = 16;

#[derive(Debug)]
pub(crate) struct AnthropicBatch {
    provider: Anthropic,
}

#[derive(Serialize)]
struct Line<'a> {
    custom_id: &'a str,
    params: MessagesBody<'a>,
}

#[derive(Deserialize)]
struct MessageBatch {
    id: String,
    processing_status: String,
    results_url: Option<String>,
}

#[derive(Deserialize)]
struct ResultLine {
    custom_id: String,
    result: ItemResult,
}

/// One item's result. (A struct rather than a tagged enum: a tagged enum buffers its
/// content, and the raw message cannot be read from a buffer.)
#[derive(Deserialize)]
struct ItemResult {
    #[serde(rename = "type")]
    kind: String,
    message: Option<Box<RawValue>>,
    error: Option<ErrorResponse>,
}

#[derive(Deserialize)]
struct ErrorResponse {
    error: Option<ErrorDetail>,
}

#[derive(Deserialize)]
struct ErrorDetail {
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<String>,
}

impl AnthropicBatch {
    pub(crate) fn new(provider: Anthropic) -> Self {
        Self { provider }
    }

    fn url(&self, path: &str) -> String {
        format!("{}/v1/messages/batches{path}", self.provider.base_url())
    }

    /// Sends a request and reads its reply as a message batch, a non-success status
    /// classified as a live call's would be.
    async fn call(
        &self,
        build: impl FnOnce(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<MessageBatch, ProviderError> {
        let headers = self.provider.auth_headers()?;
        let secret = self.provider.secret();
        let raw = self
            .provider
            .transport()
            .send_built("anthropic", build, &headers, secret)
            .await?;
        if !raw.status.is_success() {
            return Err(self.provider.error_reply(&raw));
        }
        serde_json::from_slice(&raw.body).map_err(|error| {
            http::invalid_response(
                "anthropic",
                &raw,
                &format!("the reply is not a message batch ({error})"),
                "request-id",
                secret,
            )
        })
    }

    fn outcome(&self, result: ItemResult) -> Outcome {
        match (result.kind.as_str(), result.message) {
            ("succeeded", Some(message)) => {
                let raw = RawResponse {
                    status: reqwest::StatusCode::OK,
                    headers: reqwest::header::HeaderMap::new(),
                    body: bytes::Bytes::copy_from_slice(message.get().as_bytes()),
                };
                parse_reply(&raw, "", self.provider.secret())
            }
            ("canceled", _) => Err(ProviderError::new(
                ProviderErrorKind::Canceled,
                "anthropic",
                "the batch was canceled before this request was answered",
            )),
            ("expired", _) => Err(ProviderError::new(
                ProviderErrorKind::Timeout,
                "anthropic",
                "the batch expired before this request was answered",
            )),
            _ => {
                let detail = result.error.and_then(|error| error.error);
                let kind = detail
                    .as_ref()
                    .and_then(|detail| detail.kind.as_deref())
                    .and_then(kind_of_error_type)
                    .unwrap_or(ProviderErrorKind::InvalidRequest);
                let message = detail
                    .and_then(|detail| detail.message)
                    .unwrap_or_else(|| "the batch could not answer this request".to_owned());
                Err(ProviderError::new(kind, "anthropic", message))
            }
        }
    }
}

#[async_trait::async_trait]
impl BatchApi for AnthropicBatch {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn limits(&self) -> BatchLimits {
        BatchLimits {
            max_bytes: ANTHROPIC_BATCH_LIMITS.max_bytes - ENVELOPE_BYTES,
            ..ANTHROPIC_BATCH_LIMITS
        }
    }

    fn model_of(&self, request: &ProviderRequest) -> String {
        self.provider.model_of(request).to_owned()
    }

    async fn line(
        &self,
        custom_id: &str,
        request: &ProviderRequest,
    ) -> Result<Vec<u8>, ProviderError> {
        let schema = output_schema(request);
        let params =
            self.provider
                .body(request, self.provider.model_of(request), schema.as_deref());
        let mut line = Vec::with_capacity(params.size_hint() + 64);
        serde_json::to_writer(&mut line, &Line { custom_id, params }).map_err(|error| {
            ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                "anthropic",
                format!("the request could not be written as JSON: {error}"),
            )
            .not_sent()
        })?;
        Ok(line)
    }

    async fn submit(&self, _model: &str, lines: &[Vec<u8>]) -> Result<String, ProviderError> {
        let size = lines.iter().map(|line| line.len() + 1).sum::<usize>() + ENVELOPE_BYTES;
        let mut body = Vec::with_capacity(size);
        body.extend_from_slice(b"{\"requests\":[");
        for (index, line) in lines.iter().enumerate() {
            if index > 0 {
                body.push(b',');
            }
            body.extend_from_slice(line);
        }
        body.extend_from_slice(b"]}");
        let url = self.url("");
        let batch = self
            .call(|client| {
                client
                    .post(url)
                    .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                    .body(body)
            })
            .await?;
        Ok(batch.id)
    }

    async fn state(&self, id: &str) -> Result<BatchState, ProviderError> {
        let url = self.url(&format!("/{id}"));
        let batch = self.call(|client| client.get(url)).await?;
        if batch.processing_status != "ended" {
            return Ok(BatchState::Running);
        }
        Ok(BatchState::Ended {
            handles: batch.results_url.into_iter().collect(),
            missing: (
                ProviderErrorKind::InvalidResponse,
                "the batch's results do not name this request".to_owned(),
            ),
        })
    }

    async fn results(
        &self,
        id: &str,
        handles: &[String],
        sink: &mut Sink<'_>,
    ) -> Result<(), ProviderError> {
        let headers = self.provider.auth_headers()?;
        let secret = self.provider.secret();
        let transport = self.provider.transport();
        let fallback = [self.url(&format!("/{id}/results"))];
        let urls = if handles.is_empty() {
            &fallback[..]
        } else {
            handles
        };
        for url in urls {
            let mut response = transport
                .open_get("anthropic", url, &headers, secret)
                .await?;
            if !response.status().is_success() {
                return Err(self.provider.error_reply(&http::read_error(response).await));
            }
            let mut lines = Lines::default();
            let mut each = |line: &[u8]| {
                if line.iter().all(u8::is_ascii_whitespace) {
                    return;
                }
                match serde_json::from_slice::<ResultLine>(line) {
                    Ok(parsed) => sink(&parsed.custom_id, self.outcome(parsed.result)),
                    Err(error) => tracing::warn!(
                        provider = "anthropic",
                        %error,
                        "a batch result line could not be read; its item is reported as unanswered"
                    ),
                }
            };
            while let Some(chunk) = transport
                .next_chunk("anthropic", &mut response, secret)
                .await?
            {
                lines.push(&chunk, &mut each);
            }
            lines.finish(&mut each);
        }
        Ok(())
    }

    async fn cancel(&self, id: &str) -> Result<(), ProviderError> {
        let url = self.url(&format!("/{id}/cancel"));
        self.call(|client| client.post(url)).await.map(|_| ())
    }
}
