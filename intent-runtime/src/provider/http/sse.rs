//! Server-sent events over a streamed HTTP reply, read straight into reply pieces: the
//! framing (lines, `event:` and `data:` fields, a blank line ending an event), the
//! response size limit applied to the whole stream, and failures classified as provider
//! errors.
//!
//! Why not a general event-stream crate (this used `eventsource-stream`): a streamed
//! reply is thousands of events of a few bytes of text each, and a profile of a 10 KB
//! reply in 5-byte pieces showed the general parser's per-event costs (a `String` per
//! line and per field, the rest of the buffer copied after every line, a parser
//! combinator per line) taking a fifth of the client's CPU. Here each event's fields are
//! borrowed from one buffer, handed to the provider's decoder by reference, and every
//! piece of text the events already there carry goes on as one piece.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;

use super::classify::transport_error;
use crate::provider::error::redact;
use crate::provider::stream::{ReplyPiece, ReplyStream};
use crate::provider::{ProviderError, ProviderErrorKind, ProviderReply};

/// One server-sent event: its `event:` name (empty when none) and its `data:` (the lines
/// of a multi-line field joined by `\n`), borrowed from the reader's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SseEvent<'a> {
    pub(crate) event: &'a str,
    pub(crate) data: &'a str,
}

/// Reads one provider's events into the reply.
pub(crate) trait Decoder {
    /// Reads `event`: the reply text it carries is appended to `text`; the finished
    /// reply when the event ends it. An error ends the stream.
    fn feed(
        &mut self,
        event: SseEvent<'_>,
        text: &mut String,
    ) -> Result<Option<ProviderReply>, ProviderError>;
}

/// The event-stream framing: bytes in, complete events out.
#[derive(Debug, Default)]
struct Framer {
    /// Bytes received and not yet read as lines (from `read` on).
    buffer: Vec<u8>,
    read: usize,
    /// The event being gathered.
    event: String,
    data: String,
    has_data: bool,
    /// The last line ended with `\r`: a `\n` right after it belongs to that line end.
    after_cr: bool,
    /// The first line has been read (a byte-order mark before it is skipped).
    started: bool,
}

/// Why the bytes are not an event stream.
#[derive(Debug)]
struct NotUtf8;

impl Framer {
    fn extend(&mut self, bytes: &[u8]) {
        if self.read == self.buffer.len() {
            self.buffer.clear();
            self.read = 0;
        } else if self.read > 0 && self.read >= self.buffer.len() / 2 {
            // Keep the buffer from growing with what was read already.
            self.buffer.drain(..self.read);
            self.read = 0;
        }
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete event in the buffer, if any.
    fn next_event(&mut self) -> Result<Option<SseEvent<'_>>, NotUtf8> {
        loop {
            let rest = &self.buffer[self.read..];
            let rest = match (self.after_cr, rest.first()) {
                (true, Some(b'\n')) => {
                    self.read += 1;
                    self.after_cr = false;
                    &rest[1..]
                }
                (true, Some(_)) => {
                    self.after_cr = false;
                    rest
                }
                _ => rest,
            };
            let Some(end) = memchr::memchr2(b'\n', b'\r', rest) else {
                return Ok(None);
            };
            let mut line = std::str::from_utf8(&rest[..end]).map_err(|_| NotUtf8)?;
            self.after_cr = rest[end] == b'\r';
            self.read += end + 1;
            if !self.started {
                self.started = true;
                line = line.strip_prefix('\u{feff}').unwrap_or(line);
            }
            if line.is_empty() {
                if self.has_data {
                    self.has_data = false;
                    return Ok(Some(SseEvent {
                        event: &self.event,
                        data: &self.data,
                    }));
                }
                // A blank line with no data dispatches nothing; the name goes too.
                self.event.clear();
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line, ""),
            };
            match field {
                "data" => {
                    if self.has_data {
                        self.data.push('\n');
                    } else {
                        self.data.clear();
                        self.has_data = true;
                    }
                    self.data.push_str(value);
                }
                "event" => {
                    self.event.clear();
                    self.event.push_str(value);
                }
                // Comments (an empty field name), `id`, `retry` and unknown fields are
                // nothing a reply needs.
                _ => {}
            }
        }
    }

    /// After an event was dispatched: its name does not carry over to the next.
    fn dispatched(&mut self) {
        self.event.clear();
        self.data.clear();
    }
}

