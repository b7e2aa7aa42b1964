//! `sluice explain`: runs one request through a policy's stages on paper and
//! says, for each, what it would decide and which rule decided.
//!
//! The evaluation is the daemon's own (`NetworkPolicy::decide`,
//! `name_verdict`); only resolution happens here, through the same resolver
//! configuration the daemon uses. The request stages say whether they
//! would read the request; their verdicts on a body are not guessed.

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

    /// The host when it is an address, however spelt (`127.1`,
    /// `0x7f000001`): the daemon reads such a name as the address.
    pub fn address(&self) -> Option<IpAddr> {
        crate::policy::ssrf::parse_ip_like(&self.host)
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
    // The network decision sees the host as written, an address too: one
    // that is not the connected address is refused (`ip_like_name`), as
    // the daemon refuses it.
    let claimed = Some(target.host.as_str());
    let (sni, host) = match target.scheme.as_str() {
        "https" => (claimed, None),
        _ => (None, claimed),
    };
    let mut lines = Vec::new();
    if let Some(name) = name {
        let (verdict, detail) = match policy.network.name_verdict(name) {
            NameVerdict::Allow { rule } => ("answer", format!("{}:{rule}", policy.name)),
            NameVerdict::Deny { rule } => ("refuse", format!("{}:{rule}", policy.name)),
            NameVerdict::WouldDeny { rule } => (
                "answer",
                format!("{}:{rule} would refuse it (learn mode)", policy.name),
            ),
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
        exe: None,
    });
    let network_allowed = !matches!(verdict, NetVerdict::Deny { .. });
    lines.push(match verdict {
        NetVerdict::Ask { rule } => Line {
            stage: "network",
            verdict: "ask".to_owned(),
            detail: format!(
                "{}:{rule} (parked until a person approves; then connect to {dst})",
                policy.name
            ),
        },
        NetVerdict::WouldAsk { rule } => Line {
            stage: "network",
            verdict: "would_ask".to_owned(),
            detail: format!(
                "{}:{rule} would ask a person (learn mode: connects to {dst})",
                policy.name
            ),
        },
        NetVerdict::Allow { rule } => Line {
            stage: "network",
            verdict: "allow".to_owned(),
            detail: format!("{}:{rule} (connect to {dst})", policy.name),
        },
        NetVerdict::WouldDeny { reason, rule } => Line {
            stage: "network",
            verdict: "would_deny".to_owned(),
            detail: format!(
                "{}:{rule} ({}; learn mode: connects to {dst})",
                policy.name,
                reason.as_str()
            ),
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
    // Whether the request itself would be read: plain HTTP where the
    // daemon reads a connection's first bytes, HTTPS when the policy
    // decrypts this name.
    let read = match target.scheme.as_str() {
        "https" => policy.network.intercepts(name),
        _ => policy.reads_first_bytes(target.port),
    };
    let mode = match (target.scheme.as_str(), read) {
        ("https", true) => "intercept: TLS terminated, each request read",
        ("https", false) => "passthrough: decided on the SNI, not decrypted",
        (_, true) => "plain HTTP: each request read (its Host must stay the connection's)",
        (_, false) => "plain HTTP: relayed as it comes (nothing here depends on what it says)",
    };
    lines.push(Line {
        stage: "inspection",
        verdict: "info".to_owned(),
        detail: mode.to_owned(),
    });
    // What becomes of first bytes that are neither a well-formed TLS
    // ClientHello nor an HTTP/1 request head (another protocol, a hello
    // that does not parse, a head with two Hosts) on this port.
    lines.push(match policy.first_bytes_reader(target.port) {
        Some(reader) => Line {
            stage: "first_bytes",
            verdict: "refuse".to_owned(),
            detail: format!(
                "unless a well-formed TLS ClientHello or HTTP/1 request head: {}:{reader} reads them",
                policy.name
            ),
        },
        None => Line {
            stage: "first_bytes",
            verdict: "relay".to_owned(),
            detail: format!(
                "relayed unread: nothing in the policy reads port {} (no name rule, decryption, ECH check or HTTP stage)",
                target.port
            ),
        },
    });
    // The connection's network rule, where it names the methods and
    // paths its requests may use (decided before any other request stage).
    if let Some(rule) = policy.network.request_rule(Some(&target.host), dst) {
        let (verdict, detail) = match rule.decide(&target.method, &target.path, false) {
            Ok(()) => ("allow", format!("{}:{}", policy.name, rule.describe())),
            Err(why) => (
                "refuse",
                format!("{}:{} ({})", policy.name, rule.describe(), why.as_str()),
            ),
        };
        lines.push(Line {
            stage: "network_rule",
            verdict: verdict.to_owned(),
            detail,
        });
    }
    let writes = !matches!(target.method.as_str(), "GET" | "HEAD");
    // The app stage's decision is known on paper: it reads only the
    // method and path.
    let app = hyper::Method::from_bytes(target.method.as_bytes())
        .ok()
        .and_then(|method| {
            policy
                .app_lookup
                .decide(&target.host, &method, &target.path)
        });
    let app_detail = app.as_ref().map(|d| {
        let mode = match d.refusal {
            Some(refusal) => format!("deny ({})", refusal.as_str()),
            None => format!("{:?}", d.mode).to_lowercase(),
        };
        format!("{mode} by {}", d.rule(&policy.name))
    });
    // What each request stage would do with this request, on paper: the
    // content stages' verdicts depend on the body, which is not known here.
    for (stage, configured) in policy.http_stages() {
        let applies = match stage {
            "apps" => app_detail
                .as_deref()
                .unwrap_or("no app of the catalogue covers this host"),
            "dry_run" if writes => "answered 202 with a preview; the upstream is not reached",
            "dry_run" => "GET and HEAD proceed",
            "credentials" => "bound credentials swapped in toward their hosts",
            "pii" => "the body is scanned (the verdict depends on it)",
            "injection_defense" if policy.content.scores_injection(&target.host, &target.path) => {
                "the body is scored (the verdict depends on it)"
            }
            "injection_defense" => {
                "not scored: not a model API request (`requests: llm_apis`; list it in `hosts` or `paths`, or say `requests: all`)"
            }
            "transformations" => "rules for this host rewrite the bodies",
            _ => "the request is read",
        };
        // An app the policy does not list still decides (`apps.default`).
        let configured = configured || (stage == "apps" && app.is_some());
        let (verdict, detail) = match (configured, read) {
            (false, _) => ("skip", "not configured".to_owned()),
            (true, false) => (
                "skip",
                "configured; not applied: this connection is not decrypted".to_owned(),
            ),
            (true, true) => ("apply", applies.to_owned()),
        };
        lines.push(Line {
            stage,
            verdict: verdict.to_owned(),
            detail,
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
        assert_eq!(
            Target::parse("GET", "http://0x7f.1/")
                .expect("hex")
                .address(),
            Some("127.0.0.1".parse().expect("ip"))
        );
    }

    /// A URL whose host is an address, explained with `--address` another
    /// one: decided as the daemon decides it, never by the address alone.
    #[test]
    fn an_address_host_is_judged_as_the_daemon_judges_it() {
        let yaml = "network:\n  allow_out: [\"93.184.216.34\", \"93.184.216.35\"]\n";
        let raw: crate::policy::raw::Policy = serde_yaml::from_str(yaml).expect("yaml");
        let policy = CompiledPolicy::compile("p", &raw).expect("compiles");
        let dst: SocketAddr = "93.184.216.34:443".parse().expect("addr");
        // (url, network verdict, detail fragment)
        let cases = [
            ("https://93.184.216.34/", "allow", "p:network.allow_out[0]"),
            (
                "http://93.184.216.34:443/",
                "allow",
                "p:network.allow_out[0]",
            ),
            ("https://1572395042/", "allow", "p:network.allow_out[0]"),
            ("https://93.184.216.35/", "deny", "ip_like_name"),
            ("http://0x5db8d823:443/", "deny", "ip_like_name"),
        ];
        for (url, verdict, detail) in cases {
            let target = Target::parse("GET", url).expect("url");
            let lines = explain(&policy, &target, dst, &[dst.ip()]);
            let network = lines
                .iter()
                .find(|l| l.stage == "network")
                .expect("network");
            assert_eq!(network.verdict, verdict, "{url}: {network:?}");
            assert!(network.detail.contains(detail), "{url}: {network:?}");
            assert!(lines.iter().all(|l| l.stage != "dns"), "{url}: no lookup");
        }
    }

    /// An `allow_out` rule with methods or paths: its verdict on the
    /// method and URL, naming the rule; HTTPS to it is read (decrypted).
    #[test]
    fn a_network_rule_judges_the_method_and_path() {
        let yaml = "network:\n  allow_out: [{to: api.test, methods: [GET], paths: ['/v1/**']}]\n";
        let raw: crate::policy::raw::Policy = serde_yaml::from_str(yaml).expect("yaml");
        let policy = CompiledPolicy::compile("p", &raw).expect("compiles");
        let dst: SocketAddr = "93.184.216.34:443".parse().expect("addr");
        // (method, url, verdict, detail fragment)
        #[rustfmt::skip]
        let cases = [
            ("GET", "https://api.test/v1/x?q=1", "allow", "p:network.allow_out[0] allows GET to /v1/**"),
            ("POST", "https://api.test/v1/x", "refuse", "(method_not_allowed)"),
            ("GET", "http://api.test:443/v2", "refuse", "(path_not_allowed)"),
        ];
        for (method, url, verdict, detail) in cases {
            let target = Target::parse(method, url).expect("url");
            let lines = explain(&policy, &target, dst, &[dst.ip()]);
            let line = lines.iter().find(|l| l.stage == "network_rule");
            let line = line.unwrap_or_else(|| panic!("network_rule in {lines:?}"));
            assert_eq!(line.verdict, verdict, "{url}: {line:?}");
            assert!(line.detail.contains(detail), "{url}: {line:?}");
        }
        let other = Target::parse("POST", "https://other.test/").expect("url");
        let lines = explain(&policy, &other, dst, &[dst.ip()]);
        assert!(lines.iter().all(|l| l.stage != "network_rule"), "{lines:?}");
    }

    /// Per policy shape, whether bytes that are neither TLS nor HTTP/1 are
    /// refused (and what reads them) or relayed unread.
    #[test]
    fn first_bytes_are_refused_wherever_the_policy_reads_them() {
        let network = "network:\n  allow_out: [\"93.184.216.34\"]\n";
        #[rustfmt::skip]
        let cases = [
            ("", "http://93.184.216.34:22/", "relay", "relayed unread"),
            ("  allow_out: [\"93.184.216.34\", \"api.test\"]\n", "http://93.184.216.34:22/", "refuse", "p:network.name_rules"),
            ("  allow_out: [\"93.184.216.34\", \"api.test:443\"]\n", "http://93.184.216.34:22/", "relay", "relayed unread"),
            ("  decide_without_decryption: false\n", "http://93.184.216.34:22/", "refuse", "p:network.decide_without_decryption"),
            ("  encrypted_client_hello: refuse\n", "http://93.184.216.34:22/", "refuse", "p:network.encrypted_client_hello"),
            ("credentials:\n  - {credential: gh}\n", "http://93.184.216.34:22/", "refuse", "p:credentials"),
            ("pii:\n  enabled: true\n", "http://93.184.216.34:22/", "refuse", "p:pii"),
        ];
        for (extra, url, verdict, detail) in cases {
            // A second `allow_out` replaces the first (the YAML's last key).
            let yaml = if extra.starts_with("  allow_out") {
                format!("network:\n{extra}")
            } else {
                format!("{network}{extra}")
            };
            let raw: crate::policy::raw::Policy = serde_yaml::from_str(&yaml).expect("yaml");
            let policy = CompiledPolicy::compile("p", &raw).expect("compiles");
            let target = Target::parse("GET", url).expect("url");
            let dst: SocketAddr = "93.184.216.34:22".parse().expect("addr");
            let lines = explain(&policy, &target, dst, &[dst.ip()]);
            let line = lines
                .iter()
                .find(|l| l.stage == "first_bytes")
                .unwrap_or_else(|| panic!("first_bytes in {lines:?}"));
            assert_eq!(line.verdict, verdict, "{yaml}");
            assert!(line.detail.contains(detail), "{yaml}: {line:?}");
        }
    }

    /// The request stages say whether they would read the request: plain
    /// HTTP always, HTTPS only where the policy decrypts the name.
    #[test]
    fn request_stages_apply_where_the_request_is_read() {
        let yaml = "network:\n  allow_out: [\"93.184.216.34\"]\n  passthrough: [pinned.test]\n  decide_without_decryption: true\npii:\n  enabled: true\ndry_run: true\n";
        let relay: crate::policy::raw::Policy = serde_yaml::from_str(yaml).expect("yaml");
        let mut decrypting = relay.clone();
        decrypting.network.decide_without_decryption = Some(false);
        let dst: SocketAddr = "93.184.216.34:443".parse().expect("addr");
        // (decrypting, method, url, inspection starts with, pii, dry_run detail starts with)
        #[rustfmt::skip]
        let cases = [
            (false, "GET", "https://api.test/", "passthrough", "skip", "configured; not applied"),
            (false, "POST", "http://api.test/", "plain HTTP", "apply", "answered 202"),
            (true, "POST", "https://api.test/", "intercept", "apply", "answered 202"),
            (true, "GET", "https://api.test/", "intercept", "apply", "GET and HEAD"),
            (true, "POST", "https://pinned.test/", "passthrough", "skip", "configured; not applied"),
        ];
        for (decrypts, method, url, inspection, pii, dry_run) in cases {
            let raw = if decrypts { &decrypting } else { &relay };
            let policy = CompiledPolicy::compile("p", raw).expect("compiles");
            let target = Target::parse(method, url).expect("url");
            let lines = explain(&policy, &target, dst, &[dst.ip()]);
            let line = |stage: &str| {
                lines
                    .iter()
                    .find(|l| l.stage == stage)
                    .unwrap_or_else(|| panic!("{stage} in {lines:?}"))
                    .clone()
            };
            assert!(
                line("inspection").detail.starts_with(inspection),
                "{url}: {lines:?}"
            );
            assert_eq!(line("pii").verdict, pii, "{method} {url}");
            assert!(
                line("dry_run").detail.starts_with(dry_run),
                "{method} {url}: {lines:?}"
            );
            assert_eq!(line("apps").detail, "not configured", "{url}");
            // Every request stage, in the order a request meets them.
            let stages: Vec<&str> = lines
                .iter()
                .map(|l| l.stage)
                .skip_while(|&s| s != "apps")
                .collect();
            assert_eq!(
                stages,
                [
                    "apps",
                    "dry_run",
                    "credentials",
                    "pii",
                    "injection_defense",
                    "transformations"
                ]
            );
        }
    }

    /// The app stage's decision for the method and path, with its rule:
    /// an app the policy does not list decides by `apps.default`.
    #[test]
    fn the_app_decision_is_shown_with_its_rule() {
        let apps: Vec<crate::apps::AppConfig> = serde_yaml::from_str(
            "[{name: tracker, hosts: [api.test], actions: [{name: read, method: GET, path: /issues}]}]",
        )
        .expect("apps");
        let catalogue = crate::apps::Catalogue::compile(&apps).expect("catalogue");
        let network =
            "network:\n  allow_out: [\"93.184.216.34\"]\n  decide_without_decryption: false\n";
        let dst: SocketAddr = "93.184.216.34:443".parse().expect("addr");
        // (apps section, method, url, verdict, detail)
        #[rustfmt::skip]
        let cases = [
            ("", "GET", "https://api.test/issues", "apply", "ask by p:apps.default"),
            ("apps: {default: deny}\n", "GET", "https://api.test/issues", "apply", "deny by p:apps.default"),
            ("apps: [{app: tracker, actions: {read: auto}}]\n", "GET", "https://api.test/issues", "apply", "auto by p:apps.tracker.read"),
            ("apps: [{app: tracker, actions: {read: auto}}]\n", "GET", "https://api.test/a/../issues", "apply", "deny (path_dot_segment) by p:apps.tracker"),
            ("", "GET", "https://other.test/issues", "skip", "not configured"),
        ];
        for (section, method, url, verdict, detail) in cases {
            let raw: crate::policy::raw::Policy =
                serde_yaml::from_str(&format!("{network}{section}")).expect("yaml");
            let mut policy = CompiledPolicy::compile("p", &raw).expect("compiles");
            policy.resolve_apps(&catalogue);
            let target = Target::parse(method, url).expect("url");
            let lines = explain(&policy, &target, dst, &[dst.ip()]);
            let apps = lines.iter().find(|l| l.stage == "apps").expect("apps");
            assert_eq!(
                (apps.verdict.as_str(), apps.detail.as_str()),
                (verdict, detail),
                "{section}{url}"
            );
        }
    }
}
