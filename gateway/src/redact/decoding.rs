//! A compressed response body decompressed as it streams, so credential
//! redaction reads the bytes the sandbox would read after undoing the
//! `Content-Encoding` itself: redacting the compressed bytes finds nothing.
//!
//! Sluice asks for an uncompressed answer wherever it injects a
//! credential; this is for an upstream that compresses anyway. The codings
//! are those request bodies are decoded from (`scan::decode`): gzip,
//! deflate (zlib-wrapped, or raw as some servers send it), br and zstd,
//! stacked in any order. Corrupt data fails the body rather than pass
//! what follows it.

use std::io::{self, Write};

use flate2::write::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};

use super::body::{Rewrite, RewrittenBody};
use crate::scan::decode::{Coding, codings};

/// A body decoded as it streams ([`Decoding`]); its length changes, so
/// the caller drops the `Content-Length` and the `Content-Encoding`.
pub type DecodedBody<B> = RewrittenBody<B, Decoding>;

/// The decoders of a `Content-Encoding`, the last coding applied first
/// undone.
pub struct Decoding {
    stages: Vec<Stage>,
    error: Option<io::Error>,
}

enum Stage {
    Decoding(Box<dyn Decoder>),
    /// `deflate` is zlib-wrapped, or raw as some servers send it: told by
    /// the first two bytes (a zlib header is a multiple of 31 with method
    /// 8), held here until they have come.
    Deflate(Vec<u8>),
}

/// A write-side decoder whose output collects in a `Vec`.
trait Decoder: Write + Send + Sync {
    /// Writes out what the whole input decodes to: the input has ended.
    fn end(&mut self) -> io::Result<()>;
    fn output(&mut self) -> &mut Vec<u8>;
}

impl Decoder for MultiGzDecoder<Vec<u8>> {
    fn end(&mut self) -> io::Result<()> {
        self.try_finish()
    }
    fn output(&mut self) -> &mut Vec<u8> {
        self.get_mut()
    }
}

impl Decoder for ZlibDecoder<Vec<u8>> {
    fn end(&mut self) -> io::Result<()> {
        self.try_finish()
    }
    fn output(&mut self) -> &mut Vec<u8> {
        self.get_mut()
    }
}

impl Decoder for DeflateDecoder<Vec<u8>> {
    fn end(&mut self) -> io::Result<()> {
        self.try_finish()
    }
    fn output(&mut self) -> &mut Vec<u8> {
        self.get_mut()
    }
}

impl Decoder for brotli::DecompressorWriter<Vec<u8>> {
    fn end(&mut self) -> io::Result<()> {
        self.close()
    }
    fn output(&mut self) -> &mut Vec<u8> {
        self.get_mut()
    }
}

impl Decoder for zstd::stream::write::Decoder<'static, Vec<u8>> {
    fn end(&mut self) -> io::Result<()> {
        self.flush()
    }
    fn output(&mut self) -> &mut Vec<u8> {
        self.get_mut()
    }
}

impl Decoding {
    /// The decoders for `content_encoding` (a comma-separated list, in the
    /// order the codings were applied), or the coding no decoder reads.
    pub fn new(content_encoding: &str) -> Result<Decoding, String> {
        let mut stages = Vec::new();
        for coding in codings(content_encoding) {
            let decoder: Box<dyn Decoder> = match coding.map_err(str::to_owned)? {
                Coding::Gzip => Box::new(MultiGzDecoder::new(Vec::new())),
                Coding::Deflate => {
                    stages.push(Stage::Deflate(Vec::new()));
                    continue;
                }
                Coding::Br => Box::new(brotli::DecompressorWriter::new(Vec::new(), 4096)),
                Coding::Zstd => Box::new(
                    zstd::stream::write::Decoder::new(Vec::new()).map_err(|e| e.to_string())?,
                ),
            };
            stages.push(Stage::Decoding(decoder));
        }
        Ok(Decoding {
            stages,
            error: None,
        })
    }

