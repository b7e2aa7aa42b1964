//! `sluice policy suggest`: an audit log turned into the `allow_out` rules
//! that would have let its connections through, to review and `sluice
//! check`. Run an agent once under `mode: learn`, then lock the policy down
//! to what it did.
//!
//! Read: `connection` events with verdict `allow` or `would_deny` (what
//! was let through); refusals are not proposed, and lines that are not
//! audit events are counted and skipped. Each destination is its name (SNI
//! or Host) or, without one, its address, with the ports used. Names are
//! grouped by registrable domain (`api.example.co.uk` under
//! `example.co.uk`); where [`WILDCARD_AT`] or more names below one domain
//! were seen, one `*.domain` rule stands for them (a CDN's shards, a
//! service's regions), otherwise each name is its own rule. Every rule is
//! commented with its connections and the programs that made them. Pure:
//! text in, text out.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::dns_guard::registrable;

/// Distinct names below one registrable domain from which a wildcard is
/// proposed instead of the names.
pub const WILDCARD_AT: usize = 4;

/// Which events count.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this sandbox's connections.
    pub sandbox: Option<String>,
    /// Only events at or after this time (milliseconds since the epoch).
    pub since_ms: Option<u64>,
}

/// The fields of an audit line this reads.
#[derive(Deserialize)]
struct Line {
    #[serde(default)]
    ts_ms: u64,
    event: String,
    verdict: String,
    #[serde(default)]
    sandbox: Option<String>,
    #[serde(default)]
    dst: Option<String>,
    #[serde(default)]
    sni: Option<String>,
    #[serde(default)]
    host: Option<String>,
    #[serde(default)]
    process: Option<LineProcess>,
}

#[derive(Deserialize)]
struct LineProcess {
    comm: String,
}

/// What was seen of one destination.
#[derive(Debug, Default)]
struct Seen {
    connections: u64,
    ports: BTreeSet<u16>,
    /// Program name → connections.
    programs: BTreeMap<String, u64>,
}

impl Seen {
    fn add(&mut self, other: &Seen) {
        self.connections += other.connections;
        self.ports.extend(&other.ports);
        for (program, n) in &other.programs {
            *self.programs.entry(program.clone()).or_default() += n;
        }
    }
}

/// The policy suggested, and what the log held.
#[derive(Debug)]
pub struct Suggestion {
    /// The policy's YAML, comments included.
    pub yaml: String,
    /// Connections that became rules.
    pub connections: u64,
    /// Lines that were not audit events, or named nothing usable.
    pub skipped: u64,
}

/// `--since`: milliseconds since the epoch, or a time that long before
/// `now_ms` (`45s`, `30m`, `2h`, `1d`).
pub fn since_ms(text: &str, now_ms: u64) -> Result<u64, String> {
    let text = text.trim();
    if let Ok(ms) = text.parse::<u64>() {
        return Ok(ms);
    }
    let unit = |suffix: char, ms: u64| {
        text.strip_suffix(suffix)
            .and_then(|n| n.parse::<u64>().ok())
            .map(|n| now_ms.saturating_sub(n.saturating_mul(ms)))
    };
    unit('s', 1000)
        .or_else(|| unit('m', 60_000))
        .or_else(|| unit('h', 3_600_000))
        .or_else(|| unit('d', 86_400_000))
        .ok_or_else(|| {
            format!("`{text}` is not a time: write milliseconds since the epoch, or an age such as 30m, 2h or 1d")
        })
}

