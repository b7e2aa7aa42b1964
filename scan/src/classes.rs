//! Byte-class bitmasks: which bytes of a 64-byte block are digits, `@`,
//! letters or digits, number separators, capitals, colons or dots, one bit
//! per byte. The engine finds where to stop and how far a run goes with bit
//! operations on these masks instead of byte loops, whose exits the branch
//! predictor cannot learn on real text (a digit run, a word: every length
//! differs).
//!
//! A block is classified with AVX-512 VBMI and GFNI where the CPU has them
//! (a table lookup per byte and a bit transpose: [`Vbmi`]), else with
//! AVX-512BW or AVX2 (each checked at run time: [`Avx2::detect`]), else
//! with SSE2 on x86-64 (every x86-64 CPU has it) and byte by byte
//! elsewhere; all agree on every byte (tested). The engine's class scan is
//! compiled once per way ([`Classify`]), so each way is inlined into a scan
//! loop compiled for it: seven classes made classifying a third of the
//! scan, and one call per engine scan to pick the loop costs next to
//! nothing. The VBMI way's loop takes eight blocks at a time, the masks of
//! each in a lane of a vector ([`eight`]).

use super::chars::{is_alnum, is_digit, run_end};

#[cfg(target_arch = "x86_64")]
pub(crate) mod eight;

/// Block length in bytes: one bit of a `u64` per byte.
pub(crate) const BLOCK: usize = 64;

/// The classes of one block; bit `i` is byte `i`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Block {
    pub digit: u64,
    pub at: u64,
    pub alnum: u64,
    /// `' '`, `-`, `.`, `/`, `(` and `)`: what numbers are written with
    /// (the slash after a German area code: `030/1234567`).
    pub sep: u64,
    /// `A`-`Z`, `:` and `.`: what tells a digit run that may start a value
    /// ([`Pair::may_hold_values`]).
    pub upper: u64,
    pub colon: u64,
    pub dot: u64,
}

const fn is_sep(b: u8) -> bool {
    matches!(b, b' ' | b'-' | b'.' | b'/' | b'(' | b')')
}

/// A way to classify blocks.
pub(crate) trait Classify: Copy + 'static {
    fn block(self, bytes: &[u8; BLOCK]) -> Block;

    /// Whether the loop compiled for this way has `popcnt`.
    fn has_popcnt(self) -> bool {
        false
    }
}

/// What every CPU of the target can do: SSE2 on x86-64, byte by byte
/// elsewhere.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Baseline;

impl Classify for Baseline {
    #[inline(always)]
    fn block(self, bytes: &[u8; BLOCK]) -> Block {
        #[cfg(target_arch = "x86_64")]
        return x86::sse2(bytes);
        #[cfg(not(target_arch = "x86_64"))]
        portable(bytes)
    }
}

/// AVX2, with the bit instructions that come with it (BMI1, BMI2, POPCNT,
/// LZCNT). Only [`Avx2::detect`] makes one, on a CPU that has them all, so
/// holding one is the proof that code compiled for them may run.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Avx2(());

#[cfg(target_arch = "x86_64")]
impl Avx2 {
    /// An `Avx2` when this CPU has the features (the answer is cached by
    /// `std`: one load after the first call). The list is the engine's
    /// `target_feature` list for its AVX2 loop.
    #[inline]
    pub(crate) fn detect() -> Option<Avx2> {
        let has = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("bmi1")
            && std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("popcnt")
            && std::arch::is_x86_feature_detected!("lzcnt");
        has.then_some(Avx2(()))
    }
}

/// AVX-512BW (with AVX2 and the bit instructions [`Avx2`] holds): a
/// block in one load, each class a mask register. Only [`Avx512::detect`]
/// makes one.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Avx512(());

#[cfg(target_arch = "x86_64")]
impl Avx512 {
    /// An `Avx512` when this CPU has the features: the engine's
    /// `target_feature` list for its AVX-512 loop.
    #[inline]
    pub(crate) fn detect() -> Option<Avx512> {
        let has = Avx2::detect().is_some()
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw");
        has.then_some(Avx512(()))
    }
}

/// AVX-512 VBMI and GFNI (with everything [`Avx512`] holds): a block's
/// seven classes from one table lookup per byte and a bit transpose, in
/// six vector instructions and one store, where [`Avx512`] needs a compare
/// and a move out of the vector unit per class. With VBMI2's funnel shifts
/// and VPOPCNTDQ too, for the class scan eight blocks at a time
/// ([`eight`]). Only [`Vbmi::detect`] makes one.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vbmi(());

#[cfg(target_arch = "x86_64")]
impl Vbmi {
    /// A `Vbmi` when this CPU has the features: the engine's
    /// `target_feature` list for its VBMI loop.
    #[inline]
    pub(crate) fn detect() -> Option<Vbmi> {
        let has = Avx512::detect().is_some()
            && std::arch::is_x86_feature_detected!("avx512vbmi")
            && std::arch::is_x86_feature_detected!("gfni")
            && std::arch::is_x86_feature_detected!("avx512vbmi2")
            && std::arch::is_x86_feature_detected!("avx512vpopcntdq");
        has.then_some(Vbmi(()))
    }
}

#[cfg(target_arch = "x86_64")]
impl Classify for Vbmi {
    #[inline(always)]
    fn block(self, bytes: &[u8; BLOCK]) -> Block {
        // SAFETY: a `Vbmi` exists only on a CPU with AVX-512 VBMI and GFNI
        // (`detect`).
        unsafe { x86::vbmi(bytes) }
    }

