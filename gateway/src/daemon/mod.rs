//! `sluice run`: wires the pieces together and owns the registrations.
//!
//! Start-up order matters for the no-bypass promise: the programs are
//! attached (replacing any pinned ones) before anything else, the kernel's
//! identity map keeps the previous run's registrations until the new run has
//! re-registered its own, and only then are stale entries removed.
//!
//! `registrations` adds and removes sandboxes (kernel, listeners, state
//! file), `admin` answers the admin API, `kernel` turns the programs'
//! counters and refusal events into metrics and audit events, `lifecycle`
//! handles signals (reload, drain) and readiness.

mod admin;
mod ca_bundle;
mod explicit;
mod ingress;
mod kernel;
mod lifecycle;
mod overlays;
mod registrations;

use std::{
    collections::HashMap,
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, RwLock, atomic::AtomicBool},
    time::Duration,
};

use anyhow::Context as _;
use tokio::task::JoinHandle;

use crate::{
    audit::Audit,
    cgroup::SandboxRoot,
    config::{Config, SandboxConfig},
    credentials::{
        CredentialStore, Placeholders, ProcessEnv, kept::KeptTokens, load_or_create_key,
        token_endpoint::TokenEndpoint,
    },
    drain::Drain,
    intercept::{
        Interceptor, Limits as InterceptLimits, credential::Credentials, upstream::Upstreams,
    },
    metrics::{self, Metrics},
    netns,
    policy::{
        overlay::Overlays,
        store::{self, PolicyStore},
    },
    proxy::{Identities, Limits, Proxy, Standing, Who},
    registry::Registry,
    resolve::Resolver,
    sandbox_dns::SandboxDns,
    steer::ebpf::Steering,
    tls::{ca::Ca, mint::Minter, upstream as upstream_tls},
};

/// Registrations plus the live policies: answers "who is this cgroup id".
struct Directory {
    registry: RwLock<Registry>,
    store: Arc<PolicyStore>,
    /// Allow rules added to sandboxes at run time.
    overlays: Arc<Overlays>,
    /// sandbox id → its DNS gate.
    dns: RwLock<HashMap<String, Arc<SandboxDns>>>,
    /// Bumped after a policy reload and a removal ([`Standing`]).
    changes: tokio::sync::watch::Sender<u64>,
}

impl Directory {
    /// Tells open connections to check that they still hold.
    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }
}

impl Standing for Directory {
    fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn holds(&self, who: &Who) -> bool {
        let current = |name: &str| {
            self.store
                .current()
                .get(name)
                .is_some_and(|policy| Arc::ptr_eq(policy, &who.policy))
        };
        let Some(identity) = who.identity else {
            // The explicit proxy: the token's sandbox is in the config.
            return current(&who.policy.name);
        };
        let registry = self.registry.read().unwrap_or_else(|e| e.into_inner());
        let Some(owner) = registry.owner(identity) else {
            return false;
        };
        owner.sandbox == *who.sandbox
            && owner.session.as_deref() == who.session.as_deref()
            && self.overlays.holds(&who.sandbox, who.overlay.as_deref())
            && registry
                .get(&owner.sandbox)
                .is_some_and(|sandbox| current(&sandbox.policy))
    }
}

impl Identities for Directory {
    fn who(&self, identity: u64) -> Option<Who> {
        let registry = self.registry.read().unwrap_or_else(|e| e.into_inner());
        let owner = registry.owner(identity)?;
        let sandbox = registry.get(&owner.sandbox)?;
        let policy = self.store.current().get(&sandbox.policy)?.clone();
        let overlay = self.overlays.network(&owner.sandbox, &policy);
        let dns = self
            .dns
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&owner.sandbox)?
            .clone();
        Some(Who {
            sandbox: Arc::from(owner.sandbox.as_str()),
            session: owner.session.as_deref().map(Arc::from),
            policy,
            dns,
            dry_run: false,
            tools: None,
            process: None,
            identity: Some(identity),
            overlay,
        })
    }
}

