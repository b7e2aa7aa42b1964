//! The listener end to end in one process, no root: a loopback app that
//! echoes what reaches it, sets a cookie and switches protocols, behind
//! the ingress on plain HTTP from a trusted 127.0.0.1.

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
/// answers the request's headers as JSON, with a cookie and HSTS.
async fn app() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind app");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
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

#[tokio::test]
async fn the_owner_reaches_the_app_and_nothing_of_theirs_does() {
    let app = app().await;
    let h = harness(app.port(), "127.0.0.1/32").await;
    let token = h.keys.viewer("ann", Some("acme"), now());
    let bearer = format!("Bearer {token}");
    let mut headers = VIEWER_HEADERS.to_vec();
    headers.push(("authorization", &bearer));
    let answer = h.send(get("demo.apps.test", "/page?q=1", &headers)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let echo = answer.echoed();
    let mut seen: Vec<&str> = echo["headers"]
        .as_object()
        .expect("headers")
        .keys()
        .map(String::as_str)
        .collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        ["accept", "host"],
        "only allowlisted headers reach the app"
    );
    assert_eq!(
        echo["headers"]["host"][0],
        format!("127.0.0.1:{}", app.port())
    );
    assert_eq!(echo["path"], "/page?q=1");
    assert!(
        answer.headers.get("set-cookie").is_none(),
        "the app's cookie stays behind"
    );
    assert!(answer.headers.get("strict-transport-security").is_none());
    assert_eq!(
        answer.headers["content-security-policy"]
            .to_str()
            .expect("ascii")
            .split(';')
            .next(),
        Some("frame-ancestors https://cp.test")
    );
    assert_eq!(h.count("demo", "allow", "viewer"), 1);
}

#[tokio::test]
async fn a_link_token_becomes_a_session_cookie() {
    let app = app().await;
    let h = harness(app.port(), "127.0.0.1/32").await;
    let token = h.keys.viewer("ann", Some("acme"), now());
    let link = format!("/dash?sluice_token={token}");
    let answer = h.send(get("demo.apps.test", &link, &[])).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert_eq!(answer.headers["location"], "/dash");
    let cookie = answer.headers["set-cookie"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(
        cookie.contains("HttpOnly; Secure; SameSite=Lax"),
        "{cookie}"
    );
    let session = cookie.split(';').next().expect("pair").to_owned();

    let with_cookie = format!("{session}; theirs=1");
    let answer = h
        .send(get("demo.apps.test", "/dash", &[("cookie", &with_cookie)]))
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(
        answer.echoed()["headers"].get("cookie").is_none(),
        "the session cookie stays behind"
    );

    let again = h.send(get("demo.apps.test", &link, &[])).await;
    assert_eq!(again.status, StatusCode::UNAUTHORIZED);
    assert_eq!(again.headers["x-sluice-refusal"], "token_reused");
    assert_eq!(h.count("demo", "allow", "session_opened"), 1);
    let opened = h
        .audited()
        .into_iter()
        .find(|e| e["reason"] == "session_opened")
        .expect("the session is audited");
    assert_eq!(opened["event"], "ingress");
    assert_eq!(opened["detail"], "viewer ann");
}

#[tokio::test]
async fn refusals_say_why_and_are_counted_and_audited() {
    let app = app().await;
    let h = harness(app.port(), "127.0.0.1/32").await;
    let eve = format!("Bearer {}", h.keys.viewer("eve", Some("evil"), now()));
    type Row<'a> = (
        &'a str,
        Vec<(&'a str, &'a str)>,
        StatusCode,
        &'a str,
        &'a str,
    );
    let table: Vec<Row> = vec![
        (
            "demo.apps.test",
            vec![],
            StatusCode::UNAUTHORIZED,
            "no_token",
            "demo",
        ),
        (
            "demo.apps.test",
            vec![("authorization", &eve)],
            StatusCode::FORBIDDEN,
            "not_owner",
            "demo",
        ),
        (
            "demo.apps.test",
            vec![("authorization", "Bearer x.y.z")],
            StatusCode::UNAUTHORIZED,
            "token_malformed",
            "demo",
        ),
        (
            "nope.apps.test",
            vec![],
            StatusCode::NOT_FOUND,
            "no_such_app",
            "-",
        ),
        (
            "down.apps.test",
            vec![],
            StatusCode::BAD_GATEWAY,
            "app_unreachable",
            "down",
        ),
    ];
    for (host, headers, status, reason, app) in table {
        let answer = h.send(get(host, "/", &headers)).await;
        assert_eq!(answer.status, status, "{host}: {}", answer.body);
        assert_eq!(answer.headers["x-sluice-refusal"], reason, "{host}");
        assert!(
            answer.body.contains(reason),
            "the page names the reason: {}",
            answer.body
        );
        assert!(answer.headers.get("content-security-policy").is_some());
        let verdict = if status.is_server_error() {
            "error"
        } else {
            "deny"
        };
        assert_eq!(h.count(app, verdict, reason), 1, "{host} {reason}");
        assert!(
            h.audited()
                .iter()
                .any(|e| e["event"] == "ingress" && e["reason"] == reason),
            "{reason} audited"
        );
    }
    let answer = h.send(get("demo.apps.test", "/", &[])).await;
    assert!(
        answer.body.contains("open it from the control plane"),
        "{}",
        answer.body
    );
}

