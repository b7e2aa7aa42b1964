//! The compiled network policy and the pure decision on one connection.
//!
//! [`NetworkPolicy::compile`] turns `raw::Network` into indexes built once:
//! exact names and wildcard suffixes in hash maps (lowercase, no trailing
//! dot), addresses and CIDRs as [`IpNet`]s, ports as sorted lists. A request
//! costs one lowercase copy of its name and a hash lookup per label.
//!
//! # Targets
//! `example.com` (exact), `*.example.com` (every name strictly below, at any
//! depth, not `example.com` itself), an address (`203.0.113.7`, `2001:db8::1`),
//! a CIDR (`10.0.0.0/8`), or `ALL_TRAFFIC` (every destination of both
//! families). In `deny_out`, a `0.0.0.0/0` or `::/0` without ports, listed
//! without the other, is read as all traffic, as the seeds write it: it
//! denies the other family too, ranked as itself (`rules::every_family`); with
//! ports each keeps its family. Each but `ALL_TRAFFIC` may
//! carry `:PORT` (`[2001:db8::1]:443` for IPv6), or use `{ to, ports }`;
//! on `allow_out` the map may add `methods`, `paths` or `access:
//! read_only`, a [`RequestRule`] the interceptor holds every request on a
//! connection the rule won to (`sluice check` refuses one that could never
//! be enforced over HTTPS: TLS undecrypted on 443, a `passthrough` name).
//! IPv4-mapped IPv6 rules (`::ffff:10.0.0.0/104`) are stored as IPv4, since
//! that is how a destination is compared.
//!
//! # The decision ([`NetworkPolicy::decide`])
//! 1. SNI and Host both present and different (case, trailing dot and port
//!    ignored): deny, `domain_fronting`.
//! 2. The name is the SNI, else the Host. A name that is really an address
//!    (`2130706433`, `0x7f.1`, `[::1]`, see [`ssrf::parse_ip_like`]) is no name
//!    when it is the connected address, and is denied `ip_like_name` otherwise:
//!    it would let a sandbox pick which rule family judges it.
//! 3. The destination address is canonical (IPv4-mapped IPv6 is IPv4).
//! 4. Candidates are the rules of both lists whose target matches (name rules
//!    the name, address rules the address, `ALL_TRAFFIC` anything) and whose
//!    ports include the destination port. The most specific wins: exact names
//!    and single addresses; then wildcards, more labels first; then CIDRs,
//!    longer prefix first; then `ALL_TRAFFIC`. At equal specificity a rule
//!    the policy writes beats a sandbox's overlay entry
//!    ([`compile_with`](NetworkPolicy::compile_with)), `allow_out` beats
//!    `ask_out` and `ask_out` beats `deny_out`, then a rule that matched the
//!    address (what is dialled) beats one that matched the claimed name, then
//!    the earlier entry.
//! 5. No candidate: `network.unmatched` decides, as an `ALL_TRAFFIC` rule
//!    ranked below any written one (`deny` or `ask`); under `allow` (the
//!    default) allowed as `network.default_allow`.
//! 6. A deny winner: denied by that rule. An allow winner with `binaries`
//!    whose patterns the connecting program's executable does not match
//!    (or whose executable is not known): denied `binary_not_allowed` by
//!    that rule.
//! 7. Otherwise, with `ssrf_guard`, an address in an [`ssrf::IpClass`] is
//!    denied `ssrf` unless an `allow_out` address or CIDR rule (not a name,
//!    not `ALL_TRAFFIC`, not a `/0`) covering the port contains it: reaching
//!    internal addresses takes a rule that names them.
//! 8. A name-rule winner with `verify_name_resolution` also needs the name to
//!    resolve to the connected address, or it is denied
//!    `name_address_mismatch`: otherwise any SNI opens any address.
//! 9. A winner with a [`RequestRule`], on a connection that is neither
//!    plain HTTP nor decrypted, is denied `request_rule_unread`: its
//!    requests could not be read.
//! 10. Allowed by the winner; an `ask_out` winner (or `unmatched: ask`)
//!     answers [`NetVerdict::Ask`] instead, for a person to decide, and
//!     its names resolve like allowed ones so the connection can be made.
//!
//! In learn mode ([`NetworkPolicy::learning`]) a denial by the catch-all
//! (step 6, `ALL_TRAFFIC` or a `/0`) or by `binaries` is held until steps
//! 7 (SSRF) and ECH have had their say, then returned as
//! [`NetVerdict::WouldDeny`].
//!
//! Name rules cannot stop a sandbox that connects by address without a
//! name; deny by name is enforced together with `ALL_TRAFFIC` or CIDR rules.

