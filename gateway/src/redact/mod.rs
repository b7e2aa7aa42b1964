//! Credential redaction: replaces every occurrence of a credential's value
//! (and its encoded forms, see [`forms`]) in header values and in bodies that
//! arrive in chunks, also where some or all of its bytes are written as
//! JSON, percent or HTML escapes (`escaped`).
//!
//! [`Needles`] is compiled once per credential set. [`Redactor`] is the
//! per-body streaming state; [`RedactedBody`] wraps a hyper body with one.
//!
//! The streaming contract: for any chunking, the concatenated output equals
//! [`Needles::replace_all`] over the whole body (leftmost-longest, like the
//! one-shot). Only a tail that could still grow into a needle is held back,
//! so memory between chunks is at most [`Needles::max_held`] bytes
//! (`max_len - 1`, or `12 * max_len - 1` where escapes are read) and
//! everything else is emitted at once (SSE streams must not stall on the
//! redactor).

mod anchors;
mod body;
mod decoding;
mod escaped;
mod forms;
#[cfg(test)]
mod tests;
mod websocket;

use std::fmt;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, MatchKind};
use hyper::HeaderMap;
use hyper::body::Bytes;
use hyper::header::HeaderValue;
use zeroize::Zeroizing;

pub use body::{RedactedBody, Rewrite, RewrittenBody};
pub use decoding::{DecodedBody, Decoding};
pub use forms::{forms, percent_encode_upper as percent_encode};
pub(crate) use websocket::{CLOSE, extended_len, payload_len};
pub use websocket::{FrameError, FrameRedactor};

/// What a redacted credential is replaced with.
pub const REPLACEMENT: &[u8] = b"[redacted:credential]";

/// A compiled set of needles and the bytes that replace each match.
///
/// Holds the secrets themselves (inside the automata); never logged: the
/// `Debug` output shows only counts.
pub struct Needles {
    /// The literal search: each needle anchored at its rarest bytes, found
    /// with SIMD ([`anchors`]), whatever the secret. `None` for needles too
    /// short to anchor or too many for it; the automaton searches then.
    anchors: Option<anchors::Anchors>,
    /// Built where `anchors` is `None`. `None` also when there are no
    /// needles, or (in theory) when the automaton exceeds aho-corasick's
    /// size limits; the trie then does the searching, so a credential set
    /// never goes unredacted.
    automaton: Option<AhoCorasick>,
    /// Answers "could this tail still grow into a needle", which the
    /// aho-corasick crate does not expose.
    trie: Trie,
    /// The needles ignoring ASCII case, for header names, which arrive
    /// lower-cased (a secret naming a header would pass as its lower-case
    /// self, which gives away most of it); credential needles only.
    names: Option<AhoCorasick>,
    /// Credential needles only: the lower-case needles, for escapes in
    /// header names (the `names` automaton reads them as written).
    folded: Option<Trie>,
    /// `Some` where escaped writings of the needles are found too:
    /// credential needles only. Rehydration tokens are Sluice's own,
    /// matched as written, and their replacements are not escaped to fit
    /// the text.
    escapes: Option<escaped::Pairs>,
    /// One entry: every match becomes it; otherwise one per needle.
    replacements: Vec<Vec<u8>>,
    count: usize,
    max_len: usize,
    /// Length of the shortest needle: no text shorter holds a match, since
    /// every reading of the text (an escape, a byte in another case)
    /// stands for at most as many bytes as it takes. Most header names
    /// and values are shorter than a secret's shortest form.
    min_len: usize,
}

