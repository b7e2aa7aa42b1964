//! The PII scanner (`sluice_scan::Scanner`). The first byte picks the
//! Content-Type; on the rest:
//! - the class scan's baseline loop against every SIMD loop this CPU has
//!   (`sluice_scan::fuzzing::class_scans`);
//! - findings in bounds, sorted, never overlapping;
//! - the one-reading path (`Read`, which reuses the injection reader's JSON
//!   tape) finds exactly what `Scanner::scan` finds.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sluice_scan::{Read, ScanConfig, Scanner};

const TYPES: [Option<&str>; 6] = [
    None,
    Some("application/json"),
    Some("application/x-www-form-urlencoded"),
    Some("multipart/form-data; boundary=XyZ"),
    Some("text/plain"),
    Some("application/x-ndjson"),
];

fn scanner() -> &'static Scanner {
    static SCANNER: OnceLock<Scanner> = OnceLock::new();
    SCANNER.get_or_init(|| Scanner::new(&ScanConfig::all()).expect("a scanner"))
}

fuzz_target!(|input: &[u8]| {
    let Some((&pick, body)) = input.split_first() else {
        return;
    };
    if let Err(why) = sluice_scan::fuzzing::class_scans(body) {
        panic!("the class scans disagree: {why}");
    }
    let content_type = TYPES[usize::from(pick) % TYPES.len()];
    let found = scanner().scan(content_type, body);
    let mut end = 0;
    for f in &found {
        assert!(
            f.start < f.end && f.end <= body.len(),
            "{f:?} in {} bytes",
            body.len()
        );
        assert!(f.start >= end, "{found:?} overlap or are out of order");
        end = f.end;
    }
    let read = Read::new(content_type, body, true);
    assert_eq!(
        read.pii(scanner()),
        found,
        "Read::pii and Scanner::scan differ"
    );
});
