//! Policy loading (`policy::load::parse_policy`): any text, parsed,
//! deserialized and compiled as one policy file, with no app catalogue or
//! credentials to check against. Never panics; a refused text has at least
//! one diagnostic, each placed on a line and column of the text (1-based,
//! at most one past its last line).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use sluice::policy::load::{Against, parse_policy};

fuzz_target!(|text: &str| {
    let Err(diagnostics) = parse_policy(Path::new("fuzz.yaml"), "fuzz", text, Against::default())
    else {
        return;
    };
    assert!(!diagnostics.is_empty(), "refused without a word");
    let lines = text.lines().count() + 1;
    for d in &diagnostics {
        assert!(d.line >= 1 && d.column >= 1, "{d:?}");
        assert!(d.line <= lines, "line {} of {lines}: {d:?}", d.line);
        let _ = d.to_string();
    }
});
