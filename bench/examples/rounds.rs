//! Scan throughput as the best of many short rounds, for A/B comparisons
//! on a noisy machine: interference only ever adds time, so the fastest
//! round of each variant is closest to what the code costs. The bodies,
//! sizes and variants are the criterion benchmark's (`benches/scan.rs`),
//! each round one pass over a size's distinct bodies. On a shared VM
//! criterion's means moved by 10-30% from run to run; these by a few
//! percent (a slow spell of the host can still spoil one run: repeat).
//!
//!     cargo run --release -p sluice-scan-bench --example rounds [SECONDS [FILTER]]
//!
//! The variants are `pii`, `injection` and `both` as in the benchmark, and
//! `model`: the learned scorer alone over each body's segments' texts, read
//! beforehand (the benchmark's `model/learned`), per byte of the body. The
//! model runs only when FILTER names it (`model`, `1KiB/model`): its
//! half-megabyte table, interleaved with the others, pushed their data out
//! of the cache and read them 3-5% slower in a run against the same code.
//! Each API's size runs for three times SECONDS (default 1), shared by the
//! variants. FILTER keeps the variants whose `api/size/variant` name
//! contains it (to profile one alone).

use std::cell::Cell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use sluice_scan::Read;
use sluice_scan::injection::Detector;
use sluice_scan::injection::extract::Body;
use sluice_scan::{ScanConfig, Scanner};
use sluice_scan_bench::{Api, SIZES, distinct_bodies};

const JSON: Option<&str> = Some("application/json");

/// A variant's name and what it does with one body.
type Variant<'a> = (&'static str, &'a dyn Fn(&[u8]));

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .map_or(1.0, |s| s.parse().expect("seconds"));
    let filter = std::env::args().nth(2).unwrap_or_default();
    let scanner = Scanner::new(&ScanConfig::all()).expect("scanner");
    let detector = Detector::default();
    let model = &*sluice_scan::injection::model::MODEL;
    for api in Api::ALL {
        for (label, size) in SIZES {
            let bodies = distinct_bodies(api, size);
            let bytes: usize = bodies.iter().map(Vec::len).sum();
            // The scorer's texts, per body; a round passes the bodies in
            // order, so the next body's texts are the next in the list.
            let texts: Vec<Vec<String>> = bodies
                .iter()
                .map(|b| {
                    let read = Body::read(JSON, b);
                    let texts = read.segments().into_iter().map(|s| s.text.into_owned());
                    texts.collect()
                })
                .collect();
            let next = Cell::new(0);
            let variants: [Variant<'_>; 4] = [
                ("pii", &|b| {
                    black_box(scanner.scan(JSON, b));
                }),
                ("injection", &|b| {
                    black_box(detector.assess(JSON, b));
                }),
                ("both", &|b| {
                    let read = Read::new(JSON, b, true);
                    black_box((read.pii(&scanner), read.injection(&detector)));
                }),
                ("model", &|b| {
                    let i = next.get();
                    next.set((i + 1) % texts.len());
                    debug_assert_eq!(b.as_ptr(), bodies[i].as_ptr());
                    let score = texts[i].iter().map(|t| model.score(t));
                    black_box(score.fold(0.0, f64::max));
                }),
            ];
            let name = |v: usize| format!("{}/{label}/{}", api.name(), variants[v].0);
            let chosen: Vec<usize> = (0..variants.len())
                .filter(|&v| name(v).contains(&filter) && (v < 3 || filter.contains("model")))
                .collect();
            if chosen.is_empty() {
                continue;
            }
            let mut best = [Duration::MAX; 4];
            let deadline = Instant::now() + Duration::from_secs_f64(seconds * 3.0);
            // Interleaved, so a slow spell of the machine hits each variant.
            while Instant::now() < deadline {
                for &v in &chosen {
                    let run = variants[v].1;
                    let start = Instant::now();
                    for b in &bodies {
                        run(black_box(b));
                    }
                    best[v] = best[v].min(start.elapsed());
                }
            }
            let line: Vec<String> = chosen
                .iter()
                .map(|&v| {
                    let mib_s = bytes as f64 / best[v].as_secs_f64() / 1048576.0;
                    format!("{} {mib_s:.0} MiB/s", variants[v].0)
                })
                .collect();
            println!("{}/{label}: {}", api.name(), line.join(", "));
        }
    }
}
