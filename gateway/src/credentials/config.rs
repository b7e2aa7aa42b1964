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
//!   - name: signer
//!     source: {file: /etc/sluice/secrets/signer}
//!     hosts: [api.signed.example.com]
//!     scheme:                                        # the secret is the HMAC key
//!       type: hmac
//!       algorithm: sha256                            # sha256 | sha512
//!       header: X-Signature
//!       encoding: hex                                # hex | base64
//!       canonical: "{method}\n{path}\n{query}\n{timestamp}"
//!       timestamp_header: X-Timestamp                # optional
//!       prefix: "v1="                                # optional
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
    /// `<header>: <prefix><encoding(HMAC-<algorithm>(secret, canonical))>`,
    /// where `canonical` is a template over `{method}` `{host}` `{path}`
    /// `{query}` `{timestamp}`; the unix-seconds timestamp used is also sent
    /// in `timestamp_header` when set.
    Hmac {
        algorithm: HmacAlgorithm,
        header: String,
        encoding: HmacEncoding,
        canonical: String,
        timestamp_header: Option<String>,
        prefix: Option<String>,
    },
}

/// The hash under an HMAC scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HmacAlgorithm {
    Sha256,
    Sha512,
}

/// How an HMAC signature is written into its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HmacEncoding {
    /// Lowercase hex.
    Hex,
    /// Standard alphabet, padded.
    Base64,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum SchemeKind {
    Bearer,
    Header,
    Query,
    Basic,
    Hmac,
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
    algorithm: Option<HmacAlgorithm>,
    header: Option<String>,
    encoding: Option<HmacEncoding>,
    canonical: Option<String>,
    timestamp_header: Option<String>,
    prefix: Option<String>,
}

impl SchemeRepr {
    fn has_hmac_fields(&self) -> bool {
        self.algorithm.is_some()
            || self.header.is_some()
            || self.encoding.is_some()
            || self.canonical.is_some()
            || self.timestamp_header.is_some()
            || self.prefix.is_some()
    }
}

impl TryFrom<SchemeRepr> for SchemeConfig {
    type Error = &'static str;

    fn try_from(r: SchemeRepr) -> Result<Self, Self::Error> {
        if matches!(r.kind, SchemeKind::Hmac) {
            return hmac_from(r);
        }
        let hmac_fields = r.has_hmac_fields();
        match (r.kind, r.name, r.template, r.param, r.username) {
            (SchemeKind::Bearer, None, None, None, None) if !hmac_fields => {
                Ok(SchemeConfig::Bearer)
            }
            (SchemeKind::Bearer, ..) => Err("scheme `bearer` takes no other fields"),
            (SchemeKind::Header, Some(name), Some(template), None, None) if !hmac_fields => {
                Ok(SchemeConfig::Header { name, template })
            }
            (SchemeKind::Header, ..) => {
                Err("scheme `header` takes exactly `name` and `template` (e.g. \"Token {secret}\")")
            }
            (SchemeKind::Query, None, None, Some(param), None) if !hmac_fields => {
                Ok(SchemeConfig::Query { param })
            }
            (SchemeKind::Query, ..) => Err("scheme `query` takes exactly `param`"),
            (SchemeKind::Basic, None, None, None, Some(username)) if !hmac_fields => {
                Ok(SchemeConfig::Basic { username })
            }
            (SchemeKind::Basic, ..) => {
                Err("scheme `basic` takes exactly `username` (the secret is the password)")
            }
            (SchemeKind::Hmac, ..) => Err(HMAC_SHAPE),
        }
    }
}

const HMAC_SHAPE: &str = "scheme `hmac` takes `algorithm` (sha256|sha512), `header`, `encoding` (hex|base64), `canonical`, and optionally `timestamp_header` and `prefix`";

