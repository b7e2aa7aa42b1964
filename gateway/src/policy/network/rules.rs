//! The network policy's rule table: each compiled rule (target, ports,
//! precedence), the indexes that find the rules a name or an address
//! matches, and the choice among them of the one that wins (most specific
//! first; see the parent module's "The decision", step 4). What a winner
//! means for a connection or a name is decided by the parent. An
//! `allow_out` rule may also narrow the requests on the connections it
//! wins ([`RequestRule`], decided per request by the interceptor).

use std::{cmp::Reverse, collections::HashMap, net::IpAddr, sync::Arc};

use ipnet::IpNet;

use crate::{
    apps::pattern::{PathPattern, has_dot_segment, normalize_path},
    policy::ssrf,
};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Target {
    Exact(Box<str>),
    /// The base: `example.com` for `*.example.com`.
    Wildcard(Box<str>),
    Net(IpNet),
    All,
}

#[derive(Debug)]
pub(super) struct Rule {
    /// `allow_out` or `ask_out` (an asked destination is allowed once a
    /// person says so; the DNS answers it so the connection can be made).
    pub(super) allow: bool,
    /// `ask_out`, or `network.unmatched: ask`.
    pub(super) ask: bool,
    pub(super) label: Box<str>,
    pub(super) target: Target,
    /// Sorted, deduplicated; empty means every port.
    pub(super) ports: Box<[u16]>,
    pub(super) rank: Rank,
    /// Not written: the other family's `/0` of a `deny_out` entry read as
    /// all traffic ([`every_family`]).
    pub(super) companion: bool,
    /// `methods` / `paths` / `access` of an `allow_out` rule: what the
    /// requests on a connection it won may ask for.
    pub(super) request: Option<Arc<RequestRule>>,
    /// `binaries` of an `allow_out` rule: the only executables whose
    /// connections it allows; `None`: any program.
    pub(super) binaries: Option<Box<[PathPattern]>>,
}

/// What an `allow_out` rule lets a request on a connection it won ask
/// for: its methods and its paths (each absent: any). Compiled once with
/// the policy; the interceptor's `network_rule` stage asks
/// [`RequestRule::decide`] of every request.
#[derive(Debug)]
pub struct RequestRule {
    /// `network.allow_out[2]`.
    pub label: Box<str>,
    /// Upper case, deduplicated, in the order written; `None`: any.
    pub(super) methods: Option<Box<[Box<str>]>>,
    /// `None`: any path.
    pub(super) paths: Option<Box<[PathPattern]>>,
}

/// Why a request falls outside its connection's [`RequestRule`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestRefusal {
    MethodNotAllowed,
    PathNotAllowed,
    /// A `.` or `..` segment, where the rule has paths: the upstream
    /// would resolve it to a path the patterns never saw (as apps refuse
    /// it, `apps::pattern::has_dot_segment`).
    PathDotSegment,
    /// A protocol upgrade (WebSocket), where the rule names methods: the
    /// frames that follow go both ways, and no method rule sees them, so
    /// a read-only rule would carry writes.
    UpgradeNotAllowed,
}

impl RequestRefusal {
    pub const ALL: [RequestRefusal; 4] = [
        RequestRefusal::MethodNotAllowed,
        RequestRefusal::PathNotAllowed,
        RequestRefusal::PathDotSegment,
        RequestRefusal::UpgradeNotAllowed,
    ];

    /// The reason in the answer, the audit event and the metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            RequestRefusal::MethodNotAllowed => "method_not_allowed",
            RequestRefusal::PathNotAllowed => "path_not_allowed",
            RequestRefusal::PathDotSegment => "path_dot_segment",
            RequestRefusal::UpgradeNotAllowed => "upgrade_not_allowed",
        }
    }
}

impl RequestRule {
    /// Whether a request with `method` for `path_and_query` (its query
    /// takes no part) may go on: the method first, then the path,
    /// normalized as the app catalogue normalizes it. An `upgrade` is
    /// refused wherever the rule names methods.
    pub fn decide(
        &self,
        method: &str,
        path_and_query: &str,
        upgrade: bool,
    ) -> Result<(), RequestRefusal> {
        if let Some(methods) = &self.methods {
            if !methods.iter().any(|m| **m == *method) {
                return Err(RequestRefusal::MethodNotAllowed);
            }
            if upgrade {
                return Err(RequestRefusal::UpgradeNotAllowed);
            }
        }
        let Some(paths) = &self.paths else {
            return Ok(());
        };
        if has_dot_segment(path_and_query) {
            return Err(RequestRefusal::PathDotSegment);
        }
        let path = normalize_path(path_and_query);
        match paths.iter().any(|pattern| pattern.matches(&path)) {
            true => Ok(()),
            false => Err(RequestRefusal::PathNotAllowed),
        }
    }

    /// The methods allowed, as written (`None`: any).
    pub fn methods(&self) -> Option<impl Iterator<Item = &str>> {
        self.methods.as_ref().map(|m| m.iter().map(|m| &**m))
    }

