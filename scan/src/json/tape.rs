//! A JSON body checked and laid out as a flat list of nodes (a tape) in one
//! pass, so readers can walk the document by shape without a tree of
//! allocations: a string without escapes is read in place, one with escapes
//! is decoded once, while it is checked, into one buffer for the document.
//!
//! A body is accepted exactly when `serde_json::from_slice::<Value>` would
//! accept it, once past a UTF-8 byte-order mark (which serde_json refuses
//! but servers that read JSON from bytes skip, so a body cannot hide
//! behind one): UTF-8 throughout, the strict JSON grammar, only valid escapes,
//! `\u` surrogates in pairs, no control character in a string, numbers that
//! fit an `f64` (no overflow to infinity) and fewer than 128 nested arrays
//! and objects (serde_json's recursion limit). Readers see what a
//! `serde_json::Value` would hold: [`Object::get`] finds the last of
//! duplicate keys and [`Object::entries`] lists keys sorted, each once, as
//! the `BTreeMap` behind `serde_json::Map` does.
//!
//! The strings with escapes are decoded where the PII engine reads them: the
//! tape's text is the body laid out as [`lay_out`](super::lay_out) lays it
//! out (the stretches between such strings copied, each decoded string
//! alone, a separator after each), with its map back to the body, so a body
//! read for the injection detector is scanned for PII without a second
//! reading or a copy ([`Tape::laid_out`]).
//!
//! Strings are scanned with [`Specials`], which stops only at quotes,
//! backslashes and control characters; one with escapes is decoded 64
//! bytes at a time where the CPU allows ([`blocks`](super::blocks)), else
//! escape by escape. The whole body is checked for UTF-8
//! once up front, so any piece of it between two ASCII bytes is a `&str`:
//! a body that is all ASCII (as JSON encoders that escape every other
//! character as `\u` write them) shows it in a pass of or-ed words, a
//! fraction of what a UTF-8 check takes; any other body is checked by
//! `simdutf8` (32 bytes at a time: on prose twice as fast as the standard
//! library's check).

use std::cell::Cell;
use std::ops::Range;

use super::super::BOM;
use super::super::chars;
use super::super::engine::SEPARATOR;
use super::super::segment::{self, Piece};
use super::blocks::Avx512;
use super::specials::Specials;
use super::{SIMPLE, hex4};

/// serde_json refuses a document whose arrays and objects nest this deep.
const MAX_DEPTH: usize = 128;

/// One value of the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Node {
    /// A number, `true`, `false` or `null`: no text in it.
    Scalar,
    /// A string: its content is `body[start..end]`, between the quotes.
    /// With escapes, its text is `[from..to]` of the tape's layout, given
    /// here as `Some((from, to))`; without, the content is the text.
    Str {
        start: usize,
        end: usize,
        decoded: Option<(usize, usize)>,
    },
    /// An array: its elements follow; `end` is the index of the first node
    /// after its last descendant.
    Array { end: usize },
    /// An object: keys (strings) and values alternate in the nodes that
    /// follow, in body order; `end` as for arrays.
    Object { end: usize },
}

/// A checked JSON document: the body, its nodes in body order and, when
/// strings have escapes, the body laid out for the PII engine.
#[derive(Debug)]
pub(crate) struct Tape<'a> {
    body: &'a str,
    /// Boxed, so a tape is a few words to move (from the parser to its
    /// reader) and its buffers a pointer to hand back to the thread: moved
    /// by value, a hundred bytes of vectors just written, each move cost
    /// more than parsing a short body's structure. `None` only once
    /// dropped, having handed them back.
    buffers: Option<Box<Buffers>>,
    /// Every string reads as ASCII: the body is, and no `\u` escape
    /// stands for another character.
    ascii: bool,
}

/// The stretches of a body laid out end to end, each followed by a
/// [`SEPARATOR`]: the raw stretches between strings with escapes, and each
/// such string decoded. Empty when no string has an escape.
#[derive(Debug, Default)]
struct Layout {
    /// Valid UTF-8 throughout: body pieces between ASCII bytes, decoded
    /// characters and separators.
    text: String,
    stretches: Vec<Range<usize>>,
    /// Where each piece of `text` comes from in the body.
    map: Vec<Piece>,
}

impl Layout {
    fn clear(&mut self) {
        self.text.clear();
        self.stretches.clear();
        self.map.clear();
    }

