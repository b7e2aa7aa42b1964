//! Redirects Sluice follows for a binding with `follow_redirects`: within
//! the credential's hosts, each hop held to the network policy, the apps
//! and a fresh injection; anything else answered unfollowed.

use std::net::{IpAddr, Ipv4Addr};

use super::*;

/// The daemon config of these tests: the credential covers hosts a
/// redirect may lead to (one the network policy refuses, one a catalogued
/// app covers); the resolver gives all of them the upstream's address.
const REDIRECT_CONFIG: &str = r#"
tls: {ca_dir: "DIR/state/ca", system_roots: false, upstream_ca_files: ["CA_CERT"]}
state_dir: "DIR/state"
policy_dir: "DIR/policies"
credentials:
  - name: api
    source: {file: "DIR/secret"}
    hosts: [api.test, eu.api.test, denied.api.test, tracker.test]
    scheme: {type: bearer}
approvals: {timeout_ms: 500}
apps:
  - name: tracker
    hosts: [tracker.test]
    actions:
      - {name: issues.read, method: GET, path: "/issues/**"}
"#;

const NAMES: [&str; 5] = [
    "api.test",
    "eu.api.test",
    "denied.api.test",
    "tracker.test",
    "other.test",
];

/// The network section: `denied.api.test` and `other.test` are not
/// allowed, `eu.api.test` only at `/final`; `SSRF` is replaced with the
/// guard's setting.
const REDIRECT_NETWORK: &str = "network:\n  allow_out: [api.test, {to: eu.api.test, paths: [/final]}, tracker.test]\n  deny_out: [ALL_TRAFFIC]\n  ssrf_guard: SSRF\n  decide_without_decryption: false\n";

/// A request the redirecting upstream received.
#[derive(Debug, Clone)]
struct Hit {
    method: String,
    path: String,
    host: String,
    authorization: Option<String>,
    cookie: Option<String>,
    content_type: Option<String>,
    body: String,
}

/// An upstream whose routes redirect (to hosts on its own port), and
/// whose `/final` says what it received.
async fn redirecting() -> (SocketAddr, Arc<Mutex<Vec<Hit>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let port = addr.port();
    let hits = Arc::new(Mutex::new(Vec::new()));
    let log = hits.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let log = log.clone();
            let service = service_fn(move |request: Request<Incoming>| {
                let log = log.clone();
                async move {
                    let (parts, body) = request.into_parts();
                    let body = body.collect().await.map(|b| b.to_bytes());
                    let header = |name: &str| {
                        parts
                            .headers
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned)
                    };
                    let hit = Hit {
                        method: parts.method.to_string(),
                        path: parts.uri.to_string(),
                        host: header("host").unwrap_or_default(),
                        authorization: header("authorization"),
                        cookie: header("cookie"),
                        content_type: header("content-type"),
                        body: String::from_utf8_lossy(&body.unwrap_or_default()).into_owned(),
                    };
                    let response = route(&hit, port);
                    log.lock().expect("lock").push(hit);
                    Ok::<_, std::convert::Infallible>(response)
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    (addr, hits)
}

fn route(hit: &Hit, port: u16) -> Response<Full<Bytes>> {
    let redirect = |status: u16, location: String| {
        Response::builder()
            .status(status)
            .header("location", location)
            .body(Full::from("moved"))
            .expect("response")
    };
    let path = hit.path.split('?').next().unwrap_or_default();
    match path {
        "/r302" => redirect(302, "/final?hop=1".to_owned()),
        "/r303" => redirect(303, "/final".to_owned()),
        "/r307" => redirect(307, "final".to_owned()),
        "/eu" => redirect(302, format!("http://eu.api.test:{port}/final?q=1")),
        "/eu-admin" => redirect(302, format!("http://eu.api.test:{port}/admin")),
        "/outside" => redirect(302, format!("http://other.test:{port}/final")),
        "/denied" => redirect(302, format!("http://denied.api.test:{port}/final")),
        "/app" => redirect(302, format!("http://tracker.test:{port}/issues/1")),
        "/loop" => redirect(302, "/loop".to_owned()),
        _ => Response::new(Full::from(format!(
            "final {} auth={} body={}",
            hit.method,
            hit.authorization.as_deref().unwrap_or("none"),
            hit.body
        ))),
    }
}

/// A harness over [`redirecting`] with the policy `p`: `binding` (YAML
/// flow mapping of the `api` binding), `extra` (more sections, or empty)
/// and the SSRF guard.
async fn start(binding: &str, extra: &str, ssrf: bool) -> (Harness, Arc<Mutex<Vec<Hit>>>) {
    let network = REDIRECT_NETWORK.replace("SSRF", &ssrf.to_string());
    let policy = format!("{network}credentials:\n  - {binding}\n{extra}");
    let loopback = vec![IpAddr::V4(Ipv4Addr::LOCALHOST)];
    let hosts: BTreeMap<String, Vec<IpAddr>> = NAMES
        .iter()
        .map(|name| ((*name).to_owned(), loopback.clone()))
        .collect();
    let (upstream, hits) = redirecting().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let harness = Harness::build(REDIRECT_CONFIG, &policy, &hosts, upstream, seen);
    (harness, hits)
}

const FOLLOW_2: &str = "{credential: api, allow_plain_http: true, follow_redirects: 2}";
const FOLLOW_2_BODY: &str =
    "{credential: api, allow_plain_http: true, allow_in_body: true, follow_redirects: 2}";
const FOLLOW_NONE: &str = "{credential: api, allow_plain_http: true}";

/// One row: the policy, the sandbox's request, and what follows.
struct Row {
    name: &'static str,
    binding: &'static str,
    /// More of the policy (`apps`, `pii`).
    extra: &'static str,
    ssrf: bool,
    method: &'static str,
    path: &'static str,
    body: &'static str,
    /// Whether the request carries the placeholder.
    placeholder: bool,
    /// The status the sandbox gets.
    status: u16,
    /// What the upstream received, in order: (method, Host name, path).
    hits: &'static [(&'static str, &'static str, &'static str)],
}

