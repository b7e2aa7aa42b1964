use std::collections::HashMap;

use hyper::Request;

use super::*;
use crate::ingress::test_keys::TestKeys;

const NOW: u64 = 1_800_000_000;

struct Table(HashMap<String, Target>);

impl Lookup for Table {
    fn target(&self, name: &str, _now: u64) -> Option<Target> {
        self.0.get(name).cloned()
    }
}

fn target(name: &str, scope: &str) -> Target {
    Target {
        name: name.into(),
        sandbox: "sb".into(),
        port: 8080,
        scope: scope.parse().expect("scope"),
        owner: Some(OwnerId::parse("ann@acme").expect("owner")),
        netns: None,
    }
}

fn parts(host: &str, path: &str, headers: &[(&str, &str)]) -> Parts {
    let mut b = Request::builder().uri(path).header("host", host);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(()).expect("request").into_parts().0
}

struct Fixture {
    keys: TestKeys,
    verifier: Verifier,
    sessions: Sessions,
    table: Table,
    settings: Settings,
}

impl Fixture {
    fn new() -> Fixture {
        let keys = TestKeys::new();
        let verifier = Verifier::load(&keys.config).expect("keys");
        let table = Table(
            [
                target("mine", "private"),
                target("team", "org"),
                target("few", "users:bob"),
                target("open", "public"),
            ]
            .into_iter()
            .map(|t| (t.name.clone(), t))
            .collect(),
        );
        Fixture {
            keys,
            verifier,
            sessions: Sessions::default(),
            table,
            settings: Settings {
                apps_domain: "apps.example".into(),
                route_by: RouteBy::Host,
                same_site: SameSite::Lax,
            },
        }
    }

    fn admit(&self, p: &Parts) -> Admission {
        admit(
            &self.settings,
            &self.verifier,
            &self.sessions,
            &self.table,
            p,
            NOW,
        )
    }

    /// `forward` or `redirect` or the refusal's status and reason.
    fn outcome(&self, p: &Parts) -> String {
        match self.admit(p) {
            Admission::Forward { .. } => "forward".into(),
            Admission::Redirect { .. } => "redirect".into(),
            Admission::Refuse(r) => format!("{} {}", r.status.as_u16(), r.reason),
        }
    }
}

#[test]
fn viewers_are_admitted_as_the_scope_says() {
    let f = Fixture::new();
    let ann = format!("Bearer {}", f.keys.viewer("ann", Some("acme"), NOW));
    let cat = format!("Bearer {}", f.keys.viewer("cat", Some("acme"), NOW));
    let eve = format!("Bearer {}", f.keys.viewer("eve", Some("evil"), NOW));
    let bob = format!("Bearer {}", f.keys.viewer("bob", None, NOW));
    let expired = format!(
        "Bearer {}",
        f.keys
            .ed(&serde_json::json!({"sub": "ann", "org": "acme", "exp": NOW - 3600}))
    );
    let forged = format!(
        "Bearer {}",
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA),
            &serde_json::json!({"sub": "ann", "org": "acme", "exp": NOW + 60}),
            &f.keys.stranger,
        )
        .expect("encode")
    );
    let table: Vec<(&str, &str, Option<&str>, &str)> = vec![
        ("mine.apps.example", "/", Some(&ann), "forward"),
        ("mine.apps.example", "/", Some(&cat), "403 not_owner"),
        ("mine.apps.example", "/", None, "401 no_token"),
        ("team.apps.example", "/", Some(&cat), "forward"),
        ("team.apps.example", "/", Some(&eve), "403 other_org"),
        ("few.apps.example", "/", Some(&bob), "forward"),
        ("few.apps.example", "/", Some(&cat), "403 not_listed"),
        ("open.apps.example", "/", None, "forward"),
        ("open.apps.example", "/", Some(&eve), "forward"),
        (
            "mine.apps.example",
            "/",
            Some(&expired),
            "401 token_expired",
        ),
        (
            "mine.apps.example",
            "/",
            Some(&forged),
            "401 token_bad_signature",
        ),
        // A bad token is refused even where none is needed.
        (
            "open.apps.example",
            "/",
            Some(&forged),
            "401 token_bad_signature",
        ),
        ("gone.apps.example", "/", Some(&ann), "404 no_such_app"),
        ("apps.example", "/", Some(&ann), "404 unknown_host"),
        (
            "mine.elsewhere.example",
            "/",
            Some(&ann),
            "404 unknown_host",
        ),
        (
            "mine.apps.example",
            "/?sluice_token=%41",
            None,
            "401 token_malformed",
        ),
    ];
    for (host, path, auth, want) in table {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("authorization", a)).into_iter().collect();
        assert_eq!(
            f.outcome(&parts(host, path, &headers)),
            want,
            "{host}{path} {auth:?}"
        );
    }
}