mod checks;
mod dns;
mod rules;
mod target;
mod verdict;

use checks::{below, compile_passthrough, duplicate, unenforceable};
use dns::compile_dns;
pub use dns::{DnsLimits, RecordTypes};
use rules::{NamePorts, Ports, Rule, RuleIndex, Target, every_family, port_questions, rank};
pub use rules::{RequestRefusal, RequestRule};
use target::{Compiled, Problem, compile_target, request_key};
pub use verdict::{
    ConnRequest, NameDecision, NameVerdict, NetDenyReason, NetVerdict, RESOLVE_UNLISTED,
};

use std::{
    collections::{HashMap, hash_map::Entry},
    fmt,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    ops::Deref,
    sync::Arc,
};

use ipnet::{IpNet, Ipv4Net};

pub use super::host_name::canonical_name;
use super::{raw, ssrf};

/// The target meaning every destination, of both address families.
pub const ALL_TRAFFIC: &str = "ALL_TRAFFIC";

const DEFAULT_ALLOW: &str = "network.default_allow";
const UNMATCHED: &str = "network.unmatched";
const OVERLAY: &str = "overlay.allow_out";
const FRONTING: &str = "network.domain_fronting";
const IP_LIKE_NAME: &str = "network.ip_like_name";
const SSRF_GUARD: &str = "network.ssrf_guard";
const ECH: &str = "network.encrypted_client_hello";
/// Record types a policy may refuse; more would be a different mechanism.
const MAX_REFUSED_TYPES: usize = 16;
const PORT_HINT: &str = "ports are 1-65535";

/// One problem in a policy's `network` section, located by its YAML path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    /// `network.allow_out[2]`, `network.deny_out[0].ports[1]`,
    /// `network.dns.refuse_types[1]`.
    pub path: String,
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " (hint: {hint})")?;
        }
        Ok(())
    }
}

impl std::error::Error for CompileError {}

/// A compiled `network` section. Immutable; shared across connections.
#[derive(Debug)]
pub struct NetworkPolicy {
    rules: RuleIndex,
    allow_has_address: bool,
    /// Ports some name rule covers, sorted; `None` inside: every port.
    name_ports: NamePorts,
    /// Ports some rule with methods or paths covers.
    request_ports: NamePorts,
    ssrf_guard: bool,
    verify_name_resolution: bool,
    decide_without_decryption: bool,
    /// `encrypted_client_hello: refuse`.
    refuse_ech: bool,
    /// `mode: learn` ([`learning`](Self::learning)).
    learn: bool,
    /// Names never decrypted: exact names and wildcard bases.
    passthrough_exact: Vec<Box<str>>,
    passthrough_wildcard: Vec<Box<str>>,
    dns: DnsLimits,
}

impl NetworkPolicy {
    /// Compiles `raw`, reporting every error at once.
    pub fn compile(raw: &raw::Network) -> Result<NetworkPolicy, Vec<CompileError>> {
        NetworkPolicy::compile_with(raw, &[])
    }

