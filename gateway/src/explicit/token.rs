//! Capability tokens: short-lived JWTs signed with Ed25519 (`alg: EdDSA`)
//! that name a sandbox off this node, the connections it may open
//! (`host:port` patterns), whether it runs dry, and when the token
//! expires. The proxy verifies them statelessly with the configured public
//! key; operators and tests mint them with the private key (`sluice token
//! mint`). Parsing, signing and signature checks are `jsonwebtoken`'s
//! (the `crit` header it leaves unchecked is `jwt_crit`'s); this module
//! checks the claims against a clock passed in and names every refusal.

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Validation, errors::ErrorKind};
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use rustls::pki_types::{PrivatePkcs8KeyDer, SubjectPublicKeyInfoDer, pem::PemObject as _};
use serde::{Deserialize, Serialize};

use crate::apps::pattern::HostPattern;

/// The DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key
/// follows it (RFC 8410).
const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// Longest token accepted (a header; tokens are a few hundred bytes).
pub const MAX_TOKEN_LEN: usize = 8 * 1024;

/// What a token grants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// The sandbox.
    pub sub: String,
    /// Its session, if the run is one (sessions carry approval grants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// `host:port` patterns it may reach: `api.example.com:443`,
    /// `*.example.com:443`, `api.example.com:*`.
    pub connections: Vec<String>,
    /// Non-GET/HEAD requests are answered 202 with a preview.
    #[serde(default)]
    pub dry_run: bool,
    /// Expiry, seconds since the Unix epoch.
    pub exp: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<u64>,
    /// Not before, seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
    /// The node the token is for (`explicit_proxy.audience`): a token
    /// naming one is taken only where the proxy says that name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<String>,
    /// The catalogued apps (`github`) or actions (`github.repo.delete`
    /// written `app.action`) its requests may use; absent: what the
    /// policy allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
}

/// Why a token was refused (each answered 407).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("no capability token (send `Proxy-Authorization: Bearer <token>`)")]
    Missing,
    #[error("the token is not a JWT signed with EdDSA: {0}")]
    Malformed(&'static str),
    #[error("the token's signature does not verify with this proxy's key")]
    BadSignature,
    #[error("the token expired")]
    Expired,
    #[error("the token lives longer than this proxy accepts ({0} s); mint a shorter one")]
    TooLong(u64),
    #[error("the token names sandbox `{0}`, which this proxy does not serve")]
    UnknownSandbox(String),
    #[error("the token's session `{0}` was ended (`sluice session rm`); mint a new token")]
    SessionEnded(String),
    #[error("the token is not valid yet (nbf)")]
    NotYet,
    #[error("the token is for another node (aud)")]
    Audience,
}

impl TokenError {
    /// Stable reason for audit events and the 407 body.
    pub fn reason(&self) -> &'static str {
        match self {
            TokenError::Missing => "token_missing",
            TokenError::Malformed(_) => "token_malformed",
            TokenError::BadSignature => "token_bad_signature",
            TokenError::Expired => "token_expired",
            TokenError::TooLong(_) => "token_lifetime",
            TokenError::UnknownSandbox(_) => "token_other_sandbox",
            TokenError::SessionEnded(_) => "token_session_ended",
            TokenError::NotYet => "token_not_yet_valid",
            TokenError::Audience => "token_audience",
        }
    }
}

/// Remote sessions ended (`sluice session rm`), with when: a token for
/// one issued then or before is refused from that moment, so ending a
/// session ends what was handed out for it; a token minted afterwards
/// starts the id afresh. One entry per session ended while the daemon
/// runs.
#[derive(Debug, Default)]
pub struct EndedSessions(std::sync::Mutex<std::collections::HashMap<(String, String), u64>>);

impl EndedSessions {
    /// `session` of `sandbox` ended at `now` (Unix seconds).
    pub fn end(&self, sandbox: &str, session: &str, now: u64) {
        let mut ended = self.0.lock().unwrap_or_else(|e| e.into_inner());
        ended.insert((sandbox.to_owned(), session.to_owned()), now);
    }

    /// Whether `claims` are for a session ended at or after they were
    /// issued (a token without `iat` counts as issued long ago).
    pub fn ended(&self, claims: &Claims) -> bool {
        let Some(session) = &claims.session else {
            return false;
        };
        let ended = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let key = (claims.sub.clone(), session.clone());
        ended
            .get(&key)
            .is_some_and(|&at| claims.iat.unwrap_or(0) <= at)
    }
}

