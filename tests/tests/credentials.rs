//! Credentials end to end: the sandbox holds a placeholder, Sluice swaps it
//! for the real secret only toward the credential's hosts, redacts the secret
//! from what comes back (WebSocket frames included), re-reads a rotated
//! secret without a restart, and answers dry runs with a preview. The secret never shows up in the
//! daemon's logs, audit log or metrics.

use serde_json::{Value, json};
use sluice_e2e::{
    HttpsUpstream, TestCa, WAIT,
    answering_upstream::{Answer, AnsweringUpstream},
    interception::{Curl, World, curl_args, intercepting_policy},
    oauth::{CONCURRENT_WITH_HEADER, SIGV4_VERIFY, TokenEndpoint},
    pki::Sha256,
    tls_scripts, wait_until,
};

const SECRET: &str = "sk-live-REALsecret0123456789abcdefXYZ";
const ROTATED: &str = "sk-live-ROTATEDsecret987654321zyxwvUT";

/// A world where sandbox `sb1` may reach api.test and other.test (both on
/// the loopback upstream), with credential `api` bound to api.test only.
fn world(ca: &TestCa, port: u16, extra: Value) -> World {
    let mut policy = intercepting_policy(
        &[
            "api.test".to_owned(),
            "other.test".to_owned(),
            format!("127.0.0.0/8:{port}"),
        ],
        json!({}),
    );
    policy["credentials"] = json!([{ "credential": "api" }]);
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            policy[k] = v;
        }
    }
    World::start_with(ca, &["api.test", "other.test"], policy, |builder| {
        let path = builder.dir().join("api.secret");
        std::fs::write(&path, format!("{SECRET}\n")).expect("write secret");
        builder.credential(json!({
            "name": "api",
            "source": { "file": path },
            "hosts": ["api.test"],
            "scheme": { "type": "bearer" },
            // A fixed length keeps the placeholder stable across rotations.
            "placeholder": { "prefix": "sk-live-", "length": SECRET.len() },
        }));
    })
}

/// The placeholder `sluice sandbox env` gives sandbox sb1 for `api`.
fn placeholder(world: &World) -> String {
    let out = world.daemon.cli(&["sandbox", "env", "sb1"]);
    out.expect_success("sluice sandbox env");
    let text = out.stdout_str();
    let line = text
        .lines()
        .find(|l| l.starts_with("export API="))
        .unwrap_or_else(|| panic!("no API placeholder in:\n{text}"));
    line.trim_start_matches("export API=")
        .trim_matches('\'')
        .to_owned()
}

fn authorization_seen(upstream: &HttpsUpstream) -> Option<String> {
    upstream.requests().last().and_then(|r| {
        r.headers
            .iter()
            .find(|(name, _)| name == "authorization")
            .map(|(_, value)| value.clone())
    })
}

