use super::*;
use crate::policy::ssrf::IpClass;

fn short(text: &str) -> raw::Target {
    raw::Target::Short(text.into())
}

fn full(to: &str, ports: &[u16]) -> raw::Target {
    raw::Target::Full(raw::TargetSpec {
        to: to.into(),
        ports: ports.to_vec(),
        methods: None,
        paths: None,
        access: None,
        binaries: None,
    })
}

/// `"allow_out targets ; deny_out targets"`, space-separated.
fn network(spec: &str) -> raw::Network {
    let (allow, deny) = spec.split_once(';').unwrap_or((spec, ""));
    raw::Network {
        allow_out: allow.split_whitespace().map(short).collect(),
        deny_out: deny.split_whitespace().map(short).collect(),
        ..raw::Network::default()
    }
}

fn compile(raw: &raw::Network) -> NetworkPolicy {
    match NetworkPolicy::compile(raw) {
        Ok(policy) => policy,
        Err(errors) => panic!("test policy does not compile: {errors:?}"),
    }
}

fn policy(spec: &str) -> NetworkPolicy {
    compile(&network(spec))
}

fn dst(text: &str) -> SocketAddr {
    text.parse().expect("test socket address")
}

fn ip(text: &str) -> IpAddr {
    text.parse().expect("test address")
}

fn ok(rule: &str) -> NetVerdict {
    allow(rule)
}

fn no(reason: NetDenyReason, rule: &str) -> NetVerdict {
    deny(reason, rule)
}

fn by_rule(rule: &str) -> NetVerdict {
    deny(NetDenyReason::DeniedByRule, rule)
}

fn ssrf(class: IpClass) -> NetVerdict {
    deny(NetDenyReason::Ssrf(class), SSRF_GUARD)
}

/// A TLS connection whose SNI (`""`: none) resolves to the destination.
pub(super) fn tls(policy: &NetworkPolicy, to: &str, sni: &str) -> NetVerdict {
    let to = dst(to);
    policy.decide(&ConnRequest {
        dst: to,
        sni: Some(sni).filter(|sni| !sni.is_empty()),
        host: None,
        name_addrs: Some(&[to.ip()]),
        host_address: false,
        ech: false,
        exe: None,
    })
}

/// Rows of (policy, destination, SNI, verdict).
fn check(cases: &[(&str, &str, &str, NetVerdict)]) {
    for (spec, to, sni, want) in cases {
        assert_eq!(&tls(&policy(spec), to, sni), want, "{spec} / {to} / {sni}");
    }
}

const A0: &str = "network.allow_out[0]";
const A1: &str = "network.allow_out[1]";
const A2: &str = "network.allow_out[2]";
const A3: &str = "network.allow_out[3]";
const D0: &str = "network.deny_out[0]";
const D1: &str = "network.deny_out[1]";
const WEB: &str = "93.184.216.34:443";
const WEB6: &str = "[2606:4700::1111]:443";

#[test]
fn wildcards_and_exact_names() {
    let policy = policy("*.example.com exact.org ; ALL_TRAFFIC");
    let cases: &[(&str, NetVerdict)] = &[
        ("api.example.com", ok(A0)),
        ("a.b.c.example.com", ok(A0)),
        ("API.Example.COM", ok(A0)),
        ("api.example.com.", ok(A0)),
        ("example.com", by_rule(D0)),
        ("example.com.", by_rule(D0)),
        ("notexample.com", by_rule(D0)),
        ("example.com.evil.net", by_rule(D0)),
        ("api.example.co", by_rule(D0)),
        ("exact.org", ok(A1)),
        ("EXACT.ORG.", ok(A1)),
        ("www.exact.org", by_rule(D0)),
        ("exact.org.evil.net", by_rule(D0)),
    ];
    for (sni, want) in cases {
        assert_eq!(&tls(&policy, WEB, sni), want, "{sni}");
    }
}

#[test]
fn most_specific_rule_wins() {
    check(&[
        (
            "*.example.com ; evil.example.com",
            WEB,
            "evil.example.com",
            by_rule(D0),
        ),
        (
            "*.example.com ; evil.example.com",
            WEB,
            "good.example.com",
            ok(A0),
        ),
        (
            "*.example.com ; evil.example.com",
            WEB,
            "x.evil.example.com",
            ok(A0),
        ),
        (
            "api.example.com ; *.example.com",
            WEB,
            "api.example.com",
            ok(A0),
        ),
        (
            "api.example.com ; *.example.com",
            WEB,
            "web.example.com",
            by_rule(D0),
        ),
        (
            "*.api.example.com ; *.example.com",
            WEB,
            "v1.api.example.com",
            ok(A0),
        ),
        (
            "*.api.example.com ; *.example.com",
            WEB,
            "api.example.com",
            by_rule(D0),
        ),
        (
            "*.example.com ; *.b.example.com",
            WEB,
            "a.b.example.com",
            by_rule(D0),
        ),
        (
            "*.example.com ; *.b.example.com",
            WEB,
            "a.c.example.com",
            ok(A0),
        ),
        ("10.1.2.3 ; 10.0.0.0/8", "10.1.2.3:443", "", ok(A0)),
        ("10.1.2.3 ; 10.0.0.0/8", "10.1.2.4:443", "", by_rule(D0)),
        ("10.1.0.0/16 ; 10.1.2.0/24", "10.1.2.3:443", "", by_rule(D0)),
        ("10.1.0.0/16 ; 10.1.2.0/24", "10.1.3.3:443", "", ok(A0)),
        ("10.1.2.0/24 ; 10.1.0.0/16", "10.1.2.3:443", "", ok(A0)),
        ("10.1.2.0/24 ; 10.1.0.0/16", "10.1.3.3:443", "", by_rule(D0)),
        // Names outrank CIDRs, wildcards outrank CIDRs, addresses
        // outrank wildcards.
        (
            "api.example.com ; 93.184.216.0/24",
            WEB,
            "api.example.com",
            ok(A0),
        ),
        (
            "93.184.216.0/24 ; api.example.com",
            WEB,
            "api.example.com",
            by_rule(D0),
        ),
        (
            "*.example.com ; 93.184.216.0/24",
            WEB,
            "api.example.com",
            ok(A0),
        ),
        (
            "93.184.216.34 ; *.example.com",
            WEB,
            "api.example.com",
            ok(A0),
        ),
        // ALL_TRAFFIC is the least specific of all.
        ("ALL_TRAFFIC ; 93.184.216.0/24", WEB, "", by_rule(D0)),
        ("0.0.0.0/0 ; ALL_TRAFFIC", WEB, "", ok(A0)),
        ("0.0.0.0/0 ; ALL_TRAFFIC", WEB6, "", by_rule(D0)),
        ("*.com ; ALL_TRAFFIC", WEB, "example.com", ok(A0)),
    ]);
}

#[test]
fn equal_specificity_allow_wins() {
    check(&[
        ("example.com ; example.com:443", WEB, "example.com", ok(A0)),
        ("example.com:443 ; example.com", WEB, "example.com", ok(A0)),
        (
            "example.com:443 ; example.com",
            "93.184.216.34:80",
            "example.com",
            by_rule(D0),
        ),
        ("10.0.0.0/8 ; 10.0.0.0/8:5432", "10.1.1.1:5432", "", ok(A0)),
        ("example.com ; 93.184.216.34", WEB, "example.com", ok(A0)),
        ("93.184.216.34 ; example.com", WEB, "example.com", ok(A0)),
        (
            "*.example.com ; *.example.com:443",
            WEB,
            "a.example.com",
            ok(A0),
        ),
        ("0.0.0.0/0:443 ; 0.0.0.0/0", WEB, "", ok(A0)),
        // Within one list the earlier entry reports.
        (
            "*.example.com *.example.com:443",
            WEB,
            "a.example.com",
            ok(A0),
        ),
        ("; evil.com 93.184.216.34", WEB, "evil.com", by_rule(D1)),
    ]);
}

#[test]
fn ports() {
    let raw = raw::Network {
        allow_out: vec![
            short("example.com:443"),
            full("api.example.com", &[8080, 80]),
            short("10.0.0.0/8:5432"),
            short("[2001:db8::1]:443"),
        ],
        deny_out: vec![short(ALL_TRAFFIC)],
        ..raw::Network::default()
    };
    let policy = compile(&raw);
    let cases: &[(&str, &str, NetVerdict)] = &[
        (WEB, "example.com", ok(A0)),
        ("93.184.216.34:80", "example.com", by_rule(D0)),
        ("93.184.216.34:80", "api.example.com", ok(A1)),
        ("93.184.216.34:8080", "api.example.com", ok(A1)),
        (WEB, "api.example.com", by_rule(D0)),
        ("10.2.3.4:5432", "", ok(A2)),
        ("10.2.3.4:5433", "", by_rule(D0)),
        ("[2001:db8::1]:443", "", ok(A3)),
        ("[2001:db8::1]:80", "", by_rule(D0)),
        ("[2001:db8::2]:443", "", by_rule(D0)),
    ];
    for (to, sni, want) in cases {
        assert_eq!(&tls(&policy, to, sni), want, "{to} {sni}");
    }
}

