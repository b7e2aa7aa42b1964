//! An HTTPS (or plain HTTP) upstream for interception tests: rustls and
//! hyper on a loopback port 0, ALPN `h2` and `http/1.1`, on its own tokio
//! runtime so synchronous tests can drive it.
//!
//! It records every request when its head arrives (so a request that was
//! forwarded but never finished still shows), and every TLS handshake (the
//! SNI and ALPN Sluice sent). Routes:
//! - `/echo`: 200, JSON `{method, path, version, headers, body_len}`.
//! - `/sse`: `text/event-stream`: `data: one`, then waits for an ack (a
//!   request to `/ack`, or [`HttpsUpstream::ack`]) up to 10 s, sending
//!   `data: timeout` if none came, then `data: two`, and ends.
//! - `/ack`: 200, counts an ack.
//! - `/ws`: WebSocket-style upgrade (101 with the right
//!   `Sec-WebSocket-Accept`), then echoes every byte; `?auth=1` sends the
//!   request's Authorization back in frames instead.
//! - `/redirect`: 302 to `/echo` with the request's Authorization in the
//!   query; `?to=URL` (percent-encoded): 302 to `URL` instead.
//! - `/bytes?n=N`: N bytes of [`crate::stream_body::pattern_chunks`],
//!   streamed.
//! - `POST /upload`: reads the body streaming; JSON `{len, sha256}`.

use std::{
    collections::BTreeMap,
    convert::Infallible,
    io::Write as _,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use flate2::{Compression, write::GzEncoder};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{
    Request, Response, StatusCode, body::Incoming, ext::ReasonPhrase, header, service::service_fn,
};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
};
use serde_json::json;
use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::TcpListener,
    sync::{mpsc, watch},
};
use tokio_rustls::TlsAcceptor;

use crate::{
    eventually, llm_mock,
    pki::{Sha256, TestCa, Validity},
    stream_body::{ChannelBody, PatternBody},
};

/// How long `/sse` waits for an ack before it gives up and says so.
pub const SSE_ACK_WAIT: Duration = Duration::from_secs(10);

/// One request as the upstream saw it.
#[derive(Debug, Clone)]
pub struct RequestRecord {
    pub method: String,
    /// Path and query.
    pub path: String,
    /// `HTTP/1.1`, `HTTP/2.0`.
    pub version: String,
    /// Names lower-case, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The SNI of the connection it came on (`None` for plain HTTP).
    pub sni: Option<String>,
    /// Body bytes read so far (routes that read the body).
    pub body_len: u64,
    /// SHA-256 of the body, once it was read to the end.
    pub body_sha256: Option<String>,
    /// The body `/echo` answered with.
    pub response_body: Option<Vec<u8>>,
    /// The request body, for routes that keep it (`/llm`).
    pub body: Option<Vec<u8>>,
}

impl RequestRecord {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One completed TLS handshake.
#[derive(Debug, Clone)]
pub struct Handshake {
    pub sni: Option<String>,
    pub alpn: Option<String>,
}

/// What a test can ask for besides the defaults (TLS, a current
/// certificate for the upstream's own names from the given CA).
#[derive(Debug, Clone, Default)]
pub struct UpstreamOptions {
    /// Plain HTTP (HTTP/1.1 or h2c) instead of TLS.
    pub plain: bool,
    /// Names on the certificate instead of the upstream's names.
    pub cert_names: Option<Vec<String>>,
    pub validity: Validity,
    /// This port instead of a free one (an upstream restarted where it was).
    pub port: Option<u16>,
}

struct State {
    requests: Mutex<Vec<RequestRecord>>,
    handshakes: Mutex<Vec<Handshake>>,
    tls_failures: Mutex<Vec<String>>,
    connections: AtomicUsize,
    ws_echoed: AtomicU64,
    acks: watch::Sender<u64>,
}

impl State {
    fn push(&self, record: RequestRecord) -> usize {
        let mut requests = self.requests.lock().expect("requests");
        requests.push(record);
        requests.len() - 1
    }

