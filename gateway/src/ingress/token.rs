//! Viewer tokens: the JWT the control plane issues to a person who opens a
//! published app (`sub`, `org`, `exp`), signed with Ed25519 (`EdDSA`) or
//! RS256 and verified against the keys the `ingress.viewer_tokens`
//! section names (PEM files, or a JWKS file). Parsing and signature
//! checks are `jsonwebtoken`'s; this module picks the keys, checks the
//! times against a clock passed in (so the decision is pure), and names
//! every refusal.

use std::path::{Path, PathBuf};

use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind, jwk::JwkSet};
use serde::Deserialize;
use sha2::Digest as _;

/// Longest token accepted (a cookie or a header; tokens are a few hundred
/// bytes, an RS256 one about a kilobyte).
pub const MAX_TOKEN_LEN: usize = 8 * 1024;

/// Seconds of clock skew forgiven on `exp` and `nbf`.
pub const LEEWAY_SECS: u64 = 30;

/// Where the verifying keys come from (`ingress.viewer_tokens`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewerTokenConfig {
    /// Public keys in PEM, each with its algorithm.
    #[serde(default)]
    pub keys: Vec<KeyConfig>,
    /// A JWKS document (`{"keys": [...]}`) of `OKP`/Ed25519 and `RSA`
    /// keys, read at start (and on SIGHUP with the rest of the config).
    #[serde(default)]
    pub jwks_file: Option<PathBuf>,
    /// When set, a token must carry this `iss`.
    #[serde(default)]
    pub issuer: Option<String>,
    /// When set, a token must carry this `aud` (or list it).
    #[serde(default)]
    pub audience: Option<String>,
}

/// One public key file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyConfig {
    /// A PEM `PUBLIC KEY` (SubjectPublicKeyInfo) file.
    pub file: PathBuf,
    /// `EdDSA` (Ed25519) or `RS256`.
    pub alg: KeyAlg,
    /// The `kid` tokens signed with it carry; a token naming another
    /// `kid` is not tried against this key.
    #[serde(default)]
    pub kid: Option<String>,
}

/// The algorithms the ingress accepts: asymmetric only, so the daemon
/// never holds anything that could mint a viewer token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum KeyAlg {
    EdDSA,
    RS256,
}

impl KeyAlg {
    fn algorithm(self) -> Algorithm {
        match self {
            KeyAlg::EdDSA => Algorithm::EdDSA,
            KeyAlg::RS256 => Algorithm::RS256,
        }
    }
}

/// Who the viewer is, from a verified token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Viewer {
    pub sub: String,
    pub org: Option<String>,
    /// Expiry (Unix seconds): the session cookie lives no longer.
    pub exp: u64,
}

/// The claims read; others the control plane adds are ignored.
#[derive(Debug, Deserialize, Clone)]
struct Claims {
    sub: String,
    #[serde(default)]
    org: Option<String>,
    exp: u64,
    #[serde(default)]
    nbf: Option<u64>,
}

/// Why a token was refused (each answered 401 with the reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the token is longer than {MAX_TOKEN_LEN} bytes")]
    TooLong,
    #[error("the token is not a well-formed JWT")]
    Malformed,
    #[error("the token is signed with {0}; this ingress accepts EdDSA and RS256 only")]
    Algorithm(String),
    #[error("no configured key matches the token's algorithm and kid")]
    UnknownKey,
    #[error("the token's signature does not verify with the configured keys")]
    BadSignature,
    #[error("the token expired; open the app again from the control plane")]
    Expired,
    #[error("the token is not valid yet (nbf)")]
    NotYet,
    #[error("the token's issuer or audience is not this ingress's")]
    WrongParty,
    #[error("the token has no `sub`, `exp`, or one of the wrong type")]
    Claims,
}

impl TokenError {
    /// Stable reason for metrics, audit events and the 401 page.
    pub fn reason(&self) -> &'static str {
        match self {
            TokenError::TooLong => "token_too_long",
            TokenError::Malformed => "token_malformed",
            TokenError::Algorithm(_) => "token_algorithm",
            TokenError::UnknownKey => "token_unknown_key",
            TokenError::BadSignature => "token_bad_signature",
            TokenError::Expired => "token_expired",
            TokenError::NotYet => "token_not_yet_valid",
            TokenError::WrongParty => "token_wrong_party",
            TokenError::Claims => "token_claims",
        }
    }
}