#[test]
fn ipv6_rules_and_destinations() {
    let policy = policy(
        "2606:4700::/32 [2a00:1450::1]:443 ipv6.example.com ::ffff:93.184.216.0/120 \
         ; ALL_TRAFFIC",
    );
    let cases: &[(&str, &str, NetVerdict)] = &[
        (WEB6, "", ok(A0)),
        ("[2606:4700:ffff::1]:80", "", ok(A0)),
        ("[2606:4701::1]:443", "", by_rule(D0)),
        ("[2a00:1450::1]:443", "", ok(A1)),
        ("[2a00:1450::1]:80", "", by_rule(D0)),
        ("[2a00:1450::5]:443", "ipv6.example.com", ok(A2)),
        // The mapped rule is stored as IPv4 and matches either spelling.
        (WEB, "", ok(A3)),
        ("[::ffff:93.184.216.34]:443", "", ok(A3)),
        ("[::ffff:93.184.217.1]:443", "", by_rule(D0)),
    ];
    for (to, sni, want) in cases {
        assert_eq!(&tls(&policy, to, sni), want, "{to} {sni}");
    }
}

#[test]
fn default_allow_and_all_traffic() {
    check(&[
        ("", WEB, "", ok(DEFAULT_ALLOW)),
        ("", WEB, "anything.example", ok(DEFAULT_ALLOW)),
        ("", WEB6, "", ok(DEFAULT_ALLOW)),
        ("; ALL_TRAFFIC", WEB, "", by_rule(D0)),
        ("; ALL_TRAFFIC", WEB, "anything.example", by_rule(D0)),
        ("; ALL_TRAFFIC", WEB6, "", by_rule(D0)),
        ("example.com ; ALL_TRAFFIC", WEB, "example.com", ok(A0)),
        ("example.com ; ALL_TRAFFIC", WEB, "other.com", by_rule(D0)),
        ("example.com ; ALL_TRAFFIC", WEB, "", by_rule(D0)),
        ("ALL_TRAFFIC", WEB, "", ok(A0)),
        ("ALL_TRAFFIC", WEB6, "x.example", ok(A0)),
        // A portless /0 in deny_out is all traffic (issue 43; see
        // a_portless_slash_zero_in_deny_out_is_all_traffic); with a port
        // each keeps its family, an IPv4-mapped address being IPv4.
        ("; 0.0.0.0/0", WEB, "", by_rule(D0)),
        ("; 0.0.0.0/0:443", WEB6, "", ok(DEFAULT_ALLOW)),
        ("; ::/0", WEB6, "", by_rule(D0)),
        (
            "; [::/0]:443",
            "[::ffff:93.184.216.34]:443",
            "",
            ok(DEFAULT_ALLOW),
        ),
    ]);
}

#[test]
fn ssrf_guard_refuses_every_class() {
    use IpClass::*;
    let policy = policy("");
    let cases: &[(&str, IpClass)] = &[
        ("127.0.0.1:80", Loopback),
        ("127.9.9.9:80", Loopback),
        ("[::1]:80", Loopback),
        ("10.0.0.1:80", Private),
        ("172.16.0.1:80", Private),
        ("192.168.1.1:80", Private),
        ("100.64.0.1:80", SharedCgnat),
        ("169.254.1.1:80", LinkLocal),
        ("[fe80::1]:80", LinkLocal),
        ("169.254.169.254:80", Metadata),
        ("169.254.170.2:80", Metadata),
        ("100.100.100.200:80", Metadata),
        ("192.0.0.192:80", Metadata),
        ("[fd00:ec2::254]:80", Metadata),
        ("0.0.0.0:80", Unspecified),
        ("[::]:80", Unspecified),
        ("224.0.0.1:80", Multicast),
        ("[ff02::1]:80", Multicast),
        ("255.255.255.255:80", Broadcast),
        ("[fd12::1]:80", UniqueLocal),
        ("[fec0::1]:80", SiteLocal),
        ("192.0.0.1:80", Reserved),
        ("240.0.0.1:80", Reserved),
        ("192.0.2.1:80", Documentation),
        ("198.51.100.1:80", Documentation),
        ("203.0.113.1:80", Documentation),
        ("[2001:db8::1]:80", Documentation),
        ("198.18.0.1:80", Benchmarking),
        // IPv6 spellings of IPv4 addresses.
        ("[::ffff:127.0.0.1]:80", Loopback),
        ("[::ffff:169.254.169.254]:80", Metadata),
        ("[::ffff:10.0.0.1]:80", Private),
        ("[64:ff9b::a9fe:a9fe]:80", Metadata),
        ("[64:ff9b::7f00:1]:80", Loopback),
        ("[64:ff9b:1::a00:1]:80", Private),
        ("[2002:7f00:1::]:80", Loopback),
        ("[2002:a9fe:a9fe::]:80", Metadata),
        ("[2001:0:808:808::80ff:fffe]:80", Loopback),
        ("[2001:0:a9fe:a9fe::f7f7:f7f7]:80", Metadata),
    ];
    for (to, class) in cases {
        assert_eq!(tls(&policy, to, ""), ssrf(*class), "{to}");
        assert_eq!(
            tls(&policy, to, "a.example.com"),
            ssrf(*class),
            "{to} by name"
        );
    }
    for to in [WEB, WEB6, "8.8.8.8:53", "[64:ff9b::808:808]:443"] {
        assert_eq!(tls(&policy, to, ""), ok(DEFAULT_ALLOW), "{to}");
    }
    let unguarded = compile(&raw::Network {
        ssrf_guard: false,
        ..raw::Network::default()
    });
    for (to, _) in cases {
        assert_eq!(tls(&unguarded, to, ""), ok(DEFAULT_ALLOW), "{to} unguarded");
    }
}

/// An address the host routes to itself (a public IPv6 address on its
/// interface, say) reaches the host's own services: refused as `host`
/// whatever its class, unless an address rule names it.
#[test]
fn the_hosts_own_addresses_are_refused_like_loopback() {
    let from_host = |policy: &NetworkPolicy, to: &str, sni: Option<&str>| {
        let to = dst(to);
        policy.decide(&ConnRequest {
            dst: to,
            sni,
            host: None,
            name_addrs: Some(&[to.ip()]),
            host_address: true,
            ech: false,
            exe: None,
        })
    };
    let open = policy("");
    assert_eq!(from_host(&open, WEB, None), ssrf(IpClass::Host));
    assert_eq!(
        from_host(&open, WEB6, Some("a.example.com")),
        ssrf(IpClass::Host)
    );
    let all = policy("ALL_TRAFFIC");
    assert_eq!(from_host(&all, WEB, None), ssrf(IpClass::Host));
    // Its own class first, when it has one.
    assert_eq!(
        from_host(&open, "127.0.0.1:80", None),
        ssrf(IpClass::Loopback)
    );
    let named = policy(WEB.split(':').next().expect("ip"));
    assert_eq!(
        from_host(&named, WEB, None),
        ok(A0),
        "an address rule lifts it"
    );
    let unguarded = compile(&raw::Network {
        ssrf_guard: false,
        ..raw::Network::default()
    });
    assert_eq!(from_host(&unguarded, WEB, None), ok(DEFAULT_ALLOW));
    // So the host's routes need asking only for a guarded public address.
    assert!(open.asks_host_address(dst(WEB).ip()));
    assert!(!open.asks_host_address(ip("127.0.0.1")));
    assert!(!unguarded.asks_host_address(dst(WEB).ip()));
}

