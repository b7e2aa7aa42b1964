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
//!     cargo bench -p sluice-scan-bench --bench redact

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
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

fn redaction(c: &mut Criterion) {
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

criterion_group!(benches, redaction);
criterion_main!(benches);