/// What runs for one registered sandbox besides its kernel entries.
struct SandboxRuntime {
    /// Its DNS listener port (in its namespace).
    dns_port: u16,
    /// Its DNS listener tasks.
    tasks: Vec<JoinHandle<()>>,
    /// The namespace whose steering listener it uses, when not the host's.
    netns: Option<u64>,
}

/// Steering listeners opened inside one sandbox network namespace.
struct Namespace {
    tasks: Vec<JoinHandle<()>>,
    users: std::collections::BTreeSet<String>,
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
    /// namespace cookie → its steering listeners.
    namespaces: Mutex<HashMap<u64, Namespace>>,
    /// sandbox id → its DNS listener and namespace.
    runtimes: Mutex<HashMap<String, SandboxRuntime>>,
    host_port: u16,
    host_cookie: u64,
    /// The interception CA's certificate, for the bundles written into sandboxes.
    ca_pem: String,
    metrics_addr: Option<SocketAddr>,
    /// The file SIGHUP re-reads.
    config_path: PathBuf,
    /// The config file's sandboxes as last applied (start or reload).
    config_sandboxes: Mutex<Vec<SandboxConfig>>,
    /// The host namespace's steering listeners (closed first on drain).
    host_tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Set once the registrations of the previous run are restored.
    restored: AtomicBool,
    /// Held by each change of registrations (the admin API, a config
    /// reload, the restore at start) from its first step to its last: a
    /// registration awaits its namespace and DNS listener between putting
    /// the sandbox in the registry and in the kernel, and a removal that
    /// ran in that gap found nothing to undo in the kernel, leaving an
    /// entry steering to a listener nothing owned. It orders the state
    /// file's saves too, each made under it: the last to land is the newest.
    registering: tokio::sync::Mutex<()>,
    /// Saved registrations the start could not restore (a policy or a
    /// namespace missing for now): kept in the state file for the next
    /// start until `sandbox rm` drops them or a registration replaces them.
    unrestored: Mutex<crate::registry::State>,
    drain: Drain,
    /// Parked requests, session grants and task runs (the interceptor's).
    approvals: Arc<crate::approvals::Approvals>,
    /// The explicit-proxy listener's address, when configured.
    explicit_addr: Option<SocketAddr>,
    /// Remote sessions `session rm` ended: the explicit proxy refuses
    /// their tokens.
    ended_sessions: Arc<crate::explicit::token::EndedSessions>,
    /// Published apps and the ingress listener, when configured.
    apps: Arc<ingress::Apps>,
}

