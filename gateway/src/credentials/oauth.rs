//! The `oauth2` scheme: what to ask a token endpoint (pure), how to read its
//! answer (pure), and [`TokenCache`], which keeps one access token per
//! credential until it expires and lets exactly one request fetch a new one
//! however many arrive at once.
//!
//! The exchange itself (HTTPS to the token endpoint) is the edge's, see
//! [`super::token_endpoint`]; everything here is testable without I/O.
//!
//! Expiry: a token is used until `expires_in` minus a skew (a quarter of
//! the lifetime, at most [`MAX_SKEW`]), so a request never leaves with a
//! token about to expire in flight; a response without `expires_in` gets
//! [`DEFAULT_LIFETIME`], and none is kept longer than [`MAX_LIFETIME`]
//! (an endpoint's `expires_in` is not trusted to be sane: 2^63 seconds
//! would overflow the clock). A token an upstream answers 401 to is dropped
//! ([`TokenCache::rejected`], after [`REJECTED_GRACE`]), so the next request
//! fetches a new one, still single-flight. Times come from `tokio::time`,
//! so tests pause it.

use std::sync::{
    Arc, Mutex, PoisonError,
    atomic::{AtomicU64, Ordering},
};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hyper::http::{HeaderValue, Uri};
use serde::Deserialize;
use thiserror::Error;
use tokio::time::Instant;
use zeroize::Zeroizing;

pub use super::kept::Keep;
use super::kept::digest;
use super::percent::pct_encode;
use super::scheme_config::{ClientAuth, OAuth2Config, OAuthGrant};
use super::scheme_error::SchemeError;
use super::secret::Secret;
use crate::shown_url::shown_url;

/// Lifetime assumed when the token endpoint does not say (`expires_in`).
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);
/// The longest a token is kept, whatever the endpoint says: a day, so a
/// token revoked at the endpoint without Sluice hearing of it still ages out.
pub const MAX_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// The most a token's use is cut short before its stated expiry.
pub const MAX_SKEW: Duration = Duration::from_secs(30);
/// How long after its fetch a token an upstream refuses (401) is kept
/// anyway: that soon the request, not the token, is the likelier fault,
/// and a sandbox asking for a URL that always answers 401 must not have
/// Sluice ask the token endpoint once per request.
pub const REJECTED_GRACE: Duration = Duration::from_secs(30);
/// Token responses larger than this are refused (they are a few hundred bytes).
pub const MAX_RESPONSE: usize = 64 * 1024;

/// A compiled `oauth2` scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuth2Scheme {
    pub grant: OAuthGrant,
    pub token_url: TokenUrl,
    pub client_id: Option<String>,
    pub client_auth: ClientAuth,
    pub scope: Option<String>,
    pub audience: Option<String>,
}

/// Where the token endpoint is: always HTTPS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenUrl {
    /// The name its certificate must be valid for, resolved by the daemon.
    pub host: String,
    pub port: u16,
    /// Path and query, as sent in the request line.
    pub path: String,
}

/// Without the query: an endpoint may take a key there, and this is what
/// logs and audit events show.
impl std::fmt::Display for TokenUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.split('?').next().unwrap_or("/");
        if self.host.contains(':') {
            write!(f, "https://[{}]:{}{path}", self.host, self.port)
        } else {
            write!(f, "https://{}:{}{path}", self.host, self.port)
        }
    }
}

