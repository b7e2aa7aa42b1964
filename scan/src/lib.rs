//! Sluice's content scanners: personal data and secrets in request bodies
//! (this crate's root), prompt injection in them ([`injection`]), and one
//! reading of a body for both ([`Read`]).
//!
//! The API is small and safe. A gateway builds one [`Scanner`] per policy
//! ([`ScanConfig`] names the kinds) and one [`injection::Detector`] per
//! policy ([`injection::InjectionDefense`]), then per request body:
//!
//! - [`Scanner::scan`]: the personal data and secrets found, as
//!   [`Finding`]s (byte spans of the body and their [`Kind`]);
//! - [`injection::Detector::assess`]: how much it reads like prompt
//!   injection, as an [`injection::Assessment`] (a score and the signals);
//! - [`Read`]: both from one reading of the body (a JSON body is laid out
//!   once, its escapes decoded once), as the gateway's content stage runs
//!   them.
//!
//! [`decode`](mod@decode) undoes a body's `Content-Encoding` before it is scanned, and
//! [`charset`] says when a body's charset is one the scanners cannot read.
//!
//! Scanning: the body is understood by content type (JSON strings with
//! escapes decoded, form fields percent-decoded, multipart text parts,
//! anything else as text) and scanned once by the engine (`engine`): a
//! literal prefilter for every anchored detector and a class scan for
//! digits and `@`, with validators (`detect`) on candidates only.
//!
//! What to do with a finding (redact, block, log) is the gateway's business;
//! this crate only finds and scores.
//!
//! The crate's `unsafe` is its SIMD kernels (the class scans, the JSON
//! string finders, the anchors' AVX-512 prefilter, the injection gate's
//! sieves, the encoded-run finder), each behind a runtime CPU-feature
//! check. Each has a scalar twin, and the tests run both over the same
//! inputs and require the same answers (differential and property tests
//! in `classes`, `json`, `anchors`, `injection::gate` and
//! `injection::encoded`). Callers see only safe functions.

pub mod decode;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod injection;
pub mod switch;

mod anchors;
pub(crate) mod chars;
pub mod charset;
pub(crate) mod classes;
mod detect;
mod engine;
mod form;
pub(crate) mod json;
mod kind;
pub(crate) mod media;
pub(crate) mod multipart;
mod read;
pub(crate) mod segment;

pub use decode::{DecodeError, DecodedBody, decode};
pub use kind::{Kind, KindSet, UnknownKind};
pub use read::Read;

use std::cell::RefCell;
use std::ops::Range;

use engine::{Candidate, Engine};
use json::tape::Tape;
use media::Media;
use segment::Decoded;

/// One value found: its kind and its byte span in the scanned body (end
/// exclusive). Findings of one scan never overlap and are sorted by start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

/// What a scanner looks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanConfig {
    pub kinds: KindSet,
}

impl ScanConfig {
    /// Every supported kind.
    pub fn all() -> ScanConfig {
        ScanConfig {
            kinds: KindSet::all(),
        }
    }

    /// The kinds a policy's `pii.types` list names (an empty list means
    /// all of them).
    pub fn from_types(types: &[String]) -> Result<ScanConfig, ScanError> {
        if types.is_empty() {
            return Ok(ScanConfig::all());
        }
        let kinds = types
            .iter()
            .map(|name| name.parse::<Kind>())
            .collect::<Result<KindSet, UnknownKind>>()?;
        Ok(ScanConfig { kinds })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error(transparent)]
    UnknownKind(#[from] UnknownKind),
    #[error("cannot build the literal prefilter: {0}")]
    Prefilter(#[from] aho_corasick::BuildError),
}

impl ScanError {
    /// Metric label.
    pub fn class(&self) -> &'static str {
        match self {
            ScanError::UnknownKind(_) => "policy",
            ScanError::Prefilter(_) => "internal",
        }
    }
}

/// How deep multipart bodies may nest before the inner parts are scanned
/// as plain text.
pub(crate) const MAX_NESTING: u8 = 4;

/// The buffers a scan works in, kept on each thread from one scan to the
/// next: small bodies (most requests) then cost no allocation but their
/// findings, where growing them afresh was a tenth of a 1 KiB scan.
#[derive(Debug, Default)]
struct Scratch {
    text: Text,
    candidates: Vec<Candidate>,
}

/// Decoded text (a form's, a JSON body's stretches laid end to end) and,
/// for JSON, where each stretch lies in it.
#[derive(Debug, Default)]
struct Text {
    decoded: Decoded,
    stretches: Vec<Range<usize>>,
}

/// Past this many bytes the buffers are given back after a scan: one huge
/// body should not pin its size on a thread. A JSON body with escapes is
/// laid out whole (about its size again, and a map entry per escape), so
/// this keeps what a body of a megabyte or so needs: growing it afresh
/// for each such body cost a tenth of its scan.
const SCRATCH_KEEP: usize = 4 << 20;

impl Scratch {
    fn clear(&mut self) {
        self.text.decoded.clear();
        self.text.stretches.clear();
        self.candidates.clear();
    }

