use Violation::*;
use hyper::http::Request;

use super::*;

const V10: Version = Version::HTTP_10;
const V11: Version = Version::HTTP_11;
const V2: Version = Version::HTTP_2;
const HOST: (&str, &str) = ("host", "a.test");

fn parts(version: Version, uri: &str, headers: &[(&str, &str)]) -> hyper::http::Result<Parts> {
    let mut builder = Request::builder().version(version).uri(uri);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    Ok(builder.body(())?.into_parts().0)
}

type Case<'a> = (
    &'a str,
    Version,
    &'a str,
    &'a [(&'a str, &'a str)],
    Option<&'a str>,
    Result<(), Violation>,
);

#[rustfmt::skip]
const CASES: &[Case] = &[
    ("get with host", V11, "/", &[HOST], None, Ok(())),
    ("post with content-length", V11, "/", &[HOST, ("content-length", "5")], None, Ok(())),
    ("equal content-lengths", V11, "/", &[HOST, ("content-length", "5"), ("content-length", "5")], None, Ok(())),
    ("chunked post", V11, "/", &[HOST, ("transfer-encoding", "chunked")], None, Ok(())),
    ("chunked, any case", V11, "/", &[HOST, ("transfer-encoding", "Chunked")], None, Ok(())),
    ("http/1.0 without host", V10, "/", &[], Some("a.test"), Ok(())),
    ("http/2 with authority", V2, "https://a.test/", &[], Some("a.test"), Ok(())),
    ("http/2 authority and same host", V2, "https://a.test/", &[("host", "a.test:443")], Some("a.test"), Ok(())),
    ("http/2 host only", V2, "/", &[HOST], None, Ok(())),
    ("absolute form matching host", V11, "http://A.test/x", &[HOST], None, Ok(())),
    ("absolute form explicit default port", V11, "http://a.test:80/", &[HOST], None, Ok(())),
    ("host with default port", V11, "https://a.test/", &[("host", "a.test:443")], None, Ok(())),
    ("host :443 vs sni", V11, "/", &[("host", "a.test:443")], Some("a.test"), Ok(())),
    ("host case vs sni", V11, "/", &[("host", "A.Test")], Some("a.test"), Ok(())),
    ("fully qualified host vs sni", V11, "/", &[("host", "a.test.")], Some("a.test"), Ok(())),
    ("ipv6 host", V11, "/", &[("host", "[::1]:8080")], None, Ok(())),
    ("ipv6 absolute form, other spelling", V11, "http://[::1]:8080/", &[("host", "[0:0::1]:8080")], None, Ok(())),
    ("connect authority form", V11, "a.test:443", &[("host", "a.test:443")], None, Err(BadRequestTarget)),
    ("cl and te", V11, "/", &[HOST, ("content-length", "5"), ("transfer-encoding", "chunked")], None, Err(ContentLengthAndTransferEncoding)),
    ("cl and te on http/2", V2, "https://a.test/", &[("content-length", "5"), ("transfer-encoding", "chunked")], None, Err(ContentLengthAndTransferEncoding)),
    ("te gzip", V11, "/", &[HOST, ("transfer-encoding", "gzip")], None, Err(BadTransferEncoding)),
    ("te gzip, chunked", V11, "/", &[HOST, ("transfer-encoding", "gzip, chunked")], None, Err(BadTransferEncoding)),
    ("te chunked, chunked", V11, "/", &[HOST, ("transfer-encoding", "chunked, chunked")], None, Err(BadTransferEncoding)),
    ("te twice", V11, "/", &[HOST, ("transfer-encoding", "chunked"), ("transfer-encoding", "chunked")], None, Err(BadTransferEncoding)),
    ("te xchunked", V11, "/", &[HOST, ("transfer-encoding", "xchunked")], None, Err(BadTransferEncoding)),
    ("te empty", V11, "/", &[HOST, ("transfer-encoding", "")], None, Err(BadTransferEncoding)),
    ("te on http/1.0", V10, "/", &[HOST, ("transfer-encoding", "chunked")], None, Err(BadTransferEncoding)),
    ("te on http/2", V2, "https://a.test/", &[("transfer-encoding", "chunked")], None, Err(BadTransferEncoding)),
    ("differing cl", V11, "/", &[HOST, ("content-length", "5"), ("content-length", "6")], None, Err(ConflictingContentLength)),
    ("cl list", V11, "/", &[HOST, ("content-length", "5, 5")], None, Err(ConflictingContentLength)),
    ("cl with sign", V11, "/", &[HOST, ("content-length", "+5")], None, Err(ConflictingContentLength)),
    ("cl negative", V11, "/", &[HOST, ("content-length", "-1")], None, Err(ConflictingContentLength)),
    ("cl empty", V11, "/", &[HOST, ("content-length", "")], None, Err(ConflictingContentLength)),
    ("cl hex", V11, "/", &[HOST, ("content-length", "0x5")], None, Err(ConflictingContentLength)),
    ("cl overflow", V11, "/", &[HOST, ("content-length", "18446744073709551616")], None, Err(ConflictingContentLength)),
    ("absolute form other host", V11, "http://b.test/", &[HOST], None, Err(AbsoluteFormHostMismatch)),
    ("absolute form other port", V11, "http://a.test:8080/", &[HOST], None, Err(AbsoluteFormHostMismatch)),
    ("host port is not the scheme's", V11, "https://a.test/", &[("host", "a.test:80")], None, Err(AbsoluteFormHostMismatch)),
    ("connect without host port", V11, "a.test:443", &[HOST], None, Err(AbsoluteFormHostMismatch)),
    ("http/2 host differs from authority", V2, "https://a.test/", &[("host", "b.test")], None, Err(AbsoluteFormHostMismatch)),
    ("http/1.1 without host", V11, "/", &[], None, Err(MissingHost)),
    ("absolute form without host", V11, "http://a.test/", &[], None, Err(MissingHost)),
    ("http/2 without authority or host", V2, "/", &[], None, Err(MissingHost)),
    ("two hosts", V11, "/", &[HOST, ("host", "b.test")], None, Err(MissingHost)),
    ("empty host", V11, "/", &[("host", "")], None, Err(MissingHost)),
    ("host with userinfo", V11, "/", &[("host", "u@a.test")], None, Err(MissingHost)),
    ("absolute form with userinfo", V11, "http://b.test@a.test/", &[HOST], None, Err(MissingHost)),
    ("host with path", V11, "/", &[("host", "a.test/x")], None, Err(MissingHost)),
    ("host with percent", V11, "/", &[("host", "a%2etest")], None, Err(MissingHost)),
    ("unbracketed ipv6 host", V11, "/", &[("host", "::1")], None, Err(MissingHost)),
    ("host port out of range", V11, "/", &[("host", "a.test:65536")], None, Err(MissingHost)),
    ("host port with sign", V11, "/", &[("host", "a.test:+80")], None, Err(MissingHost)),
    ("host empty port", V11, "/", &[("host", "a.test:")], None, Err(MissingHost)),
    ("host is not sni", V11, "/", &[("host", "b.test")], Some("a.test"), Err(HostNotSni)),
    ("host extends sni", V11, "/", &[("host", "a.test.b.test")], Some("a.test"), Err(HostNotSni)),
    ("http/2 authority is not sni", V2, "https://b.test/", &[], Some("a.test"), Err(HostNotSni)),
    ("ipv6 host with sni", V11, "/", &[("host", "[::1]")], Some("a.test"), Err(HostNotSni)),
    ("asterisk with get", V11, "*", &[HOST], None, Err(BadRequestTarget)),
];

