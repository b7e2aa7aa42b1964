//! The SSRF guard's view of addresses: which ones a sandbox may never reach
//! unless a policy names them in an `allow_out` address or CIDR rule, and how
//! host strings that clients quietly turn into addresses are recognised.
//!
//! A sandbox that can reach loopback, the node's private networks or a cloud
//! metadata endpoint can read credentials and pivot, so every such class is
//! refused by default. Both functions here are pure and allocation-free;
//! everything is decided from constant tables.
//!
//! IPv6 has several ways of carrying an IPv4 address (IPv4-mapped,
//! IPv4-compatible, SIIT, NAT64, 6to4, Teredo). A translator or relay on the
//! path turns them back into the IPv4 address, so they are judged by the
//! address they carry: `::ffff:127.0.0.1` is loopback, not "some IPv6".

use std::{
    fmt,
    net::{IpAddr, Ipv4Addr, Ipv6Addr},
};

/// Why an address is refused. Labels from [`IpClass::as_str`] go to metrics
/// and audit events, so they never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpClass {
    /// 127.0.0.0/8, ::1: the node itself, where the daemon's own ports live.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16 (RFC 1918).
    Private,
    /// 100.64.0.0/10 (RFC 6598): carrier-grade NAT, often cluster networks.
    SharedCgnat,
    /// 169.254/16, fe80::/10.
    LinkLocal,
    /// A cloud instance-metadata endpoint: credentials are served there.
    Metadata,
    /// 0.0.0.0/8, ::: many stacks deliver these to the local host.
    Unspecified,
    /// 224.0.0.0/4, ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// fc00::/7 (RFC 4193): the IPv6 counterpart of private space.
    UniqueLocal,
    /// fec0::/10: deprecated, still honoured by some stacks as private.
    SiteLocal,
    /// IANA special-purpose or unallocated space nothing legitimate lives in.
    Reserved,
    /// 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20.
    Documentation,
    /// 198.18.0.0/15, 2001:2::/48.
    Benchmarking,
    /// An address of the host itself that is public by the tables (say a
    /// global IPv6 address on its interface): the daemon dials from the
    /// host, so the kernel would deliver it to the host's own services.
    /// Known from the host's routes, not from the address
    /// ([`ConnRequest::host_address`](super::network::ConnRequest)).
    Host,
}

impl IpClass {
    /// Stable snake_case label.
    pub fn as_str(self) -> &'static str {
        match self {
            IpClass::Loopback => "loopback",
            IpClass::Private => "private",
            IpClass::SharedCgnat => "cgnat",
            IpClass::LinkLocal => "link_local",
            IpClass::Metadata => "metadata",
            IpClass::Unspecified => "unspecified",
            IpClass::Multicast => "multicast",
            IpClass::Broadcast => "broadcast",
            IpClass::UniqueLocal => "unique_local",
            IpClass::SiteLocal => "site_local",
            IpClass::Reserved => "reserved",
            IpClass::Documentation => "documentation",
            IpClass::Benchmarking => "benchmarking",
            IpClass::Host => "host",
        }
    }
}

impl fmt::Display for IpClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Globally reachable blocks inside the refused ranges below, as the IANA
/// special-purpose registries mark them: anycast services (port control,
/// relays for NAT traversal, DNS service discovery), AMT and AS112, which
/// a sandbox may use like any public address.
const REACHABLE_V4: &[(Ipv4Addr, u8)] = &[
    (Ipv4Addr::new(192, 0, 0, 9), 32),
    (Ipv4Addr::new(192, 0, 0, 10), 32),
];

