use super::*;
use crate::credentials::scheme::{Redactions, RequestContext, Scheme};
use crate::credentials::scheme_config::SchemeConfig;
use hyper::http::HeaderMap;

const SECRET: &str = "hmac-K3Y/secret+1";
const PH: &str = "sk-PLACEHOLDERabcdefghijklmnop";
const NOW: u64 = 1_700_000_000;
const CANONICAL: &str = "{method}\n{path}\n{query}\n{timestamp}";

fn config(
    algorithm: HmacAlgorithm,
    encoding: HmacEncoding,
    canonical: &str,
    timestamp_header: Option<&str>,
    prefix: Option<&str>,
) -> SchemeConfig {
    SchemeConfig::Hmac {
        algorithm,
        header: "X-Signature".into(),
        encoding,
        canonical: canonical.into(),
        timestamp_header: timestamp_header.map(str::to_owned),
        prefix: prefix.map(str::to_owned),
    }
}

fn compile(c: &SchemeConfig) -> Scheme {
    Scheme::compile(c).expect("valid scheme")
}

/// Runs the scheme on `method uri` with `headers`; returns the rewritten
/// head and the redactions.
fn run(
    scheme: &Scheme,
    method: &Method,
    host: &str,
    uri: &str,
    headers: &[(&str, &str)],
) -> (HeaderMap, Uri, Redactions) {
    let mut h = HeaderMap::new();
    for (k, v) in headers {
        h.append(
            HeaderName::from_bytes(k.as_bytes()).expect("name"),
            HeaderValue::from_str(v).expect("value"),
        );
    }
    let mut uri: Uri = uri.parse().expect("uri");
    let ctx = RequestContext {
        method,
        now_unix: NOW,
        authority: host,
        sigv4: None,
        body: None,
    };
    let r = scheme
        .apply_to(&Secret::from(SECRET), PH, &ctx, &mut h, &mut uri)
        .expect("apply");
    (h, uri, r)
}

fn header(h: &HeaderMap, name: &str) -> String {
    let all: Vec<_> = h.get_all(name).iter().collect();
    assert_eq!(all.len(), 1, "{name}: {all:?}");
    String::from_utf8(all[0].as_bytes().to_vec()).expect("utf8")
}

