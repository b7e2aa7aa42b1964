//! One viewer request's admission, before anything is forwarded: which
//! publication it names, who the viewer is (a URL token to exchange, a
//! bearer token, or a session cookie), and whether the scope admits them.
//! Every refusal carries its status, a stable reason and a sentence for
//! the page. No I/O: the listener acts on the verdict.

use hyper::{
    StatusCode,
    header::{self, HeaderValue},
    http::request::Parts,
};

use super::{
    route::{self, Miss, RouteBy},
    scope::{self, Access, OwnerId, Scope},
    session::{self, SameSite, Sessions},
    token::{Verifier, Viewer},
};

/// Where a publication's requests go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub name: String,
    pub sandbox: String,
    pub port: u16,
    pub scope: Scope,
    pub owner: Option<OwnerId>,
    /// The sandbox's network namespace; none: the host's.
    pub netns: Option<std::path::PathBuf>,
}

/// The publications as the listener sees them (the daemon's registry and
/// publication table; a map in tests).
pub trait Lookup: Send + Sync + 'static {
    /// The live publication `name` at `now` (Unix seconds).
    fn target(&self, name: &str, now: u64) -> Option<Target>;
}

/// What the ingress does with one request.
#[must_use]
#[derive(Debug)]
pub enum Admission {
    /// Forward as `path`; `viewer` is who asked (none on a public app).
    Forward {
        target: Target,
        path: String,
        viewer: Option<Viewer>,
    },
    /// Answer a redirect: to the clean URL after a token exchange (with
    /// the session cookie), or to `/NAME/` in path routing.
    Redirect {
        location: String,
        cookie: Option<HeaderValue>,
        opened: Option<(Target, Viewer)>,
    },
    Refuse(Refusal),
}

/// A refusal, answered with a page that says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: StatusCode,
    pub reason: &'static str,
    pub message: String,
    /// The publication, once known (for the metric label and audit).
    pub target: Option<Target>,
    pub viewer: Option<String>,
}

impl Refusal {
    fn new(status: StatusCode, reason: &'static str, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            reason,
            message: message.into(),
            target: None,
            viewer: None,
        }
    }
}

/// The settings admission reads.
#[derive(Debug, Clone)]
pub struct Settings {
    pub apps_domain: String,
    pub route_by: RouteBy,
    pub same_site: SameSite,
}

