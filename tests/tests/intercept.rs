//! TLS interception end to end: with `decide_without_decryption: false`
//! Sluice terminates the sandbox's TLS with a certificate from its own CA,
//! proxies HTTP/1.1, HTTP/2, SSE, WebSocket upgrades and bulk bodies
//! (streaming) to upstreams it verifies, answers upstream failures with a
//! 502 naming the upstream and malformed requests with a 400, and leaves
//! passthrough names (and policies that do not intercept) undecrypted.
//!
//! Each test has its own daemon, sandbox and upstreams (on 127.0.0.1, a
//! free port, certificates from a test CA only that daemon trusts).

use std::time::Duration;

use serde_json::{Value, json};
use sluice_e2e::{
    HttpsUpstream, RequestRecord, TestCa, UpstreamOptions, WAIT,
    interception::{LOCALHOST, World, allow_loopback, curl_args, intercepting_policy},
    pki::Validity,
    scripts::{self, hex},
    stream_body::pattern_sha256,
    tls_scripts::{self, across_a_change},
    wait_until, write_policy,
};

/// The request (by a header the test set on it) among what the upstream saw.
fn request_tagged<'a>(requests: &'a [RequestRecord], tag: &str) -> &'a RequestRecord {
    requests
        .iter()
        .find(|r| r.header("x-sluice-e2e") == Some(tag))
        .unwrap_or_else(|| panic!("no request tagged {tag:?} at the upstream: {requests:#?}"))
}

#[test]
fn https_is_intercepted_over_http1_and_http2_with_a_certificate_from_sluices_ca() {
    let ca = TestCa::upstream();
    let (upstream, world) = World::intercepting(&ca, "upstream.test");
    let port = upstream.port();
    let url = format!("https://upstream.test:{port}/echo?q=1");

    for (flag, version) in [("--http1.1", "1.1"), ("--http2", "2")] {
        let tag = format!("curl{flag}");
        let header = format!("X-Sluice-E2E: {tag}");
        let curl = world.curl(&world.curl_https(&url, &[flag, "-H", &header]));
        assert_eq!(curl.code, 200, "{curl}");
        assert_eq!(
            curl.version, version,
            "Sluice speaks what curl asked for\n{curl}"
        );
        let stderr = curl.out.stderr_str();
        assert!(
            stderr.contains("SSL certificate verify ok"),
            "only Sluice's CA is trusted\n{curl}"
        );
        assert!(
            stderr.contains("subjectAltName: host \"upstream.test\" matched"),
            "{curl}"
        );
        let issuer = curl.issuer().unwrap_or_else(|| panic!("no issuer\n{curl}"));
        assert!(
            !issuer.contains(ca.common_name()),
            "the sandbox must see Sluice's certificate, not the upstream's\n{curl}"
        );

        let requests = upstream.wait_requests(1, WAIT);
        let seen = request_tagged(&requests, &tag);
        assert_eq!(seen.method, "GET");
        assert_eq!(seen.path, "/echo?q=1");
        assert_eq!(
            seen.response_body.as_deref(),
            Some(curl.body.as_bytes()),
            "the sandbox gets exactly the upstream's body\n{curl}"
        );
    }

    let spec = json!({
        "host": "upstream.test", "port": port, "cafile": world.sluice_ca,
        "path": "/echo?from=python", "method": "POST", "body": "hello",
        "headers": { "X-Sluice-E2E": "python" },
        "ca_subject_of": world.sluice_ca,
    });
    let out = world.python(tls_scripts::HTTPS_REQUEST, &spec, WAIT);
    out.expect_success("python https through Sluice");
    let result = out.json();
    assert_eq!(result["status"], 200, "{out}");
    assert_eq!(
        result["peer"]["issuer"], result["ca_subject"],
        "issued by Sluice's CA\n{out}"
    );
    assert!(
        result["peer"]["san"]
            .as_array()
            .is_some_and(|s| s.contains(&json!("upstream.test"))),
        "{out}"
    );
    let requests = upstream.requests();
    let seen = request_tagged(&requests, "python");
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        ("POST", "/echo?from=python")
    );
    assert_eq!(seen.body_len, 5);
    assert_eq!(
        seen.response_body.as_deref(),
        result["body"].as_str().map(str::as_bytes)
    );

    // Sluice verified the upstream under the name the sandbox asked for.
    let handshakes = upstream.handshakes();
    assert!(
        handshakes
            .iter()
            .all(|h| h.sni.as_deref() == Some("upstream.test")),
        "{handshakes:?}"
    );
    world.daemon.wait_metric_at_least(
        "sluice_intercepted_requests_total{status_class=\"2xx\"}",
        3.0,
    );
    world
        .daemon
        .wait_metric_at_least("sluice_certificates_minted_total", 1.0);
    world
        .daemon
        .wait_audit("allowed connections to upstream.test", 3, |e| {
            e["event"] == "connection"
                && e["verdict"] == "allow"
                && e["sandbox"] == "sb1"
                && e["sni"] == "upstream.test"
        });
}

