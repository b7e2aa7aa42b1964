//! Request-smuggling and malformed-request checks on an intercepted request,
//! run before anything about it is decided or forwarded.
//!
//! The gateway forwards through its own HTTP client, which re-frames every
//! request, so framing tricks cannot pass through as bytes; the danger is a request whose framing or target is
//! ambiguous, where the gateway's reading and the upstream's (or the policy's)
//! could differ. Those are refused with a 400 naming the [`Violation`].
//!
//! hyper's parsers already refuse much of this before a request exists; the
//! tests at the bottom feed raw bytes to a hyper server to pin down which.
//! Found with hyper 1.12 / httparse 1.10 / h2 0.4:
//!
//! | Input (HTTP/1.1 unless noted)                | Who refuses it                         |
//! |----------------------------------------------|----------------------------------------|
//! | `Content-Length` and `Transfer-Encoding`     | neither: hyper drops the CL and closes after (RFC 9112 §6.3) |
//! | `Transfer-Encoding: chunked` twice           | [`check`]                              |
//! | `Transfer-Encoding: chunked, chunked`        | [`check`]                              |
//! | `Transfer-Encoding: gzip, chunked`           | [`check`]                              |
//! | `Transfer-Encoding: xchunked`                | hyper, 400                             |
//! | `Transfer-Encoding` on HTTP/1.0              | hyper, 400                             |
//! | obsolete line folding                        | hyper (httparse), 400                  |
//! | space in or after a header name              | hyper (httparse), 400                  |
//! | NUL or bare CR in a header value             | hyper (httparse), 400                  |
//! | two differing `Content-Length`s              | hyper, 400                             |
//! | `Content-Length: 5, 5` / `+5`                | hyper, 400                             |
//! | absolute-form target naming another host     | [`check`]                              |
//! | no `Host`, or two `Host`s                    | [`check`]                              |
//! | header section over `max_buf_size`           | hyper, 431                             |
//! | HTTP/2 `transfer-encoding`, `connection`, `te` other than `trailers`, bad `content-length` | h2, stream reset `PROTOCOL_ERROR` |
//! | HTTP/2 `host` differing from `:authority`    | [`check`]                              |
//! | HTTP/2 `:path` not starting with `/` (an absolute URI too) | h2, stream reset `PROTOCOL_ERROR` |
//! | `CONNECT`, or `*` with a method but OPTIONS  | [`check`]                              |
//!
//! The first row is caught before hyper parses anything: [`check_raw_head`]
//! reads the raw head of the first request on each HTTP/1 connection. A later
//! request on the same connection with both is normalized by hyper (the
//! chunked framing wins, the length is dropped, the connection is closed after
//! the response) and re-framed by Sluice's client, so no two parties can read
//! its framing differently.
//!
//! `check` still tests what hyper refuses, so it stays correct for requests
//! that reach it another way and if a parser changes; it costs one pass over
//! the header values.

#![forbid(unsafe_code)]

use std::net::Ipv6Addr;

use hyper::http::{HeaderMap, Method, Version, header, request::Parts, uri::Scheme};

