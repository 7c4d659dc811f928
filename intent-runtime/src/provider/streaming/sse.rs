//! Server-sent events over a streamed HTTP reply: framing by `eventsource-stream` over
//! `reqwest`'s byte stream, the response size limit applied to the whole stream, and
//! failures classified as provider errors.

use bytes::Bytes;
use eventsource_stream::{EventStreamError, Eventsource};
use futures_core::Stream;
use futures_util::StreamExt;

use super::{ReplyPiece, ReplyStream};
use crate::provider::http::{redact, transport_error};
use crate::provider::{ProviderError, ProviderErrorKind};

/// One server-sent event: its `event:` name (empty when none) and its `data:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) event: String,
    pub(crate) data: String,
}

/// Why the byte stream under the events failed.
#[derive(Debug)]
enum BodyError {
    Transport(reqwest::Error),
    TooLarge,
}

/// The events of `response`, read up to `limit` bytes in all. Every failure is a
/// provider error: a dropped connection or a timeout as for any call, a body past the
/// limit or not in the event-stream format as an invalid response.
pub(crate) fn sse_events(
    provider: &str,
    response: reqwest::Response,
    limit: usize,
    secret: Option<&str>,
) -> impl Stream<Item = Result<SseEvent, ProviderError>> + Send + 'static {
    let provider = provider.to_owned();
    let secret = secret.map(str::to_owned);
    let mut read = 0usize;
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk: Bytes = chunk.map_err(BodyError::Transport)?;
        read = read.saturating_add(chunk.len());
        if read > limit {
            return Err(BodyError::TooLarge);
        }
        Ok(chunk)
    });
    bytes.eventsource().map(move |event| match event {
        Ok(event) => Ok(SseEvent {
            event: event.event,
            data: event.data,
        }),
        Err(EventStreamError::Transport(BodyError::Transport(err))) => {
            Err(transport_error(&provider, &err, secret.as_deref()))
        }
        Err(EventStreamError::Transport(BodyError::TooLarge)) => Err(ProviderError::new(
            ProviderErrorKind::InvalidResponse,
            &provider,
            format!(
                "the streamed reply is larger than the {limit} bytes this provider reads; \
                 reading stopped there. Raise the limit with `with_max_response_bytes` if \
                 replies this large are expected"
            ),
        )
        .with_transient(false)),
        Err(EventStreamError::Utf8(err)) => Err(not_events(&provider, &err, secret.as_deref())),
        Err(EventStreamError::Parser(err)) => Err(not_events(&provider, &err, secret.as_deref())),
    })
}

fn not_events(provider: &str, err: &dyn std::fmt::Display, secret: Option<&str>) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::InvalidResponse,
        provider,
        redact(
            &format!("the streamed reply is not a server-sent event stream ({err})"),
            secret,
        ),
    )
    .with_transient(false)
}

/// Reads one provider's events into reply pieces.
pub(crate) trait Decoder {
    /// The piece `event` completes, if any; an error ends the stream.
    fn feed(&mut self, event: SseEvent) -> Result<Option<ReplyPiece>, ProviderError>;
}

/// The reply pieces of `events`, read by `decoder`. Nothing follows a finished reply or
/// an error.
pub(crate) fn decode<D: Decoder + Send + 'static>(
    events: impl Stream<Item = Result<SseEvent, ProviderError>> + Send + 'static,
    mut decoder: D,
) -> ReplyStream {
    let mut ended = false;
    ReplyStream::new(events.filter_map(move |event| {
        let piece = if ended {
            None
        } else {
            let piece = event.and_then(|event| decoder.feed(event)).transpose();
            ended = matches!(piece, Some(Err(_) | Ok(ReplyPiece::Finished(_))));
            piece
        };
        std::future::ready(piece)
    }))
}
