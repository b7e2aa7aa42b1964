//! Where in a text an anchor literal can occur: the prefilter that keeps the
//! anchor automaton off ordinary prose.
//!
//! Every literal gets a key: two to eight of its bytes that begin at a token
//! start (a one-byte literal: itself followed by any byte). A token starts at an ASCII letter that follows a byte that is not
//! one, at any ASCII punctuation byte, and at the first byte of a non-ASCII
//! character. The sweep finds the token starts of a text, 64 bytes at a time
//! (flags computed in a loop the compiler vectorizes, then gathered into a
//! bit mask), and looks the bytes at each start up in small bit sets of keys
//! (letters fold to one case): two and three bytes, and the first four bytes
//! of longer keys; where those four match, the whole key (up to eight bytes,
//! so "update f" of "update from" rather than the everyday "upda") is tested
//! in a second set. Prose has a token start every five or six bytes; the
//! automaton reads only the region around each key found.
//!
//! Exactness: a literal's key starts inside the literal at a byte that is a
//! token start whatever precedes the literal, except when the key is the
//! literal's first byte and that byte is a letter: that occurrence is a token
//! start only at a word boundary. The rules put `\b` before their words, so
//! an anchor that begins a word in every match they can make is found
//! (`scanner::prefilter_tests` checks the scores are those of a scan without
//! the gate). Hashing and case folding only add candidates.

/// Bits of the hashed four-byte key set (16 KiB: stays in L1 beside the text).
const BITS4: u32 = 17;
/// Bits of the hashed set of whole keys of four to eight bytes (8 KiB).
const BITS8: u32 = 16;
/// Bits of the hashed three-byte key set (512 bytes).
const BITS3: u32 = 12;

/// The literals' keys and how far an occurrence reaches around its key.
pub(crate) struct Gate {
    fours: Box<[u64]>,
    /// Per four-byte hash, the keys that begin so.
    buckets: Box<[Bucket]>,
    /// Whole keys of four to eight bytes, hashed with their length.
    longs: Box<[u64]>,
    threes: Box<[u64]>,
    /// Exact two-byte keys, folded (8 KiB).
    twos: Box<[u64]>,
    /// The first two bytes of the two- and three-byte keys (8 KiB).
    heads: Box<[u64]>,
    /// How far around a two- or three-byte key its literal can reach.
    short: Reach,
}

/// How far before its key a literal can start, and how far after the key's
/// start it can end.
#[derive(Debug, Clone, Copy, Default)]
struct Reach {
    before: u8,
    after: u8,
}

impl Reach {
    fn widen(&mut self, other: Reach) {
        self.before = self.before.max(other.before);
        self.after = self.after.max(other.after);
    }
}

/// The keys of four to eight bytes whose first four bytes share a hash: their
/// lengths (bit `len - 4`) and how far their literals reach, so a hit reads
/// only as much text as its literals need.
#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    lengths: u8,
    reach: Reach,
}

/// Folds ASCII letters to lower case (and merges some punctuation pairs,
/// which only adds candidates).
const FOLD: u64 = 0x2020_2020_2020_2020;

fn hash(x: u32, bits: u32) -> usize {
    (x.wrapping_mul(0x9E37_79B1) >> (32 - bits)) as usize
}

