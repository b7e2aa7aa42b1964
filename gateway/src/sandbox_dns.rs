//! One sandbox's DNS gate: the name rules of its policy, the tunnelling caps
//! (`dns_guard`), and the audit trail of what was refused, and of what was
//! asked upstream for names no rule names (`dns.resolve_unlisted`).
//!
//! Each sandbox has its own DNS listener, so the gate knows who asked without
//! any lookup; the policy is read from the live store on every question, so a
//! reload applies to the next query. Every name resolved on a sandbox's
//! behalf passes one decision (`SandboxDns::decide`): its own queries
//! ([`Gate::admit`]) and the proxy's lookups for an SNI or Host
//! ([`Gate::admit_lookup`], which spend no query-rate token) alike, so the
//! name rules and the unique-name caps count them all.

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
    policy::{
        network::{NameDecision, RESOLVE_UNLISTED},
        overlay::{Overlaid, Overlays},
        raw::DeniedAnswer,
        store::PolicyStore,
    },
};

/// Audit reason of a name refused because no rule names it
/// ([`NameDecision::Unlisted`]).
const UNLISTED: &str = "dns_unlisted_name";
/// Audit reason of a name a rule refuses.
const DENIED: &str = "dns_denied_name";
/// Audit reason of a query for a name no rule names, resolved under
/// `resolve_unlisted` (verdict `allow`).
const RESOLVED_UNLISTED: &str = "resolved_unlisted";

/// Refusals of one kind (a reason and a registrable domain), and queries
/// resolved under `resolve_unlisted` (reason `resolved_unlisted`), are
/// audited at most once a second per sandbox ([`Fold`]: the count of the ones
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
    /// The sandbox's overlay entries answer names as its policy's do.
    overlays: Arc<Overlays>,
    guard: Mutex<Guard>,
    audit: Audit,
    metrics: Arc<Metrics>,
    quiet: Mutex<Quiet>,
}

impl SandboxDns {
    pub fn new(
        sandbox: &str,
        policy: &str,
        (store, overlays): (Arc<PolicyStore>, Arc<Overlays>),
        audit: Audit,
        metrics: Arc<Metrics>,
    ) -> SandboxDns {
        SandboxDns {
            sandbox: Arc::from(sandbox),
            policy: ArcSwap::from_pointee(policy.to_owned()),
            store,
            overlays,
            guard: Mutex::new(Guard::new()),
            audit,
            metrics,
            quiet: Mutex::new(Quiet::default()),
        }
    }

    fn refuse(&self, name: &str, reason: &'static str, rule: &str) {
        self.metrics.dns_refusals.with_label_values(&[reason]).inc();
        self.tell("deny", name, reason, rule);
    }

