//! Credential redaction in the frames a WebSocket upstream sends (RFC
//! 6455), after an upgrade that carried an injected secret: the bytes
//! after the 101 are frames, not a body, so the secret echoed in one (a
//! message, a ping, a close reason) would otherwise reach the sandbox.
//!
//! A data message is redacted as one stream, whatever its fragmentation:
//! a [`Redactor`] runs across its frames, and each piece of payload that
//! comes in leaves as a frame of its own (intermediaries may refragment
//! a message, section 5.4), so a large frame streams and what is held is
//! at most a needle's length. Control frames (at most 125 bytes) are
//! redacted whole; a close frame's status code is kept.
//!
//! Only plain frames can be read: the upgrade request goes without
//! `Sec-WebSocket-Extensions` (no compression is negotiated), and a frame
//! with a reserved bit set, a masked frame (servers never mask), an
//! unknown opcode or a malformed fragment sequence ends the connection
//! ([`FrameError`]) rather than pass unread.

use std::sync::Arc;

use super::{Needles, Redactor};

const CONTINUATION: u8 = 0x0;
const TEXT: u8 = 0x1;
const BINARY: u8 = 0x2;
pub(crate) const CLOSE: u8 = 0x8;
/// The longest control payload (section 5.5).
const CONTROL_MAX: usize = 125;

/// Why the frames cannot be redacted: the connection ends.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("a frame has a reserved bit set (an extension Sluice did not negotiate)")]
    Reserved,
    #[error("a frame from the server is masked")]
    Masked,
    #[error("a frame has opcode {0:#x}, which RFC 6455 does not define")]
    Opcode(u8),
    #[error("a control frame is fragmented or longer than 125 bytes")]
    Control,
    #[error("a continuation frame without a message, or a message inside another")]
    Fragments,
}

/// The frames of one direction of a WebSocket, redacted as they stream.
pub struct FrameRedactor {
    needles: Arc<Needles>,
    /// A frame header not yet whole.
    header: Vec<u8>,
    /// The frame whose payload is being read.
    frame: Option<Frame>,
    /// The data message in progress.
    message: Option<Message>,
    matched: bool,
}

struct Frame {
    fin: bool,
    opcode: u8,
    remaining: u64,
    /// A control frame's payload, redacted whole at its end.
    control: Vec<u8>,
}

struct Message {
    opcode: u8,
    redactor: Redactor,
    /// Whether its first frame (the one with its opcode) went out.
    started: bool,
}

impl Message {
    /// Writes `payload` as the message's next frame; an empty one only to
    /// end the message.
    fn emit(&mut self, payload: &[u8], fin: bool, out: &mut Vec<u8>) {
        if payload.is_empty() && !fin {
            return;
        }
        let opcode = if self.started {
            CONTINUATION
        } else {
            self.opcode
        };
        self.started = true;
        write_frame(out, fin, opcode, payload);
    }
}

impl FrameRedactor {
    pub fn new(needles: Arc<Needles>) -> FrameRedactor {
        FrameRedactor {
            needles,
            header: Vec::new(),
            frame: None,
            message: None,
            matched: false,
        }
    }

    /// Whether anything was redacted so far.
    pub fn matched(&self) -> bool {
        self.matched || self.message.as_ref().is_some_and(|m| m.redactor.matched())
    }