/// Reads `log` (JSON lines) and writes the policy.
pub fn suggest(log: &str, filter: &Filter) -> Suggestion {
    let mut names: BTreeMap<String, Seen> = BTreeMap::new();
    let mut addresses: BTreeMap<String, Seen> = BTreeMap::new();
    let (mut connections, mut skipped) = (0, 0);
    for text in log.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(line) = serde_json::from_str::<Line>(text) else {
            skipped += 1;
            continue;
        };
        let admitted = matches!(line.verdict.as_str(), "allow" | "would_deny");
        let wanted = filter.sandbox.is_none() || line.sandbox == filter.sandbox;
        let recent = filter.since_ms.is_none_or(|since| line.ts_ms >= since);
        if line.event != "connection" || !admitted || !wanted || !recent {
            continue;
        }
        let Some(dst) = line
            .dst
            .as_deref()
            .and_then(|d| d.parse::<std::net::SocketAddr>().ok())
        else {
            skipped += 1;
            continue;
        };
        let name = line.sni.as_deref().or(line.host.as_deref());
        let seen = match name.map(|n| n.trim_end_matches('.').to_ascii_lowercase()) {
            Some(name) if is_name(&name) => names.entry(name).or_default(),
            Some(_) => {
                skipped += 1;
                continue;
            }
            None => addresses.entry(dst.ip().to_string()).or_default(),
        };
        seen.connections += 1;
        seen.ports.insert(dst.port());
        let program = line
            .process
            .map_or_else(|| "unknown".to_owned(), |p| p.comm);
        *seen.programs.entry(program).or_default() += 1;
        connections += 1;
    }
    Suggestion {
        yaml: render(&group(names), &addresses, connections, filter),
        connections,
        skipped,
    }
}

/// A DNS name as the policy writes one: letters, digits, `-`, `_`, dots
/// between labels.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.parse::<std::net::IpAddr>().is_err()
        && name.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// One proposed name rule: `to` and what it stands for.
struct NameRule {
    to: String,
    /// The names seen, for a wildcard.
    covers: Vec<String>,
    seen: Seen,
}

/// Names by registrable domain, a wildcard where many were seen below one.
fn group(names: BTreeMap<String, Seen>) -> BTreeMap<String, Vec<NameRule>> {
    let mut by_domain: BTreeMap<String, Vec<(String, Seen)>> = BTreeMap::new();
    for (name, seen) in names {
        let domain = registrable(&name).to_owned();
        by_domain.entry(domain).or_default().push((name, seen));
    }
    by_domain
        .into_iter()
        .map(|(domain, names)| {
            let below = names.iter().filter(|(n, _)| *n != domain).count();
            let rules = if below >= WILDCARD_AT {
                let mut wildcard = NameRule {
                    to: format!("*.{domain}"),
                    covers: Vec::new(),
                    seen: Seen::default(),
                };
                let mut rules = Vec::new();
                for (name, seen) in names {
                    if name == domain {
                        rules.push(NameRule {
                            to: name,
                            covers: Vec::new(),
                            seen,
                        });
                    } else {
                        wildcard.seen.add(&seen);
                        wildcard.covers.push(name);
                    }
                }
                wildcard.to = format!("*.{}", common_parent(&wildcard.covers, &domain));
                rules.push(wildcard);
                rules
            } else {
                names
                    .into_iter()
                    .map(|(to, seen)| NameRule {
                        to,
                        covers: Vec::new(),
                        seen,
                    })
                    .collect()
            };
            (domain, rules)
        })
        .collect()
}

/// The longest run of trailing labels the parents of `names` (each
/// without its first label) share, at least `domain`: `*.cdn.example.net`
/// for `a.cdn.example.net` and `b.cdn.example.net`, not `*.example.net`.
fn common_parent(names: &[String], domain: &str) -> String {
    let parents: Vec<Vec<&str>> = names
        .iter()
        .map(|name| name.split('.').skip(1).collect())
        .collect();
    let shortest = parents.iter().map(Vec::len).min().unwrap_or(0);
    let mut shared: Vec<&str> = Vec::new();
    for i in 1..=shortest {
        let label = parents[0][parents[0].len() - i];
        if parents.iter().all(|p| p[p.len() - i] == label) {
            shared.insert(0, label);
        } else {
            break;
        }
    }
    let parent = shared.join(".");
    match parent.len() >= domain.len() {
        true => parent,
        false => domain.to_owned(),
    }
}

fn render(
    by_domain: &BTreeMap<String, Vec<NameRule>>,
    addresses: &BTreeMap<String, Seen>,
    connections: u64,
    filter: &Filter,
) -> String {
    let mut out = String::new();
    let whose = filter
        .sandbox
        .as_ref()
        .map_or_else(|| "every sandbox".to_owned(), |s| format!("sandbox {s}"));
    out.push_str(&format!(
        "# Suggested by `sluice policy suggest` from {connections} connections of {whose}.\n\
         # Every destination they reached is allowed below, and nothing else: review\n\
         # it (drop what the run should not have done), then `sluice check` it.\n\
         network:\n  allow_out:\n"
    ));
    for (domain, rules) in by_domain {
        out.push_str(&format!("    # {domain}\n"));
        for rule in rules {
            push_rule(&mut out, &rule.to, &rule.seen, &rule.covers);
        }
    }
    if !addresses.is_empty() {
        out.push_str("    # by address (no name was sent)\n");
    }
    for (address, seen) in addresses {
        push_rule(&mut out, address, seen, &[]);
    }
    if by_domain.is_empty() && addresses.is_empty() {
        out.push_str("    []\n");
    }
    out.push_str("  deny_out: [ALL_TRAFFIC]\n");
    out
}