    fn update(&self, index: usize, f: impl FnOnce(&mut RequestRecord)) {
        f(&mut self.requests.lock().expect("requests")[index]);
    }
}

/// The upstream; dropping it stops the server.
pub struct HttpsUpstream {
    addr: SocketAddr,
    names: Vec<String>,
    state: Arc<State>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl HttpsUpstream {
    /// Serves on `ip`, a free port, with a certificate from `ca` for
    /// `names` (or as `options` say).
    pub fn start(
        ip: IpAddr,
        names: &[&str],
        ca: &TestCa,
        options: UpstreamOptions,
    ) -> HttpsUpstream {
        let acceptor = (!options.plain).then(|| {
            let cert_names: Vec<&str> = match &options.cert_names {
                Some(other) => other.iter().map(String::as_str).collect(),
                None => names.to_vec(),
            };
            let issued = ca.issue_with(&cert_names, options.validity);
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("TLS versions")
                .with_no_client_auth()
                .with_single_cert(issued.chain, issued.key)
                .expect("server certificate");
            config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            TlsAcceptor::from(Arc::new(config))
        });
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("test-upstream")
            .enable_all()
            .build()
            .expect("tokio runtime");
        let std_listener =
            std::net::TcpListener::bind(SocketAddr::new(ip, options.port.unwrap_or(0)))
                .unwrap_or_else(|e| panic!("bind upstream on {ip}: {e}"));
        std_listener.set_nonblocking(true).expect("nonblocking");
        let addr = std_listener.local_addr().expect("local_addr");
        let (acks, _) = watch::channel(0);
        let state = Arc::new(State {
            requests: Mutex::default(),
            handshakes: Mutex::default(),
            tls_failures: Mutex::default(),
            connections: AtomicUsize::new(0),
            ws_echoed: AtomicU64::new(0),
            acks,
        });
        let listener = {
            let _guard = runtime.enter();
            TcpListener::from_std(std_listener).expect("tokio listener")
        };
        runtime.spawn(accept_loop(listener, acceptor, state.clone()));
        HttpsUpstream {
            addr,
            names: names.iter().map(|n| (*n).to_owned()).collect(),
            state,
            runtime: Some(runtime),
        }
    }

    /// TLS on 127.0.0.1 with a current certificate for `names` from `ca`.
    pub fn v4(names: &[&str], ca: &TestCa) -> HttpsUpstream {
        HttpsUpstream::start(
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            names,
            ca,
            UpstreamOptions::default(),
        )
    }

    /// Plain HTTP on 127.0.0.1.
    pub fn plain_v4() -> HttpsUpstream {
        // The CA is never used without TLS; a fresh one keeps the signature.
        HttpsUpstream::start(
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            &[],
            &TestCa::new("unused"),
            UpstreamOptions {
                plain: true,
                ..UpstreamOptions::default()
            },
        )
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn requests(&self) -> Vec<RequestRecord> {
        self.state.requests.lock().expect("requests").clone()
    }

    pub fn request_count(&self) -> usize {
        self.state.requests.lock().expect("requests").len()
    }

    /// TCP connections accepted (before any TLS).
    pub fn connection_count(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    pub fn handshakes(&self) -> Vec<Handshake> {
        self.state.handshakes.lock().expect("handshakes").clone()
    }

    /// Why TLS handshakes failed (as rustls saw it).
    pub fn tls_failures(&self) -> Vec<String> {
        self.state
            .tls_failures
            .lock()
            .expect("tls failures")
            .clone()
    }

    /// Bytes echoed on upgraded (`/ws`) connections.
    pub fn ws_echoed(&self) -> u64 {
        self.state.ws_echoed.load(Ordering::SeqCst)
    }

    /// Lets a waiting `/sse` stream go on, as a request to `/ack` would.
    pub fn ack(&self) {
        self.state.acks.send_modify(|n| *n += 1);
    }

    /// Waits until at least `n` requests arrived; returns all of them.
    pub fn wait_requests(&self, n: usize, timeout: Duration) -> Vec<RequestRecord> {
        eventually(
            &format!("{n} request(s) at upstream {}", self.addr),
            timeout,
            || {
                let requests = self.requests();
                if requests.len() >= n {
                    Ok(requests)
                } else {
                    Err(format!("{} request(s): {requests:?}", requests.len()))
                }
            },
        )
    }
}

impl Drop for HttpsUpstream {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Upgraded connections may still be echoing; do not wait for them.
            runtime.shutdown_background();
        }
    }
}

async fn accept_loop(listener: TcpListener, acceptor: Option<TlsAcceptor>, state: Arc<State>) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        state.connections.fetch_add(1, Ordering::SeqCst);
        let _ = tcp.set_nodelay(true);
        let (acceptor, state) = (acceptor.clone(), state.clone());
        tokio::spawn(async move {
            let Some(acceptor) = acceptor else {
                serve_http(tcp, None, state).await;
                return;
            };
            match acceptor.accept(tcp).await {
                Ok(tls) => {
                    let (_, conn) = tls.get_ref();
                    let handshake = Handshake {
                        sni: conn.server_name().map(str::to_owned),
                        alpn: conn
                            .alpn_protocol()
                            .map(|p| String::from_utf8_lossy(p).into_owned()),
                    };
                    let sni = handshake.sni.clone();
                    state.handshakes.lock().expect("handshakes").push(handshake);
                    serve_http(tls, sni, state).await;
                }
                Err(e) => state
                    .tls_failures
                    .lock()
                    .expect("tls failures")
                    .push(e.to_string()),
            }
        });
    }
}

