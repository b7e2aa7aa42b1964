//! The capability-token parser (`explicit::token::Verifier::verify`, and
//! the `host:port` patterns it checks). Input: `[mode] rest`. Mode even:
//! `rest` is the token as sent. Mode odd: `rest` is `header 0xFF claims`,
//! signed with the proxy's key, so the fuzzer reaches everything after the
//! signature check. A token taken has a signature that verifies, is not
//! expired, lives no longer than the proxy allows, is for this node or
//! none, and every connection pattern in it parses.
#![no_main]

use std::sync::OnceLock;

use base64::{
    Engine as _, engine::general_purpose::STANDARD, engine::general_purpose::URL_SAFE_NO_PAD,
};
use libfuzzer_sys::fuzz_target;
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use sluice::explicit::token::{Connection, LEEWAY_SECS, MAX_LIFETIME_SECS, Verifier, allows};

const NOW: u64 = 1_700_000_000;
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

fn keys() -> &'static (Ed25519KeyPair, Verifier) {
    static KEYS: OnceLock<(Ed25519KeyPair, Verifier)> = OnceLock::new();
    KEYS.get_or_init(|| {
        let pair = Ed25519KeyPair::from_seed_unchecked(&[7; 32]).expect("a key");
        let spki = [&SPKI_PREFIX[..], pair.public_key().as_ref()].concat();
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            STANDARD.encode(spki)
        );
        let verifier = Verifier::from_pem(pem.as_bytes())
            .expect("the public key")
            .with_audience(Some("node-a".to_owned()));
        (pair, verifier)
    })
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    let (pair, verifier) = keys();
    let token = if mode % 2 == 0 {
        String::from_utf8_lossy(rest).into_owned()
    } else {
        let (header, claims) = match rest.iter().position(|&b| b == 0xFF) {
            Some(at) => (&rest[..at], &rest[at + 1..]),
            None => (&br#"{"alg":"EdDSA","typ":"JWT"}"#[..], rest),
        };
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(claims)
        );
        let signature = pair.sign(signed.as_bytes());
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    };
    let Ok(claims) = verifier.verify(&token, NOW) else {
        return;
    };
    assert!(
        claims.exp.saturating_add(LEEWAY_SECS) > NOW,
        "expired: {claims:?}"
    );
    assert!(
        claims.exp.saturating_sub(NOW) <= MAX_LIFETIME_SECS,
        "too long: {claims:?}"
    );
    assert!(
        claims.aud.as_deref().is_none_or(|a| a == "node-a"),
        "{claims:?}"
    );
    for pattern in &claims.connections {
        Connection::parse(pattern).expect("checked by verify");
    }
    let _ = allows(&claims, "api.example.com", 443);
});
