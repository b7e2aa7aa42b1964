//! The app catalogue and the approval decision: which app (and which of its
//! actions) a request belongs to, and whether the sandbox's policy lets it
//! through (`auto`), parks it for a person (`ask`) or refuses it (`deny`).
//!
//! Apps are declared in the daemon config (`apps:`): a catalogued app is a
//! host set with named actions (method + path glob); a custom app is a list
//! of URL patterns only. A policy opts in per app (`apps:` in the policy
//! file) and gives each action a mode, resolved against the catalogue
//! when the policy loads ([`PolicyApps`]). Deciding is pure
//! ([`PolicyApps::decide`]); parking lives in `approvals`.
//!
//! The rules, in the order they apply:
//! - a path with a `.` or `..` segment (see [`pattern::has_dot_segment`])
//!   is refused outright on any host a listed app covers;
//! - every action of every listed app that matches the request counts, and
//!   the strictest mode wins (`deny`, then `ask`, then `auto`);
//! - an action the policy does not list takes the policy's `"*"`, else `ask`;
//! - a request to a catalogued app that matches none of its actions is
//!   `ask` (or `deny` when the policy's `"*"` says so): never looser;
//! - every request matching a custom app's URL patterns is `ask` (or
//!   `deny` by `"*"`);
//! - a request to an app the policy does not list (its hosts, or a custom
//!   app's URL patterns) takes the policy's `apps.default` (`ask` unless
//!   set), whatever its action: a catalogued app's credential is never
//!   waved through because a policy forgot the app.

pub mod pattern;
mod resolved;
#[cfg(test)]
mod tests;

use resolved::PolicyApp;
pub use resolved::PolicyApps;

use std::{collections::HashMap, sync::Arc};

use hyper::Method;
use serde::Deserialize;

use crate::policy::{
    closest::closest,
    network::{CompileError, canonical_name},
    raw::Approval,
    raw::Apps,
};
use pattern::{HostPattern, PathPattern, has_dot_segment, normalize_path, parse_url_pattern};

/// One app as the daemon config declares it.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AppConfig {
    pub name: String,
    /// The app's hosts (`api.example.com`, `*.example.com`).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Its catalogue of actions; requests to `hosts` matching none are `ask`.
    #[serde(default)]
    pub actions: Vec<ActionConfig>,
    /// A custom app: URL patterns only (`wiki.example.com/api/**`); every
    /// matching request is `ask`. Exclusive with `hosts` / `actions`.
    #[serde(default)]
    pub urls: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ActionConfig {
    pub name: String,
    /// `GET`, `POST`, ... or `*` for any.
    #[serde(default = "any_method")]
    pub method: String,
    /// Path glob: `*` one segment, `**` any run of segments.
    pub path: String,
}

fn any_method() -> String {
    "*".to_owned()
}

/// The catalogue, compiled once at start.
#[derive(Debug, Default)]
pub struct Catalogue {
    /// Shared with the policies resolved against it ([`PolicyApps`]).
    apps: Vec<Arc<App>>,
    by_name: HashMap<String, usize>,
}

#[derive(Debug)]
struct App {
    name: String,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Catalogued {
        hosts: Vec<HostPattern>,
        actions: Vec<Action>,
    },
    Custom {
        urls: Vec<(HostPattern, PathPattern)>,
    },
}

#[derive(Debug)]
struct Action {
    name: String,
    /// `None`: any method.
    method: Option<Method>,
    path: PathPattern,
}

/// What the catalogue says about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub mode: Approval,
    pub app: String,
    /// The deciding action; `None` for a request no action describes (an
    /// uncatalogued request, or any request to a custom app).
    pub action: Option<String>,
    /// Refused for the path's form alone, before any action was
    /// considered (`mode` is then `Deny` and `action` `None`).
    pub refusal: Option<PathRefusal>,
    /// Decided by the policy's `apps.default`: the policy does not list
    /// the app (`action` is then `None`).
    pub by_default: bool,
}

