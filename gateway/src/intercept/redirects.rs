//! Redirects Sluice follows itself, for a request a credential was
//! injected into whose binding has `follow_redirects`: the pure decision
//! of whether an answer's `Location` may be followed, and with what
//! method and body. The edge (`exchange`) resolves the name, asks the
//! network policy and the apps, re-injects the credential and sends.
//!
//! A `Location` is followed only when, in order (the first failure
//! answers the 3xx unfollowed):
//!
//! | # | condition | else |
//! | --- | --- | --- |
//! | 1 | the status is 301, 302, 303, 307 or 308 | `not_a_redirect` |
//! | 2 | there is one `Location`, visible ASCII, that resolves (against the request's URL) to an absolute `https` URL, or `http` where the binding allows plain HTTP, with a host, no userinfo and no dot segment | `no_location`, `bad_location`, `scheme` |
//! | 3 | its host is in the credential's hosts (narrowed by the binding) | `host_not_bound` |
//! | 4 | the method and body can be sent again: 303, and 301/302 to anything but GET/HEAD, become a GET without a body (a HEAD stays a HEAD); otherwise (307, 308, 301/302 to GET/HEAD) the method and body stay, only when the body is empty or was kept whole | `body_not_kept` |

use hyper::{Method, StatusCode, Uri, body::Bytes, header::HeaderValue};

/// A request whose injected credential's binding follows redirects.
pub(crate) struct Follow {
    pub(crate) credential: String,
    /// The body as forwarded, when a stage read it whole.
    pub(crate) whole: Option<Bytes>,
}

/// Where a request went, or a redirect leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Url {
    pub(super) tls: bool,
    /// Canonical (lower case, no trailing dot); an IPv6 address without
    /// brackets.
    pub(super) host: String,
    pub(super) port: u16,
    /// Never empty: at least `/`.
    pub(super) path_and_query: String,
}

impl Url {
    /// `host:port` (an IPv6 address in brackets) and the path without
    /// its query: what an audit event may name.
    pub(super) fn shown(&self) -> String {
        let path = self.path_and_query.split('?').next().unwrap_or("/");
        match self.host.contains(':') {
            true => format!("[{}]:{}{path}", self.host, self.port),
            false => format!("{}:{}{path}", self.host, self.port),
        }
    }
}

/// The request's body, as far as sending it again goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Held {
    /// No body.
    Empty,
    /// Read whole by a stage: it can be sent again.
    Whole,
    /// Streamed to the upstream: gone.
    Streaming,
}

/// The next hop of a followed redirect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Next {
    pub(super) url: Url,
    pub(super) method: Method,
    /// Send the body again (307/308); `false`: without a body.
    pub(super) keep_body: bool,
}

/// Whether the answer to a request to `from` (with `method` and a body
/// `held`) is a redirect to follow, and how: see the module docs.
/// `sends_to` says whether the credential may go to a host; `plain`
/// whether its binding allows plain HTTP. `Err` says why not (a stable
/// label for the daemon log).
pub(super) fn next(
    status: StatusCode,
    locations: &[&HeaderValue],
    from: &Url,
    method: &Method,
    held: Held,
    sends_to: &dyn Fn(&str) -> bool,
    plain: bool,
) -> Result<Next, &'static str> {
    let rewrites = match status.as_u16() {
        303 => true,
        301 | 302 => *method != Method::GET && *method != Method::HEAD,
        307 | 308 => false,
        _ => return Err("not_a_redirect"),
    };
    let [location] = locations else {
        return Err("no_location");
    };
    let location = location.to_str().map_err(|_| "bad_location")?;
    let url = resolve(location, from).ok_or("bad_location")?;
    if !url.tls && !plain {
        return Err("scheme");
    }
    if !sends_to(&url.host) {
        return Err("host_not_bound");
    }
    if rewrites {
        let method = match *method {
            Method::HEAD => Method::HEAD,
            _ => Method::GET,
        };
        return Ok(Next {
            url,
            method,
            keep_body: false,
        });
    }
    match held {
        Held::Streaming => Err("body_not_kept"),
        Held::Empty | Held::Whole => Ok(Next {
            url,
            method: method.clone(),
            keep_body: held == Held::Whole,
        }),
    }
}

