//! Per-sandbox overlays: `allow_out` entries added at run time on top of a
//! sandbox's policy file, by a person approving a parked connection
//! "always", by `sluice sandbox policy ID --add-allow`, or by the admin
//! API. They are kept in `state_dir/overlays.json` (written whole before
//! the change takes effect, so what a person granted survives a restart)
//! and go with their sandbox.
//!
//! An overlay entry is an `allow_out` target of the policy's forms
//! (`example.com`, `*.example.com:443`, `203.0.113.0/24`), labelled
//! `overlay.allow_out[i]`, ranked with the policy's rules as if written
//! after its own `allow_out`: a more specific `deny_out` entry still wins,
//! and the SSRF guard, name verification and ECH refusal hold as for any
//! allow rule. Decisions use the policy compiled with the overlay
//! ([`Overlaid`]), built when the overlay changes and again after a reload
//! changes the policy under it.
//!
//! Adding an entry changes nothing for open connections. Removing one
//! closes the sandbox's connections admitted while it was there
//! ([`Overlays::holds`]), as a policy edit does.

#[cfg(test)]
mod tests;

use std::{
    collections::{BTreeMap, HashMap},
    io,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, Weak},
};

use serde::{Deserialize, Serialize};

use super::{compiled::CompiledPolicy, network::NetworkPolicy, raw};

const FILE: &str = "overlays.json";
/// Entries one sandbox may hold: each is a rule every decision of the
/// sandbox ranks, and people approving "always" in a loop add up.
pub const MAX_ENTRIES: usize = 256;

/// One entry, as listed and saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// An `allow_out` target as a policy writes it.
    pub target: String,
    /// Who added it (`by` of the decision or the admin API call).
    pub by: String,
    /// Milliseconds since the Unix epoch.
    pub added_at_ms: u64,
}

/// A sandbox's policy compiled with its overlay.
#[derive(Debug)]
pub struct Overlaid {
    pub network: NetworkPolicy,
    /// The sandbox's removals when it was built ([`Overlays::holds`]).
    pub removals: u64,
}

impl Overlaid {
    /// The network policy a sandbox is decided by: its overlay's, where
    /// it has one ([`Overlays::network`]), else its policy's.
    pub fn or_policy<'a>(
        overlaid: Option<&'a Overlaid>,
        policy: &'a CompiledPolicy,
    ) -> &'a NetworkPolicy {
        overlaid.map_or(&policy.network, |overlaid| &overlaid.network)
    }
}

/// Why an overlay change was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OverlayError {
    #[error("{0}")]
    Invalid(String),
    #[error("sandbox `{sandbox}` has no overlay entry `{target}`")]
    NotFound { sandbox: String, target: String },
    #[error("sandbox `{0}` already has {MAX_ENTRIES} overlay entries")]
    Full(String),
    #[error("saving {path}: {err}")]
    Save { path: String, err: String },
}

#[derive(Default)]
struct Sandbox {
    entries: Vec<Entry>,
    /// Entries removed so far: connections admitted before a removal
    /// close.
    removals: u64,
    /// Built for the policy `base` points to; rebuilt when it changes.
    built: Option<(Weak<CompiledPolicy>, Arc<Overlaid>)>,
}

/// Every sandbox's overlay.
pub struct Overlays {
    /// Where they are saved; `None` keeps them in memory (tests).
    dir: Option<PathBuf>,
    sandboxes: Mutex<HashMap<String, Sandbox>>,
}

#[derive(Default, Serialize, Deserialize)]
struct Saved {
    sandboxes: BTreeMap<String, Vec<Entry>>,
}

impl Overlays {
    /// In memory only.
    pub fn in_memory() -> Overlays {
        Overlays {
            dir: None,
            sandboxes: Mutex::default(),
        }
    }

