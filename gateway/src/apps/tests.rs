use std::collections::BTreeMap;

use hyper::Method;

use super::*;
use crate::policy::raw::{AppPolicy, Approval::*, Apps};

fn catalogue() -> Catalogue {
    let yaml = r#"
- name: tracker
  hosts: [api.tracker.test, "*.tracker-cdn.test"]
  actions:
    - {name: issues.read, method: GET, path: "/repos/*/*/issues/**"}
    - {name: issues.create, method: POST, path: "/repos/*/*/issues"}
    - {name: issues.close, method: PATCH, path: "/repos/*/*/issues/*"}
    # Overlaps issues.read and issues.close on purpose.
    - {name: admin, path: "/repos/*/admin/**"}
    - {name: anything.delete, method: DELETE, path: "/**"}
- name: wiki
  urls: ["https://wiki.test/api/**", "*.wiki.test/edit/*"]
"#;
    let apps: Vec<AppConfig> = serde_yaml::from_str(yaml).expect("apps yaml");
    Catalogue::compile(&apps).expect("valid catalogue")
}

/// A policy's apps in the short form (`apps.default: ask`).
fn policy(entries: &[(&str, &[(&str, Approval)])]) -> Apps {
    let list = entries
        .iter()
        .map(|(app, actions)| AppPolicy {
            app: (*app).to_owned(),
            actions: actions
                .iter()
                .map(|(a, m)| ((*a).to_owned(), *m))
                .collect::<BTreeMap<_, _>>(),
        })
        .collect();
    Apps {
        list,
        ..Apps::default()
    }
}