type Body = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// The events of a streamed response, not yet decoded (see [`decode`]).
pub(crate) struct SseEvents {
    body: Body,
    framer: Framer,
    provider: String,
    secret: Option<String>,
    limit: usize,
    received: usize,
}

/// The events of `response`, read up to `limit` bytes in all. Every failure is a
/// provider error: a dropped connection or a timeout as for any call, a body past the
/// limit or not in the event-stream format as an invalid response.
pub(crate) fn sse_events(
    provider: &str,
    response: reqwest::Response,
    limit: usize,
    secret: Option<&str>,
) -> SseEvents {
    SseEvents::new(provider, Box::pin(response.bytes_stream()), limit, secret)
}

impl SseEvents {
    fn new(provider: &str, body: Body, limit: usize, secret: Option<&str>) -> Self {
        Self {
            body,
            framer: Framer::default(),
            provider: provider.to_owned(),
            secret: secret.map(str::to_owned),
            limit,
            received: 0,
        }
    }

    fn too_large(&self) -> ProviderError {
        ProviderError::new(
            ProviderErrorKind::InvalidResponse,
            &self.provider,
            format!(
                "the streamed reply is larger than the {} bytes this provider reads; \
                 reading stopped there. Raise the limit with `with_max_response_bytes` if \
                 replies this large are expected",
                self.limit
            ),
        )
        .with_transient(false)
    }

    fn not_events(&self) -> ProviderError {
        ProviderError::new(
            ProviderErrorKind::InvalidResponse,
            &self.provider,
            redact(
                "the streamed reply is not a server-sent event stream (invalid UTF-8)",
                self.secret.as_deref(),
            ),
        )
        .with_transient(false)
    }
}

/// Text gathered from the events already there is passed on once it reaches this size,
/// even when more events are waiting: a partial stays possible on a fast, long stream.
const MAX_PIECE: usize = 16 * 1024;

/// The reply pieces of `events`, read by `decoder`: the text of every event already
/// received goes on as one piece. Nothing follows a finished reply or an error.
pub(crate) fn decode<D: Decoder + Send + 'static>(events: SseEvents, decoder: D) -> ReplyStream {
    ReplyStream::new(Decoded {
        events,
        decoder,
        text: String::new(),
        queued: None,
        ended: false,
    })
}

struct Decoded<D> {
    events: SseEvents,
    decoder: D,
    /// Text read and not passed on yet.
    text: String,
    /// What comes after that text (the finished reply, an error).
    queued: Option<Result<ReplyPiece, ProviderError>>,
    ended: bool,
}

impl<D> Decoded<D> {
    /// The text gathered so far as a piece, or what is queued after it.
    fn flush(&mut self) -> Option<Result<ReplyPiece, ProviderError>> {
        if self.text.is_empty() {
            let next = self.queued.take();
            self.ended |= next.is_some();
            next
        } else {
            Some(Ok(ReplyPiece::Text(std::mem::take(&mut self.text))))
        }
    }
}

