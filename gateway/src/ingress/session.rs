//! How a viewer shows who they are: a token once in the URL
//! (`?sluice_token=`), exchanged for an HttpOnly session cookie and a
//! redirect to the clean URL, so the token leaves the address bar, the
//! history and the app's logs; or a bearer token on every request (API
//! clients). A URL token is taken once: shown again, it is refused, so a
//! link copied out of a history or a log opens nothing.
//!
//! Sessions live in memory (a restart asks viewers to open the app again
//! from the control plane); each is bound to one app and ends when its
//! token would have.

use std::{collections::HashMap, sync::Mutex};

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use hyper::header::{self, HeaderMap, HeaderValue};
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use super::token::Viewer;

/// The query parameter a control plane puts its token in.
pub const QUERY_PARAM: &str = "sluice_token";

/// Sessions (and spent URL tokens) held at most; beyond it new exchanges
/// are refused until old ones expire.
pub const MAX_SESSIONS: usize = 100_000;

/// `SameSite` of the session cookie (`ingress.cookie_same_site`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum SameSite {
    Strict,
    /// Sent on top-level navigations from other sites (a link from the
    /// control plane), not on their subrequests.
    #[default]
    Lax,
    /// Needed when the control plane frames the apps from another site
    /// (a framed page's cookies are third-party); sent `Partitioned`.
    None,
}

/// The session cookie's name: `__Host-` so that no sibling host under
/// the apps domain can set or shadow it (browsers refuse a `__Host-`
/// cookie with a `Domain`); one per app when all apps share a host.
pub fn cookie_name(shared_host: bool, app: &str) -> String {
    if shared_host {
        format!("__Host-sluice-session-{app}")
    } else {
        "__Host-sluice-session".to_owned()
    }
}

/// The `Set-Cookie` for a new session.
pub fn set_cookie(name: &str, id: &str, max_age: u64, same_site: SameSite) -> HeaderValue {
    let site = match same_site {
        SameSite::Strict => "Strict",
        SameSite::Lax => "Lax",
        SameSite::None => "None; Partitioned",
    };
    let v = format!("{name}={id}; Path=/; Max-Age={max_age}; HttpOnly; Secure; SameSite={site}");
    HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static("invalid=1"))
}

/// A token in the query, and the path and query without it.
/// `Err(())`: the parameter is there but not a plausible token (a JWT
/// is base64url and dots: nothing to decode).
#[expect(clippy::result_unit_err, reason = "the caller answers 401 malformed")]
pub fn query_token(path_and_query: &str) -> Result<Option<(String, String)>, ()> {
    let Some((path, query)) = path_and_query.split_once('?') else {
        return Ok(None);
    };
    let mut token = None;
    let mut kept = Vec::new();
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k != QUERY_PARAM {
            kept.push(pair);
            continue;
        }
        let plausible = !v.is_empty()
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !plausible || token.is_some() {
            return Err(());
        }
        token = Some(v.to_owned());
    }
    let Some(token) = token else {
        return Ok(None);
    };
    let clean = if kept.iter().all(|p| p.is_empty()) {
        path.to_owned()
    } else {
        format!("{path}?{}", kept.join("&"))
    };
    Ok(Some((token, clean)))
}

/// The value of cookie `name` among the request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// The token of an `Authorization: Bearer` header.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExchangeError {
    #[error("this link's token was used already; open the app again from where you found it")]
    Reused,
    #[error("the ingress holds too many sessions; try again later")]
    Full,
}

impl ExchangeError {
    pub fn reason(&self) -> &'static str {
        match self {
            ExchangeError::Reused => "token_reused",
            ExchangeError::Full => "sessions_full",
        }
    }
}

struct Held {
    viewer: Viewer,
    app: String,
}

#[derive(Default)]
struct Inner {
    sessions: HashMap<String, Held>,
    /// SHA-256 of URL tokens exchanged, with their expiry.
    spent: HashMap<[u8; 32], u64>,
}

/// Viewer sessions by cookie value.
#[derive(Default)]
pub struct Sessions(Mutex<Inner>);

impl Sessions {
    /// A session for `viewer` on `app`, from the URL token `token`
    /// (verified by the caller), at `now` (Unix seconds).
    pub fn exchange(
        &self,
        token: &str,
        viewer: Viewer,
        app: &str,
        now: u64,
    ) -> Result<String, ExchangeError> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut inner = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if inner.spent.contains_key(&digest) {
            return Err(ExchangeError::Reused);
        }
        if inner.sessions.len() >= MAX_SESSIONS || inner.spent.len() >= MAX_SESSIONS {
            inner.sessions.retain(|_, s| s.viewer.exp > now);
            inner.spent.retain(|_, exp| *exp > now);
            if inner.sessions.len() >= MAX_SESSIONS || inner.spent.len() >= MAX_SESSIONS {
                return Err(ExchangeError::Full);
            }
        }
        let id = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>());
        inner.spent.insert(digest, viewer.exp.max(now));
        inner.sessions.insert(
            id.clone(),
            Held {
                viewer,
                app: app.to_owned(),
            },
        );
        Ok(id)
    }

    /// The viewer of session `id` on `app`, while it lasts.
    pub fn get(&self, id: &str, app: &str, now: u64) -> Option<Viewer> {
        let mut inner = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let held = inner.sessions.get(id)?;
        if held.viewer.exp <= now {
            inner.sessions.remove(id);
            return None;
        }
        (held.app == app).then(|| held.viewer.clone())
    }

    /// Ends every session of `app` (unpublished).
    pub fn forget_app(&self, app: &str) {
        let mut inner = self.0.lock().unwrap_or_else(|e| e.into_inner());
        inner.sessions.retain(|_, s| s.app != app);
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
