//! Scores an injection corpus: reads JSONL records (`id`, `content_type`,
//! `body`) from the file named on the command line (or stdin) and writes one
//! prediction line each, for the corpus's scorer.
//!
//!     cargo run --release -p sluice-scan --example injection_eval -- \
//!         CORPUS.jsonl > preds.jsonl

use std::io::{BufRead, BufReader, Write};

use sluice_scan::injection::{Detector, eval};

fn main() -> anyhow::Result<()> {
    let input: Box<dyn BufRead> = match std::env::args().nth(1) {
        Some(path) => Box::new(BufReader::new(std::fs::File::open(path)?)),
        None => Box::new(std::io::stdin().lock()),
    };
    let detector = Detector::default();
    let mut out = std::io::stdout().lock();
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        writeln!(out, "{}", eval::predict_line(&detector, &line)?)?;
    }
    Ok(())
}