#[tokio::test]
async fn websockets_are_spliced_through() {
    let app = app().await;
    let h = harness(app.port(), "127.0.0.1/32").await;
    let mut stream = TcpStream::connect(h.addr).await.expect("connect");
    stream
        .write_all(
            b"GET /ws HTTP/1.1\r\nHost: open.apps.test\r\nConnection: Upgrade\r\n\
              Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
              Sec-WebSocket-Version: 13\r\n\r\n",
        )
        .await
        .expect("write");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        stream.read_exact(&mut byte).await.expect("head");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(!head.contains("set-cookie"), "{head}");
    stream.write_all(b"ping through").await.expect("write");
    let mut echo = [0u8; 12];
    stream.read_exact(&mut echo).await.expect("echo");
    assert_eq!(&echo, b"ping through");
}

#[tokio::test]
async fn http2_viewers_are_served() {
    let app = app().await;
    let h = harness(app.port(), "127.0.0.1/32").await;
    let stream = TcpStream::connect(h.addr).await.expect("connect");
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .expect("h2 handshake");
    tokio::spawn(conn);
    let req = Request::builder()
        .uri("http://open.apps.test/h2")
        .header("cookie", "theirs=1")
        .body(Empty::<Bytes>::new())
        .expect("request");
    let response = sender.send_request(req).await.expect("response");
    assert_eq!(response.status(), StatusCode::OK);
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let echo: serde_json::Value = serde_json::from_slice(&body).expect("echo");
    assert_eq!(echo["path"], "/h2");
    assert!(echo["headers"].get("cookie").is_none());
}

#[tokio::test]
async fn plain_http_from_an_unlisted_peer_is_closed_unread() {
    let app = app().await;
    let h = harness(app.port(), "10.0.0.0/8").await;
    let mut stream = TcpStream::connect(h.addr).await.expect("connect");
    let _ = stream
        .write_all(b"GET / HTTP/1.1\r\nHost: open.apps.test\r\n\r\n")
        .await;
    let mut buf = Vec::new();
    let _ = stream.read_to_end(&mut buf).await;
    assert!(
        buf.is_empty(),
        "nothing answered: {}",
        String::from_utf8_lossy(&buf)
    );
    assert_eq!(h.count("-", "deny", "untrusted_peer"), 1);
    assert!(h.audited().iter().any(|e| e["reason"] == "untrusted_peer"));
    drop(h.ingress);
}

#[tokio::test]
async fn tls_viewers_get_http2_with_the_operator_certificate() {
    let app = app().await;
    let h = harness_with(app.port(), None, false).await;
    let pem = std::fs::read(h.keys.dir.path().join("cert.pem")).expect("cert");
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
        roots.add(cert.expect("pem")).expect("root");
    }
    let mut tls = rustls::ClientConfig::builder_with_provider(crate::tls::provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h2".to_vec()];
    let stream = TcpStream::connect(h.addr).await.expect("connect");
    let name = rustls::pki_types::ServerName::try_from("open.apps.test").expect("name");
    let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
        .connect(name, stream)
        .await
        .expect("the operator's certificate verifies");
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .expect("h2 handshake");
    tokio::spawn(conn);
    let req = Request::builder()
        .uri("https://open.apps.test/over-tls")
        .body(Empty::<Bytes>::new())
        .expect("request");
    let response = sender.send_request(req).await.expect("response");
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers().get("set-cookie").is_none());
}

#[tokio::test]
async fn event_streams_arrive_as_they_are_sent() {
    // An app whose event stream sends one event and then holds on: the
    // viewer must get it while the stream is still open.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8; 1];
            stream.read_exact(&mut byte).await.expect("head");
            head.push(byte[0]);
        }
        stream
            .write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                  transfer-encoding: chunked\r\n\r\nb\r\ndata: one\n\n\r\n",
            )
            .await
            .expect("first event");
        let _ = done_rx.await;
    });
    let h = harness(port, "127.0.0.1/32").await;
    let stream = TcpStream::connect(h.addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let response = sender
        .send_request(get(
            "open.apps.test",
            "/events",
            &[("accept", "text/event-stream")],
        ))
        .await
        .expect("response");
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let frame = tokio::time::timeout(std::time::Duration::from_secs(10), body.frame())
        .await
        .expect("the first event arrives while the stream is open")
        .expect("a frame")
        .expect("data");
    assert_eq!(
        frame.into_data().expect("data"),
        Bytes::from_static(b"data: one\n\n")
    );
    let _ = done_tx.send(());
}

#[tokio::test]
async fn a_signed_viewer_header_reaches_the_app_when_turned_on() {
    let app = app().await;
    let h = harness_with(app.port(), Some("127.0.0.1/32"), true).await;
    let bearer = format!("Bearer {}", h.keys.viewer("ann", Some("acme"), now()));
    let forged = ("x-sluice-viewer", "forged");
    let answer = h
        .send(get(
            "demo.apps.test",
            "/",
            &[("authorization", &bearer), forged],
        ))
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    let echo = answer.echoed();
    let signed = echo["headers"]["x-sluice-viewer"]
        .as_array()
        .expect("one signed header");
    assert_eq!(signed.len(), 1, "the viewer's own never passes");
    let claims = h.keys.verify_own(signed[0].as_str().expect("text"));
    assert_eq!(claims["sub"], "ann");
    assert_eq!(claims["app"], "demo");
    // Anonymous viewers of a public app have no header.
    let answer = h.send(get("open.apps.test", "/", &[])).await;
    assert!(answer.echoed()["headers"].get("x-sluice-viewer").is_none());
}
