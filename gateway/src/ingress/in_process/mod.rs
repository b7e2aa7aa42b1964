//! The listener end to end in one process, no root: a loopback app that
//! echoes what reaches it, sets a cookie and switches protocols, behind
//! the ingress on plain HTTP from a trusted 127.0.0.1. This module holds
//! the app and the harness; `admission` tests who gets in and what
//! crosses, `transport` the protocols carried (upgrades, HTTP/2, TLS,
//! event streams) and who may connect at all.

mod admission;
mod transport;

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::Arc,
    time::{SystemTime, UNIX_EPOCH},
};

use http_body_util::{BodyExt as _, Empty, Full};
use hyper::{
    Request, Response, StatusCode,
    body::{Bytes, Incoming},
    service::service_fn,
};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpListener, TcpStream},
};

use super::{
    admit::{Lookup, Target},
    config::IngressConfig,
    listener::Ingress,
    metrics::IngressMetrics,
    scope::OwnerId,
    test_keys::TestKeys,
};

struct Table(HashMap<String, Target>);

impl Lookup for Table {
    fn target(&self, name: &str, _now: u64) -> Option<Target> {
        self.0.get(name).cloned()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

/// The app: `/ws` switches protocols and echoes bytes; anything else
/// answers the request's headers (and the port the request came from) as
/// JSON, with a cookie and HSTS.
async fn app() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind app");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((stream, peer)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let service = service_fn(|mut req: Request<Incoming>| async move {
                    if req.uri().path() == "/ws" {
                        let upgrade = hyper::upgrade::on(&mut req);
                        tokio::spawn(async move {
                            let Ok(up) = upgrade.await else { return };
                            let mut io = TokioIo::new(up);
                            let mut buf = [0u8; 64];
                            while let Ok(n) = io.read(&mut buf).await {
                                if n == 0 || io.write_all(&buf[..n]).await.is_err() {
                                    return;
                                }
                            }
                        });
                        return Ok::<_, hyper::Error>(
                            Response::builder()
                                .status(StatusCode::SWITCHING_PROTOCOLS)
                                .header("connection", "upgrade")
                                .header("upgrade", "websocket")
                                .header("set-cookie", "ws=1")
                                .body(Full::new(Bytes::new()))
                                .expect("101"),
                        );
                    }
                    let headers: HashMap<String, Vec<String>> = req
                        .headers()
                        .keys()
                        .map(|k| {
                            let values = req
                                .headers()
                                .get_all(k)
                                .iter()
                                .map(|v| v.to_str().unwrap_or("?").to_owned())
                                .collect();
                            (k.as_str().to_owned(), values)
                        })
                        .collect();
                    let echo = serde_json::json!({
                        "path": req.uri().to_string(),
                        "headers": headers,
                        // Which of the ingress's connections asked.
                        "peer": peer.port(),
                    });
                    Ok(Response::builder()
                        .header("content-type", "application/json")
                        .header("set-cookie", "app=1; Domain=apps.test")
                        .header("strict-transport-security", "max-age=9; includeSubDomains")
                        .body(Full::new(Bytes::from(echo.to_string())))
                        .expect("200"))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades()
                    .await;
            });
        }
    });
    addr
}

struct Harness {
    keys: TestKeys,
    addr: SocketAddr,
    ingress: Arc<Ingress>,
    metrics: IngressMetrics,
    audit: std::path::PathBuf,
}

async fn harness(app_port: u16, trusted: &str) -> Harness {
    harness_with(app_port, Some(trusted), false).await
}

