//! Registered sandboxes and sessions: the daemon's view of which cgroup is
//! whom, and the state file that keeps run-time registrations across restarts.
//!
//! Pure bookkeeping: the daemon mirrors every change into the kernel's
//! identity map and persists API registrations after each change.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    io,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

use crate::cgroup::is_below;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub id: String,
    pub cgroup: PathBuf,
    pub cgroup_id: u64,
    /// A task run and its pre-approved apps.
    pub task: Option<crate::admin::TaskSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// From the daemon's config file (comes back on every start).
    Config,
    /// Added through the admin API (persisted in the state directory).
    Api,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Config => "config",
            Source::Api => "api",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub id: String,
    pub cgroup: PathBuf,
    pub cgroup_id: u64,
    pub netns: Option<PathBuf>,
    pub policy: String,
    pub ca_bundle: Option<PathBuf>,
    pub source: Source,
    pub sessions: BTreeMap<String, Session>,
    /// Its owner, for the web-app ingress's scopes.
    pub owner: Option<crate::ingress::scope::OwnerId>,
}

/// Who a registered cgroup id belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub sandbox: String,
    pub session: Option<String>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegistryError {
    #[error("invalid id `{0}`: use 1 to 128 of A-Z a-z 0-9 . _ -")]
    InvalidId(String),
    #[error("sandbox `{0}` is already registered")]
    DuplicateSandbox(String),
    #[error("sandbox `{0}` is served by the explicit proxy; a steered sandbox needs another id")]
    Reserved(String),
    #[error("session `{session}` of sandbox `{sandbox}` is already registered")]
    DuplicateSession { sandbox: String, session: String },
    #[error("cgroup {path} is already registered (as `{owner}`)")]
    CgroupTaken { path: PathBuf, owner: String },
    #[error("cgroup {path} overlaps sandbox `{other}` ({other_path}); sandboxes must not nest")]
    Nested {
        path: PathBuf,
        other: String,
        other_path: PathBuf,
    },
    #[error("session cgroup {path} must be below its sandbox's cgroup {sandbox_path}")]
    SessionOutside {
        path: PathBuf,
        sandbox_path: PathBuf,
    },
    #[error("no sandbox `{0}`")]
    NoSandbox(String),
    #[error("no session `{session}` in sandbox `{sandbox}`")]
    NoSession { sandbox: String, session: String },
}

/// Ids appear in paths, metrics and audit events: keep them plain.
pub fn valid_id(id: &str) -> Result<(), RegistryError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(RegistryError::InvalidId(id.to_owned()))
    }
}

#[derive(Debug, Default)]
pub struct Registry {
    sandboxes: BTreeMap<String, Sandbox>,
    by_cgroup: HashMap<u64, Owner>,
    /// Ids a steered sandbox may not take: the explicit proxy's sandboxes,
    /// whose grants, pool and placeholders are keyed by the same id.
    reserved: BTreeSet<String>,
}

impl Registry {
    /// A registry refusing the ids in `reserved`.
    pub fn reserving(reserved: impl IntoIterator<Item = String>) -> Registry {
        Registry {
            reserved: reserved.into_iter().collect(),
            ..Registry::default()
        }
    }

    /// Whether `id` is reserved: a sandbox the explicit proxy serves.
    pub fn is_reserved(&self, id: &str) -> bool {
        self.reserved.contains(id)
    }

    pub fn insert_sandbox(&mut self, sandbox: Sandbox) -> Result<(), RegistryError> {
        valid_id(&sandbox.id)?;
        if self.reserved.contains(&sandbox.id) {
            return Err(RegistryError::Reserved(sandbox.id));
        }
        if self.sandboxes.contains_key(&sandbox.id) {
            return Err(RegistryError::DuplicateSandbox(sandbox.id));
        }
        self.check_cgroup_free(sandbox.cgroup_id, &sandbox.cgroup)?;
        for other in self.sandboxes.values() {
            if is_below(&other.cgroup, &sandbox.cgroup) || is_below(&sandbox.cgroup, &other.cgroup)
            {
                return Err(RegistryError::Nested {
                    path: sandbox.cgroup,
                    other: other.id.clone(),
                    other_path: other.cgroup.clone(),
                });
            }
        }
        self.by_cgroup.insert(
            sandbox.cgroup_id,
            Owner {
                sandbox: sandbox.id.clone(),
                session: None,
            },
        );
        for session in sandbox.sessions.values() {
            self.by_cgroup.insert(
                session.cgroup_id,
                Owner {
                    sandbox: sandbox.id.clone(),
                    session: Some(session.id.clone()),
                },
            );
        }
        self.sandboxes.insert(sandbox.id.clone(), sandbox);
        Ok(())
    }

