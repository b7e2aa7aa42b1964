//! The `hmac` scheme: signs a canonical string built from the request with
//! the secret as the HMAC key, and writes the signature into one header.
//!
//! The canonical string is computed from the request as it will be
//! forwarded (after the placeholder has been stripped): `{method}` uppercase,
//! `{host}` the `Host` the upstream sees (`name`, or `name:port` on a port
//! not the default, as a verifier reading the request finds it), `{path}`
//! and `{query}` exactly as in the URI (the query without its `?`),
//! `{timestamp}` the unix seconds handed in by the caller. Any other
//! `{...}` is a config error.
//!
//! `{method}` is uppercased although the method is forwarded as sent: the
//! two differ only for a non-standard lowercase method (`patch`), which
//! RFC 9110 makes a different method; a server that accepts it as `PATCH`
//! verifies the uppercase form, and one that does not refuses it anyway.
//!
//! The signature is not secret (it is only valid for this request), so it is
//! not a redaction needle; the header is still marked sensitive.

use ::hmac::{Hmac, Mac};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hyper::http::header::HeaderName;
use hyper::http::{HeaderValue, Method, Uri};
use sha2::{Sha256, Sha512};

use crate::credentials::forbidden_headers::FORBIDDEN_HEADERS;
use crate::credentials::scheme_config::{HmacAlgorithm, HmacEncoding};
use crate::credentials::scheme_error::SchemeError;
use crate::credentials::secret::Secret;

/// One piece of a parsed canonical template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Literal(String),
    Method,
    Host,
    Path,
    Query,
    Timestamp,
}

/// A compiled `hmac` scheme.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HmacScheme {
    pub algorithm: HmacAlgorithm,
    pub header: HeaderName,
    pub encoding: HmacEncoding,
    pub canonical: Vec<Segment>,
    pub timestamp_header: Option<HeaderName>,
    pub prefix: String,
}

/// What the canonical string is built from, besides the URI.
pub(super) struct Inputs<'a> {
    pub method: &'a Method,
    /// The `Host` as sent.
    pub host: &'a str,
    pub uri: &'a Uri,
    pub now_unix: u64,
}

impl HmacScheme {
    pub fn compile(
        algorithm: HmacAlgorithm,
        header: &str,
        encoding: HmacEncoding,
        canonical: &str,
        timestamp_header: Option<&str>,
        prefix: Option<&str>,
    ) -> Result<Self, SchemeError> {
        let header = header_name(header)?;
        let timestamp_header = timestamp_header.map(header_name).transpose()?;
        if timestamp_header.as_ref() == Some(&header) {
            return Err(SchemeError::HmacSameHeader);
        }
        let prefix = prefix.unwrap_or("").to_owned();
        if HeaderValue::from_str(&prefix).is_err() {
            return Err(SchemeError::HmacBadPrefix);
        }
        Ok(HmacScheme {
            algorithm,
            header,
            encoding,
            canonical: parse_template(canonical)?,
            timestamp_header,
            prefix,
        })
    }

    /// The headers the sandbox must not set itself.
    pub fn own_headers(&self) -> impl Iterator<Item = &HeaderName> {
        std::iter::once(&self.header).chain(self.timestamp_header.as_ref())
    }

    /// The canonical string for one request.
    pub(super) fn canonical(&self, inputs: &Inputs<'_>) -> String {
        let mut out = String::new();
        for seg in &self.canonical {
            match seg {
                Segment::Literal(s) => out.push_str(s),
                Segment::Method => out.push_str(&inputs.method.as_str().to_ascii_uppercase()),
                Segment::Host => out.push_str(inputs.host),
                Segment::Path => out.push_str(inputs.uri.path()),
                Segment::Query => out.push_str(inputs.uri.query().unwrap_or("")),
                Segment::Timestamp => out.push_str(&inputs.now_unix.to_string()),
            }
        }
        out
    }

    /// The header value: prefix and encoded signature, marked sensitive.
    pub(super) fn header_value(
        &self,
        secret: &Secret,
        inputs: &Inputs<'_>,
    ) -> Result<HeaderValue, SchemeError> {
        let sig = sign(
            self.algorithm,
            secret.expose(),
            self.canonical(inputs).as_bytes(),
        )?;
        let encoded = match self.encoding {
            HmacEncoding::Hex => lower_hex(&sig),
            HmacEncoding::Base64 => STANDARD.encode(&sig),
        };
        let mut v = HeaderValue::from_str(&format!("{}{encoded}", self.prefix))
            .map_err(|_| SchemeError::HmacBadPrefix)?;
        v.set_sensitive(true);
        Ok(v)
    }
}

fn header_name(name: &str) -> Result<HeaderName, SchemeError> {
    let header = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| SchemeError::HmacBadHeaderName(name.to_owned()))?;
    if FORBIDDEN_HEADERS.contains(&header.as_str()) {
        return Err(SchemeError::HmacForbiddenHeader(name.to_owned()));
    }
    Ok(header)
}

fn parse_template(template: &str) -> Result<Vec<Segment>, SchemeError> {
    if template.is_empty() {
        return Err(SchemeError::HmacEmptyCanonical);
    }
    let mut out = Vec::new();
    let mut literal = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        literal.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or(SchemeError::HmacUnclosedPlaceholder)?;
        let seg = match &after[..close] {
            "method" => Segment::Method,
            "host" => Segment::Host,
            "path" => Segment::Path,
            "query" => Segment::Query,
            "timestamp" => Segment::Timestamp,
            other => return Err(SchemeError::HmacUnknownPlaceholder(other.to_owned())),
        };
        if !literal.is_empty() {
            out.push(Segment::Literal(std::mem::take(&mut literal)));
        }
        out.push(seg);
        rest = &after[close + 1..];
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        out.push(Segment::Literal(literal));
    }
    Ok(out)
}

fn sign(algorithm: HmacAlgorithm, key: &[u8], data: &[u8]) -> Result<Vec<u8>, SchemeError> {
    // HMAC takes keys of any length; the error arm cannot happen.
    Ok(match algorithm {
        HmacAlgorithm::Sha256 => {
            let mut mac = Hmac::<Sha256>::new_from_slice(key).map_err(|_| SchemeError::HmacKey)?;
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
        HmacAlgorithm::Sha512 => {
            let mut mac = Hmac::<Sha512>::new_from_slice(key).map_err(|_| SchemeError::HmacKey)?;
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }
    })
}

pub(super) fn lower_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    s
}

#[cfg(test)]
#[path = "hmac_tests.rs"]
mod tests;
