//! The `network_rule` stage through the interceptor: an `allow_out` rule
//! with `access: read_only`, or `methods` and `paths`, lets the requests
//! it names through on a connection it allowed and refuses the rest (403
//! naming the rule, 400 for a dot segment), counted and audited, the
//! upstream untouched.

use std::path::Path;

use super::*;
use crate::policy::load::{Against, parse_policy};

/// `api.test` read-only; `paths.test` GET and POST under `/v1/`.
const POLICY: &str = "network:
  allow_out:
    - {to: api.test, access: read_only}
    - {to: paths.test, methods: [get, POST], paths: ['/v1/**']}
  deny_out: [ALL_TRAFFIC]
  ssrf_guard: false
";

/// The harness with [`POLICY`] in force (its own network section).
async fn harness() -> Harness {
    let mut h = Harness::start("", echo()).await;
    let policy = parse_policy(Path::new("p.yaml"), "p", POLICY, Against::default())
        .unwrap_or_else(|e| panic!("policy: {e:?}"));
    h.policy = Arc::new(policy);
    h
}

/// A request for `host`.
fn to(host: &str, method: &str, target: &str) -> Request<Full<Bytes>> {
    let mut request = request(method, target, &[], "body");
    let host = hyper::header::HeaderValue::from_str(host).expect("host");
    request.headers_mut().insert(hyper::header::HOST, host);
    request
}

#[tokio::test]
async fn the_connections_rule_lets_through_only_its_methods_and_paths() {
    let h = harness().await;
    // (host, method, target, status, reason, rule)
    #[rustfmt::skip]
    let cases: &[(&str, &str, &str, u16, &str, &str)] = &[
        ("api.test", "GET", "/repos?q=1", 200, "", ""),
        ("api.test", "HEAD", "/", 200, "", ""),
        ("api.test", "POST", "/repos", 403, "method_not_allowed", "p:network.allow_out[0]"),
        ("api.test", "DELETE", "/repos/a", 403, "method_not_allowed", "p:network.allow_out[0]"),
        ("paths.test", "POST", "/v1/items", 200, "", ""),
        ("paths.test", "GET", "/v1", 200, "", ""),
        ("paths.test", "GET", "/v2/items", 403, "path_not_allowed", "p:network.allow_out[1]"),
        ("paths.test", "PUT", "/v1/items", 403, "method_not_allowed", "p:network.allow_out[1]"),
        ("paths.test", "GET", "/v1/../admin", 400, "path_dot_segment", "p:network.allow_out[1]"),
    ];
    let mut forwarded = 0;
    for &(host, method, target, status, reason, rule) in cases {
        let answered = h.send_to(host, true, to(host, method, target)).await;
        assert_eq!(
            answered.status.as_u16(),
            status,
            "{method} {host}{target}: {answered:?}"
        );
        if status == 200 {
            forwarded += 1;
            continue;
        }
        let body = answered.json();
        assert_eq!(
            (body["reason"].as_str(), body["rule"].as_str()),
            (Some(reason), Some(rule)),
            "{body}"
        );
        let detail = body["detail"].as_str().unwrap_or_default();
        assert!(detail.starts_with(&format!("{method} ")), "{detail}");
    }
    // Only what the rules let through reached the upstream.
    let seen: Vec<String> = h.seen().into_iter().map(|s| s.method).collect();
    assert_eq!(seen, ["GET", "HEAD", "POST", "GET"]);
    assert_eq!(seen.len(), forwarded);
    let refused = h.metrics.intercepted_requests.with_label_values(&["4xx"]);
    assert_eq!(refused.get(), 5);
    // Each refusal audited with the rule, as a request denied.
    let events: Vec<_> = h
        .audit()
        .into_iter()
        .filter(|e| e["event"] == "request")
        .collect();
    assert_eq!(events.len(), 5, "{events:#?}");
    let post = &h.audited("method_not_allowed")[0];
    assert_eq!(
        (&post["verdict"], &post["rule"], &post["detail"]),
        (
            &serde_json::json!("deny"),
            &serde_json::json!("p:network.allow_out[0]"),
            &serde_json::json!(
                "POST /repos is not allowed: network.allow_out[0] allows GET, HEAD, OPTIONS to any path"
            )
        )
    );
}

/// Every request on a kept-alive connection is decided, not only the
/// first: a GET then a POST on one connection.
#[tokio::test]
async fn each_request_on_a_kept_alive_connection_is_decided() {
    let h = harness().await;
    let io = TokioIo::new(h.connect_to("api.test", true).await);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let mut statuses = Vec::new();
    for method in ["GET", "POST", "GET"] {
        let response = sender
            .send_request(to("api.test", method, "/x"))
            .await
            .expect("answered");
        statuses.push(response.status().as_u16());
        let _ = response.into_body().collect().await;
    }
    assert_eq!(statuses, [200, 403, 200]);
    assert_eq!(h.seen().len(), 2);
}