#[test]
fn server_sent_events_reach_the_sandbox_as_they_are_sent() {
    let ca = TestCa::upstream();
    let (upstream, world) = World::intercepting(&ca, "upstream.test");
    let port = upstream.port();

    // HTTP/1.1: the client acks event one through Sluice on a second
    // connection; a buffering proxy would hold event one until the upstream
    // gave up waiting (and said `timeout`).
    let spec = json!({ "host": "upstream.test", "port": port, "cafile": world.sluice_ca });
    let out = world.python(tls_scripts::SSE_WITH_ACK, &spec, Duration::from_secs(40));
    out.expect_success("SSE over HTTP/1.1 with an ack in between");
    assert_eq!(out.json()["ack_status"], 200, "{out}");

    // HTTP/2: curl writes events to a file as they arrive; the test acks
    // once event one is there.
    let events = world.daemon.dir().join("sse-h2.txt");
    let events_path = events.to_string_lossy().into_owned();
    let url = format!("https://upstream.test:{port}/sse");
    let args = world.curl_https(&url, &["--http2", "-N", "-o", &events_path]);
    let running = sluice_e2e::in_cgroup(&world.sb1)
        .timeout(Duration::from_secs(40))
        .spawn(&args);
    wait_until(
        "event one in curl's output",
        Duration::from_secs(20),
        || std::fs::read_to_string(&events).is_ok_and(|t| t.contains("data: one")),
    );
    upstream.ack();
    let out = running.wait();
    out.expect_success("curl --http2 -N /sse");
    assert!(out.stdout_str().ends_with("\n200 2"), "{out}");
    assert_eq!(
        std::fs::read_to_string(&events).expect("events"),
        "data: one\n\ndata: two\n\n",
        "event one must arrive before the upstream sends the rest\n{out}"
    );
}

#[test]
fn websocket_upgrade_echoes_through_sluice() {
    let ca = TestCa::upstream();
    let (upstream, world) = World::intercepting(&ca, "upstream.test");
    let port = upstream.port();

    let spec =
        json!({ "host": "upstream.test", "port": port, "cafile": world.sluice_ca, "path": "/ws" });
    let out = world.python(tls_scripts::WEBSOCKET_ECHO, &spec, WAIT * 2);
    out.expect_success("WebSocket echo through Sluice");
    let requests = upstream.requests();
    let ws = requests
        .iter()
        .find(|r| r.path == "/ws")
        .expect("the upgrade reached the upstream");
    assert_eq!(
        ws.version, "HTTP/1.1",
        "an upgrade goes upstream as HTTP/1.1"
    );
    assert_eq!(
        ws.header("upgrade").map(str::to_ascii_lowercase).as_deref(),
        Some("websocket")
    );
    assert!(upstream.ws_echoed() > 70_000, "{}", upstream.ws_echoed());
}

/// `limits.idle_timeout_ms` closes an intercepted TLS connection nothing
/// moves on, as it does a plain one: a client that keeps it open and
/// silent holds no socket, TLS session or task for ever.
#[test]
fn an_idle_intercepted_tls_connection_is_closed() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["upstream.test"], &ca);
    let policy = intercepting_policy(&allow_loopback("upstream.test", upstream.port()), json!({}));
    let world = World::start_with(&ca, &["upstream.test"], policy, |builder| {
        builder.idle_timeout_ms(300);
    });
    let spec = json!({
        "host": "upstream.test", "port": upstream.port(), "cafile": world.sluice_ca,
        "wait": WAIT.as_secs(),
    });
    let out = world.python(tls_scripts::IDLE_TLS, &spec, WAIT * 2);
    out.expect_success("the gateway closes an idle HTTP/2 connection");
    assert_eq!(out.json()["alpn"], "h2", "{out}");
}

/// Connections closed because what they were admitted under no longer holds.
const REVOKED: &str = "sluice_connections_total{verdict=\"closed\",reason=\"revoked\"}";

