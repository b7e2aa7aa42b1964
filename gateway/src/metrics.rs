//! The daemon's Prometheus registry and every metric it exports (`sluice_*`),
//! and the HTTP endpoint that serves them.
//!
//! Metric handles are created once here; hot paths only bump them.

use std::net::SocketAddr;

use prometheus::{Encoder, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder};

/// All metrics, registered in one registry.
pub struct Metrics {
    pub registry: Registry,
    /// Accepted steered connections by final verdict and reason.
    pub connections: IntCounterVec,
    /// Connections currently being sniffed or relayed.
    pub active_connections: IntGauge,
    /// DNS queries answered by the DNS listener, by result.
    pub dns_queries: IntCounterVec,
    /// Bytes relayed, by direction (`upstream`: sandbox → destination).
    pub relay_bytes: IntCounterVec,
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
    /// DNS queries refused by policy or tunnelling caps, by reason.
    pub dns_refusals: IntCounterVec,
    /// Leaf certificates minted for intercepted names.
    pub certificates_minted: IntCounter,
    /// Intercepted HTTP requests, by response status class.
    pub intercepted_requests: IntCounterVec,
    /// Upstream failures answered 502, by reason.
    pub upstream_errors: IntCounterVec,
    /// Secrets injected, by credential name.
    pub credential_injections: IntCounterVec,
    /// Requests refused for carrying a placeholder where it may not go, by reason.
    pub credential_refusals: IntCounterVec,
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
        let dns_queries = IntCounterVec::new(
            Opts::new("sluice_dns_queries_total", "DNS queries by result."),
            &["result"],
        )
        .expect("valid metric");
        let relay_bytes = IntCounterVec::new(
            Opts::new("sluice_relay_bytes_total", "Bytes relayed by direction."),
            &["direction"],
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
        for collector in [
            Box::new(connections.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(active_connections.clone()),
            Box::new(dns_queries.clone()),
            Box::new(relay_bytes.clone()),
            Box::new(ebpf_refusals.clone()),
            Box::new(registered.clone()),
            Box::new(audit_errors.clone()),
            Box::new(policy_synchronized.clone()),
            Box::new(policy_reloads.clone()),
            Box::new(dns_refusals.clone()),
            Box::new(certificates_minted.clone()),
            Box::new(intercepted_requests.clone()),
            Box::new(upstream_errors.clone()),
            Box::new(credential_injections.clone()),
            Box::new(credential_refusals.clone()),
        ] {
            registry.register(collector).expect("unique metric names");
        }
        Metrics {
            registry,
            connections,
            active_connections,
            dns_queries,
            relay_bytes,
            ebpf_refusals,
            registered,
            audit_errors,
            policy_synchronized,
            policy_reloads,
            dns_refusals,
            certificates_minted,
            intercepted_requests,
            upstream_errors,
            credential_injections,
            credential_refusals,
        }
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

/// Serves `GET /metrics` on `listener` until the task is dropped; `refresh`
/// runs before each scrape to pull values that live elsewhere (the kernel's
/// refusal counters).
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: std::sync::Arc<Metrics>,
    refresh: std::sync::Arc<dyn Fn() + Send + Sync>,
) -> std::io::Result<()> {
    use http_body_util::Full;
    use hyper::{Response, body::Bytes, server::conn::http1, service::service_fn};
    use hyper_util::rt::TokioIo;
    loop {
        let (stream, _) = listener.accept().await?;
        let metrics = metrics.clone();
        let refresh = refresh.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let metrics = metrics.clone();
                let refresh = refresh.clone();
                async move {
                    let response = if req.uri().path() == "/metrics" {
                        refresh();
                        Response::builder()
                            .header("content-type", "text/plain; version=0.0.4")
                            .body(Full::new(Bytes::from(metrics.render())))
                    } else {
                        Response::builder()
                            .status(404)
                            .body(Full::new(Bytes::from_static(b"not found\n")))
                    };
                    Ok::<_, std::convert::Infallible>(response.expect("static response"))
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Binds the metrics listener.
pub async fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await
}