/// Verifies tokens with one Ed25519 public key.
pub struct Verifier {
    key: DecodingKey,
    /// The longest a token may still have to live, in seconds: a token
    /// leaked with a far expiry cannot be revoked short of a new key.
    max_lifetime: u64,
    /// This node's name for `aud`; `None`: a token naming any is refused.
    audience: Option<String>,
}

/// How far the clocks of whoever mints tokens and of this node may
/// disagree, in seconds, for `exp` and `nbf`.
pub const LEEWAY_SECS: u64 = 30;

/// The default longest lifetime a token may have left (an hour): a token
/// is a bearer credential that only its expiry revokes.
pub const MAX_LIFETIME_SECS: u64 = 3600;

impl Verifier {
    /// From a PEM `PUBLIC KEY` (SubjectPublicKeyInfo) holding an Ed25519 key.
    pub fn from_pem(pem: &[u8]) -> Result<Verifier, String> {
        let spki = SubjectPublicKeyInfoDer::from_pem_slice(pem)
            .map_err(|e| format!("not a PEM public key: {e}"))?;
        let raw = spki
            .as_ref()
            .strip_prefix(&ED25519_SPKI_PREFIX[..])
            .filter(|raw| raw.len() == 32)
            .ok_or("not an Ed25519 public key")?;
        Ok(Verifier {
            key: DecodingKey::from_ed_der(raw),
            max_lifetime: MAX_LIFETIME_SECS,
            audience: None,
        })
    }

    /// Takes tokens whose `aud` is `audience` (and those without one).
    pub fn with_audience(mut self, audience: Option<String>) -> Verifier {
        self.audience = audience;
        self
    }

    /// Refuses tokens with more than `seconds` left to live.
    pub fn with_max_lifetime(mut self, seconds: u64) -> Verifier {
        self.max_lifetime = seconds;
        self
    }

    /// Checks signature, algorithm and expiry (`now` in Unix seconds).
    pub fn verify(&self, token: &str, now: u64) -> Result<Claims, TokenError> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(TokenError::Malformed("too long"));
        }
        // Only EdDSA: never `none`, never an algorithm the key was not made for.
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| TokenError::Malformed("not a JWT with a JSON header"))?;
        if header.alg != Algorithm::EdDSA {
            return Err(TokenError::Malformed("alg must be EdDSA"));
        }
        if crate::jwt_crit::names_extensions(token) {
            return Err(TokenError::Malformed(
                "crit names extensions Sluice does not know",
            ));
        }
        let mut validation = Validation::new(Algorithm::EdDSA);
        // Times and audience are checked below against the clock given
        // (so the decision stays pure) and this node's name.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.set_required_spec_claims::<&str>(&[]);
        let claims = jsonwebtoken::decode::<Claims>(token, &self.key, &validation)
            .map_err(|e| match e.kind() {
                ErrorKind::InvalidSignature => TokenError::BadSignature,
                ErrorKind::Base64(_) => TokenError::Malformed("bad base64url"),
                ErrorKind::Json(_) => TokenError::Malformed("bad claims"),
                _ => TokenError::Malformed("not a JWT signed with EdDSA"),
            })?
            .claims;
        if claims.exp.saturating_add(LEEWAY_SECS) <= now {
            return Err(TokenError::Expired);
        }
        if claims.exp.saturating_sub(now) > self.max_lifetime {
            return Err(TokenError::TooLong(self.max_lifetime));
        }
        if claims
            .nbf
            .is_some_and(|nbf| nbf > now.saturating_add(LEEWAY_SECS))
        {
            return Err(TokenError::NotYet);
        }
        if claims.aud.is_some() && claims.aud != self.audience {
            return Err(TokenError::Audience);
        }
        if claims
            .connections
            .iter()
            .any(|c| Connection::parse(c).is_err())
        {
            return Err(TokenError::Malformed("bad connection pattern"));
        }
        Ok(claims)
    }
}

/// Mints tokens with an Ed25519 private key.
pub struct Signer {
    key: EncodingKey,
    /// The same key, for its public half.
    pair: Ed25519KeyPair,
}

impl Signer {
    /// From a PEM `PRIVATE KEY` (PKCS#8), as `sluice token keygen` or
    /// `openssl genpkey -algorithm ed25519` write it.
    pub fn from_pem(pem: &[u8]) -> Result<Signer, String> {
        let der = PrivatePkcs8KeyDer::from_pem_slice(pem)
            .map_err(|e| format!("not a PEM private key: {e}"))?;
        let pair = Ed25519KeyPair::from_pkcs8_maybe_unchecked(der.secret_pkcs8_der())
            .map_err(|e| format!("not an Ed25519 private key: {e}"))?;
        Ok(Signer {
            key: EncodingKey::from_ed_der(der.secret_pkcs8_der()),
            pair,
        })
    }

