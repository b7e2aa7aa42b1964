//! A relayed connection whose bytes move in the kernel: both sockets go
//! into the relay sockhash, and the verdict program sends what one receives
//! out of the other (`gateway-ebpf`'s `relay`). The daemon keeps both
//! descriptors and does what the program cannot:
//!
//! - the handover of each direction: the sockets go in with their bytes
//!   held (their slot's state not zero), so what they received before and
//!   what they receive meanwhile waits in their own queues, in order,
//!   counted in the state; the daemon reads it and writes it on until,
//!   with nothing passed since it last looked, it swaps the state to zero
//!   (see `hand_over`); each direction on its own;
//! - a half-close (FIN) is passed on once the peer socket has had every
//!   byte that came before it acknowledged (the kernel sends redirected
//!   bytes from a work queue, so a shutdown at once could overtake them);
//! - revocation resets both at once; an error on either closes both;
//! - the byte counts come from the state map, counted by the program.

use std::{
    io,
    net::Shutdown,
    os::fd::{AsFd as _, AsRawFd, BorrowedFd, RawFd},
    pin::Pin,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use gateway_common::RELAY_HOLD;
use nix::sys::{
    epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout},
    socket::{MsgFlags, recv},
};
use tokio::{
    io::unix::AsyncFd,
    io::{AsyncWrite, AsyncWriteExt as _},
    net::TcpStream,
};

use crate::{
    steer::relay::{Entry, KernelRelay},
    sys::EpollFd,
};

/// A connection the kernel would not take: nothing was sent yet, the user
/// space relay can start from the beginning.
pub struct Refused {
    pub client: TcpStream,
    pub upstream: TcpStream,
}

/// Longest wait between two looks at whether a half-closing side's bytes
/// have been acknowledged by the other side's peer.
const ACK_POLL_MAX: Duration = Duration::from_millis(100);

/// How long the kernel may take to hand the daemon bytes it counted as
/// passed, or to redirect what a socket received before its FIN (it does
/// so as the bytes arrive; this bounds a socket whose bytes went astray).
const REDIRECT_WAIT: Duration = Duration::from_secs(2);

/// Relays in the kernel until both directions are done (or an error ends
/// them), or until `revoked` resolves: then both sides are reset. Returns
/// the bytes sent upstream (prefix included) and downstream.
pub async fn relay(
    kernel: &KernelRelay,
    client: TcpStream,
    upstream: TcpStream,
    prefix: &[u8],
    mut revoked: Pin<&mut impl Future<Output = ()>>,
) -> Result<(u64, u64), Refused> {
    let before = (|| {
        let cookies = [
            crate::sys::socket_cookie(client.as_fd())?,
            crate::sys::socket_cookie(upstream.as_fd())?,
        ];
        let before = [before(client.as_fd())?, before(upstream.as_fd())?];
        io::Result::Ok((cookies, before))
    })();
    let ([cc, uc], before) = match before {
        Ok(found) => found,
        Err(err) => {
            tracing::debug!(%err, "no socket cookie or counts: relayed in user space");
            return Err(Refused { client, upstream });
        }
    };
    let entries = match kernel.insert((cc, &client), (uc, &upstream)) {
        Ok(entries) => entries,
        Err(refusal) if refusal.clean => {
            tracing::debug!(err = %refusal.err, "relay maps refused: relayed in user space");
            return Err(Refused { client, upstream });
        }
        Err(refusal) => {
            tracing::warn!(err = %refusal.err, "relay maps refused a connection midway; reset");
            super::reset(&client);
            super::reset(&upstream);
            return Ok((0, 0));
        }
    };
    let mut ledger = Ledger {
        before,
        read: [0; 2],
        wrote: [0; 2],
        entries,
    };
    let (mut client, mut upstream) = (client, upstream);
    let setup = {
        let handed = hand_over_both(kernel, &mut client, &mut upstream, prefix, &mut ledger);
        tokio::select! {
            handed = handed => handed.map(Some),
            () = revoked.as_mut() => Ok(None),
        }
    };
    // The sockets, held until the counts are read.
    let held = match setup {
        Ok(Some(eof)) => watch(kernel, [client, upstream], eof, &ledger, revoked.as_mut()).await,
        Ok(None) => {
            super::reset(&client);
            super::reset(&upstream);
            drop((client, upstream));
            Vec::new()
        }
        Err(err) => {
            // Reset, not closed: the other side must not take a cut
            // stream for a finished one.
            tracing::debug!(%err, "kernel relay handover failed; reset");
            super::reset(&client);
            super::reset(&upstream);
            drop((client, upstream));
            Vec::new()
        }
    };
    let counts = (ledger.sent_to(kernel, 1), ledger.sent_to(kernel, 0));
    // Closing takes the sockets out of the sockhash (and waits for a
    // verdict running on them); their peer entries and slots go after.
    drop(held);
    kernel.remove(entries);
    Ok(counts)
}

