//! A mock OAuth 2.0 token endpoint for the credential tests: HTTPS on a
//! loopback port 0 with a certificate from a test CA, on its own tokio
//! runtime, counting and recording every token request.
//!
//! Routes (all `POST`):
//! - `/token`: 200 with a fresh `access_token` (`tok-<n>-<random>`, `n`
//!   counting from 1), `token_type: Bearer` and `expires_in` taken from
//!   the `lifetimes` of [`TokenEndpoint::start`] (the n-th request gets
//!   the n-th entry, the last entry repeating).
//! - `/rotate`: as `/token`, with a new `refresh_token` (`rt-<n>`) each
//!   time, as endpoints that rotate refresh tokens answer.
//! - `/fail`: 503 with a JSON error body.
//! - `/badjson`: 200 with a body that is not JSON.

use std::{
    convert::Infallible,
    net::{Ipv4Addr, SocketAddr},
    sync::{Arc, Mutex},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, StatusCode, body::Incoming, service::service_fn};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::TestCa;

/// One token request as the endpoint saw it.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    pub path: String,
    pub authorization: Option<String>,
    /// The form body, as sent.
    pub form: String,
}

impl TokenRequest {
    /// The decoded value of form field `key`.
    pub fn field(&self, key: &str) -> Option<String> {
        self.form
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(k, _)| *k == key)
            .map(|(_, v)| percent_decode(v))
    }
}

#[derive(Default)]
struct State {
    requests: Mutex<Vec<TokenRequest>>,
    issued: Mutex<Vec<String>>,
    lifetimes: Vec<u64>,
}

/// The endpoint; dropping it stops the server.
pub struct TokenEndpoint {
    addr: SocketAddr,
    state: Arc<State>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl TokenEndpoint {
    /// Serves `name` (a certificate from `ca`) on 127.0.0.1; the n-th token
    /// lives `lifetimes[n-1]` seconds (the last entry repeating).
    pub fn start(name: &str, ca: &TestCa, lifetimes: &[u64]) -> TokenEndpoint {
        let issued = ca.issue(&[name]);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(issued.chain, issued.key)
            .expect("server certificate");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("test-token-endpoint")
            .enable_all()
            .build()
            .expect("tokio runtime");
        let std_listener =
            std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind token endpoint");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let addr = std_listener.local_addr().expect("local_addr");
        let state = Arc::new(State {
            lifetimes: lifetimes.to_vec(),
            ..State::default()
        });
        let listener = {
            let _guard = runtime.enter();
            TcpListener::from_std(std_listener).expect("tokio listener")
        };
        runtime.spawn(accept_loop(listener, acceptor, state.clone()));
        TokenEndpoint {
            addr,
            state,
            runtime: Some(runtime),
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every token request so far, in arrival order.
    pub fn requests(&self) -> Vec<TokenRequest> {
        self.state.requests.lock().expect("requests").clone()
    }

    /// Requests to `path`.
    pub fn count(&self, path: &str) -> usize {
        self.requests().iter().filter(|r| r.path == path).count()
    }

    /// Every access token issued, in order.
    pub fn issued(&self) -> Vec<String> {
        self.state.issued.lock().expect("issued").clone()
    }
}

impl Drop for TokenEndpoint {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn accept_loop(listener: TcpListener, acceptor: TlsAcceptor, state: Arc<State>) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let (acceptor, state) = (acceptor.clone(), state.clone());
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service = service_fn(move |req| route(req, state.clone()));
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}

async fn route(
    req: Request<Incoming>,
    state: Arc<State>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_owned();
    let authorization = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let form = match req.into_body().collect().await {
        Ok(body) => String::from_utf8_lossy(&body.to_bytes()).into_owned(),
        Err(_) => String::new(),
    };
    state.requests.lock().expect("requests").push(TokenRequest {
        path: path.clone(),
        authorization,
        form,
    });
    let (status, body) = match path.as_str() {
        "/token" | "/rotate" => {
            let mut issued = state.issued.lock().expect("issued");
            let n = issued.len() + 1;
            let token = format!("tok-{n}-{}", crate::unique_name("x").replace('-', ""));
            issued.push(token.clone());
            let lifetime = state
                .lifetimes
                .get(n - 1)
                .or(state.lifetimes.last())
                .copied()
                .unwrap_or(3600);
            let mut json = serde_json::json!({
                "access_token": token,
                "token_type": "Bearer",
                "expires_in": lifetime,
            });
            if path == "/rotate" {
                json["refresh_token"] = format!("rt-{n}").into();
            }
            (StatusCode::OK, json.to_string())
        }
        "/fail" => (
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"error":"temporarily_unavailable"}"#.to_owned(),
        ),
        "/badjson" => (StatusCode::OK, "<html>not a token</html>".to_owned()),
        _ => (StatusCode::NOT_FOUND, String::new()),
    };
    let response = Response::builder()
        .status(status)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("response");
    Ok(response)
}

/// Decodes `%XX` and `+` of a form value.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Spec `{host, port, cafile, n, header}`: `n` threads start together
/// (a barrier), each with its own TLS connection and one `GET /echo`
/// carrying `header` (`Name: value`). Prints `{statuses: [...]}`.
pub const CONCURRENT_WITH_HEADER: &str = r#"
import json, socket, ssl, sys, threading
spec = json.loads(sys.argv[1])
host, port, n = spec["host"], int(spec["port"]), int(spec["n"])
addr = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
ctx = ssl.create_default_context(cafile=spec["cafile"])
ctx.set_alpn_protocols(["http/1.1"])
barrier = threading.Barrier(n, timeout=30)
statuses = [None] * n
def one(i):
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        pass
    try:
        s = ctx.wrap_socket(socket.create_connection((addr, port), timeout=30), server_hostname=host)
        s.sendall(f"GET /echo?i={i} HTTP/1.1\r\nHost: {host}:{port}\r\n{spec['header']}\r\nConnection: close\r\n\r\n".encode())
        buf = b""
        while True:
            c = s.recv(65536)
            if not c:
                break
            buf += c
        s.close()
        statuses[i] = int(buf.split(b" ", 2)[1])
    except Exception as e:
        statuses[i] = str(e)
threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"statuses": statuses}))
sys.exit(0 if all(s == 200 for s in statuses) else 1)
"#;

