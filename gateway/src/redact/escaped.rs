//! Needles written with escapes: a secret an upstream echoes with some or
//! all of its bytes as JSON escapes (`\u0041`, `\u00e9`, `\uD83D\uDE00`,
//! `\/`, `\"`, `\n`...), percent-encoded (`%41`, `%e9`), or as HTML
//! character references (`&#65;`, `&#x41;`, `&#0065`, `&amp;`...), in any
//! mix, per byte, and in either case of hex. The literal forms of
//! [`super::forms`] cannot cover a mix (2^n of them), so this matcher reads
//! the text the way a decoder would and matches the needles' bytes there.
//!
//! Text is a graph of positions: from each one, the byte itself is one
//! reading and an escape starting there is another (a `%` followed by two
//! hex digits may be either, a literal percent or an escape). A match is a
//! path from a start to an end spelling a needle; the span replaced is the
//! text from start to end, escapes included. Matching over every reading,
//! raw included, gives one semantics for the literal and the escaped
//! search: leftmost start, then longest end, as the aho-corasick path has.
//!
//! Only where an escape can start does this run (`\`, `%`, `&`, found with
//! memchr; in a body only those beginning an escape of a byte the needles
//! hold, found with SIMD: [`starts`]); text without them goes through the
//! literal search alone. An escape
//! is passed over at once unless it stands for bytes some needle holds,
//! and the first of them starts a needle or follows the byte before it in
//! one ([`Pairs`]): the `\n`, `\"`, `%20` and `&amp;` of ordinary text
//! never are. Around the rest, the starts worth trying are the raw needle
//! prefixes that end there (a trie walk).
//!
//! Bounds: one reading takes at most [`MAX_ESCAPE`] bytes of text, so a
//! match of a needle of `n` bytes spans at most `12n` bytes, and the
//! streaming hold-back is below `12 * max_len`. HTML references with more
//! than 8 digits (zero-padded further) are not read. Work stays linear in
//! the text: an escape that passes the filter costs a walk of at most the
//! longest needle's bytes (each place read a few ways), which text made to
//! pass it everywhere (the secret's bytes escaped, one short, over and
//! over) makes about 10 MB/s; ordinary escaped text goes at hundreds of
//! MB/s, text without escapes as fast as before.
//!
//! Non-ASCII is read as the UTF-8 of its code point (`\u00e9`, `&#233;`
//! as C3 A9, surrogate pairs joined) and, for U+0080..U+00FF, also as that
//! one byte (an escaper that wrote each byte of the UTF-8 as a code
//! point). Not read: JavaScript's `%uXXXX` and `\xHH`, `+` for a space
//! (form encoding), named HTML references other than XML's five, and
//! escapes of escapes (`%2541` for `%41` for `A`): one level of encoding
//! is read, as an echo writes it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{ROOT, Trie};

#[path = "escape_starts.rs"]
mod starts;
#[cfg(test)]
#[path = "escaped_tests.rs"]
mod tests;

use starts::{EscapeStarts, Introducers};

/// The bytes an escape starts with.
const INTRODUCERS: [u8; 3] = [b'\\', b'%', b'&'];

/// The most text one reading takes: `&#x00000041;` (one byte) and
/// `\uD83D\uDE00` (four) are the longest. Every reading stands for at
/// least one byte, so a match spans at most this many bytes per byte of
/// its needle.
pub(super) const MAX_ESCAPE: usize = 12;

/// Digits of an HTML numeric reference, leading zeros included: enough
/// for any code point zero-padded to 8 (`&#x0001F600;`).
const MAX_DIGITS: usize = 8;

/// The named references of XML, each standing for one byte.
const NAMED: [(&[u8], u8); 5] = [
    (b"amp;", b'&'),
    (b"lt;", b'<'),
    (b"gt;", b'>'),
    (b"quot;", b'"'),
    (b"apos;", b'\''),
];

/// A match: start, end (of the text, escapes included) and needle index.
pub(super) type Found = (usize, usize, usize);

