//! Credential binding: finding the sandbox's placeholders in a request and
//! deciding, purely, whether to inject a secret or refuse the request.
//!
//! [`PlaceholderIndex`] is built once per sandbox (one Aho-Corasick automaton
//! over all of that sandbox's placeholders) and scans header values and the
//! query string. Because SDKs send basic auth as base64, `Authorization` /
//! `Proxy-Authorization: Basic …` values are also scanned decoded, and so is a
//! percent-encoded query. Bodies are the caller's: when the policy has a
//! binding with `allow_in_body` ([`Bindings::any_body`]) it scans the body
//! with [`PlaceholderIndex::scan_body`].
//!
//! [`decide`] then applies, in order (first match wins):
//!
//! | # | condition                                                            | result                 |
//! |---|----------------------------------------------------------------------|------------------------|
//! | 1 | no placeholder found                                                 | `None`                 |
//! | 2 | a found credential's hosts (narrowed by its binding) exclude the host | `Refuse exfiltration`  |
//! | – | body occurrences of credentials whose binding lacks `allow_in_body` are set aside (forwarded as they are: a placeholder is worthless outside Sluice) | |
//! | 3 | nothing left                                                         | `None`                 |
//! | 4 | placeholders of more than one credential                             | `Refuse ambiguous`     |
//! | 5 | the policy has no binding for the credential                         | `Refuse not_bound`     |
//! | 6 | plain HTTP and the binding lacks `allow_plain_http`                  | `Refuse plain_http`    |
//! | 7 | plain HTTP to an address the name does not resolve to                | `Refuse plain_http_address` |
//! | 8 | otherwise                                                            | `Inject`               |
//!
//! Over TLS the upstream's certificate is checked against the name, so the
//! secret reaches only the name's owner whatever address the sandbox dialed;
//! over plain HTTP nothing but the address stands for the name, and a
//! sandbox could dial any address with the bound name in its `Host` (rule 7).
//!
//! Exfiltration is checked first, over every location including the body,
//! so that an attempt to send a placeholder to a foreign host is always
//! reported as such, whatever else the request does.

use std::collections::BTreeMap;

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use hyper::http::header::{AUTHORIZATION, HeaderName, PROXY_AUTHORIZATION};
use hyper::http::{HeaderMap, Uri};
use thiserror::Error;
use zeroize::Zeroizing;

use super::config::CredentialConfig;
use super::hosts::{HostPatternError, HostSet};
use super::percent::pct_decode;
use super::placeholder::Placeholders;
use crate::policy::network::CompileError;
use crate::policy::raw::CredentialBinding;

pub const EXFILTRATION: &str = "exfiltration";
pub const AMBIGUOUS: &str = "ambiguous";
pub const NOT_BOUND: &str = "not_bound";
pub const PLAIN_HTTP: &str = "plain_http";
pub const PLAIN_HTTP_ADDRESS: &str = "plain_http_address";

/// The most redirects a binding may have Sluice follow (`follow_redirects`).
pub const MAX_FOLLOW_REDIRECTS: u8 = 3;

/// How a request would reach its upstream, as far as a secret in it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// TLS: the upstream's certificate is verified against the name.
    Tls,
    /// Plain HTTP to an address Sluice's resolver gives for the name.
    Plain,
    /// Plain HTTP to an address the name does not resolve to.
    PlainElsewhere,
}

/// The credential decision for one request.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    /// No placeholder: forward untouched.
    None,
    /// Apply the credential's scheme (last request stage).
    Inject { credential: String },
    /// Deny; `reason` is one of the constants above (a metric label).
    /// For `ambiguous`, `credential` lists the names joined by `,`.
    Refuse {
        reason: &'static str,
        credential: String,
    },
}

/// Where a placeholder was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Header(HeaderName),
    Query,
    Body,
}

/// One placeholder occurrence, by credential (never the placeholder text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub credential: String,
    pub location: Location,
}

