//! [`Scheme`]: rewriting one request head so it carries the real secret the
//! way the upstream expects, and the redaction needles for its response.
//!
//! [`Scheme::apply`] is pure (request head in, request head out) and runs as
//! the last request stage. It:
//!
//! 1. strips whatever authentication the sandbox sent: `Authorization`,
//!    `Proxy-Authorization`, the scheme's own header (`header`) or query
//!    parameter (`query`);
//! 2. removes every other header value and query parameter that still carries
//!    the placeholder. The secret is written only where the operator's scheme
//!    says, never wherever the sandbox happened to put the placeholder (a
//!    sandbox could otherwise aim the secret at a header the upstream echoes
//!    or logs), and the upstream never sees a placeholder either;
//! 3. writes the secret: `bearer` → `Authorization: Bearer <secret>`,
//!    `header` → `<name>: <template>`, `query` → `<param>=<secret>` (in place
//!    of the sandbox's parameter when it sent one, else appended), `basic` →
//!    `Authorization: Basic base64(<username>:<secret>)`, `hmac` →
//!    `<header>: <prefix><signature>` over a canonical string built from the
//!    request as forwarded (see [`hmac_scheme`]), plus the timestamp header
//!    when configured. Injected headers are marked sensitive so HTTP/2 never
//!    adds them to an HPACK table.
//!
//! `hmac` needs the method, host and time, so it is only applied through
//! [`Scheme::apply_to`]; [`Scheme::apply`] refuses it.
//!
//! The header value and URI handed to `http` types are copies the `http`
//! crate owns and cannot zeroize; every buffer this module builds is.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use hyper::http::header::{AUTHORIZATION, HeaderName, PROXY_AUTHORIZATION};
use hyper::http::uri::PathAndQuery;
use hyper::http::{HeaderMap, HeaderValue, Method, Uri};
use zeroize::Zeroizing;

use super::forbidden_headers::FORBIDDEN_HEADERS;
use super::percent::{pct_decode, pct_encode};
use super::scheme_config::SchemeConfig;
use super::secret::Secret;

#[path = "hmac.rs"]
pub mod hmac_scheme;
pub use super::oauth::OAuth2Scheme;
pub use super::scheme_error::SchemeError;
pub use super::sigv4::{Keys as SigV4Keys, SigV4Scheme};
pub use hmac_scheme::HmacScheme;

const SECRET_MARK: &str = "{secret}";

/// A [`SchemeConfig`] with everything parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheme {
    Bearer,
    Header {
        name: HeaderName,
        /// The template split at each `{secret}`; joined with the secret.
        parts: Vec<String>,
    },
    Query {
        param: String,
    },
    Basic {
        username: String,
    },
    Hmac(HmacScheme),
    /// Applied like `Bearer`, with the access token the caller obtained
    /// (see [`super::oauth`]) in place of the secret.
    OAuth2(OAuth2Scheme),
    SigV4(SigV4Scheme),
}

/// What a scheme may need from the request besides its head: the method,
/// the `Host` the upstream will see, and the current unix time (a
/// parameter so tests are deterministic).
#[derive(Debug, Clone, Copy)]
pub struct RequestContext<'a> {
    pub method: &'a Method,
    pub now_unix: u64,
    /// `sigv4` and `hmac`'s `{host}`: the `Host` the upstream will see
    /// (`name`, or `name:port` on a port not the scheme's default).
    pub authority: &'a str,
    /// `sigv4`: the access key id and session token.
    pub sigv4: Option<&'a SigV4Keys<'a>>,
    /// `sigv4` with `payload: signed`: the whole body, as forwarded.
    pub body: Option<&'a [u8]>,
}

