use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().expect("test address")
}

#[test]
fn classify_ipv4() {
    use IpClass::*;
    let cases: &[(&str, Option<IpClass>)] = &[
        ("127.0.0.1", Some(Loopback)),
        ("127.255.255.254", Some(Loopback)),
        ("10.0.0.1", Some(Private)),
        ("10.255.255.255", Some(Private)),
        ("172.16.0.1", Some(Private)),
        ("172.31.255.255", Some(Private)),
        ("172.15.255.255", None),
        ("172.32.0.0", None),
        ("192.168.1.1", Some(Private)),
        ("100.64.0.1", Some(SharedCgnat)),
        ("100.127.255.255", Some(SharedCgnat)),
        ("100.128.0.0", None),
        ("100.63.255.255", None),
        ("169.254.1.1", Some(LinkLocal)),
        ("169.254.169.123", Some(LinkLocal)),
        ("169.254.169.254", Some(Metadata)),
        ("169.254.170.2", Some(Metadata)),
        ("100.100.100.200", Some(Metadata)),
        ("192.0.0.192", Some(Metadata)),
        ("168.63.129.16", Some(Metadata)),
        ("0.0.0.0", Some(Unspecified)),
        ("0.1.2.3", Some(Unspecified)),
        ("224.0.0.1", Some(Multicast)),
        ("239.255.255.250", Some(Multicast)),
        ("255.255.255.255", Some(Broadcast)),
        ("240.0.0.1", Some(Reserved)),
        ("255.255.255.254", Some(Reserved)),
        ("192.0.0.8", Some(Reserved)),
        ("192.88.99.1", Some(Reserved)),
        ("192.0.2.1", Some(Documentation)),
        ("198.51.100.7", Some(Documentation)),
        ("203.0.113.7", Some(Documentation)),
        ("198.18.0.1", Some(Benchmarking)),
        ("198.19.255.255", Some(Benchmarking)),
        ("198.20.0.0", None),
        ("8.8.8.8", None),
        ("1.1.1.1", None),
        ("93.184.216.34", None),
        ("223.255.255.255", None),
    ];
    for &(addr, want) in cases {
        assert_eq!(classify(ip(addr)), want, "{addr}");
    }
}

#[test]
fn classify_ipv6() {
    use IpClass::*;
    let cases: &[(&str, Option<IpClass>)] = &[
        ("::", Some(Unspecified)),
        ("::1", Some(Loopback)),
        ("fe80::1", Some(LinkLocal)),
        ("febf:ffff::1", Some(LinkLocal)),
        ("fec0::1", Some(SiteLocal)),
        ("fc00::1", Some(UniqueLocal)),
        ("fd12:3456::1", Some(UniqueLocal)),
        ("fd00:ec2::254", Some(Metadata)),
        ("fd00:ec2::253", Some(UniqueLocal)),
        ("ff02::1", Some(Multicast)),
        ("ff05::1:3", Some(Multicast)),
        ("2001:db8::1", Some(Documentation)),
        ("3fff:fff::1", Some(Documentation)),
        ("2001:2::1", Some(Benchmarking)),
        ("2001:10::1", Some(Reserved)),
        ("2001:20::1", Some(Reserved)),
        ("100::1", Some(Reserved)),
        ("4000::1", Some(Reserved)),
        ("5f00::1", Some(Reserved)),
        ("::2:0:0:1", Some(Reserved)),
        ("2606:4700::1111", None),
        ("2a00:1450:4001:80b::200e", None),
        ("2001:4860:4860::8888", None),
    ];
    for &(addr, want) in cases {
        assert_eq!(classify(ip(addr)), want, "{addr}");
    }
}