/// Independent of the code under test: the hmac crate and `{:02x}`.
fn expected_sha256(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("key");
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

fn expected_sha512(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha512>::new_from_slice(key).expect("key");
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

fn hex_fmt(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn rfc4231_vectors() {
    // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
    let cases = [
        (
            HmacAlgorithm::Sha256,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
        ),
        (
            HmacAlgorithm::Sha512,
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554\
             9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737",
        ),
    ];
    for (alg, want) in cases {
        let got = sign(alg, b"Jefe", b"what do ya want for nothing?").expect("sign");
        assert_eq!(lower_hex(&got), want, "{alg:?}");
    }
}

#[test]
fn known_answer_sha256_hex() {
    let scheme = compile(&config(
        HmacAlgorithm::Sha256,
        HmacEncoding::Hex,
        CANONICAL,
        None,
        None,
    ));
    let (h, uri, _) = run(
        &scheme,
        &Method::POST,
        "api.example.com",
        "/v1/items?b=2&a=%20x",
        &[("accept", "*/*")],
    );
    let canonical = format!("POST\n/v1/items\nb=2&a=%20x\n{NOW}");
    let want = hex_fmt(&expected_sha256(SECRET.as_bytes(), &canonical));
    assert_eq!(want.len(), 64);
    assert_eq!(header(&h, "x-signature"), want);
    assert!(h.get("x-signature").is_some_and(HeaderValue::is_sensitive));
    assert_eq!(header(&h, "accept"), "*/*");
    assert_eq!(uri, "/v1/items?b=2&a=%20x", "uri untouched");
    assert!(h.get("x-timestamp").is_none());
}

#[test]
fn canonical_inputs_table() {
    let cases: &[(&str, Method, &str, String)] = &[
        (
            "{method} {path} [{query}]",
            Method::from_bytes(b"patch").expect("method"),
            "/a/b",
            "PATCH /a/b []".into(),
        ),
        (
            "{method}|{host}|{path}|{query}",
            Method::GET,
            "https://ignored.example/p?x=1",
            "GET|api.example.com|/p|x=1".into(),
        ),
        (
            "t={timestamp};t2={timestamp}",
            Method::GET,
            "/",
            format!("t={NOW};t2={NOW}"),
        ),
        ("literal only", Method::GET, "/", "literal only".into()),
        ("}{path}}", Method::GET, "/q", "}/q}".into()),
    ];
    for (template, method, uri, want) in cases {
        let scheme = HmacScheme::compile(
            HmacAlgorithm::Sha256,
            "x-sig",
            HmacEncoding::Hex,
            template,
            None,
            None,
        )
        .expect(template);
        let uri: Uri = uri.parse().expect("uri");
        let got = scheme.canonical(&Inputs {
            method,
            host: "api.example.com",
            uri: &uri,
            now_unix: NOW,
        });
        assert_eq!(&got, want, "{template}");
    }
}

#[test]
fn base64_sha512_timestamp_and_prefix() {
    let cases = [
        (HmacAlgorithm::Sha256, HmacEncoding::Base64, None),
        (HmacAlgorithm::Sha512, HmacEncoding::Hex, None),
        (HmacAlgorithm::Sha512, HmacEncoding::Base64, Some("v1=")),
        (HmacAlgorithm::Sha256, HmacEncoding::Hex, Some("sig ")),
    ];
    for (alg, enc, prefix) in cases {
        let what = format!("{alg:?} {enc:?} {prefix:?}");
        let scheme = compile(&config(alg, enc, CANONICAL, Some("X-Timestamp"), prefix));
        let (h, _, _) = run(
            &scheme,
            &Method::GET,
            "h.example",
            "/p",
            &[("x-timestamp", "1"), ("x-timestamp", "2")],
        );
        let canonical = format!("GET\n/p\n\n{NOW}");
        let mac = match alg {
            HmacAlgorithm::Sha256 => expected_sha256(SECRET.as_bytes(), &canonical),
            HmacAlgorithm::Sha512 => expected_sha512(SECRET.as_bytes(), &canonical),
        };
        let encoded = match enc {
            HmacEncoding::Hex => hex_fmt(&mac),
            HmacEncoding::Base64 => STANDARD.encode(&mac),
        };
        let want = format!("{}{encoded}", prefix.unwrap_or(""));
        assert_eq!(header(&h, "x-signature"), want, "{what}");
        // The sandbox's timestamps are replaced by the one signed.
        assert_eq!(header(&h, "x-timestamp"), NOW.to_string(), "{what}");
    }
}

#[test]
fn placeholder_stripped_before_signing() {
    let scheme = compile(&config(
        HmacAlgorithm::Sha256,
        HmacEncoding::Hex,
        CANONICAL,
        Some("x-timestamp"),
        None,
    ));
    let (h, uri, _) = run(
        &scheme,
        &Method::GET,
        "h.example",
        &format!("/p?a=1&key={PH}&b=sk%2DPLACEHOLDERabcdefghijklmnop&c=3"),
        &[
            ("authorization", &format!("Bearer {PH}")),
            ("proxy-authorization", "Basic Zm9vOmJhcg=="),
            ("x-signature", "sandbox-sent"),
            ("x-extra", &format!("pre-{PH}")),
            ("x-multi", "keep-me"),
            ("x-multi", PH),
        ],
    );
    assert_eq!(uri, "/p?a=1&c=3");
    assert!(h.get("authorization").is_none());
    assert!(h.get("proxy-authorization").is_none());
    assert!(h.get("x-extra").is_none());
    assert_eq!(header(&h, "x-multi"), "keep-me");
    for (_, v) in &h {
        assert!(
            !v.as_bytes().windows(PH.len()).any(|w| w == PH.as_bytes()),
            "{v:?}"
        );
    }
    // Signed over the URI as forwarded.
    let canonical = format!("GET\n/p\na=1&c=3\n{NOW}");
    assert_eq!(
        header(&h, "x-signature"),
        hex_fmt(&expected_sha256(SECRET.as_bytes(), &canonical))
    );
}

#[test]
fn compile_errors_table() {
    let base = || {
        (
            "X-Signature".to_owned(),
            CANONICAL.to_owned(),
            None::<String>,
            None::<String>,
        )
    };
    type Case = (
        &'static str,
        fn(&mut (String, String, Option<String>, Option<String>)),
        SchemeError,
    );
    let cases: Vec<Case> = vec![
        (
            "unknown placeholder",
            |c| c.1 = "{method}\n{secret}".into(),
            SchemeError::HmacUnknownPlaceholder("secret".into()),
        ),
        (
            "case matters",
            |c| c.1 = "{Method}".into(),
            SchemeError::HmacUnknownPlaceholder("Method".into()),
        ),
        (
            "empty placeholder",
            |c| c.1 = "a{}b".into(),
            SchemeError::HmacUnknownPlaceholder(String::new()),
        ),
        (
            "unclosed",
            |c| c.1 = "{method}\n{path".into(),
            SchemeError::HmacUnclosedPlaceholder,
        ),
        (
            "empty canonical",
            |c| c.1 = String::new(),
            SchemeError::HmacEmptyCanonical,
        ),
        (
            "empty header",
            |c| c.0 = String::new(),
            SchemeError::HmacBadHeaderName(String::new()),
        ),
        (
            "bad header",
            |c| c.0 = "x sig".into(),
            SchemeError::HmacBadHeaderName("x sig".into()),
        ),
        (
            "forbidden header",
            |c| c.0 = "Content-Length".into(),
            SchemeError::HmacForbiddenHeader("Content-Length".into()),
        ),
        (
            "empty timestamp header",
            |c| c.2 = Some(String::new()),
            SchemeError::HmacBadHeaderName(String::new()),
        ),
        (
            "forbidden timestamp header",
            |c| c.2 = Some("host".into()),
            SchemeError::HmacForbiddenHeader("host".into()),
        ),
        (
            "same headers",
            |c| c.2 = Some("x-signature".into()),
            SchemeError::HmacSameHeader,
        ),
        (
            "bad prefix",
            |c| c.3 = Some("v1\r\nx: y".into()),
            SchemeError::HmacBadPrefix,
        ),
    ];
    for (what, mutate, want) in cases {
        let mut c = base();
        mutate(&mut c);
        let config = SchemeConfig::Hmac {
            algorithm: HmacAlgorithm::Sha256,
            header: c.0,
            encoding: HmacEncoding::Hex,
            canonical: c.1,
            timestamp_header: c.2,
            prefix: c.3,
        };
        let got = Scheme::compile(&config);
        assert_eq!(got, Err(want), "{what}");
        if let Err(e) = got {
            assert_eq!(e.class(), "policy", "{what}");
        }
    }
    let msg = SchemeError::HmacUnknownPlaceholder("secret".into()).to_string();
    assert!(
        msg.contains("{secret}") && msg.contains("{timestamp}"),
        "{msg}"
    );
}

#[test]
fn apply_without_request_context_is_refused() {
    let scheme = compile(&config(
        HmacAlgorithm::Sha256,
        HmacEncoding::Hex,
        CANONICAL,
        None,
        None,
    ));
    let mut h = HeaderMap::new();
    let err = scheme
        .apply(
            &Secret::from(SECRET),
            PH,
            &mut h,
            &mut "/".parse().expect("uri"),
        )
        .expect_err("needs context");
    assert_eq!(err, SchemeError::HmacNeedsRequest);
    assert_eq!(err.class(), "internal");
    assert!(h.get("x-signature").is_none());
}

#[test]
fn nothing_prints_the_secret() {
    let scheme = compile(&config(
        HmacAlgorithm::Sha512,
        HmacEncoding::Base64,
        CANONICAL,
        Some("x-timestamp"),
        Some("v1="),
    ));
    let (h, _, r) = run(
        &scheme,
        &Method::GET,
        "h.example",
        "/p?a=1",
        &[("authorization", PH)],
    );
    let sig = header(&h, "x-signature");
    // Redactions are the secret's forms, not the signature.
    assert!(r.needles().any(|n| n == SECRET.as_bytes()));
    assert!(!r.needles().any(|n| n == sig.as_bytes()));
    let mut printed = vec![
        format!("{scheme:?}"),
        format!("{r:?}"),
        format!("{h:?}"),
        format!("{:?}", Secret::from(SECRET)),
    ];
    let errors = [
        SchemeError::HmacKey,
        SchemeError::HmacNeedsRequest,
        SchemeError::HmacBadPrefix,
        SchemeError::HmacUnclosedPlaceholder,
    ];
    for e in errors {
        printed.push(format!("{e} {e:?}"));
    }
    for p in &printed {
        assert!(!p.contains(SECRET), "leaked in {p}");
        assert!(!p.contains("K3Y"), "leaked in {p}");
    }
    // The signature header is sensitive, so `http` hides it in Debug too.
    assert!(!format!("{h:?}").contains(&sig));
}

#[test]
fn host_is_the_host_header_as_sent() {
    // On a non-default port the upstream sees `Host: name:port`; a
    // verifier rebuilding the canonical string from the request it got
    // uses that, so the signature must cover it.
    let scheme = compile(&config(
        HmacAlgorithm::Sha256,
        HmacEncoding::Hex,
        "{method}|{host}|{path}",
        None,
        None,
    ));
    let cases = [
        ("api.example.com", "GET|api.example.com|/p"),
        ("api.example.com:8443", "GET|api.example.com:8443|/p"),
        ("[2001:db8::1]:8443", "GET|[2001:db8::1]:8443|/p"),
    ];
    for (authority, canonical) in cases {
        let mut h = HeaderMap::new();
        let mut uri: Uri = "/p".parse().expect("uri");
        let ctx = RequestContext {
            method: &Method::GET,
            now_unix: NOW,
            authority,
            sigv4: None,
            body: None,
        };
        scheme
            .apply_to(&Secret::from(SECRET), PH, &ctx, &mut h, &mut uri)
            .expect("apply");
        let want = hex_fmt(&expected_sha256(SECRET.as_bytes(), canonical));
        assert_eq!(header(&h, "x-signature"), want, "{authority}");
    }
}