/// Which bytes start a needle, and which follow which in one: a match
/// whose first escape is at some position either starts there or goes on
/// from the raw byte before it, so an escape whose first byte does neither
/// cannot be the first in a match (and later ones are followed from the
/// first). About 2 KiB for a credential's needles.
pub(super) struct Pairs {
    starts: [bool; 256],
    /// Per byte, the index of its followers in `follows`.
    slot: [Option<u8>; 256],
    /// 256-bit sets of the bytes that follow one byte.
    follows: Vec<[u64; 4]>,
    /// Where escapes of the needles' bytes may start, searched with SIMD.
    escapes: Option<EscapeStarts>,
}

impl Pairs {
    pub(super) fn new(needles: &[&[u8]]) -> Pairs {
        let mut holds = [false; 256];
        for &byte in needles.iter().copied().flatten() {
            holds[usize::from(byte)] = true;
        }
        let mut pairs = Pairs {
            starts: [false; 256],
            slot: [None; 256],
            follows: Vec::new(),
            escapes: EscapeStarts::new(&holds),
        };
        for needle in needles {
            if let Some(&first) = needle.first() {
                pairs.starts[usize::from(first)] = true;
            }
            for pair in needle.windows(2) {
                let slot = match pairs.slot[usize::from(pair[0])] {
                    Some(slot) => slot,
                    None => {
                        // At most 256 distinct bytes: the index fits.
                        let slot = u8::try_from(pairs.follows.len()).unwrap_or(u8::MAX);
                        pairs.follows.push([0; 4]);
                        pairs.slot[usize::from(pair[0])] = Some(slot);
                        slot
                    }
                };
                let set = &mut pairs.follows[usize::from(slot)];
                set[usize::from(pair[1] >> 6)] |= 1 << (pair[1] & 63);
            }
        }
        pairs
    }

    /// Whether a match could have its first escape, standing for `byte`
    /// first, after `before` (the raw byte there, if the text has one).
    fn first_escape(&self, before: Option<u8>, byte: u8) -> bool {
        self.starts[usize::from(byte)]
            || before
                .and_then(|b| self.slot[usize::from(b)])
                .is_some_and(|slot| {
                    self.follows[usize::from(slot)][usize::from(byte >> 6)] & 1 << (byte & 63) != 0
                })
    }
}

/// Buffers reused from one escape to the next.
#[derive(Default)]
struct Scratch {
    readings: Vec<Reading>,
    /// Places to go on from, `(position, trie node)`, nearest first.
    queue: BinaryHeap<Reverse<(usize, usize)>>,
}

/// The leftmost-longest match in `hay` over every reading of its escapes,
/// given `literal`, the leftmost-longest literal match (the aho-corasick
/// one); `at_end`: no more text follows `hay`. `fold`: the trie holds
/// lower-case needles, and decoded bytes are lower-cased (header names).
/// `pairs`: the needles' [`Pairs`], to pass over more escapes at once.
pub(super) fn find(
    trie: &Trie,
    pairs: Option<&Pairs>,
    hay: &[u8],
    at_end: bool,
    fold: bool,
    literal: Option<Found>,
) -> Option<Found> {
    let mut walk = RawWalk::default();
    let mut scratch = Scratch::default();
    // Starts below `lo` are ruled out: the escapes before it were tried.
    let mut lo = 0;
    for i in introducers(hay, pairs) {
        if let Some(lit) = literal
            && lit.0 + trie.max_depth <= i
        {
            // Every start an escape at `i` or later allows is past it.
            return literal;
        }
        if !worth_reading(trie, pairs, hay, i, at_end, fold, &mut scratch) {
            continue;
        }
        let state = walk.advance(trie, hay, i, fold);
        for (node, depth) in trie.chain(state) {
            let start = i - depth;
            if start < lo {
                continue;
            }
            if let Some(lit) = literal
                && lit.0 < start
            {
                return literal;
            }
            let paths = explore(trie, hay, i, node, at_end, fold, &mut scratch);
            if let Some((end, needle)) = paths.longest {
                return Some((start, end, needle));
            }
        }
        // No match starts at or before `i` but a literal one ending
        // before it, which no escape could lengthen.
        if let Some(lit) = literal
            && lit.0 <= i
        {
            return literal;
        }
        lo = i + 1;
    }
    literal
}

