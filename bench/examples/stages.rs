//! Where a body's scanning time goes, stage by stage, and how each stage's
//! cost per byte at every size compares with the largest size: a stage
//! whose cost per byte grows as bodies shrink has a cost per body (a
//! start, the document's structure) that small bodies pay most for.
//!
//! The stages are cumulative, as the pipeline runs them: `read` checks the
//! JSON and lays it out (the tape), `walk` adds finding the text the model
//! reads, `pii` is the read plus the PII scan, `injection` the read plus
//! the injection detector (its walk included), `both` all of it. So
//! `pii - read` is the PII scan's own cost and `injection - walk` the
//! detector's scoring (differences of two figures: a stage that is a few
//! percent of its total, the walk of a large body, comes out noisy). Figures are the fastest of interleaved rounds over
//! the criterion benchmark's distinct bodies, as in `rounds`, every size
//! and stage in each round.
//!
//!     cargo run --release -p sluice-scan-bench --example stages [SECONDS]

use std::hint::black_box;
use std::time::{Duration, Instant};

use sluice_scan::Read;
use sluice_scan::injection::Detector;
use sluice_scan::injection::extract::Body;
use sluice_scan::{ScanConfig, Scanner};
use sluice_scan_bench::{Api, SIZES, distinct_bodies};

const JSON: Option<&str> = Some("application/json");

/// A stage's name and what it does with one body.
type Stage<'a> = (&'static str, &'a dyn Fn(&[u8]));

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .map_or(1.0, |s| s.parse().expect("seconds"));
    let scanner = Scanner::new(&ScanConfig::all()).expect("scanner");
    let detector = Detector::default();
    let stages: [Stage<'_>; 5] = [
        ("read", &|b| {
            black_box(Body::read(JSON, b));
        }),
        ("walk", &|b| {
            let body = Body::read(JSON, b);
            let mut bytes = 0;
            body.each_segment(&mut |_, _, text| bytes += text.len());
            black_box(bytes);
        }),
        ("pii", &|b| {
            black_box(Read::new(JSON, b, true).pii(&scanner));
        }),
        ("injection", &|b| {
            black_box(Read::new(JSON, b, true).injection(&detector));
        }),
        ("both", &|b| {
            let read = Read::new(JSON, b, true);
            black_box((read.pii(&scanner), read.injection(&detector)));
        }),
    ];
    for api in Api::ALL {
        let sets: Vec<_> = SIZES
            .iter()
            .map(|&(label, size)| (label, distinct_bodies(api, size)))
            .collect();
        // Every size and stage in each round, so a slow spell of the
        // machine falls on all of them and not on one size's figures.
        let mut best = vec![[Duration::MAX; 5]; sets.len()];
        let deadline = Instant::now() + Duration::from_secs_f64(seconds * 3.0 * sets.len() as f64);
        while Instant::now() < deadline {
            for ((_, bodies), best) in sets.iter().zip(&mut best) {
                for (k, (_, run)) in stages.iter().enumerate() {
                    let start = Instant::now();
                    for b in bodies {
                        run(black_box(b));
                    }
                    best[k] = best[k].min(start.elapsed());
                }
            }
        }
        // Nanoseconds per byte of each stage, per size.
        let mut per_byte = Vec::new();
        for ((label, bodies), best) in sets.iter().zip(&best) {
            let bytes: usize = bodies.iter().map(Vec::len).sum();
            let ns = best.map(|d| d.as_secs_f64() * 1e9);
            let line: Vec<String> = stages
                .iter()
                .zip(ns)
                .map(|((name, _), t)| format!("{name} {:.0}", t / bodies.len() as f64))
                .collect();
            println!(
                "{}/{label}: ns per body (mean {} bytes): {}",
                api.name(),
                bytes / bodies.len(),
                line.join(", ")
            );
            per_byte.push((label, ns.map(|t| t / bytes as f64)));
        }
        // Each stage's own share: the cumulative figures less what they add to.
        let own = |t: [f64; 5]| {
            [
                ("read", t[0]),
                ("walk", t[1] - t[0]),
                ("pii scan", t[2] - t[0]),
                ("scoring", t[3] - t[1]),
                ("both", t[4]),
            ]
        };
        let (_, largest) = per_byte.last().copied().expect("sizes");
        for (label, t) in &per_byte {
            let line: Vec<String> = own(*t)
                .iter()
                .zip(own(largest))
                .map(|((name, x), (_, y))| format!("{name} {:.2}x", x / y))
                .collect();
            println!(
                "{}/{label}: cost per byte against the largest size: {}",
                api.name(),
                line.join(", ")
            );
        }
    }
}
