//! Response bodies of the test upstream that stream: one fed by a channel
//! (server-sent events), and a deterministic download pattern produced
//! chunk by chunk as hyper asks for it, never held whole.

use std::{
    convert::Infallible,
    pin::Pin,
    sync::OnceLock,
    task::{Context, Poll},
};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

use crate::pki::Sha256;

/// A body fed by a channel: each message is sent as its own frame, as
/// soon as it arrives.
pub struct ChannelBody(pub mpsc::Receiver<Bytes>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.get_mut()
            .0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|data| Ok(Frame::data(data))))
    }
}

/// The period of the download pattern: a prime, so chunks (a power of two)
/// never line up with it and a reordered or repeated chunk changes the hash.
pub const PATTERN_PERIOD: usize = 1_000_003;
/// Bytes per frame of a download.
pub const PATTERN_CHUNK: usize = 256 * 1024;

/// The pattern repeated far enough that any chunk is one slice.
fn pattern() -> &'static Bytes {
    static PATTERN: OnceLock<Bytes> = OnceLock::new();
    PATTERN.get_or_init(|| {
        let mut x: u32 = 0x9E37_79B9;
        let period: Vec<u8> = (0..PATTERN_PERIOD)
            .map(|_| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (x >> 24) as u8
            })
            .collect();
        let mut all = period.clone();
        all.extend_from_slice(&period[..PATTERN_CHUNK]);
        Bytes::from(all)
    })
}

/// The chunks `/bytes?n=N` sends, in order (zero-copy slices).
pub fn pattern_chunks(n: u64) -> impl Iterator<Item = Bytes> {
    let mut pos = 0u64;
    std::iter::from_fn(move || {
        if pos >= n {
            return None;
        }
        let len = (n - pos).min(PATTERN_CHUNK as u64) as usize;
        let offset = (pos % PATTERN_PERIOD as u64) as usize;
        pos += len as u64;
        Some(pattern().slice(offset..offset + len))
    })
}

/// SHA-256 (hex) of the first `n` bytes of the download pattern.
pub fn pattern_sha256(n: u64) -> String {
    let mut sha = Sha256::new();
    for chunk in pattern_chunks(n) {
        sha.update(&chunk);
    }
    sha.hex()
}

/// `n` bytes of the pattern, produced as hyper asks for them.
pub struct PatternBody {
    chunks: Box<dyn Iterator<Item = Bytes> + Send + Sync>,
    remaining: u64,
}

impl PatternBody {
    pub fn new(n: u64) -> PatternBody {
        PatternBody {
            chunks: Box::new(pattern_chunks(n)),
            remaining: n,
        }
    }
}

impl Body for PatternBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let chunk = this.chunks.next();
        if let Some(chunk) = &chunk {
            this.remaining -= chunk.len() as u64;
        }
        Poll::Ready(chunk.map(|data| Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_chunks_cover_exactly_n_bytes_and_wrap_at_the_period() {
        let n = (PATTERN_PERIOD + 3 * PATTERN_CHUNK + 17) as u64;
        let chunks: Vec<Bytes> = pattern_chunks(n).collect();
        assert_eq!(chunks.iter().map(|c| c.len() as u64).sum::<u64>(), n);
        let all: Vec<u8> = chunks.concat();
        assert_eq!(all[..100], all[PATTERN_PERIOD..PATTERN_PERIOD + 100]);
        assert_ne!(all[..100], all[PATTERN_CHUNK..PATTERN_CHUNK + 100]);
    }
}
