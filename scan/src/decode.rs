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
    #[error("{0} content codings are stacked; Sluice undoes at most {MAX_CODINGS}")]
    Stacked(usize),
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

/// A content coding Sluice undoes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// `gzip` or `x-gzip`.
    Gzip,
    /// HTTP's `deflate` is zlib-wrapped; some servers send raw deflate.
    Deflate,
    Br,
    Zstd,
}

impl Coding {
    /// Its name, as errors give it.
    pub fn name(self) -> &'static str {
        match self {
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
            Coding::Br => "br",
            Coding::Zstd => "zstd",
        }
    }
}

/// The codings of a `Content-Encoding` list (applied in the order listed)
/// in the order to undo them, the last applied first; blanks and
/// `identity` left out. A coding Sluice does not undo comes as
/// `Err(name)`, where it falls. The one reading of the header for request
/// bodies (here) and for answers redacted as they stream
/// (`redact::decoding`).
pub fn codings(content_encoding: &str) -> impl Iterator<Item = Result<Coding, &str>> {
    content_encoding
        .split(',')
        .map(str::trim)
        .rev()
        .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("identity"))
        .map(|c| match c.to_ascii_lowercase().as_str() {
            "gzip" | "x-gzip" => Ok(Coding::Gzip),
            "deflate" => Ok(Coding::Deflate),
            "br" => Ok(Coding::Br),
            "zstd" => Ok(Coding::Zstd),
            _ => Err(c),
        })
}

/// The most codings a body may stack. Nothing real stacks more than two,
/// and each is work and a decoder's memory: a list thousands long fits in
/// a header.
pub const MAX_CODINGS: usize = 3;

/// The codings of `content_encoding` to undo, in order ([`codings`]), or
/// why they cannot be: one Sluice does not undo, or too many.
pub fn stack(content_encoding: &str) -> Result<Vec<Coding>, DecodeError> {
    let mut stack = Vec::new();
    for coding in codings(content_encoding) {
        if stack.len() == MAX_CODINGS {
            return Err(DecodeError::Stacked(codings(content_encoding).count()));
        }
        stack.push(coding.map_err(|name| DecodeError::Unsupported(name.to_owned()))?);
    }
    Ok(stack)
}

/// A zstd decoder's largest window: 8 MiB, as RFC 9659 has HTTP use (a
/// frame may ask up to 2 GiB, all of it held while the body decodes).
pub const ZSTD_WINDOW_LOG: u32 = 23;

/// Decodes `body` as sent with `content_encoding` (a comma-separated list,
/// applied in order, so undone in reverse). Stops at `cap` decoded bytes.
pub fn decode<'a>(
    content_encoding: Option<&str>,
    body: &'a [u8],
    cap: usize,
) -> Result<DecodedBody<'a>, DecodeError> {
    let mut bytes = Cow::Borrowed(body);
    let mut truncated = false;
    for coding in stack(content_encoding.unwrap_or(""))? {
        let decoded = match coding {
            Coding::Gzip => read_capped(flate2::read::MultiGzDecoder::new(&bytes[..]), cap),
            Coding::Deflate => read_capped(flate2::read::ZlibDecoder::new(&bytes[..]), cap)
                .or_else(|_| read_capped(flate2::read::DeflateDecoder::new(&bytes[..]), cap)),
            Coding::Br => read_capped(brotli::Decompressor::new(&bytes[..], 4096), cap),
            Coding::Zstd => zstd::stream::read::Decoder::new(&bytes[..]).and_then(|mut decoder| {
                decoder.window_log_max(ZSTD_WINDOW_LOG)?;
                read_capped(decoder, cap)
            }),
        };
        let (out, over) = decoded.map_err(|source| DecodeError::Corrupt {
            coding: coding.name(),
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

/// Bodies compressed each way a test needs: for this module's tests and
/// the gateway's `redact::decoding` tests (feature `encode`, which only
/// dev-dependencies turn on).
#[cfg(any(test, feature = "encode"))]
pub mod encode {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};

    pub fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(bytes).expect("gzip in memory");
        e.finish().expect("gzip in memory")
    }

    pub fn zlib(bytes: &[u8]) -> Vec<u8> {
        let mut e = ZlibEncoder::new(Vec::new(), Compression::default());
        e.write_all(bytes).expect("zlib in memory");
        e.finish().expect("zlib in memory")
    }

    pub fn raw_deflate(bytes: &[u8]) -> Vec<u8> {
        let mut e = DeflateEncoder::new(Vec::new(), Compression::default());
        e.write_all(bytes).expect("deflate in memory");
        e.finish().expect("deflate in memory")
    }

    pub fn brotli(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
            w.write_all(bytes).expect("br in memory");
        }
        out
    }

    pub fn zstd(bytes: &[u8]) -> Vec<u8> {
        zstd::encode_all(bytes, 3).expect("zstd in memory")
    }

    /// zstd whose frame asks a 128 MiB window: flushed before its size is
    /// known, so the encoder keeps the window it was given.
    pub fn zstd_wide(bytes: &[u8]) -> Vec<u8> {
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).expect("zstd");
        e.window_log(27).expect("window");
        e.write_all(bytes).expect("zstd in memory");
        e.flush().expect("zstd in memory");
        e.write_all(bytes).expect("zstd in memory");
        e.finish().expect("zstd in memory")
    }
}

#[cfg(test)]
mod tests {
    use super::encode::{brotli, gzip, raw_deflate, zlib, zstd, zstd_wide};
    use super::*;

    const TEXT: &[u8] = b"card 4111 1111 1111 1111 and more text to compress, compress, compress";

    #[test]
    fn every_coding_round_trips() {
        for (coding, body) in [
            (None, TEXT.to_vec()),
            (Some("identity"), TEXT.to_vec()),
            (Some("gzip"), gzip(TEXT)),
            (Some("X-Gzip"), gzip(TEXT)),
            (Some("deflate"), zlib(TEXT)),
            (Some("deflate"), raw_deflate(TEXT)),
            (Some("br"), brotli(TEXT)),
            (Some("zstd"), zstd(TEXT)),
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

    #[test]
    fn codings_stack_at_most_three_deep() {
        let three = gzip(&gzip(&gzip(TEXT)));
        let decoded = decode(Some("gzip, gzip,gzip"), &three, 1 << 20).expect("three");
        assert_eq!(decoded.bytes.as_ref(), TEXT);
        for (list, n) in [("gzip, gzip, gzip, gzip", 4), (&"gzip,".repeat(5000), 5000)] {
            let err = decode(Some(list), &three, 1 << 20).expect_err("too many");
            assert!(matches!(err, DecodeError::Stacked(m) if m == n), "{err}");
        }
        // An unknown coding is told as such within the first three.
        assert!(matches!(
            stack("br, compress"),
            Err(DecodeError::Unsupported(_))
        ));
    }

    #[test]
    fn a_zstd_window_past_8_mib_is_refused() {
        let wide = zstd_wide(TEXT);
        assert!(matches!(
            decode(Some("zstd"), &wide, 1 << 20),
            Err(DecodeError::Corrupt { coding: "zstd", .. })
        ));
        assert_eq!(
            decode(Some("zstd"), &zstd(TEXT), 1 << 20)
                .expect("8 MiB")
                .bytes
                .as_ref(),
            TEXT
        );
    }
}