/// Plain HTTP from `trusted`, or (`None`) TLS with a certificate for
/// `*.apps.test` in `cert.pem`/`key.pem` of the keys' directory.
async fn harness_with(app_port: u16, trusted: Option<&str>, viewer_header: bool) -> Harness {
    let keys = TestKeys::new();
    let reached = match trusted {
        Some(trusted) => format!("trusted_proxies: ['{trusted}']"),
        None => {
            let made = rcgen::generate_simple_self_signed(vec!["*.apps.test".to_owned()])
                .expect("certificate");
            let (cert, key) = (
                keys.dir.path().join("cert.pem"),
                keys.dir.path().join("key.pem"),
            );
            std::fs::write(&cert, made.cert.pem()).expect("cert");
            std::fs::write(&key, made.signing_key.serialize_pem()).expect("key");
            format!(
                "tls: {{cert_file: '{}', key_file: '{}'}}",
                cert.display(),
                key.display()
            )
        }
    };
    let mut config: IngressConfig = serde_yaml::from_str(&format!(
        "listen: ['127.0.0.1:0']\napps_domain: apps.test\nviewer_tokens: {{}}\n\
         {reached}\ncsp: {{frame_ancestors: ['https://cp.test']}}\n"
    ))
    .expect("config");
    config.viewer_tokens = keys.config.clone();
    if viewer_header {
        let key_file = keys.dir.path().join("viewer-header.key");
        std::fs::write(&key_file, keys.ed_private_pem()).expect("key");
        config.viewer_header = Some(super::viewer_header::ViewerHeaderConfig {
            key_file,
            ttl_secs: 60,
        });
    }
    let target = |name: &str, scope: &str, port: u16| Target {
        name: name.into(),
        sandbox: "sb".into(),
        port,
        scope: scope.parse().expect("scope"),
        owner: Some(OwnerId::parse("ann@acme").expect("owner")),
        netns: None,
    };
    let table = Table(
        [
            target("demo", "private", app_port),
            target("open", "public", app_port),
            target("down", "public", 1),
        ]
        .into_iter()
        .map(|t| (t.name.clone(), t))
        .collect(),
    );
    let metrics = IngressMetrics::unregistered();
    let audit = keys.dir.path().join("audit.jsonl");
    let ingress = Arc::new(
        Ingress::new(
            config,
            Arc::new(table),
            metrics.clone(),
            crate::audit::Audit::open(
                audit.to_str().expect("utf-8"),
                Arc::new(crate::metrics::Metrics::new()),
            )
            .expect("audit"),
        )
        .expect("ingress starts"),
    );
    let listener = ingress.bind().await.expect("bind").remove(0);
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(ingress.clone().serve(listener));
    Harness {
        keys,
        addr,
        ingress,
        metrics,
        audit,
    }
}

struct Answer {
    status: StatusCode,
    headers: hyper::HeaderMap,
    body: String,
}

impl Answer {
    fn echoed(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("the app's echo")
    }
}

fn get(host: &str, path: &str, headers: &[(&str, &str)]) -> Request<Empty<Bytes>> {
    let mut b = Request::builder().uri(path).header("host", host);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Empty::new()).expect("request")
}

impl Harness {
    async fn send(&self, req: Request<Empty<Bytes>>) -> Answer {
        let stream = TcpStream::connect(self.addr).await.expect("connect");
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        tokio::spawn(conn);
        let response = sender.send_request(req).await.expect("response");
        let (parts, body) = response.into_parts();
        let body = body.collect().await.expect("body").to_bytes();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    fn count(&self, app: &str, verdict: &str, reason: &str) -> u64 {
        self.metrics
            .requests
            .with_label_values(&[app, verdict, reason])
            .get()
    }

    fn audited(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.audit)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("json line"))
            .collect()
    }
}

const VIEWER_HEADERS: &[(&str, &str)] = &[
    ("cookie", "theirs=1"),
    ("x-csrf-token", "c"),
    ("x-xsrf-token", "c"),
    ("forwarded", "for=203.0.113.9"),
    ("x-forwarded-for", "203.0.113.9"),
    ("x-forwarded-host", "demo.apps.test"),
    ("x-real-ip", "203.0.113.9"),
    ("x-auth-request-email", "ann@acme.test"),
    ("remote-user", "ann"),
    ("x-forwarded-user", "ann"),
    ("accept", "text/html"),
];