impl Needles {
    /// Compiles `needles` (leftmost-longest). Empty needles are ignored;
    /// `replacement` replaces each match.
    pub fn new(needles: &[&[u8]], replacement: &[u8]) -> Needles {
        let needles: Vec<&[u8]> = needles.iter().copied().filter(|n| !n.is_empty()).collect();
        let names = (!needles.is_empty())
            .then(|| {
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .build(&needles)
                    .ok()
            })
            .flatten();
        let folded: Vec<Vec<u8>> = needles.iter().map(|n| n.to_ascii_lowercase()).collect();
        let folded: Vec<&[u8]> = folded.iter().map(Vec::as_slice).collect();
        Needles {
            names,
            folded: (!needles.is_empty()).then(|| Trie::new(&folded)),
            escapes: Some(escaped::Pairs::new(&needles)),
            ..Needles::build(needles, vec![replacement.to_vec()])
        }
    }

    /// Compiles `(needle, replacement)` pairs: each match becomes its own
    /// needle's replacement (rehydration of PII tokens). Empty needles are
    /// ignored; of duplicate needles the first pair wins.
    pub fn with_replacements(pairs: &[(&[u8], &[u8])]) -> Needles {
        let mut seen = std::collections::HashSet::new();
        let (needles, replacements) = pairs
            .iter()
            .filter(|(needle, _)| !needle.is_empty() && seen.insert(*needle))
            .map(|&(needle, replacement)| (needle, replacement.to_vec()))
            .unzip();
        Needles::build(needles, replacements)
    }

    fn build(needles: Vec<&[u8]>, replacements: Vec<Vec<u8>>) -> Needles {
        let max_len = needles.iter().map(|n| n.len()).max().unwrap_or(0);
        let min_len = needles.iter().map(|n| n.len()).min().unwrap_or(0);
        let anchors = anchors::Anchors::new(&needles);
        let automaton = if needles.is_empty() || anchors.is_some() {
            None
        } else {
            automaton(&needles)
        };
        Needles {
            anchors,
            automaton,
            names: None,
            folded: None,
            escapes: None,
            trie: Trie::new(&needles),
            replacements,
            count: needles.len(),
            max_len,
            min_len,
        }
    }

