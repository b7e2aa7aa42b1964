//! The credential edge of interception: finds the sandbox's placeholders in a
//! request (head, and body where a binding allows it), decides with
//! `credentials::decide` (pure), and on `Inject` swaps the placeholder for
//! the real secret (or, for `oauth2`, an access token it obtains first) as
//! the very last step before the forward, returning what must be redacted
//! from the response.
//!
//! A policy's bindings are compiled when it loads (`CompiledPolicy::bind`);
//! per-sandbox placeholder matchers are built once and cached, the cache
//! cleared when a secret rotates (placeholder lengths may follow the
//! secret's). Access
//! tokens are cached per credential ([`TokenCache`]) until they expire, or
//! until an upstream answers 401 to one ([`Credentials::rejected`]). The
//! response redactor is compiled once per credential and set of secrets
//! (`redactors.rs`).

use std::{
    collections::{BTreeMap, HashMap},
    pin::Pin,
    sync::{Arc, Mutex},
    time::{SystemTime, UNIX_EPOCH},
};

use http_body_util::BodyExt as _;
use hyper::{
    HeaderMap, Method, StatusCode, Uri,
    body::{Body as _, Bytes},
    header::{CONTENT_LENGTH, HeaderValue, TRANSFER_ENCODING},
};

use super::{
    redactors::{Redactors, Sources},
    respond::{Body, full},
};
use crate::{
    credentials::{
        Binding, CredentialStore, Location, PlaceholderIndex, Placeholders, Scheme, Secret,
        Transport,
        body::{MAX_BODY, replace},
        config::{ACCESS_KEY_ID, BodyValue, CLIENT_SECRET, SESSION_TOKEN},
        decide,
        kept::KeptTokens,
        oauth::{OAuth2Scheme, Token, TokenCache, TokenError},
        scheme::{RequestContext, SigV4Keys},
        token_endpoint::TokenEndpoint,
    },
    policy::compiled::CompiledPolicy,
    redact::Needles,
};

/// Entries kept per cache before it is cleared (reloads leave old keys).
const CACHE_LIMIT: usize = 1024;

/// The reason (and metric label) of a failed token fetch.
pub const TOKEN_ENDPOINT_FAILED: &str = "credential_token_endpoint_failed";
/// The reason of a body too large to check or sign.
pub const BODY_TOO_LARGE: &str = "credential_body_too_large";

/// A token fetch in flight.
type TokenFuture = Pin<Box<dyn Future<Output = Result<Token, TokenError>> + Send>>;

pub struct Credentials {
    pub store: Arc<CredentialStore>,
    pub placeholders: Placeholders,
    indexes: Mutex<HashMap<String, Arc<PlaceholderIndex>>>,
    /// One per `oauth2` credential.
    tokens: BTreeMap<String, TokenCache>,
    /// `None`: no `oauth2` credential can get a token (tests without I/O).
    endpoint: Option<TokenEndpoint>,
    /// Each credential's compiled response redactor: building the
    /// automaton per request was a fifth of the daemon's CPU, and the
    /// secret's forms and a digest of them another 5% of a request.
    redactors: Redactors,
}

/// The request a credential decision is about.
pub struct Request<'a> {
    pub sandbox: &'a str,
    pub policy: &'a Arc<CompiledPolicy>,
    /// The name the connection was decided on.
    pub host: &'a str,
    /// TLS, or plain HTTP to an address of `host` or elsewhere (a sandbox
    /// picks the address it dials).
    pub transport: Transport,
    pub method: &'a Method,
    /// The `Host` the upstream will see (`name` or `name:port`).
    pub authority: &'a str,
}

/// What happened to a request's credentials.
pub enum Outcome {
    /// No placeholder: forwarded as is.
    Untouched,
    /// Injected; redact these from the response.
    Injected {
        credential: String,
        needles: Arc<Needles>,
        /// `oauth2`: the access token sent, for [`Credentials::rejected`].
        token: Option<Arc<Secret>>,
        /// The body as forwarded, when it was read whole (to be checked or
        /// signed): a followed redirect may send it again.
        whole: Option<Bytes>,
    },
    /// Refused (403) before anything left: `reason` is a stable label.
    Refused {
        reason: &'static str,
        credential: String,
    },
    /// Could not be done (413 body too large, 502 token endpoint failed).
    /// `detail` is for the sandbox; `log` for the audit event and the
    /// daemon log, which may name the token endpoint (never its query).
    /// Neither holds a secret.
    Failed {
        status: StatusCode,
        reason: &'static str,
        credential: String,
        detail: String,
        log: String,
    },
}

