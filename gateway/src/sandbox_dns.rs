//! One sandbox's DNS gate: the name rules of its policy, the tunnelling caps
//! (`dns_guard`), and the audit trail of what was refused.
//!
//! Each sandbox has its own DNS listener, so the gate knows who asked without
//! any lookup; the policy is read from the live store on every question, so a
//! reload applies to the next query.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use arc_swap::ArcSwap;
use hickory_proto::{op::ResponseCode, rr::RecordType};

use crate::{
    audit::{Audit, Event},
    dns::{Admission, Gate},
    dns_guard::{self, Guard},
    metrics::Metrics,
    policy::{network::NameVerdict, raw::DeniedAnswer, store::PolicyStore},
};

/// Repeated refusals of one kind are audited at most this often per sandbox
/// (the count of the ones folded in goes into the next event), so a tunnel
/// hammering the cap cannot flood the audit log.
const AUDIT_EVERY: Duration = Duration::from_secs(1);

pub struct SandboxDns {
    sandbox: Arc<str>,
    /// The sandbox's policy's name: switched when a config reload gives it
    /// another ([`SandboxDns::set_policy`]).
    policy: ArcSwap<String>,
    store: Arc<PolicyStore>,
    guard: Mutex<Guard>,
    audit: Audit,
    metrics: Arc<Metrics>,
    /// reason → (last audited, refusals folded since).
    quiet: Mutex<HashMap<&'static str, (Option<Instant>, u64)>>,
}

impl SandboxDns {
    pub fn new(
        sandbox: &str,
        policy: &str,
        store: Arc<PolicyStore>,
        audit: Audit,
        metrics: Arc<Metrics>,
    ) -> SandboxDns {
        SandboxDns {
            sandbox: Arc::from(sandbox),
            policy: ArcSwap::from_pointee(policy.to_owned()),
            store,
            guard: Mutex::new(Guard::new()),
            audit,
            metrics,
            quiet: Mutex::new(HashMap::new()),
        }
    }

    fn refuse(&self, name: &str, reason: &'static str, rule: Option<&str>) {
        self.metrics.dns_refusals.with_label_values(&[reason]).inc();
        let now = Instant::now();
        let folded = {
            let mut quiet = self.quiet.lock().unwrap_or_else(|e| e.into_inner());
            let entry = quiet.entry(reason).or_insert((None, 0));
            if entry
                .0
                .is_some_and(|last| now.duration_since(last) < AUDIT_EVERY)
            {
                entry.1 += 1;
                return;
            }
            let folded = entry.1;
            *entry = (Some(now), 0);
            folded
        };
        self.audit.record(&Event {
            event: "dns",
            verdict: "deny",
            reason,
            rule,
            sandbox: Some(&self.sandbox),
            host: Some(name),
            detail: (folded > 0)
                .then(|| format!("{folded} more refused for this reason since the last event")),
            ..Event::default()
        });
    }
}

impl SandboxDns {
    /// Decides the sandbox's queries under `policy` from now on.
    pub fn set_policy(&self, policy: &str) {
        self.policy.store(Arc::new(policy.to_owned()));
    }
}

impl Gate for SandboxDns {
    fn admit(&self, name: &str, qtype: RecordType) -> Admission {
        let set = self.store.current();
        let name_of_policy = self.policy.load();
        let Some(policy) = set.get(name_of_policy.as_str()) else {
            // Reloads refuse to drop a policy in use; fail closed anyway.
            return Admission::Refuse(ResponseCode::ServFail, "servfail");
        };
        let network = &policy.network;
        let limits = network.dns_limits();
        let checked = self.guard.lock().unwrap_or_else(|e| e.into_inner()).check(
            Instant::now(),
            name,
            u16::from(qtype),
            &dns_guard::Limits {
                max_queries_per_second: limits.max_queries_per_second,
                max_label_length: limits.max_label_length,
                max_name_length: limits.max_name_length,
                max_unique_subdomains_per_minute: limits.max_unique_subdomains_per_minute,
            },
            &limits.refused_types,
        );
        if let dns_guard::Verdict::Refuse(reason) = checked {
            self.refuse(
                name,
                reason.as_str(),
                Some(&format!("{name_of_policy}:network.dns")),
            );
            return Admission::Refuse(ResponseCode::Refused, "refused");
        }
        match network.name_verdict(name) {
            NameVerdict::Allow { .. } => Admission::Resolve,
            NameVerdict::ByAddress => Admission::ResolveFiltered,
            NameVerdict::Deny { rule } => {
                self.refuse(
                    name,
                    "dns_denied_name",
                    Some(&format!("{name_of_policy}:{rule}")),
                );
                let code = match limits.denied_answer {
                    DeniedAnswer::Nxdomain => ResponseCode::NXDomain,
                    DeniedAnswer::Refused => ResponseCode::Refused,
                };
                Admission::Refuse(code, "denied")
            }
        }
    }

    fn keep(&self, ip: IpAddr) -> bool {
        self.store
            .current()
            .get(self.policy.load().as_str())
            .is_some_and(|policy| policy.network.address_allowed(ip))
    }
}
