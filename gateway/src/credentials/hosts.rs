//! [`HostSet`]: the hosts a credential may be sent to, parsed once.
//!
//! Two pattern forms: an exact name (`api.example.com`) and a wildcard
//! (`*.example.com`) that matches any name strictly below the suffix, at any
//! depth, but never the apex itself: granting `*.example.com` should not
//! silently grant `example.com`, which is often a different service.
//! Matching is ASCII case-insensitive and ignores one trailing dot.

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum HostPatternError {
    #[error("host pattern {0:?} is empty")]
    Empty(String),
    #[error(
        "host pattern {0:?}: `*` is only allowed as a whole leading label, as in `*.example.com`"
    )]
    MisplacedWildcard(String),
    #[error("host pattern {0:?} contains characters not allowed in a host name")]
    InvalidChars(String),
}

impl HostPatternError {
    /// Metric label: these are always operator configuration mistakes.
    pub fn class(&self) -> &'static str {
        "policy"
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    Exact(String),
    /// Stored with its leading dot (`.example.com`) so a suffix test cannot
    /// match `badexample.com`.
    Below(String),
}

/// Whether a destination pattern of a policy is a name a [`HostSet`] can
/// hold, rather than an address, a CIDR or a pattern with a port (which
/// match no name).
pub fn is_name_pattern(pattern: &str) -> bool {
    pattern.parse::<std::net::IpAddr>().is_err() && !pattern.contains(['/', ':'])
}

/// A parsed set of host patterns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostSet {
    patterns: Vec<Pattern>,
}

impl HostSet {
    /// Parses every pattern, reporting every bad one rather than the first.
    pub fn parse<S: AsRef<str>>(patterns: &[S]) -> Result<Self, Vec<HostPatternError>> {
        let mut out = Vec::with_capacity(patterns.len());
        let mut errors = Vec::new();
        for p in patterns {
            match parse_one(p.as_ref()) {
                Ok(p) => out.push(p),
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(Self { patterns: out })
        } else {
            Err(errors)
        }
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether `host` (a bare name, no port) is in the set.
    pub fn matches(&self, host: &str) -> bool {
        let host = normalize(host);
        if host.is_empty() {
            return false;
        }
        self.patterns.iter().any(|p| match p {
            Pattern::Exact(name) => *name == host,
            Pattern::Below(suffix) => host.len() > suffix.len() && host.ends_with(suffix.as_str()),
        })
    }
}

fn normalize(host: &str) -> String {
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

fn parse_one(raw: &str) -> Result<Pattern, HostPatternError> {
    let p = normalize(raw.trim());
    if p.is_empty() {
        return Err(HostPatternError::Empty(raw.to_owned()));
    }
    let (wild, name) = match p.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, p.as_str()),
    };
    if name.contains('*') {
        return Err(HostPatternError::MisplacedWildcard(raw.to_owned()));
    }
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_')
        && !name.starts_with('.')
        && !name.contains("..");
    if !valid {
        return Err(HostPatternError::InvalidChars(raw.to_owned()));
    }
    Ok(if wild {
        Pattern::Below(format!(".{name}"))
    } else {
        Pattern::Exact(name.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_table() {
        let set = HostSet::parse(&["api.example.com", "*.corp.test", "API.Other.Test."])
            .expect("valid patterns");
        let cases = [
            ("api.example.com", true),
            ("API.EXAMPLE.COM", true),
            ("api.example.com.", true),
            ("example.com", false),
            ("x.api.example.com", false),
            ("a.corp.test", true),
            ("a.b.corp.test", true),
            ("corp.test", false),
            ("evilcorp.test", false),
            ("api.other.test", true),
            ("", false),
            (".", false),
        ];
        for (host, want) in cases {
            assert_eq!(set.matches(host), want, "{host}");
        }
        assert!(!HostSet::default().matches("api.example.com"));
    }

    #[test]
    fn parse_errors_table() {
        let cases = [
            ("", HostPatternError::Empty(String::new())),
            ("*", HostPatternError::MisplacedWildcard("*".into())),
            (
                "a.*.com",
                HostPatternError::MisplacedWildcard("a.*.com".into()),
            ),
            ("*.", HostPatternError::MisplacedWildcard("*.".into())),
            ("a..com", HostPatternError::InvalidChars("a..com".into())),
            ("a.com/x", HostPatternError::InvalidChars("a.com/x".into())),
            (
                "a.com:443",
                HostPatternError::InvalidChars("a.com:443".into()),
            ),
        ];
        for (raw, want) in cases {
            assert_eq!(HostSet::parse(&[raw]), Err(vec![want]), "{raw:?}");
        }
        let errs = HostSet::parse(&["", "ok.com", "*"]).expect_err("two bad");
        assert_eq!(errs.len(), 2);
    }
}