#[test]
fn placeholders_become_secrets_toward_their_hosts_only_and_echoes_are_redacted() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test", "other.test"], &ca);
    let port = upstream.port();
    let world = world(&ca, port, json!({}));
    let placeholder = placeholder(&world);
    assert!(placeholder.starts_with("sk-live-") && placeholder.len() == SECRET.len());
    assert_ne!(placeholder, SECRET);
    let bearer = format!("Authorization: Bearer {placeholder}");

    // Toward api.test the upstream sees the real secret; the echo of it
    // comes back redacted, and the response says so.
    let url = format!("https://api.test:{port}/echo");
    let curl = world.curl(&world.curl_https(&url, &["-H", &bearer]));
    assert_eq!(curl.code, 200, "{}", curl.out);
    assert_eq!(
        authorization_seen(&upstream).as_deref(),
        Some(format!("Bearer {SECRET}").as_str())
    );
    let echo = curl.json();
    assert_eq!(
        echo["headers"]["authorization"], "Bearer [redacted:credential]",
        "{echo}"
    );
    assert!(!curl.body.contains(SECRET));
    assert!(
        curl.out
            .stderr_str()
            .contains("x-sluice-redacted: credential"),
        "{}",
        curl.out
    );

    // The sandbox asks for a compressed answer: the upstream is asked for
    // a plain one, and one compressed anyway is decoded to be redacted.
    let url = format!("https://api.test:{port}/echo?gzip=1");
    let curl = world.curl(&world.curl_https(&url, &["-H", &bearer, "--compressed"]));
    assert_eq!(curl.code, 200, "{}", curl.out);
    let asked = upstream
        .requests()
        .last()
        .and_then(|r| r.header("accept-encoding").map(str::to_owned));
    assert_eq!(asked.as_deref(), Some("identity"));
    let echo = curl.json();
    assert_eq!(
        echo["headers"]["authorization"], "Bearer [redacted:credential]",
        "{echo}"
    );
    assert!(!curl.body.contains(SECRET));

    // Nor can it ask for the echo in ranges, each too short to redact,
    // and join them: the range goes, and a part answered anyway is refused.
    let url = format!("https://api.test:{port}/echo");
    let range = [
        "-H",
        &bearer,
        "-H",
        "Range: bytes=0-40",
        "-H",
        "If-Range: \"x\"",
    ];
    let curl = world.curl(&world.curl_https(&url, &range));
    assert_eq!(curl.code, 200, "{}", curl.out);
    let asked = upstream.requests().last().cloned().expect("asked");
    assert_eq!(asked.header("range"), None);
    assert_eq!(asked.header("if-range"), None);
    let url = format!("https://api.test:{port}/echo?partial=1");
    let curl = world.curl(&world.curl_https(&url, &["-H", &bearer]));
    assert_eq!(curl.code, 502, "{}", curl.out);
    assert_eq!(curl.json()["reason"], "upstream_range_unredactable");
    assert!(!curl.body.contains(SECRET));

    // The sandbox's own authentication, no placeholder in it, never
    // reaches the credential's host; toward other.test, which no bound
    // credential covers, it goes as sent.
    let own = [
        "-H",
        "Authorization: Bearer mine",
        "-H",
        "Proxy-Authorization: Basic bWluZQ==",
    ];
    let api = format!("https://api.test:{port}/echo");
    let curl = world.curl(&world.curl_https(&api, &own));
    assert_eq!(curl.code, 200, "{}", curl.out);
    let asked = upstream.requests().last().cloned().expect("asked");
    assert_eq!(asked.header("authorization"), None);
    assert_eq!(asked.header("proxy-authorization"), None);
    let other = format!("https://other.test:{port}/echo");
    let curl = world.curl(&world.curl_https(&other, &own));
    assert_eq!(curl.code, 200, "{}", curl.out);
    assert_eq!(
        authorization_seen(&upstream).as_deref(),
        Some("Bearer mine")
    );

    // A redirect reaches the sandbox as the upstream sent it, never
    // followed by Sluice, its Location redacted like any header.
    let before = upstream.request_count();
    let redirect = format!("https://api.test:{port}/redirect");
    let curl = world.curl(&world.curl_https(&redirect, &["-H", &bearer]));
    assert_eq!(curl.code, 302, "{}", curl.out);
    let location = location(&curl);
    assert!(
        location.starts_with("/echo?from=redirect&auth=Bearer"),
        "{location}"
    );
    assert!(!location.contains(SECRET), "{location}");
    assert!(location.contains("redacted"), "{location}");
    assert_eq!(upstream.request_count(), before + 1, "not followed");

    // Toward other.test (allowed by the network policy, not by the
    // credential): refused before anything leaves, and audited.
    let before = upstream.request_count();
    let url = format!("https://other.test:{port}/echo");
    let curl = world.curl(&world.curl_https(&url, &["-H", &bearer]));
    assert_eq!(curl.code, 403, "{}", curl.out);
    assert_eq!(curl.json()["reason"], "exfiltration");
    assert_eq!(
        upstream.request_count(),
        before,
        "the other host saw nothing"
    );
    world.daemon.wait_audit("the exfiltration refusal", 1, |e| {
        e["event"] == "credential" && e["reason"] == "exfiltration" && e["sandbox"] == "sb1"
    });

    // Rotation: rewrite the secret file; no restart.
    let secret_file = world.daemon.dir().join("api.secret");
    std::fs::write(&secret_file, format!("{ROTATED}\n")).expect("rotate");
    let url = format!("https://api.test:{port}/echo");
    wait_until("the rotated secret to reach the upstream", WAIT, || {
        let curl = world.curl(&world.curl_https(&url, &["-H", &bearer]));
        curl.code == 200
            && authorization_seen(&upstream).as_deref()
                == Some(format!("Bearer {ROTATED}").as_str())
    });

    assert_nothing_leaked(&world, &[SECRET, ROTATED]);
}

/// With `follow_redirects` on the binding, Sluice follows a redirect
/// within the credential's hosts itself, injecting the credential again
/// for the next hop, and the sandbox gets the final answer; a redirect to
/// a host outside them reaches the sandbox as the upstream sent it.
#[test]
fn a_binding_with_follow_redirects_follows_within_the_credentials_hosts() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test", "other.test"], &ca);
    let port = upstream.port();
    let binding = json!([{ "credential": "api", "follow_redirects": 2 }]);
    let world = world(&ca, port, json!({ "credentials": binding }));
    let bearer = format!("Authorization: Bearer {}", placeholder(&world));

    let before = upstream.request_count();
    let url = format!("https://api.test:{port}/redirect?to=/echo%3Fhop%3D2");
    let curl = world.curl(&world.curl_https(&url, &["-H", &bearer]));
    assert_eq!(curl.code, 200, "{}", curl.out);
    assert_eq!(upstream.request_count(), before + 2, "one hop followed");
    let hop = upstream.requests().last().cloned().expect("the hop");
    assert_eq!(hop.path, "/echo?hop=2");
    assert_eq!(
        hop.header("authorization"),
        Some(format!("Bearer {SECRET}").as_str()),
        "injected again for the hop"
    );
    let echo = curl.json();
    assert_eq!(echo["path"], "/echo?hop=2", "{echo}");
    assert_eq!(
        echo["headers"]["authorization"], "Bearer [redacted:credential]",
        "{echo}"
    );
    assert!(!curl.body.contains(SECRET));
    world.daemon.wait_audit("the followed hop", 1, |e| {
        e["event"] == "redirect"
            && e["reason"] == "redirect_followed"
            && e["detail"]
                == format!("followed from api.test:{port}/redirect to api.test:{port}/echo")
    });

    // other.test is allowed by the network policy, not by the credential.
    let before = upstream.request_count();
    let outside = format!("https://other.test:{port}/echo");
    let url = format!(
        "https://api.test:{port}/redirect?to={}",
        outside.replace(':', "%3A").replace('/', "%2F")
    );
    let curl = world.curl(&world.curl_https(&url, &["-H", &bearer]));
    assert_eq!(curl.code, 302, "{}", curl.out);
    let location = location(&curl);
    assert_eq!(location.trim(), outside);
    assert_eq!(upstream.request_count(), before + 1, "not followed");

    assert_nothing_leaked(&world, &[SECRET]);
}