    /// Compiles `raw` with a sandbox's overlay (`policy::overlay`): more
    /// `allow_out` entries, labelled `overlay.allow_out[i]`, ranked with
    /// the written ones as if listed after them.
    pub fn compile_with(
        raw: &raw::Network,
        overlay: &[raw::Target],
    ) -> Result<NetworkPolicy, Vec<CompileError>> {
        let mut errors = Vec::new();
        let mut rules = Vec::new();
        // Target and ports → index in `rules` of the first rule with them.
        let mut first: HashMap<(Target, Box<[u16]>), usize> = HashMap::new();
        // (allow, ask): what a rule of each list answers.
        let lists = [
            ((true, false), "network.allow_out", &raw.allow_out[..]),
            ((true, false), OVERLAY, overlay),
            ((true, true), "network.ask_out", &raw.ask_out[..]),
            ((false, false), "network.deny_out", &raw.deny_out[..]),
        ];
        let passthrough = compile_passthrough(&raw.passthrough, &mut errors);
        let decrypts = !raw.decide_without_decryption.unwrap_or(true);
        let mut written_before = 0;
        for (action, field, list) in lists {
            let (allow, ask) = action;
            for (index, written) in list.iter().enumerate() {
                let label: Box<str> = format!("{field}[{index}]").into();
                // An asked destination carries no request or program rules:
                // a person approves the destination.
                let Some(Compiled {
                    target,
                    ports,
                    request,
                    binaries,
                }) = compile_target(written, &label, allow && !ask, &mut errors)
                else {
                    continue;
                };
                if let (Some(_), raw::Target::Full(spec)) = (&request, written) {
                    let at = format!("{label}.{}", request_key(spec).unwrap_or("methods"));
                    let problem = unenforceable(&target, &ports, decrypts, &passthrough);
                    errors.extend(problem.map(|problem| problem.at(at)));
                }
                match first.entry((target.clone(), ports.clone())) {
                    Entry::Occupied(seen) => {
                        if let Some(seen) = rules.get(*seen.get()) {
                            errors.push(duplicate(&label, action, seen));
                        }
                        continue;
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(rules.len());
                    }
                }
                let rank = rank(&target, action, written_before + index);
                let rank = match field == OVERLAY {
                    true => rank.below_written(),
                    false => rank,
                };
                rules.push(Rule {
                    allow,
                    ask,
                    label,
                    target,
                    ports,
                    rank,
                    companion: false,
                    request: request.map(Arc::new),
                    binaries,
                });
            }
            written_before += list.len();
        }
        rules.extend(every_family(&rules));
        rules.extend(unmatched(raw.unmatched));
        let dns = compile_dns(&raw.dns, &mut errors);
        let (passthrough_exact, passthrough_wildcard) = passthrough;
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(NetworkPolicy {
            allow_has_address: rules
                .iter()
                .any(|rule| rule.allow && matches!(rule.target, Target::Net(_))),
            name_ports: NamePorts::of(&rules),
            request_ports: NamePorts::covered_by(rules.iter().filter(|r| r.request.is_some())),
            ssrf_guard: raw.ssrf_guard,
            verify_name_resolution: raw.verify_name_resolution,
            decide_without_decryption: raw.decide_without_decryption.unwrap_or(true),
            refuse_ech: raw.encrypted_client_hello == raw::EncryptedClientHello::Refuse,
            learn: false,
            passthrough_exact,
            passthrough_wildcard,
            dns,
            rules: RuleIndex::new(rules),
        })
    }

    /// Learn mode (a policy's `mode: learn`): what only the catch-all
    /// (`ALL_TRAFFIC` or a `/0` in `deny_out`) or a rule's `binaries` would
    /// refuse goes on, [`NetVerdict::WouldDeny`] (and its name resolves,
    /// [`NameDecision::WouldDeny`]); the deny rules that name something,
    /// the SSRF guard, fronting, ECH and name verification still refuse.
    pub fn learning(mut self, on: bool) -> NetworkPolicy {
        self.learn = on;
        self
    }

    /// Whether the policy is in learn mode.
    pub fn learns(&self) -> bool {
        self.learn
    }

    /// The `deny_out` entries read as all traffic: a portless `0.0.0.0/0`
    /// or `::/0` listed without the other (see `rules::every_family`), by
    /// label, for `sluice check` to say so.
    pub fn all_traffic_readings(&self) -> Vec<&str> {
        let companions = self.rules.iter().filter(|rule| rule.companion);
        companions.map(|rule| &*rule.label).collect()
    }