/// What [`Credentials::inject`] swaps in: the credential, the sandbox's
/// placeholder for it where its index has it, and whether the body
/// carries it too.
struct Injection<'a> {
    credential: &'a str,
    placeholder: Option<&'a str>,
    in_body: bool,
}

/// A request body: still streaming, or read whole.
enum Held {
    Streaming(Body),
    Whole(Bytes),
}

impl Held {
    /// Reads the body whole (at most [`MAX_BODY`]); `Err` when larger or cut short.
    async fn read(self) -> Result<Bytes, String> {
        match self {
            Held::Whole(bytes) => Ok(bytes),
            Held::Streaming(body) if body.is_end_stream() => Ok(Bytes::new()),
            Held::Streaming(body) => read_whole(body).await,
        }
    }

    fn into_body(self) -> Body {
        match self {
            Held::Streaming(body) => body,
            Held::Whole(bytes) => full(bytes),
        }
    }
}

impl Credentials {
    pub fn new(store: Arc<CredentialStore>, placeholders: Placeholders) -> Credentials {
        let tokens = store
            .configs()
            .filter_map(|c| match store.scheme(&c.name) {
                Some(Scheme::OAuth2(oauth)) => Some((c.name.clone(), TokenCache::new(oauth.grant))),
                _ => None,
            })
            .collect();
        let redactors = Redactors::new(store.configs().map(|c| c.name.as_str()));
        Credentials {
            store,
            placeholders,
            indexes: Mutex::new(HashMap::new()),
            tokens,
            endpoint: None,
            redactors,
        }
    }

    /// Lets `oauth2` credentials fetch tokens through `endpoint`.
    pub fn with_token_endpoint(mut self, endpoint: TokenEndpoint) -> Credentials {
        self.endpoint = Some(endpoint);
        self
    }

    /// Keeps the refresh tokens `oauth2` endpoints rotate to in `kept`, and
    /// starts from those kept by an earlier run.
    pub fn with_kept_tokens(mut self, kept: &Arc<KeptTokens>) -> Credentials {
        for (name, cache) in &mut self.tokens {
            if let Some(Scheme::OAuth2(oauth)) = self.store.scheme(name) {
                *cache = TokenCache::keeping(oauth.grant, kept.for_credential(name));
            }
        }
        self
    }

    /// Re-reads rotated secret files; called about once a second.
    pub fn reload(&self) {
        let report = self.store.reload_changed();
        for err in &report.errors {
            tracing::warn!(%err, "credential not reloaded; the previous secret stays");
        }
        if !report.reloaded.is_empty() {
            tracing::info!(credentials = ?report.reloaded, "credentials rotated");
            lock(&self.indexes).clear();
            for credential in &report.reloaded {
                self.redactors.forget(credential);
            }
        }
    }

    /// The placeholder environment of a sandbox under `policy`.
    pub fn env(&self, sandbox: &str, policy: &CompiledPolicy) -> Vec<(String, String)> {
        let bound: Vec<_> = self.bound(policy).collect();
        self.placeholders.env(sandbox, bound)
    }

    /// Decides and, when the request carries a placeholder it may carry,
    /// injects the secret into `headers` / `uri` / the body. Returns the
    /// body to forward: `body` itself, or the body read whole (and
    /// rewritten) when it had to be checked or signed.
    pub async fn apply(
        &self,
        request: Request<'_>,
        headers: &mut HeaderMap,
        uri: &mut Uri,
        body: Body,
    ) -> (Outcome, Body) {
        let host = request.host;
        let bindings = &request.policy.bindings;
        let (outcome, body) = self.placeholders_in(request, headers, uri, body).await;
        if let Outcome::Untouched = outcome {
            // No placeholder: toward a host a bound credential covers,
            // the sandbox's own authentication goes all the same.
            for credential in bindings.covering(host) {
                let scheme = self.store.scheme(credential);
                if let Some(Err(_)) = scheme.map(|s| s.strip_sandbox_auth(headers, uri)) {
                    return (refused("injection_failed", credential), body);
                }
            }
        }
        (outcome, body)
    }

