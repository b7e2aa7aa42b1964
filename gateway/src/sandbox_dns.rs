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
    time::Instant,
};

use arc_swap::ArcSwap;
use hickory_proto::{op::ResponseCode, rr::RecordType};

use crate::{
    audit::{Audit, Event, Fold},
    dns::{Admission, Gate},
    dns_guard::{self, Guard},
    metrics::Metrics,
    policy::{network::NameVerdict, raw::DeniedAnswer, store::PolicyStore},
};

/// Refusals of one kind (a reason and a registrable domain) are audited
/// at most once a second per sandbox ([`Fold`]: the count of the ones
/// folded in goes into the next event of that kind), so a tunnel hammering
/// a cap cannot flood the audit log, while each domain a sandbox was
/// refused still shows.
///
/// Kinds remembered per sandbox. Past it, kinds quiet for a second are
/// forgotten (what they folded is told with the next event for their
/// reason); if that frees nothing (a flood of new domains), further new
/// domains fold together per reason.
const MAX_KINDS: usize = 256;

/// Which refusals are written out, and how many were folded in between.
#[derive(Debug, Default)]
struct Quiet {
    /// (reason, registrable domain; empty for the overflow) → its fold.
    kinds: HashMap<(&'static str, String), Fold>,
    /// Per reason, refusals folded into kinds since forgotten: told in the
    /// next event for that reason.
    forgotten: HashMap<&'static str, u64>,
}

/// What the audit event of an admitted refusal says it stands for besides
/// itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Folded {
    /// Of its kind (reason and domain), since the last event of the kind.
    same: u64,
    /// For its reason, under other domains forgotten since.
    elsewhere: u64,
}

impl Quiet {
    /// For a refusal of `name` for `reason` at `now`: `Some` to audit it,
    /// with what was folded in since; `None` to fold it into a later one.
    fn admit(&mut self, now: Instant, reason: &'static str, name: &str) -> Option<Folded> {
        let mut kind = (reason, dns_guard::registrable(name).to_ascii_lowercase());
        if !self.kinds.contains_key(&kind) && self.kinds.len() >= MAX_KINDS {
            // Kinds quiet for a while are forgotten, their folded counts
            // kept per reason so no refusal goes untold.
            let forgotten = &mut self.forgotten;
            self.kinds.retain(|(reason, _), fold| {
                let keep = !fold.quiet_at(now);
                if !keep && fold.folded() > 0 {
                    *forgotten.entry(reason).or_insert(0) += fold.folded();
                }
                keep
            });
            if self.kinds.len() >= MAX_KINDS {
                kind.1 = String::new();
            }
        }
        let same = self.kinds.entry(kind).or_default().admit(now)?;
        let elsewhere = self.forgotten.remove(reason).unwrap_or(0);
        Some(Folded { same, elsewhere })
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
        let mut told = Vec::new();
        if folded.same > 0 {
            told.push(format!(
                "{} more refused for this reason and domain since the last event",
                folded.same
            ));
        }
        if folded.elsewhere > 0 {
            told.push(format!(
                "{} more for this reason under other domains, folded earlier",
                folded.elsewhere
            ));
        }
        self.audit.record(&Event {
            event: "dns",
            verdict: "deny",
            reason,
            rule,
            sandbox: Some(&self.sandbox),
            host: Some(name),
            detail: (!told.is_empty()).then(|| told.join("; ")),
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
    use std::time::Duration;

    use super::*;
    use crate::audit::FOLD_EVERY;

    fn told(same: u64, elsewhere: u64) -> Option<Folded> {
        Some(Folded { same, elsewhere })
    }

    #[test]
    fn refusals_fold_per_reason_and_domain() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut quiet = Quiet::default();
        // (ms, reason, name, audited with what it stands for, or folded)
        #[rustfmt::skip]
        let steps: &[(u64, &'static str, &str, Option<Folded>)] = &[
            (0, "dns_denied_name", "a.evil.test", told(0, 0)),
            (10, "dns_denied_name", "b.evil.test", None),
            (20, "dns_denied_name", "B.Evil.Test.", None),
            // Another domain, or another reason, is its own kind.
            (30, "dns_denied_name", "exfil.example.co.uk", told(0, 0)),
            (40, "rate_limited", "c.evil.test", told(0, 0)),
            // A second on, the kind is audited again with its count.
            (1000, "dns_denied_name", "d.evil.test", told(2, 0)),
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

    /// The kinds kept are bounded; a flood of new domains folds together
    /// per reason, and kinds quiet for a while are forgotten, what they
    /// had folded told with the next event for their reason.
    #[test]
    fn a_flood_of_domains_is_bounded_and_nothing_goes_untold() {
        let t0 = Instant::now();
        let mut quiet = Quiet::default();
        for i in 0..MAX_KINDS {
            // An A and an AAAA question each: one told, one folded.
            assert_eq!(
                quiet.admit(t0, "dns_denied_name", &format!("d{i}.test")),
                told(0, 0)
            );
            assert_eq!(
                quiet.admit(t0, "dns_denied_name", &format!("d{i}.test")),
                None
            );
        }
        assert_eq!(quiet.admit(t0, "dns_denied_name", "new1.test"), told(0, 0));
        assert_eq!(quiet.admit(t0, "dns_denied_name", "new2.test"), None);
        assert_eq!(quiet.kinds.len(), MAX_KINDS + 1);
        // Later, the quiet kinds make room, and what they folded is told.
        let later = t0 + FOLD_EVERY * 2;
        let forgotten = MAX_KINDS as u64 + 1;
        assert_eq!(
            quiet.admit(later, "dns_denied_name", "fresh.test"),
            told(0, forgotten)
        );
        assert_eq!(
            quiet.admit(later, "dns_denied_name", "other.test"),
            told(0, 0)
        );
        assert_eq!(quiet.kinds.len(), 2);
    }
}