/// Replaces policy `p` with one that allows nothing, and waits for the reload.
fn deny_everything(world: &World) {
    let denying = intercepting_policy(&[], json!({}));
    write_policy(&world.daemon.policy_dir(), "p", &denying);
    world
        .daemon
        .wait_metric_at_least("sluice_policy_reloads_total{result=\"ok\"}", 1.0);
}

/// A connection is decided when it opens; a policy edit must still reach
/// one kept open. The gateway closes it once its request in flight is
/// answered, and the client's next connection is decided afresh.
#[test]
fn a_policy_edit_closes_connections_admitted_under_the_old_policy() {
    let out = across_an_edit_denying_everything(tls_scripts::KEEPALIVE_ACROSS_A_CHANGE);
    out.expect_success("a keep-alive connection across a policy edit");
    assert_eq!(out.json()["alpn"], "h2", "{out}");
}

/// Runs `script` (a `tls_scripts` program across a change) in an
/// intercepting world's sandbox, against `upstream.test`, across an edit
/// of its policy that denies everything; returns its output once the
/// revocation is counted.
fn across_an_edit_denying_everything(script: &str) -> sluice_e2e::Output {
    let ca = TestCa::upstream();
    let (upstream, world) = World::intercepting(&ca, "upstream.test");
    let spec = json!({
        "host": "upstream.test", "port": upstream.port(), "cafile": world.sluice_ca,
    });
    let out = across_a_change(&world.sb1, world.daemon.dir(), script, spec, || {
        deny_everything(&world)
    });
    world.daemon.wait_metric_at_least(REVOKED, 1.0);
    out
}

/// A request in flight when its connection is revoked may finish, but
/// not forever: an endless stream to a host the policy no longer allows
/// ends within the grace.
#[test]
fn a_policy_edit_ends_a_stream_in_flight_after_a_grace() {
    let out = across_an_edit_denying_everything(tls_scripts::SSE_ACROSS_A_CHANGE);
    out.expect_success("an SSE stream across a policy edit");
}

/// An upgraded stream outlives the HTTP connection it was upgraded on: a
/// policy edit that removes its host must still end it, with a close
/// frame that says why.
#[test]
fn a_policy_edit_closes_a_websocket_admitted_under_the_old_policy() {
    let ca = TestCa::upstream();
    let (upstream, world) = World::intercepting(&ca, "upstream.test");
    let spec = json!({
        "host": "upstream.test", "port": upstream.port(), "cafile": world.sluice_ca,
        "path": "/ws",
    });
    let out = across_a_change(
        &world.sb1,
        world.daemon.dir(),
        tls_scripts::STREAM_ACROSS_A_CHANGE,
        spec,
        || deny_everything(&world),
    );
    out.expect_success("a WebSocket across a policy edit that removes its host");
    // Between two frames: the sandbox is told why, not cut.
    assert_eq!(
        out.json()["close"],
        json!({"code": 1008, "reason": "revoked: policy or registration changed"}),
        "{out}"
    );
    assert_eq!(
        world.daemon.wait_metric_at_least(REVOKED, 1.0),
        1.0,
        "counted once: its HTTP connection ended with the 101"
    );
}

/// A passthrough name's TLS is spliced unread, so only its admission
/// decides: a policy edit that removes the name must still end it.
#[test]
fn a_policy_edit_closes_a_passthrough_connection_admitted_under_the_old_policy() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["pinned.test"], &ca);
    let policy = intercepting_policy(
        &allow_loopback("pinned.test", upstream.port()),
        json!({ "passthrough": ["pinned.test"] }),
    );
    let world = World::start(&ca, &["pinned.test"], policy);
    // A WebSocket with the upstream itself (its certificate trusted):
    // bytes that keep flowing both ways through the splice.
    let spec = json!({
        "host": "pinned.test", "port": upstream.port(), "cafile": world.upstream_ca,
        "path": "/ws",
    });
    let out = across_a_change(
        &world.sb1,
        world.daemon.dir(),
        tls_scripts::STREAM_ACROSS_A_CHANGE,
        spec,
        || deny_everything(&world),
    );
    out.expect_success("a passthrough connection across a policy edit that removes its name");
    world.daemon.wait_metric_at_least(REVOKED, 1.0);
    assert_eq!(
        world.metric("sluice_certificates_minted_total"),
        0.0,
        "spliced, never decrypted"
    );
}

