//! The class scan's masks for eight consecutive blocks at once, on the
//! [`Vbmi`](super::Vbmi) way: each class of the eight blocks is one 512-bit
//! vector, a 64-bit lane per block ("class-major"), so the masks of
//! [`FirstDigits`](super::FirstDigits), [`Pair::may_hold_v6`] and
//! [`Pair::may_hold_values`] are computed for the eight blocks with no
//! branch. The per-block scan tested at each block whether it had a first
//! digit, colons, a digit that passed a cheap value test: coin flips on
//! real text, which the branch predictor lost on bodies it had not seen
//! (a quarter of the class scan's time on such bodies). Only the blocks with a stop (one in nine)
//! leave the vectors, as [`Pair`]s for the engine's stop code.
//!
//! A shift across a block edge, a shift of a `u128` in the per-block
//! masks, is a funnel shift (VBMI2) with the lane of the neighbouring
//! block: the same class moved by one lane, taking the last block of the
//! previous group or the first of the next. The carry of the first-digit
//! addition runs through the lanes as a carry-lookahead addition on the
//! lane masks ([`FirstDigits::next`]).

use std::arch::x86_64::*;

use super::{BLOCK, Block, Pair, block_at, x86};

/// Blocks per group: one per lane.
const LANES: usize = 8;

/// Bytes of text per group.
const GROUP: usize = LANES * BLOCK;

/// The classes of eight consecutive blocks, lane `i` of each the block `i`
/// (fields as [`Block`]'s).
#[derive(Clone, Copy)]
struct Group {
    digit: __m512i,
    at: __m512i,
    alnum: __m512i,
    sep: __m512i,
    upper: __m512i,
    colon: __m512i,
    dot: __m512i,
}

/// A vector of zeros: any 64 bytes are a valid `__m512i`, and this needs
/// no CPU feature (nothing is zeroed with an AVX-512 instruction here).
fn zeros() -> __m512i {
    // SAFETY: same size, and every bit pattern is a valid `__m512i`.
    unsafe { std::mem::transmute::<[u64; LANES], __m512i>([0; LANES]) }
}

/// The lanes of `x` (lane `i` is element `i`).
fn lanes(x: __m512i) -> [u64; LANES] {
    // SAFETY: same size, and every bit pattern is a valid `[u64; 8]`.
    unsafe { std::mem::transmute::<__m512i, [u64; LANES]>(x) }
}

/// One block's classes as [`x86::vbmi_lanes`] gives them.
#[derive(Clone, Copy)]
struct Classes(__m512i);

impl Default for Classes {
    fn default() -> Classes {
        Classes(zeros())
    }
}

impl Group {
    /// Blocks with no byte in any class: before a text and past its end.
    fn none() -> Group {
        Group {
            digit: zeros(),
            at: zeros(),
            alnum: zeros(),
            sep: zeros(),
            upper: zeros(),
            colon: zeros(),
            dot: zeros(),
        }
    }

    /// The eight blocks of `text` from `base`, each classified as
    /// [`super::classify_at`] does: the bytes past the text's end are in
    /// no class (the last block of a long text is its last 64 bytes
    /// shifted, a short text's a padded copy).
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni")]
    #[inline]
    fn at(text: &[u8], base: usize) -> Group {
        // All but the last group or two: eight blocks of the text's own.
        if let Some(bytes) = text.get(base..base + GROUP) {
            let (blocks, _) = bytes.as_chunks::<BLOCK>();
            return Group::transposed(std::array::from_fn(|i| x86::vbmi_lanes(&blocks[i])));
        }
        let classify = |start: usize| {
            block_at(
                text,
                start,
                |bytes| Classes(x86::vbmi_lanes(bytes)),
                |c, k| Classes(_mm512_srl_epi64(c.0, _mm_cvtsi64_si128(k as i64))),
            )
            .0
        };
        Group::transposed([
            classify(base),
            classify(base + BLOCK),
            classify(base + 2 * BLOCK),
            classify(base + 3 * BLOCK),
            classify(base + 4 * BLOCK),
            classify(base + 5 * BLOCK),
            classify(base + 6 * BLOCK),
            classify(base + 7 * BLOCK),
        ])
    }

