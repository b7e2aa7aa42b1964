//! The gateway's only `unsafe`: the calls whose safety the compiler
//! cannot see, each wrapped in a safe function with its reason. Everything
//! else in the crate is `deny(unsafe_code)` (the crate root), and the
//! content scanners' SIMD lives in the `sluice_scan` crate.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use aya::maps::{MapData, RingBuf};
use tokio::io::unix::AsyncFd;

/// The cookie of the namespace a socket lives in (`SO_NETNS_COOKIE`: what
/// `bpf_get_netns_cookie` returns for sockets of that namespace).
pub fn netns_cookie(fd: BorrowedFd<'_>) -> io::Result<u64> {
    sockopt_u64(fd, libc::SO_NETNS_COOKIE)
}

/// `SO_COOKIE` (the libc crate does not name it for every target).
const SO_COOKIE: libc::c_int = 57;

/// A socket's cookie (`SO_COOKIE`: what `bpf_get_socket_cookie` returns for
/// it; the key of the in-kernel relay's maps).
pub fn socket_cookie(fd: BorrowedFd<'_>) -> io::Result<u64> {
    sockopt_u64(fd, SO_COOKIE)
}

/// A `SOL_SOCKET` option whose value is a u64.
fn sockopt_u64(fd: BorrowedFd<'_>, option: libc::c_int) -> io::Result<u64> {
    let mut value: u64 = 0;
    let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: `fd` is a valid socket for the call's duration, and the out
    // pointers point at a u64 and its length.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&mut value as *mut u64).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Where `tcpi_bytes_acked` sits in the kernel's `struct tcp_info` (UAPI,
/// append-only; the libc crate's glibc struct stops short of it), followed
/// by `tcpi_bytes_received`. `tcpi_state` is its first byte.
const TCPI_BYTES_ACKED: usize = 120;

/// What `TCP_INFO` says of a socket's byte streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpCounts {
    /// `tcpi_state` (`TCP_ESTABLISHED` is 1).
    pub state: u8,
    /// Bytes of its stream its peer has acknowledged (`tcpi_bytes_acked`).
    pub acked: u64,
    /// Bytes (and a FIN, which takes a sequence number) it has received
    /// (`tcpi_bytes_received`).
    pub received: u64,
}

/// A TCP socket's [`TcpCounts`].
pub fn tcp_counts(fd: BorrowedFd<'_>) -> io::Result<TcpCounts> {
    let mut info = [0u8; 256];
    let mut len = info.len() as libc::socklen_t;
    // SAFETY: `fd` is a valid socket; the kernel writes at most `len` bytes
    // into `info` and sets `len` to how many it wrote.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let field = |at: usize| {
        info.get(at..at + 8)
            .filter(|_| len as usize >= at + 8)
            .map(|b| u64::from_ne_bytes(b.try_into().expect("eight bytes")))
            .ok_or_else(|| io::Error::other("tcp_info too short for tcpi_bytes_received"))
    };
    Ok(TcpCounts {
        state: info[0],
        acked: field(TCPI_BYTES_ACKED)?,
        received: field(TCPI_BYTES_ACKED + 8)?,
    })
}

/// Bytes waiting in a TCP socket's receive queue (`SIOCINQ`, a FIN not
/// counted) and in its send queue, sent or not but not acknowledged
/// (`SIOCOUTQ`).
pub fn tcp_queued(fd: BorrowedFd<'_>) -> io::Result<(u64, u64)> {
    let mut queued = [0 as libc::c_int; 2];
    for (request, out) in [libc::FIONREAD, libc::TIOCOUTQ]
        .into_iter()
        .zip(&mut queued)
    {
        // SAFETY: `fd` is a valid socket; both requests write one int
        // through the pointer.
        if unsafe { libc::ioctl(fd.as_raw_fd(), request, out as *mut libc::c_int) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    let count = |n: libc::c_int| u64::try_from(n).map_err(|_| io::Error::other("negative count"));
    Ok((count(queued[0])?, count(queued[1])?))
}

/// A BPF array map created `BPF_F_MMAPABLE`, mapped read-write and shared
/// with the kernel: its 8-byte words are used through atomics only.
pub struct MappedWords {
    ptr: std::ptr::NonNull<std::sync::atomic::AtomicU64>,
    words: usize,
}

// SAFETY: the mapping is plain shared memory accessed only through
// `AtomicU64`, which is `Sync`.
unsafe impl Send for MappedWords {}
// SAFETY: as above.
unsafe impl Sync for MappedWords {}

impl MappedWords {
    /// Maps the first `words` 8-byte words of the map behind `fd`.
    pub fn map(fd: BorrowedFd<'_>, words: usize) -> io::Result<MappedWords> {
        let len = words * 8;
        // SAFETY: a new shared mapping of a BPF map fd (the kernel checks
        // that the map is mmapable and `len` within it); nothing aliases
        // it in this process but this value.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = std::ptr::NonNull::new(ptr.cast()).ok_or_else(|| io::Error::other("mmap"))?;
        Ok(MappedWords { ptr, words })
    }

    /// The `i`th word, `None` past the end.
    pub fn word(&self, i: usize) -> Option<&std::sync::atomic::AtomicU64> {
        // SAFETY: in bounds of a page-aligned mapping that lives as long as
        // `self`; any bit pattern is a valid u64.
        (i < self.words).then(|| unsafe { self.ptr.add(i).as_ref() })
    }
}

impl Drop for MappedWords {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once; no reference
        // handed out by `word` outlives `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.words * 8) };
    }
}

/// A value of plain integers read out of the front of `bytes` (a ring
/// buffer item the kernel wrote), or `None` when they are too few.
pub fn read_pod<T: aya::Pod>(bytes: &[u8]) -> Option<T> {
    (bytes.len() >= std::mem::size_of::<T>()).then(|| {
        // SAFETY: the length is checked; `T: Pod` is plain integers, so any
        // bit pattern is valid, and read_unaligned copes with the alignment.
        unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) }
    })
}

/// An epoll set, as the tokio reactor polls it.
pub struct EpollFd(pub nix::sys::epoll::Epoll);

impl AsRawFd for EpollFd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0.0.as_raw_fd()
    }
}

/// Registers an epoll set with the tokio reactor: readable while any of its
/// own events is ready.
pub fn poll_epoll(epoll: nix::sys::epoll::Epoll) -> io::Result<AsyncFd<EpollFd>> {
    // SAFETY: the `Epoll` owns its fd, which stays open and the same for as
    // long as the AsyncFd owns it.
    unsafe { AsyncFd::register_with_interest(EpollFd(epoll), tokio::io::Interest::READABLE) }
        .map_err(|e| e.into_parts().1)
}

/// Registers an eBPF ring buffer with the tokio reactor, to be polled for
/// readability.
pub fn poll_ring(events: RingBuf<MapData>) -> io::Result<AsyncFd<RingBuf<MapData>>> {
    // SAFETY: the RingBuf owns its map fd, which stays open and the same
    // for as long as the AsyncFd owns the RingBuf.
    unsafe { AsyncFd::register_with_interest(events, tokio::io::Interest::READABLE) }
        .map_err(|e| e.into_parts().1)
}