/// Runs the daemon until SIGTERM or SIGINT, then drains.
pub async fn run(config_path: &Path, config: Config) -> anyhow::Result<()> {
    let root = SandboxRoot::open(&config.cgroup_root)?;
    let metrics = Arc::new(Metrics::new());
    let audit = Audit::open(&config.audit, metrics.clone())
        .with_context(|| format!("opening audit log {}", config.audit))?;
    let resolver = Arc::new(Resolver::new(&config.resolver)?);
    // Compiled once: the policies are checked against it (at start and on
    // every reload) and the approval stage decides with it.
    let catalogue = Arc::new(
        crate::apps::Catalogue::compile(&config.apps).map_err(|errors| {
            anyhow::anyhow!("the app catalogue does not load:\n{}", errors.join("\n"))
        })?,
    );
    let store = PolicyStore::load(
        &config.policy_dir,
        catalogue.clone(),
        config.credentials.clone().into(),
        metrics.clone(),
    )
    .map_err(|errors| anyhow::anyhow!("the policies do not load:\n{}", errors.join("\n")))?;
    let directory = Arc::new(Directory {
        registry: RwLock::new(Registry::reserving(
            config
                .explicit_proxy
                .iter()
                .flat_map(|explicit| explicit.sandboxes.iter().map(|s| s.id.clone())),
        )),
        store: Arc::new(store),
        overlays: Arc::new(
            Overlays::load(&config.state_dir)
                .with_context(|| format!("overlays in {}", config.state_dir.display()))?,
        ),
        dns: RwLock::new(HashMap::new()),
        changes: tokio::sync::watch::Sender::new(0),
    });

    let steering = Arc::new(
        Steering::attach(&config.bpffs, &root)
            .with_context(|| format!("attaching eBPF programs to {}", root.path.display()))?,
    );
    let host = netns::open_listeners(None, config.listen.tcp_port)?;
    let host_port = host.tcp_port();
    steering.set_listener(host.cookie, host_port)?;

    let metrics_listener = match config.metrics {
        Some(addr) => Some(
            metrics::bind(addr)
                .await
                .with_context(|| format!("binding metrics on {addr}"))?,
        ),
        None => None,
    };
    let metrics_addr = metrics_listener.as_ref().and_then(|l| l.local_addr().ok());
    let admin_listener = crate::admin::server::bind(&config.admin_socket)
        .with_context(|| format!("binding admin socket {}", config.admin_socket.display()))?;

    let drain = Drain::new();
    let interceptor = Arc::new(interceptor(
        &config,
        catalogue,
        &metrics,
        &audit,
        &drain,
        &resolver,
        directory.clone(),
    )?);
    // Pooled upstream connections unused for the idle timeout are closed.
    let pool = Arc::downgrade(&interceptor);
    let idle = Duration::from_millis(config.limits.idle_timeout_ms);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(idle.max(Duration::from_secs(1)));
        while let Some(interceptor) = {
            tick.tick().await;
            pool.upgrade()
        } {
            interceptor.upstreams.sweep(idle);
        }
    });
    let ca_pem = interceptor.minter.ca_pem().to_owned();
    let approvals = interceptor.approvals.clone();
    let quota = crate::proxy::quota::Quota::new(config.limits.max_connections_per_sandbox);
    let ended_sessions = Arc::new(crate::explicit::token::EndedSessions::default());
    let relayer = crate::proxy::relay::Relayer::new(
        steering.relay.clone().filter(|_| config.relay.in_kernel),
    );
    let explicit = explicit::explicit_proxy(
        &config,
        &directory.store,
        &resolver,
        &interceptor,
        &quota,
        &ended_sessions,
        &relayer,
    )
    .await?;
    let explicit_addr = explicit
        .as_ref()
        .and_then(|(listener, _)| listener.local_addr().ok());
    let (apps, ingress_listeners) = ingress::start(&config, &directory, &metrics, &audit).await?;
    let proxy = Arc::new(Proxy {
        orig: steering.clone(),
        interceptor: Some(interceptor),
        identities: directory.clone(),
        standing: directory.clone(),
        resolver: resolver.clone(),
        metrics: metrics.clone(),
        audit: audit.clone(),
        limits: Limits {
            sniff: Duration::from_millis(config.limits.sniff_timeout_ms),
            connect: Duration::from_millis(config.limits.connect_timeout_ms),
        },
        drain: drain.clone(),
        quota,
        processes: Arc::new(crate::process::Processes::new("/proc")),
        approvals: approvals.clone(),
        relayer,
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
        runtimes: Mutex::new(HashMap::new()),
        host_port,
        host_cookie: host.cookie,
        ca_pem,
        metrics_addr,
        config_path: config_path.to_owned(),
        config_sandboxes: Mutex::new(config.sandboxes.clone()),
        host_tasks: Mutex::new(Vec::new()),
        restored: AtomicBool::new(false),
        registering: tokio::sync::Mutex::new(()),
        unrestored: Mutex::default(),
        drain,
        approvals,
        explicit_addr,
        ended_sessions,
        apps,
        config,
    });
    // Probes answer from here on: live at once, ready once restored.
    if let Some(listener) = metrics_listener {
        let probes = {
            let (refresh, ready) = (daemon.clone(), daemon.clone());
            let seen = Mutex::new(HashMap::<u32, u64>::new());
            metrics::Probes {
                refresh: Arc::new(move || {
                    refresh.refresh_kernel_counters(&seen);
                    refresh.refresh_gauges();
                }),
                ready: Arc::new(move || ready.readiness()),
            }
        };
        tokio::spawn(metrics::serve(listener, daemon.metrics.clone(), probes));
    }
    if let Some((listener, explicit)) = explicit {
        lock(&daemon.host_tasks).push(tokio::spawn(explicit.serve(listener)));
    }
    let host_tasks = daemon.serve_steering(host);
    lock(&daemon.host_tasks).extend(host_tasks);
    daemon.restore_registrations().await?;
    // Apps answer once their sandboxes are back.
    let ingress_tasks = daemon.apps.serve(ingress_listeners);
    lock(&daemon.host_tasks).extend(ingress_tasks);
    daemon
        .restored
        .store(true, std::sync::atomic::Ordering::SeqCst);
    daemon.metrics.ready.set(1);
    if let Some(events) = daemon.steering.take_events() {
        tokio::spawn(daemon.clone().read_refusal_events(events));
    }
    let guard = crate::admin::PeerGuard::new(daemon.root.relative.clone());
    tokio::spawn(crate::admin::server::serve(
        admin_listener,
        daemon.clone(),
        guard,
    ));
    let reloader = daemon.clone();
    store::watch(daemon.directory.store.dir(), move || {
        reloader.reload_policies()
    })
    .with_context(|| format!("watching {}", daemon.config.policy_dir.display()))?;

    tracing::info!(
        root = %daemon.root.path.display(),
        tcp_port = host_port,
        metrics = ?metrics_addr,
        policies = %daemon.config.policy_dir.display(),
        "sluice is steering"
    );
    let cut = lifecycle::run_until_stopped(&daemon).await;
    tracing::info!(
        cut,
        "stopped; the pinned programs stay attached, so sandboxes are refused until the next start"
    );
    Ok(())
}

