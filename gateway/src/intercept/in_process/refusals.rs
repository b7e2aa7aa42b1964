//! Sluice's own refusals on the interception path, each with its status
//! and reason, the upstream untouched: request hygiene (400), a host
//! changed on a plain-HTTP connection (421), a body the content stages
//! cannot read (415) or read whole (413), and upgrades no stage could
//! follow (403).

use super::*;

/// The status code and the JSON body's `reason` of a raw HTTP/1.1 answer.
fn status_and_reason(raw: &str) -> (u16, String) {
    let status = raw
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {raw:?}"));
    let body = raw.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    let reason = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["reason"].as_str().map(str::to_owned))
        .unwrap_or_default();
    (status, reason)
}

/// Heads hyper would normalize or an upstream could frame differently:
/// 400 with the violation, before any stage or the upstream.
#[tokio::test]
async fn hygiene_refusals() {
    let table: &[(&str, &str)] = &[
        (
            "POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            "content_length_and_transfer_encoding",
        ),
        (
            "POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc",
            "conflicting_content_length",
        ),
        (
            "GET / HTTP/1.1\r\nHost: api.test\r\nHost: evil.test\r\n\r\n",
            "missing_host",
        ),
        ("GET / HTTP/1.1\r\n\r\n", "missing_host"),
        (
            "GET http://evil.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n",
            "absolute_form_host_mismatch",
        ),
        (
            "GET / HTTP/1.1\r\nHost: api.test@evil.test\r\n\r\n",
            "missing_host",
        ),
    ];
    let h = Harness::start("", echo()).await;
    for (head, reason) in table {
        let raw = h.raw(head.as_bytes()).await;
        assert_eq!(
            status_and_reason(&raw),
            (400, (*reason).to_owned()),
            "{head:?}: {raw}"
        );
    }
    assert!(h.seen().is_empty(), "forwarded: {:?}", h.seen());
    let refused = h.metrics.intercepted_requests.with_label_values(&["4xx"]);
    assert_eq!(refused.get(), table.len() as u64);
    // Each is audited too, as a request refused: no rule denied it.
    for (head, reason) in table {
        let events = h.audited(reason);
        assert!(!events.is_empty(), "{head:?} not audited: {:?}", h.audit());
        assert_eq!(events[0]["event"], "request");
        assert_eq!(events[0]["verdict"], "deny");
    }
    let audited = h.audit().iter().filter(|e| e["event"] == "request").count();
    assert_eq!(audited, table.len(), "{:?}", h.audit());
}

/// A plain-HTTP connection is decided on its first Host: another on the
/// same connection is 421, audited, not forwarded.
#[tokio::test]
async fn another_host_on_a_plain_connection_is_misdirected() {
    let h = Harness::start("", echo()).await;
    let mut request = request("GET", "/", &[], "");
    request
        .headers_mut()
        .insert("host", "evil.test".parse().expect("host"));
    let answer = h.send(request).await;
    assert_eq!(answer.status, StatusCode::MISDIRECTED_REQUEST);
    assert_eq!(answer.json()["reason"], "host_changed");
    assert!(h.seen().is_empty());
    let event = &h.audited("host_changed")[0];
    assert_eq!(event["verdict"], "deny");
    assert_eq!(event["detail"], "Host evil.test");
}

/// One row: a policy whose content stages read the body, a request, and
/// the refusal.
struct Row {
    name: &'static str,
    policy: &'static str,
    headers: &'static [(&'static str, &'static str)],
    body: String,
    status: StatusCode,
    reason: &'static str,
    rule: &'static str,
}

const PII: &str = "pii: {enabled: true, types: [email]}\n";

