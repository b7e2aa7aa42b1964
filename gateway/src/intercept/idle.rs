//! A stream that fails once nothing has moved through it for a while, so an
//! intercepted connection left idle (or trickling nothing) is closed instead
//! of holding a socket, a TLS session and a task forever.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    time::{Instant, Sleep, sleep},
};

pub struct Idle<S> {
    inner: S,
    timeout: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl<S> Idle<S> {
    pub fn new(inner: S, timeout: Duration) -> Idle<S> {
        Idle {
            inner,
            timeout,
            deadline: Box::pin(sleep(timeout)),
        }
    }

    fn touched(&mut self) {
        self.deadline.as_mut().reset(Instant::now() + self.timeout);
    }

    /// Pending I/O past the deadline fails with `TimedOut`.
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        self.deadline.as_mut().poll(cx).is_ready()
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
        Pin::new(&mut self.inner).poll_flush(cx)
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
        let mut idle = Idle::new(ours, Duration::from_secs(10));
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
}
