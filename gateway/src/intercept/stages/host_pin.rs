//! The host pin: every request on a connection is for the host the
//! connection was decided on. Over TLS hygiene ties each request to the
//! SNI; on plain HTTP the connection was decided on its first request's
//! Host, and a later one naming another is refused (421, which tells
//! clients to open a new connection) before any stage reads it.

use hyper::{header, http::request::Parts};

use super::{Exchange, Outcome};
use crate::intercept::{Conn, refusal::Refusal, same_host};

pub(super) fn run(conn: &Conn, exchange: &mut Exchange) -> Outcome {
    match decide(conn.key.tls, &exchange.parts, &conn.key.name) {
        Some(refusal) => Outcome::Refuse(refusal),
        None => Outcome::Continue,
    }
}

/// A later request on a plain-HTTP connection must name the host the
/// connection was decided on (`name`).
fn decide(tls: bool, parts: &Parts, name: &str) -> Option<Refusal> {
    if tls || same_host(parts, name) {
        return None;
    }
    let named = parts.headers.get(header::HOST);
    let named = named.and_then(|v| v.to_str().ok()).unwrap_or_default();
    Some(Refusal::HostChanged {
        named: named.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use hyper::{Request, StatusCode};

    use super::*;

    fn parts(target: &str, headers: &[(&str, &str)]) -> Parts {
        let mut request = Request::builder().uri(target);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).expect("request").into_parts().0
    }

    /// (tls, target, headers, the connection's name, refused naming)
    type HostCase = (
        bool,
        &'static str,
        &'static [(&'static str, &'static str)],
        &'static str,
        Option<&'static str>,
    );

    #[test]
    fn host_changed_table() {
        #[rustfmt::skip]
        let cases: &[HostCase] = &[
            (false, "/", &[("host", "api.test")], "api.test", None),
            (false, "/", &[("host", "API.test:8080")], "api.test", None),
            (false, "/", &[("host", "other.test")], "api.test", Some("other.test")),
            (false, "http://other.test/", &[], "api.test", Some("")),
            (false, "/", &[], "api.test", None),
            (true, "/", &[("host", "other.test")], "api.test", None),
        ];
        for &(tls, target, headers, name, want) in cases {
            let got = decide(tls, &parts(target, headers), name);
            let want = want.map(|named| Refusal::HostChanged {
                named: named.to_owned(),
            });
            assert_eq!(got, want, "{tls} {target} {headers:?}");
        }
        let refusal = Refusal::HostChanged {
            named: "b.test".into(),
        };
        assert_eq!(refusal.status(), StatusCode::MISDIRECTED_REQUEST);
        assert_eq!(
            (refusal.reason(), refusal.audit_detail().as_deref()),
            ("host_changed", Some("Host b.test"))
        );
    }
}
