//! `sluice explain`: runs one request through a policy's stages on paper and
//! says, for each, what it would decide and which rule decided.
//!
//! The evaluation is the daemon's own (`NetworkPolicy::decide`,
//! `name_verdict`); only resolution happens here, through the same resolver
//! configuration the daemon uses. Stages this build does not enforce yet
//! say so rather than guess.

use std::{
    fmt,
    net::{IpAddr, SocketAddr},
};

use hyper::Uri;

use crate::policy::{
    compiled::CompiledPolicy,
    network::{ConnRequest, NameVerdict, NetVerdict},
};

/// A request to explain, parsed from a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub method: String,
    pub scheme: String,
    /// Host as written: a name, or an address.
    pub host: String,
    pub port: u16,
    pub path: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExplainError {
    #[error("`{0}` is not a URL: write it as https://host[:port]/path")]
    BadUrl(String),
    #[error("`{0}`: only http and https URLs can be explained")]
    Scheme(String),
}

impl Target {
    pub fn parse(method: &str, url: &str) -> Result<Target, ExplainError> {
        let uri: Uri = url
            .parse()
            .map_err(|_| ExplainError::BadUrl(url.to_owned()))?;
        let scheme = uri
            .scheme_str()
            .ok_or_else(|| ExplainError::BadUrl(url.to_owned()))?
            .to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            _ => return Err(ExplainError::Scheme(url.to_owned())),
        };
        let host = uri
            .host()
            .ok_or_else(|| ExplainError::BadUrl(url.to_owned()))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        Ok(Target {
            method: method.to_ascii_uppercase(),
            scheme,
            host,
            port: uri.port_u16().unwrap_or(default_port),
            path: uri
                .path_and_query()
                .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned()),
        })
    }

    /// The host when it is an address literal.
    pub fn address(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }
}

/// One stage's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub stage: &'static str,
    pub verdict: String,
    pub detail: String,
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<16} {:<8} {}", self.stage, self.verdict, self.detail)
    }
}

/// Every stage, in pipeline order, for `target` reached at `dst` (the
/// address a sandbox would have connected to); `name_addrs` is what the
/// name resolves to.
pub fn explain(
    policy: &CompiledPolicy,
    target: &Target,
    dst: SocketAddr,
    name_addrs: &[IpAddr],
) -> Vec<Line> {
    let name = target.address().is_none().then_some(target.host.as_str());
    let (sni, host) = match target.scheme.as_str() {
        "https" => (name, None),
        _ => (None, name),
    };
    let mut lines = Vec::new();
    if let Some(name) = name {
        let (verdict, detail) = match policy.network.name_verdict(name) {
            NameVerdict::Allow { rule } => ("answer", format!("{}:{rule}", policy.name)),
            NameVerdict::Deny { rule } => ("refuse", format!("{}:{rule}", policy.name)),
            NameVerdict::ByAddress => (
                "filter",
                "answers kept only where an address rule allows them".to_owned(),
            ),
        };
        lines.push(Line {
            stage: "dns",
            verdict: verdict.to_owned(),
            detail,
        });
    }
    let verdict = policy.network.decide(&ConnRequest {
        dst,
        sni,
        host,
        name_addrs: Some(name_addrs),
        host_address: crate::proxy::host_address::for_policy(&policy.network, dst.ip()),
        ech: false,
    });
    let network_allowed = matches!(verdict, NetVerdict::Allow { .. });
    lines.push(match verdict {
        NetVerdict::Allow { rule } => Line {
            stage: "network",
            verdict: "allow".to_owned(),
            detail: format!("{}:{rule} (connect to {dst})", policy.name),
        },
        NetVerdict::Deny { reason, rule } => Line {
            stage: "network",
            verdict: "deny".to_owned(),
            detail: format!(
                "{}:{rule} ({}; connect to {dst})",
                policy.name,
                reason.as_str()
            ),
        },
    });
    if !network_allowed {
        return lines;
    }
    let mode = if policy.network.decide_without_decryption() {
        "passthrough: decided on SNI/Host, not decrypted"
    } else {
        "intercept: TLS would be terminated"
    };
    lines.push(Line {
        stage: "inspection",
        verdict: "info".to_owned(),
        detail: mode.to_owned(),
    });
    // Stages whose behaviour lands later: configured or not, say so.
    let later: [(&'static str, bool); 6] = [
        ("apps", !policy.apps.is_empty()),
        ("dry_run", policy.dry_run),
        ("credentials", !policy.credentials.is_empty()),
        ("pii", policy.pii.enabled),
        ("injection", policy.injection_defense.enabled),
        ("transformations", !policy.transformations.is_empty()),
    ];
    for (stage, configured) in later {
        lines.push(Line {
            stage,
            verdict: "skip".to_owned(),
            detail: if configured {
                "configured, not enforced by this build yet".to_owned()
            } else {
                "not configured".to_owned()
            },
        });
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_with_default_ports() {
        let cases = [
            (
                "get",
                "https://API.example.com/v1?q=1",
                "GET",
                "https",
                "api.example.com",
                443,
                "/v1?q=1",
            ),
            (
                "POST",
                "http://example.com",
                "POST",
                "http",
                "example.com",
                80,
                "/",
            ),
            (
                "GET",
                "http://[::1]:8080/x",
                "GET",
                "http",
                "::1",
                8080,
                "/x",
            ),
        ];
        for (method, url, m, scheme, host, port, path) in cases {
            let t = Target::parse(method, url).expect(url);
            assert_eq!(
                (
                    t.method.as_str(),
                    t.scheme.as_str(),
                    t.host.as_str(),
                    t.port,
                    t.path.as_str()
                ),
                (m, scheme, host, port, path),
                "{url}"
            );
        }
        assert_eq!(
            Target::parse("GET", "ftp://x/").expect_err("scheme"),
            ExplainError::Scheme("ftp://x/".to_owned())
        );
        assert!(Target::parse("GET", "not a url").is_err());
        assert_eq!(
            Target::parse("GET", "http://[::1]:8080/")
                .expect("v6")
                .address(),
            Some("::1".parse().expect("ip"))
        );
    }
}
