//! A compressed body decompressed as it streams, so the stages that
//! rewrite it read the bytes the receiver would read after undoing the
//! `Content-Encoding` itself: redacting or rewriting the compressed bytes
//! finds nothing.
//!
//! Sluice asks for an uncompressed answer wherever it rewrites one; this
//! is for an upstream that compresses anyway, and for a sandbox that
//! compresses a request only transformations read. The codings are those
//! request bodies are decoded from (`sluice_scan::decode`): gzip, deflate
//! (zlib-wrapped, or raw as some servers send it), br and zstd, stacked in
//! any order. Corrupt data fails the body rather than pass what follows it.
//!
//! Memory and work are bounded whatever the ratio: at most three codings
//! stack, zstd windows are at most 8 MiB, the input is fed a slice at a
//! time, a chunk's output leaves in frames of about [`FRAME`] bytes (the
//! rest of the chunk waits, [`Rewrite::pending`]), and a slice that
//! decodes to more than [`SLICE_CAP`], or a body whose stages decode more
//! than [`RATIO`] times its size (past an [`ALLOWANCE`]), fails as a bomb.

use std::io::{self, Write};

use flate2::write::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};

use super::body::{Rewrite, RewrittenBody};
use sluice_scan::decode::{Coding, DecodeError, ZSTD_WINDOW_LOG, stack};

/// Input bytes given to one decoder at a time.
const SLICE: usize = 4096;
/// The most a compressed byte may decode to: 2048. Deflate cannot pass
/// about 1032:1; br and zstd can go far past, which text never needs.
const RATIO: usize = 2048;
/// The most one slice may decode to, so one step's memory is bounded.
const SLICE_CAP: usize = RATIO * SLICE;
/// Decoded bytes a body may have past `RATIO` times its compressed size,
/// summed over its stages: the bound on the work a body can ask for, also
/// through stacked codings whose ratios multiply, or a last stage that
/// consumes much and writes nothing (zstd's skippable frames).
const ALLOWANCE: u64 = 16 << 20;
/// Output gathered before a call returns; the input not yet fed waits.
const FRAME: usize = 64 << 10;

/// A body decoded as it streams ([`Decoding`]); its length changes, so
/// the caller drops the `Content-Length` and the `Content-Encoding`.
pub type DecodedBody<B> = RewrittenBody<B, Decoding>;

/// The decoders of a `Content-Encoding`, the last coding applied first
/// undone; each stage's output is the next one's input.
pub struct Decoding {
    stages: Vec<Stage>,
    /// The body has ended: each stage ends once those before it have.
    ended: bool,
    /// Compressed bytes pushed, and bytes decoded by every stage.
    compressed: u64,
    decoded: u64,
    /// Failed or discarded: nothing more comes out, not even bytes an
    /// identity `Decoding` would pass.
    broken: bool,
    error: Option<io::Error>,
}

struct Stage {
    coder: Coder,
    /// Input not yet fed, from `at`.
    input: Vec<u8>,
    at: usize,
    ended: bool,
}

enum Coder {
    /// Made at the first byte: an empty body (a HEAD's answer, a 204) is
    /// empty whatever its label says. `deflate` is zlib-wrapped, or raw as
    /// some servers send it, told by the first two bytes (a zlib header is
    /// a multiple of 31 with method 8), so it waits for them.
    Waiting(Coding),
    Ready(Box<dyn Decoder>),
}

impl Coder {
    /// The decoder for `coding`, its input beginning with `head`.
    fn make(coding: Coding, head: &[u8]) -> io::Result<Box<dyn Decoder>> {
        let sink = Sink::default();
        Ok(match coding {
            Coding::Gzip => Box::new(MultiGzDecoder::new(sink)),
            Coding::Deflate
                if head.len() >= 2
                    && head[0] & 0x0F == 8
                    && (u16::from(head[0]) << 8 | u16::from(head[1])) % 31 == 0 =>
            {
                Box::new(ZlibDecoder::new(sink))
            }
            Coding::Deflate => Box::new(DeflateDecoder::new(sink)),
            Coding::Br => Box::new(brotli::DecompressorWriter::new(sink, 4096)),
            Coding::Zstd => {
                let mut decoder = zstd::stream::write::Decoder::new(sink)?;
                decoder.window_log_max(ZSTD_WINDOW_LOG)?;
                Box::new(decoder)
            }
        })
    }
}