#[test]
fn a_gibibyte_each_way_streams_without_growing_the_daemon() {
    if std::env::var("SLUICE_SKIP_GIB").as_deref() == Ok("1") {
        eprintln!("skipped: SLUICE_SKIP_GIB=1");
        return;
    }
    const N: u64 = 1 << 30;
    const MAX_GROWTH_KIB: u64 = 64 * 1024;
    let expected = std::thread::spawn(|| pattern_sha256(N));
    let ca = TestCa::upstream();
    let (upstream, world) = World::intercepting(&ca, "upstream.test");
    let port = upstream.port();

    // Warm up (certificate minted, upstream trust loaded) before the baseline.
    let warm = json!({ "host": "upstream.test", "port": port, "cafile": world.sluice_ca, "path": "/echo" });
    world
        .python(tls_scripts::HTTPS_REQUEST, &warm, WAIT)
        .expect_success("warm-up request");
    let baseline = world.daemon.rss_kib();

    let mut results = Vec::new();
    for mode in ["download", "upload"] {
        let spec = json!({
            "mode": mode, "n": N, "host": "upstream.test", "port": port, "cafile": world.sluice_ca,
        });
        let arg = spec.to_string();
        let mut running = sluice_e2e::in_cgroup(&world.sb1)
            .timeout(Duration::from_secs(600))
            .spawn_python(tls_scripts::BULK_TRANSFER, &[&arg]);
        let mut peak = baseline;
        // Sample as often as /proc allows while the transfer runs.
        while !running.finished() {
            peak = peak.max(world.daemon.rss_kib());
            std::thread::sleep(Duration::from_millis(5));
        }
        let out = running.wait();
        out.expect_success(&format!("1 GiB {mode} through Sluice"));
        results.push((mode, out.json(), peak));
    }

    let (_, download, download_peak) = &results[0];
    assert_eq!(download["len"], N, "{download}");
    assert_eq!(
        download["sha256"].as_str(),
        Some(expected.join().expect("hash thread").as_str()),
        "downloaded bytes differ from what the upstream sent"
    );
    let (_, upload, upload_peak) = &results[1];
    let seen = upstream
        .requests()
        .into_iter()
        .find(|r| r.path == "/upload")
        .expect("upload reached the upstream");
    assert_eq!(seen.body_len, N);
    assert_eq!(seen.body_sha256.as_deref(), upload["sha256"].as_str());
    for (what, peak) in [("download", download_peak), ("upload", upload_peak)] {
        let growth = peak.saturating_sub(baseline);
        assert!(
            growth < MAX_GROWTH_KIB,
            "the daemon's RSS grew by {growth} KiB during the {what} (baseline {baseline} KiB, \
             peak {peak} KiB): bodies must stream, not buffer"
        );
    }
    eprintln!(
        "1 GiB download {}s, upload {}s; RSS baseline {baseline} KiB, peaks {download_peak} / \
         {upload_peak} KiB",
        download["seconds"], upload["seconds"]
    );
}

