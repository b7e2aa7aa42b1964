//! Classifies the first bytes a sandbox sends on a steered connection: a TLS
//! ClientHello (and its SNI), an HTTP/1 request (and its Host), or anything
//! else.
//!
//! The sandbox is hostile, so every length is bounds-checked and every
//! ambiguity (two names, a name that is not a DNS name, a hello that does not
//! parse) is `Opaque`: the caller then has no name to trust and falls back to
//! address rules, which for a name-only policy means a refusal. Nothing here
//! does I/O; the caller reads, calls [`sniff`] again while it says
//! [`Sniffed::NeedMore`], and gives up at [`MAX_SNIFF_BYTES`] or its timeout.

use std::net::Ipv6Addr;

/// The most bytes a caller should buffer while sniffing. A prefix this long
/// that is still incomplete is `Opaque`, never `NeedMore`.
pub const MAX_SNIFF_BYTES: usize = 16 * 1024;

/// What the first bytes of a connection are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sniffed {
    /// Not enough bytes yet to tell; read more and call again.
    NeedMore,
    /// A well-formed TLS ClientHello; `sni` is its validated, lowercased
    /// server name, `None` when the hello carries no server_name extension;
    /// `ech` whether it offers Encrypted Client Hello (RFC 9849), whose
    /// inner hello may name another server than `sni` does (real ECH and
    /// the GREASE browsers send look alike, by design).
    Tls { sni: Option<String>, ech: bool },
    /// An HTTP/1 request head; `host` is the validated, lowercased host from
    /// the Host header or the absolute-form target (port and IPv6 brackets
    /// stripped), `None` when the request names no host.
    Http { host: Option<String> },
    /// Anything else, including malformed or ambiguous TLS and HTTP.
    Opaque,
}

/// Classifies `prefix`, the bytes received so far on a connection.
pub fn sniff(prefix: &[u8]) -> Sniffed {
    match prefix.first() {
        None => Sniffed::NeedMore,
        Some(&TLS_HANDSHAKE) => finish(sniff_tls(prefix), prefix.len()),
        Some(_) => finish(sniff_http(prefix), prefix.len()),
    }
}

/// A `NeedMore` that can no longer be satisfied (the caller stops reading at
/// `MAX_SNIFF_BYTES`) becomes `Opaque`.
fn finish(result: Sniffed, len: usize) -> Sniffed {
    if result == Sniffed::NeedMore && len >= MAX_SNIFF_BYTES {
        Sniffed::Opaque
    } else {
        result
    }
}

const TLS_HANDSHAKE: u8 = 0x16;
const TLS_RECORD_HEADER: usize = 5;
/// RFC 8446 §5.1: a plaintext record carries at most 2^14 bytes.
const TLS_MAX_RECORD: usize = 1 << 14;
const HANDSHAKE_CLIENT_HELLO: u8 = 0x01;
const HANDSHAKE_HEADER: usize = 4;
const EXT_SERVER_NAME: u16 = 0x0000;
const EXT_ENCRYPTED_CLIENT_HELLO: u16 = 0xfe0d;
const SNI_HOST_NAME: u8 = 0x00;

fn sniff_tls(prefix: &[u8]) -> Sniffed {
    // Reassemble the handshake stream from consecutive handshake records: a
    // client may split its hello across records (large post-quantum key
    // shares make that common), and nothing else may come before it.
    let mut handshake = Vec::new();
    let mut rest = prefix;
    loop {
        if let Some(outcome) = check_record_header(rest) {
            return outcome;
        }
        if rest.len() < TLS_RECORD_HEADER {
            break;
        }
        let len = usize::from(u16::from_be_bytes([rest[3], rest[4]]));
        let body = &rest[TLS_RECORD_HEADER..];
        let take = len.min(body.len());
        handshake.extend_from_slice(&body[..take]);
        if let Some(outcome) = check_handshake(&handshake) {
            return outcome;
        }
        if take < len {
            break;
        }
        rest = &body[len..];
        if rest.is_empty() {
            break;
        }
    }
    Sniffed::NeedMore
}

/// Validates as much of a record header as `rest` holds: `Some(Opaque)` when
/// it cannot be a handshake record, `None` to go on.
fn check_record_header(rest: &[u8]) -> Option<Sniffed> {
    if rest.first().is_some_and(|&b| b != TLS_HANDSHAKE) {
        return Some(Sniffed::Opaque);
    }
    // Record versions 0x0300 (SSL 3.0 framing, still sent by some stacks in
    // the first record) through 0x0304.
    if rest.get(1).is_some_and(|&b| b != 0x03) || rest.get(2).is_some_and(|&b| b > 0x04) {
        return Some(Sniffed::Opaque);
    }
    if rest.len() >= TLS_RECORD_HEADER {
        let len = usize::from(u16::from_be_bytes([rest[3], rest[4]]));
        if len == 0 || len > TLS_MAX_RECORD {
            return Some(Sniffed::Opaque);
        }
    }
    None
}

