//! What crosses the ingress in each direction besides the body.
//!
//! Toward the app an allowlist: only the headers a web app needs to serve
//! a page, a fetch, an SSE stream or a WebSocket pass; everything else the
//! viewer's browser sent (its cookies, Authorization, CSRF tokens,
//! forwarding and identity headers, the ingress's own session cookie, and
//! whatever header is invented next) stays behind. From the app, headers
//! that would act on the apps domain rather than on the one page are
//! removed, and the operator's Content-Security-Policy is added. Pure.

use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;

/// Request headers passed to the app, by name; every other is dropped.
/// Hop-by-hop headers are not here: the listener sets `Connection` and
/// `Upgrade` itself for an upgrade, and `Host` names the app's address.
pub const PASSED: &[&str] = &[
    "accept",
    "accept-encoding",
    "accept-language",
    "cache-control",
    "content-encoding",
    "content-language",
    "content-length",
    "content-type",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    // SSE: where a reconnecting EventSource resumes.
    "last-event-id",
    "origin",
    "pragma",
    "range",
    // WebSocket handshakes.
    "sec-websocket-extensions",
    "sec-websocket-key",
    "sec-websocket-protocol",
    "sec-websocket-version",
    "user-agent",
];

/// Answer headers removed: each acts beyond the page it came with, on the
/// viewer's session or on every app of the domain.
pub const REMOVED_FROM_ANSWERS: &[&str] = &[
    // Cookies land on the apps domain, where the session cookie lives.
    "set-cookie",
    "set-cookie2",
    // Could wipe the ingress's session cookie or the viewer's storage.
    "clear-site-data",
    // Pin or redirect the whole origin (includeSubDomains: every app).
    "strict-transport-security",
    "public-key-pins",
    "public-key-pins-report-only",
    "alt-svc",
    // Browser reports about the domain sent wherever the app says.
    "nel",
    "report-to",
    "reporting-endpoints",
    // Widen a service worker's scope over other apps' paths.
    "service-worker-allowed",
    // Let other origins read answers with the viewer's credentials.
    "access-control-allow-credentials",
    // Framing is decided by the operator's CSP, not by the app.
    "x-frame-options",
    // Hop-by-hop: this connection's, not the app's.
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "trailer",
    "te",
];

/// `ingress.csp`: the Content-Security-Policy added to every answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CspConfig {
    /// Origins that may frame the apps (the control plane's); none:
    /// `'none'`, the apps cannot be framed.
    #[serde(default)]
    pub frame_ancestors: Vec<String>,
    /// The `sandbox` directive's tokens; empty: no `sandbox` directive.
    #[serde(default = "default_sandbox")]
    pub sandbox: String,
}

fn default_sandbox() -> String {
    "allow-scripts allow-forms allow-same-origin allow-popups allow-downloads \
     allow-top-navigation-by-user-activation"
        .into()
}

impl Default for CspConfig {
    fn default() -> Self {
        CspConfig {
            frame_ancestors: Vec::new(),
            sandbox: default_sandbox(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CspError {
    #[error("ingress.csp: `{0}` cannot stand in a CSP header (no `;`, `,` or control characters)")]
    Invalid(String),
}

impl CspConfig {
    /// The header value, checked once at load.
    pub fn header(&self) -> Result<HeaderValue, CspError> {
        let ancestors = if self.frame_ancestors.is_empty() {
            "'none'".to_owned()
        } else {
            self.frame_ancestors.join(" ")
        };
        for part in self.frame_ancestors.iter().chain([&self.sandbox]) {
            if part.contains([';', ',']) || part.chars().any(|c| c.is_control()) {
                return Err(CspError::Invalid(part.clone()));
            }
        }
        let mut csp = format!("frame-ancestors {ancestors}");
        let sandbox = self.sandbox.trim();
        if !sandbox.is_empty() {
            csp.push_str("; sandbox ");
            csp.push_str(sandbox);
        }
        HeaderValue::from_str(&csp).map_err(|_| CspError::Invalid(csp))
    }
}

/// The headers sent to the app for a viewer's request: the allowlisted
/// ones, `Host` naming the app's address, and `Connection: upgrade` with
/// the `Upgrade` the viewer asked for when it asked for one.
pub fn toward_app(viewer: &HeaderMap, app_authority: &str) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(viewer.len());
    for name in PASSED {
        for value in viewer.get_all(*name) {
            out.append(HeaderName::from_static(name), value.clone());
        }
    }
    if let Ok(host) = HeaderValue::from_str(app_authority) {
        out.insert(header::HOST, host);
    }
    if let Some(upgrade) = requested_upgrade(viewer) {
        out.insert(header::UPGRADE, upgrade.clone());
        out.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    }
    out
}

/// The `Upgrade` a request asks for, if its `Connection` names it (an
/// HTTP/1.1 upgrade; HTTP/2's extended CONNECT is not offered).
pub fn requested_upgrade(headers: &HeaderMap) -> Option<&HeaderValue> {
    let asks = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case("upgrade"));
    asks.then(|| headers.get(header::UPGRADE)).flatten()
}

/// The app's answer headers as the viewer gets them: those acting beyond
/// the page removed, along with whatever its `Connection` names, and the
/// CSP added beside any the app sent (browsers enforce every CSP, so the
/// app's own can only narrow ours).
pub fn toward_viewer(answer: &mut HeaderMap, csp: &HeaderValue, upgraded: bool) {
    let named: Vec<HeaderName> = answer
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .filter(|n| n != header::UPGRADE)
        .collect();
    for name in named {
        answer.remove(name);
    }
    for name in REMOVED_FROM_ANSWERS {
        answer.remove(*name);
    }
    if !upgraded {
        answer.remove(header::UPGRADE);
    } else {
        answer.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    }
    answer.append(header::CONTENT_SECURITY_POLICY, csp.clone());
}

#[cfg(test)]
#[path = "headers_tests.rs"]
mod tests;