#[test]
fn dry_runs_forward_reads_and_preview_writes() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test", "other.test"], &ca);
    let port = upstream.port();
    let world = world(&ca, port, json!({ "dry_run": true }));

    let url = format!("https://api.test:{port}/echo?q=1");
    let curl = world.curl(&world.curl_https(&url, &[]));
    assert_eq!(curl.code, 200, "GET goes through: {}", curl.out);
    let before = upstream.request_count();

    let curl = world.curl(&world.curl_https(
        &url,
        &[
            "-X",
            "POST",
            "-H",
            "X-Secret-Header: value",
            "--data",
            "hello=world",
        ],
    ));
    assert_eq!(curl.code, 202, "{}", curl.out);
    assert!(
        curl.out
            .stderr_str()
            .contains("x-sluice-dry-run: intercepted"),
        "{}",
        curl.out
    );
    let preview = curl.json();
    assert_eq!(preview["method"], "POST");
    assert_eq!(preview["path"], "/echo");
    assert_eq!(preview["query"], "q=1");
    assert_eq!(preview["body"], "hello=world");
    let names: Vec<&str> = preview["headers"]
        .as_array()
        .expect("names")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(names.contains(&"x-secret-header"), "{preview}");
    assert!(
        !preview.to_string().contains("value"),
        "header values never appear: {preview}"
    );
    assert_eq!(
        upstream.request_count(),
        before,
        "the upstream is untouched"
    );
}

/// The frames of a WebSocket whose upgrade carried the secret: the upstream
/// sends it back in a message, across a fragmented one around a ping, and
/// in its close reason; the sandbox reads it redacted everywhere. An
/// upgrade to anything else with a credential in it is refused.
#[test]
fn websocket_frames_that_echo_the_secret_are_redacted() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test"], &ca);
    let port = upstream.port();
    let world = world(&ca, port, json!({}));
    let bearer = format!("Authorization: Bearer {}", placeholder(&world));

    let spec = json!({
        "host": "api.test", "port": port, "cafile": world.sluice_ca,
        "path": "/ws?auth=1", "header": bearer,
    });
    let out = world.python(tls_scripts::WEBSOCKET_READ, &spec, WAIT * 2);
    out.expect_success("WebSocket frames through Sluice");
    let got = out.json();
    let redacted = "Bearer [redacted:credential]";
    assert_eq!(
        got["messages"],
        json!([format!("auth: {redacted}"), format!("echo: {redacted}.")]),
        "{got}"
    );
    assert_eq!(got["pings"], json!([redacted]), "{got}");
    assert_eq!(got["close_code"], 1000, "{got}");
    assert_eq!(got["close_reason"], format!("bye {redacted}"), "{got}");
    assert!(!out.stdout_str().contains(SECRET));
    // The upstream got the secret, and no offer of compressed frames.
    let ws = upstream
        .requests()
        .into_iter()
        .find(|r| r.path.starts_with("/ws"))
        .expect("the upgrade reached the upstream");
    assert_eq!(
        ws.header("authorization"),
        Some(format!("Bearer {SECRET}").as_str())
    );
    assert_eq!(ws.header("sec-websocket-extensions"), None);

    let url = format!("https://api.test:{port}/echo");
    let other = [
        "--http1.1",
        "-H",
        &bearer,
        "-H",
        "Connection: Upgrade",
        "-H",
        "Upgrade: tls/1.3",
    ];
    let curl = world.curl(&world.curl_https(&url, &other));
    assert_eq!(curl.code, 403, "{}", curl.out);
    assert_eq!(curl.json()["reason"], "upgrade_not_redactable");
    assert_eq!(upstream.requests().len(), 1, "only the WebSocket went up");
    assert_nothing_leaked(&world, &[SECRET]);
}

/// The upstream echoes the injected secret written with escapes: every
/// byte as a JSON `\u00XX` (either case of hex), every byte
/// percent-encoded (either case), a mix of those with HTML references and
/// raw bytes, in headers (a `location` among them) and in a body sent in
/// pieces that cut through the escapes. The sandbox reads none of it.
#[test]
fn secrets_echoed_in_escapes_are_redacted() {
    let ca = TestCa::upstream();
    let upstream = AnsweringUpstream::v4(&["api.test"], &ca, echo_escaped);
    let port = upstream.port();
    let world = world(&ca, port, json!({}));
    let bearer = format!("Authorization: Bearer {}", placeholder(&world));

    let url = format!("https://api.test:{port}/escaped");
    let curl = world.curl(&world.curl_https(&url, &["-H", &bearer]));
    assert_eq!(curl.code, 200, "{}", curl.out);
    // A field a JSON parser would have read the secret from, had any
    // escape of it been left.
    let body = curl.json();
    for (field, _) in escaped_writings(SECRET) {
        assert_eq!(body[field], "[redacted:credential]", "{field}: {body}");
    }
    let head = curl.out.stderr_str();
    for header in ["x-echo-json", "x-echo-percent", "x-echo-mixed"] {
        assert!(
            head.contains(&format!("< {header}: [redacted:credential]")),
            "{header}: {head}"
        );
    }
    assert!(
        head.contains("< location: https://app.test/cb?token=[redacted:credential]&state=1"),
        "{head}"
    );
    assert!(head.contains("x-sluice-redacted: credential"), "{head}");
    for (field, written) in escaped_writings(SECRET) {
        assert!(
            !curl.body.contains(&written) && !head.contains(&written),
            "the {field} writing came through"
        );
    }
    assert_nothing_leaked(&world, &[SECRET]);
}

