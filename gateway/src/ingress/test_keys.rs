//! Keys and tokens for the ingress's tests: a fresh Ed25519 pair per test
//! and the RSA pair in `testdata/` (made for these tests alone), written
//! where a `ViewerTokenConfig` can name them.

use base64::{Engine as _, engine::general_purpose::STANDARD};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{Ed25519KeyPair, KeyPair as _};

use super::token::{KeyAlg, KeyConfig, ViewerTokenConfig};

/// The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410).
const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

pub const RSA_KEY: &[u8] = include_bytes!("testdata/rsa-test-key.pem");
pub const RSA_PUB: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/src/ingress/testdata/rsa-test-pub.pem"
);
pub const RSA_JWKS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/src/ingress/testdata/rsa-test-jwks.json"
);

pub struct TestKeys {
    pub dir: tempfile::TempDir,
    ed: EncodingKey,
    ed_pkcs8: Vec<u8>,
    ed_spki: Vec<u8>,
    /// Another Ed25519 key, not configured: its tokens are badly signed.
    pub stranger: EncodingKey,
    pub config: ViewerTokenConfig,
}

/// A key, its PKCS#8 and its SubjectPublicKeyInfo.
fn ed_pair() -> (EncodingKey, Vec<u8>, Vec<u8>) {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).expect("generate");
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("pair");
    let mut spki = ED25519_SPKI_PREFIX.to_vec();
    spki.extend_from_slice(pair.public_key().as_ref());
    (
        EncodingKey::from_ed_der(pkcs8.as_ref()),
        pkcs8.as_ref().to_vec(),
        spki,
    )
}

impl TestKeys {
    /// An Ed25519 key (kid `ed-1`) and the RSA key (no kid) in PEM files.
    pub fn new() -> TestKeys {
        let dir = tempfile::tempdir().expect("tempdir");
        let (ed, ed_pkcs8, ed_spki) = ed_pair();
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            STANDARD.encode(&ed_spki)
        );
        let ed_file = dir.path().join("ed.pem");
        std::fs::write(&ed_file, pem).expect("write key");
        let config = ViewerTokenConfig {
            keys: vec![
                KeyConfig {
                    file: ed_file,
                    alg: KeyAlg::EdDSA,
                    kid: Some("ed-1".into()),
                },
                KeyConfig {
                    file: RSA_PUB.into(),
                    alg: KeyAlg::RS256,
                    kid: None,
                },
            ],
            ..ViewerTokenConfig::default()
        };
        TestKeys {
            dir,
            ed,
            ed_pkcs8,
            ed_spki,
            stranger: ed_pair().0,
            config,
        }
    }

    /// An EdDSA token (kid `ed-1`) with these claims.
    pub fn ed(&self, claims: &serde_json::Value) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some("ed-1".into());
        jsonwebtoken::encode(&header, claims, &self.ed).expect("encode")
    }

    /// An EdDSA token (kid `ed-1`) whose header names a critical
    /// extension (`crit`), validly signed.
    pub fn ed_with_crit(&self, claims: &serde_json::Value) -> String {
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let header =
            URL_SAFE_NO_PAD.encode(br#"{"alg":"EdDSA","kid":"ed-1","crit":["b64"],"b64":false}"#);
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signed = format!("{header}.{payload}");
        let sig = jsonwebtoken::crypto::sign(signed.as_bytes(), &self.ed, Algorithm::EdDSA)
            .expect("sign");
        format!("{signed}.{sig}")
    }

    /// An RS256 token with these claims.
    pub fn rsa(&self, claims: &serde_json::Value) -> String {
        let key = EncodingKey::from_rsa_pem(RSA_KEY).expect("rsa key");
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), claims, &key).expect("encode")
    }

    /// A viewer's token valid for an hour after `now`.
    pub fn viewer(&self, sub: &str, org: Option<&str>, now: u64) -> String {
        self.ed(&serde_json::json!({"sub": sub, "org": org, "exp": now + 3600}))
    }

    /// The Ed25519 private key in PKCS#8 PEM (to sign viewer headers with).
    pub fn ed_private_pem(&self) -> String {
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(&self.ed_pkcs8)
        )
    }

    /// The claims of an EdDSA JWT signed with the Ed25519 key.
    pub fn verify_own(&self, jwt: &str) -> serde_json::Value {
        let key =
            jsonwebtoken::DecodingKey::from_ed_der(&self.ed_spki[ED25519_SPKI_PREFIX.len()..]);
        let mut validation = jsonwebtoken::Validation::new(Algorithm::EdDSA);
        validation.validate_exp = false;
        jsonwebtoken::decode::<serde_json::Value>(jwt, &key, &validation)
            .expect("verifies")
            .claims
    }
}
