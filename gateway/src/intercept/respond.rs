//! Responses Sluice writes itself on a served connection (JSON, marked as
//! its own; what a refusal says is `refusal`'s), and the header hygiene of
//! forwarding: hop-by-hop headers never cross the proxy.

use std::error::Error as StdError;

use http_body_util::{BodyExt as _, Full, combinators::BoxBody};
use hyper::{
    HeaderMap, Response, StatusCode,
    body::Bytes,
    header::{self, HeaderName, HeaderValue},
};

pub type BoxError = Box<dyn StdError + Send + Sync>;
pub type Body = BoxBody<Bytes, BoxError>;

/// A JSON response with `x-sluice-*` headers telling the sandbox who answered.
pub fn json(status: StatusCode, body: serde_json::Value) -> Response<Body> {
    let bytes = Bytes::from(body.to_string());
    let mut response = Response::new(full(bytes));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        HeaderName::from_static("x-sluice-generated"),
        HeaderValue::from_static("1"),
    );
    response
}

pub fn full(bytes: Bytes) -> Body {
    Full::new(bytes).map_err(|never| match never {}).boxed()
}

pub fn empty() -> Body {
    full(Bytes::new())
}

/// Headers that describe one hop, not the message (RFC 9110 §7.6.1), plus
/// the ones HTTP/2 forbids. `Connection` may name more; those go too.
const HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
];

/// Strips hop-by-hop headers. `keep_upgrade` keeps `Connection: upgrade`
/// and `Upgrade` for a WebSocket handshake, which must cross the hop.
pub fn strip_hop_by_hop(headers: &mut HeaderMap, keep_upgrade: bool) {
    // Most messages carry none of them: one look at the names they have
    // instead of a lookup of every name they might (run on every request
    // and every answer).
    if !keep_upgrade && !headers.keys().any(is_hop_by_hop) {
        return;
    }
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .filter(|name| !(keep_upgrade && name == header::UPGRADE))
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
    if keep_upgrade {
        headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    } else {
        headers.remove(header::UPGRADE);
    }
}

/// Whether `name` is stripped whatever `Connection` says: a hop-by-hop
/// header, `Connection` itself (which may name more), or `Upgrade`.
fn is_hop_by_hop(name: &HeaderName) -> bool {
    name == header::UPGRADE || HOP_BY_HOP.contains(name)
}

/// Reads and drops what is left of a refused request's body (up to a bound)
/// before Sluice answers, so a client still sending sees the answer instead
/// of a reset stream (HTTP/2 clients report a reset as a transport error).
pub async fn drain<B>(body: &mut B)
where
    B: hyper::body::Body + Unpin,
{
    use http_body_util::BodyExt as _;
    const MOST: u64 = 64 << 20;
    const FOR: std::time::Duration = std::time::Duration::from_secs(10);
    let mut read = 0u64;
    let _ = tokio::time::timeout(FOR, async {
        while read < MOST {
            match body.frame().await {
                Some(Ok(frame)) => {
                    read += frame
                        .data_ref()
                        .map_or(0, |d| hyper::body::Buf::remaining(d) as u64)
                }
                _ => break,
            }
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers_are_removed() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("connection", "keep-alive, x-private"),
            ("keep-alive", "timeout=5"),
            ("x-private", "1"),
            ("transfer-encoding", "chunked"),
            ("te", "trailers"),
            ("upgrade", "websocket"),
            ("x-kept", "yes"),
            ("authorization", "Bearer x"),
        ] {
            headers.append(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        let mut plain = headers.clone();
        strip_hop_by_hop(&mut plain, false);
        let names: Vec<&str> = plain.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["x-kept", "authorization"]);

        let mut upgrade = headers;
        strip_hop_by_hop(&mut upgrade, true);
        assert_eq!(upgrade["connection"], "upgrade");
        assert_eq!(upgrade["upgrade"], "websocket");
        assert!(upgrade.get("x-private").is_none());
    }

    /// Without `Connection` or a hop-by-hop header nothing changes, and
    /// each one alone is stripped.
    #[test]
    fn hop_by_hop_headers_one_at_a_time() {
        let cases: &[(&str, &str, bool)] = &[
            // (name, value, stripped)
            ("x-kept", "1", false),
            ("authorization", "Bearer x", false),
            ("connection", "close", true),
            ("keep-alive", "timeout=5", true),
            ("proxy-connection", "keep-alive", true),
            ("proxy-authenticate", "Basic", true),
            ("proxy-authorization", "Basic eA==", true),
            ("te", "trailers", true),
            ("trailer", "x-sum", true),
            ("transfer-encoding", "chunked", true),
            ("upgrade", "websocket", true),
        ];
        for &(name, value, stripped) in cases {
            let mut headers = HeaderMap::new();
            headers.insert(
                HeaderName::from_static("host"),
                HeaderValue::from_static("a"),
            );
            headers.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
            strip_hop_by_hop(&mut headers, false);
            assert_eq!(headers.get(name).is_none(), stripped, "{name}");
            assert_eq!(headers.len(), if stripped { 1 } else { 2 }, "{name}");
        }
    }

    #[test]
    fn generated_responses_are_json_and_marked() {
        let response = json(StatusCode::BAD_GATEWAY, serde_json::json!({"reason": "x"}));
        assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
        assert_eq!(response.headers()["content-type"], "application/json");
        assert_eq!(response.headers()["x-sluice-generated"], "1");
    }
}