/// A write-side decoder whose output collects in a [`Sink`].
trait Decoder: Write + Send + Sync {
    /// Writes out what the whole input decodes to: the input has ended.
    fn end(&mut self) -> io::Result<()>;
    fn output(&mut self) -> &mut Sink;
}

/// Where a decoder writes: refuses past [`SLICE_CAP`] bytes, so a bomb
/// stops inside the decoder's write rather than after it filled memory.
#[derive(Default)]
struct Sink(Vec<u8>);

impl Write for Sink {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.0.len() + data.len() > SLICE_CAP {
            return Err(io::Error::other(format!(
                "{SLICE} compressed bytes decode to more than {SLICE_CAP} (a decompression bomb)"
            )));
        }
        self.0.extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Decoder for MultiGzDecoder<Sink> {
    fn end(&mut self) -> io::Result<()> {
        self.try_finish()
    }
    fn output(&mut self) -> &mut Sink {
        self.get_mut()
    }
}

impl Decoder for ZlibDecoder<Sink> {
    fn end(&mut self) -> io::Result<()> {
        self.try_finish()
    }
    fn output(&mut self) -> &mut Sink {
        self.get_mut()
    }
}

impl Decoder for DeflateDecoder<Sink> {
    fn end(&mut self) -> io::Result<()> {
        self.try_finish()
    }
    fn output(&mut self) -> &mut Sink {
        self.get_mut()
    }
}

impl Decoder for brotli::DecompressorWriter<Sink> {
    fn end(&mut self) -> io::Result<()> {
        self.close()
    }
    fn output(&mut self) -> &mut Sink {
        self.get_mut()
    }
}

impl Decoder for zstd::stream::write::Decoder<'static, Sink> {
    fn end(&mut self) -> io::Result<()> {
        // Fails when the input stopped inside a frame.
        self.do_finish()
    }
    fn output(&mut self) -> &mut Sink {
        self.get_mut()
    }
}

impl Decoding {
    /// The decoders for `content_encoding` (a comma-separated list, in the
    /// order the codings were applied), or why it cannot be decoded (a
    /// coding no decoder reads, too many stacked).
    pub fn new(content_encoding: &str) -> Result<Decoding, DecodeError> {
        let stages = stack(content_encoding)?
            .into_iter()
            .map(|coding| Stage {
                coder: Coder::Waiting(coding),
                input: Vec::new(),
                at: 0,
                ended: false,
            })
            .collect();
        Ok(Decoding {
            stages,
            ended: false,
            compressed: 0,
            decoded: 0,
            broken: false,
            error: None,
        })
    }

    /// Wraps `body`.
    pub fn body<B>(self, body: B) -> DecodedBody<B> {
        RewrittenBody::with(body, self)
    }

    /// Decodes until about `FRAME` bytes are out or nothing more can be:
    /// a slice at a time, from the stage nearest the output that has input
    /// (so little waits between stages); once the body has ended and every
    /// stage is fed, the stages end in order.
    fn run(&mut self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        while out.len() < FRAME {
            let fed = (0..self.stages.len()).rev().find_map(|k| {
                let whole = self.ended && self.stages[..k].iter().all(|s| s.ended);
                self.stages[k].feed(whole).transpose().map(|r| (k, r))
            });
            let (k, produced) = match fed {
                Some((k, produced)) => (k, produced?),
                None if !self.ended => break,
                None => match self.stages.iter().position(|s| !s.ended) {
                    Some(k) => (k, self.stages[k].end()?),
                    None => break,
                },
            };
            self.decoded += produced.len() as u64;
            if self.decoded > self.compressed.saturating_mul(RATIO as u64) + ALLOWANCE {
                return Err(io::Error::other(format!(
                    "{} compressed bytes decode to more than {RATIO} times as many (a decompression bomb)",
                    self.compressed
                )));
            }
            match self.stages.get_mut(k + 1) {
                Some(next) => next.take(&produced),
                None => out.extend_from_slice(&produced),
            }
        }
        Ok(out)
    }

    fn run_or_fail(&mut self) -> Vec<u8> {
        if self.broken {
            return Vec::new();
        }
        self.run().unwrap_or_else(|err| {
            self.broken = true;
            self.stages.clear();
            self.error = Some(err);
            Vec::new()
        })
    }
}

impl Stage {
    /// Adds input to feed.
    fn take(&mut self, bytes: &[u8]) {
        if self.at == self.input.len() {
            self.input.clear();
        } else {
            self.input.drain(..self.at);
        }
        self.at = 0;
        self.input.extend_from_slice(bytes);
    }

