//! The `credentials:` section of the daemon config: what each credential is
//! called, where its secret comes from, which hosts it may reach, how it is
//! presented upstream and what its placeholder looks like.
//!
//! ```yaml
//! credentials:
//!   - name: openai
//!     source: {file: /etc/sluice/secrets/openai}   # or {env: OPENAI_API_KEY}
//!     hosts: [api.openai.com]
//!     scheme: {type: bearer}
//!     placeholder: {prefix: "sk-"}                # optional
//!   - name: anthropic
//!     source: {env: ANTHROPIC_API_KEY}
//!     hosts: [api.anthropic.com]
//!     scheme: {type: header, name: x-api-key, template: "{secret}"}
//!   - name: maps
//!     source: {file: /etc/sluice/secrets/maps}
//!     hosts: ["*.maps.example.com"]
//!     scheme: {type: query, param: key}
//!   - name: registry
//!     source: {file: /etc/sluice/secrets/registry}
//!     hosts: [registry.example.com]
//!     scheme: {type: basic, username: ci-bot}        # the secret is the password
//! ```
//!
//! [`validate`] checks everything that can be checked without reading the
//! secrets, and reports every problem at once.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::Deserialize;
use thiserror::Error;

use super::hosts::{HostPatternError, HostSet};
use super::scheme::{Scheme, SchemeError};

/// One credential the daemon holds.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialConfig {
    /// Referenced by policies' `credentials:` bindings; also names the
    /// placeholder's environment variable (see [`super::env_name`]).
    pub name: String,
    pub source: Source,
    /// Exact names and `*.suffix` wildcards (not matching the apex).
    pub hosts: Vec<String>,
    pub scheme: SchemeConfig,
    #[serde(default)]
    pub placeholder: PlaceholderShape,
}

/// Where the secret is read from: `{file: /path}` or `{env: NAME}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "SourceRepr")]
pub enum Source {
    /// Read at load and again whenever the file changes; one trailing newline
    /// (`\n` or `\r\n`) is dropped, since editors and `echo` add one.
    File { path: PathBuf },
    /// Read once at load; rotating it needs a daemon restart.
    Env { var: String },
}

/// The YAML shape: a single-key map, which reads better than a nested
/// struct. (serde_yaml only maps enums from `!tags`, hence the struct.)
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceRepr {
    file: Option<PathBuf>,
    env: Option<String>,
}

impl TryFrom<SourceRepr> for Source {
    type Error = &'static str;

    fn try_from(r: SourceRepr) -> Result<Self, Self::Error> {
        match (r.file, r.env) {
            (Some(path), None) => Ok(Source::File { path }),
            (None, Some(var)) => Ok(Source::Env { var }),
            _ => Err("`source` takes exactly one of `file: <path>` or `env: <VARIABLE>`"),
        }
    }
}

/// How the secret is presented upstream, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "SchemeRepr")]
pub enum SchemeConfig {
    /// `Authorization: Bearer <secret>`.
    Bearer,
    /// `<name>: <template>` with every `{secret}` replaced by the secret.
    Header { name: String, template: String },
    /// The query parameter `param` set to the secret (percent-encoded).
    Query { param: String },
    /// `Authorization: Basic base64(<username>:<secret>)`.
    Basic { username: String },
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum SchemeKind {
    Bearer,
    Header,
    Query,
    Basic,
}

/// Flat on purpose: serde's internally tagged enums silently accept unknown
/// fields on unit variants (`{type: bearer, typo: 1}`), so the fields are
/// collected here under `deny_unknown_fields` and matched to the type below.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SchemeRepr {
    #[serde(rename = "type")]
    kind: SchemeKind,
    name: Option<String>,
    template: Option<String>,
    param: Option<String>,
    username: Option<String>,
}

impl TryFrom<SchemeRepr> for SchemeConfig {
    type Error = &'static str;

    fn try_from(r: SchemeRepr) -> Result<Self, Self::Error> {
        match (r.kind, r.name, r.template, r.param, r.username) {
            (SchemeKind::Bearer, None, None, None, None) => Ok(SchemeConfig::Bearer),
            (SchemeKind::Bearer, ..) => Err("scheme `bearer` takes no other fields"),
            (SchemeKind::Header, Some(name), Some(template), None, None) => {
                Ok(SchemeConfig::Header { name, template })
            }
            (SchemeKind::Header, ..) => {
                Err("scheme `header` takes exactly `name` and `template` (e.g. \"Token {secret}\")")
            }
            (SchemeKind::Query, None, None, Some(param), None) => Ok(SchemeConfig::Query { param }),
            (SchemeKind::Query, ..) => Err("scheme `query` takes exactly `param`"),
            (SchemeKind::Basic, None, None, None, Some(username)) => {
                Ok(SchemeConfig::Basic { username })
            }
            (SchemeKind::Basic, ..) => {
                Err("scheme `basic` takes exactly `username` (the secret is the password)")
            }
        }
    }
}

