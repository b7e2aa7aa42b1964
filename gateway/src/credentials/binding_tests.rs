use base64::engine::general_purpose::STANDARD;
use hyper::http::HeaderValue;

use super::*;
use crate::credentials::config::{PlaceholderShape, SchemeConfig, Source};

const PH_A: &str = "sk-AAAAAAAAAAAAAAAAAAAAAAAAAAAA";
const PH_B: &str = "gh-BBBBBBBBBBBBBBBBBBBBBBBBBBBB";

fn index() -> PlaceholderIndex {
    PlaceholderIndex::new([
        (PH_A.to_owned(), "a".to_owned()),
        (PH_B.to_owned(), "b".to_owned()),
        (String::new(), "ignored".to_owned()),
    ])
    .expect("index")
}

fn headers(pairs: &[(&'static str, String)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, HeaderValue::from_str(v).expect("value"));
    }
    h
}

fn hdr(name: &'static str, credential: &str) -> Found {
    Found {
        credential: credential.into(),
        location: Location::Header(HeaderName::from_static(name)),
    }
}

fn query(credential: &str) -> Found {
    Found {
        credential: credential.into(),
        location: Location::Query,
    }
}

#[test]
fn scan_table() {
    let basic = STANDARD.encode(format!("user:{PH_A}"));
    let basic_nopad = basic.trim_end_matches('=').to_owned();
    let with_query = format!("/p?x=1&key={PH_A}");
    let cases: Vec<(&str, HeaderMap, &str, Vec<Found>)> = vec![
        (
            "nothing",
            headers(&[("accept", "*/*".into())]),
            "/?q=1",
            vec![],
        ),
        (
            "bearer",
            headers(&[("authorization", format!("Bearer {PH_A}"))]),
            "/",
            vec![hdr("authorization", "a")],
        ),
        (
            "basic base64",
            headers(&[("authorization", format!("Basic {basic}"))]),
            "/",
            vec![hdr("authorization", "a")],
        ),
        (
            "basic unpadded, lowercase scheme",
            headers(&[("proxy-authorization", format!("basic {basic_nopad}"))]),
            "/",
            vec![hdr("proxy-authorization", "a")],
        ),
        (
            "custom header and query",
            headers(&[("x-api-key", PH_B.into())]),
            &with_query,
            vec![hdr("x-api-key", "b"), query("a")],
        ),
        (
            "percent-encoded query",
            headers(&[]),
            "/p?key=sk%2DAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            vec![query("a")],
        ),
        (
            "repeated in one value, deduplicated",
            headers(&[("cookie", format!("{PH_A};{PH_A}"))]),
            "/",
            vec![hdr("cookie", "a")],
        ),
        (
            "two credentials in one header",
            headers(&[("x-k", format!("{PH_A} {PH_B}"))]),
            "/",
            vec![hdr("x-k", "a"), hdr("x-k", "b")],
        ),
        (
            "the placeholder alone, as long as the shortest",
            headers(&[("x-k", PH_A.into())]),
            "/?k=1",
            vec![hdr("x-k", "a")],
        ),
        (
            "prefix alone is not a hit",
            headers(&[("x-k", "sk-AAAA".into())]),
            "/?k=gh-",
            vec![],
        ),
    ];
    let idx = index();
    for (what, h, uri, want) in cases {
        let uri: Uri = uri.parse().expect(what);
        assert_eq!(idx.scan(&h, &uri), want, "{what}");
    }
    let empty = PlaceholderIndex::new(Vec::new()).expect("empty");
    let h = headers(&[("authorization", format!("Bearer {PH_A}"))]);
    assert!(empty.scan(&h, &"/".parse().expect("uri")).is_empty());
    assert!(!format!("{idx:?}").contains(PH_A));
}

/// Placeholders of different lengths: a text shorter than the longest is
/// still searched for the shorter ones; one shorter than all holds none.
#[test]
fn scan_skips_only_text_shorter_than_every_placeholder() {
    let idx = PlaceholderIndex::new([
        ("ph-short-1".to_owned(), "short".to_owned()),
        (PH_B.to_owned(), "b".to_owned()),
    ])
    .expect("index");
    let cases: &[(&str, &[&str])] = &[
        ("ph-short-1", &["short"]),
        ("x ph-short-1", &["short"]),
        ("ph-short-", &[]),
        ("", &[]),
        (PH_B, &["b"]),
    ];
    for &(text, want) in cases {
        assert_eq!(idx.scan_bytes(text.as_bytes()), want, "{text}");
    }
}

fn cred(name: &str, hosts: &[&str]) -> CredentialConfig {
    CredentialConfig {
        name: name.into(),
        source: Source::Env { var: "X".into() },
        hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
        scheme: SchemeConfig::Bearer,
        placeholder: PlaceholderShape::default(),
    }
}

fn bind(credential: &str, hosts: &[&str], plain: bool) -> CredentialBinding {
    CredentialBinding {
        credential: credential.into(),
        hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
        allow_in_body: false,
        allow_plain_http: plain,
        follow_redirects: 0,
    }
}

fn inject(c: &str) -> Binding {
    Binding::Inject {
        credential: c.into(),
    }
}

fn refused(reason: &'static str, c: &str) -> Binding {
    Binding::Refuse {
        reason,
        credential: c.into(),
    }
}

#[test]
fn decide_table() {
    let creds = [
        cred("a", &["api.a.com", "*.a.com"]),
        cred("b", &["api.b.com"]),
        cred("unbound", &["api.u.com"]),
        cred("plain", &["p.local"]),
    ];
    let policy = [
        // Narrowed to one subdomain family of the credential's set.
        bind("a", &["*.eu.a.com", "api.a.com"], false),
        bind("b", &[], false),
        bind("plain", &[], true),
    ];
    let b = Bindings::compile(&creds, &policy).expect("bindings");
    let h = |n: &'static str, c: &str| hdr(n, c);
    let cases: Vec<(&str, &str, Transport, Vec<Found>, Binding)> = vec![
        (
            "no placeholder",
            "api.a.com",
            Transport::Tls,
            vec![],
            Binding::None,
        ),
        (
            "exact host",
            "api.a.com",
            Transport::Tls,
            vec![h("authorization", "a")],
            inject("a"),
        ),
        (
            "host case-insensitive",
            "API.A.COM.",
            Transport::Tls,
            vec![query("a")],
            inject("a"),
        ),
        (
            "wildcard within narrowing",
            "x.eu.a.com",
            Transport::Tls,
            vec![query("a")],
            inject("a"),
        ),
        (
            "wildcard outside narrowing",
            "x.us.a.com",
            Transport::Tls,
            vec![query("a")],
            refused(EXFILTRATION, "a"),
        ),
        (
            "apex not in wildcard",
            "a.com",
            Transport::Tls,
            vec![query("a")],
            refused(EXFILTRATION, "a"),
        ),
        (
            "foreign host",
            "evil.com",
            Transport::Tls,
            vec![h("authorization", "b")],
            refused(EXFILTRATION, "b"),
        ),
        (
            "suffix trick",
            "evilapi.b.com",
            Transport::Tls,
            vec![query("b")],
            refused(EXFILTRATION, "b"),
        ),
        (
            "two credentials",
            "api.a.com",
            Transport::Tls,
            vec![h("authorization", "a"), h("x-k", "b")],
            refused(EXFILTRATION, "b"),
        ),
        (
            "ambiguous on a host both allow",
            "api.b.com",
            Transport::Tls,
            vec![h("x-k", "b"), query("b")],
            inject("b"),
        ),
        (
            "not bound",
            "api.u.com",
            Transport::Tls,
            vec![query("unbound")],
            refused(NOT_BOUND, "unbound"),
        ),
        (
            "not bound, wrong host",
            "api.a.com",
            Transport::Tls,
            vec![query("unbound")],
            refused(EXFILTRATION, "unbound"),
        ),
        (
            "unknown credential",
            "api.a.com",
            Transport::Tls,
            vec![query("ghost")],
            refused(EXFILTRATION, "ghost"),
        ),
        (
            "plain http refused",
            "api.b.com",
            Transport::Plain,
            vec![query("b")],
            refused(PLAIN_HTTP, "b"),
        ),
        (
            "plain http allowed",
            "p.local",
            Transport::Plain,
            vec![query("plain")],
            inject("plain"),
        ),
        (
            "plain http to an address not the name's",
            "p.local",
            Transport::PlainElsewhere,
            vec![query("plain")],
            refused(PLAIN_HTTP_ADDRESS, "plain"),
        ),
        (
            "plain http refused before the address is asked",
            "api.b.com",
            Transport::PlainElsewhere,
            vec![query("b")],
            refused(PLAIN_HTTP, "b"),
        ),
    ];
    for (what, host, transport, found, want) in cases {
        assert_eq!(decide(host, transport, &found, &b), want, "{what}");
    }
}

#[test]
fn ambiguous_when_both_hosts_match() {
    let creds = [cred("a", &["*.shared.com"]), cred("b", &["api.shared.com"])];
    let b = Bindings::compile(&creds, &[bind("a", &[], false), bind("b", &[], false)])
        .expect("bindings");
    let found = [query("b"), query("a")];
    assert_eq!(
        decide("api.shared.com", Transport::Tls, &found, &b),
        refused(AMBIGUOUS, "a,b")
    );
    // Ambiguity outranks plain-http and binding checks, exfiltration outranks it.
    assert_eq!(
        decide("api.shared.com", Transport::Plain, &found, &b),
        refused(AMBIGUOUS, "a,b")
    );
    assert_eq!(
        decide("x.shared.com", Transport::Tls, &found, &b),
        refused(EXFILTRATION, "b")
    );
}

#[test]
fn compile_errors_and_accessors() {
    let creds = [cred("a", &["api.a.com"])];
    let errs = Bindings::compile(
        &creds,
        &[bind("ghost", &[], false), bind("a", &["bad.*"], false)],
    )
    .expect_err("invalid");
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs[0].to_string().contains("\"ghost\""));
    assert!(errs[1].to_string().contains("bad.*"));

    let errs = Bindings::compile(&creds, &[bind("a", &[], false), bind("a", &[], true)])
        .expect_err("duplicate");
    assert!(matches!(errs[..], [BindingError::DuplicateBinding(ref n)] if n == "a"));

    let mut body = bind("a", &[], false);
    body.allow_in_body = true;
    let b = Bindings::compile(&creds, &[body]).expect("ok");
    assert!(b.allows_body("a"));
    assert!(!b.allows_body("ghost"));
    assert_eq!(b.bound_credentials().collect::<Vec<_>>(), vec!["a"]);
}