/// The hash of the first `len` (4..=8) bytes of a folded eight-byte word.
fn hash_long(w: u64, len: usize) -> usize {
    let masked = if len >= 8 {
        w
    } else {
        w & ((1 << (8 * len)) - 1)
    };
    let x = masked ^ ((len as u64) << 59);
    ((x ^ (x >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - BITS8)) as usize
}

fn has(set: &[u64], k: usize) -> bool {
    set[k / 64] & (1 << (k % 64)) != 0
}

fn set(bits: &mut [u64], k: usize) {
    bits[k / 64] |= 1 << (k % 64);
}

fn is_letter(b: u8) -> bool {
    (b | 0x20).wrapping_sub(b'a') < 26
}

/// ASCII punctuation and symbols: `!` to `~` less letters and digits.
fn is_mark(b: u8) -> bool {
    b.wrapping_sub(b'!') < 94 && !is_letter(b) && b.wrapping_sub(b'0') >= 10
}

/// Whether `b`, after `prev`, starts a token. Arithmetic only, so the loop
/// in [`starts`] vectorizes.
fn starts_token(prev: u8, b: u8) -> bool {
    (is_letter(b) & !is_letter(prev)) | is_mark(b) | (b >= 0xC0)
}

/// Whether byte `j` of `literal` starts a token in every occurrence of it
/// (the first byte: if it is not a letter, or at a word boundary). A
/// literal that begins with the end of a contraction (`n't tell`) is meant
/// to match inside a word: only its later tokens can be keys.
fn key_start(literal: &[u8], j: usize) -> bool {
    if j == 0 {
        let word = literal.iter().take_while(|&&b| is_letter(b)).count();
        return starts_token(b' ', literal[0]) && literal.get(word) != Some(&b'\'');
    }
    starts_token(literal[j - 1], literal[j])
}

/// How common a byte is in English prose (rough per-mille), to choose keys.
/// Only speed depends on it.
fn frequency(b: u8) -> u64 {
    match b | 0x20 {
        b' ' => 180,
        b'e' => 127,
        b't' => 91,
        b'a' => 82,
        b'o' => 75,
        b'i' => 70,
        b'n' => 67,
        b's' => 63,
        b'h' => 61,
        b'r' => 60,
        b'd' => 43,
        b'l' => 40,
        b'c' | b'u' => 28,
        b'm' | b'w' => 24,
        b'f' => 22,
        b'g' | b'y' => 20,
        b'p' => 19,
        b'b' => 15,
        b'v' => 10,
        b'k' => 8,
        b'j' | b'x' => 2,
        b'q' | b'z' => 1,
        b'.' | b',' => 10,
        0x80.. => 3,
        _ => 5,
    }
}

/// Word beginnings too common in English to key on.
const COMMON: &[&[u8]] = &[
    b"the ", b"and ", b"that", b"this", b"with", b"have", b"from", b"they", b"were", b"what",
    b"when", b"your", b"you ", b"for ", b"are ", b"not ", b"all ", b"can ", b"will", b"more",
    b"some", b"ther", b"whic", b"abou", b"into", b"only", b"also", b"any ", b"a ", b"to ",
];

/// Lower is rarer: longer keys first (up to eight bytes), then by how
/// common their first four bytes are.
fn rarity(key: &[u8]) -> (usize, u64) {
    let head = &key[..key.len().min(4)];
    let common = COMMON.iter().any(|c| c.eq_ignore_ascii_case(head));
    let freq = head.iter().map(|&b| frequency(b)).product::<u64>();
    (8 - key.len(), freq * if common { 1000 } else { 1 })
}

/// The eight bytes at `i`, padded with zeros past the end.
fn word_at(text: &[u8], i: usize) -> u64 {
    match text.get(i..i + 8) {
        Some(w) => u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]),
        None => key_of(text.get(i..).unwrap_or_default()),
    }
}

/// Up to eight bytes as a little-endian word, zero-padded.
fn key_of(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(w)
}

/// Bit `k` set when `flags[k]` is 1: each eight flags gathered into a byte by
/// one multiplication (flag `j` of a word lands on bit `56 + j`).
pub(crate) fn gather(flags: &[u8; 64]) -> u64 {
    let (eights, _) = flags.as_chunks::<8>();
    let mut mask = 0;
    for (k, eight) in eights.iter().enumerate() {
        let gathered = u64::from_le_bytes(*eight).wrapping_mul(0x0102_0408_1020_4080) >> 56;
        mask |= gathered << (8 * k);
    }
    mask
}

/// The token starts among `window[1..]` (bit `k` for `window[k + 1]`).
fn starts(window: &[u8; 65]) -> u64 {
    let mut flags = [0u8; 64];
    for (k, flag) in flags.iter_mut().enumerate() {
        *flag = u8::from(starts_token(window[k], window[k + 1]));
    }
    gather(&flags)
}