#[test]
fn classify_ipv6_embedding_ipv4() {
    use IpClass::*;
    let cases: &[(&str, Option<IpClass>)] = &[
        // IPv4-mapped.
        ("::ffff:127.0.0.1", Some(Loopback)),
        ("::ffff:10.1.2.3", Some(Private)),
        ("::ffff:169.254.169.254", Some(Metadata)),
        ("::ffff:0.0.0.0", Some(Unspecified)),
        ("::ffff:8.8.8.8", None),
        // IPv4-compatible: refused even when public.
        ("::127.0.0.1", Some(Loopback)),
        ("::10.0.0.1", Some(Private)),
        ("::8.8.8.8", Some(Reserved)),
        // SIIT IPv4-translated.
        ("::ffff:0:127.0.0.1", Some(Loopback)),
        ("::ffff:0:8.8.8.8", Some(Reserved)),
        // NAT64 well-known prefix.
        ("64:ff9b::7f00:1", Some(Loopback)),
        ("64:ff9b::a9fe:a9fe", Some(Metadata)),
        ("64:ff9b::192.168.0.1", Some(Private)),
        ("64:ff9b::8.8.8.8", None),
        // Not the /96 well-known layout: nothing there.
        ("64:ff9b:0:1::808:808", Some(Reserved)),
        // NAT64 local-use prefix.
        ("64:ff9b:1::a00:1", Some(Private)),
        ("64:ff9b:1::808:808", None),
        ("64:ff9b:1:abcd::808:808", Some(Reserved)),
        // 6to4.
        ("2002:7f00:1::", Some(Loopback)),
        ("2002:a9fe:a9fe::1", Some(Metadata)),
        ("2002:c0a8:101::", Some(Private)),
        ("2002:808:808::1", None),
        // Teredo: client is the inverted last 32 bits.
        ("2001:0:808:808::80ff:fffe", Some(Loopback)),
        ("2001:0:7f00:1::f7f7:f7f7", Some(Loopback)),
        ("2001:0:808:808::5601:5601", Some(Metadata)),
        ("2001:0:808:808::f7f7:f7f7", None),
    ];
    for &(addr, want) in cases {
        assert_eq!(classify(ip(addr)), want, "{addr}");
    }
}

#[test]
fn class_labels() {
    use IpClass::*;
    let cases = [
        (Loopback, "loopback"),
        (Private, "private"),
        (SharedCgnat, "cgnat"),
        (LinkLocal, "link_local"),
        (Metadata, "metadata"),
        (Unspecified, "unspecified"),
        (Multicast, "multicast"),
        (Broadcast, "broadcast"),
        (UniqueLocal, "unique_local"),
        (SiteLocal, "site_local"),
        (Reserved, "reserved"),
        (Documentation, "documentation"),
        (Benchmarking, "benchmarking"),
    ];
    for (class, label) in cases {
        assert_eq!(class.as_str(), label);
        assert_eq!(class.to_string(), label);
    }
}

#[test]
fn ip_like_hosts() {
    let cases: &[(&str, Option<&str>)] = &[
        ("127.0.0.1", Some("127.0.0.1")),
        ("127.0.0.1.", Some("127.0.0.1")),
        (" 127.0.0.1 ", Some("127.0.0.1")),
        ("2130706433", Some("127.0.0.1")),
        ("0x7f000001", Some("127.0.0.1")),
        ("0X7F000001", Some("127.0.0.1")),
        ("017700000001", Some("127.0.0.1")),
        ("0177.0.0.1", Some("127.0.0.1")),
        ("0177.0.0.01", Some("127.0.0.1")),
        ("127.1", Some("127.0.0.1")),
        ("127.0.1", Some("127.0.0.1")),
        ("0x7f.1", Some("127.0.0.1")),
        ("0x7f.0x0.0x0.0x1", Some("127.0.0.1")),
        ("0xa9.0xfe.0xa9.0xfe", Some("169.254.169.254")),
        ("169.254.43518", Some("169.254.169.254")),
        ("2852039166", Some("169.254.169.254")),
        ("10.1.257", Some("10.1.1.1")),
        ("0", Some("0.0.0.0")),
        ("0x", Some("0.0.0.0")),
        ("00", Some("0.0.0.0")),
        ("4294967295", Some("255.255.255.255")),
        ("[::1]", Some("::1")),
        ("[::ffff:127.0.0.1]", Some("::ffff:127.0.0.1")),
        ("[fe80::1%25eth0]", Some("fe80::1")),
        ("fe80::1%eth0", Some("fe80::1")),
        ("::1", Some("::1")),
        ("2001:db8::1", Some("2001:db8::1")),
        // Not addresses: a resolver would look these up.
        ("4294967296", None),
        ("256.0.0.1", None),
        ("1.2.3.256", None),
        ("127.16777216", None),
        ("1.2.3.4.5", None),
        ("08", None),
        ("0189.0.0.1", None),
        ("0xg", None),
        ("+1", None),
        ("-1", None),
        ("1..1", None),
        (".1", None),
        ("1.2.3.4..", None),
        ("", None),
        (".", None),
        ("example.com", None),
        ("1.2.3.example", None),
        ("127.0.0.1.nip.io", None),
        ("0x7f.example", None),
        ("1e3", None),
        ("[::1", None),
        ("[127.0.0.1]", None),
        ("[example.com]", None),
        ("99999999999999999999999999", None),
        ("0x100000000", None),
    ];
    for &(host, want) in cases {
        assert_eq!(parse_ip_like(host), want.map(ip), "{host:?}");
    }
}