#[test]
fn strictest_matching_action_wins_and_uncatalogued_is_ask() {
    let catalogue = catalogue();
    let mixed = policy(&[(
        "tracker",
        &[
            ("issues.read", Auto),
            ("issues.create", Ask),
            ("issues.close", Auto),
            ("admin", Deny),
            ("*", Auto),
        ],
    )]);
    let all_auto = policy(&[("tracker", &[("*", Auto)])]);
    let unlisted_deny = policy(&[("tracker", &[("issues.read", Auto), ("*", Deny)])]);
    let no_star = policy(&[("tracker", &[("issues.read", Auto)])]);
    let wiki = policy(&[("wiki", &[("*", Auto)])]);
    let both = policy(&[("tracker", &[("*", Auto)]), ("wiki", &[])]);
    let none = policy(&[]);
    let with_default = |default| Apps {
        default,
        ..policy(&[("wiki", &[("*", Auto)])])
    };
    let (wiki_deny, wiki_auto) = (with_default(Deny), with_default(Auto));
    // (policy, host, method, path, expected (mode, app, action) or None)
    type Case<'a> = (
        &'a Apps,
        &'a str,
        Method,
        &'a str,
        Option<(Approval, &'a str, Option<&'a str>)>,
    );
    let cases: Vec<Case<'_>> = vec![
        // One action matches: its mode.
        (
            &mixed,
            "api.tracker.test",
            Method::GET,
            "/repos/o/r/issues/1",
            Some((Auto, "tracker", Some("issues.read"))),
        ),
        (
            &mixed,
            "api.tracker.test",
            Method::POST,
            "/repos/o/r/issues",
            Some((Ask, "tracker", Some("issues.create"))),
        ),
        // The query takes no part; case and trailing dot of the host neither.
        (
            &mixed,
            "API.Tracker.Test.",
            Method::POST,
            "/repos/o/r/issues?x=1",
            Some((Ask, "tracker", Some("issues.create"))),
        ),
        // Overlap: issues.read (auto) and admin (deny) both match: deny.
        (
            &mixed,
            "api.tracker.test",
            Method::GET,
            "/repos/o/admin/issues/7",
            Some((Deny, "tracker", Some("admin"))),
        ),
        // Overlap: issues.close (auto) and admin (deny).
        (
            &mixed,
            "api.tracker.test",
            Method::PATCH,
            "/repos/o/admin/issues/7",
            Some((Deny, "tracker", Some("admin"))),
        ),
        // Overlap of two unlisted-by-name actions resolved through `*`.
        (
            &all_auto,
            "api.tracker.test",
            Method::DELETE,
            "/repos/o/admin/x",
            Some((Auto, "tracker", Some("admin"))),
        ),
        // Uncatalogued: no action matches → ask, even with `*: auto`.
        (
            &mixed,
            "api.tracker.test",
            Method::PUT,
            "/repos/o/r/issues",
            Some((Ask, "tracker", None)),
        ),
        (
            &all_auto,
            "x.tracker-cdn.test",
            Method::GET,
            "/",
            Some((Ask, "tracker", None)),
        ),
        // ... and deny when `*` says deny.
        (
            &unlisted_deny,
            "api.tracker.test",
            Method::PUT,
            "/elsewhere",
            Some((Deny, "tracker", None)),
        ),
        (
            &unlisted_deny,
            "api.tracker.test",
            Method::POST,
            "/repos/o/r/issues",
            Some((Deny, "tracker", Some("issues.create"))),
        ),
        // An action the policy does not name, with no `*`: ask.
        (
            &no_star,
            "api.tracker.test",
            Method::POST,
            "/repos/o/r/issues",
            Some((Ask, "tracker", Some("issues.create"))),
        ),
        // Method must match; `*` path segments do not cross `/`.
        (
            &mixed,
            "api.tracker.test",
            Method::POST,
            "/repos/o/r/x/issues",
            Some((Ask, "tracker", None)),
        ),
        // Encoded and doubled slashes do not dodge a pattern.
        (
            &mixed,
            "api.tracker.test",
            Method::GET,
            "/repos/o/%61dmin//issues",
            Some((Deny, "tracker", Some("admin"))),
        ),
        // Not the app's host: approvals do not apply.
        (
            &mixed,
            "tracker-cdn.test",
            Method::GET,
            "/repos/o/r/issues/1",
            None,
        ),
        (&mixed, "other.test", Method::DELETE, "/", None),
        // Custom app: ask for every matching URL, `*: auto` cannot loosen it.
        (
            &wiki,
            "wiki.test",
            Method::GET,
            "/api",
            Some((Ask, "wiki", None)),
        ),
        (
            &wiki,
            "wiki.test",
            Method::GET,
            "/api/pages/1",
            Some((Ask, "wiki", None)),
        ),
        (
            &wiki,
            "a.wiki.test",
            Method::POST,
            "/edit/page",
            Some((Ask, "wiki", None)),
        ),
        (
            &wiki,
            "a.wiki.test",
            Method::POST,
            "/edit/page/deeper",
            None,
        ),
        (&wiki, "wiki.test", Method::GET, "/apiary", None),
        // A policy that does not list the app: its `apps.default` (ask
        // unless set), for every request, whatever its action.
        (
            &wiki,
            "api.tracker.test",
            Method::DELETE,
            "/x",
            Some((Ask, "tracker", None)),
        ),
        (
            &none,
            "api.tracker.test",
            Method::GET,
            "/repos/o/r/issues",
            Some((Ask, "tracker", None)),
        ),
        (
            &wiki_deny,
            "api.tracker.test",
            Method::GET,
            "/repos/o/r/issues",
            Some((Deny, "tracker", None)),
        ),
        (
            &wiki_auto,
            "api.tracker.test",
            Method::DELETE,
            "/x",
            Some((Auto, "tracker", None)),
        ),
        // The default never touches what the policy lists (a custom app
        // is `ask` unless its `"*"` denies).
        (
            &wiki_deny,
            "wiki.test",
            Method::GET,
            "/api/x",
            Some((Ask, "wiki", None)),
        ),
        // Hosts no app covers: not this stage's business.
        (&none, "other.test", Method::GET, "/x", None),
        // Several apps listed: each consulted.
        (
            &both,
            "wiki.test",
            Method::GET,
            "/api/x",
            Some((Ask, "wiki", None)),
        ),
        (
            &both,
            "api.tracker.test",
            Method::GET,
            "/repos/o/r/issues",
            Some((Auto, "tracker", Some("issues.read"))),
        ),
    ];
    for (policy, host, method, path, want) in cases {
        let got = catalogue.decide(policy, host, &method, path);
        let got = got
            .as_ref()
            .map(|d| (d.mode, d.app.as_str(), d.action.as_deref()));
        assert_eq!(got, want, "{method} {host}{path}");
    }
}