const TABLE: &[Row] = &[
    Row {
        name: "302 to a path on the same host: followed, injected again",
        binding: FOLLOW_2,
        extra: "",
        ssrf: false,
        method: "GET",
        path: "/r302",
        body: "",
        placeholder: true,
        status: 200,
        hits: &[
            ("GET", "api.test", "/r302"),
            ("GET", "api.test", "/final?hop=1"),
        ],
    },
    Row {
        name: "302 to a GET the body stage read: followed",
        binding: FOLLOW_2,
        extra: "pii: {enabled: true, types: [email]}\n",
        ssrf: false,
        method: "GET",
        path: "/r302",
        body: "",
        placeholder: true,
        status: 200,
        hits: &[
            ("GET", "api.test", "/r302"),
            ("GET", "api.test", "/final?hop=1"),
        ],
    },
    Row {
        name: "302 to another host of the credential",
        binding: FOLLOW_2,
        extra: "",
        ssrf: false,
        method: "GET",
        path: "/eu",
        body: "",
        placeholder: true,
        status: 200,
        hits: &[
            ("GET", "api.test", "/eu"),
            ("GET", "eu.api.test", "/final?q=1"),
        ],
    },
    Row {
        name: "303 to a POST: a GET without the body",
        binding: FOLLOW_2,
        extra: "",
        ssrf: false,
        method: "POST",
        path: "/r303",
        body: "{\"a\":1}",
        placeholder: true,
        status: 200,
        hits: &[("POST", "api.test", "/r303"), ("GET", "api.test", "/final")],
    },
    Row {
        name: "307 to a streamed POST: unfollowed (the body is gone)",
        binding: FOLLOW_2,
        extra: "",
        ssrf: false,
        method: "POST",
        path: "/r307",
        body: "{\"a\":1}",
        placeholder: true,
        status: 307,
        hits: &[("POST", "api.test", "/r307")],
    },
    Row {
        name: "307 to a POST read whole: the method and body again",
        binding: FOLLOW_2_BODY,
        extra: "",
        ssrf: false,
        method: "POST",
        path: "/r307",
        body: "{\"a\":1}",
        placeholder: true,
        status: 200,
        hits: &[
            ("POST", "api.test", "/r307"),
            ("POST", "api.test", "/final"),
        ],
    },
    Row {
        name: "a host outside the credential's: unfollowed",
        binding: FOLLOW_2,
        extra: "",
        ssrf: false,
        method: "GET",
        path: "/outside",
        body: "",
        placeholder: true,
        status: 302,
        hits: &[("GET", "api.test", "/outside")],
    },
    Row {
        name: "a path outside the paths of the rule allowing the hop: unfollowed",
        binding: FOLLOW_2,
        extra: "",
        ssrf: false,
        method: "GET",
        path: "/eu-admin",
        body: "",
        placeholder: true,
        status: 302,
        hits: &[("GET", "api.test", "/eu-admin")],
    },
    Row {
        name: "a host of the credential the network policy refuses: unfollowed",
        binding: FOLLOW_2,
        extra: "",
        ssrf: false,
        method: "GET",
        path: "/denied",
        body: "",
        placeholder: true,
        status: 302,
        hits: &[("GET", "api.test", "/denied")],
    },
    Row {
        name: "an address the SSRF guard refuses: unfollowed",
        binding: FOLLOW_2,
        extra: "",
        ssrf: true,
        method: "GET",
        path: "/r302",
        body: "",
        placeholder: true,
        status: 302,
        hits: &[("GET", "api.test", "/r302")],
    },
    Row {
        name: "an app action the policy asks about: unfollowed",
        binding: FOLLOW_2,
        extra: "apps:\n  - {app: tracker, actions: {issues.read: ask}}\n",
        ssrf: false,
        method: "GET",
        path: "/app",
        body: "",
        placeholder: true,
        status: 302,
        hits: &[("GET", "api.test", "/app")],
    },
    Row {
        name: "an app action the policy lets through: followed",
        binding: FOLLOW_2,
        extra: "apps:\n  - {app: tracker, actions: {issues.read: auto}}\n",
        ssrf: false,
        method: "GET",
        path: "/app",
        body: "",
        placeholder: true,
        status: 200,
        hits: &[
            ("GET", "api.test", "/app"),
            ("GET", "tracker.test", "/issues/1"),
        ],
    },
    Row {
        name: "after follow_redirects hops, the last answer as it is",
        binding: FOLLOW_2,
        extra: "",
        ssrf: false,
        method: "GET",
        path: "/loop",
        body: "",
        placeholder: true,
        status: 302,
        hits: &[
            ("GET", "api.test", "/loop"),
            ("GET", "api.test", "/loop"),
            ("GET", "api.test", "/loop"),
        ],
    },
    Row {
        name: "no follow_redirects: unfollowed",
        binding: FOLLOW_NONE,
        extra: "",
        ssrf: false,
        method: "GET",
        path: "/r302",
        body: "",
        placeholder: true,
        status: 302,
        hits: &[("GET", "api.test", "/r302")],
    },
    Row {
        name: "no credential injected: unfollowed",
        binding: FOLLOW_2,
        extra: "",
        ssrf: false,
        method: "GET",
        path: "/r302",
        body: "",
        placeholder: false,
        status: 302,
        hits: &[("GET", "api.test", "/r302")],
    },
];