async fn serve_http<I>(io: I, sni: Option<String>, state: Arc<State>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let sni = Arc::new(sni);
    let service = service_fn(move |req| route(req, sni.clone(), state.clone()));
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http2().adaptive_window(true);
    let _ = builder
        .serve_connection_with_upgrades(TokioIo::new(io), service)
        .await;
}

type ResponseBody = BoxBody<Bytes, Infallible>;

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<ResponseBody> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(Full::new(body.into()).boxed())
        .expect("response")
}

async fn route(
    mut req: Request<Incoming>,
    sni: Arc<Option<String>>,
    state: Arc<State>,
) -> Result<Response<ResponseBody>, Infallible> {
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| req.uri().path().to_owned());
    let record = RequestRecord {
        method: req.method().as_str().to_owned(),
        path: path.clone(),
        version: format!("{:?}", req.version()),
        headers: req
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        sni: (*sni).clone(),
        body_len: 0,
        body_sha256: None,
        response_body: None,
        body: None,
    };
    let index = state.push(record.clone());
    let route = req.uri().path().to_owned();
    let response = match route.as_str() {
        "/echo" => {
            let (len, sha) = read_body(req.into_body(), &state, index).await;
            let headers: BTreeMap<&str, &str> = record
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect();
            let body = json!({
                "method": record.method,
                "path": record.path,
                "version": record.version,
                "headers": headers,
                "body_len": len,
                "body_sha256": sha,
            })
            .to_string()
            .into_bytes();
            state.update(index, |r| r.response_body = Some(body.clone()));
            let mut response = if query_u64(&record.path, "gzip") == Some(1) {
                // Compressed whatever the request's Accept-Encoding says,
                // as some servers do.
                let mut gz = GzEncoder::new(Vec::new(), Compression::default());
                gz.write_all(&body).expect("gzip in memory");
                let gzipped = gz.finish().expect("gzip in memory");
                let mut response = full(StatusCode::OK, "application/json", gzipped);
                let gzip = header::HeaderValue::from_static("gzip");
                response
                    .headers_mut()
                    .insert(header::CONTENT_ENCODING, gzip);
                response
            } else {
                full(StatusCode::OK, "application/json", body)
            };
            if query_u64(&record.path, "partial") == Some(1) {
                // A part of the answer (206), asked for or not.
                *response.status_mut() = StatusCode::PARTIAL_CONTENT;
            }
            if query_u64(&record.path, "reason") == Some(1) {
                // The request's Authorization in the HTTP/1.1 status line.
                let auth = headers.get("authorization").copied().unwrap_or_default();
                if let Ok(reason) = ReasonPhrase::try_from(format!("OK {auth}")) {
                    response.extensions_mut().insert(reason);
                }
            }
            response
        }
        "/redirect" => {
            // A 302 whose Location carries the request's Authorization
            // (some servers put a token in the next URL).
            let auth = record
                .headers
                .iter()
                .find(|(n, _)| n == "authorization")
                .map(|(_, v)| v.replace(' ', "%20"))
                .unwrap_or_default();
            let mut response = full(StatusCode::FOUND, "text/plain", "moved\n");
            let location = match query_str(&record.path, "to") {
                Some(to) => to,
                None => format!("/echo?from=redirect&auth={auth}"),
            };
            if let Ok(location) = header::HeaderValue::from_str(&location) {
                response.headers_mut().insert(header::LOCATION, location);
            }
            response
        }
        "/ack" => {
            state.acks.send_modify(|n| *n += 1);
            full(StatusCode::OK, "text/plain", "ok\n")
        }
        "/sse" => sse(&state),
        "/ws" => websocket(&mut req, &state),
        "/bytes" => {
            let n = query_u64(&path, "n").unwrap_or(0);
            Response::builder()
                .status(StatusCode::OK)
                .header(header::CONTENT_TYPE, "application/octet-stream")
                .header(header::CONTENT_LENGTH, n)
                .body(PatternBody::new(n).boxed())
                .expect("response")
        }
        "/upload" => {
            let (len, sha) = read_body(req.into_body(), &state, index).await;
            let body = json!({ "len": len, "sha256": sha }).to_string();
            full(StatusCode::OK, "application/json", body)
        }
        // `/v1/chat/completions`: the same, where a model API is recognised
        // by its path (injection scoring's `requests: llm_apis`).
        "/llm" | "/v1/chat/completions" => {
            let body = match req.into_body().collect().await {
                Ok(collected) => collected.to_bytes().to_vec(),
                Err(_) => Vec::new(),
            };
            state.update(index, |r| {
                r.body_len = body.len() as u64;
                r.body = Some(body.clone());
            });
            llm_mock::answer(&path, &body)
        }
        "/text" => llm_mock::text(&path),
        _ => full(StatusCode::NOT_FOUND, "text/plain", "no such route\n"),
    };
    Ok(response)
}