/// The CA (created on first start), the minter and the upstream trust.
pub(crate) fn interceptor(
    config: &Config,
    catalogue: Arc<crate::apps::Catalogue>,
    metrics: &Arc<Metrics>,
    audit: &Audit,
    drain: &Drain,
    resolver: &Arc<Resolver>,
    standing: Arc<dyn Standing>,
) -> anyhow::Result<Interceptor> {
    let tls = &config.tls;
    std::fs::create_dir_all(&config.state_dir).with_context(|| {
        format!(
            "creating the state directory {}",
            config.state_dir.display()
        )
    })?;
    // The secrets kept in state_dir are sealed under a key kept elsewhere.
    let state_key = crate::credentials::sealed::place(
        config.state_key.as_ref(),
        &config.state_dir,
        std::env::var_os(crate::credentials::systemd::CREDENTIALS_DIRECTORY),
    )
    .and_then(|place| crate::credentials::sealed::load_key(&place, &config.state_dir))
    .context("the state key")?;
    let state_key = Arc::new(state_key);
    // The CA's key too, where the CA is kept in state_dir (the default).
    let seal_ca = crate::credentials::sealed::is_inside(&tls.ca_dir, &config.state_dir)
        .context("the CA directory")?;
    let (ca, created) = Ca::load_or_init(&tls.ca_dir, Some(&state_key), seal_ca)?;
    if created {
        tracing::info!(
            ca = %Ca::cert_path(&tls.ca_dir).display(),
            "created the interception CA; sandboxes must trust it (`sluice ca env`)"
        );
    }
    let minter = Minter::new(
        Arc::new(ca),
        tls.cert_cache_size,
        Duration::from_secs(tls.leaf_validity_hours * 3600),
        metrics.certificates_minted.clone(),
    )
    .with_mint_rate(tls.max_mints_per_second);
    let alpn = |protocols: &[&[u8]]| protocols.iter().map(|p| p.to_vec()).collect::<Vec<_>>();
    let client = upstream_tls::client_config(
        tls.system_roots,
        &tls.upstream_ca_files,
        alpn(&[b"h2", b"http/1.1"]),
    )?;
    let client_h1 = upstream_tls::client_config(
        tls.system_roots,
        &tls.upstream_ca_files,
        alpn(&[b"http/1.1"]),
    )?;
    let store = CredentialStore::load(&config.credentials, &ProcessEnv).map_err(|errors| {
        let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
        anyhow::anyhow!("the credentials do not load:\n{}", all.join("\n"))
    })?;
    let key = load_or_create_key(&config.state_dir, &state_key)
        .with_context(|| format!("placeholder key in {}", config.state_dir.display()))?;
    // The approval webhook and OAuth token endpoints are the daemon's own
    // upstreams: one client, with the same trust and the same resolver.
    let outbound = crate::outbound::Client::new(resolver.clone(), client_h1.clone());
    let approvals = Arc::new(approvals(config, catalogue, metrics, &outbound)?);
    let token_endpoint = TokenEndpoint::new(outbound);
    let kept = KeptTokens::load(&config.state_dir, state_key)
        .context("refresh tokens kept from an earlier run")?;
    let credentials = Arc::new(
        Credentials::new(Arc::new(store), Placeholders::new(*key))
            .with_token_endpoint(token_endpoint)
            .with_kept_tokens(&Arc::new(kept)),
    );
    // Rotation needs no restart: changed secret files are re-read.
    let poll = Arc::downgrade(&credentials);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        while let Some(credentials) = {
            tick.tick().await;
            poll.upgrade()
        } {
            credentials.reload();
        }
    });
    Ok(Interceptor {
        standing,
        minter: Arc::new(minter),
        credentials,
        approvals,
        content: Default::default(),
        // Its resolver looks up the names of redirects Sluice follows.
        upstreams: Upstreams::new(
            client,
            client_h1,
            Duration::from_millis(config.limits.connect_timeout_ms),
        )
        .with_resolver(resolver.clone()),
        metrics: metrics.clone(),
        audit: audit.clone(),
        limits: InterceptLimits {
            header_read: Duration::from_millis(config.limits.header_read_timeout_ms),
            idle: Duration::from_millis(config.limits.idle_timeout_ms),
            max_header_bytes: config.limits.max_header_bytes,
        },
        drain: drain.clone(),
    })
}