/// `location` resolved against `base` (RFC 3986 §5.2, without dot
/// segments: a target holding one is refused, as the apps stage refuses
/// one in a request, since upstreams disagree on what it means). The
/// fragment is dropped. `None`: not a URL Sluice follows.
pub(super) fn resolve(location: &str, base: &Url) -> Option<Url> {
    let location = location.split('#').next().unwrap_or_default();
    if location.is_empty()
        || !location.bytes().all(|b| b.is_ascii_graphic())
        || location.contains('\\')
    {
        return None;
    }
    let scheme_end = location.find(':').filter(|&i| {
        let scheme = &location[..i];
        !scheme.contains(['/', '?']) && !scheme.is_empty()
    });
    let url = if let Some(i) = scheme_end {
        absolute(&location[..i], &location[i + 1..])?
    } else if let Some(rest) = location.strip_prefix("//") {
        absolute(
            if base.tls { "https" } else { "http" },
            &format!("//{rest}"),
        )?
    } else {
        let path_and_query = if location.starts_with('/') {
            location.to_owned()
        } else if location.starts_with('?') {
            let path = base.path_and_query.split('?').next().unwrap_or("/");
            format!("{path}{location}")
        } else {
            // Relative to the base's directory.
            let path = base.path_and_query.split('?').next().unwrap_or("/");
            let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
            let dir = if dir.is_empty() { "/" } else { dir };
            format!("{dir}{location}")
        };
        Url {
            path_and_query,
            ..base.clone()
        }
    };
    let path = url.path_and_query.split('?').next().unwrap_or_default();
    let dot = path.split('/').any(|segment| {
        let segment = segment.to_ascii_lowercase();
        let segment = segment.replace("%2e", ".");
        segment == "." || segment == ".."
    });
    (!dot && url.path_and_query.starts_with('/')).then_some(url)
}