/// The answer of [`secrets_echoed_in_escapes_are_redacted`]'s upstream:
/// the bearer token it was sent, written each way.
fn echo_escaped(head: &hyper::http::request::Parts) -> Answer {
    let token = head
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    let writings = escaped_writings(token);
    let written = |field: &str| {
        writings
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, w)| w.clone())
            .unwrap_or_default()
    };
    let fields: Vec<String> = writings
        .iter()
        .map(|(field, w)| format!("\"{field}\": \"{w}\""))
        .collect();
    let body = format!("{{{}}}", fields.join(", ")).into_bytes();
    Answer {
        headers: vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("x-echo-json".to_owned(), written("json_upper")),
            ("x-echo-percent".to_owned(), written("percent")),
            ("x-echo-mixed".to_owned(), written("mixed")),
            (
                "location".to_owned(),
                format!(
                    "https://app.test/cb?token={}&state=1",
                    written("percent_lower")
                ),
            ),
        ],
        // Pieces of 97 bytes: the cuts fall inside the escapes.
        chunks: body.chunks(97).map(<[u8]>::to_vec).collect(),
    }
}

/// `secret` (ASCII) written with escapes, by name: every byte as
/// `\u00xx`, as `\u00XX`, as `%HH`, as `%hh`, as `&#DD;`, and a mix of
/// all of those, `&#xhh;` and raw bytes.
fn escaped_writings(secret: &str) -> Vec<(&'static str, String)> {
    let each = |f: &dyn Fn(usize, u8) -> String| -> String {
        secret.bytes().enumerate().map(|(i, b)| f(i, b)).collect()
    };
    vec![
        ("json", each(&|_, b| format!("\\u{b:04x}"))),
        ("json_upper", each(&|_, b| format!("\\u{b:04X}"))),
        ("percent", each(&|_, b| format!("%{b:02X}"))),
        ("percent_lower", each(&|_, b| format!("%{b:02x}"))),
        ("html", each(&|_, b| format!("&#{b};"))),
        (
            "mixed",
            each(&|i, b| match i % 6 {
                0 => char::from(b).to_string(),
                1 => format!("\\u{b:04x}"),
                2 => format!("%{b:02X}"),
                3 => format!("&#x{b:x};"),
                4 => format!("%{b:02x}"),
                _ => format!("&#0{b};"),
            }),
        ),
    ]
}

/// Nothing the daemon wrote (log, audit file, metrics) holds any of
/// `secrets`, plain, base64 or URL-encoded.
fn assert_nothing_leaked(world: &World, secrets: &[&str]) {
    let mut written = world.daemon.stderr_lines().join("\n");
    written.push_str(&serde_json::to_string(&world.daemon.audit()).expect("audit JSON"));
    written.push_str(&world.daemon.metrics());
    for secret in secrets {
        for form in [
            (*secret).to_owned(),
            base64(secret.as_bytes()),
            url_encode(secret),
            secret.replace('-', "%2D"),
        ] {
            assert!(
                !written.contains(&form),
                "a secret form leaked into logs/audit/metrics"
            );
        }
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Standard base64, as a client would encode a secret.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| (n << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

#[test]
fn hmac_signatures_are_computed_at_the_edge_and_verify_independently() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test", "other.test"], &ca);
    let port = upstream.port();
    let mut policy = intercepting_policy(
        &["api.test".to_owned(), format!("127.0.0.0/8:{port}")],
        json!({}),
    );
    policy["credentials"] = json!([{ "credential": "signer" }]);
    let key = "hmac-key-0123456789-abcdefghij";
    let world = World::start_with(&ca, &["api.test"], policy, |builder| {
        let path = builder.dir().join("signer.key");
        std::fs::write(&path, key).expect("write key");
        builder.credential(json!({
            "name": "signer",
            "source": { "file": path },
            "hosts": ["api.test"],
            "scheme": {
                "type": "hmac",
                "algorithm": "sha256",
                "header": "X-Signature",
                "encoding": "hex",
                "canonical": "{method}\n{host}\n{path}\n{timestamp}",
                "timestamp_header": "X-Timestamp",
            },
        }));
    });
    let out = world.daemon.cli(&["sandbox", "env", "sb1"]);
    out.expect_success("sluice sandbox env");
    let text = out.stdout_str();
    let placeholder = text
        .lines()
        .find_map(|l| l.strip_prefix("export SIGNER="))
        .expect("SIGNER placeholder")
        .trim_matches('\'')
        .to_owned();

    let url = format!("https://api.test:{port}/echo");
    let header = format!("X-Signature: {placeholder}");
    let curl = world.curl(&world.curl_https(&url, &["-H", &header]));
    assert_eq!(curl.code, 200, "{}", curl.out);
    let seen = upstream.requests().last().cloned().expect("a request");
    let get = |name: &str| {
        seen.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {name} at the upstream: {seen:?}"))
    };
    let (signature, timestamp) = (get("x-signature"), get("x-timestamp"));
    assert_ne!(signature, placeholder);

    // Verified outside Sluice, with Python's hmac.
    // `{host}` is the Host header as sent: the port is not the default.
    let message = format!("GET\napi.test:{port}\n/echo\n{timestamp}");
    let script = "import hmac,hashlib,sys; print(hmac.new(sys.argv[1].encode(), sys.argv[2].encode(), hashlib.sha256).hexdigest())";
    let python = sluice_e2e::python3();
    let out = sluice_e2e::run::host(
        &[
            python.as_os_str(),
            "-c".as_ref(),
            script.as_ref(),
            key.as_ref(),
            message.as_ref(),
        ],
        WAIT,
    );
    out.expect_success("python hmac");
    assert_eq!(out.stdout_str().trim(), signature);
}

/// The placeholder sandbox sb1 holds for the credential whose environment
/// variable is `var`.
fn placeholder_of(world: &World, var: &str) -> String {
    let out = world.daemon.cli(&["sandbox", "env", "sb1"]);
    out.expect_success("sluice sandbox env");
    let text = out.stdout_str();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("export {var}=")))
        .unwrap_or_else(|| panic!("no {var} placeholder in:\n{text}"))
        .trim_matches('\'')
        .to_owned()
}