    fn has_popcnt(self) -> bool {
        true
    }
}

#[cfg(target_arch = "x86_64")]
impl Classify for Avx512 {
    #[inline(always)]
    fn block(self, bytes: &[u8; BLOCK]) -> Block {
        // SAFETY: an `Avx512` exists only on a CPU with AVX-512BW (`detect`).
        unsafe { x86::avx512(bytes) }
    }

    fn has_popcnt(self) -> bool {
        true
    }
}

#[cfg(target_arch = "x86_64")]
impl Classify for Avx2 {
    #[inline(always)]
    fn block(self, bytes: &[u8; BLOCK]) -> Block {
        // SAFETY: an `Avx2` exists only on a CPU with AVX2 (`detect`).
        unsafe { x86::avx2(bytes) }
    }

    fn has_popcnt(self) -> bool {
        true
    }
}

/// The block of `text` from `start`; bytes past the end are zero, which is
/// in no class (as [`super::chars::at`] reads them).
#[inline(always)]
fn classify_at(how: impl Classify, text: &[u8], start: usize) -> Block {
    block_at(text, start, |bytes| how.block(bytes), Block::shifted)
}

/// `classify` of the 64 bytes of `text` from `start`, the bytes past its end
/// read as zeros: `shift(c, k)` must give the classes of the bytes from `k`
/// on of a block classified as `c`, with zeros shifted in, and a zero byte
/// must be in no class (`T::default()`). The text's own bytes are read
/// where it has 64 from `start`, or its last 64 and a shift; a padded copy
/// only for a text shorter than a block (a copy per stretch was a tenth of
/// the PII scan).
#[inline(always)]
pub(crate) fn block_at<T: Default>(
    text: &[u8],
    start: usize,
    classify: impl Fn(&[u8; BLOCK]) -> T,
    shift: impl Fn(T, usize) -> T,
) -> T {
    if let Some(bytes) = text.get(start..start + BLOCK) {
        return classify(bytes.try_into().expect("BLOCK bytes"));
    }
    if start >= text.len() {
        // The block after the last of a short stretch: no need to look.
        return T::default();
    }
    match text.len().checked_sub(BLOCK) {
        Some(last) => shift(
            classify(text[last..].try_into().expect("BLOCK bytes")),
            start - last,
        ),
        None => classify(&padded(&text[start..])),
    }
}

/// `tail` followed by zeros. Kept out of line: inlined, the copy was
/// turned into a byte-by-byte shuffle.
#[inline(never)]
fn padded(tail: &[u8]) -> [u8; BLOCK] {
    let mut padded = [0u8; BLOCK];
    padded[..tail.len()].copy_from_slice(tail);
    padded
}

impl Block {
    /// `a`-`z`: the ASCII letters that are not capitals.
    #[inline(always)]
    fn lower(&self) -> u64 {
        self.alnum & !(self.digit | self.upper)
    }

    /// The classes of the bytes from `k` on (`k < 64`): bytes shifted in
    /// at the end are in no class.
    #[inline(always)]
    fn shifted(self, k: usize) -> Block {
        Block {
            digit: self.digit >> k,
            at: self.at >> k,
            alnum: self.alnum >> k,
            sep: self.sep >> k,
            upper: self.upper >> k,
            colon: self.colon >> k,
            dot: self.dot >> k,
        }
    }
}

/// Byte by byte: the reference the vector variants are tested against.
#[cfg_attr(target_arch = "x86_64", allow(dead_code, reason = "tests only"))]
fn portable(bytes: &[u8; BLOCK]) -> Block {
    let mut out = Block::default();
    for (i, &b) in bytes.iter().enumerate() {
        let bit = 1u64 << i;
        let set = |mask: &mut u64, yes: bool| *mask |= if yes { bit } else { 0 };
        set(&mut out.digit, is_digit(b));
        set(&mut out.at, b == b'@');
        set(&mut out.alnum, is_alnum(b));
        set(&mut out.sep, is_sep(b));
        set(&mut out.upper, b.is_ascii_uppercase());
        set(&mut out.colon, b == b':');
        set(&mut out.dot, b == b'.');
    }
    out
}

/// A block and the one after it, so a run that starts in the first is
/// measured with bit operations most of the time.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pair {
    /// Where the first block starts in the text.
    pub base: usize,
    pub lo: Block,
    pub hi: Block,
}

impl Pair {
    #[inline(always)]
    fn bits(&self, class: impl Fn(&Block) -> u64) -> u128 {
        u128::from(class(&self.lo)) | u128::from(class(&self.hi)) << BLOCK
    }

    /// The bits of the first block at or after `pos` in the text.
    #[inline(always)]
    pub(crate) fn from(&self, pos: usize) -> u64 {
        match pos.checked_sub(self.base) {
            None => u64::MAX,
            Some(k) if k < BLOCK => u64::MAX << k,
            Some(_) => 0,
        }
    }