    /// Length of the longest needle (0 when there are none).
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// The most a [`Redactor`] holds back between chunks: a needle less a
    /// byte, written with escapes at up to `escaped::MAX_ESCAPE` bytes
    /// each where those are read.
    pub fn max_held(&self) -> usize {
        let per_byte = if self.escapes.is_some() {
            escaped::MAX_ESCAPE
        } else {
            1
        };
        (self.max_len * per_byte).saturating_sub(1)
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// One-shot replacement for a complete value (a header value). `None`
    /// when nothing matched, without allocating.
    pub fn replace_all(&self, haystack: &[u8]) -> Option<Vec<u8>> {
        self.find(haystack, true)?;
        let mut out = Vec::with_capacity(haystack.len());
        let mut matched = false;
        self.scan(haystack, true, &mut out, &mut matched);
        Some(out)
    }

    /// Redacts every value in `headers` in place, and drops every header
    /// whose (lower-case) name holds a needle, in any case (and escaped)
    /// for credential needles ([`Needles::new`]); returns whether any
    /// matched.
    /// A value that would no longer be a valid header value (cannot happen
    /// with a printable replacement) is replaced whole, failing closed.
    pub fn redact_headers(&self, headers: &mut HeaderMap) -> bool {
        if self.is_empty() {
            return false;
        }
        let named: Vec<hyper::header::HeaderName> = headers
            .keys()
            .filter(|name| {
                let name = name.as_str().as_bytes();
                if name.len() < self.min_len {
                    return false;
                }
                match (&self.names, &self.folded) {
                    (Some(names), folded) => {
                        names.is_match(name)
                            || folded.as_ref().is_some_and(|folded| {
                                escaped::find(folded, None, name, true, true, None).is_some()
                            })
                    }
                    (None, _) => self.find(name, true).is_some(),
                }
            })
            .cloned()
            .collect();
        let mut matched = !named.is_empty();
        for name in named {
            headers.remove(name);
        }
        for value in headers.values_mut() {
            let Some(new) = self.replace_all(value.as_bytes()) else {
                continue;
            };
            matched = true;
            let sensitive = value.is_sensitive();
            *value = HeaderValue::from_bytes(&new)
                .unwrap_or_else(|_| HeaderValue::from_static("[redacted:credential]"));
            value.set_sensitive(sensitive);
        }
        matched
    }

    /// Leftmost-longest match in `hay` as `(start, end, needle index)`,
    /// escaped writings included for credential needles; `at_end`: no more
    /// text follows (an escape cut off at the end is not read).
    fn find(&self, hay: &[u8], at_end: bool) -> Option<(usize, usize, usize)> {
        if self.count == 0 || hay.len() < self.min_len {
            return None;
        }
        let literal = self.find_literal(hay);
        match &self.escapes {
            Some(pairs) => escaped::find(&self.trie, Some(pairs), hay, at_end, false, literal),
            None => literal,
        }
    }

    /// Leftmost-longest match of the needles as written.
    fn find_literal(&self, hay: &[u8]) -> Option<(usize, usize, usize)> {
        if let Some(anchors) = &self.anchors {
            return anchors.find(&self.trie, hay);
        }
        match &self.automaton {
            Some(ac) => ac
                .find(hay)
                .map(|m| (m.start(), m.end(), m.pattern().as_usize())),
            None => (0..hay.len()).find_map(|start| {
                self.trie
                    .longest_at(&hay[start..])
                    .map(|(len, id)| (start, start + len, id))
            }),
        }
    }

    fn replacement(&self, needle: usize) -> &[u8] {
        match self.replacements.as_slice() {
            [one] => one,
            many => &many[needle],
        }
    }

    /// Appends the redacted, final part of `buf` to `out` and returns where
    /// the held-back tail starts (`buf.len()` at end of input, when nothing
    /// can grow any more).
    ///
    /// Why the emitted part is final: let `hold` be the first position (at or
    /// after the search position) whose suffix is a proper prefix of a
    /// needle, or (where escapes are read) from which some reading of the
    /// text is one, or stops inside an escape cut off at the end. A match
    /// starting before `hold` cannot extend past `buf`, and no longer
    /// needle at its start can either, so later bytes cannot change it; a
    /// match starting at or after `hold` might, so it waits.
    fn scan(&self, buf: &[u8], at_end: bool, out: &mut Vec<u8>, matched: &mut bool) -> usize {
        let mut pos = 0;
        let mut hold = self.hold_from(buf, 0, at_end);
        while let Some((start, end, needle)) = self.find(&buf[pos..], at_end) {
            let (start, end) = (pos + start, pos + end);
            if start >= hold {
                break;
            }
            out.extend_from_slice(&buf[pos..start]);
            out.extend_from_slice(self.replacement(needle));
            *matched = true;
            pos = end;
            if pos > hold {
                hold = self.hold_from(buf, pos, at_end);
            }
        }
        out.extend_from_slice(&buf[pos..hold]);
        hold
    }

    /// Where the held-back tail of `buf` starts, searching from `pos`
    /// (see [`Needles::scan`]).
    fn hold_from(&self, buf: &[u8], pos: usize, at_end: bool) -> usize {
        if at_end {
            return buf.len();
        }
        let window = &buf[pos.max(buf.len().saturating_sub(self.max_len))..];
        let raw = buf.len() - self.trie.open_suffix(window);
        match &self.escapes {
            Some(pairs) => escaped::open_start(&self.trie, pairs, buf, pos, raw).unwrap_or(raw),
            None => raw,
        }
    }

    /// Where the held-back tail of `buf` (more input to come) starts, when
    /// nothing before it is redacted: [`Needles::scan`] would emit
    /// `buf[..hold]` unchanged. `None` when something is.
    fn clean_until(&self, buf: &[u8]) -> Option<usize> {
        let hold = self.hold_from(buf, 0, false);
        match self.find(buf, false) {
            Some((start, _, _)) if start < hold => None,
            _ => Some(hold),
        }
    }
}

/// The automaton over `needles`, leftmost-longest.
fn automaton(needles: &[&[u8]]) -> Option<AhoCorasick> {
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(needles)
        .ok()
}

impl fmt::Debug for Needles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Needles")
            .field("count", &self.count)
            .field("max_len", &self.max_len)
            .finish_non_exhaustive()
    }
}

