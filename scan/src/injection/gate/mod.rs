//! Where in a text the anchor literals occur: found through short keys at
//! the text's token starts, so the scan never reads ordinary prose byte by
//! byte with an automaton.
//!
//! Every literal gets a key: one to eight of its bytes that begin at a token
//! start, chosen to be rare. A token starts at an ASCII letter that follows
//! a byte that is not one, at any ASCII punctuation byte, and at the first
//! byte of a non-ASCII character. The keys are looked up at every token
//! start in three levels, each rarer than the one before:
//!
//! 1. a sieve: at the starts whose first three bytes (folded) may begin a
//!    key (eight classes of keys, a table per byte position: which first
//!    bytes may go with which second and third), the first four bytes
//!    (letters folded to one case) hashed to an entry of a table of the
//!    long keys' heads, whose bits say which hashes of the next one to four
//!    bytes follow that head in a key (one byte of bits per key length);
//!    keys of one to three bytes have classes of their own, which pass
//!    without the table. With AVX-512 ([`Avx512`]) a 64-byte
//!    block's token starts are found and packed with their words, and the
//!    entries gathered sixteen starts at a time; with AVX2 ([`Avx2`]) the
//!    starts and their classes are found 32 bytes at a time and the
//!    entries gathered eight starts at a time; elsewhere one start at a
//!    time. All write the same candidates (tested).
//! 2. whole keys of four to eight bytes hashed with their length into a bit
//!    set, for the lengths the sieve let through, so "update f" of "update
//!    from" rather than the everyday "upda" (with AVX-512, sixteen
//!    candidates at a time in longer texts: [`Avx512::candidates`]);
//! 3. the key itself in a table that lists the literals keyed on it and at
//!    which offset: each is compared with the text, ignoring ASCII case,
//!    first the eight bytes after the key (read once for them all).
//!
//! Exactness: a literal's key starts inside the literal at a byte that is a
//! token start whatever precedes the literal, except when the key is the
//! literal's first byte and that byte is a letter: that occurrence is a
//! token start only at a word boundary. The rules put `\b` before their
//! words, so an anchor that begins a word in every match they can make is
//! found. Hashing and folding only add candidates, which level 3 rejects.
//! At each position where a literal is found, [`Gate::find`] reports the
//! longest literal there (the lowest index among equal ones), which is what
//! a leftmost-longest automaton search resumed one byte after each hit
//! reports (`scanner::prefilter_tests` checks the scores are those of an
//! automaton reading the whole text; the tests here check the hits).

use std::cmp::Reverse;

use super::encoded::Printable;
use super::mask::gather;
use crate::chars::{key_of, word_at};

/// Bits of the hash of the long keys' first four bytes: the sieve's table
/// has a 32-bit entry per hash (32 KiB). With 12 bits (16 KiB) one entry in
/// seven held a head, and about as many starts passed on a hash that was
/// not theirs as on their own head; halving that was faster than keeping
/// the table small.
const HEAD_BITS: u32 = 13;
/// Bits of the hashed set of whole keys of four to eight bytes (8 KiB).
const BITS8: u32 = 16;
/// Positions sieved before their candidates are confirmed: the candidates'
/// buffers stay small (in L2) and the confirming loop runs long enough for
/// the branch predictor. With 1024 most texts of a chat body took two or
/// more rounds, and the vector sieve's second loop reloaded starts its
/// first loop had just stored: 4096 scanned a 1 MiB body ~3% faster
/// (8192 no faster).
const CHUNK: usize = 4096;
/// With AVX-512, level 2 runs sixteen candidates at a time in chunks of
/// `WORDS_FROM` bytes or more (about ten candidates a KiB of prose), for
/// `VECTOR_LEVEL2` candidates or more: it needs the candidates' words
/// packed by the sieve, which cost more than it saved in short texts, and
/// for a few candidates its fixed cost was more than one at a time. It
/// was 1024, from measurements on Zen 4; on an Intel Xeon 512 scanned a
/// 1 KiB chat body (an 800-byte turn) ~1% faster, and 256 no faster; on
/// an AMD EPYC VM with AVX-512, 1024 again read the detector alone 2-4%
/// faster at 1 KiB (both stages 0.98-1.03, five alternated rounds).
const WORDS_FROM: usize = 1024;
const VECTOR_LEVEL2: usize = 8;
/// Room past a chunk's candidates for the vector path's full-width stores.
const SLACK: usize = 64;