/// Why the keys could not be loaded (a start-up or reload error).
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a {alg:?} public key in PEM: {detail}")]
    Pem {
        path: PathBuf,
        alg: KeyAlg,
        detail: String,
    },
    #[error("{path}: not a JWKS document: {detail}")]
    Jwks { path: PathBuf, detail: String },
    #[error("{path}: key {index} is neither Ed25519 (OKP) nor RSA with RS256")]
    JwksKey { path: PathBuf, index: usize },
    #[error("ingress.viewer_tokens names no key: add `keys` or `jwks_file`")]
    NoKeys,
}

struct Key {
    kid: Option<String>,
    alg: Algorithm,
    key: DecodingKey,
}

/// Verifies viewer tokens against a fixed set of keys.
pub struct Verifier {
    keys: Vec<Key>,
    issuer: Option<String>,
    audience: Option<String>,
    /// Tokens whose signature and claims verified, by their SHA-256: a
    /// viewer sending the same bearer token on every request pays one
    /// signature check (tens of microseconds for Ed25519, more for RS256),
    /// not one per request.
    /// Times are still checked on every use; the keys never change under
    /// one `Verifier`.
    verified: std::sync::Mutex<std::collections::HashMap<[u8; 32], Claims>>,
}

/// Tokens remembered as verified; past it the expired ones go, and if
/// none had, all of them (each costs one signature check again).
const MAX_VERIFIED: usize = 4096;

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("keys", &self.keys.len())
            .finish_non_exhaustive()
    }
}

impl Verifier {
    /// Reads the configured key files.
    pub fn load(config: &ViewerTokenConfig) -> Result<Verifier, KeyError> {
        let mut keys = Vec::new();
        for k in &config.keys {
            let pem = read(&k.file)?;
            let key = match k.alg {
                KeyAlg::EdDSA => DecodingKey::from_ed_pem(&pem),
                KeyAlg::RS256 => DecodingKey::from_rsa_pem(&pem),
            }
            .map_err(|e| KeyError::Pem {
                path: k.file.clone(),
                alg: k.alg,
                detail: e.to_string(),
            })?;
            keys.push(Key {
                kid: k.kid.clone(),
                alg: k.alg.algorithm(),
                key,
            });
        }
        if let Some(path) = &config.jwks_file {
            keys.extend(jwks(path, &read(path)?)?);
        }
        if keys.is_empty() {
            return Err(KeyError::NoKeys);
        }
        Ok(Verifier {
            keys,
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
            verified: std::sync::Mutex::default(),
        })
    }