#[test]
fn only_address_rules_lift_the_ssrf_guard() {
    use IpClass::*;
    check(&[
        ("127.0.0.0/8", "127.0.0.1:8080", "", ok(A0)),
        ("127.0.0.0/8", "[::ffff:127.0.0.1]:8080", "", ok(A0)),
        ("127.0.0.1:8080", "127.0.0.1:8080", "", ok(A0)),
        ("127.0.0.1:8080", "127.0.0.2:8080", "", ssrf(Loopback)),
        ("::1", "[::1]:8080", "", ok(A0)),
        ("169.254.169.254", "169.254.169.254:80", "", ok(A0)),
        ("198.18.0.0/15 ; ALL_TRAFFIC", "198.18.0.7:443", "", ok(A0)),
        ("10.0.0.0/8 ; 10.9.0.0/16", "10.9.0.1:443", "", by_rule(D0)),
        // The lift holds on the rule's ports only.
        ("127.0.0.1:8080", "127.0.0.1:9090", "", ssrf(Loopback)),
        ("10.0.0.0/8:5432", "10.1.1.1:22", "", ssrf(Private)),
        // ALL_TRAFFIC, /0 and names do not name internal addresses.
        ("ALL_TRAFFIC", "127.0.0.1:80", "", ssrf(Loopback)),
        ("0.0.0.0/0", "10.0.0.1:80", "", ssrf(Private)),
        ("::/0", "[fd00::1]:80", "", ssrf(UniqueLocal)),
        ("localhost", "127.0.0.1:80", "localhost", ssrf(Loopback)),
        (
            "*.corp.example",
            "10.0.0.1:80",
            "db.corp.example",
            ssrf(Private),
        ),
        (
            "metadata.google.internal",
            "169.254.169.254:80",
            "metadata.google.internal",
            { ssrf(Metadata) },
        ),
        // A name rule decides, an address rule lifts the guard.
        (
            "db.corp.example 10.0.0.0/8 ; ALL_TRAFFIC",
            "10.1.1.1:5432",
            "db.corp.example",
            { ok(A0) },
        ),
    ]);
}

#[test]
fn names_that_are_addresses() {
    let policy = policy("example.com 93.184.216.0/24:80 ; ALL_TRAFFIC");
    let ip_like = || no(NetDenyReason::IpLikeName, IP_LIKE_NAME);
    let http = "93.184.216.34:80";
    let cases: &[(&str, Option<&str>, Option<&str>, NetVerdict)] = &[
        (WEB, None, Some("2130706433"), ip_like()),
        (WEB, None, Some("0x7f000001"), ip_like()),
        (WEB, None, Some("0177.0.0.1"), ip_like()),
        (WEB, None, Some("0x7f.1"), ip_like()),
        (WEB, None, Some("127.1"), ip_like()),
        (WEB, None, Some("127.0.0.1:80"), ip_like()),
        (WEB, None, Some("[::1]:443"), ip_like()),
        (WEB, Some("2130706433"), None, ip_like()),
        (WEB, Some("0x7f.1"), None, ip_like()),
        (WEB, Some("169.254.169.254"), None, ip_like()),
        // The connected address itself, in any spelling, is no name.
        (WEB, Some("93.184.216.34"), None, by_rule(D0)),
        (http, Some("93.184.216.34"), None, ok(A1)),
        (http, None, Some("93.184.216.34:80"), ok(A1)),
        (http, None, Some("0x5db8d822"), ok(A1)),
        (http, None, Some("93.184.55330"), ok(A1)),
        (http, None, Some("[::ffff:93.184.216.34]:80"), ok(A1)),
        (
            "[::ffff:93.184.216.34]:80",
            None,
            Some("93.184.216.34"),
            ok(A1),
        ),
        ("127.0.0.1:80", None, Some("2130706433"), by_rule(D0)),
        // A real name still meets name rules.
        (WEB, Some("example.com"), None, ok(A0)),
    ];
    for (to, sni, host, want) in cases {
        let to = dst(to);
        let got = policy.decide(&ConnRequest {
            dst: to,
            sni: *sni,
            host: *host,
            name_addrs: Some(&[to.ip()]),
            host_address: false,
            ech: false,
            exe: None,
        });
        assert_eq!(&got, want, "{to} {sni:?} {host:?}");
    }
}

#[test]
fn name_must_resolve_to_the_destination() {
    let policy = policy(
        "api.example.com *.cdn.example.com pinned.example.com 93.184.216.35 \
         ; evil.example.com ALL_TRAFFIC",
    );
    let mismatch = |rule| no(NetDenyReason::NameAddressMismatch, rule);
    let elsewhere = [ip("203.0.113.9")];
    let among = [ip("203.0.113.9"), ip("93.184.216.34")];
    let mapped = [ip("::ffff:93.184.216.34")];
    let cases: &[(&str, &str, Option<&[IpAddr]>, NetVerdict)] = &[
        (WEB, "api.example.com", Some(&among), ok(A0)),
        (WEB, "api.example.com", Some(&mapped), ok(A0)),
        (WEB, "api.example.com", Some(&elsewhere), mismatch(A0)),
        (WEB, "api.example.com", Some(&[]), mismatch(A0)),
        (WEB, "api.example.com", None, mismatch(A0)),
        (
            "8.8.8.8:443",
            "img.cdn.example.com",
            Some(&among),
            mismatch(A1),
        ),
        (WEB, "img.cdn.example.com", Some(&among), ok(A1)),
        // Deny rules need no resolution.
        (WEB, "evil.example.com", None, by_rule(D0)),
        // At equal specificity the address rule is preferred: the
        // address is what is dialled.
        ("93.184.216.35:443", "pinned.example.com", None, ok(A3)),
    ];
    for (to, sni, addrs, want) in cases {
        let got = policy.decide(&ConnRequest {
            dst: dst(to),
            sni: Some(sni),
            host: None,
            name_addrs: *addrs,
            host_address: false,
            ech: false,
            exe: None,
        });
        assert_eq!(&got, want, "{to} {sni} {addrs:?}");
    }
    let unverified = compile(&raw::Network {
        verify_name_resolution: false,
        ..network("api.example.com ; ALL_TRAFFIC")
    });
    let got = unverified.decide(&ConnRequest {
        dst: dst("8.8.8.8:443"),
        sni: Some("api.example.com"),
        host: None,
        name_addrs: None,
        host_address: false,
        ech: false,
        exe: None,
    });
    assert_eq!(got, ok(A0));
}

#[test]
fn domain_fronting() {
    let policy = policy("*.example.com ; ALL_TRAFFIC");
    let fronting = || no(NetDenyReason::DomainFronting, FRONTING);
    let cases: &[(Option<&str>, Option<&str>, NetVerdict)] = &[
        (Some("a.example.com"), Some("a.example.com"), ok(A0)),
        (Some("a.example.com"), Some("A.EXAMPLE.COM.:443"), ok(A0)),
        (Some("a.example.com."), Some("a.example.com:8443"), ok(A0)),
        (Some("a.example.com"), None, ok(A0)),
        (None, Some("a.example.com"), ok(A0)),
        (Some("a.example.com"), Some(""), ok(A0)),
        (Some("a.example.com"), Some("b.example.com"), fronting()),
        (Some("a.example.com"), Some("evil.net"), fronting()),
        (Some("evil.net"), Some("a.example.com"), fronting()),
        (Some("93.184.216.34"), Some("a.example.com"), fronting()),
        (Some("a.example.com"), Some("2130706433"), fronting()),
        (None, Some("evil.net"), by_rule(D0)),
    ];
    for (sni, host, want) in cases {
        let to = dst(WEB);
        let got = policy.decide(&ConnRequest {
            dst: to,
            sni: *sni,
            host: *host,
            name_addrs: Some(&[to.ip()]),
            host_address: false,
            ech: false,
            exe: None,
        });
        assert_eq!(&got, want, "{sni:?} {host:?}");
    }
}