impl Gate {
    /// The gate for `literals`; `None` when one has no key (the automaton
    /// must then read everything).
    pub(crate) fn new<S: AsRef<[u8]>>(literals: &[S]) -> Option<Gate> {
        let mut gate = Gate {
            fours: vec![0; (1 << BITS4) / 64].into_boxed_slice(),
            buckets: vec![Bucket::default(); 1 << BITS4].into_boxed_slice(),
            longs: vec![0; (1 << BITS8) / 64].into_boxed_slice(),
            threes: vec![0; (1 << BITS3) / 64].into_boxed_slice(),
            twos: vec![0; (1 << 16) / 64].into_boxed_slice(),
            heads: vec![0; (1 << 16) / 64].into_boxed_slice(),
            short: Reach::default(),
        };
        for literal in literals {
            let literal = literal.as_ref();
            // Keys of two bytes or more; a one-byte literal is its own key.
            let last = if literal.len() == 1 {
                1
            } else {
                literal.len() - 1
            };
            let (j, key) = (0..last)
                .filter(|&j| key_start(literal, j))
                .map(|j| (j, &literal[j..(j + 8).min(literal.len())]))
                .min_by_key(|(_, key)| rarity(key))?;
            let reach = Reach {
                before: u8::try_from(j).ok()?,
                after: u8::try_from(literal.len() - j).ok()?,
            };
            let folded = key_of(key) | FOLD;
            let head = folded as u32;
            match key.len() {
                4.. => {
                    let h = hash(head, BITS4);
                    set(&mut gate.fours, h);
                    gate.buckets[h].lengths |= 1 << (key.len() - 4);
                    gate.buckets[h].reach.widen(reach);
                    set(&mut gate.longs, hash_long(folded, key.len()));
                }
                3 => {
                    set(&mut gate.threes, hash(head & 0xFF_FFFF, BITS3));
                    set(&mut gate.heads, (head & 0xFFFF) as usize);
                }
                2 => {
                    set(&mut gate.twos, (head & 0xFFFF) as usize);
                    set(&mut gate.heads, (head & 0xFFFF) as usize);
                }
                _ => {
                    // Every byte may follow (zero stands for the text's end).
                    for next in 0..=u8::MAX {
                        let pair = (key_of(&[key[0], next]) | FOLD) as u32;
                        set(&mut gate.twos, (pair & 0xFFFF) as usize);
                        set(&mut gate.heads, (pair & 0xFFFF) as usize);
                    }
                }
            }
            if key.len() < 4 {
                gate.short.widen(reach);
            }
        }
        Some(gate)
    }

    /// Whether the bytes at token start `i` begin a key, and if so how far
    /// around `i` its literals reach. Two lookups for most starts: the
    /// first four bytes among the long keys' heads, the first two among the
    /// short keys' heads.
    #[inline]
    fn keyed(&self, text: &[u8], i: usize) -> Option<Reach> {
        let long = word_at(text, i) | FOLD;
        let w = long as u32;
        let h = hash(w, BITS4);
        let long_hit = has(&self.fours, h);
        let short_hit = has(&self.heads, (w & 0xFFFF) as usize);
        if !(long_hit || short_hit) {
            return None;
        }
        self.keyed_slow(long, h, long_hit, short_hit)
    }

    #[cold]
    fn keyed_slow(&self, long: u64, h: usize, long_hit: bool, short_hit: bool) -> Option<Reach> {
        let w = long as u32;
        let mut reach = if long_hit {
            self.long_keyed(long, h)
        } else {
            None
        };
        if short_hit
            && (has(&self.twos, (w & 0xFFFF) as usize)
                || has(&self.threes, hash(w & 0xFF_FFFF, BITS3)))
        {
            let mut short = self.short;
            short.widen(reach.unwrap_or_default());
            reach = Some(short);
        }
        reach
    }

    /// The reach of the whole keys of four to eight bytes that begin the
    /// folded word `long`, whose first four bytes hash to `h`.
    fn long_keyed(&self, long: u64, h: usize) -> Option<Reach> {
        let bucket = self.buckets[h];
        let mut lengths = bucket.lengths;
        while lengths != 0 {
            let len = 4 + lengths.trailing_zeros() as usize;
            lengths &= lengths - 1;
            if has(&self.longs, hash_long(long, len)) {
                return Some(bucket.reach);
            }
        }
        None
    }

