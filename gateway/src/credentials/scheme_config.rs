//! The shapes in a credential's config of how its secrets are read and
//! presented: [`Source`] (`{file: ...}`, `{env: ...}` or
//! `{systemd_credential: ...}`), which the
//! credential's own `source` and the schemes' extra secrets share, and
//! [`SchemeConfig`], the `scheme:` tagged by `type`, parsed flat so an
//! unknown or misplaced field is refused with the fields the type takes.
//! What a credential is and the checks across it live in [`super::config`],
//! which re-exports these; compiling a scheme is [`super::scheme`]'s. This
//! file imports nothing else from `credentials`: the schemes take these
//! shapes from here, not through [`super::config`].

use std::path::PathBuf;

use serde::Deserialize;

/// Where the secret is read from: `{file: /path}`, `{env: NAME}` or
/// `{systemd_credential: NAME}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "SourceRepr")]
pub enum Source {
    /// Read at load and again whenever the file changes; one trailing newline
    /// (`\n` or `\r\n`) is dropped, since editors and `echo` add one.
    File { path: PathBuf },
    /// Read once at load; rotating it needs a daemon restart.
    Env { var: String },
    /// `$CREDENTIALS_DIRECTORY/NAME`, the file systemd's `LoadCredential=`
    /// or `LoadCredentialEncrypted=` gives the service; read at load, like
    /// a file (systemd copies credentials at start: rotating one takes a
    /// restart).
    SystemdCredential { name: String },
}

/// The YAML shape: a single-key map, which reads better than a nested
/// struct. (serde_yaml only maps enums from `!tags`, hence the struct.)
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceRepr {
    file: Option<PathBuf>,
    env: Option<String>,
    systemd_credential: Option<String>,
}

impl TryFrom<SourceRepr> for Source {
    type Error = String;

    fn try_from(r: SourceRepr) -> Result<Self, Self::Error> {
        match (r.file, r.env, r.systemd_credential) {
            (Some(path), None, None) => Ok(Source::File { path }),
            (None, Some(var), None) => Ok(Source::Env { var }),
            (None, None, Some(name)) => {
                check_credential_name(&name)?;
                Ok(Source::SystemdCredential { name })
            }
            _ => Err(
                "`source` takes exactly one of `file: <path>`, `env: <VARIABLE>` or `systemd_credential: <NAME>`"
                    .to_owned(),
            ),
        }
    }
}

/// A systemd credential's name is a file name in `$CREDENTIALS_DIRECTORY`
/// (the `NAME` of `LoadCredential=NAME:PATH`), never a path. Empty is left
/// to the credential checks, which name the credential.
pub(super) fn check_credential_name(name: &str) -> Result<(), String> {
    if name.contains('/') || name == "." || name == ".." {
        return Err(format!(
            "`systemd_credential: {name}` names a credential (LoadCredential=NAME:…), not a path"
        ));
    }
    Ok(())
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
    /// where `canonical` is a template over `{method}` `{host}` (the `Host`
    /// sent, with a non-default port) `{path}`
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
    /// `Authorization: Bearer <access token>`, the token obtained by the
    /// daemon from an OAuth 2.0 token endpoint and cached until it expires.
    OAuth2(OAuth2Config),
    /// AWS Signature Version 4 over the request as forwarded.
    AwsSigV4(SigV4Config),
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum SchemeKind {
    Bearer,
    Header,
    Query,
    Basic,
    Hmac,
    Oauth2,
    AwsSigv4,
}

impl SchemeKind {
    fn name(self) -> &'static str {
        match self {
            SchemeKind::Bearer => "bearer",
            SchemeKind::Header => "header",
            SchemeKind::Query => "query",
            SchemeKind::Basic => "basic",
            SchemeKind::Hmac => "hmac",
            SchemeKind::Oauth2 => "oauth2",
            SchemeKind::AwsSigv4 => "aws_sigv4",
        }
    }

    /// `(required, optional)` fields besides `type`.
    fn fields(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            SchemeKind::Bearer => (&[], &[]),
            SchemeKind::Header => (&["name", "template"], &[]),
            SchemeKind::Query => (&["param"], &[]),
            SchemeKind::Basic => (&["username"], &[]),
            SchemeKind::Hmac => (
                &["algorithm", "header", "encoding", "canonical"],
                &["timestamp_header", "prefix"],
            ),
            SchemeKind::Oauth2 => (
                &["grant", "token_url"],
                &[
                    "client_id",
                    "client_secret",
                    "client_auth",
                    "scope",
                    "audience",
                ],
            ),
            SchemeKind::AwsSigv4 => (
                &["access_key_id", "region", "service"],
                &["session_token", "payload"],
            ),
        }
    }
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
    grant: Option<OAuthGrant>,
    token_url: Option<String>,
    client_id: Option<String>,
    client_secret: Option<Source>,
    client_auth: Option<ClientAuth>,
    scope: Option<String>,
    audience: Option<String>,
    access_key_id: Option<Source>,
    region: Option<String>,
    service: Option<String>,
    session_token: Option<Source>,
    payload: Option<SigV4Payload>,
}

