//! First bytes Sluice cannot read are refused wherever the policy reads
//! them, end to end: a destination allowed by an address rule under a
//! policy that decrypts TLS and redacts PII. A plain-HTTP head that could
//! be read two ways (two `Host`s, userinfo, an absolute-form target naming
//! another host, obs-fold) gets a 400 naming why; a head or ClientHello
//! trickled past the sniff timeout, and a ClientHello whose SNI is not a
//! DNS name, are reset. In every case the upstream receives nothing and the
//! audit names the refusal. The same requests well formed pass and are
//! inspected, a ClientHello over 16 KiB (several records) included: it is
//! reassembled and intercepted.

use serde_json::{Value, json};
use sluice_e2e::{HttpsUpstream, TestCa, interception::World, run::SANDBOX_TIMEOUT, scripts::hex};

/// Spec `{addr, port, data?: hex, step?, every_ms?, tls?: {cafile, sni,
/// verify, alpn_pad, trickle}, request?}`: connects; sends `data` (or,
/// with `tls.trickle`, the ClientHello Python makes), `step` bytes every
/// `every_ms` when given, until all is sent or the connection fails; with
/// `tls` and no trickle, completes a handshake (offering `alpn_pad` long
/// ALPN names before `http/1.1`, which makes the hello as large as
/// wanted) and sends `request` over it. Prints the answer's status and
/// text, the certificate issuer seen, and how sending or reading failed.
const SEND: &str = r#"
import errno, json, socket, ssl, sys, time
spec = json.loads(sys.argv[1])
result = {"status": None, "text": "", "error": None}
def err(e):
    if isinstance(e, OSError) and e.errno:
        return errno.errorcode.get(e.errno, str(e.errno))
    return type(e).__name__ + ": " + str(e)
s = socket.create_connection((spec["addr"], spec["port"]), timeout=15)
conn = s
data = bytes.fromhex(spec.get("data", ""))
tls = spec.get("tls")
try:
    if tls:
        ctx = ssl.create_default_context(cafile=tls["cafile"])
        if not tls.get("verify", True):
            ctx.check_hostname = False
        ctx.set_alpn_protocols(["x" * 250 + str(i) for i in range(tls.get("alpn_pad", 0))] + ["http/1.1"])
        if tls.get("trickle"):
            incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
            obj = ctx.wrap_bio(incoming, outgoing, server_hostname=tls["sni"])
            try:
                obj.do_handshake()
            except ssl.SSLWantReadError:
                pass
            data = outgoing.read()
        else:
            conn = ctx.wrap_socket(s, server_hostname=tls["sni"])
            issuer = dict(x[0] for x in conn.getpeercert()["issuer"])
            result["issuer"] = issuer.get("commonName") or issuer.get("organizationName")
            data = spec["request"].encode()
    step = spec.get("step") or len(data) or 1
    for i in range(0, len(data), step):
        conn.sendall(data[i:i + step])
        if spec.get("every_ms"):
            time.sleep(spec["every_ms"] / 1000)
except OSError as e:
    result["error"] = "send: " + err(e)
got = b""
try:
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        got += chunk
except OSError as e:
    result["error"] = (result["error"] or "") + " recv: " + err(e)
if got.startswith(b"HTTP/1."):
    result["status"] = int(got.split()[1])
result["text"] = got.decode("utf-8", "replace")
print(json.dumps(result))
"#;

const CARD: &str = "4111111111111111";
const EMAIL: &str = "alice.tester@example.com";

fn body() -> String {
    json!({"note": format!("card {CARD}, mail {EMAIL}")}).to_string()
}

