//! The prompt-injection scorer (`sluice_scan::injection::Detector`). The
//! first byte picks the Content-Type; on the rest: the score is a number in
//! 0..=1, every signal names a family, the one-reading path (`Read`)
//! scores exactly as `Detector::assess`, and the text scorer takes any
//! string.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sluice_scan::Read;
use sluice_scan::injection::{Detector, InjectionDefense, Source};

const TYPES: [Option<&str>; 5] = [
    None,
    Some("application/json"),
    Some("application/x-www-form-urlencoded"),
    Some("multipart/form-data; boundary=XyZ"),
    Some("text/plain"),
];

fn detector() -> &'static Detector {
    static DETECTOR: OnceLock<Detector> = OnceLock::new();
    DETECTOR.get_or_init(|| Detector::new(&InjectionDefense::default()))
}

fuzz_target!(|input: &[u8]| {
    let Some((&pick, body)) = input.split_first() else {
        return;
    };
    let content_type = TYPES[usize::from(pick) % TYPES.len()];
    let assessment = detector().assess(content_type, body);
    assert!(
        (0.0..=1.0).contains(&assessment.score),
        "score {}",
        assessment.score
    );
    let _ = assessment.names();
    let read = Read::new(content_type, body, true);
    assert_eq!(
        read.injection(detector()),
        assessment,
        "Read::injection and assess differ"
    );
    if let Ok(text) = std::str::from_utf8(body) {
        let scored = detector().assess_text(text, Source::User);
        assert!(
            (0.0..=1.0).contains(&scored.score),
            "text score {}",
            scored.score
        );
    }
});
