//! The one header of the viewer's that may reach an app, and only when
//! the operator turns it on: `x-sluice-viewer`, a short-lived EdDSA JWT
//! the ingress signs (`sub`, `org`, `app`, `iat`, `exp`) and the app can
//! verify with the ingress's public key, instead of trusting anything the
//! browser sent. Off by default: most apps need not know who looks.

use std::path::PathBuf;

use hyper::header::HeaderValue;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};

use super::token::Viewer;

/// The header's name.
pub const NAME: &str = "x-sluice-viewer";

/// `ingress.viewer_header`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewerHeaderConfig {
    /// The ingress's Ed25519 private key (PKCS#8 PEM); apps verify with
    /// its public half.
    pub key_file: PathBuf,
    /// How long a signed header is valid for.
    #[serde(default = "default_ttl")]
    pub ttl_secs: u64,
}

fn default_ttl() -> u64 {
    60
}

#[derive(Serialize)]
struct Claims<'a> {
    sub: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    org: Option<&'a str>,
    /// The publication, so a header one app received is no good at another.
    app: &'a str,
    iat: u64,
    exp: u64,
}

/// Signs viewer headers.
pub struct Signer {
    key: EncodingKey,
    ttl: u64,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl Signer {
    pub fn load(config: &ViewerHeaderConfig) -> Result<Signer, String> {
        let pem = std::fs::read(&config.key_file)
            .map_err(|e| format!("{}: {e}", config.key_file.display()))?;
        let key = EncodingKey::from_ed_pem(&pem).map_err(|e| {
            format!(
                "{}: not an Ed25519 private key in PEM: {e}",
                config.key_file.display()
            )
        })?;
        Ok(Signer {
            key,
            ttl: config.ttl_secs,
        })
    }

    /// The header for `viewer` opening `app` at `now` (Unix seconds).
    pub fn sign(&self, viewer: &Viewer, app: &str, now: u64) -> Option<HeaderValue> {
        let claims = Claims {
            sub: &viewer.sub,
            org: viewer.org.as_deref(),
            app,
            iat: now,
            exp: now.saturating_add(self.ttl).min(viewer.exp.max(now)),
        };
        let jwt = jsonwebtoken::encode(&Header::new(Algorithm::EdDSA), &claims, &self.key).ok()?;
        HeaderValue::from_str(&jwt).ok()
    }
}

#[cfg(test)]
mod tests {
    use base64::{Engine as _, engine::general_purpose::STANDARD};
    use jsonwebtoken::{DecodingKey, Validation};
    use ring::signature::{Ed25519KeyPair, KeyPair as _};

    use super::*;

    #[test]
    fn apps_can_verify_who_looks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).expect("generate");
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("pair");
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(pkcs8.as_ref())
        );
        let key_file = dir.path().join("viewer-header.key");
        std::fs::write(&key_file, pem).expect("write");
        let signer = Signer::load(&ViewerHeaderConfig {
            key_file,
            ttl_secs: 60,
        })
        .expect("loads");
        let viewer = Viewer {
            sub: "ann".into(),
            org: Some("acme".into()),
            exp: 4_000_000_000,
        };
        let now = 1_800_000_000;
        let header = signer.sign(&viewer, "demo", now).expect("signed");
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.validate_exp = false;
        let claims = jsonwebtoken::decode::<serde_json::Value>(
            header.to_str().expect("ascii"),
            &DecodingKey::from_ed_der(pair.public_key().as_ref()),
            &validation,
        )
        .expect("verifies with the public key")
        .claims;
        assert_eq!(
            claims,
            serde_json::json!({"sub": "ann", "org": "acme", "app": "demo", "iat": now, "exp": now + 60})
        );
        // Never outlives the viewer's own token.
        let short = Viewer {
            exp: now + 5,
            ..viewer
        };
        let header = signer.sign(&short, "demo", now).expect("signed");
        let claims = jsonwebtoken::decode::<serde_json::Value>(
            header.to_str().expect("ascii"),
            &DecodingKey::from_ed_der(pair.public_key().as_ref()),
            &validation,
        )
        .expect("verifies")
        .claims;
        assert_eq!(claims["exp"], now + 5);
    }
}
