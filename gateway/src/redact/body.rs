//! [`RewrittenBody`]: a hyper body adapter that runs a streaming
//! [`Rewrite`] over data frames as they pass (and over trailers);
//! [`RedactedBody`] is the one that redacts credentials.

use std::error::Error;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use hyper::HeaderMap;
use hyper::body::{Body, Bytes, Frame, SizeHint};

use super::{Needles, Redactor};

type BoxError = Box<dyn Error + Send + Sync>;

/// Streaming state that rewrites a body chunk by chunk: what `push` returns
/// is final; a tail that later bytes could still change is held back and
/// comes out of `finish`.
pub trait Rewrite {
    fn push(&mut self, chunk: &[u8]) -> Vec<u8>;
    /// `push` for a shared chunk: a rewrite that leaves it unchanged may
    /// return (a slice of) it rather than a copy.
    fn push_shared(&mut self, chunk: Bytes) -> Bytes {
        Bytes::from(self.push(&chunk))
    }
    /// Output still to come from what was pushed (or finished) already,
    /// for a rewrite that lets a large result out a piece at a time: asked
    /// until empty before the inner body is polled again.
    fn pending(&mut self) -> Vec<u8> {
        Vec::new()
    }
    fn finish(&mut self) -> Vec<u8>;
    /// The body failed: drop whatever is held, unemitted.
    fn discard(&mut self);
    fn held_len(&self) -> usize;
    /// Rewrites trailer values in place; returns whether any changed.
    fn trailers(&mut self, _trailers: &mut HeaderMap) -> bool {
        false
    }
    /// Why the rewrite cannot go on (bytes it cannot read), once: the body
    /// then fails rather than pass what follows.
    fn failed(&mut self) -> Option<BoxError> {
        None
    }
}

impl Rewrite for Redactor {
    fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        Redactor::push(self, chunk)
    }
    fn push_shared(&mut self, chunk: Bytes) -> Bytes {
        Redactor::push_shared(self, chunk)
    }
    fn finish(&mut self) -> Vec<u8> {
        Redactor::finish(self)
    }
    fn discard(&mut self) {
        Redactor::discard(self)
    }
    fn held_len(&self) -> usize {
        Redactor::held_len(self)
    }
    fn trailers(&mut self, trailers: &mut HeaderMap) -> bool {
        self.needles().redact_headers(trailers)
    }
}

/// Wraps a body and redacts credentials from it with a [`Redactor`].
pub type RedactedBody<B> = RewrittenBody<B, Redactor>;

impl<B> RedactedBody<B> {
    pub fn new(inner: B, needles: Arc<Needles>) -> RedactedBody<B> {
        RewrittenBody::with(inner, Redactor::new(needles))
    }

    /// Whether anything (data or trailers) was redacted so far.
    pub fn matched(&self) -> bool {
        self.rewrite.matched() || self.trailers_matched
    }
}

/// Wraps a body and rewrites it with `R`.
///
/// The length changes, so the size hint is unknown: the caller must drop any
/// `Content-Length` of the wrapped message.
pub struct RewrittenBody<B, R> {
    inner: B,
    rewrite: R,
    /// Trailers waiting while the held tail is emitted ahead of them.
    trailers: Option<HeaderMap>,
    trailers_matched: bool,
    /// The inner body ended or failed; nothing more to poll.
    done: bool,
}

impl<B, R: Rewrite> RewrittenBody<B, R> {
    pub fn with(inner: B, rewrite: R) -> RewrittenBody<B, R> {
        RewrittenBody {
            inner,
            rewrite,
            trailers: None,
            trailers_matched: false,
            done: false,
        }
    }
}

impl<B, R> Body for RewrittenBody<B, R>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
    R: Rewrite + Unpin,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        loop {
            // What the bytes already read still come to goes first; the
            // trailers, and the end, after it.
            let more = this.rewrite.pending();
            if let Some(err) = this.rewrite.failed() {
                this.done = true;
                this.trailers = None;
                return Poll::Ready(Some(Err(err)));
            }
            if !more.is_empty() {
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from(more)))));
            }
            if let Some(trailers) = this.trailers.take() {
                return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
            }
            if this.done {
                return Poll::Ready(None);
            }
            let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                Some(Err(err)) => {
                    this.done = true;
                    this.rewrite.discard();
                    return Poll::Ready(Some(Err(err.into())));
                }
                None => {
                    this.done = true;
                    let tail = this.rewrite.finish();
                    // A failure, or the trailers and the end, come next time
                    // round; a rewrite that fails gives no tail.
                    if !tail.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from(tail)))));
                    }
                    continue;
                }
            };
            let frame = match frame.into_data() {
                Ok(data) => {
                    let out = this.rewrite.push_shared(data);
                    if !out.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(out))));
                    }
                    // All held back, an empty frame, or a failure (told
                    // next time round).
                    continue;
                }
                Err(frame) => frame,
            };
            return match frame.into_trailers() {
                Ok(mut trailers) => {
                    // Trailers end the body; the held tail goes out first.
                    this.done = true;
                    if this.rewrite.trailers(&mut trailers) {
                        this.trailers_matched = true;
                    }
                    this.trailers = Some(trailers);
                    let tail = this.rewrite.finish();
                    if !tail.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from(tail)))));
                    }
                    continue;
                }
                // A frame kind this version does not know: nothing to rewrite in.
                Err(frame) => Poll::Ready(Some(Ok(frame))),
            };
        }
    }

    fn is_end_stream(&self) -> bool {
        // Held bytes, or output still pending, are more body to come.
        self.trailers.is_none()
            && self.rewrite.held_len() == 0
            && (self.done || self.inner.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