/// The first start at or after `from` (and before `until`) of a path
/// through an escape that more text could still turn into a match: the
/// redactor holds back from there. Paths of raw bytes alone are the
/// trie's `open_suffix`.
pub(super) fn open_start(
    trie: &Trie,
    pairs: &Pairs,
    buf: &[u8],
    from: usize,
    until: usize,
) -> Option<usize> {
    // A path still open at the end spans fewer than `max_depth` bytes of
    // needle, each at most `MAX_ESCAPE` bytes of text.
    let lo = from.max(buf.len().saturating_sub(trie.max_depth * MAX_ESCAPE));
    let mut walk = RawWalk::default();
    let mut scratch = Scratch::default();
    let mut lo_start = lo;
    for i in introducers(&buf[lo..], Some(pairs)).map(|i| lo + i) {
        if i >= until.saturating_add(trie.max_depth) {
            break;
        }
        if !worth_reading(trie, Some(pairs), buf, i, false, false, &mut scratch) {
            continue;
        }
        let state = walk.advance(trie, buf, i, false);
        for (node, depth) in trie.chain(state) {
            let start = i - depth;
            if start < lo_start {
                continue;
            }
            if start >= until {
                return None;
            }
            if explore(trie, buf, i, node, false, false, &mut scratch).open {
                return Some(start);
            }
        }
        lo_start = i + 1;
    }
    None
}

/// Where escapes worth reading may start: every introducer, or, with the
/// needles' [`Pairs`], those of escapes of their bytes ([`starts`]).
fn introducers<'a>(hay: &'a [u8], pairs: Option<&'a Pairs>) -> Introducers<'a> {
    Introducers::new(hay, pairs.and_then(|p| p.escapes.as_ref()))
}

/// Whether an escape at `at` could be the first in a match: the text ends
/// inside it (its bytes are not known yet), or it stands for bytes that
/// some needle holds, the first starting a needle or following the byte
/// before the escape in one. Most escapes in ordinary text (`\n`, `\"`,
/// `%20`, `&amp;`) stand for bytes secrets and their encodings never have.
fn worth_reading(
    trie: &Trie,
    pairs: Option<&Pairs>,
    text: &[u8],
    at: usize,
    at_end: bool,
    fold: bool,
    scratch: &mut Scratch,
) -> bool {
    let before = at.checked_sub(1).map(|b| fold_byte(text[b], fold));
    let worth = |bytes: &[u8]| {
        bytes
            .iter()
            .all(|&b| trie.holds[usize::from(fold_byte(b, fold))])
            && pairs.is_none_or(|p| p.first_escape(before, fold_byte(bytes[0], fold)))
    };
    // The escapes of one byte (`\n`, `%20`), most of those in text, are
    // told without the general parser.
    match (text[at], text.get(at + 1)) {
        (b'\\', Some(&c)) if c != b'u' => return short(c).is_some_and(|b| worth(&[b])),
        (b'%', Some(_)) if at + 2 < text.len() => {
            return match hex_run(&text[at + 1..], 2) {
                Digits::Whole(value) => u8::try_from(value).is_ok_and(|b| worth(&[b])),
                Digits::Cut | Digits::Not => false,
            };
        }
        _ => {}
    }
    let readings = &mut scratch.readings;
    readings.clear();
    let partial = escapes(text, at, at_end, readings);
    partial || readings.iter().any(|r| worth(r.bytes()))
}

/// What the paths from one start reach.
struct Paths {
    /// The furthest end of a match, and its needle.
    longest: Option<(usize, usize)>,
    /// Some path reaches the end of the text (or stops inside an escape
    /// cut off there) at a prefix that more text could extend.
    open: bool,
}

