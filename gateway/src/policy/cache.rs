//! [`PerPolicy`]: things built once from a policy version (credential
//! bindings, content scanners) and reused by every request under it.
//!
//! Keyed by the policy's address: a reload makes a new `Arc`, so each
//! version gets its own entry, and the entry keeps its policy alive so the
//! address cannot be reused by a newer version while the entry exists.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::compiled::CompiledPolicy;

/// Entries kept before the cache is cleared (reloads leave old versions).
const LIMIT: usize = 1024;

/// A policy version's address → the policy (kept alive) and its entry.
type Entries<T> = HashMap<usize, (Arc<CompiledPolicy>, Arc<T>)>;

pub struct PerPolicy<T> {
    entries: Mutex<Entries<T>>,
}

impl<T> Default for PerPolicy<T> {
    fn default() -> Self {
        PerPolicy {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> PerPolicy<T> {
    /// The entry for `policy`, built by `build` the first time; a build
    /// error is returned and not cached (the next request tries again).
    pub fn get_or_build<E>(
        &self,
        policy: &Arc<CompiledPolicy>,
        build: impl FnOnce(&CompiledPolicy) -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        let key = Arc::as_ptr(policy) as usize;
        if let Some((_, entry)) = self.lock().get(&key) {
            return Ok(entry.clone());
        }
        let entry = Arc::new(build(policy)?);
        let mut entries = self.lock();
        if entries.len() >= LIMIT {
            entries.clear();
        }
        entries.insert(key, (policy.clone(), entry.clone()));
        Ok(entry)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries<T>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::raw;

    #[test]
    fn one_build_per_policy_version_and_errors_are_not_cached() {
        let cache: PerPolicy<String> = PerPolicy::default();
        let v1 = Arc::new(CompiledPolicy::compile("p", &raw::Policy::default()).expect("policy"));
        let v2 = Arc::new(CompiledPolicy::compile("p", &raw::Policy::default()).expect("policy"));
        let mut builds = 0;
        let mut build = |_: &CompiledPolicy| -> Result<String, ()> {
            builds += 1;
            Ok(format!("build {builds}"))
        };
        let a = cache.get_or_build(&v1, &mut build).expect("built");
        let b = cache.get_or_build(&v1, &mut build).expect("cached");
        let c = cache.get_or_build(&v2, &mut build).expect("built");
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!((a.as_str(), c.as_str()), ("build 1", "build 2"));
        let failed: Result<Arc<String>, &str> =
            PerPolicy::default().get_or_build(&v1, |_| Err("no"));
        assert_eq!(failed.err(), Some("no"));
    }
}