/// `scheme:rest` where `rest` is `//authority[path][?query]`.
fn absolute(scheme: &str, rest: &str) -> Option<Url> {
    let tls = match scheme.to_ascii_lowercase().as_str() {
        "https" => true,
        "http" => false,
        _ => return None,
    };
    let after = rest.strip_prefix("//")?;
    let authority_end = after.find(['/', '?']).unwrap_or(after.len());
    let authority = &after[..authority_end];
    if authority.contains('@') || authority.is_empty() {
        return None;
    }
    let path_and_query = match &after[authority_end..] {
        "" => "/".to_owned(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_owned(),
    };
    // The authority as the http types read it (ports, brackets).
    let uri: Uri = format!("http://{authority}/").parse().ok()?;
    let host = uri.host()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let host = crate::policy::network::canonical_name(host);
    if host.is_empty() {
        return None;
    }
    // Read here, not by the http types (which take `:99999` as no port).
    let port = match authority.rsplit_once(':') {
        Some((_, port)) if !port.contains(']') => {
            if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            port.parse::<u16>().ok().filter(|&port| port != 0)?
        }
        _ if tls => 443,
        _ => 80,
    };
    Some(Url {
        tls,
        host,
        port,
        path_and_query,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(tls: bool, host: &str, port: u16, path_and_query: &str) -> Url {
        Url {
            tls,
            host: host.to_owned(),
            port,
            path_and_query: path_and_query.to_owned(),
        }
    }

    #[test]
    fn locations_resolve_against_the_request() {
        let base = url(true, "api.test", 8443, "/a/b?q=1");
        let cases: &[(&str, Option<Url>)] = &[
            ("/echo?x=1", Some(url(true, "api.test", 8443, "/echo?x=1"))),
            ("c", Some(url(true, "api.test", 8443, "/a/c"))),
            ("c/d?e", Some(url(true, "api.test", 8443, "/a/c/d?e"))),
            ("?z", Some(url(true, "api.test", 8443, "/a/b?z"))),
            ("/x#frag", Some(url(true, "api.test", 8443, "/x"))),
            (
                "https://API.test./x",
                Some(url(true, "api.test", 443, "/x")),
            ),
            ("HTTPS://api.test:9/x", Some(url(true, "api.test", 9, "/x"))),
            ("http://api.test/", Some(url(false, "api.test", 80, "/"))),
            ("https://api.test", Some(url(true, "api.test", 443, "/"))),
            (
                "https://api.test?a",
                Some(url(true, "api.test", 443, "/?a")),
            ),
            ("//other.test/p", Some(url(true, "other.test", 443, "/p"))),
            ("https://[::1]:8443/p", Some(url(true, "::1", 8443, "/p"))),
            (
                "https://127.0.0.1/p",
                Some(url(true, "127.0.0.1", 443, "/p")),
            ),
            // Not followed: other schemes, userinfo, dot segments,
            // backslashes, spaces, no host, bad ports.
            ("ftp://api.test/x", None),
            ("javascript:alert(1)", None),
            ("https://user:pw@api.test/x", None),
            ("https://api.test@evil.test/x", None),
            ("/a/../admin", None),
            ("./x", None),
            ("/a/%2E%2e/x", None),
            ("../x", None),
            ("/x\\y", None),
            ("\\\\evil.test/x", None),
            ("/a b", None),
            ("https:///x", None),
            ("https://api.test:/x", None),
            ("https://api.test:0/x", None),
            ("https://api.test:99999/x", None),
            ("https://api.test:+80/x", None),
            ("https://[::1]/x", Some(url(true, "::1", 443, "/x"))),
            ("", None),
            ("#only", None),
        ];
        for (location, want) in cases {
            assert_eq!(&resolve(location, &base), want, "{location}");
        }
        // Relative to the root when the base has no directory.
        let root = url(false, "api.test", 80, "/");
        assert_eq!(resolve("x", &root), Some(url(false, "api.test", 80, "/x")));
    }

    #[test]
    fn which_redirects_are_followed_and_how() {
        let from = url(true, "api.test", 443, "/redirect");
        let in_set = |host: &str| host == "api.test" || host.ends_with(".api.test");
        let get = Method::GET;
        let post = Method::POST;
        let head = Method::HEAD;
        use Held::{Empty, Streaming, Whole};
        // (status, Location, method, body, plain HTTP allowed) →
        // (method, body kept) or why not.
        type Case<'a> = (
            u16,
            Option<&'a str>,
            &'a Method,
            Held,
            bool,
            Result<(Method, bool), &'a str>,
        );
        let cases: &[Case] = &[
            (
                302,
                Some("/echo"),
                &get,
                Empty,
                false,
                Ok((Method::GET, false)),
            ),
            (
                301,
                Some("/echo"),
                &head,
                Empty,
                false,
                Ok((Method::HEAD, false)),
            ),
            (
                302,
                Some("/echo"),
                &post,
                Streaming,
                false,
                Ok((Method::GET, false)),
            ),
            (
                301,
                Some("/echo"),
                &Method::PUT,
                Whole,
                false,
                Ok((Method::GET, false)),
            ),
            (
                303,
                Some("/echo"),
                &post,
                Whole,
                false,
                Ok((Method::GET, false)),
            ),
            (
                303,
                Some("/echo"),
                &head,
                Empty,
                false,
                Ok((Method::HEAD, false)),
            ),
            (
                307,
                Some("/echo"),
                &post,
                Whole,
                false,
                Ok((Method::POST, true)),
            ),
            (
                308,
                Some("/echo"),
                &Method::PUT,
                Whole,
                false,
                Ok((Method::PUT, true)),
            ),
            (
                307,
                Some("/echo"),
                &get,
                Empty,
                false,
                Ok((Method::GET, false)),
            ),
            (
                307,
                Some("/echo"),
                &post,
                Empty,
                false,
                Ok((Method::POST, false)),
            ),
            (
                307,
                Some("/echo"),
                &post,
                Streaming,
                false,
                Err("body_not_kept"),
            ),
            (
                308,
                Some("/echo"),
                &get,
                Streaming,
                false,
                Err("body_not_kept"),
            ),
            (
                302,
                Some("/echo"),
                &get,
                Streaming,
                false,
                Err("body_not_kept"),
            ),
            (
                302,
                Some("https://eu.api.test/x"),
                &get,
                Empty,
                false,
                Ok((Method::GET, false)),
            ),
            (
                302,
                Some("https://other.test/x"),
                &get,
                Empty,
                false,
                Err("host_not_bound"),
            ),
            (
                302,
                Some("http://api.test/x"),
                &get,
                Empty,
                false,
                Err("scheme"),
            ),
            (
                302,
                Some("http://api.test/x"),
                &get,
                Empty,
                true,
                Ok((Method::GET, false)),
            ),
            (302, Some("/../x"), &get, Empty, false, Err("bad_location")),
            (302, None, &get, Empty, false, Err("no_location")),
            (
                200,
                Some("/echo"),
                &get,
                Empty,
                false,
                Err("not_a_redirect"),
            ),
            (
                300,
                Some("/echo"),
                &get,
                Empty,
                false,
                Err("not_a_redirect"),
            ),
            (
                304,
                Some("/echo"),
                &get,
                Empty,
                false,
                Err("not_a_redirect"),
            ),
            (
                305,
                Some("/echo"),
                &get,
                Empty,
                false,
                Err("not_a_redirect"),
            ),
        ];
        for (status, location, method, held, plain, want) in cases {
            let status = StatusCode::from_u16(*status).expect("status");
            let value = location.map(|l| HeaderValue::from_str(l).expect("value"));
            let locations: Vec<&HeaderValue> = value.iter().collect();
            let got = next(status, &locations, &from, method, *held, &in_set, *plain)
                .map(|n| (n.method, n.keep_body));
            assert_eq!(&got, want, "{status} {location:?} {method} {held:?}");
        }
        // Two Locations, or one that is not text, are not followed.
        let (a, b) = (
            HeaderValue::from_static("/a"),
            HeaderValue::from_static("/b"),
        );
        let found = StatusCode::FOUND;
        let two = next(found, &[&a, &b], &from, &get, Empty, &in_set, false);
        assert_eq!(two, Err("no_location"));
        let binary = HeaderValue::from_bytes(b"/\xff").expect("value");
        let odd = next(found, &[&binary], &from, &get, Empty, &in_set, false);
        assert_eq!(odd, Err("bad_location"));
        let next = next(found, &[&a], &from, &get, Empty, &in_set, false).expect("followed");
        assert_eq!(next.url.shown(), "api.test:443/a");
        let v6 = url(true, "::1", 8443, "/p?secret=1");
        assert_eq!(v6.shown(), "[::1]:8443/p");
    }
}
