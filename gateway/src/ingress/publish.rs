//! Publications: which app name routes to which port of which sandbox,
//! under which scope, until when; and the state file that keeps them
//! across restarts (`state_dir/publications.json`), as registrations are
//! kept. Pure bookkeeping; the daemon checks the sandbox exists, persists
//! after each change and ends the sessions of an app that goes.

use std::{collections::BTreeMap, io, path::Path};

use serde::{Deserialize, Serialize};

use super::{route::valid_name, scope::Scope};

const STATE_FILE: &str = "publications.json";

/// Publications one sandbox may hold.
pub const MAX_PER_SANDBOX: usize = 32;

/// One published app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Publication {
    pub name: String,
    pub sandbox: String,
    pub port: u16,
    pub scope: Scope,
    /// When it stops answering (Unix seconds); none: until removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<u64>,
}

/// A publication as `sluice app ls` and the admin API show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppInfo {
    pub name: String,
    pub sandbox: String,
    pub port: u16,
    pub scope: Scope,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<u64>,
    pub url: String,
}

impl AppInfo {
    pub fn new(p: &Publication, url: String) -> AppInfo {
        AppInfo {
            name: p.name.clone(),
            sandbox: p.sandbox.clone(),
            port: p.port,
            scope: p.scope.clone(),
            expires: p.expires,
            url,
        }
    }
}

/// `PUT /v1/apps/NAME/scope`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeRequest {
    pub scope: Scope,
}

/// `sluice app publish` / `POST /v1/apps`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishRequest {
    pub sandbox: String,
    pub port: u16,
    /// Default: `SANDBOX-PORT`, made a DNS label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Default: `private`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_secs: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublishError {
    #[error("`{0}` is not an app name: 1 to 63 of a-z 0-9 -, not starting or ending with -")]
    BadName(String),
    #[error("the app name `{0}` is taken; choose another with --name")]
    NameTaken(String),
    #[error("port 0 cannot be published")]
    PortZero,
    #[error("a --ttl of 0 would expire at once")]
    TtlZero,
    #[error("sandbox `{0}` holds {MAX_PER_SANDBOX} publications already")]
    TooMany(String),
    #[error("no app `{0}`")]
    NoApp(String),
}

/// The name an app gets when none is asked for.
pub fn default_name(sandbox: &str, port: u16) -> String {
    let mut name: String = sandbox
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    let suffix = format!("-{port}");
    name.truncate(63 - suffix.len());
    let name = name.trim_matches('-');
    format!("{}{suffix}", if name.is_empty() { "app" } else { name })
}

/// Every publication, by name.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Publications {
    apps: BTreeMap<String, Publication>,
}

impl Publications {
    /// Adds a publication at `now` (Unix seconds); the caller has checked
    /// the sandbox exists.
    pub fn publish(&mut self, req: PublishRequest, now: u64) -> Result<Publication, PublishError> {
        if req.port == 0 {
            return Err(PublishError::PortZero);
        }
        if req.ttl_secs == Some(0) {
            return Err(PublishError::TtlZero);
        }
        let name = req
            .name
            .unwrap_or_else(|| default_name(&req.sandbox, req.port));
        if !valid_name(&name) {
            return Err(PublishError::BadName(name));
        }
        self.sweep(now);
        if self.apps.contains_key(&name) {
            return Err(PublishError::NameTaken(name));
        }
        if self.of_sandbox(&req.sandbox).count() >= MAX_PER_SANDBOX {
            return Err(PublishError::TooMany(req.sandbox));
        }
        let publication = Publication {
            name: name.clone(),
            sandbox: req.sandbox,
            port: req.port,
            scope: req.scope.unwrap_or(Scope::Private),
            expires: req.ttl_secs.map(|t| now.saturating_add(t)),
        };
        self.apps.insert(name, publication.clone());
        Ok(publication)
    }

    pub fn remove(&mut self, name: &str) -> Result<Publication, PublishError> {
        self.apps
            .remove(name)
            .ok_or_else(|| PublishError::NoApp(name.to_owned()))
    }

    pub fn set_scope(&mut self, name: &str, scope: Scope) -> Result<Publication, PublishError> {
        let app = self
            .apps
            .get_mut(name)
            .ok_or_else(|| PublishError::NoApp(name.to_owned()))?;
        app.scope = scope;
        Ok(app.clone())
    }

    /// Removes the apps of a sandbox that is going away.
    pub fn remove_sandbox(&mut self, sandbox: &str) -> Vec<Publication> {
        let names: Vec<String> = self.of_sandbox(sandbox).map(|p| p.name.clone()).collect();
        names.iter().filter_map(|n| self.apps.remove(n)).collect()
    }