/// Reads a body to its end, streaming; records and returns its length and
/// SHA-256 (`None` when the body failed midway).
async fn read_body(mut body: Incoming, state: &State, index: usize) -> (u64, Option<String>) {
    let mut len = 0u64;
    let mut sha = Sha256::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            state.update(index, |r| r.body_len = len);
            return (len, None);
        };
        if let Ok(data) = frame.into_data() {
            len += data.len() as u64;
            sha.update(&data);
        }
    }
    let hex = sha.hex();
    state.update(index, |r| {
        r.body_len = len;
        r.body_sha256 = Some(hex.clone());
    });
    (len, Some(hex))
}

/// The value of `key` in `path`'s query, percent-decoded.
fn query_str(path: &str, key: &str) -> Option<String> {
    let (_, query) = path.split_once('?')?;
    let (_, value) = query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)?;
    let mut out = Vec::with_capacity(value.len());
    let mut bytes = value.bytes();
    while let Some(b) = bytes.next() {
        let hex = |b: Option<u8>| (b? as char).to_digit(16);
        match b {
            b'%' => {
                let (hi, lo) = (hex(bytes.next())?, hex(bytes.next())?);
                out.push((hi * 16 + lo) as u8);
            }
            b => out.push(b),
        }
    }
    String::from_utf8(out).ok()
}

fn query_u64(path: &str, key: &str) -> Option<u64> {
    let (_, query) = path.split_once('?')?;
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.parse().ok())
}

