//! A relayed connection whose bytes move in the kernel: both sockets go
//! into the relay sockhash, and the verdict program sends what one receives
//! out of the other (`gateway-ebpf`'s `relay`). The daemon keeps both
//! descriptors and does what the program cannot:
//!
//! - what arrived before the sockets were joined (the kernel redirects only
//!   what it receives afterwards) is read and written on here, once: the
//!   sockets are inserted with no peer, so what arrives meanwhile waits in
//!   their own queues, in order; then they are joined and read once more;
//! - a half-close (FIN) is passed on once the peer socket has had every
//!   byte that came before it acknowledged (the kernel sends redirected
//!   bytes from a work queue, so a shutdown at once could overtake them);
//! - revocation resets both at once; an error on either closes both;
//! - the byte counts come from the map, counted by the program.
//!
//! Between the last read of the first flush and the join, new bytes wait in
//! the socket's queue and are read by the second flush; bytes arriving in
//! the microseconds between that read and its write could be redirected
//! before it. Only a sender that sends twice without waiting for an answer,
//! in that window, is exposed to it.

use std::{
    io,
    net::Shutdown,
    os::fd::{AsFd as _, AsRawFd, RawFd},
    pin::Pin,
    time::Duration,
};

use nix::sys::{
    epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout},
    socket::{MsgFlags, recv},
};
use tokio::{io::AsyncWriteExt as _, io::unix::AsyncFd, net::TcpStream};

use crate::{steer::relay::KernelRelay, sys::EpollFd};

/// A connection the kernel would not take: nothing was sent yet, the user
/// space relay can start from the beginning.
pub struct Refused {
    pub client: TcpStream,
    pub upstream: TcpStream,
}

/// Longest wait between two looks at whether a half-closing side's bytes
/// have been acknowledged by the other side's peer.
const ACK_POLL_MAX: Duration = Duration::from_millis(100);

/// Relays in the kernel until both directions are done (or an error ends
/// them), or until `revoked` resolves: then both sides are reset. Returns
/// the bytes sent upstream (prefix included) and downstream.
pub async fn relay(
    kernel: &KernelRelay,
    client: TcpStream,
    mut upstream: TcpStream,
    prefix: &[u8],
    mut revoked: Pin<&mut impl Future<Output = ()>>,
) -> Result<(u64, u64), Refused> {
    let cookies = crate::sys::socket_cookie(client.as_fd())
        .and_then(|c| Ok((c, crate::sys::socket_cookie(upstream.as_fd())?)));
    let (cc, uc) = match cookies {
        Ok(cookies) => cookies,
        Err(err) => {
            tracing::debug!(%err, "no socket cookie: relayed in user space");
            return Err(Refused { client, upstream });
        }
    };
    if let Err(err) = kernel.insert((cc, &client), (uc, &upstream)) {
        tracing::debug!(%err, "relay sockhash refused: relayed in user space");
        return Err(Refused { client, upstream });
    }
    let mut client = client;
    let mut sent = Sent {
        up: prefix.len() as u64,
        down: 0,
    };
    let setup = {
        let joined = async {
            upstream.write_all(prefix).await?;
            sent.flush(&mut client, &mut upstream).await?;
            kernel
                .join(cc, uc)
                .map_err(|e| io::Error::other(e.to_string()))?;
            sent.flush(&mut client, &mut upstream).await
        };
        tokio::select! {
            joined = joined => joined.map(|()| true),
            () = revoked.as_mut() => Ok(false),
        }
    };
    // The sockets, held until the counts are read.
    let held = match setup {
        Ok(true) => {
            watch(
                kernel,
                client,
                upstream,
                [cc, uc],
                &mut sent,
                revoked.as_mut(),
            )
            .await
        }
        Ok(false) => {
            super::reset(&client);
            super::reset(&upstream);
            Vec::new()
        }
        Err(err) => {
            tracing::debug!(%err, "kernel relay setup failed");
            Vec::new()
        }
    };
    let counts = (sent.up + kernel.sent(cc), sent.down + kernel.sent(uc));
    // Closing takes the sockets out of the sockhash; the peer entries go
    // here, after the counts were read.
    drop(held);
    kernel.remove(cc);
    kernel.remove(uc);
    Ok(counts)
}

/// What the daemon itself wrote to each side: the prefix and the flushes.
#[derive(Clone, Copy)]
struct Sent {
    up: u64,
    down: u64,
}

impl Sent {
    /// Reads what waits in each socket's own queue and writes it on.
    async fn flush(&mut self, client: &mut TcpStream, upstream: &mut TcpStream) -> io::Result<()> {
        self.up += drain_into(client.as_raw_fd(), upstream).await?;
        self.down += drain_into(upstream.as_raw_fd(), client).await?;
        Ok(())
    }
}