    /// End of the run of `class` bytes of `text` from `from` (in the first
    /// block); `scalar` is the same class, for a run past the second.
    #[inline(always)]
    pub(crate) fn run_end(
        &self,
        text: &[u8],
        from: usize,
        class: impl Fn(&Block) -> u64,
        scalar: impl Fn(u8) -> bool,
    ) -> usize {
        let offset = from - self.base;
        debug_assert!(offset < BLOCK);
        // Past the shift the bits are zero, so the run stops there at the
        // latest: then it may go on beyond the pair.
        let len = (!(self.bits(class) >> offset)).trailing_zeros() as usize;
        let pair_end = self.base + 2 * BLOCK;
        if from + len < pair_end {
            return from + len;
        }
        run_end(text, pair_end, usize::MAX, scalar)
    }

    /// How many digits the number-like token at `start` (in the first
    /// block) holds: digits and separators, up to 24 bytes.
    /// `how` is the way the pair was classified, with whose instructions
    /// the loop is compiled.
    #[inline(always)]
    pub(crate) fn digits_ahead(&self, how: impl Classify, start: usize) -> usize {
        let offset = start - self.base;
        debug_assert!(offset < BLOCK);
        let token = self.bits(|b| b.digit | b.sep) >> offset;
        let len = (!token).trailing_zeros().min(24);
        let digits = (self.bits(|b| b.digit) >> offset) as u32 & ((1u32 << len) - 1);
        if how.has_popcnt() {
            digits.count_ones() as usize
        } else {
            count_ones_24(digits)
        }
    }

    /// The bytes of the first block that the numeric validators may start
    /// a value at, given `before`, the block before it (all zero at the
    /// start): a superset, tested, of the digits where the engine's exact
    /// tests (`Prospects`) pass. Most numbers in prose ("in 2023", "53.4%")
    /// fail all three tests below, and are then passed by without looking
    /// at a byte of them.
    ///
    /// A digit at `p` may start a value when it has
    /// - two capitals just before it (an IBAN's country), or two small
    ///   letters at a word's start and a digit after it (a lower-case
    ///   IBAN's country and check digits: `gb82west…`, `mt84 jlsn …`), or
    /// - a colon within four bytes before it or seven after (an IPv6 group:
    ///   the run is at most four digits and the colon within four bytes
    ///   of either end), where `v6` (an address may be in reach:
    ///   [`Pair::may_hold_v6`]), or
    /// - a run of digits and separators from it at least eight bytes long
    ///   (eight digits: phone, SSN, card), or seven digits and dots with a
    ///   dot one to three bytes on (IPv4: `1.2.3.4` at the shortest, one
    ///   to three digits before a dot).
    #[inline(always)]
    pub(crate) fn may_hold_values(&self, before: &Block, v6: bool) -> u64 {
        // The lookbehind tests see the previous block in the low half.
        let behind = |class: fn(&Block) -> u64| -> u128 {
            u128::from(class(before)) | u128::from(class(&self.lo)) << BLOCK
        };
        let upper = behind(|b| b.upper);
        let capitals = (upper << 1 & upper << 2) >> BLOCK;
        let lower = behind(Block::lower);
        let word_start = !(behind(|b| b.alnum) << 3);
        let small_country = (lower << 1 & lower << 2 & word_start) >> BLOCK;
        let lower_iban = small_country & self.bits(|b| b.digit) >> 1;
        let mut may = capitals | lower_iban;
        if v6 {
            let colon = behind(|b| b.colon);
            let colon_before = colon << 1 | colon << 2;
            may |= (colon_before | colon_before << 2) >> BLOCK;
            // The lookahead tests see the next block in the high half.
            let colon = self.bits(|b| b.colon);
            let colon_after = colon >> 1 | colon >> 2;
            let colon_after = colon_after | colon_after >> 2;
            may |= colon_after | colon_after >> 3;
        }
        let run = self.bits(|b| b.digit | b.sep);
        let run2 = run & run >> 1;
        let run4 = run2 & run2 >> 2;
        let run8 = run4 & run4 >> 4;
        let dot = self.bits(|b| b.dot);
        let dot_soon = dot >> 1 | dot >> 2 | dot >> 3;
        // Seven digits and dots: the shortest address, `1.2.3.4`.
        let dotted = self.bits(|b| b.digit | b.dot);
        let dotted2 = dotted & dotted >> 1;
        let dotted4 = dotted2 & dotted2 >> 2;
        let dotted7 = dotted4 & dotted4 >> 3;
        (may | run8 | dotted7 & dot_soon) as u64
    }

    /// `words & self.may_hold_values(before, v6)`, the first digits of
    /// the first block that may start a value, with a cheaper test first:
    /// the digits of most blocks of prose ("in 2023 we", "53.4% of") have
    /// no two capitals nor a small letter before them, and no digit or
    /// separator three and six bytes on, which each value but an IPv6
    /// address has (eight digits and separators, seven digits and dots).
    /// Only the blocks with a digit that passes it pay for the exact masks.
    #[inline(always)]
    pub(crate) fn values_in(&self, words: u64, before: &Block, v6: bool) -> u64 {
        if !v6 {
            let run = self.bits(|b| b.digit | b.sep);
            let probe = (run >> 3 & run >> 6) as u64;
            // Capitals one and two bytes before, the block before's too.
            let (upper, behind) = (self.lo.upper, before.upper);
            let capitals =
                (upper << 1 | behind >> (BLOCK - 1)) & (upper << 2 | behind >> (BLOCK - 2));
            // A small letter just before: a lower-case IBAN's country.
            let small = self.lo.lower() << 1 | before.lower() >> (BLOCK - 1);
            if words & (probe | capitals | small) == 0 {
                return 0;
            }
        }
        words & self.may_hold_values(before, v6)
    }

