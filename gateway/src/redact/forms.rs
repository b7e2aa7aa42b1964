//! The encoded forms in which a secret can leave a sandbox and still be
//! read back by anyone who sees the bytes.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

/// The forms of `secret` worth hunting for, without duplicates: raw;
/// standard base64 with and without padding; URL-safe base64 with and
/// without padding; percent-encoded with upper- and lower-case hex (RFC 3986
/// unreserved bytes kept); JSON-escaped as inside a JSON string, with `/`
/// plain and as `\/`; hex in either case (for secrets of 8 bytes or more:
/// shorter hex turns up by chance in hashes and ids); then the base64
/// (both alphabets) of the secret inside a longer value
/// (`embedded_base64`). Empty for an empty secret.
pub fn forms(secret: &[u8]) -> Vec<Vec<u8>> {
    if secret.is_empty() {
        return Vec::new();
    }
    let candidates = [
        secret.to_vec(),
        STANDARD.encode(secret).into_bytes(),
        STANDARD_NO_PAD.encode(secret).into_bytes(),
        URL_SAFE.encode(secret).into_bytes(),
        URL_SAFE_NO_PAD.encode(secret).into_bytes(),
        percent_encode(secret, HEX_UPPER),
        percent_encode(secret, HEX_LOWER),
        json_escape(secret, false),
        json_escape(secret, true),
    ];
    let hex = (secret.len() * 2 >= EMBEDDED_MIN)
        .then(|| [hex(secret, HEX_LOWER), hex(secret, HEX_UPPER)])
        .into_iter()
        .flatten();
    let embedded = [STANDARD_NO_PAD, URL_SAFE_NO_PAD]
        .iter()
        .flat_map(|engine| embedded_base64(engine, secret));
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(candidates.len() + 8);
    for form in candidates.into_iter().chain(hex).chain(embedded) {
        if !out.contains(&form) {
            out.push(form);
        }
    }
    out
}

/// Shortest needle for the secret inside a longer base64 value: shorter
/// ones would turn up by chance in unrelated base64. So secrets of 13
/// bytes or more are found at every offset (API keys are longer).
const EMBEDDED_MIN: usize = 16;

/// The base64 characters that the secret alone decides wherever it sits in
/// a longer encoded value (`user:secret` of HTTP Basic, a token inside
/// base64 JSON, a JWT's payload): one needle per offset of the secret
/// modulo 3, less the characters shared with the bytes before it (one
/// at offset 1, two at offset 2, besides the prefix's own) and the last
/// character when the bytes after it share it. A match replaces the
/// secret's characters only, which is enough to keep it from being read.
fn embedded_base64(engine: &base64::engine::GeneralPurpose, secret: &[u8]) -> Vec<Vec<u8>> {
    (0..3usize)
        .filter_map(|offset| {
            let mut shifted = vec![0; offset];
            shifted.extend_from_slice(secret);
            let encoded = engine.encode(&shifted).into_bytes();
            // Characters wholly from the secret: from the first that starts
            // at or after its first bit to the last that ends by its last.
            let first = (offset * 8).div_ceil(6);
            let last = shifted.len() * 8 / 6;
            let needle = encoded.get(first..last)?.to_vec();
            (needle.len() >= EMBEDDED_MIN).then_some(needle)
        })
        .collect()
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";
const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";

/// Percent-encodes everything but RFC 3986 unreserved characters, with
/// upper-case hex (what clients send).
pub fn percent_encode_upper(bytes: &[u8]) -> Vec<u8> {
    percent_encode(bytes, HEX_UPPER)
}

fn hex(secret: &[u8], digits: &[u8; 16]) -> Vec<u8> {
    secret
        .iter()
        .flat_map(|&b| [digits[usize::from(b >> 4)], digits[usize::from(b & 0xf)]])
        .collect()
}

fn percent_encode(secret: &[u8], hex: &[u8; 16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(secret.len() * 3);
    for &b in secret {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', hex[usize::from(b >> 4)], hex[usize::from(b & 0xf)]]);
        }
    }
    out
}

/// Escapes as serializers do inside a JSON string: quote, backslash and
/// control bytes; other bytes (UTF-8 included) pass as they are.
fn json_escape(secret: &[u8], escape_slash: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(secret.len() + 8);
    for &b in secret {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' if escape_slash => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0x00..=0x1f => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX_LOWER[usize::from(b >> 4)],
                HEX_LOWER[usize::from(b & 0xf)],
            ]),
            _ => out.push(b),
        }
    }
    out
}