/// Follows every reading of the text from `from`, at trie node `node`
/// (the raw bytes before `from` already read), as far as the trie allows.
fn explore(
    trie: &Trie,
    text: &[u8],
    from: usize,
    node: usize,
    at_end: bool,
    fold: bool,
    scratch: &mut Scratch,
) -> Paths {
    let mut paths = Paths {
        longest: trie.nodes[node].terminal.map(|needle| (from, needle)),
        open: false,
    };
    let Scratch { readings, queue } = scratch;
    queue.clear();
    if !trie.nodes[node].edges.is_empty() {
        queue.push(Reverse((from, node)));
    }
    // Two readings may lead to the same place: taken in order, the copies
    // come out together, and each place is gone on from once.
    let mut last = None;
    while let Some(Reverse((at, node))) = queue.pop() {
        if last.replace((at, node)) == Some((at, node)) {
            continue;
        }
        readings.clear();
        let partial = match text.get(at) {
            Some(&byte) => {
                readings.push(Reading::byte(1, byte));
                escapes(text, at, at_end, readings)
            }
            None => !at_end,
        };
        // Only nodes with children are queued: more text could go on.
        paths.open |= partial;
        for reading in readings.iter() {
            let next = reading
                .bytes()
                .iter()
                .try_fold(node, |n, &b| trie.child(n, fold_byte(b, fold)));
            let Some(next) = next else { continue };
            let end = at + reading.len;
            if let Some(needle) = trie.nodes[next].terminal
                && paths.longest.is_none_or(|(longest, _)| end > longest)
            {
                paths.longest = Some((end, needle));
            }
            if !trie.nodes[next].edges.is_empty() {
                queue.push(Reverse((end, next)));
            }
        }
    }
    paths
}

fn fold_byte(byte: u8, fold: bool) -> u8 {
    if fold {
        byte.to_ascii_lowercase()
    } else {
        byte
    }
}

/// The trie state over the raw bytes before an escape, advanced from one
/// escape to the next rather than read again from each.
#[derive(Default)]
struct RawWalk {
    /// Where the bytes read so far end (0 with nothing read).
    at: usize,
    node: usize,
}

impl RawWalk {
    /// The state after the raw bytes up to `to`: the longest needle
    /// prefix ending there, whose failure chain holds all the others.
    fn advance(&mut self, trie: &Trie, hay: &[u8], to: usize, fold: bool) -> usize {
        // A prefix is shorter than the longest needle: bytes further back
        // cannot matter, so a long gap starts afresh.
        let from = to.saturating_sub(trie.max_depth);
        if self.at < from {
            (self.at, self.node) = (from, ROOT);
        }
        for &byte in &hay[self.at..to] {
            self.node = trie.step(self.node, fold_byte(byte, fold));
        }
        self.at = to;
        self.node
    }
}

/// One way to read text at a position: `len` bytes of it standing for
/// `bytes[..n]`.
#[derive(Clone, Copy)]
struct Reading {
    len: usize,
    bytes: [u8; 4],
    n: usize,
}

impl Reading {
    fn byte(len: usize, byte: u8) -> Reading {
        Reading {
            len,
            bytes: [byte, 0, 0, 0],
            n: 1,
        }
    }

    fn char(len: usize, c: char) -> Reading {
        let mut bytes = [0; 4];
        let n = c.encode_utf8(&mut bytes).len();
        Reading { len, bytes, n }
    }

    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.n]
    }
}

/// Pushes the readings of an escape starting at `text[at]` (not the raw
/// byte's); returns whether the text ends where more of it could still
/// make one (never when `at_end`).
fn escapes(text: &[u8], at: usize, at_end: bool, out: &mut Vec<Reading>) -> bool {
    let rest = &text[at..];
    let cut = match rest.first() {
        Some(b'%') => percent(rest, out),
        Some(b'\\') => backslash(rest, out),
        Some(b'&') => reference(rest, at_end, out),
        _ => false,
    };
    cut && !at_end
}

/// `%HH`; whether `rest` is cut inside one.
fn percent(rest: &[u8], out: &mut Vec<Reading>) -> bool {
    match hex_run(&rest[1..], 2) {
        Digits::Whole(value) => {
            // Two hex digits: always a byte.
            out.extend(u8::try_from(value).ok().map(|byte| Reading::byte(3, byte)));
            false
        }
        Digits::Cut => true,
        Digits::Not => false,
    }
}

