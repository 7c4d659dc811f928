//! Anthropic's Message Batches: one request per item in one create call, its
//! `processing_status` polled, its results read line by line from `results_url`
//! (succeeded, errored, canceled or expired per item).

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::Anthropic;
use super::reply::{kind_of_error_type, parse_reply};
use super::request::MessagesBody;
use super::schema::output_schema;
use crate::provider::batch::{
    BatchApi, BatchLimits, BatchProvider, BatchState, Input, Lines, Outcome, Sink, Submitting,
};
use crate::provider::http::{self, RawResponse};
use crate::provider::{ProviderError, ProviderErrorKind, ProviderRequest};

/// Anthropic's limits on one message batch: 100,000 requests and 256 MB.
pub(crate) const ANTHROPIC_BATCH_LIMITS: BatchLimits = BatchLimits {
    max_requests: 100_000,
    max_bytes: 256 * 1024 * 1024,
};

/// Bytes of the create request around its lines (`{"requests":[`, `]}`).
const ENVELOPE_BYTES: usize = 16;

const PREFIX: &[u8] = b"{\"requests\":[";
const SUFFIX: &[u8] = b"]}";

/// How far the provider's clock may be from this machine's, in seconds, when a restarted
/// job looks for a batch it created.
const CLOCK_MARGIN_S: i64 = 15 * 60;

/// How long after a submission was recorded its batch may have been created (the body
/// of a large batch takes a while to send), in seconds.
const CREATE_WINDOW_S: i64 = 60 * 60;

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
    created_at: Option<String>,
    request_counts: Option<RequestCounts>,
}

#[derive(Deserialize)]
struct RequestCounts {
    #[serde(default)]
    processing: u64,
    #[serde(default)]
    succeeded: u64,
    #[serde(default)]
    errored: u64,
    #[serde(default)]
    canceled: u64,
    #[serde(default)]
    expired: u64,
}

impl RequestCounts {
    /// The batch's size: the counts always add up to it.
    fn total(&self) -> u64 {
        self.processing + self.succeeded + self.errored + self.canceled + self.expired
    }
}

