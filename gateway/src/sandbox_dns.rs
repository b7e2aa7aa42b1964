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

/// Repeated refusals of one kind (a reason and a registrable domain) are
/// audited at most this often per sandbox (the count of the ones folded in
/// goes into the next event of that kind), so a tunnel hammering a cap
/// cannot flood the audit log, while each domain a sandbox was refused
/// still shows.
const AUDIT_EVERY: Duration = Duration::from_secs(1);
/// Kinds remembered per sandbox. Past it, kinds with nothing folded and
/// quiet for `AUDIT_EVERY` are forgotten; if that frees nothing (a flood
/// of new domains), further new domains fold together per reason.
const MAX_KINDS: usize = 256;

/// Which refusals are written out, and how many were folded in between.
#[derive(Debug, Default)]
struct Quiet {
    /// (reason, registrable domain; empty for the overflow) → (last
    /// audited, refusals folded since).
    kinds: HashMap<(&'static str, String), (Instant, u64)>,
}

impl Quiet {
    /// For a refusal of `name` for `reason` at `now`: `Some(folded)` to
    /// audit it, `folded` being how many of its kind were refused since
    /// the last event of that kind; `None` to fold it into the next.
    fn admit(&mut self, now: Instant, reason: &'static str, name: &str) -> Option<u64> {
        let mut kind = (reason, dns_guard::registrable(name).to_ascii_lowercase());
        if !self.kinds.contains_key(&kind) && self.kinds.len() >= MAX_KINDS {
            self.kinds
                .retain(|_, (last, folded)| *folded > 0 || now.duration_since(*last) < AUDIT_EVERY);
            if self.kinds.len() >= MAX_KINDS {
                kind.1 = String::new();
            }
        }
        match self.kinds.get_mut(&kind) {
            Some((last, folded)) if now.duration_since(*last) < AUDIT_EVERY => {
                *folded += 1;
                None
            }
            Some((last, folded)) => {
                *last = now;
                Some(std::mem::take(folded))
            }
            None => {
                self.kinds.insert(kind, (now, 0));
                Some(0)
            }
        }
    }
}

pub struct SandboxDns {
    sandbox: Arc<str>,
    /// The sandbox's policy's name: switched when a config reload gives it
    /// another ([`SandboxDns::set_policy`]).
    policy: ArcSwap<String>,
    store: Arc<PolicyStore>,
    guard: Mutex<Guard>,
    audit: Audit,
    metrics: Arc<Metrics>,
    quiet: Mutex<Quiet>,
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
            quiet: Mutex::new(Quiet::default()),
        }
    }

    fn refuse(&self, name: &str, reason: &'static str, rule: Option<&str>) {
        self.metrics.dns_refusals.with_label_values(&[reason]).inc();
        let admitted = self.quiet.lock().unwrap_or_else(|e| e.into_inner()).admit(
            Instant::now(),
            reason,
            name,
        );
        let Some(folded) = admitted else {
            return;
        };
        self.audit.record(&Event {
            event: "dns",
            verdict: "deny",
            reason,
            rule,
            sandbox: Some(&self.sandbox),
            host: Some(name),
            detail: (folded > 0).then(|| {
                format!("{folded} more refused for this reason and domain since the last event")
            }),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_fold_per_reason_and_domain() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut quiet = Quiet::default();
        // (ms, reason, name, audited with this many folded, or folded)
        #[rustfmt::skip]
        let steps: &[(u64, &'static str, &str, Option<u64>)] = &[
            (0, "dns_denied_name", "a.evil.test", Some(0)),
            (10, "dns_denied_name", "b.evil.test", None),
            (20, "dns_denied_name", "B.Evil.Test.", None),
            // Another domain, or another reason, is its own kind.
            (30, "dns_denied_name", "exfil.example.co.uk", Some(0)),
            (40, "rate_limited", "c.evil.test", Some(0)),
            // A second on, the kind is audited again with its count.
            (1000, "dns_denied_name", "d.evil.test", Some(2)),
            (1001, "dns_denied_name", "e.evil.test", None),
        ];
        for &(ms, reason, name, want) in steps {
            assert_eq!(
                quiet.admit(at(ms), reason, name),
                want,
                "{ms} {reason} {name}"
            );
        }
    }

    #[test]
    fn a_flood_of_domains_is_bounded_and_folds_together() {
        let now = Instant::now();
        let mut quiet = Quiet::default();
        for i in 0..MAX_KINDS {
            assert_eq!(
                quiet.admit(now, "dns_denied_name", &format!("d{i}.test")),
                Some(0)
            );
            // Something folded: the kind must be kept for its count.
            assert_eq!(
                quiet.admit(now, "dns_denied_name", &format!("x.d{i}.test")),
                None
            );
        }
        assert_eq!(quiet.admit(now, "dns_denied_name", "new1.test"), Some(0));
        assert_eq!(quiet.admit(now, "dns_denied_name", "new2.test"), None);
        assert_eq!(quiet.kinds.len(), MAX_KINDS + 1);
        // Quiet kinds with nothing folded make room again.
        let later = now + AUDIT_EVERY * 2;
        let mut quiet = Quiet::default();
        for i in 0..MAX_KINDS {
            assert_eq!(
                quiet.admit(now, "dns_denied_name", &format!("d{i}.test")),
                Some(0)
            );
        }
        assert_eq!(quiet.admit(later, "dns_denied_name", "fresh.test"), Some(0));
        assert_eq!(quiet.kinds.len(), 1);
    }
}
