use super::*;

fn map(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut m = HeaderMap::new();
    for (k, v) in pairs {
        m.append(
            HeaderName::from_bytes(k.as_bytes()).expect("name"),
            HeaderValue::from_str(v).expect("value"),
        );
    }
    m
}

#[test]
fn nothing_of_the_viewer_reaches_the_app() {
    let viewer = map(&[
        ("host", "demo.apps.example"),
        ("cookie", "__Host-sluice-session=s3cret; theirs=1"),
        ("authorization", "Bearer viewer-token"),
        ("proxy-authorization", "Basic eA=="),
        ("x-csrf-token", "c"),
        ("x-xsrf-token", "c"),
        ("csrf-token", "c"),
        ("x-requested-with", "XMLHttpRequest"),
        ("forwarded", "for=203.0.113.9"),
        ("x-forwarded-for", "203.0.113.9"),
        ("x-forwarded-host", "demo.apps.example"),
        ("x-forwarded-proto", "https"),
        ("x-real-ip", "203.0.113.9"),
        ("x-auth-request-user", "ann"),
        ("x-auth-request-email", "ann@acme.example"),
        ("remote-user", "ann"),
        ("x-forwarded-user", "ann"),
        ("x-forwarded-email", "ann@acme.example"),
        ("x-sluice-viewer", "forged"),
        ("referer", "https://cp.example/chat/42?sluice_token=t"),
        ("x-invented-tomorrow", "1"),
        ("te", "trailers"),
        ("keep-alive", "timeout=5"),
        ("accept", "text/html"),
        ("accept-language", "en"),
        ("user-agent", "test"),
        ("if-none-match", "\"a\""),
        ("if-none-match", "\"b\""),
        ("last-event-id", "7"),
    ]);
    let out = toward_app(&viewer, "127.0.0.1:8080");
    let mut names: Vec<&str> = out.keys().map(HeaderName::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "accept",
            "accept-language",
            "host",
            "if-none-match",
            "last-event-id",
            "user-agent"
        ]
    );
    assert_eq!(out["host"], "127.0.0.1:8080");
    assert_eq!(out.get_all("if-none-match").iter().count(), 2);
}

#[test]
fn an_upgrade_passes_as_an_upgrade() {
    type Row = (
        &'static str,
        Vec<(&'static str, &'static str)>,
        Option<&'static str>,
    );
    let table: Vec<Row> = vec![
        (
            "websocket",
            vec![
                ("connection", "keep-alive, Upgrade"),
                ("upgrade", "websocket"),
                ("sec-websocket-key", "k"),
                ("sec-websocket-version", "13"),
            ],
            Some("websocket"),
        ),
        (
            "upgrade without connection",
            vec![("upgrade", "websocket")],
            None,
        ),
        (
            "connection without upgrade",
            vec![("connection", "upgrade")],
            None,
        ),
        ("plain", vec![("connection", "keep-alive")], None),
    ];
    for (name, headers, want) in table {
        let out = toward_app(&map(&headers), "127.0.0.1:1");
        assert_eq!(
            out.get("upgrade").and_then(|v| v.to_str().ok()),
            want,
            "{name}"
        );
        assert_eq!(
            out.get("connection").is_some(),
            want.is_some(),
            "{name}: connection"
        );
    }
}

#[test]
fn answers_lose_what_acts_on_the_domain_and_gain_the_csp() {
    let csp = CspConfig {
        frame_ancestors: vec!["https://cp.example".into()],
        ..CspConfig::default()
    }
    .header()
    .expect("csp");
    let mut answer = map(&[
        ("content-type", "text/html"),
        ("set-cookie", "app=1; Domain=apps.example"),
        ("set-cookie", "__Host-sluice-session=forged"),
        ("clear-site-data", "\"cookies\""),
        ("strict-transport-security", "max-age=1; includeSubDomains"),
        ("alt-svc", "h3=\":443\""),
        ("nel", "{}"),
        ("report-to", "{}"),
        ("service-worker-allowed", "/"),
        ("access-control-allow-credentials", "true"),
        ("x-frame-options", "DENY"),
        ("connection", "x-private"),
        ("x-private", "1"),
        ("content-security-policy", "default-src 'self'"),
        ("etag", "\"a\""),
    ]);
    toward_viewer(&mut answer, &csp, false);
    let mut names: Vec<&str> = answer.keys().map(HeaderName::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["content-security-policy", "content-type", "etag"]);
    let csps: Vec<_> = answer.get_all("content-security-policy").iter().collect();
    assert_eq!(csps.len(), 2, "the app's CSP stays beside the operator's");
    assert_eq!(
        csps[1],
        "frame-ancestors https://cp.example; sandbox allow-scripts allow-forms \
         allow-same-origin allow-popups allow-downloads allow-top-navigation-by-user-activation"
    );

    let mut switching = map(&[("upgrade", "websocket"), ("connection", "Upgrade")]);
    toward_viewer(&mut switching, &csp, true);
    assert_eq!(switching["upgrade"], "websocket");
    assert_eq!(switching["connection"], "upgrade");
}

#[test]
fn csp_is_built_once_and_checked() {
    let none = CspConfig {
        frame_ancestors: vec![],
        sandbox: String::new(),
    };
    assert_eq!(none.header().expect("csp"), "frame-ancestors 'none'");
    let injected = CspConfig {
        frame_ancestors: vec!["https://a; script-src *".into()],
        ..CspConfig::default()
    };
    assert!(injected.header().is_err());
}