/// Why a request was refused. Each is the sandbox's fault (a 400), never
/// the upstream's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Violation {
    /// Both framings at once: the classic CL.TE / TE.CL desync.
    ContentLengthAndTransferEncoding,
    /// `Transfer-Encoding` other than exactly one field saying `chunked`, or
    /// any `Transfer-Encoding` on HTTP/1.0, HTTP/2 or HTTP/3. Stricter than
    /// RFC 9112 (which allows codings before `chunked`) because a coding
    /// the gateway does not decode is one an upstream may frame differently.
    BadTransferEncoding,
    /// Several `Content-Length` values that differ, or one that is not
    /// plain digits (a list, a sign, empty, too large).
    ConflictingContentLength,
    /// The request target's authority (HTTP/1 absolute form, HTTP/2
    /// `:authority`) and `Host` name different hosts or ports, default ports
    /// counted for http and https.
    AbsoluteFormHostMismatch,
    /// No single valid host name: HTTP/1.1 without `Host`, HTTP/2 without
    /// `:authority` or `Host`, several `Host` fields, or a host that does not
    /// parse (userinfo, a path, an unbracketed IPv6 address, a bad port).
    MissingHost,
    /// The named host is not the TLS server name the connection was opened
    /// for (domain fronting, or HTTP/2 connection reuse across hosts).
    /// RFC 9110 §15.5.20's 421 would also fit: clients retry 421 on a new
    /// connection.
    HostNotSni,
    /// NUL, CR or LF in a header value (RFC 9110 §5.5: invalid and dangerous).
    InvalidHeaderValue,
    /// A target that is not a path: `*` with a method other than OPTIONS,
    /// a `CONNECT` (a tunnel inside an intercepted connection is one
    /// nothing would inspect, and the forwarder has no path to send), or a
    /// path not starting with `/` (an HTTP/2 `:path` of `https://b.test/x`
    /// would read as a path no app rule names, and to an HTTP/1 upstream
    /// as an absolute URI naming another host; h2 refuses it today).
    BadRequestTarget,
}

impl Violation {
    /// Every violation, for pre-registering metric labels.
    pub const ALL: [Violation; 8] = [
        Violation::ContentLengthAndTransferEncoding,
        Violation::BadTransferEncoding,
        Violation::ConflictingContentLength,
        Violation::AbsoluteFormHostMismatch,
        Violation::MissingHost,
        Violation::HostNotSni,
        Violation::InvalidHeaderValue,
        Violation::BadRequestTarget,
    ];

    /// Stable snake_case name for metric labels, audit events and bodies.
    pub fn as_str(self) -> &'static str {
        match self {
            Violation::ContentLengthAndTransferEncoding => "content_length_and_transfer_encoding",
            Violation::BadTransferEncoding => "bad_transfer_encoding",
            Violation::ConflictingContentLength => "conflicting_content_length",
            Violation::AbsoluteFormHostMismatch => "absolute_form_host_mismatch",
            Violation::MissingHost => "missing_host",
            Violation::HostNotSni => "host_not_sni",
            Violation::InvalidHeaderValue => "invalid_header_value",
            Violation::BadRequestTarget => "bad_request_target",
        }
    }

    /// One sentence for the 400 body, saying what to send instead.
    pub fn message(self) -> &'static str {
        match self {
            Violation::ContentLengthAndTransferEncoding => {
                "the request has both Content-Length and Transfer-Encoding; send only one"
            }
            Violation::BadTransferEncoding => {
                "Transfer-Encoding must be a single \"chunked\", and only on HTTP/1.1"
            }
            Violation::ConflictingContentLength => {
                "Content-Length must be one decimal number; repeated Content-Length fields must agree"
            }
            Violation::AbsoluteFormHostMismatch => {
                "the request target names a different host or port than the Host header"
            }
            Violation::MissingHost => {
                "the request must name exactly one valid host (Host header, or :authority on HTTP/2)"
            }
            Violation::HostNotSni => {
                "the Host differs from the TLS server name this connection was opened for; open a new connection per host"
            }
            Violation::InvalidHeaderValue => "a header value contains NUL, CR or LF",
            Violation::BadRequestTarget => {
                "the request target must be a path starting with \"/\" (or \"*\" for OPTIONS); CONNECT is not forwarded"
            }
        }
    }
}

/// Checks an intercepted request's head. `sni`: the TLS server name when the
/// connection was TLS (`None` for plain HTTP). Reports the first violation in
/// the order values, framing, host; the order only decides which is named.
/// Checks a raw HTTP/1 request head (request line and headers, up to and
/// including the blank line) for what hyper would silently normalize:
/// `Content-Length` together with `Transfer-Encoding`, and `Content-Length`
/// given more than once (RFC 9112 tolerates identical copies; a gateway
/// gains nothing by doing so). A head that does not parse is left to hyper,
/// which answers it 400 itself.
pub fn check_raw_head(head: &[u8]) -> Result<(), Violation> {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut request = httparse::Request::new(&mut headers);
    if !matches!(request.parse(head), Ok(httparse::Status::Complete(_))) {
        return Ok(());
    }
    let count = |name: &str| {
        request
            .headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case(name))
            .count()
    };
    match (count("content-length"), count("transfer-encoding")) {
        (lengths, encodings) if lengths > 0 && encodings > 0 => {
            Err(Violation::ContentLengthAndTransferEncoding)
        }
        (lengths, _) if lengths > 1 => Err(Violation::ConflictingContentLength),
        _ => Ok(()),
    }
}