impl OAuth2Scheme {
    pub fn compile(c: &OAuth2Config) -> Result<Self, SchemeError> {
        let bad_url = || SchemeError::OAuthBadUrl(shown_url(&c.token_url));
        let uri: Uri = c.token_url.parse().map_err(|_| bad_url())?;
        if uri.scheme_str() != Some("https") {
            return Err(SchemeError::OAuthNotHttps(shown_url(&c.token_url)));
        }
        let host = uri.host().ok_or_else(bad_url)?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
            return Err(bad_url());
        }
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        match (c.grant, &c.client_id, &c.client_secret) {
            (OAuthGrant::ClientCredentials, None, _) => {
                return Err(SchemeError::OAuthNeedsClientId);
            }
            (OAuthGrant::ClientCredentials, _, Some(_)) => {
                return Err(SchemeError::OAuthClientSecretIsSource);
            }
            (OAuthGrant::RefreshToken, None, Some(_)) => {
                return Err(SchemeError::OAuthSecretWithoutId);
            }
            _ => {}
        }
        if let Some(id) = &c.client_id
            && (id.is_empty() || id.contains(':') || id.bytes().any(|b| b.is_ascii_control()))
        {
            return Err(SchemeError::OAuthBadClientId);
        }
        Ok(OAuth2Scheme {
            grant: c.grant,
            token_url: TokenUrl {
                host,
                port: uri.port_u16().unwrap_or(443),
                path,
            },
            client_id: c.client_id.clone(),
            client_auth: c.client_auth,
            scope: c.scope.clone(),
            audience: c.audience.clone(),
        })
    }

    /// The token request: an `application/x-www-form-urlencoded` body and,
    /// with `client_auth: basic`, the `Authorization` value. `source` is the
    /// credential's secret (client secret, or refresh token);
    /// `client_secret` the refresh grant's optional client secret.
    pub fn token_request(
        &self,
        source: &Secret,
        client_secret: Option<&Secret>,
    ) -> (Zeroizing<Vec<u8>>, Option<HeaderValue>) {
        let mut form = Form::default();
        let secret = match self.grant {
            OAuthGrant::ClientCredentials => {
                form.pair(b"grant_type", b"client_credentials");
                Some(source)
            }
            OAuthGrant::RefreshToken => {
                form.pair(b"grant_type", b"refresh_token");
                form.pair(b"refresh_token", source.expose());
                client_secret
            }
        };
        if let Some(scope) = &self.scope {
            form.pair(b"scope", scope.as_bytes());
        }
        if let Some(audience) = &self.audience {
            form.pair(b"audience", audience.as_bytes());
        }
        let mut authorization = None;
        if let Some(id) = &self.client_id {
            match (self.client_auth, secret) {
                (ClientAuth::Basic, Some(secret)) => {
                    // RFC 6749 §2.3.1: both parts form-encoded before base64.
                    let mut pair = Zeroizing::new(pct_encode(id.as_bytes()));
                    pair.push(b':');
                    pair.extend_from_slice(&pct_encode(secret.expose()));
                    let mut value = Zeroizing::new(b"Basic ".to_vec());
                    value.extend_from_slice(STANDARD.encode(pair.as_slice()).as_bytes());
                    authorization = HeaderValue::from_bytes(&value).ok().map(|mut v| {
                        v.set_sensitive(true);
                        v
                    });
                }
                (ClientAuth::Body, Some(secret)) => {
                    form.pair(b"client_id", id.as_bytes());
                    form.pair(b"client_secret", secret.expose());
                }
                // A public client (refresh grant, no secret): id only.
                (_, None) => form.pair(b"client_id", id.as_bytes()),
            }
        }
        (form.0, authorization)
    }
}

#[derive(Default)]
struct Form(Zeroizing<Vec<u8>>);

impl Form {
    fn pair(&mut self, key: &[u8], value: &[u8]) {
        if !self.0.is_empty() {
            self.0.push(b'&');
        }
        self.0.extend_from_slice(key);
        self.0.push(b'=');
        self.0.extend_from_slice(&Zeroizing::new(pct_encode(value)));
    }
}

/// An access token and how long it may be used.
pub struct Token {
    pub access: Arc<Secret>,
    pub lifetime: Duration,
    /// A new refresh token, when the endpoint rotated it.
    pub refresh: Option<Arc<Secret>>,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Token(** {:?} **)", self.lifetime)
    }
}

/// Why no token could be had. Messages never carry what the endpoint sent
/// (it may echo a secret) nor its URL, only what went wrong; the caller
/// names the endpoint where the operator reads it ([`TokenUrl`]'s Display).
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum TokenError {
    /// Resolving, connecting, TLS or the exchange failed; says how.
    #[error("cannot reach the token endpoint: {0}")]
    Unreachable(String),
    #[error("the token endpoint answered HTTP {0}")]
    Status(u16),
    #[error("the token endpoint's answer is not a JSON object with an `access_token` string")]
    BadJson,
    #[error("the token endpoint issued a token of type {0:?}, not a bearer token")]
    NotBearer(String),
    #[error("the token endpoint issued a token that cannot be sent in a header")]
    BadToken,
    #[error("the token endpoint's answer is larger than {MAX_RESPONSE} bytes")]
    TooLarge,
    #[error("the credential's secret is not loaded")]
    NoSecret,
}