    /// Appends the body's bytes `from..to` (`text` is the body) as they are.
    #[inline]
    fn copy(&mut self, text: &str, from: usize, to: usize) {
        if from < to {
            segment::push_copy(&mut self.map, self.text.len(), from);
            self.text.push_str(&text[from..to]);
        }
    }

    /// Ends the stretch that started at `from` in the layout.
    fn end_stretch(&mut self, from: usize) {
        self.stretches.push(from..self.text.len());
        self.text.push(char::from(SEPARATOR));
    }

    /// Appends the raw stretch of the body's bytes `from..to`, if any.
    fn raw(&mut self, text: &str, from: usize, to: usize) {
        if from < to {
            let start = self.text.len();
            self.copy(text, from, to);
            self.end_stretch(start);
        }
    }
}

/// The buffers of a tape, kept on each thread from one tape to the next:
/// a megabyte body's tape holds about as much again (its decoded strings
/// and their map), and taking that afresh from the allocator for every
/// body, as pages the kernel zeroes and faults in, cost a sixth of reading
/// it.
#[derive(Debug, Default)]
struct Buffers {
    nodes: Vec<Node>,
    layout: Layout,
}

thread_local! {
    /// Empty until the thread's first tape is dropped; taken (left empty)
    /// while a tape is alive.
    static BUFFERS: Cell<Option<Box<Buffers>>> = const { Cell::new(None) };
}

/// Past this many bytes a tape's buffers are not kept: one huge body
/// should not pin its size on a thread.
const KEEP: usize = 4 << 20;

impl Drop for Tape<'_> {
    fn drop(&mut self) {
        let Some(mut buffers) = self.buffers.take() else {
            return;
        };
        let Buffers { nodes, layout } = &mut *buffers;
        let held = nodes.capacity() * size_of::<Node>()
            + layout.text.capacity()
            + layout.stretches.capacity() * size_of::<Range<usize>>()
            + layout.map.capacity() * size_of::<Piece>();
        if held > KEEP {
            return;
        }
        nodes.clear();
        layout.clear();
        BUFFERS.set(Some(buffers));
    }
}

impl<'a> Tape<'a> {
    /// Checks `body` and lays it out, or `None` when it is not a JSON
    /// document serde_json would read.
    #[inline]
    pub(crate) fn parse(body: &'a [u8]) -> Option<Tape<'a>> {
        Tape::parse_with(body, Avx512::detect())
    }

    /// [`Tape::parse`] decoding escape by escape whatever the CPU: the
    /// scalar twin the fuzzer holds the block decoder to.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn parse_scalar(body: &'a [u8]) -> Option<Tape<'a>> {
        Tape::parse_with(body, None)
    }

    /// [`Tape::parse`], decoding strings a block at a time when given
    /// `blocks`, else escape by escape.
    fn parse_with(body: &'a [u8], blocks: Option<Avx512>) -> Option<Tape<'a>> {
        let ascii = chars::is_ascii(body);
        let body = if ascii {
            // SAFETY: ASCII is UTF-8.
            unsafe { std::str::from_utf8_unchecked(body) }
        } else {
            simdutf8::basic::from_utf8(body).ok()?
        };
        // Another tape alive on this thread holds the buffers: this one
        // then starts empty.
        let mut buffers = BUFFERS.take().unwrap_or_default();
        let Buffers { nodes, layout } = &mut *buffers;
        // About one node per 16 bytes in small bodies (fewer in big ones,
        // where strings are long): most bodies never grow the list.
        nodes.reserve((body.len() / 16).clamp(8, 1024));
        let mut parser = Parser {
            text: body,
            body: body.as_bytes(),
            at: 0,
            nodes,
            layout,
            raw_start: 0,
            specials: Specials::new(body.as_bytes()),
            blocks,
            ascii,
        };
        if body.as_bytes().starts_with(BOM) {
            parser.at = BOM.len();
        }
        parser.whitespace();
        let ok = parser.value(0).is_some() && {
            parser.whitespace();
            parser.at == body.len()
        };
        if ok && !parser.layout.stretches.is_empty() {
            parser.layout.raw(body, parser.raw_start, body.len());
        }
        // Made either way, so a refused body's buffers go back too.
        let ascii = parser.ascii;
        let tape = Tape {
            body,
            buffers: Some(buffers),
            ascii,
        };
        ok.then_some(tape)
    }

    fn buffers(&self) -> &Buffers {
        self.buffers
            .as_deref()
            .expect("a live tape has its buffers")
    }

    /// The body.
    pub(crate) fn body(&self) -> &'a [u8] {
        self.body.as_bytes()
    }