    /// The regions of `text` where a literal may occur, in order, disjoint
    /// and not touching, each clamped to the text.
    pub(crate) fn regions(&self, text: &[u8]) -> Vec<(usize, usize)> {
        let mut regions: Vec<(usize, usize)> = Vec::new();
        let mut hit = |i: usize, reach: Reach| {
            let mut start = i.saturating_sub(usize::from(reach.before));
            let mut end = (i + usize::from(reach.after)).min(text.len());
            // A literal may reach further back than the regions before it.
            while let Some(&(s, e)) = regions.last()
                && start <= e
            {
                start = start.min(s);
                end = end.max(e);
                regions.pop();
            }
            regions.push((start, end));
        };
        let Some(&first) = text.first() else {
            return regions;
        };
        // The first byte follows the text's start, a boundary; each block
        // after it is read with the byte before it.
        if starts_token(b' ', first)
            && let Some(reach) = self.keyed(text, 0)
        {
            hit(0, reach);
        }
        let mut i = 1;
        while let Some(window) = text
            .get(i - 1..i + 64)
            .and_then(|w| <&[u8; 65]>::try_from(w).ok())
        {
            let mut mask = starts(window);
            while mask != 0 {
                let k = i + mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if let Some(reach) = self.keyed(text, k) {
                    hit(k, reach);
                }
            }
            i += 64;
        }
        while i < text.len() {
            if starts_token(text[i - 1], text[i])
                && let Some(reach) = self.keyed(text, i)
            {
                hit(i, reach);
            }
            i += 1;
        }
        regions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covered(regions: &[(usize, usize)], text: &[u8], needle: &str) -> bool {
        let at = text
            .windows(needle.len())
            .position(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
            .expect("present");
        regions
            .iter()
            .any(|&(s, e)| s <= at && at + needle.len() <= e)
    }

    #[test]
    fn regions_cover_every_occurrence_in_any_case() {
        let literals = [
            "ignore previous",
            "<|",
            "what",
            "dan",
            "\"}",
            "orders from",
            "n't follow",
            "système",
        ];
        let gate = Gate::new(&literals).expect("gate");
        let text = "we should IGNORE PREVIOUS advice, then What? and <|im_start|> \
                    for a few more words of padding here {\"a\": \"b\"}, take Orders From \
                    nobody; don't follow them, le Système and Dan"
            .as_bytes();
        let regions = gate.regions(text);
        for needle in literals {
            assert!(covered(&regions, text, needle), "{needle}: {regions:?}");
        }
        for pair in regions.windows(2) {
            assert!(pair[0].1 < pair[1].0, "merged: {regions:?}");
        }
    }

    /// A literal keyed deep inside ("qzxj…" is rarer than "a b c d ")
    /// reaches back over the region of a short one found before its key.
    #[test]
    fn a_later_key_can_reach_back_over_earlier_regions() {
        let gate = Gate::new(&["b c", "a b c d e qzxjvkwy"]).expect("gate");
        let text = b"a b c d e qzxjvkwy";
        let regions = gate.regions(text);
        assert_eq!(regions, [(0, text.len())]);
    }

    /// Literals at every offset around the 64-byte blocks and the text's ends.
    #[test]
    fn literals_anywhere_are_covered() {
        let gate = Gate::new(&["dan", "ignore", "\"}", "late ", "<|"]).expect("gate");
        for needle in ["dan", "ignore", "\"}", "late ", "<|"] {
            for at in 0..140 {
                for tail in [0, 1, 5] {
                    let mut text = "x".repeat(at);
                    if at > 0 {
                        text.pop();
                        text.push(' ');
                    }
                    text.push_str(needle);
                    text.push_str(&" y".repeat(tail));
                    let regions = gate.regions(text.as_bytes());
                    assert!(
                        covered(&regions, text.as_bytes(), needle),
                        "{needle} at {at}: {regions:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn prose_without_the_keys_has_no_region() {
        let gate = Gate::new(&["ignore", "<|", "orders from"]).expect("gate");
        for text in [
            "the report is due on friday, shipped from the warehouse",
            "",
            "g",
        ] {
            assert!(gate.regions(text.as_bytes()).is_empty(), "{text}");
        }
    }

    #[test]
    fn a_literal_without_a_key_disables_the_gate() {
        assert!(Gate::new(&["ab", "  "]).is_none());
        assert!(Gate::new(&["ab", "9"]).is_none());
    }

    #[test]
    fn one_byte_literals_are_found_before_any_byte() {
        let gate = Gate::new(&["@", "ignore"]).expect("gate");
        for text in ["a@b", "@", "x @", "mail me at a@", "@@"] {
            let regions = gate.regions(text.as_bytes());
            assert!(
                covered(&regions, text.as_bytes(), "@"),
                "{text}: {regions:?}"
            );
        }
    }

    #[test]
    fn token_starts_are_word_beginnings_marks_and_characters() {
        let text = b" an_x9b, \xc3\xa9t\xc3\xa9 a";
        let mut window = [b' '; 65];
        window[1..1 + text.len()].copy_from_slice(text);
        let mask = starts(&window);
        let found: Vec<usize> = (0..64).filter(|k| mask & (1 << k) != 0).collect();
        // "an" 1, "_" 3, "x" 4, "b" 6, "," 7, "é" 9, "t" 11, "é" 12, "a" 15.
        assert_eq!(found, [1, 3, 4, 6, 7, 9, 11, 12, 15]);
    }
}
