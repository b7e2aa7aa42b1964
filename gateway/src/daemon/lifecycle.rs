//! Signals and what they do: SIGHUP reloads the config and the policies;
//! SIGTERM and SIGINT drain (stop accepting, let in-flight connections
//! finish up to `limits.drain_timeout_ms`, report what was cut) and stop.
//! Readiness for `/readyz` and `sluice status` is decided here too.
//!
//! Stopping never touches the pinned programs: while no daemon listens,
//! steered sockets are refused (ECONNREFUSED), never let through.

use std::{
    collections::BTreeMap,
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use gateway_common::{capacity, maps};

use super::{Daemon, lock};
use crate::{
    admin::api::{MapStatus, SandboxSpec},
    config::{Config, SandboxConfig},
    registry::Source,
    steer::ebpf::PROGRAMS,
};

/// Runs until SIGTERM or SIGINT (SIGHUP reloads meanwhile), then drains;
/// a second SIGTERM or SIGINT cuts the drain short. Returns how many
/// connections were cut.
pub(super) async fn run_until_stopped(daemon: &Daemon) -> usize {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        tracing::error!("cannot install signal handlers; running until killed");
        return std::future::pending().await;
    };
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = int.recv() => break,
            _ = hup.recv() => daemon.reload().await,
        }
    }
    tokio::select! {
        cut = daemon.drain() => cut,
        _ = term.recv() => daemon.cut_short(),
        _ = int.recv() => daemon.cut_short(),
    }
}

/// What a config reload does to the sandboxes the config file declares.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct SandboxPlan {
    /// Ids to unregister (gone from the file, or changed).
    pub remove: Vec<String>,
    /// Entries to register (new, or changed).
    pub add: Vec<SandboxConfig>,
    /// Entries whose policy alone changed: switched in place.
    pub repolicy: Vec<SandboxConfig>,
}

/// Compares the config's sandboxes before and after a reload. An entry
/// whose policy alone changed is switched to the new one in place, so its
/// sessions (registered at run time) stay. Any other change removes the
/// entry and adds it again: its sockets are refused (never let through)
/// for that moment, and its sessions go with the old registration.
pub(super) fn plan_sandboxes(old: &[SandboxConfig], new: &[SandboxConfig]) -> SandboxPlan {
    let old: BTreeMap<&str, &SandboxConfig> = old.iter().map(|s| (s.id.as_str(), s)).collect();
    let new_ids: BTreeMap<&str, &SandboxConfig> = new.iter().map(|s| (s.id.as_str(), s)).collect();
    let policy_only = |before: &SandboxConfig, after: &SandboxConfig| {
        let mut before = before.clone();
        before.policy.clone_from(&after.policy);
        before == *after
    };
    let mut plan = SandboxPlan::default();
    for (id, before) in &old {
        match new_ids.get(id) {
            Some(after) if after == before => {}
            Some(after) if policy_only(before, after) => plan.repolicy.push((*after).clone()),
            _ => plan.remove.push((*id).to_owned()),
        }
    }
    for sandbox in new {
        let before = old.get(sandbox.id.as_str());
        if before.is_none_or(|before| *before != sandbox && !policy_only(before, sandbox)) {
            plan.add.push(sandbox.clone());
        }
    }
    plan
}