#[test]
fn a_url_token_becomes_a_cookie_once() {
    let f = Fixture::new();
    let token = f.keys.viewer("ann", Some("acme"), NOW);
    let url = format!("/page?x=1&sluice_token={token}");
    let Admission::Redirect {
        location,
        cookie,
        opened,
    } = f.admit(&parts("mine.apps.example", &url, &[]))
    else {
        panic!("a redirect");
    };
    assert_eq!(location, "/page?x=1");
    assert_eq!(
        opened.map(|(t, v)| (t.name, v.sub)),
        Some(("mine".into(), "ann".into()))
    );
    let cookie = cookie.expect("a session cookie");
    let cookie = cookie.to_str().expect("ascii");
    assert!(cookie.starts_with("__Host-sluice-session="), "{cookie}");
    assert!(
        cookie.contains("Max-Age=3600; HttpOnly; Secure; SameSite=Lax"),
        "{cookie}"
    );
    let session = cookie.split(';').next().expect("pair");

    // The cookie admits on the app it was opened for, not on another.
    assert_eq!(
        f.outcome(&parts("mine.apps.example", "/page", &[("cookie", session)])),
        "forward"
    );
    assert_eq!(
        f.outcome(&parts("team.apps.example", "/", &[("cookie", session)])),
        "401 no_token"
    );
    // The link does not work twice.
    assert_eq!(
        f.outcome(&parts("mine.apps.example", &url, &[])),
        "401 token_reused"
    );
    // Nor does a token for a viewer the scope refuses open a session.
    let cat = f.keys.viewer("cat", Some("acme"), NOW);
    assert_eq!(
        f.outcome(&parts(
            "mine.apps.example",
            &format!("/?sluice_token={cat}"),
            &[]
        )),
        "403 not_owner"
    );
}

#[test]
fn hosts_must_be_one_and_agree() {
    let f = Fixture::new();
    let two = Request::builder()
        .uri("/")
        .header("host", "open.apps.example")
        .header("host", "mine.apps.example")
        .body(())
        .expect("request")
        .into_parts()
        .0;
    assert_eq!(f.outcome(&two), "400 bad_host");
    let disagree = Request::builder()
        .uri("https://open.apps.example/")
        .header("host", "mine.apps.example")
        .body(())
        .expect("request")
        .into_parts()
        .0;
    assert_eq!(f.outcome(&disagree), "400 bad_host");
    let h2 = Request::builder()
        .uri("https://open.apps.example/")
        .body(())
        .expect("request")
        .into_parts()
        .0;
    assert_eq!(f.outcome(&h2), "forward");
}

#[test]
fn path_routing_scopes_cookies_per_app() {
    let mut f = Fixture::new();
    f.settings.route_by = RouteBy::Path;
    let token = f.keys.viewer("ann", Some("acme"), NOW);
    let Admission::Redirect {
        location, cookie, ..
    } = f.admit(&parts(
        "apps.example",
        &format!("/mine/x?sluice_token={token}"),
        &[],
    ))
    else {
        panic!("a redirect");
    };
    assert_eq!(location, "/mine/x");
    assert!(
        cookie
            .expect("cookie")
            .to_str()
            .expect("ascii")
            .starts_with("__Host-sluice-session-mine=")
    );
    assert_eq!(f.outcome(&parts("apps.example", "/open", &[])), "redirect");
    let Admission::Forward { path, .. } = f.admit(&parts("apps.example", "/open/a?b", &[])) else {
        panic!("forward");
    };
    assert_eq!(path, "/a?b");
}