fn hmac_from(r: SchemeRepr) -> Result<SchemeConfig, &'static str> {
    match r {
        SchemeRepr {
            name: None,
            template: None,
            param: None,
            username: None,
            algorithm: Some(algorithm),
            header: Some(header),
            encoding: Some(encoding),
            canonical: Some(canonical),
            timestamp_header,
            prefix,
            ..
        } => Ok(SchemeConfig::Hmac {
            algorithm,
            header,
            encoding,
            canonical,
            timestamp_header,
            prefix,
        }),
        _ => Err(HMAC_SHAPE),
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

    #[test]
    fn hmac_yaml() {
        let yaml = r#"
- name: s
  source: {file: /run/s}
  hosts: [api.s.com]
  scheme:
    type: hmac
    algorithm: sha512
    header: X-Signature
    encoding: base64
    canonical: "{method}\n{path}\n{query}\n{timestamp}"
    timestamp_header: X-Timestamp
    prefix: "v1="
- name: t
  source: {file: /run/t}
  hosts: [api.t.com]
  scheme: {type: hmac, algorithm: sha256, header: x-sig, encoding: hex, canonical: "{host}{path}"}
"#;
        let got = parse(yaml).expect("valid yaml");
        assert_eq!(
            got[0].scheme,
            SchemeConfig::Hmac {
                algorithm: HmacAlgorithm::Sha512,
                header: "X-Signature".into(),
                encoding: HmacEncoding::Base64,
                canonical: "{method}\n{path}\n{query}\n{timestamp}".into(),
                timestamp_header: Some("X-Timestamp".into()),
                prefix: Some("v1=".into()),
            }
        );
        assert_eq!(
            got[1].scheme,
            SchemeConfig::Hmac {
                algorithm: HmacAlgorithm::Sha256,
                header: "x-sig".into(),
                encoding: HmacEncoding::Hex,
                canonical: "{host}{path}".into(),
                timestamp_header: None,
                prefix: None,
            }
        );
        validate(&got).expect("valid config");

        let base = "name: a\nhosts: [a.com]\nsource: {file: /x}\n";
        let ok = "algorithm: sha256, header: x-s, encoding: hex, canonical: \"{path}\"";
        let rejected = [
            format!("scheme: {{type: hmac, {ok}, extra: 1}}\n"),
            format!("scheme: {{type: hmac, {ok}, param: k}}\n"),
            format!("scheme: {{type: hmac, {ok}, name: k}}\n"),
            "scheme: {type: hmac, algorithm: sha256, header: x-s, encoding: hex}\n".into(),
            "scheme: {type: hmac, header: x-s, encoding: hex, canonical: x}\n".into(),
            "scheme: {type: hmac, algorithm: sha256, encoding: hex, canonical: x}\n".into(),
            "scheme: {type: hmac, algorithm: sha256, header: x-s, canonical: x}\n".into(),
            "scheme: {type: hmac, algorithm: md5, header: x, encoding: hex, canonical: x}\n".into(),
            "scheme: {type: hmac, algorithm: sha256, header: x, encoding: b32, canonical: x}\n"
                .into(),
            "scheme: {type: bearer, algorithm: sha256}\n".into(),
            "scheme: {type: header, name: x, template: \"{secret}\", prefix: p}\n".into(),
            "scheme: {type: query, param: k, canonical: x}\n".into(),
            "scheme: {type: basic, username: u, header: x}\n".into(),
        ];
        for tail in rejected {
            let yaml = format!("{base}{tail}");
            assert!(
                serde_yaml::from_str::<CredentialConfig>(&yaml).is_err(),
                "{yaml}"
            );
        }
        let mut c = got[1].clone();
        c.scheme = SchemeConfig::Hmac {
            algorithm: HmacAlgorithm::Sha256,
            header: "x-sig".into(),
            encoding: HmacEncoding::Hex,
            canonical: "{method} {body}".into(),
            timestamp_header: None,
            prefix: None,
        };
        let errs = validate(&[c]).expect_err("unknown placeholder");
        assert!(errs[0].to_string().contains("{body}"), "{}", errs[0]);
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
