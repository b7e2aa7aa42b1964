//! Throughput of content scanning on LLM-API JSON bodies of 1 KiB, 64 KiB
//! and 1 MiB, on one core:
//!
//! - `pii`: the PII and secret scanner (every type);
//! - `injection`: the prompt-injection detector with its default settings;
//! - `both`: the two on the same body, as the pipeline runs them
//!   (`content::inspect`, through `content::Read`: the body is read once,
//!   and the PII scan takes a JSON body's strings from the injection
//!   detector's reading);
//! - `naive_regex`: one `regex::Regex` per PII pattern run over the body,
//!   the baseline the scanner is compared with;
//! - `model/learned`: the injection detector's learned scorer alone, over
//!   the text of the body's segments (read beforehand), as the detector
//!   runs it;
//! - `extract/segments`: the injection detector's reading of the body alone
//!   (checking the JSON and collecting the text it scores), beside
//!   `extract/serde_value`, what building a `serde_json::Value` of the same
//!   body costs (the way it was read before, less the walk).
//!
//! Every variant reads the same bodies (`sluice_scan_bench::distinct_bodies`).
//! Each size is a set of distinct bodies (other seeds) of 1 MiB or more in all,
//! scanned in turn: scanning one small body over and over, the CPU's branch
//! predictor learns its branches, and a 1 KiB or 64 KiB body then scanned
//! 10-20% faster per byte than the 1 MiB one or than sixteen distinct 64 KiB
//! bodies (measured), which is not what a gateway sees: each request's body
//! is new.
//!
//!     cargo bench -p sluice-scan-bench --bench scan

use std::cell::Cell;
use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use regex::Regex;
use sluice_scan::Read;
use sluice_scan::injection::Detector;
use sluice_scan::injection::extract::Body;
use sluice_scan::{ScanConfig, Scanner};
use sluice_scan_bench::{Api, SIZES, distinct_bodies};

const JSON: Option<&str> = Some("application/json");

/// What one would write first: a regex per type, each run over the body.
const NAIVE: &[&str] = &[
    r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}",
    r"(?:\+\d{1,3}[ .-]?)?\(?\d{3}\)?[ .-]?\d{3}[ .-]?\d{4}\b",
    r"\b\d{3}-\d{2}-\d{4}\b",
    r"\b(?:\d[ -]?){12,19}\b",
    r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b",
    r"\b(?:\d{1,3}\.){3}\d{1,3}\b",
    r"\b(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}\b",
    r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
    r"\bgh[pousr]_[A-Za-z0-9]{36,}\b",
    r"\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}",
    r"\bsk-ant-[A-Za-z0-9_-]{32,}",
    r"\bxox[a-z]-[A-Za-z0-9-]{10,}",
    r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}",
    r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*",
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
    r#"(?i)(?:password|secret|token|api_?key)\s*[:=]\s*["']?[^\s"']{8,}"#,
];

fn naive_scan(regexes: &[Regex], body: &str) -> usize {
    regexes.iter().map(|r| r.find_iter(body).count()).sum()
}

/// Distinct bodies of one API and size, of 1 MiB or more in all, handed out
/// in turn.
struct Bodies {
    all: Vec<String>,
    next: Cell<usize>,
}

impl Bodies {
    fn new(api: Api, size: usize) -> Bodies {
        Bodies {
            all: distinct_bodies(api, size)
                .into_iter()
                .map(|b| String::from_utf8(b).expect("utf-8"))
                .collect(),
            next: Cell::new(0),
        }
    }

    /// The next body, round and round.
    fn next(&self) -> &str {
        let i = self.next.get();
        self.next.set((i + 1) % self.all.len());
        &self.all[i]
    }

    /// The mean length: what one iteration reads, on average.
    fn mean_len(&self) -> u64 {
        (self.all.iter().map(String::len).sum::<usize>() / self.all.len()) as u64
    }
}

