//! The `ingress:` section of the daemon config as written, and its
//! checks: where the listener binds, how it is reached (TLS with the
//! operator's certificate, or plain HTTP from listed proxies only), the
//! apps domain, the viewer-token keys, the session cookie and the CSP.

use std::{net::SocketAddr, path::PathBuf};

use ipnet::IpNet;
use serde::Deserialize;

use super::{headers::CspConfig, route::RouteBy, session::SameSite, token::ViewerTokenConfig};

/// `ingress:`; the listener is off when the section is absent.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngressConfig {
    /// Addresses the viewers' side is served on (`0.0.0.0:443`, or a
    /// load balancer's backend address).
    pub listen: Vec<SocketAddr>,
    /// Apps are `NAME.<apps_domain>` (or `<apps_domain>/NAME/`).
    pub apps_domain: String,
    #[serde(default)]
    pub route_by: RouteBy,
    /// The operator's certificate (a wildcard for the apps domain) and
    /// key, PEM. Absent: plain HTTP, accepted from `trusted_proxies` only.
    #[serde(default)]
    pub tls: Option<TlsFiles>,
    /// With plain HTTP, the load balancers' addresses or networks; any
    /// other peer's connection is closed unread.
    #[serde(default)]
    pub trusted_proxies: Vec<IpNet>,
    pub viewer_tokens: ViewerTokenConfig,
    #[serde(default)]
    pub csp: CspConfig,
    #[serde(default)]
    pub cookie_same_site: SameSite,
    /// How long dialling an app may take.
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// A signed `x-sluice-viewer` header toward the apps; off when absent.
    #[serde(default)]
    pub viewer_header: Option<super::viewer_header::ViewerHeaderConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFiles {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

fn default_connect_timeout_ms() -> u64 {
    2_000
}

/// What is wrong with an `ingress:` section.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("ingress.listen names no address")]
    NoListen,
    #[error("ingress.apps_domain `{0}` is not a lower-case DNS name")]
    Domain(String),
    #[error(
        "ingress: plain HTTP needs `trusted_proxies` (the load balancers that terminate TLS); \
         or give `tls` a certificate"
    )]
    PlainWithoutProxies,
    #[error("ingress: `trusted_proxies` applies to plain HTTP only; remove it or `tls`")]
    ProxiesWithTls,
    #[error("{0}")]
    Csp(#[from] super::headers::CspError),
}

impl IngressConfig {
    /// Every check that needs no file; key and certificate files are read
    /// when the listener starts.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.listen.is_empty() {
            return Err(ConfigError::NoListen);
        }
        let domain_ok = !self.apps_domain.is_empty()
            && self.apps_domain.len() <= 200
            && self.apps_domain.split('.').all(super::route::valid_name);
        if !domain_ok {
            return Err(ConfigError::Domain(self.apps_domain.clone()));
        }
        match (&self.tls, self.trusted_proxies.is_empty()) {
            (None, true) => return Err(ConfigError::PlainWithoutProxies),
            (Some(_), false) => return Err(ConfigError::ProxiesWithTls),
            _ => {}
        }
        self.csp.header()?;
        Ok(())
    }

    /// Whether a plain-HTTP peer may speak to the listener.
    pub fn peer_trusted(&self, peer: std::net::IpAddr) -> bool {
        let peer = match peer {
            std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(peer, std::net::IpAddr::V4),
            v4 => v4,
        };
        self.tls.is_some() || self.trusted_proxies.iter().any(|n| n.contains(&peer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> IngressConfig {
        serde_yaml::from_str(yaml).expect("parses")
    }

    const BASE: &str = "listen: ['127.0.0.1:0']\napps_domain: apps.example\n\
                        viewer_tokens: {jwks_file: /dev/null}\n";

    #[test]
    fn sections_are_checked() {
        let table: Vec<(String, Result<(), ConfigError>)> = vec![
            (format!("{BASE}trusted_proxies: [10.0.0.0/8]"), Ok(())),
            (
                format!("{BASE}tls: {{cert_file: c.pem, key_file: k.pem}}"),
                Ok(()),
            ),
            (BASE.to_owned(), Err(ConfigError::PlainWithoutProxies)),
            (
                format!("{BASE}tls: {{cert_file: c, key_file: k}}\ntrusted_proxies: [10.0.0.1/32]"),
                Err(ConfigError::ProxiesWithTls),
            ),
            (
                "listen: []\napps_domain: a.b\nviewer_tokens: {}\ntrusted_proxies: [10.0.0.0/8]"
                    .to_owned(),
                Err(ConfigError::NoListen),
            ),
            (
                "listen: ['127.0.0.1:0']\napps_domain: Apps.Example\nviewer_tokens: {}\n\
                 trusted_proxies: [10.0.0.0/8]"
                    .to_owned(),
                Err(ConfigError::Domain("Apps.Example".into())),
            ),
        ];
        for (yaml, want) in table {
            assert_eq!(config(&yaml).check(), want, "{yaml}");
        }
        let typo = serde_yaml::from_str::<IngressConfig>(&format!("{BASE}trusted_proxy: []"));
        assert!(typo.is_err(), "unknown fields are errors");
    }

    #[test]
    fn only_listed_proxies_speak_plain_http() {
        let c = config(&format!("{BASE}trusted_proxies: [10.0.0.0/8, '::1/128']"));
        for (peer, want) in [
            ("10.1.2.3", true),
            ("::ffff:10.1.2.3", true),
            ("::1", true),
            ("11.0.0.1", false),
            ("127.0.0.1", false),
        ] {
            assert_eq!(c.peer_trusted(peer.parse().expect("ip")), want, "{peer}");
        }
    }
}