/// A POST of [`body`] with the head lines `head` (request line and
/// headers, each ending in CRLF) before its framing.
fn post(head: &str) -> String {
    let body = body();
    format!(
        "{head}content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A daemon whose sandbox reaches a plain and an HTTPS upstream on
/// 127.0.0.1 by address rules alone, under a policy that decrypts TLS and
/// redacts card numbers and email addresses; the sniff timeout is short.
struct Setup {
    world: World,
    plain: HttpsUpstream,
    https: HttpsUpstream,
}

impl Setup {
    fn start() -> Setup {
        let ca = TestCa::upstream();
        let plain = HttpsUpstream::plain_v4();
        let https = HttpsUpstream::v4(&["api.test"], &ca);
        let policy = json!({
            "network": {
                "allow_out": [
                    format!("127.0.0.1:{}", plain.port()),
                    format!("127.0.0.1:{}", https.port()),
                ],
                "deny_out": ["ALL_TRAFFIC"],
                "ssrf_guard": false,
                "decide_without_decryption": false,
            },
            "pii": {"enabled": true, "types": ["credit_card", "email"], "action": "redact"},
        });
        let world = World::start_with(&ca, &["api.test"], policy, |b| {
            b.sniff_timeout_ms(1000);
        });
        Setup {
            world,
            plain,
            https,
        }
    }

    fn send(&self, spec: &Value) -> Value {
        let out = self.world.python(SEND, spec, SANDBOX_TIMEOUT);
        out.json()
    }

    /// The deny event for `reason` (waited for).
    fn denial(&self, reason: &str) -> Value {
        let events = self.world.daemon.wait_audit(reason, 1, |e| {
            e["event"] == "connection" && e["verdict"] == "deny" && e["reason"] == reason
        });
        events[0].clone()
    }

    /// What the upstreams have received so far: connections and requests.
    fn reached(&self) -> [usize; 4] {
        [
            self.plain.connection_count(),
            self.plain.request_count(),
            self.https.connection_count(),
            self.https.request_count(),
        ]
    }

    /// Asserts the last request an upstream saw carried neither the card
    /// number nor the address: the PII stage read it.
    fn assert_inspected(upstream: &HttpsUpstream) {
        let requests = upstream.requests();
        let last = requests.last().expect("a request reached the upstream");
        let body = String::from_utf8_lossy(last.body.as_deref().unwrap_or_default()).into_owned();
        assert!(body.contains("card "), "the body arrived: {body}");
        assert!(
            !body.contains(CARD) && !body.contains(EMAIL),
            "the PII stage read the body: {body}"
        );
    }
}

#[test]
fn plain_http_heads_that_read_two_ways_get_a_400_and_reach_nobody() {
    let s = Setup::start();
    let port = s.plain.port();
    let authority = format!("127.0.0.1:{port}");
    #[rustfmt::skip]
    let cases = [
        ("two hosts", format!("POST /llm HTTP/1.1\r\nhost: {authority}\r\nhost: other.test\r\n"), "http_duplicate_host"),
        ("userinfo in host", format!("POST /llm HTTP/1.1\r\nhost: user@{authority}\r\n"), "http_userinfo"),
        ("absolute form elsewhere", format!("POST http://other.test/llm HTTP/1.1\r\nhost: {authority}\r\n"), "http_host_mismatch"),
        ("obs-fold", format!("POST /llm HTTP/1.1\r\nhost: {authority}\r\nx-note: a\r\n b\r\n"), "http_obs_fold"),
    ];
    for (name, head, reason) in cases {
        let before = s.reached();
        let got = s
            .send(&json!({"addr": "127.0.0.1", "port": port, "data": hex(post(&head).as_bytes())}));
        assert_eq!(got["status"], 400, "{name}: {got}");
        let answer: Value = got["text"]
            .as_str()
            .and_then(|t| t.split("\r\n\r\n").nth(1))
            .and_then(|b| serde_json::from_str(b).ok())
            .unwrap_or_else(|| panic!("{name}: a JSON body: {got}"));
        assert_eq!(answer["reason"], reason, "{name}");
        assert_eq!(
            answer["rule"], "p:network.decide_without_decryption",
            "{name}"
        );
        let event = s.denial(reason);
        assert_eq!(
            event["rule"], "p:network.decide_without_decryption",
            "{name}"
        );
        assert_eq!(event["sandbox"], "sb1", "{name}");
        assert_eq!(s.reached(), before, "{name}: the upstream received nothing");
    }
    let refused = s
        .world
        .metric("sluice_connections_total{verdict=\"deny\",reason=\"http_obs_fold\"}");
    assert_eq!(refused, 1.0, "counted");

    // Well formed, the same request passes and is inspected.
    let head = format!("POST /llm HTTP/1.1\r\nhost: {authority}\r\n");
    let got =
        s.send(&json!({"addr": "127.0.0.1", "port": port, "data": hex(post(&head).as_bytes())}));
    assert_eq!(got["status"], 200, "{got}");
    Setup::assert_inspected(&s.plain);
}

#[test]
fn heads_and_hellos_trickled_past_the_sniff_timeout_are_refused() {
    let s = Setup::start();
    let before = s.reached();
    let head = format!(
        "POST /llm HTTP/1.1\r\nhost: 127.0.0.1:{}\r\n",
        s.plain.port()
    );
    // 3 bytes every 100 ms: the head takes seconds, the timeout is 1 s.
    let got = s.send(&json!({
        "addr": "127.0.0.1", "port": s.plain.port(), "data": hex(post(&head).as_bytes()),
        "step": 3, "every_ms": 100,
    }));
    assert_eq!(got["status"], 400, "{got}");
    assert!(
        got["text"]
            .as_str()
            .unwrap_or_default()
            .contains("http_incomplete"),
        "{got}"
    );
    s.denial("http_incomplete");

    let got = s.send(&json!({
        "addr": "127.0.0.1", "port": s.https.port(), "step": 5, "every_ms": 100,
        "tls": {"cafile": s.world.sluice_ca, "sni": "api.test", "trickle": true},
    }));
    assert_eq!(got["status"], Value::Null, "{got}");
    assert!(
        got["error"]
            .as_str()
            .unwrap_or_default()
            .contains("ECONNRESET"),
        "reset: {got}"
    );
    let event = s.denial("tls_incomplete");
    assert_eq!(event["rule"], "p:network.decide_without_decryption");
    assert_eq!(s.reached(), before, "the upstreams received nothing");
}

#[test]
fn hellos_are_reassembled_and_intercepted_or_refused_never_passed_through() {
    let s = Setup::start();
    let port = s.https.port();
    let request = post(&format!("POST /llm HTTP/1.1\r\nhost: api.test:{port}\r\n"));
    let tls = |sni: &str, alpn_pad: usize, verify: bool| {
        json!({
            "addr": "127.0.0.1", "port": port, "request": request,
            "tls": {"cafile": s.world.sluice_ca, "sni": sni, "alpn_pad": alpn_pad, "verify": verify},
        })
    };

    // An SNI that is not a DNS name: refused, not waved through.
    let before = s.reached();
    let got = s.send(&tls("bad_name.api.test", 0, false));
    assert_eq!(got["status"], Value::Null, "{got}");
    assert!(got["issuer"].is_null(), "no handshake completed: {got}");
    let event = s.denial("tls_bad_server_name");
    assert_eq!(event["rule"], "p:network.decide_without_decryption");
    assert_eq!(s.reached(), before, "the upstream received nothing");

    // Well formed, and well formed over 16 KiB (80 names of 251 bytes:
    // about 20 KiB, several records): intercepted, Sluice's certificate
    // seen (the sandbox trusts no other), the body inspected.
    for pad in [0, 80] {
        let got = s.send(&tls("api.test", pad, true));
        assert_eq!(got["status"], 200, "{pad}: {got}");
        assert!(got["issuer"].is_string(), "{pad}: {got}");
        Setup::assert_inspected(&s.https);
    }
    let upstream_saw = s.https.requests().len();
    assert_eq!(upstream_saw, 2, "both intercepted requests reached it");
    assert!(
        s.https
            .handshakes()
            .iter()
            .all(|h| h.sni.as_deref() == Some("api.test"))
    );
}
