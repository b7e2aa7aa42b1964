//! An exact prefilter for the anchor automaton: where in a text an anchor
//! can occur at all.
//!
//! The automaton holds some 1,500 case-insensitive literals, so it has no
//! rare byte to skip ahead to and reads every byte through a table far
//! larger than the L1 cache. Instead each literal is represented by a gram
//! of its bytes: itself when it has three to eight bytes, else eight of its
//! bytes in a row, across a space where it has one ("ers from" of "orders
//! from" is rare even though both words are common). Within each gram four
//! bytes are its trigger: across a space where they can be, else the rarest
//! by English letter frequency (common sequences such as "tion" avoided).
//!
//! The sweep reads the text once, keeping the last four bytes as a 20-bit
//! key (five bits a byte: letters fold to one case), and tests the key in a
//! bit set of triggers (and its last 15 bits in one of three-byte literals).
//! Where one is set, the whole grams it may belong to are tested against a
//! Bloom filter. Two-byte literals (`"}`, `<|`) are found with `memchr` on
//! their second byte. An occurrence of a literal contains its gram, so it
//! lies whole within a literal's length of a candidate; the automaton reads
//! only those regions (merged when they overlap), and so reports exactly the
//! hits it would over the whole text. Everything that folds bytes together
//! or hashes them only adds candidates, which cost time, never hits.

/// Bloom filter size: 4,096 words of 64 bits (32 KiB).
const WORDS: usize = 4096;
/// Trigger keys: four bytes of five bits (a 128 KiB bit set), and three
/// (4 KiB) for three-byte literals.
const KEYS4: usize = 1 << 20;
const KEYS3: usize = 1 << 15;

/// The literals' grams, and how far an occurrence can reach.
pub(crate) struct Ngrams {
    /// Bit per four-byte key that is some gram's trigger.
    fours: Box<[u64; KEYS4 / 64]>,
    /// Bit per three-byte key that is a three-byte literal.
    threes: Box<[u64; KEYS3 / 64]>,
    /// Per trigger key: the trigger's offset in its gram and the gram's
    /// length; sorted by bucket (the key's low bits), then key.
    entries: Vec<(u32, u8, u8)>,
    /// Where each bucket's entries start in `entries` (one more at the end),
    /// so a trigger finds its entries in one or two steps.
    buckets: Vec<u16>,
    /// Blocked Bloom filter of whole grams keyed by length (one word per
    /// gram, two bits in it).
    grams: Box<[u64; WORDS]>,
    /// The folded two-byte literals.
    pairs: Vec<[u8; 2]>,
    /// Their second bytes, both cases, for `memchr`.
    seconds: Vec<u8>,
    /// How far before a gram its literal can start, and how far after the
    /// gram's start it can end.
    before: usize,
    after: usize,
}

/// The trigger key of the bytes of `t`, five bits each (letters fold to
/// one case), the last byte lowest.
fn key(t: &[u8]) -> usize {
    t.iter().fold(0, |k, &b| (k << 5) | usize::from(b & 31))
}

/// Buckets of trigger keys (by their low bits) for the entry lookup.
const BUCKETS: usize = 4096;

fn bucket(k: usize) -> usize {
    k % BUCKETS
}

fn has(set: &[u64], k: usize) -> bool {
    set[k / 64] & (1 << (k % 64)) != 0
}

fn set(bits: &mut [u64], k: usize) {
    bits[k / 64] |= 1 << (k % 64);
}

/// The eight bytes at `p`, folded, the text padded with spaces past its
/// end (a gram running past the end is no occurrence, so padding only adds
/// candidates).
fn eight_at(text: &[u8], p: usize) -> u64 {
    let bytes = match text.get(p..p + 8) {
        Some(g) => <[u8; 8]>::try_from(g).unwrap_or([b' '; 8]),
        None => std::array::from_fn(|k| text.get(p + k).copied().unwrap_or(b' ')),
    };
    u64::from_le_bytes(bytes) | 0x2020_2020_2020_2020
}