#[test]
fn index_for_sandbox_finds_derived_placeholders() {
    let p = Placeholders::new([5; 32]);
    let mut c = cred("openai", &["api.openai.com"]);
    c.placeholder.prefix = Some("sk-".into());
    let idx = PlaceholderIndex::for_sandbox(&p, "sb1", [(&c, 40)]).expect("index");
    let ph = p.placeholder("sb1", "openai", &c.placeholder, 40);
    let h = headers(&[("authorization", format!("Bearer {ph}"))]);
    assert_eq!(
        idx.scan(&h, &"/".parse().expect("uri")),
        vec![hdr("authorization", "openai")]
    );
    // Another sandbox's placeholder is not this sandbox's credential.
    let other = p.placeholder("sb2", "openai", &c.placeholder, 40);
    let h = headers(&[("authorization", format!("Bearer {other}"))]);
    assert!(idx.scan(&h, &"/".parse().expect("uri")).is_empty());
}

fn body(credential: &str) -> Found {
    Found {
        credential: credential.into(),
        location: Location::Body,
    }
}

#[test]
fn body_placeholders_table() {
    let creds = [cred("a", &["api.a.com"]), cred("b", &["api.b.com"])];
    let mut in_body = bind("a", &[], false);
    in_body.allow_in_body = true;
    let policy = [in_body, bind("b", &[], false)];
    let b = Bindings::compile(&creds, &policy).expect("bindings");
    assert!(b.any_body());
    let cases: Vec<(&str, &str, Vec<Found>, Binding)> = vec![
        ("allowed in body", "api.a.com", vec![body("a")], inject("a")),
        (
            "body and header, same credential",
            "api.a.com",
            vec![hdr("authorization", "a"), body("a")],
            inject("a"),
        ),
        (
            "body toward another host",
            "api.b.com",
            vec![body("a")],
            refused(EXFILTRATION, "a"),
        ),
        (
            "body of a credential without allow_in_body, its own host: left alone",
            "api.b.com",
            vec![body("b")],
            Binding::None,
        ),
        (
            "… but still exfiltration elsewhere",
            "api.a.com",
            vec![body("b")],
            refused(EXFILTRATION, "b"),
        ),
        (
            "header of b, body of b: the header decides",
            "api.b.com",
            vec![hdr("authorization", "b"), body("b")],
            inject("b"),
        ),
    ];
    for (what, host, found, want) in cases {
        assert_eq!(decide(host, Transport::Tls, &found, &b), want, "{what}");
    }
    let none = Bindings::compile(&creds, &[bind("a", &[], false)]).expect("bindings");
    assert!(!none.any_body());
    assert_eq!(
        index().scan_body(format!("x={PH_B}&y={PH_A}&z={PH_B}").as_bytes()),
        vec![body("b"), body("a")]
    );
}