#[test]
fn targets_other_than_a_path_are_refused() -> hyper::http::Result<()> {
    let request = |method: Method, uri: &str| {
        let parts = Request::builder()
            .method(method)
            .uri(uri)
            .header("host", "a.test");
        parts.body(()).map(|r| r.into_parts().0)
    };
    assert_eq!(check(&request(Method::OPTIONS, "*")?, None), Ok(()));
    assert_eq!(
        check(&request(Method::CONNECT, "a.test")?, None),
        Err(BadRequestTarget)
    );
    assert_eq!(
        check(&request(Method::GET, "*")?, None),
        Err(BadRequestTarget)
    );
    assert_eq!(
        check(&request(Method::GET, "https://a.test/x")?, None),
        Ok(())
    );
    Ok(())
}

#[test]
fn check_table() -> hyper::http::Result<()> {
    for &(name, version, uri, headers, sni, want) in CASES {
        assert_eq!(check(&parts(version, uri, headers)?, sni), want, "{name}");
    }
    Ok(())
}

#[test]
fn forbidden_value_bytes() {
    // `HeaderValue`'s checked constructors refuse these bytes, so this
    // predicate is tested on its own rather than through `check`.
    let cases: &[(&[u8], bool)] = &[
        (b"plain", false),
        (b"tab\there", false),
        (b"obs-text \xff", false),
        (b"nul\0", true),
        (b"cr\rx", true),
        (b"lf\nx", true),
        (b"\r\nX-Injected: 1", true),
    ];
    for &(value, want) in cases {
        assert_eq!(has_forbidden_byte(value), want, "{value:?}");
    }
}

