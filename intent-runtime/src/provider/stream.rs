//! Streamed replies: what a provider hands back for a streamed request (the reply's text
//! in pieces as the model writes it, then the whole reply, exactly as a non-streamed call
//! returns it). Each wire API's folder decodes its own events into these; the
//! server-sent-event framing they share is [`http::sse`](super::http::sse).

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use crate::provider::{ProviderError, ProviderReply};

/// One piece of a streamed reply.
// A stream ends in one `Finished`; boxing it would cost every provider's stream code an
// allocation and a deref to save a few bytes on text pieces that are moved once.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyPiece {
    /// More of the reply's text, in order: the pieces joined are the finished reply's
    /// text (a refusal sends none).
    Text(String),
    /// The whole reply (text, refusal, truncation, stop reason, usage, model, request
    /// id), as [`Provider::complete`](crate::provider::Provider::complete) would return
    /// it; the last piece of a stream that succeeded.
    Finished(ProviderReply),
}

type Pieces = Pin<Box<dyn Stream<Item = Result<ReplyPiece, ProviderError>> + Send>>;

/// A reply as it arrives: [`ReplyPiece::Text`]s, then one [`ReplyPiece::Finished`]; or an
/// error, after which the stream ends.
///
/// A stream that ends without `Finished` was cut (the connection closed early); the
/// runtime treats it as a transport failure. Dropping the stream drops the connection
/// under it, which is how a caller cancels a request.
pub struct ReplyStream {
    pieces: Pieces,
}

impl ReplyStream {
    /// A stream of these pieces.
    pub fn new(
        pieces: impl Stream<Item = Result<ReplyPiece, ProviderError>> + Send + 'static,
    ) -> Self {
        Self {
            pieces: Box::pin(pieces),
        }
    }

    /// A reply that arrived whole: its text as one piece, then the reply. What providers
    /// that cannot stream send.
    pub fn whole(reply: ProviderReply) -> Self {
        let text = (!reply.text.is_empty()).then(|| Ok(ReplyPiece::Text(reply.text.clone())));
        let pieces = text.into_iter().chain([Ok(ReplyPiece::Finished(reply))]);
        Self::new(futures_util::stream::iter(pieces))
    }
}

impl fmt::Debug for ReplyStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplyStream").finish_non_exhaustive()
    }
}

impl Stream for ReplyStream {
    type Item = Result<ReplyPiece, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.pieces.as_mut().poll_next(cx)
    }
}
