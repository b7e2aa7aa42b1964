//! Reading policy files and directories into a `PolicySet`, and turning
//! every problem in them into a located `Diagnostic` (`FILE:LINE:COL`).
//!
//! One file is one policy, named by its file stem. A YAML syntax error stops
//! that file, but everything else is collected: each top-level section is
//! deserialized on its own, so a typo in `pii` does not hide a bad port in
//! `network`, and sections that did deserialize are compiled and checked
//! too. `sluice check`, start-up and hot reload all come through here.
//!
//! Given the daemon's app catalogue, a policy's `apps` are checked against
//! it as well: an app or action it does not declare would never match, so
//! a typo (`repo.delte: deny`) would silently leave the real action to
//! `"*"`. Without one (`sluice check FILES`, `sluice scan`) app and action
//! names are checked for form only. Given the daemon's credentials, a
//! policy's credential bindings are compiled against them the same way
//! ([`CompiledPolicy::bind`]); without them they are left empty.

mod diagnostic;

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::{DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_yaml::Value;
use sha2::{Digest as _, Sha256};

use super::closest::closest;
use super::compiled::{CompiledPolicy, bind};
use super::locate::Locations;
use super::network::CompileError;
use super::raw;
use crate::apps::Catalogue;
use crate::credentials::CredentialConfig;
pub use diagnostic::Diagnostic;
use diagnostic::{deserialize_error, kind, quoted, syntax_errors};

/// What the policies are checked against, when known: the daemon's app
/// catalogue and its credentials.
#[derive(Debug, Clone, Copy, Default)]
pub struct Against<'a> {
    pub apps: Option<&'a Catalogue>,
    pub credentials: Option<&'a [CredentialConfig]>,
}

/// Every loaded policy by name. Immutable; a reload builds a new set.
#[derive(Debug, Clone, Default)]
pub struct PolicySet {
    policies: BTreeMap<String, Arc<CompiledPolicy>>,
    /// The SHA-256 of each policy's file, for those loaded from one.
    texts: BTreeMap<String, [u8; 32]>,
}

impl PolicySet {
    pub fn get(&self, name: &str) -> Option<&Arc<CompiledPolicy>> {
        self.policies.get(name)
    }

    /// Sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.policies.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.policies.len()
    }

    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }

    /// A set from policies compiled elsewhere (tests of other modules),
    /// keyed by their `name`; a later policy replaces an earlier namesake.
    pub fn from_policies(policies: impl IntoIterator<Item = CompiledPolicy>) -> PolicySet {
        PolicySet {
            policies: policies
                .into_iter()
                .map(|p| (p.name.clone(), Arc::new(p)))
                .collect(),
            texts: BTreeMap::new(),
        }
    }

    /// This set, with each policy whose file is the same as in `previous`
    /// taken from there: the very same `Arc`, so connections admitted under
    /// it are not revoked by a reload that left their policy alone (the
    /// daemon's catalogue and credentials, which policies are checked and
    /// their bindings compiled against, are fixed while it runs: a policy
    /// whose file did not change built the very same stages).
    pub fn keeping_unchanged(mut self, previous: &PolicySet) -> PolicySet {
        for (name, policy) in &mut self.policies {
            let same = self
                .texts
                .get(name)
                .is_some_and(|text| previous.texts.get(name) == Some(text));
            if let (true, Some(old)) = (same, previous.policies.get(name)) {
                *policy = old.clone();
            }
        }
        self
    }
}

/// The top-level keys of a policy file, in `raw::Policy` order.
const SECTIONS: &[&str] = &[
    "description",
    "network",
    "pii",
    "injection_defense",
    "transformations",
    "credentials",
    "apps",
    "dry_run",
    "mode",
    "audit",
];

/// Every `*.yaml`/`*.yml` file directly in `dir` (sorted), one policy per
/// file, named by the file stem (must be a valid id `[A-Za-z0-9._-]{1,128}`).
/// Hidden files (leading `.`) are skipped: editors and ConfigMap volumes
/// leave them next to the real files. Every error of every file at once.
pub fn load_dir(dir: &Path, against: Against<'_>) -> Result<PolicySet, Vec<Diagnostic>> {
    let files = policy_files(dir)?;
    load_files(files, Vec::new(), against)
}

/// Files and/or directories (for `sluice check PATHS`). A file is loaded
/// whatever its extension; a directory as in `load_dir`. Two files defining
/// the same policy name are an error.
pub fn load_paths(paths: &[PathBuf], against: Against<'_>) -> Result<PolicySet, Vec<Diagnostic>> {
    let mut diagnostics = Vec::new();
    if paths.is_empty() {
        diagnostics.push(Diagnostic::at_start(
            Path::new("."),
            "no policy files or directories given".to_string(),
            None,
        ));
    }
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            match policy_files(path) {
                Ok(found) => files.extend(found),
                Err(errors) => diagnostics.extend(errors),
            }
        } else {
            files.push(path.clone());
        }
    }
    load_files(files, diagnostics, against)
}

