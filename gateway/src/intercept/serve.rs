//! Serving HTTP on an intercepted connection with hyper, and parking an
//! HTTP/1 connection between its requests.
//!
//! HTTP/2 (and a connection that may be: the first bytes are its preface)
//! is served by hyper's auto connection, as it comes. HTTP/1 is served
//! one stretch at a time: once nothing is in flight and all that was
//! written is flushed ([`InFlight::settled`]) and no request has begun
//! for [`PARK_AFTER`], hyper's connection is taken apart and dropped with
//! its buffers (a read and a write buffer of 8 KiB each), and the
//! connection waits parked, holding only its stream, until the client's
//! next bytes come; a new hyper connection then serves them, replayed
//! first. Most connections a sandbox keeps open are silent most of the
//! time: parked, one costs a quarter of what it did. A client that sends
//! its requests back to back keeps its hyper connection: taken apart and
//! built again between every two requests, a keep-alive request cost
//! about a tenth more CPU (1.56-1.58× nginx's against 1.38-1.48× in one
//! A/B run).
//!
//! What hyper would do with an idle connection, a parked one does too:
//! the wait for the next request head is bounded by the header read
//! timeout (from the end of the last answer, as hyper counts it, and
//! carried into the hyper connection that reads the head), the idle
//! timeout still ends it (`Idle`), and a drain, a revocation or the
//! client's end close it as hyper closes an idle connection.

use std::{convert::Infallible, future::poll_fn, pin::Pin, sync::Arc, task::Poll, time::Duration};

use http_body_util::BodyExt as _;
use hyper::{
    Request, Response,
    body::Incoming,
    server::conn::http1,
    service::{Service, service_fn},
};
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::conn::auto,
};
use tokio::{
    io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, ReadBuf},
    time::Instant,
};

use super::{
    Conn, Interceptor, REVOKED_GRACE,
    idle::{Idle, InFlight, Tracked},
    prefixed::Prefixed,
    respond::Body,
};
use crate::{conn::revoked, metrics::Metrics};

/// The first bytes of HTTP/2 with prior knowledge.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// How long a settled HTTP/1 connection waits for its next request with
/// hyper's connection (and its buffers) kept, before it is parked.
const PARK_AFTER: Duration = Duration::from_millis(500);

/// The most bytes a parked connection reads at once when woken (on the
/// stack: a parked connection holds no buffer); the rest waits in the
/// stream for hyper.
const WAKE_READ: usize = 4096;

/// Whether a connection whose first bytes are `head` is served as
/// HTTP/1 and parked between requests: hyper's auto connection takes
/// anything that starts like the HTTP/2 preface (or nothing at all) for
/// HTTP/2, or reads on to tell; that is left to it.
pub(super) fn parkable(h2: bool, head: &[u8]) -> bool {
    let n = head.len().min(H2_PREFACE.len());
    !h2 && head[..n] != H2_PREFACE[..n]
}

