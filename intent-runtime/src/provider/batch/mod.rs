//! What a provider's batch API offers batch jobs (`IntentClient::batch`): one request as a
//! line of a submission, a submission, its state, its results, its cancellation. Each
//! wire API's folder implements `BatchApi` for its own batch endpoint (OpenAI's Batch
//! API in `openai/batch.rs`, Anthropic's Message Batches in `anthropic/batch.rs`, Gemini's
//! Batch Mode in `gemini/batch.rs`, the offline one in `scripted/batch.rs`) and adds its
//! [`BatchProvider`] constructor there.

pub(crate) mod outcome;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use crate::provider::{ProviderError, ProviderErrorKind, ProviderReply, ProviderRequest};

/// What one request came back as: the reply, or why there is none.
pub(crate) type Outcome = Result<ProviderReply, ProviderError>;

/// Where a batch's results go, each with its custom id.
pub(crate) type Sink<'s> = dyn for<'c> FnMut(&'c str, Outcome) + Send + 's;

/// How much one provider batch may hold; a job splits its requests into as many batches as
/// these limits need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    /// The most requests in one batch.
    pub max_requests: usize,
    /// The most bytes of one batch's input (the JSONL file, or the request body).
    pub max_bytes: usize,
}

impl BatchLimits {
    /// The tighter of two limits, field by field.
    pub fn min(self, other: BatchLimits) -> BatchLimits {
        BatchLimits {
            max_requests: self.max_requests.min(other.max_requests),
            max_bytes: self.max_bytes.min(other.max_bytes),
        }
    }
}

/// What a job recorded about a submission before creating it: enough to recognise the
/// batch among the provider's own.
#[derive(Debug, Clone)]
pub(crate) struct Submitting<'a> {
    /// The submission's tag, unique to the job and the submission.
    pub tag: &'a str,
    /// How many requests it holds.
    pub requests: usize,
    /// When it was recorded, in milliseconds since the Unix epoch (this machine's clock).
    pub began_at_ms: u64,
    /// Batches this job already knows (they are not the one sought).
    pub known: &'a [String],
}

/// Where a provider batch stands.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BatchState {
    /// Still validating or answering.
    Running,
    /// Ended (completed, expired or canceled): its results can be read from `handles`
    /// (file ids, a results URL). An item the results do not name failed with `missing`.
    Ended {
        handles: Vec<String>,
        missing: (ProviderErrorKind, String),
    },
    /// Refused as a whole (its input file did not validate): every item failed with this.
    Failed(String),
}

/// A submission's input as the job queued it on disk: `count` lines, each ending in a
/// newline, `len` bytes from byte `start` of the file at `path`. It is read from the file
/// as it is sent, so a submission is never held in memory whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Input {
    pub path: PathBuf,
    pub start: u64,
    pub len: u64,
    pub count: usize,
}

/// How many bytes of an input are read at a time.
const CHUNK: usize = 64 * 1024;

impl Input {
    /// The input's bytes as a stream of chunks read from its file, each newline but the
    /// last replaced by `separator` when there is one, and the last left out (Anthropic's
    /// request list is the lines joined by commas). The file is opened here, so a missing
    /// one is an error before anything is sent.
    pub(crate) async fn stream(
        &self,
        provider: &str,
        separator: Option<u8>,
    ) -> Result<impl Stream<Item = std::io::Result<Bytes>> + Send + 'static, ProviderError> {
        let unreadable = |error: std::io::Error| {
            ProviderError::new(
                ProviderErrorKind::Configuration,
                provider,
                format!(
                    "the batch's queued requests could not be read from {}: {error}",
                    self.path.display()
                ),
            )
            .not_sent()
        };
        let mut file = tokio::fs::File::open(&self.path)
            .await
            .map_err(unreadable)?;
        file.seek(std::io::SeekFrom::Start(self.start))
            .await
            .map_err(unreadable)?;
        let len = match separator {
            Some(_) => self.len.saturating_sub(1),
            None => self.len,
        };
        let chunks = tokio_util::io::ReaderStream::with_capacity(file.take(len), CHUNK);
        Ok(chunks.map(move |chunk| {
            let chunk = chunk?;
            Ok(match separator {
                Some(separator) if chunk.contains(&b'\n') => {
                    let mut owned = chunk.to_vec();
                    for byte in &mut owned {
                        if *byte == b'\n' {
                            *byte = separator;
                        }
                    }
                    Bytes::from(owned)
                }
                _ => chunk,
            })
        }))
    }

    /// The stream's length in bytes.
    pub(crate) fn stream_len(&self, separator: Option<u8>) -> u64 {
        match separator {
            Some(_) => self.len.saturating_sub(1),
            None => self.len,
        }
    }
}

