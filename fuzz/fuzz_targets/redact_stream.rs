//! Streaming credential redaction (`redact::Redactor`): for any needles and
//! any chunking, the streamed output equals `Needles::replace_all` over the
//! whole body, and no more than `Needles::max_held` bytes are ever held
//! back. Input: `[seed] 0xFF needle 0xFF needle ... 0xFF body` (at most
//! four needles of 1 to 64 bytes); `seed` picks the cuts (0: every byte).
//! Credential needles are also found written with JSON, percent and HTML
//! escapes, which the fuzzer reaches by mutating a needle in the body.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use sluice::redact::{Needles, REPLACEMENT, Redactor};

fuzz_target!(|input: &[u8]| {
    let parts: Vec<&[u8]> = input.split(|&b| b == 0xFF).collect();
    let [head, needles @ .., body] = &parts[..] else {
        return;
    };
    let (Some(&seed), true) = (head.first(), (1..=4).contains(&needles.len())) else {
        return;
    };
    if needles.iter().any(|n| n.len() > 64) {
        return;
    }
    let needles = std::sync::Arc::new(Needles::new(needles, REPLACEMENT));
    let whole = needles.replace_all(body).unwrap_or_else(|| body.to_vec());
    let mut redactor = Redactor::new(needles.clone());
    let mut streamed = Vec::new();
    for chunk in common::chunks(body, seed) {
        streamed.extend(redactor.push(chunk));
        assert!(
            redactor.held_len() <= needles.max_held(),
            "holds {} bytes, at most {}",
            redactor.held_len(),
            needles.max_held()
        );
    }
    streamed.extend(redactor.finish());
    assert_eq!(
        String::from_utf8_lossy(&streamed),
        String::from_utf8_lossy(&whole),
        "streamed (seed {seed}) and one-shot redaction differ"
    );
});
