//! The interception harness itself, without a daemon: the HTTPS upstream
//! serves every route over h2 and HTTP/1.1 to clients that trust the test
//! CA, its bad-certificate options make clients fail the way Sluice must
//! notice, and the Python clients report what they see. If these fail, the
//! interception tests' failures say nothing about Sluice.

use serde_json::{Value, json};
use sluice_e2e::{
    HttpsUpstream, TestCa, UpstreamOptions, WAIT,
    pki::Validity,
    python3, run,
    stream_body::pattern_sha256,
    tls_scripts::{self, spec_arg},
};

/// Runs a script on the host (no sandbox, no Sluice).
fn host_script(script: &str, spec: &Value, dir: &std::path::Path) -> run::Output {
    let python = python3().to_string_lossy().into_owned();
    let arg = spec_arg(spec, dir);
    run::host(&[python.as_str(), "-c", script, &arg], WAIT * 4)
}

struct World {
    dir: tempfile::TempDir,
    ca: TestCa,
    ca_file: String,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = TestCa::upstream();
        let path = dir.path().join("upstream-ca.pem");
        ca.write_pem(&path);
        World {
            ca_file: path.to_string_lossy().into_owned(),
            dir,
            ca,
        }
    }

    fn spec(&self, upstream: &HttpsUpstream, extra: Value) -> Value {
        let mut spec = json!({
            "host": "upstream.test",
            "port": upstream.port(),
            "connect": "127.0.0.1",
            "cafile": self.ca_file,
        });
        for (k, v) in extra.as_object().expect("object") {
            spec[k] = v.clone();
        }
        spec
    }
}

#[test]
fn upstream_echo_over_h2_and_http1_records_the_request() {
    let world = World::new();
    let upstream = HttpsUpstream::v4(&["upstream.test"], &world.ca);

    let spec = world.spec(
        &upstream,
        json!({ "path": "/echo?x=1", "method": "POST", "body": "abc",
                "headers": { "X-Harness": "yes" }, "ca_subject_of": world.ca_file }),
    );
    let out = host_script(tls_scripts::HTTPS_REQUEST, &spec, world.dir.path());
    out.expect_success("python https request");
    let result = out.json();
    assert_eq!(result["status"], 200, "{out}");
    assert_eq!(result["peer"]["issuer"], result["ca_subject"], "{out}");
    assert_eq!(result["peer"]["san"], json!(["upstream.test"]), "{out}");
    let echo: Value = serde_json::from_str(result["body"].as_str().expect("body")).expect("json");
    assert_eq!(echo["method"], "POST");
    assert_eq!(echo["path"], "/echo?x=1");
    assert_eq!(echo["body_len"], 3);
    assert_eq!(echo["headers"]["x-harness"], "yes");

    let url = format!("https://upstream.test:{}/echo", upstream.port());
    let resolve = format!("upstream.test:{}:127.0.0.1", upstream.port());
    let out = run::host(
        &[
            "curl",
            "-sS",
            "--http2",
            "--cacert",
            &world.ca_file,
            "--resolve",
            &resolve,
            "-w",
            "\n%{http_version}",
            &url,
        ],
        WAIT,
    );
    out.expect_success("curl --http2");
    assert!(out.stdout_str().ends_with("\n2"), "{out}");

    let requests = upstream.wait_requests(2, WAIT);
    assert_eq!(requests[0].header("x-harness"), Some("yes"));
    assert_eq!(requests[0].version, "HTTP/1.1");
    assert_eq!(requests[0].body_len, 3);
    assert_eq!(requests[0].sni.as_deref(), Some("upstream.test"));
    assert_eq!(
        requests[0].response_body.as_deref(),
        Some(result["body"].as_str().expect("body").as_bytes())
    );
    assert_eq!(requests[1].version, "HTTP/2.0");
    let alpns: Vec<Option<String>> = upstream.handshakes().into_iter().map(|h| h.alpn).collect();
    assert!(alpns.contains(&Some("h2".into())), "{alpns:?}");
}

