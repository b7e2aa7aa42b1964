//! The `aws_sigv4` scheme: AWS Signature Version 4 over the request as it
//! will be forwarded, computed by the `aws-sigv4` crate.
//!
//! What is signed: the method, the path and query as forwarded, the `host`
//! the upstream will see, every `x-amz-*` header the sandbox sent (S3
//! requires them signed) and the ones the signer adds: `x-amz-date`,
//! `x-amz-content-sha256` and, with a session token, `x-amz-security-token`.
//! Nothing else: hop-by-hop headers are stripped after this stage, and a
//! signed header that changed on the way would break the signature.
//!
//! Payload: `unsigned` sends `UNSIGNED-PAYLOAD`, so bodies stream through
//! unbuffered (S3 accepts this over TLS, the default for service `s3`);
//! `signed` signs the body's SHA-256, which needs the whole body first: the
//! caller buffers it (bounded) and hands it in. Most AWS services other than
//! S3 require `signed`, its default there.
//!
//! Path encoding follows the SDK: S3 signs the path as sent (single
//! encoding, no normalization); every other service double-encodes and
//! normalizes it.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode, sign,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use hyper::http::header::{HeaderName, HeaderValue};
use hyper::http::{HeaderMap, Method, Uri};

use super::scheme_config::{SigV4Config, SigV4Payload};
use super::scheme_error::SchemeError;
use super::secret::Secret;

/// Headers the signer writes; whatever the sandbox sent under these names
/// goes first.
pub const OWN_HEADERS: [&str; 3] = ["x-amz-date", "x-amz-content-sha256", "x-amz-security-token"];

/// A compiled `aws_sigv4` scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigV4Scheme {
    pub region: String,
    pub service: String,
    pub payload: SigV4Payload,
}

/// The secrets one signature needs besides the secret access key.
pub struct Keys<'a> {
    pub access_key_id: &'a Secret,
    pub session_token: Option<&'a Secret>,
}

impl std::fmt::Debug for Keys<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(** secret **)")
    }
}

/// The request as it will be forwarded.
pub(super) struct Inputs<'a> {
    pub method: &'a Method,
    /// The `Host` the upstream will see (`name` or `name:port`).
    pub authority: &'a str,
    pub uri: &'a Uri,
    /// The whole body, for `payload: signed`.
    pub body: Option<&'a [u8]>,
    pub now: SystemTime,
}

impl SigV4Scheme {
    pub fn compile(c: &SigV4Config) -> Result<Self, SchemeError> {
        let token = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        };
        if !token(&c.region) {
            return Err(SchemeError::SigV4BadField("region"));
        }
        if !token(&c.service) {
            return Err(SchemeError::SigV4BadField("service"));
        }
        Ok(SigV4Scheme {
            region: c.region.clone(),
            service: c.service.clone(),
            payload: c.payload,
        })
    }

    /// Whether the caller must buffer the body and pass it in.
    pub fn needs_body(&self) -> bool {
        self.payload == SigV4Payload::Signed
    }

    /// Signs and writes the signature headers into `headers` (the sandbox's
    /// own `authorization` and [`OWN_HEADERS`] must already be gone).
    pub(super) fn sign(
        &self,
        secret: &Secret,
        keys: &Keys<'_>,
        inputs: &Inputs<'_>,
        headers: &mut HeaderMap,
    ) -> Result<(), SchemeError> {
        let text = |s: &Secret| {
            std::str::from_utf8(s.expose())
                .map(str::to_owned)
                .map_err(|_| SchemeError::SecretNotHeaderSafe)
        };
        // `Credentials` keeps these in zeroizing buffers of its own.
        let identity: Identity = Credentials::new(
            text(keys.access_key_id)?,
            text(secret)?,
            keys.session_token.map(text).transpose()?,
            None,
            "sluice",
        )
        .into();
        let mut settings = SigningSettings::default();
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        if self.service == "s3" {
            settings.percent_encoding_mode = PercentEncodingMode::Single;
            settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        }
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(&self.service)
            .time(inputs.now)
            .settings(settings)
            .build()
            .map_err(|_| SchemeError::SigV4Failed)?
            .into();
        let body = match (self.payload, inputs.body) {
            (SigV4Payload::Signed, Some(body)) => SignableBody::Bytes(body),
            (SigV4Payload::Signed, None) => return Err(SchemeError::SigV4NeedsBody),
            (SigV4Payload::Unsigned, _) => SignableBody::UnsignedPayload,
        };
        let path = inputs.uri.path_and_query().map_or("/", |p| p.as_str());
        let url = format!("https://{}{path}", inputs.authority);
        let signed: Vec<(&str, &str)> = headers
            .iter()
            .filter(|(name, _)| name.as_str().starts_with("x-amz-"))
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
            .chain([("host", inputs.authority)])
            .collect();
        let request = SignableRequest::new(inputs.method.as_str(), url, signed.into_iter(), body)
            .map_err(|_| SchemeError::BadUri)?;
        let (instructions, _signature) = sign(request, &params)
            .map_err(|_| SchemeError::SigV4Failed)?
            .into_parts();
        let (new_headers, _) = instructions.into_parts();
        for header in new_headers {
            let mut value = HeaderValue::from_str(header.value())
                .map_err(|_| SchemeError::SecretNotHeaderSafe)?;
            value.set_sensitive(header.sensitive() || header.name() == "authorization");
            let name = HeaderName::from_bytes(header.name().as_bytes())
                .map_err(|_| SchemeError::SigV4Failed)?;
            headers.insert(name, value);
        }
        Ok(())
    }
}

/// [`SigV4Scheme::sign`] for the fuzz targets (feature `fuzzing`, through
/// `sluice::fuzzing`): the scheme compiled from `service` and `region`
/// (`signed`: `payload: signed`), fixed keys and time, one request. The
/// signer's inputs stay private to the schemes otherwise.
#[cfg(feature = "fuzzing")]
pub fn sign_for_fuzzing(
    service: &str,
    region: &str,
    signed: bool,
    request: (&Method, &str, &Uri, Option<&[u8]>),
    headers: &mut HeaderMap,
) -> Result<(), String> {
    let (method, authority, uri, body) = request;
    let payload = if signed {
        SigV4Payload::Signed
    } else {
        SigV4Payload::Unsigned
    };
    let config = SigV4Config {
        access_key_id: super::Source::Env {
            var: "AWS_ACCESS_KEY_ID".to_owned(),
        },
        session_token: None,
        region: region.to_owned(),
        service: service.to_owned(),
        payload,
    };
    let scheme = SigV4Scheme::compile(&config).map_err(|e| e.to_string())?;
    let secret = Secret::new(b"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".to_vec());
    let access_key_id = Secret::new(b"AKIDEXAMPLE".to_vec());
    let keys = Keys {
        access_key_id: &access_key_id,
        session_token: None,
    };
    let inputs = Inputs {
        method,
        authority,
        uri,
        body,
        now: SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000),
    };
    scheme
        .sign(&secret, &keys, &inputs, headers)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
#[path = "sigv4_tests.rs"]
mod tests;
