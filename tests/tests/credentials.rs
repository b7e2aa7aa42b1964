//! Credentials end to end: the sandbox holds a placeholder, Sluice swaps it
//! for the real secret only toward the credential's hosts, redacts the secret
//! from what comes back, re-reads a rotated secret without a restart, and
//! answers dry runs with a preview. The secret never shows up in the
//! daemon's logs, audit log or metrics.

use serde_json::{Value, json};
use sluice_e2e::{
    HttpsUpstream, TestCa, WAIT,
    interception::{World, intercepting_policy},
    wait_until,
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

    // Nothing the daemon wrote holds a secret, in any common encoding.
    let mut written = world.daemon.stderr_lines().join("\n");
    written.push_str(&serde_json::to_string(&world.daemon.audit()).expect("audit JSON"));
    written.push_str(&world.daemon.metrics());
    for secret in [SECRET, ROTATED] {
        for form in [
            secret.to_owned(),
            base64(secret.as_bytes()),
            secret.replace('-', "%2D"),
        ] {
            assert!(
                !written.contains(&form),
                "a secret form leaked into logs/audit/metrics"
            );
        }
    }
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
    let message = format!("GET\napi.test\n/echo\n{timestamp}");
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