/// Streaming redaction state for one body.
pub struct Redactor {
    needles: Arc<Needles>,
    /// A tail that may still grow into a needle: at most
    /// [`Needles::max_held`] bytes. Zeroized on drop since it may be the
    /// start of a secret.
    held: Zeroizing<Vec<u8>>,
    matched: bool,
}

impl Redactor {
    pub fn new(needles: Arc<Needles>) -> Redactor {
        Redactor {
            needles,
            held: Zeroizing::new(Vec::new()),
            matched: false,
        }
    }

    /// Feeds a chunk; returns the bytes that are safe to emit now (possibly
    /// empty, when the whole chunk could be the start of a needle).
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if self.needles.is_empty() {
            return chunk.to_vec();
        }
        if chunk.is_empty() {
            return Vec::new();
        }
        let held = std::mem::take(&mut self.held);
        let joined;
        let buf: &[u8] = if held.is_empty() {
            chunk
        } else {
            joined = Zeroizing::new([held.as_slice(), chunk].concat());
            &joined
        };
        let mut out = Vec::with_capacity(buf.len());
        let hold = self.needles.scan(buf, false, &mut out, &mut self.matched);
        self.held.extend_from_slice(&buf[hold..]);
        out
    }

    /// [`Redactor::push`] for a chunk that is shared: where nothing in it
    /// is redacted and nothing was held, what is emitted is a slice of the
    /// chunk itself, not a copy (most of every response body).
    pub fn push_shared(&mut self, chunk: Bytes) -> Bytes {
        if self.needles.is_empty() {
            return chunk;
        }
        if self.held.is_empty()
            && let Some(hold) = self.needles.clean_until(&chunk)
        {
            self.held.extend_from_slice(&chunk[hold..]);
            return chunk.slice(..hold);
        }
        Bytes::from(self.push(&chunk))
    }

    /// End of body: returns what was held, redacted. The redactor is empty
    /// afterwards and could start a new body.
    pub fn finish(&mut self) -> Vec<u8> {
        let held = std::mem::take(&mut self.held);
        let mut out = Vec::with_capacity(held.len());
        self.needles.scan(&held, true, &mut out, &mut self.matched);
        out
    }

    /// Drops the held tail unemitted (the body failed; the tail may be the
    /// start of a secret).
    pub fn discard(&mut self) {
        self.held = Zeroizing::new(Vec::new());
    }

    /// Whether anything was redacted so far.
    pub fn matched(&self) -> bool {
        self.matched
    }

    /// Bytes currently held back (never more than [`Needles::max_held`]).
    pub fn held_len(&self) -> usize {
        self.held.len()
    }

    pub fn needles(&self) -> &Arc<Needles> {
        &self.needles
    }
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("needles", &self.needles)
            .field("held_len", &self.held.len())
            .field("matched", &self.matched)
            .finish()
    }
}

/// A byte trie over the needles with Aho-Corasick failure links.
struct Trie {
    /// Node 0 is the root (the empty prefix).
    nodes: Vec<Node>,
    /// Whether any needle holds the byte.
    holds: [bool; 256],
    /// Whether a needle starts with the byte: most places in text are
    /// ruled out as a needle's start by this one look-up.
    starts: [bool; 256],
    /// The longest needle's length.
    max_depth: usize,
}

struct Node {
    /// Sorted by byte.
    edges: Vec<(u8, usize)>,
    /// The node for the longest proper suffix of this prefix that is also a
    /// prefix of some needle.
    fail: usize,
    depth: usize,
    /// The index of the needle that ends here, if one does.
    terminal: Option<usize>,
}

const ROOT: usize = 0;