impl Decision {
    /// The policy key that decided, as refusals and audit events name it:
    /// the app, and its action where one did; `apps.default` for an app
    /// the policy does not list.
    pub fn rule(&self, policy: &str) -> String {
        match &self.action {
            _ if self.by_default => format!("{policy}:apps.default"),
            Some(action) => format!("{policy}:apps.{}.{action}", self.app),
            None => format!("{policy}:apps.{}", self.app),
        }
    }
}

/// A request path no pattern can be trusted to judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathRefusal {
    /// A `.` or `..` segment: the upstream serves another path than the
    /// one matched.
    DotSegment,
}

impl PathRefusal {
    /// The refusal's `reason` in answers and audit events.
    pub fn as_str(self) -> &'static str {
        match self {
            PathRefusal::DotSegment => "path_dot_segment",
        }
    }
}

impl Catalogue {
    /// Compiles the config's apps; every problem is reported at once.
    pub fn compile(apps: &[AppConfig]) -> Result<Catalogue, Vec<String>> {
        let mut errors = Vec::new();
        let mut catalogue = Catalogue::default();
        for (i, app) in apps.iter().enumerate() {
            let at = format!("apps[{i}]");
            if app.name.trim().is_empty() {
                errors.push(format!("{at}.name: empty app name"));
            } else if catalogue.by_name.contains_key(&app.name) {
                errors.push(format!("{at}.name: app `{}` is declared twice", app.name));
            }
            let kind = if !app.urls.is_empty() {
                if !app.hosts.is_empty() || !app.actions.is_empty() {
                    errors.push(format!(
                        "{at}: `urls` declares a custom app; it cannot also have `hosts` or `actions`"
                    ));
                }
                let mut urls = Vec::new();
                for (j, url) in app.urls.iter().enumerate() {
                    match parse_url_pattern(url) {
                        Ok(pattern) => urls.push(pattern),
                        Err(e) => errors.push(format!("{at}.urls[{j}]: {e}")),
                    }
                }
                Kind::Custom { urls }
            } else {
                if app.hosts.is_empty() {
                    errors.push(format!(
                        "{at}: an app needs `hosts` (with `actions`) or `urls` (a custom app)"
                    ));
                }
                let mut hosts = Vec::new();
                for (j, host) in app.hosts.iter().enumerate() {
                    match HostPattern::parse(host) {
                        Ok(host) => hosts.push(host),
                        Err(e) => errors.push(format!("{at}.hosts[{j}]: {e}")),
                    }
                }
                let mut actions: Vec<Action> = Vec::new();
                let mut names = std::collections::HashSet::new();
                for (j, action) in app.actions.iter().enumerate() {
                    let at = format!("{at}.actions[{j}]");
                    if action.name.trim().is_empty() || action.name == "*" {
                        errors.push(format!("{at}.name: name the action (not empty, not `*`)"));
                    } else if !names.insert(action.name.as_str()) {
                        errors.push(format!("{at}.name: action `{}` twice", action.name));
                    }
                    let method = match action.method.as_str() {
                        "*" => None,
                        text => match Method::from_bytes(text.to_ascii_uppercase().as_bytes()) {
                            Ok(method) => Some(method),
                            Err(_) => {
                                errors.push(format!("{at}.method: `{text}` is not a method"));
                                None
                            }
                        },
                    };
                    match PathPattern::parse(&action.path) {
                        Ok(path) => actions.push(Action {
                            name: action.name.clone(),
                            method,
                            path,
                        }),
                        Err(e) => errors.push(format!("{at}.path: {e}")),
                    }
                }
                Kind::Catalogued { hosts, actions }
            };
            catalogue
                .by_name
                .insert(app.name.clone(), catalogue.apps.len());
            catalogue.apps.push(Arc::new(App {
                name: app.name.clone(),
                kind,
            }));
        }
        if errors.is_empty() {
            Ok(catalogue)
        } else {
            Err(errors)
        }
    }

    pub fn is_empty(&self) -> bool {
        self.apps.is_empty()
    }

    pub fn contains(&self, app: &str) -> bool {
        self.by_name.contains_key(app)
    }

    /// The approval decision for a request, over the apps `policy` lists
    /// (resolved here on each call: the daemon resolves a policy's apps
    /// once, when it loads, with [`Catalogue::resolve`]).
    pub fn decide(
        &self,
        policy: &Apps,
        host: &str,
        method: &Method,
        path_and_query: &str,
    ) -> Option<Decision> {
        self.resolve(policy).decide(host, method, path_and_query)
    }