    /// The path patterns allowed, as written (`None`: any).
    pub fn paths(&self) -> Option<impl Iterator<Item = &str>> {
        self.paths
            .as_ref()
            .map(|p| p.iter().map(PathPattern::as_str))
    }

    /// One sentence: what the rule lets through.
    pub fn describe(&self) -> String {
        let methods = match self.methods() {
            Some(methods) => methods.collect::<Vec<_>>().join(", "),
            None => "any method".to_owned(),
        };
        let paths = match self.paths() {
            Some(paths) => paths.collect::<Vec<_>>().join(", "),
            None => "any path".to_owned(),
        };
        format!("{} allows {methods} to {paths}", self.label)
    }
}

/// Precedence among matching rules; the greatest wins. Field order is
/// comparison order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Rank {
    /// 3: exact name or single address; 2: wildcard; 1: CIDR; 0: ALL_TRAFFIC.
    tier: u8,
    /// Wildcard base labels, or CIDR prefix length.
    detail: u8,
    /// Written in the policy, not a sandbox's overlay entry: at equal
    /// specificity the policy's own rule decides.
    written: bool,
    allow: bool,
    /// At equal specificity an `allow_out` rule beats an `ask_out` one.
    unasked: bool,
    by_address: bool,
    order: Reverse<usize>,
}

impl Rank {
    /// Ranked below the written rules of the same specificity: a sandbox's
    /// overlay entry (`policy::overlay`) and `network.unmatched`.
    pub(super) fn below_written(self) -> Rank {
        Rank {
            written: false,
            ..self
        }
    }
}

/// The ports name rules cover, answered without walking the rules.
#[derive(Debug)]
pub(super) enum NamePorts {
    Every,
    /// Sorted; empty when there are no name rules.
    Some(Box<[u16]>),
}

impl NamePorts {
    pub(super) fn of(rules: &[Rule]) -> NamePorts {
        NamePorts::covered_by(rules.iter().filter(|rule| rule.is_name()))
    }

    /// The ports `rules` cover between them.
    pub(super) fn covered_by<'r>(rules: impl Iterator<Item = &'r Rule>) -> NamePorts {
        let mut ports = Vec::new();
        for rule in rules {
            if rule.ports.is_empty() {
                return NamePorts::Every;
            }
            ports.extend_from_slice(&rule.ports);
        }
        ports.sort_unstable();
        ports.dedup();
        NamePorts::Some(ports.into())
    }

    pub(super) fn has(&self, port: u16) -> bool {
        match self {
            NamePorts::Every => true,
            NamePorts::Some(ports) => ports.binary_search(&port).is_ok(),
        }
    }
}

/// Which rules a port question selects.
#[derive(Debug, Clone, Copy)]
pub(super) enum Ports {
    /// Rules listing this port, or listing none.
    At(u16),
    /// Rules listing no port: the answer for every port nobody names.
    Unlisted,
}

/// `deny_out`'s portless `0.0.0.0/0` listed without `::/0` (or the
/// reverse) means all traffic, as the seeds write it: the other family's
/// `/0`, denied by the same entry and ranked as it. Ranked as a CIDR, not
/// as `ALL_TRAFFIC`, so a more specific allow still wins and an
/// `allow_out: [ALL_TRAFFIC]` beside it does not.
pub(super) fn every_family(rules: &[Rule]) -> Option<Rule> {
    let everything = |v6: bool| {
        rules.iter().find(|rule| {
            !rule.allow
                && rule.ports.is_empty()
                && matches!(&rule.target, Target::Net(net) if net.prefix_len() == 0 && matches!(net, IpNet::V6(_)) == v6)
        })
    };
    let (written, other) = match (everything(false), everything(true)) {
        (Some(v4), None) => (v4, "::/0"),
        (None, Some(v6)) => (v6, "0.0.0.0/0"),
        _ => return None,
    };
    Some(Rule {
        allow: false,
        ask: false,
        label: written.label.clone(),
        target: Target::Net(other.parse().expect("a /0")),
        ports: Box::new([]),
        rank: written.rank,
        companion: true,
        request: None,
        binaries: None,
    })
}

impl Rule {
    pub(super) fn covers(&self, ports: Ports) -> bool {
        match ports {
            Ports::At(port) => self.ports.is_empty() || self.ports.binary_search(&port).is_ok(),
            Ports::Unlisted => self.ports.is_empty(),
        }
    }

    /// Whether the program with executable `exe` (`None`: not known) may
    /// use this rule.
    pub(super) fn admits(&self, exe: Option<&str>) -> bool {
        let Some(binaries) = &self.binaries else {
            return true;
        };
        exe.is_some_and(|exe| binaries.iter().any(|pattern| pattern.matches(exe)))
    }

    /// `ALL_TRAFFIC` or a `/0`: the rule that refuses whatever no other
    /// names (what learn mode lets through).
    pub(super) fn is_catch_all(&self) -> bool {
        match &self.target {
            Target::All => true,
            Target::Net(net) => net.prefix_len() == 0,
            Target::Exact(_) | Target::Wildcard(_) => false,
        }
    }