fn sse(state: &Arc<State>) -> Response<ResponseBody> {
    let (tx, rx) = mpsc::channel(4);
    let mut acks = state.acks.subscribe();
    let seen = *acks.borrow_and_update();
    tokio::spawn(async move {
        if tx.send(Bytes::from_static(b"data: one\n\n")).await.is_err() {
            return;
        }
        let acked = matches!(
            tokio::time::timeout(SSE_ACK_WAIT, acks.wait_for(|n| *n > seen)).await,
            Ok(Ok(_))
        );
        if !acked {
            let _ = tx.send(Bytes::from_static(b"data: timeout\n\n")).await;
        }
        let _ = tx.send(Bytes::from_static(b"data: two\n\n")).await;
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(ChannelBody(rx).boxed())
        .expect("response")
}

fn websocket(req: &mut Request<Incoming>, state: &Arc<State>) -> Response<ResponseBody> {
    let wants_websocket = req
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let key = req
        .headers()
        .get(header::SEC_WEBSOCKET_KEY)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (true, Some(key)) = (wants_websocket, key) else {
        return full(
            StatusCode::BAD_REQUEST,
            "text/plain",
            "not a websocket upgrade\n",
        );
    };
    let upgrade = hyper::upgrade::on(&mut *req);
    let state = state.clone();
    if query_u64(&req.uri().to_string(), "auth") == Some(1) {
        let auth = req
            .headers()
            .get(header::AUTHORIZATION)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default();
        tokio::spawn(async move {
            let Ok(upgraded) = upgrade.await else { return };
            send_auth_frames(TokioIo::new(upgraded), &auth).await;
        });
        return switching_to_websocket(&key);
    }
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else { return };
        let (mut reader, mut writer) = tokio::io::split(TokioIo::new(upgraded));
        let mut buf = vec![0u8; 64 * 1024];
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if writer.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    state.ws_echoed.fetch_add(n as u64, Ordering::SeqCst);
                }
            }
        }
        let _ = writer.shutdown().await;
    });
    switching_to_websocket(&key)
}

/// `/ws?auth=1`: the request's Authorization sent back in every kind of
/// frame a server sends, each in its own write: a text message, one
/// fragmented around a ping, and a close reason.
async fn send_auth_frames(mut io: impl tokio::io::AsyncWrite + Unpin, auth: &str) {
    use tokio::io::AsyncWriteExt;
    fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![u8::from(fin) << 7 | opcode];
        match payload.len() {
            n @ 0..=125 => out.push(n as u8),
            n => {
                out.push(126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
        }
        out.extend_from_slice(payload);
        out
    }
    let half = auth.len() / 2;
    let mut close = 1000_u16.to_be_bytes().to_vec();
    close.extend(format!("bye {auth}").bytes().take(123));
    let frames = [
        frame(true, 0x1, format!("auth: {auth}").as_bytes()),
        frame(false, 0x1, format!("echo: {}", &auth[..half]).as_bytes()),
        frame(true, 0x9, auth.as_bytes()),
        frame(true, 0x0, format!("{}.", &auth[half..]).as_bytes()),
        frame(true, 0x8, &close),
    ];
    for frame in frames {
        if io.write_all(&frame).await.is_err() || io.flush().await.is_err() {
            return;
        }
    }
    let _ = io.shutdown().await;
}

fn switching_to_websocket(key: &str) -> Response<ResponseBody> {
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::UPGRADE, "websocket")
        .header(header::CONNECTION, "Upgrade")
        .header(
            header::SEC_WEBSOCKET_ACCEPT,
            crate::pki::websocket_accept(key),
        )
        .body(Full::new(Bytes::new()).boxed())
        .expect("response")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_found_by_key() {
        assert_eq!(query_u64("/bytes?x=1&n=42", "n"), Some(42));
        assert_eq!(query_u64("/bytes", "n"), None);
        assert_eq!(
            query_str("/redirect?to=/echo%3Fhop%3D2&x=1", "to").as_deref(),
            Some("/echo?hop=2")
        );
        assert_eq!(query_str("/redirect", "to"), None);
    }
}