#[derive(Debug, Error)]
pub enum BindingError {
    #[error("building the placeholder matcher failed: {0}")]
    Matcher(#[from] aho_corasick::BuildError),
    #[error("policy binds credential {0:?}, which the daemon config does not define")]
    UnknownCredential(String),
    #[error("policy binds credential {0:?} more than once")]
    DuplicateBinding(String),
    #[error(
        "binding for credential {0:?}: `allow_in_body` is refused for an `hmac` credential: its secret is a signing key, so a placeholder in a body has no value it may be replaced with; drop `allow_in_body`"
    )]
    NoBodyValue(String),
    #[error("binding for credential {credential:?}: {source}")]
    Host {
        credential: String,
        source: HostPatternError,
    },
}

impl BindingError {
    /// Metric label.
    pub fn class(&self) -> &'static str {
        match self {
            BindingError::Matcher(_) => "internal",
            _ => "policy",
        }
    }
}

/// Basic credentials from SDKs come padded or not; accept both.
const B64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// One sandbox's placeholders, ready to scan requests.
pub struct PlaceholderIndex {
    matcher: Option<AhoCorasick>,
    /// Pattern id → credential name.
    credentials: Vec<String>,
    /// Pattern id → the placeholder itself, so an injection swaps the one
    /// found without deriving it again (an HMAC per request).
    placeholders: Vec<String>,
    /// The shortest placeholder's length: a shorter text (most header
    /// values) holds none, and is not searched.
    shortest: usize,
}

impl std::fmt::Debug for PlaceholderIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlaceholderIndex")
            .field("credentials", &self.credentials)
            .finish_non_exhaustive()
    }
}

impl PlaceholderIndex {
    /// `(placeholder, credential)` pairs; empty placeholders are ignored
    /// (they would match everywhere).
    pub fn new(entries: impl IntoIterator<Item = (String, String)>) -> Result<Self, BindingError> {
        let (placeholders, credentials): (Vec<String>, Vec<String>) =
            entries.into_iter().filter(|(p, _)| !p.is_empty()).unzip();
        if placeholders.is_empty() {
            return Ok(Self {
                matcher: None,
                credentials,
                placeholders,
                shortest: 0,
            });
        }
        let shortest = placeholders.iter().map(String::len).min().unwrap_or(0);
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&placeholders)?;
        Ok(Self {
            matcher: Some(matcher),
            credentials,
            placeholders,
            shortest,
        })
    }

    /// The placeholder this index finds for `credential`.
    pub fn placeholder(&self, credential: &str) -> Option<&str> {
        let at = self.credentials.iter().position(|c| c == credential)?;
        self.placeholders.get(at).map(String::as_str)
    }

    /// The index for `sandbox` over `(credential, secret length)` pairs. Pass
    /// every daemon credential, not only the bound ones, so a placeholder of
    /// an unbound credential is refused as such rather than passed through.
    pub fn for_sandbox<'a>(
        placeholders: &Placeholders,
        sandbox: &str,
        creds: impl IntoIterator<Item = (&'a CredentialConfig, usize)>,
    ) -> Result<Self, BindingError> {
        Self::new(creds.into_iter().map(|(c, len)| {
            (
                placeholders.placeholder(sandbox, &c.name, &c.placeholder, len),
                c.name.clone(),
            )
        }))
    }

    /// Credential names whose placeholders occur in `haystack`, deduplicated.
    pub fn scan_bytes(&self, haystack: &[u8]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let Some(m) = &self.matcher else {
            return out;
        };
        if haystack.len() < self.shortest {
            return out;
        }
        for hit in m.find_iter(haystack) {
            if let Some(c) = self.credentials.get(hit.pattern().as_usize())
                && !out.contains(c)
            {
                out.push(c.clone());
            }
        }
        out
    }

    /// Placeholder occurrences in a (whole) request body.
    pub fn scan_body(&self, body: &[u8]) -> Vec<Found> {
        self.scan_bytes(body)
            .into_iter()
            .map(|credential| Found {
                credential,
                location: Location::Body,
            })
            .collect()
    }

    /// Every placeholder occurrence in header values and the query string,
    /// sorted and deduplicated.
    pub fn scan(&self, headers: &HeaderMap, uri: &Uri) -> Vec<Found> {
        let mut found = Vec::new();
        if self.matcher.is_none() {
            return found;
        }
        for (name, value) in headers {
            let mut hits = self.scan_bytes(value.as_bytes());
            if (name == AUTHORIZATION || name == PROXY_AUTHORIZATION)
                && let Some(decoded) = basic_payload(value.as_bytes())
            {
                hits.extend(self.scan_bytes(&decoded));
            }
            found.extend(hits.into_iter().map(|credential| Found {
                credential,
                location: Location::Header(name.clone()),
            }));
        }
        if let Some(q) = uri.query() {
            let mut hits = self.scan_bytes(q.as_bytes());
            if q.contains(['%', '+']) {
                hits.extend(self.scan_bytes(&Zeroizing::new(pct_decode(q))));
            }
            found.extend(hits.into_iter().map(|credential| Found {
                credential,
                location: Location::Query,
            }));
        }
        // Headers (by name) before the query, then by credential.
        found.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
        found.dedup();
        found
    }
}

