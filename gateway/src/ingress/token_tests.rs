use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;

use super::*;
use crate::ingress::test_keys::{RSA_JWKS, TestKeys};

const NOW: u64 = 1_800_000_000;

#[test]
fn tokens_verify_or_say_why_not() {
    let keys = TestKeys::new();
    let verifier = Verifier::load(&keys.config).expect("keys load");
    let good = json!({"sub": "ann", "org": "acme", "exp": NOW + 60});
    let hs = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &good,
        &EncodingKey::from_secret(b"shared"),
    )
    .expect("hs256");
    let mut other_kid = Header::new(Algorithm::EdDSA);
    other_kid.kid = Some("ed-2".into());
    let stranger = jsonwebtoken::encode(&Header::new(Algorithm::EdDSA), &good, &keys.stranger)
        .expect("stranger");
    let wrong_kid = jsonwebtoken::encode(&other_kid, &good, &keys.stranger).expect("kid");
    let ann = Ok(Viewer {
        sub: "ann".into(),
        org: Some("acme".into()),
        exp: NOW + 60,
    });
    let table: Vec<(&str, String, Result<Viewer, TokenError>)> = vec![
        ("ed25519", keys.ed(&good), ann.clone()),
        ("rs256", keys.rsa(&good), ann.clone()),
        (
            "no org",
            keys.ed(&json!({"sub": "bob", "exp": NOW + 60})),
            Ok(Viewer {
                sub: "bob".into(),
                org: None,
                exp: NOW + 60,
            }),
        ),
        (
            "extra claims ignored",
            keys.ed(&json!({"sub": "ann", "org": "acme", "exp": NOW + 60, "name": "Ann"})),
            ann.clone(),
        ),
        (
            "expired",
            keys.ed(&json!({"sub": "ann", "exp": NOW - LEEWAY_SECS})),
            Err(TokenError::Expired),
        ),
        (
            "expired within leeway",
            keys.ed(&json!({"sub": "ann", "org": "acme", "exp": NOW - 5})),
            Ok(Viewer {
                sub: "ann".into(),
                org: Some("acme".into()),
                exp: NOW - 5,
            }),
        ),
        (
            "not yet",
            keys.ed(&json!({"sub": "ann", "exp": NOW + 999, "nbf": NOW + 600})),
            Err(TokenError::NotYet),
        ),
        ("badly signed", stranger, Err(TokenError::BadSignature)),
        ("unknown kid", wrong_kid, Err(TokenError::UnknownKey)),
        ("hs256", hs, Err(TokenError::Algorithm("HS256".into()))),
        (
            "no exp",
            keys.ed(&json!({"sub": "ann"})),
            Err(TokenError::Claims),
        ),
        (
            "no sub",
            keys.ed(&json!({"exp": NOW + 60})),
            Err(TokenError::Claims),
        ),
        (
            "empty sub",
            keys.ed(&json!({"sub": "", "exp": NOW + 60})),
            Err(TokenError::Claims),
        ),
        (
            "exp a string",
            keys.ed(&json!({"sub": "ann", "exp": "tomorrow"})),
            Err(TokenError::Claims),
        ),
        (
            "critical extension",
            keys.ed_with_crit(&good),
            Err(TokenError::Malformed),
        ),
        ("garbage", "not.a.jwt".into(), Err(TokenError::Malformed)),
        ("empty", String::new(), Err(TokenError::Malformed)),
        (
            "huge",
            "a".repeat(MAX_TOKEN_LEN + 1),
            Err(TokenError::TooLong),
        ),
    ];
    for (name, token, want) in table {
        assert_eq!(verifier.verify(&token, NOW), want, "{name}");
    }
}

