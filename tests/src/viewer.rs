//! Viewer tokens for the web-app ingress, as a control plane issues them:
//! an Ed25519 key pair whose public half the daemon's
//! `ingress.viewer_tokens` reads from a PEM file, and JWTs (`sub`, `org`,
//! `exp`) signed with its private half. Used by the ingress's end-to-end
//! test and by the benchmark's ingress scenario.

use std::{
    path::Path,
    time::{SystemTime, UNIX_EPOCH},
};

use base64::{Engine as _, engine::general_purpose::STANDARD};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use serde_json::json;

/// The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): the
/// 32-byte public key follows it.
const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// One signing key and its public half.
pub struct ViewerKeys {
    signing: EncodingKey,
    public_pem: String,
}

impl ViewerKeys {
    /// A fresh key pair (a key no daemon knows until its public half is
    /// written where the config points).
    pub fn generate() -> ViewerKeys {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).expect("generate an Ed25519 key");
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("read the key back");
        let mut spki = ED25519_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(pair.public_key().as_ref());
        ViewerKeys {
            signing: EncodingKey::from_ed_der(pkcs8.as_ref()),
            public_pem: format!(
                "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
                STANDARD.encode(spki)
            ),
        }
    }

    /// Writes the public half (PEM) to `path`, the file an
    /// `ingress.viewer_tokens.keys` entry names with `alg: EdDSA`.
    pub fn write_public(&self, path: &Path) {
        std::fs::write(path, &self.public_pem)
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// A token for viewer `sub` of `org`, expiring at `exp` (Unix seconds).
    pub fn token(&self, sub: &str, org: &str, exp: u64) -> String {
        let claims = json!({"sub": sub, "org": org, "exp": exp});
        jsonwebtoken::encode(&Header::new(Algorithm::EdDSA), &claims, &self.signing)
            .expect("sign a token")
    }
}

/// Seconds since the Unix epoch, what `exp` is counted in.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_secs()
}