/// Loads one policy file (named by its stem); `apps`, when given, is the
/// catalogue its `apps` entries must name.
pub fn load_file(path: &Path, apps: Option<&Catalogue>) -> Result<CompiledPolicy, Vec<Diagnostic>> {
    let against = Against {
        apps,
        credentials: None,
    };
    read_and_parse(path, against).map(|(policy, _)| policy)
}

/// [`load_file`], with the SHA-256 of the text it was compiled from.
fn read_and_parse(
    path: &Path,
    against: Against<'_>,
) -> Result<(CompiledPolicy, [u8; 32]), Vec<Diagnostic>> {
    let name = policy_name(path).map_err(|d| vec![d])?;
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![Diagnostic::at_start(
            path,
            format!("cannot read the policy file: {e}"),
            None,
        )]
    })?;
    let policy = parse_policy(path, &name, &text, against)?;
    Ok((policy, Sha256::digest(text.as_bytes()).into()))
}

fn policy_files(dir: &Path) -> Result<Vec<PathBuf>, Vec<Diagnostic>> {
    let unreadable = |e: std::io::Error| {
        vec![Diagnostic::at_start(
            dir,
            format!("cannot read the policy directory: {e}"),
            None,
        )]
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let path = entry.map_err(unreadable)?.path();
        let Some(file_name) = path.file_name().and_then(|n| n.to_str()) else {
            // Not UTF-8, so not a valid policy name either; say so below.
            files.push(path);
            continue;
        };
        let is_yaml = file_name.ends_with(".yaml") || file_name.ends_with(".yml");
        // A failed stat (a dangling link) is kept so the read error is shown.
        let is_dir = std::fs::metadata(&path).is_ok_and(|m| m.is_dir());
        if is_yaml && !is_dir && !file_name.starts_with('.') {
            files.push(path);
        }
    }
    if files.is_empty() {
        return Err(vec![Diagnostic::at_start(
            dir,
            format!("no policy files in {}", dir.display()),
            Some("a policy is a `*.yaml` or `*.yml` file directly in this directory".to_string()),
        )]);
    }
    files.sort();
    Ok(files)
}

fn load_files(
    files: Vec<PathBuf>,
    mut diagnostics: Vec<Diagnostic>,
    against: Against<'_>,
) -> Result<PolicySet, Vec<Diagnostic>> {
    let mut first_file: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut seen = HashSet::new();
    let mut policies = BTreeMap::new();
    let mut texts = BTreeMap::new();
    for file in files {
        // The same file reached twice (`check dir dir/a.yaml`) is one policy.
        if !seen.insert(std::fs::canonicalize(&file).unwrap_or_else(|_| file.clone())) {
            continue;
        }
        if let Ok(name) = policy_name(&file) {
            if let Some(first) = first_file.get(&name) {
                diagnostics.push(Diagnostic::at_start(
                    &file,
                    format!("policy `{name}` is also defined by {}", first.display()),
                    Some("policy names come from file names; rename one of the files".to_string()),
                ));
            } else {
                first_file.insert(name, file.clone());
            }
        }
        match read_and_parse(&file, against) {
            Ok((policy, text)) => {
                if !policies.contains_key(&policy.name) {
                    texts.insert(policy.name.clone(), text);
                    policies.insert(policy.name.clone(), Arc::new(policy));
                }
            }
            Err(errors) => diagnostics.extend(errors),
        }
    }
    if diagnostics.is_empty() {
        Ok(PolicySet { policies, texts })
    } else {
        Err(diagnostics)
    }
}

fn policy_name(path: &Path) -> Result<String, Diagnostic> {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    match stem {
        Some(stem) if is_valid_id(&stem) => Ok(stem),
        stem => Err(Diagnostic::at_start(
            path,
            format!("`{}` is not a valid policy name", stem.unwrap_or_default()),
            Some(
                "the file name without its extension is the policy name: \
                 1 to 128 characters from A-Z a-z 0-9 . _ -"
                    .to_string(),
            ),
        )),
    }
}

