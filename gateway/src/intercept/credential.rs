//! The credential edge of interception: finds the sandbox's placeholders in a
//! request, decides with `credentials::decide` (pure), and on `Inject` swaps
//! the placeholder for the real secret as the very last step before the
//! forward, returning what must be redacted from the response.
//!
//! Per-policy bindings and per-sandbox placeholder matchers are built once
//! and cached; the caches are cleared when a policy reloads (new `Arc`) or a
//! secret rotates (placeholder lengths may follow the secret's).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use hyper::{HeaderMap, Method, Uri};

use crate::{
    credentials::{
        Binding, Bindings, CredentialStore, PlaceholderIndex, Placeholders, decide,
        scheme::RequestContext,
    },
    policy::compiled::CompiledPolicy,
    redact::{Needles, REPLACEMENT},
};

/// Entries kept per cache before it is cleared (reloads leave old keys).
const CACHE_LIMIT: usize = 1024;

/// A policy version and the bindings compiled from it.
type PolicyBindings = (Arc<CompiledPolicy>, Arc<Bindings>);

pub struct Credentials {
    pub store: Arc<CredentialStore>,
    pub placeholders: Placeholders,
    /// Keyed by the policy's address; the policy is kept alive beside its
    /// bindings so the address cannot be reused by a newer version.
    bindings: Mutex<HashMap<usize, PolicyBindings>>,
    indexes: Mutex<HashMap<String, Arc<PlaceholderIndex>>>,
}

/// What happened to a request's credentials.
pub enum Outcome {
    /// No placeholder: forwarded as is.
    Untouched,
    /// Injected; redact these from the response.
    Injected {
        credential: String,
        needles: Arc<Needles>,
    },
    /// Refused before anything left: `reason` is a stable label.
    Refused {
        reason: &'static str,
        credential: String,
    },
}

impl Credentials {
    pub fn new(store: Arc<CredentialStore>, placeholders: Placeholders) -> Credentials {
        Credentials {
            store,
            placeholders,
            bindings: Mutex::new(HashMap::new()),
            indexes: Mutex::new(HashMap::new()),
        }
    }

    /// Re-reads rotated secret files; called about once a second.
    pub fn reload(&self) {
        let report = self.store.reload_changed();
        for err in &report.errors {
            tracing::warn!(%err, "credential not reloaded; the previous secret stays");
        }
        if !report.reloaded.is_empty() {
            tracing::info!(credentials = ?report.reloaded, "credentials rotated");
            lock(&self.indexes).clear();
        }
    }

    /// The placeholder environment of a sandbox under `policy`.
    pub fn env(&self, sandbox: &str, policy: &CompiledPolicy) -> Vec<(String, String)> {
        let bound: Vec<_> = self.bound(policy).collect();
        self.placeholders.env(sandbox, bound)
    }

    /// Decides and, when the request carries a placeholder it may carry,
    /// injects the secret into `headers` / `uri`. `method` and `host` feed
    /// signing schemes (`hmac`).
    #[allow(clippy::too_many_arguments)]
    pub fn apply(
        &self,
        sandbox: &str,
        policy: &Arc<CompiledPolicy>,
        host: &str,
        tls: bool,
        method: &Method,
        headers: &mut HeaderMap,
        uri: &mut Uri,
    ) -> Outcome {
        if self.store.configs().next().is_none() {
            return Outcome::Untouched;
        }
        let Some(index) = self.index(sandbox) else {
            return Outcome::Untouched;
        };
        let found = index.scan(headers, uri);
        if found.is_empty() {
            return Outcome::Untouched;
        }
        let Some(bindings) = self.bindings(policy) else {
            return Outcome::Refused {
                reason: "not_bound",
                credential: String::new(),
            };
        };
        match decide(host, tls, &found, &bindings) {
            Binding::None => Outcome::Untouched,
            Binding::Refuse { reason, credential } => Outcome::Refused { reason, credential },
            Binding::Inject { credential } => {
                self.inject(sandbox, &credential, host, method, headers, uri)
            }
        }
    }

    fn inject(
        &self,
        sandbox: &str,
        credential: &str,
        host: &str,
        method: &Method,
        headers: &mut HeaderMap,
        uri: &mut Uri,
    ) -> Outcome {
        let refused = |reason| Outcome::Refused {
            reason,
            credential: credential.to_owned(),
        };
        let (Some(secret), Some(scheme), Some(config)) = (
            self.store.secret(credential),
            self.store.scheme(credential),
            self.store.config(credential),
        ) else {
            return refused("unknown_credential");
        };
        let placeholder =
            self.placeholders
                .placeholder(sandbox, credential, &config.placeholder, secret.len());
        let request = RequestContext {
            method,
            host,
            now_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        };
        match scheme.apply_to(&secret, &placeholder, &request, headers, uri) {
            Ok(redactions) => {
                let needles: Vec<&[u8]> = redactions.needles().collect();
                Outcome::Injected {
                    credential: credential.to_owned(),
                    needles: Arc::new(Needles::new(&needles, REPLACEMENT)),
                }
            }
            Err(err) => {
                tracing::warn!(credential, class = err.class(), "credential not injected");
                refused("injection_failed")
            }
        }
    }

    /// The credentials a policy binds, with their secrets' lengths.
    fn bound<'a>(
        &'a self,
        policy: &'a CompiledPolicy,
    ) -> impl Iterator<Item = (&'a crate::credentials::CredentialConfig, usize)> + 'a {
        policy.credentials.iter().filter_map(|binding| {
            let config = self.store.config(&binding.credential)?;
            let len = self.store.secret(&binding.credential)?.len();
            Some((config, len))
        })
    }

    fn index(&self, sandbox: &str) -> Option<Arc<PlaceholderIndex>> {
        if let Some(index) = lock(&self.indexes).get(sandbox) {
            return Some(index.clone());
        }
        // Every credential, bound or not: a placeholder sent where its
        // policy does not bind it is refused, not ignored.
        let all: Vec<_> = self
            .store
            .configs()
            .filter_map(|c| Some((c, self.store.secret(&c.name)?.len())))
            .collect();
        let index = Arc::new(PlaceholderIndex::for_sandbox(&self.placeholders, sandbox, all).ok()?);
        let mut cache = lock(&self.indexes);
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(sandbox.to_owned(), index.clone());
        Some(index)
    }

    fn bindings(&self, policy: &Arc<CompiledPolicy>) -> Option<Arc<Bindings>> {
        // A reload makes a new Arc, so its address keys this policy version.
        let key = Arc::as_ptr(policy) as usize;
        if let Some((_, bindings)) = lock(&self.bindings).get(&key) {
            return Some(bindings.clone());
        }
        let bindings = match Bindings::compile(self.store.configs(), &policy.credentials) {
            Ok(bindings) => Arc::new(bindings),
            Err(errors) => {
                for err in errors {
                    tracing::warn!(policy = %policy.name, %err, "credential bindings do not compile");
                }
                return None;
            }
        };
        let mut cache = lock(&self.bindings);
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(key, (policy.clone(), bindings.clone()));
        Some(bindings)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