#[test]
fn allow_in_body_table() {
    // What a body placeholder becomes must be something the sandbox may
    // hold: a body can be stored upstream and read back. An HMAC key has
    // no such public stand-in.
    let scheme = |yaml: &str| -> SchemeConfig { serde_yaml::from_str(yaml).expect(yaml) };
    let cases = [
        ("{type: bearer}", true),
        ("{type: header, name: x-key, template: '{secret}'}", true),
        ("{type: query, param: key}", true),
        ("{type: basic, username: u}", true),
        (
            "{type: oauth2, grant: client_credentials, token_url: 'https://a.test/t', client_id: c}",
            true,
        ),
        (
            "{type: aws_sigv4, access_key_id: {env: K}, region: r, service: s3}",
            true,
        ),
        (
            "{type: hmac, algorithm: sha256, header: x-sig, encoding: hex, canonical: '{method}'}",
            false,
        ),
    ];
    for (yaml, allowed) in cases {
        let mut c = cred("a", &["api.a.com"]);
        c.scheme = scheme(yaml);
        let mut in_body = bind("a", &[], false);
        in_body.allow_in_body = true;
        match (Bindings::compile([&c], &[in_body.clone()]), allowed) {
            (Ok(_), true) => {}
            (Err(errs), false) => {
                let text = errs[0].to_string();
                assert!(
                    text.contains("\"a\"") && text.contains("allow_in_body"),
                    "{text}"
                );
            }
            (got, _) => panic!("{yaml}: {got:?}"),
        }
        // Without `allow_in_body` every scheme binds.
        in_body.allow_in_body = false;
        Bindings::compile([&c], &[in_body]).expect(yaml);
    }
}