#[test]
fn upstream_failures_are_502_naming_the_upstream_and_the_reason() {
    let ca = TestCa::upstream();
    let evil_ca = TestCa::evil();
    let loopback = LOCALHOST;
    let evil = HttpsUpstream::start(
        loopback,
        &["evil.test"],
        &evil_ca,
        UpstreamOptions::default(),
    );
    let misnamed = HttpsUpstream::start(
        loopback,
        &["misnamed.test"],
        &ca,
        UpstreamOptions {
            cert_names: Some(vec!["other.test".into()]),
            ..UpstreamOptions::default()
        },
    );
    let expired = HttpsUpstream::start(
        loopback,
        &["expired.test"],
        &ca,
        UpstreamOptions {
            validity: Validity::Expired,
            ..UpstreamOptions::default()
        },
    );
    let closed_port = {
        let listener = std::net::TcpListener::bind((loopback, 0)).expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let cases = [
        (
            "evil.test",
            evil.port(),
            "untrusted_certificate",
            Some(&evil),
        ),
        (
            "misnamed.test",
            misnamed.port(),
            "certificate_name_mismatch",
            Some(&misnamed),
        ),
        (
            "expired.test",
            expired.port(),
            "certificate_expired",
            Some(&expired),
        ),
        ("closed.test", closed_port, "connect_failed", None),
    ];
    let allow: Vec<String> = cases
        .iter()
        .flat_map(|(name, port, _, _)| allow_loopback(name, *port))
        .collect();
    let names: Vec<&str> = cases.iter().map(|(name, ..)| *name).collect();
    let world = World::start(&ca, &names, intercepting_policy(&allow, json!({})));

    for (name, port, reason, upstream) in &cases {
        let url = format!("https://{name}:{port}/echo");
        let curl = world.curl(&world.curl_https(&url, &[]));
        assert_eq!(curl.code, 502, "{name}\n{curl}");
        let body = curl.json();
        assert_eq!(body["error"], "bad_gateway", "{name}: {body}");
        assert_eq!(body["reason"], *reason, "{name}: {body}");
        assert_eq!(body["upstream"], format!("{name}:{port}"), "{name}: {body}");
        assert!(body["detail"].is_string(), "{name}: {body}");
        if let Some(upstream) = upstream {
            assert_eq!(
                upstream.request_count(),
                0,
                "{name}: no request may be sent"
            );
        }
    }

    let events = world
        .daemon
        .wait_audit("an upstream_error per failure", 4, |e| {
            e["event"] == "upstream_error"
        });
    for (name, _, reason, _) in &cases {
        assert!(
            events.iter().any(|e| {
                let text = e.to_string();
                text.contains(name) && text.contains(reason)
            }),
            "no upstream_error event names {name} and {reason}: {events:#?}"
        );
    }
    world.daemon.wait_metric_at_least(
        "sluice_intercepted_requests_total{status_class=\"5xx\"}",
        4.0,
    );
}

/// A raw request to `upstream.test` with `head` (lines without CRLF) and `body`.
fn raw_request(start_line: &str, headers: &[String], body: &[u8]) -> Vec<u8> {
    let mut bytes = format!("{start_line}\r\n").into_bytes();
    for line in headers {
        bytes.extend_from_slice(line.as_bytes());
        bytes.extend_from_slice(b"\r\n");
    }
    bytes.extend_from_slice(b"\r\n");
    bytes.extend_from_slice(body);
    bytes
}

#[test]
fn malformed_and_smuggling_requests_are_refused_before_the_upstream() {
    let ca = TestCa::upstream();
    let (upstream, world) = World::intercepting(&ca, "upstream.test");
    let port = upstream.port();
    let host = format!("Host: upstream.test:{port}");
    let smuggled = format!("0\r\n\r\nGET /smuggled HTTP/1.1\r\n{host}\r\n\r\n");
    let cl = |n: usize| format!("Content-Length: {n}");
    // (name, bytes, expected status, reasons a JSON body may give)
    let cases: Vec<(&str, Vec<u8>, u16, &[&str])> = vec![
        (
            "cl_and_te",
            raw_request(
                "POST /echo HTTP/1.1",
                &[
                    host.clone(),
                    cl(smuggled.len()),
                    "Transfer-Encoding: chunked".into(),
                ],
                smuggled.as_bytes(),
            ),
            400,
            &["content_length_and_transfer_encoding"],
        ),
        (
            "duplicate_cl",
            raw_request(
                "POST /echo HTTP/1.1",
                &[host.clone(), cl(5), cl(5)],
                b"hello",
            ),
            400,
            &["conflicting_content_length"],
        ),
        (
            "conflicting_cl",
            raw_request(
                "POST /echo HTTP/1.1",
                &[host.clone(), cl(5), cl(smuggled.len() + 5)],
                format!("hello{smuggled}").as_bytes(),
            ),
            400,
            &["conflicting_content_length"],
        ),
        (
            "te_xchunked",
            raw_request(
                "POST /echo HTTP/1.1",
                &[host.clone(), "Transfer-Encoding: xchunked".into()],
                smuggled.as_bytes(),
            ),
            400,
            &["bad_transfer_encoding"],
        ),
        (
            "obs_fold",
            raw_request(
                "GET /echo HTTP/1.1",
                &[host.clone(), "X-Folded: a".into(), " b".into()],
                b"",
            ),
            400,
            &["invalid_header_value", "malformed_request"],
        ),
        (
            "space_in_header_name",
            raw_request(
                "GET /echo HTTP/1.1",
                &[host.clone(), "Bad Header: x".into()],
                b"",
            ),
            400,
            &["malformed_request", "invalid_header_value"],
        ),
        (
            "absolute_form_host_mismatch",
            raw_request(
                &format!("GET https://other.test:{port}/echo HTTP/1.1"),
                std::slice::from_ref(&host),
                b"",
            ),
            400,
            &["absolute_form_host_mismatch"],
        ),
        // Another host on this TLS connection: 421 Misdirected Request, so
        // clients retry on a connection of its own.
        (
            "host_not_sni",
            raw_request(
                "GET /echo HTTP/1.1",
                &[format!("Host: other.test:{port}")],
                b"",
            ),
            421,
            &["host_not_sni"],
        ),
        (
            "missing_host",
            raw_request("GET /echo HTTP/1.1", &[], b""),
            400,
            &["missing_host"],
        ),
        (
            "oversized_headers",
            raw_request(
                "GET /echo HTTP/1.1",
                &[host.clone(), format!("X-Big: {}", "a".repeat(70 * 1024))],
                b"",
            ),
            431,
            &[],
        ),
        (
            "control",
            raw_request(
                "GET /echo?control=1 HTTP/1.1",
                &[host.clone(), "Connection: close".into()],
                b"",
            ),
            200,
            &[],
        ),
    ];
    let spec = json!({
        "host": "upstream.test", "port": port, "sni": "upstream.test", "cafile": world.sluice_ca,
        "cases": cases.iter().map(|(name, bytes, ..)| json!({ "name": name, "hex": hex(bytes) })).collect::<Vec<_>>(),
    });
    let out = world.python(
        tls_scripts::RAW_TLS_REQUESTS,
        &spec,
        Duration::from_secs(150),
    );
    let results = out.json()["results"].clone();

    let mut failures = Vec::new();
    for (name, _, status, reasons) in &cases {
        let got = &results[*name];
        if got["status"] != *status {
            failures.push(format!("{name}: expected {status}, got {got}"));
            continue;
        }
        let body = got["body"].as_str().unwrap_or_default();
        if !matches!(*status, 400 | 421) || body.is_empty() {
            continue; // hyper's own 400s may have an empty body
        }
        match serde_json::from_str::<Value>(body) {
            Ok(json)
                if (json["error"] == "bad_request" || json["error"] == "misdirected_request")
                    && reasons.iter().any(|r| json["reason"] == *r) => {}
            _ => failures.push(format!("{name}: expected reason {reasons:?}, got {got}")),
        }
    }
    let paths: Vec<String> = upstream.requests().into_iter().map(|r| r.path).collect();
    assert!(
        failures.is_empty(),
        "{} case(s) wrong:\n{}\nupstream saw: {paths:?}\n{out}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(
        paths,
        ["/echo?control=1"],
        "only the well-formed control request may reach the upstream"
    );
}

#[test]
fn a_hundred_concurrent_first_connections_mint_one_certificate() {
    let ca = TestCa::upstream();
    let (upstream, world) = World::intercepting(&ca, "fresh.test");
    let port = upstream.port();
    assert_eq!(world.metric("sluice_certificates_minted_total"), 0.0);

    let spec = json!({ "host": "fresh.test", "port": port, "cafile": world.sluice_ca, "n": 100 });
    let out = world.python(
        tls_scripts::CONCURRENT_HTTPS,
        &spec,
        Duration::from_secs(90),
    );
    out.expect_success("100 concurrent first connections");
    assert_eq!(out.json()["succeeded"], 100, "{out}");
    upstream.wait_requests(100, WAIT);
    assert_eq!(
        world.daemon.metric("sluice_certificates_minted_total"),
        Some(1.0),
        "one certificate for one name, however many handshakes wait for it"
    );
}

#[test]
fn passthrough_names_keep_the_upstreams_certificate_and_policy_still_decides() {
    let ca = TestCa::upstream();
    let pinned = HttpsUpstream::v4(&["pinned.test", "a.wild.test"], &ca);
    let intercepted = HttpsUpstream::v4(&["upstream.test"], &ca);
    let blocked = HttpsUpstream::v4(&["blocked.test"], &ca);
    let mut allow = allow_loopback("pinned.test", pinned.port()).to_vec();
    allow.extend(allow_loopback("upstream.test", intercepted.port()));
    allow.push("*.wild.test".into());
    let world = World::start(
        &ca,
        &[
            "pinned.test",
            "a.wild.test",
            "upstream.test",
            "blocked.test",
        ],
        intercepting_policy(
            &allow,
            json!({ "passthrough": ["pinned.test", "*.wild.test", "blocked.test"] }),
        ),
    );

    // Passthrough: the sandbox sees the upstream's own certificate.
    for name in ["pinned.test", "a.wild.test"] {
        let spec = json!({
            "host": name, "port": pinned.port(), "cafile": world.upstream_ca, "path": "/echo",
            "headers": { "X-Sluice-E2E": name }, "ca_subject_of": world.upstream_ca,
        });
        let out = world.python(tls_scripts::HTTPS_REQUEST, &spec, WAIT);
        out.expect_success(&format!("{name} spliced, trusting the upstream CA"));
        let result = out.json();
        assert_eq!(result["status"], 200, "{out}");
        assert_eq!(
            result["peer"]["issuer"]["commonName"],
            ca.common_name(),
            "{out}"
        );
        assert_eq!(result["peer"]["issuer"], result["ca_subject"], "{out}");
        let requests = pinned.requests();
        let seen = request_tagged(&requests, name);
        assert_eq!(seen.sni.as_deref(), Some(name));
    }
    // ...so trusting only Sluice's CA fails verification.
    let url = format!("https://pinned.test:{}/echo", pinned.port());
    let curl = world.curl(&world.curl_https(&url, &[]));
    assert_eq!(
        curl.out.status.code(),
        Some(60),
        "curl must reject the upstream's certificate (exit 60)\n{curl}"
    );

    // The same policy intercepts other names.
    let spec = json!({
        "host": "upstream.test", "port": intercepted.port(), "cafile": world.sluice_ca,
        "path": "/echo", "ca_subject_of": world.sluice_ca,
    });
    let out = world.python(tls_scripts::HTTPS_REQUEST, &spec, WAIT);
    out.expect_success("upstream.test intercepted");
    assert_eq!(
        out.json()["peer"]["issuer"],
        out.json()["ca_subject"],
        "{out}"
    );

    // Listed in passthrough but not allowed: the network policy refuses
    // first (by address: the name does not resolve for the sandbox).
    let out = sluice_e2e::in_cgroup(&world.sb1).python(
        scripts::TLS_HELLO,
        &["127.0.0.1", &blocked.port().to_string(), "blocked.test"],
    );
    assert_ne!(out.json()["result"], "handshake", "{out}");
    assert_eq!(blocked.connection_count(), 0, "never dialled");
    world.daemon.wait_audit("refusal of blocked.test", 1, |e| {
        e["event"] == "connection" && e["verdict"] == "deny" && e["sni"] == "blocked.test"
    });

    assert_eq!(
        world.daemon.metric("sluice_certificates_minted_total"),
        Some(1.0),
        "only upstream.test was decrypted"
    );
}

#[test]
fn plain_http_is_intercepted_on_any_port() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::plain_v4();
    let port = upstream.port();
    let world = World::start(
        &ca,
        &["upstream-plain.test"],
        intercepting_policy(&allow_loopback("upstream-plain.test", port), json!({})),
    );

    let url = format!("http://upstream-plain.test:{port}/echo?plain=1");
    let curl = world.curl(&curl_args(None, &url, &["-H", "X-Sluice-E2E: plain"]));
    assert_eq!(curl.code, 200, "{curl}");
    let requests = upstream.wait_requests(1, WAIT);
    let seen = request_tagged(&requests, "plain");
    assert_eq!(seen.path, "/echo?plain=1");
    assert_eq!(seen.response_body.as_deref(), Some(curl.body.as_bytes()));
    world
        .daemon
        .wait_metric_at_least("sluice_intercepted_requests_total", 1.0);
}

