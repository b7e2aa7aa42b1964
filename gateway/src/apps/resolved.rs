//! A policy's `apps` resolved against the catalogue when the policy loads
//! ([`Catalogue::resolve`](super::Catalogue::resolve)), and the approval
//! decision over them: which listed app (and which of its actions) a
//! request belongs to and the mode the policy gives it. Pure; the rules
//! are the module's (`apps`).

use std::sync::Arc;

use hyper::Method;

use super::{App, Decision, Kind, PathRefusal, canonical_name, has_dot_segment, normalize_path};
use crate::policy::raw::Approval;

/// A policy's apps, in the order it lists them, then the catalogue's
/// other apps at the policy's `apps.default`.
#[derive(Debug, Clone, Default)]
pub struct PolicyApps {
    pub(super) entries: Vec<PolicyApp>,
}

/// One app: the catalogue's, with the policy's mode for each of its
/// actions (in the app's order) and for requests no action describes.
#[derive(Debug, Clone)]
pub(super) struct PolicyApp {
    pub(super) app: Arc<App>,
    pub(super) modes: Vec<Approval>,
    pub(super) floor: Approval,
    /// Named in the policy's list. An app it does not list has no
    /// `modes`: every request to it takes `floor`, the policy's
    /// `apps.default`.
    pub(super) listed: bool,
}

impl PolicyApps {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The approval decision for a request; `None` when no listed app
    /// covers it (approvals do not apply).
    pub fn decide(&self, host: &str, method: &Method, path_and_query: &str) -> Option<Decision> {
        if self.entries.is_empty() {
            return None;
        }
        let host = canonical_name(host);
        // Refused rather than resolved (RFC 3986 §5.2.4): the forwarded
        // path is the one the client sent, and upstreams disagree on what
        // a dot segment is (`%2e`, `..%2f`, `\`, `..;`), so any resolution
        // here could differ from the one that picks what is served. Clients
        // resolve dot segments before sending, so nothing real is lost.
        if has_dot_segment(path_and_query)
            && let Some(app) = self.covering(&host)
        {
            return Some(Decision {
                mode: Approval::Deny,
                app: app.to_owned(),
                action: None,
                refusal: Some(PathRefusal::DotSegment),
                by_default: false,
            });
        }
        let path = normalize_path(path_and_query);
        let mut best: Option<Decision> = None;
        let mut consider = |candidate: Decision| {
            if best.as_ref().is_none_or(|b| candidate.mode > b.mode) {
                best = Some(candidate);
            }
        };
        for entry in &self.entries {
            let PolicyApp {
                app,
                modes,
                floor,
                listed,
            } = entry;
            let whole = |mode: Approval| Decision {
                mode,
                app: app.name.clone(),
                action: None,
                refusal: None,
                by_default: !listed,
            };
            match &app.kind {
                Kind::Custom { urls } => {
                    if urls
                        .iter()
                        .any(|(h, p)| h.matches(&host) && p.matches(&path))
                    {
                        consider(whole(*floor));
                    }
                }
                Kind::Catalogued { hosts, actions } => {
                    if !hosts.iter().any(|h| h.matches(&host)) {
                        continue;
                    }
                    if !listed {
                        consider(whole(*floor));
                        continue;
                    }
                    let mut matched = false;
                    for (action, mode) in actions.iter().zip(modes) {
                        let method_ok = action.method.as_ref().is_none_or(|m| m == method);
                        if !(method_ok && action.path.matches(&path)) {
                            continue;
                        }
                        matched = true;
                        consider(Decision {
                            mode: *mode,
                            app: app.name.clone(),
                            action: Some(action.name.clone()),
                            refusal: None,
                            by_default: false,
                        });
                    }
                    if !matched {
                        consider(whole(*floor));
                    }
                }
            }
        }
        best
    }

    /// The first listed app whose hosts (a custom app: the hosts of its
    /// URL patterns) include `host`, which must be canonical.
    fn covering(&self, host: &str) -> Option<&str> {
        self.entries.iter().find_map(|PolicyApp { app, .. }| {
            let covers = match &app.kind {
                Kind::Catalogued { hosts, .. } => hosts.iter().any(|h| h.matches(host)),
                Kind::Custom { urls } => urls.iter().any(|(h, _)| h.matches(host)),
            };
            covers.then_some(app.name.as_str())
        })
    }
}