    /// Finds placeholders and swaps in the one credential they name, or
    /// refuses.
    async fn placeholders_in(
        &self,
        request: Request<'_>,
        headers: &mut HeaderMap,
        uri: &mut Uri,
        body: Body,
    ) -> (Outcome, Body) {
        let mut held = Held::Streaming(body);
        if self.store.configs().next().is_none() {
            return (Outcome::Untouched, held.into_body());
        }
        let Some(index) = self.index(request.sandbox) else {
            return (Outcome::Untouched, held.into_body());
        };
        let mut found = index.scan(headers, uri);
        let bindings = &request.policy.bindings;
        if bindings.any_body() {
            let bytes = match held.read().await {
                Ok(bytes) => bytes,
                Err(detail) => return (too_large(String::new(), detail), full(Bytes::new())),
            };
            found.extend(index.scan_body(&bytes));
            held = Held::Whole(bytes);
        }
        if found.is_empty() {
            return (Outcome::Untouched, held.into_body());
        }
        match decide(request.host, request.transport, &found, bindings) {
            Binding::None => (Outcome::Untouched, held.into_body()),
            Binding::Refuse { reason, credential } => {
                (Outcome::Refused { reason, credential }, held.into_body())
            }
            Binding::Inject { credential } => {
                let in_body = bindings.allows_body(&credential)
                    && found
                        .iter()
                        .any(|f| f.credential == credential && f.location == Location::Body);
                let placeholder = index.placeholder(&credential);
                let to = Injection {
                    credential: &credential,
                    placeholder,
                    in_body,
                };
                self.inject(request, to, headers, uri, held).await
            }
        }
    }

    /// Injects `credential` again into one hop of a redirect Sluice
    /// follows (`headers` and `uri` as the hop sends them, `body` the
    /// kept body or none), where the binding's decision allows it for the
    /// hop's host and transport; the sandbox's own authentication never
    /// goes (the scheme strips it, as on the first request). Anything but
    /// `Injected` means: do not send the hop.
    pub async fn reinject(
        &self,
        request: Request<'_>,
        credential: &str,
        headers: &mut HeaderMap,
        uri: &mut Uri,
        body: Option<Bytes>,
    ) -> (Outcome, Body) {
        let held = match body {
            Some(bytes) => Held::Whole(bytes),
            None => Held::Streaming(super::respond::empty()),
        };
        // The same decision as for a placeholder the sandbox sent there.
        let found = [crate::credentials::Found {
            credential: credential.to_owned(),
            location: Location::Header(hyper::header::AUTHORIZATION),
        }];
        let bindings = &request.policy.bindings;
        match decide(request.host, request.transport, &found, bindings) {
            Binding::Inject { credential } => {
                let index = self.index(request.sandbox);
                let to = Injection {
                    credential: &credential,
                    placeholder: index.as_deref().and_then(|i| i.placeholder(&credential)),
                    in_body: false,
                };
                self.inject(request, to, headers, uri, held).await
            }
            Binding::Refuse { reason, credential } => {
                (Outcome::Refused { reason, credential }, held.into_body())
            }
            Binding::None => (Outcome::Untouched, held.into_body()),
        }
    }

