//! The web-app ingress in the daemon: the publication table (restored
//! from `state_dir` at start, saved after each change), the lookup the
//! listener routes with (a publication, its sandbox's namespace and
//! owner from the registry), and the admin API's publish, remove and
//! scope operations. A sandbox removed takes its apps with it.

use std::{
    sync::{Arc, Mutex, OnceLock},
    time::{SystemTime, UNIX_EPOCH},
};

use anyhow::Context as _;

use super::{Daemon, Directory, lock};
use crate::{
    admin::AdminError,
    audit::{Audit, Event},
    config::Config,
    ingress::{
        admit::{Lookup, Target},
        listener::Ingress,
        publish::{AppInfo, Publication, Publications, PublishError, PublishRequest},
        route::url_of,
        scope::Scope,
    },
    metrics::Metrics,
};

/// Publications, and the listener once started.
#[derive(Default)]
pub(super) struct Apps {
    table: Mutex<Publications>,
    ingress: OnceLock<Arc<Ingress>>,
    /// Where the listener was bound (a `:0` in the config resolved).
    bound: OnceLock<Vec<std::net::SocketAddr>>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Routes by the publication table and the registry.
struct RegistryLookup {
    directory: Arc<Directory>,
    apps: Arc<Apps>,
}

impl Lookup for RegistryLookup {
    fn target(&self, name: &str, now: u64) -> Option<Target> {
        let publication = lock(&self.apps.table).get(name, now).cloned()?;
        let registry = self
            .directory
            .registry
            .read()
            .unwrap_or_else(|e| e.into_inner());
        // A publication whose sandbox has not come back (yet) answers 404.
        let sandbox = registry.get(&publication.sandbox)?;
        Some(Target {
            name: publication.name,
            sandbox: publication.sandbox,
            port: publication.port,
            scope: publication.scope,
            owner: sandbox.owner.clone(),
            netns: sandbox.netns.clone(),
        })
    }
}

/// Loads the saved publications and, when the config has `ingress:`,
/// binds its listeners. Serving starts once the daemon is up.
pub(super) async fn start(
    config: &Config,
    directory: &Arc<Directory>,
    metrics: &Metrics,
    audit: &Audit,
) -> anyhow::Result<(Arc<Apps>, Vec<tokio::net::TcpListener>)> {
    let apps = Arc::new(Apps::default());
    *lock(&apps.table) = Publications::load(&config.state_dir)?;
    let Some(section) = &config.ingress else {
        return Ok((apps, Vec::new()));
    };
    let lookup = Arc::new(RegistryLookup {
        directory: directory.clone(),
        apps: apps.clone(),
    });
    let ingress = Ingress::new(
        section.clone(),
        lookup,
        metrics.ingress.clone(),
        audit.clone(),
    )?;
    let listeners = ingress
        .bind()
        .await
        .with_context(|| format!("binding the ingress on {:?}", section.listen))?;
    let _ = apps.bound.set(
        listeners
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect(),
    );
    let _ = apps.ingress.set(Arc::new(ingress));
    Ok((apps, listeners))
}

impl Apps {
    pub(super) fn addrs(&self) -> Vec<String> {
        self.bound
            .get()
            .map(|b| b.iter().map(ToString::to_string).collect())
            .unwrap_or_default()
    }

    pub(super) fn serve(
        &self,
        listeners: Vec<tokio::net::TcpListener>,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let Some(ingress) = self.ingress.get() else {
            return Vec::new();
        };
        listeners
            .into_iter()
            .map(|l| tokio::spawn(ingress.clone().serve(l)))
            .collect()
    }
}

fn publish_error(err: PublishError) -> AdminError {
    match err {
        PublishError::NoApp(_) => AdminError::NotFound(err.to_string()),
        PublishError::NameTaken(_) => AdminError::Conflict(err.to_string()),
        _ => AdminError::Invalid(err.to_string()),
    }
}

impl Daemon {
    fn ingress(&self) -> Result<&Arc<Ingress>, AdminError> {
        self.apps.ingress.get().ok_or_else(|| {
            AdminError::NotFound(
                "the ingress is off: the daemon config has no `ingress:` section".into(),
            )
        })
    }

