//! Throughput of response redaction with a bound credential: a
//! [`Redactor`] over 1 MiB bodies that hold no secret (JSON of
//! `sluice_scan_bench::body`, HTML of `responses::html_body`), fed in
//! 16 KiB chunks as TLS records arrive, for random secrets of the shapes
//! real credentials have (`responses::secrets`, a fixed seed). The needles
//! are built as the daemon builds them (`Redactions::for_secret`, every
//! encoded form), so each secret's forms are what the search looks for.
//! The spread over secrets is the point: the search must not depend on
//! the secret's bytes.
//!
//! The clock is the benchmark thread's CPU time ([`CpuTime`]), not the
//! wall clock: the figures are per core, and on a shared machine the wall
//! clock also counts the time other processes ran.
//!
//!     cargo bench -p sluice-scan-bench --bench redact

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use nix::sys::resource::{UsageWho, getrusage};
use sluice::credentials::{Redactions, Secret};
use sluice::redact::{Needles, REPLACEMENT, Redactor};
use sluice_scan_bench::responses::{html_body, secrets};
use sluice_scan_bench::{Api, body};

const SIZE: usize = 1 << 20;
/// The most plaintext one TLS record carries.
const CHUNK: usize = 16 << 10;

fn needles(secret: &[u8]) -> Arc<Needles> {
    let redactions = Redactions::for_secret(&Secret::new(secret.to_vec()), None);
    let needles: Vec<&[u8]> = redactions.needles().collect();
    Arc::new(Needles::new(&needles, REPLACEMENT))
}

/// Streams `body` through a fresh redactor; returns the bytes out.
fn redact(needles: &Arc<Needles>, body: &[u8]) -> (usize, bool) {
    let mut redactor = Redactor::new(Arc::clone(needles));
    let mut out = 0;
    for chunk in body.chunks(CHUNK) {
        out += black_box(redactor.push(chunk)).len();
    }
    out += redactor.finish().len();
    (out, redactor.matched())
}

/// The calling thread's CPU time, user and system, in microseconds.
fn thread_cpu() -> u64 {
    let usage = getrusage(UsageWho::RUSAGE_THREAD).expect("getrusage");
    [usage.user_time(), usage.system_time()]
        .iter()
        .map(|t| t.tv_sec() as u64 * 1_000_000 + t.tv_usec() as u64)
        .sum()
}

/// Criterion's clock as the thread's CPU time (a sample takes
/// milliseconds: microseconds are fine enough).
struct CpuTime;

/// Whose formatter (durations, throughputs) [`CpuTime`] uses.
static WALL: WallTime = WallTime;

impl Measurement for CpuTime {
    type Intermediate = u64;
    type Value = Duration;

    fn start(&self) -> u64 {
        thread_cpu()
    }
    fn end(&self, start: u64) -> Duration {
        Duration::from_micros(thread_cpu() - start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        WALL.formatter()
    }
}

fn redaction(c: &mut Criterion<CpuTime>) {
    let bodies = [
        ("json", body(Api::OpenAiChat, SIZE, 42)),
        ("html", html_body(SIZE, 42)),
    ];
    let mut group = c.benchmark_group("redact");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(10);
    for (kind, bytes) in &bodies {
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        for (label, secret) in secrets(2) {
            let needles = needles(&secret);
            // Nothing to redact: every byte passes, none is held.
            assert_eq!(redact(&needles, bytes), (bytes.len(), false));
            group.bench_function(BenchmarkId::new(*kind, &label), |b| {
                b.iter(|| redact(&needles, black_box(bytes)))
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(CpuTime);
    targets = redaction
}
criterion_main!(benches);