    /// Whether an allowed TLS connection with this name (its SNI, or an
    /// explicit-proxy tunnel's name) is decrypted and proxied rather than
    /// spliced. Plain HTTP is read whatever this says.
    pub fn intercepts(&self, name: Option<&str>) -> bool {
        if self.decide_without_decryption {
            return false;
        }
        let Some(name) = name.map(canonical_name) else {
            return true;
        };
        if self.passthrough_exact.iter().any(|n| **n == *name) {
            return false;
        }
        !self
            .passthrough_wildcard
            .iter()
            .any(|base| below(&name, base))
    }

    /// What the requests on a connection decided on `name` (canonical;
    /// an address written out is no name, as in [`decide`](Self::decide))
    /// to `dst` may ask for: the winning rule's [`RequestRule`], the one
    /// [`decide`](Self::decide) allowed the connection by. The
    /// interceptor asks once per connection.
    pub fn request_rule(&self, name: Option<&str>, dst: SocketAddr) -> Option<Arc<RequestRule>> {
        let ip = dst.ip().to_canonical();
        let name = name.filter(|name| match ssrf::parse_ip_like(name) {
            Some(named) => named.to_canonical() != ip,
            None => true,
        });
        let winner = self.rules.winner(name, Some(ip), Ports::At(dst.port()))?;
        winner.request.clone().filter(|_| winner.allow)
    }

    /// Whether a rule with methods or paths covers `port`: its requests
    /// are read, so its first bytes are.
    pub fn request_rules_apply(&self, port: u16) -> bool {
        self.request_ports.has(port)
    }

    /// The decision on one connection; see the module documentation.
    pub fn decide(&self, req: &ConnRequest<'_>) -> NetVerdict {
        let sni = req.sni.map(canonical_name).filter(|name| !name.is_empty());
        let host = req.host.map(canonical_name).filter(|name| !name.is_empty());
        if let (Some(sni), Some(host)) = (&sni, &host)
            && sni != host
        {
            return deny(NetDenyReason::DomainFronting, FRONTING);
        }
        let ip = req.dst.ip().to_canonical();
        let port = Ports::At(req.dst.port());
        let name = match sni.or(host) {
            Some(name) => match ssrf::parse_ip_like(&name) {
                Some(named) if named.to_canonical() == ip => None,
                Some(_) => return deny(NetDenyReason::IpLikeName, IP_LIKE_NAME),
                None => Some(name),
            },
            None => None,
        };
        let winner = self.rules.winner(name.as_deref(), Some(ip), port);
        // In learn mode, what the catch-all or `binaries` refuse is only
        // noted, and the checks below still refuse what they refuse.
        let mut learned = None;
        if let Some(rule) = winner
            && !rule.allow
        {
            if !(self.learn && rule.is_catch_all()) {
                return deny(NetDenyReason::DeniedByRule, &rule.label);
            }
            learned = Some((NetDenyReason::DeniedByRule, rule));
        } else if let Some(rule) = winner
            && !rule.admits(req.exe)
        {
            if !self.learn {
                return deny(NetDenyReason::BinaryNotAllowed, &rule.label);
            }
            learned = Some((NetDenyReason::BinaryNotAllowed, rule));
        }
        if let Some(class) = self.ssrf_refusal(ip, port, req.host_address) {
            return deny(NetDenyReason::Ssrf(class), SSRF_GUARD);
        }
        // An undecrypted hello that offers ECH may carry another name
        // inside; refused where the policy says so, before any allow.
        if req.ech && self.refuse_ech {
            return deny(NetDenyReason::EncryptedClientHello, ECH);
        }
        if let Some((reason, rule)) = learned {
            return NetVerdict::WouldDeny {
                reason,
                rule: rule.label.to_string(),
            };
        }
        let Some(rule) = winner else {
            return allow(DEFAULT_ALLOW);
        };
        if rule.is_name() && self.verify_name_resolution {
            let resolves = req
                .name_addrs
                .is_some_and(|addrs| addrs.iter().any(|addr| addr.to_canonical() == ip));
            if !resolves {
                return deny(NetDenyReason::NameAddressMismatch, &rule.label);
            }
        }
        // A rule that decides per request needs the requests read: not
        // plain HTTP (no Host) and not decrypted, it could not.
        if rule.request.is_some() && req.host.is_none() && !self.intercepts(req.sni) {
            return deny(NetDenyReason::RequestRuleUnread, &rule.label);
        }
        let rule = rule.label.to_string();
        match (rule_asks(winner), self.learn) {
            (false, _) => NetVerdict::Allow { rule },
            (true, false) => NetVerdict::Ask { rule },
            (true, true) => NetVerdict::WouldAsk { rule },
        }
    }