    /// A policy's `apps` resolved against this catalogue: each entry's app
    /// and its mode for every action of the app, then every app the policy
    /// does not list at `apps.default`, so deciding a request looks up no
    /// names. Entries naming no app of the catalogue are left out (the
    /// policy's load reports them: [`Catalogue::check_policy`]).
    pub fn resolve(&self, policy: &Apps) -> PolicyApps {
        let listed = policy
            .list
            .iter()
            .filter_map(|entry| {
                let app = self.apps[*self.by_name.get(&entry.app)?].clone();
                let unlisted = entry.actions.get("*").copied();
                // Never looser than ask: what no action describes needs a person.
                let floor = unlisted.map_or(Approval::Ask, |m| m.max(Approval::Ask));
                let modes = match &app.kind {
                    Kind::Custom { .. } => Vec::new(),
                    Kind::Catalogued { actions, .. } => actions
                        .iter()
                        .map(|action| {
                            let mode = entry.actions.get(&action.name).copied();
                            mode.or(unlisted).unwrap_or(Approval::Ask)
                        })
                        .collect(),
                };
                Some(PolicyApp {
                    app,
                    modes,
                    floor,
                    listed: true,
                })
            })
            .collect::<Vec<_>>();
        let named = |app: &App| policy.list.iter().any(|entry| entry.app == app.name);
        let unlisted = self
            .apps
            .iter()
            .filter(|app| !named(app))
            .map(|app| PolicyApp {
                app: app.clone(),
                modes: Vec::new(),
                floor: policy.default,
                listed: false,
            });
        PolicyApps {
            entries: listed.into_iter().chain(unlisted).collect(),
        }
    }

    /// A policy's `apps` against this catalogue: every app must be
    /// declared, and every action key other than `"*"` must be one of the
    /// app's actions (a custom app has none). Anything else would never
    /// match, so a typo (`repo.delte: deny` beside `"*": auto`) would
    /// silently leave the real action to `"*"`. Empty names are left to
    /// the policy's own compile check.
    pub fn check_policy(&self, policy: &Apps) -> Vec<CompileError> {
        let mut errors = Vec::new();
        for (i, entry) in policy.list.iter().enumerate() {
            let at = policy.entry_path(i);
            if entry.app.trim().is_empty() {
                continue;
            }
            let Some(&index) = self.by_name.get(&entry.app) else {
                let names = self.apps.iter().map(|a| a.name.as_str());
                errors.push(CompileError {
                    path: format!("{at}.app"),
                    message: format!("app `{}` is not in the daemon's app catalogue", entry.app),
                    hint: Some(match closest(&entry.app, names.clone()) {
                        Some(near) => format!("did you mean `{near}`?"),
                        None if self.apps.is_empty() => {
                            "the daemon config declares no apps (`apps:`)".to_owned()
                        }
                        None => format!("the catalogue's apps: {}", list(names)),
                    }),
                });
                continue;
            };
            let app = &self.apps[index];
            let actions: Vec<&str> = match &app.kind {
                Kind::Catalogued { actions, .. } => {
                    actions.iter().map(|a| a.name.as_str()).collect()
                }
                Kind::Custom { .. } => Vec::new(),
            };
            for key in entry.actions.keys() {
                if key == "*" || key.trim().is_empty() || actions.contains(&key.as_str()) {
                    continue;
                }
                let hint = match (&app.kind, closest(key, actions.iter().copied())) {
                    (Kind::Custom { .. }, _) => {
                        "a custom app has no actions; give its mode with `\"*\"`".to_owned()
                    }
                    (_, Some(near)) => format!("did you mean `{near}`?"),
                    (_, None) => format!("its actions: {}", list(actions.iter().copied())),
                };
                errors.push(CompileError {
                    path: format!("{at}.actions.{key}"),
                    message: format!("app `{}` has no action `{key}`", app.name),
                    hint: Some(hint),
                });
            }
        }
        errors
    }
}

/// `a`, `b`, `c` for hints.
fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
