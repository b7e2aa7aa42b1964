//! The proxy request head a remote sandbox opens with: `CONNECT host:port`
//! (a tunnel) or an absolute-form `http://` request, and its capability
//! token from `Proxy-Authorization`. Parsing only; the listener reads the
//! bytes and decides.

use base64::{Engine as _, engine::general_purpose::STANDARD};

/// The target of a proxy request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub host: String,
    pub port: u16,
    /// CONNECT (a tunnel); otherwise absolute-form plain HTTP.
    pub tunnel: bool,
}

/// What the proxy request head says.
#[derive(Debug)]
pub(crate) struct Head {
    pub target: Target,
    pub token: Option<String>,
}

/// Parses a proxy request head: `CONNECT host:port` or an absolute-form
/// `http://` request, and the token from `Proxy-Authorization` (`Bearer
/// TOKEN`, or `Basic` with the token as the password).
pub(crate) fn parse_head(bytes: &[u8]) -> Result<Head, &'static str> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(bytes) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err("not an HTTP/1 proxy request"),
    }
    let (Some(method), Some(path)) = (request.method, request.path) else {
        return Err("not an HTTP/1 proxy request");
    };
    let target = if method == "CONNECT" {
        let uri: hyper::Uri = path.parse().map_err(|_| "CONNECT needs host:port")?;
        let (Some(host), Some(port)) = (uri.host(), uri.port_u16()) else {
            return Err("CONNECT needs host:port");
        };
        if uri.scheme().is_some()
            || uri
                .path_and_query()
                .is_some_and(|p| p.as_str() != "/" && !p.as_str().is_empty())
        {
            return Err("CONNECT needs host:port");
        }
        Target {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port,
            tunnel: true,
        }
    } else {
        let uri: hyper::Uri = path
            .parse()
            .map_err(|_| "a proxy request needs an absolute http:// URL")?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => return Err("use CONNECT for https"),
            _ => return Err("a proxy request needs an absolute http:// URL (or CONNECT)"),
        }
        let host = uri.host().ok_or("the URL has no host")?;
        Target {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port: uri.port_u16().unwrap_or(80),
            tunnel: false,
        }
    };
    let token = request
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("proxy-authorization"))
        .and_then(|h| std::str::from_utf8(h.value).ok())
        .and_then(proxy_token);
    Ok(Head { target, token })
}

fn proxy_token(value: &str) -> Option<String> {
    let (scheme, rest) = value.trim().split_once(' ')?;
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("bearer") {
        return Some(rest.to_owned());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = STANDARD.decode(rest).ok()?;
        let text = String::from_utf8(decoded).ok()?;
        return text
            .split_once(':')
            .map(|(_, password)| password.to_owned());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_heads() {
        let basic = STANDARD.encode("sluice:tok.en.x");
        // (head, Ok((host, port, tunnel, token)) or Err)
        type Want<'a> = Result<(&'a str, u16, bool, Option<&'a str>), ()>;
        let cases: Vec<(String, Want<'_>)> = vec![
            (
                "CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\nProxy-Authorization: Bearer abc.def.ghi\r\n\r\n".to_owned(),
                Ok(("api.test", 443, true, Some("abc.def.ghi"))),
            ),
            (
                format!("GET http://plain.test:8080/x?y HTTP/1.1\r\nHost: plain.test:8080\r\nProxy-Authorization: Basic {basic}\r\n\r\n"),
                Ok(("plain.test", 8080, false, Some("tok.en.x"))),
            ),
            (
                "GET http://plain.test/ HTTP/1.1\r\nHost: plain.test\r\n\r\n".to_owned(),
                Ok(("plain.test", 80, false, None)),
            ),
            (
                "CONNECT [::1]:8443 HTTP/1.1\r\nProxy-Authorization: Digest x\r\n\r\n".to_owned(),
                Ok(("::1", 8443, true, None)),
            ),
            ("CONNECT api.test HTTP/1.1\r\n\r\n".to_owned(), Err(())),
            ("GET /origin-form HTTP/1.1\r\nHost: a\r\n\r\n".to_owned(), Err(())),
            ("GET https://api.test/ HTTP/1.1\r\nHost: a\r\n\r\n".to_owned(), Err(())),
            ("\x16\x03\x01 not http\r\n\r\n".to_owned(), Err(())),
        ];
        for (text, want) in cases {
            let got = parse_head(text.as_bytes()).map_err(|_| ());
            let got = got
                .as_ref()
                .map(|h| {
                    (
                        h.target.host.as_str(),
                        h.target.port,
                        h.target.tunnel,
                        h.token.as_deref(),
                    )
                })
                .map_err(|_| ());
            assert_eq!(got, want, "{text:?}");
        }
    }
}