#[test]
fn bad_catalogues_name_every_problem() {
    let yaml = r#"
- {name: a, hosts: [a.test], actions: [{name: x, path: "no-slash"}, {name: x, method: "G T", path: /}]}
- {name: a, urls: ["wiki.test/a?b"]}
- {name: c}
- {name: d, hosts: ["*"], urls: [x.test]}
- {name: "", hosts: ["a.test:443"]}
"#;
    let apps: Vec<AppConfig> = serde_yaml::from_str(yaml).expect("yaml");
    let errors = Catalogue::compile(&apps).expect_err("invalid");
    let want = [
        "apps[0].actions[0].path",
        "apps[0].actions[1].name: action `x` twice",
        "apps[0].actions[1].method",
        "apps[1].name: app `a` is declared twice",
        "apps[1].urls[0]",
        "apps[2]: an app needs",
        "apps[3]: `urls` declares a custom app",
        "apps[4].name: empty",
        "apps[4].hosts[0]",
    ];
    for w in want {
        assert!(
            errors.iter().any(|e| e.starts_with(w)),
            "no error starting {w:?} in {errors:#?}"
        );
    }
}

#[test]
fn paths_are_normalized_before_matching() {
    let cases = [
        ("/a/b?q=1", "/a/b"),
        ("", "/"),
        ("?x", "/"),
        ("//a///b", "/a/b"),
        ("/%61%2Fb", "/a%2Fb"),
        ("/caf%C3%A9/é", "/caf%C3%A9/é"),
        ("/%7e%zz", "/~%zz"),
    ];
    for (raw, want) in cases {
        assert_eq!(pattern::normalize_path(raw), want, "{raw}");
    }
}

#[test]
fn dot_segments_are_refused_where_apps_decide() {
    let catalogue = catalogue();
    let tracker = policy(&[("tracker", &[("issues.read", Auto), ("admin", Deny)])]);
    let wiki = policy(&[("wiki", &[("*", Auto)])]);
    let none = policy(&[]);
    // (policy, host, path, refused as a dot segment by app, or the decision
    // it gets otherwise as (mode, action))
    type Case<'a> = (
        &'a Apps,
        &'a str,
        &'a str,
        Result<&'a str, Option<(Approval, Option<&'a str>)>>,
    );
    let cases: Vec<Case<'_>> = vec![
        // `issues/**` would say auto; the upstream would serve /repos/o/admin/x.
        (
            &tracker,
            "api.tracker.test",
            "/repos/o/r/issues/../../admin/x",
            Ok("tracker"),
        ),
        (
            &tracker,
            "api.tracker.test",
            "/repos/o/r/issues/./1",
            Ok("tracker"),
        ),
        (
            &tracker,
            "api.tracker.test",
            "/repos/o/r/issues/%2e%2E/%2E./admin/x",
            Ok("tracker"),
        ),
        (
            &tracker,
            "api.tracker.test",
            "/repos/o/r/issues/..",
            Ok("tracker"),
        ),
        // Separators an upstream may read as `/`, and `;` parameters
        // (`..;/` is `../` to some servers).
        (
            &tracker,
            "api.tracker.test",
            "/repos/o/r/issues/..%2F..%2fadmin/x",
            Ok("tracker"),
        ),
        (
            &tracker,
            "api.tracker.test",
            "/repos/o/r/issues\\..\\..\\admin/x",
            Ok("tracker"),
        ),
        (
            &tracker,
            "api.tracker.test",
            "/repos/o/r/issues/..%5c..%5Cadmin/x",
            Ok("tracker"),
        ),
        (
            &tracker,
            "api.tracker.test",
            "/repos/o/r/issues/..;x/..;/admin/x",
            Ok("tracker"),
        ),
        // A custom app: `/other/../api/x` matches no pattern as written.
        (&wiki, "wiki.test", "/other/../api/x", Ok("wiki")),
        // Dots inside a segment, and in the query, are fine.
        (
            &tracker,
            "api.tracker.test",
            "/repos/o/r/issues/a..b/.x/...",
            Err(Some((Auto, Some("issues.read")))),
        ),
        (
            &tracker,
            "api.tracker.test",
            "/repos/o/r/issues/1?next=../../admin",
            Err(Some((Auto, Some("issues.read")))),
        ),
        // Hosts no listed app covers are not this stage's business.
        (&tracker, "other.test", "/a/../b", Err(None)),
        // An app the policy does not list still decides on its hosts.
        (&none, "api.tracker.test", "/a/../b", Ok("tracker")),
    ];
    for (policy, host, path, want) in cases {
        let got = catalogue.decide(policy, host, &Method::GET, path);
        let got = match &got {
            Some(d) if d.refusal == Some(PathRefusal::DotSegment) => {
                assert_eq!((d.mode, d.action.as_deref()), (Deny, None), "{host}{path}");
                Ok(d.app.as_str())
            }
            got => Err(got.as_ref().map(|d| (d.mode, d.action.as_deref()))),
        };
        assert_eq!(got, want, "GET {host}{path}");
    }
}