    /// Audits one decision on `name`, unless [`Quiet`] folds it into a
    /// later one of its kind.
    fn tell(&self, verdict: &'static str, name: &str, reason: &'static str, rule: &str) {
        let admitted = self.quiet.lock().unwrap_or_else(|e| e.into_inner()).admit(
            Instant::now(),
            reason,
            name,
        );
        let Some(folded) = admitted else {
            return;
        };
        let done = if verdict == "deny" {
            "refused"
        } else {
            "resolved"
        };
        let mut told = Vec::new();
        if folded.same > 0 {
            told.push(format!(
                "{} more {done} for this reason and domain since the last event",
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
            verdict,
            reason,
            rule: Some(rule),
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
        self.decide(name, Some(qtype))
    }

    fn admit_lookup(&self, name: &str) -> Admission {
        self.decide(name, None)
    }

    fn keep(&self, ip: IpAddr) -> bool {
        let set = self.store.current();
        let Some(policy) = set.get(self.policy.load().as_str()) else {
            return false;
        };
        let overlaid = self.overlays.network(&self.sandbox, policy);
        Overlaid::or_policy(overlaid.as_deref(), policy).address_allowed(ip)
    }
}

impl SandboxDns {
    /// A query of `qtype`, or (`None`) a lookup Sluice makes for a
    /// connection ([`Guard::check_lookup`]: no query-rate token spent).
    fn decide(&self, name: &str, qtype: Option<RecordType>) -> Admission {
        let set = self.store.current();
        let name_of_policy = self.policy.load();
        let Some(policy) = set.get(name_of_policy.as_str()) else {
            // Reloads refuse to drop a policy in use; fail closed anyway.
            return Admission::Refuse(ResponseCode::ServFail, "servfail");
        };
        let overlaid = self.overlays.network(&self.sandbox, policy);
        let network = Overlaid::or_policy(overlaid.as_deref(), policy);
        let limits = network.dns_limits();
        // Decided first (it is pure), so the names resolve_unlisted lets
        // through meet their own, lower, unique-name cap.
        let decision = network.name_decision(name);
        let unique = match decision {
            NameDecision::ResolveUnlisted => limits.max_unique_unlisted_per_minute,
            _ => limits.max_unique_subdomains_per_minute,
        };
        let caps = dns_guard::Limits {
            max_queries_per_second: limits.max_queries_per_second,
            max_label_length: limits.max_label_length,
            max_name_length: limits.max_name_length,
            max_unique_subdomains_per_minute: unique,
        };
        let mut guard = self.guard.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let checked = match qtype {
            Some(qtype) => guard.check(now, name, u16::from(qtype), &caps, &limits.refused_types),
            None => guard.check_lookup(now, name, &caps),
        };
        drop(guard);
        if let dns_guard::Verdict::Refuse(reason) = checked {
            self.refuse(
                name,
                reason.as_str(),
                &format!("{name_of_policy}:network.dns"),
            );
            return Admission::Refuse(ResponseCode::Refused, "refused");
        }
        let (reason, rule) = match decision {
            NameDecision::Allow { .. } => return Admission::Resolve,
            NameDecision::ByAddress => return Admission::ResolveFiltered,
            NameDecision::ResolveUnlisted => {
                let rule = format!("{name_of_policy}:{RESOLVE_UNLISTED}");
                self.tell("allow", name, RESOLVED_UNLISTED, &rule);
                return Admission::ResolveFiltered;
            }
            NameDecision::WouldDeny { rule } => {
                let rule = format!("{name_of_policy}:{rule}");
                self.tell("would_deny", name, UNLISTED, &rule);
                return Admission::Resolve;
            }
            NameDecision::Deny { rule } => (DENIED, rule),
            NameDecision::Unlisted { rule } => (UNLISTED, rule),
        };
        self.refuse(name, reason, &format!("{name_of_policy}:{rule}"));
        let code = match limits.denied_answer {
            DeniedAnswer::Nxdomain => ResponseCode::NXDomain,
            DeniedAnswer::Refused => ResponseCode::Refused,
        };
        Admission::Refuse(code, "denied")
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

    /// A zone that answers every A question with 127.0.0.1 (other types:
    /// no records) and records each question it was asked.
    async fn counting_zone() -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
        use hickory_proto::{
            op::{Message, MessageType},
            rr::{RData, Record, rdata::A},
        };
        let socket = tokio::net::UdpSocket::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = socket.local_addr().expect("addr");
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&asked);
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok((n, peer)) = socket.recv_from(&mut buf).await {
                let Ok(request) = Message::from_vec(&buf[..n]) else {
                    continue;
                };
                let Some(question) = request.queries().first().cloned() else {
                    continue;
                };
                seen.lock().expect("lock").push(question.name().to_ascii());
                let mut response = Message::new();
                response
                    .set_id(request.id())
                    .set_message_type(MessageType::Response)
                    .set_recursion_desired(true)
                    .set_recursion_available(true)
                    .add_query(question.clone());
                if question.query_type() == RecordType::A {
                    let a = RData::A(A::new(127, 0, 0, 1));
                    response.add_answer(Record::from_rdata(question.name().clone(), 60, a));
                }
                let _ = socket
                    .send_to(&response.to_vec().expect("encodable"), peer)
                    .await;
            }
        });
        (addr, asked)
    }