fn push_rule(out: &mut String, to: &str, seen: &Seen, covers: &[String]) {
    let programs: Vec<String> = seen
        .programs
        .iter()
        .map(|(program, n)| format!("{} ({n})", yaml_comment(program)))
        .collect();
    let mut comment = format!(
        "{} connection{}; {}",
        seen.connections,
        if seen.connections == 1 { "" } else { "s" },
        programs.join(", ")
    );
    if !covers.is_empty() {
        comment.push_str(&format!("; {} names: {}", covers.len(), covers.join(", ")));
    }
    let ports: Vec<String> = seen.ports.iter().map(u16::to_string).collect();
    out.push_str(&format!(
        "    # {comment}\n    - {{to: \"{to}\", ports: [{}]}}\n",
        ports.join(", ")
    ));
}

/// A program name (anything a process called itself) kept to one comment
/// line of printable text.
fn yaml_comment(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(verdict: &str, sandbox: &str, dst: &str, sni: Option<&str>, comm: &str) -> String {
        serde_json::json!({
            "ts_ms": 1000,
            "event": "connection",
            "verdict": verdict,
            "reason": "rule_matched",
            "sandbox": sandbox,
            "dst": dst,
            "sni": sni,
            "process": {"pid": 7, "comm": comm},
        })
        .to_string()
    }

    #[test]
    fn names_ports_wildcards_and_programs() {
        let mut log = vec![
            event(
                "would_deny",
                "sb1",
                "192.0.2.1:443",
                Some("api.example.com"),
                "curl",
            ),
            event(
                "would_deny",
                "sb1",
                "192.0.2.1:443",
                Some("API.example.com."),
                "python3",
            ),
            event(
                "allow",
                "sb1",
                "192.0.2.1:80",
                Some("api.example.com"),
                "curl",
            ),
            event("would_deny", "sb1", "198.51.100.7:22", None, "ssh"),
            // Refused, another sandbox, another event: not proposed.
            event("deny", "sb1", "192.0.2.9:443", Some("evil.test"), "curl"),
            event(
                "would_deny",
                "sb2",
                "192.0.2.9:443",
                Some("other.test"),
                "curl",
            ),
            "{\"event\":\"dns\",\"verdict\":\"would_deny\",\"host\":\"x.test\"}".to_owned(),
            "not json".to_owned(),
        ];
        for shard in ["a", "b", "c", "d"] {
            let sni = format!("{shard}.cdn.example.net");
            log.push(event(
                "would_deny",
                "sb1",
                "192.0.2.2:443",
                Some(&sni),
                "node",
            ));
        }
        log.push(event(
            "would_deny",
            "sb1",
            "192.0.2.2:443",
            Some("example.net"),
            "node",
        ));
        let filter = Filter {
            sandbox: Some("sb1".into()),
            since_ms: None,
        };
        let got = suggest(&log.join("\n"), &filter);
        assert_eq!(got.connections, 9);
        assert_eq!(got.skipped, 1);
        let rules: Vec<&str> = got.yaml.lines().filter(|l| l.contains("- {to:")).collect();
        assert_eq!(
            rules,
            [
                "    - {to: \"api.example.com\", ports: [80, 443]}",
                "    - {to: \"example.net\", ports: [443]}",
                "    - {to: \"*.cdn.example.net\", ports: [443]}",
                "    - {to: \"198.51.100.7\", ports: [22]}",
            ]
        );
        assert!(
            got.yaml
                .contains("# 3 connections; curl (2), python3 (1)\n"),
            "{}",
            got.yaml
        );
        assert!(
            got.yaml
                .contains("4 names: a.cdn.example.net, b.cdn.example.net, c.cdn.example.net, d.cdn.example.net"),
            "{}",
            got.yaml
        );
        assert!(got.yaml.ends_with("  deny_out: [ALL_TRAFFIC]\n"));
    }

    #[test]
    fn a_wildcard_covers_only_the_parent_its_names_share() {
        let names = |list: &[&str]| list.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        let cases: &[(&[&str], &str)] = &[
            (
                &["a.cdn.example.net", "b.cdn.example.net"],
                "cdn.example.net",
            ),
            (&["a.cdn.example.net", "api.example.net"], "example.net"),
            (
                &["x.eu.s3.example.com", "y.us.s3.example.com"],
                "s3.example.com",
            ),
            (
                &["deep.a.example.co.uk", "b.example.co.uk"],
                "example.co.uk",
            ),
        ];
        for (list, want) in cases {
            let domain = registrable(list[0]);
            assert_eq!(common_parent(&names(list), domain), *want, "{list:?}");
        }
    }

    #[test]
    fn since_is_an_instant_or_an_age() {
        let now = 100_000_000;
        let cases = [
            ("1700000000000", Ok(1_700_000_000_000)),
            ("45s", Ok(now - 45_000)),
            ("30m", Ok(now - 1_800_000)),
            ("2h", Ok(now - 7_200_000)),
            ("1d", Ok(now - 86_400_000)),
            ("1000d", Ok(0)),
        ];
        for (text, want) in cases {
            assert_eq!(since_ms(text, now), want, "{text}");
        }
        for bad in ["", "yesterday", "5w", "-1h", "1.5h"] {
            assert!(since_ms(bad, now).is_err(), "{bad}");
        }
    }

    #[test]
    fn three_names_stay_names_and_since_filters() {
        let mut log = Vec::new();
        for shard in ["a", "b", "c"] {
            let sni = format!("{shard}.example.org");
            log.push(event("allow", "sb1", "192.0.2.2:443", Some(&sni), "node"));
        }
        let mut old = event("allow", "sb1", "192.0.2.2:443", Some("old.test"), "node");
        old = old.replace("\"ts_ms\":1000", "\"ts_ms\":10");
        log.push(old);
        let filter = Filter {
            sandbox: None,
            since_ms: Some(500),
        };
        let got = suggest(&log.join("\n"), &filter);
        assert_eq!(got.connections, 3);
        assert!(!got.yaml.contains('*'), "{}", got.yaml);
        assert!(!got.yaml.contains("old.test"), "{}", got.yaml);
        // Nothing seen: a policy that allows nothing, still valid YAML.
        let empty = suggest("", &Filter::default());
        assert!(
            empty.yaml.contains("allow_out:\n    []\n"),
            "{}",
            empty.yaml
        );
    }

    /// What it writes is a policy the loader accepts, allowing exactly
    /// the destinations seen.
    #[test]
    fn the_suggestion_compiles_and_allows_what_was_seen() {
        let log = [
            event(
                "would_deny",
                "sb1",
                "93.184.216.34:443",
                Some("a.test"),
                "curl",
            ),
            event(
                "would_deny",
                "sb1",
                "93.184.216.34:8443",
                Some("b.test"),
                "curl",
            ),
        ]
        .join("\n");
        let got = suggest(&log, &Filter::default());
        let raw: crate::policy::raw::Policy = serde_yaml::from_str(&got.yaml).expect("YAML");
        let policy = crate::policy::compiled::CompiledPolicy::compile("s", &raw).expect("compiles");
        let decide = |sni: &str, port: u16| {
            let dst = std::net::SocketAddr::new("93.184.216.34".parse().expect("ip"), port);
            policy.network.decide(&crate::policy::network::ConnRequest {
                dst,
                sni: Some(sni),
                host: None,
                name_addrs: Some(&[dst.ip()]),
                host_address: false,
                ech: false,
                exe: None,
            })
        };
        use crate::policy::network::NetVerdict;
        assert!(matches!(decide("a.test", 443), NetVerdict::Allow { .. }));
        assert!(matches!(decide("b.test", 8443), NetVerdict::Allow { .. }));
        assert!(matches!(decide("a.test", 8443), NetVerdict::Deny { .. }));
        assert!(matches!(decide("c.test", 443), NetVerdict::Deny { .. }));
    }
}