    /// The viewer a token names, if it verifies at `now` (Unix seconds).
    pub fn verify(&self, token: &str, now: u64) -> Result<Viewer, TokenError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::TooLong);
        }
        let digest: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        let known = self.remembered().get(&digest).cloned();
        if let Some(claims) = known {
            return self.times(claims, now);
        }
        let claims = self.check_signature(token)?;
        let viewer = self.times(claims.clone(), now)?;
        let mut verified = self.remembered();
        if verified.len() >= MAX_VERIFIED {
            verified.retain(|_, claims| claims.exp.saturating_add(LEEWAY_SECS) > now);
            if verified.len() >= MAX_VERIFIED {
                verified.clear();
            }
        }
        verified.insert(digest, claims);
        Ok(viewer)
    }

    fn remembered(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<[u8; 32], Claims>> {
        self.verified.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The claims of a token whose signature one of the keys verifies.
    fn check_signature(&self, token: &str) -> Result<Claims, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
        if crate::jwt_crit::names_extensions(token) {
            return Err(TokenError::Malformed);
        }
        if !matches!(header.alg, Algorithm::EdDSA | Algorithm::RS256) {
            return Err(TokenError::Algorithm(format!("{:?}", header.alg)));
        }
        let candidates = self.keys.iter().filter(|k| {
            k.alg == header.alg
                && match (&header.kid, &k.kid) {
                    (Some(want), Some(have)) => want == have,
                    _ => true,
                }
        });
        let mut last = TokenError::UnknownKey;
        for key in candidates {
            match jsonwebtoken::decode::<Claims>(token, &key.key, &self.validation(key.alg)) {
                Ok(data) => return Ok(data.claims),
                Err(e) => last = token_error(e.kind()),
            }
            // A token whose claims are wrong is wrong under every key.
            if last != TokenError::BadSignature {
                return Err(last);
            }
        }
        Err(last)
    }

    fn validation(&self, alg: Algorithm) -> Validation {
        let mut v = Validation::new(alg);
        // Times are checked against the clock given to `verify`, so tests
        // need no real waiting and the decision stays pure.
        v.validate_exp = false;
        v.validate_nbf = false;
        // A configured issuer or audience must be present, not merely
        // not contradicted (jsonwebtoken checks only claims it requires).
        let mut required = vec!["sub", "exp"];
        match &self.audience {
            Some(aud) => {
                v.set_audience(&[aud]);
                required.push("aud");
            }
            None => v.validate_aud = false,
        }
        if let Some(iss) = &self.issuer {
            v.set_issuer(&[iss]);
            required.push("iss");
        }
        v.set_required_spec_claims(&required);
        v
    }

    fn times(&self, claims: Claims, now: u64) -> Result<Viewer, TokenError> {
        if claims.exp.saturating_add(LEEWAY_SECS) <= now {
            return Err(TokenError::Expired);
        }
        if claims
            .nbf
            .is_some_and(|nbf| nbf > now.saturating_add(LEEWAY_SECS))
        {
            return Err(TokenError::NotYet);
        }
        if claims.sub.is_empty() {
            return Err(TokenError::Claims);
        }
        Ok(Viewer {
            sub: claims.sub,
            org: claims.org.filter(|o| !o.is_empty()),
            exp: claims.exp,
        })
    }
}

fn token_error(kind: &ErrorKind) -> TokenError {
    match kind {
        ErrorKind::InvalidSignature => TokenError::BadSignature,
        ErrorKind::InvalidAudience | ErrorKind::InvalidIssuer => TokenError::WrongParty,
        ErrorKind::MissingRequiredClaim(_) | ErrorKind::Json(_) | ErrorKind::InvalidSubject => {
            TokenError::Claims
        }
        ErrorKind::InvalidAlgorithm => TokenError::UnknownKey,
        _ => TokenError::Malformed,
    }
}

fn read(path: &Path) -> Result<Vec<u8>, KeyError> {
    std::fs::read(path).map_err(|source| KeyError::Read {
        path: path.to_owned(),
        source,
    })
}

/// The Ed25519 and RS256 keys of a JWKS document.
fn jwks(path: &Path, bytes: &[u8]) -> Result<Vec<Key>, KeyError> {
    use jsonwebtoken::jwk::{AlgorithmParameters, KeyAlgorithm};
    let set: JwkSet = serde_json::from_slice(bytes).map_err(|e| KeyError::Jwks {
        path: path.to_owned(),
        detail: e.to_string(),
    })?;
    let mut keys = Vec::new();
    for (index, jwk) in set.keys.iter().enumerate() {
        let alg = match (&jwk.algorithm, jwk.common.key_algorithm) {
            (AlgorithmParameters::OctetKeyPair(_), None | Some(KeyAlgorithm::EdDSA)) => {
                Algorithm::EdDSA
            }
            (AlgorithmParameters::RSA(_), None | Some(KeyAlgorithm::RS256)) => Algorithm::RS256,
            _ => {
                return Err(KeyError::JwksKey {
                    path: path.to_owned(),
                    index,
                });
            }
        };
        let key = DecodingKey::from_jwk(jwk).map_err(|e| KeyError::Jwks {
            path: path.to_owned(),
            detail: format!("key {index}: {e}"),
        })?;
        keys.push(Key {
            kid: jwk.common.key_id.clone(),
            alg,
            key,
        });
    }
    Ok(keys)
}

#[cfg(test)]
#[path = "token_tests.rs"]
mod tests;