    pub fn remove_sandbox(&mut self, id: &str) -> Result<Sandbox, RegistryError> {
        let sandbox = self
            .sandboxes
            .remove(id)
            .ok_or_else(|| RegistryError::NoSandbox(id.to_owned()))?;
        self.by_cgroup.remove(&sandbox.cgroup_id);
        for session in sandbox.sessions.values() {
            self.by_cgroup.remove(&session.cgroup_id);
        }
        Ok(sandbox)
    }

    pub fn insert_session(&mut self, sandbox: &str, session: Session) -> Result<(), RegistryError> {
        valid_id(&session.id)?;
        self.check_cgroup_free(session.cgroup_id, &session.cgroup)?;
        let owner = self
            .sandboxes
            .get_mut(sandbox)
            .ok_or_else(|| RegistryError::NoSandbox(sandbox.to_owned()))?;
        if owner.sessions.contains_key(&session.id) {
            return Err(RegistryError::DuplicateSession {
                sandbox: sandbox.to_owned(),
                session: session.id,
            });
        }
        if !is_below(&owner.cgroup, &session.cgroup) {
            return Err(RegistryError::SessionOutside {
                path: session.cgroup,
                sandbox_path: owner.cgroup.clone(),
            });
        }
        self.by_cgroup.insert(
            session.cgroup_id,
            Owner {
                sandbox: sandbox.to_owned(),
                session: Some(session.id.clone()),
            },
        );
        owner.sessions.insert(session.id.clone(), session);
        Ok(())
    }

    pub fn remove_session(&mut self, sandbox: &str, id: &str) -> Result<Session, RegistryError> {
        let owner = self
            .sandboxes
            .get_mut(sandbox)
            .ok_or_else(|| RegistryError::NoSandbox(sandbox.to_owned()))?;
        let session = owner
            .sessions
            .remove(id)
            .ok_or_else(|| RegistryError::NoSession {
                sandbox: sandbox.to_owned(),
                session: id.to_owned(),
            })?;
        self.by_cgroup.remove(&session.cgroup_id);
        Ok(session)
    }

    pub fn owner(&self, cgroup_id: u64) -> Option<&Owner> {
        self.by_cgroup.get(&cgroup_id)
    }

    pub fn get(&self, id: &str) -> Option<&Sandbox> {
        self.sandboxes.get(id)
    }

    /// Puts sandbox `id` (and its sessions) under `policy`; false when no
    /// such sandbox is registered.
    pub fn set_policy(&mut self, id: &str, policy: &str) -> bool {
        let Some(sandbox) = self.sandboxes.get_mut(id) else {
            return false;
        };
        policy.clone_into(&mut sandbox.policy);
        true
    }

    pub fn sandboxes(&self) -> impl Iterator<Item = &Sandbox> {
        self.sandboxes.values()
    }

    /// Every registered cgroup id with its kind (for the kernel map).
    pub fn cgroup_ids(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.by_cgroup.iter().map(|(id, owner)| {
            let kind = if owner.session.is_some() {
                gateway_common::kind::SESSION
            } else {
                gateway_common::kind::SANDBOX
            };
            (*id, kind)
        })
    }

    /// The registered owner of a cgroup path, walking up to the nearest
    /// registered ancestor (for attributing kernel refusals).
    pub fn owner_of_path(&self, path: &Path) -> Option<Owner> {
        self.sandboxes.values().find_map(|sandbox| {
            if path != sandbox.cgroup && !is_below(&sandbox.cgroup, path) {
                return None;
            }
            let session = sandbox
                .sessions
                .values()
                .filter(|s| path == s.cgroup || is_below(&s.cgroup, path))
                .max_by_key(|s| s.cgroup.components().count())
                .map(|s| s.id.clone());
            Some(Owner {
                sandbox: sandbox.id.clone(),
                session,
            })
        })
    }

    /// What must survive a restart: API sandboxes, and sessions of any sandbox.
    pub fn state(&self) -> State {
        let mut state = State::default();
        for sandbox in self.sandboxes.values() {
            if sandbox.source == Source::Api {
                state.sandboxes.push(StateSandbox {
                    id: sandbox.id.clone(),
                    cgroup: sandbox.cgroup.clone(),
                    netns: sandbox.netns.clone(),
                    policy: sandbox.policy.clone(),
                    ca_bundle: sandbox.ca_bundle.clone(),
                    owner: sandbox.owner.clone(),
                });
            }
            for session in sandbox.sessions.values() {
                state.sessions.push(StateSession {
                    sandbox: sandbox.id.clone(),
                    id: session.id.clone(),
                    cgroup: session.cgroup.clone(),
                    task: session.task.clone(),
                });
            }
        }
        state
    }