#[test]
fn follow_redirects_is_carried_capped_and_checked() {
    let creds = [
        cred("a", &["api.a.com", "*.a.com"]),
        cred("b", &["api.b.com"]),
    ];
    let follow = |n: u8| CredentialBinding {
        follow_redirects: n,
        ..bind("a", &["*.eu.a.com", "api.a.com"], true)
    };
    // (follow_redirects written, carried, a policy error)
    let cases = [
        (0, 0, false),
        (1, 1, false),
        (3, 3, false),
        (4, 3, true),
        (255, 3, true),
    ];
    for (written, carried, error) in cases {
        let policy = [follow(written), bind("b", &[], false)];
        let b = Bindings::compile(&creds, &policy).expect("bindings");
        assert_eq!(b.follow_redirects("a"), carried, "{written}");
        assert_eq!(b.follow_redirects("b"), 0);
        assert_eq!(b.follow_redirects("unknown"), 0);
        let found = follow_redirects_error(2, &policy[0]);
        assert_eq!(found.is_some(), error, "{written}");
        if let Some(e) = found {
            assert_eq!(e.path, "credentials[2].follow_redirects");
            assert!(e.message.contains(&written.to_string()), "{}", e.message);
            assert!(e.hint.is_some_and(|h| h.contains('3')));
        }
    }
    let b = Bindings::compile(&creds, &[follow(2), bind("b", &[], false)]).expect("bindings");
    assert!(b.allows_plain_http("a") && !b.allows_plain_http("b"));
    // Where a redirect may lead: the credential's hosts, narrowed by its
    // binding; never for a credential the policy does not bind.
    for (credential, host, sends) in [
        ("a", "api.a.com", true),
        ("a", "x.eu.a.com", true),
        ("a", "x.us.a.com", false),
        ("a", "api.b.com", false),
        ("b", "api.b.com", true),
        ("b", "api.a.com", false),
        ("unknown", "api.a.com", false),
    ] {
        assert_eq!(b.sends_to(credential, host), sends, "{credential} {host}");
    }
    let unbound = Bindings::compile(&creds, &[]).expect("bindings");
    assert!(!unbound.sends_to("a", "api.a.com"));
}