/// Runs `bench` in group `name` on every API's bodies at every size, with
/// the same settings for every group.
fn each_body(c: &mut Criterion, name: &str, mut bench: impl FnMut(&mut Group<'_>, &str, &Bodies)) {
    let mut group = c.benchmark_group(name);
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    for api in Api::ALL {
        for (label, size) in SIZES {
            let bodies = Bodies::new(api, size);
            group.throughput(Throughput::Bytes(bodies.mean_len()));
            bench(&mut group, &format!("{}/{label}", api.name()), &bodies);
        }
    }
    group.finish();
}

type Group<'a> = BenchmarkGroup<'a, WallTime>;

fn scan(c: &mut Criterion) {
    let scanner = Scanner::new(&ScanConfig::all()).expect("scanner");
    let detector = Detector::default();
    let regexes: Vec<Regex> = NAIVE
        .iter()
        .map(|p| Regex::new(p).expect("regex"))
        .collect();
    each_body(c, "scan", |group, id, bodies| {
        for bytes in bodies.all.iter().map(String::as_bytes) {
            // The bodies are not trivially clean, and benign: the detector
            // has to read them all and let them through.
            assert!(!scanner.scan(JSON, bytes).is_empty() || bytes.len() < 4096);
            assert!(detector.assess(JSON, bytes).score < detector.threshold());
            // Read once, the body gives both stages what they find reading it alone.
            let read = Read::new(JSON, bytes, true);
            assert_eq!(read.pii(&scanner), scanner.scan(JSON, bytes));
            assert_eq!(read.injection(&detector), detector.assess(JSON, bytes));
        }
        group.bench_function(BenchmarkId::new("pii", id), |b| {
            b.iter(|| scanner.scan(JSON, black_box(bodies.next().as_bytes())))
        });
        group.bench_function(BenchmarkId::new("injection", id), |b| {
            b.iter(|| detector.assess(JSON, black_box(bodies.next().as_bytes())))
        });
        group.bench_function(BenchmarkId::new("both", id), |b| {
            b.iter(|| {
                let read = Read::new(JSON, black_box(bodies.next().as_bytes()), true);
                (read.pii(&scanner), read.injection(&detector))
            })
        });
        group.bench_function(BenchmarkId::new("naive_regex", id), |b| {
            b.iter(|| naive_scan(&regexes, black_box(bodies.next())))
        });
    });
}

/// Getting the text out of a body for the injection detector, alone.
fn extract(c: &mut Criterion) {
    each_body(c, "extract", |group, id, bodies| {
        group.bench_function(BenchmarkId::new("segments", id), |b| {
            b.iter(|| {
                Body::read(JSON, black_box(bodies.next().as_bytes()))
                    .segments()
                    .len()
            })
        });
        // For comparison: what building a serde_json tree alone costs.
        group.bench_function(BenchmarkId::new("serde_value", id), |b| {
            b.iter(|| {
                serde_json::from_slice::<serde_json::Value>(black_box(bodies.next().as_bytes()))
                    .is_ok()
            })
        });
    });
}

/// The learned scorer alone, on the texts the detector gives it. Its
/// throughput is per byte of the body, as the other groups'.
fn model(c: &mut Criterion) {
    let model = &*sluice_scan::injection::model::MODEL;
    each_body(c, "model", |group, id, bodies| {
        let texts: Vec<Vec<String>> = bodies
            .all
            .iter()
            .map(|b| {
                Body::read(JSON, b.as_bytes())
                    .segments()
                    .into_iter()
                    .map(|s| s.text.into_owned())
                    .collect()
            })
            .collect();
        let next = Cell::new(0);
        group.bench_function(BenchmarkId::new("learned", id), |b| {
            b.iter(|| {
                let i = next.get();
                next.set((i + 1) % texts.len());
                black_box(&texts[i])
                    .iter()
                    .map(|t| model.score(t))
                    .fold(0.0, f64::max)
            })
        });
    });
}

criterion_group!(benches, scan, model, extract);
criterion_main!(benches);
