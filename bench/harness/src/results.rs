//! What a run found: figures per target and metric (every round kept, the
//! median reported), latency percentiles pooled over rounds, the memory
//! figure, and the facts of the machine it ran on. Serialized to
//! `results.json`, which the chart script reads.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::{
    plan::{Metric, Sizes},
    secrets::{Bound, Comparison, Figures},
    spec::Outcome,
    usage::{self, Usage},
};

#[derive(Debug, Serialize)]
pub struct Results {
    pub date: String,
    pub smoke: bool,
    pub machine: Machine,
    pub sizes: Sizes,
    /// The content stages that ran on `sluice-full`.
    pub stages: String,
    pub targets: Vec<TargetResult>,
    pub memory: Vec<Memory>,
    /// Why the memory figure was taken at other counts than asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_note: Option<String>,
    /// The secrets this run drew and bound, one a target (shape and
    /// length, never the value).
    pub secrets: Vec<Bound>,
    /// 1 MiB bodies with each of them bound against none bound.
    pub bound_credential: Option<Comparison>,
}

#[derive(Debug, Serialize)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub memory_gib: f64,
    pub kernel: String,
    /// 1-minute load average before and after the run: other work on the
    /// machine shows here.
    pub load_before: f64,
    pub load_after: f64,
}

#[derive(Debug, Serialize)]
pub struct TargetResult {
    pub name: String,
    pub baseline: String,
    pub metrics: BTreeMap<Metric, MetricResult>,
}

#[derive(Debug, Default, Serialize)]
pub struct MetricResult {
    /// One figure per round (MB/s or per second).
    pub values: Vec<f64>,
    pub median: Option<f64>,
    pub errors: u64,
    pub first_error: Option<String>,
    pub latency: Option<Latency>,
    /// The proxy's CPU (its process tree's utime + stime) over each
    /// round's measured phase per request (or handshake) completed in it,
    /// µs; empty for direct targets.
    pub cpu_us_per_request: Vec<f64>,
    pub cpu_us_per_request_median: Option<f64>,
    /// The same CPU per MB of body received, µs (what bulk transfers cost).
    pub cpu_us_per_mb: Vec<f64>,
    pub cpu_us_per_mb_median: Option<f64>,
    /// The proxy tree's resident memory at the end of each round's
    /// measured phase (right after the load), KiB.
    pub rss_after_kib: Vec<u64>,
    pub rss_after_kib_median: Option<f64>,
    #[serde(skip)]
    pub samples_us: Vec<u64>,
    #[serde(skip)]
    pub unfinished: u64,
    #[serde(skip)]
    pub latency_secs: f64,
}

#[derive(Debug, Serialize)]
pub struct Latency {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub samples: usize,
    /// Requests the target did not answer by the deadline.
    pub unfinished: u64,
    pub achieved_rps: f64,
}

#[derive(Debug, Serialize)]
pub struct Memory {
    pub target: String,
    /// Connections opened (one request each).
    pub connections: u64,
    /// Of those, still open when the RSS was read (what `per_conn_kib`
    /// divides by).
    pub open_at_reading: u64,
    pub rss_before_kib: u64,
    pub rss_after_kib: u64,
    pub per_conn_kib: f64,
}

impl MetricResult {
    pub fn add(&mut self, metric: Metric, outcome: Outcome, usage: Option<Usage>) {
        // Less than one clock tick of CPU is below what /proc can tell (a
        // tiny smoke phase): no CPU figure rather than a false zero.
        if let Some(usage) = usage.filter(|u| u.cpu_us > 0.0) {
            self.cpu_us_per_request
                .extend(usage::per_unit(usage.cpu_us, outcome.ok as f64));
            self.cpu_us_per_mb
                .extend(usage::per_unit(usage.cpu_us, outcome.bytes as f64 / 1e6));
        }
        if let Some(usage) = usage {
            self.rss_after_kib.push(usage.rss_kib);
        }
        self.errors += outcome.errors;
        if self.first_error.is_none() {
            self.first_error = outcome.first_error.clone();
        }
        if metric == Metric::Latency {
            self.unfinished += outcome.unfinished;
            self.latency_secs += outcome.secs;
            self.samples_us.extend(&outcome.latencies_us);
        }
        if outcome.ok > 0 {
            self.values.push(metric.value(&outcome));
        }
    }