/// One bad target in `allow_out`: exactly one error, at this path, whose
/// message or hint says this.
#[test]
fn target_errors() {
    let long_label = format!("{}.com", "a".repeat(64));
    let long_name = format!("{}com", "abcdefghi.".repeat(26));
    let to = "network.allow_out[0].to";
    let cases: Vec<(raw::Target, &str, &str)> = vec![
        (short(""), A0, "empty target"),
        (short("   "), A0, "empty target"),
        (short(" example.com"), A0, "whitespace"),
        (short("exa mple.com"), A0, "whitespace"),
        (short("*example.com"), A0, "write `*.example.com`"),
        (short("**.example.com"), A0, "write `*.example.com`"),
        (short("a.*.com"), A0, "bad wildcard"),
        (short("*.*.example.com"), A0, "bad wildcard"),
        (short("api*.example.com"), A0, "bad wildcard"),
        (short("*"), A0, "ALL_TRAFFIC"),
        (short("*."), A0, "ALL_TRAFFIC"),
        (
            short(".example.com"),
            A0,
            "`*.example.com` for the names below it",
        ),
        (short("exam!ple.com"), A0, "`!` is not allowed"),
        (short("example.com/path"), A0, "not an IP address"),
        (short("münchen.de"), A0, "punycode"),
        (short("-bad.example.com"), A0, "bad label"),
        (short("bad-.example.com"), A0, "bad label"),
        (short(&long_label), A0, "bad label"),
        (short(&long_name), A0, "at most 253"),
        (short("a..example.com"), A0, "empty label"),
        (short("example.com:0"), A0, PORT_HINT),
        (short("example.com:65536"), A0, PORT_HINT),
        (short("example.com:"), A0, "no port"),
        (short("example.com:https"), A0, "not a port"),
        (short("example.com:+443"), A0, "not a port"),
        (
            short("https://example.com/x"),
            A0,
            "write the host alone, such as `example.com`",
        ),
        (short("10.0.0.1/8"), A0, "write `10.0.0.0/8`"),
        (short("10.1.2.3/16:443"), A0, "write `10.1.0.0/16`"),
        (short("2001:db8::1/32"), A0, "write `2001:db8::/32`"),
        (short("10.0.0.0/33"), A0, "0-32"),
        (short("10.0.0.0/"), A0, "0-32"),
        (short("10.0.0.0/+8"), A0, "0-32"),
        (short("2001:db8::/129"), A0, "0-128"),
        (short("10.0.0/8"), A0, "not an IP address"),
        (short("127.1"), A0, "write `127.0.0.1`"),
        (short("2130706433"), A0, "write `127.0.0.1`"),
        (short("0x7f.1:80"), A0, "write `127.0.0.1`"),
        (short("1.2.3.999"), A0, "numeric label"),
        (short("example.123"), A0, "numeric label"),
        (short("[10.0.0.1]:443"), A0, "only for IPv6"),
        (short("[example.com]:443"), A0, "only for IPv6"),
        (short("[2001:db8::1"), A0, "no closing"),
        (short("[2001:db8::1]443"), A0, "only `:PORT`"),
        (short("[2001:db8::1]:0"), A0, PORT_HINT),
        (
            short("ALL_TRAFFIC:443"),
            A0,
            "`0.0.0.0/0:443` and `[::/0]:443`",
        ),
        (short("all_traffic"), A0, "capitals"),
        (full("example.com:443", &[443]), to, "keep one"),
        (
            full("example.com:443", &[]),
            to,
            "move the port into `ports`",
        ),
        (full("*example.com", &[]), to, "write `*.example.com`"),
        (
            full("example.com", &[443, 0]),
            "network.allow_out[0].ports[1]",
            PORT_HINT,
        ),
        (
            full(ALL_TRAFFIC, &[443]),
            "network.allow_out[0].ports",
            "`::/0`",
        ),
    ];
    for (target, path, text) in cases {
        let raw = raw::Network {
            allow_out: vec![target.clone()],
            ..raw::Network::default()
        };
        let errors = NetworkPolicy::compile(&raw).expect_err("must not compile");
        assert_eq!(errors.len(), 1, "{target:?}: {errors:?}");
        let error = &errors[0];
        assert_eq!(error.path, path, "{target:?}");
        let shown = error.to_string();
        assert!(shown.contains(text), "{target:?}: `{shown}` lacks `{text}`");
        assert!(error.hint.is_some(), "{target:?} has no hint");
    }
}

#[test]
fn valid_targets() {
    let cases = [
        "example.com",
        "Example.COM.",
        "*.example.com",
        "*.com",
        "xn--mnchen-3ya.de",
        "_dmarc.example.com",
        "a-b.example.com:8443",
        "localhost",
        "203.0.113.7",
        "203.0.113.7:443",
        "10.0.0.0/8",
        "10.0.0.0/8:5432",
        "0.0.0.0/0",
        "2001:db8::1",
        "2001:db8::/32",
        "[2001:db8::1]",
        "[2001:db8::1]:443",
        "[2001:db8::/32]:443",
        "[::/0]:443",
        "::ffff:10.0.0.0/104",
        ALL_TRAFFIC,
    ];
    for text in cases {
        assert!(NetworkPolicy::compile(&network(text)).is_ok(), "{text}");
    }
}

#[test]
fn duplicates_and_contradictions() {
    let cases: &[(&str, &[&str])] = &[
        ("example.com example.com", &[A1]),
        ("example.com EXAMPLE.com.", &[A1]),
        ("10.0.0.1 10.0.0.1/32", &[A1]),
        ("::ffff:10.0.0.1 10.0.0.1", &[A1]),
        ("[2001:db8::1] 2001:db8::1", &[A1]),
        ("ALL_TRAFFIC ALL_TRAFFIC", &[A1]),
        ("; evil.com evil.com", &[D1]),
        ("example.com ; example.com", &[D0]),
        ("*.example.com ; *.Example.com", &[D0]),
        ("10.0.0.0/8 ; 10.0.0.0/8", &[D0]),
        ("ALL_TRAFFIC ; ALL_TRAFFIC", &[D0]),
        ("a.com a.com ; a.com", &[A1, D0]),
        // Different ports or different targets are not duplicates.
        ("example.com:443 example.com:80", &[]),
        ("example.com:443 ; example.com", &[]),
        ("example.com ; *.example.com", &[]),
        ("0.0.0.0/0 ; ALL_TRAFFIC", &[]),
    ];
    for (spec, want) in cases {
        assert_eq!(error_paths(&network(spec)), *want, "{spec}");
    }
    let full_forms: &[(Vec<raw::Target>, &[&str])] = &[
        (vec![short("x.com:443"), full("x.com", &[443])], &[A1]),
        (
            vec![full("x.com", &[443, 80]), full("x.com", &[80, 443, 443])],
            &[A1],
        ),
        (vec![full("x.com", &[443, 80]), full("x.com", &[80])], &[]),
    ];
    for (allow_out, want) in full_forms {
        let raw = raw::Network {
            allow_out: allow_out.clone(),
            ..raw::Network::default()
        };
        assert_eq!(error_paths(&raw), *want, "{allow_out:?}");
    }
}

fn error_paths(raw: &raw::Network) -> Vec<String> {
    match NetworkPolicy::compile(raw) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.into_iter().map(|error| error.path).collect(),
    }
}

#[test]
fn every_error_comes_back_at_once() {
    let raw = raw::Network {
        allow_out: vec![
            short("ok.example.com"),
            short(""),
            short("example.com"),
            short("Example.com."),
            full("bad..name", &[0]),
        ],
        deny_out: vec![
            short("*bad.example.com"),
            short("example.com"),
            full("x.example.com", &[443, 0]),
        ],
        dns: raw::Dns {
            refuse_types: vec!["TXT".into(), "BOGUS".into()],
            max_label_length: 64,
            ..raw::Dns::default()
        },
        ..raw::Network::default()
    };
    assert_eq!(
        error_paths(&raw),
        [
            "network.allow_out[1]",
            "network.allow_out[3]",
            "network.allow_out[4].to",
            "network.allow_out[4].ports[0]",
            "network.deny_out[0]",
            "network.deny_out[1]",
            "network.deny_out[2].ports[1]",
            "network.dns.refuse_types[1]",
            "network.dns.max_label_length",
        ]
    );
}

fn dns(edit: impl FnOnce(&mut raw::Dns)) -> raw::Network {
    let mut raw = raw::Network::default();
    edit(&mut raw.dns);
    raw
}

fn types(names: &[&str]) -> raw::Network {
    dns(|dns| dns.refuse_types = names.iter().map(|name| name.to_string()).collect())
}

#[test]
fn dns_limits_and_switches() {
    let defaults = policy("");
    let limits = defaults.dns_limits();
    assert_eq!(&limits.refused_types[..], &[10, 16, 255]);
    assert!(limits.refuses(16) && !limits.refuses(1) && !limits.refuses(28));
    assert_eq!(limits.max_queries_per_second, 50);
    assert_eq!(limits.max_label_length, 63);
    assert_eq!(limits.max_name_length, 253);
    assert_eq!(limits.max_unique_subdomains_per_minute, 120);
    assert_eq!(limits.max_unique_unlisted_per_minute, 10);
    assert!(!limits.resolve_unlisted);
    assert_eq!(limits.denied_answer, raw::DeniedAnswer::Nxdomain);
    assert!(defaults.decide_without_decryption());
    let decrypting = compile(&raw::Network {
        decide_without_decryption: Some(false),
        ..raw::Network::default()
    });
    assert!(!decrypting.decide_without_decryption());
}

/// The unlisted cap is never more lenient than the one for listed names.
#[test]
fn unlisted_names_get_the_lower_unique_cap() {
    let cases: &[(u32, u32, u32)] = &[(120, 10, 10), (5, 10, 5), (120, 200, 120), (1, 1, 1)];
    for &(listed, unlisted, want) in cases {
        let policy = compile(&dns(|dns| {
            dns.resolve_unlisted = true;
            dns.max_unique_subdomains_per_minute = listed;
            dns.max_unique_unlisted_per_minute = unlisted;
        }));
        let limits = policy.dns_limits();
        assert!(limits.resolve_unlisted);
        assert_eq!(limits.max_unique_subdomains_per_minute, listed);
        assert_eq!(
            limits.max_unique_unlisted_per_minute, want,
            "{listed} {unlisted}"
        );
    }
}

