//! The daemon's Prometheus registry and every metric it exports (`sluice_*`),
//! and the HTTP endpoint that serves them beside the health probes
//! (`/healthz`: the process answers; `/readyz`: it steers).
//!
//! Metric handles are created once here; hot paths only bump them.

use std::{
    net::SocketAddr,
    sync::{Arc, OnceLock},
};

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

/// All metrics, registered in one registry.
pub struct Metrics {
    pub registry: Registry,
    /// The name of every metric family registered (a family with no
    /// series yet is not in `registry.gather()`, but is still exported).
    pub names: Vec<String>,
    /// Accepted steered connections by final verdict and reason.
    pub connections: IntCounterVec,
    /// Connections currently being sniffed or relayed.
    pub active_connections: IntGauge,
    /// Intercepted HTTP/1 connections waiting for their next request
    /// parked: without hyper's buffers (`intercept::serve`).
    pub parked_connections: IntGauge,
    /// DNS queries answered by the DNS listener, by result.
    pub dns_queries: IntCounterVec,
    /// Bytes relayed, by direction (`upstream`: sandbox → destination).
    pub relay_bytes: IntCounterVec,
    /// Relayed connections by the path their bytes took (`kernel`: the
    /// sockhash redirect; `user`: copied by the daemon).
    pub relay_paths: IntCounterVec,
    /// Operations the eBPF programs refused, by reason (read from the kernel).
    pub ebpf_refusals: IntCounterVec,
    /// Registered sandboxes and sessions.
    pub registered: IntGauge,
    /// Audit events that could not be written.
    pub audit_errors: IntCounter,
    /// 1 when the policies in force are the ones on disk; 0 after a failed reload.
    pub policy_synchronized: IntGauge,
    /// Policy reloads by result (`ok`, `error`).
    pub policy_reloads: IntCounterVec,
    /// Per policy in force: the stages it enables that can never see
    /// HTTPS (it relays TLS undecrypted).
    pub policy_warnings: IntGaugeVec,
    /// DNS queries refused by policy or tunnelling caps, by reason.
    pub dns_refusals: IntCounterVec,
    /// Leaf certificates minted for intercepted names.
    pub certificates_minted: IntCounter,
    /// Intercepted HTTP requests, by response status class.
    pub intercepted_requests: IntCounterVec,
    /// Its series by class (1xx to 5xx), each resolved on first use.
    pub intercepted_by_class: [Series; 5],
    /// Upstream failures answered 502, by reason.
    pub upstream_errors: IntCounterVec,
    /// Secrets injected, by credential name.
    pub credential_injections: IntCounterVec,
    /// Requests refused for carrying a placeholder where it may not go, by reason.
    pub credential_refusals: IntCounterVec,
    /// Intercepted requests: time from the request to the response head.
    pub request_duration: Histogram,
    /// Entries in the registration maps (`SLUICE_IDENTITY`, `SLUICE_LISTENERS`), on scrape.
    pub ebpf_map_entries: IntGaugeVec,
    /// Capacity of the same maps; a full identity map refuses new registrations.
    pub ebpf_map_capacity: IntGaugeVec,
    /// Minted leaf certificates held in the cache, on scrape.
    pub certificate_cache_entries: IntGauge,
    /// PII found in requests, by sandbox, type and the action taken.
    pub pii_detections: IntCounterVec,
    /// Prompt injections found in requests, by sandbox and the action taken.
    pub injection_detections: IntCounterVec,
    /// Requests parked for an approval now.
    pub approvals_parked: IntGauge,
    /// Daemon config reloads (SIGHUP), by result.
    pub config_reloads: IntCounterVec,
    /// 1 while the daemon is ready (programs attached, registrations
    /// restored, not draining), as `/readyz` answers.
    pub ready: IntGauge,
    /// Always 1; the labels carry the running version.
    pub build_info: IntGaugeVec,
    /// Steered connections by sandbox and verdict (`allow`, `deny`).
    pub sandbox_connections: IntCounterVec,
    /// Audited security decisions, by event, verdict, reason and sandbox.
    pub audit_events: IntCounterVec,
    /// The web-app ingress's requests and latency.
    pub ingress: crate::ingress::metrics::IngressMetrics,
}

