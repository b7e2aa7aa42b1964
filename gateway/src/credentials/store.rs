//! [`CredentialStore`]: every configured secret, loaded into daemon memory,
//! with rotation that needs no restart.
//!
//! File sources are re-read by [`CredentialStore::reload_changed`] when the
//! file's identity or size or mtime changes (one `stat` per file-backed
//! credential and nothing else when nothing changed). Call it from a poll
//! task, e.g. once a second: calling it per request also works but spends a
//! syscall per credential on every request for no benefit. Rotate by writing
//! a new file and renaming it over the old one; an in-place rewrite can be
//! observed half-written, which is repaired on the next poll since the size
//! or mtime changes again. Environment sources and systemd credentials
//! (`$CREDENTIALS_DIRECTORY/NAME`, copied by systemd at start) are read once
//! at load.
//!
//! A failed reload keeps the previous secret: a typo in rotation should not
//! take the credential away from running sandboxes.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::OsStringExt as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use thiserror::Error;
use zeroize::Zeroizing;

use super::config::{self, ConfigError, CredentialConfig, Source};
use super::hosts::HostSet;
use super::scheme::Scheme;
use super::secret::Secret;
use super::systemd;

/// The environment as a credential source: the process env in production, a
/// map in tests (which must never mutate the process env).
pub trait Env: Send + Sync {
    fn var(&self, name: &str) -> Option<Secret>;
}

/// The daemon's own environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<Secret> {
        std::env::var_os(name).map(|v: OsString| Secret::new(v.into_vec()))
    }
}

impl Env for BTreeMap<String, String> {
    fn var(&self, name: &str) -> Option<Secret> {
        self.get(name).map(|v| Secret::from(v.as_str()))
    }
}

#[derive(Debug, Error)]
pub enum StoreError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("credential {credential:?}: cannot read {}: {source}", path.display())]
    Read {
        credential: String,
        path: PathBuf,
        source: io::Error,
    },
    #[error("credential {credential:?}: environment variable {var} is not set")]
    EnvMissing { credential: String, var: String },
    #[error("credential {credential:?}: {message}")]
    SystemdCredential { credential: String, message: String },
    #[error("credential {credential:?}: the secret from {origin} is empty")]
    Empty { credential: String, origin: String },
}

impl StoreError {
    /// Metric label.
    pub fn class(&self) -> &'static str {
        match self {
            StoreError::Config(_) => "policy",
            _ => "internal",
        }
    }
}

/// What [`CredentialStore::reload_changed`] did.
#[derive(Debug, Default)]
pub struct ReloadReport {
    /// Credentials whose secret was replaced.
    pub reloaded: Vec<String>,
    /// Credentials that changed but could not be re-read; they keep their
    /// previous secret.
    pub errors: Vec<StoreError>,
}

/// Identifies one version of a file cheaply: rename-over changes the inode,
/// an in-place write changes the size or mtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Self {
        Self {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: m.mtime(),
            mtime_nsec: m.mtime_nsec(),
        }
    }
}

struct Loaded {
    secret: Arc<Secret>,
    stamp: Option<Stamp>,
}

struct Entry {
    config: CredentialConfig,
    scheme: Scheme,
    hosts: HostSet,
    current: RwLock<Loaded>,
    /// The scheme's other secrets (`client_secret`, `access_key_id`, …),
    /// by role, each with its own source and rotation.
    extras: BTreeMap<&'static str, (Source, RwLock<Loaded>)>,
}

/// All configured credentials with their current secrets.
pub struct CredentialStore {
    entries: BTreeMap<String, Entry>,
}