#[test]
fn refused_record_types() {
    let cases: &[(&[&str], &[u16])] = &[
        (&["txt", "Null", "ANY"], &[10, 16, 255]),
        (&["TYPE65", "caa", "TXT", "TXT", "type16"], &[16, 65, 257]),
        (&["HTTPS", "SVCB", "MX", "SRV"], &[15, 33, 64, 65]),
        (&["TYPE0", "TYPE65535"], &[0, 65535]),
        (&[], &[]),
    ];
    for (names, codes) in cases {
        let policy = compile(&types(names));
        assert_eq!(&policy.dns_limits().refused_types[..], *codes, "{names:?}");
    }
}

#[test]
fn dns_errors() {
    let too_many: Vec<String> = (1..=17).map(|code| format!("TYPE{code}")).collect();
    let cases: Vec<(raw::Network, &str)> = vec![
        (types(&["BOGUS"]), "network.dns.refuse_types[0]"),
        (types(&["TXT", "TYPE"]), "network.dns.refuse_types[1]"),
        (types(&["TYPE65536"]), "network.dns.refuse_types[0]"),
        (types(&["TYPE-1"]), "network.dns.refuse_types[0]"),
        (types(&[""]), "network.dns.refuse_types[0]"),
        (
            dns(|dns| dns.refuse_types = too_many),
            "network.dns.refuse_types[16]",
        ),
        (
            dns(|dns| dns.max_queries_per_second = 0),
            "network.dns.max_queries_per_second",
        ),
        (
            dns(|dns| dns.max_label_length = 0),
            "network.dns.max_label_length",
        ),
        (
            dns(|dns| dns.max_label_length = 64),
            "network.dns.max_label_length",
        ),
        (
            dns(|dns| dns.max_name_length = 254),
            "network.dns.max_name_length",
        ),
        (
            dns(|dns| dns.max_unique_subdomains_per_minute = 0),
            "network.dns.max_unique_subdomains_per_minute",
        ),
        (
            dns(|dns| dns.max_unique_unlisted_per_minute = 0),
            "network.dns.max_unique_unlisted_per_minute",
        ),
    ];
    for (raw, path) in cases {
        assert_eq!(error_paths(&raw), [path], "{:?}", raw.dns);
    }
}

fn named_ok(rule: &str) -> NameDecision {
    NameDecision::Allow { rule: rule.into() }
}

fn named_no(rule: &str) -> NameDecision {
    NameDecision::Deny { rule: rule.into() }
}

fn unlisted(rule: &str) -> NameDecision {
    NameDecision::Unlisted { rule: rule.into() }
}

/// `spec` as [`policy`] makes it, with `dns.resolve_unlisted` set.
fn resolving_unlisted(spec: &str) -> NetworkPolicy {
    let mut raw = network(spec);
    raw.dns.resolve_unlisted = true;
    compile(&raw)
}

#[test]
fn name_decisions() {
    let by_address = || NameDecision::ByAddress;
    let cases: &[(&str, &str, NameDecision)] = &[
        ("*.example.com ; ALL_TRAFFIC", "a.example.com", named_ok(A0)),
        (
            "*.example.com ; ALL_TRAFFIC",
            "A.Example.COM.",
            named_ok(A0),
        ),
        ("*.example.com ; ALL_TRAFFIC", "example.com", named_no(D0)),
        ("*.example.com ; ALL_TRAFFIC", "other.org", named_no(D0)),
        // Default deny under address rules: a name no rule names is
        // answered by Sluice, never asked upstream.
        (
            "*.example.com 10.0.0.0/8 ; ALL_TRAFFIC",
            "other.org",
            unlisted(D0),
        ),
        (
            "*.example.com 10.0.0.0/8 ; ALL_TRAFFIC",
            "a.example.com",
            named_ok(A0),
        ),
        ("10.0.0.0/8 ; ALL_TRAFFIC", "x.tunnel.example", unlisted(D0)),
        ("10.0.0.0/8:443 ; ALL_TRAFFIC", "x.org", unlisted(D0)),
        // A deny rule that names it decides, whatever else there is.
        (
            "10.0.0.0/8 ; evil.org:25 ALL_TRAFFIC",
            "evil.org",
            named_no(D0),
        ),
        (
            "10.0.0.0/8 ; ALL_TRAFFIC evil.org",
            "evil.org",
            named_no(D1),
        ),
        // Default allow: resolved, filtered where there are address rules.
        ("", "x.org", named_ok(DEFAULT_ALLOW)),
        ("; 10.0.0.0/8", "x.org", named_ok(DEFAULT_ALLOW)),
        ("10.0.0.0/8", "x.org", by_address()),
        ("; evil.org", "evil.org", named_no(D0)),
        ("; evil.org", "www.evil.org", named_ok(DEFAULT_ALLOW)),
        ("10.0.0.0/8 ; evil.org", "evil.org", named_no(D0)),
        ("10.0.0.0/8 ; evil.org:25", "evil.org", by_address()),
        // Some port is enough.
        ("; evil.org:25", "evil.org", named_ok(DEFAULT_ALLOW)),
        (
            "api.example.com:443 ; ALL_TRAFFIC",
            "api.example.com",
            named_ok(A0),
        ),
        (
            "api.example.com:443 10.0.0.0/8 ; ALL_TRAFFIC",
            "api.example.com",
            named_ok(A0),
        ),
        (
            "*.example.com ; api.example.com:25",
            "api.example.com",
            named_ok(A0),
        ),
        (
            "*.example.com:443 ; api.example.com:443 ALL_TRAFFIC",
            "api.example.com",
            { named_no(D0) },
        ),
        (
            "*.example.com ; api.example.com",
            "api.example.com",
            named_no(D0),
        ),
        (
            "api.example.com ; *.example.com",
            "api.example.com",
            named_ok(A0),
        ),
        (
            "api.example.com ; *.example.com",
            "web.example.com",
            named_no(D0),
        ),
        ("ALL_TRAFFIC", "anything.example", named_ok(A0)),
        ("ALL_TRAFFIC ; evil.org", "evil.org", named_no(D0)),
        // Names written like addresses are no names to the name rules
        // where there are address rules: ALL_TRAFFIC decides, and only the
        // addresses could let them through.
        (
            "example.com 10.0.0.0/8 ; ALL_TRAFFIC",
            "127.0.0.1",
            unlisted(D0),
        ),
        (
            "example.com 10.0.0.0/8 ; ALL_TRAFFIC",
            "2130706433",
            unlisted(D0),
        ),
        ("example.com 10.0.0.0/8 ; ALL_TRAFFIC", "::1", unlisted(D0)),
        ("10.0.0.0/8 ALL_TRAFFIC", "10.0.0.1", by_address()),
        ("10.0.0.0/8", "0x7f.1", by_address()),
        ("example.com ; ALL_TRAFFIC", "127.0.0.1", named_no(D0)),
        ("example.com ; ALL_TRAFFIC", "0x7f.1", named_no(D0)),
        ("; ALL_TRAFFIC", "1.2.3.4", named_no(D0)),
        ("ALL_TRAFFIC", "1.2.3.4", named_ok(A0)),
        ("example.com ; ALL_TRAFFIC", "", named_no(D0)),
    ];
    for (spec, name, want) in cases {
        assert_eq!(&policy(spec).name_decision(name), want, "{spec} / {name}");
    }
}

/// `resolve_unlisted` changes only what would be [`NameDecision::Unlisted`].
#[test]
fn resolve_unlisted_resolves_only_unlisted_names() {
    let spec = "*.example.com 10.0.0.0/8 ; evil.example.com ALL_TRAFFIC";
    let (strict, lenient) = (policy(spec), resolving_unlisted(spec));
    let names = [
        "a.example.com",
        "evil.example.com",
        "x.tunnel.example",
        "127.0.0.1",
        "",
    ];
    for name in names {
        let want = match strict.name_decision(name) {
            NameDecision::Unlisted { .. } => NameDecision::ResolveUnlisted,
            other => other,
        };
        assert_eq!(lenient.name_decision(name), want, "{name}");
    }
    assert_eq!(
        lenient.name_decision("x.tunnel.example"),
        NameDecision::ResolveUnlisted
    );
    // Without address rules nothing is resolved for want of a rule.
    let named_only = resolving_unlisted("*.example.com ; ALL_TRAFFIC");
    assert_eq!(named_only.name_decision("x.tunnel.example"), named_no(D0));
}