thread_local! {
    /// The buffers of [`Gate::find`]: the candidates' positions and sieve
    /// bits, and the vector sieve's packed starts (offsets, heads, tails).
    static BUFFER: std::cell::Cell<Vec<u32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// One occurrence of a literal: `text[start..end]` is literal `literal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hit {
    pub start: usize,
    pub end: usize,
    pub literal: usize,
}

/// The literals, their keys and the sets that find the keys.
pub(crate) struct Gate {
    sieve: Sieve,
    /// Level 2: whole keys of four to eight bytes, hashed with their length.
    longs: Box<[u64]>,
    /// The lengths of the keys, as bit `len`.
    long_lengths: u16,
    short_lengths: u16,
    /// Per pattern of the non-zero bytes of a start's sieve bits (bit `k`
    /// for byte `k`), the lengths of the long keys it lets through: what
    /// [`lengths_of`] gives, for the vector path.
    #[cfg(target_arch = "x86_64")]
    patterns: [u32; 16],
    /// Level 3: the keys, folded, and the literals keyed on each.
    keys: Keys,
    literals: Vec<Box<[u8]>>,
    /// Per literal, the literals that win over it where they occur at the
    /// same start (longer ones that begin with it, or an equal one with a
    /// lower index), in the order they win.
    better: Vec<Box<[u32]>>,
    #[cfg(target_arch = "x86_64")]
    avx512: Option<Avx512>,
    #[cfg(target_arch = "x86_64")]
    avx2: Option<Avx2>,
}

/// Level 1, what every token start is checked against.
struct Sieve {
    /// Per hash of a long key's first four bytes (folded), the hashes of
    /// what follows them in the keys: the bits of [`tail_bits`] in the
    /// byte of the key's length (5 to 8); all of them for a key of four.
    heads: Box<[u32]>,
    /// Every key in one of eight classes: per byte position, per folded
    /// byte (its low seven bits), the classes whose keys may have it there.
    /// A start may begin a key when one class has its first three bytes:
    /// the others (most of the punctuation of JSON and code, a sixth of
    /// the words of prose) are dropped before they are hashed. A byte and
    /// its folded form have the same entry.
    classes: [[u8; 128]; 3],
    /// The classes of the keys of one to three bytes ([`SHORT_CLASSES`]).
    shorts: u8,
}

/// The classes of the short keys (a handful): one for the keys of one
/// byte (any byte may follow them, so they share with no other key), one
/// for those that begin with punctuation and one for those that begin with
/// a letter. The long keys share the other five by their first byte.
const SHORT_CLASSES: usize = 3;

/// Folds ASCII letters to lower case (and merges some punctuation pairs,
/// which only adds candidates).
const FOLD: u64 = 0x2020_2020_2020_2020;

/// Multipliers of the hashes of a folded word's first four bytes and of
/// the four after them (the vector path uses them too).
const MUL_HEAD: u32 = 0x9E37_79B1;
const MUL_TAIL: u32 = 0x85EB_CA6B;

/// The sieve's entry for the folded word `w`.
fn head(w: u64) -> usize {
    ((w as u32).wrapping_mul(MUL_HEAD) >> (32 - HEAD_BITS)) as usize
}

/// One bit in each byte, for bytes 4 to 4 + k of the folded word `w` in
/// byte k: the low bytes of a product depend only on the low bytes of the
/// factors, so byte k of the tail's product hashes the first k + 1 bytes
/// of the tail (its top three bits pick the bit).
fn tail_bits(w: u64) -> u32 {
    let product = ((w >> 32) as u32).wrapping_mul(MUL_TAIL);
    let mut bits = 0;
    for k in 0..4 {
        bits |= 1 << (8 * k + ((product >> (8 * k + 5)) & 7));
    }
    bits
}

