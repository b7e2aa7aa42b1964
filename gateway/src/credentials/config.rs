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
//!   - name: billing
//!     source: {file: /etc/sluice/secrets/billing}    # the client secret
//!     hosts: [api.billing.example.com]
//!     scheme:
//!       type: oauth2
//!       grant: client_credentials                    # or refresh_token
//!       token_url: https://auth.example.com/oauth/token
//!       client_id: sluice-billing                    # optional for refresh_token
//!       client_auth: basic                           # basic (default) | body
//!       scope: "invoices:read"                       # optional
//!       audience: https://api.billing.example.com    # optional
//!   - name: drive
//!     source: {file: /etc/sluice/secrets/drive}      # the refresh token
//!     hosts: [api.drive.example.com]
//!     scheme:
//!       type: oauth2
//!       grant: refresh_token
//!       token_url: https://auth.example.com/oauth/token
//!       client_id: drive-app
//!       client_secret: {file: /etc/sluice/secrets/drive-client}  # optional
//!   - name: s3
//!     source: {file: /etc/sluice/secrets/aws-secret} # the secret access key
//!     hosts: ["*.s3.us-east-1.amazonaws.com"]
//!     scheme:
//!       type: aws_sigv4
//!       access_key_id: {env: AWS_ACCESS_KEY_ID}
//!       region: us-east-1
//!       service: s3
//!       session_token: {file: /run/aws/session}      # optional
//!       payload: unsigned                            # unsigned (s3 default) | signed
//!     placeholder: {prefix: AKIA, length: 20}        # the sandbox's access key id
//! ```
//!
//! For `oauth2` and `aws_sigv4` the sandbox's placeholder stands for the
//! whole credential: send it as a bearer token (oauth2) or as the access key
//! id (SigV4, any secret key); Sluice strips what the sandbox sent and
//! authenticates the request itself.
//!
//! [`validate`] checks everything that can be checked without reading the
//! secrets, and reports every problem at once.

use std::collections::BTreeSet;

use serde::Deserialize;
use thiserror::Error;

use super::hosts::{HostPatternError, HostSet};
use super::scheme::Scheme;
pub use super::scheme_config::{
    ACCESS_KEY_ID, BodyValue, CLIENT_SECRET, ClientAuth, HmacAlgorithm, HmacEncoding, OAuth2Config,
    OAuthGrant, SESSION_TOKEN, SchemeConfig, SigV4Config, SigV4Payload, Source,
};
use super::scheme_error::SchemeError;

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
    #[error("credential {0:?}: `source` names an empty path, variable or systemd credential")]
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
    let empty = |s: &Source| match s {
        Source::File { path } => path.as_os_str().is_empty(),
        Source::Env { var } => var.is_empty(),
        Source::SystemdCredential { name } => name.is_empty(),
    };
    let empty_source = empty(&c.source);
    let empty_extra = c.scheme.extra_sources().iter().any(|(_, s)| empty(s));
    if empty_source || empty_extra {
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
#[path = "config_tests.rs"]
mod tests;