/// `sluice explain`'s view: an unlisted name is refused by its
/// ALL_TRAFFIC rule, or filtered under `resolve_unlisted`.
#[test]
fn name_verdicts_summarise_decisions() {
    let spec = "api.example.com 10.0.0.0/8 ; evil.example.com ALL_TRAFFIC";
    let cases: &[(&NetworkPolicy, &str, NameVerdict)] = &[
        (
            &policy(spec),
            "api.example.com",
            NameVerdict::Allow { rule: A0.into() },
        ),
        (
            &policy(spec),
            "evil.example.com",
            NameVerdict::Deny { rule: D0.into() },
        ),
        (
            &policy(spec),
            "x.tunnel.example",
            NameVerdict::Deny { rule: D1.into() },
        ),
        (
            &resolving_unlisted(spec),
            "x.tunnel.example",
            NameVerdict::ByAddress,
        ),
        (&policy("10.0.0.0/8"), "x.org", NameVerdict::ByAddress),
    ];
    for (policy, name, want) in cases {
        assert_eq!(&policy.name_verdict(name), want, "{name}");
    }
}

#[test]
fn addresses_allowed_for_dns_answers() {
    let internal = "10.0.0.0/8:5432 93.184.216.0/24 ; ALL_TRAFFIC";
    let cases: &[(&str, &str, bool)] = &[
        ("", "8.8.8.8", true),
        ("", "2606:4700::1111", true),
        ("", "127.0.0.1", false),
        ("", "169.254.169.254", false),
        ("", "::ffff:127.0.0.1", false),
        ("", "64:ff9b::a9fe:a9fe", false),
        ("; 8.8.8.0/24", "8.8.8.8", false),
        ("; 8.8.8.0/24", "8.8.4.4", true),
        // Another port stays open.
        ("; 8.8.8.8:53", "8.8.8.8", true),
        (internal, "10.1.1.1", true),
        (internal, "93.184.216.34", true),
        (internal, "8.8.8.8", false),
        (internal, "127.0.0.1", false),
        ("127.0.0.1:8080 ; ALL_TRAFFIC", "127.0.0.1", true),
        ("127.0.0.1:8080 ; ALL_TRAFFIC", "127.0.0.2", false),
        ("127.0.0.1:8080 ; 127.0.0.0/8", "127.0.0.1", true),
        ("10.0.0.0/8:5432 ; 10.0.0.0/8", "10.0.0.1", true),
        ("10.0.0.0/8 ; 10.0.0.0/8:5432", "10.0.0.1", true),
        ("ALL_TRAFFIC", "10.0.0.1", false),
        ("ALL_TRAFFIC", "8.8.8.8", true),
        ("0.0.0.0/0", "10.0.0.1", false),
        // Name rules play no part here.
        ("example.com ; ALL_TRAFFIC", "93.184.216.34", false),
        ("; example.com", "93.184.216.34", true),
    ];
    for (spec, addr, want) in cases {
        assert_eq!(
            policy(spec).address_allowed(ip(addr)),
            *want,
            "{spec} / {addr}"
        );
    }
    let unguarded = compile(&raw::Network {
        ssrf_guard: false,
        ..raw::Network::default()
    });
    assert!(unguarded.address_allowed(ip("127.0.0.1")));
}

#[test]
fn when_resolution_is_wanted() {
    let policy = policy("api.example.com *.cdn.example.com:443 10.0.0.0/8 ; evil.example.com");
    let cases: &[(&str, bool)] = &[
        ("api.example.com", true),
        ("API.example.com.", true),
        ("api.example.com:443", true),
        ("x.cdn.example.com", true),
        ("cdn.example.com", false),
        ("evil.example.com", false),
        ("other.org", false),
        ("10.0.0.1", false),
        ("2130706433", false),
        ("", false),
    ];
    for (name, want) in cases {
        assert_eq!(policy.wants_resolution(name), *want, "{name}");
    }
    let unverified = compile(&raw::Network {
        verify_name_resolution: false,
        ..network("api.example.com")
    });
    assert!(!unverified.wants_resolution("api.example.com"));
}

#[test]
fn when_first_bytes_matter() {
    let cases: &[(&str, u16, bool)] = &[
        ("api.example.com", 22, true),
        ("api.example.com:443", 443, true),
        ("api.example.com:443", 22, false),
        ("api.example.com:443 ; *.example.com:80", 80, true),
        ("10.0.0.0/8 ; ALL_TRAFFIC", 443, false),
        ("", 443, false),
    ];
    for (spec, port, want) in cases {
        assert_eq!(
            policy(spec).name_rules_apply(*port),
            *want,
            "{spec} / {port}"
        );
    }
}

#[test]
fn canonical_names() {
    let cases = [
        ("Example.COM", "example.com"),
        ("example.com.", "example.com"),
        ("example.com:8080", "example.com"),
        ("example.com.:8080", "example.com"),
        (" example.com ", "example.com"),
        ("[2001:DB8::1]:443", "[2001:db8::1]"),
        ("2001:db8::1", "2001:db8::1"),
        ("example.com:https", "example.com:https"),
        ("", ""),
    ];
    for (raw, want) in cases {
        assert_eq!(canonical_name(raw), want, "{raw}");
    }
}

#[test]
fn deny_reason_labels() {
    let cases = [
        (NetDenyReason::DeniedByRule, "denied_by_rule"),
        (NetDenyReason::Ssrf(IpClass::Metadata), "ssrf"),
        (NetDenyReason::NameAddressMismatch, "name_address_mismatch"),
        (NetDenyReason::DomainFronting, "domain_fronting"),
        (NetDenyReason::IpLikeName, "ip_like_name"),
    ];
    for (reason, label) in cases {
        assert_eq!(reason.as_str(), label);
    }
}

#[test]
fn hostile_input_is_decided_not_crashed_on() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<NetworkPolicy>();

    let spec = "*.example.com 10.0.0.0/8:5432 ; evil.example.com ALL_TRAFFIC";
    let (policy, resolving) = (policy(spec), resolving_unlisted(spec));
    let long = "a.".repeat(5000);
    let names = [
        "",
        ".",
        "..",
        ":",
        "[",
        "]",
        "[]",
        "[:",
        "[::1",
        "::",
        ":::::",
        "*",
        "*.example.com",
        "a..example.com",
        "\0.example.com",
        "ünïcode.example.com",
        "EXAMPLE.COM\u{0301}",
        "example.com:99999999999",
        "example.com::443",
        "0x",
        "0x.0x.0x.0x",
        "99999999999999999999",
        &long,
    ];
    for name in names {
        let _ = policy.name_verdict(name);
        let _ = resolving.name_decision(name);
        let _ = policy.wants_resolution(name);
        let _ = ssrf::parse_ip_like(name);
        for to in ["10.0.0.1:5432", "[::]:0", "255.255.255.255:65535"] {
            for (sni, host) in [(Some(name), Some(name)), (None, Some(name))] {
                let _ = policy.decide(&ConnRequest {
                    dst: dst(to),
                    sni,
                    host,
                    name_addrs: None,
                    host_address: false,
                    ech: false,
                    exe: None,
                });
            }
        }
        let raw = raw::Network {
            allow_out: vec![short(name)],
            deny_out: vec![full(name, &[0, 1])],
            ..raw::Network::default()
        };
        let _ = NetworkPolicy::compile(&raw);
    }
    // A garbage label still meets the SSRF guard on the address.
    let got = tls(&policy, "203.0.113.5:443", "\0.example.com");
    assert_eq!(got, ssrf(IpClass::Documentation));
}

#[test]
fn interception_and_passthrough() {
    let mut raw = raw::Network {
        decide_without_decryption: Some(false),
        passthrough: vec!["pinned.test".to_owned(), "*.bank.test".to_owned()],
        ..raw::Network::default()
    };
    let intercepting = compile(&raw);
    let cases = [
        (Some("api.test"), true),
        (Some("API.test."), true),
        (None, true),
        (Some("pinned.test"), false),
        (Some("Pinned.Test:443"), false),
        (Some("www.bank.test"), false),
        (Some("a.b.bank.test"), false),
        (Some("bank.test"), true),
        (Some("notbank.test"), true),
    ];
    for (name, want) in cases {
        assert_eq!(intercepting.intercepts(name), want, "{name:?}");
    }
    raw.decide_without_decryption = Some(true);
    let passing = compile(&raw);
    assert!(!passing.intercepts(Some("api.test")));
    assert!(!passing.intercepts(None));

    raw.passthrough = vec!["10.0.0.0/8".to_owned(), "*bad".to_owned()];
    let Err(errors) = NetworkPolicy::compile(&raw) else {
        panic!("passthrough takes names only");
    };
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["network.passthrough[0]", "network.passthrough[1]"]);
}