#[test]
fn without_interception_nothing_is_decrypted() {
    let ca = TestCa::upstream();
    let upstream = HttpsUpstream::v4(&["upstream.test"], &ca);
    let port = upstream.port();
    let allow = allow_loopback("upstream.test", port);
    let world = World::start(
        &ca,
        &["upstream.test"],
        json!({ "network": { "allow_out": allow, "deny_out": ["ALL_TRAFFIC"] } }),
    );

    let spec = json!({
        "host": "upstream.test", "port": port, "cafile": world.upstream_ca, "path": "/echo",
        "ca_subject_of": world.upstream_ca,
    });
    let out = world.python(tls_scripts::HTTPS_REQUEST, &spec, WAIT);
    out.expect_success("spliced TLS, trusting the upstream CA");
    assert_eq!(
        out.json()["peer"]["issuer"],
        out.json()["ca_subject"],
        "{out}"
    );
    assert_eq!(upstream.request_count(), 1);
    assert_eq!(world.metric("sluice_certificates_minted_total"), 0.0);
    assert_eq!(world.metric("sluice_intercepted_requests_total"), 0.0);
}

/// An `allow_out` rule with `access: read_only` (issue #47): over
/// intercepted HTTPS (HTTP/1.1 and HTTP/2) and plain HTTP, GET reaches the
/// upstream and POST is refused 403 naming the rule, the upstream never
/// seeing it. The policy leaves `decide_without_decryption` unset: the
/// rule alone makes it decrypt.
#[test]
fn a_read_only_rule_lets_get_through_and_refuses_post_naming_the_rule() {
    let ca = TestCa::upstream();
    let tls = HttpsUpstream::v4(&["upstream.test"], &ca);
    let plain = HttpsUpstream::plain_v4();
    let policy = json!({ "network": {
        "allow_out": [
            { "to": "upstream.test", "access": "read_only" },
            format!("127.0.0.0/8:{}", tls.port()),
            format!("127.0.0.0/8:{}", plain.port()),
        ],
        "deny_out": ["ALL_TRAFFIC"],
    }});
    let world = World::start(&ca, &["upstream.test"], policy);
    let https = format!("https://upstream.test:{}/echo", tls.port());
    let http = format!("http://upstream.test:{}/echo", plain.port());
    let post = ["-X", "POST", "-d", "x=1"];

    for (url, upstream, sluice_ca) in [
        (&https, &tls, Some(world.sluice_ca.as_str())),
        (&http, &plain, None),
    ] {
        let get = world.curl(&curl_args(sluice_ca, url, &["-H", "X-Sluice-E2E: get"]));
        assert_eq!(get.code, 200, "{get}");
        let mut refused = vec![curl_args(sluice_ca, url, &post)];
        if sluice_ca.is_some() {
            let h2 = [&post[..], &["--http2"]].concat();
            refused.push(curl_args(sluice_ca, url, &h2));
        }
        for args in refused {
            let curl = world.curl(&args);
            assert_eq!(curl.code, 403, "{curl}");
            let body = curl.json();
            assert_eq!(body["reason"], "method_not_allowed", "{curl}");
            assert_eq!(body["rule"], "p:network.allow_out[0]", "{curl}");
        }
        let requests = upstream.wait_requests(1, WAIT);
        assert_eq!(request_tagged(&requests, "get").method, "GET");
        assert!(
            requests.iter().all(|r| r.method == "GET"),
            "the upstream saw a refused request: {requests:#?}"
        );
    }
    world
        .daemon
        .wait_audit("POSTs refused by the rule", 3, |e| {
            e["event"] == "request"
                && e["reason"] == "method_not_allowed"
                && e["rule"] == "p:network.allow_out[0]"
                && e["sandbox"] == "sb1"
        });
    assert!(world.metric("sluice_certificates_minted_total") >= 1.0);
}

