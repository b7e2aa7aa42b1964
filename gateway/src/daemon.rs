//! `sluice run`: wires the pieces together and owns the registrations.
//!
//! Start-up order matters for the no-bypass promise: the programs are
//! attached (replacing any pinned ones) before anything else, the kernel's
//! identity map keeps the previous run's registrations until the new run has
//! re-registered its own, and only then are stale entries removed.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    net::SocketAddr,
    path::Path,
    sync::{Arc, Mutex, RwLock},
    time::Duration,
};

use anyhow::Context as _;
use aya::maps::{MapData, RingBuf};
use gateway_common::{Refusal, kind};
use tokio::{io::unix::AsyncFd, task::JoinHandle};

use crate::{
    admin::{
        self,
        api::{AdminError, Backend, SandboxInfo, SandboxSpec, SessionInfo, SessionSpec, Status},
    },
    allow::Allowlist,
    audit::{Audit, Event},
    cgroup::SandboxRoot,
    config::Config,
    dns,
    metrics::{self, Metrics},
    netns::{self, Listeners},
    proxy::{Identities, Limits, Proxy, Who},
    registry::{Registry, Sandbox, Session, Source, State},
    resolve::Resolver,
    steer::ebpf::{Steering, parse_event},
};

/// The registry plus compiled policies: answers "who is this cgroup id".
struct Directory {
    registry: RwLock<Registry>,
    policies: BTreeMap<String, Arc<Allowlist>>,
}

impl Identities for Directory {
    fn who(&self, identity: u64) -> Option<Who> {
        let registry = self.registry.read().unwrap_or_else(|e| e.into_inner());
        let owner = registry.owner(identity)?;
        let sandbox = registry.get(&owner.sandbox)?;
        Some(Who {
            sandbox: Arc::from(owner.sandbox.as_str()),
            session: owner.session.as_deref().map(Arc::from),
            allow: self.policies.get(&sandbox.policy)?.clone(),
        })
    }
}

/// Listeners opened inside one sandbox network namespace.
struct Namespace {
    tasks: Vec<JoinHandle<()>>,
    users: BTreeSet<String>,
}

pub struct Daemon {
    config: Config,
    root: SandboxRoot,
    steering: Arc<Steering>,
    directory: Arc<Directory>,
    proxy: Arc<Proxy>,
    resolver: Arc<Resolver>,
    metrics: Arc<Metrics>,
    audit: Audit,
    /// namespace cookie → its listeners; and sandbox id → cookie.
    namespaces: Mutex<HashMap<u64, Namespace>>,
    sandbox_netns: Mutex<HashMap<String, u64>>,
    host_ports: (u16, u16),
    host_cookie: u64,
    metrics_addr: Option<SocketAddr>,
}

