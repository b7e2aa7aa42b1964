//! Policy loading (`policy::load::parse_policy`): any text, parsed,
//! deserialized and compiled as one policy file, with no app catalogue or
//! credentials to check against. Never panics; a refused text has at least
//! one diagnostic, each placed on a line and column of the text (1-based,
//! at most one past its last line, lines counted as YAML counts them).
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
    // Lines as YAML counts them: `\r\n`, `\r`, `\n` and (YAML 1.1, which
    // the parser follows) NEL, LS and PS each end one.
    let breaks = text
        .replace("\r\n", "\n")
        .matches(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'])
        .count();
    let lines = breaks + 2;
    for d in &diagnostics {
        assert!(d.line >= 1 && d.column >= 1, "{d:?}");
        assert!(d.line <= lines, "line {} of {lines}: {d:?}", d.line);
        let _ = d.to_string();
    }
});
