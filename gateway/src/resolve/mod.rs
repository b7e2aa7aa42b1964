//! Name resolution for the daemon: the static `resolver.hosts` table first,
//! then upstream DNS through hickory (the configured nameservers, or the
//! system's).
//!
//! The same resolver answers the sandboxes' DNS queries and resolves SNI/Host
//! names for the allowlist, so a sandbox and the policy always see the same
//! addresses. Names are always looked up as fully qualified: a sandbox name
//! must never pick up the host's search domains, and the host's /etc/hosts is
//! never consulted (it describes the host, not what a sandbox may reach).

use std::{
    collections::{BTreeMap, HashMap},
    net::{IpAddr, SocketAddr},
    str::FromStr,
};

use hickory_proto::{
    ProtoErrorKind,
    op::ResponseCode,
    rr::{Name, RData, Record, RecordType, rdata},
    xfer::Protocol,
};
use hickory_resolver::{
    TokioResolver,
    config::{
        LookupIpStrategy, NameServerConfig, NameServerConfigGroup, ResolveHosts,
        ResolverConfig as HickoryConfig, ResolverOpts,
    },
    name_server::TokioConnectionProvider,
};

/// TTL of records synthesized from the static `hosts` table: short, so an
/// edited table takes effect quickly in sandboxes that cache.
const STATIC_TTL: u32 = 30;
/// Entries in hickory's answer cache (its default, 32, is tiny for a node).
const CACHE_SIZE: usize = 4096;

/// A name that could not be resolved. `NotFound` is the name's own fault
/// (NXDOMAIN, or no upstream to ask); the others are the upstream's or ours.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("{0}: no such name")]
    NotFound(String),
    #[error("{0}: not a valid DNS name")]
    InvalidName(String),
    #[error("{0}: lookup failed: {1} (check resolver.nameservers or /etc/resolv.conf)")]
    Failed(String, String),
}

/// The `resolver` section of the daemon config: where names are looked up.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolverConfig {
    /// Static answers, consulted first (name → addresses).
    #[serde(default)]
    pub hosts: BTreeMap<String, Vec<IpAddr>>,
    /// Upstream DNS servers; empty means the system's (/etc/resolv.conf),
    /// unless `system` is false.
    #[serde(default)]
    pub nameservers: Vec<SocketAddr>,
    /// With no `nameservers`, forward to the system's resolvers. `false`
    /// answers from `hosts` only (tests, air-gapped nodes).
    #[serde(default = "system_default")]
    pub system: bool,
}

impl Default for ResolverConfig {
    fn default() -> Self {
        ResolverConfig {
            hosts: BTreeMap::new(),
            nameservers: Vec::new(),
            system: true,
        }
    }
}

fn system_default() -> bool {
    true
}

/// Resolves names from static entries, then upstream DNS.
pub struct Resolver {
    /// Normalized name (lowercase, no trailing dot) → addresses.
    hosts: HashMap<String, Vec<IpAddr>>,
    /// `None` when there is nothing to forward to: only static names resolve.
    upstream: Option<TokioResolver>,
}

impl Resolver {
    /// Builds the resolver without any network I/O (hickory connects on first
    /// use). With no configured nameservers it reads /etc/resolv.conf; when
    /// that is missing or names no server, only static names resolve.
    pub fn new(config: &ResolverConfig) -> Result<Resolver, ResolveError> {
        let upstream = if config.nameservers.is_empty() {
            if config.system {
                system_upstream()
            } else {
                None
            }
        } else {
            Some(configured_upstream(&config.nameservers))
        };
        Ok(Resolver {
            hosts: static_hosts(&config.hosts),
            upstream,
        })
    }

    /// A resolver that only answers from `hosts` and never forwards: for
    /// tests, which must not touch the network (none: it answers nothing).
    #[cfg(any(test, feature = "testing"))]
    pub fn static_only(hosts: &BTreeMap<String, Vec<IpAddr>>) -> Resolver {
        Resolver {
            hosts: static_hosts(hosts),
            upstream: None,
        }
    }

    /// Static `hosts` first (case-insensitive, trailing dot ignored), then
    /// hickory (configured nameservers, or the system's when empty).
    pub async fn lookup_ip(&self, name: &str) -> Result<Vec<IpAddr>, ResolveError> {
        if let Ok(ip) = IpAddr::from_str(name) {
            return Ok(vec![ip]);
        }
        if let Some(addrs) = self.hosts.get(&normalize(name)) {
            if addrs.is_empty() {
                return Err(ResolveError::NotFound(name.to_owned()));
            }
            return Ok(addrs.clone());
        }
        let Some(upstream) = &self.upstream else {
            return Err(ResolveError::NotFound(name.to_owned()));
        };
        let fqdn = fqdn(name)?;
        match upstream.lookup_ip(fqdn).await {
            Ok(lookup) => Ok(lookup.iter().collect()),
            Err(err) => match classify(&err) {
                Upstream::NoData | Upstream::NxDomain => {
                    Err(ResolveError::NotFound(name.to_owned()))
                }
                Upstream::Failed => Err(ResolveError::Failed(name.to_owned(), err.to_string())),
            },
        }
    }