    /// Wraps `body`.
    pub fn body<B>(self, body: B) -> DecodedBody<B> {
        RewrittenBody::with(body, self)
    }

    /// Runs `bytes` through every stage, finishing each when `last`.
    fn run(&mut self, bytes: &[u8], last: bool) -> io::Result<Vec<u8>> {
        let mut data = bytes.to_vec();
        for stage in &mut self.stages {
            data = stage.write(&data, last)?;
        }
        Ok(data)
    }
}

impl Stage {
    /// Feeds `input`; returns what came out (all of it when `last`).
    fn write(&mut self, input: &[u8], last: bool) -> io::Result<Vec<u8>> {
        match self {
            Stage::Decoding(d) => {
                d.write_all(input)?;
                if last {
                    d.end()?;
                }
                Ok(std::mem::take(d.output()))
            }
            Stage::Deflate(head) => {
                head.extend_from_slice(input);
                if head.len() < 2 && !last {
                    return Ok(Vec::new());
                }
                let held = std::mem::take(head);
                let zlib = held.len() >= 2
                    && held[0] & 0x0F == 8
                    && (u16::from(held[0]) << 8 | u16::from(held[1])) % 31 == 0;
                *self = Stage::Decoding(if zlib {
                    Box::new(ZlibDecoder::new(Vec::new()))
                } else {
                    Box::new(DeflateDecoder::new(Vec::new()))
                });
                self.write(&held, last)
            }
        }
    }
}

impl Rewrite for Decoding {
    fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        self.run(chunk, false).unwrap_or_else(|err| {
            self.error = Some(err);
            Vec::new()
        })
    }

    fn finish(&mut self) -> Vec<u8> {
        self.run(&[], true).unwrap_or_else(|err| {
            self.error = Some(err);
            Vec::new()
        })
    }

    fn discard(&mut self) {
        self.stages.clear();
    }

    fn held_len(&self) -> usize {
        // Decoders hold state, not output: nothing is known to be held.
        0
    }

    fn failed(&mut self) -> Option<Box<dyn std::error::Error + Send + Sync>> {
        self.error
            .take()
            .map(|err| format!("the upstream's compressed answer does not decode: {err}").into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::decode::encode::{brotli, gzip, raw_deflate, zlib, zstd};

    /// Decodes `encoded` fed in chunks of `size` bytes.
    fn decode(coding: &str, encoded: &[u8], size: usize) -> (Vec<u8>, bool) {
        let mut d = Decoding::new(coding).expect("a known coding");
        let mut out = Vec::new();
        for chunk in encoded.chunks(size.max(1)) {
            out.extend(d.push(chunk));
        }
        out.extend(d.finish());
        (out, d.failed().is_some())
    }

    #[test]
    fn every_coding_decodes_whatever_the_chunking() {
        let text = b"{\"authorization\": \"Bearer sk-live-0123456789abcdef\"}".repeat(40);
        let cases: [(&str, Vec<u8>); 7] = [
            ("gzip", gzip(&text)),
            ("X-Gzip", gzip(&text)),
            ("deflate", zlib(&text)),
            ("deflate", raw_deflate(&text)),
            ("br", brotli(&text)),
            ("zstd", zstd(&text)),
            // Applied gzip first, then br: undone br first.
            ("gzip, br", brotli(&gzip(&text))),
        ];
        for (coding, encoded) in &cases {
            for size in [1, 7, 4096] {
                assert_eq!(
                    decode(coding, encoded, size),
                    (text.clone(), false),
                    "{coding} in chunks of {size}"
                );
            }
        }
        assert_eq!(decode("identity", &text, 5), (text.clone(), false));
    }

    #[test]
    fn unknown_codings_and_corrupt_data_are_told() {
        assert_eq!(Decoding::new("compress").err().as_deref(), Some("compress"));
        let (_, failed) = decode("gzip", b"not gzip at all", 4);
        assert!(failed);
    }
}
