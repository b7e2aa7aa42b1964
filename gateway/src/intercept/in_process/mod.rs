//! In-process tests of interception, without root or eBPF: the
//! interceptor the daemon builds (`daemon::interceptor`), a policy and
//! config compiled from YAML as the daemon loads them, plain HTTP/1.1
//! requests served by `Interceptor::plain` and forwarded to a test upstream
//! on 127.0.0.1 that records what it received. Each file holds the table
//! of one stage's outcomes or refusals; `order` holds the tests that fail
//! when two stages are swapped; `keep_alive` holds those of connections
//! kept alive, parked between their requests.

mod apps;
mod content;
mod credentials;
mod keep_alive;
mod network_rule;
mod order;
mod redirects;
mod refusals;

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    path::Path,
    sync::{Arc, Mutex},
};

use http_body_util::{BodyExt as _, Full};
use hyper::{
    HeaderMap, Request, Response, StatusCode,
    body::{Bytes, Incoming},
    service::service_fn,
};
use hyper_util::rt::TokioIo;
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpListener, TcpStream},
    sync::watch,
};

use super::{Interceptor, prefixed::Prefixed};
use crate::{
    apps::Catalogue,
    audit::Audit,
    config::Config,
    conn::{Standing, Who},
    dns,
    drain::Drain,
    metrics::Metrics,
    policy::{compiled::CompiledPolicy, store::PolicyStore},
    resolve::Resolver,
};

/// The name every test request asks for; the upstream answers for it.
const HOST: &str = "api.test";
/// The secret of the `api` credential (bearer, toward `api.test` only).
/// Shaped as a GitHub token, so PII's `github_token` finds it by its
/// shape (and not the placeholder, which has none).
const SECRET: &str = "ghp_5f3e9a1c7b2d4e6f8091a2b3c4d5e6f7a8b9";
const SANDBOX: &str = "sb1";
/// The catalogued app's host: apart from `HOST`, whose tests would
/// otherwise all meet the app (under `apps.default: ask`, parked).
const APP_HOST: &str = "tracker.test";

/// The daemon config around every test: the CA and state in a temporary
/// directory, one bearer credential read from a file, one catalogued app
/// (on `APP_HOST`).
const CONFIG: &str = r#"
tls: {ca_dir: "DIR/state/ca", system_roots: false, upstream_ca_files: ["CA_CERT"]}
state_dir: "DIR/state"
policy_dir: "DIR/policies"
credentials:
  - name: api
    source: {file: "DIR/secret"}
    hosts: [api.test]
    scheme: {type: bearer}
approvals: {timeout_ms: 500}
apps:
  - name: tracker
    hosts: [tracker.test]
    actions:
      - {name: issues.read, method: GET, path: "/issues/**"}
      - {name: issues.create, method: POST, path: "/issues"}
      - {name: repo.delete, method: DELETE, path: "/repo/**"}
"#;

/// The network section every test policy starts with: the upstream is on
/// loopback, which the SSRF guard would refuse were it asked (the
/// listener decided the connection before the interceptor saw it).
const NETWORK: &str = "network:\n  allow_out: [api.test]\n  deny_out: [ALL_TRAFFIC]\n  ssrf_guard: false\n  decide_without_decryption: false\n";

/// A request the test upstream received.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    headers: HeaderMap,
    body: String,
}

/// What the test upstream answers a request it received.
type Answer = Arc<dyn Fn(&Seen) -> Response<Full<Bytes>> + Send + Sync>;

/// Answers 200 with the request body (an echo).
fn echo() -> Answer {
    Arc::new(|seen: &Seen| Response::new(Full::from(seen.body.clone())))
}

/// Answers 200 with `body`, whatever was asked.
fn answer(body: &'static str) -> Answer {
    Arc::new(move |_: &Seen| Response::new(Full::from(body)))
}