/// Seconds since the Unix epoch of an RFC 3339 time (`2024-09-24T18:37:24.100435Z`, or
/// with an offset); `None` when it is not one.
fn unix_seconds(text: &str) -> Option<i64> {
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = text.get(range)?;
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    };
    let bytes = text.as_bytes();
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || bytes[13] != b':' {
        return None;
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    // The offset: `Z`, or `±hh:mm` after any fraction of a second.
    let rest = &text[19..];
    let rest = rest.trim_start_matches(|c: char| c == '.' || c.is_ascii_digit());
    let offset = match rest.as_bytes().first()? {
        b'Z' | b'z' => 0,
        sign @ (b'+' | b'-') => {
            let hours: i64 = rest.get(1..3)?.parse().ok()?;
            let minutes: i64 = rest.get(4..6)?.parse().ok()?;
            let offset = hours * 3600 + minutes * 60;
            if *sign == b'+' { offset } else { -offset }
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

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
        self.call_as(build, "a message batch").await
    }

    /// Sends a request and reads its reply as `R` (`what`, for the error).
    async fn call_as<R: for<'de> Deserialize<'de>>(
        &self,
        build: impl FnOnce(&reqwest::Client) -> reqwest::RequestBuilder,
        what: &str,
    ) -> Result<R, ProviderError> {
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
                &format!("the reply is not {what} ({error})"),
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
                // The message can quote the request: the key never goes further.
                Err(ProviderError::new(
                    kind,
                    "anthropic",
                    http::redact(&message, self.provider.secret()),
                )
                .from_provider_words())
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
        let schema = output_schema(request);
        let params =
            self.provider
                .body(request, self.provider.model_of(request), schema.as_deref())?;
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

    async fn submit(
        &self,
        _model: &str,
        input: &Input,
        _tag: &str,
    ) -> Result<String, ProviderError> {
        // `{"requests":[` + the queued lines joined by commas + `]}`, read from the job's
        // queue as it is sent, with its length.
        let lines = input.stream("anthropic", Some(b',')).await?;
        let len = input.stream_len(Some(b',')) + (PREFIX.len() + SUFFIX.len()) as u64;
        let body = futures_util::stream::once(async { Ok(Bytes::from_static(PREFIX)) })
            .chain(lines)
            .chain(futures_util::stream::once(async {
                Ok(Bytes::from_static(SUFFIX))
            }));
        let url = self.url("");
        let batch = self
            .call(|client| {
                client
                    .post(url)
                    .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                    .header(CONTENT_LENGTH, HeaderValue::from(len))
                    .body(reqwest::Body::wrap_stream(body))
            })
            .await?;
        Ok(batch.id)
    }

    async fn find(&self, submission: &Submitting<'_>) -> Result<Option<String>, ProviderError> {
        // Message batches carry no metadata, and the list shows neither requests nor
        // custom ids: the batch is recognised by its size and its creation time, among
        // the batches this job does not know already. It is adopted only when exactly
        // one batch fits; two batches of the same size created in the same minutes by
        // other clients of the workspace leave the question open, and the requests go out
        // again.
        let began = (submission.began_at_ms / 1000) as i64;
        let earliest = began - CLOCK_MARGIN_S;
        let latest = began + CLOCK_MARGIN_S + CREATE_WINDOW_S;
        let mut candidates = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut url = self.url("?limit=100");
            if let Some(after) = &after {
                url.push_str("&after_id=");
                url.push_str(after);
            }
            let page: BatchList = self
                .call_as(|client| client.get(url), "a list of message batches")
                .await?;
            let mut older = false;
            for batch in &page.data {
                let Some(created) = batch.created_at.as_deref().and_then(unix_seconds) else {
                    continue;
                };
                older |= created < earliest;
                let size = batch
                    .request_counts
                    .as_ref()
                    .map_or(0, RequestCounts::total);
                if (earliest..=latest).contains(&created)
                    && size == submission.requests as u64
                    && !submission.known.contains(&batch.id)
                {
                    candidates.push(batch.id.clone());
                }
            }
            if !page.has_more || older {
                break;
            }
            after = page
                .last_id
                .or_else(|| page.data.last().map(|b| b.id.clone()));
            if after.is_none() {
                break;
            }
        }
        if candidates.len() > 1 {
            tracing::warn!(
                provider = "anthropic",
                candidates = candidates.len(),
                "several message batches could be the one this job created before it stopped; submitting again"
            );
            return Ok(None);
        }
        Ok(candidates.pop())
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
                        // The reader's message may quote the line, and the line the state.
                        error = %crate::provider::http::json_error_position(&error),
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

impl BatchProvider {
    /// Anthropic's Message Batches (`/v1/messages/batches`) with this provider's key, base
    /// URL, model and HTTP settings.
    pub fn anthropic(provider: Anthropic) -> Self {
        Self::from_api(AnthropicBatch::new(provider))
    }
}

#[cfg(test)]
mod tests {
    use super::unix_seconds;

    #[test]
    fn rfc_3339_times_are_read_as_unix_seconds() {
        assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            unix_seconds("2024-09-24T18:37:24.100435Z"),
            Some(1_727_203_044)
        );
        assert_eq!(
            unix_seconds("2024-02-29T12:00:00+02:00"),
            Some(1_709_200_800)
        );
        assert_eq!(
            unix_seconds("2024-02-29T12:00:00-00:30"),
            Some(1_709_209_800)
        );
        assert_eq!(unix_seconds("2024-13-01T00:00:00Z"), None);
        assert_eq!(unix_seconds("yesterday"), None);
        assert_eq!(unix_seconds("2024-09-24T18:37:24"), None);
    }
}