    /// Feeds the next slice of input and returns what it decoded to, or
    /// `None` when there is none to feed (`whole`: no more input will come).
    fn feed(&mut self, whole: bool) -> io::Result<Option<Vec<u8>>> {
        let waiting = &self.input[self.at..];
        if waiting.is_empty() {
            return Ok(None);
        }
        if let Coder::Waiting(coding) = self.coder {
            if coding == Coding::Deflate && waiting.len() < 2 && !whole {
                return Ok(None);
            }
            self.coder = Coder::Ready(Coder::make(coding, waiting)?);
        }
        let Coder::Ready(decoder) = &mut self.coder else {
            unreachable!("made just above")
        };
        let end = waiting.len().min(SLICE);
        decoder.write_all(&waiting[..end])?;
        // The decoders keep output in a buffer of their own until the next
        // write: flushed, so the last chunk's output is not held back.
        decoder.flush()?;
        self.at += end;
        Ok(Some(std::mem::take(&mut decoder.output().0)))
    }

    /// Ends the stage, all its input fed: what the decoder still held.
    fn end(&mut self) -> io::Result<Vec<u8>> {
        self.ended = true;
        match &mut self.coder {
            Coder::Ready(decoder) => {
                decoder.end()?;
                Ok(std::mem::take(&mut decoder.output().0))
            }
            // No input at all: nothing to decode.
            Coder::Waiting(_) => Ok(Vec::new()),
        }
    }
}