    /// Records of one type for the DNS listener; A/AAAA for static hosts are
    /// synthesized from `hosts` (TTL 30); a name in `hosts` with no address of
    /// the asked family answers an empty list (NODATA), not a forward.
    ///
    /// Any other type asked of a static name is NODATA too: forwarding, say,
    /// an HTTPS record could hand the sandbox address hints the static entry
    /// was meant to override.
    pub async fn lookup(&self, name: &str, rtype: RecordType) -> Result<Vec<Record>, ResolveError> {
        let fqdn = fqdn(name)?;
        if let Some(addrs) = self.hosts.get(&normalize(name)) {
            return Ok(synthesize(&fqdn, addrs, rtype));
        }
        let Some(upstream) = &self.upstream else {
            return Err(ResolveError::NotFound(name.to_owned()));
        };
        match upstream.lookup(fqdn, rtype).await {
            Ok(lookup) => Ok(lookup.records().to_vec()),
            Err(err) => match classify(&err) {
                Upstream::NoData => Ok(Vec::new()),
                Upstream::NxDomain => Err(ResolveError::NotFound(name.to_owned())),
                Upstream::Failed => Err(ResolveError::Failed(name.to_owned(), err.to_string())),
            },
        }
    }
}

fn static_hosts(configured: &BTreeMap<String, Vec<IpAddr>>) -> HashMap<String, Vec<IpAddr>> {
    let mut hosts: HashMap<String, Vec<IpAddr>> = HashMap::new();
    for (name, addrs) in configured {
        // `A.test` and `a.test.` may both be written; merge rather than let
        // map order pick one.
        let entry = hosts.entry(normalize(name)).or_default();
        for addr in addrs {
            if !entry.contains(addr) {
                entry.push(*addr);
            }
        }
    }
    hosts
}

fn options() -> ResolverOpts {
    let mut options = ResolverOpts::default();
    options.use_hosts_file = ResolveHosts::Never;
    // Both families: the allowlist checks the connected address against every
    // answer, whichever family the sandbox used.
    options.ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
    options.cache_size = CACHE_SIZE;
    options
}

fn configured_upstream(nameservers: &[SocketAddr]) -> TokioResolver {
    let mut group = NameServerConfigGroup::with_capacity(nameservers.len() * 2);
    for &addr in nameservers {
        // UDP first; TCP for truncated answers.
        group.push(NameServerConfig::new(addr, Protocol::Udp));
        group.push(NameServerConfig::new(addr, Protocol::Tcp));
    }
    build_upstream(group, options())
}

fn system_upstream() -> Option<TokioResolver> {
    let (system, system_options) = match hickory_resolver::system_conf::read_system_conf() {
        Ok(conf) => conf,
        Err(err) => {
            tracing::warn!(
                error = %err,
                "no system DNS configuration; only resolver.hosts names will resolve"
            );
            return None;
        }
    };
    if system.name_servers().is_empty() {
        tracing::warn!(
            "/etc/resolv.conf names no nameserver; only resolver.hosts names will resolve"
        );
        return None;
    }
    // Keep the system's servers and timing; drop its search domains (names
    // are looked up fully qualified anyway) and its hosts file.
    let mut opts = options();
    opts.timeout = system_options.timeout;
    opts.attempts = system_options.attempts;
    opts.edns0 = system_options.edns0;
    let group = NameServerConfigGroup::from(system.name_servers().to_vec());
    Some(build_upstream(group, opts))
}

fn build_upstream(group: NameServerConfigGroup, opts: ResolverOpts) -> TokioResolver {
    let config = HickoryConfig::from_parts(None, Vec::new(), group);
    TokioResolver::builder_with_config(config, TokioConnectionProvider::default())
        .with_options(opts)
        .build()
}

/// What an upstream failure means for the asker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Upstream {
    /// The name exists, but not with this type.
    NoData,
    NxDomain,
    /// Timeout, SERVFAIL, REFUSED, no reachable server, ...
    Failed,
}

fn classify(err: &hickory_resolver::ResolveError) -> Upstream {
    let Some(proto) = err.proto() else {
        return Upstream::Failed;
    };
    match proto.kind() {
        ProtoErrorKind::NoRecordsFound { response_code, .. } => match *response_code {
            ResponseCode::NoError => Upstream::NoData,
            ResponseCode::NXDomain => Upstream::NxDomain,
            _ => Upstream::Failed,
        },
        _ => Upstream::Failed,
    }
}

fn synthesize(fqdn: &Name, addrs: &[IpAddr], rtype: RecordType) -> Vec<Record> {
    addrs
        .iter()
        .filter_map(|addr| {
            let data = match (rtype, addr) {
                (RecordType::A, IpAddr::V4(v4)) => RData::A(rdata::A(*v4)),
                (RecordType::AAAA, IpAddr::V6(v6)) => RData::AAAA(rdata::AAAA(*v6)),
                _ => return None,
            };
            Some(Record::from_rdata(fqdn.clone(), STATIC_TTL, data))
        })
        .collect()
}

/// The name as a fully qualified DNS name, keeping its case (a DNS answer
/// echoes the question's case, which some stub resolvers randomize).
fn fqdn(name: &str) -> Result<Name, ResolveError> {
    let mut parsed =
        Name::from_ascii(name).map_err(|_| ResolveError::InvalidName(name.to_owned()))?;
    parsed.set_fqdn(true);
    Ok(parsed)
}

/// Names compare case-insensitively and without a trailing dot.
fn normalize(name: &str) -> String {
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

#[cfg(test)]
mod tests;
