//! A stream that fails once nothing has moved through it for a while with
//! no request in flight, so an intercepted connection left idle (or
//! trickling nothing) is closed instead of holding a socket, a TLS session
//! and a task forever, while a request whose answer is slow to come (a
//! model thinking for minutes before its first byte) is not cut.
//!
//! It also tells whether a connection has settled ([`InFlight::settled`]):
//! nothing in flight and all it wrote flushed, the moment an HTTP/1
//! connection may be parked (`serve`).

use std::{
    io,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use hyper::body::{Body as HttpBody, Bytes, Frame, SizeHint};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    time::{Instant, Sleep, sleep},
};

use super::respond::Body;

pub struct Idle<S> {
    inner: S,
    timeout: Duration,
    /// When something last moved through the stream.
    last: Instant,
    /// Never due after `last + timeout`: re-armed from `last` when it
    /// fires early, not moved on every read and write (a timer wheel
    /// removal and insertion each, several per keep-alive request).
    deadline: Pin<Box<Sleep>>,
    in_flight: InFlight,
}

impl<S> Idle<S> {
    /// `in_flight` counts the connection's requests from their head to
    /// their response's last byte; while any is, silence is not idleness.
    pub fn new(inner: S, timeout: Duration, in_flight: InFlight) -> Idle<S> {
        Idle {
            inner,
            timeout,
            last: Instant::now(),
            deadline: Box::pin(sleep(timeout)),
            in_flight,
        }
    }

    /// The wrapped stream.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    fn touched(&mut self) {
        self.last = Instant::now();
    }

    /// Pending I/O past the deadline fails with `TimedOut`, unless a
    /// request is in flight: the deadline then starts over.
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        // Polled again after each re-arming, so the new deadline wakes
        // this task.
        while self.deadline.as_mut().poll(cx).is_ready() {
            let due = self.last + self.timeout;
            if Instant::now() < due {
                self.deadline.as_mut().reset(due);
                continue;
            }
            if self.in_flight.0.requests.load(Ordering::Acquire) == 0 {
                return true;
            }
            self.touched();
            self.deadline.as_mut().reset(self.last + self.timeout);
        }
        false
    }
}

/// How many requests of one connection are in flight (a request counts
/// from its head until both its body and its answer's have ended), and
/// whether all that was written to the connection has been flushed.
#[derive(Clone, Default)]
pub struct InFlight(Arc<Counts>);

#[derive(Default)]
struct Counts {
    requests: AtomicUsize,
    /// Requests (and bodies) ever counted: which stretch of a connection
    /// saw one start.
    started: AtomicUsize,
    /// Written to since the last flush that completed.
    unflushed: AtomicBool,
}

impl InFlight {
    /// Counts a request (or its body) until the returned guard is dropped.
    pub fn start(&self) -> Busy {
        self.0.requests.fetch_add(1, Ordering::AcqRel);
        self.0.started.fetch_add(1, Ordering::AcqRel);
        Busy(self.0.clone())
    }

    /// How many requests (and bodies) were ever counted.
    pub fn started(&self) -> usize {
        self.0.started.load(Ordering::Acquire)
    }

    /// Nothing in flight, and every byte written flushed: whoever serves
    /// the connection owes the client nothing until it speaks again.
    pub fn settled(&self) -> bool {
        self.0.requests.load(Ordering::Acquire) == 0 && !self.0.unflushed.load(Ordering::Acquire)
    }

    fn wrote(&self) {
        self.0.unflushed.store(true, Ordering::Release);
    }

    fn flushed(&self) {
        self.0.unflushed.store(false, Ordering::Release);
    }
}

/// One request in flight ([`InFlight::start`]).
pub struct Busy(Arc<Counts>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.requests.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A body that keeps its request counted as in flight until its last
/// frame is read (or it is dropped): a response's, sent by hyper, and a
/// request's, read by the stages or sent upstream, so an HTTP/1
/// connection is never parked while hyper still reads a body.
pub struct Tracked<B = Body> {
    inner: B,
    busy: Option<Busy>,
}

impl<B> Tracked<B> {
    /// `inner`, counted by `busy` (`None`: a body already at its end).
    pub fn new(inner: B, busy: Option<Busy>) -> Tracked<B> {
        Tracked { inner, busy }
    }
}

impl<B: HttpBody<Data = Bytes> + Unpin> HttpBody for Tracked<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.busy = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "connection idle too long")
}

impl<S: AsyncRead + Unpin> AsyncRead for Idle<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    self.touched();
                }
                Poll::Ready(result)
            }
            Poll::Pending if self.expired(cx) => Poll::Ready(Err(timed_out())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Idle<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.in_flight.wrote();
        match Pin::new(&mut self.inner).poll_write(cx, buf) {
            Poll::Ready(result) => {
                self.touched();
                Poll::Ready(result)
            }
            Poll::Pending if self.expired(cx) => Poll::Ready(Err(timed_out())),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let flushed = Pin::new(&mut self.inner).poll_flush(cx);
        if let Poll::Ready(Ok(())) = flushed {
            self.in_flight.flushed();
        }
        flushed
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, duplex};

    #[tokio::test(start_paused = true)]
    async fn silence_past_the_timeout_fails_and_traffic_keeps_it_open() {
        let (mut peer, ours) = duplex(64);
        let mut idle = Idle::new(ours, Duration::from_secs(10), InFlight::default());
        let mut buf = [0u8; 8];

        // Traffic every 6 s keeps the connection alive past 10 s in total.
        for _ in 0..3 {
            tokio::time::advance(Duration::from_secs(6)).await;
            peer.write_all(b"x").await.expect("write");
            assert_eq!(idle.read(&mut buf).await.expect("read"), 1);
        }
        // Then 10 s of nothing: the pending read fails.
        let err = idle.read(&mut buf).await.expect_err("idle");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test(start_paused = true)]
    async fn silence_while_a_request_is_in_flight_is_not_idleness() {
        let (mut peer, ours) = duplex(64);
        let in_flight = InFlight::default();
        let mut idle = Idle::new(ours, Duration::from_secs(10), in_flight.clone());
        let mut buf = [0u8; 8];

        let busy = in_flight.start();
        // A minute of silence while the answer is awaited.
        let read = tokio::time::timeout(Duration::from_secs(60), idle.read(&mut buf)).await;
        assert!(read.is_err(), "still open: {read:?}");
        peer.write_all(b"x").await.expect("write");
        assert_eq!(idle.read(&mut buf).await.expect("read"), 1);
        // Answered: the next 10 s of nothing end it.
        drop(busy);
        let err = idle.read(&mut buf).await.expect_err("idle");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }
}