    pub fn mint(&self, claims: &Claims) -> String {
        // Claims are plain strings and numbers and the key was checked at
        // load: encoding cannot fail.
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(Algorithm::EdDSA),
            claims,
            &self.key,
        )
        .unwrap_or_default()
    }

    /// The matching public key, PEM.
    pub fn public_pem(&self) -> String {
        let mut der = ED25519_SPKI_PREFIX.to_vec();
        der.extend_from_slice(self.pair.public_key().as_ref());
        pem("PUBLIC KEY", &der)
    }
}

/// A new Ed25519 key pair: (private PEM, public PEM).
pub fn generate() -> Result<(String, String), String> {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).map_err(|e| e.to_string())?;
    let private = pem("PRIVATE KEY", pkcs8.as_ref());
    let public = Signer::from_pem(private.as_bytes())?.public_pem();
    Ok((private, public))
}

fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// One `host:port` pattern of a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    host: HostPattern,
    /// `None`: any port.
    port: Option<u16>,
}

impl Connection {
    pub fn parse(text: &str) -> Result<Connection, String> {
        let (host, port) = text
            .rsplit_once(':')
            .ok_or_else(|| format!("`{text}`: write host:port (port may be `*`)"))?;
        let port = match port {
            "*" => None,
            port => Some(port.parse().map_err(|_| format!("`{text}`: bad port"))?),
        };
        Ok(Connection {
            host: HostPattern::parse(host)?,
            port,
        })
    }

    /// Whether this pattern allows `host` (in canonical form) at `port`.
    fn allows_canonical(&self, host: &str, port: u16) -> bool {
        self.port.is_none_or(|p| p == port) && self.host.matches(host)
    }
}

