use super::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

const SECRET: &str = "real-S3CRET/value+1";
const PH: &str = "sk-PLACEHOLDERabcdefghijklmnop";

fn compile(c: SchemeConfig) -> Scheme {
    Scheme::compile(&c).expect("valid scheme")
}

fn head(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            HeaderName::from_bytes(k.as_bytes()).expect("name"),
            HeaderValue::from_str(v).expect("value"),
        );
    }
    h
}

fn values(h: &HeaderMap, name: &str) -> Vec<String> {
    h.get_all(name)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect()
}

#[test]
fn header_schemes_table() {
    let basic = format!("Basic {}", STANDARD.encode(format!("bot:{SECRET}")));
    let cases: Vec<(&str, SchemeConfig, &str, String)> = vec![
        (
            "bearer",
            SchemeConfig::Bearer,
            "authorization",
            format!("Bearer {SECRET}"),
        ),
        (
            "header template",
            SchemeConfig::Header {
                name: "X-Api-Key".into(),
                template: "Token {secret}".into(),
            },
            "x-api-key",
            format!("Token {SECRET}"),
        ),
        (
            "header template twice",
            SchemeConfig::Header {
                name: "x-sig".into(),
                template: "{secret};{secret}".into(),
            },
            "x-sig",
            format!("{SECRET};{SECRET}"),
        ),
        (
            "basic",
            SchemeConfig::Basic {
                username: "bot".into(),
            },
            "authorization",
            basic,
        ),
    ];
    for (what, config, header, want) in cases {
        let mut h = head(&[
            ("authorization", &format!("Bearer {PH}")),
            ("proxy-authorization", "Basic Zm9vOmJhcg=="),
            ("x-api-key", PH),
            ("x-sig", "sandbox-sent"),
            ("accept", "*/*"),
        ]);
        let mut uri: Uri = "/v1/x?a=1".parse().expect("uri");
        compile(config)
            .apply(&Secret::from(SECRET), PH, &mut h, &mut uri)
            .expect(what);
        assert_eq!(values(&h, header), vec![want], "{what}");
        assert!(
            h.get(header).is_some_and(HeaderValue::is_sensitive),
            "{what}"
        );
        assert!(h.get("proxy-authorization").is_none(), "{what}");
        assert_eq!(values(&h, "accept"), vec!["*/*"], "{what}");
        assert_eq!(uri, "/v1/x?a=1", "{what}: uri untouched");
        // No placeholder survives anywhere.
        for (_, v) in &h {
            assert!(!contains(v.as_bytes(), PH.as_bytes()), "{what}: {v:?}");
        }
    }
}

#[test]
fn header_scheme_strips_other_auth_headers() {
    let mut h = head(&[("authorization", "Bearer leftover")]);
    let mut uri: Uri = "/".parse().expect("uri");
    compile(SchemeConfig::Header {
        name: "x-api-key".into(),
        template: "{secret}".into(),
    })
    .apply(&Secret::from(SECRET), PH, &mut h, &mut uri)
    .expect("apply");
    assert!(h.get("authorization").is_none());
    assert_eq!(values(&h, "x-api-key"), vec![SECRET]);
}

#[test]
fn placeholder_values_elsewhere_are_dropped_but_siblings_kept() {
    let mut h = head(&[
        ("x-extra", &format!("pre-{PH}")),
        ("x-multi", "keep-me"),
        ("x-multi", PH),
    ]);
    let mut uri: Uri = "/".parse().expect("uri");
    compile(SchemeConfig::Bearer)
        .apply(&Secret::from(SECRET), PH, &mut h, &mut uri)
        .expect("apply");
    assert!(h.get("x-extra").is_none());
    assert_eq!(values(&h, "x-multi"), vec!["keep-me"]);
}