    /// Removes the apps whose time is up, returning them.
    pub fn sweep(&mut self, now: u64) -> Vec<Publication> {
        let gone: Vec<String> = self
            .apps
            .values()
            .filter(|p| p.expires.is_some_and(|e| e <= now))
            .map(|p| p.name.clone())
            .collect();
        gone.iter().filter_map(|n| self.apps.remove(n)).collect()
    }

    /// The live publication named `name` at `now`.
    pub fn get(&self, name: &str, now: u64) -> Option<&Publication> {
        self.apps
            .get(name)
            .filter(|p| p.expires.is_none_or(|e| e > now))
    }

    pub fn all(&self) -> impl Iterator<Item = &Publication> {
        self.apps.values()
    }

    fn of_sandbox<'a>(&'a self, sandbox: &'a str) -> impl Iterator<Item = &'a Publication> {
        self.apps.values().filter(move |p| p.sandbox == sandbox)
    }

    /// Reads the state file; a missing file is no publication.
    pub fn load(dir: &Path) -> io::Result<Publications> {
        crate::replace_file::read_json(dir, STATE_FILE)
    }

    /// Writes the state file whole or not at all.
    pub fn save(&self, dir: &Path) -> io::Result<()> {
        crate::replace_file::write_json(dir, STATE_FILE, self, 0o600)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(sandbox: &str, port: u16, name: Option<&str>) -> PublishRequest {
        PublishRequest {
            sandbox: sandbox.into(),
            port,
            name: name.map(Into::into),
            scope: None,
            ttl_secs: None,
        }
    }

    #[test]
    fn publishing_checks_names_ports_and_limits() {
        let mut apps = Publications::default();
        let first = apps
            .publish(req("Agent_7", 8080, None), 0)
            .expect("default name");
        assert_eq!(first.name, "agent-7-8080");
        assert_eq!(first.scope, Scope::Private);
        let table: Vec<(PublishRequest, PublishError)> = vec![
            (
                req("a", 8080, Some("agent-7-8080")),
                PublishError::NameTaken("agent-7-8080".into()),
            ),
            (req("a", 0, None), PublishError::PortZero),
            (
                req("a", 1, Some("Bad")),
                PublishError::BadName("Bad".into()),
            ),
            (
                PublishRequest {
                    ttl_secs: Some(0),
                    ..req("a", 1, None)
                },
                PublishError::TtlZero,
            ),
        ];
        for (r, want) in table {
            assert_eq!(apps.publish(r.clone(), 0), Err(want), "{r:?}");
        }
        for port in 1..MAX_PER_SANDBOX as u16 {
            apps.publish(req("Agent_7", port, None), 0).expect("room");
        }
        assert_eq!(
            apps.publish(req("Agent_7", 9999, None), 0),
            Err(PublishError::TooMany("Agent_7".into()))
        );
    }

    #[test]
    fn apps_expire_go_with_their_sandbox_and_survive_a_restart() {
        let mut apps = Publications::default();
        let ttl = PublishRequest {
            ttl_secs: Some(60),
            scope: Some(Scope::Org),
            ..req("sb", 3000, Some("demo"))
        };
        apps.publish(ttl, 100).expect("publish");
        apps.publish(req("sb", 3001, Some("other")), 100)
            .expect("publish");
        apps.publish(req("sb2", 3000, Some("kept")), 100)
            .expect("publish");
        assert!(apps.get("demo", 159).is_some());
        assert!(apps.get("demo", 160).is_none(), "expired");

        let dir = tempfile::tempdir().expect("tempdir");
        apps.save(dir.path()).expect("save");
        assert_eq!(Publications::load(dir.path()).expect("load"), apps);
        assert_eq!(
            Publications::load(&dir.path().join("missing")).expect("none"),
            Publications::default()
        );

        assert_eq!(apps.sweep(160).len(), 1);
        let gone = apps.remove_sandbox("sb");
        assert_eq!(gone.len(), 1);
        assert_eq!(
            apps.all().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            ["kept"]
        );
        assert_eq!(
            apps.set_scope("kept", Scope::Public).map(|p| p.scope),
            Ok(Scope::Public)
        );
        assert_eq!(apps.remove("demo"), Err(PublishError::NoApp("demo".into())));
    }

    #[test]
    fn default_names_are_labels() {
        for (sandbox, port, want) in [
            ("agent-7", 80, "agent-7-80"),
            ("a.b_c", 3000, "a-b-c-3000"),
            ("__", 1, "app-1"),
        ] {
            assert_eq!(default_name(sandbox, port), want);
            assert!(valid_name(&default_name(sandbox, port)));
        }
        assert!(valid_name(&default_name(&"x".repeat(128), 65535)));
    }
}
