//! What a sandbox's WebSocket is told when its connection is revoked: a
//! close frame with status 1008 (policy violation, RFC 6455 section
//! 7.4.1), so its client learns why the connection ended instead of
//! seeing it cut (1006). A close can go only between two frames: inside
//! one it would be read as payload. The splice writes the upstream's
//! frames down as they come, cut anywhere, so [`Edges`] follows their
//! headers to know whether what was written so far ends on a frame's edge;
//! when it does not, the connection is cut as before.

use crate::redact::{CLOSE, extended_len, payload_len};

/// The close frame: status 1008 and a reason naming what happened.
pub(super) const REVOKED: &[u8] = b"\x88\x29\x03\xf0revoked: policy or registration changed";

/// Where a stream of frames is, read as it is written: between frames or
/// inside one, and whether a close frame has gone (nothing may follow it).
#[derive(Debug, Default)]
pub(super) struct Edges {
    /// A header not yet whole: two bytes, up to eight of extended length
    /// and four of mask.
    header: [u8; 14],
    have: usize,
    /// Payload bytes still to come in the current frame.
    remaining: u64,
    closed: bool,
    /// Bytes followed are being written: a write cut short by the
    /// revocation leaves the stream anywhere.
    writing: bool,
}

impl Edges {
    /// Follows `bytes`, the next ones written.
    fn advance(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.remaining > 0 {
                let n = usize::try_from(self.remaining).map_or(bytes.len(), |r| r.min(bytes.len()));
                self.remaining -= n as u64;
                bytes = &bytes[n..];
                continue;
            }
            let want = if self.have < 2 {
                2
            } else {
                header_len(self.header[1])
            };
            let n = (want - self.have).min(bytes.len());
            self.header[self.have..self.have + n].copy_from_slice(&bytes[..n]);
            self.have += n;
            bytes = &bytes[n..];
            if self.have >= 2 && self.have == header_len(self.header[1]) {
                self.closed |= self.header[0] & 0x0F == CLOSE;
                self.remaining = payload_len(&self.header[..self.have]);
                self.have = 0;
            }
        }
    }

    /// Follows `bytes`, about to be written: no close may be written
    /// until [`Edges::written`] says they all were.
    pub(super) fn writing(&mut self, bytes: &[u8]) {
        self.advance(bytes);
        self.writing = true;
    }

    /// The bytes of the last [`Edges::writing`] are all written.
    pub(super) fn written(&mut self) {
        self.writing = false;
    }

    /// Whether a close frame may be written now: on a frame's edge, every
    /// byte before it written, no close among them.
    pub(super) fn may_close(&self) -> bool {
        self.have == 0 && self.remaining == 0 && !self.closed && !self.writing
    }
}

/// A header's length from its second byte: the extended length it
/// announces and the mask key, if any.
fn header_len(second: u8) -> usize {
    let mask = if second & 0x80 != 0 { 4 } else { 0 };
    2 + extended_len(second) + mask
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame: `opcode`, `payload_len` bytes of payload, masked or not.
    fn frame(opcode: u8, payload_len: usize, masked: bool) -> Vec<u8> {
        let mask_bit = if masked { 0x80 } else { 0 };
        let mut out = vec![0x80 | opcode];
        match payload_len {
            0..=125 => out.push(mask_bit | payload_len as u8),
            126..=0xFFFF => {
                out.push(mask_bit | 126);
                out.extend_from_slice(&(payload_len as u16).to_be_bytes());
            }
            _ => {
                out.push(mask_bit | 127);
                out.extend_from_slice(&(payload_len as u64).to_be_bytes());
            }
        }
        if masked {
            out.extend_from_slice(b"\x01\x02\x03\x04");
        }
        out.extend(std::iter::repeat_n(b'x', payload_len));
        out
    }

    #[test]
    fn the_close_frame_says_1008_and_its_length() {
        assert_eq!(REVOKED[0], 0x80 | CLOSE, "final, close");
        assert_eq!(
            usize::from(REVOKED[1]),
            REVOKED.len() - 2,
            "unmasked, its length"
        );
        assert!(REVOKED.len() - 2 <= 125, "a control frame's payload");
        assert_eq!(u16::from_be_bytes([REVOKED[2], REVOKED[3]]), 1008);
        assert!(std::str::from_utf8(&REVOKED[4..]).is_ok(), "a UTF-8 reason");
    }

    /// Every cut of a stream of frames: the edges are exactly where a
    /// frame ends, and none after a close.
    #[test]
    fn edges_are_where_frames_end_however_the_stream_is_cut() {
        let frames = [
            frame(0x1, 5, false),
            frame(0x2, 0, false),
            frame(0x2, 300, true),
            frame(0x9, 3, false),
            frame(0x2, 70_000, false),
            frame(0x1, 1, true),
        ];
        let stream: Vec<u8> = frames.concat();
        let mut ends = std::collections::BTreeSet::from([0]);
        let mut at = 0;
        for f in &frames {
            at += f.len();
            ends.insert(at);
        }
        for chunk in [1, 2, 3, 7, 64, 4096, stream.len()] {
            let mut edges = Edges::default();
            let mut written = 0;
            for piece in stream.chunks(chunk) {
                edges.advance(piece);
                written += piece.len();
                assert_eq!(
                    edges.may_close(),
                    ends.contains(&written),
                    "{written} bytes written in chunks of {chunk}"
                );
            }
        }
    }

    #[test]
    fn bytes_being_written_are_no_edge_until_written() {
        let mut edges = Edges::default();
        edges.writing(&frame(0x1, 3, false));
        assert!(!edges.may_close(), "the write may be cut short");
        edges.written();
        assert!(edges.may_close());
    }

    #[test]
    fn nothing_may_follow_a_close() {
        for masked in [false, true] {
            let mut edges = Edges::default();
            edges.advance(&frame(0x1, 4, masked));
            assert!(edges.may_close());
            edges.advance(&frame(CLOSE, 2, masked));
            assert!(!edges.may_close(), "a close went by (masked: {masked})");
        }
    }
}
