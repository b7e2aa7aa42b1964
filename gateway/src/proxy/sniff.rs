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
    /// server name, `None` when the hello carries no server_name extension.
    Tls { sni: Option<String> },
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
        Ok(sni) => Sniffed::Tls { sni },
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

/// Parses a ClientHello body (RFC 8446 §4.1.2) and returns its SNI.
fn parse_client_hello(body: &[u8]) -> Result<Option<String>, Malformed> {
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
        return Ok(None); // a pre-extensions hello: valid, nameless
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
    Ok(sni)
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
mod tests {
    use super::*;

    /// A ClientHello captured from `openssl s_client -servername Example.COM`
    /// (OpenSSL 3.0), one record.
    const OPENSSL_HELLO: &str = "160301013801000134030343043eb9766ae35a95656791a689284c1893a75afaa3b07c6be329d84e4890c4203eb7beb9b60417a2063504850cec0a14b6062ec336c64ee53e5d17385b2ec8e6003e130213031301c02cc030009fcca9cca8ccaac02bc02f009ec024c028006bc023c0270067c00ac0140039c009c0130033009d009c003d003c0035002f00ff010000ad00000010000e00000b4578616d706c652e434f4d000b000403000102000a00160014001d0017001e0019001801000101010201030104002300000016000000170000000d002a0028040305030603080708080809080a080b080408050806040105010601030303010302040205020602002b0009080304030303020301002d00020101003300260024001d002097ca4b11f25db67a8372db4e5cf8a6da86aa4c777ec2b1a0210145805849d71a";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    fn vec16(body: &[u8]) -> Vec<u8> {
        let mut out = u16::try_from(body.len())
            .expect("fits")
            .to_be_bytes()
            .to_vec();
        out.extend_from_slice(body);
        out
    }

    /// A server_name extension listing `(name_type, name)` entries.
    fn sni_ext(names: &[(u8, &[u8])]) -> Vec<u8> {
        let mut list = Vec::new();
        for (kind, name) in names {
            list.push(*kind);
            list.extend(vec16(name));
        }
        let mut ext = vec![0x00, 0x00];
        ext.extend(vec16(&vec16(&list)));
        ext
    }

    /// A ClientHello handshake message with the given extension bytes
    /// (`None`: no extensions block at all).
    fn hello(extensions: Option<Vec<u8>>) -> Vec<u8> {
        let mut body = vec![0x03, 0x03];
        body.extend([7u8; 32]); // random
        body.push(0); // session id
        body.extend(vec16(&[0x13, 0x01])); // one suite
        body.extend([1, 0]); // null compression
        if let Some(ext) = extensions {
            body.extend(vec16(&ext));
        }
        let len = u32::try_from(body.len()).expect("fits").to_be_bytes();
        let mut msg = vec![HANDSHAKE_CLIENT_HELLO, len[1], len[2], len[3]];
        msg.extend(body);
        msg
    }

    /// Wraps a handshake stream in records of at most `chunk` bytes.
    fn records(handshake: &[u8], chunk: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for piece in handshake.chunks(chunk) {
            out.extend([TLS_HANDSHAKE, 0x03, 0x01]);
            out.extend(vec16(piece));
        }
        out
    }

    /// A one-record hello whose server_name lists `names`.
    fn named(names: &[(u8, &[u8])]) -> Vec<u8> {
        records(&hello(Some(sni_ext(names))), 1 << 14)
    }

    fn with_sni(name: &[u8]) -> Vec<u8> {
        named(&[(0, name)])
    }

    fn tls(sni: Option<&str>) -> Sniffed {
        Sniffed::Tls {
            sni: sni.map(str::to_owned),
        }
    }

    fn http(host: Option<&str>) -> Sniffed {
        Sniffed::Http {
            host: host.map(str::to_owned),
        }
    }

    #[test]
    fn tls_table() {
        let real = hex(OPENSSL_HELLO);
        let split_hello = records(&hello(Some(sni_ext(&[(0, b"a.test")]))), 7);
        let mut dup_ext = sni_ext(&[(0, b"a.test")]);
        dup_ext.extend(sni_ext(&[(0, b"b.test")]));
        let ems = vec![0x00, 0x17, 0x00, 0x00]; // extended_master_secret
        let mut ems_then_sni = ems.clone();
        ems_then_sni.extend(sni_ext(&[(0, b"x.test")]));
        let mut trailing = with_sni(b"a.test");
        trailing.extend(b"more bytes after the hello");
        let mut alert_between = records(&hello(Some(sni_ext(&[(0, b"a.test")]))), 20);
        alert_between.truncate(25);
        alert_between.extend([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]);
        let mut huge = vec![
            TLS_HANDSHAKE,
            0x03,
            0x01,
            0x40,
            0x00,
            0x01,
            0x01,
            0x00,
            0x00,
        ];
        huge.extend([0u8; 100]);

        #[rustfmt::skip]
        let cases: Vec<(&str, Vec<u8>, Sniffed)> = vec![
            ("openssl hello, lowercased sni", real.clone(), tls(Some("example.com"))),
            ("openssl hello cut short", real[..100].to_vec(), Sniffed::NeedMore),
            ("record header only", real[..5].to_vec(), Sniffed::NeedMore),
            ("first byte only", vec![TLS_HANDSHAKE], Sniffed::NeedMore),
            ("hello over many records", split_hello.clone(), tls(Some("a.test"))),
            ("split hello, first records", split_hello[..30].to_vec(), Sniffed::NeedMore),
            ("no extensions block", records(&hello(None), 999), tls(None)),
            ("extensions without sni", records(&hello(Some(ems)), 999), tls(None)),
            ("sni after another extension", records(&hello(Some(ems_then_sni)), 999), tls(Some("x.test"))),
            ("trailing dot removed", with_sni(b"a.test."), tls(Some("a.test"))),
            ("bytes after the hello ignored", trailing, tls(Some("a.test"))),
            ("underscore in sni", with_sni(b"a_b.test"), Sniffed::Opaque),
            ("empty label in sni", with_sni(b"a..test"), Sniffed::Opaque),
            ("empty sni", with_sni(b""), Sniffed::Opaque),
            ("just a dot", with_sni(b"."), Sniffed::Opaque),
            ("nul in sni", with_sni(b"a.test\0.evil"), Sniffed::Opaque),
            ("non-ascii sni", with_sni("é.test".as_bytes()), Sniffed::Opaque),
            ("label too long", with_sni(&[b'a'; 64]), Sniffed::Opaque),
            ("two host names", named(&[(0, b"a.test"), (0, b"b.test")]), Sniffed::Opaque),
            ("unknown name type", named(&[(1, b"a.test")]), Sniffed::Opaque),
            ("duplicate sni extension", records(&hello(Some(dup_ext)), 999), Sniffed::Opaque),
            ("alert between records", alert_between, Sniffed::Opaque),
            ("not a client hello", records(&[0x02, 0, 0, 1, 0], 99), Sniffed::Opaque),
            ("bad record version", vec![TLS_HANDSHAKE, 0x02], Sniffed::Opaque),
            ("tls 1.5 record", vec![TLS_HANDSHAKE, 0x03, 0x05], Sniffed::Opaque),
            ("oversized record", vec![TLS_HANDSHAKE, 0x03, 0x01, 0x40, 0x01], Sniffed::Opaque),
            ("empty record", vec![TLS_HANDSHAKE, 0x03, 0x01, 0x00, 0x00], Sniffed::Opaque),
            ("hello longer than we buffer", huge, Sniffed::Opaque),
            ("hello length lies short", records(&[1, 0, 0, 3, 3, 3, 0], 99), Sniffed::Opaque),
            ("zero-length hello", records(&[1, 0, 0, 0], 99), Sniffed::Opaque),
        ];
        for (name, input, want) in cases {
            assert_eq!(sniff(&input), want, "{name}");
        }
    }

    #[test]
    fn every_prefix_of_a_hello_needs_more() {
        let real = hex(OPENSSL_HELLO);
        for cut in 0..real.len() {
            assert_eq!(sniff(&real[..cut]), Sniffed::NeedMore, "cut at {cut}");
        }
        let split = records(&hello(Some(sni_ext(&[(0, b"a.test")]))), 3);
        for cut in 0..split.len() {
            assert_eq!(
                sniff(&split[..cut]),
                Sniffed::NeedMore,
                "split cut at {cut}"
            );
        }
        assert_eq!(sniff(&split), tls(Some("a.test")));
    }

    #[test]
    fn corrupted_hellos_never_panic() {
        let real = hex(OPENSSL_HELLO);
        for i in 0..real.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut bad = real.clone();
                bad[i] ^= flip;
                let _ = sniff(&bad);
            }
        }
    }

    #[test]
    fn http_table() {
        #[rustfmt::skip]
        let cases: Vec<(&str, &[u8], Sniffed)> = vec![
            ("host header", b"GET / HTTP/1.1\r\nHost: Example.COM\r\n\r\n", http(Some("example.com"))),
            ("host with port", b"GET / HTTP/1.1\r\nhost: a.test:8080\r\n\r\n", http(Some("a.test"))),
            ("host with empty port", b"GET / HTTP/1.1\r\nHost: a.test:\r\n\r\n", http(Some("a.test"))),
            ("trailing dot", b"GET / HTTP/1.1\r\nHost: a.test.\r\n\r\n", http(Some("a.test"))),
            ("whitespace around host", b"GET / HTTP/1.1\r\nHost: \t a.test \t\r\n\r\n", http(Some("a.test"))),
            ("bare lf line ends", b"GET / HTTP/1.1\nHost: a.test\n\n", http(Some("a.test"))),
            ("ipv6 literal", b"GET / HTTP/1.1\r\nHost: [2001:DB8::1]:80\r\n\r\n", http(Some("2001:db8::1"))),
            ("ipv6 literal no port", b"GET / HTTP/1.1\r\nHost: [::1]\r\n\r\n", http(Some("::1"))),
            ("ipv4 literal", b"GET / HTTP/1.1\r\nHost: 10.0.0.1:80\r\n\r\n", http(Some("10.0.0.1"))),
            ("no host, http/1.0", b"GET / HTTP/1.0\r\n\r\n", http(None)),
            ("empty host", b"GET / HTTP/1.1\r\nHost:\r\n\r\n", http(None)),
            ("absolute form", b"GET http://A.test/x HTTP/1.1\r\n\r\n", http(Some("a.test"))),
            ("absolute form agrees", b"GET http://a.test:80/x HTTP/1.1\r\nHost: a.test\r\n\r\n", http(Some("a.test"))),
            ("absolute form disagrees", b"GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n", Sniffed::Opaque),
            ("absolute form userinfo", b"GET http://a.test@b.test/ HTTP/1.1\r\n\r\n", Sniffed::Opaque),
            ("absolute form, odd scheme", b"GET ftp://a.test/ HTTP/1.1\r\n\r\n", Sniffed::Opaque),
            ("connect authority", b"CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n", http(Some("a.test"))),
            ("connect disagrees", b"CONNECT a.test:443 HTTP/1.1\r\nHost: b.test\r\n\r\n", Sniffed::Opaque),
            ("asterisk form", b"OPTIONS * HTTP/1.1\r\nHost: a.test\r\n\r\n", http(Some("a.test"))),
            ("duplicate host", b"GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n", Sniffed::Opaque),
            ("duplicate same host", b"GET / HTTP/1.1\r\nHost: a.test\r\nHOST: a.test\r\n\r\n", Sniffed::Opaque),
            ("host with userinfo", b"GET / HTTP/1.1\r\nHost: u@a.test\r\n\r\n", Sniffed::Opaque),
            ("host with bad port", b"GET / HTTP/1.1\r\nHost: a.test:99999\r\n\r\n", Sniffed::Opaque),
            ("host with space", b"GET / HTTP/1.1\r\nHost: a test\r\n\r\n", Sniffed::Opaque),
            ("bad ipv6 literal", b"GET / HTTP/1.1\r\nHost: [nope]\r\n\r\n", Sniffed::Opaque),
            ("relative target", b"GET x HTTP/1.1\r\nHost: a.test\r\n\r\n", Sniffed::Opaque),
            ("headers incomplete", b"GET / HTTP/1.1\r\nHost: a.test\r\n", Sniffed::NeedMore),
            ("method only", b"POS", Sniffed::NeedMore),
            ("method and space", b"POST ", Sniffed::NeedMore),
            ("lowercase method", b"get / HTTP/1.1\r\n\r\n", Sniffed::Opaque),
            ("method too long", &[b'A'; 40], Sniffed::Opaque),
            ("http/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", Sniffed::Opaque),
            ("bad header line", b"GET / HTTP/1.1\r\nHo st: a\r\n\r\n", Sniffed::Opaque),
        ];
        for (name, input, want) in cases {
            assert_eq!(sniff(input), want, "{name}");
        }
    }

    #[test]
    fn other_bytes_table() {
        let cases: Vec<(&str, &[u8], Sniffed)> = vec![
            ("empty", b"", Sniffed::NeedMore),
            ("ssh banner", b"SSH-2.0-OpenSSH_9.6\r\n", Sniffed::Opaque),
            ("binary", &[0x00, 0x01, 0x02], Sniffed::Opaque),
            ("sslv2 hello", &[0x80, 0x2e, 0x01], Sniffed::Opaque),
            ("lowercase first byte", b"x", Sniffed::Opaque),
            ("space first", b" GET", Sniffed::Opaque),
        ];
        for (name, input, want) in cases {
            assert_eq!(sniff(input), want, "{name}");
        }
    }

    #[test]
    fn incomplete_at_the_cap_is_opaque() {
        let mut head = b"GET / HTTP/1.1\r\nX: ".to_vec();
        head.resize(MAX_SNIFF_BYTES - 1, b'a');
        assert_eq!(sniff(&head), Sniffed::NeedMore);
        head.push(b'a');
        assert_eq!(sniff(&head), Sniffed::Opaque);
    }
}