#[test]
fn names_are_distinct_snake_case() {
    for (i, v) in Violation::ALL.iter().enumerate() {
        let name = v.as_str();
        assert!(
            name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
            "{name}"
        );
        assert!(!v.message().is_empty(), "{name}");
        assert!(
            Violation::ALL[..i].iter().all(|w| w.as_str() != name),
            "{name} twice"
        );
    }
}

/// Raw bytes through a real hyper server whose service runs `check`:
/// which malformed requests hyper refuses itself, and which reach us.
mod through_hyper {
    use std::{convert::Infallible, io, time::Duration};

    use hyper::{
        Response, StatusCode,
        body::Incoming,
        http::HeaderValue,
        server::conn::{http1, http2},
        service::service_fn,
    };
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use tokio::{
        io::{AsyncReadExt as _, AsyncWriteExt as _, DuplexStream, duplex},
        time::timeout,
    };

    use super::*;

    /// hyper's floor for `max_buf_size`.
    const MAX_BUF: usize = 8192;
    /// Only a bound on a hung test; a passing case answers at once.
    const PATIENCE: Duration = Duration::from_secs(5);

    /// Reports `check`'s verdict in a header and the body, and how many
    /// framing fields hyper handed over.
    async fn service(request: Request<Incoming>) -> Result<Response<String>, Infallible> {
        let (parts, _body) = request.into_parts();
        let count = |name| HeaderValue::from(parts.headers.get_all(name).iter().count());
        let mut response = Response::new("passed".to_owned());
        let headers = response.headers_mut();
        headers.insert("x-seen-content-length", count(header::CONTENT_LENGTH));
        headers.insert("x-seen-transfer-encoding", count(header::TRANSFER_ENCODING));
        if let Err(violation) = check(&parts, None) {
            headers.insert("x-violation", HeaderValue::from_static(violation.as_str()));
            *response.status_mut() = StatusCode::BAD_REQUEST;
            *response.body_mut() = violation.as_str().to_owned();
        }
        Ok(response)
    }

    #[derive(Debug, PartialEq)]
    enum Outcome {
        /// hyper answered this status without calling the service.
        Hyper(u16),
        /// The service ran and `check` refused.
        Check(Violation),
        /// The service ran and `check` passed.
        Passed,
    }

    struct Reply {
        status: u16,
        headers: Vec<(String, Vec<u8>)>,
    }

    impl Reply {
        fn header(&self, name: &str) -> Option<&[u8]> {
            let mut found = self
                .headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(name));
            found.next().map(|(_, v)| v.as_slice())
        }