impl std::fmt::Debug for CredentialStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names only; secrets are never formatted, not even their Debug form.
        f.debug_struct("CredentialStore")
            .field("credentials", &self.entries.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl CredentialStore {
    /// Validates the configs and loads every secret, reporting every failure.
    pub fn load(configs: &[CredentialConfig], env: &dyn Env) -> Result<Self, Vec<StoreError>> {
        config::validate(configs)
            .map_err(|es| es.into_iter().map(StoreError::Config).collect::<Vec<_>>())?;
        let mut entries = BTreeMap::new();
        let mut errors = Vec::new();
        for c in configs {
            let loaded = read_source(&c.name, &c.source, env);
            let mut extras = BTreeMap::new();
            for (role, source) in c.scheme.extra_sources() {
                match read_source(&c.name, source, env) {
                    Ok(l) => {
                        extras.insert(role, (source.clone(), RwLock::new(l)));
                    }
                    Err(e) => errors.push(e),
                }
            }
            // validate() guarantees both compile; the fallbacks are unreachable
            // but keep this path panic-free.
            let (Ok(scheme), Ok(hosts)) = (Scheme::compile(&c.scheme), HostSet::parse(&c.hosts))
            else {
                continue;
            };
            match loaded {
                Ok(current) => {
                    entries.insert(
                        c.name.clone(),
                        Entry {
                            config: c.clone(),
                            scheme,
                            hosts,
                            current: RwLock::new(current),
                            extras,
                        },
                    );
                }
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(Self { entries })
        } else {
            Err(errors)
        }
    }

    /// The credential's current secret. The `Arc` keeps a rotated-out secret
    /// alive (and unzeroized) only until in-flight requests drop it.
    pub fn secret(&self, name: &str) -> Option<Arc<Secret>> {
        let e = self.entries.get(name)?;
        let guard = e.current.read().unwrap_or_else(PoisonError::into_inner);
        Some(Arc::clone(&guard.secret))
    }

    /// One of the scheme's other secrets (roles in [`super::config`]:
    /// `client_secret`, `access_key_id`, `session_token`).
    pub fn extra(&self, name: &str, role: &str) -> Option<Arc<Secret>> {
        let (_, slot) = self.entries.get(name)?.extras.get(role)?;
        let guard = slot.read().unwrap_or_else(PoisonError::into_inner);
        Some(Arc::clone(&guard.secret))
    }

    pub fn config(&self, name: &str) -> Option<&CredentialConfig> {
        self.entries.get(name).map(|e| &e.config)
    }

    pub fn scheme(&self, name: &str) -> Option<&Scheme> {
        self.entries.get(name).map(|e| &e.scheme)
    }

    pub fn hosts(&self, name: &str) -> Option<&HostSet> {
        self.entries.get(name).map(|e| &e.hosts)
    }

    /// Every credential, by name.
    pub fn configs(&self) -> impl Iterator<Item = &CredentialConfig> {
        self.entries.values().map(|e| &e.config)
    }

    /// Re-reads every file-backed secret whose file changed since it was read.
    pub fn reload_changed(&self) -> ReloadReport {
        let mut report = ReloadReport::default();
        for (name, e) in &self.entries {
            let slots = std::iter::once((&e.config.source, &e.current))
                .chain(e.extras.values().map(|(source, slot)| (source, slot)));
            for (source, slot) in slots {
                let Source::File { path } = source else {
                    continue;
                };
                match reload_file(name, path, slot) {
                    Ok(false) => {}
                    Ok(true) => {
                        if !report.reloaded.contains(name) {
                            report.reloaded.push(name.clone());
                        }
                    }
                    Err(err) => report.errors.push(err),
                }
            }
        }
        report
    }
}

/// Re-reads `path` into `slot` when the file changed; whether it did.
fn reload_file(name: &str, path: &Path, slot: &RwLock<Loaded>) -> Result<bool, StoreError> {
    let old = slot.read().unwrap_or_else(PoisonError::into_inner).stamp;
    let now = std::fs::metadata(path).map(|m| Stamp::of(&m));
    if let Ok(stamp) = &now
        && old == Some(*stamp)
    {
        return Ok(false);
    }
    let loaded = now
        .map_err(|source| read_error(name, path, source))
        .and_then(|_| read_secret_file(name, path))?;
    *slot.write().unwrap_or_else(PoisonError::into_inner) = loaded;
    Ok(true)
}

fn read_source(credential: &str, source: &Source, env: &dyn Env) -> Result<Loaded, StoreError> {
    match source {
        Source::File { path } => read_secret_file(credential, path),
        Source::Env { var } => read_env(credential, var, env),
        Source::SystemdCredential { name } => {
            let directory = env
                .var(systemd::CREDENTIALS_DIRECTORY)
                .map(|dir| OsString::from_vec(dir.expose().to_vec()));
            let path = systemd::credential_path(name, directory).map_err(|message| {
                StoreError::SystemdCredential {
                    credential: credential.to_owned(),
                    message,
                }
            })?;
            read_secret_file(credential, &path)
        }
    }
}

fn read_error(credential: &str, path: &Path, source: io::Error) -> StoreError {
    StoreError::Read {
        credential: credential.to_owned(),
        path: path.to_owned(),
        source,
    }
}

fn read_secret_file(credential: &str, path: &Path) -> Result<Loaded, StoreError> {
    let err = |source| read_error(credential, path, source);
    let mut f = File::open(path).map_err(err)?;
    let meta = f.metadata().map_err(err)?;
    // Sized up front so read_to_end never reallocates and leaves an
    // unzeroized copy of a partial secret behind in freed memory.
    let cap = usize::try_from(meta.len()).unwrap_or(0).saturating_add(1);
    let mut bytes = Zeroizing::new(Vec::with_capacity(cap));
    f.read_to_end(&mut bytes).map_err(err)?;
    let keep = trim_one_newline(&bytes).len();
    bytes.truncate(keep);
    // Moving the Vec out keeps its allocation, so no copy is left behind.
    let secret = Secret::new(std::mem::take(&mut *bytes));
    if secret.is_empty() {
        return Err(StoreError::Empty {
            credential: credential.to_owned(),
            origin: path.display().to_string(),
        });
    }
    Ok(Loaded {
        secret: Arc::new(secret),
        stamp: Some(Stamp::of(&meta)),
    })
}

fn read_env(credential: &str, var: &str, env: &dyn Env) -> Result<Loaded, StoreError> {
    let Some(secret) = env.var(var) else {
        return Err(StoreError::EnvMissing {
            credential: credential.to_owned(),
            var: var.to_owned(),
        });
    };
    if secret.is_empty() {
        return Err(StoreError::Empty {
            credential: credential.to_owned(),
            origin: format!("${var}"),
        });
    }
    Ok(Loaded {
        secret: Arc::new(secret),
        stamp: None,
    })
}

/// Drops one trailing `\n` or `\r\n`, which editors and `echo` add.
fn trim_one_newline(b: &[u8]) -> &[u8] {
    b.strip_suffix(b"\r\n")
        .or_else(|| b.strip_suffix(b"\n"))
        .unwrap_or(b)
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