/// A literal's gram, folded like [`eight_at`].
fn gram_of(bytes: &[u8]) -> u64 {
    let mut padded = [b' '; 8];
    padded[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(padded) | 0x2020_2020_2020_2020
}

/// The Bloom word and bits of the first `len` bytes of a folded gram.
fn slots(gram: u64, len: usize) -> (usize, u64) {
    let masked = if len >= 8 {
        gram
    } else {
        gram & ((1 << (8 * len)) - 1)
    };
    let x = masked ^ ((len as u64) << 61);
    let h = (x ^ (x >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let word = (h >> 52) as usize;
    let bits = (1 << ((h >> 46) & 63)) | (1 << ((h >> 40) & 63));
    (word, bits)
}

/// How common a byte is in English prose (rough per-mille frequencies), to
/// choose grams and triggers. Only speed depends on it.
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

/// Four-byte sequences too common in English to be a good trigger.
const COMMON: &[&[u8]] = &[
    b"tion", b"ther", b"that", b"with", b"here", b"ment", b"ions", b"this", b"ould", b"ight",
    b"have", b"hich", b"ever", b"from", b"ough", b"were", b"they", b"ting", b"able", b"ated",
    b"ence", b"more", b"ness", b"ally", b"ter ", b"the ", b"ing ", b"and ", b"ion ", b"ent ",
    b"for ", b"hat ", b" the", b" and", b" to ", b" of ", b" in ", b" a ", b"ers ", b"ed t",
    b"inst", b"stru", b"ruct", b"ctio", b"ver ", b"ive ", b"ure ", b"ate ", b"all ", b"ted ",
];

fn rarity(bytes: &[u8]) -> u64 {
    let common = COMMON.iter().any(|c| c.eq_ignore_ascii_case(bytes));
    bytes.iter().map(|&b| frequency(b)).product::<u64>() * if common { 1000 } else { 1 }
}

impl Ngrams {
    /// The filter for `literals`; `None` when one is shorter than two bytes
    /// (the automaton must then read everything).
    pub(crate) fn new<S: AsRef<[u8]>>(literals: &[S]) -> Option<Ngrams> {
        let mut filter = Ngrams {
            fours: Box::new([0; KEYS4 / 64]),
            threes: Box::new([0; KEYS3 / 64]),
            entries: Vec::new(),
            buckets: Vec::new(),
            grams: Box::new([0; WORDS]),
            pairs: Vec::new(),
            seconds: Vec::new(),
            before: 0,
            after: 0,
        };
        for literal in literals {
            let literal = literal.as_ref();
            filter.after = filter.after.max(literal.len());
            match literal.len() {
                0 | 1 => return None,
                2 => {
                    let (a, b) = (literal[0], literal[1]);
                    filter.pairs.push([a | 0x20, b | 0x20]);
                    for second in [b, b.to_ascii_lowercase(), b.to_ascii_uppercase()] {
                        if !filter.seconds.contains(&second) {
                            filter.seconds.push(second);
                        }
                    }
                }
                3 => {
                    set(&mut *filter.threes, key(literal));
                    filter.add_gram(literal);
                }
                _ => {
                    let len = literal.len().min(8);
                    let (offset, gram) =
                        literal.windows(len).enumerate().min_by_key(|(_, w)| {
                            let across = len == 8 && w[1..7].contains(&b' ');
                            (!across, rarity(w))
                        })?;
                    // Four bytes across words first: "y re" of "every
                    // response" is rarer than "very".
                    let (j, trigger) = gram
                        .windows(4)
                        .enumerate()
                        .min_by_key(|(_, t)| (!t[1..3].contains(&b' '), rarity(t)))?;
                    let k = key(trigger);
                    set(&mut *filter.fours, k);
                    filter.entries.push((k as u32, j as u8, len as u8));
                    filter.add_gram(gram);
                    filter.before = filter.before.max(offset);
                }
            }
        }
        filter
            .entries
            .sort_unstable_by_key(|&(k, j, len)| (bucket(k as usize), k, j, len));
        filter.entries.dedup();
        filter.buckets = (0..=BUCKETS)
            .map(|b| {
                let start = filter.entries.partition_point(|e| bucket(e.0 as usize) < b);
                u16::try_from(start).unwrap_or(u16::MAX)
            })
            .collect();
        if filter.entries.len() >= usize::from(u16::MAX) {
            return None;
        }
        Some(filter)
    }

    fn add_gram(&mut self, gram: &[u8]) {
        let (word, bits) = slots(gram_of(gram), gram.len());
        self.grams[word] |= bits;
    }

    /// Whether a gram of `len` bytes may start at `p`.
    fn gram_at(&self, text: &[u8], p: usize, len: usize) -> bool {
        let (word, bits) = slots(eight_at(text, p), len);
        self.grams[word] & bits == bits
    }

    /// The regions of `text` where anchors may occur, in order, disjoint
    /// and not touching, each clamped to the text.
    pub(crate) fn regions(&self, text: &[u8]) -> Vec<(usize, usize)> {
        let mut candidates = Vec::new();
        self.grams(text, &mut candidates);
        self.pairs(text, &mut candidates);
        // Triggers at different offsets of their grams, and pairs, come in
        // out of order.
        if !candidates.is_sorted() {
            candidates.sort_unstable();
        }
        let mut regions: Vec<(usize, usize)> = Vec::new();
        for p in candidates {
            let start = p.saturating_sub(self.before);
            let end = (p + self.after).min(text.len());
            match regions.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => regions.push((start, end)),
            }
        }
        regions
    }

    /// Where a gram may start (mostly in order; a position may repeat).
    /// One pass, two bit-set lookups a byte, a branch that is rarely taken.
    pub(crate) fn grams(&self, text: &[u8], out: &mut Vec<usize>) {
        let mut k = 0;
        for (i, &b) in text.iter().enumerate() {
            k = ((k << 5) | usize::from(b & 31)) & (KEYS4 - 1);
            if has(&*self.fours, k) | has(&*self.threes, k & (KEYS3 - 1)) {
                self.check(text, i, k, out);
            }
        }
    }

    /// A trigger ends at `i` (its key `k`): the grams it may be part of.
    #[cold]
    fn check(&self, text: &[u8], i: usize, k: usize, out: &mut Vec<usize>) {
        if i >= 3 && has(&*self.fours, k) {
            let p = i - 3;
            let b = bucket(k);
            let (from, to) = (self.buckets[b], self.buckets[b + 1]);
            let entries = &self.entries[usize::from(from)..usize::from(to)];
            for &(_, j, len) in entries.iter().filter(|e| e.0 as usize == k) {
                if let Some(start) = p.checked_sub(usize::from(j))
                    && self.gram_at(text, start, usize::from(len))
                {
                    out.push(start);
                }
            }
        }
        if i >= 2 && has(&*self.threes, k & (KEYS3 - 1)) && self.gram_at(text, i - 2, 3) {
            out.push(i - 2);
        }
    }

    /// Where a two-byte literal starts, unordered.
    fn pairs(&self, text: &[u8], out: &mut Vec<usize>) {
        for seconds in self.seconds.chunks(3) {
            let found = match *seconds {
                [a] => memchr::memchr_iter(a, text).collect::<Vec<_>>(),
                [a, b] => memchr::memchr2_iter(a, b, text).collect(),
                [a, b, c] => memchr::memchr3_iter(a, b, c, text).collect(),
                _ => Vec::new(),
            };
            for q in found {
                if q > 0 && self.pairs.contains(&[text[q - 1] | 0x20, text[q] | 0x20]) {
                    out.push(q - 1);
                }
            }
        }
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
        let literals = ["ignore previous", "<|", "what", "dan", "\"}", "orders from"];
        let filter = Ngrams::new(&literals).expect("filter");
        let text = b"we should IGNORE PREVIOUS advice, then What? and <|im_start|> \
                    for a few more words of padding here {\"a\": \"b\"}, take Orders From \
                    nobody and Dan";
        let regions = filter.regions(text);
        for needle in literals {
            assert!(covered(&regions, text, needle), "{needle}: {regions:?}");
        }
        for pair in regions.windows(2) {
            assert!(pair[0].1 < pair[1].0, "merged: {regions:?}");
        }
    }

    #[test]
    fn literals_at_either_end_are_covered() {
        let filter = Ngrams::new(&["dan", "ignore", "\"}", "late "]).expect("filter");
        for (text, needle) in [
            ("x dan", "dan"),
            ("dan", "dan"),
            ("please ignore", "ignore"),
            ("ignore it", "ignore"),
            ("{\"a\":\"b\"}", "\"}"),
            ("late ", "late "),
        ] {
            let regions = filter.regions(text.as_bytes());
            assert!(
                covered(&regions, text.as_bytes(), needle),
                "{text}: {regions:?}"
            );
        }
    }

    #[test]
    fn prose_without_the_grams_has_no_region() {
        let filter = Ngrams::new(&["ignore", "<|", "orders from"]).expect("filter");
        for text in [
            "the report is due on friday, orders shipped from the warehouse",
            "",
            "g",
        ] {
            assert!(filter.regions(text.as_bytes()).is_empty(), "{text}");
        }
    }

    #[test]
    fn a_one_byte_literal_disables_the_filter() {
        assert!(Ngrams::new(&["ab", "c"]).is_none());
    }
}