impl Rewrite for Decoding {
    fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if self.broken {
            return Vec::new();
        }
        match self.stages.first_mut() {
            None => chunk.to_vec(),
            Some(first) => {
                first.take(chunk);
                self.compressed += chunk.len() as u64;
                self.run_or_fail()
            }
        }
    }

    fn pending(&mut self) -> Vec<u8> {
        self.run_or_fail()
    }

    fn finish(&mut self) -> Vec<u8> {
        self.ended = true;
        self.run_or_fail()
    }

    fn discard(&mut self) {
        self.broken = true;
        self.stages.clear();
    }

    fn held_len(&self) -> usize {
        // Input waiting, and decoders not yet ended may still write out:
        // the body is not over before `finish` ends them.
        self.stages
            .iter()
            .map(|s| s.input.len() - s.at + usize::from(!s.ended))
            .sum()
    }

    fn failed(&mut self) -> Option<Box<dyn std::error::Error + Send + Sync>> {
        self.error
            .take()
            .map(|err| format!("the compressed body does not decode: {err}").into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_scan::decode::encode::{brotli, gzip, raw_deflate, zlib, zstd, zstd_wide};

    /// Decodes `encoded` fed in chunks of `size` bytes, taking what waits
    /// after each as the body adapter does: the output, whether the body
    /// failed, and the largest piece that came out at once.
    fn decode(coding: &str, encoded: &[u8], size: usize) -> (Vec<u8>, bool, usize) {
        let mut d = Decoding::new(coding).expect("a known coding");
        let (mut out, mut largest) = (Vec::new(), 0);
        let mut take = |piece: Vec<u8>, out: &mut Vec<u8>| {
            largest = largest.max(piece.len());
            out.extend(piece);
        };
        for chunk in encoded.chunks(size.max(1)) {
            take(d.push(chunk), &mut out);
            while d.held_len() > 0 {
                let piece = d.pending();
                if piece.is_empty() {
                    break;
                }
                take(piece, &mut out);
            }
        }
        take(d.finish(), &mut out);
        loop {
            let piece = d.pending();
            if piece.is_empty() {
                break;
            }
            take(piece, &mut out);
        }
        (out, d.failed().is_some(), largest)
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
                let (out, failed, _) = decode(coding, encoded, size);
                assert_eq!(
                    (out, failed),
                    (text.clone(), false),
                    "{coding} in chunks of {size}"
                );
            }
        }
        let (out, failed, _) = decode("identity", &text, 5);
        assert_eq!((out, failed), (text, false));
    }

    #[test]
    fn unknown_codings_and_corrupt_data_are_told() {
        assert!(
            matches!(Decoding::new("compress"), Err(DecodeError::Unsupported(c)) if c == "compress")
        );
        assert!(matches!(
            Decoding::new("br, br, br, br"),
            Err(DecodeError::Stacked(4))
        ));
        // zstd cut short.
        let whole = zstd(&b"{\"text\": \"cut\"} ".repeat(500));
        let (_, failed, _) = decode("zstd", &whole[..whole.len() / 2], 64);
        assert!(failed);
        // A window past 8 MiB.
        let (_, failed, _) = decode("zstd", &zstd_wide(b"wide"), 64);
        assert!(failed);
        let (out, failed, _) = decode("gzip", b"not gzip at all", 4);
        assert!(failed && out.is_empty());
        // Nothing passes after a failure, not even raw bytes.
        let mut d = Decoding::new("gzip").expect("gzip");
        assert!(d.push(b"not gzip at all").is_empty() && d.failed().is_some());
        assert!(d.push(b"more").is_empty() && d.pending().is_empty() && d.finish().is_empty());
    }

    #[test]
    fn an_empty_body_is_empty_whatever_its_label() {
        // The answer to a HEAD, a 204, a 304: labelled, with no bytes.
        for coding in ["gzip", "deflate", "br", "zstd", "gzip, br"] {
            assert_eq!(decode(coding, b"", 1), (Vec::new(), false, 0), "{coding}");
        }
    }

    #[test]
    fn a_chunk_that_decodes_large_leaves_in_frames() {
        // 16 MiB of zeros: gzip near deflate's highest ratio, and stacked
        // (gzip of gzip) well past it; each sent as one chunk.
        let zeros = vec![0_u8; 16 << 20];
        for (coding, encoded) in [("gzip", gzip(&zeros)), ("gzip, gzip", gzip(&gzip(&zeros)))] {
            let (out, failed, largest) = decode(coding, &encoded, encoded.len());
            assert!(!failed, "{coding}");
            assert!(
                out.len() == zeros.len() && out.iter().all(|&b| b == 0),
                "{coding}"
            );
            assert!(
                largest <= FRAME + 1032 * SLICE,
                "{coding}: {largest} bytes at once"
            );
        }
    }

    #[test]
    fn stacked_codings_cannot_multiply_the_work() {
        // 64 MiB of zeros in zstd's skippable frames (consumed, writing
        // nothing), gzipped twice: a few KiB that each layer decodes within
        // the slice cap, and the whole far past the body's ratio.
        let mut skippable = Vec::new();
        for _ in 0..64 {
            skippable.extend_from_slice(&0x184D_2A50_u32.to_le_bytes());
            skippable.extend_from_slice(&(1_u32 << 20).to_le_bytes());
            skippable.resize(skippable.len() + (1 << 20), 0);
        }
        let encoded = gzip(&gzip(&skippable));
        assert!(encoded.len() < 64 << 10, "{} bytes", encoded.len());
        let (out, failed, _) = decode("zstd, gzip, gzip", &encoded, encoded.len());
        assert!(failed && out.is_empty());
    }

    #[test]
    fn a_decompression_bomb_fails_the_body() {
        // br and zstd write 64 MiB of zeros in a few hundred bytes: past
        // any ratio text has, stopped inside the decoder.
        let zeros = vec![0_u8; 64 << 20];
        for (coding, encoded) in [("br", brotli(&zeros)), ("zstd", zstd(&zeros))] {
            assert!(encoded.len() < SLICE, "{coding}: {} bytes", encoded.len());
            let (out, failed, largest) = decode(coding, &encoded, encoded.len());
            assert!(failed, "{coding}");
            assert!(out.len() <= SLICE_CAP && largest <= SLICE_CAP, "{coding}");
        }
    }

    /// The body adapter lets a large chunk out in frames and keeps the
    /// body open until the decoders have ended, also over an inner body
    /// that says it is over as soon as its last frame is taken (hyper
    /// stops polling a body that says so).
    #[tokio::test]
    async fn the_body_streams_large_chunks_and_ends_after_the_decoders() {
        use http_body_util::{BodyExt, Full};
        use hyper::body::Body;

        let text = b"{\"choices\":[{\"text\":\"zeros\"}]}".repeat(1 << 16);
        let mut body = Decoding::new("gzip")
            .expect("gzip")
            .body(Full::new(hyper::body::Bytes::from(gzip(&text))));
        // As hyper does: no polling once the body says it is over.
        let mut out = Vec::new();
        while !body.is_end_stream() {
            let Some(frame) = body.frame().await else {
                break;
            };
            let data = frame.expect("no error").into_data().expect("data");
            assert!(
                data.len() <= FRAME + 1032 * SLICE,
                "{} bytes at once",
                data.len()
            );
            out.extend_from_slice(&data);
        }
        assert_eq!(out.len(), text.len());
        assert!(out == text);
    }
}