/// A provider's batch API.
///
/// Request bodies come from the same builder a live call uses; replies are read by the
/// same parser, so a batch item is verified exactly as a live reply would be.
#[async_trait::async_trait]
pub(crate) trait BatchApi: Send + Sync + fmt::Debug {
    /// The provider's name, as its live calls report it.
    fn name(&self) -> &str;

    /// How much one batch may hold.
    fn limits(&self) -> BatchLimits;

    /// The API key, for redacting it from anything the provider writes back (a batch's
    /// per-request errors can quote the request); `None` when there is none.
    fn secret(&self) -> Option<&str> {
        None
    }

    /// The model `request` goes to: requests to different models go in different batches.
    fn model_of(&self, request: &ProviderRequest) -> String;

    /// `request` as one line of a submission, under `custom_id`.
    async fn line(
        &self,
        custom_id: &str,
        request: &ProviderRequest,
    ) -> Result<Vec<u8>, ProviderError>;

    /// Submits `input` (requests all for `model`) as one batch tagged `tag` where the
    /// provider keeps a tag (see [`BatchApi::find`]); its id.
    async fn submit(&self, model: &str, input: &Input, tag: &str) -> Result<String, ProviderError>;

    /// The id of the batch an earlier run submitted as `submission` but did not live to
    /// record (the process stopped while the provider answered), when the provider can
    /// tell; `None` when it has no such batch (or cannot say), and the requests go out
    /// again.
    async fn find(&self, submission: &Submitting<'_>) -> Result<Option<String>, ProviderError> {
        let _ = submission;
        Ok(None)
    }

    /// Where the batch `id` stands.
    async fn state(&self, id: &str) -> Result<BatchState, ProviderError>;

    /// Reads the results of an ended batch, handing each to `sink` with its custom id, in
    /// the order the provider wrote them (any order).
    async fn results(
        &self,
        id: &str,
        handles: &[String],
        sink: &mut Sink<'_>,
    ) -> Result<(), ProviderError>;

    /// Asks the provider to cancel the batch `id`; it ends later, with what was answered.
    async fn cancel(&self, id: &str) -> Result<(), ProviderError>;
}

/// A provider's batch API, for a batch job's options (`BatchOptions::provider`) and
/// [`Provider::batch`](crate::provider::Provider::batch).
///
/// Cheap to clone.
#[derive(Clone)]
pub struct BatchProvider {
    pub(crate) api: Arc<dyn BatchApi>,
}

impl BatchProvider {
    /// A batch provider speaking through `api`.
    pub(crate) fn from_api(api: impl BatchApi + 'static) -> Self {
        Self { api: Arc::new(api) }
    }
}

impl fmt::Debug for BatchProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BatchProvider")
            .field("api", &self.api)
            .finish()
    }
}

impl BatchProvider {
    /// The provider's name.
    pub fn name(&self) -> &str {
        self.api.name()
    }

    /// How much one of its batches may hold.
    pub fn limits(&self) -> BatchLimits {
        self.api.limits()
    }
}

/// The custom id of an item's `k`-th request (counted from 0): stable across runs, so
/// results map back to their item whatever order they come in.
pub(crate) fn custom_id(item: u32, k: u32) -> String {
    format!("item-{item}-{k}")
}

