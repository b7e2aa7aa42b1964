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
    collections::HashMap,
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

use crate::config::ResolverConfig;

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
            hosts: static_hosts(config),
            upstream,
        })
    }

    /// A resolver that only answers from `config.hosts` and never forwards:
    /// for tests, which must not touch the network.
    #[cfg(any(test, feature = "testing"))]
    pub fn static_only(config: &ResolverConfig) -> Resolver {
        Resolver {
            hosts: static_hosts(config),
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

fn static_hosts(config: &ResolverConfig) -> HashMap<String, Vec<IpAddr>> {
    let mut hosts: HashMap<String, Vec<IpAddr>> = HashMap::new();
    for (name, addrs) in &config.hosts {
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
mod tests {
    use std::collections::BTreeMap;

    use hickory_proto::{ProtoError, op::Query};

    use super::*;

    fn config() -> ResolverConfig {
        let mut hosts = BTreeMap::new();
        let ip = |s: &str| s.parse::<IpAddr>().expect("test ip");
        hosts.insert(
            "api.test".to_owned(),
            vec![ip("192.0.2.1"), ip("2001:db8::1")],
        );
        hosts.insert(
            "API.test.".to_owned(),
            vec![ip("192.0.2.2"), ip("192.0.2.1")],
        );
        hosts.insert("v4.test".to_owned(), vec![ip("192.0.2.4")]);
        hosts.insert("gone.test".to_owned(), vec![]);
        ResolverConfig {
            hosts,
            nameservers: Vec::new(),
            system: false,
        }
    }

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().expect("test ip")).collect()
    }

    #[tokio::test]
    async fn lookup_ip_table() {
        let resolver = Resolver::static_only(&config());
        let cases: Vec<(&str, Option<Vec<IpAddr>>)> = vec![
            (
                "api.test",
                Some(ips(&["192.0.2.2", "192.0.2.1", "2001:db8::1"])),
            ),
            (
                "Api.TEST.",
                Some(ips(&["192.0.2.2", "192.0.2.1", "2001:db8::1"])),
            ),
            ("v4.test", Some(ips(&["192.0.2.4"]))),
            ("192.0.2.9", Some(ips(&["192.0.2.9"]))),
            ("::1", Some(ips(&["::1"]))),
            ("gone.test", None),
            ("unknown.test", None),
            ("sub.api.test", None),
        ];
        for (name, want) in cases {
            match (resolver.lookup_ip(name).await, want) {
                (Ok(got), Some(want)) => assert_eq!(got, want, "{name}"),
                (Err(ResolveError::NotFound(n)), None) => assert_eq!(n, name),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[tokio::test]
    async fn lookup_table() {
        let resolver = Resolver::static_only(&config());
        let cases: Vec<(&str, RecordType, Option<Vec<&str>>)> = vec![
            (
                "api.test",
                RecordType::A,
                Some(vec!["192.0.2.2", "192.0.2.1"]),
            ),
            ("api.test.", RecordType::AAAA, Some(vec!["2001:db8::1"])),
            ("V4.test", RecordType::A, Some(vec!["192.0.2.4"])),
            ("v4.test", RecordType::AAAA, Some(vec![])),
            ("v4.test", RecordType::MX, Some(vec![])),
            ("v4.test", RecordType::HTTPS, Some(vec![])),
            ("gone.test", RecordType::A, Some(vec![])),
            ("unknown.test", RecordType::A, None),
        ];
        for (name, rtype, want) in cases {
            match (resolver.lookup(name, rtype).await, want) {
                (Ok(records), Some(want)) => {
                    let got: Vec<String> = records
                        .iter()
                        .map(|r| {
                            assert_eq!(r.ttl(), STATIC_TTL, "{name}");
                            assert_eq!(r.record_type(), rtype, "{name}");
                            assert!(r.name().is_fqdn(), "{name}");
                            r.data().to_string()
                        })
                        .collect();
                    assert_eq!(got, want, "{name} {rtype}");
                }
                (Err(ResolveError::NotFound(_)), None) => {}
                (got, want) => panic!("{name} {rtype}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[tokio::test]
    async fn answers_keep_the_question_case() {
        let resolver = Resolver::static_only(&config());
        let records = resolver
            .lookup("ApI.TeSt", RecordType::A)
            .await
            .expect("static");
        assert_eq!(records[0].name().to_ascii(), "ApI.TeSt.");
    }

    #[tokio::test]
    async fn invalid_names_are_refused() {
        let resolver = Resolver::static_only(&config());
        let long = "a".repeat(64);
        let got = resolver.lookup(&long, RecordType::A).await;
        assert!(matches!(got, Err(ResolveError::InvalidName(_))), "{got:?}");
    }

    #[test]
    fn new_does_no_io_and_needs_no_runtime() {
        // Configured nameservers on a port nothing listens on: building must
        // not connect (there is no runtime here to connect with).
        let mut with_servers = config();
        with_servers.nameservers = vec!["127.0.0.1:9".parse().expect("addr")];
        let resolver = Resolver::new(&with_servers).expect("builds");
        assert!(resolver.upstream.is_some());
        // The system configuration may or may not exist here; either way new
        // succeeds.
        Resolver::new(&config()).expect("builds");
    }

    #[tokio::test]
    async fn static_names_never_reach_upstream() {
        // An upstream on a closed port would fail or time out; static names
        // must answer without it.
        let mut with_servers = config();
        with_servers.nameservers = vec!["127.0.0.1:9".parse().expect("addr")];
        let resolver = Resolver::new(&with_servers).expect("builds");
        let got = resolver
            .lookup("v4.test", RecordType::AAAA)
            .await
            .expect("nodata");
        assert!(got.is_empty());
        let got = resolver.lookup_ip("api.test").await.expect("static");
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn classify_table() {
        let nx = |code| {
            hickory_resolver::ResolveError::from(ProtoError::nx_error(
                Box::new(Query::new()),
                None,
                None,
                None,
                code,
                true,
                None,
            ))
        };
        let cases = [
            ("nodata", nx(ResponseCode::NoError), Upstream::NoData),
            ("nxdomain", nx(ResponseCode::NXDomain), Upstream::NxDomain),
            ("servfail", nx(ResponseCode::ServFail), Upstream::Failed),
            ("refused", nx(ResponseCode::Refused), Upstream::Failed),
            (
                "timeout",
                ProtoError::from(ProtoErrorKind::Timeout).into(),
                Upstream::Failed,
            ),
            (
                "no connections",
                ProtoError::from(ProtoErrorKind::NoConnections).into(),
                Upstream::Failed,
            ),
            (
                "message",
                hickory_resolver::ResolveError::from("boom"),
                Upstream::Failed,
            ),
        ];
        for (name, err, want) in cases {
            assert_eq!(classify(&err), want, "{name}");
        }
    }

    /// A one-socket upstream on 127.0.0.1 that answers A 192.0.2.7 for every
    /// name but `missing.test.` (NXDOMAIN), and counts the queries it saw.
    async fn fake_upstream() -> (SocketAddr, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use hickory_proto::op::{Message, MessageType};
        let socket = tokio::net::UdpSocket::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = socket.local_addr().expect("addr");
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = seen.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 1500];
            while let Ok((n, from)) = socket.recv_from(&mut buf).await {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Ok(query) = Message::from_vec(&buf[..n]) else {
                    continue;
                };
                let mut reply = Message::new();
                reply
                    .set_id(query.id())
                    .set_message_type(MessageType::Response);
                reply.add_queries(query.queries().to_vec());
                let q = &query.queries()[0];
                if q.name().to_ascii() == "missing.test." {
                    reply.set_response_code(ResponseCode::NXDomain);
                } else if q.query_type() == RecordType::A {
                    let a = rdata::A::new(192, 0, 2, 7);
                    reply.add_answer(Record::from_rdata(q.name().clone(), 60, RData::A(a)));
                }
                let _ = socket.send_to(&reply.to_vec().expect("encode"), from).await;
            }
        });
        (addr, seen)
    }

    #[tokio::test]
    async fn unknown_names_are_forwarded_to_the_configured_nameservers() {
        let (upstream, seen) = fake_upstream().await;
        let mut config = config();
        config.nameservers = vec![upstream];
        let resolver = Resolver::new(&config).expect("resolver");

        let addrs = resolver
            .lookup_ip("elsewhere.test")
            .await
            .expect("forwarded");
        assert_eq!(addrs, vec!["192.0.2.7".parse::<IpAddr>().expect("ip")]);
        let records = resolver
            .lookup("elsewhere.test", RecordType::A)
            .await
            .expect("forwarded");
        assert_eq!(records.len(), 1);
        let err = resolver
            .lookup_ip("missing.test")
            .await
            .expect_err("nxdomain");
        assert!(matches!(err, ResolveError::NotFound(_)), "{err}");

        let before = seen.load(std::sync::atomic::Ordering::SeqCst);
        let _ = resolver.lookup_ip("api.test").await.expect("static");
        assert_eq!(
            seen.load(std::sync::atomic::Ordering::SeqCst),
            before,
            "static names never reach the upstream"
        );
    }
}
