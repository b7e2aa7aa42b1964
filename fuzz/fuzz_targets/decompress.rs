//! The decompressors' bounds. Input: `[coding] [seed] body`, `coding`
//! picking a `Content-Encoding` (one coding or a stack) and `seed` the
//! chunks the body streams in (0: a byte at a time).
//! - `sluice_scan::decode` (request bodies, whole) never returns more than
//!   its cap;
//! - `redact::Decoding` (response bodies, streamed) never lets out more
//!   than 2048 times the compressed bytes plus its 16 MiB allowance (a bomb
//!   fails instead), nor more than a frame and one slice's output per call;
//! - when both decode the body without error or cut, they agree.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use sluice::redact::{Decoding, Rewrite};

const CODINGS: [&str; 12] = [
    "gzip",
    "deflate",
    "br",
    "zstd",
    "identity",
    "x-gzip",
    "gzip, br",
    "br, zstd",
    "deflate, gzip",
    "zstd, zstd, zstd",
    "gzip, deflate, br",
    "compress",
];
/// `redact::decoding`'s bounds, restated.
const RATIO: u64 = 2048;
const ALLOWANCE: u64 = 16 << 20;
const PER_CALL: usize = (64 << 10) + 2048 * 4096;
/// The request side's cap here: small enough that bombs reach it.
const CAP: usize = 1 << 20;

fuzz_target!(|input: &[u8]| {
    let [coding, seed, body @ ..] = input else {
        return;
    };
    let coding = CODINGS[usize::from(*coding) % CODINGS.len()];
    let whole = sluice_scan::decode(Some(coding), body, CAP);
    if let Ok(decoded) = &whole {
        assert!(
            decoded.bytes.len() <= CAP,
            "{} bytes past the cap",
            decoded.bytes.len()
        );
    }
    let Ok(mut decoding) = Decoding::new(coding) else {
        assert!(whole.is_err(), "{coding}: only the request side reads it");
        return;
    };
    let mut out = Vec::new();
    let mut pushed = 0u64;
    let take = |bytes: Vec<u8>, pushed: u64, out: &mut Vec<u8>| {
        assert!(
            bytes.len() <= PER_CALL,
            "{} bytes from one call",
            bytes.len()
        );
        out.extend(bytes);
        assert!(
            out.len() as u64 <= pushed * RATIO + ALLOWANCE,
            "{} bytes out of {pushed} compressed",
            out.len()
        );
    };
    let chunks = common::chunks(body, *seed);
    for chunk in chunks {
        pushed += chunk.len() as u64;
        let bytes = decoding.push(chunk);
        take(bytes, pushed, &mut out);
        loop {
            let more = decoding.pending();
            if more.is_empty() {
                break;
            }
            take(more, pushed, &mut out);
        }
    }
    let bytes = decoding.finish();
    take(bytes, pushed, &mut out);
    let failed = decoding.failed();
    if let (None, Ok(decoded)) = (failed, &whole)
        && !decoded.truncated
    {
        assert!(
            out == *decoded.bytes,
            "{coding}: streamed {} bytes, whole {} bytes",
            out.len(),
            decoded.bytes.len()
        );
    }
});