/// Looks at the reassembled handshake bytes: `Some` once the ClientHello is
/// complete (or clearly is not one), `None` while more bytes could help.
fn check_handshake(handshake: &[u8]) -> Option<Sniffed> {
    if handshake
        .first()
        .is_some_and(|&b| b != HANDSHAKE_CLIENT_HELLO)
    {
        return Some(Sniffed::Opaque);
    }
    if handshake.len() < HANDSHAKE_HEADER {
        return None;
    }
    let len = usize::from(handshake[1]) << 16
        | usize::from(handshake[2]) << 8
        | usize::from(handshake[3]);
    // A hello that cannot fit in what we are willing to buffer would only
    // make us wait for the timeout.
    if HANDSHAKE_HEADER + len > MAX_SNIFF_BYTES {
        return Some(Sniffed::Opaque);
    }
    let body = handshake.get(HANDSHAKE_HEADER..HANDSHAKE_HEADER + len)?;
    Some(match parse_client_hello(body) {
        Ok((sni, ech)) => Sniffed::Tls { sni, ech },
        Err(Malformed) => Sniffed::Opaque,
    })
}

/// The bytes did not parse (or named something ambiguous or invalid).
struct Malformed;

/// A bounds-checked reader over untrusted bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if n > self.0.len() {
            return Err(Malformed);
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, Malformed> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    /// A vector with a one-byte length prefix.
    fn vec8(&mut self) -> Result<&'a [u8], Malformed> {
        let n = self.u8()?;
        self.take(usize::from(n))
    }
    /// A vector with a two-byte length prefix.
    fn vec16(&mut self) -> Result<Reader<'a>, Malformed> {
        let n = self.u16()?;
        Ok(Reader(self.take(usize::from(n))?))
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Parses a ClientHello body (RFC 8446 §4.1.2) and returns its SNI and
/// whether it offers Encrypted Client Hello.
fn parse_client_hello(body: &[u8]) -> Result<(Option<String>, bool), Malformed> {
    let mut r = Reader(body);
    let legacy_version = r.take(2)?;
    if legacy_version[0] != 0x03 {
        return Err(Malformed);
    }
    r.take(32)?; // random
    if r.vec8()?.len() > 32 {
        return Err(Malformed); // session id
    }
    let suites = r.vec16()?;
    if suites.0.is_empty() || suites.0.len() % 2 != 0 {
        return Err(Malformed);
    }
    if r.vec8()?.is_empty() {
        return Err(Malformed); // compression methods
    }
    if r.is_empty() {
        return Ok((None, false)); // a pre-extensions hello: valid, nameless
    }
    let mut extensions = r.vec16()?;
    if !r.is_empty() {
        return Err(Malformed);
    }
    let mut seen = Vec::new();
    let mut sni = None;
    while !extensions.is_empty() {
        let kind = extensions.u16()?;
        let data = extensions.vec16()?;
        // RFC 8446 §4.2: no extension type may appear twice; for server_name
        // two copies would be two names to choose between.
        if seen.contains(&kind) {
            return Err(Malformed);
        }
        seen.push(kind);
        if kind == EXT_SERVER_NAME {
            sni = Some(parse_server_name(data)?);
        }
    }
    Ok((sni, seen.contains(&EXT_ENCRYPTED_CLIENT_HELLO)))
}

/// Parses a server_name extension (RFC 6066 §3): exactly one host_name.
fn parse_server_name(mut data: Reader<'_>) -> Result<String, Malformed> {
    let mut list = data.vec16()?;
    if !data.is_empty() || list.is_empty() {
        return Err(Malformed);
    }
    let mut name = None;
    while !list.is_empty() {
        // Only host_name is defined; an unknown type has no known layout, and
        // a second host_name is ambiguous.
        if list.u8()? != SNI_HOST_NAME || name.is_some() {
            return Err(Malformed);
        }
        name = Some(list.vec16()?.0);
    }
    let name = name.ok_or(Malformed)?;
    dns_name(name).ok_or(Malformed)
}