#[tokio::test]
async fn redirects_followed_and_not() {
    for row in TABLE {
        let (h, hits) = start(row.binding, row.extra, row.ssrf).await;
        let auth = format!("Bearer {}", h.placeholder());
        let mut headers = vec![
            ("cookie", "sid=sandbox"),
            ("content-type", "application/json"),
        ];
        if row.placeholder {
            headers.push(("authorization", auth.as_str()));
        }
        let answer = h
            .send(request(row.method, row.path, &headers, row.body))
            .await;
        let name = row.name;
        assert_eq!(
            answer.status.as_u16(),
            row.status,
            "{name}: {}",
            answer.body
        );
        assert!(!answer.body.contains(SECRET), "{name}");
        let hits = hits.lock().expect("lock").clone();
        let got: Vec<(&str, &str, &str)> = hits
            .iter()
            .map(|hit| {
                let host = hit.host.split(':').next().unwrap_or_default();
                (hit.method.as_str(), host, hit.path.as_str())
            })
            .collect();
        assert_eq!(got, row.hits, "{name}");
        let followed = row.hits.len() - 1;
        let counted = h
            .metrics
            .connections
            .with_label_values(&["allow", "redirect_followed"]);
        assert_eq!(counted.get(), followed as u64, "{name}");
        assert_eq!(h.audited("redirect_followed").len(), followed, "{name}");
        // Every hop carries Sluice's credential, never the sandbox's own
        // authentication; a cookie does not go to another host.
        for (i, hit) in hits.iter().enumerate().skip(1) {
            let want = format!("Bearer {SECRET}");
            assert_eq!(hit.authorization.as_deref(), Some(want.as_str()), "{name}");
            let same_host = hit.host.split(':').next() == Some("api.test");
            let cookie = same_host.then_some("sid=sandbox");
            assert_eq!(hit.cookie.as_deref(), cookie, "{name} hop {i}");
            if hit.method == "GET" {
                assert_eq!((hit.body.as_str(), hit.content_type.as_deref()), ("", None));
            } else {
                assert_eq!(hit.body, row.body, "{name}");
            }
        }
        if row.status == 200 {
            let method = row.hits.last().map_or("", |hit| hit.0);
            let kept = if method == "POST" { row.body } else { "" };
            let want = format!("final {method} auth=Bearer [redacted:credential] body={kept}");
            assert_eq!(answer.body, want, "{name}");
        }
        if (300..400).contains(&row.status) {
            assert!(answer.headers.contains_key("location"), "{name}");
        }
    }
}

/// A followed hop is audited with where it went from and to, the paths
/// without their query.
#[tokio::test]
async fn a_followed_hop_is_audited_without_the_query() {
    let (h, _) = start(FOLLOW_2, "", false).await;
    let auth = format!("Bearer {}", h.placeholder());
    let answer = h
        .send(request(
            "GET",
            "/eu?token=abc",
            &[("authorization", &auth)],
            "",
        ))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let events = h.audited("redirect_followed");
    let [event] = events.as_slice() else {
        panic!("one event: {events:?}");
    };
    assert_eq!(event["event"], "redirect");
    assert_eq!(event["verdict"], "allow");
    assert_eq!(event["rule"], "p:credentials");
    assert_eq!(event["host"], "eu.api.test");
    let port = h.upstream.port();
    let detail = event["detail"].as_str().expect("detail");
    assert_eq!(
        detail,
        format!("followed from api.test:{port}/eu to eu.api.test:{port}/final")
    );
    assert!(!event.to_string().contains("abc") && !event.to_string().contains(SECRET));
}