    /// Whether an IPv6 address may be read at a digit of the first block,
    /// given `before`, the block before the pair (all zero at the start):
    /// false only where the address reader
    /// ([`ip::v6_around`](super::detect::ip::v6_around)) surely finds none
    /// (tested). What it reads from a digit is within 45 bytes either side,
    /// so within the three blocks, and every text form of an address holds
    /// `::`, or six colons or more each between two letters or digits (six
    /// groups and an IPv4 tail, or eight groups).
    ///
    /// Times, JSON keys and `step 3: done` have colons, but seldom six
    /// between letters or digits in 190 bytes: the digits next to them,
    /// which the reader's byte loops looked at one by one (a fifth of the
    /// PII scan of an LLM-API body), are then no stops.
    #[inline(always)]
    pub(crate) fn may_hold_v6(&self, before: &Block) -> bool {
        let (b, lo, hi) = (before, &self.lo, &self.hi);
        if b.colon | lo.colon | hi.colon == 0 {
            return false;
        }
        // Colons between two letters or digits, and the first of two
        // colons; those at the three blocks' two ends are left out (out of
        // reach of the first block anyway).
        let flanked = |colon: u64, alnum: u64, prev_last: u64, next_first: u64| {
            colon
                & (alnum << 1 | prev_last >> (BLOCK - 1))
                & (alnum >> 1 | next_first << (BLOCK - 1))
        };
        let double = |colon: u64, next_first: u64| colon & (colon >> 1 | next_first << (BLOCK - 1));
        let doubles = double(b.colon, lo.colon) | double(lo.colon, hi.colon) | double(hi.colon, 0);
        let flanked = flanked(b.colon, b.alnum, 0, lo.alnum).count_ones()
            + flanked(lo.colon, lo.alnum, b.alnum, hi.alnum).count_ones()
            + flanked(hi.colon, hi.alnum, lo.alnum, 0).count_ones();
        doubles != 0 || flanked >= 6
    }
}

/// Bits set in `x` (below bit 24) by table: baseline x86-64 has no
/// `popcnt`, and the arithmetic fallback was a twentieth of the scan.
fn count_ones_24(x: u32) -> usize {
    const TABLE: [u8; 256] = {
        let mut t = [0u8; 256];
        let mut i = 0;
        while i < 256 {
            t[i] = (i as u32).count_ones() as u8;
            i += 1;
        }
        t
    };
    let [a, b, c, _] = x.to_le_bytes();
    usize::from(TABLE[usize::from(a)] + TABLE[usize::from(b)] + TABLE[usize::from(c)])
}

/// The pairs of `text`, one per block, classified `how`. Each block is
/// classified two blocks ahead of the pair it is first in: the scan
/// mispredicts a branch at about every other block, and the classes of a
/// block classified after that branch were waited for.
#[inline(always)]
pub(crate) fn pairs(how: impl Classify, text: &[u8]) -> impl Iterator<Item = Pair> + '_ {
    let mut ahead = [classify_at(how, text, 0), classify_at(how, text, BLOCK)];
    (0..text.len()).step_by(BLOCK).map(move |base| {
        let [lo, hi] = ahead;
        ahead = [hi, classify_at(how, text, base + 2 * BLOCK)];
        Pair { base, lo, hi }
    })
}

/// Finds the first digit of every word (run of letters and digits), block
/// after block: where a scan that skips a word once it has looked at its
/// first digit stops.
///
/// Adding a bit at the start of each word to the mask of its letters
/// carries through the letters and lands on the word's first digit (or on
/// the byte after the word): one addition for a whole block, with the carry
/// passed on to the next block when a word goes on.
#[derive(Debug, Default)]
pub(crate) struct FirstDigits {
    /// Whether the last byte of the previous block was in a word.
    in_word: bool,
    carry: bool,
}