/// The first `len` (1..=8) bytes of a folded eight-byte word.
fn prefix(w: u64, len: usize) -> u64 {
    if len >= 8 {
        w
    } else {
        w & ((1 << (8 * len)) - 1)
    }
}

/// The hash of the first `len` bytes of a folded word, `BITS8` bits.
fn hash_long(w: u64, len: usize) -> usize {
    let x = prefix(w, len) ^ ((len as u64) << 59);
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

/// The key of `literal` and where it starts in it; `None` when it has
/// none.
fn key(literal: &[u8]) -> Option<(usize, &[u8])> {
    // Keys of two bytes or more where the literal allows: a key that ends
    // the literal is one byte only for a one-byte literal.
    let last = if literal.len() == 1 {
        1
    } else {
        literal.len() - 1
    };
    (0..last)
        .filter(|&j| key_start(literal, j))
        .map(|j| (j, &literal[j..(j + 8).min(literal.len())]))
        .min_by_key(|(_, key)| rarity(key))
}

/// Calls `write(m, k)` for each set bit `k` of a block's `mask`, lowest
/// first, with `m` counting on from `*next`, which ends past the last.
/// Eight calls a round whether or not there are that many bits: writing
/// one a round ended the loop at a count that fresh text makes anyone's
/// guess, a mispredicted branch a block; with about ten starts a block,
/// most blocks take two rounds on the same path. The calls past the bits
/// get `k == 64` and an `m` up to seven past the end: the writer's
/// buffers need that room, and what it writes there is not read.
#[inline(always)]
fn each_start(mut mask: u64, next: &mut usize, mut write: impl FnMut(usize, u32)) {
    let end = *next + mask.count_ones() as usize;
    let mut m = *next;
    while m < end {
        for _ in 0..8 {
            write(m, mask.trailing_zeros());
            m += 1;
            mask &= mask.wrapping_sub(1);
        }
    }
    *next = end;
}

/// The token starts among `window[1..]` (bit `k` for `window[k + 1]`).
fn starts(window: &[u8; 65]) -> u64 {
    let mut flags = [0u8; 64];
    for (k, flag) in flags.iter_mut().enumerate() {
        *flag = u8::from(starts_token(window[k], window[k + 1]));
    }
    gather(&flags)
}

/// The lengths of the long keys a start may begin (bit `len`), from the
/// bits its head's entry and its tail have in common: byte `k` for length
/// `k + 5`, every byte for a key of four.
fn lengths_of(common: u32) -> u16 {
    let mut lengths = 0;
    for k in 0..4 {
        lengths |= u16::from((common >> (8 * k)) & 0xFF != 0) << (5 + k);
    }
    if lengths == 0b1111 << 5 {
        lengths |= 1 << 4;
    }
    lengths
}

impl Sieve {
    /// The bits of the folded word's head entry that its tail has.
    #[inline]
    fn common(&self, w: u64) -> u32 {
        self.heads[head(w)] & tail_bits(w)
    }

    /// The classes that have the folded word's first three bytes: none
    /// when it can begin no key.
    #[inline]
    fn classes(&self, w: u64) -> u8 {
        let class = |k: usize| self.classes[k][(w >> (8 * k)) as usize & 0x7F];
        class(0) & class(1) & class(2)
    }

    /// Whether the folded word may begin a key of one to three bytes.
    #[inline]
    fn short(&self, w: u64) -> bool {
        self.classes(w) & self.shorts != 0
    }

    /// The class of a key of `len` bytes, folded, given the class of each
    /// first byte of the long keys (`firsts`).
    fn class_of(key: u64, len: usize, firsts: &[u8; 128]) -> u8 {
        match len {
            1 => 0,
            2 | 3 if is_letter(key as u8) => 2,
            2 | 3 => 1,
            _ => firsts[key as usize & 0x7F],
        }
    }

    /// The classes of the long keys' first bytes: the bytes that begin the
    /// most keys first, each to the class with the fewest keys so far, so
    /// the classes are about as full.
    fn long_classes(keys: impl IntoIterator<Item = (u64, usize)>) -> [u8; 128] {
        let mut count = [0usize; 128];
        for (key, _) in keys.into_iter().filter(|(_, len)| *len >= 4) {
            count[key as usize & 0x7F] += 1;
        }
        let mut bytes: Vec<usize> = (0..128).filter(|&b| count[b] > 0).collect();
        bytes.sort_by_key(|&b| (Reverse(count[b]), b));
        let mut load = [0usize; 8];
        let mut firsts = [0u8; 128];
        for b in bytes {
            let class = (SHORT_CLASSES..8)
                .min_by_key(|&c| load[c])
                .expect("classes");
            load[class] += count[b];
            firsts[b] = class as u8;
        }
        firsts
    }

    /// Puts the folded key of `len` bytes in its class.
    fn classify(&mut self, key: u64, len: usize, firsts: &[u8; 128]) {
        let bit = 1 << Sieve::class_of(key, len, firsts);
        if len < 4 {
            self.shorts |= bit;
        }
        for (k, table) in self.classes.iter_mut().enumerate() {
            if k < len {
                // The byte's entry and its unfolded twin's (bit 5 clear), so
                // a lookup of a byte as it is reads what its folded form
                // would: the vector sieve reads the bytes after a start
                // straight from the text.
                let folded = usize::from((key >> (8 * k)) as u8 & 0x7F);
                table[folded] |= bit;
                table[folded & !0x20] |= bit;
            } else {
                // Any byte may follow (a zero past the text's end too).
                for b in table {
                    *b |= bit;
                }
            }
        }
    }

    /// Level 1 one start at a time: the token starts in `from..to` whose
    /// words pass, into `out` (as offsets from `from`, and their
    /// [`Sieve::common`] bits); returns how many. Each of `out` holds at
    /// least `to - from + 8` words (the blocks' starts are written eight
    /// at a time).
    fn portable(&self, text: &[u8], (from, to): (usize, usize), out: [&mut [u32]; 2]) -> usize {
        let [at, common] = out;
        // The token starts first, then their words (as the vector path).
        let mut m = 0;
        let mut i = from;
        while i + 64 <= to {
            // Each block is read with the byte before it (a boundary before
            // the text).
            let mut window = [b' '; 65];
            if i > 0 {
                window[0] = text[i - 1];
            }
            window[1..].copy_from_slice(&text[i..i + 64]);
            each_start(starts(&window), &mut m, |m, k| {
                at[m] = (i - from) as u32 + k;
            });
            i += 64;
        }
        while i < to {
            let prev = if i == 0 { b' ' } else { text[i - 1] };
            at[m] = (i - from) as u32;
            m += usize::from(starts_token(prev, text[i]));
            i += 1;
        }
        let mut n = 0;
        for k in 0..m {
            let offset = at[k];
            let w = word_at(text, from + offset as usize) | FOLD;
            at[n] = offset;
            common[n] = self.common(w);
            let classes = self.classes(w);
            n += usize::from((common[n] != 0) & (classes != 0) | (classes & self.shorts != 0));
        }
        n
    }
}

/// The keys of level 3: an open-addressed table from a folded key and its
/// length to the literals keyed there.
struct Keys {
    slots: Box<[Slot]>,
    /// `slots.len() - 1`.
    mask: usize,
    keyed: Vec<Keyed>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    key: u64,
    /// 0: empty.
    len: u8,
    /// `keyed[first..end]`.
    first: u32,
    end: u32,
}

/// A literal keyed on a key, `offset` bytes before the key.
#[derive(Debug, Clone, Copy)]
struct Keyed {
    literal: u32,
    offset: u32,
    len: u32,
    /// The literal's first and last eight bytes folded (the head only when
    /// it is shorter): most literals that share a key differ there, and
    /// two words compare faster than the bytes.
    head: u64,
    tail: u64,
    /// The up to eight bytes of the literal right after its key, folded,
    /// and the mask of those it has: the text's word after the key is
    /// read once for all the literals keyed there, most of which it
    /// rejects (words like "summarize" key a dozen literals each).
    next: u64,
    next_mask: u64,
}

impl Keys {
    /// The table of `keys` (folded key, length, literals keyed there).
    fn new(keys: &[(u64, usize, Vec<Keyed>)]) -> Keys {
        let size = (2 * keys.len()).next_power_of_two().clamp(16, 1 << BITS8);
        let mut table = Keys {
            slots: vec![Slot::default(); size].into_boxed_slice(),
            mask: size - 1,
            keyed: Vec::new(),
        };
        for (key, len, keyed) in keys {
            let mut at = table.home(*key, *len);
            while table.slots[at].len != 0 {
                at = (at + 1) & table.mask;
            }
            let first = table.keyed.len() as u32;
            table.keyed.extend_from_slice(keyed);
            table.slots[at] = Slot {
                key: *key,
                len: *len as u8,
                first,
                end: table.keyed.len() as u32,
            };
        }
        table
    }

    fn home(&self, key: u64, len: usize) -> usize {
        hash_long(key, len) & self.mask
    }

    /// The literals keyed on the first `len` bytes of the folded word `w`.
    fn get(&self, w: u64, len: usize) -> &[Keyed] {
        let key = prefix(w, len);
        let mut at = self.home(key, len);
        loop {
            let slot = self.slots[at];
            if slot.len == 0 {
                return &[];
            }
            if slot.key == key && usize::from(slot.len) == len {
                return &self.keyed[slot.first as usize..slot.end as usize];
            }
            at = (at + 1) & self.mask;
        }
    }
}

impl Gate {
    /// The gate for `literals`; `None` when one has no key (an automaton
    /// must then read everything).
    pub(crate) fn new<S: AsRef<[u8]>>(literals: &[S]) -> Option<Gate> {
        let mut sieve = Sieve {
            heads: vec![0; 1 << HEAD_BITS].into_boxed_slice(),
            classes: [[0; 128]; 3],
            shorts: 0,
        };
        let mut longs = vec![0; (1 << BITS8) / 64].into_boxed_slice();
        let (mut long_lengths, mut short_lengths) = (0u16, 0u16);
        // Folded key and length -> the literals keyed there.
        let mut keys: Vec<(u64, usize, Vec<Keyed>)> = Vec::new();
        let mut keyed_on = Vec::with_capacity(literals.len());
        for literal in literals {
            let (offset, key) = key(literal.as_ref())?;
            keyed_on.push((offset, key_of(key) | FOLD, key.len()));
        }
        let firsts = Sieve::long_classes(keyed_on.iter().map(|&(_, key, len)| (key, len)));
        for (index, (literal, &(offset, folded, len))) in literals.iter().zip(&keyed_on).enumerate()
        {
            let literal = literal.as_ref();
            // The literal's bytes after the key, up to eight.
            let after = (literal.len() - offset - len).min(8);
            sieve.classify(folded, len, &firsts);
            if len >= 4 {
                sieve.heads[head(folded)] |= match len {
                    4 => !0,
                    _ => tail_bits(folded) & (0xFF << (8 * (len - 5))),
                };
                set(&mut longs, hash_long(folded, len));
                long_lengths |= 1 << len;
            } else {
                short_lengths |= 1 << len;
            }
            let keyed = Keyed {
                literal: u32::try_from(index).ok()?,
                offset: u32::try_from(offset).ok()?,
                len: u32::try_from(literal.len()).ok()?,
                head: prefix(word_at(literal, 0) | FOLD, literal.len()),
                tail: word_at(literal, literal.len().saturating_sub(8)) | FOLD,
                next: prefix(word_at(literal, offset + len) | FOLD, after),
                next_mask: prefix(!0, after),
            };
            let folded = prefix(folded, len);
            match keys.iter_mut().find(|(k, l, _)| *k == folded && *l == len) {
                Some((_, _, list)) => list.push(keyed),
                None => keys.push((folded, len, vec![keyed])),
            }
        }
        let literals: Vec<Box<[u8]>> = literals.iter().map(|l| l.as_ref().into()).collect();
        let better = (0..literals.len())
            .map(|i| {
                let mine = &literals[i];
                let mut wins: Vec<u32> = (0..literals.len())
                    .filter(|&j| {
                        let theirs = &literals[j];
                        let starts_with = theirs.len() >= mine.len()
                            && theirs[..mine.len()].eq_ignore_ascii_case(mine);
                        starts_with && (theirs.len() > mine.len() || j < i)
                    })
                    .map(|j| j as u32)
                    .collect();
                wins.sort_by_key(|&j| (Reverse(literals[j as usize].len()), j));
                wins.into_boxed_slice()
            })
            .collect();
        #[cfg(target_arch = "x86_64")]
        let avx2 = Avx2::detect(&sieve);
        Some(Gate {
            sieve,
            longs,
            long_lengths,
            short_lengths,
            #[cfg(target_arch = "x86_64")]
            patterns: std::array::from_fn(|bytes| {
                let common = (0..4)
                    .filter(|k| bytes >> k & 1 != 0)
                    .fold(0, |c, k| c | 0xFF << (8 * k));
                u32::from(lengths_of(common) & long_lengths)
            }),
            keys: Keys::new(&keys),
            literals,
            better,
            #[cfg(target_arch = "x86_64")]
            avx512: Avx512::detect(),
            #[cfg(target_arch = "x86_64")]
            avx2,
        })
    }

    /// Every position of `text` where a literal occurs with its key at a
    /// token start, in order, with the longest literal there; and whether
    /// the text may hold a long run of printable bytes ([`Printable`]).
    pub(crate) fn find(&self, text: &[u8]) -> (Vec<Hit>, Printable) {
        let mut hits = Vec::new();
        let mut printable = Printable::default();
        let room = text.len().min(CHUNK) + SLACK;
        // Kept per thread: zeroing it for each text cost more than the sieve
        // of a short one. (A nested call would find it taken and allocate.)
        let mut buffer = BUFFER.take();
        if buffer.len() < 7 * room {
            buffer = vec![0; 7 * (CHUNK + SLACK)];
        }
        let (at, rest) = buffer.split_at_mut(room);
        let (common, rest) = rest.split_at_mut(room);
        let (words, rest) = rest.split_at_mut(room);
        let (nexts, scratch) = rest.split_at_mut(room);
        let mut from = 0;
        while from < text.len() {
            let to = (from + CHUNK).min(text.len());
            let out = [&mut *at, &mut *common, &mut *words, &mut *nexts];
            let kept = self.candidates(text, (from, to), out, scratch, &mut printable);
            for (&i, &lengths) in at[..kept].iter().zip(&common[..kept]) {
                let i = from + i as usize;
                let w = word_at(text, i) | FOLD;
                let mut lengths = lengths as u16;
                while lengths != 0 {
                    let len = lengths.trailing_zeros() as usize;
                    lengths &= lengths - 1;
                    self.keyed(text, i, w, len, &mut hits);
                }
            }
            from = to;
        }
        BUFFER.set(buffer);
        if hits.is_empty() {
            return (hits, printable);
        }
        // A key's literals can begin before an earlier key's.
        hits.sort_unstable_by_key(|h| (h.start, Reverse(h.end), h.literal));
        hits.dedup_by_key(|h| h.start);
        for hit in &mut hits {
            if let Some(&winner) = self.better[hit.literal]
                .iter()
                .find(|&&j| self.occurs(text, hit.start, j as usize))
            {
                hit.literal = winner as usize;
                hit.end = hit.start + self.literals[hit.literal].len();
            }
        }
        (hits, printable)
    }

    /// Levels 1 and 2 over the positions `from..to` (at most [`CHUNK`]):
    /// the token starts where a key may begin, into `out[0]` as offsets
    /// from `from`, with the lengths of the keys that may begin there (bit
    /// `len`) in `out[1]`; returns how many. The rest of `out` and
    /// `scratch` (three times as long as each of `out`) are work space.
    /// `printable` takes the positions' runs of printable bytes, or learns
    /// that this sieve does not look.
    fn candidates(
        &self,
        text: &[u8],
        (from, to): (usize, usize),
        out: [&mut [u32]; 4],
        scratch: &mut [u32],
        printable: &mut Printable,
    ) -> usize {
        #[cfg(target_arch = "x86_64")]
        if let Some(avx512) = self.avx512 {
            return avx512.candidates(self, text, (from, to), out, scratch, printable);
        }
        let _ = scratch;
        let [at, common, words, nexts] = out;
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = &self.avx2 {
            let out = [&mut *at, &mut *common, words, nexts];
            let n = avx2.sieve(&self.sieve, text, (from, to), out, printable);
            return self.level2(text, from, n, [at, common]);
        }
        *printable = Printable::unknown();
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (words, nexts);
        let n = self.sieve.portable(text, (from, to), [at, common]);
        self.level2(text, from, n, [at, common])
    }

    /// Level 2 one candidate at a time, for the `n` that passed the sieve
    /// (offsets from `from` and their sieve bits): the survivors (about
    /// one in four) are packed in place, their key lengths where their
    /// sieve bits were; returns how many. Level 3 runs on them in a loop
    /// of its own, so the rejections cost no mispredicted branch.
    #[inline]
    fn level2(&self, text: &[u8], from: usize, n: usize, [at, common]: [&mut [u32]; 2]) -> usize {
        let mut kept = 0;
        for k in 0..n {
            let i = at[k];
            let lengths = self.lengths(text, from + i as usize, common[k]);
            at[kept] = i;
            common[kept] = u32::from(lengths);
            kept += usize::from(lengths != 0);
        }
        kept
    }

    /// Level 2 for the token start `i` whose sieve bits are `common`: the
    /// lengths of the keys that may begin there (bit `len`). The lowest
    /// length the sieve let through is hashed without a branch; another
    /// is rare.
    #[inline]
    fn lengths(&self, text: &[u8], i: usize, common: u32) -> u16 {
        let w = word_at(text, i) | FOLD;
        let sieved = lengths_of(common) & self.long_lengths;
        // Bit 15 stands for no length (it is in no set).
        let len = (sieved | 1 << 15).trailing_zeros() as usize;
        let mut lengths = u16::from(has(&self.longs, hash_long(w, len))) << len;
        let mut rest = sieved & sieved.wrapping_sub(1);
        while rest != 0 {
            let len = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            lengths |= u16::from(has(&self.longs, hash_long(w, len))) << len;
        }
        lengths &= sieved;
        lengths | self.short_lengths & 0u16.wrapping_sub(u16::from(self.sieve.short(w)))
    }

    /// The literals keyed on the first `len` bytes of the folded word `w` at
    /// `i` that occur there.
    #[cold]
    fn keyed(&self, text: &[u8], i: usize, w: u64, len: usize, hits: &mut Vec<Hit>) {
        let next = word_at(text, i + len) | FOLD;
        for keyed in self.keys.get(w, len) {
            if next & keyed.next_mask != keyed.next {
                continue;
            }
            let literal = keyed.literal as usize;
            let Some(start) = i.checked_sub(keyed.offset as usize) else {
                continue;
            };
            let end = start + keyed.len as usize;
            if end <= text.len()
                && prefix(word_at(text, start) | FOLD, keyed.len as usize) == keyed.head
                && (keyed.len < 8 || word_at(text, end - 8) | FOLD == keyed.tail)
                && self.occurs(text, start, literal)
            {
                hits.push(Hit {
                    start,
                    end,
                    literal,
                });
            }
        }
    }

    fn occurs(&self, text: &[u8], start: usize, literal: usize) -> bool {
        let literal = &self.literals[literal];
        text.get(start..start + literal.len())
            .is_some_and(|t| t.eq_ignore_ascii_case(literal))
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod x86;
#[cfg(target_arch = "x86_64")]
use avx2::Avx2;
#[cfg(target_arch = "x86_64")]
use x86::Avx512;

#[cfg(test)]
pub(crate) mod tests;
