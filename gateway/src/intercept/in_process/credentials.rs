//! The credential stage's outcomes on plain HTTP: a placeholder swapped
//! for the secret toward its host, refused toward another or where plain
//! HTTP is not allowed, and the secret echoed back redacted.

use super::*;

const BOUND: &str = "credentials:\n  - {credential: api, allow_plain_http: true}\n";
const BOUND_TLS_ONLY: &str = "credentials:\n  - {credential: api}\n";

/// Answers 200 with the Authorization header the upstream received.
fn echo_authorization() -> Answer {
    Arc::new(|seen: &Seen| {
        let auth = seen
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("none")
            .to_owned();
        Response::new(Full::from(format!("you sent {auth}")))
    })
}

/// One row: the binding, the connection's name and whether it resolves
/// to the dialled address, and what follows.
struct Row {
    name: &'static str,
    policy: &'static str,
    host: &'static str,
    named: bool,
    status: StatusCode,
    /// The refusal's reason (403) and its count in
    /// `sluice_credential_refusals_total`; `None`: injected.
    refused: Option<&'static str>,
}

const TABLE: &[Row] = &[
    Row {
        name: "toward its host: swapped",
        policy: BOUND,
        host: HOST,
        named: true,
        status: StatusCode::OK,
        refused: None,
    },
    Row {
        name: "toward another host: exfiltration",
        policy: BOUND,
        host: "evil.test",
        named: true,
        status: StatusCode::FORBIDDEN,
        refused: Some("exfiltration"),
    },
    Row {
        name: "plain HTTP without allow_plain_http",
        policy: BOUND_TLS_ONLY,
        host: HOST,
        named: true,
        status: StatusCode::FORBIDDEN,
        refused: Some("plain_http"),
    },
    Row {
        name: "plain HTTP to an address the name does not resolve to",
        policy: BOUND,
        host: HOST,
        named: false,
        status: StatusCode::FORBIDDEN,
        refused: Some("plain_http_address"),
    },
];

#[tokio::test]
async fn credential_outcomes() {
    for row in TABLE {
        let h = Harness::start(row.policy, echo_authorization()).await;
        let placeholder = h.placeholder();
        let mut request = request("GET", "/v1/me", &[], "");
        request
            .headers_mut()
            .insert("host", row.host.parse().expect("host"));
        request.headers_mut().insert(
            "authorization",
            format!("Bearer {placeholder}").parse().expect("header"),
        );
        let answer = h.send_to(row.host, row.named, request).await;
        assert_eq!(answer.status, row.status, "{}: {}", row.name, answer.body);
        assert!(!answer.body.contains(SECRET), "{}", row.name);
        let injected = h.metrics.credential_injections.with_label_values(&["api"]);
        match row.refused {
            None => {
                let seen = h.seen();
                assert_eq!(seen.len(), 1, "{}", row.name);
                assert_eq!(seen[0].headers["authorization"], format!("Bearer {SECRET}"));
                assert_eq!(injected.get(), 1, "{}", row.name);
                // The upstream echoed the secret: redacted, and said so.
                assert_eq!(answer.body, "you sent Bearer [redacted:credential]");
                assert_eq!(answer.headers["x-sluice-redacted"], "credential");
            }
            Some(reason) => {
                assert!(h.seen().is_empty(), "{}: forwarded", row.name);
                assert_eq!(injected.get(), 0, "{}", row.name);
                let body = answer.json();
                assert_eq!(body["reason"], reason, "{}", row.name);
                assert_eq!(body["credential"], "api", "{}", row.name);
                let refusals = h.metrics.credential_refusals.with_label_values(&[reason]);
                assert_eq!(refusals.get(), 1, "{}", row.name);
                let event = &h.audited(reason)[0];
                assert_eq!(event["event"], "credential", "{}", row.name);
                assert_eq!(event["verdict"], "deny", "{}", row.name);
                assert_eq!(event["rule"], "p:credentials", "{}", row.name);
                assert!(!event.to_string().contains(SECRET), "{}", row.name);
            }
        }
    }
}

/// Toward a host a bound credential covers, the authentication the
/// sandbox sent itself never goes upstream, placeholder or not: there
/// Sluice's credential is the one used (issue 43, item 5). Where no bound
/// credential covers the host, the request is left alone.
#[tokio::test]
async fn the_sandboxs_own_auth_never_reaches_a_credentials_host() {
    let own = [
        ("authorization", "Bearer mine"),
        ("proxy-authorization", "Basic bWluZQ=="),
    ];
    let h = Harness::start(BOUND, echo_authorization()).await;
    let answer = h.send(request("GET", "/", &own, "")).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.body, "you sent none");
    assert!(h.seen()[0].headers.get("proxy-authorization").is_none());
    assert!(answer.headers.get("x-sluice-redacted").is_none());

    let unbound = Harness::start("", echo_authorization()).await;
    let answer = unbound.send(request("GET", "/", &own, "")).await;
    assert_eq!(answer.body, "you sent Bearer mine");
}

/// The interception CA kept in state_dir (the default), made in the clear
/// as `sluice ca init` makes it, has its key sealed once the daemon's code
/// has loaded it, and the daemon serves on (that the resealed CA still
/// signs leaves that chain to it: `tls::tests::ca`).
#[tokio::test]
async fn the_ca_key_kept_in_state_dir_is_sealed() {
    let h = Harness::start("", echo()).await;
    let key = std::fs::read(h.dir().join("state/ca/ca.key")).expect("ca.key");
    assert!(crate::credentials::sealed::is_sealed(&key));
    let answer = h.send(request("GET", "/x", &[], "")).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
}
