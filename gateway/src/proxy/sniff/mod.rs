//! Classifies the first bytes a sandbox sends on a steered connection: a TLS
//! ClientHello (and its SNI), an HTTP/1 request head (and its Host), or
//! bytes that cannot be read as either, with the reason.
//!
//! The sandbox is hostile, so every length is bounds-checked and every
//! ambiguity (two names, a name that is not a DNS name, a hello that does not
//! parse, a head that could be read two ways) is [`Sniffed::Unreadable`]:
//! wherever the policy would read these bytes, the caller refuses them (a 400
//! where they are recognisably HTTP, a reset otherwise), and it relays bytes
//! unread only where nothing in the policy reads them. Nothing here does
//! I/O; the caller reads, calls [`sniff`] again while it says
//! [`Sniffed::NeedMore`], and gives up at [`MAX_SNIFF_BYTES`] or its timeout
//! ([`Unreadable::cut_short`]).

mod read;

use std::net::Ipv6Addr;

pub use read::first_bytes;

/// The largest ClientHello (handshake message, header included) reassembled
/// before judging. Post-quantum key shares make hellos of a few KiB common;
/// anything past this is refused, never relayed (`tls_hello_too_large`).
pub const MAX_CLIENT_HELLO: usize = 64 * 1024;

/// The most bytes a caller should buffer while sniffing: a largest hello in
/// full records with room for their headers. A prefix this long that is
/// still incomplete is unreadable, never `NeedMore`; so is an HTTP head.
pub const MAX_SNIFF_BYTES: usize = MAX_CLIENT_HELLO + 1024;

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
    /// Not a complete, well-formed ClientHello or request head.
    Unreadable(Unreadable),
}

/// Why the first bytes cannot be read. Each is a stable label for metrics
/// and audit events ([`Unreadable::as_str`]); the `Http*` ones are
/// recognisably an HTTP/1 request, so a refusal can say why in a 400.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// More than one `Host` header (RFC 9112 §3.2: answer 400).
    HttpDuplicateHost,
    /// A `Host` (or target authority) that is not a host: not a DNS name,
    /// a bad port, a bad IPv6 literal.
    HttpBadHost,
    /// Userinfo in the `Host` or the target (`user@host`): reads as one
    /// host and connects to another.
    HttpUserinfo,
    /// An absolute-form or CONNECT target naming another host than `Host`.
    HttpHostMismatch,
    /// A header continued on the next line (obs-fold, RFC 9112 §5.2):
    /// servers disagree on what it means.
    HttpObsFold,
    /// A request line or header that does not parse.
    HttpMalformed,
    /// A head that does not end within [`MAX_SNIFF_BYTES`].
    HttpHeadTooLarge,
    /// A head cut short by the sniff timeout or the client's end.
    HttpIncomplete,
    /// HTTP/2 with prior knowledge over plain TCP: not read here.
    Http2Preface,
    /// Bytes that start like TLS but are not a well-formed ClientHello.
    TlsMalformed,
    /// A server_name that is not a DNS name (an underscore, an empty
    /// label, two names).
    TlsBadServerName,
    /// A ClientHello larger than [`MAX_CLIENT_HELLO`].
    TlsHelloTooLarge,
    /// A ClientHello cut short by the sniff timeout or the client's end.
    TlsIncomplete,
    /// Nothing at all before the sniff timeout.
    Silent,
    /// Neither TLS nor HTTP/1.
    Unrecognised,
}

impl Unreadable {
    pub fn as_str(self) -> &'static str {
        match self {
            Unreadable::HttpDuplicateHost => "http_duplicate_host",
            Unreadable::HttpBadHost => "http_bad_host",
            Unreadable::HttpUserinfo => "http_userinfo",
            Unreadable::HttpHostMismatch => "http_host_mismatch",
            Unreadable::HttpObsFold => "http_obs_fold",
            Unreadable::HttpMalformed => "http_malformed",
            Unreadable::HttpHeadTooLarge => "http_head_too_large",
            Unreadable::HttpIncomplete => "http_incomplete",
            Unreadable::Http2Preface => "http2_prior_knowledge",
            Unreadable::TlsMalformed => "tls_malformed",
            Unreadable::TlsBadServerName => "tls_bad_server_name",
            Unreadable::TlsHelloTooLarge => "tls_hello_too_large",
            Unreadable::TlsIncomplete => "tls_incomplete",
            Unreadable::Silent => "sniff_timeout",
            Unreadable::Unrecognised => "unrecognised_protocol",
        }
    }

    /// Recognisably an HTTP/1 request: refused with a 400 that says why.
    pub fn is_http(self) -> bool {
        matches!(
            self,
            Unreadable::HttpDuplicateHost
                | Unreadable::HttpBadHost
                | Unreadable::HttpUserinfo
                | Unreadable::HttpHostMismatch
                | Unreadable::HttpObsFold
                | Unreadable::HttpMalformed
                | Unreadable::HttpHeadTooLarge
                | Unreadable::HttpIncomplete
        )
    }

    /// Why `prefix`, which [`sniff`] still called [`Sniffed::NeedMore`],
    /// cannot be read once no more bytes will come (the sniff timeout, or
    /// the client's end of stream).
    pub fn cut_short(prefix: &[u8]) -> Unreadable {
        match prefix.first() {
            None => Unreadable::Silent,
            Some(&TLS_HANDSHAKE) => Unreadable::TlsIncomplete,
            Some(_) => Unreadable::HttpIncomplete,
        }
    }
}