impl SchemeRepr {
    /// The names of the fields that were given.
    fn present(&self) -> Vec<&'static str> {
        let set = [
            ("name", self.name.is_some()),
            ("template", self.template.is_some()),
            ("param", self.param.is_some()),
            ("username", self.username.is_some()),
            ("algorithm", self.algorithm.is_some()),
            ("header", self.header.is_some()),
            ("encoding", self.encoding.is_some()),
            ("canonical", self.canonical.is_some()),
            ("timestamp_header", self.timestamp_header.is_some()),
            ("prefix", self.prefix.is_some()),
            ("grant", self.grant.is_some()),
            ("token_url", self.token_url.is_some()),
            ("client_id", self.client_id.is_some()),
            ("client_secret", self.client_secret.is_some()),
            ("client_auth", self.client_auth.is_some()),
            ("scope", self.scope.is_some()),
            ("audience", self.audience.is_some()),
            ("access_key_id", self.access_key_id.is_some()),
            ("region", self.region.is_some()),
            ("service", self.service.is_some()),
            ("session_token", self.session_token.is_some()),
            ("payload", self.payload.is_some()),
        ];
        set.into_iter()
            .filter(|(_, on)| *on)
            .map(|(n, _)| n)
            .collect()
    }
}

impl TryFrom<SchemeRepr> for SchemeConfig {
    type Error = String;

    fn try_from(r: SchemeRepr) -> Result<Self, Self::Error> {
        let (required, optional) = r.kind.fields();
        let present = r.present();
        let kind = r.kind.name();
        let shape = || {
            let mut text = format!("scheme `{kind}` takes ");
            if required.is_empty() {
                text.push_str("no other fields");
            } else {
                text.push_str(&format!("`{}`", required.join("`, `")));
            }
            if !optional.is_empty() {
                text.push_str(&format!(" and optionally `{}`", optional.join("`, `")));
            }
            text
        };
        if let Some(extra) = present
            .iter()
            .find(|f| !required.contains(f) && !optional.contains(f))
        {
            return Err(format!("{}; `{extra}` does not belong", shape()));
        }
        if let Some(missing) = required.iter().find(|f| !present.contains(f)) {
            return Err(format!("{}; `{missing}` is missing", shape()));
        }
        let missing = || shape();
        Ok(match r.kind {
            SchemeKind::Bearer => SchemeConfig::Bearer,
            SchemeKind::Header => SchemeConfig::Header {
                name: r.name.ok_or_else(missing)?,
                template: r.template.ok_or_else(missing)?,
            },
            SchemeKind::Query => SchemeConfig::Query {
                param: r.param.ok_or_else(missing)?,
            },
            SchemeKind::Basic => SchemeConfig::Basic {
                username: r.username.ok_or_else(missing)?,
            },
            SchemeKind::Hmac => SchemeConfig::Hmac {
                algorithm: r.algorithm.ok_or_else(missing)?,
                header: r.header.ok_or_else(missing)?,
                encoding: r.encoding.ok_or_else(missing)?,
                canonical: r.canonical.ok_or_else(missing)?,
                timestamp_header: r.timestamp_header,
                prefix: r.prefix,
            },
            SchemeKind::Oauth2 => SchemeConfig::OAuth2(OAuth2Config {
                grant: r.grant.ok_or_else(missing)?,
                token_url: r.token_url.ok_or_else(missing)?,
                client_id: r.client_id,
                client_secret: r.client_secret,
                client_auth: r.client_auth.unwrap_or_default(),
                scope: r.scope,
                audience: r.audience,
            }),
            SchemeKind::AwsSigv4 => {
                let service = r.service.ok_or_else(missing)?;
                let payload = r.payload.unwrap_or(if service == "s3" {
                    SigV4Payload::Unsigned
                } else {
                    SigV4Payload::Signed
                });
                SchemeConfig::AwsSigV4(SigV4Config {
                    access_key_id: r.access_key_id.ok_or_else(missing)?,
                    region: r.region.ok_or_else(missing)?,
                    service,
                    session_token: r.session_token,
                    payload,
                })
            }
        })
    }
}