/// Runs the daemon until SIGTERM or SIGINT.
pub async fn run(config_path: &Path) -> anyhow::Result<()> {
    let config = Config::load(config_path)?;
    let root = SandboxRoot::open(&config.cgroup_root)?;
    let metrics = Arc::new(Metrics::new());
    let audit = Audit::open(&config.audit, metrics.clone())
        .with_context(|| format!("opening audit log {}", config.audit))?;
    let resolver = Arc::new(Resolver::new(&config.resolver)?);
    let policies = config
        .policies
        .iter()
        .map(|(name, policy)| (name.clone(), Arc::new(Allowlist::compile(name, policy))))
        .collect();
    let directory = Arc::new(Directory {
        registry: RwLock::new(Registry::default()),
        policies,
    });

    let steering = Arc::new(
        Steering::attach(&config.bpffs, &root)
            .with_context(|| format!("attaching eBPF programs to {}", root.path.display()))?,
    );
    let host = netns::open_listeners(None, config.listen.tcp_port, config.listen.dns_port)?;
    let host_ports = (host.tcp_port(), host.dns_port());
    steering.set_listener(host.cookie, host_ports.0, host_ports.1)?;

    let metrics_listener = match config.metrics {
        Some(addr) => Some(
            metrics::bind(addr)
                .await
                .with_context(|| format!("binding metrics on {addr}"))?,
        ),
        None => None,
    };
    let metrics_addr = metrics_listener.as_ref().and_then(|l| l.local_addr().ok());
    let admin_listener = admin::server::bind(&config.admin_socket)
        .with_context(|| format!("binding admin socket {}", config.admin_socket.display()))?;

    let proxy = Arc::new(Proxy {
        orig: steering.clone(),
        identities: directory.clone(),
        resolver: resolver.clone(),
        metrics: metrics.clone(),
        audit: audit.clone(),
        limits: Limits {
            sniff: Duration::from_millis(config.limits.sniff_timeout_ms),
            connect: Duration::from_millis(config.limits.connect_timeout_ms),
        },
    });
    let daemon = Arc::new(Daemon {
        root,
        steering,
        directory,
        proxy,
        resolver,
        metrics,
        audit,
        namespaces: Mutex::new(HashMap::new()),
        sandbox_netns: Mutex::new(HashMap::new()),
        host_ports,
        host_cookie: host.cookie,
        metrics_addr,
        config,
    });
    let _host_tasks = daemon.serve_listeners(host);
    daemon.restore_registrations().await?;

    if let Some(listener) = metrics_listener {
        let refresh = {
            let daemon = daemon.clone();
            let seen = Mutex::new(HashMap::<u32, u64>::new());
            Arc::new(move || daemon.refresh_kernel_counters(&seen)) as Arc<dyn Fn() + Send + Sync>
        };
        tokio::spawn(metrics::serve(listener, daemon.metrics.clone(), refresh));
    }
    if let Some(events) = daemon.steering.take_events() {
        tokio::spawn(daemon.clone().read_refusal_events(events));
    }
    let guard = admin::PeerGuard::new(daemon.root.relative.clone());
    tokio::spawn(admin::server::serve(admin_listener, daemon.clone(), guard));

    tracing::info!(
        root = %daemon.root.path.display(),
        tcp_port = host_ports.0,
        dns_port = host_ports.1,
        metrics = ?metrics_addr,
        "sluice is steering"
    );
    wait_for_shutdown().await;
    tracing::info!(
        "shutting down; the pinned programs stay attached, so sandboxes are refused until the next start"
    );
    Ok(())
}

async fn wait_for_shutdown() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

impl Daemon {
    /// Registers the config's sandboxes (an error is fatal: the operator
    /// wrote them), then the persisted run-time ones (an error drops that
    /// registration with a warning), then clears kernel entries nobody owns.
    async fn restore_registrations(&self) -> anyhow::Result<()> {
        let config_sandboxes = self.config.sandboxes.clone();
        for sandbox in config_sandboxes {
            let spec = SandboxSpec {
                id: sandbox.id.clone(),
                cgroup: sandbox.cgroup,
                netns: sandbox.netns,
                policy: Some(sandbox.policy),
            };
            self.register_sandbox(spec, Source::Config)
                .await
                .with_context(|| format!("sandbox `{}` from the config", sandbox.id))?;
        }
        let state = State::load(&self.config.state_dir)?;
        for sandbox in state.sandboxes {
            let id = sandbox.id.clone();
            let spec = SandboxSpec {
                id: sandbox.id,
                cgroup: sandbox.cgroup,
                netns: sandbox.netns,
                policy: Some(sandbox.policy),
            };
            if let Err(err) = self.register_sandbox(spec, Source::Api).await {
                tracing::warn!(sandbox = %id, %err, "dropping a saved registration");
            }
        }
        for session in state.sessions {
            let spec = SessionSpec {
                id: session.id.clone(),
                cgroup: session.cgroup,
            };
            if let Err(err) = self.register_session(&session.sandbox, spec) {
                tracing::warn!(sandbox = %session.sandbox, session = %session.id, %err, "dropping a saved session");
            }
        }
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
            .chain(self.lock_namespaces().keys().copied())
            .collect();
        for cookie in self.steering.listener_namespaces() {
            if !open.contains(&cookie) {
                self.steering.remove_listener(cookie);
            }
        }
        self.metrics.registered.set(owned.len() as i64);
        Ok(())
    }

