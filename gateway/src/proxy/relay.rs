//! Byte relay between a sandbox connection and its destination.
//!
//! The bytes read while sniffing are sent first, then both directions are
//! copied until each side has closed; a half-close on one side is passed on
//! (shutdown of the write half) while the other direction keeps flowing.
//! A relay whose connection is revoked (`super::revoked`) ends at once.
//!
//! [`Relayer`] picks the path: in the kernel (`super::kernel_relay`) where
//! the programs were attached and the config allows it, else (and for any
//! connection the kernel refuses) the copy below. Each connection is
//! counted under the path it took (`sluice_relay_connections_total`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::{
    io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, ReadBuf, copy_bidirectional_with_sizes},
    net::TcpStream,
};

use crate::{metrics::Metrics, steer::relay::KernelRelay};

/// Which way relayed bytes go.
#[derive(Clone, Default)]
pub struct Relayer {
    kernel: Option<Arc<KernelRelay>>,
}

impl Relayer {
    /// In the kernel where `kernel` is there, else in user space.
    pub fn new(kernel: Option<Arc<KernelRelay>>) -> Relayer {
        Relayer { kernel }
    }

    /// Relays as [`relay`] does, in the kernel where it can; counts the
    /// path taken and the bytes carried.
    pub async fn relay(
        &self,
        client: TcpStream,
        upstream: TcpStream,
        prefix: &[u8],
        revoked: impl Future<Output = ()>,
        metrics: &Metrics,
    ) {
        let mut revoked = std::pin::pin!(revoked);
        let (mut client, mut upstream) = (client, upstream);
        if let Some(kernel) = &self.kernel {
            match super::kernel_relay::relay(kernel, client, upstream, prefix, revoked.as_mut())
                .await
            {
                Ok((up, down)) => {
                    metrics.relay_paths.with_label_values(&["kernel"]).inc();
                    metrics.relayed(up, down);
                    return;
                }
                Err(refused) => (client, upstream) = (refused.client, refused.upstream),
            }
        }
        metrics.relay_paths.with_label_values(&["user"]).inc();
        let (up, down) = relay(client, upstream, prefix, revoked).await;
        metrics.relayed(up, down);
    }
}

/// Large enough that bulk transfers move in few syscalls; two per connection.
const BUF: usize = 64 * 1024;

/// Relays until both directions are done, or until `revoked` resolves:
/// then both sides are reset. Returns bytes sent upstream (prefix
/// included) and downstream, also when the relay was cut short: each is
/// what was read from the other side. Errors end the relay quietly: a
/// reset from either side is an ordinary way for a connection to end.
pub async fn relay(
    client: TcpStream,
    mut upstream: TcpStream,
    prefix: &[u8],
    revoked: impl Future<Output = ()>,
) -> (u64, u64) {
    if !prefix.is_empty() && upstream.write_all(prefix).await.is_err() {
        return (0, 0);
    }
    let (mut client, mut upstream) = (Counted::new(client), Counted::new(upstream));
    tokio::select! {
        _ = copy_bidirectional_with_sizes(&mut client, &mut upstream, BUF, BUF) => {}
        () = revoked => {
            // A reset, not an end of stream: neither side may take a
            // connection cut half-way for one that ended (plain TCP has no
            // framing of its own to tell).
            super::reset(&client.inner);
            super::reset(&upstream.inner);
        }
    }
    (prefix.len() as u64 + client.read, upstream.read)
}

/// A stream that counts the bytes read from it, so a relay cut short still
/// knows how much it carried (the copy's own counts come only at its end).
struct Counted<S> {
    inner: S,
    read: u64,
}

impl<S> Counted<S> {
    fn new(inner: S) -> Counted<S> {
        Counted { inner, read: 0 }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        self.read += (buf.filled().len() - before) as u64;
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
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
    use tokio::{io::AsyncReadExt as _, net::TcpListener};

    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (a, b) = tokio::join!(TcpStream::connect(addr), listener.accept());
        (a.expect("connect"), b.expect("accept").0)
    }

    #[tokio::test]
    async fn prefix_first_then_both_ways_with_half_close() {
        // sandbox <-> [client_side | relay | upstream_side] <-> server
        let (mut sandbox, client_side) = pair().await;
        let (upstream_side, mut server) = pair().await;
        let relay = tokio::spawn(relay(
            client_side,
            upstream_side,
            b"HEAD",
            std::future::pending(),
        ));

        sandbox.write_all(b"-body").await.expect("write");
        sandbox.shutdown().await.expect("half-close");
        let mut got = Vec::new();
        server
            .read_to_end(&mut got)
            .await
            .expect("server reads to EOF");
        assert_eq!(got, b"HEAD-body");

        // The other direction still flows after the sandbox's half-close.
        server.write_all(b"reply").await.expect("reply");
        server.shutdown().await.expect("close");
        let mut reply = Vec::new();
        sandbox
            .read_to_end(&mut reply)
            .await
            .expect("sandbox reads");
        assert_eq!(reply, b"reply");
        assert_eq!(relay.await.expect("relay task"), (9, 5));
    }

    /// Many buffers' worth each way at once, written in odd sizes: every
    /// byte arrives, in order, and both ends see the other's end.
    #[tokio::test]
    async fn megabytes_both_ways_at_once_arrive_whole() {
        const LEN: usize = 3 << 20;
        let pattern = |seed: u8| -> Vec<u8> { (0..LEN).map(|i| (i % 251) as u8 ^ seed).collect() };
        let (sandbox, client_side) = pair().await;
        let (upstream_side, server) = pair().await;
        let relay = tokio::spawn(relay(
            client_side,
            upstream_side,
            b"",
            std::future::pending(),
        ));
        let send_then_read = |mut stream: TcpStream, out: Vec<u8>| async move {
            let (mut read, mut write) = stream.split();
            let sending = async {
                for chunk in out.chunks(70_001) {
                    write.write_all(chunk).await.expect("write");
                }
                write.shutdown().await.expect("half-close");
            };
            let mut got = Vec::new();
            let reading = read.read_to_end(&mut got);
            let ((), read) = tokio::join!(sending, reading);
            read.expect("read to the end");
            got
        };
        let (at_sandbox, at_server) = tokio::join!(
            send_then_read(sandbox, pattern(1)),
            send_then_read(server, pattern(2)),
        );
        assert!(at_server == pattern(1), "upstream bytes differ");
        assert!(at_sandbox == pattern(2), "downstream bytes differ");
        assert_eq!(relay.await.expect("relay task"), (LEN as u64, LEN as u64));
    }

    #[tokio::test]
    async fn a_revoked_relay_still_reports_what_it_carried() {
        let (mut sandbox, client_side) = pair().await;
        let (upstream_side, mut server) = pair().await;
        let (revoke, revoked) = tokio::sync::oneshot::channel::<()>();
        let relay = tokio::spawn(relay(client_side, upstream_side, b"HEAD", async {
            let _ = revoked.await;
        }));
        sandbox.write_all(b"-body").await.expect("write");
        let mut got = [0u8; 9];
        server.read_exact(&mut got).await.expect("server reads");
        server.write_all(b"reply").await.expect("reply");
        let mut reply = [0u8; 5];
        sandbox.read_exact(&mut reply).await.expect("sandbox reads");
        let _ = revoke.send(());
        assert_eq!(relay.await.expect("relay task"), (9, 5));
    }
}
