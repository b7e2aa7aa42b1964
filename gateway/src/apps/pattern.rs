//! The patterns an app is described with: host names (`api.example.com`,
//! `*.example.com`) and path globs (`/repos/*/issues`, `/api/**`), each
//! compiled once when the catalogue loads.

use regex::Regex;

use crate::policy::host_name::canonical_name;

/// A host name, or every name below a suffix (`*.example.com` matches
/// `a.example.com` and `a.b.example.com`, not `example.com`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    Exact(String),
    /// The suffix with its leading dot (`.example.com`).
    Below(String),
}

impl HostPattern {
    pub fn parse(text: &str) -> Result<HostPattern, String> {
        if text.contains([':', '/']) {
            return Err(format!(
                "`{text}` is not a host name (write `api.example.com` or `*.example.com`, no scheme, port or path)"
            ));
        }
        let name = canonical_name(text.trim());
        if let Some(suffix) = name.strip_prefix("*.") {
            if suffix.is_empty() || suffix.contains('*') {
                return Err(format!("`{text}`: write `*.example.com`"));
            }
            return Ok(HostPattern::Below(format!(".{suffix}")));
        }
        if name.is_empty() || name.contains('*') {
            return Err(format!(
                "`{text}` is not a host name (write `api.example.com` or `*.example.com`, no scheme, port or path)"
            ));
        }
        Ok(HostPattern::Exact(name))
    }

    /// `host` must already be canonical (lower case, no trailing dot).
    pub fn matches(&self, host: &str) -> bool {
        match self {
            HostPattern::Exact(name) => host == name,
            HostPattern::Below(suffix) => host.len() > suffix.len() && host.ends_with(suffix),
        }
    }
}

/// A path glob: `*` is one segment (or part of one), `**` any run of
/// segments; a trailing `/**` also matches the bare prefix. Queries never
/// take part.
#[derive(Debug, Clone)]
pub struct PathPattern {
    text: String,
    regex: Regex,
}

impl PathPattern {
    pub fn parse(text: &str) -> Result<PathPattern, String> {
        if !text.starts_with('/') {
            return Err(format!("path `{text}` must start with `/`"));
        }
        if text.contains('?') || text.contains('#') {
            return Err(format!(
                "path `{text}` may not hold a query or fragment; paths are matched without them"
            ));
        }
        let (body, any_below) = match text.strip_suffix("/**") {
            Some(prefix) => (prefix, true),
            None => (text, false),
        };
        let mut regex = String::from("^");
        let mut rest = body;
        while let Some(i) = rest.find('*') {
            regex.push_str(&regex::escape(&rest[..i]));
            if rest[i..].starts_with("**") {
                regex.push_str(".*");
                rest = &rest[i + 2..];
            } else {
                regex.push_str("[^/]*");
                rest = &rest[i + 1..];
            }
        }
        regex.push_str(&regex::escape(rest));
        if any_below {
            regex.push_str("(?:/.*)?");
        }
        regex.push('$');
        let regex = Regex::new(&regex).map_err(|e| format!("path `{text}`: {e}"))?;
        Ok(PathPattern {
            text: text.to_owned(),
            regex,
        })
    }

    pub fn matches(&self, path: &str) -> bool {
        self.regex.is_match(path)
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// The path a request is matched on: no query, percent-encoded unreserved
/// characters decoded and runs of `/` collapsed, so `/repos/%61//issues`
/// cannot slip past a pattern written for `/repos/a/issues`.
pub fn normalize_path(path_and_query: &str) -> String {
    let path = path_and_query
        .split(['?', '#'])
        .next()
        .filter(|p| !p.is_empty())
        .unwrap_or("/");
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%'
            && let Some(decoded) = path
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .filter(|d| d.is_ascii_alphanumeric() || matches!(d, b'-' | b'.' | b'_' | b'~'))
        {
            out.push(char::from(decoded));
            i += 3;
            continue;
        }
        if b == b'/' && out.ends_with('/') {
            i += 1;
            continue;
        }
        // Multi-byte characters are copied whole.
        let len = utf8_len(b);
        out.push_str(path.get(i..i + len).unwrap_or(""));
        i += len.max(1);
    }
    out
}

/// Whether the path (the query takes no part) has a `.` or `..` segment:
/// literal or percent-encoded in either case, between `/`, `\`, `%2F` or
/// `%5C`, and ignoring `;` parameters. Upstreams resolve such segments (some
/// after decoding `%2F`, reading `\` as `/`, or dropping `;x` as Tomcat
/// does), so what they serve is not the path the patterns saw; the caller
/// refuses the request rather than guess which reading the upstream makes.
pub fn has_dot_segment(path_and_query: &str) -> bool {
    let path = path_and_query.split(['?', '#']).next().unwrap_or_default();
    if !path.contains('.') && !path.contains('%') {
        return false;
    }
    let path = path
        .to_ascii_lowercase()
        .replace("%2f", "/")
        .replace("%5c", "/")
        .replace('\\', "/");
    path.split('/').any(|segment| {
        let segment = segment.split(';').next().unwrap_or_default();
        matches!(segment.replace("%2e", ".").as_str(), "." | "..")
    })
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// A custom app's URL pattern: `host/path-glob`, the scheme optional
/// (`https://wiki.example.com/api/**`, `*.example.com`).
pub fn parse_url_pattern(text: &str) -> Result<(HostPattern, PathPattern), String> {
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
        .unwrap_or(text);
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/**"),
    };
    Ok((HostPattern::parse(host)?, PathPattern::parse(path)?))
}
