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
//! 1. a sieve: the first four bytes (letters folded to one case) hashed to
//!    an entry of a table of the long keys' heads, whose bits say which
//!    hashes of the next one to four bytes follow that head in a key (one
//!    byte of bits per key length); and for keys of one to three bytes a
//!    class per byte position (at most eight classes: which first bytes may
//!    go with which second and third). With AVX-512 ([`Avx512`]) a 64-byte
//!    block's token starts are found and packed with their words, and the
//!    entries gathered sixteen starts at a time; elsewhere one start at a
//!    time. Both write the same candidates (tested).
//! 2. whole keys of four to eight bytes hashed with their length into a bit
//!    set, for the lengths the sieve let through, so "update f" of "update
//!    from" rather than the everyday "upda";
//! 3. the key itself in a table that lists the literals keyed on it and at
//!    which offset: each is compared with the text, ignoring ASCII case.
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

/// Bits of the hash of the long keys' first four bytes: the sieve's table
/// has a 32-bit entry per hash (16 KiB: stays in L1 beside the text).
const HEAD_BITS: u32 = 12;
/// Bits of the hashed set of whole keys of four to eight bytes (8 KiB).
const BITS8: u32 = 16;
/// Positions sieved before their candidates are confirmed: the candidates'
/// buffer stays small and the confirming loop runs long enough for the
/// branch predictor.
const CHUNK: usize = 1024;
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
    /// Level 3: the keys, folded, and the literals keyed on each.
    keys: Keys,
    literals: Vec<Box<[u8]>>,
    /// Per literal, the literals that win over it where they occur at the
    /// same start (longer ones that begin with it, or an equal one with a
    /// lower index), in the order they win.
    better: Vec<Box<[u32]>>,
    #[cfg(target_arch = "x86_64")]
    avx512: Option<Avx512>,
}