/// `n` concurrent `GET /echo` from the sandbox, each on its own TLS
/// connection, carrying `header`; asserts every one got 200.
fn concurrent(world: &World, port: u16, n: usize, header: &str) {
    let spec = json!({
        "host": "api.test", "port": port, "cafile": world.sluice_ca, "n": n, "header": header,
    });
    let out =
        sluice_e2e::in_cgroup(&world.sb1).python(CONCURRENT_WITH_HEADER, &[&spec.to_string()]);
    out.expect_success("concurrent requests through Sluice");
}

/// A file in the daemon's directory holding `secret`; its path as JSON.
fn secret_file(builder: &sluice_e2e::DaemonBuilder, name: &str, secret: &str) -> Value {
    let path = builder.dir().join(name);
    std::fs::write(&path, format!("{secret}\n")).expect("write secret");
    json!({ "file": path })
}

const CLIENT_SECRET: &str = "cc-client-SECRET-0123456789/+=abc";
const REFRESH_TOKEN: &str = "rt-refresh-SECRET-9876543210-xyz";
const RT_CLIENT_SECRET: &str = "rt-client-SECRET-5555555555-qqq";

/// A world whose sandbox may reach api.test and other.test, with oauth2
/// credentials: `cc` (client credentials at `/token` of `tokens`),
/// `broken` (its endpoint answers 503) and `badjson` (not JSON), and `rt`
/// (refresh token at `rt_path` of `refresh`).
fn oauth_world(
    ca: &TestCa,
    port: u16,
    tokens: &TokenEndpoint,
    (refresh, rt_path): (&TokenEndpoint, &str),
) -> World {
    let mut policy = intercepting_policy(
        &[
            "api.test".to_owned(),
            "other.test".to_owned(),
            format!("127.0.0.0/8:{port}"),
        ],
        json!({}),
    );
    policy["credentials"] = json!([
        { "credential": "cc" }, { "credential": "rt" },
        { "credential": "broken" }, { "credential": "badjson" },
    ]);
    let names = ["api.test", "other.test", "auth.test"];
    World::start_with(ca, &names, policy, |builder| {
        let url = |endpoint: &TokenEndpoint, path: &str| {
            format!("https://auth.test:{}{path}", endpoint.port())
        };
        let cc = secret_file(builder, "cc.secret", CLIENT_SECRET);
        let rt = secret_file(builder, "rt.secret", REFRESH_TOKEN);
        let rt_client = secret_file(builder, "rt-client.secret", RT_CLIENT_SECRET);
        builder.credential(json!({
            "name": "cc", "source": cc, "hosts": ["api.test"],
            "scheme": {
                "type": "oauth2", "grant": "client_credentials",
                "token_url": url(tokens, "/token"), "client_id": "sluice-test",
                "scope": "read write",
            },
        }));
        builder.credential(json!({
            "name": "rt", "source": rt, "hosts": ["api.test"],
            "scheme": {
                "type": "oauth2", "grant": "refresh_token",
                "token_url": url(refresh, rt_path), "client_id": "rt-app",
                "client_secret": rt_client, "client_auth": "body",
            },
        }));
        for (name, path) in [("broken", "/fail"), ("badjson", "/badjson")] {
            let source = secret_file(builder, &format!("{name}.secret"), CLIENT_SECRET);
            builder.credential(json!({
                "name": name, "source": source, "hosts": ["api.test"],
                "scheme": {
                    "type": "oauth2", "grant": "client_credentials",
                    "token_url": url(tokens, path), "client_id": "x",
                },
            }));
        }
    })
}