/// Which OAuth 2.0 grant obtains the access token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OAuthGrant {
    /// RFC 6749 §4.4: the credential's `source` is the client secret.
    ClientCredentials,
    /// RFC 6749 §6: the credential's `source` is the refresh token.
    RefreshToken,
}

/// How the client authenticates to the token endpoint (RFC 6749 §2.3.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuth {
    /// `Authorization: Basic base64(client_id:client_secret)`.
    #[default]
    Basic,
    /// `client_id` and `client_secret` as form fields of the body.
    Body,
}

/// An `oauth2` scheme: the daemon obtains an access token from `token_url`
/// and sends it as `Authorization: Bearer <token>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuth2Config {
    pub grant: OAuthGrant,
    /// `https://` only; resolved with the daemon's resolver and verified
    /// with its upstream trust.
    pub token_url: String,
    /// Required by `client_credentials`; optional for `refresh_token`.
    pub client_id: Option<String>,
    /// `refresh_token` only (for `client_credentials` it is `source`).
    pub client_secret: Option<Source>,
    pub client_auth: ClientAuth,
    pub scope: Option<String>,
    pub audience: Option<String>,
}

/// What the SigV4 signature covers of the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SigV4Payload {
    /// `UNSIGNED-PAYLOAD`: the body streams through unbuffered. S3 accepts
    /// it over TLS (the default for service `s3`); most other services do not.
    Unsigned,
    /// The body's SHA-256: the body is buffered (bounded) to hash it. The
    /// default for every service but `s3`.
    Signed,
}

/// An `aws_sigv4` scheme: `source` is the secret access key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigV4Config {
    pub access_key_id: Source,
    pub region: String,
    pub service: String,
    pub session_token: Option<Source>,
    pub payload: SigV4Payload,
}

impl SchemeConfig {
    /// Every secret source besides the credential's own `source`, by role.
    pub fn extra_sources(&self) -> Vec<(&'static str, &Source)> {
        match self {
            SchemeConfig::OAuth2(o) => o.client_secret.iter().map(|s| (CLIENT_SECRET, s)).collect(),
            SchemeConfig::AwsSigV4(a) => {
                let mut v = vec![(ACCESS_KEY_ID, &a.access_key_id)];
                v.extend(a.session_token.iter().map(|s| (SESSION_TOKEN, s)));
                v
            }
            _ => Vec::new(),
        }
    }
}

/// What a placeholder written in a request body is replaced with, under
/// `allow_in_body`: what the placeholder stands for, never more. A body
/// may be stored upstream and read back, so this is a value the sandbox
/// is taken to be able to learn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyValue {
    /// The secret: it is what the scheme sends anyway (bearer, header,
    /// query, basic).
    Secret,
    /// The access token the daemon obtained (oauth2).
    AccessToken,
    /// The access key id (aws_sigv4): the placeholder is the sandbox's
    /// access key id, and the secret key only ever signs.
    AccessKeyId,
}

impl SchemeConfig {
    /// What a body placeholder becomes; `None` for `hmac`, whose secret is
    /// a signing key that never leaves and has no public stand-in, so
    /// binding it with `allow_in_body` is refused.
    pub fn body_value(&self) -> Option<BodyValue> {
        match self {
            SchemeConfig::Bearer
            | SchemeConfig::Header { .. }
            | SchemeConfig::Query { .. }
            | SchemeConfig::Basic { .. } => Some(BodyValue::Secret),
            SchemeConfig::OAuth2(_) => Some(BodyValue::AccessToken),
            SchemeConfig::AwsSigV4(_) => Some(BodyValue::AccessKeyId),
            SchemeConfig::Hmac { .. } => None,
        }
    }
}

/// Roles of [`SchemeConfig::extra_sources`].
pub const CLIENT_SECRET: &str = "client_secret";
pub const ACCESS_KEY_ID: &str = "access_key_id";
pub const SESSION_TOKEN: &str = "session_token";