#[test]
fn query_rewriting_table() {
    let enc = "real-S3CRET%2Fvalue%2B1";
    let cases = [
        ("append", "/p", format!("/p?key={enc}")),
        (
            "append after others",
            "/p?a=1&b=2",
            format!("/p?a=1&b=2&key={enc}"),
        ),
        (
            "replace in place",
            &format!("/p?a=1&key={PH}&b=2") as &str,
            format!("/p?a=1&key={enc}&b=2"),
        ),
        (
            "replace any value",
            "/p?key=whatever&z=9",
            format!("/p?key={enc}&z=9"),
        ),
        (
            "duplicates collapse",
            "/p?key=1&key=2&c=3",
            format!("/p?key={enc}&c=3"),
        ),
        ("encoded param name", "/p?k%65y=1", format!("/p?key={enc}")),
        (
            "placeholder in other param dropped",
            &format!("/p?other={PH}&a=%20x"),
            format!("/p?a=%20x&key={enc}"),
        ),
        (
            "encoded placeholder dropped",
            "/p?o=sk%2DPLACEHOLDERabcdefghijklmnop",
            format!("/p?key={enc}"),
        ),
        ("empty pairs", "/p?&&a=1&", format!("/p?a=1&key={enc}")),
        (
            "absolute form",
            "https://h.example/p?a=1",
            format!("https://h.example/p?a=1&key={enc}"),
        ),
    ];
    for (what, input, want) in cases {
        let mut uri: Uri = input.parse().expect(what);
        let mut h = head(&[("authorization", "Bearer x")]);
        compile(SchemeConfig::Query {
            param: "key".into(),
        })
        .apply(&Secret::from(SECRET), PH, &mut h, &mut uri)
        .expect(what);
        assert_eq!(uri.to_string(), want, "{what}");
        assert!(h.get("authorization").is_none(), "{what}");
    }
}

#[test]
fn non_query_scheme_only_drops_placeholder_params() {
    let cases = [
        ("/p?a=1", "/p?a=1"),
        (&format!("/p?key={PH}&a=1") as &str, "/p?a=1"),
        (&format!("/p?key={PH}") as &str, "/p"),
    ];
    for (input, want) in cases {
        let mut uri: Uri = input.parse().expect("uri");
        compile(SchemeConfig::Bearer)
            .apply(&Secret::from(SECRET), PH, &mut HeaderMap::new(), &mut uri)
            .expect("apply");
        assert_eq!(uri.to_string(), want, "{input}");
    }
}

#[test]
fn compile_errors_table() {
    let cases = [
        (
            SchemeConfig::Header {
                name: "bad name".into(),
                template: "{secret}".into(),
            },
            SchemeError::BadHeaderName("bad name".into()),
        ),
        (
            SchemeConfig::Header {
                name: "Host".into(),
                template: "{secret}".into(),
            },
            SchemeError::ForbiddenHeader("Host".into()),
        ),
        (
            SchemeConfig::Header {
                name: "x-k".into(),
                template: "static".into(),
            },
            SchemeError::TemplateWithoutSecret,
        ),
        (
            SchemeConfig::Header {
                name: "x-k".into(),
                template: "{secret}\r\nx: y".into(),
            },
            SchemeError::BadTemplate,
        ),
        (
            SchemeConfig::Query {
                param: String::new(),
            },
            SchemeError::EmptyParam,
        ),
        (
            SchemeConfig::Basic {
                username: "a:b".into(),
            },
            SchemeError::UsernameWithColon,
        ),
        (
            SchemeConfig::Basic {
                username: "a\nb".into(),
            },
            SchemeError::BadUsername,
        ),
    ];
    for (config, want) in cases {
        assert_eq!(Scheme::compile(&config), Err(want), "{config:?}");
    }
}

#[test]
fn secret_with_newline_is_refused_without_echoing_it() {
    let secret = Secret::from("abc\r\nX-Evil: 1");
    let err = compile(SchemeConfig::Bearer)
        .apply(
            &secret,
            PH,
            &mut HeaderMap::new(),
            &mut "/".parse().expect("uri"),
        )
        .expect_err("not header safe");
    assert_eq!(err, SchemeError::SecretNotHeaderSafe);
    assert!(!err.to_string().contains("abc"));
    assert!(!format!("{err:?}").contains("abc"));
}

#[test]
fn redaction_needles() {
    let secret = Secret::from("a/b\"c+d");
    let r = Redactions::for_secret(&secret, Some(b"bot:a/b\"c+d"));
    let got: Vec<String> = r
        .needles()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect();
    let want = [
        "a/b\"c+d".to_owned(),
        STANDARD_NO_PAD.encode("a/b\"c+d"),
        URL_SAFE_NO_PAD.encode("a/b\"c+d"),
        "a%2Fb%22c%2Bd".to_owned(),
        "a/b\\\"c+d".to_owned(),
        "a\\/b\\\"c+d".to_owned(),
        STANDARD_NO_PAD.encode("bot:a/b\"c+d"),
    ];
    for w in &want {
        assert!(got.contains(w), "missing {w:?} in {got:?}");
    }
    // Longest first.
    assert!(got.windows(2).all(|w| w[0].len() >= w[1].len()));
    // A plain alphanumeric secret has few distinct encodings: no duplicates.
    let plain = Redactions::for_secret(&Secret::from("abc123"), None);
    let n: Vec<&[u8]> = plain.needles().collect();
    assert_eq!(n.len(), 2, "raw and base64");
    assert!(!format!("{r:?}").contains("a/b"));
}