    pub(super) fn is_name(&self) -> bool {
        matches!(self.target, Target::Exact(_) | Target::Wildcard(_))
    }

    /// An `allow_out` rule that names addresses, so it may lift the SSRF
    /// guard. `/0` does not: "everything" is `ssrf_guard: false`, stated.
    pub(super) fn lifts_ssrf_guard(&self, ip: IpAddr, ports: Ports) -> bool {
        matches!(&self.target, Target::Net(net) if net.prefix_len() > 0 && net.contains(&ip))
            && self.allow
            && self.covers(ports)
    }
}

/// The rules of both lists, indexed by what they match.
#[derive(Debug)]
pub(super) struct RuleIndex {
    rules: Vec<Rule>,
    /// Exact names → indexes into `rules`.
    exact: HashMap<Box<str>, Vec<usize>>,
    /// Wildcard bases (`example.com` for `*.example.com`) → indexes.
    wildcard: HashMap<Box<str>, Vec<usize>>,
    addresses: Vec<usize>,
    all: Vec<usize>,
}

impl RuleIndex {
    pub(super) fn new(rules: Vec<Rule>) -> RuleIndex {
        let mut index = RuleIndex {
            rules: Vec::new(),
            exact: HashMap::new(),
            wildcard: HashMap::new(),
            addresses: Vec::new(),
            all: Vec::new(),
        };
        for (at, rule) in rules.iter().enumerate() {
            match &rule.target {
                Target::Exact(name) => index.exact.entry(name.clone()).or_default().push(at),
                Target::Wildcard(base) => index.wildcard.entry(base.clone()).or_default().push(at),
                Target::Net(_) => index.addresses.push(at),
                Target::All => index.all.push(at),
            }
        }
        index.rules = rules;
        index
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Rule> {
        self.rules.iter()
    }

    /// The most specific rule matching the name or the address (or
    /// `ALL_TRAFFIC`) that covers `ports`.
    pub(super) fn winner(
        &self,
        name: Option<&str>,
        ip: Option<IpAddr>,
        ports: Ports,
    ) -> Option<&Rule> {
        let by_name = name.into_iter().flat_map(|name| self.name_rules(name));
        let by_address = ip.into_iter().flat_map(|ip| self.address_rules(ip));
        by_name
            .chain(by_address)
            .chain(self.all_rules())
            .filter(|rule| rule.covers(ports))
            .max_by_key(|rule| rule.rank)
    }

    /// `name` must already be in [`canonical_name`](super::canonical_name) form.
    pub(super) fn name_rules<'s>(&'s self, name: &str) -> impl Iterator<Item = &'s Rule> {
        // Every proper suffix at a label boundary: `a.b.example.com` looks up
        // `b.example.com`, `example.com`, `com` among wildcard bases.
        let below = name
            .match_indices('.')
            .filter_map(|(dot, _)| name.get(dot + 1..))
            .filter_map(|base| self.wildcard.get(base));
        self.exact
            .get(name)
            .into_iter()
            .chain(below)
            .flatten()
            .filter_map(|&index| self.rules.get(index))
    }

    /// The address rules that hold `ip`, or the IPv4 address a NAT64
    /// address carries (a translator on the path delivers it there, so an
    /// IPv4 rule decides it as it decides the SSRF class).
    pub(super) fn address_rules(&self, ip: IpAddr) -> impl Iterator<Item = &Rule> {
        let carried = match ip {
            IpAddr::V6(v6) => ssrf::nat64(v6).map(IpAddr::V4),
            IpAddr::V4(_) => None,
        };
        self.addresses
            .iter()
            .filter_map(|&index| self.rules.get(index))
            .filter(move |rule| {
                matches!(&rule.target, Target::Net(net)
                    if net.contains(&ip) || carried.is_some_and(|v4| net.contains(&v4)))
            })
    }

    pub(super) fn all_rules(&self) -> impl Iterator<Item = &Rule> {
        self.all.iter().filter_map(|&index| self.rules.get(index))
    }
}

/// Every port some of `rules` list, then every other port at once: between
/// them they cover all 65535 answers.
pub(super) fn port_questions<'r>(
    rules: impl Iterator<Item = &'r Rule>,
) -> impl Iterator<Item = Ports> {
    rules
        .flat_map(|rule| rule.ports.iter().map(|&port| Ports::At(port)))
        .chain([Ports::Unlisted])
}

pub(super) fn rank(target: &Target, (allow, ask): (bool, bool), index: usize) -> Rank {
    let (tier, detail, by_address) = match target {
        Target::Exact(_) => (3, 0, false),
        Target::Net(net) if net.prefix_len() == net.max_prefix_len() => (3, 0, true),
        Target::Wildcard(base) => {
            let labels = base.split('.').count();
            (2, u8::try_from(labels).unwrap_or(u8::MAX), false)
        }
        Target::Net(net) => (1, net.prefix_len(), true),
        Target::All => (0, 0, false),
    };
    Rank {
        tier,
        detail,
        written: true,
        allow,
        unasked: !ask,
        by_address,
        order: Reverse(index),
    }
}