/// A socket's stream before the relay: bytes the daemon consumed from it
/// (a sniffed prefix, a proxy request) and bytes it wrote to it (a proxy
/// answer). The half-close checks compare the kernel's counts since the
/// connection opened with these plus what the relay moved.
#[derive(Clone, Copy, Debug, Default)]
struct Before {
    consumed: u64,
    written: u64,
}

/// [`Before`] of a socket still outside the maps; an error if it is not
/// established (a FIN already in: the user-space copy handles that) or
/// its counts would not hold still (a peer sending without pause moves
/// them between two looks now and then; seldom a thousand times running).
fn before(sock: BorrowedFd<'_>) -> io::Result<Before> {
    const ESTABLISHED: u8 = 1;
    for _ in 0..1000 {
        let first = crate::sys::tcp_counts(sock)?;
        let (inq, outq) = crate::sys::tcp_queued(sock)?;
        if first.state != ESTABLISHED {
            return Err(io::Error::other("not established"));
        }
        // Nothing arrived or was acknowledged between the two looks.
        if crate::sys::tcp_counts(sock)? == first {
            return Ok(Before {
                consumed: first.received.saturating_sub(inq),
                written: first.acked + outq,
            });
        }
    }
    Err(io::Error::other("TCP counts kept moving"))
}

/// What the daemon moved, per socket (0: client, 1: upstream).
struct Ledger {
    before: [Before; 2],
    /// Bytes read from each socket during the handover.
    read: [u64; 2],
    /// Bytes written to each socket: the prefix, then what was read from
    /// the other one.
    wrote: [u64; 2],
    entries: [Entry; 2],
}

impl Ledger {
    /// Bytes sent to socket `to`, by the daemon and by the kernel.
    fn sent_to(&self, kernel: &KernelRelay, to: usize) -> u64 {
        self.wrote[to] + kernel.redirected(self.entries[1 - to].slot)
    }

    /// Bytes socket `side` received since it opened that are accounted
    /// for: consumed before, read by the handover, or redirected.
    fn accounted(&self, kernel: &KernelRelay, side: usize) -> u64 {
        self.before[side].consumed + self.read[side] + kernel.redirected(self.entries[side].slot)
    }
}

/// Writes the prefix upstream, then hands both directions to the kernel
/// (each on its own). Returns, per socket, whether it half-closed during
/// the handover (its FIN was then passed on here).
async fn hand_over_both(
    kernel: &KernelRelay,
    client: &mut TcpStream,
    upstream: &mut TcpStream,
    prefix: &[u8],
    ledger: &mut Ledger,
) -> io::Result<[bool; 2]> {
    let (cfd, ufd) = (client.as_raw_fd(), upstream.as_raw_fd());
    let (_, mut to_client) = client.split();
    let (_, mut to_upstream) = upstream.split();
    to_upstream.write_all(prefix).await?;
    ledger.wrote[1] = prefix.len() as u64;
    let [cs, us] = ledger.entries.map(|e| kernel.state(e.slot));
    let (up, down) = tokio::try_join!(
        hand_over(cfd, &mut to_upstream, cs),
        hand_over(ufd, &mut to_client, us),
    )?;
    ledger.read = [up.read, down.read];
    ledger.wrote = [down.read, prefix.len() as u64 + up.read];
    Ok([up.eof, down.eof])
}

/// One direction's handover.
#[derive(Clone, Copy, Debug)]
struct Handed {
    read: u64,
    /// `from` half-closed before the handover was done: its bytes and FIN
    /// were passed on here, and the direction stays with the daemon.
    eof: bool,
}