pub fn check(parts: &Parts, sni: Option<&str>) -> Result<(), Violation> {
    // First, so no later step reads a value that could split a header line.
    if parts
        .headers
        .values()
        .any(|value| has_forbidden_byte(value.as_bytes()))
    {
        return Err(Violation::InvalidHeaderValue);
    }
    check_framing(&parts.headers, parts.version)?;
    let named = request_host(parts)?;
    check_target(parts)?;
    match (named, sni) {
        (Some(named), Some(sni)) if !named.host.is_name(sni) => Err(Violation::HostNotSni),
        // No host named (HTTP/1.0 allows that): the upstream can only route
        // by the SNI, which is what was decided on.
        _ => Ok(()),
    }
}

/// The target is a path (origin form, or the path of an absolute form),
/// or `*` for OPTIONS; never CONNECT's authority.
fn check_target(parts: &Parts) -> Result<(), Violation> {
    let path = parts.uri.path();
    let asterisk = path == "*" && parts.method == Method::OPTIONS;
    if parts.method == Method::CONNECT || !(path.starts_with('/') || asterisk) {
        return Err(Violation::BadRequestTarget);
    }
    Ok(())
}

fn has_forbidden_byte(value: &[u8]) -> bool {
    value.iter().any(|&b| matches!(b, b'\0' | b'\r' | b'\n'))
}

fn check_framing(headers: &HeaderMap, version: Version) -> Result<(), Violation> {
    let mut codings = headers.get_all(header::TRANSFER_ENCODING).iter();
    let first_coding = codings.next();
    if first_coding.is_some() && headers.contains_key(header::CONTENT_LENGTH) {
        return Err(Violation::ContentLengthAndTransferEncoding);
    }
    if let Some(coding) = first_coding {
        // HTTP/1.0 has no chunked coding and HTTP/2+ frames bodies itself
        // (RFC 9113 §8.2.2), so only HTTP/1.1 may carry the field at all.
        let single = codings.next().is_none();
        if version != Version::HTTP_11 || !single || !is_chunked(coding.as_bytes()) {
            return Err(Violation::BadTransferEncoding);
        }
    }
    let mut length = None;
    for value in headers.get_all(header::CONTENT_LENGTH) {
        let parsed = parse_digits(trim_ows(value.as_bytes()));
        match (parsed, length) {
            (None, _) => return Err(Violation::ConflictingContentLength),
            (Some(n), Some(seen)) if n != seen => return Err(Violation::ConflictingContentLength),
            (Some(n), _) => length = Some(n),
        }
    }
    Ok(())
}

/// Exactly one `chunked` coding. Coding names are case-insensitive (RFC
/// 9112 §7).
fn is_chunked(value: &[u8]) -> bool {
    trim_ows(value).eq_ignore_ascii_case(b"chunked")
}

