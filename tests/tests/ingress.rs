//! The web-app ingress end to end, as root: a sandbox in its own network
//! namespace runs a small web app (it echoes every header it receives,
//! sets a cookie, and upgrades a WebSocket); the daemon publishes it, and
//! viewers with control-plane tokens reach it through the ingress only.

use std::{
    io::{Read as _, Write as _},
    net::{SocketAddr, TcpStream},
    time::Duration,
};

use serde_json::{Value, json};
use sluice_e2e::{
    DaemonBuilder, TestNetns, ViewerKeys, WAIT, in_cgroup, require_root, scripts,
    viewer::unix_now as now, wait_until,
};

/// `PORT_FILE`: serves on a free port of 127.0.0.1 (written to PORT_FILE
/// once listening). `/ws` completes a WebSocket handshake and echoes one
/// text frame; any other GET answers the request's headers as JSON with a
/// `Set-Cookie`.
const APP: &str = r#"
import base64, hashlib, json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
class App(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def do_GET(self):
        if self.path == "/ws":
            key = self.headers.get("Sec-WebSocket-Key", "")
            accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", accept)
            self.send_header("Set-Cookie", "ws=1")
            self.end_headers()
            self.wfile.flush()
            head = self.rfile.read(2)
            mask = self.rfile.read(4)
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(head[1] & 0x7F)))
            self.wfile.write(bytes([0x81, len(data)]) + data)
            self.wfile.flush()
            self.close_connection = True
            return
        body = json.dumps({"path": self.path,
                           "headers": [[k.lower(), v] for k, v in self.headers.items()]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Set-Cookie", "app=1; Path=/")
        self.end_headers()
        self.wfile.write(body)
server = ThreadingHTTPServer(("127.0.0.1", 0), App)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
server.serve_forever()
"#;

struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }

    /// The header names the app saw.
    fn echoed(&self) -> Vec<String> {
        let echo: Value = serde_json::from_str(&self.body).expect("the app's echo");
        echo["headers"]
            .as_array()
            .expect("headers")
            .iter()
            .map(|h| h[0].as_str().expect("name").to_owned())
            .collect()
    }
}