#[test]
fn oauth_client_credentials_fetch_one_token_for_many_requests_and_fail_loudly() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test", "other.test"], &ca);
    let port = upstream.port();
    let tokens = TokenEndpoint::start("auth.test", &ca, &[3600]);
    let refresh = TokenEndpoint::start("auth.test", &ca, &[3600]);
    let world = oauth_world(&ca, port, &tokens, (&refresh, "/token"));
    let bearer = format!("Authorization: Bearer {}", placeholder_of(&world, "CC"));

    // 50 requests at once, on a cold cache: one token request.
    concurrent(&world, port, 50, &bearer);
    assert_eq!(tokens.count("/token"), 1, "{:?}", tokens.requests());
    let token = tokens.issued()[0].clone();
    let seen = upstream.requests();
    assert_eq!(seen.len(), 50);
    let want = format!("Bearer {token}");
    assert!(
        seen.iter()
            .all(|r| r.header("authorization") == Some(want.as_str()))
    );

    // How the daemon asked: client credentials, basic client auth.
    let asked = &tokens.requests()[0];
    assert_eq!(
        asked.field("grant_type").as_deref(),
        Some("client_credentials")
    );
    assert_eq!(asked.field("scope").as_deref(), Some("read write"));
    let pair = format!("sluice-test:{}", url_encode(CLIENT_SECRET));
    assert_eq!(
        asked.authorization.as_deref(),
        Some(format!("Basic {}", base64(pair.as_bytes())).as_str())
    );

    // The echo of the token comes back redacted.
    let url = format!("https://api.test:{port}/echo");
    let curl = world.curl(&world.curl_https(&url, &["-H", &bearer]));
    assert_eq!(curl.code, 200, "{}", curl.out);
    assert_eq!(
        curl.json()["headers"]["authorization"],
        "Bearer [redacted:credential]"
    );
    assert!(!curl.body.contains(&token));
    assert!(
        curl.out
            .stderr_str()
            .contains("x-sluice-redacted: credential"),
        "{}",
        curl.out
    );
    assert_eq!(tokens.count("/token"), 1, "the cached token was reused");

    // A token endpoint that fails: 502 saying so, upstream untouched.
    let before = upstream.request_count();
    for (var, credential) in [("BROKEN", "broken"), ("BADJSON", "badjson")] {
        let header = format!("Authorization: Bearer {}", placeholder_of(&world, var));
        let curl = world.curl(&world.curl_https(&url, &["-H", &header]));
        assert_eq!(curl.code, 502, "{}", curl.out);
        let answer = curl.json();
        assert_eq!(
            answer["reason"], "credential_token_endpoint_failed",
            "{answer}"
        );
        assert_eq!(answer["credential"], credential);
        assert!(
            answer["detail"]
                .as_str()
                .unwrap_or("")
                .contains("token endpoint"),
            "{answer}"
        );
        assert!(!curl.body.contains(CLIENT_SECRET));
    }
    assert_eq!(upstream.request_count(), before, "the upstream saw nothing");
    world
        .daemon
        .wait_audit("the token endpoint failures", 2, |e| {
            e["event"] == "credential" && e["reason"] == "credential_token_endpoint_failed"
        });
    assert!(
        world.metric(r#"sluice_upstream_errors_total{reason="credential_token_endpoint_failed"}"#)
            >= 2.0
    );

    let issued = tokens.issued();
    let mut secrets: Vec<&str> = issued.iter().map(String::as_str).collect();
    secrets.push(CLIENT_SECRET);
    assert_nothing_leaked(&world, &secrets);
}

#[test]
fn oauth_refresh_tokens_are_refreshed_once_when_they_expire() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test", "other.test"], &ca);
    let port = upstream.port();
    let tokens = TokenEndpoint::start("auth.test", &ca, &[3600]);
    // The first token expires in a second; the next ones do not.
    let refresh = TokenEndpoint::start("auth.test", &ca, &[1, 3600]);
    let world = oauth_world(&ca, port, &tokens, (&refresh, "/token"));
    let bearer = format!("Authorization: Bearer {}", placeholder_of(&world, "RT"));

    let url = format!("https://api.test:{port}/echo");
    let curl = world.curl(&world.curl_https(&url, &["-H", &bearer]));
    assert_eq!(curl.code, 200, "{}", curl.out);
    assert_eq!(refresh.count("/token"), 1);
    let asked = &refresh.requests()[0];
    assert_eq!(asked.field("grant_type").as_deref(), Some("refresh_token"));
    assert_eq!(asked.field("refresh_token").as_deref(), Some(REFRESH_TOKEN));
    assert_eq!(asked.field("client_id").as_deref(), Some("rt-app"));
    assert_eq!(
        asked.field("client_secret").as_deref(),
        Some(RT_CLIENT_SECRET)
    );
    assert_eq!(asked.authorization, None, "client_auth: body");

    // Bursts of concurrent requests until one of them finds the token
    // expired: exactly one refresh for the whole burst.
    wait_until("the first token to expire and be refreshed", WAIT, || {
        concurrent(&world, port, 10, &bearer);
        refresh.issued().len() >= 2
    });
    assert_eq!(refresh.count("/token"), 2, "{:?}", refresh.requests());
    let before = upstream.request_count();
    concurrent(&world, port, 20, &bearer);
    assert_eq!(refresh.count("/token"), 2, "the new token is cached");
    let want = format!("Bearer {}", refresh.issued()[1]);
    let seen = upstream.requests();
    assert!(
        seen[before..]
            .iter()
            .all(|r| r.header("authorization") == Some(want.as_str()))
    );

    let issued = refresh.issued();
    let mut secrets: Vec<&str> = issued.iter().map(String::as_str).collect();
    secrets.extend([REFRESH_TOKEN, RT_CLIENT_SECRET]);
    assert_nothing_leaked(&world, &secrets);
}