#[test]
fn apply_returns_basic_needle() {
    let mut uri: Uri = "/".parse().expect("uri");
    let r = compile(SchemeConfig::Basic {
        username: "u".into(),
    })
    .apply(&Secret::from(SECRET), PH, &mut HeaderMap::new(), &mut uri)
    .expect("apply");
    let pair = STANDARD_NO_PAD.encode(format!("u:{SECRET}"));
    assert!(r.needles().any(|n| n == pair.as_bytes()));
}

#[test]
fn pct_decode_table() {
    let cases: &[(&str, &[u8])] = &[
        ("abc", b"abc"),
        ("a%20b", b"a b"),
        ("a+b", b"a b"),
        ("%zz", b"%zz"),
        ("%4", b"%4"),
        ("%", b"%"),
        ("%ff", b"\xff"),
    ];
    for (input, want) in cases {
        assert_eq!(pct_decode(input), *want, "{input}");
    }
}

/// Without a placeholder, toward a host the credential covers: what the
/// sandbox authenticated with itself goes, by the scheme's own lights
/// (its header, its query parameter), and nothing else is touched.
#[test]
fn the_sandboxs_own_auth_is_stripped_per_scheme() {
    let own = [
        ("authorization", "Bearer mine"),
        ("proxy-authorization", "Basic bWluZQ=="),
        ("x-api-key", "mine"),
        ("x-other", "kept"),
    ];
    #[rustfmt::skip]
    let cases = [
        (SchemeConfig::Bearer, "/a?key=mine&q=1", vec!["x-api-key", "x-other"], "/a?key=mine&q=1"),
        (SchemeConfig::Header { name: "x-api-key".into(), template: "{secret}".into() }, "/a?q=1", vec!["x-other"], "/a?q=1"),
        (SchemeConfig::Query { param: "key".into() }, "/a?key=mine&q=1&key=again", vec!["x-api-key", "x-other"], "/a?q=1"),
        (SchemeConfig::Query { param: "key".into() }, "/a?key=mine", vec!["x-api-key", "x-other"], "/a"),
    ];
    for (config, target, kept, left) in cases {
        let mut h = head(&own);
        let mut uri: Uri = target.parse().expect("uri");
        compile(config.clone())
            .strip_sandbox_auth(&mut h, &mut uri)
            .expect("strip");
        let mut names: Vec<&str> = h.keys().map(|n| n.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, kept, "{config:?}");
        assert_eq!(uri.to_string(), left, "{config:?}");
    }
}

/// Adding a secret already there changes nothing; another secret, or the
/// same bytes as a basic pair's encoding, adds needles.
#[test]
fn redactions_hold_each_source_once() {
    let secret = Secret::from("s3cr3t-value-0123456789");
    let once = Redactions::for_secret(&secret, None);
    let mut twice = once.clone();
    twice.add(&secret);
    assert_eq!(once.needles().count(), twice.needles().count());
    let mut more = once.clone();
    more.add(&Secret::from("another-secret-value"));
    assert!(more.needles().any(|n| n == b"another-secret-value"));
    let basic = Redactions::for_secret(&secret, Some(b"user:pw"));
    assert!(basic.needles().count() > once.needles().count());
}

/// What `apply` returns and what `redactions` builds for the same secret
/// are the same needles: a caller may keep the latter per credential.
#[test]
fn redactions_are_what_apply_returns() {
    let secret = Secret::from("s3cr3t-value-0123456789");
    let schemes = [
        SchemeConfig::Bearer,
        SchemeConfig::Basic {
            username: "bot".into(),
        },
    ];
    for config in schemes {
        let scheme = Scheme::compile(&config).expect("compiles");
        let (mut headers, mut uri) = (HeaderMap::new(), Uri::from_static("/x"));
        let applied = scheme
            .apply(&secret, "ph", &mut headers, &mut uri)
            .expect("applies");
        let built = scheme.redactions(&secret, None);
        let (a, b): (Vec<&[u8]>, Vec<&[u8]>) =
            (applied.needles().collect(), built.needles().collect());
        assert_eq!(a, b, "{config:?}");
    }
}