    fn trim(&mut self) {
        let candidates = self.candidates.capacity() * size_of::<Candidate>();
        let stretches = self.text.stretches.capacity() * size_of::<Range<usize>>();
        if self.text.decoded.capacity() + stretches + candidates > SCRATCH_KEEP {
            *self = Scratch::default();
        }
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

/// The detectors of one policy, built once.
#[derive(Debug)]
pub struct Scanner {
    engine: Engine,
    kinds: KindSet,
}

impl Scanner {
    pub fn new(config: &ScanConfig) -> Result<Scanner, ScanError> {
        Ok(Scanner {
            engine: Engine::new(config.kinds)?,
            kinds: config.kinds,
        })
    }

    /// The kinds this scanner reports.
    pub fn kinds(&self) -> KindSet {
        self.kinds
    }

    /// Scans an (already decompressed) body. `content_type` is the
    /// request's Content-Type header; the body is read as `Format::of`
    /// decides (JSON when the type says so, or when the body starts with
    /// `{`, `[` or `"` and the type names no other format Sluice decodes).
    pub fn scan(&self, content_type: Option<&str>, body: &[u8]) -> Vec<Finding> {
        self.scan_read(Format::of(content_type, body), body, None)
    }

    /// [`Scanner::scan`] of a body whose format is known (`Format::of`)
    /// and, when the injection detector has already checked its JSON and
    /// laid it out, of that `tape`: the strings of a body read as JSON are
    /// then taken from the tape rather than decoded again.
    pub(crate) fn scan_read(
        &self,
        format: Format<'_>,
        body: &[u8],
        tape: Option<&Tape<'_>>,
    ) -> Vec<Finding> {
        SCRATCH.with_borrow_mut(|scratch| {
            scratch.clear();
            let Scratch { text, candidates } = scratch;
            match (format, tape) {
                (Format::Json, Some(tape)) => self.scan_tape_laid_out(tape, candidates),
                _ => self.scan_typed(format, body, 0, text, candidates, 0),
            }
            let findings = engine::resolve(candidates)
                .into_iter()
                .map(|c| Finding {
                    kind: c.kind,
                    start: c.start,
                    end: c.end,
                })
                .collect();
            scratch.trim();
            findings
        })
    }

    fn scan_typed(
        &self,
        format: Format<'_>,
        body: &[u8],
        base: usize,
        scratch: &mut Text,
        out: &mut Vec<Candidate>,
        depth: u8,
    ) {
        match format {
            Format::Json => self.scan_json(body, base, scratch, out),
            Format::Form => self.scan_form(body, base, scratch, out),
            Format::Multipart(boundary) if depth < MAX_NESTING => {
                // Each piece by its own type; a binary part as bytes, as a
                // whole body labelled binary is (its label is the
                // sandbox's word, and one stray byte makes text binary).
                for piece in multipart::pieces(body, boundary) {
                    let bytes = &body[piece.start..piece.end];
                    let format = Format::of(piece.content_type, bytes);
                    let (start, depth) = (base + piece.start, depth + 1);
                    self.scan_typed(format, bytes, start, scratch, out, depth);
                }
            }
            Format::Multipart(_) | Format::Text => self.scan_raw(body, base, out),
        }
    }

    fn scan_raw(&self, text: &[u8], base: usize, out: &mut Vec<Candidate>) {
        let from = out.len();
        self.engine.scan(text, out);
        engine::shift(&mut out[from..], base);
    }

    fn scan_decoded(&self, decoded: &Decoded, base: usize, out: &mut Vec<Candidate>) {
        let from = out.len();
        self.engine.scan(decoded.text(), out);
        map_back(decoded, base, &mut out[from..]);
    }

    /// A JSON body's stretches are scanned in one engine call, laid out
    /// end to end; a body without escapes in place.
    fn scan_json(&self, body: &[u8], base: usize, scratch: &mut Text, out: &mut Vec<Candidate>) {
        let Text { decoded, stretches } = scratch;
        if !json::lay_out(body, decoded, stretches) {
            return self.scan_raw(body, base, out);
        }
        let from = out.len();
        self.engine.scan_stretches(decoded.text(), stretches, out);
        map_back(decoded, base, &mut out[from..]);
    }

    /// [`Scanner::scan_json`] of a body read as `tape`, which has laid it
    /// out already.
    fn scan_tape_laid_out(&self, tape: &Tape<'_>, out: &mut Vec<Candidate>) {
        let Some(laid) = tape.laid_out() else {
            return self.scan_raw(tape.body(), 0, out);
        };
        self.engine.scan_stretches(laid.text, laid.stretches, out);
        for c in out {
            (c.start, c.end) = segment::span(laid.map, c.start, c.end);
        }
    }

    fn scan_form(&self, body: &[u8], base: usize, scratch: &mut Text, out: &mut Vec<Candidate>) {
        if !form::needs_decoding(body) {
            return self.scan_raw(body, base, out);
        }
        let decoded = &mut scratch.decoded;
        form::decode(body, decoded);
        self.scan_decoded(decoded, base, out);
    }
}

/// Moves candidates found in `decoded` to the body's coordinates (`base`
/// where the decoded part starts in the body).
fn map_back(decoded: &Decoded, base: usize, candidates: &mut [Candidate]) {
    for c in candidates {
        let (start, end) = decoded.span(c.start, c.end);
        c.start = base + start;
        c.end = base + end;
    }
}

/// The UTF-8 byte-order mark, which servers that read JSON from bytes
/// (Python's `json.loads`, Jackson) skip before the document.
pub(crate) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// How a body is read. The Content-Type picks the format when it names one
/// that Sluice decodes (multipart with a boundary, form, JSON); any other
/// label (`text/plain`, `application/octet-stream`, an empty or unknown
/// type) or none at all cannot hide a body that looks like JSON (its first
/// byte past whitespace `{`, `[` or `"`), which is read as JSON: the sandbox
/// writes the header, and many servers parse a body as JSON whatever it is
/// labelled, so a JSON body sent as text with its values `\u`-escaped
/// would otherwise pass unread. A form label cannot hide one either when
/// the body is a whole JSON document (percent-decoding leaves `\u`
/// escapes as they are); one that only starts like JSON is a form. A
/// multipart body is split by its boundary, and what the split leaves
/// (all of it, when the boundary never occurs) is read by its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format<'a> {
    Json,
    Form,
    Multipart(&'a str),
    Text,
}

impl<'a> Format<'a> {
    pub(crate) fn of(content_type: Option<&'a str>, body: &[u8]) -> Format<'a> {
        let media = Media::of(content_type);
        if let Some(boundary) = multipart::boundary_of(media, content_type) {
            return Format::Multipart(boundary);
        }
        if media.is("application/x-www-form-urlencoded") {
            // Checked whole: a form whose first key opens with a quote
            // or brace is still percent-decoded.
            let json = looks_json(body) && Tape::parse(body).is_some();
            return if json { Format::Json } else { Format::Form };
        }
        let json_type = media.is("application/json")
            || media.ends_with("+json")
            || media.is("application/x-ndjson")
            || media.is("application/jsonl");
        if json_type || looks_json(body) {
            Format::Json
        } else {
            Format::Text
        }
    }
}

/// Whether the body's first byte past a UTF-8 byte-order mark and ASCII
/// whitespace opens a JSON object, array or string. A body that only
/// starts like one (`"Quoted," she said`) fails the JSON reading and is
/// read as text; one that is a whole JSON string has its escapes decoded.
fn looks_json(body: &[u8]) -> bool {
    let body = body.strip_prefix(BOM).unwrap_or(body);
    body.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| matches!(b, b'{' | b'[' | b'"'))
}

#[cfg(test)]
mod tests;