fn sort_key(f: &Found) -> (u8, &str, &str) {
    match &f.location {
        Location::Header(n) => (0, n.as_str(), &f.credential),
        Location::Query => (1, "", &f.credential),
        Location::Body => (2, "", &f.credential),
    }
}

/// The decoded `user:password` of a `Basic` credential, if it is one.
fn basic_payload(value: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
    let (scheme, rest) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"basic ") {
        return None;
    }
    B64.decode(rest.trim_ascii()).ok().map(Zeroizing::new)
}

#[derive(Debug, Clone)]
struct Bound {
    /// Empty: no narrowing.
    hosts: HostSet,
    allow_in_body: bool,
    allow_plain_http: bool,
    /// Redirects Sluice follows itself (at most [`MAX_FOLLOW_REDIRECTS`]).
    follow_redirects: u8,
}

#[derive(Debug, Clone)]
struct Entry {
    hosts: HostSet,
    /// Whether the scheme has a value a body placeholder may become
    /// ([`super::config::SchemeConfig::body_value`]).
    body_value: bool,
    bound: Option<Bound>,
}

/// The daemon's credentials' host sets joined with one policy's bindings,
/// compiled once per policy (re)load.
#[derive(Debug, Clone, Default)]
pub struct Bindings {
    entries: BTreeMap<String, Entry>,
}

impl Bindings {
    pub fn compile<'a>(
        credentials: impl IntoIterator<Item = &'a CredentialConfig>,
        policy: &[CredentialBinding],
    ) -> Result<Self, Vec<BindingError>> {
        let mut errors = Vec::new();
        let mut entries = BTreeMap::new();
        for c in credentials {
            // Invalid host patterns were already reported by config
            // validation; an unparsable set here matches nothing (fail closed).
            let hosts = HostSet::parse(&c.hosts).unwrap_or_default();
            let body_value = c.scheme.body_value().is_some();
            entries.insert(
                c.name.clone(),
                Entry {
                    hosts,
                    body_value,
                    bound: None,
                },
            );
        }
        for b in policy {
            let Some(entry) = entries.get_mut(&b.credential) else {
                errors.push(BindingError::UnknownCredential(b.credential.clone()));
                continue;
            };
            if entry.bound.is_some() {
                errors.push(BindingError::DuplicateBinding(b.credential.clone()));
                continue;
            }
            if b.allow_in_body && !entry.body_value {
                errors.push(BindingError::NoBodyValue(b.credential.clone()));
                continue;
            }
            match HostSet::parse(&b.hosts) {
                Ok(hosts) => {
                    entry.bound = Some(Bound {
                        hosts,
                        allow_in_body: b.allow_in_body,
                        allow_plain_http: b.allow_plain_http,
                        // More is a policy error (`follow_redirects_error`);
                        // never more here, whoever compiled it.
                        follow_redirects: b.follow_redirects.min(MAX_FOLLOW_REDIRECTS),
                    });
                }
                Err(es) => errors.extend(es.into_iter().map(|source| BindingError::Host {
                    credential: b.credential.clone(),
                    source,
                })),
            }
        }
        if errors.is_empty() {
            Ok(Self { entries })
        } else {
            Err(errors)
        }
    }

    /// Whether the caller should scan request bodies for this credential.
    pub fn allows_body(&self, credential: &str) -> bool {
        self.bound(credential).is_some_and(|b| b.allow_in_body)
    }

    /// Whether any binding lets placeholders be found in bodies, so bodies
    /// must be scanned.
    pub fn any_body(&self) -> bool {
        self.entries
            .values()
            .any(|e| e.bound.as_ref().is_some_and(|b| b.allow_in_body))
    }

    /// Credentials the policy binds, e.g. to build a sandbox's env.
    pub fn bound_credentials(&self) -> impl Iterator<Item = &str> {
        self.entries
            .iter()
            .filter(|(_, e)| e.bound.is_some())
            .map(|(n, _)| n.as_str())
    }

    /// How many redirects Sluice follows for a request `credential` was
    /// injected into (0: every 3xx goes to the sandbox unfollowed).
    pub fn follow_redirects(&self, credential: &str) -> u8 {
        self.bound(credential).map_or(0, |b| b.follow_redirects)
    }

    /// Whether `credential` may be injected over plain HTTP.
    pub fn allows_plain_http(&self, credential: &str) -> bool {
        self.bound(credential).is_some_and(|b| b.allow_plain_http)
    }

    /// Whether `credential` may be sent to `host` (bare, no port): in the
    /// credential's own hosts and, where its binding narrows them, in
    /// those too.
    pub fn sends_to(&self, credential: &str, host: &str) -> bool {
        self.bound(credential).is_some() && self.host_allowed(credential, host)
    }

    fn bound(&self, credential: &str) -> Option<&Bound> {
        self.entries.get(credential)?.bound.as_ref()
    }

    /// The bound credentials whose hosts (narrowed by their binding)
    /// include `host`: toward it, the sandbox's own authentication is
    /// stripped whether or not it sent a placeholder.
    pub fn covering<'a>(&'a self, host: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.entries
            .iter()
            .filter(|(_, e)| e.bound.is_some())
            .map(|(name, _)| name.as_str())
            .filter(move |name| self.host_allowed(name, host))
    }

    fn host_allowed(&self, credential: &str, host: &str) -> bool {
        let Some(e) = self.entries.get(credential) else {
            return false;
        };
        let narrowed = match &e.bound {
            Some(b) if !b.hosts.is_empty() => b.hosts.matches(host),
            _ => true,
        };
        e.hosts.matches(host) && narrowed
    }
}