/// Settings a reload cannot apply (listeners, pins, the CA, credential
/// definitions, …): named in a warning, applied at the next start.
pub(super) fn needs_restart(old: &Config, new: &Config) -> Vec<&'static str> {
    // Debug text is enough to tell "changed"; none of these prints a secret
    // (credentials name their source, never its value).
    let fields: [(&'static str, String, String); 15] = [
        (
            "worker_threads",
            format!("{:?}", old.worker_threads),
            format!("{:?}", new.worker_threads),
        ),
        (
            "listen",
            format!("{:?}", old.listen),
            format!("{:?}", new.listen),
        ),
        (
            "cgroup_root",
            format!("{:?}", old.cgroup_root),
            format!("{:?}", new.cgroup_root),
        ),
        (
            "bpffs",
            format!("{:?}", old.bpffs),
            format!("{:?}", new.bpffs),
        ),
        (
            "admin_socket",
            format!("{:?}", old.admin_socket),
            format!("{:?}", new.admin_socket),
        ),
        (
            "state_dir",
            format!("{:?}", old.state_dir),
            format!("{:?}", new.state_dir),
        ),
        (
            "state_key",
            format!("{:?}", old.state_key),
            format!("{:?}", new.state_key),
        ),
        (
            "metrics",
            format!("{:?}", old.metrics),
            format!("{:?}", new.metrics),
        ),
        (
            "audit",
            format!("{:?}", old.audit),
            format!("{:?}", new.audit),
        ),
        (
            "limits",
            format!("{:?}", old.limits),
            format!("{:?}", new.limits),
        ),
        (
            "resolver",
            format!("{:?}", old.resolver),
            format!("{:?}", new.resolver),
        ),
        ("tls", format!("{:?}", old.tls), format!("{:?}", new.tls)),
        (
            "credentials",
            format!("{:?}", old.credentials),
            format!("{:?}", new.credentials),
        ),
        (
            "policy_dir",
            format!("{:?}", old.policy_dir),
            format!("{:?}", new.policy_dir),
        ),
        (
            "ingress",
            format!("{:?}", old.ingress),
            format!("{:?}", new.ingress),
        ),
    ];
    fields
        .into_iter()
        .filter(|(_, before, after)| before != after)
        .map(|(name, _, _)| name)
        .collect()
}

impl Daemon {
    /// `Ok` when the daemon steers: every required program attached, the
    /// registrations restored, and not draining.
    pub(super) fn readiness(&self) -> Result<(), String> {
        if self.drain.is_draining() {
            return Err("draining".to_owned());
        }
        if !self.restored.load(Ordering::SeqCst) {
            return Err("restoring registrations".to_owned());
        }
        let missing: Vec<&str> = PROGRAMS
            .iter()
            .copied()
            .filter(|p| !self.steering.attached.contains(p))
            .collect();
        if !missing.is_empty() {
            return Err(format!("programs not attached: {}", missing.join(", ")));
        }
        Ok(())
    }

    /// The registration maps and how full they are.
    pub(super) fn map_occupancy(&self) -> Vec<MapStatus> {
        vec![
            MapStatus {
                name: maps::IDENTITY.to_owned(),
                entries: self.steering.registered().len(),
                capacity: capacity::IDENTITY as usize,
            },
            MapStatus {
                name: maps::LISTENERS.to_owned(),
                entries: self.steering.listener_namespaces().len(),
                capacity: capacity::LISTENERS as usize,
            },
        ]
    }

    /// Copies what lives outside the registry into it (on scrape).
    pub(super) fn refresh_gauges(&self) {
        for map in self.map_occupancy() {
            self.metrics
                .ebpf_map_entries
                .with_label_values(&[&map.name])
                .set(map.entries as i64);
            self.metrics
                .ebpf_map_capacity
                .with_label_values(&[&map.name])
                .set(map.capacity as i64);
        }
        if let Some(interceptor) = &self.proxy.interceptor {
            self.metrics
                .certificate_cache_entries
                .set(interceptor.minter.cached() as i64);
        }
        self.metrics.ready.set(i64::from(self.readiness().is_ok()));
    }