/// JSON's escapes: the short ones and `\uXXXX`, surrogate pairs joined;
/// whether `rest` is cut inside one.
fn backslash(rest: &[u8], out: &mut Vec<Reading>) -> bool {
    match rest.get(1) {
        None => true,
        Some(b'u') => unicode(rest, out),
        Some(&c) => {
            out.extend(short(c).map(|byte| Reading::byte(2, byte)));
            false
        }
    }
}

/// The byte a JSON short escape (`\` and `c`) stands for.
fn short(c: u8) -> Option<u8> {
    Some(match c {
        b'"' => b'"',
        b'\\' => b'\\',
        b'/' => b'/',
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        _ => return None,
    })
}

/// `\uXXXX`, or a pair of them for a code point past U+FFFF.
fn unicode(rest: &[u8], out: &mut Vec<Reading>) -> bool {
    let high = match hex_run(&rest[2..], 4) {
        Digits::Whole(value) => value,
        Digits::Cut => return true,
        Digits::Not => return false,
    };
    if !(0xD800..0xDC00).contains(&high) {
        code_point(6, high, out);
        return false;
    }
    // A high surrogate stands for nothing without the low one after it.
    let low = &rest[6..];
    match (low.first(), low.get(1)) {
        (None, _) | (Some(b'\\'), None) => return true,
        (Some(b'\\'), Some(b'u')) => {}
        _ => return false,
    }
    match hex_run(&low[2..], 4) {
        Digits::Whole(low @ 0xDC00..0xE000) => {
            code_point(12, 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), out);
            false
        }
        Digits::Whole(_) | Digits::Not => false,
        Digits::Cut => true,
    }
}

/// HTML's numeric references (`&#DDD;`, `&#xHH;`, the `;` optional as
/// browsers read it) and XML's named ones; whether `rest` is cut inside one.
fn reference(rest: &[u8], at_end: bool, out: &mut Vec<Reading>) -> bool {
    let name = &rest[1..];
    if name.first() != Some(&b'#') {
        for (entity, byte) in NAMED {
            if name.starts_with(entity) {
                out.push(Reading::byte(1 + entity.len(), byte));
                return false;
            }
        }
        return NAMED.iter().any(|(entity, _)| entity.starts_with(name));
    }
    let (head, radix) = match rest.get(2) {
        None => return true,
        Some(b'x' | b'X') => (3, 16),
        Some(_) => (2, 10),
    };
    let digits = rest[head.min(rest.len())..]
        .iter()
        .take_while(|b| char::from(**b).is_digit(radix))
        .count();
    let end = head + digits;
    if digits > MAX_DIGITS || (digits == 0 && end < rest.len()) {
        return false;
    }
    if end == rest.len() && !at_end {
        // More digits, or the `;`, may follow.
        return true;
    }
    if digits == 0 {
        return false;
    }
    let value = rest[head..end].iter().fold(0, |v, &b| {
        v * radix + char::from(b).to_digit(radix).unwrap_or(0)
    });
    code_point(end, value, out);
    if rest.get(end) == Some(&b';') {
        code_point(end + 1, value, out);
    }
    false
}

/// The readings of code point `value` written in `len` bytes: its UTF-8,
/// and the byte itself for U+0080..U+00FF.
fn code_point(len: usize, value: u32, out: &mut Vec<Reading>) {
    if let Some(c) = char::from_u32(value) {
        out.push(Reading::char(len, c));
    }
    if let Ok(byte @ 0x80..) = u8::try_from(value) {
        out.push(Reading::byte(len, byte));
    }
}

enum Digits {
    /// `n` hex digits, and their value.
    Whole(u32),
    /// Fewer than `n` bytes, all hex digits: more may follow.
    Cut,
    Not,
}

/// The first `n` bytes of `text` as hex digits.
fn hex_run(text: &[u8], n: usize) -> Digits {
    let mut value = 0;
    for i in 0..n {
        let Some(&byte) = text.get(i) else {
            return Digits::Cut;
        };
        let Some(digit) = char::from(byte).to_digit(16) else {
            return Digits::Not;
        };
        value = value * 16 + digit;
    }
    Digits::Whole(value)
}
