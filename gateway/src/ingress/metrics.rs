//! The ingress's metrics, registered in the daemon's registry with the
//! others (`crate::metrics::Metrics::ingress`); they stay at zero while
//! no `ingress:` is configured.

use prometheus::{Histogram, HistogramOpts, IntCounterVec, Opts, Registry};

#[derive(Clone)]
pub struct IngressMetrics {
    /// Viewer requests by app (`-` when the request named no publication:
    /// names a viewer makes up never become label values), verdict
    /// (`allow`, `deny`, `error`) and reason.
    pub requests: IntCounterVec,
    /// Time from a viewer's request to the answer's head.
    pub duration: Histogram,
}

impl IngressMetrics {
    pub fn register(registry: &Registry) -> prometheus::Result<IngressMetrics> {
        let requests = IntCounterVec::new(
            Opts::new(
                "sluice_ingress_requests_total",
                "Viewer requests to published apps, by app, verdict and reason.",
            ),
            &["app", "verdict", "reason"],
        )?;
        let duration = Histogram::with_opts(
            HistogramOpts::new(
                "sluice_ingress_request_duration_seconds",
                "Viewer requests through the ingress, to the answer's head.",
            )
            .buckets(vec![
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
            ]),
        )?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(duration.clone()))?;
        Ok(IngressMetrics { requests, duration })
    }

    /// The families' names.
    pub fn names(&self) -> Vec<String> {
        use prometheus::core::Collector as _;
        [self.requests.desc(), self.duration.desc()]
            .into_iter()
            .flatten()
            .map(|d| d.fq_name.clone())
            .collect()
    }

    /// Metrics in a registry of their own (tests).
    pub fn unregistered() -> IngressMetrics {
        IngressMetrics::register(&Registry::new()).expect("a fresh registry")
    }
}