    /// The group of eight blocks given block-major, lane `c` of `blocks[i]`
    /// class `c` of block `i`: an 8x8 transpose of 64-bit lanes in three
    /// stages of shuffles (pairs of lanes, then of 128-bit lanes twice).
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn transposed(blocks: [__m512i; LANES]) -> Group {
        let [b0, b1, b2, b3, b4, b5, b6, b7] = blocks;
        // Classes 0, 2, 4, 6 (even) and 1, 3, 5, 7 (odd) of two blocks,
        // a 128-bit lane per class.
        let (even01, odd01) = (_mm512_unpacklo_epi64(b0, b1), _mm512_unpackhi_epi64(b0, b1));
        let (even23, odd23) = (_mm512_unpacklo_epi64(b2, b3), _mm512_unpackhi_epi64(b2, b3));
        let (even45, odd45) = (_mm512_unpacklo_epi64(b4, b5), _mm512_unpackhi_epi64(b4, b5));
        let (even67, odd67) = (_mm512_unpacklo_epi64(b6, b7), _mm512_unpackhi_epi64(b6, b7));
        // The even and the odd 128-bit lanes of `a`, then of `b`.
        let split = |a: __m512i, b: __m512i| {
            (
                _mm512_shuffle_i64x2::<0b10_00_10_00>(a, b),
                _mm512_shuffle_i64x2::<0b11_01_11_01>(a, b),
            )
        };
        // Classes 0 and 4, 2 and 6, ... of four blocks.
        let (c04_0123, c26_0123) = split(even01, even23);
        let (c04_4567, c26_4567) = split(even45, even67);
        let (c15_0123, c37_0123) = split(odd01, odd23);
        let (c15_4567, c37_4567) = split(odd45, odd67);
        let (digit, upper) = split(c04_0123, c04_4567);
        let (alnum, dot) = split(c26_0123, c26_4567);
        let (at, colon) = split(c15_0123, c15_4567);
        let (sep, _) = split(c37_0123, c37_4567);
        Group {
            digit,
            at,
            alnum,
            sep,
            upper,
            colon,
            dot,
        }
    }

    /// Each class of `self` and `other` joined by `f`.
    #[inline(always)]
    fn zip(&self, other: &Group, f: impl Fn(__m512i, __m512i) -> __m512i) -> Group {
        Group {
            digit: f(self.digit, other.digit),
            at: f(self.at, other.at),
            alnum: f(self.alnum, other.alnum),
            sep: f(self.sep, other.sep),
            upper: f(self.upper, other.upper),
            colon: f(self.colon, other.colon),
            dot: f(self.dot, other.dot),
        }
    }

    /// The blocks after those of `self`, `next` the group after it: lane
    /// `i` is block `i + 1`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn after(&self, next: &Group) -> Group {
        self.zip(next, |this, next| _mm512_alignr_epi64::<1>(next, this))
    }

    /// The blocks before those of `self`, `prev` the group before it:
    /// lane `i` is block `i - 1`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn before(&self, prev: &Group) -> Group {
        self.zip(prev, |this, prev| _mm512_alignr_epi64::<7>(this, prev))
    }

    /// The classes' lanes, for the rare block with a stop ([`Lanes::block`]).
    fn lanes(&self) -> Lanes {
        Lanes {
            digit: lanes(self.digit),
            at: lanes(self.at),
            alnum: lanes(self.alnum),
            sep: lanes(self.sep),
            upper: lanes(self.upper),
            colon: lanes(self.colon),
            dot: lanes(self.dot),
        }
    }
}

/// A [`Group`]'s classes in memory, element `i` of each block `i`.
struct Lanes {
    digit: [u64; LANES],
    at: [u64; LANES],
    alnum: [u64; LANES],
    sep: [u64; LANES],
    upper: [u64; LANES],
    colon: [u64; LANES],
    dot: [u64; LANES],
}

impl Lanes {
    /// Block `i`.
    #[inline(always)]
    fn block(&self, i: usize) -> Block {
        Block {
            digit: self.digit[i],
            at: self.at[i],
            alnum: self.alnum[i],
            sep: self.sep[i],
            upper: self.upper[i],
            colon: self.colon[i],
            dot: self.dot[i],
        }
    }
}

