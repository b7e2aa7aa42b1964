//! Adding and removing sandboxes and sessions: the registry, the kernel's
//! identity map, the sandbox's DNS listener, its namespace's steering
//! listener, and the state file, kept in step.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
    sync::Arc,
};

use anyhow::Context as _;
use gateway_common::kind;
use tokio::task::JoinHandle;

use super::{Daemon, Namespace, SandboxRuntime, lock};

/// Debian's bundle of the system's trusted roots.
const SYSTEM_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";
use crate::{
    admin::api::{AdminError, SandboxInfo, SandboxSpec, SessionInfo, SessionSpec},
    audit::Event,
    dns,
    netns::{self, DnsSockets, Listeners},
    registry::{RegistryError, Sandbox, Session, Source, State},
    sandbox_dns::SandboxDns,
};

impl Daemon {
    /// Registers the config's sandboxes (an error is fatal: the operator
    /// wrote them), then the persisted run-time ones (an error drops that
    /// registration with a warning), then clears kernel entries nobody owns.
    pub(super) async fn restore_registrations(&self) -> anyhow::Result<()> {
        let _registering = self.registering.lock().await;
        for sandbox in self.config.sandboxes.clone() {
            let spec = SandboxSpec {
                id: sandbox.id.clone(),
                cgroup: sandbox.cgroup,
                netns: sandbox.netns,
                policy: Some(sandbox.policy),
                ca_bundle: sandbox.ca_bundle,
                owner: sandbox.owner,
            };
            self.register_sandbox(spec, Source::Config)
                .await
                .with_context(|| format!("sandbox `{}` from the config", sandbox.id))?;
        }
        let state = State::load(&self.config.state_dir)?;
        let mut kept = State::default();
        for saved in state.sandboxes {
            let spec = SandboxSpec {
                id: saved.id.clone(),
                cgroup: saved.cgroup.clone(),
                netns: saved.netns.clone(),
                policy: Some(saved.policy.clone()),
                ca_bundle: saved.ca_bundle.clone(),
                owner: saved.owner.clone(),
            };
            if let Err(err) = self.register_sandbox(spec, Source::Api).await {
                // A cgroup that is gone is a sandbox torn down meanwhile.
                // Anything else (its policy or namespace missing for now)
                // may pass at the next start: the entry is kept, not lost.
                if self.root.member(&saved.cgroup).is_err() {
                    tracing::warn!(sandbox = %saved.id, %err, "dropping a saved registration: its cgroup is gone");
                } else {
                    tracing::warn!(sandbox = %saved.id, %err, "a saved registration cannot be restored; kept for the next start (`sluice sandbox rm` drops it)");
                    kept.sandboxes.push(saved);
                }
            }
        }
        for saved in state.sessions {
            let spec = SessionSpec {
                id: saved.id.clone(),
                cgroup: saved.cgroup.clone(),
                task: saved.task.clone(),
            };
            if let Err(err) = self.register_session(&saved.sandbox, spec) {
                let owner_kept = kept.sandboxes.iter().any(|s| s.id == saved.sandbox);
                if owner_kept || self.root.member(&saved.cgroup).is_ok() {
                    tracing::warn!(sandbox = %saved.sandbox, session = %saved.id, %err, "a saved session cannot be restored; kept for the next start");
                    kept.sessions.push(saved);
                } else {
                    tracing::warn!(sandbox = %saved.sandbox, session = %saved.id, %err, "dropping a saved session: its cgroup is gone");
                }
            }
        }
        *lock(&self.unrestored) = kept;
        self.persist().map_err(|e| anyhow::anyhow!("{e}"))?;

        let owned: BTreeSet<u64> = self
            .read_registry()
            .cgroup_ids()
            .map(|(id, _)| id)
            .collect();
        for id in self.steering.registered() {
            if !owned.contains(&id) {
                self.steering.unregister(id);
            }
        }
        let open: BTreeSet<u64> = std::iter::once(self.host_cookie)
            .chain(lock(&self.namespaces).keys().copied())
            .collect();
        for cookie in self.steering.listener_namespaces() {
            if !open.contains(&cookie) {
                self.steering.remove_listener(cookie);
            }
        }
        self.metrics.registered.set(owned.len() as i64);
        Ok(())
    }

