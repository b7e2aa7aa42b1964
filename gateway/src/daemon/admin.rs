//! The daemon's side of the admin API.

use super::{Daemon, registrations::info};
use crate::{
    admin::api::{
        AdminError, Backend, PolicySync, SandboxInfo, SandboxSpec, SessionInfo, SessionSpec, Status,
    },
    registry::Source,
};

impl Daemon {
    pub(super) fn approvals(&self) -> &crate::approvals::Approvals {
        &self.approvals
    }

    /// A task's pre-approved apps must be in the catalogue: a typo would
    /// otherwise leave the run parking requests nobody answers.
    pub(super) fn check_pre_approvals(&self, apps: &[String]) -> Result<(), AdminError> {
        for app in apps {
            if !self.approvals.catalogue().contains(app) {
                return Err(AdminError::Invalid(format!(
                    "pre-approved app `{app}` is not in the daemon's app catalogue (config `apps:`)"
                )));
            }
        }
        Ok(())
    }
}

impl Backend for Daemon {
    fn approvals(&self) -> Vec<crate::approvals::ApprovalCard> {
        self.approvals.list()
    }

    fn decide(
        &self,
        id: &str,
        spec: crate::approvals::DecisionSpec,
    ) -> Result<crate::approvals::ApprovalCard, AdminError> {
        self.decide_parked(id, &spec)
    }

    fn overlays(&self) -> std::collections::BTreeMap<String, Vec<crate::policy::overlay::Entry>> {
        self.overlay_list()
    }

    fn change_overlay(
        &self,
        sandbox: &str,
        change: crate::admin::api::OverlayChange,
    ) -> Result<Vec<crate::policy::overlay::Entry>, AdminError> {
        self.overlay_change(sandbox, change)
    }

    fn status(&self) -> Status {
        let policies = self.directory.store.current();
        Status {
            ready: self.readiness().is_ok(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            cgroup_root: self.root.path.clone(),
            metrics_addr: self.metrics_addr.map(|a| a.to_string()),
            tcp_port: self.host_port,
            sandboxes: self.read_registry().sandboxes().count(),
            programs: self
                .steering
                .attached
                .iter()
                .map(|p| (*p).to_owned())
                .collect(),
            draining: self.drain.is_draining(),
            registered_cgroups: self.read_registry().cgroup_ids().count(),
            maps: self.map_occupancy(),
            policies: PolicySync {
                synchronized: self.metrics.policy_synchronized.get() == 1,
                dir: self.directory.store.dir().to_owned(),
                loaded: policies.names().map(str::to_owned).collect(),
            },
            kernel_refusals: self
                .steering
                .refusal_counts()
                .into_iter()
                .map(|(reason, count)| (reason.as_str().to_owned(), count))
                .collect(),
            recent_refusals: self.audit.recent_refusals(),
            explicit_proxy_addr: self.explicit_addr.map(|a| a.to_string()),
            apps: Daemon::apps(self),
            overlays: self
                .overlay_list()
                .into_iter()
                .map(|(sandbox, entries)| {
                    (sandbox, entries.into_iter().map(|e| e.target).collect())
                })
                .collect(),
            ingress_addrs: self.apps.addrs(),
        }
    }

    fn apps(&self) -> Vec<crate::ingress::publish::AppInfo> {
        Daemon::apps(self)
    }

    fn publish(
        &self,
        req: crate::ingress::publish::PublishRequest,
    ) -> Result<crate::ingress::publish::AppInfo, AdminError> {
        Daemon::publish(self, req)
    }

    fn unpublish(&self, name: &str) -> Result<(), AdminError> {
        Daemon::unpublish(self, name)
    }

    fn set_scope(
        &self,
        name: &str,
        scope: crate::ingress::scope::Scope,
    ) -> Result<crate::ingress::publish::AppInfo, AdminError> {
        Daemon::set_scope(self, name, scope)
    }

    fn list(&self) -> Vec<SandboxInfo> {
        self.read_registry().sandboxes().map(info).collect()
    }

    fn env(&self, sandbox: &str) -> Result<std::collections::BTreeMap<String, String>, AdminError> {
        // A registered sandbox, or one the explicit proxy serves (its
        // placeholders are keyed by its id the same way).
        let registered = self.read_registry().get(sandbox).map(|s| s.policy.clone());
        let remote = || {
            let explicit = self.config.explicit_proxy.as_ref()?;
            let found = explicit.sandboxes.iter().find(|s| s.id == sandbox);
            found.map(|s| s.policy.clone())
        };
        let policy_name = registered
            .or_else(remote)
            .ok_or_else(|| AdminError::NotFound(format!("no sandbox `{sandbox}`")))?;
        let policies = self.directory.store.current();
        let policy = policies
            .get(&policy_name)
            .ok_or_else(|| AdminError::Internal(format!("policy `{policy_name}` is gone")))?;
        let interceptor = self
            .proxy
            .interceptor
            .as_ref()
            .ok_or_else(|| AdminError::Internal("interception is not set up".to_owned()))?;
        Ok(interceptor
            .credentials
            .env(sandbox, policy)
            .into_iter()
            .collect())
    }

    async fn add_sandbox(&self, spec: SandboxSpec) -> Result<SandboxInfo, AdminError> {
        spec.validate()?;
        if self.drain.is_draining() {
            // Its listeners would open while the others close; the next
            // daemon registers it from the caller's retry.
            return Err(AdminError::Conflict(
                "the daemon is draining; register the sandbox with the next one".to_owned(),
            ));
        }
        let _registering = self.registering.lock().await;
        let info = self.register_sandbox(spec, Source::Api).await?;
        if let Err(err) = self.persist() {
            self.forget_sandbox(&info.id);
            return Err(err);
        }
        Ok(info)
    }

    async fn remove_sandbox(&self, id: &str) -> Result<(), AdminError> {
        let _registering = self.registering.lock().await;
        if self.forget_unrestored(id) {
            return self.persist();
        }
        let sandbox = self
            .forget_sandbox(id)
            .ok_or_else(|| AdminError::NotFound(format!("no sandbox `{id}`")))?;
        self.audit_registration("remove", id, None, Some(&sandbox.cgroup));
        self.unpublish_sandbox(id);
        self.forget_overlay(id);
        self.persist()
    }

    async fn add_session(
        &self,
        sandbox: &str,
        spec: SessionSpec,
    ) -> Result<SessionInfo, AdminError> {
        spec.validate()?;
        let _registering = self.registering.lock().await;
        if self.read_registry().get(sandbox).is_none() {
            return Err(AdminError::NotFound(format!("no sandbox `{sandbox}`")));
        }
        let info = self.register_session(sandbox, spec)?;
        if let Err(err) = self.persist() {
            let _ = self.forget_session(sandbox, &info.id);
            return Err(err);
        }
        Ok(info)
    }

    async fn remove_session(&self, sandbox: &str, session: &str) -> Result<(), AdminError> {
        let _registering = self.registering.lock().await;
        if self.read_registry().is_reserved(sandbox) {
            // A sandbox the explicit proxy serves: its sessions are never
            // registered, so ending one is forgetting its state and
            // refusing the tokens handed out for it until now.
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            self.ended_sessions.end(sandbox, session, now);
            self.forget_session_state(sandbox, session);
            self.audit_registration("remove", sandbox, Some(session), None);
            return Ok(());
        }
        let removed = self.forget_session(sandbox, session)?;
        self.audit_registration("remove", sandbox, Some(session), Some(&removed.cgroup));
        self.persist()
    }
}