/// What the sandbox's placeholder looks like, so SDKs that check a key's
/// format accept it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlaceholderShape {
    /// Literal start, e.g. `sk-`. Limited to `[A-Za-z0-9._-]` so the
    /// placeholder survives headers and URLs unencoded and can be found there.
    pub prefix: Option<String>,
    /// Total length including the prefix. Unset: the real secret's length
    /// when a prefix is given, else at least 24 random characters.
    pub length: Option<usize>,
}

/// Fewer random characters than this and a placeholder could plausibly be
/// guessed or collide with ordinary text.
pub const MIN_CONFIGURED_TAIL: usize = 16;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("a credential has an empty name")]
    EmptyName,
    #[error("credential {0:?}: names may only use letters, digits, `-`, `_` and `.`")]
    BadName(String),
    #[error("credential {0:?} is defined more than once; names must be unique")]
    Duplicate(String),
    #[error("credential {0:?}: `hosts` is empty, so it could never be injected")]
    NoHosts(String),
    #[error("credential {credential:?}: {source}")]
    Host {
        credential: String,
        source: HostPatternError,
    },
    #[error("credential {credential:?}: {source}")]
    Scheme {
        credential: String,
        source: SchemeError,
    },
    #[error("credential {0:?}: `source` names an empty path or variable")]
    EmptySource(String),
    #[error("credential {0:?}: placeholder prefix may only use letters, digits, `.`, `_` and `-`")]
    BadPrefix(String),
    #[error(
        "credential {credential:?}: placeholder length {length} leaves fewer than {MIN_CONFIGURED_TAIL} random characters after the prefix; raise `length`"
    )]
    ShortPlaceholder { credential: String, length: usize },
}

impl ConfigError {
    /// Metric label: all of these are operator configuration mistakes.
    pub fn class(&self) -> &'static str {
        "policy"
    }
}