    /// SIGHUP: secret files and policies are re-read, and the config file's
    /// sandboxes are brought in line with it. Anything else that changed is
    /// named in a warning and waits for a restart. A config that does not
    /// load changes nothing.
    pub(super) async fn reload(&self) {
        if let Some(interceptor) = &self.proxy.interceptor {
            interceptor.credentials.reload();
        }
        let new = match Config::load(&self.config_path) {
            Ok(new) => new,
            Err(err) => {
                tracing::error!(%err, "config reload refused; the running config stays");
                self.metrics
                    .config_reloads
                    .with_label_values(&["error"])
                    .inc();
                self.reload_policies();
                return;
            }
        };
        let restart = needs_restart(&self.config, &new);
        if !restart.is_empty() {
            tracing::warn!(
                settings = ?restart,
                "changed in the config file; applied at the next start only"
            );
        }
        let _registering = self.registering.lock().await;
        let old = lock(&self.config_sandboxes).clone();
        let plan = plan_sandboxes(&old, &new.sandboxes);
        // Removals first, so a policy only they used may go in this reload.
        for id in &plan.remove {
            // Only what the config registered: an id the API re-registered
            // since is the control plane's, not the file's.
            let from_config = self
                .read_registry()
                .get(id)
                .is_some_and(|s| s.source == Source::Config);
            if !from_config {
                continue;
            }
            if let Some(sandbox) = self.forget_sandbox(id) {
                self.audit_registration("remove", id, None, Some(&sandbox.cgroup));
                self.unpublish_sandbox(id);
                self.forget_overlay(id);
            }
        }
        self.reload_policies_switching(&plan.repolicy);
        let mut failed = 0;
        let mut applied: Vec<SandboxConfig> = new
            .sandboxes
            .iter()
            .filter(|s| !plan.add.contains(s) && !plan.repolicy.contains(s))
            .cloned()
            .collect();
        for sandbox in plan.repolicy {
            match self.switch_policy(&sandbox) {
                Ok(()) => applied.push(sandbox),
                Err(err) => {
                    failed += 1;
                    tracing::error!(sandbox = %sandbox.id, %err, "sandbox from the reloaded config keeps its policy");
                    // As the file was: the next reload tries again.
                    applied.extend(old.iter().find(|s| s.id == sandbox.id).cloned());
                }
            }
        }
        for sandbox in plan.add {
            let spec = SandboxSpec {
                id: sandbox.id.clone(),
                cgroup: sandbox.cgroup.clone(),
                netns: sandbox.netns.clone(),
                policy: Some(sandbox.policy.clone()),
                ca_bundle: sandbox.ca_bundle.clone(),
                owner: sandbox.owner.clone(),
            };
            match self.register_sandbox(spec, Source::Config).await {
                Ok(_) => applied.push(sandbox),
                Err(err) => {
                    failed += 1;
                    tracing::error!(sandbox = %sandbox.id, %err, "sandbox from the reloaded config not registered");
                }
            }
        }
        *lock(&self.config_sandboxes) = applied;
        if let Err(err) = self.persist() {
            tracing::error!(%err, "registrations not saved after the reload");
        }
        let result = if failed == 0 { "ok" } else { "error" };
        self.metrics
            .config_reloads
            .with_label_values(&[result])
            .inc();
        tracing::info!(removed = plan.remove.len(), failed, "config reloaded");
    }