/// The IPv6 counterparts of [`REACHABLE_V4`], all inside 2001::/23. The
/// registry also marks ORCHIDv2 (2001:20::/28) reachable; it stays refused:
/// its addresses are identifiers, never locators a packet is routed to.
const REACHABLE_V6: &[(Ipv6Addr, u8)] = &[
    (Ipv6Addr::new(0x2001, 0x1, 0, 0, 0, 0, 0, 1), 128),
    (Ipv6Addr::new(0x2001, 0x1, 0, 0, 0, 0, 0, 2), 128),
    (Ipv6Addr::new(0x2001, 0x1, 0, 0, 0, 0, 0, 3), 128),
    (Ipv6Addr::new(0x2001, 0x3, 0, 0, 0, 0, 0, 0), 32),
    (Ipv6Addr::new(0x2001, 0x4, 0x112, 0, 0, 0, 0, 0), 48),
    (Ipv6Addr::new(0x2001, 0x30, 0, 0, 0, 0, 0, 0), 28),
];

/// IPv4 ranges, searched in order: the metadata endpoints come first because
/// they sit inside broader ranges and must be reported as what they are.
const V4: &[(Ipv4Addr, u8, IpClass)] = &[
    // AWS, GCP, Azure, OpenStack, DigitalOcean, OCI, ... instance metadata.
    (Ipv4Addr::new(169, 254, 169, 254), 32, IpClass::Metadata),
    // AWS ECS task metadata and task-role credentials.
    (Ipv4Addr::new(169, 254, 170, 2), 32, IpClass::Metadata),
    // Alibaba Cloud ECS metadata (inside CGNAT space).
    (Ipv4Addr::new(100, 100, 100, 200), 32, IpClass::Metadata),
    // Oracle Cloud (Classic) instance metadata.
    (Ipv4Addr::new(192, 0, 0, 192), 32, IpClass::Metadata),
    // Azure WireServer: public address space, yet inside Azure it is the
    // host's platform endpoint (certificates, extension settings).
    (Ipv4Addr::new(168, 63, 129, 16), 32, IpClass::Metadata),
    (Ipv4Addr::new(255, 255, 255, 255), 32, IpClass::Broadcast),
    (Ipv4Addr::new(0, 0, 0, 0), 8, IpClass::Unspecified),
    (Ipv4Addr::new(10, 0, 0, 0), 8, IpClass::Private),
    (Ipv4Addr::new(100, 64, 0, 0), 10, IpClass::SharedCgnat),
    (Ipv4Addr::new(127, 0, 0, 0), 8, IpClass::Loopback),
    (Ipv4Addr::new(169, 254, 0, 0), 16, IpClass::LinkLocal),
    (Ipv4Addr::new(172, 16, 0, 0), 12, IpClass::Private),
    // IETF protocol assignments (RFC 6890).
    (Ipv4Addr::new(192, 0, 0, 0), 24, IpClass::Reserved),
    (Ipv4Addr::new(192, 0, 2, 0), 24, IpClass::Documentation),
    // Deprecated 6to4 relay anycast (RFC 7526).
    (Ipv4Addr::new(192, 88, 99, 0), 24, IpClass::Reserved),
    (Ipv4Addr::new(192, 168, 0, 0), 16, IpClass::Private),
    (Ipv4Addr::new(198, 18, 0, 0), 15, IpClass::Benchmarking),
    (Ipv4Addr::new(198, 51, 100, 0), 24, IpClass::Documentation),
    (Ipv4Addr::new(203, 0, 113, 0), 24, IpClass::Documentation),
    (Ipv4Addr::new(224, 0, 0, 0), 4, IpClass::Multicast),
    (Ipv4Addr::new(240, 0, 0, 0), 4, IpClass::Reserved),
];