/// Decides one request at `now` (Unix seconds).
pub fn admit(
    settings: &Settings,
    verifier: &Verifier,
    sessions: &Sessions,
    lookup: &dyn Lookup,
    parts: &Parts,
    now: u64,
) -> Admission {
    let Some(authority) = authority(parts) else {
        return Admission::Refuse(Refusal::new(
            StatusCode::BAD_REQUEST,
            "bad_host",
            "the request names no host, or more than one",
        ));
    };
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let routed = match route::route(
        settings.route_by,
        &settings.apps_domain,
        &authority,
        path_and_query,
    ) {
        Ok(r) => r,
        Err(Miss::AddSlash(location)) => {
            return Admission::Redirect {
                location,
                cookie: None,
                opened: None,
            };
        }
        Err(miss) => {
            return Admission::Refuse(Refusal::new(
                StatusCode::NOT_FOUND,
                miss.reason(),
                "no app is published at this address",
            ));
        }
    };
    let Some(target) = lookup.target(&routed.name, now) else {
        return Admission::Refuse(Refusal::new(
            StatusCode::NOT_FOUND,
            "no_such_app",
            format!(
                "no app `{}` is published (it was removed, or its time ran out)",
                routed.name
            ),
        ));
    };
    let refuse = |status, reason, message: String, viewer: Option<&Viewer>| {
        Admission::Refuse(Refusal {
            status,
            reason,
            message,
            target: Some(target.clone()),
            viewer: viewer.map(|v| v.sub.clone()),
        })
    };
    let shared_host = settings.route_by == RouteBy::Path;
    let cookie_name = session::cookie_name(shared_host, &target.name);

    // A token in the URL: verified, decided, and exchanged for a session
    // so that it leaves the address bar.
    let query = match session::query_token(&routed.path) {
        Ok(q) => q,
        Err(()) => {
            return refuse(
                StatusCode::UNAUTHORIZED,
                "token_malformed",
                format!(
                    "the `{}` parameter does not hold a token",
                    session::QUERY_PARAM
                ),
                None,
            );
        }
    };
    if let Some((token, clean)) = query {
        let viewer = match verifier.verify(&token, now) {
            Ok(v) => v,
            Err(e) => return refuse(StatusCode::UNAUTHORIZED, e.reason(), e.to_string(), None),
        };
        if let Some(denied) = decided(&target, Some(&viewer)) {
            return refuse(denied.0, denied.1, denied.2, Some(&viewer));
        }
        let id = match sessions.exchange(&token, viewer.clone(), &target.name, now) {
            Ok(id) => id,
            Err(e) => {
                let status = match e {
                    session::ExchangeError::Reused => StatusCode::UNAUTHORIZED,
                    session::ExchangeError::Full => StatusCode::SERVICE_UNAVAILABLE,
                };
                return refuse(status, e.reason(), e.to_string(), Some(&viewer));
            }
        };
        let location = if shared_host {
            format!("/{}{}", target.name, clean)
        } else {
            clean
        };
        let max_age = viewer.exp.saturating_sub(now);
        return Admission::Redirect {
            location,
            cookie: Some(session::set_cookie(
                &cookie_name,
                &id,
                max_age,
                settings.same_site,
            )),
            opened: Some((target, viewer)),
        };
    }

    let viewer = if let Some(token) = session::bearer(&parts.headers) {
        match verifier.verify(token, now) {
            Ok(v) => Some(v),
            Err(e) => return refuse(StatusCode::UNAUTHORIZED, e.reason(), e.to_string(), None),
        }
    } else {
        session::cookie(&parts.headers, &cookie_name)
            .and_then(|id| sessions.get(id, &target.name, now))
    };
    if let Some(denied) = decided(&target, viewer.as_ref()) {
        return refuse(denied.0, denied.1, denied.2, viewer.as_ref());
    }
    Admission::Forward {
        path: routed.path,
        target,
        viewer,
    }
}

/// The scope's refusal, if it refuses.
fn decided(target: &Target, viewer: Option<&Viewer>) -> Option<(StatusCode, &'static str, String)> {
    match scope::decide(&target.scope, target.owner.as_ref(), viewer) {
        Access::Admit => None,
        Access::Unauthenticated(reason) => Some((
            StatusCode::UNAUTHORIZED,
            reason,
            format!(
                "`{}` is shared as `{}`: open it from the control plane so it can tell who you are",
                target.name, target.scope
            ),
        )),
        Access::Forbidden(reason) => Some((
            StatusCode::FORBIDDEN,
            reason,
            format!(
                "`{}` is shared as `{}`, which does not include you ({})",
                target.name,
                target.scope,
                match reason {
                    "other_org" => "you are not in its owner's organisation",
                    "not_listed" => "you are not among the people it is shared with",
                    "no_owner" => "its sandbox has no owner to match",
                    "owner_has_no_org" => "its owner belongs to no organisation",
                    _ => "only its owner may open it",
                }
            ),
        )),
    }
}

/// The request's host: `:authority` (HTTP/2, absolute form) or its one
/// `Host` header; none when it has several or they disagree.
fn authority(parts: &Parts) -> Option<String> {
    let mut hosts = parts.headers.get_all(header::HOST).iter();
    let host = hosts.next().and_then(|h| h.to_str().ok());
    if hosts.next().is_some() {
        return None;
    }
    match (parts.uri.authority().map(|a| a.as_str()), host) {
        (Some(a), Some(h)) if !a.eq_ignore_ascii_case(h) => None,
        (Some(a), _) => Some(a.to_owned()),
        (None, Some(h)) if !h.is_empty() => Some(h.to_owned()),
        _ => None,
    }
}

#[cfg(test)]
#[path = "admit_tests.rs"]
mod tests;