/// Classifies `prefix`, the bytes received so far on a connection.
pub fn sniff(prefix: &[u8]) -> Sniffed {
    let result = match prefix.first() {
        None => return Sniffed::NeedMore,
        Some(&TLS_HANDSHAKE) => sniff_tls(prefix),
        Some(_) => sniff_http(prefix),
    };
    // A `NeedMore` that can no longer be satisfied (the caller stops
    // reading at `MAX_SNIFF_BYTES`) is unreadable.
    match result {
        Sniffed::NeedMore if prefix.len() >= MAX_SNIFF_BYTES => {
            Sniffed::Unreadable(match prefix[0] {
                TLS_HANDSHAKE => Unreadable::TlsHelloTooLarge,
                _ => Unreadable::HttpHeadTooLarge,
            })
        }
        other => other,
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
    match client_hello(prefix) {
        Ok(Some(hello)) => match parse_client_hello(&hello) {
            Ok((sni, ech)) => Sniffed::Tls { sni, ech },
            Err(why) => Sniffed::Unreadable(why),
        },
        Ok(None) => Sniffed::NeedMore,
        Err(why) => Sniffed::Unreadable(why),
    }
}

/// The ClientHello body, reassembled from consecutive handshake records (a
/// client may split its hello across records, and large post-quantum key
/// shares make that common; nothing else may come before it), once all of
/// it is there: `Ok(None)` while more bytes could complete it. The records
/// are walked without copying until the hello is complete, so a hello sent
/// a few bytes at a time costs a walk over its record headers per read,
/// not a copy of everything so far.
fn client_hello(prefix: &[u8]) -> Result<Option<Vec<u8>>, Unreadable> {
    // The handshake bytes of each record, in order.
    let mut spans: Vec<&[u8]> = Vec::new();
    let mut have = 0;
    let mut need = None;
    let mut rest = prefix;
    loop {
        check_record_header(rest)?;
        if rest.len() < TLS_RECORD_HEADER {
            return Ok(None);
        }
        let len = usize::from(u16::from_be_bytes([rest[3], rest[4]]));
        let body = &rest[TLS_RECORD_HEADER..];
        let take = len.min(body.len());
        spans.push(&body[..take]);
        have += take;
        // Judged where the walk first has the handshake type, not where the
        // data happened to end: the answer must not depend on how the
        // sandbox cut its bytes.
        if have > 0 && first_byte(&spans) != HANDSHAKE_CLIENT_HELLO {
            return Err(Unreadable::TlsMalformed);
        }
        if need.is_none() && have >= HANDSHAKE_HEADER {
            need = Some(hello_len(&gather(&spans, HANDSHAKE_HEADER))?);
        }
        if let Some(need) = need
            && have >= need
        {
            let hello = gather(&spans, need);
            return Ok(Some(hello[HANDSHAKE_HEADER..].to_vec()));
        }
        if take < len || body.len() == len {
            // Within a record, or at the end of what arrived: read more.
            return Ok(None);
        }
        rest = &body[len..];
    }
}

/// The first byte of the handshake stream `spans` holds (at least one).
fn first_byte(spans: &[&[u8]]) -> u8 {
    spans
        .iter()
        .find_map(|span| span.first().copied())
        .unwrap_or_default()
}

/// The first `n` bytes of the handshake stream `spans` holds.
fn gather(spans: &[&[u8]], n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n);
    for span in spans {
        let room = n - out.len();
        out.extend_from_slice(&span[..room.min(span.len())]);
        if out.len() == n {
            break;
        }
    }
    out
}

/// From the handshake header: the whole ClientHello message's length.
fn hello_len(header: &[u8]) -> Result<usize, Unreadable> {
    if header[0] != HANDSHAKE_CLIENT_HELLO {
        return Err(Unreadable::TlsMalformed);
    }
    let len = usize::from(header[1]) << 16 | usize::from(header[2]) << 8 | usize::from(header[3]);
    if len == 0 {
        return Err(Unreadable::TlsMalformed);
    }
    // A hello that cannot fit in what we are willing to buffer would only
    // make us wait for the timeout.
    if HANDSHAKE_HEADER + len > MAX_CLIENT_HELLO {
        return Err(Unreadable::TlsHelloTooLarge);
    }
    Ok(HANDSHAKE_HEADER + len)
}