    /// Sandbox `sb`'s gate under policy `p` (its YAML), the resolver asking
    /// `zone`, and the audit file the gate writes to.
    struct World {
        gate: SandboxDns,
        resolver: crate::resolve::Resolver,
        metrics: Arc<Metrics>,
        audit: std::path::PathBuf,
        _dir: tempfile::TempDir,
    }

    impl World {
        fn new(policy: &str, zone: std::net::SocketAddr) -> World {
            let dir = tempfile::tempdir().expect("tempdir");
            let policies = dir.path().join("policies");
            std::fs::create_dir(&policies).expect("mkdir");
            std::fs::write(policies.join("p.yaml"), policy).expect("write policy");
            let metrics = Arc::new(Metrics::new());
            let store = PolicyStore::load(
                &policies,
                Arc::default(),
                Arc::from(Vec::new()),
                metrics.clone(),
            )
            .expect("policy loads");
            let audit = dir.path().join("audit.jsonl");
            let gate = SandboxDns::new(
                "sb",
                "p",
                (Arc::new(store), Arc::new(Overlays::in_memory())),
                Audit::open(audit.to_str().expect("utf-8"), metrics.clone()).expect("audit"),
                metrics.clone(),
            );
            let resolver = crate::resolve::Resolver::new(&crate::resolve::ResolverConfig {
                hosts: std::collections::BTreeMap::new(),
                nameservers: vec![zone],
                system: false,
            })
            .expect("resolver");
            World {
                gate,
                resolver,
                metrics,
                audit,
                _dir: dir,
            }
        }

        /// The rcode and answer addresses for one question.
        async fn ask(&self, name: &str, qtype: RecordType) -> (ResponseCode, Vec<String>) {
            use hickory_proto::{
                op::{Message, Query},
                rr::Name,
            };
            let mut query = Message::new();
            query
                .set_id(7)
                .set_recursion_desired(true)
                .add_query(Query::query(Name::from_ascii(name).expect("name"), qtype));
            let query = query.to_vec().expect("encodable");
            let (reply, _) = crate::dns::answer(&query, &self.resolver, &self.gate).await;
            let reply = Message::from_vec(&reply).expect("reply parses");
            let answers = reply.answers().iter().map(|r| r.data().to_string());
            (reply.response_code(), answers.collect())
        }