#[test]
fn upstream_sse_waits_for_the_ack_and_websocket_echoes() {
    let world = World::new();
    let upstream = HttpsUpstream::v4(&["upstream.test"], &world.ca);

    let out = host_script(
        tls_scripts::SSE_WITH_ACK,
        &world.spec(&upstream, json!({})),
        world.dir.path(),
    );
    out.expect_success("SSE with ack");
    assert_eq!(out.json()["content_type"], "text/event-stream");

    let out = host_script(
        tls_scripts::WEBSOCKET_ECHO,
        &world.spec(&upstream, json!({ "path": "/ws" })),
        world.dir.path(),
    );
    out.expect_success("websocket echo");
    assert!(upstream.ws_echoed() > 70_000);
}

#[test]
fn upstream_streams_downloads_and_hashes_uploads() {
    let world = World::new();
    let upstream = HttpsUpstream::v4(&["upstream.test"], &world.ca);
    let n: u64 = 8 * 1024 * 1024 + 12_345;

    let spec = world.spec(&upstream, json!({ "mode": "download", "n": n }));
    let out = host_script(tls_scripts::BULK_TRANSFER, &spec, world.dir.path());
    out.expect_success("download");
    assert_eq!(out.json()["sha256"], pattern_sha256(n), "{out}");

    let spec = world.spec(&upstream, json!({ "mode": "upload", "n": n }));
    let out = host_script(tls_scripts::BULK_TRANSFER, &spec, world.dir.path());
    out.expect_success("upload");
    let upload = upstream
        .requests()
        .into_iter()
        .find(|r| r.path == "/upload")
        .expect("upload recorded");
    assert_eq!(upload.body_len, n);
    assert_eq!(
        upload.body_sha256,
        out.json()["sha256"].as_str().map(str::to_owned)
    );
}

#[test]
fn raw_and_concurrent_clients_read_responses() {
    let world = World::new();
    let upstream = HttpsUpstream::v4(&["upstream.test"], &world.ca);
    let request = format!(
        "GET /echo HTTP/1.1\r\nHost: upstream.test:{}\r\nX-Raw: 1\r\n\r\n",
        upstream.port()
    );
    let spec = json!({
        "host": "127.0.0.1", "port": upstream.port(), "sni": "upstream.test",
        "cafile": world.ca_file,
        "cases": [{ "name": "plain", "hex": sluice_e2e::scripts::hex(request.as_bytes()) }],
    });
    let out = host_script(tls_scripts::RAW_TLS_REQUESTS, &spec, world.dir.path());
    out.expect_success("raw request");
    assert_eq!(out.json()["results"]["plain"]["status"], 200, "{out}");

    let out = host_script(
        tls_scripts::CONCURRENT_HTTPS,
        &world.spec(&upstream, json!({ "n": 20 })),
        world.dir.path(),
    );
    out.expect_success("20 concurrent handshakes");
    assert_eq!(upstream.handshakes().len(), 21);
}

#[test]
fn bad_certificate_options_fail_verification_as_intended() {
    let world = World::new();
    let evil = TestCa::evil();
    let cases = [
        (
            HttpsUpstream::v4(&["upstream.test"], &evil),
            "self-signed certificate in certificate chain",
        ),
        (
            HttpsUpstream::start(
                "127.0.0.1".parse().expect("ip"),
                &["upstream.test"],
                &world.ca,
                UpstreamOptions {
                    cert_names: Some(vec!["other.test".into()]),
                    ..UpstreamOptions::default()
                },
            ),
            "Hostname mismatch",
        ),
        (
            HttpsUpstream::start(
                "127.0.0.1".parse().expect("ip"),
                &["upstream.test"],
                &world.ca,
                UpstreamOptions {
                    validity: Validity::Expired,
                    ..UpstreamOptions::default()
                },
            ),
            "certificate has expired",
        ),
    ];
    for (upstream, expected) in &cases {
        let spec = world.spec(upstream, json!({ "path": "/echo" }));
        let out = host_script(tls_scripts::HTTPS_REQUEST, &spec, world.dir.path());
        out.expect_failure("a bad certificate");
        let error = out.json()["error"].as_str().unwrap_or_default().to_owned();
        assert!(error.contains(expected), "expected {expected:?}:\n{out}");
        assert_eq!(upstream.request_count(), 0);
    }
}