fn is_valid_id(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Parses, deserializes and compiles one policy's text, its `apps` and
/// `credentials` checked against what `against` gives. `file` is only used
/// to label diagnostics.
pub fn parse_policy(
    file: &Path,
    name: &str,
    text: &str,
    against: Against<'_>,
) -> Result<CompiledPolicy, Vec<Diagnostic>> {
    let locations = Locations::parse(text);
    let located = |path: &str, message: String, hint: Option<String>| {
        let (line, column) = locations.find(path);
        Diagnostic {
            file: file.to_path_buf(),
            line,
            column,
            message,
            hint,
        }
    };

    let document: Value = match serde_yaml::from_str(text) {
        Ok(document) => document,
        Err(e) => return Err(syntax_errors(file, &e, &locations)),
    };
    let sections = match &document {
        Value::Mapping(sections) => sections,
        Value::Null => {
            return Err(vec![Diagnostic::at_start(
                file,
                "the policy file is empty".to_string(),
                Some("write `{}` for a policy with every default (see docs/policy.md)".to_string()),
            )]);
        }
        other => {
            return Err(vec![Diagnostic::at_start(
                file,
                format!(
                    "a policy is a mapping of sections (`network:`, `pii:`, ...), not {}",
                    kind(other)
                ),
                None,
            )]);
        }
    };

    let mut diagnostics = Vec::new();
    let mut failed: HashSet<&str> = HashSet::new();
    let mut policy = raw::Policy::default();
    for key in sections.keys() {
        let key_text = match key {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => String::new(),
        };
        let Some(&section) = SECTIONS.iter().find(|s| **s == key_text) else {
            let near = closest(&key_text, SECTIONS.iter().copied())
                .map(|n| format!("did you mean `{n}`? "))
                .unwrap_or_default();
            diagnostics.push(located(
                &key_text,
                format!("unknown section `{key_text}`"),
                Some(format!("{near}expected one of {}", quoted(SECTIONS))),
            ));
            continue;
        };
        let mut ok = true;
        let mut take = |e: serde_yaml::Error| {
            ok = false;
            diagnostics.push(deserialize_error(file, section, &e, &locations, &document));
        };
        match section {
            "description" => set(text, section, &mut policy.description, &mut take),
            "network" => set(text, section, &mut policy.network, &mut take),
            "pii" => set(text, section, &mut policy.pii, &mut take),
            "injection_defense" => set(text, section, &mut policy.injection_defense, &mut take),
            "transformations" => set(text, section, &mut policy.transformations, &mut take),
            "credentials" => set(text, section, &mut policy.credentials, &mut take),
            "apps" => set(text, section, &mut policy.apps, &mut take),
            "dry_run" => set(text, section, &mut policy.dry_run, &mut take),
            "mode" => set(text, section, &mut policy.mode, &mut take),
            "audit" => set(text, section, &mut policy.audit, &mut take),
            _ => {}
        }
        if !ok {
            failed.insert(section);
        }
    }

    if let Some(catalogue) = against.apps
        && !failed.contains("apps")
    {
        for e in catalogue.check_policy(&policy.apps) {
            diagnostics.push(located(
                &e.path,
                format!("{}: {}", e.path, e.message),
                e.hint,
            ));
        }
    }

    // Sections that failed keep their defaults; compile the rest anyway so
    // their errors are reported in the same pass.
    match CompiledPolicy::compile(name, &policy) {
        Ok(mut compiled) => {
            if let Some(catalogue) = against.apps {
                compiled.resolve_apps(catalogue);
            }
            let bound = match against.credentials {
                Some(credentials) => compiled.bind(credentials),
                None => Ok(()),
            };
            for e in bound.err().unwrap_or_default() {
                diagnostics.push(located(
                    &e.path,
                    format!("{}: {}", e.path, e.message),
                    e.hint,
                ));
            }
            if diagnostics.is_empty() {
                return Ok(compiled);
            }
        }
        Err(errors) => {
            fn section(e: &CompileError) -> &str {
                e.path.split(['.', '[']).next().unwrap_or_default()
            }
            // The bindings too, unless `credentials` is wrong already (a
            // binding named twice would be reported twice).
            let bindings_checked = !failed.contains("credentials")
                && !errors.iter().any(|e| section(e) == "credentials");
            let bound = match against.credentials {
                Some(credentials) if bindings_checked => {
                    bind(&policy.credentials, credentials).err()
                }
                _ => None,
            };
            for e in errors.iter().chain(bound.iter().flatten()) {
                if !failed.contains(section(e)) {
                    diagnostics.push(located(
                        &e.path,
                        format!("{}: {}", e.path, e.message),
                        e.hint.clone(),
                    ));
                }
            }
        }
    }
    diagnostics.sort_by_key(|d| (d.line, d.column));
    Err(diagnostics)
}

/// Deserializes the value of top-level `section` from the whole text into
/// `slot`. Going through the text (not a `Value`) keeps serde_yaml's line,
/// column and path in the error; other sections are skipped unparsed.
fn set<T: DeserializeOwned>(
    text: &str,
    section: &'static str,
    slot: &mut T,
    on_error: &mut impl FnMut(serde_yaml::Error),
) {
    let seed = Section::<T> {
        key: section,
        value: PhantomData,
    };
    match seed.deserialize(serde_yaml::Deserializer::from_str(text)) {
        Ok(Some(value)) => *slot = value,
        // The key was seen in the `Value`, so this does not happen; the
        // default stays if it somehow does.
        Ok(None) => {}
        Err(e) => on_error(e),
    }
}

/// Picks one top-level key's value out of a mapping, ignoring the others.
struct Section<T> {
    key: &'static str,
    value: PhantomData<T>,
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for Section<T> {
    type Value = Option<T>;

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<Option<T>, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for Section<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a policy mapping with a `{}` section", self.key)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<T>, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<Value>()? {
            if found.is_none() && key.as_str() == Some(self.key) {
                found = Some(map.next_value::<T>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests;
