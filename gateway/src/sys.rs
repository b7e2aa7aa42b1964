//! The gateway's only `unsafe`: three calls whose safety the compiler
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
    let mut cookie: u64 = 0;
    let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: `fd` is a valid socket for the call's duration, and the out
    // pointers point at a u64 and its length.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_NETNS_COOKIE,
            (&mut cookie as *mut u64).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(cookie)
    } else {
        Err(io::Error::last_os_error())
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

/// Registers an eBPF ring buffer with the tokio reactor, to be polled for
/// readability.
pub fn poll_ring(events: RingBuf<MapData>) -> io::Result<AsyncFd<RingBuf<MapData>>> {
    // SAFETY: the RingBuf owns its map fd, which stays open and the same
    // for as long as the AsyncFd owns the RingBuf.
    unsafe { AsyncFd::register_with_interest(events, tokio::io::Interest::READABLE) }
        .map_err(|e| e.into_parts().1)
}