impl Scheme {
    pub fn compile(config: &SchemeConfig) -> Result<Self, SchemeError> {
        match config {
            SchemeConfig::Bearer => Ok(Scheme::Bearer),
            SchemeConfig::Header { name, template } => {
                let header = HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| SchemeError::BadHeaderName(name.clone()))?;
                if FORBIDDEN_HEADERS.contains(&header.as_str()) {
                    return Err(SchemeError::ForbiddenHeader(name.clone()));
                }
                if !template.contains(SECRET_MARK) {
                    return Err(SchemeError::TemplateWithoutSecret);
                }
                if HeaderValue::from_str(&template.replace(SECRET_MARK, "x")).is_err() {
                    return Err(SchemeError::BadTemplate);
                }
                Ok(Scheme::Header {
                    name: header,
                    parts: template.split(SECRET_MARK).map(str::to_owned).collect(),
                })
            }
            SchemeConfig::Query { param } if param.is_empty() => Err(SchemeError::EmptyParam),
            SchemeConfig::Query { param } => Ok(Scheme::Query {
                param: param.clone(),
            }),
            SchemeConfig::Basic { username } if username.contains(':') => {
                Err(SchemeError::UsernameWithColon)
            }
            SchemeConfig::Basic { username } if username.bytes().any(|b| b.is_ascii_control()) => {
                Err(SchemeError::BadUsername)
            }
            SchemeConfig::Basic { username } => Ok(Scheme::Basic {
                username: username.clone(),
            }),
            SchemeConfig::Hmac {
                algorithm,
                header,
                encoding,
                canonical,
                timestamp_header,
                prefix,
            } => HmacScheme::compile(
                *algorithm,
                header,
                *encoding,
                canonical,
                timestamp_header.as_deref(),
                prefix.as_deref(),
            )
            .map(Scheme::Hmac),
            SchemeConfig::OAuth2(c) => OAuth2Scheme::compile(c).map(Scheme::OAuth2),
            SchemeConfig::AwsSigV4(c) => SigV4Scheme::compile(c).map(Scheme::SigV4),
        }
    }

    /// Whether the caller must buffer the request body and pass it in
    /// ([`RequestContext::body`]) before applying this scheme.
    pub fn needs_body(&self) -> bool {
        matches!(self, Scheme::SigV4(s) if s.needs_body())
    }

    /// [`Scheme::apply_to`] without a request context: every scheme but
    /// `hmac`, which fails with [`SchemeError::HmacNeedsRequest`].
    pub fn apply(
        &self,
        secret: &Secret,
        placeholder: &str,
        headers: &mut HeaderMap,
        uri: &mut Uri,
    ) -> Result<Redactions, SchemeError> {
        self.rewrite(secret, placeholder, None, headers, uri)
    }

    /// Rewrites `headers` and `uri` as described in the module docs. On error
    /// the request must not be forwarded: it may already be half-rewritten.
    pub fn apply_to(
        &self,
        secret: &Secret,
        placeholder: &str,
        request: &RequestContext<'_>,
        headers: &mut HeaderMap,
        uri: &mut Uri,
    ) -> Result<Redactions, SchemeError> {
        self.rewrite(secret, placeholder, Some(request), headers, uri)
    }

    /// [`Scheme::apply_to`] without building the redactions: for a caller
    /// that keeps them per credential ([`Scheme::redactions`]), so a
    /// request does not encode the secret again.
    pub fn rewrite_head(
        &self,
        secret: &Secret,
        placeholder: &str,
        request: &RequestContext<'_>,
        headers: &mut HeaderMap,
        uri: &mut Uri,
    ) -> Result<(), SchemeError> {
        self.rewrite_only(secret, placeholder, Some(request), headers, uri)
    }

    /// What [`Scheme::apply_to`] returns for `secret` and `sigv4`: the
    /// secret's forms, the basic-auth pair's base64 for `basic`, and the
    /// SigV4 access key id and session token. Depends on nothing of the
    /// request, so it can be built once per secret.
    pub fn redactions(&self, secret: &Secret, sigv4: Option<&SigV4Keys<'_>>) -> Redactions {
        let basic_pair = match self {
            Scheme::Basic { username } => {
                Some(concat(&[username.as_bytes(), b":", secret.expose()]))
            }
            _ => None,
        };
        let mut redactions =
            Redactions::for_secret(secret, basic_pair.as_ref().map(|p| p.as_slice()));
        if let Some(keys) = sigv4 {
            redactions.add(keys.access_key_id);
            if let Some(token) = keys.session_token {
                redactions.add(token);
            }
        }
        redactions
    }

    fn rewrite(
        &self,
        secret: &Secret,
        placeholder: &str,
        request: Option<&RequestContext<'_>>,
        headers: &mut HeaderMap,
        uri: &mut Uri,
    ) -> Result<Redactions, SchemeError> {
        self.rewrite_only(secret, placeholder, request, headers, uri)?;
        Ok(self.redactions(secret, request.and_then(|r| r.sigv4)))
    }

    fn rewrite_only(
        &self,
        secret: &Secret,
        placeholder: &str,
        request: Option<&RequestContext<'_>>,
        headers: &mut HeaderMap,
        uri: &mut Uri,
    ) -> Result<(), SchemeError> {
        if matches!(self, Scheme::Hmac(_)) && request.is_none() {
            return Err(SchemeError::HmacNeedsRequest);
        }
        if matches!(self, Scheme::SigV4(_)) && request.and_then(|r| r.sigv4).is_none() {
            return Err(SchemeError::SigV4NeedsKeys);
        }
        self.strip_headers(headers);
        remove_placeholder_headers(headers, placeholder.as_bytes());

        let own_param = match self {
            Scheme::Query { param } => Some(param.as_str()),
            _ => None,
        };
        let encoded = own_param.map(|_| Zeroizing::new(pct_encode(secret.expose())));
        rewrite_query(
            uri,
            placeholder.as_bytes(),
            own_param.zip(Some(encoded.as_ref().map(|e| e.as_slice()))),
        )?;

        let value: Option<(HeaderName, Zeroizing<Vec<u8>>)> = match self {
            Scheme::Bearer | Scheme::OAuth2(_) => {
                Some((AUTHORIZATION, concat(&[b"Bearer ", secret.expose()])))
            }
            Scheme::SigV4(s) => {
                let (Some(request), Some(keys)) = (request, request.and_then(|r| r.sigv4)) else {
                    return Err(SchemeError::SigV4NeedsKeys);
                };
                let inputs = super::sigv4::Inputs {
                    method: request.method,
                    authority: request.authority,
                    uri,
                    body: request.body,
                    now: std::time::UNIX_EPOCH + std::time::Duration::from_secs(request.now_unix),
                };
                s.sign(secret, keys, &inputs, headers)?;
                None
            }
            Scheme::Header { name, parts } => {
                let mut v = Zeroizing::new(Vec::new());
                for (i, part) in parts.iter().enumerate() {
                    if i > 0 {
                        v.extend_from_slice(secret.expose());
                    }
                    v.extend_from_slice(part.as_bytes());
                }
                Some((name.clone(), v))
            }
            Scheme::Query { .. } => None,
            Scheme::Hmac(h) => {
                let Some(request) = request else {
                    return Err(SchemeError::HmacNeedsRequest);
                };
                let inputs = hmac_scheme::Inputs {
                    method: request.method,
                    host: request.authority,
                    uri,
                    now_unix: request.now_unix,
                };
                headers.insert(h.header.clone(), h.header_value(secret, &inputs)?);
                if let Some(ts) = &h.timestamp_header {
                    headers.insert(ts.clone(), HeaderValue::from(request.now_unix));
                }
                None
            }
            Scheme::Basic { username } => {
                let pair = concat(&[username.as_bytes(), b":", secret.expose()]);
                let encoded = Zeroizing::new(STANDARD.encode(pair.as_slice()));
                Some((AUTHORIZATION, concat(&[b"Basic ", encoded.as_bytes()])))
            }
        };
        if let Some((name, bytes)) = value {
            let mut v =
                HeaderValue::from_bytes(&bytes).map_err(|_| SchemeError::SecretNotHeaderSafe)?;
            v.set_sensitive(true);
            headers.insert(name, v);
        }
        Ok(())
    }
}

