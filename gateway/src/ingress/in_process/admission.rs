//! Who the ingress admits and what of theirs crosses: the owner's
//! request with none of their headers reaching the app, a link's token
//! exchanged for a session cookie, and refusals that say why, counted and
//! audited.

use super::*;

#[tokio::test]
async fn the_owner_reaches_the_app_and_nothing_of_theirs_does() {
    let app = app().await;
    let h = harness(app.port(), "127.0.0.1/32").await;
    let token = h.keys.viewer("ann", Some("acme"), now());
    let bearer = format!("Bearer {token}");
    let mut headers = VIEWER_HEADERS.to_vec();
    headers.push(("authorization", &bearer));
    let answer = h.send(get("demo.apps.test", "/page?q=1", &headers)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let echo = answer.echoed();
    let mut seen: Vec<&str> = echo["headers"]
        .as_object()
        .expect("headers")
        .keys()
        .map(String::as_str)
        .collect();
    seen.sort_unstable();
    assert_eq!(
        seen,
        ["accept", "host"],
        "only allowlisted headers reach the app"
    );
    assert_eq!(
        echo["headers"]["host"][0],
        format!("127.0.0.1:{}", app.port())
    );
    assert_eq!(echo["path"], "/page?q=1");
    assert!(
        answer.headers.get("set-cookie").is_none(),
        "the app's cookie stays behind"
    );
    assert!(answer.headers.get("strict-transport-security").is_none());
    assert_eq!(
        answer.headers["content-security-policy"]
            .to_str()
            .expect("ascii")
            .split(';')
            .next(),
        Some("frame-ancestors https://cp.test")
    );
    assert_eq!(h.count("demo", "allow", "viewer"), 1);
}

#[tokio::test]
async fn a_link_token_becomes_a_session_cookie() {
    let app = app().await;
    let h = harness(app.port(), "127.0.0.1/32").await;
    let token = h.keys.viewer("ann", Some("acme"), now());
    let link = format!("/dash?sluice_token={token}");
    let answer = h.send(get("demo.apps.test", &link, &[])).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    assert_eq!(answer.headers["location"], "/dash");
    let cookie = answer.headers["set-cookie"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(
        cookie.contains("HttpOnly; Secure; SameSite=Lax"),
        "{cookie}"
    );
    let session = cookie.split(';').next().expect("pair").to_owned();

    let with_cookie = format!("{session}; theirs=1");
    let answer = h
        .send(get("demo.apps.test", "/dash", &[("cookie", &with_cookie)]))
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(
        answer.echoed()["headers"].get("cookie").is_none(),
        "the session cookie stays behind"
    );

    let again = h.send(get("demo.apps.test", &link, &[])).await;
    assert_eq!(again.status, StatusCode::UNAUTHORIZED);
    assert_eq!(again.headers["x-sluice-refusal"], "token_reused");
    assert_eq!(h.count("demo", "allow", "session_opened"), 1);
    let opened = h
        .audited()
        .into_iter()
        .find(|e| e["reason"] == "session_opened")
        .expect("the session is audited");
    assert_eq!(opened["event"], "ingress");
    assert_eq!(opened["detail"], "viewer ann");
}

#[tokio::test]
async fn refusals_say_why_and_are_counted_and_audited() {
    let app = app().await;
    let h = harness(app.port(), "127.0.0.1/32").await;
    let eve = format!("Bearer {}", h.keys.viewer("eve", Some("evil"), now()));
    type Row<'a> = (
        &'a str,
        Vec<(&'a str, &'a str)>,
        StatusCode,
        &'a str,
        &'a str,
    );
    let table: Vec<Row> = vec![
        (
            "demo.apps.test",
            vec![],
            StatusCode::UNAUTHORIZED,
            "no_token",
            "demo",
        ),
        (
            "demo.apps.test",
            vec![("authorization", &eve)],
            StatusCode::FORBIDDEN,
            "not_owner",
            "demo",
        ),
        (
            "demo.apps.test",
            vec![("authorization", "Bearer x.y.z")],
            StatusCode::UNAUTHORIZED,
            "token_malformed",
            "demo",
        ),
        (
            "nope.apps.test",
            vec![],
            StatusCode::NOT_FOUND,
            "no_such_app",
            "-",
        ),
        (
            "down.apps.test",
            vec![],
            StatusCode::BAD_GATEWAY,
            "app_unreachable",
            "down",
        ),
    ];
    for (host, headers, status, reason, app) in table {
        let answer = h.send(get(host, "/", &headers)).await;
        assert_eq!(answer.status, status, "{host}: {}", answer.body);
        assert_eq!(answer.headers["x-sluice-refusal"], reason, "{host}");
        assert!(
            answer.body.contains(reason),
            "the page names the reason: {}",
            answer.body
        );
        assert!(answer.headers.get("content-security-policy").is_some());
        let verdict = if status.is_server_error() {
            "error"
        } else {
            "deny"
        };
        assert_eq!(h.count(app, verdict, reason), 1, "{host} {reason}");
        assert!(
            h.audited()
                .iter()
                .any(|e| e["event"] == "ingress" && e["reason"] == reason),
            "{reason} audited"
        );
    }
    let answer = h.send(get("demo.apps.test", "/", &[])).await;
    assert!(
        answer.body.contains("open it from the control plane"),
        "{}",
        answer.body
    );
}