    fn app_info(&self, p: &Publication) -> AppInfo {
        let url = match self.apps.ingress.get() {
            Some(i) => {
                let bound = self.apps.bound.get().and_then(|b| b.first());
                let port = bound.map(|a| a.port());
                let port = port.filter(|p| ![443, 80].contains(p));
                url_of(i.config.route_by, &i.config.apps_domain, port, &p.name)
            }
            None => String::new(),
        };
        AppInfo::new(p, url)
    }

    /// Every publication (`sluice app ls`, `sluice status`).
    pub(super) fn apps(&self) -> Vec<AppInfo> {
        let table = lock(&self.apps.table).clone();
        let now = now();
        table
            .all()
            .filter(|p| p.expires.is_none_or(|e| e > now))
            .map(|p| self.app_info(p))
            .collect()
    }

    pub(super) fn publish(&self, req: PublishRequest) -> Result<AppInfo, AdminError> {
        self.ingress()?;
        let netns = {
            let registry = self.read_registry();
            let sandbox = registry
                .get(&req.sandbox)
                .ok_or_else(|| AdminError::NotFound(format!("no sandbox `{}`", req.sandbox)))?;
            sandbox.netns.clone()
        };
        if netns.is_none() {
            // In the host namespace the port is the host's: published only
            // while nothing listens on it beyond loopback.
            crate::ingress::exposure::check_host_port(req.port)
                .map_err(|e| AdminError::Invalid(e.to_string()))?;
        }
        let mut table = lock(&self.apps.table);
        let mut next = table.clone();
        let publication = next.publish(req, now()).map_err(publish_error)?;
        next.save(&self.config.state_dir)
            .map_err(|e| AdminError::Internal(format!("saving publications: {e}")))?;
        *table = next;
        drop(table);
        self.audit_app("publish", &publication);
        Ok(self.app_info(&publication))
    }

    pub(super) fn unpublish(&self, name: &str) -> Result<(), AdminError> {
        let gone = self.change(|t| t.remove(name))?;
        self.ended(&gone);
        Ok(())
    }

    pub(super) fn set_scope(&self, name: &str, scope: Scope) -> Result<AppInfo, AdminError> {
        let changed = self.change(|t| t.set_scope(name, scope))?;
        // Sessions opened under the old scope must be decided again.
        if let Some(ingress) = self.apps.ingress.get() {
            ingress.sessions.forget_app(name);
        }
        self.audit_app("scope", &changed);
        Ok(self.app_info(&changed))
    }

    /// Removes the apps of a sandbox that is going away.
    pub(super) fn unpublish_sandbox(&self, sandbox: &str) {
        let mut table = lock(&self.apps.table);
        let mut next = table.clone();
        let gone = next.remove_sandbox(sandbox);
        if gone.is_empty() {
            return;
        }
        if let Err(err) = next.save(&self.config.state_dir) {
            tracing::error!(%err, sandbox, "saving publications after the sandbox's removal");
        }
        *table = next;
        drop(table);
        for p in &gone {
            self.ended(p);
        }
    }

    fn change(
        &self,
        f: impl FnOnce(&mut Publications) -> Result<Publication, PublishError>,
    ) -> Result<Publication, AdminError> {
        let mut table = lock(&self.apps.table);
        let mut next = table.clone();
        let publication = f(&mut next).map_err(publish_error)?;
        next.save(&self.config.state_dir)
            .map_err(|e| AdminError::Internal(format!("saving publications: {e}")))?;
        *table = next;
        Ok(publication)
    }

    fn ended(&self, p: &Publication) {
        if let Some(ingress) = self.apps.ingress.get() {
            ingress.sessions.forget_app(&p.name);
        }
        self.audit_app("unpublish", p);
    }

    fn audit_app(&self, verdict: &str, p: &Publication) {
        self.audit.record(&Event {
            event: "ingress_publication",
            verdict,
            reason: "admin",
            rule: Some(&format!("scope:{}", p.scope)),
            sandbox: Some(&p.sandbox),
            host: Some(&p.name),
            dst: Some(format!("port {}", p.port)),
            ..Event::default()
        });
    }
}
