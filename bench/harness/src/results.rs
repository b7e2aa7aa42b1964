//! What a run found: figures per target and metric (every round kept, the
//! median reported), latency percentiles pooled over rounds, the memory
//! figure, and the facts of the machine it ran on. Serialized to
//! `results.json`, which the chart script reads.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::{
    plan::{Metric, Sizes},
    spec::Outcome,
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
    pub connections: u64,
    pub rss_before_kib: u64,
    pub rss_after_kib: u64,
    pub per_conn_kib: f64,
}

impl MetricResult {
    pub fn add(&mut self, metric: Metric, outcome: Outcome) {
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

    pub fn median(&self, target: &str, metric: Metric) -> Option<f64> {
        self.target(target)?.metrics.get(&metric)?.median
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