/// Whether the IANA special-purpose registries mark a block globally
/// reachable; `NotApplicable` where the registry says N/A or the block
/// carries an IPv4 address Sluice judges it by (tested above).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Reachable {
    Yes,
    No,
    NotApplicable,
}

/// The IPv4 Special-Purpose Address Registry, block by block.
const IANA_V4: &[(&str, Reachable)] = {
    use Reachable::*;
    &[
        ("0.0.0.0/8", No),
        ("0.0.0.0/32", No),
        ("10.0.0.0/8", No),
        ("100.64.0.0/10", No),
        ("127.0.0.0/8", No),
        ("169.254.0.0/16", No),
        ("172.16.0.0/12", No),
        ("192.0.0.0/24", No),
        ("192.0.0.0/29", No),
        ("192.0.0.8/32", No),
        ("192.0.0.9/32", Yes),
        ("192.0.0.10/32", Yes),
        ("192.0.0.170/32", No),
        ("192.0.0.171/32", No),
        ("192.0.2.0/24", No),
        ("192.31.196.0/24", Yes),
        ("192.52.193.0/24", Yes),
        // Deprecated 6to4 relay anycast: refused (RFC 7526), tested above.
        ("192.88.99.0/24", NotApplicable),
        ("192.168.0.0/16", No),
        ("192.175.48.0/24", Yes),
        ("198.18.0.0/15", No),
        ("198.51.100.0/24", No),
        ("203.0.113.0/24", No),
        ("240.0.0.0/4", No),
        ("255.255.255.255/32", No),
    ]
};

/// The IPv6 Special-Purpose Address Registry, block by block.
const IANA_V6: &[(&str, Reachable)] = {
    use Reachable::*;
    &[
        ("::1/128", No),
        ("::/128", No),
        ("::ffff:0:0/96", NotApplicable),
        ("64:ff9b::/96", NotApplicable),
        ("64:ff9b:1::/48", NotApplicable),
        ("100::/64", No),
        ("100:0:0:1::/64", No),
        ("2001::/23", No),
        ("2001::/32", NotApplicable),
        ("2001:1::1/128", Yes),
        ("2001:1::2/128", Yes),
        ("2001:1::3/128", Yes),
        ("2001:2::/48", No),
        ("2001:3::/32", Yes),
        ("2001:4:112::/48", Yes),
        ("2001:10::/28", No),
        // Marked reachable; refused on purpose (see `REACHABLE_V6`).
        ("2001:20::/28", No),
        ("2001:30::/28", Yes),
        ("2001:db8::/32", No),
        ("2002::/16", NotApplicable),
        ("2620:4f:8000::/48", Yes),
        ("3fff::/20", No),
        ("5f00::/16", No),
        ("fc00::/7", No),
        ("fe80::/10", No),
    ]
};

/// The first and last address of `block` (`addr/len`).
fn ends(block: &str) -> [IpAddr; 2] {
    let (addr, len) = block.split_once('/').expect("a block");
    let len: u32 = len.parse().expect("a length");
    match addr.parse::<IpAddr>().expect("an address") {
        IpAddr::V4(v4) => {
            let host = u32::MAX.checked_shr(len).unwrap_or(0);
            let first = u32::from(v4) & !host;
            [first, first | host].map(|a| IpAddr::V4(a.into()))
        }
        IpAddr::V6(v6) => {
            let host = u128::MAX.checked_shr(len).unwrap_or(0);
            let first = u128::from(v6) & !host;
            [first, first | host].map(|a| IpAddr::V6(a.into()))
        }
    }
}

/// Every block the registries do not mark globally reachable is refused
/// at both ends, and every reachable one passes, inside refused ranges too.
#[test]
fn the_iana_special_purpose_registries_decide() {
    for &(block, reachable) in IANA_V4.iter().chain(IANA_V6) {
        if reachable == Reachable::NotApplicable {
            continue;
        }
        for addr in ends(block) {
            let refused = classify(addr).is_some();
            assert_eq!(refused, reachable == Reachable::No, "{addr} in {block}");
        }
    }
    // Inside 2001::/23, beside the reachable blocks; and just past it.
    for (addr, refused) in [
        ("2001:1::4", true),
        ("2001:5::1", true),
        ("2001:1ff:ffff::1", true),
        ("2001:200::1", false),
    ] {
        assert_eq!(classify(ip(addr)).is_some(), refused, "{addr}");
    }
}