impl<D: Decoder> Decoded<D> {
    /// Decodes the events complete in the buffer; `true` when the stream has ended (an
    /// error or the finished reply is queued).
    fn decode_buffered(&mut self) -> bool {
        loop {
            if self.text.len() >= MAX_PIECE {
                return false;
            }
            let event = match self.events.framer.next_event() {
                Ok(Some(event)) => event,
                Ok(None) => return false,
                Err(NotUtf8) => {
                    self.queued = Some(Err(self.events.not_events()));
                    return true;
                }
            };
            let fed = self.decoder.feed(event, &mut self.text);
            self.events.framer.dispatched();
            match fed {
                Ok(None) => {}
                Ok(Some(reply)) => {
                    self.queued = Some(Ok(ReplyPiece::Finished(reply)));
                    return true;
                }
                Err(error) => {
                    self.queued = Some(Err(error));
                    return true;
                }
            }
        }
    }
}

// The decoder is never pinned in place (it is only fed by `&mut`); the body is boxed.
impl<D> Unpin for Decoded<D> {}

impl<D: Decoder> Stream for Decoded<D> {
    type Item = Result<ReplyPiece, ProviderError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = Pin::into_inner(self);
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            if this.queued.is_some() || this.decode_buffered() || this.text.len() >= MAX_PIECE {
                return Poll::Ready(this.flush());
            }
            match this.events.body.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(bytes))) => {
                    this.events.received = this.events.received.saturating_add(bytes.len());
                    if this.events.received > this.events.limit {
                        this.queued = Some(Err(this.events.too_large()));
                    } else {
                        this.events.framer.extend(&bytes);
                    }
                }
                Poll::Ready(Some(Err(err))) => {
                    let provider = &this.events.provider;
                    this.queued = Some(Err(transport_error(
                        provider,
                        err,
                        this.events.secret.as_deref(),
                    )));
                }
                // The body ended: an event not closed by a blank line is dropped (as the
                // event-stream format says); a reply that did not finish was cut.
                Poll::Ready(None) => {
                    let text = this.flush();
                    this.ended = true;
                    return Poll::Ready(text);
                }
                // Pass on what was gathered; the body wakes this task when more comes.
                Poll::Pending if this.text.is_empty() => return Poll::Pending,
                Poll::Pending => return Poll::Ready(this.flush()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&[u8]]) -> Result<Vec<(String, String)>, NotUtf8> {
        let mut framer = Framer::default();
        let mut out = Vec::new();
        for chunk in chunks {
            framer.extend(chunk);
            while let Some(event) = framer.next_event()? {
                out.push((event.event.to_owned(), event.data.to_owned()));
                framer.dispatched();
            }
        }
        Ok(out)
    }

    fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(event, data)| ((*event).to_owned(), (*data).to_owned()))
            .collect()
    }

    #[test]
    fn fields_lines_and_blank_lines_make_events_in_any_chunks() {
        let stream = "\u{feff}: a comment\r\nevent: message_start\r\ndata: {\"a\":1}\r\n\r\n\
                      data:x\ndata\ndata:  y\nid: 7\nretry: 10\n\n\
                      event: ignored\n\n\
                      data: [DONE]\r\r";
        let expected = owned(&[
            ("message_start", "{\"a\":1}"),
            ("", "x\n\n y"),
            ("", "[DONE]"),
        ]);
        for size in [1, 2, 3, 5, 7, 64, stream.len()] {
            let chunks: Vec<&[u8]> = stream.as_bytes().chunks(size).collect();
            assert_eq!(events(&chunks).ok(), Some(expected.clone()), "{size}");
        }
    }

    #[test]
    fn an_event_not_ended_by_a_blank_line_is_not_dispatched() {
        assert_eq!(
            events(&[b"data: 1\n\ndata: 2\n"]).ok(),
            Some(owned(&[("", "1")]))
        );
    }

    #[test]
    fn a_line_that_is_not_utf8_is_an_error() {
        assert!(events(&[b"data: \xff\xfe\n\n"]).is_err());
        // A character cut between two chunks is whole once its line is.
        let text = "data: é\n\n".as_bytes();
        assert_eq!(
            events(&[&text[..7], &text[7..]]).ok(),
            Some(owned(&[("", "é")]))
        );
    }
}
