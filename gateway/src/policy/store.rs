//! The live policy set and its reloads.
//!
//! Readers take an `Arc` snapshot per connection, so a reload is atomic for
//! new connections and never changes a decision half-way; connections
//! opened before it under a policy it changed or removed close
//! (`proxy::Standing`: intercepted ones once their requests in flight are
//! answered, relayed and upgraded ones at once), so none keeps an old
//! policy for long. A policy whose file did not change is kept as it was,
//! and so are its connections. A reload that fails (a broken file,
//! or a policy a sandbox names gone missing) keeps the previous set, logs
//! every error, and holds `sluice_policy_synchronized` at 0 until a later
//! reload succeeds.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use arc_swap::ArcSwap;

use super::load::{Against, PolicySet, load_dir};
use crate::{apps::Catalogue, credentials::CredentialConfig, metrics::Metrics};

pub struct PolicyStore {
    dir: PathBuf,
    /// The daemon's app catalogue (fixed at start), which every policy's
    /// `apps` must name.
    apps: Arc<Catalogue>,
    /// The daemon's credentials (fixed at start: changing them needs a
    /// restart), which every policy's bindings are compiled against when
    /// it loads ([`CompiledPolicy::bind`](super::compiled::CompiledPolicy::bind)).
    credentials: Arc<[CredentialConfig]>,
    current: ArcSwap<PolicySet>,
    metrics: Arc<Metrics>,
}

impl PolicyStore {
    /// Loads the directory; at start-up an error is fatal (the caller prints
    /// every diagnostic).
    pub fn load(
        dir: &Path,
        apps: Arc<Catalogue>,
        credentials: Arc<[CredentialConfig]>,
        metrics: Arc<Metrics>,
    ) -> Result<PolicyStore, Vec<String>> {
        let set = load_checked(dir, &apps, &credentials)?;
        metrics.policy_synchronized.set(1);
        warn(&set, &metrics);
        Ok(PolicyStore {
            dir: dir.to_owned(),
            apps,
            credentials,
            current: ArcSwap::from_pointee(set),
            metrics,
        })
    }

    /// The policies in force now.
    pub fn current(&self) -> Arc<PolicySet> {
        self.current.load_full()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Re-reads the directory. `required` names policies that registered
    /// sandboxes use: a new set without one of them is refused too.
    pub fn reload(&self, required: &[String]) -> Result<(), Vec<String>> {
        let result = load_checked(&self.dir, &self.apps, &self.credentials).and_then(|set| {
            let missing: Vec<String> = required
                .iter()
                .filter(|name| set.get(name).is_none())
                .map(|name| {
                    format!(
                        "{}: policy `{name}` is used by a registered sandbox but no longer exists",
                        self.dir.display()
                    )
                })
                .collect();
            if missing.is_empty() {
                Ok(set)
            } else {
                Err(missing)
            }
        });
        match result {
            Ok(set) => {
                tracing::info!(dir = %self.dir.display(), policies = set.len(), "policies reloaded");
                let set = set.keeping_unchanged(&self.current());
                warn(&set, &self.metrics);
                self.current.store(Arc::new(set));
                self.metrics.policy_synchronized.set(1);
                self.metrics.policy_reloads.with_label_values(&["ok"]).inc();
                Ok(())
            }
            Err(errors) => {
                for error in &errors {
                    tracing::error!("policy reload refused, previous policies stay: {error}");
                }
                self.metrics.policy_synchronized.set(0);
                self.metrics
                    .policy_reloads
                    .with_label_values(&["error"])
                    .inc();
                Err(errors)
            }
        }
    }
}

/// Says, for each policy in force, which stages it enables that never see
/// HTTPS (`decide_without_decryption: true` written with them): a log
/// warning and `sluice_policy_warnings{policy}`, at start and on every
/// reload, so an operator learns it without running `sluice check`.
fn warn(set: &PolicySet, metrics: &Metrics) {
    metrics.policy_warnings.reset();
    for name in set.names() {
        let stages = set
            .get(name)
            .map(|policy| policy.stages_on_plain_http_only())
            .unwrap_or_default();
        if !stages.is_empty() {
            tracing::warn!(
                policy = name,
                stages = stages.join(", "),
                "these stages act on plain HTTP only: the policy sets \
                 network.decide_without_decryption: true, so HTTPS is relayed unread"
            );
        }
        let count = i64::try_from(stages.len()).unwrap_or(i64::MAX);
        metrics
            .policy_warnings
            .with_label_values(&[name])
            .set(count);
    }
}

/// The directory's policies, each checked against the catalogue and its
/// stages built (its bindings compiled against the credentials) while it
/// loads: at start and on every reload alike, so a request never builds
/// anything.
fn load_checked(
    dir: &Path,
    apps: &Catalogue,
    credentials: &[CredentialConfig],
) -> Result<PolicySet, Vec<String>> {
    let against = Against {
        apps: Some(apps),
        credentials: Some(credentials),
    };
    load_dir(dir, against).map_err(|diagnostics| {
        diagnostics
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    })
}

/// How long the directory must be quiet before a reload: editors write a
/// file in several steps (truncate, write, rename).
pub const SETTLE: Duration = Duration::from_millis(200);

/// What the watcher saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// A file in the directory changed.
    Changed,
    /// The directory itself was replaced (`mv new policies`) or made anew:
    /// the old watch follows the old directory, so it is set again.
    Replaced,
}