/// `x >> K` with the low bits of `next` shifted in at the top: a `u128`
/// shift right whose low half is `x`, truncated to that half.
#[target_feature(enable = "avx512vbmi2")]
#[inline]
fn down<const K: i32>(x: __m512i, next: __m512i) -> __m512i {
    _mm512_shrdi_epi64::<K>(x, next)
}

/// `x << K` with the top bits of `prev` shifted in at the bottom: the high
/// half of a `u128` shift left whose high half is `x`.
#[target_feature(enable = "avx512vbmi2")]
#[inline]
fn up<const K: i32>(x: __m512i, prev: __m512i) -> __m512i {
    _mm512_shldi_epi64::<K>(x, prev)
}

/// A `u128` per lane, as the per-block masks' `Pair::bits`: a block and
/// the one after it.
#[derive(Clone, Copy)]
struct Wide {
    lo: __m512i,
    hi: __m512i,
}

impl Wide {
    /// `x & x >> K`.
    #[target_feature(enable = "avx512f,avx512vbmi2")]
    #[inline]
    fn and_down<const K: i32>(self) -> Wide {
        Wide {
            lo: _mm512_and_si512(self.lo, down::<K>(self.lo, self.hi)),
            hi: _mm512_and_si512(self.hi, down::<K>(self.hi, zeros())),
        }
    }
}

/// The first digit of every word, eight blocks at a time: the per-block
/// [`FirstDigits`](super::FirstDigits) addition in each lane, with the
/// carry between lanes found for all eight at once.
#[derive(Debug, Default)]
struct FirstDigits {
    /// The carry out of the previous group's last block (0 or 1).
    carry: u32,
}

impl FirstDigits {
    /// The first digits in `group`, which follows the previous one;
    /// `before` holds the blocks before the group's (lane `i` block
    /// `i - 1`).
    ///
    /// Each lane adds its letters and word starts. A lane generates a
    /// carry when that sum overflows, and propagates the carry into it
    /// when the sum is all ones (never both). The carries into the lanes
    /// are those of adding the two lane masks `generate | propagate` and
    /// `generate`, plus the carry into the group: they are the bits of
    /// that sum flipped where the two masks differ (`propagate`), and its
    /// bit 8 is the carry out of the group.
    #[target_feature(enable = "avx512f,avx512vbmi2")]
    #[inline]
    fn next(&mut self, group: &Group, before: &Group) -> __m512i {
        let (alnum, digit) = (group.alnum, group.digit);
        let letters = _mm512_andnot_si512(digit, alnum);
        // A word starts at a letter or digit after none (bit 0: after
        // the block before's last byte).
        let starts = _mm512_andnot_si512(up::<1>(alnum, before.alnum), alnum);
        let sum = _mm512_add_epi64(letters, starts);
        let generate = _mm512_cmplt_epu64_mask(sum, letters);
        let propagate = _mm512_cmpeq_epi64_mask(sum, _mm512_set1_epi64(-1));
        let carries = u32::from(generate | propagate) + u32::from(generate) + self.carry;
        self.carry = carries >> LANES;
        let carried_in = carries as u8 ^ propagate;
        let sum = _mm512_mask_add_epi64(sum, carried_in, sum, _mm512_set1_epi64(1));
        _mm512_and_si512(digit, sum)
    }
}

/// The eight [`Pair`]s of a group and the blocks before them: what the
/// per-block masks read, lane by lane.
struct Pairs {
    /// Where the group starts in the text.
    base: usize,
    before: Group,
    lo: Group,
    hi: Group,
}

