//! The workload a profile-guided release build learns from (`cargo xtask
//! pgo`): the content stages over request bodies as a gateway sees them,
//! run once under an instrumented build so the compiler knows which of
//! their branches are taken and which code is hot.
//!
//! Chat bodies of both APIs from 512 bytes to 256 KiB, from other seeds
//! than the benchmark's (it scans seeds 42 on; these start at 1,000,000),
//! run through each stage alone and both together, as policies configure
//! them; then the same prose as plain text, a form and NDJSON, so the
//! other readers are not left cold. What it leaves is the profile; the
//! bodies' total goes to stderr.
//!
//! Built and run by `cargo xtask pgo` (and by every release build).

use std::hint::black_box;

use sluice::redact::percent_encode;
use sluice_scan::Read;
use sluice_scan::injection::Detector;
use sluice_scan::{ScanConfig, Scanner};
use sluice_scan_bench::{Api, body};

/// The training bodies' sizes and how many of each (about 3 MiB per API).
const MIX: [(usize, u64); 6] = [
    (512, 600),
    (1 << 10, 600),
    (4 << 10, 150),
    (16 << 10, 40),
    (64 << 10, 10),
    (256 << 10, 3),
];
const FIRST_SEED: u64 = 1_000_000;

fn main() {
    let scanner = Scanner::new(&ScanConfig::all()).expect("scanner");
    let detector = Detector::default();
    let json = Some("application/json");
    let mut bytes = 0;
    for api in Api::ALL {
        for (size, count) in MIX {
            for seed in FIRST_SEED..FIRST_SEED + count {
                let b = body(api, size, seed);
                bytes += b.len();
                let read = Read::new(json, &b, true);
                black_box((read.pii(&scanner), read.injection(&detector)));
                black_box(scanner.scan(json, &b));
                black_box(detector.assess(json, &b));
            }
        }
    }
    // The other formats, from the same prose: a JSON body's text as plain
    // text, as a form field and as NDJSON lines.
    for seed in FIRST_SEED..FIRST_SEED + 200 {
        let b = body(Api::OpenAiChat, 2 << 10, seed);
        let json = String::from_utf8_lossy(&b);
        let text = json.replace("\\n", "\n");
        let form = [b"q=".as_slice(), &percent_encode(text.as_bytes())].concat();
        let ndjson = format!("{json}\n{{\"a\": 1}}\n");
        for (content_type, body) in [
            (Some("text/plain"), text.as_bytes()),
            (Some("application/x-www-form-urlencoded"), &form),
            (Some("application/x-ndjson"), ndjson.as_bytes()),
        ] {
            bytes += body.len();
            let read = Read::new(content_type, body, true);
            black_box((read.pii(&scanner), read.injection(&detector)));
        }
    }
    eprintln!("trained on {} KiB of bodies", bytes / 1024);
}
