//! Content-Encoding: gzip, deflate, br and zstd bodies are decompressed for
//! inspection, up to a size cap. A body that cannot be decoded (unknown
//! coding, corrupt data) is an error, and the caller refuses it: a body the
//! policy wants inspected is never passed on uninspected.

use std::borrow::Cow;
use std::io::Read;

/// A body ready to scan.
#[derive(Debug)]
pub struct DecodedBody<'a> {
    /// The decoded bytes, at most the cap given to [`decode`].
    pub bytes: Cow<'a, [u8]>,
    /// Whether the decoded body is longer than the cap (only the first
    /// `cap` bytes are in `bytes`); the oversize policy decides the rest.
    pub truncated: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error(
        "content-encoding `{0}` is not supported (gzip, x-gzip, deflate, br, zstd, identity are)"
    )]
    Unsupported(String),
    #[error("the body is not valid {coding}: {source}")]
    Corrupt {
        coding: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl DecodeError {
    /// Metric label: a body the sandbox sent that cannot be inspected.
    pub fn class(&self) -> &'static str {
        "sandbox"
    }
}

/// Decodes `body` as sent with `content_encoding` (a comma-separated list,
/// applied in order, so undone in reverse). Stops at `cap` decoded bytes.
pub fn decode<'a>(
    content_encoding: Option<&str>,
    body: &'a [u8],
    cap: usize,
) -> Result<DecodedBody<'a>, DecodeError> {
    let codings: Vec<&str> = content_encoding
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("identity"))
        .collect();
    let mut bytes = Cow::Borrowed(body);
    let mut truncated = false;
    for coding in codings.iter().rev() {
        let lower = coding.to_ascii_lowercase();
        let (name, decoded) = match lower.as_str() {
            "gzip" | "x-gzip" => (
                "gzip",
                read_capped(flate2::read::MultiGzDecoder::new(&bytes[..]), cap),
            ),
            // HTTP's "deflate" is zlib-wrapped; some servers send raw deflate.
            "deflate" => match read_capped(flate2::read::ZlibDecoder::new(&bytes[..]), cap) {
                Ok(out) => ("deflate", Ok(out)),
                Err(_) => (
                    "deflate",
                    read_capped(flate2::read::DeflateDecoder::new(&bytes[..]), cap),
                ),
            },
            "br" => (
                "br",
                read_capped(brotli::Decompressor::new(&bytes[..], 4096), cap),
            ),
            "zstd" => (
                "zstd",
                zstd::stream::read::Decoder::new(&bytes[..])
                    .and_then(|decoder| read_capped(decoder, cap)),
            ),
            _ => return Err(DecodeError::Unsupported((*coding).to_string())),
        };
        let (out, over) = decoded.map_err(|source| DecodeError::Corrupt {
            coding: name,
            source,
        })?;
        truncated |= over;
        bytes = Cow::Owned(out);
    }
    if bytes.len() > cap {
        truncated = true;
        bytes = match bytes {
            Cow::Borrowed(b) => Cow::Borrowed(&b[..cap]),
            Cow::Owned(mut v) => {
                v.truncate(cap);
                Cow::Owned(v)
            }
        };
    }
    Ok(DecodedBody { bytes, truncated })
}

/// Reads at most `cap` bytes; says whether more were there. A stream that
/// breaks before the cap is an error (a stream cut after it is not read).
fn read_capped(reader: impl Read, cap: usize) -> std::io::Result<(Vec<u8>, bool)> {
    let mut out = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    reader.take(limit).read_to_end(&mut out)?;
    let over = out.len() > cap;
    out.truncate(cap);
    Ok((out, over))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const TEXT: &[u8] = b"card 4111 1111 1111 1111 and more text to compress, compress, compress";

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).expect("write");
        e.finish().expect("finish")
    }

    fn brotli(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
            w.write_all(data).expect("write");
        }
        out
    }

    #[test]
    fn every_coding_round_trips() {
        let zlib = {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(TEXT).expect("write");
            e.finish().expect("finish")
        };
        let raw_deflate = {
            let mut e =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(TEXT).expect("write");
            e.finish().expect("finish")
        };
        let zstd = zstd::encode_all(TEXT, 3).expect("zstd");
        for (coding, body) in [
            (None, TEXT.to_vec()),
            (Some("identity"), TEXT.to_vec()),
            (Some("gzip"), gzip(TEXT)),
            (Some("X-Gzip"), gzip(TEXT)),
            (Some("deflate"), zlib),
            (Some("deflate"), raw_deflate),
            (Some("br"), brotli(TEXT)),
            (Some("zstd"), zstd),
            (Some("gzip, br"), brotli(&gzip(TEXT))),
        ] {
            let decoded = decode(coding, &body, 1 << 20).expect("decodes");
            assert_eq!(&decoded.bytes[..], TEXT, "{coding:?}");
            assert!(!decoded.truncated);
        }
    }

    #[test]
    fn the_cap_truncates_and_says_so() {
        let big = vec![b'a'; 100_000];
        let gz = gzip(&big);
        let decoded = decode(Some("gzip"), &gz, 1000).expect("decodes");
        assert_eq!(decoded.bytes.len(), 1000);
        assert!(decoded.truncated);
        let plain = decode(None, &big, 10).expect("identity");
        assert_eq!(plain.bytes.len(), 10);
        assert!(plain.truncated);
    }

    #[test]
    fn undecodable_bodies_are_errors() {
        assert!(matches!(
            decode(Some("compress"), b"x", 10),
            Err(DecodeError::Unsupported(_))
        ));
        for coding in ["gzip", "br", "zstd", "deflate"] {
            assert!(
                matches!(
                    decode(Some(coding), b"not compressed at all", 100),
                    Err(DecodeError::Corrupt { .. })
                ),
                "{coding}"
            );
        }
        // A gzip stream cut short.
        let mut cut = gzip(TEXT);
        let half = cut.len() / 2;
        cut.truncate(half);
        assert!(decode(Some("gzip"), &cut, 1 << 20).is_err());
    }
}