/// Moves what the program holds in `from`'s own queue to `to` until the
/// direction can go to the kernel, then lets it go.
///
/// `state` is `RELAY_HOLD` plus every byte the program has passed to the
/// queue. Once a read has found the queue empty, everything passed up to
/// the look at `state` before that read has been read (the program's
/// count and queueing happen under the socket's lock, which the read
/// takes) and written to `to`, i.e. it is in `to`'s send queue. If
/// `state` still holds that value, nothing was passed since: swapping it
/// to zero hands the direction over, and every later byte is redirected,
/// behind those writes. If it moved, bytes arrived: read again.
async fn hand_over(
    from: RawFd,
    to: &mut (impl AsyncWrite + Unpin),
    state: &AtomicU64,
) -> io::Result<Handed> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut read = 0u64;
    let mut stalled = Stall::new();
    loop {
        let seen = state.load(Ordering::SeqCst);
        let passed = seen.wrapping_sub(RELAY_HOLD);
        // A plain non-blocking recv: tokio's readiness knows nothing of
        // what the program passed. It also has the kernel run the program
        // on what was queued before the socket went into the map.
        match recv(from, &mut buf, MsgFlags::MSG_DONTWAIT) {
            Ok(0) if passed == read => {
                // The FIN follows every passed byte, all written on.
                to.shutdown().await?;
                return Ok(Handed { read, eof: true });
            }
            Ok(0) | Err(nix::errno::Errno::EAGAIN) if passed != read => {
                // Counted, not yet in the queue: the kernel queues from a
                // work queue when it could not at once.
                stalled.wait().await?;
            }
            Err(nix::errno::Errno::EAGAIN) => {
                if state
                    .compare_exchange(seen, 0, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    return Ok(Handed { read, eof: false });
                }
            }
            Ok(n) => {
                to.write_all(&buf[..n]).await?;
                read += n as u64;
                stalled = Stall::new();
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
}

/// Backing off while the kernel owes the daemon bytes it counted.
struct Stall {
    pause: Duration,
    deadline: tokio::time::Instant,
}

impl Stall {
    fn new() -> Stall {
        Stall {
            pause: Duration::from_micros(50),
            deadline: tokio::time::Instant::now() + REDIRECT_WAIT,
        }
    }

    async fn wait(&mut self) -> io::Result<()> {
        if tokio::time::Instant::now() >= self.deadline {
            return Err(io::Error::other(
                "bytes counted as held never reached the queue",
            ));
        }
        tokio::time::sleep(self.pause).await;
        self.pause = (self.pause * 2).min(Duration::from_millis(10));
        Ok(())
    }
}

/// Waits for each side's end, passing half-closes on; resets both on
/// revocation. `eof`: the sides whose FIN the handover passed on. Returns
/// the sockets, still open.
async fn watch(
    kernel: &KernelRelay,
    [client, upstream]: [TcpStream; 2],
    eof: [bool; 2],
    ledger: &Ledger,
    mut revoked: Pin<&mut impl Future<Output = ()>>,
) -> Vec<std::net::TcpStream> {
    // Out of tokio's reactor: it would wake for every segment the kernel
    // moves.
    let socks = match (client.into_std(), upstream.into_std()) {
        (Ok(c), Ok(u)) => [c, u],
        (c, u) => return c.into_iter().chain(u).collect(),
    };
    let watch = match watch_set(&socks, eof) {
        Ok(watch) => watch,
        Err(err) => {
            tracing::warn!(%err, "cannot watch a kernel relay; closing it");
            return socks.into();
        }
    };
    let mut done = eof;
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
            let accounted = || ledger.accounted(kernel, side);
            let arrived = tokio::select! {
                arrived = received(&socks[side], accounted) => arrived,
                () = revoked.as_mut() => false,
            };
            if !arrived {
                tracing::warn!("kernel relay: bytes received but not redirected; reset");
                reset(&socks);
                return socks.into();
            }
            let want = ledger.before[other].written + ledger.sent_to(kernel, other);
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

/// Once everything `sock` received is `accounted` for: true; false when it
/// is not within [`REDIRECT_WAIT`].
async fn received(sock: &std::net::TcpStream, accounted: impl Fn() -> u64) -> bool {
    let deadline = tokio::time::Instant::now() + REDIRECT_WAIT;
    let mut pause = Duration::from_micros(100);
    loop {
        let Ok(counts) = crate::sys::tcp_counts(sock.as_fd()) else {
            return false;
        };
        // The FIN takes a sequence number, which `tcpi_bytes_received`
        // counts.
        if accounted() + 1 >= counts.received {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(ACK_POLL_MAX);
    }
}

/// An epoll set over both sockets (data 0: client, 1: upstream) that
/// reports only a peer's half-close, hang-ups and errors; a side in `eof`
/// (already half-closed) only hang-ups and errors. It wakes the daemon
/// only for those (never for data, which the kernel moves).
fn watch_set(socks: &[std::net::TcpStream; 2], eof: [bool; 2]) -> io::Result<AsyncFd<EpollFd>> {
    let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
    for (i, sock) in socks.iter().enumerate() {
        let flags = if eof[i] {
            EpollFlags::empty()
        } else {
            EpollFlags::EPOLLRDHUP
        };
        epoll.add(sock, EpollEvent::new(flags, i as u64))?;
    }
    crate::sys::poll_epoll(epoll)
}

/// Until the peer of `sock` has acknowledged `want` bytes, or the socket
/// failed (nothing more will be acknowledged then).
async fn acknowledged(sock: &std::net::TcpStream, want: u64) {
    let mut pause = Duration::from_millis(1);
    loop {
        match crate::sys::tcp_counts(sock.as_fd()) {
            Ok(counts) if counts.acked < want => {}
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