impl FirstDigits {
    /// The first digits in `block`, which follows the previous one.
    #[inline(always)]
    pub(crate) fn next(&mut self, block: &Block) -> u64 {
        let letters = block.alnum & !block.digit;
        let starts = block.alnum & !(block.alnum << 1 | u64::from(self.in_word));
        let (sum, over) = letters.overflowing_add(starts);
        let (sum, carried) = sum.overflowing_add(u64::from(self.carry));
        self.carry = over | carried;
        self.in_word = block.alnum >> (BLOCK - 1) != 0;
        block.digit & sum
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{BLOCK, Block};

    /// The bit of each class in a byte of [`CLASS_BITS`], in the order of the
    /// fields of [`Block`].
    const DIGIT: u8 = 1;
    const AT: u8 = 1 << 1;
    const ALNUM: u8 = 1 << 2;
    const SEP: u8 = 1 << 3;
    const UPPER: u8 = 1 << 4;
    const COLON: u8 = 1 << 5;
    const DOT: u8 = 1 << 6;

    /// The classes of each ASCII byte, one bit each (the lookup table of the
    /// VBMI way; bytes from 128 are in no class).
    const CLASS_BITS: [u8; 128] = {
        let mut t = [0u8; 128];
        let mut i = 0;
        while i < 128 {
            let b = i as u8;
            const fn bit(yes: bool, bit: u8) -> u8 {
                if yes { bit } else { 0 }
            }
            t[i] = bit(b.is_ascii_digit(), DIGIT)
                | bit(b == b'@', AT)
                | bit(b.is_ascii_alphanumeric(), ALNUM)
                | bit(super::is_sep(b), SEP)
                | bit(b.is_ascii_uppercase(), UPPER)
                | bit(b == b':', COLON)
                | bit(b == b'.', DOT);
            i += 1;
        }
        t
    };

    // SSE2 is part of x86-64: these need no `target_feature` of their own,
    // so they can be inlined into the scan loop (a call per block returning
    // seven masks through memory cost a sixth of the scan).
    #[inline(always)]
    pub(super) fn sse2(bytes: &[u8; BLOCK]) -> Block {
        let mut out = Block::default();
        for (k, chunk) in bytes.as_chunks::<16>().0.iter().enumerate() {
            // SAFETY: SSE2 is part of x86-64, so every intrinsic here is
            // available; `chunk` is 16 readable bytes and the load is
            // unaligned.
            unsafe {
                let x = _mm_loadu_si128(chunk.as_ptr().cast());
                let mask = |v: __m128i| u64::from(_mm_movemask_epi8(v) as u16) << (16 * k);
                let eq = |x: __m128i, b: u8| _mm_cmpeq_epi8(x, _mm_set1_epi8(b as i8));
                let digit = in_range(x, b'0', 10);
                let letter = in_range(_mm_or_si128(x, _mm_set1_epi8(0x20)), b'a', 26);
                // `(`/`)` differ in the low bit; `-`, `.` and `/` are adjacent.
                let paren = eq(_mm_and_si128(x, _mm_set1_epi8(!1)), b'(');
                let sep = _mm_or_si128(_mm_or_si128(eq(x, b' '), paren), in_range(x, b'-', 3));
                out.digit |= mask(digit);
                out.alnum |= mask(_mm_or_si128(digit, letter));
                out.at |= mask(eq(x, b'@'));
                out.sep |= mask(sep);
                out.upper |= mask(in_range(x, b'A', 26));
                out.colon |= mask(eq(x, b':'));
                out.dot |= mask(eq(x, b'.'));
            }
        }
        out
    }

    /// The same, 32 bytes at a time.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn avx2(bytes: &[u8; BLOCK]) -> Block {
        let mut out = Block::default();
        for (k, chunk) in bytes.as_chunks::<32>().0.iter().enumerate() {
            // SAFETY: `chunk` is 32 readable bytes and the load is unaligned.
            let x = unsafe { _mm256_loadu_si256(chunk.as_ptr().cast()) };
            let mask = |v: __m256i| u64::from(_mm256_movemask_epi8(v) as u32) << (32 * k);
            let eq = |x: __m256i, b: u8| _mm256_cmpeq_epi8(x, _mm256_set1_epi8(b as i8));
            let in_range = |x: __m256i, lo: u8, len: u8| {
                let d = _mm256_sub_epi8(x, _mm256_set1_epi8(lo as i8));
                _mm256_cmpeq_epi8(_mm256_min_epu8(d, _mm256_set1_epi8((len - 1) as i8)), d)
            };
            let digit = in_range(x, b'0', 10);
            let letter = in_range(_mm256_or_si256(x, _mm256_set1_epi8(0x20)), b'a', 26);
            let paren = eq(_mm256_and_si256(x, _mm256_set1_epi8(!1)), b'(');
            let space = eq(x, b' ');
            let sep = _mm256_or_si256(_mm256_or_si256(space, paren), in_range(x, b'-', 3));
            out.digit |= mask(digit);
            out.alnum |= mask(_mm256_or_si256(digit, letter));
            out.at |= mask(eq(x, b'@'));
            out.sep |= mask(sep);
            out.upper |= mask(in_range(x, b'A', 26));
            out.colon |= mask(eq(x, b':'));
            out.dot |= mask(eq(x, b'.'));
        }
        out
    }