    pub(super) async fn register_sandbox(
        &self,
        spec: SandboxSpec,
        source: Source,
    ) -> Result<SandboxInfo, AdminError> {
        let policy = spec.policy.clone().unwrap_or_else(|| "default".to_owned());
        let policies = self.directory.store.current();
        if policies.get(&policy).is_none() {
            return Err(AdminError::Invalid(format!(
                "policy `{policy}` is not in {} (known: {})",
                self.config.policy_dir.display(),
                policies.names().collect::<Vec<_>>().join(", ")
            )));
        }
        let (cgroup, cgroup_id) = self
            .root
            .member(&spec.cgroup)
            .map_err(|e| AdminError::Invalid(e.to_string()))?;
        let sandbox = Sandbox {
            id: spec.id.clone(),
            cgroup,
            cgroup_id,
            netns: spec.netns.clone(),
            policy: policy.clone(),
            ca_bundle: spec.ca_bundle.clone(),
            source,
            sessions: BTreeMap::new(),
            owner: spec.owner.clone(),
        };
        self.write_registry()
            .insert_sandbox(sandbox.clone())
            .map_err(registry_error)?;
        // From here on, any failure undoes everything done so far. The
        // bundle is written only once the id is known to be free, so a
        // refused duplicate writes nothing.
        let bundle = spec
            .ca_bundle
            .as_deref()
            .map(|path| self.write_ca_bundle(path));
        if let Some(Err(err)) = bundle {
            self.forget_sandbox(&spec.id);
            return Err(err);
        }
        if let Err(err) = self
            .start_sandbox(&spec.id, &policy, spec.netns.as_deref())
            .await
        {
            self.forget_sandbox(&spec.id);
            return Err(err);
        }
        let dns_port = self.dns_port(&spec.id);
        if let Err(err) = self.steering.register(cgroup_id, kind::SANDBOX, dns_port) {
            self.forget_sandbox(&spec.id);
            return Err(AdminError::Internal(err.to_string()));
        }
        self.audit_registration("add", &spec.id, None, Some(&sandbox.cgroup));
        Ok(info(&sandbox))
    }