impl Pairs {
    /// [`Pair::may_hold_v6`] of each lane, bit `i` of the mask for lane
    /// `i`, with the same shifts across the three blocks' edges.
    #[target_feature(enable = "avx512f,avx512vbmi2,avx512vpopcntdq")]
    #[inline]
    fn may_hold_v6(&self) -> __mmask8 {
        let (b, lo, hi) = (&self.before, &self.lo, &self.hi);
        let zero = zeros();
        let and = _mm512_and_si512;
        let double = |colon: __m512i, next: __m512i| and(colon, down::<1>(colon, next));
        let doubles = _mm512_or_si512(
            _mm512_or_si512(double(b.colon, lo.colon), double(lo.colon, hi.colon)),
            double(hi.colon, zero),
        );
        let flanked = |colon: __m512i, alnum: __m512i, prev: __m512i, next: __m512i| {
            _mm512_popcnt_epi64(and(
                colon,
                and(up::<1>(alnum, prev), down::<1>(alnum, next)),
            ))
        };
        let flanked = _mm512_add_epi64(
            _mm512_add_epi64(
                flanked(b.colon, b.alnum, zero, lo.alnum),
                flanked(lo.colon, lo.alnum, b.alnum, hi.alnum),
            ),
            flanked(hi.colon, hi.alnum, lo.alnum, zero),
        );
        _mm512_test_epi64_mask(doubles, doubles)
            | _mm512_cmpge_epu64_mask(flanked, _mm512_set1_epi64(6))
    }

    /// [`Pair::may_hold_values`] of each lane, the colon tests in the lanes
    /// of `v6`.
    #[target_feature(enable = "avx512f,avx512vbmi2")]
    #[inline]
    fn may_hold_values(&self, v6: __mmask8) -> __m512i {
        let (b, lo, hi) = (&self.before, &self.lo, &self.hi);
        let (and, or) = (_mm512_and_si512, _mm512_or_si512);
        // The lookbehind tests shift the block before in from below.
        let capitals = and(up::<1>(lo.upper, b.upper), up::<2>(lo.upper, b.upper));
        // Two small letters at a word's start and two digits: a
        // lower-case IBAN's country and check digits.
        let andnot = _mm512_andnot_si512;
        let (lower_b, lower_lo) = (
            andnot(or(b.digit, b.upper), b.alnum),
            andnot(or(lo.digit, lo.upper), lo.alnum),
        );
        let small_country = andnot(
            up::<3>(lo.alnum, b.alnum),
            and(up::<1>(lower_lo, lower_b), up::<2>(lower_lo, lower_b)),
        );
        let lower_iban = and(small_country, down::<1>(lo.digit, hi.digit));
        let capitals = or(capitals, lower_iban);
        let colon_before = or(
            or(up::<1>(lo.colon, b.colon), up::<2>(lo.colon, b.colon)),
            or(up::<3>(lo.colon, b.colon), up::<4>(lo.colon, b.colon)),
        );
        // The lookahead tests shift the next block in from above.
        let (c, n) = (lo.colon, hi.colon);
        let colon_after = or(
            or(
                or(down::<1>(c, n), down::<2>(c, n)),
                or(down::<3>(c, n), down::<4>(c, n)),
            ),
            or(or(down::<5>(c, n), down::<6>(c, n)), down::<7>(c, n)),
        );
        let colons = or(colon_before, colon_after);
        let may = _mm512_mask_or_epi64(capitals, v6, capitals, colons);
        let run = Wide {
            lo: or(lo.digit, lo.sep),
            hi: or(hi.digit, hi.sep),
        };
        let run8 = run.and_down::<1>().and_down::<2>().and_down::<4>().lo;
        let (d, n) = (lo.dot, hi.dot);
        let dot_soon = or(or(down::<1>(d, n), down::<2>(d, n)), down::<3>(d, n));
        let dotted = Wide {
            lo: or(lo.digit, lo.dot),
            hi: or(hi.digit, hi.dot),
        };
        let dotted7 = dotted.and_down::<1>().and_down::<2>().and_down::<3>().lo;
        or(or(may, run8), and(dotted7, dot_soon))
    }

    /// [`Pair::from`] of each lane.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn from(&self, pos: usize) -> __m512i {
        const OFFSETS: [u64; LANES] = {
            let mut t = [0; LANES];
            let mut i = 0;
            while i < LANES {
                t[i] = (i * BLOCK) as u64;
                i += 1;
            }
            t
        };
        // SAFETY: same size, and every bit pattern is a valid `__m512i`.
        let offsets = unsafe { std::mem::transmute::<[u64; LANES], __m512i>(OFFSETS) };
        let bases = _mm512_add_epi64(_mm512_set1_epi64(self.base as i64), offsets);
        // Where `pos` is in each block, or before it (negative: all
        // bits); a shift by 64 or more leaves no bit.
        let into = _mm512_sub_epi64(_mm512_set1_epi64(pos as i64), bases);
        let into = _mm512_max_epi64(into, zeros());
        _mm512_sllv_epi64(_mm512_set1_epi64(-1), into)
    }
}