/// What an event about `paths` means for a watch of `dir` (whose parent is
/// watched too, for the directory itself); `None` for the parent's other
/// entries.
fn seen(dir: &Path, paths: &[PathBuf]) -> Option<Seen> {
    if paths.iter().any(|p| p == dir) {
        Some(Seen::Replaced)
    } else if paths.iter().any(|p| p.parent() == Some(dir)) {
        Some(Seen::Changed)
    } else {
        None
    }
}

/// Watches the policy directory, and its parent for the directory itself
/// being replaced, and calls `reload` once changes settle. The watch lasts
/// as long as the runtime.
pub fn watch(dir: &Path, reload: impl Fn() + Send + 'static) -> notify::Result<()> {
    use notify::Watcher as _;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let watched = dir.to_owned();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event
            && !event.kind.is_access()
            && let Some(seen) = seen(&watched, &event.paths)
        {
            let _ = tx.send(seen);
        }
    })?;
    watcher.watch(dir, notify::RecursiveMode::NonRecursive)?;
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        watcher.watch(parent, notify::RecursiveMode::NonRecursive)?;
    }
    let dir = dir.to_owned();
    tokio::spawn(async move {
        while let Some(mut seen) = rx.recv().await {
            // Swallow the burst, then reload once.
            loop {
                match tokio::time::timeout(SETTLE, rx.recv()).await {
                    Ok(Some(next)) => {
                        if next == Seen::Replaced {
                            seen = next;
                        }
                    }
                    Ok(None) => return,
                    Err(_) => break,
                }
            }
            if seen == Seen::Replaced {
                // The old watch went with the old directory, if it still
                // exists; a directory gone for good is the reload's error.
                let _ = watcher.unwatch(&dir);
                if let Err(err) = watcher.watch(&dir, notify::RecursiveMode::NonRecursive) {
                    tracing::error!(dir = %dir.display(), %err, "cannot watch the policy directory again; edits need a SIGHUP");
                }
            }
            reload();
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stage that cannot be built (here a credential binding the
    /// daemon's credentials do not compile) refuses the policy at start
    /// with its file:line:column, and on a reload keeps the old policies
    /// with `sluice_policy_synchronized` at 0; a later good reload sets it
    /// back to 1. Nothing is left to fail at request time.
    #[test]
    fn stages_that_cannot_be_built_are_refused_at_start_and_reload() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("p.yaml");
        let write = |text: &str| std::fs::write(&file, text).expect("write");
        let metrics = Arc::new(Metrics::new());
        let known =
            "[{name: known, source: {env: K}, hosts: [api.example.com], scheme: {type: bearer}}]";
        let credentials: Vec<CredentialConfig> = serde_yaml::from_str(known).expect("credential");
        let credentials: Arc<[CredentialConfig]> = credentials.into();
        let store = || {
            PolicyStore::load(
                dir.path(),
                Arc::default(),
                credentials.clone(),
                metrics.clone(),
            )
        };
        let good = "network:\n  deny_out: [ALL_TRAFFIC]\n";
        // (policy text, location, words of the error)
        let cases = [
            (
                "credentials:\n  - credential: nope\n",
                "p.yaml:2:5:",
                "\"nope\", which the daemon config does not define",
            ),
            (
                "credentials:\n  - credential: known\n    allow_in_body: true\n  - credential: nope\n",
                "p.yaml:4:5:",
                "credentials[1].credential",
            ),
            (
                "credentials:\n  - credential: known\n    hosts: [\"a b\"]\n",
                "p.yaml:3:5:",
                "credentials[0].hosts",
            ),
        ];
        for (text, at, words) in cases {
            write(text);
            let errors = store().err().expect("refused at start");
            let found = |errors: &[String]| {
                errors.iter().any(|e| {
                    e.contains(&format!("{}", file.display()))
                        && e.contains(at)
                        && e.contains(words)
                })
            };
            assert!(found(&errors), "{text}: {errors:?}");

            // Loaded without it; an edit adding it is refused, the old stays.
            write(good);
            let store = store().expect("loads");
            assert_eq!(metrics.policy_synchronized.get(), 1);
            let before = store.current();
            write(text);
            let errors = store.reload(&[]).expect_err("refused on reload");
            assert!(found(&errors), "{text}: {errors:?}");
            assert_eq!(metrics.policy_synchronized.get(), 0, "{text}");
            let current = store.current();
            assert!(Arc::ptr_eq(&before, &current), "the old set stays");
            assert!(current.get("p").expect("p").credentials.is_empty());
            write(good);
            store.reload(&[]).expect("a good edit reloads");
            assert_eq!(metrics.policy_synchronized.get(), 1);
        }
    }

    /// A reload keeps the very policy (the same `Arc`) whose file did not
    /// change, so what was admitted under it stands; an edited policy is
    /// new, and so is one whose file went and came back different.
    #[test]
    fn a_reload_keeps_the_policies_it_did_not_change() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, text: &str| {
            std::fs::write(dir.path().join(name), text).expect("write");
        };
        write("a.yaml", "network:\n  deny_out: [ALL_TRAFFIC]\n");
        write("b.yaml", "network:\n  deny_out: [ALL_TRAFFIC]\n");
        let store = PolicyStore::load(
            dir.path(),
            Arc::default(),
            Arc::default(),
            Arc::new(Metrics::new()),
        )
        .expect("loads");
        let before = store.current();

        write("b.yaml", "network:\n  allow_out: [\"example.com\"]\n");
        store.reload(&[]).expect("reloads");
        let after = store.current();
        let same =
            |name: &str| Arc::ptr_eq(before.get(name).expect(name), after.get(name).expect(name));
        assert!(same("a"), "an untouched policy is kept");
        assert!(!same("b"), "an edited one is new");

        // Rewritten with the same text: still the same policy.
        write("a.yaml", "network:\n  deny_out: [ALL_TRAFFIC]\n");
        store.reload(&[]).expect("reloads");
        assert!(Arc::ptr_eq(
            after.get("a").expect("a"),
            store.current().get("a").expect("a")
        ));
    }

    /// What the store serves is built: every policy's credential bindings
    /// are compiled against the daemon's credentials as it loads, and a
    /// policy kept across a reload keeps them (the credentials change only
    /// with a restart).
    #[test]
    fn served_policies_carry_their_bindings_across_reloads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, text: &str| {
            std::fs::write(dir.path().join(name), text).expect("write");
        };
        let known =
            "[{name: known, source: {env: K}, hosts: [api.example.com], scheme: {type: bearer}}]";
        let credentials: Vec<CredentialConfig> = serde_yaml::from_str(known).expect("credential");
        write("a.yaml", "credentials:\n  - credential: known\n");
        write("b.yaml", "{}\n");
        let store = PolicyStore::load(
            dir.path(),
            Arc::default(),
            credentials.into(),
            Arc::new(Metrics::new()),
        )
        .expect("loads");
        let bound = |set: &PolicySet, name: &str| -> Vec<String> {
            let policy = set.get(name).expect(name);
            policy
                .bindings
                .bound_credentials()
                .map(str::to_owned)
                .collect()
        };
        let before = store.current();
        assert_eq!(bound(&before, "a"), ["known"]);
        assert!(bound(&before, "b").is_empty());

        write("b.yaml", "dry_run: true\n");
        store.reload(&[]).expect("reloads");
        let after = store.current();
        assert!(Arc::ptr_eq(
            before.get("a").expect("a"),
            after.get("a").expect("a")
        ));
        assert_eq!(bound(&after, "a"), ["known"]);
    }

    #[test]
    fn seen_table() {
        let dir = Path::new("/etc/sluice/policies");
        let cases: &[(&[&str], Option<Seen>)] = &[
            (&["/etc/sluice/policies/a.yaml"], Some(Seen::Changed)),
            (&["/etc/sluice/policies/..data"], Some(Seen::Changed)),
            (&["/etc/sluice/policies"], Some(Seen::Replaced)),
            (
                &["/etc/sluice/policies.new", "/etc/sluice/policies"],
                Some(Seen::Replaced),
            ),
            (&["/etc/sluice/sluice.yaml"], None),
            (&["/etc/sluice/policies.old/a.yaml"], None),
            (&["/etc/sluice/policies/sub/a.yaml"], None),
        ];
        for (paths, want) in cases {
            let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
            assert_eq!(seen(dir, &paths), *want, "{paths:?}");
        }
    }

    /// A policy enabling a stage that reads requests is decrypted unless it
    /// says otherwise; one that says `decide_without_decryption: true`
    /// beside such stages is warned of at start and on every reload, and
    /// counted per policy in `sluice_policy_warnings`.
    #[test]
    fn stages_that_never_see_https_are_warned_of_at_start_and_reload() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, text: &str| {
            std::fs::write(dir.path().join(name), text).expect("write");
        };
        let relay =
            "network: {decide_without_decryption: true}\npii: {enabled: true}\ndry_run: true\n";
        write("relay.yaml", relay);
        write("reads.yaml", "pii: {enabled: true}\n");
        write("plain.yaml", "{}\n");
        let metrics = Arc::new(Metrics::new());
        let store = PolicyStore::load(dir.path(), Arc::default(), Arc::default(), metrics.clone())
            .expect("loads");
        let warnings = |name: &str| metrics.policy_warnings.with_label_values(&[name]).get();
        assert_eq!(
            (warnings("relay"), warnings("reads"), warnings("plain")),
            (2, 0, 0)
        );
        let current = store.current();
        let decrypts = |name: &str| {
            !current
                .get(name)
                .expect(name)
                .network
                .decide_without_decryption()
        };
        assert!(decrypts("reads"), "pii alone turns interception on");
        assert!(!decrypts("relay") && !decrypts("plain"));

        std::fs::remove_file(dir.path().join("relay.yaml")).expect("remove");
        write(
            "reads.yaml",
            "network: {decide_without_decryption: true}\ninjection_defense: true\n",
        );
        store.reload(&[]).expect("reloads");
        assert_eq!(warnings("reads"), 1);
        let text = metrics.render();
        assert!(
            !text.contains("policy=\"relay\""),
            "a removed policy keeps no gauge"
        );
    }
}