/// The pure credential decision; see the module docs for the order.
/// `host` is the name the connection was decided on (bare, no port).
pub fn decide(host: &str, transport: Transport, found: &[Found], bindings: &Bindings) -> Binding {
    let mut names: Vec<&str> = found.iter().map(|f| f.credential.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        return Binding::None;
    }
    if let Some(bad) = names.iter().find(|c| !bindings.host_allowed(c, host)) {
        return refuse(EXFILTRATION, bad);
    }
    names.retain(|c| {
        found.iter().any(|f| {
            f.credential == *c && (f.location != Location::Body || bindings.allows_body(c))
        })
    });
    let Some(&first) = names.first() else {
        return Binding::None;
    };
    if names.len() > 1 {
        return refuse(AMBIGUOUS, &names.join(","));
    }
    let Some(bound) = bindings.bound(first) else {
        return refuse(NOT_BOUND, first);
    };
    if transport != Transport::Tls && !bound.allow_plain_http {
        return refuse(PLAIN_HTTP, first);
    }
    if transport == Transport::PlainElsewhere {
        return refuse(PLAIN_HTTP_ADDRESS, first);
    }
    Binding::Inject {
        credential: first.to_owned(),
    }
}

/// The policy error of binding `i` when its `follow_redirects` is above
/// [`MAX_FOLLOW_REDIRECTS`] (at `credentials[i].follow_redirects`).
pub fn follow_redirects_error(i: usize, binding: &CredentialBinding) -> Option<CompileError> {
    let n = binding.follow_redirects;
    (n > MAX_FOLLOW_REDIRECTS).then(|| CompileError {
        path: format!("credentials[{i}].follow_redirects"),
        message: format!(
            "credential {:?} follows {n} redirects; at most {MAX_FOLLOW_REDIRECTS}",
            binding.credential
        ),
        hint: Some(format!(
            "write a number from 0 (answer every redirect unfollowed) to {MAX_FOLLOW_REDIRECTS}"
        )),
    })
}

fn refuse(reason: &'static str, credential: &str) -> Binding {
    Binding::Refuse {
        reason,
        credential: credential.to_owned(),
    }
}

#[cfg(test)]
#[path = "binding_tests.rs"]
mod tests;
