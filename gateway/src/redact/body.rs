//! [`RedactedBody`]: a hyper body adapter that redacts data frames as they
//! pass and the values of trailers.

use std::error::Error;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use hyper::HeaderMap;
use hyper::body::{Body, Bytes, Frame, SizeHint};

use super::{Needles, Redactor};

type BoxError = Box<dyn Error + Send + Sync>;

/// Wraps a body and redacts it with a [`Redactor`].
///
/// The length changes, so the size hint is unknown: the caller must drop any
/// `Content-Length` of the wrapped message.
pub struct RedactedBody<B> {
    inner: B,
    redactor: Redactor,
    /// Trailers waiting while the held tail is emitted ahead of them.
    trailers: Option<HeaderMap>,
    trailers_matched: bool,
    /// The inner body ended or failed; nothing more to poll.
    done: bool,
}

impl<B> RedactedBody<B> {
    pub fn new(inner: B, needles: Arc<Needles>) -> RedactedBody<B> {
        RedactedBody {
            inner,
            redactor: Redactor::new(needles),
            trailers: None,
            trailers_matched: false,
            done: false,
        }
    }

    /// Whether anything (data or trailers) was redacted so far.
    pub fn matched(&self) -> bool {
        self.redactor.matched() || self.trailers_matched
    }
}

impl<B> Body for RedactedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if let Some(trailers) = this.trailers.take() {
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        if this.done {
            return Poll::Ready(None);
        }
        loop {
            let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                Some(Err(err)) => {
                    this.done = true;
                    this.redactor.discard();
                    return Poll::Ready(Some(Err(err.into())));
                }
                None => {
                    this.done = true;
                    let tail = this.redactor.finish();
                    if tail.is_empty() {
                        return Poll::Ready(None);
                    }
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from(tail)))));
                }
            };
            let frame = match frame.into_data() {
                Ok(data) => {
                    let out = this.redactor.push(&data);
                    if out.is_empty() {
                        // All held back (or an empty frame): nothing to send yet.
                        continue;
                    }
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                }
                Err(frame) => frame,
            };
            return match frame.into_trailers() {
                Ok(mut trailers) => {
                    // Trailers end the body; the held tail goes out first.
                    this.done = true;
                    if this.redactor.needles().redact_headers(&mut trailers) {
                        this.trailers_matched = true;
                    }
                    let tail = this.redactor.finish();
                    if tail.is_empty() {
                        Poll::Ready(Some(Ok(Frame::trailers(trailers))))
                    } else {
                        this.trailers = Some(trailers);
                        Poll::Ready(Some(Ok(Frame::data(Bytes::from(tail)))))
                    }
                }
                // A frame kind this version does not know: nothing to redact in.
                Err(frame) => Poll::Ready(Some(Ok(frame))),
            };
        }
    }

    fn is_end_stream(&self) -> bool {
        self.trailers.is_none()
            && (self.done || (self.inner.is_end_stream() && self.redactor.held_len() == 0))
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
