//! The outbound client against loopback servers (plain and TLS with a test
//! CA), resolved from static hosts: nothing leaves the machine.

use std::collections::BTreeMap;

use hyper::Method;
use tokio::{
    io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _},
    net::TcpListener,
    sync::oneshot,
};

use super::*;

const LIMITS: Limits = Limits {
    deadline: Duration::from_secs(5),
    max_answer: 4 << 10,
};

const OK: &str = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

fn client(hosts: &[(&str, IpAddr)], tls: Arc<rustls::ClientConfig>) -> Client {
    let hosts: BTreeMap<String, Vec<IpAddr>> = hosts
        .iter()
        .map(|(name, ip)| ((*name).to_owned(), vec![*ip]))
        .collect();
    Client::new(Arc::new(Resolver::static_only(&hosts)), tls)
}

fn post(url: &str) -> Request<Full<Bytes>> {
    let mut request = Request::new(Full::new(Bytes::from_static(b"{}")));
    *request.method_mut() = Method::POST;
    *request.uri_mut() = url.parse().expect("url");
    request
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A loopback server for one connection (TLS with `tls`): it reads the
/// request head and hands it over, answers `head` then `chunks` chunks of
/// 4 KiB, and holds the connection open until the client drops it.
async fn server(
    tls: Option<Arc<rustls::ServerConfig>>,
    head: &'static str,
    chunks: usize,
) -> (u16, oneshot::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (seen, heard) = oneshot::channel();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        let mut stream: Box<dyn Io> = match tls {
            Some(config) => match tokio_rustls::TlsAcceptor::from(config).accept(tcp).await {
                Ok(stream) => Box::new(stream),
                Err(_) => return,
            },
            None => Box::new(tcp),
        };
        let mut request = Vec::new();
        let mut buf = vec![0; 16 << 10];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => request.extend_from_slice(&buf[..n]),
            }
        }
        let _ = seen.send(String::from_utf8_lossy(&request).into_owned());
        stream.write_all(head.as_bytes()).await.expect("head");
        let chunk = format!("{:x}\r\n{}\r\n", 4096, "x".repeat(4096));
        for _ in 0..chunks {
            if stream.write_all(chunk.as_bytes()).await.is_err() {
                return;
            }
        }
        let _ = stream.flush().await;
        let _ = stream.read(&mut buf).await;
    });
    (port, heard)
}

const LOOPBACK: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

#[tokio::test]
async fn the_request_goes_in_origin_form_to_the_authority_as_written() {
    let (port, heard) = server(None, OK, 0).await;
    let client = client(&[("hook.test", LOOPBACK)], crate::tls::trusting_nothing());
    let url = format!("http://hook.test:{port}/hooks/sluice?token=t");
    let answer = client.send(post(&url), LIMITS).await.expect("answer");
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.body, Ok(Bytes::from_static(b"ok")));
    let head = heard.await.expect("request").to_ascii_lowercase();
    assert!(
        head.starts_with("post /hooks/sluice?token=t http/1.1\r\n"),
        "{head}"
    );
    assert!(
        head.contains(&format!("\r\nhost: hook.test:{port}\r\n")),
        "{head}"
    );
}

#[tokio::test]
async fn plain_http_goes_to_loopback_only() {
    let private: IpAddr = "10.0.0.1".parse().expect("ip");
    let client = client(&[("cp.test", private)], crate::tls::trusting_nothing());
    // Refused before any connection: 10.0.0.1 is never dialled.
    for url in ["http://cp.test/hook", "http://10.0.0.1:9/hook"] {
        let err = client.send(post(url), LIMITS).await.expect_err(url);
        assert!(
            matches!(err, OutboundError::PlainHttp(ip) if ip == private),
            "{url}: {err}"
        );
    }
}

#[tokio::test]
async fn urls_it_cannot_send_to_are_refused() {
    let client = client(&[], crate::tls::trusting_nothing());
    for url in [
        "ftp://127.0.0.1/",
        "/relative",
        "http://user:pass@127.0.0.1:9/hook",
    ] {
        let err = client.send(post(url), LIMITS).await.expect_err(url);
        assert!(matches!(err, OutboundError::BadUrl), "{url}: {err}");
    }
}

#[tokio::test]
async fn unresolved_and_unreachable_names_say_which() {
    // A port nothing listens on: bound, then closed.
    let closed = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let client = client(&[("down.test", LOOPBACK)], crate::tls::trusting_nothing());
    let cases = [
        (
            "https://nowhere.test/token".to_owned(),
            "nowhere.test: no such name",
        ),
        (
            format!("https://down.test:{port}/token"),
            "cannot connect to 127.0.0.1:",
        ),
    ];
    for (url, want) in cases {
        let err = client.send(post(&url), LIMITS).await.expect_err(&url);
        assert!(err.to_string().contains(want), "{url}: {err}");
    }
}

#[tokio::test]
async fn a_long_answer_is_cut_at_the_bound_and_keeps_its_status() {
    // 8 MiB and no end: reading it all would end only at the deadline.
    let head = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
    let (port, _heard) = server(None, head, 2 << 10).await;
    let client = client(&[], crate::tls::trusting_nothing());
    let url = format!("http://127.0.0.1:{port}/");
    let answer = client.send(post(&url), LIMITS).await.expect("answer");
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.body, Err(BodyError::TooLarge(LIMITS.max_answer)));
}

#[tokio::test]
async fn no_answer_within_the_deadline_is_a_timeout() {
    // Reads the request, never answers.
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.expect("accept");
        let mut buf = vec![0; 1024];
        while tcp.read(&mut buf).await.is_ok_and(|n| n > 0) {}
    });
    let client = client(&[], crate::tls::trusting_nothing());
    let limits = Limits {
        deadline: Duration::from_millis(200),
        ..LIMITS
    };
    let url = format!("http://127.0.0.1:{port}/");
    let err = client.send(post(&url), limits).await.expect_err("timeout");
    assert!(matches!(err, OutboundError::Timeout(_)), "{err}");
}

#[tokio::test]
async fn https_is_verified_against_the_upstream_ca_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = Arc::new(crate::tls::Ca::init(dir.path()).expect("CA"));
    let minted = prometheus::IntCounter::new("minted", "leaves").expect("counter");
    let minter = crate::tls::Minter::new(ca, 8, Duration::from_secs(3600), minted);
    let leaf = minter.leaf("tokens.test").await.expect("leaf");
    let server_config = minter.server_config(leaf);
    let ca_file = crate::tls::Ca::cert_path(dir.path());
    let trusted = crate::tls::client_config(false, &[ca_file], vec![b"http/1.1".to_vec()])
        .expect("client config");

    let (port, _heard) = server(Some(server_config.clone()), OK, 0).await;
    let client = client(&[("tokens.test", LOOPBACK)], trusted);
    let url = format!("https://tokens.test:{port}/token");
    let answer = client.send(post(&url), LIMITS).await.expect("answer");
    assert_eq!(answer.body, Ok(Bytes::from_static(b"ok")));

    let (port, _heard) = server(Some(server_config), OK, 0).await;
    let untrusting = self::client(&[("tokens.test", LOOPBACK)], crate::tls::trusting_nothing());
    let url = format!("https://tokens.test:{port}/token");
    let err = untrusting
        .send(post(&url), LIMITS)
        .await
        .expect_err("untrusted");
    assert!(matches!(err, OutboundError::Tls(_)), "{err}");
    assert!(
        err.to_string().contains("not signed by a trusted CA"),
        "{err}"
    );
}
