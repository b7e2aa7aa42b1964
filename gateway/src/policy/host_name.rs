//! A host name in the one form every rule is matched in (network rules,
//! app hosts, credential hosts): a leaf, so the modules that match names
//! share it without depending on one another.

/// A request's SNI or Host in the form rules match: trimmed, port and one
/// trailing dot removed, lowercase; brackets stay, so IPv6 remains
/// recognisable. Resolve this, not the raw Host, for `name_addrs`.
pub fn canonical_name(raw: &str) -> String {
    let trimmed = raw.trim_matches(|c: char| c.is_ascii_whitespace());
    let host = strip_port(trimmed);
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host
            .find(']')
            .and_then(|end| host.get(..=end))
            .unwrap_or(host);
    }
    match host.split_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}