impl Interceptor {
    /// Serves the connection's requests until it ends: as HTTP/1, parked
    /// between them, where `h1` ([`parkable`]); else by hyper's auto
    /// connection.
    pub(super) async fn serve<S>(
        self: Arc<Self>,
        io: Idle<Prefixed<S>>,
        conn: Conn,
        in_flight: InFlight,
        h1: bool,
    ) where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        // Shared by its requests, never copied per request.
        let conn = Arc::new(conn);
        let service = self.service(&conn, &in_flight);
        if h1 {
            self.serve_h1(io, &conn, in_flight, service).await;
        } else {
            // Boxed: hyper's auto connection (HTTP/1 and HTTP/2 both
            // inline) is several times what a parked HTTP/1 connection
            // holds, and a future keeps room for its largest state.
            Box::pin(self.serve_auto(TokioIo::new(io), &conn, service)).await;
        }
    }

    /// One request at a time through [`Interceptor::handle`], each counted
    /// in flight from its head until its body and its answer have ended.
    fn service(
        self: &Arc<Self>,
        conn: &Arc<Conn>,
        in_flight: &InFlight,
    ) -> impl Service<
        Request<Incoming>,
        Response = Response<Body>,
        Error = Infallible,
        Future: Send + 'static,
    > + Clone
    + Send
    + 'static {
        let (this, served, in_flight) = (self.clone(), conn.clone(), in_flight.clone());
        service_fn(move |request: Request<Incoming>| {
            let (this, conn) = (this.clone(), served.clone());
            let busy = in_flight.start();
            // A request body hyper still reads keeps the request in
            // flight even once its answer has gone.
            let request = request.map(|body| {
                let reading = (!hyper::body::Body::is_end_stream(&body)).then(|| in_flight.start());
                Tracked::new(body, reading).map_err(Into::into).boxed()
            });
            async move {
                let started = std::time::Instant::now();
                let response = this
                    .handle(request, &conn)
                    .await
                    .map(|body| Tracked::new(body, Some(busy)).boxed());
                // Time to the response head; a streamed body is not waited for.
                this.metrics
                    .request_duration
                    .observe(started.elapsed().as_secs_f64());
                Ok::<_, Infallible>(response)
            }
        })
    }

    /// HTTP/2 (or whatever hyper's auto connection reads), until the
    /// connection ends, the daemon drains or the connection is revoked.
    async fn serve_auto<I, F>(
        &self,
        io: I,
        conn: &Conn,
        service: impl Service<
            Request<Incoming>,
            Response = Response<Body>,
            Error = Infallible,
            Future = F,
        > + Send
        + 'static,
    ) where
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
        F: Future<Output = Result<Response<Body>, Infallible>> + Send + 'static,
    {
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_read)
            .max_buf_size(self.max_buf_size());
        builder.http2().timer(TokioTimer::new());
        let connection = builder.serve_connection_with_upgrades(io, service);
        tokio::pin!(connection);
        let result = tokio::select! {
            result = connection.as_mut() => result,
            () = self.drain.started() => {
                // Finish what is in flight (a streamed body included), then close.
                connection.as_mut().graceful_shutdown();
                connection.await
            }
            () = revoked(&*self.standing, &conn.who, &self.metrics) => {
                // Answer the requests in flight, then close; but not
                // forever: an endless stream (an upload, SSE) to a host
                // the policy no longer allows must end too.
                connection.as_mut().graceful_shutdown();
                tokio::time::timeout(REVOKED_GRACE, connection)
                    .await
                    .unwrap_or(Ok(()))
            }
        };
        if let Err(err) = result {
            tracing::debug!(%err, "intercepted connection ended with an error");
        }
    }

    /// HTTP/1, parked whenever it settles, until the connection ends, the
    /// daemon drains or the connection is revoked.
    async fn serve_h1<S, Svc, F>(
        &self,
        mut io: Idle<Prefixed<S>>,
        conn: &Conn,
        in_flight: InFlight,
        service: Svc,
    ) where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
        Svc: Service<Request<Incoming>, Response = Response<Body>, Error = Infallible, Future = F>
            + Clone
            + Send
            + 'static,
        F: Future<Output = Result<Response<Body>, Infallible>> + Send + 'static,
    {
        let drain = self.drain.started();
        let revoked = revoked(&*self.standing, &conn.who, &self.metrics);
        tokio::pin!(drain, revoked);
        // When the next request head must have come by (hyper's header
        // read timeout, from when the connection began to wait for it).
        let mut head_by = Instant::now() + self.limits.header_read;
        loop {
            // A stretch parks once a request was served in it: one that
            // began with part of a head waits in hyper for the rest.
            let began = in_flight.started();
            // Boxed: parked, the connection holds none of it.
            let mut connection = Box::pin(
                self.h1_builder(head_by)
                    .serve_connection(TokioIo::new(io), service.clone())
                    .with_upgrades(),
            );
            let ended = tokio::select! {
                ended = settle(connection.as_mut(), &in_flight, began) => ended,
                () = &mut drain => {
                    // Finish what is in flight (a streamed body included), then close.
                    connection.as_mut().graceful_shutdown();
                    Ok(connection.as_mut().await)
                }
                () = &mut revoked => {
                    // As `serve_auto`: in flight answered, within a grace.
                    connection.as_mut().graceful_shutdown();
                    let finished = tokio::time::timeout(REVOKED_GRACE, connection.as_mut()).await;
                    Ok(finished.unwrap_or(Ok(())))
                }
            };
            let settled = match ended {
                Ok(result) => {
                    if let Err(err) = result {
                        tracing::debug!(%err, "intercepted connection ended with an error");
                    }
                    return;
                }
                Err(settled) => settled,
            };
            // Settled: nothing is owed, hyper waits for the next head.
            let Some(parts) = Pin::into_inner(connection).into_parts() else {
                return;
            };
            head_by = settled + self.limits.header_read;
            drop(parts.service);
            io = parts.io.into_inner();
            if !parts.read_buf.is_empty() {
                // Part of the next request is here already: hyper goes on
                // with it, no parking.
                io.get_mut().unread(&parts.read_buf);
                continue;
            }
            drop(parts.read_buf);
            let parked = Parked::new(&self.metrics);
            let woken = tokio::select! {
                read = next_bytes(&mut io) => read,
                () = tokio::time::sleep_until(head_by) => Ok(Vec::new()),
                () = &mut drain => Ok(Vec::new()),
                () = &mut revoked => Ok(Vec::new()),
            };
            drop(parked);
            match woken {
                Ok(bytes) if !bytes.is_empty() => io.get_mut().unread(&bytes),
                // The client's end, the head's deadline, a drain or a
                // revocation: closed as hyper closes an idle connection.
                Ok(_) => {
                    let _ = io.shutdown().await;
                    return;
                }
                Err(err) => {
                    tracing::debug!(%err, "parked intercepted connection ended with an error");
                    return;
                }
            }
        }
    }

    /// hyper's HTTP/1 settings for one stretch of a connection whose next
    /// request head must have come by `head_by`.
    fn h1_builder(&self, head_by: Instant) -> http1::Builder {
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(head_by.saturating_duration_since(Instant::now()))
            .max_buf_size(self.max_buf_size());
        builder
    }

    fn max_buf_size(&self) -> usize {
        self.limits.max_header_bytes.max(8192)
    }
}