    async fn register_sandbox(
        &self,
        spec: SandboxSpec,
        source: Source,
    ) -> Result<SandboxInfo, AdminError> {
        let policy = spec.policy.clone().unwrap_or_else(|| "default".to_owned());
        if !self.directory.policies.contains_key(&policy) {
            return Err(AdminError::Invalid(format!(
                "policy `{policy}` is not defined in the config (known: {})",
                self.directory
                    .policies
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
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
            policy,
            source,
            sessions: BTreeMap::new(),
        };
        self.write_registry()
            .insert_sandbox(sandbox.clone())
            .map_err(registry_error)?;
        if let Some(path) = &spec.netns
            && let Err(err) = self.join_namespace(&spec.id, path).await
        {
            let _ = self.write_registry().remove_sandbox(&spec.id);
            return Err(err);
        }
        if let Err(err) = self.steering.register(cgroup_id, kind::SANDBOX) {
            self.forget_sandbox(&spec.id);
            return Err(AdminError::Internal(err.to_string()));
        }
        self.audit_registration("add", &spec.id, None, &sandbox.cgroup);
        Ok(info(&sandbox))
    }

    fn register_session(
        &self,
        sandbox: &str,
        spec: SessionSpec,
    ) -> Result<SessionInfo, AdminError> {
        let (cgroup, cgroup_id) = self
            .root
            .member(&spec.cgroup)
            .map_err(|e| AdminError::Invalid(e.to_string()))?;
        let session = Session {
            id: spec.id.clone(),
            cgroup,
            cgroup_id,
        };
        self.write_registry()
            .insert_session(sandbox, session.clone())
            .map_err(registry_error)?;
        if let Err(err) = self.steering.register(cgroup_id, kind::SESSION) {
            let _ = self.write_registry().remove_session(sandbox, &spec.id);
            return Err(AdminError::Internal(err.to_string()));
        }
        self.audit_registration("add", sandbox, Some(&spec.id), &session.cgroup);
        Ok(SessionInfo {
            id: session.id,
            cgroup: session.cgroup,
            cgroup_id,
        })
    }

    /// Drops a sandbox everywhere: kernel first, so its sockets are refused
    /// before anything else forgets it.
    fn forget_sandbox(&self, id: &str) -> Option<Sandbox> {
        let sandbox = self.write_registry().remove_sandbox(id).ok()?;
        self.steering.unregister(sandbox.cgroup_id);
        for session in sandbox.sessions.values() {
            self.steering.unregister(session.cgroup_id);
        }
        self.leave_namespace(id);
        Some(sandbox)
    }

    /// Opens listeners in the sandbox's namespace (or shares those already
    /// open there) and publishes them to the kernel.
    async fn join_namespace(&self, sandbox: &str, path: &Path) -> Result<(), AdminError> {
        let owned = path.to_owned();
        let listeners =
            tokio::task::spawn_blocking(move || netns::open_listeners(Some(&owned), 0, 0))
                .await
                .map_err(|e| AdminError::Internal(e.to_string()))?
                .map_err(|e| AdminError::Invalid(e.to_string()))?;
        let cookie = listeners.cookie;
        let mut namespaces = self.lock_namespaces();
        if let Some(ns) = namespaces.get_mut(&cookie) {
            // Already served (another sandbox, or another path to the same
            // namespace): the fresh sockets are simply closed.
            ns.users.insert(sandbox.to_owned());
        } else {
            let ports = (listeners.tcp_port(), listeners.dns_port());
            let tasks = self.serve_listeners(listeners);
            self.steering
                .set_listener(cookie, ports.0, ports.1)
                .map_err(|e| AdminError::Internal(e.to_string()))?;
            namespaces.insert(
                cookie,
                Namespace {
                    tasks,
                    users: BTreeSet::from([sandbox.to_owned()]),
                },
            );
        }
        drop(namespaces);
        self.lock_sandbox_netns().insert(sandbox.to_owned(), cookie);
        Ok(())
    }

    fn leave_namespace(&self, sandbox: &str) {
        let Some(cookie) = self.lock_sandbox_netns().remove(sandbox) else {
            return;
        };
        let mut namespaces = self.lock_namespaces();
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

    fn serve_listeners(&self, listeners: Listeners) -> Vec<JoinHandle<()>> {
        let cookie = listeners.cookie;
        let mut tasks = Vec::new();
        for tcp in std::iter::once(listeners.tcp4).chain(listeners.tcp6) {
            match tokio::net::TcpListener::from_std(tcp) {
                Ok(listener) => {
                    tasks.push(tokio::spawn(self.proxy.clone().serve(listener, cookie)))
                }
                Err(err) => tracing::error!(%err, "cannot serve a TCP listener"),
            }
        }
        for udp in std::iter::once(listeners.dns4).chain(listeners.dns6) {
            match tokio::net::UdpSocket::from_std(udp) {
                Ok(socket) => {
                    let (resolver, metrics) = (self.resolver.clone(), self.metrics.clone());
                    tasks.push(tokio::spawn(async move {
                        if let Err(err) = dns::serve(socket, resolver, metrics).await {
                            tracing::error!(%err, "DNS listener stopped");
                        }
                    }));
                }
                Err(err) => tracing::error!(%err, "cannot serve a DNS socket"),
            }
        }
        tasks
    }

    fn persist(&self) -> Result<(), AdminError> {
        let state = self.read_registry().state();
        state.save(&self.config.state_dir).map_err(|e| {
            AdminError::Internal(format!(
                "saving registrations in {}: {e}",
                self.config.state_dir.display()
            ))
        })
    }

    /// Copies the kernel's refusal counters into the metrics (on scrape).
    fn refresh_kernel_counters(&self, seen: &Mutex<HashMap<u32, u64>>) {
        let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        for (reason, total) in self.steering.refusal_counts() {
            let last = seen.entry(reason as u32).or_insert(0);
            if total > *last {
                self.metrics
                    .ebpf_refusals
                    .with_label_values(&[reason.as_str()])
                    .inc_by(total - *last);
                *last = total;
            }
        }
    }

    /// Turns the programs' refusal events into audit events.
    async fn read_refusal_events(self: Arc<Self>, events: RingBuf<MapData>) {
        // SAFETY: the RingBuf owns its map fd, which stays open and the same
        // for as long as the AsyncFd owns the RingBuf.
        let registered =
            unsafe { AsyncFd::register_with_interest(events, tokio::io::Interest::READABLE) };
        let mut fd = match registered {
            Ok(fd) => fd,
            Err(err) => {
                let err = err.to_string();
                tracing::error!(%err, "cannot poll the eBPF event ring; kernel refusals are counted but not audited");
                return;
            }
        };
        loop {
            let Ok(mut guard) = fd.readable_mut().await else {
                return;
            };
            let ring = guard.get_inner_mut();
            while let Some(item) = ring.next() {
                if let Some(event) = parse_event(&item) {
                    self.audit_kernel_refusal(&event);
                }
            }
            guard.clear_ready();
        }
    }

    fn audit_kernel_refusal(&self, event: &gateway_common::RefusalEvent) {
        let reason = Refusal::ALL
            .get(event.reason as usize)
            .map_or("unknown", |r| r.as_str());
        let path = self.root.find(event.cgroup);
        let owner = path
            .as_deref()
            .and_then(|p| self.read_registry().owner_of_path(p));
        let dst = (event.port != 0).then(|| event_addr(event).to_string());
        self.audit.record(&Event {
            event: "kernel_refusal",
            verdict: "deny",
            reason,
            sandbox: owner.as_ref().map(|o| o.sandbox.as_str()),
            session: owner.as_ref().and_then(|o| o.session.as_deref()),
            cgroup: Some(
                path.map(|p| p.display().to_string())
                    .unwrap_or_else(|| format!("id:{}", event.cgroup)),
            ),
            dst,
            detail: Some(format!(
                "type={} protocol={}",
                event.sock_type, event.protocol
            )),
            ..Event::default()
        });
    }

    fn audit_registration(
        &self,
        verdict: &str,
        sandbox: &str,
        session: Option<&str>,
        cgroup: &Path,
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
            cgroup: Some(cgroup.display().to_string()),
            ..Event::default()
        });
    }

    fn read_registry(&self) -> std::sync::RwLockReadGuard<'_, Registry> {
        self.directory
            .registry
            .read()
            .unwrap_or_else(|e| e.into_inner())
    }
    fn write_registry(&self) -> std::sync::RwLockWriteGuard<'_, Registry> {
        self.directory
            .registry
            .write()
            .unwrap_or_else(|e| e.into_inner())
    }
    fn lock_namespaces(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Namespace>> {
        self.namespaces.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn lock_sandbox_netns(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        self.sandbox_netns.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Backend for Daemon {
    fn status(&self) -> Status {
        Status {
            ready: true,
            version: env!("CARGO_PKG_VERSION").to_owned(),
            cgroup_root: self.root.path.clone(),
            metrics_addr: self.metrics_addr.map(|a| a.to_string()),
            tcp_port: self.host_ports.0,
            dns_port: self.host_ports.1,
            sandboxes: self.read_registry().sandboxes().count(),
            programs: self
                .steering
                .attached
                .iter()
                .map(|p| (*p).to_owned())
                .collect(),
        }
    }

    fn list(&self) -> Vec<SandboxInfo> {
        self.read_registry().sandboxes().map(info).collect()
    }

    async fn add_sandbox(&self, spec: SandboxSpec) -> Result<SandboxInfo, AdminError> {
        spec.validate()?;
        let info = self.register_sandbox(spec, Source::Api).await?;
        if let Err(err) = self.persist() {
            self.forget_sandbox(&info.id);
            return Err(err);
        }
        Ok(info)
    }

    async fn remove_sandbox(&self, id: &str) -> Result<(), AdminError> {
        let sandbox = self
            .forget_sandbox(id)
            .ok_or_else(|| AdminError::NotFound(format!("no sandbox `{id}`")))?;
        self.audit_registration("remove", id, None, &sandbox.cgroup);
        self.persist()
    }

    async fn add_session(
        &self,
        sandbox: &str,
        spec: SessionSpec,
    ) -> Result<SessionInfo, AdminError> {
        spec.validate()?;
        if self.read_registry().get(sandbox).is_none() {
            return Err(AdminError::NotFound(format!("no sandbox `{sandbox}`")));
        }
        let info = self.register_session(sandbox, spec)?;
        if let Err(err) = self.persist() {
            let _ = self.write_registry().remove_session(sandbox, &info.id);
            self.steering.unregister(info.cgroup_id);
            return Err(err);
        }
        Ok(info)
    }

    async fn remove_session(&self, sandbox: &str, session: &str) -> Result<(), AdminError> {
        let removed = self
            .write_registry()
            .remove_session(sandbox, session)
            .map_err(|e| AdminError::NotFound(e.to_string()))?;
        self.steering.unregister(removed.cgroup_id);
        self.audit_registration("remove", sandbox, Some(session), &removed.cgroup);
        self.persist()
    }
}

fn info(sandbox: &Sandbox) -> SandboxInfo {
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
            })
            .collect(),
    }
}

fn registry_error(err: crate::registry::RegistryError) -> AdminError {
    use crate::registry::RegistryError as E;
    match err {
        E::InvalidId(_) | E::SessionOutside { .. } => AdminError::Invalid(err.to_string()),
        E::NoSandbox(_) | E::NoSession { .. } => AdminError::NotFound(err.to_string()),
        E::DuplicateSandbox(_)
        | E::DuplicateSession { .. }
        | E::CgroupTaken { .. }
        | E::Nested { .. } => AdminError::Conflict(err.to_string()),
    }
}

fn event_addr(event: &gateway_common::RefusalEvent) -> SocketAddr {
    let orig = gateway_common::OrigDst {
        addr: event.addr,
        port: event.port,
        family: event.family,
        _pad: 0,
        identity: 0,
        netns: 0,
    };
    crate::steer::steered(&orig).dst
}
