//! The first-bytes sniffer (`proxy::sniff`): a TLS ClientHello or an HTTP/1
//! head, however the sandbox cuts it. The first input byte picks the cuts
//! (0: a split at every byte); the caller's loop is replayed (sniff the
//! bytes so far after each read, stop at the first answer) and its answer
//! must be the one-shot answer of the same bytes, and a prefix still
//! undecided must be judged by `Unreadable::cut_short` without a panic.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use sluice::proxy::sniff::{MAX_SNIFF_BYTES, Sniffed, Unreadable, sniff};

fuzz_target!(|input: &[u8]| {
    let Some((&seed, data)) = input.split_first() else {
        return;
    };
    // The caller never reads past the cap.
    let data = &data[..data.len().min(MAX_SNIFF_BYTES)];
    let mut seen = 0;
    let mut answer = None;
    for chunk in common::chunks(data, seed) {
        seen += chunk.len();
        match sniff(&data[..seen]) {
            Sniffed::NeedMore => {
                let _ = Unreadable::cut_short(&data[..seen]);
            }
            decided => {
                answer = Some((seen, decided));
                break;
            }
        }
    }
    match answer {
        // Decided at `at`: the bytes after cannot change it.
        Some((at, decided)) => {
            let whole = sniff(data);
            assert_eq!(decided, whole, "decided after {at} of {} bytes", data.len());
        }
        None => assert_eq!(sniff(data), Sniffed::NeedMore),
    }
});