    async fn inject(
        &self,
        request: Request<'_>,
        to: Injection<'_>,
        headers: &mut HeaderMap,
        uri: &mut Uri,
        held: Held,
    ) -> (Outcome, Body) {
        let Injection {
            credential,
            placeholder,
            in_body,
        } = to;
        let (Some(secret), Some(scheme), Some(config)) = (
            self.store.secret(credential),
            self.store.scheme(credential),
            self.store.config(credential),
        ) else {
            return (refused("unknown_credential", credential), held.into_body());
        };
        // The sandbox's placeholder as its index holds it (derived when the
        // index was built); derived here only where there is none.
        let derived;
        let placeholder = match placeholder {
            Some(placeholder) => placeholder,
            None => {
                derived = self.placeholders.placeholder(
                    request.sandbox,
                    credential,
                    &config.placeholder,
                    secret.len(),
                );
                derived.as_str()
            }
        };
        // What goes upstream in place of the placeholder: the secret, or
        // for oauth2 an access token.
        let value = match scheme {
            Scheme::OAuth2(oauth) => {
                let (Some(cache), Some(endpoint)) = (self.tokens.get(credential), &self.endpoint)
                else {
                    let err = TokenError::Unreachable("no token endpoint client".to_owned());
                    return (token_failed(credential, oauth, &err), held.into_body());
                };
                let client_secret = self.store.extra(credential, CLIENT_SECRET);
                // Owned: the fetch runs in a task of its own (TokenCache::get).
                let (endpoint, scheme) = (endpoint.clone(), oauth.clone());
                // Boxed with an explicit `Send`: the compiler cannot prove
                // it through the generic closure of the cache on its own.
                let fetch = move |refresh: Arc<Secret>| -> TokenFuture {
                    Box::pin(async move {
                        endpoint
                            .fetch(&scheme, &refresh, client_secret.as_deref())
                            .await
                    })
                };
                let fetched = cache.get(&secret, fetch).await;
                match fetched {
                    Ok(token) => token,
                    Err(err) => {
                        let endpoint = &oauth.token_url;
                        tracing::warn!(credential, %endpoint, %err, "no access token");
                        return (token_failed(credential, oauth, &err), held.into_body());
                    }
                }
            }
            _ => secret.clone(),
        };
        // What a body placeholder becomes: what it stands for, since the
        // upstream may store the body and hand it back (for SigV4 the
        // access key id, never the signing key).
        let body_value = match config.scheme.body_value() {
            _ if !in_body => None,
            Some(BodyValue::AccessKeyId) => self.store.extra(credential, ACCESS_KEY_ID),
            Some(BodyValue::Secret | BodyValue::AccessToken) => Some(value.clone()),
            None => None,
        };
        if in_body && body_value.is_none() {
            // Binding compilation refuses `allow_in_body` without a value.
            tracing::warn!(credential, "no value for a placeholder in the body");
            return (refused("injection_failed", credential), held.into_body());
        }
        let mut body = None;
        let outgoing = if in_body || scheme.needs_body() {
            let bytes = match held.read().await {
                Ok(bytes) => bytes,
                Err(detail) => {
                    return (too_large(credential.to_owned(), detail), full(Bytes::new()));
                }
            };
            let replaced = body_value
                .as_ref()
                .and_then(|v| replace(&bytes, placeholder.as_bytes(), v.expose()));
            // The http types own the copy they are given; it cannot be zeroized.
            let bytes = replaced.map_or(bytes, |r| Bytes::from(r.to_vec()));
            headers.remove(TRANSFER_ENCODING);
            headers.insert(CONTENT_LENGTH, HeaderValue::from(bytes.len()));
            body = Some(bytes.clone());
            Held::Whole(bytes)
        } else {
            held
        };
        let (access_key_id, session_token, client_secret) = (
            self.store.extra(credential, ACCESS_KEY_ID),
            self.store.extra(credential, SESSION_TOKEN),
            self.store.extra(credential, CLIENT_SECRET),
        );
        let keys = access_key_id.as_deref().map(|id| SigV4Keys {
            access_key_id: id,
            session_token: session_token.as_deref(),
        });
        let context = RequestContext {
            method: request.method,
            now_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            authority: request.authority,
            sigv4: keys.as_ref(),
            body: body.as_deref(),
        };
        match scheme.rewrite_head(&value, placeholder, &context, headers, uri) {
            Ok(()) => {
                let sources = Sources {
                    value: &value,
                    secret: &secret,
                    client_secret: client_secret.as_ref(),
                    // What the scheme redacts besides the value: the keys
                    // exactly when it was given them to sign with.
                    access_key_id: access_key_id.as_ref(),
                    session_token: keys.as_ref().and(session_token.as_ref()),
                };
                let needles = self.redactors.get(credential, sources, || {
                    let mut redactions = scheme.redactions(&value, keys.as_ref());
                    // Secrets the request did not carry are redacted too:
                    // an upstream has no business echoing them either.
                    for other in [Some(&secret), client_secret.as_ref()]
                        .into_iter()
                        .flatten()
                    {
                        redactions.add(other);
                    }
                    redactions
                });
                let outcome = Outcome::Injected {
                    credential: credential.to_owned(),
                    needles,
                    token: matches!(scheme, Scheme::OAuth2(_)).then(|| value.clone()),
                    whole: match &outgoing {
                        Held::Whole(bytes) => Some(bytes.clone()),
                        Held::Streaming(_) => None,
                    },
                };
                (outcome, outgoing.into_body())
            }
            Err(err) => {
                tracing::warn!(credential, class = err.class(), %err, "credential not injected");
                (
                    refused("injection_failed", credential),
                    outgoing.into_body(),
                )
            }
        }
    }