        fn events(&self, reason: &str) -> Vec<serde_json::Value> {
            let text = std::fs::read_to_string(&self.audit).unwrap_or_default();
            text.lines()
                .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("json"))
                .filter(|event| event["event"] == "dns" && event["reason"] == reason)
                .collect()
        }
    }

    const CLOSED: &str =
        "network:\n  allow_out: [127.0.0.1/32, listed.example]\n  deny_out: [ALL_TRAFFIC]\n";

    /// Under default deny with an address rule, fresh names in a zone no
    /// rule names are answered here: the zone hears nothing.
    #[tokio::test]
    async fn unlisted_names_are_refused_without_asking_upstream() {
        let (zone, asked) = counting_zone().await;
        let world = World::new(CLOSED, zone);
        for i in 0..20 {
            for qtype in [RecordType::A, RecordType::AAAA] {
                let name = format!("{i:02x}c0ffee.tunnel.example.");
                let got = world.ask(&name, qtype).await;
                assert_eq!(got, (ResponseCode::NXDomain, vec![]), "{name} {qtype}");
            }
        }
        // A name a rule allows is asked: the zone is reachable.
        let got = world.ask("listed.example.", RecordType::A).await;
        assert_eq!(got, (ResponseCode::NoError, vec!["127.0.0.1".to_owned()]));
        assert_eq!(*asked.lock().expect("lock"), ["listed.example."]);

        let refused = world.events(UNLISTED);
        assert_eq!(refused[0]["verdict"], "deny", "{refused:?}");
        assert_eq!(refused[0]["rule"], "p:network.deny_out[0]", "{refused:?}");
        assert_eq!(
            refused[0]["host"], "00c0ffee.tunnel.example.",
            "{refused:?}"
        );
        let counted = world.metrics.dns_refusals.with_label_values(&[UNLISTED]);
        assert_eq!(counted.get(), 40);
    }

    /// Under `resolve_unlisted` they are asked, each audited, and only ten
    /// names of one domain a minute by default.
    #[tokio::test]
    async fn resolve_unlisted_asks_audits_and_caps_low() {
        let (zone, asked) = counting_zone().await;
        let policy = format!("{CLOSED}  dns:\n    resolve_unlisted: true\n");
        let world = World::new(&policy, zone);
        let name = |i: usize| format!("{i:02x}c0ffee.tunnel.example.");
        for i in 0..10 {
            let got = world.ask(&name(i), RecordType::A).await;
            assert_eq!(got, (ResponseCode::NoError, vec!["127.0.0.1".to_owned()]));
        }
        let got = world.ask(&name(10), RecordType::A).await;
        assert_eq!(got, (ResponseCode::Refused, vec![]), "past the cap");
        // A name already asked is no new name.
        let got = world.ask(&name(0), RecordType::AAAA).await;
        assert_eq!(got, (ResponseCode::NoError, vec![]));
        let zone_heard = asked.lock().expect("lock").clone();
        let mut want: Vec<String> = (0..10).map(name).collect();
        want.push(name(0));
        assert_eq!(zone_heard, want);

        // Audited as allowed, folded: the first at once, the rest told
        // with a later event of their kind (Quiet's tests drive the clock).
        let resolved = world.events(RESOLVED_UNLISTED);
        assert!(!resolved.is_empty(), "every forwarded query is audited");
        assert_eq!(resolved[0]["verdict"], "allow", "{resolved:?}");
        assert_eq!(resolved[0]["host"], name(0), "{resolved:?}");
        assert_eq!(
            resolved[0]["rule"], "p:network.dns.resolve_unlisted",
            "{resolved:?}"
        );
        assert!(resolved.len() <= 11, "{resolved:?}");
        let capped = world.events("dns_unique_subdomains");
        assert_eq!(capped.len(), 1, "{capped:?}");
        assert_eq!(capped[0]["host"], name(10));
    }

    /// Lookups Sluice makes for a connection's SNI or Host meet the name
    /// rules and the unique-name window as queries do, but spend no
    /// query-rate token: a client opening many connections to one allowed
    /// host is not refused for it, and fresh names still run out.
    #[tokio::test]
    async fn lookups_for_connections_count_names_not_connections() {
        let (zone, _) = counting_zone().await;
        let policy = "network:\n  allow_out: [\"*.listed.example\", 127.0.0.1/32]\n  deny_out: [ALL_TRAFFIC]\n  dns:\n    max_queries_per_second: 1\n    max_unique_subdomains_per_minute: 3\n";
        let world = World::new(policy, zone);
        for _ in 0..100 {
            assert_eq!(
                world.gate.admit_lookup("api.listed.example"),
                Admission::Resolve
            );
        }
        // The rate is the queries': two (the burst), then refused.
        for _ in 0..2 {
            assert_eq!(
                world.gate.admit("www.listed.example", RecordType::A),
                Admission::Resolve
            );
        }
        assert!(matches!(
            world.gate.admit("www.listed.example", RecordType::A),
            Admission::Refuse(..)
        ));
        // Fresh names count against the window whoever asks: api and www
        // are two of three; one more, then refused.
        assert_eq!(
            world.gate.admit_lookup("cdn.listed.example"),
            Admission::Resolve
        );
        assert!(matches!(
            world.gate.admit_lookup("x1.listed.example"),
            Admission::Refuse(..)
        ));
        // Names no rule allows are not looked up.
        assert!(matches!(
            world.gate.admit_lookup("data.tunnel.example"),
            Admission::Refuse(..)
        ));
    }
}