/// A translator on the path delivers a NAT64 address to the IPv4 address
/// it carries, so IPv4 rules decide it as they decide that address.
#[test]
fn ipv4_rules_hold_through_nat64() {
    let denying = policy("; 8.8.8.8");
    for to in [
        "8.8.8.8:443",
        "[64:ff9b::808:808]:443",
        "[64:ff9b:1::808:808]:443",
    ] {
        assert_eq!(tls(&denying, to, ""), by_rule(D0), "{to}");
    }
    let allowing = policy("8.8.8.0/24 ; ALL_TRAFFIC");
    assert_eq!(tls(&allowing, "[64:ff9b::808:808]:443", ""), ok(A0));
    // Any other layout of the local-use prefix is refused, not misread.
    assert_eq!(
        tls(&policy(""), "[64:ff9b:1:808:808::]:443", ""),
        ssrf(IpClass::Reserved)
    );
}

#[test]
fn encrypted_client_hello_table() {
    use raw::EncryptedClientHello::{Allow, Refuse};
    let ech = no(NetDenyReason::EncryptedClientHello, ECH);
    // (setting, sni, the undecrypted hello offers ECH, verdict). Whether
    // the connection is decrypted is the caller's to say (`ech` is false
    // for a decrypted one: the hello Sluice answers is the one it reads).
    #[rustfmt::skip]
    let cases = [
        (Allow, "api.test", true, ok("network.allow_out[0]")),
        (Refuse, "api.test", false, ok("network.allow_out[0]")),
        (Refuse, "api.test", true, ech.clone()),
        // The rules refuse first, naming their rule.
        (Refuse, "other.test", true, by_rule("network.deny_out[0]")),
    ];
    for (setting, sni, offers, want) in cases {
        let policy = compile(&raw::Network {
            encrypted_client_hello: setting,
            ..network("api.test ; ALL_TRAFFIC")
        });
        let to = dst(WEB);
        let got = policy.decide(&ConnRequest {
            dst: to,
            sni: Some(sni),
            host: None,
            name_addrs: Some(&[to.ip()]),
            host_address: false,
            ech: offers,
            exe: None,
        });
        assert_eq!(got, want, "{setting:?} {sni} ech={offers}");
    }
}

/// `deny_out: [0.0.0.0/0]` (or `::/0`) alone, without ports, is all
/// traffic, as the seeds write it; with ports, or listed with the other
/// family's `/0`, each keeps its family. Ranked as the CIDR it is: a more
/// specific allow wins, an `ALL_TRAFFIC` allow does not.
#[test]
fn a_portless_slash_zero_in_deny_out_is_all_traffic() {
    let d2 = "network.deny_out[2]";
    let default = ok(DEFAULT_ALLOW);
    check(&[
        ("; 0.0.0.0/0", WEB, "", by_rule(D0)),
        ("; 0.0.0.0/0", WEB6, "", by_rule(D0)),
        ("; ::/0", WEB, "", by_rule(D0)),
        ("; ::/0", WEB6, "", by_rule(D0)),
        // Both written: each its own family.
        ("; 0.0.0.0/0 ::/0", WEB6, "", by_rule(D1)),
        ("; 0.0.0.0/0 ::/0", WEB, "", by_rule(D0)),
        // With ports, the family stays.
        ("; 0.0.0.0/0:443", WEB6, "", default.clone()),
        ("; 0.0.0.0/0:443", WEB, "", by_rule(D0)),
        // A more specific allow still wins; ALL_TRAFFIC allowed does not.
        ("2606:4700::/32 ; 0.0.0.0/0", WEB6, "", ok(A0)),
        ("ALL_TRAFFIC ; 0.0.0.0/0", WEB6, "", by_rule(D0)),
        // In allow_out a /0 stays its family.
        ("0.0.0.0/0 ; ", WEB6, "", default),
        ("; a.test b.test 0.0.0.0/0", WEB6, "", by_rule(d2)),
    ]);
    assert_eq!(policy("; 0.0.0.0/0").all_traffic_readings(), [D0]);
    assert!(policy("; 0.0.0.0/0 ::/0").all_traffic_readings().is_empty());
    assert!(policy("; 0.0.0.0/0:443").all_traffic_readings().is_empty());
}

/// A policy file's `network` section, as written, through the loader:
/// each error comes back located (line, column) as `sluice check` prints it.
fn located(network: &str) -> Vec<(usize, usize, String)> {
    let text = format!("network:\n{network}");
    let path = std::path::Path::new("p.yaml");
    let against = crate::policy::load::Against::default();
    match crate::policy::load::parse_policy(path, "p", &text, against) {
        Ok(_) => Vec::new(),
        Err(diagnostics) => diagnostics
            .into_iter()
            .map(|d| (d.line, d.column, format!("{} ({:?})", d.message, d.hint)))
            .collect(),
    }
}