    /// Whether every string of the document reads as ASCII, so its
    /// readers need not check again.
    pub(crate) fn is_ascii(&self) -> bool {
        self.ascii
    }

    /// The body laid out for the PII engine, as [`lay_out`](super::lay_out)
    /// lays it out: the text, its stretches and its map back to the body;
    /// `None` when no string has an escape (the body is then scanned in
    /// place).
    pub(crate) fn laid_out(&self) -> Option<LaidOut<'_>> {
        let layout = &self.buffers().layout;
        (!layout.stretches.is_empty()).then_some(LaidOut {
            text: layout.text.as_bytes(),
            stretches: &layout.stretches,
            map: &layout.map,
        })
    }

    /// The document's top value.
    pub(crate) fn root(&self) -> Value<'_, 'a> {
        Value { tape: self, at: 0 }
    }

    /// The index of the node after `at` and all its descendants.
    fn skip(&self, at: usize) -> usize {
        skip(&self.buffers().nodes, at)
    }

    /// The text of the string node at `at`.
    fn text(&self, at: usize) -> Option<&str> {
        match self.buffers().nodes[at] {
            Node::Str {
                decoded: Some((from, to)),
                ..
            } => Some(&self.buffers().layout.text[from..to]),
            Node::Str { start, end, .. } => Some(&self.body[start..end]),
            _ => None,
        }
    }
}

/// The index of the node after `at` and all its descendants in `nodes`.
fn skip(nodes: &[Node], at: usize) -> usize {
    match nodes[at] {
        Node::Array { end } | Node::Object { end } => end,
        _ => at + 1,
    }
}

/// Keys that [`Object::get_each`] looks up together, with their sketches
/// worked out when compiled.
pub(crate) struct Keys<const N: usize> {
    keys: [&'static str; N],
    sketches: [Sketch; N],
}

impl<const N: usize> Keys<N> {
    pub(crate) const fn new(keys: [&'static str; N]) -> Keys<N> {
        let mut sketches = [Sketch { len: 0, word: 0 }; N];
        let mut k = 0;
        while k < N {
            let key = keys[k].as_bytes();
            let mut word = 0;
            let mut i = 0;
            while i < key.len() && i < 8 {
                word |= (key[i] as u64) << (8 * i);
                i += 1;
            }
            sketches[k] = Sketch {
                len: key.len(),
                word,
            };
            k += 1;
        }
        Keys { keys, sketches }
    }
}

/// A key's length and its first eight bytes as a word, zeros past its
/// end: equal for equal keys, and for unequal keys of up to eight bytes
/// never. Comparing a member's key with a dozen as bytes, a call to
/// compare memory for each of the same length, was half the time of
/// walking a 1 KiB chat body's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sketch {
    len: usize,
    word: u64,
}

impl Sketch {
    /// The sketch of `bytes[start..end]`.
    #[inline(always)]
    fn of(bytes: &[u8], start: usize, end: usize) -> Sketch {
        let len = end - start;
        let kept = if len >= 8 {
            !0
        } else {
            (1u64 << (8 * len)) - 1
        };
        Sketch {
            len,
            word: chars::word_at(bytes, start) & kept,
        }
    }
}

/// A body laid out for the PII engine ([`Tape::laid_out`]).
pub(crate) struct LaidOut<'t> {
    pub text: &'t [u8],
    pub stretches: &'t [Range<usize>],
    pub map: &'t [Piece],
}

/// One value in a [`Tape`], to read by shape.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Value<'t, 'a> {
    tape: &'t Tape<'a>,
    at: usize,
}

impl<'t, 'a> Value<'t, 'a> {
    pub(crate) fn node(&self) -> Node {
        self.tape.buffers().nodes[self.at]
    }

    /// The string's text (decoded), if this is a string.
    pub(crate) fn as_str(&self) -> Option<&'t str> {
        self.tape.text(self.at)
    }

    /// The elements, if this is an array.
    pub(crate) fn as_array(&self) -> Option<Items<'t, 'a>> {
        match self.node() {
            Node::Array { end } => Some(Items {
                tape: self.tape,
                next: self.at + 1,
                end,
            }),
            _ => None,
        }
    }

    pub(crate) fn as_object(&self) -> Option<Object<'t, 'a>> {
        match self.node() {
            Node::Object { end } => Some(Object {
                tape: self.tape,
                nodes: &self.tape.buffers().nodes,
                first: self.at + 1,
                end,
            }),
            _ => None,
        }
    }

    /// The value at `key` when this is an object holding it.
    pub(crate) fn get(&self, key: &str) -> Option<Value<'t, 'a>> {
        self.as_object()?.get(key)
    }
}