    /// For the DNS listener, before any address exists: [`NameDecision`],
    /// as `sluice explain` shows it (an unlisted name refused is a
    /// [`NameVerdict::Deny`] by its `ALL_TRAFFIC` rule; one resolved under
    /// `resolve_unlisted` is [`NameVerdict::ByAddress`]).
    pub fn name_verdict(&self, name: &str) -> NameVerdict {
        match self.name_decision(name) {
            NameDecision::Allow { rule } => NameVerdict::Allow { rule },
            NameDecision::Deny { rule } | NameDecision::Unlisted { rule } => {
                NameVerdict::Deny { rule }
            }
            NameDecision::ByAddress | NameDecision::ResolveUnlisted => NameVerdict::ByAddress,
            NameDecision::WouldDeny { rule } => NameVerdict::WouldDeny { rule },
        }
    }

    /// The DNS listener's decision on a name, before any address exists.
    /// Name rules and `ALL_TRAFFIC` decide as in [`decide`](Self::decide),
    /// a port at a time; the name is allowed if some port to it would be.
    /// Otherwise:
    /// - some port is left to no rule at all (default allow): resolved,
    ///   its answers filtered by the address rules where `allow_out` has
    ///   some ([`NameDecision::ByAddress`]), unfiltered where not;
    /// - a name rule denies it on some port: denied by that rule;
    /// - `ALL_TRAFFIC` denies it on every port: denied by that rule where
    ///   `allow_out` has no address rules; where it has some, only they
    ///   could let the name's answers through, and the name is
    ///   [`NameDecision::Unlisted`] (answered by Sluice, never asked
    ///   upstream, whose zone's name server would read it), or
    ///   [`NameDecision::ResolveUnlisted`] under `dns.resolve_unlisted`.
    ///
    /// A name written like an address is, where `allow_out` has address
    /// rules, no name to the name rules (they could let a sandbox pick
    /// which rule family judges it): only `ALL_TRAFFIC` and the address
    /// rules decide it, an `ALL_TRAFFIC` allow included (it is resolved and
    /// filtered). Elsewhere it is decided like any name.
    pub fn name_decision(&self, name: &str) -> NameDecision {
        let name = canonical_name(name);
        let ip_like = self.allow_has_address && ssrf::parse_ip_like(&name).is_some();
        let named = (!ip_like).then_some(name.as_str());
        let mut denied_by_name = None;
        let mut all_denies = None;
        let mut unmatched = false;
        let rules = named
            .into_iter()
            .flat_map(|name| self.rules.name_rules(name));
        for ports in port_questions(rules.chain(self.rules.all_rules())) {
            match self.rules.winner(named, None, ports) {
                // Only the answers' addresses can decide it.
                Some(rule) if rule.allow && ip_like => unmatched = true,
                Some(rule) if rule.allow => {
                    return NameDecision::Allow {
                        rule: rule.label.to_string(),
                    };
                }
                Some(rule) if rule.is_name() => {
                    denied_by_name.get_or_insert(rule);
                }
                Some(rule) => all_denies = Some(rule),
                None => unmatched = true,
            }
        }
        // A port no rule decides is allowed by default.
        let Some(rule) = denied_by_name.or(all_denies).filter(|_| !unmatched) else {
            if self.allow_has_address {
                return NameDecision::ByAddress;
            }
            return NameDecision::Allow {
                rule: DEFAULT_ALLOW.into(),
            };
        };
        if self.learn && rule.is_catch_all() {
            NameDecision::WouldDeny {
                rule: rule.label.to_string(),
            }
        } else if rule.is_name() || !self.allow_has_address {
            NameDecision::Deny {
                rule: rule.label.to_string(),
            }
        } else if self.dns.resolve_unlisted {
            NameDecision::ResolveUnlisted
        } else {
            NameDecision::Unlisted {
                rule: rule.label.to_string(),
            }
        }
    }