/// One request over its own connection to the ingress.
fn get(addr: SocketAddr, host: &str, path: &str, headers: &[(&str, String)]) -> Answer {
    let mut stream = TcpStream::connect(addr).expect("connect to the ingress");
    stream.set_read_timeout(Some(WAIT)).expect("timeout");
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the answer");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    Answer {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

fn bearer(t: &str) -> (&'static str, String) {
    ("Authorization", format!("Bearer {t}"))
}

/// The ingress's listening address, from `sluice status`.
fn ingress_addr(daemon: &sluice_e2e::Daemon) -> SocketAddr {
    let status = daemon.cli(&["status"]);
    status.expect_success("sluice status");
    let status: Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    status["ingress_addrs"][0]
        .as_str()
        .expect("the ingress's address in the status")
        .parse()
        .expect("an address")
}

#[test]
fn published_apps_reach_the_viewers_their_scope_names_and_nothing_of_theirs_reaches_them() {
    require_root();
    let netns = TestNetns::new();
    let mut builder = DaemonBuilder::new();
    let sb1 = builder.cgroup("sb1");
    let sb2 = builder.cgroup("sb2");
    let keys = ViewerKeys::generate();
    // A key the daemon does not know: its tokens are badly signed.
    let stranger = ViewerKeys::generate();
    let key_file = builder.dir().join("viewer.pub");
    keys.write_public(&key_file);
    let sb1_path = sb1
        .path()
        .strip_prefix(builder.root().path())
        .expect("below");
    let sb2_path = sb2
        .path()
        .strip_prefix(builder.root().path())
        .expect("below");
    builder
        .policy("default", vec![])
        .config_key(
            "sandboxes",
            json!([
                {"id": "sb1", "cgroup": sb1_path, "netns": netns.path(), "policy": "default",
                 "owner": {"sub": "ann", "org": "acme"}},
                {"id": "sb2", "cgroup": sb2_path, "policy": "default"},
            ]),
        )
        .config_key(
            "ingress",
            json!({
                "listen": ["127.0.0.1:0"],
                "apps_domain": "apps.test",
                "trusted_proxies": ["127.0.0.1/32"],
                "viewer_tokens": {"keys": [{"file": key_file, "alg": "EdDSA"}]},
                "csp": {"frame_ancestors": ["https://cp.test"]},
            }),
        );
    let mut daemon = builder.start();
    let addr = ingress_addr(&daemon);

    let port_file = daemon.dir().join("app.port");
    let _app = in_cgroup(&sb1)
        .netns(&netns)
        .timeout(Duration::from_secs(600))
        .spawn_python(APP, &[port_file.to_str().expect("utf-8")]);
    wait_until("the app listens", WAIT, || port_file.exists());
    let port = std::fs::read_to_string(&port_file).expect("port");

    daemon
        .cli(&["app", "publish", "sb1", "--port", &port, "--name", "demo"])
        .expect_success("sluice app publish");
    let host = "demo.apps.test";
    let exp = now() + 3600;
    let ann = keys.token("ann", "acme", exp);
    let eve = keys.token("eve", "evil", exp);
    let bob = keys.token("bob", "acme", exp);

    // The owner reaches it; nothing of theirs reaches the app.
    let viewer_headers = vec![
        bearer(&ann),
        ("Cookie", "theirs=1; __Host-sluice-session=x".to_owned()),
        ("X-CSRF-Token", "c".to_owned()),
        ("X-XSRF-Token", "c".to_owned()),
        ("Forwarded", "for=203.0.113.9".to_owned()),
        ("X-Forwarded-For", "203.0.113.9".to_owned()),
        ("X-Forwarded-Host", host.to_owned()),
        ("X-Real-IP", "203.0.113.9".to_owned()),
        ("X-Auth-Request-Email", "ann@acme.test".to_owned()),
        ("Remote-User", "ann".to_owned()),
        ("X-Forwarded-User", "ann".to_owned()),
        ("Accept", "application/json".to_owned()),
    ];
    let answer = get(addr, host, "/hello?x=1", &viewer_headers);
    assert_eq!(answer.status, 200, "{}\n{}", answer.head, answer.body);
    let mut seen = answer.echoed();
    seen.sort();
    assert_eq!(
        seen,
        ["accept", "host"],
        "only allowlisted headers reach the app"
    );
    assert_eq!(
        answer.header("set-cookie"),
        None,
        "the app's cookie stays behind"
    );
    let csp = answer.header("content-security-policy").expect("a CSP");
    assert!(
        csp.starts_with("frame-ancestors https://cp.test; sandbox"),
        "{csp}"
    );

    // Scopes.
    type Case = (&'static str, Vec<(&'static str, String)>, u16);
    let cases: Vec<Case> = vec![
        ("private, another org", vec![bearer(&eve)], 403),
        ("private, anonymous", vec![], 401),
        (
            "expired",
            vec![bearer(&keys.token("ann", "acme", now() - 3600))],
            401,
        ),
        (
            "badly signed",
            vec![bearer(&stranger.token("ann", "acme", exp))],
            401,
        ),
    ];
    for (what, headers, status) in cases {
        let answer = get(addr, host, "/", &headers);
        assert_eq!(answer.status, status, "{what}: {}", answer.body);
        assert!(
            answer.header("x-sluice-refusal").is_some(),
            "{what}: says why"
        );
    }
    daemon
        .cli(&["app", "scope", "demo", "users:bob"])
        .expect_success("scope users:bob");
    assert_eq!(
        get(addr, host, "/", &[bearer(&bob)]).status,
        200,
        "a listed viewer"
    );
    assert_eq!(
        get(addr, host, "/", &[bearer(&eve)]).status,
        403,
        "an unlisted one"
    );
    daemon
        .cli(&["app", "scope", "demo", "public"])
        .expect_success("scope public");
    assert_eq!(
        get(addr, host, "/", &[]).status,
        200,
        "anyone, on a public app"
    );
    daemon.wait_audit("the ingress's refusals", 1, |e| {
        e["event"] == "ingress" && e["reason"] == "not_owner" && e["sandbox"] == "sb1"
    });
    daemon.wait_metric_at_least(
        "sluice_ingress_requests_total{app=\"demo\",verdict=\"deny\",reason=\"not_owner\"}",
        1.0,
    );

    // The WebSocket echoes through the ingress.
    let mut ws = TcpStream::connect(addr).expect("connect");
    ws.set_read_timeout(Some(WAIT)).expect("timeout");
    ws.write_all(
        format!(
            "GET /ws HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .as_bytes(),
    )
    .expect("handshake");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        ws.read_exact(&mut byte).expect("101 head");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(
        head.contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo="),
        "{head}"
    );
    assert!(!head.contains("set-cookie"), "{head}");
    let mask = [1u8, 2, 3, 4];
    let mut frame = vec![0x81, 0x80 | 5];
    frame.extend_from_slice(&mask);
    frame.extend(b"hello".iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    ws.write_all(&frame).expect("frame");
    let mut echo = [0u8; 7];
    ws.read_exact(&mut echo).expect("echo");
    assert_eq!(&echo, b"\x81\x05hello");

    // Another sandbox cannot reach the app's port: its connects are
    // steered, and loopback is refused (nor is the port in its namespace).
    in_cgroup(&sb2)
        .python(scripts::TCP_PROBE, &["127.0.0.1", port.trim(), "00"])
        .expect_failure("another sandbox connecting to the app's port");
    daemon.wait_audit("sb2's connect refused", 1, |e| {
        e["event"] == "connection" && e["verdict"] == "deny" && e["sandbox"] == "sb2"
    });

    // Unpublished, or its sandbox removed: 404.
    daemon
        .cli(&["app", "rm", "demo"])
        .expect_success("sluice app rm");
    assert_eq!(get(addr, host, "/", &[]).status, 404);
    daemon
        .cli(&[
            "app", "publish", "sb1", "--port", &port, "--name", "demo", "--scope", "public",
        ])
        .expect_success("publish again");
    assert_eq!(get(addr, host, "/", &[]).status, 200);

    // Publications survive a restart (the listener's :0 port is new).
    daemon.restart();
    let addr = ingress_addr(&daemon);
    wait_until("the app answers after a restart", WAIT, || {
        get(addr, host, "/", &[]).status == 200
    });
    let apps = daemon.cli(&["app", "ls", "--json"]);
    let apps: Value = serde_json::from_slice(&apps.stdout).expect("apps JSON");
    assert_eq!(
        apps[0]["url"],
        format!("https://demo.apps.test:{}/", addr.port())
    );
    daemon
        .cli(&["sandbox", "rm", "sb1"])
        .expect_success("sluice sandbox rm");
    assert_eq!(get(addr, host, "/", &[]).status, 404);
    let apps = daemon.cli(&["app", "ls", "--json"]);
    let apps: Value = serde_json::from_slice(&apps.stdout).expect("apps JSON");
    assert_eq!(apps, json!([]), "its apps went with it");
}