/// Level 1, what every token start is checked against.
struct Sieve {
    /// Per hash of a long key's first four bytes (folded), the hashes of
    /// what follows them in the keys: the bits of [`tail_bits`] in the
    /// byte of the key's length (5 to 8); all of them for a key of four.
    heads: Box<[u32]>,
    /// The short keys: per byte position, per folded byte (its low seven
    /// bits), the classes whose keys may have it there; a start passes when
    /// one class has all three bytes.
    classes: [[u8; 128]; 3],
}

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

    /// Whether the folded word may begin a key of one to three bytes.
    #[inline]
    fn short(&self, w: u64) -> bool {
        let class = |k: usize| self.classes[k][(w >> (8 * k)) as usize & 0x7F];
        class(0) & class(1) & class(2) != 0
    }

    /// Level 1 one start at a time: the token starts in `from..to` whose
    /// words pass, into `out` (as offsets from `from`, and their
    /// [`Sieve::common`] bits); returns how many.
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
            let mut mask = starts(&window);
            while mask != 0 {
                at[m] = (i - from) as u32 + mask.trailing_zeros();
                m += 1;
                mask &= mask - 1;
            }
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
            n += usize::from((common[n] != 0) | self.short(w));
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
        };
        let mut longs = vec![0; (1 << BITS8) / 64].into_boxed_slice();
        let (mut long_lengths, mut short_lengths) = (0u16, 0u16);
        // Folded key and length -> the literals keyed there.
        let mut keys: Vec<(u64, usize, Vec<Keyed>)> = Vec::new();
        let mut short_firsts: Vec<u8> = Vec::new();
        for (index, literal) in literals.iter().enumerate() {
            let literal = literal.as_ref();
            let (offset, key) = key(literal)?;
            let folded = key_of(key) | FOLD;
            let len = key.len();
            if len >= 4 {
                sieve.heads[head(folded)] |= match len {
                    4 => !0,
                    _ => tail_bits(folded) & (0xFF << (8 * (len - 5))),
                };
                set(&mut longs, hash_long(folded, len));
                long_lengths |= 1 << len;
            } else {
                // Keys with the same first byte share a class (eight at most:
                // more share classes, which only adds candidates).
                let first = folded as u8 & 0x7F;
                let class = short_firsts
                    .iter()
                    .position(|&f| f == first)
                    .unwrap_or_else(|| {
                        short_firsts.push(first);
                        short_firsts.len() - 1
                    });
                let bit = 1 << (class % 8);
                for k in 0..3 {
                    if k < len {
                        sieve.classes[k][usize::from((folded >> (8 * k)) as u8 & 0x7F)] |= bit;
                    } else {
                        // Any byte may follow (a zero past the text's end too).
                        for b in &mut sieve.classes[k] {
                            *b |= bit;
                        }
                    }
                }
                short_lengths |= 1 << len;
            }
            let keyed = Keyed {
                literal: u32::try_from(index).ok()?,
                offset: u32::try_from(offset).ok()?,
                len: u32::try_from(literal.len()).ok()?,
                head: prefix(word_at(literal, 0) | FOLD, literal.len()),
                tail: word_at(literal, literal.len().saturating_sub(8)) | FOLD,
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
        Some(Gate {
            sieve,
            longs,
            long_lengths,
            short_lengths,
            keys: Keys::new(&keys),
            literals,
            better,
            #[cfg(target_arch = "x86_64")]
            avx512: Avx512::detect(),
        })
    }

    /// Every position of `text` where a literal occurs with its key at a
    /// token start, in order, with the longest literal there.
    pub(crate) fn find(&self, text: &[u8]) -> Vec<Hit> {
        let mut hits = Vec::new();
        let room = text.len().min(CHUNK) + SLACK;
        // Kept per thread: zeroing it for each text cost more than the sieve
        // of a short one. (A nested call would find it taken and allocate.)
        let mut buffer = BUFFER.take();
        if buffer.len() < 5 * room {
            buffer = vec![0; 5 * (CHUNK + SLACK)];
        }
        let (at, rest) = buffer.split_at_mut(room);
        let (common, scratch) = rest.split_at_mut(room);
        let mut from = 0;
        while from < text.len() {
            let to = (from + CHUNK).min(text.len());
            let n = self.sieve(text, (from, to), [at, common], scratch);
            for (&i, &common) in at[..n].iter().zip(&common[..n]) {
                self.confirm(text, from + i as usize, common, &mut hits);
            }
            from = to;
        }
        BUFFER.set(buffer);
        if hits.is_empty() {
            return hits;
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
        hits
    }

    /// Level 1 over the positions `from..to` (at most [`CHUNK`]): the token
    /// starts that pass the sieve, into `out` as offsets from `from` with
    /// their [`Sieve::common`] bits; returns how many.
    fn sieve(
        &self,
        text: &[u8],
        (from, to): (usize, usize),
        out: [&mut [u32]; 2],
        scratch: &mut [u32],
    ) -> usize {
        #[cfg(target_arch = "x86_64")]
        if let Some(avx512) = self.avx512 {
            return avx512.sieve(&self.sieve, text, (from, to), out, scratch);
        }
        let _ = scratch;
        self.sieve.portable(text, (from, to), out)
    }

    /// Levels 2 and 3 for token start `i`: the literals keyed there that
    /// occur, into `hits`.
    #[inline]
    fn confirm(&self, text: &[u8], i: usize, common: u32, hits: &mut Vec<Hit>) {
        let w = word_at(text, i) | FOLD;
        // The lengths the sieve let through (mostly one), without a branch
        // per length.
        let mut lengths = 0;
        let mut sieved = lengths_of(common) & self.long_lengths;
        while sieved != 0 {
            let len = sieved.trailing_zeros() as usize;
            sieved &= sieved - 1;
            lengths |= u16::from(has(&self.longs, hash_long(w, len))) << len;
        }
        if self.sieve.short(w) {
            lengths |= self.short_lengths;
        }
        while lengths != 0 {
            let len = lengths.trailing_zeros() as usize;
            lengths &= lengths - 1;
            self.keyed(text, i, w, len, hits);
        }
    }

    /// The literals keyed on the first `len` bytes of the folded word `w` at
    /// `i` that occur there.
    #[cold]
    fn keyed(&self, text: &[u8], i: usize, w: u64, len: usize, hits: &mut Vec<Hit>) {
        for keyed in self.keys.get(w, len) {
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

/// AVX-512 (F, BW, DQ) with the byte permutes and compressions (VBMI,
/// VBMI2) and the bit instructions. Only [`Avx512::detect`] makes one, on a CPU that has
/// them all, so holding one is the proof that code compiled for them may
/// run.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy)]
struct Avx512(());

#[cfg(target_arch = "x86_64")]
impl Avx512 {
    fn detect() -> Option<Avx512> {
        let has = std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vbmi")
            && std::arch::is_x86_feature_detected!("avx512vbmi2")
            && std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("popcnt");
        has.then_some(Avx512(()))
    }

    /// [`Sieve::portable`] 64 positions at a time; `scratch` holds three
    /// times as many words as `out` needs.
    fn sieve(
        self,
        sieve: &Sieve,
        text: &[u8],
        (from, to): (usize, usize),
        [at, common]: [&mut [u32]; 2],
        scratch: &mut [u32],
    ) -> usize {
        let room = to - from + SLACK;
        assert!(to <= text.len() && to - from <= CHUNK);
        assert!(at.len() >= room && common.len() >= room);
        let (offsets, rest) = scratch.split_at_mut(room);
        let (heads, tails) = rest.split_at_mut(room);
        assert!(tails.len() >= room);
        // SAFETY: an `Avx512` exists only on a CPU with the features
        // (`detect`); the bounds are asserted above.
        unsafe {
            x86::sieve(
                sieve,
                text,
                (from, to),
                [at, common],
                [offsets, heads, tails],
            )
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{HEAD_BITS, MUL_HEAD, MUL_TAIL, Sieve, is_letter};

    /// Per group of sixteen token starts `g`, byte `4m + t` picks start
    /// `16g + m` of the packed offsets ...
    const PICK: [[u8; 64]; 4] = {
        let mut pick = [[0; 64]; 4];
        let mut g = 0;
        while g < 4 {
            let mut k = 0;
            while k < 64 {
                pick[g][k] = (16 * g + k / 4) as u8;
                k += 1;
            }
            g += 1;
        }
        pick
    };
    /// ... and adds `t`: the dword of start `16g + m` is its four bytes
    /// (and with four more, the four after them).
    const STEP: [u8; 64] = {
        let mut step = [0; 64];
        let mut k = 0;
        while k < 64 {
            step[k] = (k % 4) as u8;
            k += 1;
        }
        step
    };
    /// Byte `k` is `k + shift`: the block moved `shift` bytes towards its
    /// start, the next block's bytes coming in.
    const fn shifted(shift: usize) -> [u8; 64] {
        let mut idx = [0; 64];
        let mut k = 0;
        while k < 64 {
            idx[k] = (k + shift) as u8;
            k += 1;
        }
        idx
    }
    const IOTA: [u8; 64] = shifted(0);
    const NEXT1: [u8; 64] = shifted(1);
    const NEXT2: [u8; 64] = shifted(2);
    /// Byte `b` (below eight) of each 16-byte lane is `1 << b`.
    const POW2: [u8; 64] = {
        let mut pow = [0; 64];
        let mut k = 0;
        while k < 64 {
            if k % 16 < 8 {
                pow[k] = 1 << (k % 16);
            }
            k += 1;
        }
        pow
    };

    /// The lowest `n` bits (`n` up to 64).
    fn low_bits(n: usize) -> u64 {
        if n >= 64 { !0 } else { (1 << n) - 1 }
    }

    /// # Safety
    /// The CPU has the features enabled here; `to <= text.len()`,
    /// `to - from <= CHUNK` and `at`, `common`, `offsets`, `heads` and
    /// `tails` are each at least `to - from + SLACK` long.
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vbmi,avx512vbmi2,bmi1,bmi2,popcnt")]
    pub(super) unsafe fn sieve(
        sieve: &Sieve,
        text: &[u8],
        (from, to): (usize, usize),
        [at, common]: [&mut [u32]; 2],
        [offsets, heads, tails]: [&mut [u32]; 3],
    ) -> usize {
        let load = |bytes: &[u8; 64]| {
            // SAFETY: 64 readable bytes, unaligned load.
            unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
        };
        let classes = sieve.classes.map(|c| {
            let (lo, hi) = c.split_at(64);
            (
                load(lo.try_into().expect("64")),
                load(hi.try_into().expect("64")),
            )
        });
        let (pick, step) = (PICK.map(|p| load(&p)), load(&STEP));
        let (iota, next1, next2) = (load(&IOTA), load(&NEXT1), load(&NEXT2));
        let pow2 = load(&POW2);
        let fold = _mm512_set1_epi8(0x20);
        let ptr = text.as_ptr();

        // The token starts, packed: each one's offset from `from` (with the
        // top bit set when it may begin a short key), its first four bytes
        // and the four after them (folded).
        let mut m = 0;
        let mut b = from;
        while b < to {
            // This block and the seven bytes after it; zeros past the text.
            let avail = text.len() - b;
            // SAFETY: the masks cover only bytes of the text (masked-off
            // bytes are not read, so the addresses may pass its end).
            let (lo, hi) = unsafe {
                (
                    _mm512_maskz_loadu_epi8(low_bits(avail), ptr.wrapping_add(b).cast()),
                    _mm512_maskz_loadu_epi8(
                        low_bits(avail.saturating_sub(64).min(7)),
                        ptr.wrapping_add(b + 64).cast(),
                    ),
                )
            };
            let f = _mm512_or_si512(lo, fold);
            let fhi = _mm512_or_si512(hi, fold);
            let below = |x: __m512i, lo: u8, len: u8| {
                _mm512_cmplt_epu8_mask(
                    _mm512_sub_epi8(x, _mm512_set1_epi8(lo as i8)),
                    _mm512_set1_epi8(len as i8),
                )
            };
            let letters = below(f, b'a', 26);
            let marks = below(lo, b'!', 94) & !letters & !below(lo, b'0', 10);
            let high = _mm512_cmpge_epu8_mask(lo, _mm512_set1_epi8(0xC0_u8 as i8));
            let after_letter = (letters << 1) | u64::from(b > 0 && is_letter(text[b - 1]));
            let starts = ((letters & !after_letter) | marks | high) & low_bits(to - b);

            // Short keys: the classes of the byte at each position and of
            // the two after it.
            let class =
                |k: usize, x: __m512i| _mm512_permutex2var_epi8(classes[k].0, x, classes[k].1);
            let f1 = _mm512_permutex2var_epi8(f, next1, fhi);
            let f2 = _mm512_permutex2var_epi8(f, next2, fhi);
            let common =
                _mm512_and_si512(_mm512_and_si512(class(0, f), class(1, f1)), class(2, f2));
            let short = _pext_u64(_mm512_test_epi8_mask(common, common) & starts, starts);

            let packed = _mm512_maskz_compress_epi8(starts, iota);
            let count = starts.count_ones() as usize;
            let base = _mm512_set1_epi32((b - from) as i32);
            // Prose has about twelve starts a block: mostly one group.
            let groups = count.div_ceil(16);
            for (g, &pick) in pick.iter().enumerate().take(groups) {
                // Four byte indexes per start: its first four bytes, and
                // with four added the next four.
                let idx = _mm512_add_epi8(_mm512_permutexvar_epi8(pick, packed), step);
                let word = _mm512_permutex2var_epi8(f, idx, fhi);
                let tail =
                    _mm512_permutex2var_epi8(f, _mm512_add_epi8(idx, _mm512_set1_epi8(4)), fhi);
                let offset = _mm512_add_epi32(_mm512_and_si512(idx, _mm512_set1_epi32(0xFF)), base);
                let offset = _mm512_mask_or_epi32(
                    offset,
                    (short >> (16 * g)) as u16,
                    offset,
                    _mm512_set1_epi32(i32::MIN),
                );
                // SAFETY: `m + 16 * g + 16` is at most the positions before
                // this block plus 64, within the buffers (SLACK).
                unsafe {
                    _mm512_storeu_si512(offsets.as_mut_ptr().add(m + 16 * g).cast(), offset);
                    _mm512_storeu_si512(heads.as_mut_ptr().add(m + 16 * g).cast(), word);
                    _mm512_storeu_si512(tails.as_mut_ptr().add(m + 16 * g).cast(), tail);
                }
            }
            m += count;
            b += 64;
        }

        // The sieve's entry for each, sixteen at a time.
        let table: *const i32 = sieve.heads.as_ptr().cast();
        let mut n = 0;
        let mut k = 0;
        while k < m {
            let lanes = low_bits(m - k) as u16;
            // SAFETY: sixteen lanes from `k < m` are within the buffers
            // (SLACK); every gathered index is below 2^HEAD_BITS, within
            // the table; sixteen lanes from `n <= k` fit in `at` and
            // `common`.
            unsafe {
                let offset = _mm512_loadu_si512(offsets.as_ptr().add(k).cast());
                let word = _mm512_loadu_si512(heads.as_ptr().add(k).cast());
                let tail = _mm512_loadu_si512(tails.as_ptr().add(k).cast());
                let head = _mm512_srli_epi32::<{ 32 - HEAD_BITS }>(_mm512_mullo_epi32(
                    word,
                    _mm512_set1_epi32(MUL_HEAD as i32),
                ));
                let entry =
                    _mm512_mask_i32gather_epi32::<4>(_mm512_setzero_si512(), lanes, head, table);
                // Per byte `k` of the tail's product, its top three bits
                // as one bit of the byte (`tail_bits`).
                let product = _mm512_mullo_epi32(tail, _mm512_set1_epi32(MUL_TAIL as i32));
                let three = _mm512_and_si512(
                    _mm512_srli_epi32::<5>(product),
                    _mm512_set1_epi32(0x0707_0707),
                );
                let tail_bits = _mm512_shuffle_epi8(pow2, three);
                let both = _mm512_and_si512(entry, tail_bits);
                let pass =
                    (_mm512_test_epi32_mask(both, both) | _mm512_movepi32_mask(offset)) & lanes;
                _mm512_storeu_si512(
                    at.as_mut_ptr().add(n).cast(),
                    _mm512_maskz_compress_epi32(
                        pass,
                        _mm512_and_si512(offset, _mm512_set1_epi32(i32::MAX)),
                    ),
                );
                _mm512_storeu_si512(
                    common.as_mut_ptr().add(n).cast(),
                    _mm512_maskz_compress_epi32(pass, both),
                );
                n += pass.count_ones() as usize;
            }
            k += 16;
        }
        n
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use aho_corasick::{AhoCorasick, Input, MatchKind};
    use proptest::prelude::*;

    /// What the gate must find, from the literals alone: the hits of a
    /// leftmost-longest automaton over the whole text, resumed one byte
    /// after each hit's start, where a literal occurs with its key at a
    /// token start.
    pub(crate) struct Oracle {
        literals: Vec<Box<[u8]>>,
        automaton: AhoCorasick,
        gate: Gate,
        /// The same gate sieving one start at a time.
        portable: Gate,
    }

    impl Oracle {
        pub(crate) fn new<S: AsRef<[u8]>>(literals: &[S]) -> Oracle {
            let gate = Gate::new(literals).expect("gate");
            #[allow(unused_mut)]
            let mut portable = Gate::new(literals).expect("gate");
            #[cfg(target_arch = "x86_64")]
            {
                portable.avx512 = None;
            }
            Oracle {
                literals: literals.iter().map(|l| l.as_ref().into()).collect(),
                automaton: AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(literals)
                    .expect("automaton"),
                gate,
                portable,
            }
        }

        /// The oracle of `gate`'s literals.
        pub(crate) fn of(gate: &Gate) -> Oracle {
            Oracle::new(&gate.literals)
        }

        fn want(&self, text: &[u8]) -> Vec<Hit> {
            let mut hits = Vec::new();
            let mut from = 0;
            while let Some(m) = self.automaton.find(Input::new(text).range(from..)) {
                from = m.start() + 1;
                if self.keyed_at(text, m.start()) {
                    hits.push(Hit {
                        start: m.start(),
                        end: m.end(),
                        literal: m.pattern().as_usize(),
                    });
                }
            }
            hits
        }

        /// Whether a literal occurs at `start` with its key at a token start.
        fn keyed_at(&self, text: &[u8], start: usize) -> bool {
            self.literals.iter().any(|literal| {
                let (offset, _) = key(literal).expect("a key");
                let at = start + offset;
                let occurs = text
                    .get(start..start + literal.len())
                    .is_some_and(|t| t.eq_ignore_ascii_case(literal));
                occurs && starts_token(if at == 0 { b' ' } else { text[at - 1] }, text[at])
            })
        }

        /// The gate finds what it must, with the vector sieve and without.
        #[track_caller]
        pub(crate) fn assert_exact(&self, text: &[u8]) {
            let want = self.want(text);
            let shown = || String::from_utf8_lossy(text).into_owned();
            assert_eq!(self.gate.find(text), want, "text: {}", shown());
            assert_eq!(
                self.portable.find(text),
                want,
                "portable; text: {}",
                shown()
            );
        }
    }

    #[track_caller]
    fn assert_exact<S: AsRef<[u8]>>(literals: &[S], text: &[u8]) {
        Oracle::new(literals).assert_exact(text);
    }

    /// The sieve's candidates (positions and common bits), by every way
    /// this CPU has, for every chunk.
    fn sieved(gate: &Gate, text: &[u8]) -> Vec<Vec<(u32, u32)>> {
        let mut ways = Vec::new();
        let mut at = vec![0; CHUNK + SLACK];
        let mut common = vec![0; CHUNK + SLACK];
        let mut portable = Vec::new();
        let mut from = 0;
        while from < text.len() {
            let to = (from + CHUNK).min(text.len());
            let n = gate
                .sieve
                .portable(text, (from, to), [&mut at, &mut common]);
            portable.extend((0..n).map(|k| (at[k] + from as u32, common[k])));
            from = to;
        }
        ways.push(portable);
        #[cfg(target_arch = "x86_64")]
        if let Some(avx512) = Avx512::detect() {
            let mut vector = Vec::new();
            let mut scratch = vec![0; 3 * (CHUNK + SLACK)];
            let mut from = 0;
            while from < text.len() {
                let to = (from + CHUNK).min(text.len());
                let out = [&mut at[..], &mut common[..]];
                let n = avx512.sieve(&gate.sieve, text, (from, to), out, &mut scratch);
                vector.extend((0..n).map(|k| (at[k] + from as u32, common[k])));
                from = to;
            }
            ways.push(vector);
        }
        ways
    }

    #[track_caller]
    fn assert_sieves_agree(gate: &Gate, text: &[u8]) {
        let ways = sieved(gate, text);
        for way in &ways[1..] {
            assert_eq!(way, &ways[0], "text: {:?}", String::from_utf8_lossy(text));
        }
    }

    const LITERALS: &[&str] = &[
        "ignore previous",
        "ignore",
        "<|",
        "what",
        "dan",
        "\"}",
        "orders from",
        "new orders from",
        "n't follow",
        "système",
        "@",
        "![",
        "ai:",
        "summarizing this",
        "summarizing the",
        "without customer",
        "a b c d e qzxjvkwy",
        "b c",
    ];

    #[test]
    fn hits_are_the_automatons_where_a_key_starts_a_token() {
        let oracle = Oracle::new(LITERALS);
        for text in [
            "we should IGNORE PREVIOUS advice, then What? and <|im_start|> for a few",
            "new orders from the top; take Orders From nobody; don't follow them",
            "le Système and Dan, dan, abundant, sedan. ai: hi <| |> mail@x ![a](b)",
            "summarizing these and summarizing this, without customers, customer",
            "a b c d e qzxjvkwy and a b c",
            "ignore ignore previous ignoreprevious xignore previous",
            "",
            "@",
            "dan",
        ] {
            oracle.assert_exact(text.as_bytes());
        }
    }

    /// Literals at every offset around the 64-byte blocks, the chunks and
    /// the text's ends.
    #[test]
    fn literals_anywhere_are_found() {
        let oracle = Oracle::new(LITERALS);
        for needle in [
            "dan",
            "ignore",
            "\"}",
            "<|",
            "@",
            "summarizing the",
            "système",
        ] {
            for at in (0..140).chain(CHUNK - 70..CHUNK + 10) {
                for tail in [0, 1, 5] {
                    let mut text = "x".repeat(at);
                    if at > 0 {
                        text.pop();
                        text.push(' ');
                    }
                    text.push_str(needle);
                    text.push_str(&" y".repeat(tail));
                    let hits = oracle.gate.find(text.as_bytes());
                    assert!(
                        hits.iter().any(|h| h.start == at),
                        "{needle} at {at}: {hits:?}"
                    );
                    oracle.assert_exact(text.as_bytes());
                }
            }
        }
    }

    /// Where literals that are equal but for case occur, the automaton
    /// reports the first; so does the gate.
    #[test]
    fn equal_literals_report_the_first() {
        assert_exact(&["Dan", "dan", "DAN is", "dan is"], b"so dan is here, DAN");
    }

    #[test]
    fn prose_without_the_keys_has_no_hit() {
        let gate = Gate::new(&["ignore", "<|", "orders from"]).expect("gate");
        for text in [
            "the report is due on friday, shipped from the warehouse",
            "",
            "g",
        ] {
            assert!(gate.find(text.as_bytes()).is_empty(), "{text}");
        }
    }

    #[test]
    fn a_literal_without_a_key_disables_the_gate() {
        assert!(Gate::new(&["ab", "  "]).is_none());
        assert!(Gate::new(&["ab", "9"]).is_none());
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

    /// Every byte value at every offset of a block, before and after
    /// letters, at the text's end and across chunks.
    #[test]
    fn the_sieves_agree_on_every_byte_everywhere() {
        let gate = Gate::new(LITERALS).expect("gate");
        for len in (0..200).chain([CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 67]) {
            for seed in 0..4_usize {
                let text: Vec<u8> = (0..len)
                    .map(|i| {
                        let x = (i * 37 + seed * 101) ^ (i >> 3);
                        if x % 3 == 0 {
                            b"ig<|\"}@da!`"[x % 11]
                        } else {
                            x as u8
                        }
                    })
                    .collect();
                assert_sieves_agree(&gate, &text);
            }
        }
    }

    fn texts() -> impl Strategy<Value = Vec<u8>> {
        let pieces = prop_oneof![
            proptest::sample::select(LITERALS.to_vec()).prop_map(|s| s.as_bytes().to_vec()),
            proptest::sample::select(vec![
                " ",
                "x",
                "Ignore",
                "DAN",
                "an",
                "'",
                "<",
                "|",
                "\n",
                "é",
                "summarizing ",
                "orders",
            ])
            .prop_map(|s| s.as_bytes().to_vec()),
            proptest::collection::vec(proptest::num::u8::ANY, 1..4),
        ];
        proptest::collection::vec(pieces, 0..80).prop_map(|p| p.concat())
    }

    proptest! {
        #[test]
        fn random_texts_hit_as_the_automaton(text in texts()) {
            thread_local! {
                static ORACLE: Oracle = Oracle::new(LITERALS);
            }
            ORACLE.with(|oracle| oracle.assert_exact(&text));
        }

        #[test]
        fn random_texts_sieve_alike(text in texts()) {
            thread_local! {
                static GATE: Gate = Gate::new(LITERALS).expect("gate");
            }
            GATE.with(|gate| assert_sieves_agree(gate, &text));
        }
    }
}