/// An endpoint that rotates refresh tokens retires each one it replaces:
/// a restart must go on from the newest, not from the source file's.
#[test]
fn a_rotated_refresh_token_survives_a_restart() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test", "other.test"], &ca);
    let port = upstream.port();
    let tokens = TokenEndpoint::start("auth.test", &ca, &[3600]);
    let refresh = TokenEndpoint::start("auth.test", &ca, &[3600]);
    let mut world = oauth_world(&ca, port, &tokens, (&refresh, "/rotate"));
    let bearer = format!("Authorization: Bearer {}", placeholder_of(&world, "RT"));
    let url = format!("https://api.test:{port}/echo");

    let curl = world.curl(&world.curl_https(&url, &["-H", &bearer]));
    assert_eq!(curl.code, 200, "{}", curl.out);
    world.daemon.restart();
    let curl = world.curl(&world.curl_https(&url, &["-H", &bearer]));
    assert_eq!(curl.code, 200, "after the restart: {}", curl.out);

    let sent: Vec<Option<String>> = refresh
        .requests()
        .iter()
        .map(|r| r.field("refresh_token"))
        .collect();
    assert_eq!(
        sent,
        [Some(REFRESH_TOKEN.to_owned()), Some("rt-1".to_owned())],
        "the second fetch sends the token the first one rotated to"
    );
    // Kept sealed under the state key (beside state_dir, not in it): the
    // file holds neither the source token nor the one rotated to.
    let kept = world.daemon.dir().join("state/oauth_refresh.json");
    let bytes = std::fs::read(&kept).expect("kept tokens file");
    assert!(bytes.starts_with(b"\x89SLS"), "sealed");
    // Every refresh token here starts `rt-`.
    assert!(!bytes.windows(3).any(|w| w == b"rt-"), "in the clear");
    assert!(world.daemon.dir().join("state.key").exists());
}

const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYzSLUICEKEY";
const AWS_KEY_ID: &str = "AKIAREALKEYID0000042";
const AWS_SESSION: &str = "FwoGZXIvYXdzEXAMPLEsessionTOKEN0123456789";

#[test]
fn sigv4_signatures_are_made_at_the_edge_and_verify_independently() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test"], &ca);
    let port = upstream.port();
    let mut policy = intercepting_policy(
        &["api.test".to_owned(), format!("127.0.0.0/8:{port}")],
        json!({}),
    );
    policy["credentials"] = json!([{ "credential": "aws" }]);
    let world = World::start_with(&ca, &["api.test"], policy, |builder| {
        let secret = secret_file(builder, "aws.secret", AWS_SECRET);
        let key_id = secret_file(builder, "aws.id", AWS_KEY_ID);
        let session = secret_file(builder, "aws.session", AWS_SESSION);
        builder.credential(json!({
            "name": "aws", "source": secret, "hosts": ["api.test"],
            "scheme": {
                "type": "aws_sigv4", "access_key_id": key_id, "session_token": session,
                "region": "us-east-1", "service": "s3", "payload": "signed",
            },
            "placeholder": { "prefix": "AKIA", "length": 20 },
        }));
    });
    let placeholder = placeholder_of(&world, "AWS");
    assert!(placeholder.starts_with("AKIA") && placeholder.len() == 20);
    // What an SDK in the sandbox sends, signed with a made-up secret key.
    let sandbox_auth = format!(
        "Authorization: AWS4-HMAC-SHA256 Credential={placeholder}/20240101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=0000"
    );
    let host = format!("api.test:{port}");
    let verify = |record: &sluice_e2e::RequestRecord| {
        let headers: serde_json::Map<String, Value> = record
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), Value::from(v.clone())))
            .collect();
        let authorization = record
            .header("authorization")
            .expect("authorization")
            .to_owned();
        assert!(
            authorization.contains(&format!("Credential={AWS_KEY_ID}/")),
            "{authorization}"
        );
        let python = sluice_e2e::python3();
        let headers = Value::Object(headers).to_string();
        let args = [
            python.as_os_str(),
            "-c".as_ref(),
            SIGV4_VERIFY.as_ref(),
            AWS_SECRET.as_ref(),
            "us-east-1".as_ref(),
            "s3".as_ref(),
            record.method.as_ref(),
            record.path.as_ref(),
            host.as_ref(),
            headers.as_ref(),
            authorization.as_ref(),
        ];
        let out = sluice_e2e::run::host(&args, WAIT);
        out.expect_success("python SigV4 verifier");
        assert_eq!(out.stdout_str().trim(), "ok", "{record:?}");
    };

    let url = format!("https://api.test:{port}/echo?b=2&a=1");
    let args = [
        "-H",
        &sandbox_auth,
        "-H",
        "x-amz-date: 20240101T000000Z",
        "-H",
        "x-amz-meta-color: blue",
    ];
    let curl = world.curl(&world.curl_https(&url, &args));
    assert_eq!(curl.code, 200, "{}", curl.out);
    let seen = upstream.requests().last().cloned().expect("a request");
    assert_eq!(seen.header("x-amz-security-token"), Some(AWS_SESSION));
    assert_eq!(seen.header("x-amz-meta-color"), Some("blue"));
    assert!(
        seen.header("authorization")
            .is_some_and(|a| a.contains("x-amz-meta-color"))
    );
    assert_ne!(seen.header("x-amz-date"), Some("20240101T000000Z"));
    verify(&seen);
    let echo = curl.json();
    let auth_echo = echo["headers"]["authorization"].as_str().unwrap_or("");
    assert!(
        auth_echo.contains("Credential=[redacted:credential]/"),
        "{echo}"
    );
    assert_eq!(
        echo["headers"]["x-amz-security-token"],
        "[redacted:credential]"
    );
    assert!(
        curl.out
            .stderr_str()
            .contains("x-sluice-redacted: credential"),
        "{}",
        curl.out
    );

    // A body: its SHA-256 is signed.
    let url = format!("https://api.test:{port}/upload");
    let body = "{\"object\":\"contents\"}";
    let curl = world.curl(&world.curl_https(
        &url,
        &["-H", &sandbox_auth, "-X", "PUT", "--data-binary", body],
    ));
    assert_eq!(curl.code, 200, "{}", curl.out);
    let seen = upstream.requests().last().cloned().expect("a request");
    let mut sha = Sha256::new();
    sha.update(body.as_bytes());
    let digest = sha.hex();
    assert_eq!(seen.header("x-amz-content-sha256"), Some(digest.as_str()));
    assert_eq!(seen.body_sha256.as_deref(), Some(digest.as_str()));
    verify(&seen);

    assert_nothing_leaked(&world, &[AWS_SECRET, AWS_KEY_ID, AWS_SESSION]);
}