impl Metrics {
    pub fn new() -> Metrics {
        let registry = Registry::new();
        let connections = IntCounterVec::new(
            Opts::new(
                "sluice_connections_total",
                "Steered connections by verdict and reason.",
            ),
            &["verdict", "reason"],
        )
        .expect("valid metric");
        let active_connections =
            IntGauge::new("sluice_active_connections", "Connections open now.").expect("valid");
        let parked_connections = IntGauge::new(
            "sluice_parked_connections",
            "Intercepted HTTP/1 connections waiting for their next request, parked.",
        )
        .expect("valid");
        let dns_queries = IntCounterVec::new(
            Opts::new("sluice_dns_queries_total", "DNS queries by result."),
            &["result"],
        )
        .expect("valid metric");
        let relay_bytes = IntCounterVec::new(
            Opts::new(
                "sluice_relay_bytes_total",
                "Bytes relayed undecrypted and unread (not HTTP, or TLS not decrypted), by direction.",
            ),
            &["direction"],
        )
        .expect("valid metric");
        let relay_paths = IntCounterVec::new(
            Opts::new(
                "sluice_relay_connections_total",
                "Relayed connections by the path their bytes took (kernel, user).",
            ),
            &["path"],
        )
        .expect("valid metric");
        let ebpf_refusals = IntCounterVec::new(
            Opts::new(
                "sluice_ebpf_refusals_total",
                "Socket operations refused in the kernel, by reason.",
            ),
            &["reason"],
        )
        .expect("valid metric");
        let registered = IntGauge::new(
            "sluice_registered_cgroups",
            "Registered sandboxes and sessions.",
        )
        .expect("valid");
        let audit_errors =
            IntCounter::new("sluice_audit_errors_total", "Audit events not written.")
                .expect("valid");
        let policy_synchronized = IntGauge::new(
            "sluice_policy_synchronized",
            "1 when the policies in force match the policy directory.",
        )
        .expect("valid");
        let policy_warnings = IntGaugeVec::new(
            Opts::new(
                "sluice_policy_warnings",
                "Stages a policy in force enables that never see HTTPS (it relays TLS undecrypted).",
            ),
            &["policy"],
        )
        .expect("valid metric");
        let policy_reloads = IntCounterVec::new(
            Opts::new("sluice_policy_reloads_total", "Policy reloads by result."),
            &["result"],
        )
        .expect("valid metric");
        let dns_refusals = IntCounterVec::new(
            Opts::new(
                "sluice_dns_refusals_total",
                "DNS queries refused by policy or tunnelling caps, by reason.",
            ),
            &["reason"],
        )
        .expect("valid metric");
        let certificates_minted = IntCounter::new(
            "sluice_certificates_minted_total",
            "Leaf certificates minted for intercepted names.",
        )
        .expect("valid");
        let intercepted_requests = IntCounterVec::new(
            Opts::new(
                "sluice_intercepted_requests_total",
                "Intercepted HTTP requests by response status class.",
            ),
            &["status_class"],
        )
        .expect("valid metric");
        let upstream_errors = IntCounterVec::new(
            Opts::new(
                "sluice_upstream_errors_total",
                "Upstream failures answered 502, by reason.",
            ),
            &["reason"],
        )
        .expect("valid metric");
        let credential_injections = IntCounterVec::new(
            Opts::new(
                "sluice_credential_injections_total",
                "Secrets injected into intercepted requests, by credential.",
            ),
            &["credential"],
        )
        .expect("valid metric");
        let credential_refusals = IntCounterVec::new(
            Opts::new(
                "sluice_credential_refusals_total",
                "Requests refused for a placeholder where it may not go, by reason.",
            ),
            &["reason"],
        )
        .expect("valid metric");
        let request_duration = Histogram::with_opts(
            HistogramOpts::new(
                "sluice_request_duration_seconds",
                "Intercepted requests: time from the request to the response head.",
            )
            .buckets(vec![
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                10.0, 30.0,
            ]),
        )
        .expect("valid metric");
        let ebpf_map_entries = IntGaugeVec::new(
            Opts::new(
                "sluice_ebpf_map_entries",
                "Entries in the eBPF registration maps.",
            ),
            &["map"],
        )
        .expect("valid metric");
        let ebpf_map_capacity = IntGaugeVec::new(
            Opts::new(
                "sluice_ebpf_map_capacity",
                "Capacity of the eBPF registration maps.",
            ),
            &["map"],
        )
        .expect("valid metric");
        let certificate_cache_entries = IntGauge::new(
            "sluice_certificate_cache_entries",
            "Minted leaf certificates held in the cache.",
        )
        .expect("valid");
        let pii_detections = IntCounterVec::new(
            Opts::new(
                "sluice_pii_detections_total",
                "PII found in requests, by sandbox, type and action.",
            ),
            &["sandbox", "type", "action"],
        )
        .expect("valid metric");
        let injection_detections = IntCounterVec::new(
            Opts::new(
                "sluice_injection_detections_total",
                "Prompt injections found in requests, by sandbox and action.",
            ),
            &["sandbox", "action"],
        )
        .expect("valid metric");
        let approvals_parked = IntGauge::new(
            "sluice_approvals_parked",
            "Requests parked for an approval now.",
        )
        .expect("valid");
        let config_reloads = IntCounterVec::new(
            Opts::new(
                "sluice_config_reloads_total",
                "Daemon config reloads by result.",
            ),
            &["result"],
        )
        .expect("valid metric");
        let ready = IntGauge::new(
            "sluice_ready",
            "1 while the daemon is ready: programs attached, registrations restored, not draining.",
        )
        .expect("valid");
        let build_info = IntGaugeVec::new(
            Opts::new("sluice_build_info", "Always 1; labels name the build."),
            &["version"],
        )
        .expect("valid metric");
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        let sandbox_connections = IntCounterVec::new(
            Opts::new(
                "sluice_sandbox_connections_total",
                "Steered connections by sandbox and verdict.",
            ),
            &["sandbox", "verdict"],
        )
        .expect("valid metric");
        let audit_events = IntCounterVec::new(
            Opts::new(
                "sluice_audit_events_total",
                "Audited security decisions by event, verdict, reason and sandbox.",
            ),
            &["event", "verdict", "reason", "sandbox"],
        )
        .expect("valid metric");
        let mut names = Vec::new();
        for collector in [
            Box::new(connections.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(active_connections.clone()),
            Box::new(parked_connections.clone()),
            Box::new(dns_queries.clone()),
            Box::new(relay_bytes.clone()),
            Box::new(relay_paths.clone()),
            Box::new(ebpf_refusals.clone()),
            Box::new(registered.clone()),
            Box::new(audit_errors.clone()),
            Box::new(policy_synchronized.clone()),
            Box::new(policy_reloads.clone()),
            Box::new(policy_warnings.clone()),
            Box::new(dns_refusals.clone()),
            Box::new(certificates_minted.clone()),
            Box::new(intercepted_requests.clone()),
            Box::new(upstream_errors.clone()),
            Box::new(credential_injections.clone()),
            Box::new(credential_refusals.clone()),
            Box::new(request_duration.clone()),
            Box::new(ebpf_map_entries.clone()),
            Box::new(ebpf_map_capacity.clone()),
            Box::new(certificate_cache_entries.clone()),
            Box::new(pii_detections.clone()),
            Box::new(injection_detections.clone()),
            Box::new(approvals_parked.clone()),
            Box::new(config_reloads.clone()),
            Box::new(ready.clone()),
            Box::new(build_info.clone()),
            Box::new(sandbox_connections.clone()),
            Box::new(audit_events.clone()),
        ] {
            names.extend(collector.desc().iter().map(|d| d.fq_name.clone()));
            registry.register(collector).expect("unique metric names");
        }
        // Registered whether or not the ingress is configured, so the
        // dashboard's queries always resolve.
        let ingress = crate::ingress::metrics::IngressMetrics::register(&registry)
            .expect("unique metric names");
        names.extend(ingress.names());
        Metrics {
            registry,
            names,
            connections,
            active_connections,
            parked_connections,
            dns_queries,
            relay_bytes,
            relay_paths,
            ebpf_refusals,
            registered,
            audit_errors,
            policy_synchronized,
            policy_reloads,
            policy_warnings,
            dns_refusals,
            certificates_minted,
            intercepted_requests,
            intercepted_by_class: Default::default(),
            upstream_errors,
            credential_injections,
            credential_refusals,
            request_duration,
            ebpf_map_entries,
            ebpf_map_capacity,
            certificate_cache_entries,
            pii_detections,
            injection_detections,
            approvals_parked,
            config_reloads,
            ready,
            build_info,
            sandbox_connections,
            audit_events,
            ingress,
        }
    }

    /// Counts the bytes one relayed connection carried each way.
    pub fn relayed(&self, upstream: u64, downstream: u64) {
        self.relay_bytes
            .with_label_values(&["upstream"])
            .inc_by(upstream);
        self.relay_bytes
            .with_label_values(&["downstream"])
            .inc_by(downstream);
    }

    /// The registry in Prometheus text format.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buf)
            .expect("text encoding cannot fail");
        String::from_utf8(buf).expect("prometheus text is UTF-8")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

/// What the endpoint asks the daemon on each request.
#[derive(Clone)]
pub struct Probes {
    /// Pulls values that live elsewhere (the kernel's counters and maps)
    /// into the registry; runs before each scrape.
    pub refresh: Arc<dyn Fn() + Send + Sync>,
    /// `Ok` when the daemon is ready, else why not.
    pub ready: Arc<dyn Fn() -> Result<(), String> + Send + Sync>,
}

/// One answer of the endpoint: status, content type, body.
type Answer = (u16, &'static str, String);

/// Routes one request path: `/metrics`, `/healthz`, `/readyz`.
fn answer(path: &str, metrics: &Metrics, probes: &Probes) -> Answer {
    const TEXT: &str = "text/plain; charset=utf-8";
    match path {
        "/metrics" => {
            (probes.refresh)();
            (200, "text/plain; version=0.0.4", metrics.render())
        }
        // Liveness: the runtime answers. Nothing else, so a node under load
        // is not restarted for being slow to steer.
        "/healthz" => (200, TEXT, "ok\n".to_owned()),
        "/readyz" => match (probes.ready)() {
            Ok(()) => (200, TEXT, "ready\n".to_owned()),
            Err(why) => (503, TEXT, format!("not ready: {why}\n")),
        },
        _ => (404, TEXT, "not found\n".to_owned()),
    }
}

/// Serves the metrics and health probes on `listener` until the task is dropped.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Arc<Metrics>,
    probes: Probes,
) -> std::io::Result<()> {
    use http_body_util::Full;
    use hyper::{Response, body::Bytes, server::conn::http1, service::service_fn};
    use hyper_util::rt::TokioIo;
    loop {
        let (stream, _) = listener.accept().await?;
        let metrics = metrics.clone();
        let probes = probes.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let (status, content_type, body) = answer(req.uri().path(), &metrics, &probes);
                let response = Response::builder()
                    .status(status)
                    .header("content-type", content_type)
                    .body(Full::new(Bytes::from(body)))
                    .expect("static response");
                async move { Ok::<_, std::convert::Infallible>(response) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Binds the metrics listener.
/// One series of a labelled counter, resolved on its first use and kept:
/// `with_label_values` hashes the labels and takes a lock on every call,
/// which the request path need not pay per request. Resolved lazily, so a
/// series is exported from its first count, as before.
#[derive(Default)]
pub struct Series(OnceLock<(Box<str>, IntCounter)>);

impl Series {
    /// Counts one under `label` (the only label of `vec`): through the kept
    /// series when it is that label's, else looked up as usual.
    pub fn inc(&self, vec: &IntCounterVec, label: &str) {
        let (kept, counter) = self
            .0
            .get_or_init(|| (label.into(), vec.with_label_values(&[label])));
        if **kept == *label {
            counter.inc();
        } else {
            vec.with_label_values(&[label]).inc();
        }
    }
}

pub async fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use super::*;

    /// A kept series counts into the same counter as a lookup would, is
    /// exported only from its first count, and another label still counts.
    #[test]
    fn a_kept_series_counts_where_a_lookup_would() {
        let vec = IntCounterVec::new(Opts::new("t", "t"), &["credential"]).expect("vec");
        let series = Series::default();
        let exported = |vec: &IntCounterVec| {
            prometheus::core::Collector::collect(vec)[0]
                .get_metric()
                .len()
        };
        assert_eq!(exported(&vec), 0, "nothing before");
        series.inc(&vec, "github");
        series.inc(&vec, "github");
        series.inc(&vec, "stripe");
        assert_eq!(vec.with_label_values(&["github"]).get(), 2);
        assert_eq!(vec.with_label_values(&["stripe"]).get(), 1);
        assert_eq!(exported(&vec), 2);
    }

    #[test]
    fn probes_and_metrics_table() {
        let ready = Arc::new(AtomicBool::new(false));
        let scrapes = Arc::new(AtomicUsize::new(0));
        let probes = Probes {
            refresh: {
                let scrapes = scrapes.clone();
                Arc::new(move || {
                    scrapes.fetch_add(1, Ordering::SeqCst);
                })
            },
            ready: {
                let ready = ready.clone();
                Arc::new(move || {
                    if ready.load(Ordering::SeqCst) {
                        Ok(())
                    } else {
                        Err("draining".to_owned())
                    }
                })
            },
        };
        let metrics = Metrics::new();
        let cases: &[(&str, bool, u16, &str)] = &[
            ("/healthz", false, 200, "ok"),
            ("/readyz", false, 503, "not ready: draining"),
            ("/readyz", true, 200, "ready"),
            ("/metrics", true, 200, "sluice_build_info"),
            ("/", true, 404, "not found"),
            ("/metrics/", true, 404, "not found"),
        ];
        for (path, is_ready, status, body) in cases {
            ready.store(*is_ready, Ordering::SeqCst);
            let (got, _, text) = answer(path, &metrics, &probes);
            assert_eq!(got, *status, "{path}");
            assert!(text.contains(body), "{path}: {text}");
        }
        assert_eq!(
            scrapes.load(Ordering::SeqCst),
            1,
            "refresh runs per scrape only"
        );
    }

    /// The metrics the content and approval stages will bump are exported
    /// from the start, with the labels the dashboard groups by.
    #[test]
    fn stage_metrics_are_exported() {
        let metrics = Metrics::new();
        metrics
            .pii_detections
            .with_label_values(&["sb1", "email", "redact"])
            .inc();
        metrics
            .injection_detections
            .with_label_values(&["sb1", "block"])
            .inc();
        metrics.approvals_parked.set(2);
        let text = metrics.render();
        for line in [
            r#"sluice_pii_detections_total{action="redact",sandbox="sb1",type="email"} 1"#,
            r#"sluice_injection_detections_total{action="block",sandbox="sb1"} 1"#,
            "sluice_approvals_parked 2",
        ] {
            assert!(text.contains(line), "missing {line}");
        }
    }
}