    /// The same, the whole block at once: a compare gives each class's
    /// mask with no move out of the vector unit (seven masks cost AVX2 two
    /// halves and fourteen moves).
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    pub(super) fn avx512(bytes: &[u8; BLOCK]) -> Block {
        // SAFETY: `bytes` is 64 readable bytes and the load is unaligned.
        let x = unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) };
        let set = |b: u8| _mm512_set1_epi8(b as i8);
        let eq = |x: __m512i, b: u8| _mm512_cmpeq_epi8_mask(x, set(b));
        let in_range = |x: __m512i, lo: u8, len: u8| {
            _mm512_cmple_epu8_mask(_mm512_sub_epi8(x, set(lo)), set(len - 1))
        };
        let digit = in_range(x, b'0', 10);
        let letter = in_range(_mm512_or_si512(x, set(0x20)), b'a', 26);
        let paren = eq(_mm512_and_si512(x, set(!1)), b'(');
        Block {
            digit,
            at: eq(x, b'@'),
            alnum: digit | letter,
            sep: eq(x, b' ') | paren | in_range(x, b'-', 3),
            upper: in_range(x, b'A', 26),
            colon: eq(x, b':'),
            dot: eq(x, b'.'),
        }
    }

    /// The same with AVX-512 VBMI and GFNI: each byte's classes as the
    /// bits of one byte (`vpermi2b` over [`CLASS_BITS`]), then the bits
    /// transposed so that each class's 64 bits are one lane: per eight
    /// bytes a `gf2p8affineqb` with the eight class bytes as its matrix
    /// gathers bit `c` of each into byte `c`, and a `vpermb` puts the
    /// eight such bytes of each class together.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni")]
    #[inline]
    pub(super) fn vbmi(bytes: &[u8; BLOCK]) -> Block {
        let mut out = [0u64; 8];
        // SAFETY: one store of 64 bytes into a 64-byte array.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), vbmi_lanes(bytes)) };
        let class = |bit: u8| out[bit.trailing_zeros() as usize];
        Block {
            digit: class(DIGIT),
            at: class(AT),
            alnum: class(ALNUM),
            sep: class(SEP),
            upper: class(UPPER),
            colon: class(COLON),
            dot: class(DOT),
        }
    }

    /// The classes of `bytes` as the eight lanes of a vector, lane `c` the
    /// class of bit `1 << c` (the order of the fields of [`Block`]; lane 7
    /// is zero).
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni")]
    #[inline]
    pub(super) fn vbmi_lanes(bytes: &[u8; BLOCK]) -> __m512i {
        // Byte `i` of a lane of eight is byte `7 - i` of the block's: the
        // transpose puts byte `7 - i` of its matrix in bit `i`.
        const REVERSE: [u8; BLOCK] = {
            let mut t = [0u8; BLOCK];
            let mut i = 0;
            while i < BLOCK {
                // `vpshufb` picks within each 16-byte lane.
                t[i] = (i % 16 / 8 * 8 + 7 - i % 8) as u8;
                i += 1;
            }
            t
        };
        // Byte `c` of every lane selects class bit `c`.
        const SELECT: [u8; BLOCK] = {
            let mut t = [0u8; BLOCK];
            let mut i = 0;
            while i < BLOCK {
                t[i] = 1 << (i % 8);
                i += 1;
            }
            t
        };
        // Lane `c` gathers byte `c` of every lane, in order.
        const GATHER: [u8; BLOCK] = {
            let mut t = [0u8; BLOCK];
            let mut i = 0;
            while i < BLOCK {
                t[i] = (i % 8 * 8 + i / 8) as u8;
                i += 1;
            }
            t
        };
        let load = |bytes: &[u8]| {
            debug_assert!(bytes.len() >= BLOCK);
            // SAFETY: the tables and the block are 64 readable bytes or
            // more, and the loads are unaligned.
            unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
        };
        let x = _mm512_shuffle_epi8(load(bytes), load(&REVERSE));
        // Bytes from 128 (sign set) are in no class.
        let ascii = !_mm512_movepi8_mask(x);
        let classes = _mm512_maskz_permutex2var_epi8(
            ascii,
            load(&CLASS_BITS[..BLOCK]),
            x,
            load(&CLASS_BITS[BLOCK..]),
        );
        let transposed = _mm512_gf2p8affine_epi64_epi8::<0>(load(&SELECT), classes);
        _mm512_permutexvar_epi8(load(&GATHER), transposed)
    }

    /// Lanes of `x` in `lo..lo + len` (unsigned): subtract, then the
    /// difference is its own minimum with `len - 1` only when below `len`.
    ///
    /// # Safety
    /// Needs SSE2, which every x86-64 CPU has.
    #[inline(always)]
    unsafe fn in_range(x: __m128i, lo: u8, len: u8) -> __m128i {
        // SAFETY: SSE2 is part of x86-64.
        unsafe {
            let d = _mm_sub_epi8(x, _mm_set1_epi8(lo as i8));
            _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8((len - 1) as i8)), d)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::detect::ip::v6_around;
    use super::*;

    #[test]
    fn portable_table() {
        let mut bytes = [b'x'; BLOCK];
        bytes[..12].copy_from_slice(b"a1@: -.()Z_\xff");
        bytes[12] = b'/';
        bytes[63] = b'9';
        let b = portable(&bytes);
        assert_eq!(b.digit, 1 << 1 | 1 << 63);
        assert_eq!(b.at, 1 << 2);
        assert_eq!(b.sep, 0b1_1111 << 4 | 1 << 12);
        assert_eq!((b.upper, b.colon, b.dot), (1 << 9, 1 << 3, 1 << 6));
        // Letters and digits, not `_` nor high bytes; the 'x' filler counts.
        assert_eq!(b.alnum, !(0b111_1111 << 2) & !(0b111 << 10));
    }

    #[test]
    fn the_vector_classes_are_the_bytewise_ones_for_every_byte_value() {
        // Each byte value at every position of the block.
        for shift in 0..BLOCK {
            for low in 0..4 {
                let block: [u8; BLOCK] =
                    std::array::from_fn(|i| ((i + shift) * 4 % 256 + low) as u8);
                let want = portable(&block);
                assert_eq!(Baseline.block(&block), want);
                #[cfg(target_arch = "x86_64")]
                if let Some(avx2) = Avx2::detect() {
                    assert_eq!(avx2.block(&block), want);
                }
                #[cfg(target_arch = "x86_64")]
                if let Some(avx512) = Avx512::detect() {
                    assert_eq!(avx512.block(&block), want);
                }
                #[cfg(target_arch = "x86_64")]
                if let Some(vbmi) = Vbmi::detect() {
                    assert_eq!(vbmi.block(&block), want);
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn every_way_classifies_random_blocks_alike(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(b"09:.@ -()AZaz_/`[{".to_vec()),
                    proptest::num::u8::ANY,
                ],
                BLOCK,
            )
        ) {
            let block: [u8; BLOCK] = bytes.try_into().expect("BLOCK bytes");
            let want = portable(&block);
            proptest::prop_assert_eq!(Baseline.block(&block), want);
            #[cfg(target_arch = "x86_64")]
            if let Some(avx2) = Avx2::detect() {
                proptest::prop_assert_eq!(avx2.block(&block), want);
            }
            #[cfg(target_arch = "x86_64")]
            if let Some(avx512) = Avx512::detect() {
                proptest::prop_assert_eq!(avx512.block(&block), want);
            }
            #[cfg(target_arch = "x86_64")]
            if let Some(vbmi) = Vbmi::detect() {
                proptest::prop_assert_eq!(vbmi.block(&block), want);
            }
        }
    }

    /// The pair holding `pos` in its first block.
    fn pair_at(text: &[u8], pos: usize) -> Pair {
        pairs(Baseline, text).nth(pos / BLOCK).expect("in the text")
    }

    #[test]
    fn count_ones_24_table() {
        for x in [0, 1, 0xff, 0x80_0001, 0xff_ffff, 0x55_5555] {
            assert_eq!(count_ones_24(x), x.count_ones() as usize, "{x:x}");
        }
    }

    #[test]
    fn pairs_cover_the_text_block_by_block() {
        let text = vec![b'7'; 200];
        let all: Vec<Pair> = pairs(Baseline, &text).collect();
        assert_eq!(
            all.iter().map(|p| p.base).collect::<Vec<_>>(),
            [0, 64, 128, 192]
        );
        assert_eq!(all[2].hi.digit, 0xff);
        assert_eq!(all[3].lo.digit, 0xff);
        assert_eq!(all[3].hi, Block::default());
        assert_eq!(pairs(Baseline, b"").count(), 0);
    }

    #[test]
    fn runs_are_measured_across_block_edges() {
        // Runs that end in the same block, in the next, at the pair's end,
        // past it, and at the end of the text.
        for (start, len) in [
            (0, 1),
            (63, 1),
            (60, 10),
            (10, 118),
            (70, 58),
            (63, 65),
            (63, 200),
            (100, 200),
            (0, 300),
        ] {
            let mut text = vec![b'-'; 300];
            text[start..start + len].fill(b'5');
            let pair = pair_at(&text, start);
            let end = pair.run_end(&text, start, |b| b.digit, is_digit);
            assert_eq!(end, start + len, "{start}+{len}");
            assert_eq!(
                pair.run_end(&text, start, |b| b.alnum, is_alnum),
                start + len
            );
        }
    }

    #[test]
    fn from_masks_the_bits_before_a_position() {
        let pair = pair_at(&[0; 200], 64);
        assert_eq!(pair.from(0), u64::MAX);
        assert_eq!(pair.from(64), u64::MAX);
        assert_eq!(pair.from(65), u64::MAX << 1);
        assert_eq!(pair.from(127), 1 << 63);
        assert_eq!(pair.from(128), 0);
    }

    #[test]
    fn digits_are_counted_as_the_byte_loop_did() {
        let texts: [&[u8]; 6] = [
            b"call 415 555-0132 now",
            b"(415) 555-0132",
            b"1.2.3.4.5.6.7.8.9.0.1.2.3.4.5",
            b"2025-03-05T12:34:56.789Z",
            b"4111 1111 1111 1111 1111 1111",
            b"12--------------------------34",
        ];
        for text in texts {
            // The same text at every offset in a block.
            for pad in 0..BLOCK {
                let mut padded = vec![b'x'; pad];
                padded.extend_from_slice(text);
                for (p, b) in padded.iter().enumerate() {
                    if b.is_ascii_digit() {
                        let want = super::super::engine::digits_ahead(&padded, p);
                        assert_eq!(
                            pair_at(&padded, p).digits_ahead(Baseline, p),
                            want,
                            "{pad} {p}"
                        );
                    }
                }
            }
        }
    }

    type Span = (usize, usize);

    /// The digits of the first block of each pair of `text` with what
    /// the address reader finds there, in the digit's stretch (the text
    /// between separators, as the engine gives it), and whether
    /// `may_hold_v6` holds for the pair.
    fn v6_verdicts(text: &[u8]) -> Vec<(usize, bool, Option<Span>)> {
        let mut out = Vec::new();
        let mut before = Block::default();
        for pair in pairs(Baseline, text) {
            let may = pair.may_hold_v6(&before);
            for p in pair.base..text.len().min(pair.base + BLOCK) {
                if !is_digit(text[p]) {
                    continue;
                }
                let separator = |b: &u8| *b == super::super::engine::SEPARATOR;
                let start = text[..p].iter().rposition(separator).map_or(0, |i| i + 1);
                let end = text[p..]
                    .iter()
                    .position(separator)
                    .map_or(text.len(), |i| p + i);
                out.push((p, may, v6_around(&text[start..end], p - start)));
            }
            before = pair.lo;
        }
        out
    }

    #[test]
    fn may_hold_v6_table() {
        // Whether an address may be in reach of the first digit.
        for (text, want) in [
            (&b"at 2025-03-14T12:34:56.789Z, 12:30 and 1:2:3"[..], false),
            (b"{\"score\":0.25,\"n\":3,\"t\":\"12:00\",\"a\":1}", false),
            (b"1:2:3:4:5:6", false),
            (b"host fe80::1 up", true),
            (b"::ffff:192.0.2.1", true),
            (b"1:2:3:4:5:6:1.2.3.4", true),
            (b"1 12:34:56 12:34:57 12:34:58", true),
        ] {
            // At every offset around a block edge and past the first pair;
            // the digit in the first block of its pair.
            for pad in [0, 1, 40, 60, 62, 63, 64, 100, 127, 128, 150] {
                let mut padded = vec![b' '; pad];
                padded.extend_from_slice(text);
                let first = pad + text.iter().position(u8::is_ascii_digit).expect("a digit");
                let (_, may, _) = v6_verdicts(&padded)
                    .into_iter()
                    .find(|v| v.0 == first)
                    .expect("a digit");
                assert_eq!(may, want, "{pad} {}", String::from_utf8_lossy(text));
            }
        }
        // Six colons between digits, but 60 bytes apart: all within the
        // three blocks, though in no address.
        let mut far = b"1".to_vec();
        far.extend(b"1:1".repeat(3));
        far.extend([b' '; 60]);
        far.extend(b"1:1".repeat(3));
        assert!(v6_verdicts(&far).iter().any(|v| v.1));
        assert!(v6_verdicts(&far).iter().all(|v| v.2.is_none()));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]
        #[test]
        fn may_hold_v6_is_false_only_where_the_reader_finds_no_address(
            bytes in proptest::collection::vec(
                proptest::sample::select(b"0123456789abcdefTgz_.:::: -\"\0".to_vec()),
                0..300,
            ),
            address in proptest::sample::select(vec![
                "fe80::1", "::ffff:192.0.2.1", "2001:db8::8a2e:370:7334",
                "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:1.2.3.4", "::1", "12:34:56",
                "a:b:c:d:e:f:1:2",
            ]),
            at in 0..300usize,
        ) {
            let mut text = bytes;
            let at = at.min(text.len());
            text.splice(at..at, address.bytes());
            for (p, may, found) in v6_verdicts(&text) {
                proptest::prop_assert!(
                    may || found.is_none(),
                    "{p} in {:?}: {found:?}", String::from_utf8_lossy(&text)
                );
            }
        }
    }

    /// Reference: the first digit of each word, byte by byte.
    fn first_digits_scalar(text: &[u8]) -> Vec<usize> {
        let mut out = Vec::new();
        let mut seen = false;
        for (i, &b) in text.iter().enumerate() {
            if !is_alnum(b) {
                seen = false;
            } else if is_digit(b) && !seen {
                out.push(i);
                seen = true;
            }
        }
        out
    }

    fn first_digits(text: &[u8]) -> Vec<usize> {
        let mut words = FirstDigits::default();
        let mut out = Vec::new();
        for pair in pairs(Baseline, text) {
            let mut bits = words.next(&pair.lo);
            while bits != 0 {
                out.push(pair.base + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
        out
    }

    #[test]
    fn first_digits_of_words_table() {
        for (text, want) in [
            ("", vec![]),
            ("abc def", vec![]),
            ("12 ab3c4 5x6 x", vec![0, 5, 9]),
            ("a1 b2c3 7", vec![1, 4, 8]),
            ("x-9.8:7", vec![2, 4, 6]),
        ] {
            assert_eq!(first_digits(text.as_bytes()), want, "{text}");
        }
        // Words that cross block edges: letters then a digit, a digit at
        // the edge, a word of digits spanning three blocks.
        for (letters, digits, at) in [(70, 3, 0), (63, 2, 0), (1, 1, 62), (0, 150, 10)] {
            let mut text = vec![b' '; at];
            text.extend(std::iter::repeat_n(b'q', letters));
            text.extend(std::iter::repeat_n(b'4', digits));
            text.extend_from_slice(b"z9 8");
            assert_eq!(
                first_digits(&text),
                first_digits_scalar(&text),
                "{letters} {digits} {at}"
            );
        }
    }

    #[test]
    fn first_digits_agree_with_the_byte_loop_on_mixed_text() {
        let mut text = Vec::new();
        let mut seed = 7u32;
        for _ in 0..5000 {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            text.push(b"a1 _-9Z@"[(seed >> 16) as usize % 8]);
        }
        assert_eq!(first_digits(&text), first_digits_scalar(&text));
    }

    #[test]
    fn the_last_block_of_a_long_text_is_classified_as_if_padded() {
        let text: Vec<u8> = (0..200u32)
            .map(|i| b"a1@: -.()Z_x"[i as usize % 12])
            .collect();
        for len in [64, 65, 100, 127, 128, 129, 200] {
            let text = &text[..len];
            for start in (0..len).step_by(7).chain([len - 1]) {
                let mut padded = [0u8; BLOCK];
                let tail = &text[start..(start + BLOCK).min(len)];
                padded[..tail.len()].copy_from_slice(tail);
                assert_eq!(
                    classify_at(Baseline, text, start),
                    portable(&padded),
                    "{len} {start}"
                );
            }
        }
    }

    #[test]
    fn a_short_tail_is_padded_with_bytes_in_no_class() {
        let text = b"12 ab";
        let b = classify_at(Baseline, text, 0);
        assert_eq!(b.digit, 0b11);
        assert_eq!(b.alnum, 0b11011);
        assert_eq!(b.sep, 0b100);
        assert_eq!(classify_at(Baseline, text, 3).alnum, 0b11);
        assert_eq!(classify_at(Baseline, text, 5), Block::default());
        assert_eq!(classify_at(Baseline, text, 99), Block::default());
    }
}