/// Moves what is queued on `from` now (not what comes later) to `to`.
async fn drain_into(from: RawFd, to: &mut TcpStream) -> io::Result<u64> {
    let mut buf = vec![0u8; 16 * 1024];
    let mut moved = 0u64;
    loop {
        // A plain non-blocking recv: tokio's readiness knows nothing of
        // what queued while the socket moved into the sockhash.
        match recv(from, &mut buf, MsgFlags::MSG_DONTWAIT) {
            Ok(0) | Err(nix::errno::Errno::EAGAIN) => return Ok(moved),
            Ok(n) => {
                to.write_all(&buf[..n]).await?;
                moved += n as u64;
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
}

/// Waits for each side's end, passing half-closes on; resets both on
/// revocation. Returns the sockets, still open.
async fn watch(
    kernel: &KernelRelay,
    client: TcpStream,
    upstream: TcpStream,
    cookies: [u64; 2],
    sent: &mut Sent,
    mut revoked: Pin<&mut impl Future<Output = ()>>,
) -> Vec<std::net::TcpStream> {
    // Out of tokio's reactor: it would wake for every segment the kernel
    // moves.
    let socks = match (client.into_std(), upstream.into_std()) {
        (Ok(c), Ok(u)) => [c, u],
        (c, u) => return c.into_iter().chain(u).collect(),
    };
    let watch = match watch_set(&socks) {
        Ok(watch) => watch,
        Err(err) => {
            tracing::warn!(%err, "cannot watch a kernel relay; closing it");
            return socks.into();
        }
    };
    let mut done = [false; 2];
    let mut events = [EpollEvent::empty(); 2];
    while !(done[0] && done[1]) {
        let ready = tokio::select! {
            ready = watch.readable() => ready,
            () = revoked.as_mut() => {
                reset(&socks);
                return socks.into();
            }
        };
        let Ok(mut guard) = ready else {
            break;
        };
        let n = match watch.get_ref().0.wait(&mut events, EpollTimeout::ZERO) {
            Ok(0) => {
                guard.clear_ready();
                continue;
            }
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break,
        };
        for event in &events[..n] {
            let side = event.data() as usize;
            // An error, or a hang-up of a side already half-closed (it can
            // hang up fully only by a reset): the connection is over.
            if event.events().contains(EpollFlags::EPOLLERR) || done[side] {
                return socks.into();
            }
            let other = 1 - side;
            // `side`'s FIN can wake the daemon before the kernel has
            // redirected the bytes that came with it: first every byte
            // `side` received must be accounted for (read by the daemon or
            // redirected), then acknowledged on the other socket, and only
            // then does the FIN follow them there.
            let read = if side == 0 { sent.up } else { sent.down };
            let accounted = || read + kernel.sent(cookies[side]);
            let want = tokio::select! {
                want = received(&socks[side], accounted) => want,
                () = revoked.as_mut() => None,
            };
            let Some(want) = want else {
                tracing::warn!("kernel relay: bytes received but not redirected; reset");
                reset(&socks);
                return socks.into();
            };
            tokio::select! {
                () = acknowledged(&socks[other], want) => {}
                () = revoked.as_mut() => {
                    reset(&socks);
                    return socks.into();
                }
            }
            let _ = socks[other].shutdown(Shutdown::Write);
            // From now on only an error or a hang-up of this side matters
            // (bytes the other side sends to it would be lost).
            let _ = watch.get_ref().0.modify(
                &socks[side],
                &mut EpollEvent::new(EpollFlags::empty(), side as u64),
            );
            done[side] = true;
        }
    }
    socks.into()
}

/// How long the kernel may take to redirect what a socket received before
/// its FIN (it does so as the FIN arrives; this bounds a socket whose bytes
/// were left in its own queue).
const REDIRECT_WAIT: Duration = Duration::from_secs(2);

/// Once everything `sock` received is `accounted` for, that count; `None`
/// when it is not within [`REDIRECT_WAIT`].
async fn received(sock: &std::net::TcpStream, accounted: impl Fn() -> u64) -> Option<u64> {
    let deadline = tokio::time::Instant::now() + REDIRECT_WAIT;
    let mut pause = Duration::from_micros(100);
    loop {
        let (_, got) = crate::sys::tcp_bytes(sock.as_fd()).ok()?;
        let done = accounted();
        // The FIN takes a sequence number, which `tcpi_bytes_received`
        // counts.
        if done + 1 >= got {
            return Some(done);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(ACK_POLL_MAX);
    }
}

/// An epoll set over both sockets (data 0: client, 1: upstream) that
/// reports only a peer's half-close, hang-ups and errors.
/// It wakes the daemon only for those (never for data, which the kernel
/// moves).
fn watch_set(socks: &[std::net::TcpStream; 2]) -> io::Result<AsyncFd<EpollFd>> {
    let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
    for (i, sock) in socks.iter().enumerate() {
        epoll.add(sock, EpollEvent::new(EpollFlags::EPOLLRDHUP, i as u64))?;
    }
    crate::sys::poll_epoll(epoll)
}

/// Until the peer of `sock` has acknowledged `want` bytes, or the socket
/// failed (nothing more will be acknowledged then).
async fn acknowledged(sock: &std::net::TcpStream, want: u64) {
    let mut pause = Duration::from_millis(1);
    loop {
        match crate::sys::tcp_bytes(sock.as_fd()) {
            Ok((acked, _)) if acked < want => {}
            _ => return,
        }
        if !matches!(sock.take_error(), Ok(None)) {
            return;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(ACK_POLL_MAX);
    }
}

/// Resets both sockets when they close (a zero linger).
fn reset(socks: &[std::net::TcpStream; 2]) {
    for sock in socks {
        let _ = nix::sys::socket::setsockopt(
            sock,
            nix::sys::socket::sockopt::Linger,
            &libc::linger {
                l_onoff: 1,
                l_linger: 0,
            },
        );
    }
}