/// The class scan's groups of a text, in order.
pub(crate) struct Groups<'t> {
    text: &'t [u8],
    /// Where the next group starts.
    base: usize,
    prev: Group,
    /// The next group, classified one ahead: its first block is the
    /// lookahead of the group before.
    ahead: Group,
    first_digits: FirstDigits,
    /// All ones where first digits (`@` signs) are stops, else zero.
    digit_stops: __m512i,
    at_stops: __m512i,
}

/// A group's stops: the bytes where the class scan stops in each block,
/// and what it needs there.
pub(crate) struct Stops {
    base: usize,
    /// The blocks with a stop, bit `i` block `i`.
    blocks: u8,
    stops: __m512i,
    /// [`Pair::may_hold_v6`] of each block.
    v6: u8,
    lo: Group,
    hi: Group,
}

impl<'t> Groups<'t> {
    /// The groups of `text` for a scan that stops at first digits
    /// (`numbers`) and `@` signs (`email`).
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni")]
    #[inline]
    pub(crate) fn new(text: &'t [u8], numbers: bool, email: bool) -> Groups<'t> {
        let all = |yes: bool| _mm512_set1_epi64(if yes { -1 } else { 0 });
        Groups {
            text,
            base: 0,
            prev: Group::none(),
            ahead: Group::at(text, 0),
            first_digits: FirstDigits::default(),
            digit_stops: all(numbers),
            at_stops: all(email),
        }
    }

    /// The stops of the next group, where the scan goes on from `from`
    /// (nothing before it is a stop): the per-block scan's, each block's
    /// masks computed as [`Pair`]'s for the block and the one after it.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,avx512vpopcntdq,gfni")]
    #[inline]
    pub(crate) fn next(&mut self, from: usize) -> Option<Stops> {
        if self.base >= self.text.len() {
            return None;
        }
        let group = self.ahead;
        // Past the text's end every block is in no class (short texts, a
        // body of 1 KiB, would classify a third group of nothing).
        if self.base + GROUP < self.text.len() {
            self.ahead = Group::at(self.text, self.base + GROUP);
        } else {
            self.ahead = Group::none();
        }
        let pairs = Pairs {
            base: self.base,
            before: group.before(&self.prev),
            lo: group,
            hi: group.after(&self.ahead),
        };
        let words = self.first_digits.next(&group, &pairs.before);
        let words = _mm512_and_si512(words, self.digit_stops);
        let v6 = pairs.may_hold_v6();
        let numbers = _mm512_and_si512(words, pairs.may_hold_values(v6));
        let ats = _mm512_and_si512(group.at, self.at_stops);
        let stops = _mm512_and_si512(_mm512_or_si512(numbers, ats), pairs.from(from));
        self.prev = group;
        self.base += GROUP;
        Some(Stops {
            base: pairs.base,
            blocks: _mm512_test_epi64_mask(stops, stops),
            stops,
            v6,
            lo: pairs.lo,
            hi: pairs.hi,
        })
    }
}

impl Stops {
    /// Calls `f` with each block with a stop, in order: its pair, its
    /// stops, and its [`Pair::may_hold_v6`].
    #[inline(always)]
    pub(crate) fn each(&self, mut f: impl FnMut(&Pair, u64, bool)) {
        if self.blocks == 0 {
            return;
        }
        let (lo, hi, stops) = (self.lo.lanes(), self.hi.lanes(), lanes(self.stops));
        let mut blocks = self.blocks;
        while blocks != 0 {
            let i = blocks.trailing_zeros() as usize;
            blocks &= blocks - 1;
            let pair = Pair {
                base: self.base + i * BLOCK,
                lo: lo.block(i),
                hi: hi.block(i),
            };
            f(&pair, stops[i], self.v6 >> i & 1 == 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Baseline, Vbmi, pairs};
    use super::*;

    /// `blocks` as [`x86::vbmi_lanes`] gives them, lane `c` class `c`.
    fn block_major(blocks: &[Block; LANES]) -> [__m512i; LANES] {
        blocks.map(|b| {
            let classes = [b.digit, b.at, b.alnum, b.sep, b.upper, b.colon, b.dot, 0];
            // SAFETY: same size, and every bit pattern is a valid `__m512i`.
            unsafe { std::mem::transmute::<[u64; LANES], __m512i>(classes) }
        })
    }

    /// A mask with runs: all ones, all zeros, a few bits, or any.
    fn mask() -> impl proptest::strategy::Strategy<Value = u64> {
        proptest::prop_oneof![
            proptest::strategy::Just(u64::MAX),
            proptest::strategy::Just(0),
            proptest::num::u64::ANY,
            (0..64u32, 0..64u32).prop_map(|(a, b)| (u64::MAX << a) >> b),
            (0..64u32).prop_map(|a| !(1 << a)),
        ]
    }

    fn block() -> impl proptest::strategy::Strategy<Value = Block> {
        use proptest::strategy::Strategy;
        (mask(), mask(), mask(), mask(), mask(), mask(), mask()).prop_map(
            |(digit, at, alnum, sep, upper, colon, dot)| Block {
                digit,
                at,
                alnum,
                sep,
                upper,
                colon,
                dot,
            },
        )
    }

    use proptest::strategy::Strategy;

    #[target_feature(enable = "avx512f")]
    fn transpose_round_trip(blocks: &[Block; LANES]) -> [Block; LANES] {
        let lanes = Group::transposed(block_major(blocks)).lanes();
        std::array::from_fn(|i| lanes.block(i))
    }

    /// The first digits of consecutive blocks, eight at a time and one at
    /// a time.
    #[target_feature(enable = "avx512f,avx512vbmi2")]
    fn first_digits_both_ways(blocks: &[Block]) -> (Vec<u64>, Vec<u64>) {
        let mut scalar = super::super::FirstDigits::default();
        let one_by_one = blocks.iter().map(|b| scalar.next(b)).collect();
        let mut eight = FirstDigits::default();
        let mut prev = Group::none();
        let mut by_eight = Vec::new();
        for chunk in blocks.chunks(LANES) {
            let blocks: [Block; LANES] =
                std::array::from_fn(|i| chunk.get(i).copied().unwrap_or_default());
            let group = Group::transposed(block_major(&blocks));
            by_eight.extend_from_slice(&lanes(eight.next(&group, &group.before(&prev))));
            prev = group;
        }
        by_eight.truncate(blocks.len());
        (one_by_one, by_eight)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]
        #[test]
        fn the_transpose_gives_each_block_back(
            blocks in proptest::collection::vec(block(), LANES)
        ) {
            let Some(_) = Vbmi::detect() else { return Ok(()) };
            let blocks: [Block; LANES] = blocks.try_into().expect("eight");
            // SAFETY: `detect` found the features.
            proptest::prop_assert_eq!(unsafe { transpose_round_trip(&blocks) }, blocks);
        }

        /// Words of all letters, all digits, or both, over many blocks:
        /// the carries run through whole groups.
        #[test]
        fn the_first_digits_carry_through_lanes_and_groups_as_one_by_one(
            blocks in proptest::collection::vec(block(), 0..40)
        ) {
            let Some(_) = Vbmi::detect() else { return Ok(()) };
            // SAFETY: `detect` found the features.
            let (one_by_one, by_eight) = unsafe { first_digits_both_ways(&blocks) };
            proptest::prop_assert_eq!(one_by_one, by_eight);
        }
    }

    #[test]
    fn the_first_digits_carry_through_all_ones_runs() {
        let Some(_) = Vbmi::detect() else { return };
        let letters = Block {
            alnum: u64::MAX,
            ..Block::default()
        };
        let digits = Block {
            alnum: u64::MAX,
            digit: u64::MAX,
            ..Block::default()
        };
        let gap = Block {
            alnum: !1,
            ..Block::default()
        };
        // A word of letters for 0 to 20 blocks, then one of digits, with
        // a word ending at each lane before.
        for letters_len in 0..20 {
            for gap_at in 0..LANES {
                let mut blocks = vec![letters; gap_at];
                blocks.push(gap);
                blocks.extend(std::iter::repeat_n(letters, letters_len));
                blocks.extend([digits, digits, letters, digits]);
                // SAFETY: `detect` found the features.
                let (one_by_one, by_eight) = unsafe { first_digits_both_ways(&blocks) };
                assert_eq!(one_by_one, by_eight, "{letters_len} {gap_at}");
            }
        }
    }

    /// Each block's masks, eight at a time: `(from, words & may_hold_values, v6)`
    /// per block for the scan going on from `from`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,avx512vpopcntdq,gfni")]
    fn masks_by_eight(text: &[u8], from: usize) -> Vec<(u64, u64, bool)> {
        let mut groups = Groups::new(text, true, true);
        let mut out = Vec::new();
        let mut prev = Group::none();
        let mut first_digits = FirstDigits::default();
        while groups.base < text.len() {
            let (base, group) = (groups.base, groups.ahead);
            let stops = groups.next(from).expect("a group");
            let pairs = Pairs {
                base,
                before: group.before(&prev),
                lo: group,
                hi: stops.hi,
            };
            let words = first_digits.next(&group, &pairs.before);
            let v6 = pairs.may_hold_v6();
            let values = lanes(_mm512_and_si512(words, pairs.may_hold_values(v6)));
            let from = lanes(pairs.from(from));
            for i in 0..LANES {
                out.push((from[i], values[i], v6 >> i & 1 == 1));
            }
            prev = group;
        }
        out.truncate(text.len().div_ceil(BLOCK));
        out
    }

    /// The same one block at a time.
    fn masks_one_by_one(text: &[u8], from: usize) -> Vec<(u64, u64, bool)> {
        let mut before = Block::default();
        let mut first_digits = super::super::FirstDigits::default();
        pairs(Baseline, text)
            .map(|pair| {
                let words = first_digits.next(&pair.lo);
                let v6 = pair.may_hold_v6(&before);
                let values = words & pair.may_hold_values(&before, v6);
                before = pair.lo;
                (pair.from(from), values, v6)
            })
            .collect()
    }

    /// Text with the bytes the masks look at, and long words.
    fn text() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        let piece = proptest::prop_oneof![
            proptest::sample::select(b"0123456789 -.():AZax_@\0".to_vec()).prop_map(|b| vec![b]),
            proptest::sample::select(vec![
                &b"fe80::1ff:fe23:4567:890a"[..],
                b"1:2:3:4:5:6:7:8",
                b"12:34:56",
                b"GB82WEST12345698765432",
                b"415 555-0132",
                b"10.1.2.3",
            ])
            .prop_map(<[u8]>::to_vec),
            (1..700usize, proptest::bool::ANY).prop_map(|(n, digits)| vec![
                if digits {
                    b'7'
                } else {
                    b'q'
                };
                n
            ]),
        ];
        proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]
        #[test]
        fn each_lane_has_the_masks_of_its_block(text in text(), from in 0..3000usize) {
            let Some(_) = Vbmi::detect() else { return Ok(()) };
            let want = masks_one_by_one(&text, from);
            // SAFETY: `detect` found the features.
            let got = unsafe { masks_by_eight(&text, from) };
            proptest::prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn each_lane_has_the_masks_of_its_block_around_group_edges() {
        let Some(_) = Vbmi::detect() else { return };
        let unit = b"ab 12:34:56 fe80::1 x 1:2:3:4:5:6:7:8 GB82 WEST 415 555-0132 10.1.2.3 ";
        let long: Vec<u8> = unit.iter().copied().cycle().take(3 * GROUP + 200).collect();
        for len in (0..=3 * GROUP + 130).filter(|n| n % BLOCK < 3 || n % BLOCK > 61) {
            let text = &long[..len];
            for from in [0, 1, 63, 64, GROUP - 1, GROUP, GROUP + 65] {
                // SAFETY: `detect` found the features.
                let got = unsafe { masks_by_eight(text, from) };
                assert_eq!(got, masks_one_by_one(text, from), "{len} {from}");
            }
        }
    }
}