/// Under `decide_without_decryption: true` a rule with methods may cover
/// plain-HTTP ports only; TLS that reaches it there anyway is refused at
/// once (`request_rule_unread`), never relayed unread, while plain HTTP
/// on the same rule is read request by request.
#[test]
fn tls_a_request_rule_could_not_read_is_refused_not_relayed() {
    let ca = TestCa::upstream();
    let tls = HttpsUpstream::v4(&["upstream.test"], &ca);
    let plain = HttpsUpstream::plain_v4();
    let ports = [tls.port(), plain.port()];
    let policy = json!({ "network": {
        "allow_out": [
            { "to": "upstream.test", "ports": ports, "access": "read_only" },
            format!("127.0.0.0/8:{}", tls.port()),
            format!("127.0.0.0/8:{}", plain.port()),
        ],
        "deny_out": ["ALL_TRAFFIC"],
        "decide_without_decryption": true,
    }});
    let world = World::start(&ca, &["upstream.test"], policy);

    let https = format!("https://upstream.test:{}/echo", tls.port());
    let curl = world.curl(&curl_args(Some(&world.upstream_ca), &https, &[]));
    assert_eq!(curl.code, 0, "refused, not relayed\n{curl}");
    assert_eq!(tls.request_count(), 0);
    world
        .daemon
        .wait_audit("the TLS connection refused", 1, |e| {
            e["event"] == "connection"
                && e["verdict"] == "deny"
                && e["reason"] == "request_rule_unread"
                && e["rule"] == "p:network.allow_out[0]"
        });
    world.daemon.wait_metric_at_least(
        "sluice_connections_total{verdict=\"deny\",reason=\"request_rule_unread\"}",
        1.0,
    );

    let http = format!("http://upstream.test:{}/echo", plain.port());
    let get = world.curl(&curl_args(None, &http, &[]));
    assert_eq!(get.code, 200, "{get}");
    let post = world.curl(&curl_args(None, &http, &["-d", "x=1"]));
    assert_eq!(post.code, 403, "{post}");
    assert_eq!(post.json()["reason"], "method_not_allowed", "{post}");
    assert_eq!(plain.request_count(), 1);
    assert_eq!(world.metric("sluice_certificates_minted_total"), 0.0);
}
