//! The minimal destination allowlist: a policy's `allow` rules compiled once
//! into matchers, and the pure decision for one connection.
//!
//! The full policy engine replaces this. Until then the rule is simple: a
//! connection is allowed when some rule names its destination, and a rule
//! that names a host only vouches for the addresses that host resolves to, so
//! a forged SNI or Host aimed at another address is refused.

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;

use crate::config::PolicyConfig;

/// One policy's allow rules, compiled.
#[derive(Debug, Clone)]
pub struct Allowlist {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
struct Rule {
    /// `policies.<name>.allow[<i>]`, reported when the rule allows.
    label: String,
    target: Target,
    /// Empty: any port.
    ports: Vec<u16>,
}

#[derive(Debug, Clone)]
enum Target {
    Host(HostPattern),
    Cidr(IpNet),
    /// A rule with both `host` and `cidr` (config validation refuses it, but
    /// compile must not widen it): both must match.
    Both(HostPattern, IpNet),
    /// A rule with neither: matches nothing, so a bad rule fails closed.
    Nothing,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    /// A normalized name (lowercase, no trailing dot).
    Exact(String),
    /// `*.example.com` stored as `.example.com`: any deeper name, not the
    /// suffix itself.
    Subdomains(String),
}

/// What the allowlist says about one connection.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow { rule: String },
    Deny { reason: DenyReason },
}

/// Why a connection was refused (a stable metric and audit label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenyReason {
    /// No rule names the destination address, port or name.
    NoRuleMatched,
    /// A host rule matched the name and port, but the connection goes to an
    /// address the name does not resolve to (a forged SNI/Host, or fronting).
    NameAddressMismatch,
}

impl DenyReason {
    pub fn as_str(self) -> &'static str {
        match self {
            DenyReason::NoRuleMatched => "no_rule_matched",
            DenyReason::NameAddressMismatch => "name_address_mismatch",
        }
    }
}

impl Allowlist {
    /// `policy_name` is used in rule labels: "policies.<name>.allow[<i>]".
    pub fn compile(policy_name: &str, policy: &PolicyConfig) -> Allowlist {
        let rules = policy
            .allow
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                let host = rule.host.as_deref().map(HostPattern::parse);
                let target = match (host, rule.cidr) {
                    (Some(host), None) => Target::Host(host),
                    (None, Some(net)) => Target::Cidr(net.trunc()),
                    (Some(host), Some(net)) => Target::Both(host, net.trunc()),
                    (None, None) => Target::Nothing,
                };
                Rule {
                    label: format!("policies.{policy_name}.allow[{i}]"),
                    target,
                    ports: rule.ports.clone(),
                }
            })
            .collect();
        Allowlist { rules }
    }

    /// True when some host rule names `name` (so the caller must resolve it
    /// before deciding).
    pub fn names_host(&self, name: &str) -> bool {
        let name = normalize(name);
        self.rules.iter().any(|rule| match &rule.target {
            Target::Host(pattern) | Target::Both(pattern, _) => pattern.matches(&name),
            Target::Cidr(_) | Target::Nothing => false,
        })
    }

    /// Decides one connection to `dst`, which the sandbox named `name` (SNI or
    /// Host, if any); `name_addrs` is what `name` resolved to.
    pub fn decide(&self, dst: SocketAddr, name: Option<&str>, name_addrs: &[IpAddr]) -> Decision {
        let ip = canonical(dst.ip());
        let name = name.map(normalize);
        let resolved = || name_addrs.iter().any(|&a| canonical(a) == ip);
        let mut mismatch = false;
        for rule in &self.rules {
            if !rule.ports.is_empty() && !rule.ports.contains(&dst.port()) {
                continue;
            }
            let name_matches =
                |pattern: &HostPattern| name.as_deref().is_some_and(|n| pattern.matches(n));
            let allowed = match &rule.target {
                Target::Cidr(net) => net.contains(&ip),
                Target::Host(pattern) => {
                    let named = name_matches(pattern);
                    let ok = named && resolved();
                    mismatch |= named && !ok;
                    ok
                }
                Target::Both(pattern, net) => {
                    let named = name_matches(pattern) && net.contains(&ip);
                    let ok = named && resolved();
                    mismatch |= named && !ok;
                    ok
                }
                Target::Nothing => false,
            };
            // A later CIDR rule may still allow the address outright, so a
            // mismatch only decides when nothing allows.
            if allowed {
                return Decision::Allow {
                    rule: rule.label.clone(),
                };
            }
        }
        Decision::Deny {
            reason: if mismatch {
                DenyReason::NameAddressMismatch
            } else {
                DenyReason::NoRuleMatched
            },
        }
    }
}