/// An HTTP/1.1 upstream on 127.0.0.1 that records every request.
async fn upstream(answer: Answer) -> (SocketAddr, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (answer, log) = (answer.clone(), log.clone());
            let service = service_fn(move |request: Request<Incoming>| {
                let (answer, log) = (answer.clone(), log.clone());
                async move {
                    let (parts, body) = request.into_parts();
                    let body = body
                        .collect()
                        .await
                        .map(|b| b.to_bytes())
                        .unwrap_or_default();
                    let seen = Seen {
                        method: parts.method.to_string(),
                        headers: parts.headers,
                        body: String::from_utf8_lossy(&body).into_owned(),
                    };
                    let response = answer(&seen);
                    log.lock().expect("lock").push(seen);
                    Ok::<_, std::convert::Infallible>(response)
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    (addr, seen)
}

/// Everything always holds: no test here revokes.
struct Holds(watch::Sender<u64>);

impl Standing for Holds {
    fn changes(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }

    fn holds(&self, _: &Who) -> bool {
        true
    }
}

/// An answer the sandbox got.
#[derive(Debug)]
struct Answered {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Answered {
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

struct Harness {
    interceptor: Arc<Interceptor>,
    policy: Arc<CompiledPolicy>,
    upstream: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    metrics: Arc<Metrics>,
    audit_path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Harness {
    /// The policy `p` from `policy` (YAML after the network section), an
    /// upstream answering with `answer`.
    async fn start(policy: &str, answer: Answer) -> Harness {
        let (upstream, seen) = upstream(answer).await;
        let policy = format!("{NETWORK}{policy}");
        Harness::build(CONFIG, &policy, &BTreeMap::new(), upstream, seen)
    }

    /// The daemon's code as it starts, over `config` (a template: `DIR`
    /// the temporary directory, `CA_CERT` the CA it trusts for upstreams)
    /// with the policy `p` written whole, its resolver answering `hosts`,
    /// toward `upstream`.
    fn build(
        config: &str,
        policy: &str,
        hosts: &BTreeMap<String, Vec<std::net::IpAddr>>,
        upstream: SocketAddr,
        seen: Arc<Mutex<Vec<Seen>>>,
    ) -> Harness {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_str().expect("utf-8").to_owned();
        std::fs::write(dir.path().join("secret"), SECRET).expect("secret");
        std::fs::create_dir(dir.path().join("policies")).expect("policies");
        std::fs::write(dir.path().join("policies/p.yaml"), policy).expect("policy");
        // The upstream is plain HTTP; the trust the daemon requires is
        // its own CA, made before the daemon's code loads it. Inside
        // state_dir, as the daemon keeps it by default: made here in the
        // clear, as `sluice ca init` makes it, and sealed by the daemon's
        // code when it loads it.
        let ca_dir = dir.path().join("state/ca");
        crate::tls::ca::Ca::init(&ca_dir).expect("test CA");
        let ca_cert = crate::tls::ca::Ca::cert_path(&ca_dir);
        let text = config
            .replace("CA_CERT", ca_cert.to_str().expect("utf-8"))
            .replace("DIR", &root);
        let config = Config::parse(Path::new("test.yaml"), &text).expect("test config parses");
        let metrics = Arc::new(Metrics::new());
        let audit_path = dir.path().join("audit.jsonl");
        let audit =
            Audit::open(audit_path.to_str().expect("utf-8"), metrics.clone()).expect("audit");
        // As the daemon loads them: the catalogue, then the policies
        // compiled against it and the credentials.
        let catalogue = Arc::new(Catalogue::compile(&config.apps).expect("catalogue"));
        let store = PolicyStore::load(
            &config.policy_dir,
            catalogue.clone(),
            config.credentials.clone().into(),
            metrics.clone(),
        )
        .unwrap_or_else(|errors| panic!("test policy loads: {errors:?}"));
        let policy = store.current().get("p").expect("policy p").clone();
        let resolver = Arc::new(Resolver::static_only(hosts));
        let standing: Arc<dyn Standing> = Arc::new(Holds(watch::Sender::new(0)));
        let interceptor = crate::daemon::interceptor(
            &config,
            catalogue,
            &metrics,
            &audit,
            &Drain::new(),
            &resolver,
            standing,
        )
        .expect("interceptor");
        Harness {
            interceptor: Arc::new(interceptor),
            policy,
            upstream,
            seen,
            metrics,
            audit_path,
            _dir: dir,
        }
    }

    /// A plain-HTTP connection for `api.test`, served by the interceptor
    /// as the steered listener hands it over; `dst` (the upstream) is an
    /// address the name resolves to.
    async fn connect(&self) -> TcpStream {
        self.connect_to(HOST, true).await
    }

    /// A plain-HTTP connection decided on `name`, to the upstream's
    /// address; `named`: whether Sluice's resolver gives that address for
    /// the name (what the steered listener found).
    async fn connect_to(&self, name: &str, named: bool) -> TcpStream {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let client = TcpStream::connect(listener.local_addr().expect("addr"))
            .await
            .expect("connect");
        let (server, _) = listener.accept().await.expect("accept");
        let who = Who {
            sandbox: Arc::from(SANDBOX),
            session: None,
            policy: self.policy.clone(),
            dns: Arc::new(dns::Open),
            dry_run: false,
            tools: None,
            process: None,
            overlay: None,
            identity: Some(7),
        };
        tokio::spawn(self.interceptor.clone().plain(
            Prefixed::new(Vec::new(), server),
            who,
            self.upstream,
            name.to_owned(),
            named,
            Arc::new(()),
        ));
        client
    }

    /// Sends one request on a new connection and reads the whole answer.
    async fn send(&self, request: Request<Full<Bytes>>) -> Answered {
        self.send_to(HOST, true, request).await
    }

    /// Sends one request on a new connection decided on `name`
    /// ([`Harness::connect_to`]).
    async fn send_to(&self, name: &str, named: bool, request: Request<Full<Bytes>>) -> Answered {
        let io = TokioIo::new(self.connect_to(name, named).await);
        let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
            .await
            .expect("handshake");
        tokio::spawn(connection);
        let response = sender.send_request(request).await.expect("answered");
        let (parts, body) = response.into_parts();
        let body = body.collect().await.expect("body").to_bytes();
        Answered {
            status: parts.status,
            headers: parts.headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    /// Sends one request to the catalogued app's host, on a new connection.
    async fn send_app(&self, mut request: Request<Full<Bytes>>) -> Answered {
        let host = hyper::header::HeaderValue::from_static(APP_HOST);
        request.headers_mut().insert(hyper::header::HOST, host);
        self.send_to(APP_HOST, true, request).await
    }

    /// Writes `bytes` as they are and reads until the interceptor closes.
    async fn raw(&self, bytes: &[u8]) -> String {
        let mut stream = self.connect().await;
        stream.write_all(bytes).await.expect("write");
        // Half-closed: hyper closes once it has answered, rather than
        // waiting for another request on a kept-alive connection.
        stream.shutdown().await.expect("half-close");
        let mut got = Vec::new();
        let _ = stream.read_to_end(&mut got).await;
        String::from_utf8_lossy(&got).into_owned()
    }

    /// The daemon's directory (`state/`, `policies/`, the secret).
    fn dir(&self) -> &Path {
        self._dir.path()
    }

    /// What the upstream received so far.
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }

    /// The placeholder the sandbox holds for the `api` credential.
    fn placeholder(&self) -> String {
        self.interceptor
            .credentials
            .env(SANDBOX, &self.policy)
            .into_iter()
            .map(|(_, value)| value)
            .next()
            .expect("the policy binds `api`")
    }

    fn audit(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.audit_path)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("audit line is JSON"))
            .collect()
    }

    /// The audit events with `reason`.
    fn audited(&self, reason: &str) -> Vec<serde_json::Value> {
        self.audit()
            .into_iter()
            .filter(|e| e["reason"] == reason)
            .collect()
    }
}

/// A request for `api.test` with `headers` and `body`.
fn request(
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Request<Full<Bytes>> {
    let mut builder = Request::builder()
        .method(method)
        .uri(target)
        .header("host", HOST);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Full::from(body.to_owned())).expect("request")
}

/// A JSON POST of `body` to `target`.
fn post_json(target: &str, body: &str) -> Request<Full<Bytes>> {
    request(
        "POST",
        target,
        &[("content-type", "application/json")],
        body,
    )
}