/// Lowercases and validates a DNS name: labels of `[a-z0-9-]`, 1..=63 bytes,
/// at most 253 bytes in all, one optional trailing dot (removed).
fn dns_name(raw: &[u8]) -> Option<String> {
    let raw = raw.strip_suffix(b".").unwrap_or(raw);
    if raw.is_empty() || raw.len() > 253 {
        return None;
    }
    let name = raw.to_ascii_lowercase();
    let labels_ok = name.split(|&b| b == b'.').all(|label| {
        (1..=63).contains(&label.len())
            && label
                .iter()
                .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    });
    if !labels_ok {
        return None;
    }
    String::from_utf8(name).ok()
}

/// The longest method we wait for before deciding the bytes are not HTTP.
const MAX_METHOD_LEN: usize = 32;
/// httparse needs a fixed header array; more headers than this is Opaque.
const MAX_HEADERS: usize = 128;

fn sniff_http(prefix: &[u8]) -> Sniffed {
    // Registered methods are uppercase letters and '-'; checking the method
    // byte by byte lets garbage be refused at once instead of at the timeout.
    let method_len = prefix
        .iter()
        .position(|&b| !(b.is_ascii_uppercase() || b == b'-' || b == b'_'))
        .unwrap_or(prefix.len());
    if method_len > MAX_METHOD_LEN || (method_len == 0 && !prefix.is_empty()) {
        return Sniffed::Opaque;
    }
    match prefix.get(method_len) {
        None => return Sniffed::NeedMore,
        Some(b' ') => {}
        Some(_) => return Sniffed::Opaque,
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(prefix) {
        Ok(httparse::Status::Partial) => Sniffed::NeedMore,
        Ok(httparse::Status::Complete(_)) => match http_host(&request) {
            Ok(host) => Sniffed::Http { host },
            Err(Malformed) => Sniffed::Opaque,
        },
        Err(_) => Sniffed::Opaque,
    }
}

/// The host a parsed request names, reconciling the Host header with an
/// absolute-form (or CONNECT authority-form) target.
fn http_host(request: &httparse::Request<'_, '_>) -> Result<Option<String>, Malformed> {
    let mut hosts = request
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("host"));
    let header = hosts.next();
    if hosts.next().is_some() {
        return Err(Malformed); // which one would the upstream use?
    }
    let header = match header {
        // RFC 9112 §3.2: an empty Host means the target has no authority.
        Some(h) if h.value.is_empty() => None,
        Some(h) => Some(authority_host(h.value)?),
        None => None,
    };
    let target = request.path.ok_or(Malformed)?;
    let from_target = if request.method == Some("CONNECT") {
        Some(authority_host(target.as_bytes())?)
    } else if target.starts_with('/') || target == "*" {
        None
    } else {
        Some(absolute_form_host(target)?)
    };
    match (header, from_target) {
        (Some(a), Some(b)) if a != b => Err(Malformed),
        (a, b) => Ok(a.or(b)),
    }
}

/// The host of an absolute-form target `scheme://authority[/path...]`.
fn absolute_form_host(target: &str) -> Result<String, Malformed> {
    let (scheme, rest) = target.split_once("://").ok_or(Malformed)?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Err(Malformed);
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    authority_host(&rest.as_bytes()[..end])
}

/// A port after `host:`. The URI grammar allows it to be empty.
fn valid_port(port: &[u8]) -> bool {
    port.is_empty()
        || (port.len() <= 5
            && port.iter().all(u8::is_ascii_digit)
            && std::str::from_utf8(port).is_ok_and(|p| p.parse::<u16>().is_ok()))
}

/// The host of `host[:port]` or `[v6][:port]`, validated and lowercased.
/// Userinfo (`user@host`) is refused: it is the classic way to make a URL
/// read as one host and connect to another.
fn authority_host(authority: &[u8]) -> Result<String, Malformed> {
    if authority.contains(&b'@') {
        return Err(Malformed);
    }
    let (host, port) = if let Some(rest) = authority.strip_prefix(b"[") {
        let close = rest.iter().position(|&b| b == b']').ok_or(Malformed)?;
        let literal = std::str::from_utf8(&rest[..close]).map_err(|_| Malformed)?;
        let ip: Ipv6Addr = literal.parse().map_err(|_| Malformed)?;
        let after = &rest[close + 1..];
        let port = match after.split_first() {
            None => None,
            Some((b':', port)) => Some(port),
            Some(_) => return Err(Malformed),
        };
        (ip.to_string(), port)
    } else {
        let (host, port) = match authority.iter().position(|&b| b == b':') {
            Some(i) => (&authority[..i], Some(&authority[i + 1..])),
            None => (authority, None),
        };
        (dns_name(host).ok_or(Malformed)?, port)
    };
    if !port.is_none_or(valid_port) {
        return Err(Malformed);
    }
    Ok(host)
}

#[cfg(test)]
mod tests;
