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