/// The elements of an array, in order.
#[derive(Debug, Clone)]
pub(crate) struct Items<'t, 'a> {
    tape: &'t Tape<'a>,
    next: usize,
    end: usize,
}

impl<'t, 'a> Iterator for Items<'t, 'a> {
    type Item = Value<'t, 'a>;

    fn next(&mut self) -> Option<Value<'t, 'a>> {
        if self.next >= self.end {
            return None;
        }
        let at = self.next;
        self.next = self.tape.skip(at);
        Some(Value {
            tape: self.tape,
            at,
        })
    }
}

/// An object's members.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Object<'t, 'a> {
    tape: &'t Tape<'a>,
    /// The tape's nodes, looked up once for the many key comparisons.
    nodes: &'t [Node],
    first: usize,
    end: usize,
}

impl<'t, 'a> Object<'t, 'a> {
    /// The members as written, duplicates and all: key node and value.
    fn members(&self) -> impl Iterator<Item = (usize, Value<'t, 'a>)> + use<'t, 'a> {
        let (tape, nodes) = (self.tape, self.nodes);
        let end = self.end;
        let mut key = self.first;
        std::iter::from_fn(move || {
            if key >= end {
                return None;
            }
            let value = key + 1;
            let member = (key, Value { tape, at: value });
            key = skip(nodes, value);
            Some(member)
        })
    }

    /// Whether the key node at `at` is `key`. A key without escapes is
    /// compared as bytes, length first.
    #[inline]
    fn key_is(&self, at: usize, key: &str) -> bool {
        match self.nodes[at] {
            Node::Str {
                start,
                end,
                decoded: None,
            } => {
                end - start == key.len() && &self.tape.body.as_bytes()[start..end] == key.as_bytes()
            }
            _ => self.tape.text(at) == Some(key),
        }
    }

    /// The value of `key`; the last one when the key is repeated.
    pub(crate) fn get(&self, key: &str) -> Option<Value<'t, 'a>> {
        self.members()
            .filter(|&(k, _)| self.key_is(k, key))
            .last()
            .map(|(_, v)| v)
    }

    /// The value of each of `keys`, as [`Object::get`] finds it, in one
    /// walk over the members (a reader that looks up a dozen keys of an
    /// object walked its members a dozen times). Each member's key is read
    /// once, as its [`Sketch`], and compared with every key's as integers,
    /// as bytes only when it is longer than a sketch holds.
    #[inline]
    pub(crate) fn get_each<const N: usize>(&self, keys: &Keys<N>) -> [Option<Value<'t, 'a>>; N] {
        let body = self.tape.body.as_bytes();
        let mut found = [None; N];
        for (k, v) in self.members() {
            let Node::Str {
                start,
                end,
                decoded: None,
            } = self.nodes[k]
            else {
                for (slot, key) in found.iter_mut().zip(keys.keys) {
                    if self.key_is(k, key) {
                        *slot = Some(v);
                    }
                }
                continue;
            };
            let this = Sketch::of(body, start, end);
            for ((slot, key), sketch) in found.iter_mut().zip(keys.keys).zip(keys.sketches) {
                if this == sketch && (this.len <= 8 || &body[start..end] == key.as_bytes()) {
                    *slot = Some(v);
                }
            }
        }
        found
    }

    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.members().any(|(k, _)| self.key_is(k, key))
    }

    /// The members sorted by key, each key once with its last value.
    pub(crate) fn entries(&self) -> Vec<(&'t str, Value<'t, 'a>)> {
        let mut entries: Vec<_> = self
            .members()
            .filter_map(|(k, v)| Some((self.tape.text(k)?, v)))
            .collect();
        // Stable: of equal keys the last written stays last, and is kept.
        entries.sort_by_key(|(k, _)| *k);
        let mut out: Vec<(&'t str, Value<'t, 'a>)> = Vec::with_capacity(entries.len());
        for entry in entries {
            match out.last_mut() {
                Some(last) if last.0 == entry.0 => *last = entry,
                _ => out.push(entry),
            }
        }
        out
    }
}