impl HostPattern {
    fn parse(raw: &str) -> HostPattern {
        let name = normalize(raw);
        match name.strip_prefix("*.") {
            Some(suffix) => HostPattern::Subdomains(format!(".{suffix}")),
            None => HostPattern::Exact(name),
        }
    }

    /// `name` must already be normalized.
    fn matches(&self, name: &str) -> bool {
        match self {
            HostPattern::Exact(exact) => name == exact,
            HostPattern::Subdomains(suffix) => name
                .strip_suffix(suffix.as_str())
                .is_some_and(|deeper| !deeper.is_empty() && !deeper.ends_with('.')),
        }
    }
}

/// Names compare case-insensitively and without a trailing dot.
fn normalize(name: &str) -> String {
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

/// An IPv4-mapped IPv6 address is the IPv4 address it carries, so an IPv4
/// rule cannot be dodged by connecting to `::ffff:a.b.c.d`.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AllowRule;

    fn host(name: &str, ports: &[u16]) -> AllowRule {
        AllowRule {
            host: Some(name.to_owned()),
            cidr: None,
            ports: ports.to_vec(),
        }
    }

    fn cidr(net: &str, ports: &[u16]) -> AllowRule {
        AllowRule {
            host: None,
            cidr: Some(net.parse().expect("test cidr")),
            ports: ports.to_vec(),
        }
    }

    fn allowlist() -> Allowlist {
        Allowlist::compile(
            "p",
            &PolicyConfig {
                allow: vec![
                    host("API.example.com.", &[443]),   // 0
                    host("*.cdn.test", &[]),            // 1
                    cidr("10.1.0.0/16", &[]),           // 2
                    cidr("2001:db8::/32", &[80, 8080]), // 3
                    cidr("192.0.2.7/32", &[22]),        // 4
                    host("plain.test", &[]),            // 5
                ],
            },
        )
    }

    fn allow(i: usize) -> Decision {
        Decision::Allow {
            rule: format!("policies.p.allow[{i}]"),
        }
    }

    const DENY: Decision = Decision::Deny {
        reason: DenyReason::NoRuleMatched,
    };
    const MISMATCH: Decision = Decision::Deny {
        reason: DenyReason::NameAddressMismatch,
    };

    /// (case, destination, sandbox-given name, what the name resolved to, want)
    type Case<'a> = (&'a str, &'a str, Option<&'a str>, &'a [IpAddr], Decision);

    #[test]
    fn decide_table() {
        let list = allowlist();
        let api: &[IpAddr] = &["203.0.113.5".parse().expect("ip")];
        let dual: &[IpAddr] = &[
            "198.51.100.1".parse().expect("ip"),
            "2001:db8:1::1".parse().expect("ip"),
        ];
        let mapped: &[IpAddr] = &["::ffff:203.0.113.5".parse().expect("ip")];
        let api_name = Some("api.example.com");
        let cdn = Some("a.cdn.test");
        #[rustfmt::skip]
        let cases: Vec<Case<'_>> = vec![
            ("host exact", "203.0.113.5:443", api_name, api, allow(0)),
            ("host case and dot", "203.0.113.5:443", Some("Api.Example.COM."), api, allow(0)),
            ("host wrong port", "203.0.113.5:80", api_name, api, DENY),
            ("host forged toward other ip", "198.51.100.9:443", api_name, api, MISMATCH),
            ("host with no answers", "203.0.113.5:443", api_name, &[], MISMATCH),
            ("host without a name", "203.0.113.5:443", None, api, DENY),
            ("other name", "203.0.113.5:443", Some("evil.test"), api, DENY),
            ("subdomain of exact rule", "203.0.113.5:443", Some("x.api.example.com"), api, DENY),
            ("wildcard one deeper", "198.51.100.1:443", cdn, dual, allow(1)),
            ("wildcard two deeper", "198.51.100.1:8443", Some("a.b.cdn.test"), dual, allow(1)),
            ("wildcard over ipv6", "[2001:db8:1::1]:443", cdn, dual, allow(1)),
            ("wildcard forged", "198.51.100.2:443", cdn, dual, MISMATCH),
            ("wildcard not the suffix", "198.51.100.1:443", Some("cdn.test"), dual, DENY),
            ("wildcard not a lookalike", "198.51.100.1:443", Some("evilcdn.test"), dual, DENY),
            ("wildcard empty label", "198.51.100.1:443", Some(".cdn.test"), dual, DENY),
            ("cidr any port", "10.1.2.3:5432", None, &[], allow(2)),
            ("cidr ignores name", "10.1.2.3:443", Some("whatever.test"), &[], allow(2)),
            ("cidr outside", "10.2.0.1:443", None, &[], DENY),
            ("ipv4-mapped dst", "[::ffff:10.1.2.3]:443", None, &[], allow(2)),
            ("cidr v6 port ok", "[2001:db8::5]:8080", None, &[], allow(3)),
            ("cidr v6 port wrong", "[2001:db8::5]:443", None, &[], DENY),
            ("host32 port", "192.0.2.7:22", None, &[], allow(4)),
            ("host32 neighbour", "192.0.2.8:22", None, &[], DENY),
            ("cidr wins over mismatch", "10.1.0.9:443", api_name, api, allow(2)),
            ("mapped answer matches", "203.0.113.5:443", api_name, mapped, allow(0)),
            ("mapped dst matches answer", "[::ffff:203.0.113.5]:443", api_name, api, allow(0)),
        ];
        for (name, dst, sni, addrs, want) in cases {
            let dst: SocketAddr = dst.parse().expect("test addr");
            assert_eq!(list.decide(dst, sni, addrs), want, "{name}");
        }
    }

    #[test]
    fn first_matching_rule_wins() {
        let list = Allowlist::compile(
            "p",
            &PolicyConfig {
                allow: vec![
                    cidr("10.0.0.0/8", &[443]),
                    cidr("10.0.0.0/24", &[]),
                    cidr("10.0.0.0/8", &[]),
                ],
            },
        );
        let at = |s: &str| list.decide(s.parse().expect("addr"), None, &[]);
        assert_eq!(at("10.0.0.1:443"), allow(0));
        assert_eq!(at("10.0.0.1:80"), allow(1));
        assert_eq!(at("10.9.0.1:80"), allow(2));
    }

    #[test]
    fn empty_and_degenerate_rules_deny() {
        let empty = Allowlist::compile("p", &PolicyConfig::default());
        let dst: SocketAddr = "10.0.0.1:443".parse().expect("addr");
        assert_eq!(empty.decide(dst, Some("a.test"), &[dst.ip()]), DENY);

        let neither = AllowRule {
            host: None,
            cidr: None,
            ports: vec![],
        };
        let both = AllowRule {
            host: Some("a.test".to_owned()),
            cidr: Some("10.0.0.0/8".parse().expect("cidr")),
            ports: vec![],
        };
        let list = Allowlist::compile(
            "p",
            &PolicyConfig {
                allow: vec![neither, both],
            },
        );
        assert_eq!(
            list.decide(dst, None, &[]),
            DENY,
            "both: cidr alone is not enough"
        );
        assert_eq!(list.decide(dst, Some("a.test"), &[dst.ip()]), allow(1));
        assert_eq!(list.decide(dst, Some("a.test"), &[]), MISMATCH);
        let outside: SocketAddr = "192.0.2.1:443".parse().expect("addr");
        assert_eq!(list.decide(outside, Some("a.test"), &[outside.ip()]), DENY);
    }

    #[test]
    fn names_host_table() {
        let list = allowlist();
        let cases = [
            ("api.example.com", true),
            ("API.EXAMPLE.COM.", true),
            ("a.cdn.test", true),
            ("cdn.test", false),
            ("plain.test", true),
            ("10.1.2.3", false),
            ("", false),
        ];
        for (name, want) in cases {
            assert_eq!(list.names_host(name), want, "{name}");
        }
    }

    #[test]
    fn reason_labels() {
        assert_eq!(DenyReason::NoRuleMatched.as_str(), "no_rule_matched");
        assert_eq!(
            DenyReason::NameAddressMismatch.as_str(),
            "name_address_mismatch"
        );
    }
}