    /// Fills in the median and the pooled latency percentiles.
    pub fn finish(&mut self) {
        self.median = median(&self.values);
        self.cpu_us_per_request_median = median(&self.cpu_us_per_request);
        self.cpu_us_per_mb_median = median(&self.cpu_us_per_mb);
        let rss: Vec<f64> = self.rss_after_kib.iter().map(|&k| k as f64).collect();
        self.rss_after_kib_median = median(&rss);
        if !self.samples_us.is_empty() {
            self.samples_us.sort_unstable();
            let ms = |q: f64| percentile(&self.samples_us, q) as f64 / 1000.0;
            self.latency = Some(Latency {
                p50_ms: ms(0.50),
                p99_ms: ms(0.99),
                p999_ms: ms(0.999),
                samples: self.samples_us.len(),
                unfinished: self.unfinished,
                achieved_rps: self.samples_us.len() as f64 / self.latency_secs.max(1e-9),
            });
        }
    }
}

pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    })
}

/// Nearest-rank percentile of sorted samples.
pub fn percentile(sorted: &[u64], q: f64) -> u64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

impl Results {
    pub fn target(&self, name: &str) -> Option<&TargetResult> {
        self.targets.iter().find(|t| t.name == name)
    }

    /// 1 MiB bodies with each of the run's secrets bound against none.
    pub fn bound_credential(&self) -> Option<Comparison> {
        Comparison::of(&self.secrets, |target| {
            let bodies = self.target(target)?.metrics.get(&Metric::Bodies1m);
            Some(Figures {
                mb_s: bodies.and_then(|m| m.median),
                cpu_us_per_mb: bodies.and_then(|m| m.cpu_us_per_mb_median),
            })
        })
    }

    pub fn median(&self, target: &str, metric: Metric) -> Option<f64> {
        self.target(target)?.metrics.get(&metric)?.median
    }

    /// The proxy's median CPU µs per request for a metric.
    pub fn cpu_per_request(&self, target: &str, metric: Metric) -> Option<f64> {
        self.target(target)?
            .metrics
            .get(&metric)?
            .cpu_us_per_request_median
    }

    pub fn latency(&self, target: &str) -> Option<&Latency> {
        self.target(target)?
            .metrics
            .get(&Metric::Latency)?
            .latency
            .as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_serialize_as_their_keys() {
        for metric in Metric::ALL {
            assert_eq!(
                serde_json::to_value(metric).expect("serialize"),
                serde_json::json!(metric.key())
            );
        }
    }

    #[test]
    fn proxy_usage_becomes_cpu_per_request_and_per_mb() {
        let mut result = MetricResult::default();
        let outcome = |ok, bytes| Outcome {
            ok,
            bytes,
            secs: 1.0,
            ..Outcome::default()
        };
        let usage = |cpu_us, rss_kib| Some(Usage { cpu_us, rss_kib });
        // 2,000 requests of 1 KiB on 0.1 s of CPU: 50 µs a request.
        result.add(
            Metric::RpsKeepAlive,
            outcome(2_000, 2_048_000),
            usage(100_000.0, 20_000),
        );
        result.add(
            Metric::RpsKeepAlive,
            outcome(1_000, 1_024_000),
            usage(70_000.0, 22_000),
        );
        result.add(
            Metric::RpsKeepAlive,
            outcome(4_000, 4_096_000),
            usage(160_000.0, 21_000),
        );
        // A direct target has no proxy: figures, no usage.
        result.add(Metric::RpsKeepAlive, outcome(9_000, 0), None);
        // Under one clock tick: memory, but no CPU figure.
        result.add(
            Metric::RpsKeepAlive,
            outcome(10, 10_240),
            usage(0.0, 23_000),
        );
        result.finish();
        assert_eq!(result.cpu_us_per_request, [50.0, 70.0, 40.0]);
        assert_eq!(result.cpu_us_per_request_median, Some(50.0));
        assert_eq!(result.rss_after_kib_median, Some(21_500.0));
        let per_mb = result.cpu_us_per_mb_median.expect("per MB");
        assert!((per_mb - 100_000.0 / 2.048).abs() < 1e-6, "{per_mb}");
        assert_eq!(result.values.len(), 5);

        let mut direct = MetricResult::default();
        direct.add(Metric::Bulk, outcome(1, 1 << 30), None);
        direct.finish();
        assert_eq!(direct.cpu_us_per_request_median, None);
        assert!(direct.cpu_us_per_mb.is_empty());
    }

    #[test]
    fn medians_and_percentiles() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        let samples: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile(&samples, 0.5), 500);
        assert_eq!(percentile(&samples, 0.99), 990);
        assert_eq!(percentile(&samples, 0.999), 999);
        assert_eq!(percentile(&[7], 0.999), 7);
    }
}