impl Trie {
    fn new(needles: &[&[u8]]) -> Trie {
        let mut nodes = vec![Node {
            edges: Vec::new(),
            fail: ROOT,
            depth: 0,
            terminal: None,
        }];
        for (id, needle) in needles.iter().enumerate() {
            let mut at = ROOT;
            for (i, &byte) in needle.iter().enumerate() {
                at = match nodes[at].edges.binary_search_by_key(&byte, |&(b, _)| b) {
                    Ok(j) => nodes[at].edges[j].1,
                    Err(j) => {
                        let id = nodes.len();
                        nodes[at].edges.insert(j, (byte, id));
                        nodes.push(Node {
                            edges: Vec::new(),
                            fail: ROOT,
                            depth: i + 1,
                            terminal: None,
                        });
                        id
                    }
                };
            }
            nodes[at].terminal.get_or_insert(id);
        }
        let mut holds = [false; 256];
        for &byte in needles.iter().copied().flatten() {
            holds[usize::from(byte)] = true;
        }
        let mut starts = [false; 256];
        for &byte in needles.iter().filter_map(|n| n.first()) {
            starts[usize::from(byte)] = true;
        }
        let mut trie = Trie {
            nodes,
            holds,
            starts,
            max_depth: needles.iter().map(|n| n.len()).max().unwrap_or(0),
        };
        trie.link();
        trie
    }

    /// Sets failure links, breadth first so a node's links are set before
    /// its children need them.
    fn link(&mut self) {
        let mut queue = std::collections::VecDeque::from([ROOT]);
        while let Some(at) = queue.pop_front() {
            for (byte, child) in self.nodes[at].edges.clone() {
                self.nodes[child].fail = if at == ROOT {
                    ROOT
                } else {
                    self.step(self.nodes[at].fail, byte)
                };
                queue.push_back(child);
            }
        }
    }

    fn child(&self, at: usize, byte: u8) -> Option<usize> {
        let edges = &self.nodes[at].edges;
        edges
            .binary_search_by_key(&byte, |&(b, _)| b)
            .ok()
            .map(|j| edges[j].1)
    }

    /// The Aho-Corasick transition: the longest prefix of a needle that is a
    /// suffix of (the text for `at`) + `byte`.
    fn step(&self, mut at: usize, byte: u8) -> usize {
        loop {
            if let Some(next) = self.child(at, byte) {
                return next;
            }
            if at == ROOT {
                return ROOT;
            }
            at = self.nodes[at].fail;
        }
    }

    /// The node `at` and its failure chain, as `(node, depth)`, deepest
    /// first: every needle prefix that the text for `at` ends with.
    fn chain(&self, at: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let mut next = Some(at);
        std::iter::from_fn(move || {
            let at = next?;
            next = (at != ROOT).then(|| self.nodes[at].fail);
            Some((at, self.nodes[at].depth))
        })
    }

    /// Length of the longest suffix of `window` that is a proper prefix of
    /// some needle (one that more bytes could still complete or extend).
    ///
    /// Each suffix is walked down from the root, longest first, rather than
    /// the whole window through the failure links: most bytes start no
    /// needle and end their walk at once, where a failure-link step costs
    /// a few searches per byte (this runs on every chunk).
    fn open_suffix(&self, window: &[u8]) -> usize {
        (0..window.len())
            .find(|&j| {
                self.starts[usize::from(window[j])]
                    && window[j..]
                        .iter()
                        .try_fold(ROOT, |at, &b| self.child(at, b))
                        .is_some_and(|at| !self.nodes[at].edges.is_empty())
            })
            .map_or(0, |j| window.len() - j)
    }

    /// Length and index of the longest needle that `hay` starts with.
    fn longest_at(&self, hay: &[u8]) -> Option<(usize, usize)> {
        let mut at = ROOT;
        let mut longest = None;
        for &byte in hay {
            let Some(next) = self.child(at, byte) else {
                break;
            };
            at = next;
            if let Some(id) = self.nodes[at].terminal {
                longest = Some((self.nodes[at].depth, id));
            }
        }
        longest
    }
}
