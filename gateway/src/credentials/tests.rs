//! Cross-module checks: no type that holds or derives from a secret ever
//! formats it.

use std::collections::BTreeMap;

use hyper::http::{HeaderMap, HeaderValue, Uri};

use super::*;

const SECRET: &str = "TOP-secret-value-DO-NOT-LEAK-42";

fn cfg(name: &str, source: Source, scheme: SchemeConfig) -> CredentialConfig {
    CredentialConfig {
        name: name.into(),
        source,
        hosts: vec!["api.example.com".into()],
        scheme,
        placeholder: PlaceholderShape {
            prefix: Some("sk-".into()),
            length: None,
        },
    }
}

#[test]
fn nothing_formats_the_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s");
    std::fs::write(&path, SECRET).expect("write");
    let env: BTreeMap<String, String> = [("K".to_owned(), SECRET.to_owned())].into();
    let configs = [
        cfg("f", Source::File { path }, SchemeConfig::Bearer),
        cfg(
            "e",
            Source::Env { var: "K".into() },
            SchemeConfig::Basic {
                username: "u".into(),
            },
        ),
    ];
    let store = CredentialStore::load(&configs, &env).expect("loads");
    let secret = store.secret("f").expect("exists");
    let placeholders = Placeholders::new([1; 32]);
    let index = PlaceholderIndex::for_sandbox(
        &placeholders,
        "sb",
        configs.iter().map(|c| (c, SECRET.len())),
    )
    .expect("index");

    let mut formatted = vec![
        format!("{secret:?} {secret}"),
        format!("{store:?}"),
        format!("{placeholders:?}"),
        format!("{index:?}"),
    ];
    for name in ["f", "e"] {
        let ph = placeholders.placeholder("sb", name, &configs[0].placeholder, SECRET.len());
        let mut headers = HeaderMap::new();
        headers.insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer {ph}")).expect("value"),
        );
        let mut uri: Uri = "/x?a=1".parse().expect("uri");
        let scheme = store.scheme(name).expect("scheme");
        let found = index.scan(&headers, &uri);
        let redactions = scheme
            .apply(
                &store.secret(name).expect("secret"),
                &ph,
                &mut headers,
                &mut uri,
            )
            .expect("apply");
        // The injected header is sensitive, so even http's Debug hides it.
        formatted.push(format!("{headers:?} {redactions:?} {found:?} {scheme:?}"));
    }
    // Failure paths: a rotation that breaks, a secret no header can carry.
    std::fs::write(dir.path().join("s"), "").expect("write");
    let report = store.reload_changed();
    formatted.push(format!("{report:?} {}", report.errors[0]));
    let bad = Secret::from(format!("{SECRET}\n").as_str());
    let err = Scheme::Bearer
        .apply(&bad, "ph", &mut HeaderMap::new(), &mut Uri::default())
        .expect_err("a newline in a header value");
    formatted.push(format!("{err:?} {err}"));

    for out in &formatted {
        assert!(!out.contains(SECRET), "leaked in: {out}");
        assert!(!out.contains("DO-NOT-LEAK"), "leaked in: {out}");
    }
}