fn concat(parts: &[&[u8]]) -> Zeroizing<Vec<u8>> {
    let mut v = Zeroizing::new(Vec::with_capacity(parts.iter().map(|p| p.len()).sum()));
    for p in parts {
        v.extend_from_slice(p);
    }
    v
}

impl Scheme {
    /// Strips the authentication a sandbox sent toward a host this
    /// credential covers, placeholder or not: `Authorization`,
    /// `Proxy-Authorization`, the scheme's own headers and its query
    /// parameter. The host is the credential's: the sandbox's own
    /// credentials for it never reach it (Sluice's are the ones used).
    pub fn strip_sandbox_auth(
        &self,
        headers: &mut HeaderMap,
        uri: &mut Uri,
    ) -> Result<(), SchemeError> {
        self.strip_headers(headers);
        match self {
            Scheme::Query { param } => rewrite_query(uri, b"", Some((param, None))),
            _ => Ok(()),
        }
    }

    /// Step 1 of [`Scheme::apply`], for the headers.
    fn strip_headers(&self, headers: &mut HeaderMap) {
        headers.remove(AUTHORIZATION);
        headers.remove(PROXY_AUTHORIZATION);
        match self {
            Scheme::Header { name, .. } => {
                headers.remove(name);
            }
            Scheme::Hmac(h) => {
                for name in h.own_headers() {
                    headers.remove(name);
                }
            }
            Scheme::SigV4(_) => {
                for name in super::sigv4::OWN_HEADERS {
                    headers.remove(name);
                }
            }
            _ => {}
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

fn remove_placeholder_headers(headers: &mut HeaderMap, placeholder: &[u8]) {
    let hit: Vec<HeaderName> = headers
        .iter()
        .filter(|(_, v)| contains(v.as_bytes(), placeholder))
        .map(|(n, _)| n.clone())
        .collect();
    for name in hit {
        // Keep the header's other values: only the ones carrying it go.
        let keep: Vec<HeaderValue> = headers
            .get_all(&name)
            .iter()
            .filter(|v| !contains(v.as_bytes(), placeholder))
            .cloned()
            .collect();
        headers.remove(&name);
        for v in keep {
            headers.append(name.clone(), v);
        }
    }
}

/// Drops query pairs carrying the placeholder and, for the query scheme,
/// puts `param=<encoded secret>` where the sandbox's `param` was (first
/// occurrence; later ones dropped) or at the end; with no value, drops
/// every `param` and puts nothing.
fn rewrite_query(
    uri: &mut Uri,
    placeholder: &[u8],
    own: Option<(&str, Option<&[u8]>)>,
) -> Result<(), SchemeError> {
    let query = uri.query().unwrap_or("");
    let mut out = Zeroizing::new(Vec::with_capacity(query.len() + 64));
    let mut placed = false;
    let mut changed = false;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, _) = pair.split_once('=').unwrap_or((pair, ""));
        let is_own = own.is_some_and(|(param, _)| pct_decode(key) == param.as_bytes());
        let carries = contains(pair.as_bytes(), placeholder)
            || contains(&Zeroizing::new(pct_decode(pair)), placeholder);
        if is_own || carries {
            changed = true;
            if let (true, false, Some((param, Some(value)))) = (is_own, placed, own) {
                push_pair(&mut out, param, value);
                placed = true;
            }
            continue;
        }
        if !out.is_empty() {
            out.push(b'&');
        }
        out.extend_from_slice(pair.as_bytes());
    }
    if let (false, Some((param, Some(value)))) = (placed, own) {
        push_pair(&mut out, param, value);
        changed = true;
    }
    if !changed {
        return Ok(());
    }
    let path = uri.path();
    let mut pq = Zeroizing::new(Vec::with_capacity(path.len() + 1 + out.len()));
    pq.extend_from_slice(if path.is_empty() {
        b"/"
    } else {
        path.as_bytes()
    });
    if !out.is_empty() {
        pq.push(b'?');
        pq.extend_from_slice(&out);
    }
    let mut parts = std::mem::take(uri).into_parts();
    parts.path_and_query =
        Some(PathAndQuery::try_from(pq.as_slice()).map_err(|_| SchemeError::BadUri)?);
    *uri = Uri::from_parts(parts).map_err(|_| SchemeError::BadUri)?;
    Ok(())
}

fn push_pair(out: &mut Vec<u8>, param: &str, encoded_value: &[u8]) {
    if !out.is_empty() {
        out.push(b'&');
    }
    out.extend_from_slice(pct_encode(param.as_bytes()).as_slice());
    out.push(b'=');
    out.extend_from_slice(encoded_value);
}

/// The byte strings response redaction must replace: the secret and the
/// encodings an upstream is likely to echo it in (`redact::forms`), the
/// base64 of the secret inside a longer encoded value included.
///
/// Built from the secrets a credential's requests carry ([`Scheme::redactions`]),
/// once for each set of them: the caller keeps the redactor compiled from
/// the needles. The forms are computed when [`Redactions::needles`] is
/// first asked for.
#[derive(Clone, Default)]
pub struct Redactions {
    /// Each secret, and whether its encoded forms are hunted too.
    sources: Vec<(Secret, Expand)>,
    /// The needles, longest first; computed once.
    needles: std::sync::OnceLock<Vec<Secret>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Expand {
    /// The secret and every form of it (`redact::forms`).
    Forms,
    /// Exactly these bytes (an encoding already).
    Verbatim,
}

impl Redactions {
    pub fn for_secret(secret: &Secret, basic_pair: Option<&[u8]>) -> Self {
        let mut out = Self::default();
        out.push(secret.clone(), Expand::Forms);
        // The basic-auth pair, whose base64 is not a substring of the
        // secret's.
        if let Some(pair) = basic_pair {
            for engine in [STANDARD, STANDARD_NO_PAD] {
                out.push(
                    Secret::new(engine.encode(pair).into_bytes()),
                    Expand::Verbatim,
                );
            }
        }
        out
    }

