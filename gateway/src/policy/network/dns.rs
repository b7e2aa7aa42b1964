//! The DNS section of a network policy: the limits the DNS listener
//! enforces per sandbox, compiled and checked once.

use super::*;

/// The DNS listener's limits for one policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DnsLimits {
    pub denied_answer: raw::DeniedAnswer,
    pub max_queries_per_second: u32,
    pub max_label_length: usize,
    pub max_name_length: usize,
    pub max_unique_subdomains_per_minute: u32,
    /// Record type codes refused outright; derefs to a sorted `&[u16]`.
    pub refused_types: RecordTypes,
    /// `resolve_unlisted`: names no rule names are resolved (and audited)
    /// rather than answered `denied_answer` (see [`NameDecision`]).
    pub resolve_unlisted: bool,
    /// The unique-name cap for the names `resolve_unlisted` resolves: the
    /// lower of `max_unique_unlisted_per_minute` and
    /// `max_unique_subdomains_per_minute`.
    pub max_unique_unlisted_per_minute: u32,
}

impl DnsLimits {
    /// Whether queries of this record type code are refused outright.
    pub fn refuses(&self, qtype: u16) -> bool {
        self.refused_types.contains(qtype)
    }
}

/// A small sorted set of DNS record type codes, `Copy` so limits can be
/// handed around freely. Derefs to the sorted codes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordTypes {
    codes: [u16; MAX_REFUSED_TYPES],
    len: usize,
}

impl RecordTypes {
    pub fn contains(&self, code: u16) -> bool {
        self.as_slice().binary_search(&code).is_ok()
    }

    pub fn as_slice(&self) -> &[u16] {
        self.codes.get(..self.len).unwrap_or_default()
    }

    /// False when the set is full; a code already present is not an error.
    fn insert(&mut self, code: u16) -> bool {
        let Err(at) = self.as_slice().binary_search(&code) else {
            return true;
        };
        if self.len == MAX_REFUSED_TYPES {
            return false;
        }
        self.codes.copy_within(at..self.len, at + 1);
        self.codes[at] = code;
        self.len += 1;
        true
    }
}

impl Deref for RecordTypes {
    type Target = [u16];

    fn deref(&self) -> &[u16] {
        self.as_slice()
    }
}

pub(super) fn compile_dns(dns: &raw::Dns, errors: &mut Vec<CompileError>) -> DnsLimits {
    let mut refused_types = RecordTypes::default();
    for (index, name) in dns.refuse_types.iter().enumerate() {
        let path = format!("network.dns.refuse_types[{index}]");
        match record_type(name) {
            Some(code) if refused_types.insert(code) => {}
            Some(_) => errors.push(
                Problem::new(
                    format!("more than {MAX_REFUSED_TYPES} record types"),
                    "refuse only the types tunnels use",
                )
                .at(path),
            ),
            None => errors.push(
                Problem::new(
                    format!("unknown record type `{name}`"),
                    "write a type name such as TXT, or TYPE<number> for others",
                )
                .at(path),
            ),
        }
    }
    let mut bound = |field: &str, value: u64, max: u64, hint: &str| {
        if value == 0 || value > max {
            let message = format!("{value} is outside 1-{max}");
            errors.push(Problem::new(message, hint).at(format!("network.dns.{field}")));
        }
    };
    let zero_refuses = "0 would refuse every query";
    bound(
        "max_queries_per_second",
        u64::from(dns.max_queries_per_second),
        u64::from(u32::MAX),
        zero_refuses,
    );
    bound(
        "max_label_length",
        dns.max_label_length as u64,
        63,
        "DNS labels are at most 63 bytes",
    );
    bound(
        "max_name_length",
        dns.max_name_length as u64,
        253,
        "DNS names are at most 253 characters",
    );
    bound(
        "max_unique_subdomains_per_minute",
        u64::from(dns.max_unique_subdomains_per_minute),
        u64::from(u32::MAX),
        zero_refuses,
    );
    bound(
        "max_unique_unlisted_per_minute",
        u64::from(dns.max_unique_unlisted_per_minute),
        u64::from(u32::MAX),
        "0 would refuse every name resolve_unlisted resolves; leave resolve_unlisted false instead",
    );
    DnsLimits {
        denied_answer: dns.denied_answer,
        max_queries_per_second: dns.max_queries_per_second,
        max_label_length: dns.max_label_length,
        max_name_length: dns.max_name_length,
        max_unique_subdomains_per_minute: dns.max_unique_subdomains_per_minute,
        refused_types,
        resolve_unlisted: dns.resolve_unlisted,
        max_unique_unlisted_per_minute: dns
            .max_unique_unlisted_per_minute
            .min(dns.max_unique_subdomains_per_minute),
    }
}

/// Record type codes by name (IANA DNS parameters), plus RFC 3597's
/// `TYPE<number>` for the rest.
pub(super) fn record_type(name: &str) -> Option<u16> {
    const NAMED: &[(&str, u16)] = &[
        ("A", 1),
        ("NS", 2),
        ("CNAME", 5),
        ("SOA", 6),
        ("MB", 7),
        ("MG", 8),
        ("MR", 9),
        ("NULL", 10),
        ("WKS", 11),
        ("PTR", 12),
        ("HINFO", 13),
        ("MINFO", 14),
        ("MX", 15),
        ("TXT", 16),
        ("RP", 17),
        ("AFSDB", 18),
        ("SIG", 24),
        ("KEY", 25),
        ("AAAA", 28),
        ("LOC", 29),
        ("SRV", 33),
        ("NAPTR", 35),
        ("KX", 36),
        ("CERT", 37),
        ("DNAME", 39),
        ("APL", 42),
        ("DS", 43),
        ("SSHFP", 44),
        ("IPSECKEY", 45),
        ("RRSIG", 46),
        ("NSEC", 47),
        ("DNSKEY", 48),
        ("DHCID", 49),
        ("NSEC3", 50),
        ("NSEC3PARAM", 51),
        ("TLSA", 52),
        ("SMIMEA", 53),
        ("HIP", 55),
        ("CDS", 59),
        ("CDNSKEY", 60),
        ("OPENPGPKEY", 61),
        ("CSYNC", 62),
        ("ZONEMD", 63),
        ("SVCB", 64),
        ("HTTPS", 65),
        ("SPF", 99),
        ("EUI48", 108),
        ("EUI64", 109),
        ("TKEY", 249),
        ("TSIG", 250),
        ("IXFR", 251),
        ("AXFR", 252),
        ("MAILB", 253),
        ("MAILA", 254),
        ("ANY", 255),
        ("URI", 256),
        ("CAA", 257),
    ];
    if let Some(&(_, code)) = NAMED
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(name))
    {
        return Some(code);
    }
    let number = name
        .get(..4)
        .filter(|prefix| prefix.eq_ignore_ascii_case("TYPE"))?;
    let digits = name.get(number.len()..)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}