/// IPv6 ranges that carry no IPv4 address, searched in order. Embedding
/// forms are handled in [`classify_v6`] between this table and the final
/// "outside global unicast" rule.
const V6: &[(Ipv6Addr, u8, IpClass)] = &[
    (Ipv6Addr::UNSPECIFIED, 128, IpClass::Unspecified),
    (Ipv6Addr::LOCALHOST, 128, IpClass::Loopback),
    // AWS instance metadata over IPv6 (Nitro), inside fc00::/7.
    (
        Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254),
        128,
        IpClass::Metadata,
    ),
    // Discard-only (RFC 6666), and the dummy prefix (RFC 9780).
    (
        Ipv6Addr::new(0x0100, 0, 0, 0, 0, 0, 0, 0),
        64,
        IpClass::Reserved,
    ),
    (
        Ipv6Addr::new(0x0100, 0, 0, 1, 0, 0, 0, 0),
        64,
        IpClass::Reserved,
    ),
    (
        Ipv6Addr::new(0x2001, 0x2, 0, 0, 0, 0, 0, 0),
        48,
        IpClass::Benchmarking,
    ),
    // ORCHID and ORCHIDv2: identifiers, never routed (RFC 4843, 7343).
    (
        Ipv6Addr::new(0x2001, 0x10, 0, 0, 0, 0, 0, 0),
        28,
        IpClass::Reserved,
    ),
    (
        Ipv6Addr::new(0x2001, 0x20, 0, 0, 0, 0, 0, 0),
        28,
        IpClass::Reserved,
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        IpClass::Documentation,
    ),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        IpClass::Documentation,
    ),
    // Segment routing SIDs (RFC 9602): meaningful inside one domain only.
    (
        Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0),
        16,
        IpClass::Reserved,
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        IpClass::UniqueLocal,
    ),
    (
        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
        10,
        IpClass::LinkLocal,
    ),
    (
        Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0),
        10,
        IpClass::SiteLocal,
    ),
    (
        Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0),
        8,
        IpClass::Multicast,
    ),
];

/// The IPv4 address a NAT64 address carries, which a translator on the
/// path delivers to: 64:ff9b::/96 (RFC 6052), and 64:ff9b:1::/48
/// (RFC 8215) in its /96 layout, the only one read without guessing.
pub fn nat64(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(ip);
    let high96 = bits >> 32;
    let well_known = high96 == 0x0064_ff9b << 64;
    let local_use = high96 == 0x0064_ff9b_0001 << 48;
    (well_known || local_use).then(|| Ipv4Addr::from(bits as u32))
}

/// `None`: a public address. `Some(class)`: refused by the SSRF guard.
pub fn classify(ip: IpAddr) -> Option<IpClass> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<IpClass> {
    let bits = u32::from(ip);
    let within = |net: Ipv4Addr, len| prefix_match(u32::from(net).into(), bits.into(), 32, len);
    if REACHABLE_V4.iter().any(|&(net, len)| within(net, len)) {
        return None;
    }
    V4.iter()
        .find(|(net, len, _)| prefix_match(u128::from(u32::from(*net)), u128::from(bits), 32, *len))
        .map(|&(_, _, class)| class)
}

fn classify_v6(ip: Ipv6Addr) -> Option<IpClass> {
    let bits = u128::from(ip);
    let within = |net: Ipv6Addr, len| prefix_match(net.into(), bits, 128, len);
    if REACHABLE_V6.iter().any(|&(net, len)| within(net, len)) {
        return None;
    }
    if let Some(&(_, _, class)) = V6
        .iter()
        .find(|(net, len, _)| prefix_match(u128::from(*net), bits, 128, *len))
    {
        return Some(class);
    }
    let low32 = Ipv4Addr::from(bits as u32);
    let high96 = bits >> 32;
    // ::ffff:0:0/96, IPv4-mapped: the kernel sends these as IPv4.
    if high96 == 0xffff {
        return classify_v4(low32);
    }
    // ::/96 (IPv4-compatible, deprecated) and ::ffff:0:0:0/96 (SIIT): outside
    // global unicast, so refused even when the IPv4 address is public.
    if high96 == 0 || high96 == 0xffff_0000 {
        return Some(classify_v4(low32).unwrap_or(IpClass::Reserved));
    }
    if let Some(v4) = nat64(ip) {
        return classify_v4(v4);
    }
    // 64:ff9b:1::/48, local-use NAT64 (RFC 8215), in a layout other than
    // the /96 one [`nat64`] reads: the layout is the operator's choice, and
    // the prefix is not routable on the internet, so it is refused rather
    // than misread.
    if bits >> 80 == 0x0064_ff9b_0001 {
        return Some(IpClass::Reserved);
    }
    // 2002::/16, 6to4: the relay's peer is the IPv4 address in bits 16..48.
    if bits >> 112 == 0x2002 {
        return classify_v4(Ipv4Addr::from((bits >> 80) as u32));
    }
    // 2001::/32, Teredo: server in bits 32..64, client in the last 32 bits,
    // inverted (RFC 4380). Either end may be the target of a crafted address.
    if bits >> 96 == 0x2001_0000 {
        let client = Ipv4Addr::from(!(bits as u32));
        let server = Ipv4Addr::from((bits >> 64) as u32);
        return classify_v4(client).or_else(|| classify_v4(server));
    }
    // 2001::/23, IETF protocol assignments: not globally reachable but
    // for the blocks in [`REACHABLE_V6`] (and Teredo, above).
    if bits >> 105 == 0x2001_0000 >> 9 {
        return Some(IpClass::Reserved);
    }
    // Outside 2000::/3 IANA has allocated nothing for global unicast.
    if bits >> 125 != 0b001 {
        return Some(IpClass::Reserved);
    }
    None
}