/// `argv`: secret key, region, service, method, path (with query), host,
/// a JSON object of the request's headers (lower-case names), and the
/// `Authorization` value. Recomputes the SigV4 signature from the spec with
/// the standard library only and prints `ok` or what differed.
pub const SIGV4_VERIFY: &str = r#"
import hashlib, hmac, json, sys, urllib.parse
secret, region, service, method, path, host, headers, auth = sys.argv[1:9]
headers = json.loads(headers)
headers["host"] = host
algo, _, rest = auth.partition(" ")
fields = dict(p.strip().split("=", 1) for p in rest.split(","))
scope = fields["Credential"].split("/", 1)[1]
day, s_region, s_service, terminal = scope.split("/")
signed = fields["SignedHeaders"].split(";")
assert algo == "AWS4-HMAC-SHA256", algo
assert (s_region, s_service, terminal) == (region, service, "aws4_request"), scope
assert signed == sorted(signed) and "host" in signed and "x-amz-date" in signed, signed
raw_path, _, query = path.partition("?")
pairs = sorted(p.partition("=") for p in query.split("&") if p)
canonical_query = "&".join(f"{k}={v}" for k, _, v in pairs)
canonical_headers = "".join(f"{h}:{' '.join(headers[h].split())}\n" for h in signed)
payload = headers["x-amz-content-sha256"]
canonical = "\n".join([method, raw_path, canonical_query, canonical_headers, ";".join(signed), payload])
date = headers["x-amz-date"]
assert date.startswith(day), (date, day)
to_sign = "\n".join(["AWS4-HMAC-SHA256", date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
key = ("AWS4" + secret).encode()
for part in (day, region, service, "aws4_request"):
    key = hmac.new(key, part.encode(), hashlib.sha256).digest()
want = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
print("ok" if want == fields["Signature"] else f"signature {fields['Signature']} != {want}\n{canonical}")
"#;