    /// For filtering DNS answers under [`NameDecision::ByAddress`] and
    /// [`NameDecision::ResolveUnlisted`]: would some
    /// port to `ip` be allowed by address rules and `ALL_TRAFFIC`, SSRF guard
    /// included?
    pub fn address_allowed(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        port_questions(self.rules.address_rules(ip).chain(self.rules.all_rules())).any(|ports| {
            self.rules
                .winner(None, Some(ip), ports)
                .is_none_or(|rule| rule.allow || (self.learn && rule.is_catch_all()))
                && self.ssrf_refusal(ip, ports, false).is_none()
        })
    }

    /// Whether [`decide`](Self::decide) will want `name_addrs` for this name:
    /// verification is on and an `allow_out` name rule matches it.
    pub fn wants_resolution(&self, name: &str) -> bool {
        if !self.verify_name_resolution {
            return false;
        }
        let name = canonical_name(name);
        ssrf::parse_ip_like(&name).is_none() && self.rules.name_rules(&name).any(|rule| rule.allow)
    }

    /// Whether any name rule covers `port`. When none does, SNI and Host
    /// cannot change the decision, so the proxy need not wait for the
    /// client's first bytes (server-first protocols keep working).
    pub fn name_rules_apply(&self, port: u16) -> bool {
        self.name_ports.has(port)
    }

    pub fn dns_limits(&self) -> &DnsLimits {
        &self.dns
    }

    /// Whether a TLS hello offering Encrypted Client Hello is refused when
    /// the connection is not decrypted.
    pub fn refuses_ech(&self) -> bool {
        self.refuse_ech
    }

    /// Whether SNI / Host may decide without terminating TLS.
    pub fn decide_without_decryption(&self) -> bool {
        self.decide_without_decryption
    }

    /// Whether [`ConnRequest::host_address`] can change a verdict on `ip`:
    /// the guard is on and the tables call `ip` public.
    pub fn asks_host_address(&self, ip: IpAddr) -> bool {
        self.ssrf_guard && ssrf::classify(ip).is_none()
    }

    fn ssrf_refusal(&self, ip: IpAddr, ports: Ports, host: bool) -> Option<ssrf::IpClass> {
        if !self.ssrf_guard {
            return None;
        }
        let class = ssrf::classify(ip).or(host.then_some(ssrf::IpClass::Host))?;
        let lifted = self
            .rules
            .address_rules(ip)
            .any(|rule| rule.lifts_ssrf_guard(ip, ports));
        (!lifted).then_some(class)
    }
}

fn rule_asks(winner: Option<&Rule>) -> bool {
    winner.is_some_and(|rule| rule.ask)
}

/// `network.unmatched` other than `allow`, as the rule that answers what
/// no written rule covers: `ALL_TRAFFIC`, ranked below any written one.
fn unmatched(unmatched: raw::Unmatched) -> Option<Rule> {
    let action = match unmatched {
        raw::Unmatched::Allow => return None,
        raw::Unmatched::Deny => (false, false),
        raw::Unmatched::Ask => (true, true),
    };
    Some(Rule {
        allow: action.0,
        ask: action.1,
        label: UNMATCHED.into(),
        target: Target::All,
        ports: Box::new([]),
        rank: rank(&Target::All, action, usize::MAX).below_written(),
        companion: false,
        request: None,
        binaries: None,
    })
}

fn allow(rule: &str) -> NetVerdict {
    NetVerdict::Allow { rule: rule.into() }
}

fn deny(reason: NetDenyReason, rule: &str) -> NetVerdict {
    NetVerdict::Deny {
        reason,
        rule: rule.into(),
    }
}

#[cfg(test)]
mod ask_tests;
#[cfg(test)]
mod tests;