#[test]
fn a_tampered_payload_does_not_verify() {
    let keys = TestKeys::new();
    let verifier = Verifier::load(&keys.config).expect("keys load");
    let token = keys.viewer("ann", Some("acme"), NOW);
    let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
    use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
    parts[1] = URL_SAFE_NO_PAD.encode(br#"{"sub":"root","org":"acme","exp":9999999999}"#);
    assert_eq!(
        verifier.verify(&parts.join("."), NOW),
        Err(TokenError::BadSignature)
    );
}

#[test]
fn issuer_and_audience_are_checked_when_configured() {
    let keys = TestKeys::new();
    let mut config = keys.config.clone();
    config.issuer = Some("https://cp.example".into());
    config.audience = Some("apps".into());
    let verifier = Verifier::load(&config).expect("keys load");
    let ok = json!({"sub": "ann", "exp": NOW + 60, "iss": "https://cp.example", "aud": "apps"});
    let other_aud = json!({"sub": "ann", "exp": NOW + 60, "iss": "https://cp.example", "aud": "x"});
    let no_iss = json!({"sub": "ann", "exp": NOW + 60, "aud": "apps"});
    assert!(verifier.verify(&keys.ed(&ok), NOW).is_ok());
    assert_eq!(
        verifier.verify(&keys.ed(&other_aud), NOW),
        Err(TokenError::WrongParty)
    );
    assert_eq!(
        verifier.verify(&keys.ed(&no_iss), NOW),
        Err(TokenError::Claims)
    );
    // Unconfigured, a token's `aud` is not held against it.
    let open = Verifier::load(&keys.config).expect("keys load");
    assert!(open.verify(&keys.ed(&other_aud), NOW).is_ok());
}

#[test]
fn jwks_keys_verify_and_bad_files_say_why() {
    let keys = TestKeys::new();
    let config = ViewerTokenConfig {
        jwks_file: Some(RSA_JWKS.into()),
        ..ViewerTokenConfig::default()
    };
    let verifier = Verifier::load(&config).expect("jwks loads");
    let token = keys.rsa(&json!({"sub": "ann", "exp": NOW + 60}));
    assert_eq!(
        verifier.verify(&token, NOW).map(|v| v.sub),
        Ok("ann".into())
    );
    // The Ed25519 PEM key is not in the JWKS.
    assert_eq!(
        verifier.verify(&keys.viewer("ann", None, NOW), NOW),
        Err(TokenError::UnknownKey)
    );

    let bad = keys.dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#).expect("write");
    let err = Verifier::load(&ViewerTokenConfig {
        jwks_file: Some(bad),
        ..ViewerTokenConfig::default()
    })
    .expect_err("a symmetric key is refused");
    assert!(matches!(err, KeyError::JwksKey { index: 0, .. }), "{err}");
    assert!(matches!(
        Verifier::load(&ViewerTokenConfig::default()),
        Err(KeyError::NoKeys)
    ));
    let mut wrong = keys.config.clone();
    wrong.keys[1].alg = KeyAlg::EdDSA; // the RSA file named as Ed25519
    assert!(matches!(Verifier::load(&wrong), Err(KeyError::Pem { .. })));
}

/// A token verified once is remembered by its digest, and its times are
/// checked again on every use: it expires when it says, and a token that
/// differs in one byte is checked afresh (and refused).
#[test]
fn remembered_tokens_still_expire_and_others_are_checked() {
    let keys = TestKeys::new();
    let verifier = Verifier::load(&keys.config).expect("keys load");
    let token = keys.ed(&json!({"sub": "ann", "exp": NOW + 60}));
    assert!(verifier.verify(&token, NOW).is_ok());
    assert_eq!(verifier.remembered().len(), 1);
    assert!(verifier.verify(&token, NOW + 1).is_ok());
    assert_eq!(
        verifier.verify(&token, NOW + 60 + LEEWAY_SECS),
        Err(TokenError::Expired)
    );
    let mut forged = token.clone();
    let last = forged.pop().expect("a character");
    forged.push(if last == 'A' { 'B' } else { 'A' });
    assert!(verifier.verify(&forged, NOW).is_err());
    assert_eq!(verifier.remembered().len(), 1, "only what verified is kept");
    // Expired tokens are never remembered.
    let old = keys.ed(&json!({"sub": "ann", "exp": NOW - LEEWAY_SECS}));
    assert_eq!(verifier.verify(&old, NOW), Err(TokenError::Expired));
    assert_eq!(verifier.remembered().len(), 1);
}