/// Validates as much of a record header as `rest` holds: an error when it
/// cannot be a handshake record.
fn check_record_header(rest: &[u8]) -> Result<(), Unreadable> {
    if rest.first().is_some_and(|&b| b != TLS_HANDSHAKE) {
        return Err(Unreadable::TlsMalformed);
    }
    // Record versions 0x0300 (SSL 3.0 framing, still sent by some stacks in
    // the first record) through 0x0304.
    if rest.get(1).is_some_and(|&b| b != 0x03) || rest.get(2).is_some_and(|&b| b > 0x04) {
        return Err(Unreadable::TlsMalformed);
    }
    if rest.len() >= TLS_RECORD_HEADER {
        let len = usize::from(u16::from_be_bytes([rest[3], rest[4]]));
        if len == 0 || len > TLS_MAX_RECORD {
            return Err(Unreadable::TlsMalformed);
        }
    }
    Ok(())
}

/// A bounds-checked reader over untrusted bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Unreadable> {
        if n > self.0.len() {
            return Err(Unreadable::TlsMalformed);
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, Unreadable> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, Unreadable> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    /// A vector with a one-byte length prefix.
    fn vec8(&mut self) -> Result<&'a [u8], Unreadable> {
        let n = self.u8()?;
        self.take(usize::from(n))
    }
    /// A vector with a two-byte length prefix.
    fn vec16(&mut self) -> Result<Reader<'a>, Unreadable> {
        let n = self.u16()?;
        Ok(Reader(self.take(usize::from(n))?))
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Parses a ClientHello body (RFC 8446 §4.1.2) and returns its SNI and
/// whether it offers Encrypted Client Hello.
fn parse_client_hello(body: &[u8]) -> Result<(Option<String>, bool), Unreadable> {
    let mut r = Reader(body);
    let legacy_version = r.take(2)?;
    if legacy_version[0] != 0x03 {
        return Err(Unreadable::TlsMalformed);
    }
    r.take(32)?; // random
    if r.vec8()?.len() > 32 {
        return Err(Unreadable::TlsMalformed); // session id
    }
    let suites = r.vec16()?;
    if suites.0.is_empty() || suites.0.len() % 2 != 0 {
        return Err(Unreadable::TlsMalformed);
    }
    if r.vec8()?.is_empty() {
        return Err(Unreadable::TlsMalformed); // compression methods
    }
    if r.is_empty() {
        return Ok((None, false)); // a pre-extensions hello: valid, nameless
    }
    let mut extensions = r.vec16()?;
    if !r.is_empty() {
        return Err(Unreadable::TlsMalformed);
    }
    let mut seen = Vec::new();
    let mut sni = None;
    while !extensions.is_empty() {
        let kind = extensions.u16()?;
        let data = extensions.vec16()?;
        // RFC 8446 §4.2: no extension type may appear twice; for server_name
        // two copies would be two names to choose between.
        if seen.contains(&kind) {
            return Err(match kind {
                EXT_SERVER_NAME => Unreadable::TlsBadServerName,
                _ => Unreadable::TlsMalformed,
            });
        }
        seen.push(kind);
        if kind == EXT_SERVER_NAME {
            sni = Some(parse_server_name(data)?);
        }
    }
    Ok((sni, seen.contains(&EXT_ENCRYPTED_CLIENT_HELLO)))
}