    /// Opens the sandbox's DNS listener (and its namespace's steering
    /// listener, if it has a namespace of its own) and starts serving them.
    async fn start_sandbox(
        &self,
        id: &str,
        policy: &str,
        netns: Option<&Path>,
    ) -> Result<(), AdminError> {
        let netns_cookie = match netns {
            Some(path) => Some(self.join_namespace(id, path).await?),
            None => None,
        };
        let owned = netns.map(Path::to_owned);
        let opened = tokio::task::spawn_blocking(move || netns::open_dns(owned.as_deref()))
            .await
            .map_err(|e| AdminError::Internal(e.to_string()))
            .and_then(|r| r.map_err(|e| AdminError::Invalid(e.to_string())));
        let sockets = match opened {
            Ok(sockets) => sockets,
            Err(err) => {
                if let Some(cookie) = netns_cookie {
                    self.leave_namespace(id, cookie);
                }
                return Err(err);
            }
        };
        let gate = Arc::new(SandboxDns::new(
            id,
            policy,
            (
                self.directory.store.clone(),
                self.directory.overlays.clone(),
            ),
            self.audit.clone(),
            self.metrics.clone(),
        ));
        self.directory
            .dns
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_owned(), gate.clone());
        let dns_port = sockets.port;
        let tasks = self.serve_dns(sockets, gate);
        lock(&self.runtimes).insert(
            id.to_owned(),
            SandboxRuntime {
                dns_port,
                tasks,
                netns: netns_cookie,
            },
        );
        Ok(())
    }

    /// Writes the bundle a sandbox should trust: Sluice's CA first, then the
    /// system roots, so hosts that are not intercepted still verify. Atomic,
    /// mode 0644 (it holds no secret), following no symbolic link: the path
    /// is usually in the sandbox's own file system ([`super::ca_bundle`]).
    fn write_ca_bundle(&self, path: &Path) -> Result<(), AdminError> {
        let mut bundle = self.ca_pem.clone();
        if let Ok(system) = std::fs::read_to_string(SYSTEM_BUNDLE) {
            bundle.push('\n');
            bundle.push_str(&system);
        }
        super::ca_bundle::write(path, bundle.as_bytes()).map_err(|e| {
            AdminError::Invalid(format!(
                "cannot write the CA bundle {}: {e}",
                path.display()
            ))
        })
    }

    fn dns_port(&self, sandbox: &str) -> u16 {
        lock(&self.runtimes).get(sandbox).map_or(0, |r| r.dns_port)
    }

    pub(super) fn register_session(
        &self,
        sandbox: &str,
        spec: SessionSpec,
    ) -> Result<SessionInfo, AdminError> {
        let (cgroup, cgroup_id) = self
            .root
            .member(&spec.cgroup)
            .map_err(|e| AdminError::Invalid(e.to_string()))?;
        if let Some(task) = &spec.task {
            self.check_pre_approvals(&task.pre_approved_apps)?;
        }
        let session = Session {
            id: spec.id.clone(),
            cgroup,
            cgroup_id,
            task: spec.task.clone(),
        };
        self.write_registry()
            .insert_session(sandbox, session.clone())
            .map_err(registry_error)?;
        let dns_port = self.dns_port(sandbox);
        if let Err(err) = self.steering.register(cgroup_id, kind::SESSION, dns_port) {
            let _ = self.write_registry().remove_session(sandbox, &spec.id);
            return Err(AdminError::Internal(err.to_string()));
        }
        self.audit_registration("add", sandbox, Some(&spec.id), Some(&session.cgroup));
        if let Some(task) = &session.task {
            self.approvals()
                .set_task(sandbox, &session.id, &task.pre_approved_apps);
        }
        Ok(SessionInfo {
            id: session.id,
            cgroup: session.cgroup,
            cgroup_id,
            task: session.task,
        })
    }

    /// Drops a sandbox everywhere: kernel first, so its sockets are refused
    /// before anything else forgets it.
    pub(super) fn forget_sandbox(&self, id: &str) -> Option<Sandbox> {
        let sandbox = self.write_registry().remove_sandbox(id).ok()?;
        self.steering.unregister(sandbox.cgroup_id);
        self.approvals().forget_sandbox(id);
        self.forget_intercepted(id, None);
        for session in sandbox.sessions.values() {
            self.steering.unregister(session.cgroup_id);
        }
        self.directory
            .dns
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        if let Some(runtime) = lock(&self.runtimes).remove(id) {
            for task in runtime.tasks {
                task.abort();
            }
            if let Some(cookie) = runtime.netns {
                self.leave_namespace(id, cookie);
            }
        }
        self.directory.changed();
        Some(sandbox)
    }

    pub(super) fn forget_session(
        &self,
        sandbox: &str,
        session: &str,
    ) -> Result<Session, AdminError> {
        let removed = self
            .write_registry()
            .remove_session(sandbox, session)
            .map_err(|e| AdminError::NotFound(e.to_string()))?;
        self.steering.unregister(removed.cgroup_id);
        self.forget_session_state(sandbox, session);
        self.directory.changed();
        Ok(removed)
    }

    /// Drops what Sluice keeps for a session besides its registration
    /// (approval grants, requests parked for it, its PII tokens), so that
    /// a session reusing the id starts from nothing. A session of a sandbox
    /// the explicit proxy serves, named by its tokens and never registered,
    /// ends with this alone: connections open under it go on (their token
    /// admitted them), and their next `ask` request parks again.
    pub(super) fn forget_session_state(&self, sandbox: &str, session: &str) {
        self.approvals().forget_session(sandbox, session);
        self.forget_intercepted(sandbox, Some(session));
    }

    /// Drops what the interceptor keeps for a removed session or sandbox
    /// ([`crate::intercept::Interceptor::forget`]).
    fn forget_intercepted(&self, sandbox: &str, session: Option<&str>) {
        if let Some(interceptor) = &self.proxy.interceptor {
            interceptor.forget(sandbox, session);
        }
    }

    /// Opens steering listeners in the namespace (or shares those already
    /// open there) and publishes them to the kernel; returns its cookie.
    async fn join_namespace(&self, sandbox: &str, path: &Path) -> Result<u64, AdminError> {
        let owned = path.to_owned();
        let listeners = tokio::task::spawn_blocking(move || netns::open_listeners(Some(&owned), 0))
            .await
            .map_err(|e| AdminError::Internal(e.to_string()))?
            .map_err(|e| AdminError::Invalid(e.to_string()))?;
        let cookie = listeners.cookie;
        if cookie == self.host_cookie {
            // The host's own namespace, by another path: its listeners
            // are the daemon's and outlive every sandbox, so this one
            // neither republishes nor, on leaving, removes them.
            return Ok(cookie);
        }
        let mut namespaces = lock(&self.namespaces);
        if let Some(ns) = namespaces.get_mut(&cookie) {
            // Already served (another sandbox, or another path to the same
            // namespace): the fresh sockets are simply closed.
            ns.users.insert(sandbox.to_owned());
            return Ok(cookie);
        }
        let port = listeners.tcp_port();
        let tasks = self.serve_steering(listeners);
        if let Err(err) = self.steering.set_listener(cookie, port) {
            for task in tasks {
                task.abort();
            }
            return Err(AdminError::Internal(err.to_string()));
        }
        namespaces.insert(
            cookie,
            Namespace {
                tasks,
                users: BTreeSet::from([sandbox.to_owned()]),
            },
        );
        Ok(cookie)
    }

    fn leave_namespace(&self, sandbox: &str, cookie: u64) {
        let mut namespaces = lock(&self.namespaces);
        let Some(ns) = namespaces.get_mut(&cookie) else {
            return;
        };
        ns.users.remove(sandbox);
        if ns.users.is_empty() {
            self.steering.remove_listener(cookie);
            if let Some(ns) = namespaces.remove(&cookie) {
                for task in ns.tasks {
                    task.abort();
                }
            }
        }
    }

    pub(super) fn serve_steering(&self, listeners: Listeners) -> Vec<JoinHandle<()>> {
        let cookie = listeners.cookie;
        std::iter::once(listeners.tcp4)
            .chain(listeners.tcp6)
            .filter_map(|tcp| match tokio::net::TcpListener::from_std(tcp) {
                Ok(listener) => Some(tokio::spawn(self.proxy.clone().serve(listener, cookie))),
                Err(err) => {
                    tracing::error!(%err, "cannot serve a TCP listener");
                    None
                }
            })
            .collect()
    }

    fn serve_dns(&self, sockets: DnsSockets, gate: Arc<SandboxDns>) -> Vec<JoinHandle<()>> {
        std::iter::once(sockets.udp4)
            .chain(sockets.udp6)
            .filter_map(|udp| match tokio::net::UdpSocket::from_std(udp) {
                Ok(socket) => {
                    let (resolver, metrics) = (self.resolver.clone(), self.metrics.clone());
                    let gate: Arc<dyn dns::Gate> = gate.clone();
                    Some(tokio::spawn(async move {
                        if let Err(err) = dns::serve(socket, resolver, metrics, gate).await {
                            tracing::error!(%err, "DNS listener stopped");
                        }
                    }))
                }
                Err(err) => {
                    tracing::error!(%err, "cannot serve a DNS socket");
                    None
                }
            })
            .collect()
    }

    /// Drops a saved registration the start could not restore (and its
    /// sessions); true when there was one and it is not registered now.
    pub(super) fn forget_unrestored(&self, id: &str) -> bool {
        if self.read_registry().get(id).is_some() {
            return false;
        }
        let mut unrestored = lock(&self.unrestored);
        let before = unrestored.sandboxes.len();
        unrestored.sandboxes.retain(|s| s.id != id);
        unrestored.sessions.retain(|s| s.sandbox != id);
        unrestored.sandboxes.len() < before
    }

    /// Saves the registrations; the caller holds `registering`, which
    /// orders saves as it orders the changes they record.
    pub(super) fn persist(&self) -> Result<(), AdminError> {
        debug_assert!(
            self.registering.try_lock().is_err(),
            "persist runs under `registering`"
        );
        let mut state = self.read_registry().state();
        // Saved entries the start could not restore stay saved, unless a
        // registration of the same id has replaced them.
        let unrestored = lock(&self.unrestored);
        let taken: BTreeSet<&str> = state.sandboxes.iter().map(|s| s.id.as_str()).collect();
        let sandboxes: Vec<_> = unrestored
            .sandboxes
            .iter()
            .filter(|s| !taken.contains(s.id.as_str()))
            .cloned()
            .collect();
        let sessions: Vec<_> = unrestored
            .sessions
            .iter()
            .filter(|s| {
                !state
                    .sessions
                    .iter()
                    .any(|t| t.sandbox == s.sandbox && t.id == s.id)
            })
            .cloned()
            .collect();
        drop(unrestored);
        state.sandboxes.extend(sandboxes);
        state.sessions.extend(sessions);
        state.save(&self.config.state_dir).map_err(|e| {
            AdminError::Internal(format!(
                "saving registrations in {}: {e}",
                self.config.state_dir.display()
            ))
        })
    }

    pub(super) fn audit_registration(
        &self,
        verdict: &str,
        sandbox: &str,
        session: Option<&str>,
        cgroup: Option<&Path>,
    ) {
        self.metrics
            .registered
            .set(self.read_registry().cgroup_ids().count() as i64);
        self.audit.record(&Event {
            event: "registration",
            verdict,
            reason: "admin",
            sandbox: Some(sandbox),
            session,
            cgroup: cgroup.map(|c| c.display().to_string()),
            ..Event::default()
        });
    }
}

pub(super) fn info(sandbox: &Sandbox) -> SandboxInfo {
    SandboxInfo {
        id: sandbox.id.clone(),
        cgroup: sandbox.cgroup.clone(),
        cgroup_id: sandbox.cgroup_id,
        netns: sandbox.netns.clone(),
        policy: sandbox.policy.clone(),
        source: sandbox.source.as_str().to_owned(),
        sessions: sandbox
            .sessions
            .values()
            .map(|s| SessionInfo {
                id: s.id.clone(),
                cgroup: s.cgroup.clone(),
                cgroup_id: s.cgroup_id,
                task: s.task.clone(),
            })
            .collect(),
        owner: sandbox.owner.clone(),
    }
}

fn registry_error(err: RegistryError) -> AdminError {
    use RegistryError as E;
    match err {
        E::InvalidId(_) | E::SessionOutside { .. } => AdminError::Invalid(err.to_string()),
        E::NoSandbox(_) | E::NoSession { .. } => AdminError::NotFound(err.to_string()),
        E::DuplicateSandbox(_)
        | E::Reserved(_)
        | E::DuplicateSession { .. }
        | E::CgroupTaken { .. }
        | E::Nested { .. } => AdminError::Conflict(err.to_string()),
    }
}