#[test]
fn placeholders_in_bodies_are_replaced_only_toward_their_hosts() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["api.test", "other.test"], &ca);
    let port = upstream.port();
    let world = world(
        &ca,
        port,
        json!({ "credentials": [{ "credential": "api", "allow_in_body": true }] }),
    );
    let placeholder = placeholder(&world);
    let body = format!("{{\"api_key\":\"{placeholder}\",\"again\":\"{placeholder}\"}}");
    let sent = body.replace(&placeholder, SECRET);

    let url = format!("https://api.test:{port}/upload");
    let curl = world.curl(&world.curl_https(
        &url,
        &[
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            &body,
        ],
    ));
    assert_eq!(curl.code, 200, "{}", curl.out);
    let mut sha = Sha256::new();
    sha.update(sent.as_bytes());
    let want = sha.hex();
    let seen = upstream.requests().last().cloned().expect("a request");
    assert_eq!(
        seen.body_sha256.as_deref(),
        Some(want.as_str()),
        "the upstream got the secret"
    );
    assert_eq!(seen.body_len, sent.len() as u64);
    assert_eq!(
        seen.header("content-length"),
        Some(sent.len().to_string().as_str())
    );

    // The same body toward another host: refused, and that host sees nothing.
    let before = upstream.request_count();
    let url = format!("https://other.test:{port}/upload");
    let curl = world.curl(&world.curl_https(&url, &["--data-binary", &body]));
    assert_eq!(curl.code, 403, "{}", curl.out);
    assert_eq!(curl.json()["reason"], "exfiltration");
    assert_eq!(upstream.request_count(), before, "other.test saw nothing");
    world
        .daemon
        .wait_audit("the body exfiltration refusal", 1, |e| {
            e["event"] == "credential" && e["reason"] == "exfiltration"
        });

    // A body too large to check is refused, not forwarded unchecked.
    let big = world.daemon.dir().join("big.body");
    std::fs::write(&big, vec![b'x'; 2 * 1024 * 1024]).expect("write body");
    let url = format!("https://api.test:{port}/upload");
    let data = format!("@{}", big.display());
    let curl = world.curl(&world.curl_https(&url, &["--data-binary", &data]));
    assert_eq!(curl.code, 413, "{}", curl.out);
    assert_eq!(curl.json()["reason"], "credential_body_too_large");
    assert_eq!(upstream.request_count(), before, "nothing was forwarded");

    assert_nothing_leaked(&world, &[SECRET]);
}

#[test]
fn over_plain_http_the_secret_goes_only_to_an_address_of_the_name() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::plain_v4();
    let port = upstream.port();
    // Addresses decide the network policy here: no name rule asks that
    // the name resolve to the address dialed. The sandbox's DNS answers
    // names no rule names only under `resolve_unlisted`.
    let policy = json!({
        "credentials": [{"credential": "api", "allow_plain_http": true}],
        "network": {
            "allow_out": [format!("127.0.0.0/8:{port}")],
            "deny_out": ["ALL_TRAFFIC"],
            "decide_without_decryption": false,
            "dns": {"resolve_unlisted": true},
        },
    });
    let world = world(&ca, port, policy);
    let bearer = format!("Authorization: Bearer {}", placeholder(&world));

    // api.test at the address the name resolves to: injected.
    let url = format!("http://api.test:{port}/echo");
    let curl = world.curl(&curl_args(None, &url, &["-H", &bearer]));
    assert_eq!(curl.code, 200, "{}", curl.out);
    assert_eq!(
        authorization_seen(&upstream).as_deref(),
        Some(format!("Bearer {SECRET}").as_str())
    );
    // An upstream that writes the secret into its HTTP/1.1 status line:
    // the sandbox gets the standard reason phrase.
    let url = format!("http://api.test:{port}/echo?reason=1");
    let curl = world.curl(&curl_args(None, &url, &["-H", &bearer]));
    assert_eq!(curl.code, 200, "{}", curl.out);
    let said = curl.out.stderr_str();
    assert!(
        said.contains("< HTTP/1.1 200 OK\r") && !said.contains(SECRET),
        "{said}"
    );

    // The same Host at an address of the sandbox's choosing, which the
    // network policy allows but the name does not resolve to: over plain
    // HTTP nothing would vouch for the receiver, so the secret is not
    // sent, and nothing is.
    let before = upstream.request_count();
    let url = format!("http://127.0.0.2:{port}/echo");
    let host = "Host: api.test".to_owned();
    let curl = world.curl(&curl_args(None, &url, &["-H", &bearer, "-H", &host]));
    assert_eq!(curl.code, 403, "{}", curl.out);
    assert_eq!(curl.json()["reason"], "plain_http_address");
    assert_eq!(upstream.request_count(), before);
}

/// The `Location` of the answer curl printed (`-v`).
fn location(curl: &Curl) -> String {
    let stderr = curl.out.stderr_str();
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("< location: "))
        .unwrap_or_else(|| panic!("no Location in {stderr}"))
        .to_owned()
}