/// `methods`, `paths` and `access` written wrong: one error each, at the
/// node's line and column, saying what to write.
#[test]
fn request_rule_errors_are_located() {
    // (network section, line, column, fragment of the message or hint)
    #[rustfmt::skip]
    let cases: &[(&str, usize, usize, &str)] = &[
        ("  allow_out:\n    - {to: a.test, methods: [GET, 'P OST']}\n", 3, 35, "not a method"),
        ("  allow_out:\n    - {to: a.test, methods: ['*']}\n", 3, 30, "leave `methods` out"),
        ("  allow_out:\n    - {to: a.test, methods: []}\n", 3, 20, "empty `methods`"),
        ("  allow_out:\n    - {to: a.test, paths: []}\n", 3, 20, "empty `paths`"),
        ("  allow_out:\n    - {to: a.test, paths: [/ok, repos/**]}\n", 3, 33, "must start with `/`"),
        ("  allow_out:\n    - {to: a.test, paths: ['/a?b=1']}\n", 3, 28, "query"),
        ("  allow_out:\n    - {to: a.test, methods: [GET], access: read_only}\n", 3, 36, "keep one"),
        ("  allow_out:\n    - a.test\n  deny_out:\n    - {to: b.test, access: read_only}\n", 5, 20, "allow only the others"),
        ("  allow_out:\n    - {to: a.test, access: read_only}\n  decide_without_decryption: true\n", 3, 20, "every port, 443 included"),
        ("  allow_out:\n    - {to: a.test, ports: [80, 443], methods: [GET]}\n  decide_without_decryption: true\n", 3, 38, "only plain-HTTP ports"),
        ("  allow_out:\n    - {to: a.test, paths: [/x]}\n  passthrough: [a.test]\n", 3, 20, "`a.test` is in network.passthrough"),
        ("  allow_out:\n    - {to: b.a.test, paths: [/x]}\n  passthrough: ['*.a.test']\n", 3, 22, "`*.a.test` is in network.passthrough"),
        ("  allow_out:\n    - {to: '*.a.test', access: read_only}\n  passthrough: [b.a.test]\n", 3, 24, "`b.a.test` is in network.passthrough"),
        ("  allow_out:\n    - {to: '*.b.a.test', access: read_only}\n  passthrough: ['*.a.test']\n", 3, 26, "`*.a.test` is in network.passthrough"),
    ];
    let mut wrong = Vec::new();
    for &(network, line, column, fragment) in cases {
        let got = located(network);
        let right = matches!(got.as_slice(), [(l, c, message)]
            if (*l, *c) == (line, column) && message.contains(fragment));
        if !right {
            wrong.push(format!("{network}: {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // What compiles: plain-HTTP ports under decide_without_decryption,
    // passthrough beside the rule, an address rule, a name the
    // passthrough does not cover, the upper-cased and deduplicated methods.
    #[rustfmt::skip]
    let fine = [
        "  allow_out:\n    - {to: a.test, ports: [80, 8080], access: read_only}\n  decide_without_decryption: true\n",
        "  allow_out:\n    - {to: a.test, access: read_only}\n  passthrough: [b.test, '*.c.a.test']\n",
        "  allow_out:\n    - {to: '*.a.test', methods: [get, GET, post], paths: ['/repos/*/issues', '/**']}\n  passthrough: [a.test]\n",
        "  allow_out:\n    - {to: 10.0.0.0/8, access: read_only}\n  passthrough: [a.test]\n",
    ];
    for network in fine {
        assert_eq!(located(network), Vec::new(), "{network}");
    }
}

/// The rule with methods or paths is the one the connection was allowed
/// by, most specific first; a deny or an unconstrained winner carries
/// none.
#[test]
fn the_request_rule_is_the_winners() {
    let raw: raw::Network = serde_yaml::from_str(
        "allow_out:\n  - {to: api.test, access: read_only}\n  - {to: '*.test', methods: [POST]}\n  - {to: 10.0.0.0/8, ports: [80], paths: [/x]}\n  - open.test\ndeny_out: [bad.test, ALL_TRAFFIC]\ndecide_without_decryption: false\nssrf_guard: false\n",
    )
    .expect("network");
    let policy = compile(&raw);
    let label = |name: Option<&str>, to: &str| {
        let rule = policy.request_rule(name, dst(to));
        rule.map(|rule| rule.label.to_string())
    };
    let a = |i: usize| Some(format!("network.allow_out[{i}]"));
    assert_eq!(label(Some("api.test"), "192.0.2.1:443"), a(0));
    assert_eq!(label(Some("www.test"), "192.0.2.1:443"), a(1));
    assert_eq!(label(Some("open.test"), "10.0.0.1:80"), None);
    assert_eq!(label(Some("bad.test"), "10.0.0.1:80"), None);
    assert_eq!(label(Some("other.example"), "10.0.0.1:80"), a(2));
    assert_eq!(label(Some("10.0.0.1"), "10.0.0.1:80"), a(2));
    assert_eq!(label(None, "10.0.0.1:80"), a(2));
    assert_eq!(label(None, "10.0.0.1:443"), None);
    assert!(policy.request_rules_apply(443) && policy.request_rules_apply(80));
    assert!(!self::policy("a.test").request_rules_apply(80));
}

/// A connection to a rule that decides per request is refused where its
/// requests would not be read: TLS not decrypted (a plain-HTTP-only port
/// under `decide_without_decryption: true`, or a passthrough name reaching
/// an address rule). Plain HTTP is read, so allowed.
#[test]
fn a_request_rule_is_never_relayed_unread() {
    let connect = |yaml: &str, to: &str, sni: Option<&str>, host: Option<&str>| {
        let raw: raw::Network = serde_yaml::from_str(yaml).expect("network");
        let to = dst(to);
        compile(&raw).decide(&ConnRequest {
            dst: to,
            sni,
            host,
            name_addrs: Some(&[to.ip()]),
            host_address: false,
            ech: false,
            exe: None,
        })
    };
    let unread = no(NetDenyReason::RequestRuleUnread, A0);
    let plain_only = "allow_out: [{to: a.test, ports: [80], access: read_only}]\ndecide_without_decryption: true\nssrf_guard: false\n";
    assert_eq!(
        connect(plain_only, "10.0.0.1:80", Some("a.test"), None),
        unread
    );
    assert_eq!(
        connect(plain_only, "10.0.0.1:80", None, Some("a.test")),
        ok(A0)
    );
    let by_address = "allow_out: [{to: 10.0.0.0/8, access: read_only}]\npassthrough: [pinned.test]\ndecide_without_decryption: false\nssrf_guard: false\n";
    let pinned = connect(by_address, "10.0.0.1:443", Some("pinned.test"), None);
    assert_eq!(pinned, unread);
    assert_eq!(
        connect(by_address, "10.0.0.1:443", Some("a.test"), None),
        ok(A0)
    );
    assert_eq!(connect(by_address, "10.0.0.1:443", None, None), ok(A0));
    assert_eq!(
        NetDenyReason::RequestRuleUnread.as_str(),
        "request_rule_unread"
    );
}

/// `binaries`: the winner admits only the programs whose executable
/// matches; an unknown executable (a process gone, renamed, or a
/// connection with no process: the explicit proxy) is not admitted; a rule
/// without `binaries` admits any; a more specific rule decides alone.
#[test]
fn binaries_admit_only_their_programs() {
    let raw: raw::Network = serde_yaml::from_str(
        "allow_out:\n  - {to: git.test, binaries: [/usr/bin/git, '/usr/lib/git-core/*']}\n  - {to: '*.tools.test', binaries: ['/opt/**']}\n  - '*.test'\nssrf_guard: false\n",
    )
    .expect("network");
    let policy = compile(&raw);
    let connect = |sni: &str, exe: Option<&str>| {
        let to = dst("192.0.2.1:443");
        policy.decide(&ConnRequest {
            dst: to,
            sni: Some(sni),
            host: None,
            name_addrs: Some(&[to.ip()]),
            host_address: false,
            ech: false,
            exe,
        })
    };
    let refused = |rule: &str| no(NetDenyReason::BinaryNotAllowed, rule);
    let a = |i: usize| format!("network.allow_out[{i}]");
    #[rustfmt::skip]
    let cases = [
        ("git.test", Some("/usr/bin/git"), ok(&a(0))),
        ("git.test", Some("/usr/lib/git-core/git-remote-https"), ok(&a(0))),
        ("git.test", Some("/usr/bin/curl"), refused(&a(0))),
        ("git.test", Some("/usr/bin/git2"), refused(&a(0))),
        ("git.test", Some("/usr/lib/git-core/sub/x"), refused(&a(0))),
        ("git.test", None, refused(&a(0))),
        ("a.tools.test", Some("/opt/agent/bin/tool"), ok(&a(1))),
        ("a.tools.test", Some("/tmp/opt/tool"), refused(&a(1))),
        // The wildcard without binaries: any program, none known included.
        ("other.test", Some("/usr/bin/curl"), ok(&a(2))),
        ("other.test", None, ok(&a(2))),
    ];
    for (sni, exe, want) in cases {
        assert_eq!(connect(sni, exe), want, "{sni} {exe:?}");
    }
    assert_eq!(
        NetDenyReason::BinaryNotAllowed.as_str(),
        "binary_not_allowed"
    );
}

/// `binaries` written wrong: located, saying what to write.
#[test]
fn binaries_errors_are_located() {
    #[rustfmt::skip]
    let cases: &[(&str, usize, usize, &str)] = &[
        ("  allow_out:\n    - {to: a.test, binaries: []}\n", 3, 20, "empty `binaries`"),
        ("  allow_out:\n    - {to: a.test, binaries: [git]}\n", 3, 31, "absolute path"),
        ("  allow_out:\n    - a.test\n  deny_out:\n    - {to: b.test, binaries: [/usr/bin/git]}\n", 5, 20, "give `binaries` to the allow_out rule"),
    ];
    for &(network, line, column, fragment) in cases {
        let got = located(network);
        let right = matches!(got.as_slice(), [(l, c, message)]
            if (*l, *c) == (line, column) && message.contains(fragment));
        assert!(right, "{network}: {got:?}");
    }
    let fine = "  allow_out:\n    - {to: a.test, binaries: [/usr/bin/git, '/usr/lib/**']}\n";
    assert_eq!(located(fine), Vec::new());
}

/// Learn mode: what only the catch-all or `binaries` refuse goes on as
/// `WouldDeny`; named deny rules, the SSRF guard and fronting still
/// refuse; names the catch-all refuses are resolved.
#[test]
fn learn_mode_lets_through_only_what_the_catch_all_refuses() {
    let raw: raw::Network = serde_yaml::from_str(
        "allow_out:\n  - a.test\n  - {to: git.test, binaries: [/usr/bin/git]}\ndeny_out: [evil.test, ALL_TRAFFIC]\n",
    )
    .expect("network");
    let policy = compile(&raw).learning(true);
    assert!(policy.learns());
    let connect = |to: &str, sni: &str, exe: Option<&str>| {
        let to = dst(to);
        policy.decide(&ConnRequest {
            dst: to,
            sni: Some(sni),
            host: None,
            name_addrs: Some(&[to.ip()]),
            host_address: false,
            ech: false,
            exe,
        })
    };
    let would = |reason, rule: &str| NetVerdict::WouldDeny {
        reason,
        rule: rule.into(),
    };
    let catch_all = "network.deny_out[1]";
    #[rustfmt::skip]
    let cases = [
        ("93.184.216.34:443", "a.test", None, ok(A0)),
        ("93.184.216.34:443", "other.test", None, would(NetDenyReason::DeniedByRule, catch_all)),
        ("93.184.216.34:443", "evil.test", None, by_rule("network.deny_out[0]")),
        ("169.254.169.254:80", "other.test", None, ssrf(IpClass::Metadata)),
        ("10.0.0.1:443", "a.test", None, ssrf(IpClass::Private)),
        ("93.184.216.34:443", "git.test", Some("/usr/bin/curl"), would(NetDenyReason::BinaryNotAllowed, "network.allow_out[1]")),
        ("93.184.216.34:443", "git.test", Some("/usr/bin/git"), ok("network.allow_out[1]")),
    ];
    for (to, sni, exe, want) in cases {
        assert_eq!(connect(to, sni, exe), want, "{to} {sni} {exe:?}");
    }
    assert_eq!(
        policy.name_decision("other.test"),
        NameDecision::WouldDeny {
            rule: catch_all.into()
        }
    );
    assert_eq!(
        policy.name_decision("evil.test"),
        NameDecision::Deny {
            rule: "network.deny_out[0]".into()
        }
    );
    // Enforcing, the same policy refuses.
    let enforcing = compile(&raw);
    assert!(!enforcing.learns());
    assert_eq!(
        tls(&enforcing, "93.184.216.34:443", "other.test"),
        by_rule(catch_all)
    );
}
