//! The WebSocket frame reader that redacts what a server sends
//! (`redact::FrameRedactor`). Input: `[seed] needle 0xFF frames`; `seed`
//! picks the cuts (0: a byte at a time). For any cuts:
//! - the same frames are refused with the same error as in one piece;
//! - what comes out parses as unmasked frames; each data message whole
//!   (its fragments joined) is the input message redacted as one
//!   (`Needles::replace_all`), and control frames are the same as when
//!   the frames come in one piece, each at most 125 bytes.
#![no_main]

mod common;

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use sluice::redact::{FrameRedactor, Needles, REPLACEMENT};

/// Complete messages (opcode, fragments joined) and control frames, in
/// order, of a frame stream that `FrameRedactor` accepted; the last one
/// may be cut short and is left out. `out`: the redactor's output, which
/// must not be masked (the input may end in a masked header it had not
/// read whole, so was not refused).
fn events(mut bytes: &[u8], out: bool) -> Vec<(u8, Vec<u8>)> {
    let mut events = Vec::new();
    let mut message: Option<(u8, Vec<u8>)> = None;
    loop {
        let [first, second, rest @ ..] = bytes else {
            return events;
        };
        let (fin, opcode) = (first & 0x80 != 0, first & 0x0F);
        if second & 0x80 != 0 {
            assert!(!out, "a masked frame out");
            return events;
        }
        let (len, rest) = match second & 0x7F {
            126 if rest.len() >= 2 => (
                u64::from(u16::from_be_bytes([rest[0], rest[1]])),
                &rest[2..],
            ),
            127 if rest.len() >= 8 => {
                let len = u64::from_be_bytes(rest[..8].try_into().expect("eight bytes"));
                (len, &rest[8..])
            }
            126 | 127 => return events,
            len => (u64::from(len), rest),
        };
        let Ok(len) = usize::try_from(len) else {
            return events;
        };
        if rest.len() < len {
            return events;
        }
        let (payload, rest) = rest.split_at(len);
        bytes = rest;
        if opcode >= 0x8 {
            events.push((opcode, payload.to_vec()));
            continue;
        }
        let (_, joined) = message.get_or_insert_with(|| (opcode, Vec::new()));
        joined.extend_from_slice(payload);
        if fin && let Some(done) = message.take() {
            events.push(done);
        }
    }
}

fn redact(needles: &Arc<Needles>, chunks: &[&[u8]]) -> (Vec<u8>, Result<(), String>) {
    let mut redactor = FrameRedactor::new(Arc::clone(needles));
    let mut out = Vec::new();
    for chunk in chunks {
        if let Err(e) = redactor.push(chunk, &mut out) {
            return (out, Err(e.to_string()));
        }
    }
    (out, Ok(()))
}

fuzz_target!(|input: &[u8]| {
    let Some((&seed, rest)) = input.split_first() else {
        return;
    };
    let Some(at) = rest.iter().position(|&b| b == 0xFF) else {
        return;
    };
    let (needle, frames) = (&rest[..at], &rest[at + 1..]);
    if needle.len() > 64 {
        return;
    }
    let needles = Arc::new(Needles::new(&[needle], REPLACEMENT));
    let (one, one_result) = redact(&needles, &[frames]);
    let (cut, cut_result) = redact(&needles, &common::chunks(frames, seed));
    assert_eq!(
        cut_result, one_result,
        "the cut frames are judged otherwise"
    );
    if one_result.is_err() {
        return;
    }
    let (one_events, cut_events) = (events(&one, true), events(&cut, true));
    assert_eq!(cut_events, one_events, "the cut frames come out otherwise");
    let inputs = events(frames, false);
    for (i, (opcode, payload)) in one_events.iter().enumerate() {
        if *opcode >= 0x8 {
            assert!(
                payload.len() <= 125,
                "a control frame of {} bytes",
                payload.len()
            );
        } else if let Some((_, sent)) = inputs.get(i) {
            let want = needles.replace_all(sent).unwrap_or_else(|| sent.clone());
            assert_eq!(*payload, want, "message {i} redacted otherwise");
        }
    }
});