        fn outcome(&self) -> Outcome {
            let named = |v: &&Violation| Some(v.as_str().as_bytes()) == self.header("x-violation");
            match Violation::ALL.iter().find(named) {
                Some(&violation) => Outcome::Check(violation),
                None if self.header("x-seen-content-length").is_some() => Outcome::Passed,
                None => Outcome::Hyper(self.status),
            }
        }
    }

    async fn send_h1(raw: &[u8]) -> io::Result<Reply> {
        let (mut client, server) = duplex(1 << 16);
        tokio::spawn(
            http1::Builder::new()
                .max_buf_size(MAX_BUF)
                .serve_connection(TokioIo::new(server), service_fn(service)),
        );
        client.write_all(raw).await?;
        timeout(PATIENCE, read_head(&mut client)).await?
    }

    async fn read_head(client: &mut DuplexStream) -> io::Result<Reply> {
        let mut buf = Vec::new();
        loop {
            let mut slots = [httparse::EMPTY_HEADER; 32];
            let mut response = httparse::Response::new(&mut slots);
            if response
                .parse(&buf)
                .map_err(io::Error::other)?
                .is_complete()
            {
                let headers = response.headers.iter();
                return Ok(Reply {
                    status: response.code.unwrap_or(0),
                    headers: headers
                        .map(|h| (h.name.to_owned(), h.value.to_vec()))
                        .collect(),
                });
            }
            let mut chunk = [0; 1024];
            let n = client.read(&mut chunk).await?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    }

    const POST: &str = "POST / HTTP/1.1\r\nHost: a.test\r\n";

    #[tokio::test]
    async fn http1_table() -> io::Result<()> {
        use Outcome::{Check, Hyper, Passed};
        let big = format!(
            "GET / HTTP/1.1\r\nHost: a.test\r\nX-Big: {}\r\n\r\n",
            "a".repeat(MAX_BUF)
        );
        let post = |rest: &str| format!("{POST}{rest}");
        #[rustfmt::skip]
        let cases: &[(&str, String, Outcome)] = &[
            ("valid get", "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n".into(), Passed),
            ("valid chunked post", post("Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), Passed),
            ("bare LF line ends", "GET / HTTP/1.1\nHost: a.test\n\n".into(), Passed),
            // hyper keeps TE, drops CL and closes after: see the next test.
            ("cl then te", post("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), Passed),
            ("te then cl", post("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"), Passed),
            ("te chunked twice", post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), Check(BadTransferEncoding)),
            ("te chunked, chunked", post("Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n"), Check(BadTransferEncoding)),
            ("te gzip, chunked", post("Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"), Check(BadTransferEncoding)),
            ("te xchunked", post("Transfer-Encoding: xchunked\r\n\r\n"), Hyper(400)),
            ("te on http/1.0", "POST / HTTP/1.0\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".into(), Hyper(400)),
            ("obs-fold", "GET / HTTP/1.1\r\nHost: a.test\r\nX-A: a\r\n b\r\n\r\n".into(), Hyper(400)),
            ("space in header name", "GET / HTTP/1.1\r\nHost: a.test\r\nX A: b\r\n\r\n".into(), Hyper(400)),
            ("space before colon", "GET / HTTP/1.1\r\nHost : a.test\r\n\r\n".into(), Hyper(400)),
            ("nul in value", "GET / HTTP/1.1\r\nHost: a.test\r\nX-A: a\0b\r\n\r\n".into(), Hyper(400)),
            ("bare cr in value", "GET / HTTP/1.1\r\nHost: a.test\r\nX-A: a\rb\r\n\r\n".into(), Hyper(400)),
            ("differing cl", post("Content-Length: 1\r\nContent-Length: 2\r\n\r\nab"), Hyper(400)),
            ("equal cl twice", post("Content-Length: 1\r\nContent-Length: 1\r\n\r\na"), Passed),
            ("cl list", post("Content-Length: 1, 1\r\n\r\na"), Hyper(400)),
            ("cl with sign", post("Content-Length: +1\r\n\r\na"), Hyper(400)),
            ("absolute form other host", "GET http://b.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n".into(), Check(AbsoluteFormHostMismatch)),
            ("absolute form same host", "GET http://a.test:80/ HTTP/1.1\r\nHost: a.test\r\n\r\n".into(), Passed),
            ("no host", "GET / HTTP/1.1\r\n\r\n".into(), Check(MissingHost)),
            ("two hosts", "GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n".into(), Check(MissingHost)),
            ("headers over max_buf_size", big, Hyper(431)),
        ];
        for (name, raw, want) in cases {
            assert_eq!(&send_h1(raw.as_bytes()).await?.outcome(), want, "{name}");
        }
        Ok(())
    }

    #[tokio::test]
    async fn hyper_drops_content_length_beside_chunked_and_closes() -> io::Result<()> {
        // RFC 9112 §6.3: an intermediary must drop the CL and close after
        // the response. hyper does both, so `check` never sees the pair
        // from an HTTP/1 connection.
        let raw = format!("{POST}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
        let reply = send_h1(raw.as_bytes()).await?;
        assert_eq!(reply.header("x-seen-content-length"), Some(&b"0"[..]));
        assert_eq!(reply.header("x-seen-transfer-encoding"), Some(&b"1"[..]));
        assert_eq!(reply.header("connection"), Some(&b"close"[..]));
        Ok(())
    }

    #[derive(Debug, PartialEq)]
    enum H2 {
        /// h2 reset the stream with this error code; no service call.
        Reset(u32),
        /// The service answered with this body.
        Body(String),
        GoAway(u32),
    }

    const PROTOCOL_ERROR: u32 = 0x1;
    const DATA: u8 = 0x0;
    const HEADERS: u8 = 0x1;
    const RST_STREAM: u8 = 0x3;
    const SETTINGS: u8 = 0x4;
    const GOAWAY: u8 = 0x7;
    const END_STREAM_AND_HEADERS: u8 = 0x1 | 0x4;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let [_, l0, l1, l2] = u32::try_from(payload.len()).unwrap_or(0).to_be_bytes();
        let mut out = vec![l0, l1, l2, kind, flags];
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    /// An HPACK string literal without Huffman coding; the length must
    /// fit the 7-bit prefix, which every string here does.
    fn hpack_str(block: &mut Vec<u8>, s: &str) {
        block.push(u8::try_from(s.len()).unwrap_or(0x7f).min(0x7e));
        block.extend_from_slice(s.as_bytes());
    }

    /// A GET on stream 1, encoded by hand so that h2's client-side
    /// checks cannot stop the fields the server is being tested on.
    fn h2_request(authority: Option<&str>, fields: &[(&str, &str)]) -> Vec<u8> {
        // Static-table entries :method GET, :scheme https, and :path /
        // unless a `:path` field is given (a literal, name entry 4).
        let mut block = vec![0x82, 0x87];
        match fields.iter().find(|(name, _)| *name == ":path") {
            Some((_, path)) => {
                block.push(0x04);
                hpack_str(&mut block, path);
            }
            None => block.push(0x84),
        }
        if let Some(authority) = authority {
            // Literal without indexing, name from static entry 1, :authority.
            block.push(0x01);
            hpack_str(&mut block, authority);
        }
        for (name, value) in fields.iter().filter(|(name, _)| *name != ":path") {
            block.push(0x00); // literal without indexing, literal name
            hpack_str(&mut block, name);
            hpack_str(&mut block, value);
        }
        let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        out.extend(frame(SETTINGS, 0, 0, &[]));
        out.extend(frame(HEADERS, END_STREAM_AND_HEADERS, 1, &block));
        out
    }

    async fn send_h2(authority: Option<&str>, fields: &[(&str, &str)]) -> io::Result<H2> {
        let (mut client, server) = duplex(1 << 16);
        tokio::spawn(
            http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(server), service_fn(service)),
        );
        client.write_all(&h2_request(authority, fields)).await?;
        timeout(PATIENCE, read_stream_1(&mut client)).await?
    }

    async fn read_stream_1(client: &mut DuplexStream) -> io::Result<H2> {
        let code = |payload: &[u8], at: usize| {
            let bytes = payload.get(at..at + 4).and_then(|b| b.try_into().ok());
            bytes.map_or(u32::MAX, u32::from_be_bytes)
        };
        loop {
            let mut head = [0; 9];
            client.read_exact(&mut head).await?;
            let [l0, l1, l2, kind, _flags, s0, s1, s2, s3] = head;
            let len = u32::from_be_bytes([0, l0, l1, l2]);
            let stream = u32::from_be_bytes([s0, s1, s2, s3]) & 0x7fff_ffff;
            let mut payload = vec![0; usize::try_from(len).unwrap_or(0)];
            client.read_exact(&mut payload).await?;
            match (kind, stream) {
                (DATA, 1) => return Ok(H2::Body(String::from_utf8_lossy(&payload).into())),
                (RST_STREAM, 1) => return Ok(H2::Reset(code(&payload, 0))),
                (GOAWAY, _) => return Ok(H2::GoAway(code(&payload, 4))),
                _ => {}
            }
        }
    }

    /// (name, `:authority`, other fields, outcome)
    type H2Case<'a> = (&'a str, Option<&'a str>, &'a [(&'a str, &'a str)], H2);

    #[tokio::test]
    async fn http2_table() -> io::Result<()> {
        let passed = || H2::Body("passed".to_owned());
        let refused = |v: Violation| H2::Body(v.as_str().to_owned());
        let reset = || H2::Reset(PROTOCOL_ERROR);
        let a = Some("a.test");
        #[rustfmt::skip]
        let cases: &[H2Case] = &[
            ("authority only", a, &[], passed()),
            ("host only", None, &[("host", "a.test")], passed()),
            ("te: trailers", a, &[("te", "trailers")], passed()),
            ("transfer-encoding", a, &[("transfer-encoding", "chunked")], reset()),
            ("connection", a, &[("connection", "keep-alive")], reset()),
            ("te: gzip", a, &[("te", "gzip")], reset()),
            ("non-digit content-length", a, &[("content-length", "abc")], reset()),
            ("differing content-lengths", a, &[("content-length", "0"), ("content-length", "1")], reset()),
            ("host differs from authority", a, &[("host", "b.test")], refused(AbsoluteFormHostMismatch)),
            ("no authority, no host", None, &[], refused(MissingHost)),
            ("absolute uri as :path", a, &[(":path", "https://b.test/x")], reset()),
            ("path without slash", a, &[(":path", "x")], reset()),
        ];
        for (name, authority, fields, want) in cases {
            assert_eq!(&send_h2(*authority, fields).await?, want, "{name}");
        }
        Ok(())
    }
}

#[test]
fn raw_heads_with_both_framings_are_refused() {
    let cases: &[(&[u8], Result<(), Violation>)] = &[
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", Err(Violation::ContentLengthAndTransferEncoding)),
        (b"POST / HTTP/1.1\r\nHost: a\r\ntransfer-encoding: chunked\r\ncontent-length: 0\r\n\r\n", Err(Violation::ContentLengthAndTransferEncoding)),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", Ok(())),
        (b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", Ok(())),
        (b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", Err(Violation::ConflictingContentLength)),
        (b"GET / HTTP/1.1\r\nHost: a\r\n", Ok(())),
        (b"\x00garbage", Ok(())),
    ];
    for (head, want) in cases {
        assert_eq!(
            check_raw_head(head),
            *want,
            "{}",
            String::from_utf8_lossy(head)
        );
    }
}