    /// Reads `dir/overlays.json` (none yet: no overlays).
    pub fn load(dir: &Path) -> io::Result<Overlays> {
        let saved: Saved = crate::replace_file::read_json(dir, FILE)?;
        let sandboxes = saved
            .sandboxes
            .into_iter()
            .map(|(id, entries)| {
                let sandbox = Sandbox {
                    entries,
                    ..Sandbox::default()
                };
                (id, sandbox)
            })
            .collect();
        Ok(Overlays {
            dir: Some(dir.to_owned()),
            sandboxes: Mutex::new(sandboxes),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Sandbox>> {
        self.sandboxes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every sandbox's entries, by sandbox id.
    pub fn list(&self) -> BTreeMap<String, Vec<Entry>> {
        let sandboxes = self.lock();
        sandboxes
            .iter()
            .filter(|(_, sandbox)| !sandbox.entries.is_empty())
            .map(|(id, sandbox)| (id.clone(), sandbox.entries.clone()))
            .collect()
    }

    /// One sandbox's entries.
    pub fn entries(&self, sandbox: &str) -> Vec<Entry> {
        let sandboxes = self.lock();
        sandboxes
            .get(sandbox)
            .map_or_else(Vec::new, |current| current.entries.clone())
    }

    /// Adds `target` to `sandbox`'s overlay, checked by compiling it with
    /// `base` (the sandbox's policy now), and saves. Adding an entry it
    /// has already is no change (`Ok(false)`).
    pub fn add(
        &self,
        sandbox: &str,
        entry: Entry,
        base: &Arc<CompiledPolicy>,
    ) -> Result<bool, OverlayError> {
        let mut sandboxes = self.lock();
        let current = sandboxes.entry(sandbox.to_owned()).or_default();
        if current.entries.iter().any(|e| e.target == entry.target) {
            return Ok(false);
        }
        if current.entries.len() >= MAX_ENTRIES {
            return Err(OverlayError::Full(sandbox.to_owned()));
        }
        let mut entries = current.entries.clone();
        entries.push(entry);
        let built = build(&entries, base, current.removals)
            .map_err(|errors| OverlayError::Invalid(errors.join("; ")))?;
        let previous = std::mem::replace(&mut current.entries, entries);
        if let Err(err) = self.save(&sandboxes) {
            if let Some(current) = sandboxes.get_mut(sandbox) {
                current.entries = previous;
            }
            return Err(err);
        }
        if let Some(current) = sandboxes.get_mut(sandbox) {
            current.built = Some((Arc::downgrade(base), Arc::new(built)));
        }
        Ok(true)
    }

    /// Removes the entry `target` from `sandbox`'s overlay and saves.
    pub fn remove(&self, sandbox: &str, target: &str) -> Result<Entry, OverlayError> {
        let mut sandboxes = self.lock();
        let not_found = || OverlayError::NotFound {
            sandbox: sandbox.to_owned(),
            target: target.to_owned(),
        };
        let current = sandboxes.get_mut(sandbox).ok_or_else(not_found)?;
        let at = current
            .entries
            .iter()
            .position(|e| e.target == target)
            .ok_or_else(not_found)?;
        let removed = current.entries.remove(at);
        if let Err(err) = self.save(&sandboxes) {
            if let Some(current) = sandboxes.get_mut(sandbox) {
                current.entries.insert(at, removed);
            }
            return Err(err);
        }
        if let Some(current) = sandboxes.get_mut(sandbox) {
            current.removals += 1;
            current.built = None;
        }
        Ok(removed)
    }

    /// A sandbox went away: its overlay goes too (a sandbox registered
    /// later under the same id starts from its policy alone).
    pub fn forget(&self, sandbox: &str) -> Result<(), OverlayError> {
        let mut sandboxes = self.lock();
        if sandboxes.remove(sandbox).is_none() {
            return Ok(());
        }
        self.save(&sandboxes)
    }

    /// The network policy `sandbox`'s connections are decided by under
    /// `base`, its policy now: `None` without an overlay. One that no
    /// longer compiles with `base` (a reload made an entry a duplicate of
    /// a written rule, say) is left out, logged: an overlay only allows
    /// more, so without it the sandbox is refused more, never less.
    pub fn network(&self, sandbox: &str, base: &Arc<CompiledPolicy>) -> Option<Arc<Overlaid>> {
        let mut sandboxes = self.lock();
        let current = sandboxes.get_mut(sandbox)?;
        if current.entries.is_empty() {
            return None;
        }
        if let Some((built_for, built)) = &current.built
            && built_for.as_ptr() == Arc::as_ptr(base)
        {
            return Some(built.clone());
        }
        match build(&current.entries, base, current.removals) {
            Ok(built) => {
                let built = Arc::new(built);
                current.built = Some((Arc::downgrade(base), built.clone()));
                Some(built)
            }
            Err(errors) => {
                tracing::error!(
                    sandbox,
                    policy = %base.name,
                    errors = errors.join("; "),
                    "the sandbox's overlay does not compile with its policy; decided without it"
                );
                None
            }
        }
    }

    /// Whether a connection of `sandbox` admitted with `overlay` still
    /// holds: no entry was removed since.
    pub fn holds(&self, sandbox: &str, overlay: Option<&Overlaid>) -> bool {
        let Some(overlay) = overlay else {
            return true;
        };
        let sandboxes = self.lock();
        sandboxes
            .get(sandbox)
            .is_some_and(|current| current.removals == overlay.removals)
    }

    fn save(&self, sandboxes: &HashMap<String, Sandbox>) -> Result<(), OverlayError> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        let saved = Saved {
            sandboxes: sandboxes
                .iter()
                .filter(|(_, sandbox)| !sandbox.entries.is_empty())
                .map(|(id, sandbox)| (id.clone(), sandbox.entries.clone()))
                .collect(),
        };
        let failed = |err: io::Error| OverlayError::Save {
            path: dir.join(FILE).display().to_string(),
            err: err.to_string(),
        };
        crate::replace_file::write_json(dir, FILE, &saved, 0o600).map_err(failed)
    }
}

fn build(entries: &[Entry], base: &CompiledPolicy, removals: u64) -> Result<Overlaid, Vec<String>> {
    let targets: Vec<raw::Target> = entries
        .iter()
        .map(|e| raw::Target::Short(e.target.clone()))
        .collect();
    let network = base
        .network_with(&targets)
        .map_err(|errors| errors.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    Ok(Overlaid { network, removals })
}
