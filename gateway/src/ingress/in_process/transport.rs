//! What the ingress carries and from whom: WebSocket upgrades spliced
//! through, HTTP/2 and TLS viewers, event streams as they are sent, the
//! signed viewer header, and plain HTTP refused from unlisted peers.

use super::*;

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

/// Requests to an app ride kept connections: five in a row, each from a
/// new viewer connection, reach the app over one or two of the ingress's
/// (a connection is taken again once its last answer was read to the end).
#[tokio::test]
async fn requests_to_an_app_reuse_kept_connections() {
    let app = app().await;
    let h = harness(app.port(), "127.0.0.1/32").await;
    let token = h.keys.viewer("ann", Some("acme"), now());
    let bearer = format!("Bearer {token}");
    let mut peers = std::collections::BTreeSet::new();
    for _ in 0..5 {
        let answer = h
            .send(get("demo.apps.test", "/", &[("authorization", &bearer)]))
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        peers.insert(answer.echoed()["peer"].as_u64().expect("peer"));
    }
    assert!(peers.len() <= 2, "app connections used: {peers:?}");
}