/// A connection's count in `sluice_parked_connections`, until dropped.
struct Parked<'a>(&'a Metrics);

impl Parked<'_> {
    fn new(metrics: &Metrics) -> Parked<'_> {
        metrics.parked_connections.inc();
        Parked(metrics)
    }
}

impl Drop for Parked<'_> {
    fn drop(&mut self) {
        self.0.parked_connections.dec();
    }
}

/// Polls `connection` until it ends (`Ok`), or until it has waited
/// settled for [`PARK_AFTER`] (`Err`, with when it settled): a request
/// started since `began` (the count of [`InFlight::started`] when it was
/// built), nothing in flight, all written flushed, and no request begun
/// since. hyper returns pending only once it has flushed what it buffered
/// (or cannot), so a settled connection owes nothing but what its next
/// read brings.
async fn settle<F: Future + ?Sized>(
    mut connection: Pin<&mut F>,
    in_flight: &InFlight,
    began: usize,
) -> Result<F::Output, Instant> {
    // Never due later than the settled stretch is [`PARK_AFTER`] old: its
    // deadline is only ever moved to that, and each stretch settles after
    // the one before. Re-armed when it fires early, not each time the
    // connection settles: back to back, that is after every request.
    let quiet = tokio::time::sleep(PARK_AFTER);
    tokio::pin!(quiet);
    // When the connection last became settled, while it stays so.
    let mut since = None;
    poll_fn(|cx| {
        if let Poll::Ready(result) = connection.as_mut().poll(cx) {
            return Poll::Ready(Ok(result));
        }
        if in_flight.started() == began || !in_flight.settled() {
            since = None;
            return Poll::Pending;
        }
        let settled = *since.get_or_insert_with(Instant::now);
        let due = settled + PARK_AFTER;
        while quiet.as_mut().poll(cx).is_ready() {
            if Instant::now() >= due {
                return Poll::Ready(Err(settled));
            }
            quiet.as_mut().reset(due);
        }
        Poll::Pending
    })
    .await
}

/// The next bytes a parked connection reads: empty at its end.
async fn next_bytes<S: AsyncRead + Unpin>(io: &mut S) -> std::io::Result<Vec<u8>> {
    poll_fn(|cx| {
        // On the stack of this poll only: the waiting holds no buffer.
        let mut buf = [0u8; WAKE_READ];
        let mut read = ReadBuf::new(&mut buf);
        match Pin::new(&mut *io).poll_read(cx, &mut read) {
            Poll::Ready(Ok(())) => Poll::Ready(Ok(read.filled().to_vec())),
            Poll::Ready(Err(err)) => Poll::Ready(Err(err)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http2_and_what_may_be_are_not_parked() {
        // (ALPN h2, first bytes, parked between requests)
        let cases: &[(bool, &[u8], bool)] = &[
            (false, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", true),
            (true, b"", false),
            (false, b"", false),
            (false, H2_PREFACE, false),
            (false, b"PRI * HTTP/2.0\r\n\r\n", false),
            (false, b"PRI * HTTP/1.1\r\n\r\n", true),
            (false, b"P", false),
        ];
        for &(h2, head, parked) in cases {
            assert_eq!(parkable(h2, head), parked, "{h2} {head:?}");
        }
    }
}