/// Checks every credential, returning every problem found.
pub fn validate(configs: &[CredentialConfig]) -> Result<(), Vec<ConfigError>> {
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    for c in configs {
        validate_one(c, &mut errors);
        if !c.name.is_empty() && !seen.insert(c.name.as_str()) {
            errors.push(ConfigError::Duplicate(c.name.clone()));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn validate_one(c: &CredentialConfig, errors: &mut Vec<ConfigError>) {
    let name = &c.name;
    if name.is_empty() {
        errors.push(ConfigError::EmptyName);
    } else if !name.bytes().all(token_byte) {
        errors.push(ConfigError::BadName(name.clone()));
    }
    let empty_source = match &c.source {
        Source::File { path } => path.as_os_str().is_empty(),
        Source::Env { var } => var.is_empty(),
    };
    if empty_source {
        errors.push(ConfigError::EmptySource(name.clone()));
    }
    if c.hosts.is_empty() {
        errors.push(ConfigError::NoHosts(name.clone()));
    }
    if let Err(es) = HostSet::parse(&c.hosts) {
        errors.extend(es.into_iter().map(|source| ConfigError::Host {
            credential: name.clone(),
            source,
        }));
    }
    if let Err(source) = Scheme::compile(&c.scheme) {
        errors.push(ConfigError::Scheme {
            credential: name.clone(),
            source,
        });
    }
    let prefix_len = match &c.placeholder.prefix {
        Some(p) if !p.bytes().all(token_byte) => {
            errors.push(ConfigError::BadPrefix(name.clone()));
            p.len()
        }
        Some(p) => p.len(),
        None => 0,
    };
    if let Some(length) = c.placeholder.length
        && length < prefix_len.saturating_add(MIN_CONFIGURED_TAIL)
    {
        errors.push(ConfigError::ShortPlaceholder {
            credential: name.clone(),
            length,
        });
    }
}

fn token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<Vec<CredentialConfig>, serde_yaml::Error> {
        serde_yaml::from_str(yaml)
    }

    #[test]
    fn yaml_shapes() {
        let yaml = r#"
- name: a
  source: {file: /run/a}
  hosts: [api.a.com]
  scheme: {type: bearer}
- name: b
  source: {env: B_KEY}
  hosts: ["*.b.com"]
  scheme: {type: header, name: x-api-key, template: "Token {secret}"}
  placeholder: {prefix: "sk-", length: 40}
- name: c
  source: {file: /run/c}
  hosts: [c.com]
  scheme: {type: query, param: key}
- name: d
  source: {env: D}
  hosts: [d.com]
  scheme: {type: basic, username: bot}
"#;
        let got = parse(yaml).expect("valid yaml");
        assert_eq!(
            got[0].source,
            Source::File {
                path: "/run/a".into()
            }
        );
        assert_eq!(got[0].scheme, SchemeConfig::Bearer);
        assert_eq!(got[0].placeholder, PlaceholderShape::default());
        assert_eq!(
            got[1].source,
            Source::Env {
                var: "B_KEY".into()
            }
        );
        assert_eq!(
            got[1].scheme,
            SchemeConfig::Header {
                name: "x-api-key".into(),
                template: "Token {secret}".into()
            }
        );
        assert_eq!(got[1].placeholder.prefix.as_deref(), Some("sk-"));
        assert_eq!(got[1].placeholder.length, Some(40));
        assert_eq!(
            got[2].scheme,
            SchemeConfig::Query {
                param: "key".into()
            }
        );
        assert_eq!(
            got[3].scheme,
            SchemeConfig::Basic {
                username: "bot".into()
            }
        );
        validate(&got).expect("valid config");
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let base = "name: a\nhosts: [a.com]\n";
        let cases = [
            "source: {file: /x}\nscheme: {type: bearer}\nextra: 1\n",
            "source: {file: /x, env: Y}\nscheme: {type: bearer}\n",
            "source: {url: /x}\nscheme: {type: bearer}\n",
            "source: {}\nscheme: {type: bearer}\n",
            "source: /x\nscheme: {type: bearer}\n",
            "source: {file: /x}\nscheme: {type: bearer, extra: 1}\n",
            "source: {file: /x}\nscheme: {type: bearer, param: k}\n",
            "source: {file: /x}\nscheme: {type: header, name: x-k}\n",
            "source: {file: /x}\nscheme: {type: basic}\n",
            "source: {file: /x}\nscheme: {type: query, param: k, username: u}\n",
            "source: {file: /x}\nscheme: {type: query, param: k, extra: 1}\n",
            "source: {file: /x}\nscheme: {type: digest}\n",
            "source: {file: /x}\nscheme: {type: bearer}\nplaceholder: {prefix: a, size: 3}\n",
        ];
        for tail in cases {
            let yaml = format!("{base}{tail}");
            assert!(
                serde_yaml::from_str::<CredentialConfig>(&yaml).is_err(),
                "{yaml}"
            );
        }
    }

    fn cred(name: &str) -> CredentialConfig {
        CredentialConfig {
            name: name.into(),
            source: Source::Env { var: "X".into() },
            hosts: vec!["a.com".into()],
            scheme: SchemeConfig::Bearer,
            placeholder: PlaceholderShape::default(),
        }
    }

    #[test]
    fn validation_table() {
        type Mutate = fn(&mut CredentialConfig);
        let cases: &[(&str, Mutate, &str)] = &[
            ("empty name", |c| c.name.clear(), "empty name"),
            ("bad name", |c| c.name = "a b".into(), "names may only"),
            ("no hosts", |c| c.hosts.clear(), "`hosts` is empty"),
            ("bad host", |c| c.hosts = vec!["a.*.com".into()], "`*`"),
            (
                "empty env",
                |c| c.source = Source::Env { var: String::new() },
                "empty path",
            ),
            (
                "header template without secret",
                |c| {
                    c.scheme = SchemeConfig::Header {
                        name: "x-key".into(),
                        template: "static".into(),
                    }
                },
                "{secret}",
            ),
            (
                "bad prefix",
                |c| c.placeholder.prefix = Some("sk/".into()),
                "prefix",
            ),
            (
                "short length",
                |c| {
                    c.placeholder = PlaceholderShape {
                        prefix: Some("sk-".into()),
                        length: Some(10),
                    }
                },
                "raise `length`",
            ),
        ];
        for (what, mutate, want) in cases {
            let mut c = cred("ok");
            mutate(&mut c);
            let errs = validate(&[c]).expect_err(what);
            let msg = errs
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            assert!(msg.contains(want), "{what}: {msg}");
        }
    }

    #[test]
    fn duplicates_and_many_errors_reported_together() {
        let mut bad = cred("b");
        bad.hosts.clear();
        let errs = validate(&[cred("a"), cred("a"), bad]).expect_err("invalid");
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(matches!(errs[0], ConfigError::Duplicate(ref n) if n == "a"));
    }
}