/// The approval desk over the app catalogue, and its webhook (posted
/// through the daemon's own `outbound` client).
fn approvals(
    config: &Config,
    catalogue: Arc<crate::apps::Catalogue>,
    metrics: &Arc<Metrics>,
    outbound: &crate::outbound::Client,
) -> anyhow::Result<crate::approvals::Approvals> {
    let webhook = match &config.approvals.webhook {
        Some(webhook) => Some(crate::approvals::webhook::Webhook::new(
            webhook,
            outbound.clone(),
        )?),
        None => None,
    };
    Ok(crate::approvals::Approvals::new(
        catalogue,
        &config.approvals,
        webhook,
        metrics.clone(),
    ))
}

impl Daemon {
    /// Re-reads the policy directory; a failure keeps the policies in force.
    fn reload_policies(&self) {
        self.reload_policies_switching(&[]);
    }

    /// Reloads the policies, requiring those the registered sandboxes use,
    /// or for `switching` the ones they are about to be switched to.
    fn reload_policies_switching(&self, switching: &[SandboxConfig]) {
        let required: Vec<String> = self
            .read_registry()
            .sandboxes()
            .map(|s| match switching.iter().find(|to| to.id == s.id) {
                Some(to) => to.policy.clone(),
                None => s.policy.clone(),
            })
            .collect();
        if self.directory.store.reload(&required).is_ok() {
            self.directory.changed();
        }
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
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