/// The item and request number a custom id names.
pub(crate) fn parse_custom_id(id: &str) -> Option<(u32, u32)> {
    let (item, k) = id.strip_prefix("item-")?.split_once('-')?;
    Some((item.parse().ok()?, k.parse().ok()?))
}

/// Splits bytes arriving in chunks into lines (JSONL), without holding more than one
/// line and one chunk.
#[derive(Default)]
pub(crate) struct Lines {
    partial: Vec<u8>,
}

impl Lines {
    /// Hands every complete line in `chunk` to `each`.
    pub(crate) fn push(&mut self, chunk: &[u8], each: &mut dyn FnMut(&[u8])) {
        let mut rest = chunk;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            if self.partial.is_empty() {
                each(&rest[..end]);
            } else {
                self.partial.extend_from_slice(&rest[..end]);
                each(&self.partial);
                self.partial.clear();
            }
            rest = &rest[end + 1..];
        }
        self.partial.extend_from_slice(rest);
    }

    /// Hands the last line, when the input did not end in a newline.
    pub(crate) fn finish(self, each: &mut dyn FnMut(&[u8])) {
        if !self.partial.iter().all(u8::is_ascii_whitespace) {
            each(&self.partial);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_ids_round_trip_and_refuse_others() {
        assert_eq!(parse_custom_id(&custom_id(12, 3)), Some((12, 3)));
        assert_eq!(parse_custom_id("item-1"), None);
        assert_eq!(parse_custom_id("other-1-2"), None);
        assert_eq!(parse_custom_id("item-x-2"), None);
    }

    #[test]
    fn lines_are_joined_across_chunks() {
        let mut seen = Vec::new();
        let mut lines = Lines::default();
        for chunk in [&b"ab"[..], b"c\nd", b"e\n\nf\ng", b"h"] {
            lines.push(chunk, &mut |line| {
                seen.push(String::from_utf8_lossy(line).into_owned())
            });
        }
        lines.finish(&mut |line| seen.push(String::from_utf8_lossy(line).into_owned()));
        assert_eq!(seen, ["abc", "de", "", "f", "gh"]);
    }

    async fn read(input: &Input, separator: Option<u8>) -> String {
        let mut chunks = Box::pin(input.stream("test", separator).await.unwrap());
        let mut out = Vec::new();
        while let Some(chunk) = chunks.next().await {
            out.extend_from_slice(&chunk.unwrap());
        }
        assert_eq!(out.len() as u64, input.stream_len(separator));
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn an_input_is_read_from_its_range_of_the_file_with_lines_joined_as_asked() {
        let path =
            std::env::temp_dir().join(format!("intent-batch-input-{}.jsonl", std::process::id()));
        std::fs::write(&path, "{\"a\":1}\n{\"b\":\"x\\ny\"}\n{\"c\":3}\n").unwrap();
        // The second and third lines.
        let input = Input {
            path: path.clone(),
            start: 8,
            len: 21,
            count: 2,
        };
        assert_eq!(read(&input, None).await, "{\"b\":\"x\\ny\"}\n{\"c\":3}\n");
        assert_eq!(
            read(&input, Some(b',')).await,
            "{\"b\":\"x\\ny\"},{\"c\":3}"
        );
        std::fs::remove_file(&path).unwrap();
        let error = match input.stream("test", None).await {
            Ok(_) => panic!("a missing file is an error"),
            Err(error) => error,
        };
        assert!(!error.request_sent(), "{error}");
    }

    #[test]
    fn the_tighter_limit_wins() {
        let a = BatchLimits {
            max_requests: 10,
            max_bytes: 5,
        };
        let b = BatchLimits {
            max_requests: 3,
            max_bytes: 50,
        };
        assert_eq!(
            a.min(b),
            BatchLimits {
                max_requests: 3,
                max_bytes: 5
            }
        );
    }
}