/// Whether any of the token's patterns allows `host:port`. The host is
/// put in canonical form once, not once per pattern.
pub fn allows(claims: &Claims, host: &str, port: u16) -> bool {
    let host = crate::policy::network::canonical_name(host);
    claims
        .connections
        .iter()
        .filter_map(|c| Connection::parse(c).ok())
        .any(|c| c.allows_canonical(&host, port))
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    use super::*;

    fn claims(exp: u64) -> Claims {
        Claims {
            sub: "vm-1".to_owned(),
            session: None,
            connections: vec!["api.test:443".to_owned(), "*.cdn.test:*".to_owned()],
            dry_run: false,
            exp,
            iat: None,
            nbf: None,
            aud: None,
            tools: None,
        }
    }

    #[test]
    fn minted_tokens_verify_and_tampering_does_not() {
        let (private, public) = generate().expect("keys");
        let signer = Signer::from_pem(private.as_bytes()).expect("signer");
        let verifier = Verifier::from_pem(public.as_bytes()).expect("verifier");
        let (other_private, _) = generate().expect("keys");
        let other = Signer::from_pem(other_private.as_bytes()).expect("signer");

        let token = signer.mint(&claims(1_000));
        assert_eq!(verifier.verify(&token, 999), Ok(claims(1_000)));
        // Past its expiry by less than the clocks' leeway: still taken.
        assert!(verifier.verify(&token, 1_000 + LEEWAY_SECS - 1).is_ok());
        assert_eq!(
            verifier.verify(&token, 1_000 + LEEWAY_SECS),
            Err(TokenError::Expired)
        );
        // More life left than the proxy accepts (an hour by default).
        let far = signer.mint(&claims(1_000 + MAX_LIFETIME_SECS + 1));
        assert_eq!(
            verifier.verify(&far, 1_000),
            Err(TokenError::TooLong(MAX_LIFETIME_SECS))
        );
        assert!(
            verifier.verify(&far, 1_001).is_ok(),
            "once it is within the bound"
        );
        let strict = Verifier::from_pem(public.as_bytes())
            .expect("verifier")
            .with_max_lifetime(60);
        assert_eq!(strict.verify(&token, 939), Err(TokenError::TooLong(60)));
        assert!(strict.verify(&token, 940).is_ok());
        assert_eq!(
            verifier.verify(&other.mint(&claims(1_000)), 1),
            Err(TokenError::BadSignature)
        );
        // Claims swapped under a valid signature.
        let mut forged = claims(1_000);
        forged.sub = "vm-2".to_owned();
        let forged_payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).expect("json"));
        let parts: Vec<&str> = token.split('.').collect();
        let swapped = format!("{}.{forged_payload}.{}", parts[0], parts[2]);
        assert_eq!(verifier.verify(&swapped, 1), Err(TokenError::BadSignature));
        // alg: none, and garbage.
        let none = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#),
            parts[1]
        );
        assert!(matches!(
            verifier.verify(&none, 1),
            Err(TokenError::Malformed(_))
        ));
        // A critical extension Sluice does not know, under a valid signature.
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"EdDSA","crit":["b64"],"b64":false}"#);
        let signed = format!("{header}.{}", parts[1]);
        let sig = URL_SAFE_NO_PAD.encode(signer.pair.sign(signed.as_bytes()).as_ref());
        assert_eq!(
            verifier.verify(&format!("{signed}.{sig}"), 1),
            Err(TokenError::Malformed(
                "crit names extensions Sluice does not know"
            ))
        );
        for junk in ["", "a.b", "a.b.c.d", "!!.!!.!!"] {
            assert!(
                matches!(verifier.verify(junk, 1), Err(TokenError::Malformed(_))),
                "{junk}"
            );
        }
    }

    #[test]
    fn connection_patterns() {
        let c = claims(1);
        let cases = [
            ("api.test", 443, true),
            ("API.test.", 443, true),
            ("api.test", 80, false),
            ("x.cdn.test", 8443, true),
            ("cdn.test", 443, false),
            ("other.test", 443, false),
        ];
        for (host, port, want) in cases {
            assert_eq!(allows(&c, host, port), want, "{host}:{port}");
        }
        for bad in ["api.test", "api.test:x", ":443", "http://a:1"] {
            assert!(Connection::parse(bad).is_err(), "{bad}");
        }
    }

    /// Ending a session refuses the tokens issued for it until then, not
    /// those of other sessions or sandboxes, nor one minted afterwards.
    #[test]
    fn an_ended_session_refuses_its_earlier_tokens() {
        let ended = EndedSessions::default();
        let token = |sub: &str, session: Option<&str>, iat: Option<u64>| Claims {
            sub: sub.to_owned(),
            session: session.map(str::to_owned),
            iat,
            ..claims(10_000)
        };
        ended.end("vm-1", "run-1", 1_000);
        #[rustfmt::skip]
        let cases = [
            (token("vm-1", Some("run-1"), Some(999)), true),
            (token("vm-1", Some("run-1"), Some(1_000)), true),
            (token("vm-1", Some("run-1"), None), true),
            (token("vm-1", Some("run-1"), Some(1_001)), false),
            (token("vm-1", Some("run-2"), Some(999)), false),
            (token("vm-2", Some("run-1"), Some(999)), false),
            (token("vm-1", None, Some(999)), false),
        ];
        for (claims, refused) in cases {
            assert_eq!(ended.ended(&claims), refused, "{claims:?}");
        }
        assert_eq!(
            TokenError::SessionEnded("run-1".into()).reason(),
            "token_session_ended"
        );
    }

    /// `nbf` and `aud`: a token not valid yet (beyond the leeway) or for
    /// another node is refused; one naming this node's audience is taken.
    #[test]
    fn not_before_and_audience() {
        let (private, public) = generate().expect("keys");
        let signer = Signer::from_pem(private.as_bytes()).expect("signer");
        let plain = Verifier::from_pem(public.as_bytes()).expect("verifier");
        let node = Verifier::from_pem(public.as_bytes())
            .expect("verifier")
            .with_audience(Some("node-a".into()));
        let with = |nbf: Option<u64>, aud: Option<&str>| {
            signer.mint(&Claims {
                nbf,
                aud: aud.map(str::to_owned),
                ..claims(2_000)
            })
        };
        #[rustfmt::skip]
        let cases = [
            (&plain, with(None, None), Ok(())),
            (&plain, with(Some(1_000 + LEEWAY_SECS), None), Ok(())),
            (&plain, with(Some(1_001 + LEEWAY_SECS), None), Err(TokenError::NotYet)),
            (&plain, with(None, Some("node-a")), Err(TokenError::Audience)),
            (&node, with(None, Some("node-a")), Ok(())),
            (&node, with(None, Some("node-b")), Err(TokenError::Audience)),
            (&node, with(None, None), Ok(())),
        ];
        for (verifier, token, want) in cases {
            assert_eq!(verifier.verify(&token, 1_000).map(drop), want);
        }
    }
}
