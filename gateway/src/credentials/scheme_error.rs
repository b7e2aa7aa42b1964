//! [`SchemeError`]: why a scheme's config does not compile or a request
//! could not be rewritten, shared by every scheme ([`super::scheme`],
//! [`super::oauth`], [`super::sigv4`]) and the config checks
//! ([`super::config`]). Depends on nothing else in `credentials`.

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SchemeError {
    #[error("header scheme: {0:?} is not a valid header name")]
    BadHeaderName(String),
    #[error("header scheme: {0:?} controls framing or routing and cannot carry a credential")]
    ForbiddenHeader(String),
    #[error("header scheme: the template must contain `{{secret}}`")]
    TemplateWithoutSecret,
    #[error("header scheme: the template contains characters not allowed in a header value")]
    BadTemplate,
    #[error("query scheme: `param` is empty")]
    EmptyParam,
    #[error("basic scheme: the username may not contain `:`")]
    UsernameWithColon,
    #[error("basic scheme: the username contains control characters")]
    BadUsername,
    // Deliberately says nothing about the value: it is the secret.
    #[error(
        "the secret contains bytes not allowed in a header value (control characters or a newline?); fix the secret source"
    )]
    SecretNotHeaderSafe,
    #[error("the rewritten request URI is invalid")]
    BadUri,
    #[error("hmac scheme: {0:?} is not a valid header name")]
    HmacBadHeaderName(String),
    #[error("hmac scheme: {0:?} controls framing or routing and cannot carry a signature")]
    HmacForbiddenHeader(String),
    #[error("hmac scheme: `header` and `timestamp_header` must differ")]
    HmacSameHeader,
    #[error("hmac scheme: `prefix` contains characters not allowed in a header value")]
    HmacBadPrefix,
    #[error("hmac scheme: `canonical` is empty")]
    HmacEmptyCanonical,
    #[error(
        "hmac scheme: `canonical` uses unknown placeholder {{{0}}}; known: {{method}} {{host}} {{path}} {{query}} {{timestamp}}"
    )]
    HmacUnknownPlaceholder(String),
    #[error("hmac scheme: `canonical` has a `{{` without a closing `}}`")]
    HmacUnclosedPlaceholder,
    // Says nothing about the key: it is the secret.
    #[error("hmac scheme: the key was refused")]
    HmacKey,
    #[error("hmac scheme: signing needs the request method, host and time")]
    HmacNeedsRequest,
    #[error("oauth2 scheme: `token_url` {0:?} is not a URL with a host")]
    OAuthBadUrl(String),
    #[error(
        "oauth2 scheme: `token_url` {0:?} must be https: client secrets never cross plain HTTP"
    )]
    OAuthNotHttps(String),
    #[error("oauth2 scheme: grant `client_credentials` needs `client_id`")]
    OAuthNeedsClientId,
    #[error(
        "oauth2 scheme: with grant `client_credentials` the client secret is the credential's `source`; drop `client_secret`"
    )]
    OAuthClientSecretIsSource,
    #[error("oauth2 scheme: `client_secret` needs `client_id`")]
    OAuthSecretWithoutId,
    #[error("oauth2 scheme: `client_id` is empty or contains `:` or control characters")]
    OAuthBadClientId,
    #[error("oauth2 scheme: the request needs an access token from the token endpoint")]
    OAuthNeedsToken,
    #[error("aws_sigv4 scheme: `{0}` may only use letters, digits, `-`, `_` and `.`")]
    SigV4BadField(&'static str),
    #[error("aws_sigv4 scheme: signing needs the access key id and the request")]
    SigV4NeedsKeys,
    #[error("aws_sigv4 scheme: `payload: signed` needs the whole body")]
    SigV4NeedsBody,
    // Says nothing about the keys: they are secrets.
    #[error("aws_sigv4 scheme: the signer refused the request or the keys")]
    SigV4Failed,
}

impl SchemeError {
    /// Metric label.
    pub fn class(&self) -> &'static str {
        match self {
            SchemeError::SecretNotHeaderSafe
            | SchemeError::BadUri
            | SchemeError::HmacKey
            | SchemeError::HmacNeedsRequest
            | SchemeError::OAuthNeedsToken
            | SchemeError::SigV4NeedsKeys
            | SchemeError::SigV4NeedsBody
            | SchemeError::SigV4Failed => "internal",
            _ => "policy",
        }
    }
}
