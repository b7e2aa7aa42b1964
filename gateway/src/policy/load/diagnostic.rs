//! A located problem ([`Diagnostic`], `FILE:LINE:COL` with a hint at the
//! fix), and the building of one from what serde_yaml reports: syntax
//! errors and duplicate keys that stop a file, and deserialization errors
//! rewritten to point at the item that is wrong (serde blames a whole list
//! for one bad destination) with the field or variant it most likely meant.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_yaml::Value;

use crate::policy::closest::closest;
use crate::policy::locate::Locations;
use crate::policy::raw;

/// One problem in one file, located for an editor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
    /// 1-based.
    pub column: usize,
    pub message: String,
    /// How to fix it, when there is something more useful to say.
    pub hint: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file.display(),
            self.line,
            self.column,
            self.message
        )?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

impl Diagnostic {
    pub(super) fn at_start(file: &Path, message: String, hint: Option<String>) -> Diagnostic {
        Diagnostic {
            file: file.to_path_buf(),
            line: 1,
            column: 1,
            message,
            hint,
        }
    }
}

/// A YAML error that stops the file: syntax, duplicate keys, several
/// documents.
pub(super) fn syntax_errors(
    file: &Path,
    e: &serde_yaml::Error,
    locations: &Locations,
) -> Vec<Diagnostic> {
    let message = without_location(e);
    if message.contains("duplicate entry") && !locations.duplicate_keys().is_empty() {
        return locations
            .duplicate_keys()
            .iter()
            .map(|(path, (line, column))| {
                let (first_line, _) = locations.find(path);
                Diagnostic {
                    file: file.to_path_buf(),
                    line: *line,
                    column: *column,
                    message: format!("duplicate key `{path}`"),
                    hint: Some(format!("first defined on line {first_line}; keep one")),
                }
            })
            .collect();
    }
    let (line, column) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
    let hint = message
        .contains("more than one document")
        .then(|| "one policy per file: remove the `---` separators".to_string());
    vec![Diagnostic {
        file: file.to_path_buf(),
        line,
        column,
        message: format!("invalid YAML: {message}"),
        hint,
    }]
}

pub(super) fn deserialize_error(
    file: &Path,
    section: &str,
    e: &serde_yaml::Error,
    locations: &Locations,
    document: &Value,
) -> Diagnostic {
    let message = without_location(e);
    let (line, column) = e
        .location()
        .map_or_else(|| locations.find(section), |l| (l.line(), l.column()));
    let ((message, hint), (line, column)) = match bad_target(&message, document) {
        Some((path, explained)) => (explained, locations.find(&path)),
        None => (explain(&message), (line, column)),
    };
    Diagnostic {
        file: file.to_path_buf(),
        line,
        column,
        message,
        hint,
    }
}

const UNTAGGED_TARGET: &str = "data did not match any variant of untagged enum Target";
const TARGET_HINT: &str = "a destination is a string (`example.com`, `*.example.com:443`, \
     `10.0.0.0/8`, `[2001:db8::1]:443`, `ALL_TRAFFIC`) or a map of `to`, `ports` and (on `allow_out`) `methods`, `paths` or `access`";

/// serde reports a bad destination in a list against the whole list, with
/// no reason. Finds the first item that is not a destination, and why.
fn bad_target(message: &str, document: &Value) -> Option<(String, (String, Option<String>))> {
    let list = message.strip_suffix(UNTAGGED_TARGET)?.strip_suffix(": ")?;
    let Value::Sequence(items) = value_at(document, list)? else {
        return None;
    };
    let (i, item) = items
        .iter()
        .enumerate()
        .find(|(_, item)| serde_yaml::from_value::<raw::Target>((*item).clone()).is_err())?;
    let path = format!("{list}[{i}]");
    let explained = match serde_yaml::from_value::<raw::TargetSpec>(item.clone()) {
        Err(e) if item.is_mapping() => {
            let (problem, hint) = explain(&e.to_string());
            (format!("{path}: {problem}"), hint)
        }
        _ => (
            format!("{path}: {} is not a destination", kind(item)),
            Some(TARGET_HINT.to_string()),
        ),
    };
    Some((path, explained))
}

/// The node at a serde-style path (`network.allow_out[1]`) of `document`.
fn value_at<'a>(document: &'a Value, path: &str) -> Option<&'a Value> {
    let mut node = document;
    for segment in path.split('.') {
        let (key, indices) = segment.split_once('[').unwrap_or((segment, ""));
        if !key.is_empty() {
            node = node.get(key)?;
        }
        for index in indices.split('[').filter(|s| !s.is_empty()) {
            node = node.get(index.strip_suffix(']')?.parse::<usize>().ok()?)?;
        }
    }
    Some(node)
}

/// serde_yaml's message without its " at line L column C", which the
/// diagnostic carries separately.
fn without_location(e: &serde_yaml::Error) -> String {
    let message = e.to_string();
    match e.location() {
        Some(l) => message.replacen(
            &format!(" at line {} column {}", l.line(), l.column()),
            "",
            1,
        ),
        None => message,
    }
}

/// Splits a serde message into the problem and a hint at the fix.
pub(super) fn explain(message: &str) -> (String, Option<String>) {
    for what in ["unknown field `", "unknown variant `"] {
        let Some(start) = message.find(what) else {
            continue;
        };
        let after = &message[start + what.len()..];
        let Some(end) = after.find('`') else {
            continue;
        };
        let word = &after[..end];
        // ", expected one of `a`, `b`" / ", expected `a` or `b`" / ", there are no fields"
        let expected = after[end + 1..].trim_start_matches(',').trim();
        let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        let near = closest(word, names.iter().copied())
            .map(|n| format!("did you mean `{n}`? "))
            .unwrap_or_default();
        let problem = message[..start + what.len() + end + 1].to_string();
        return (problem, Some(format!("{near}{expected}")));
    }
    let hint = if message.contains(UNTAGGED_TARGET) {
        Some(TARGET_HINT.to_string())
    } else if message.contains("expected a boolean") {
        Some("write `true` or `false`".to_string())
    } else if message.contains("expected a sequence") {
        Some("write a list: `[a, b]`, or one `- item` per line".to_string())
    } else {
        message
            .split("missing field `")
            .nth(1)
            .and_then(|rest| rest.split('`').next())
            .map(|field| format!("add `{field}:`"))
    };
    (message.to_string(), hint)
}

pub(super) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

pub(super) fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