/// Parses a server_name extension (RFC 6066 §3): exactly one host_name.
fn parse_server_name(mut data: Reader<'_>) -> Result<String, Unreadable> {
    let mut list = data.vec16()?;
    if !data.is_empty() || list.is_empty() {
        return Err(Unreadable::TlsMalformed);
    }
    let mut name = None;
    while !list.is_empty() {
        // Only host_name is defined; an unknown type has no known layout, and
        // a second host_name is ambiguous.
        if list.u8()? != SNI_HOST_NAME || name.is_some() {
            return Err(Unreadable::TlsBadServerName);
        }
        name = Some(list.vec16()?.0);
    }
    let name = name.ok_or(Unreadable::TlsBadServerName)?;
    dns_name(name).ok_or(Unreadable::TlsBadServerName)
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
/// httparse needs a fixed header array; a head with more is malformed.
const MAX_HEADERS: usize = 128;
/// What HTTP/2 with prior knowledge starts with (RFC 9113 §3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n";

fn sniff_http(prefix: &[u8]) -> Sniffed {
    // Registered methods are uppercase letters and '-'; checking the method
    // byte by byte lets garbage be refused at once instead of at the timeout.
    let method_len = prefix
        .iter()
        .position(|&b| !(b.is_ascii_uppercase() || b == b'-' || b == b'_'))
        .unwrap_or(prefix.len());
    if method_len > MAX_METHOD_LEN || (method_len == 0 && !prefix.is_empty()) {
        return Sniffed::Unreadable(Unreadable::Unrecognised);
    }
    match prefix.get(method_len) {
        None => return Sniffed::NeedMore,
        Some(b' ') => {}
        Some(_) => return Sniffed::Unreadable(Unreadable::Unrecognised),
    }
    if prefix.starts_with(H2_PREFACE) {
        return Sniffed::Unreadable(Unreadable::Http2Preface);
    }
    // Judged only once the head is whole: httparse would take a head cut
    // at a line end for one whose next line is not a continuation.
    let Some(end) = head_end(prefix) else {
        return Sniffed::NeedMore;
    };
    let head = &prefix[..end];
    if obs_fold(head) {
        return Sniffed::Unreadable(Unreadable::HttpObsFold);
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(head) {
        Ok(httparse::Status::Complete(_)) => match http_host(&request) {
            Ok(host) => Sniffed::Http { host },
            Err(why) => Sniffed::Unreadable(why),
        },
        Ok(httparse::Status::Partial) | Err(_) => Sniffed::Unreadable(Unreadable::HttpMalformed),
    }
}

/// Where the head ends (after its empty line; bare LF line ends count, as
/// httparse and hyper read them), if it has ended.
fn head_end(prefix: &[u8]) -> Option<usize> {
    let lf = memchr::memmem::find_iter(prefix, b"\n").find(|&i| {
        let next = &prefix[i + 1..];
        next.starts_with(b"\n") || next.starts_with(b"\r\n")
    })?;
    Some(if prefix[lf + 1] == b'\n' {
        lf + 2
    } else {
        lf + 3
    })
}

/// Whether a header line of `head` is continued on the next (a line that
/// starts with a space or tab, after the request line).
fn obs_fold(head: &[u8]) -> bool {
    memchr::memchr_iter(b'\n', head).any(|i| matches!(head.get(i + 1), Some(b' ' | b'\t')))
}

/// The host a parsed request names, reconciling the Host header with an
/// absolute-form (or CONNECT authority-form) target.
fn http_host(request: &httparse::Request<'_, '_>) -> Result<Option<String>, Unreadable> {
    let mut hosts = request
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("host"));
    let header = hosts.next();
    if hosts.next().is_some() {
        return Err(Unreadable::HttpDuplicateHost); // which one would the upstream use?
    }
    let header = match header {
        // RFC 9112 §3.2: an empty Host means the target has no authority.
        Some(h) if h.value.is_empty() => None,
        Some(h) => Some(authority_host(h.value)?),
        None => None,
    };
    let target = request.path.ok_or(Unreadable::HttpMalformed)?;
    let from_target = if request.method == Some("CONNECT") {
        Some(authority_host(target.as_bytes())?)
    } else if target.starts_with('/') || target == "*" {
        None
    } else {
        Some(absolute_form_host(target)?)
    };
    match (header, from_target) {
        (Some(a), Some(b)) if a != b => Err(Unreadable::HttpHostMismatch),
        (a, b) => Ok(a.or(b)),
    }
}

/// The host of an absolute-form target `scheme://authority[/path...]`.
fn absolute_form_host(target: &str) -> Result<String, Unreadable> {
    let (scheme, rest) = target.split_once("://").ok_or(Unreadable::HttpMalformed)?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Err(Unreadable::HttpMalformed);
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
fn authority_host(authority: &[u8]) -> Result<String, Unreadable> {
    if authority.contains(&b'@') {
        return Err(Unreadable::HttpUserinfo);
    }
    let bad = Unreadable::HttpBadHost;
    let (host, port) = if let Some(rest) = authority.strip_prefix(b"[") {
        let close = rest.iter().position(|&b| b == b']').ok_or(bad)?;
        let literal = std::str::from_utf8(&rest[..close]).map_err(|_| bad)?;
        let ip: Ipv6Addr = literal.parse().map_err(|_| bad)?;
        let after = &rest[close + 1..];
        let port = match after.split_first() {
            None => None,
            Some((b':', port)) => Some(port),
            Some(_) => return Err(bad),
        };
        (ip.to_string(), port)
    } else {
        let (host, port) = match authority.iter().position(|&b| b == b':') {
            Some(i) => (&authority[..i], Some(&authority[i + 1..])),
            None => (authority, None),
        };
        (dns_name(host).ok_or(bad)?, port)
    };
    if !port.is_none_or(valid_port) {
        return Err(bad);
    }
    Ok(host)
}

#[cfg(test)]
mod tests;