    /// Puts a config sandbox under another policy in place: its sessions
    /// stay, its DNS is decided under the new policy, and connections
    /// admitted under the old one are revoked ([`crate::proxy::Standing`]).
    /// A sandbox the API re-registered since is the control plane's, not
    /// the file's: left alone.
    fn switch_policy(&self, to: &SandboxConfig) -> Result<(), String> {
        if self.directory.store.current().get(&to.policy).is_none() {
            return Err(format!("policy `{}` is not loaded", to.policy));
        }
        let cgroup = {
            let mut registry = self.write_registry();
            let cgroup = match registry.get(&to.id) {
                Some(sandbox) if sandbox.source == Source::Config => sandbox.cgroup.clone(),
                _ => return Ok(()),
            };
            registry.set_policy(&to.id, &to.policy);
            cgroup
        };
        if let Some(dns) = self
            .directory
            .dns
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&to.id)
        {
            dns.set_policy(&to.policy);
        }
        self.directory.changed();
        self.audit_registration("policy", &to.id, None, Some(&cgroup));
        Ok(())
    }

    /// A second stop signal during the drain: stop waiting.
    fn cut_short(&self) -> usize {
        let cut = self.drain.open();
        tracing::warn!(
            cut,
            "stopped again while draining; cutting the connections still open"
        );
        cut
    }

    /// SIGTERM: closes the steering listeners (new connections are refused
    /// from here on; the pinned programs stay, so nothing goes around), then
    /// waits for the connections in flight up to the deadline. Returns how
    /// many it had to cut.
    pub(super) async fn drain(&self) -> usize {
        let deadline = Duration::from_millis(self.config.limits.drain_timeout_ms);
        let mut listeners: Vec<_> = lock(&self.host_tasks).drain(..).collect();
        for namespace in lock(&self.namespaces).values_mut() {
            listeners.append(&mut namespace.tasks);
        }
        for task in &listeners {
            task.abort();
        }
        // A cancelled task has dropped its listener: the socket is closed.
        for task in listeners {
            let _ = task.await;
        }
        self.drain.start();
        self.metrics.ready.set(0);
        let started = Instant::now();
        tracing::info!(
            in_flight = self.drain.open(),
            deadline_ms = deadline.as_millis() as u64,
            "draining: no longer accepting; waiting for connections in flight"
        );
        let cut = self.drain.settle(deadline).await;
        if cut == 0 {
            tracing::info!(
                waited_ms = started.elapsed().as_millis() as u64,
                "drained: every connection in flight finished"
            );
        } else {
            tracing::warn!(
                cut,
                waited_ms = started.elapsed().as_millis() as u64,
                "drain deadline passed; cutting the connections still open"
            );
        }
        cut
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;

    fn sandbox(id: &str, policy: &str) -> SandboxConfig {
        SandboxConfig {
            id: id.to_owned(),
            cgroup: PathBuf::from(id),
            netns: None,
            policy: policy.to_owned(),
            ca_bundle: None,
            owner: None,
        }
    }

    /// Before, after, ids removed, entries added, entries switched to
    /// another policy in place.
    type Case<'a> = (
        Vec<SandboxConfig>,
        Vec<SandboxConfig>,
        Vec<&'a str>,
        Vec<&'a SandboxConfig>,
        Vec<&'a SandboxConfig>,
    );

    #[test]
    fn sandbox_plan_table() {
        let (a, b, c) = (sandbox("a", "p"), sandbox("b", "p"), sandbox("c", "p"));
        let b2 = sandbox("b", "q");
        let moved = SandboxConfig {
            cgroup: PathBuf::from("elsewhere"),
            ..b2.clone()
        };
        let bundled = SandboxConfig {
            ca_bundle: Some(PathBuf::from("/ca.pem")),
            ..b.clone()
        };
        let cases: Vec<Case> = vec![
            (vec![a.clone()], vec![a.clone()], vec![], vec![], vec![]),
            (vec![], vec![a.clone()], vec![], vec![&a], vec![]),
            (
                vec![a.clone(), b.clone()],
                vec![a.clone()],
                vec!["b"],
                vec![],
                vec![],
            ),
            // The policy alone: switched in place, sessions kept.
            (
                vec![a.clone(), b.clone()],
                vec![a.clone(), b2.clone(), c.clone()],
                vec![],
                vec![&c],
                vec![&b2],
            ),
            // Anything else (with the policy or not): registered anew.
            (
                vec![b.clone()],
                vec![moved.clone()],
                vec!["b"],
                vec![&moved],
                vec![],
            ),
            (
                vec![b.clone()],
                vec![bundled.clone()],
                vec!["b"],
                vec![&bundled],
                vec![],
            ),
            (
                vec![a.clone(), b.clone()],
                vec![],
                vec!["a", "b"],
                vec![],
                vec![],
            ),
        ];
        for (old, new, remove, add, repolicy) in cases {
            let plan = plan_sandboxes(&old, &new);
            assert_eq!(plan.remove, remove, "{old:?} -> {new:?}");
            let add: Vec<SandboxConfig> = add.into_iter().cloned().collect();
            assert_eq!(plan.add, add, "{old:?} -> {new:?}");
            let repolicy: Vec<SandboxConfig> = repolicy.into_iter().cloned().collect();
            assert_eq!(plan.repolicy, repolicy, "{old:?} -> {new:?}");
        }
    }

    #[test]
    fn restart_only_settings_are_named() {
        let parse = |text: &str| Config::parse(Path::new("t.yaml"), text).expect("valid");
        let base = parse("sandboxes: [{id: a, cgroup: a}]\n");
        let cases = [
            ("sandboxes: [{id: b, cgroup: b}]\n", vec![]),
            ("listen: {tcp_port: 1}\n", vec!["listen"]),
            (
                "state_key: {systemd_credential: state-key}\n",
                vec!["state_key"],
            ),
            (
                "limits: {drain_timeout_ms: 1}\nbpffs: /x\n",
                vec!["bpffs", "limits"],
            ),
            // The listener is bound and its keys read at the start.
            (
                "ingress: {listen: ['127.0.0.1:0'], apps_domain: apps.test, \
                 trusted_proxies: [127.0.0.1/32], viewer_tokens: {jwks_file: /dev/null}}\n",
                vec!["ingress"],
            ),
        ];
        for (text, want) in cases {
            assert_eq!(needs_restart(&base, &parse(text)), want, "{text}");
        }
    }
}