    /// Reads `input` (frames, cut anywhere) and appends the redacted frames
    /// to `out`.
    pub fn push(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), FrameError> {
        loop {
            if let Some(frame) = &mut self.frame {
                let n =
                    usize::try_from(frame.remaining).map_or(input.len(), |r| r.min(input.len()));
                let (piece, rest) = input.split_at(n);
                input = rest;
                frame.remaining -= n as u64;
                if frame.opcode >= CLOSE {
                    frame.control.extend_from_slice(piece);
                } else if let Some(message) = &mut self.message {
                    // A message's last bytes leave with its end.
                    let last = frame.remaining == 0 && frame.fin;
                    let mut redacted = message.redactor.push(piece);
                    if last {
                        redacted.extend(message.redactor.finish());
                    }
                    message.emit(&redacted, last, out);
                }
                if frame.remaining > 0 {
                    return Ok(());
                }
                if let Some(frame) = self.frame.take() {
                    self.end(frame, out);
                }
                continue;
            }
            if input.is_empty() {
                return Ok(());
            }
            // The header: two bytes, then the extended length they announce.
            let want = match self.header.get(1) {
                None => 2,
                Some(&second) => 2 + extended_len(second),
            };
            let n = (want - self.header.len()).min(input.len());
            self.header.extend_from_slice(&input[..n]);
            input = &input[n..];
            let whole =
                self.header.len() >= 2 && self.header.len() == 2 + extended_len(self.header[1]);
            if whole {
                let header = std::mem::take(&mut self.header);
                self.start(&header)?;
            }
        }
    }

    /// Checks a whole header and begins its frame.
    fn start(&mut self, header: &[u8]) -> Result<(), FrameError> {
        let (fin, opcode) = (header[0] & 0x80 != 0, header[0] & 0x0F);
        if header[0] & 0x70 != 0 {
            return Err(FrameError::Reserved);
        }
        if header[1] & 0x80 != 0 {
            return Err(FrameError::Masked);
        }
        let remaining = payload_len(header);
        match opcode {
            CONTINUATION if self.message.is_none() => return Err(FrameError::Fragments),
            TEXT | BINARY if self.message.is_some() => return Err(FrameError::Fragments),
            TEXT | BINARY => {
                self.message = Some(Message {
                    opcode,
                    redactor: Redactor::new(Arc::clone(&self.needles)),
                    started: false,
                });
            }
            CONTINUATION => {}
            0x8..=0xA if !fin || remaining > CONTROL_MAX as u64 => {
                return Err(FrameError::Control);
            }
            0x8..=0xA => {}
            _ => return Err(FrameError::Opcode(opcode)),
        }
        self.frame = Some(Frame {
            fin,
            opcode,
            remaining,
            control: Vec::new(),
        });
        Ok(())
    }

    /// A frame's payload has all come: a control frame goes out redacted;
    /// a message's last frame (gone out with its payload) ends it.
    fn end(&mut self, frame: Frame, out: &mut Vec<u8>) {
        if frame.opcode >= CLOSE {
            let payload = self.control(frame.opcode, frame.control);
            write_frame(out, true, frame.opcode, &payload);
        } else if frame.fin
            && let Some(message) = self.message.take()
        {
            self.matched |= message.redactor.matched();
        }
    }

    /// A control frame's payload, redacted whole (a needle may begin in a
    /// close frame's two code bytes), within the 125 bytes allowed.
    fn control(&mut self, opcode: u8, payload: Vec<u8>) -> Vec<u8> {
        let Some(mut redacted) = self.needles.replace_all(&payload) else {
            return payload;
        };
        self.matched = true;
        let coded = opcode == CLOSE && payload.len() >= 2;
        if coded && redacted[..2] != payload[..2] {
            // The code was part of a match: the close says why instead,
            // 1008 (policy violation), before what is left.
            redacted.splice(..0, 1008_u16.to_be_bytes());
        }
        // The replacement may be longer than what it replaced: cut on a
        // character boundary (a close reason is UTF-8).
        let keep = if coded { 2 } else { 0 };
        let mut len = redacted.len().min(CONTROL_MAX);
        while len < redacted.len() && len > keep && redacted[len] & 0xC0 == 0x80 {
            len -= 1;
        }
        redacted.truncate(len);
        redacted
    }
}

/// The bytes of extended length a header's second byte announces.
pub(crate) fn extended_len(second: u8) -> usize {
    match second & 0x7F {
        126 => 2,
        127 => 8,
        _ => 0,
    }
}