impl TokenError {
    /// What a sandbox is told: the kind of failure, never where the
    /// endpoint is or what the network said about it.
    pub fn for_sandbox(&self) -> String {
        match self {
            TokenError::Unreachable(_) => "cannot reach the token endpoint".to_owned(),
            other => other.to_string(),
        }
    }
}

#[derive(Deserialize)]
struct Response {
    access_token: Zeroizing<String>,
    token_type: Option<String>,
    expires_in: Option<serde_json::Value>,
    refresh_token: Option<Zeroizing<String>>,
}

/// Reads a token endpoint's answer (RFC 6749 §5.1).
pub fn parse_response(status: u16, body: &[u8]) -> Result<Token, TokenError> {
    if !(200..300).contains(&status) {
        return Err(TokenError::Status(status));
    }
    let r: Response = serde_json::from_slice(body).map_err(|_| TokenError::BadJson)?;
    if let Some(kind) = &r.token_type
        && !kind.eq_ignore_ascii_case("bearer")
    {
        return Err(TokenError::NotBearer(kind.chars().take(32).collect()));
    }
    if r.access_token.is_empty() || HeaderValue::from_str(&r.access_token).is_err() {
        return Err(TokenError::BadToken);
    }
    // Some endpoints send the number as a string.
    let seconds = match &r.expires_in {
        Some(serde_json::Value::Number(n)) => n.as_u64(),
        Some(serde_json::Value::String(s)) => s.parse().ok(),
        _ => None,
    };
    let lifetime = seconds.map_or(DEFAULT_LIFETIME, |s| {
        Duration::from_secs(s.min(MAX_LIFETIME.as_secs()))
    });
    Ok(Token {
        access: Arc::new(Secret::new(r.access_token.as_bytes().to_vec())),
        lifetime,
        refresh: r
            .refresh_token
            .filter(|t| !t.is_empty())
            .map(|t| Arc::new(Secret::new(t.as_bytes().to_vec()))),
    })
}

/// How long a token with `lifetime` is used for (at most [`MAX_LIFETIME`]).
pub fn usable_for(lifetime: Duration) -> Duration {
    let lifetime = lifetime.min(MAX_LIFETIME);
    lifetime.saturating_sub((lifetime / 4).min(MAX_SKEW))
}

struct Cached {
    access: Arc<Secret>,
    fetched: Instant,
    until: Instant,
}

struct Flight {
    /// Fetches finished, successful or not.
    finished: u64,
    /// The last fetch's failure, handed to requests that waited for it.
    failure: Option<TokenError>,
    /// A refresh token the endpoint rotated to (refresh grant only), and
    /// the digest of the source secret it descends from: a source file
    /// rotated since makes it stale.
    refresh: Option<(Arc<Secret>, [u8; 32])>,
}

/// One credential's access token: cached until it expires, fetched by one
/// request at a time (the others wait for its result instead of asking
/// the endpoint themselves).
pub struct TokenCache {
    shared: Arc<Shared>,
}

/// What the cache's fetches, each in a task of its own, share.
struct Shared {
    /// Only the refresh grant keeps a rotated refresh token: on
    /// `client_credentials` the fetch's secret is the client secret, and
    /// a refresh token an endpoint hands out anyway must not replace it.
    keeps_rotated: bool,
    /// Where a rotated token is kept beyond the process, if anywhere.
    keep: Option<Box<dyn Keep>>,
    current: Mutex<Option<Cached>>,
    finished: AtomicU64,
    gate: tokio::sync::Mutex<Flight>,
}

impl TokenCache {
    /// An empty cache for a credential of `grant`.
    pub fn new(grant: OAuthGrant) -> Self {
        TokenCache::with_keep(grant, None)
    }

    /// An empty cache for a credential of `grant` that keeps a rotated
    /// refresh token through `keep`, starting from the one kept before.
    pub fn keeping(grant: OAuthGrant, keep: Box<dyn Keep>) -> Self {
        TokenCache::with_keep(grant, Some(keep))
    }

    fn with_keep(grant: OAuthGrant, keep: Option<Box<dyn Keep>>) -> Self {
        let keeps_rotated = grant == OAuthGrant::RefreshToken;
        let keep = keep.filter(|_| keeps_rotated);
        let refresh = keep.as_ref().and_then(|keep| keep.kept());
        TokenCache {
            shared: Arc::new(Shared {
                keeps_rotated,
                keep,
                current: Mutex::new(None),
                finished: AtomicU64::new(0),
                gate: tokio::sync::Mutex::new(Flight {
                    finished: 0,
                    failure: None,
                    refresh,
                }),
            }),
        }
    }
}

impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCache(** tokens **)")
    }
}

impl TokenCache {
    /// The current token, or a new one from `fetch`. `source` is the
    /// credential's current secret; `fetch` receives the secret to use:
    /// `source`, or for the refresh grant a refresh token the endpoint
    /// rotated to.
    ///
    /// Single flight: concurrent callers queue on one async lock; the first
    /// fetches, and the others find its token, or, when it failed, return
    /// its failure without asking the endpoint again.
    ///
    /// The fetch runs in a task of its own, which holds the lock until the
    /// answer is stored: the request that started it may go away mid-way
    /// (its client left), and a refresh grant's endpoint has by then
    /// rotated the refresh token; cut short, the answer carrying the new
    /// one would be lost and the next fetch would send the one it replaced.
    pub async fn get<F, Fut>(
        &self,
        source: &Arc<Secret>,
        fetch: F,
    ) -> Result<Arc<Secret>, TokenError>
    where
        F: FnOnce(Arc<Secret>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Token, TokenError>> + Send + 'static,
    {
        if let Some(token) = self.shared.fresh() {
            return Ok(token);
        }
        let seen = self.shared.finished.load(Ordering::Acquire);
        let (shared, source) = (self.shared.clone(), source.clone());
        tokio::spawn(async move { shared.fetch_once(seen, &source, fetch).await })
            .await
            .unwrap_or_else(|err| Err(TokenError::Unreachable(format!("the fetch failed: {err}"))))
    }

    /// An upstream answered 401 to a request carrying `used`: drops it
    /// when it is still the cached token and older than [`REJECTED_GRACE`],
    /// so the next [`TokenCache::get`] fetches anew (one request for all).
    /// A 401 for a token already replaced changes nothing.
    pub fn rejected(&self, used: &Arc<Secret>) {
        let mut current = self.shared.lock();
        let stale = current.as_ref().is_some_and(|cached| {
            Arc::ptr_eq(&cached.access, used) && cached.fetched.elapsed() >= REJECTED_GRACE
        });
        if stale {
            *current = None;
        }
    }
}

impl Shared {
    /// [`TokenCache::get`] past its first look: waits its turn, then finds
    /// the token the fetch before it got, or that fetch's failure (when
    /// one finished since `seen`), or fetches.
    async fn fetch_once<F, Fut>(
        &self,
        seen: u64,
        source: &Arc<Secret>,
        fetch: F,
    ) -> Result<Arc<Secret>, TokenError>
    where
        F: FnOnce(Arc<Secret>) -> Fut,
        Fut: Future<Output = Result<Token, TokenError>>,
    {
        let mut flight = self.gate.lock().await;
        if let Some(token) = self.fresh() {
            return Ok(token);
        }
        if flight.finished != seen
            && let Some(failure) = &flight.failure
        {
            return Err(failure.clone());
        }
        let lineage = digest(source);
        let refresh = match &flight.refresh {
            Some((rotated, from)) if *from == lineage => rotated.clone(),
            _ => source.clone(),
        };
        let result = fetch(refresh).await;
        flight.finished += 1;
        self.finished.store(flight.finished, Ordering::Release);
        match result {
            Ok(token) => {
                flight.failure = None;
                if let Some(rotated) = token.refresh
                    && self.keeps_rotated
                {
                    if let Some(keep) = &self.keep {
                        keep.keep(&rotated, lineage);
                    }
                    flight.refresh = Some((rotated, lineage));
                }
                // Checked although the lifetime is capped: a clock near its
                // end must not panic the request; the token then serves
                // this request only.
                let now = Instant::now();
                let until = now.checked_add(usable_for(token.lifetime)).unwrap_or(now);
                *self.lock() = Some(Cached {
                    access: token.access.clone(),
                    fetched: now,
                    until,
                });
                Ok(token.access)
            }
            Err(err) => {
                flight.failure = Some(err.clone());
                Err(err)
            }
        }
    }

    fn fresh(&self) -> Option<Arc<Secret>> {
        let current = self.lock();
        let cached = current.as_ref()?;
        (Instant::now() < cached.until).then(|| cached.access.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Cached>> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
#[path = "oauth_tests.rs"]
mod tests;