    /// The cgroup is neither registered by id nor by path: a cgroup
    /// deleted and made again at the same path has a new id, and two
    /// registrations of one path would, re-resolved by path after a
    /// restart, race for it (the stale one's policy and placeholders
    /// winning when its id sorts first).
    fn check_cgroup_free(&self, cgroup_id: u64, path: &Path) -> Result<(), RegistryError> {
        let same_path = self.sandboxes.values().find_map(|sandbox| {
            if sandbox.cgroup == path {
                return Some(sandbox.id.clone());
            }
            let session = sandbox.sessions.values().find(|s| s.cgroup == path)?;
            Some(format!("{}/{}", sandbox.id, session.id))
        });
        if let Some(owner) = same_path {
            return Err(RegistryError::CgroupTaken {
                path: path.to_owned(),
                owner,
            });
        }
        match self.by_cgroup.get(&cgroup_id) {
            Some(owner) => Err(RegistryError::CgroupTaken {
                path: path.to_owned(),
                owner: match &owner.session {
                    Some(session) => format!("{}/{session}", owner.sandbox),
                    None => owner.sandbox.clone(),
                },
            }),
            None => Ok(()),
        }
    }
}

/// The state file's content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    #[serde(default)]
    pub sandboxes: Vec<StateSandbox>,
    #[serde(default)]
    pub sessions: Vec<StateSession>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateSandbox {
    pub id: String,
    pub cgroup: PathBuf,
    pub netns: Option<PathBuf>,
    pub policy: String,
    #[serde(default)]
    pub ca_bundle: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<crate::ingress::scope::OwnerId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateSession {
    pub sandbox: String,
    pub id: String,
    pub cgroup: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<crate::admin::TaskSpec>,
}

const STATE_FILE: &str = "registrations.json";

impl State {
    /// Reads the state file; a missing file is an empty state.
    pub fn load(dir: &Path) -> io::Result<State> {
        crate::replace_file::read_json(dir, STATE_FILE)
    }

    /// Writes the state file whole or not at all
    /// ([`crate::replace_file`]); which of two concurrent saves lands last
    /// is the caller's to order.
    pub fn save(&self, dir: &Path) -> io::Result<()> {
        // 0666 less the umask, as files are created by default.
        crate::replace_file::write_json(dir, STATE_FILE, self, 0o666)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_registered_under_an_older_cgroup_id_is_taken() {
        let mut registry = Registry::default();
        registry
            .insert_sandbox(sandbox("old", "/r/x", 10))
            .expect("insert");
        // The cgroup was deleted and made again: same path, new id.
        let err = registry
            .insert_sandbox(sandbox("new", "/r/x", 11))
            .expect_err("the path is taken");
        assert!(
            matches!(err, RegistryError::CgroupTaken { ref owner, .. } if owner == "old"),
            "{err}"
        );
        let session = Session {
            id: "s1".to_owned(),
            cgroup: PathBuf::from("/r/x/s1"),
            cgroup_id: 12,
            task: None,
        };
        registry
            .insert_session("old", session.clone())
            .expect("session");
        let again = Session {
            cgroup_id: 13,
            id: "s2".to_owned(),
            ..session
        };
        let err = registry.insert_session("old", again).expect_err("taken");
        assert!(
            matches!(err, RegistryError::CgroupTaken { ref owner, .. } if owner == "old/s1"),
            "{err}"
        );
    }

    #[test]
    fn concurrent_saves_each_land_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let states: Vec<State> = (0..4)
            .map(|n| {
                let mut registry = Registry::default();
                for k in 0..=n {
                    let id = format!("sb{k}");
                    registry
                        .insert_sandbox(sandbox(&id, &format!("/r/{id}"), 10 + k as u64))
                        .expect("insert");
                }
                registry.state()
            })
            .collect();
        std::thread::scope(|scope| {
            for state in &states {
                let dir = dir.path();
                scope.spawn(move || {
                    for _ in 0..200 {
                        state.save(dir).expect("save");
                    }
                });
            }
        });
        let loaded = State::load(dir.path()).expect("a whole file");
        assert!(
            states
                .iter()
                .any(|s| s.sandboxes.len() == loaded.sandboxes.len())
        );
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(left, [STATE_FILE], "no temp file is left");
    }

    fn sandbox(id: &str, cgroup: &str, cgroup_id: u64) -> Sandbox {
        Sandbox {
            id: id.to_owned(),
            cgroup: PathBuf::from(cgroup),
            cgroup_id,
            netns: None,
            policy: "default".to_owned(),
            ca_bundle: None,
            owner: None,
            source: Source::Api,
            sessions: BTreeMap::new(),
        }
    }

    fn session(id: &str, cgroup: &str, cgroup_id: u64) -> Session {
        Session {
            id: id.to_owned(),
            cgroup: PathBuf::from(cgroup),
            cgroup_id,
            task: None,
        }
    }

    #[test]
    fn ids_are_plain() {
        for ok in ["a", "sb-1", "A.b_c", &"x".repeat(128)] {
            assert!(valid_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a/b", "a b", "é", &"x".repeat(129), "../x"] {
            assert!(valid_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sandboxes_and_sessions_resolve_owners() {
        let mut r = Registry::default();
        r.insert_sandbox(sandbox("a", "/cg/root/a", 10)).expect("a");
        r.insert_sandbox(sandbox("b", "/cg/root/b", 20)).expect("b");
        r.insert_session("a", session("s1", "/cg/root/a/s1", 11))
            .expect("s1");
        assert_eq!(r.owner(10).map(|o| o.sandbox.as_str()), Some("a"));
        assert_eq!(r.owner(11).and_then(|o| o.session.as_deref()), Some("s1"));
        assert_eq!(r.owner(99), None);
        let deep = r
            .owner_of_path(Path::new("/cg/root/a/s1/x/y"))
            .expect("owner");
        assert_eq!(
            (deep.sandbox.as_str(), deep.session.as_deref()),
            ("a", Some("s1"))
        );
        let plain = r
            .owner_of_path(Path::new("/cg/root/a/other"))
            .expect("owner");
        assert_eq!(plain.session, None);
        assert_eq!(r.owner_of_path(Path::new("/cg/root/c")), None);
        assert_eq!(r.cgroup_ids().count(), 3);

        r.remove_sandbox("a").expect("remove");
        assert_eq!(r.owner(10), None);
        assert_eq!(r.owner(11), None, "sessions go with their sandbox");
    }

    #[test]
    fn the_explicit_proxys_ids_are_not_taken() {
        let mut r = Registry::reserving(["vm-1".to_owned()]);
        let err = r.insert_sandbox(sandbox("vm-1", "/cg/root/vm", 10));
        assert_eq!(err, Err(RegistryError::Reserved("vm-1".to_owned())));
        r.insert_sandbox(sandbox("vm-2", "/cg/root/vm", 10))
            .expect("vm-2");
    }

    #[test]
    fn conflicts_are_refused() {
        let mut r = Registry::default();
        r.insert_sandbox(sandbox("a", "/cg/root/a", 10)).expect("a");
        let cases = [
            (sandbox("a", "/cg/root/x", 30), "already registered"),
            (sandbox("c", "/cg/root/a", 10), "already registered"),
            (sandbox("d", "/cg/root/a/inner", 40), "must not nest"),
            (sandbox("e", "/cg/root", 50), "must not nest"),
            (sandbox("bad id", "/cg/root/f", 60), "invalid id"),
        ];
        for (candidate, want) in cases {
            let err = r.insert_sandbox(candidate).expect_err(want);
            assert!(err.to_string().contains(want), "{err}");
        }
        let err = r
            .insert_session("a", session("s", "/cg/root/b/s", 70))
            .expect_err("outside");
        assert!(err.to_string().contains("must be below"), "{err}");
        let err = r
            .insert_session("zz", session("s", "/cg/root/a/s", 71))
            .expect_err("no sandbox");
        assert_eq!(err, RegistryError::NoSandbox("zz".to_owned()));
    }

    #[test]
    fn state_keeps_api_sandboxes_and_all_sessions() {
        let mut r = Registry::default();
        let mut from_config = sandbox("cfg", "/cg/root/cfg", 1);
        from_config.source = Source::Config;
        r.insert_sandbox(from_config).expect("cfg");
        r.insert_sandbox(sandbox("api", "/cg/root/api", 2))
            .expect("api");
        r.insert_session("cfg", session("s", "/cg/root/cfg/s", 3))
            .expect("s");
        let state = r.state();
        assert_eq!(state.sandboxes.len(), 1);
        assert_eq!(state.sandboxes[0].id, "api");
        assert_eq!(state.sessions.len(), 1);

        let dir = tempfile::tempdir().expect("tempdir");
        state.save(dir.path()).expect("save");
        assert_eq!(State::load(dir.path()).expect("load"), state);
        assert_eq!(
            State::load(&dir.path().join("missing")).expect("empty"),
            State::default()
        );
    }
}