    /// The upstream answered 401 to a request that carried `token` (see
    /// [`TokenCache::rejected`]): the next request may fetch a new one.
    pub fn rejected(&self, credential: &str, token: &Arc<Secret>) {
        if let Some(cache) = self.tokens.get(credential) {
            cache.rejected(token);
        }
    }

    /// The credentials a policy binds, with their secrets' lengths.
    fn bound<'a>(
        &'a self,
        policy: &'a CompiledPolicy,
    ) -> impl Iterator<Item = (&'a crate::credentials::CredentialConfig, usize)> + 'a {
        policy.credentials.iter().filter_map(|binding| {
            let config = self.store.config(&binding.credential)?;
            let len = self.store.secret(&binding.credential)?.len();
            Some((config, len))
        })
    }

    fn index(&self, sandbox: &str) -> Option<Arc<PlaceholderIndex>> {
        if let Some(index) = lock(&self.indexes).get(sandbox) {
            return Some(index.clone());
        }
        // Every credential, bound or not: a placeholder sent where its
        // policy does not bind it is refused, not ignored.
        let all: Vec<_> = self
            .store
            .configs()
            .filter_map(|c| Some((c, self.store.secret(&c.name)?.len())))
            .collect();
        let index = Arc::new(PlaceholderIndex::for_sandbox(&self.placeholders, sandbox, all).ok()?);
        let mut cache = lock(&self.indexes);
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(sandbox.to_owned(), index.clone());
        Some(index)
    }
}

/// Reads `body` to its end, at most [`MAX_BODY`] bytes. Trailers are
/// dropped. (A frame loop rather than `http_body_util::Limited`, whose error
/// conversion defeats the compiler's `Send` proof for the handler future.)
async fn read_whole(mut body: Body) -> Result<Bytes, String> {
    let mut buf = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| "the request body was cut short".to_owned())?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if buf.len() + data.len() > MAX_BODY {
            super::respond::drain(&mut body).await;
            return Err(format!(
                "the request body is larger than {} KiB, the most Sluice reads to check for placeholders or to sign",
                MAX_BODY / 1024
            ));
        }
        buf.extend_from_slice(&data);
    }
    Ok(Bytes::from(buf))
}

fn refused(reason: &'static str, credential: &str) -> Outcome {
    Outcome::Refused {
        reason,
        credential: credential.to_owned(),
    }
}

/// The sandbox learns which credential failed and how, not where its
/// endpoint is: a token URL may carry a key in its query, and its host and
/// the network's words are the operator's business.
fn token_failed(credential: &str, oauth: &OAuth2Scheme, err: &TokenError) -> Outcome {
    Outcome::Failed {
        status: StatusCode::BAD_GATEWAY,
        reason: TOKEN_ENDPOINT_FAILED,
        credential: credential.to_owned(),
        detail: format!(
            "the token endpoint of credential {credential} failed: {}",
            err.for_sandbox()
        ),
        log: format!(
            "the token endpoint {} of credential {credential} failed: {err}",
            oauth.token_url
        ),
    }
}

fn too_large(credential: String, detail: String) -> Outcome {
    Outcome::Failed {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        reason: BODY_TOO_LARGE,
        credential,
        log: detail.clone(),
        detail,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
#[path = "credential_tests.rs"]
mod tests;