fn content() -> Vec<Row> {
    vec![
        Row {
            name: "UTF-16 by its charset",
            policy: PII,
            headers: &[("content-type", "application/json; charset=utf-16")],
            body: "{}".into(),
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            reason: "body_charset_not_inspectable",
            rule: "p:pii",
        },
        Row {
            name: "gzip that does not decode",
            policy: PII,
            headers: &[("content-encoding", "gzip")],
            body: "not gzip at all".into(),
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            reason: "body_not_decodable",
            rule: "p:pii",
        },
        Row {
            name: "over the inspection limit",
            policy: "pii: {enabled: true, types: [email], oversize: {inspect_bytes: 16}}\n",
            headers: &[],
            // Larger than one read of the connection.
            body: format!(r#"{{"note":"{}"}}"#, "x".repeat(1 << 20)),
            status: StatusCode::PAYLOAD_TOO_LARGE,
            reason: "body_too_large_to_inspect",
            rule: "p:pii.oversize",
        },
        Row {
            name: "over the inspection limit, arriving in one frame",
            policy: "pii: {enabled: true, types: [email], oversize: {inspect_bytes: 16}}\n",
            headers: &[],
            body: format!(r#"{{"note":"{}"}}"#, "x".repeat(64)),
            status: StatusCode::PAYLOAD_TOO_LARGE,
            reason: "body_too_large_to_inspect",
            rule: "p:pii.oversize",
        },
        Row {
            name: "a WebSocket upgrade where PII applies",
            policy: PII,
            headers: &[("connection", "upgrade"), ("upgrade", "websocket")],
            body: String::new(),
            status: StatusCode::FORBIDDEN,
            reason: "upgrade_not_inspectable",
            rule: "p:pii",
        },
        Row {
            name: "a WebSocket upgrade where a transformation applies",
            policy: "transformations:\n  - {pattern: a, replacement: b}\n",
            headers: &[("connection", "upgrade"), ("upgrade", "websocket")],
            body: String::new(),
            status: StatusCode::FORBIDDEN,
            reason: "upgrade_not_inspectable",
            rule: "p:transformations",
        },
    ]
}

#[tokio::test]
async fn content_refusals() {
    for row in content() {
        let h = Harness::start(row.policy, echo()).await;
        let method = if row.body.is_empty() { "GET" } else { "POST" };
        let answer = h
            .send(request(method, "/v1/notes", row.headers, &row.body))
            .await;
        assert_eq!(answer.status, row.status, "{}: {}", row.name, answer.body);
        let body = answer.json();
        assert_eq!(body["reason"], row.reason, "{}", row.name);
        assert_eq!(body["rule"], row.rule, "{}", row.name);
        assert!(h.seen().is_empty(), "{}: forwarded", row.name);
        let events = h.audited(row.reason);
        assert_eq!(events.len(), 1, "{}: {:?}", row.name, h.audit());
        assert_eq!(events[0]["event"], "content", "{}", row.name);
        assert_eq!(events[0]["verdict"], "deny", "{}", row.name);
        assert_eq!(events[0]["rule"], row.rule, "{}", row.name);
    }
}

/// A credential in an upgrade to anything but WebSocket: the frames
/// after the 101 could carry the secret back unread.
#[tokio::test]
async fn a_credential_in_a_non_websocket_upgrade_is_refused() {
    let h = Harness::start(
        "credentials:\n  - {credential: api, allow_plain_http: true}\n",
        echo(),
    )
    .await;
    let bearer = format!("Bearer {}", h.placeholder());
    let answer = h
        .send(request(
            "GET",
            "/",
            &[
                ("connection", "upgrade"),
                ("upgrade", "h2c"),
                ("authorization", &bearer),
            ],
            "",
        ))
        .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert_eq!(answer.json()["reason"], "upgrade_not_redactable");
    assert!(h.seen().is_empty());
    assert_eq!(
        h.audited("upgrade_not_redactable")[0]["event"],
        "credential"
    );
}

/// A request body only a transformation reads, in a coding Sluice cannot
/// decode: refused 415 `body_not_decodable` (docs/policy.md), never sent
/// on.
#[tokio::test]
async fn an_undecodable_body_only_a_transformation_reads_is_refused() {
    let h = Harness::start(
        "transformations:\n  - {pattern: a, replacement: b}\n",
        echo(),
    )
    .await;
    for coding in ["gzip", "snappy"] {
        let answer = h
            .send(request(
                "POST",
                "/",
                &[("content-encoding", coding)],
                "not encoded",
            ))
            .await;
        assert_eq!(
            answer.status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{coding}: {}",
            answer.body
        );
        assert_eq!(answer.json()["reason"], "body_not_decodable", "{coding}");
    }
    assert!(h.seen().is_empty(), "{:?}", h.seen());
}