/// Whether the first `len` of `width` bits of `addr` equal those of `net`.
fn prefix_match(net: u128, addr: u128, width: u32, len: u8) -> bool {
    let shift = width.saturating_sub(u32::from(len));
    net.checked_shr(shift).unwrap_or(0) == addr.checked_shr(shift).unwrap_or(0)
}

/// Reads `host` the way permissive clients do (`inet_aton`, browser URL
/// parsers), so a policy cannot be dodged by spelling an address as a name:
/// `2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`, `0x7f.1`, a trailing
/// dot, bracketed or bare IPv6 (zone ids dropped). `None` for anything a
/// resolver would have to look up.
pub fn parse_ip_like(host: &str) -> Option<IpAddr> {
    let host = host.trim_matches(|c: char| c.is_ascii_whitespace());
    if let Some(inner) = host.strip_prefix('[') {
        return parse_v6(inner.strip_suffix(']')?).map(IpAddr::V6);
    }
    if host.contains(':') {
        return parse_v6(host).map(IpAddr::V6);
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    parse_v4_like(host).map(IpAddr::V4)
}

fn parse_v6(s: &str) -> Option<Ipv6Addr> {
    let addr = s.split_once('%').map_or(s, |(addr, _zone)| addr);
    addr.parse().ok()
}

/// One to four parts; every part but the last is one byte, the last fills
/// the remaining bytes (`127.1` = 127.0.0.1, `10.1.257` = 10.1.1.1).
fn parse_v4_like(s: &str) -> Option<Ipv4Addr> {
    let mut parts = [0u32; 4];
    let mut count = 0;
    for part in s.split('.') {
        *parts.get_mut(count)? = parse_v4_part(part)?;
        count += 1;
    }
    let (last, leading) = parts[..count].split_last()?;
    if leading.iter().any(|&byte| byte > 0xff) {
        return None;
    }
    let free_bits = 8 * (4 - leading.len() as u32);
    if u64::from(*last) >= 1u64 << free_bits {
        return None;
    }
    let high = leading
        .iter()
        .enumerate()
        .fold(0u32, |acc, (i, &byte)| acc | byte << (24 - 8 * i));
    Some(Ipv4Addr::from(high | last))
}

/// Decimal, `0x` hex (`0x` alone is 0, as inet_aton has it) or leading-zero
/// octal; anything else (signs, `8` in octal, overflow) is not a number.
fn parse_v4_part(part: &str) -> Option<u32> {
    let (digits, radix) =
        if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else if part.is_empty() {
            return None;
        } else {
            (part, 10)
        };
    digits.chars().try_fold(0u32, |acc, c| {
        acc.checked_mul(radix)?.checked_add(c.to_digit(radix)?)
    })
}

#[cfg(test)]
mod tests;