/// The payload length a header announces; `header` holds at least its
/// first two bytes and the extended length they announce.
pub(crate) fn payload_len(header: &[u8]) -> u64 {
    match header[1] & 0x7F {
        126 => u64::from(u16::from_be_bytes([header[2], header[3]])),
        127 => u64::from_be_bytes(header[2..10].try_into().expect("eight bytes")),
        len => u64::from(len),
    }
}

/// Appends an unmasked frame.
fn write_frame(out: &mut Vec<u8>, fin: bool, opcode: u8, payload: &[u8]) {
    out.push(u8::from(fin) << 7 | opcode);
    match payload.len() {
        len @ 0..=125 => out.push(len as u8),
        len @ 126..=0xFFFF => {
            out.push(126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        len => {
            out.push(127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::REPLACEMENT;

    const SECRET: &[u8] = b"sk-live-0123456789abcdef";

    fn needles() -> Arc<Needles> {
        Arc::new(Needles::new(&[SECRET], REPLACEMENT))
    }

    /// An unmasked frame, as a server sends it.
    fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_frame(&mut out, fin, opcode, payload);
        out
    }

    /// A message or control frame a client reads: its opcode (a message's,
    /// not its continuations') and payload.
    type Read = (u8, Vec<u8>);

    /// What a client reads from `bytes`.
    fn read(mut bytes: &[u8]) -> Vec<Read> {
        let (mut got, mut message): (Vec<Read>, Option<Read>) = (vec![], None);
        while !bytes.is_empty() {
            let (fin, opcode) = (bytes[0] & 0x80 != 0, bytes[0] & 0x0F);
            assert_eq!(bytes[1] & 0x80, 0, "unmasked");
            let (len, at) = match bytes[1] & 0x7F {
                126 => (usize::from(u16::from_be_bytes([bytes[2], bytes[3]])), 4),
                127 => (
                    u64::from_be_bytes(bytes[2..10].try_into().expect("eight bytes")) as usize,
                    10,
                ),
                len => (usize::from(len), 2),
            };
            let payload = &bytes[at..at + len];
            bytes = &bytes[at + len..];
            if opcode >= CLOSE {
                assert!(fin && len <= CONTROL_MAX);
                got.push((opcode, payload.to_vec()));
                continue;
            }
            let (_, data) = message.get_or_insert_with(|| (opcode, Vec::new()));
            data.extend_from_slice(payload);
            if fin {
                got.extend(message.take());
            }
        }
        assert!(message.is_none(), "a message left open");
        got
    }

    /// Redacts `input` fed in chunks of `size` bytes.
    fn redact(input: &[u8], size: usize) -> Result<Vec<u8>, FrameError> {
        let mut frames = FrameRedactor::new(needles());
        let mut out = Vec::new();
        for chunk in input.chunks(size.max(1)) {
            frames.push(chunk, &mut out)?;
        }
        Ok(out)
    }

    fn with_secret(before: &str, after: &str) -> Vec<u8> {
        [before.as_bytes(), SECRET, after.as_bytes()].concat()
    }

    fn redacted(before: &str, after: &str) -> Vec<u8> {
        [before.as_bytes(), REPLACEMENT, after.as_bytes()].concat()
    }

    #[test]
    fn the_secret_is_redacted_wherever_the_frames_carry_it() {
        let half = SECRET.len() / 2;
        let long = "x".repeat(70_000);
        let mut close = 1000_u16.to_be_bytes().to_vec();
        close.extend(with_secret("bye ", ""));
        let cases: Vec<(&str, Vec<u8>, Vec<Read>)> = vec![
            (
                "one text frame",
                frame(true, TEXT, &with_secret("auth: Bearer ", "!")),
                vec![(TEXT, redacted("auth: Bearer ", "!"))],
            ),
            (
                "split across fragments, a ping between them",
                [
                    frame(false, TEXT, &with_secret("a ", "")[..2 + half]),
                    frame(true, 0x9, &with_secret("", "")),
                    frame(true, CONTINUATION, &with_secret("a ", " b")[2 + half..]),
                ]
                .concat(),
                vec![(0x9, REPLACEMENT.to_vec()), (TEXT, redacted("a ", " b"))],
            ),
            (
                "a close reason, its code kept",
                frame(true, CLOSE, &close),
                vec![(
                    CLOSE,
                    [&1000_u16.to_be_bytes()[..], &redacted("bye ", "")].concat(),
                )],
            ),
            (
                "a binary frame with a 16-bit length",
                frame(true, BINARY, &with_secret(&long, &long)),
                vec![(BINARY, redacted(&long, &long))],
            ),
            (
                "empty frames and none of the secret",
                [
                    frame(false, TEXT, b""),
                    frame(true, CONTINUATION, b"fine"),
                    frame(true, 0xA, b""),
                ]
                .concat(),
                vec![(TEXT, b"fine".to_vec()), (0xA, Vec::new())],
            ),
        ];
        for (name, input, want) in cases {
            for size in [1, 3, 64, input.len()] {
                let out = redact(&input, size).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(read(&out), want, "{name} in chunks of {size}");
            }
        }
    }

    #[test]
    fn a_secret_in_a_close_frames_code_bytes_is_redacted() {
        for before in ["", "X"] {
            let input = frame(true, CLOSE, &with_secret(before, " bye"));
            let out = redact(&input, 1).expect("frames");
            let [(opcode, got)]: [Read; 1] = read(&out).try_into().expect("one frame");
            assert_eq!(opcode, CLOSE);
            assert_eq!(got[..2], 1008_u16.to_be_bytes(), "{before:?}");
            assert_eq!(got[2..], redacted(before, " bye"), "{before:?}");
        }
    }

    #[test]
    fn a_control_frame_stays_within_its_limit() {
        // Short secrets whose replacement is longer, filling 125 bytes.
        let needles = Arc::new(Needles::new(&[b"k3y"], REPLACEMENT));
        let mut frames = FrameRedactor::new(needles);
        let mut out = Vec::new();
        let mut payload = 1000_u16.to_be_bytes().to_vec();
        payload.extend("é k3y ".repeat(15).as_bytes());
        assert!(payload.len() <= CONTROL_MAX);
        frames
            .push(&frame(true, CLOSE, &payload), &mut out)
            .expect("frames");
        let read = read(&out);
        let [(CLOSE, got)] = read.as_slice() else {
            panic!("one close frame");
        };
        assert!(got.len() <= CONTROL_MAX);
        assert!(std::str::from_utf8(&got[2..]).is_ok(), "{got:?}");
        assert!(!got.windows(3).any(|w| w == b"k3y") && frames.matched());
    }

    #[test]
    fn frames_that_cannot_be_read_end_the_connection() {
        let cases: [(&str, Vec<u8>, FrameError); 6] = [
            (
                "compressed (RSV1)",
                vec![0xC1, 0x01, b'x'],
                FrameError::Reserved,
            ),
            (
                "masked",
                vec![0x81, 0x81, 1, 2, 3, 4, b'x'],
                FrameError::Masked,
            ),
            ("opcode 3", frame(true, 0x3, b"x"), FrameError::Opcode(3)),
            (
                "fragmented ping",
                frame(false, 0x9, b"x"),
                FrameError::Control,
            ),
            (
                "stray continuation",
                frame(true, CONTINUATION, b"x"),
                FrameError::Fragments,
            ),
            (
                "a message inside another",
                [frame(false, TEXT, b"a"), frame(true, TEXT, b"b")].concat(),
                FrameError::Fragments,
            ),
        ];
        for (name, input, want) in cases {
            assert_eq!(redact(&input, 1).err(), Some(want), "{name}");
        }
    }
}
