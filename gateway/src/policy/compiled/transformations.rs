//! The `transformations` section compiled: each rewrite's regex built
//! once, its replacement checked against the regex's groups, and its
//! destinations checked, with errors at the offending node.

use regex::Regex;

use super::{check_host_names, check_hosts, error};
use crate::policy::{closest::closest, network::CompileError, raw};

/// A body rewrite with its regex built.
#[derive(Debug, Clone)]
pub struct Transformation {
    pub pattern: Regex,
    /// Checked: every `$n` / `${name}` names a group of `pattern`.
    pub replacement: String,
    pub direction: raw::Direction,
    /// Destination patterns as written; empty means every destination.
    pub hosts: Vec<String>,
    /// Headers whose values are rewritten too (valid names, lower-case).
    pub headers: Vec<hyper::header::HeaderName>,
}

pub(super) fn compile_transformations(
    raw: &[raw::Transformation],
    errors: &mut Vec<CompileError>,
) -> Vec<Transformation> {
    let mut compiled = Vec::with_capacity(raw.len());
    for (i, t) in raw.iter().enumerate() {
        check_hosts(&t.hosts, &format!("transformations[{i}].hosts"), errors);
        check_host_names(&t.hosts, &format!("transformations[{i}].hosts"), errors);
        let pattern = match Regex::new(&t.pattern) {
            Ok(pattern) => pattern,
            Err(e) => {
                let (message, hint) = describe_regex_error(&e);
                errors.push(error(
                    format!("transformations[{i}].pattern"),
                    message,
                    Some(hint),
                ));
                continue;
            }
        };
        for (message, hint) in check_replacement(&pattern, &t.replacement) {
            errors.push(error(
                format!("transformations[{i}].replacement"),
                message,
                Some(hint),
            ));
        }
        let mut headers = Vec::with_capacity(t.headers.len());
        for (j, name) in t.headers.iter().enumerate() {
            match hyper::header::HeaderName::from_bytes(name.as_bytes()) {
                Ok(name) => headers.push(name),
                Err(_) => errors.push(error(
                    format!("transformations[{i}].headers[{j}]"),
                    format!("`{name}` is not a header name"),
                    Some("write a header name such as `user-agent`".to_string()),
                )),
            }
        }
        compiled.push(Transformation {
            pattern,
            replacement: t.replacement.clone(),
            direction: t.direction,
            hosts: t.hosts.clone(),
            headers,
        });
    }
    compiled
}

const REGEX_SYNTAX_HINT: &str = "patterns use Rust regex syntax (https://docs.rs/regex/#syntax): \
     no look-around or backreferences; escape literal metacharacters with `\\`";

/// A one-line message and a hint from the regex crate's multi-line error.
fn describe_regex_error(e: &regex::Error) -> (String, String) {
    match e {
        regex::Error::Syntax(text) => {
            let lines: Vec<&str> = text.lines().collect();
            let message = lines
                .iter()
                .find_map(|l| l.strip_prefix("error: "))
                .unwrap_or("unparsable pattern");
            // For one-line patterns the error shows the pattern indented by
            // four spaces and a caret line under the offending span.
            let column = match lines.as_slice() {
                [_, pattern, carets, _] if pattern.starts_with("    ") => carets
                    .find('^')
                    .filter(|&c| c >= 4 && carets.trim_start().starts_with('^'))
                    .map(|c| c - 3),
                _ => None,
            };
            let hint = match column {
                Some(c) => format!("at character {c} of the pattern; {REGEX_SYNTAX_HINT}"),
                None => REGEX_SYNTAX_HINT.to_string(),
            };
            (format!("invalid regex: {message}"), hint)
        }
        regex::Error::CompiledTooBig(limit) => (
            format!("the regex compiles to more than {limit} bytes"),
            "shrink large repetition counts, or make classes ASCII-only with `(?-u)`".to_string(),
        ),
        other => (
            format!("invalid regex: {other}"),
            REGEX_SYNTAX_HINT.to_string(),
        ),
    }
}

/// Every capture reference in `replacement` that names no group of
/// `pattern`, as (message, hint). Follows the regex crate's own reading of
/// `$name`, `${name}` and `$$`, where a missing group silently becomes an
/// empty string — the mistake this check exists to catch.
fn check_replacement(pattern: &Regex, replacement: &str) -> Vec<(String, String)> {
    let groups = pattern.captures_len();
    let names: Vec<&str> = pattern.capture_names().flatten().collect();
    let mut problems = Vec::new();
    let mut rest = replacement;
    while let Some(i) = rest.find('$') {
        rest = &rest[i + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            rest = after;
            continue;
        }
        let (reference, braced) = if let Some(inner) = rest.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => {
                    rest = &inner[end + 1..];
                    (&inner[..end], true)
                }
                None => {
                    problems.push((
                        "`${` is never closed".to_string(),
                        "close it (`${1}`, `${name}`), or write `$$` for a literal `$`".to_string(),
                    ));
                    continue;
                }
            }
        } else {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            if end == 0 {
                // A lone `$` is literal.
                continue;
            }
            let reference = &rest[..end];
            rest = &rest[end..];
            (reference, false)
        };
        let written = if braced {
            format!("${{{reference}}}")
        } else {
            format!("${reference}")
        };
        match reference.parse::<usize>() {
            Ok(n) if n < groups => {}
            Ok(n) => problems.push((
                format!("`{written}` refers to group {n}, but the pattern has no such group"),
                format!(
                    "the pattern has groups 0 to {}; write `$$` for a literal `$`",
                    groups.saturating_sub(1)
                ),
            )),
            Err(_) if names.contains(&reference) => {}
            Err(_) => {
                let digits = reference.len()
                    - reference
                        .trim_start_matches(|c: char| c.is_ascii_digit())
                        .len();
                let hint = if !braced && digits > 0 {
                    // `$1a` reads as a group named `1a`.
                    format!(
                        "`{written}` is read as one group name; write `${{{}}}{}` for group {} followed by text",
                        &reference[..digits],
                        &reference[digits..],
                        &reference[..digits]
                    )
                } else if let Some(near) = closest(reference, names.iter().copied()) {
                    format!("did you mean `{near}`?")
                } else if names.is_empty() {
                    "the pattern has no named groups; name one with `(?P<name>...)`".to_string()
                } else {
                    format!("the pattern's named groups: {}", names.join(", "))
                };
                problems.push((
                    format!("`{written}` refers to a group the pattern does not have"),
                    hint,
                ));
            }
        }
    }
    problems
}