    /// Adds `secret` and its encodings (another secret the request carried).
    pub fn add(&mut self, secret: &Secret) {
        self.push(secret.clone(), Expand::Forms);
    }

    fn push(&mut self, secret: Secret, expand: Expand) {
        let known = |(s, e): &(Secret, Expand)| *e == expand && s.expose() == secret.expose();
        if !secret.is_empty() && !self.sources.iter().any(known) {
            self.sources.push((secret, expand));
            self.needles = std::sync::OnceLock::new();
        }
    }

    fn computed(&self) -> &[Secret] {
        self.needles.get_or_init(|| {
            let mut out: Vec<Secret> = Vec::new();
            for (secret, expand) in &self.sources {
                let forms = match expand {
                    Expand::Forms => crate::redact::forms(secret.expose()),
                    Expand::Verbatim => vec![secret.expose().to_vec()],
                };
                for form in forms {
                    let form = Secret::new(form);
                    if !form.is_empty() && !out.iter().any(|o| o.expose() == form.expose()) {
                        out.push(form);
                    }
                }
            }
            out.sort_by_key(|n| std::cmp::Reverse(n.expose().len()));
            out
        })
    }

    /// Each needle's bytes, longest first so a redactor preferring earlier
    /// needles replaces the widest match.
    pub fn needles(&self) -> impl Iterator<Item = &[u8]> {
        self.computed().iter().map(Secret::expose)
    }

    pub fn len(&self) -> usize {
        self.computed().len()
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }
}

impl std::fmt::Debug for Redactions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactions({} sources)", self.sources.len())
    }
}

#[cfg(test)]
#[path = "scheme_tests.rs"]
mod tests;