/// Strips optional whitespace, which is SP and HTAB only: trimming other
/// ASCII whitespace (`\x0b`, `\x0c`) would accept what a stricter upstream
/// rejects.
fn trim_ows(mut value: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = value {
        value = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = value {
        value = rest;
    }
    value
}

/// `1*DIGIT` that fits a u64. `str::parse` would also take a leading `+`.
fn parse_digits(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |n, &b| {
        let digit = char::from(b).to_digit(10)?;
        n.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// The host the request names, after checking that its sources agree.
fn request_host(parts: &Parts) -> Result<Option<Authority<'_>>, Violation> {
    let mut hosts = parts.headers.get_all(header::HOST).iter();
    let from_header = match (hosts.next(), hosts.next()) {
        (None, _) => None,
        (Some(value), None) => Some(
            value
                .to_str()
                .ok()
                .and_then(Authority::parse)
                .ok_or(Violation::MissingHost)?,
        ),
        // RFC 9112 §3.2: a server must refuse more than one Host.
        (Some(_), Some(_)) => return Err(Violation::MissingHost),
    };
    let from_target = match parts.uri.authority() {
        None => None,
        Some(authority) => {
            Some(Authority::parse(authority.as_str()).ok_or(Violation::MissingHost)?)
        }
    };
    let default_port = match parts.uri.scheme() {
        Some(scheme) if *scheme == Scheme::HTTP => Some(80),
        Some(scheme) if *scheme == Scheme::HTTPS => Some(443),
        // CONNECT's authority form has no scheme, so ports must match as sent.
        _ => None,
    };
    let needs_host = matches!(
        parts.version,
        Version::HTTP_11 | Version::HTTP_2 | Version::HTTP_3
    );
    match (from_target, from_header) {
        (Some(target), Some(host)) if !target.same_as(&host, default_port) => {
            Err(Violation::AbsoluteFormHostMismatch)
        }
        // RFC 9112 §3.2: HTTP/1.1 sends Host even with an absolute-form target.
        (Some(_), None) if parts.version == Version::HTTP_11 => Err(Violation::MissingHost),
        (None, None) if needs_host => Err(Violation::MissingHost),
        (target, host) => Ok(target.or(host)),
    }
}

/// `host[:port]` as found in a Host header or a URI authority.
#[derive(Debug, PartialEq, Eq)]
struct Authority<'a> {
    host: Host<'a>,
    port: Option<u16>,
}

#[derive(Debug, PartialEq, Eq)]
enum Host<'a> {
    /// A registered name or IPv4 address, as sent.
    Name(&'a str),
    /// A bracketed IPv6 literal, compared by value (`[::1]` is `[0::1]`).
    V6(Ipv6Addr),
}

impl<'a> Authority<'a> {
    /// Strict on purpose: anything odd (userinfo, which RFC 9110 §4.2.4 says
    /// to treat as an error; percent-encoding; a path; an empty port) is a
    /// place where two parsers could disagree about the host.
    fn parse(s: &'a str) -> Option<Authority<'a>> {
        let (host, port) = match s.strip_prefix('[') {
            Some(bracketed) => {
                let (literal, rest) = bracketed.split_once(']')?;
                (Host::V6(literal.parse().ok()?), rest)
            }
            None => {
                let end = s.find(':').unwrap_or(s.len());
                let (name, rest) = s.split_at(end);
                let valid = !name.is_empty()
                    && name.bytes().all(|b| {
                        b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
                    });
                if !valid {
                    return None;
                }
                (Host::Name(name), rest)
            }
        };
        let port = match port.strip_prefix(':') {
            None if port.is_empty() => None,
            None => return None,
            Some(digits) if (1..=5).contains(&digits.len()) => {
                Some(u16::try_from(parse_digits(digits.as_bytes())?).ok()?)
            }
            Some(_) => return None,
        };
        Some(Authority { host, port })
    }

    fn same_as(&self, other: &Authority<'_>, default_port: Option<u16>) -> bool {
        let same_host = match (&self.host, &other.host) {
            (Host::Name(a), Host::Name(b)) => same_name(a, b),
            (Host::V6(a), Host::V6(b)) => a == b,
            _ => false,
        };
        same_host && self.port.or(default_port) == other.port.or(default_port)
    }
}

impl Host<'_> {
    /// Whether this is the DNS name `name`. An IP literal never is: SNI
    /// carries names only (RFC 6066 §3).
    fn is_name(&self, name: &str) -> bool {
        matches!(self, Host::Name(host) if same_name(host, name))
    }
}

/// DNS names compare case-insensitively, and a fully qualified `a.test.`
/// is the same host as `a.test`.
fn same_name(a: &str, b: &str) -> bool {
    let a = a.strip_suffix('.').unwrap_or(a);
    let b = b.strip_suffix('.').unwrap_or(b);
    a.eq_ignore_ascii_case(b)
}

#[cfg(test)]
mod tests;