struct Parser<'a, 'b> {
    text: &'a str,
    body: &'a [u8],
    at: usize,
    nodes: &'b mut Vec<Node>,
    layout: &'b mut Layout,
    /// Where the raw stretch after the last string with escapes starts.
    raw_start: usize,
    specials: Specials<'a>,
    blocks: Option<Avx512>,
    /// No string so far reads as other than ASCII ([`Tape::is_ascii`]).
    ascii: bool,
}

impl Parser<'_, '_> {
    fn whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.body.get(self.at) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.body.get(self.at).copied()
    }

    /// One value at `self.at` inside `depth` arrays and objects.
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string()?,
            b'[' => self.array(depth + 1)?,
            b'{' => self.object(depth + 1)?,
            b't' => self.literal(b"true")?,
            b'f' => self.literal(b"false")?,
            b'n' => self.literal(b"null")?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return None,
        }
        Some(())
    }

    /// [`Parser::value`] for a member of an array or object, where most
    /// values are strings: those are read here, without the call and the
    /// jump on the first byte.
    #[inline(always)]
    fn member_value(&mut self, depth: usize) -> Option<()> {
        if self.peek() == Some(b'"') {
            self.string()
        } else {
            self.value(depth)
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.body[self.at..].starts_with(word).then(|| {
            self.at += word.len();
            self.nodes.push(Node::Scalar);
        })
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        let index = self.nodes.len();
        self.nodes.push(Node::Array { end: 0 });
        self.at += 1;
        self.whitespace();
        if self.peek()? == b']' {
            self.at += 1;
        } else {
            loop {
                self.member_value(depth)?;
                self.whitespace();
                match self.peek()? {
                    b',' => {
                        self.at += 1;
                        self.whitespace();
                    }
                    b']' => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.nodes[index] = Node::Array {
            end: self.nodes.len(),
        };
        Some(())
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        let index = self.nodes.len();
        self.nodes.push(Node::Object { end: 0 });
        self.at += 1;
        self.whitespace();
        if self.peek()? == b'}' {
            self.at += 1;
        } else {
            loop {
                if self.peek()? != b'"' {
                    return None;
                }
                self.string()?;
                self.whitespace();
                if self.peek()? != b':' {
                    return None;
                }
                self.at += 1;
                self.whitespace();
                self.member_value(depth)?;
                self.whitespace();
                match self.peek()? {
                    b',' => {
                        self.at += 1;
                        self.whitespace();
                    }
                    b'}' => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.nodes[index] = Node::Object {
            end: self.nodes.len(),
        };
        Some(())
    }

    /// The string whose opening quote is at `self.at`; with escapes, its
    /// text is decoded into `self.decoded` on the way.
    #[inline(always)]
    fn string(&mut self) -> Option<()> {
        let start = self.at + 1;
        let stop = self.specials.next(start);
        if self.body.get(stop) == Some(&b'"') {
            // No escape: the common case, the text is the body's.
            self.nodes.push(Node::Str {
                start,
                end: stop,
                decoded: None,
            });
            self.at = stop + 1;
            return Some(());
        }
        self.escaped_string(start, stop)
    }

    /// The rest of a string from `stop`, its first special byte: decoded
    /// into the layout, after the raw stretch before it. Not inlined: the
    /// common string, without escapes, stays a few instructions.
    #[inline(never)]
    fn escaped_string(&mut self, start: usize, stop: usize) -> Option<()> {
        let layout = &mut self.layout;
        if layout.text.is_empty() {
            // What is left of the body bounds what it decodes to.
            layout.text.reserve(self.body.len() + 64);
        }
        // The raw stretch runs up to the content, the opening quote included.
        layout.raw(self.text, self.raw_start, start);
        let first_decoded = layout.text.len();
        let end = match self.blocks {
            Some(blocks) => self.decode_blocks(blocks, start)?,
            None => self.decode_escapes(start, stop)?,
        };
        let layout = &mut self.layout;
        let range = (first_decoded, layout.text.len());
        layout.end_stretch(first_decoded);
        self.raw_start = end;
        self.nodes.push(Node::Str {
            start,
            end,
            decoded: Some(range),
        });
        self.at = end + 1;
        Some(())
    }

    /// Decodes the string's content from `start` onto the layout escape by
    /// escape, `stop` being its first special byte; returns where its
    /// closing quote is.
    fn decode_escapes(&mut self, start: usize, mut stop: usize) -> Option<usize> {
        let (body, text) = (self.body, self.text);
        let layout = &mut self.layout;
        // The text copied after an escape needs no piece of its own: the
        // escape's piece implies it.
        segment::push_copy(&mut layout.map, layout.text.len(), start);
        // Bytes before `copied` are in the layout.
        let mut copied = start;
        loop {
            match body.get(stop) {
                Some(b'\\') => {
                    let (c, len) = escape(&body[stop..])?;
                    self.ascii &= c.is_ascii();
                    layout.text.push_str(&text[copied..stop]);
                    let at = layout.text.len();
                    segment::push_escape(&mut layout.map, at, stop, len, c.len_utf8());
                    layout.text.push(c);
                    copied = stop + len;
                }
                Some(b'"') => {
                    layout.text.push_str(&text[copied..stop]);
                    return Some(stop);
                }
                // A raw control character, or the end of the body.
                _ => return None,
            }
            stop = self.specials.next(copied);
        }
    }

    /// [`Parser::decode_escapes`] a block of 64 bytes at a time, the
    /// escapes a block leaves (`\u`, invalid ones) one by one.
    fn decode_blocks(&mut self, blocks: Avx512, start: usize) -> Option<usize> {
        let body = self.body;
        let layout = &mut self.layout;
        let first_decoded = layout.text.len();
        let map = &mut layout.map;
        segment::push_copy(map, first_decoded, start);
        // SAFETY: what is appended is the body's bytes from `start` (valid
        // UTF-8, cut only at ASCII bytes) with escapes replaced by the
        // characters they stand for, so it is valid UTF-8 again once the
        // string is decoded whole; when it is not, it is cut back to where
        // it was. The text is not read as a `String` in between.
        let text = unsafe { layout.text.as_mut_vec() };
        let mut at = start;
        let end = loop {
            at = blocks.decode(body, at, text, map);
            match body.get(at) {
                Some(b'"') => break Some(at),
                Some(b'\\') => {
                    let Some((c, len)) = escape(&body[at..]) else {
                        break None;
                    };
                    self.ascii &= c.is_ascii();
                    segment::push_escape(map, text.len(), at, len, c.len_utf8());
                    text.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                    at += len;
                }
                // A raw control character, or the end of the body.
                _ => break None,
            }
        };
        if end.is_none() {
            text.truncate(first_decoded);
        }
        end
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, and in range.
    fn number(&mut self) -> Option<()> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        let integer_len = self.at - start;
        if self.peek() == Some(b'.') {
            self.at += 1;
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        let mut exponent = false;
        if let Some(b'e' | b'E') = self.peek() {
            exponent = true;
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        // Only an exponent or an integer part past u64 can overflow an f64
        // (serde_json then refuses the document): leave those rare numbers
        // to serde_json itself, so the limit is exactly its own.
        if (exponent || integer_len > 19)
            && serde_json::from_slice::<serde_json::Value>(&self.body[start..self.at]).is_err()
        {
            return None;
        }
        self.nodes.push(Node::Scalar);
        Some(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
    }
}

/// The valid escape at the start of `s` (a backslash): the character it
/// stands for and its length, or `None`. A `\u` of a surrogate must be a
/// high one followed by a low one, as serde_json requires of strings.
fn escape(s: &[u8]) -> Option<(char, usize)> {
    let next = *s.get(1)?;
    let simple = SIMPLE[usize::from(next)];
    if simple != 0 {
        return Some((char::from(simple), 2));
    }
    if next != b'u' {
        return None;
    }
    let unit = u32::from(hex4(s.get(2..)?)?);
    match unit {
        0xD800..=0xDBFF => {
            if s.get(6..8)? != b"\\u" {
                return None;
            }
            let low = u32::from(hex4(s.get(8..)?)?);
            if !(0xDC00..=0xDFFF).contains(&low) {
                return None;
            }
            let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
            Some((char::from_u32(code)?, 12))
        }
        // Every other unit is a character; a lone low surrogate is not.
        _ => Some((char::from_u32(unit)?, 6)),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::tests::{LaidOut, laid_out};
    use super::*;

    /// All a tape holds: its nodes and its layout, each byte of its
    /// stretches with its body span.
    type Read = (Vec<Node>, Option<LaidOut>);

    fn read(tape: &Tape<'_>) -> Read {
        let laid = tape.laid_out().map(|laid| {
            // Decoded by blocks too, the layout is UTF-8 throughout.
            std::str::from_utf8(laid.text).expect("UTF-8");
            laid_out(laid.text, laid.stretches, |s, e| {
                segment::span(laid.map, s, e)
            })
        });
        (tape.buffers().nodes.clone(), laid)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]
        #[test]
        fn block_decoding_reads_what_escape_by_escape_decoding_does(
            strings in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::sample::select(vec![
                        "a", "bc ", "é", "😀", "\\n", "\\\"", "\\\\", "\\/", "\\b", "\\f",
                        "\\r", "\\t", "\\u0040", "\\ud83d\\ude00", "\\u00e9", "\\ud83d",
                        "\\udc00", "\\u12", "\\x", "\\", "\"", "\u{1}", "\n", "\\\\\\",
                        "wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww",
                    ]),
                    0..24,
                ),
                1..6,
            ),
            pad in 0..70usize,
            cut in 0..4usize,
        ) {
            let mut body = format!("{}[", " ".repeat(pad));
            for (i, pieces) in strings.iter().enumerate() {
                let comma = if i > 0 { ", " } else { "" };
                body.push_str(&format!("{comma}\"{}\"", pieces.concat()));
            }
            body.push(']');
            // Now and then the body ends inside the last string (or
            // inside a character: not UTF-8 then).
            let mut body = body.into_bytes();
            body.truncate(body.len() - cut.min(body.len()));
            let by_blocks = Tape::parse(&body);
            let by_escapes = Tape::parse_with(&body, None);
            prop_assert_eq!(by_blocks.as_ref().map(read), by_escapes.as_ref().map(read));
            let serde = serde_json::from_slice::<serde_json::Value>(&body).is_ok();
            prop_assert_eq!(by_escapes.is_some(), serde);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        /// The body's UTF-8 is checked by blocks (simdutf8): what it
        /// accepts is what serde_json accepts, wherever a bad byte falls.
        #[test]
        fn bodies_are_utf8_exactly_when_serde_json_says_so(
            // Now and then a byte sequence that is not UTF-8: a lone
            // continuation byte, an overlong form, a surrogate, past
            // U+10FFFF, a character cut short.
            pieces in proptest::collection::vec(
                prop_oneof![
                    30 => proptest::sample::select(vec![
                        &b"a"[..], b"word ", b"\\n", "\u{e9}".as_bytes(),
                        "\u{20ac}".as_bytes(), "\u{1f600}".as_bytes(),
                    ]),
                    1 => proptest::sample::select(vec![
                        &b"\xe9"[..], b"\x80", b"\xff", b"\xc0\xaf", b"\xed\xa0\x80",
                        b"\xf4\x90\x80\x80", b"\xe2\x82", b"\xf0\x9f\x98",
                    ]),
                ],
                0..64,
            ),
            pad in 0..70usize,
        ) {
            let mut body = format!("{}[\"", " ".repeat(pad)).into_bytes();
            for piece in &pieces {
                body.extend_from_slice(piece);
            }
            body.extend_from_slice(b"\"]");
            let serde = serde_json::from_slice::<serde_json::Value>(&body).is_ok();
            prop_assert_eq!(Tape::parse(&body).is_some(), serde);
            prop_assert_eq!(Tape::parse_with(&body, None).is_some(), serde);
        }
    }

    #[test]
    fn strings_decoded_by_blocks_map_back_to_their_escapes() {
        // A string long enough for several blocks, an escape cut by a
        // block's end, and a `\u` escape the blocks leave to the caller.
        let content = format!("{}\\n{}\\u0040\\\"x", "a".repeat(62), "b".repeat(70));
        let body = format!("[\"{content}\"]");
        for blocks in [Avx512::detect(), None] {
            let tape = Tape::parse_with(body.as_bytes(), blocks).expect("valid JSON");
            let want = format!("{}\n{}@\"x", "a".repeat(62), "b".repeat(70));
            assert_eq!(
                tape.root()
                    .as_array()
                    .and_then(|mut items| items.next()?.as_str()),
                Some(&*want)
            );
            let laid = tape.laid_out().expect("escapes");
            let at = |d: usize| segment::span(laid.map, d, d + 1);
            // `[` then `"` are the first stretch; the content follows.
            let first = laid.stretches[1].start;
            assert_eq!(at(first), (2, 3));
            assert_eq!(at(first + 62), (64, 66));
            assert_eq!(at(first + 63), (66, 67));
            assert_eq!(at(first + 133), (136, 142));
            assert_eq!(at(first + 134), (142, 144));
            assert_eq!(at(first + 135), (144, 145));
        }
    }

    /// Found by the `json_reader` fuzz target, whose oracle read the body
    /// as serde_json's `IgnoredAny`, which skips a string's bytes unchecked:
    /// bytes that are not UTF-8 after escapes decoded by blocks are refused
    /// by both decoders, as serde_json refuses them when it reads values.
    #[test]
    fn bytes_not_utf8_after_block_decoded_escapes_are_refused() {
        let mut body =
            format!("[\"{}\\n{}\\u0040\\\"xc", "a".repeat(62), "b".repeat(70)).into_bytes();
        body.extend_from_slice(b"\xff\xff\xff\"]");
        assert!(serde_json::from_slice::<serde_json::Value>(&body).is_err());
        for blocks in [Avx512::detect(), None] {
            assert!(Tape::parse_with(&body, blocks).is_none());
        }
    }

    #[test]
    fn a_leading_byte_order_mark_is_passed_over() {
        let body = b"\xEF\xBB\xBF {\"a\": \"x\\ny\"}";
        assert!(serde_json::from_slice::<serde_json::Value>(body).is_err());
        for blocks in [Avx512::detect(), None] {
            let tape = Tape::parse_with(body, blocks).expect("JSON after the mark");
            assert_eq!(tape.root().get("a").and_then(|v| v.as_str()), Some("x\ny"));
        }
        // Only at the start, and only the mark.
        assert!(Tape::parse(b"[\xEF\xBB\xBF]").is_none());
        assert!(Tape::parse(b"\xEF\xBB{}").is_none());
    }

    #[test]
    fn a_tape_knows_when_every_string_reads_as_ascii() {
        let long = "x".repeat(80);
        let cases: &[(&str, bool)] = &[
            (r#"{"a": "plain"}"#, true),
            (r#"["one\ntwo\t\"three\""]"#, true),
            (r#"["\u0041 is A"]"#, true),
            (r#"["caf\u00e9"]"#, false),
            (r#"["\ud83d\ude00"]"#, false),
            ("[\"caf\u{e9}\"]", false),
            // A key counts as a string too.
            ("{\"\u{e9}\": 1}", false),
        ];
        for &(body, want) in cases {
            for blocks in [Avx512::detect(), None] {
                let tape = Tape::parse_with(body.as_bytes(), blocks).expect(body);
                assert_eq!(tape.is_ascii(), want, "{body}");
            }
        }
        // After a block's worth of text, where the blocks hand the `\u`
        // escape back to the caller.
        let body = format!("[\"{long}\\n{long}\\u00e9\"]");
        for blocks in [Avx512::detect(), None] {
            assert!(
                !Tape::parse_with(body.as_bytes(), blocks)
                    .expect("valid")
                    .is_ascii()
            );
        }
    }

    #[test]
    fn keys_looked_up_together_are_found_as_one_at_a_time() {
        const KEYS: Keys<6> = Keys::new(["a", "", "instructions", "instructionz", "messages", "é"]);
        let bodies = [
            r#"{"a": 1, "a": 2}"#,
            r#"{"": 1, "instructions": 2, "instructionsX": 3, "instructio": 4}"#,
            r#"{"instructionz": 1, "instructions": 2}"#,
            // Escaped keys are compared decoded.
            r#"{"mes\u0073ages": 1, "\u0061": 2, "\u00e9": 3}"#,
            // Keys that share a sketch's eight bytes, and keys at the very
            // end of the body, where fewer than eight bytes follow.
            r#"{"messagesX": 1, "message": 2, "a":0}"#,
            r#"{"\u00e9":0,"é":5}"#,
            r#"{"b": {"a": 1}, "A": 2}"#,
            "{}",
        ];
        for body in bodies {
            let tape = Tape::parse(body.as_bytes()).expect(body);
            let obj = tape.root().as_object().expect("object");
            let together = obj.get_each(&KEYS).map(|v| v.map(|v| v.at));
            let alone = KEYS.keys.map(|k| obj.get(k).map(|v| v.at));
            assert_eq!(together, alone, "{body}");
        }
        let tape = Tape::parse(br#"{"instructions": 1, "a": 2}"#).expect("valid");
        let obj = tape.root().as_object().expect("object");
        let found = obj.get_each(&KEYS).map(|v| v.is_some());
        assert_eq!(found, [true, false, true, false, false, false]);
    }
}
