//! Levels 1 and 2 of the gate with AVX-512: a 64-byte block's token starts
//! found, packed with their words and sieved sixteen at a time, then the
//! whole keys of the candidates hashed and looked up sixteen at a time.
//! Compiled for x86-64 only; [`Avx512::detect`] decides at run time
//! whether it runs.

use std::arch::x86_64::*;

use super::{
    BITS8, CHUNK, Gate, HEAD_BITS, MUL_HEAD, MUL_TAIL, Printable, SLACK, Sieve, VECTOR_LEVEL2,
    WORDS_FROM, is_letter,
};

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
pub(super) const POW2: [u8; 64] = {
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
pub(super) fn low_bits(n: usize) -> u64 {
    if n >= 64 { !0 } else { (1 << n) - 1 }
}

#[target_feature(enable = "avx512f")]
fn load(bytes: &[u8; 64]) -> __m512i {
    // SAFETY: 64 readable bytes, unaligned load.
    unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
}

/// A 128-entry table as its two halves (what a two-table permute reads).
#[target_feature(enable = "avx512f")]
fn halves(table: &[u8; 128]) -> (__m512i, __m512i) {
    let (lo, hi) = table.split_at(64);
    (
        load(lo.try_into().expect("64")),
        load(hi.try_into().expect("64")),
    )
}

/// # Safety
/// The CPU has the features enabled here; `to <= text.len()`,
/// `to - from <= CHUNK` and `at`, `common`, `words`, `nexts`, `offsets`,
/// `heads` and `tails` are each at least `to - from + SLACK` long.
/// `printable` takes each block's printable bytes (those of `from..to`).
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vbmi,avx512vbmi2,bmi1,bmi2,popcnt")]
unsafe fn sieve<const WORDS: bool>(
    sieve: &Sieve,
    text: &[u8],
    (from, to): (usize, usize),
    [at, common, words, nexts]: [&mut [u32]; 4],
    [offsets, heads, tails]: [&mut [u32]; 3],
    printable: &mut Printable,
) -> usize {
    let classes = sieve.classes.each_ref().map(|table| halves(table));
    let shorts = _mm512_set1_epi8(sieve.shorts as i8);
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
        // This block and the seven bytes after it (zeros past the text),
        // and the block moved by one and by two bytes: read from the text
        // where it goes on for another block (the class tables read a
        // byte as its folded form), else moved within the block.
        let avail = text.len() - b;
        let (lo, hi, x1, x2);
        if avail >= 128 {
            // SAFETY: 128 bytes of the text from `b`, unaligned loads.
            unsafe {
                lo = _mm512_loadu_si512(ptr.add(b).cast());
                hi = _mm512_loadu_si512(ptr.add(b + 64).cast());
                x1 = _mm512_loadu_si512(ptr.add(b + 1).cast());
                x2 = _mm512_loadu_si512(ptr.add(b + 2).cast());
            }
        } else {
            // SAFETY: the masks cover only bytes of the text (masked-off
            // bytes are not read, so the addresses may pass its end).
            unsafe {
                lo = _mm512_maskz_loadu_epi8(low_bits(avail), ptr.wrapping_add(b).cast());
                hi = _mm512_maskz_loadu_epi8(
                    low_bits(avail.saturating_sub(64).min(7)),
                    ptr.wrapping_add(b + 64).cast(),
                );
            }
            x1 = _mm512_permutex2var_epi8(lo, next1, hi);
            x2 = _mm512_permutex2var_epi8(lo, next2, hi);
        }
        let f = _mm512_or_si512(lo, fold);
        let fhi = _mm512_or_si512(hi, fold);
        let below = |x: __m512i, lo: u8, len: u8| {
            _mm512_cmplt_epu8_mask(
                _mm512_sub_epi8(x, _mm512_set1_epi8(lo as i8)),
                _mm512_set1_epi8(len as i8),
            )
        };
        let letters = below(f, b'a', 26);
        let visible = below(lo, b'!', 94) & low_bits(to - b);
        printable.block(visible);
        let marks = visible & !letters & !below(lo, b'0', 10);
        let high = _mm512_cmpge_epu8_mask(lo, _mm512_set1_epi8(0xC0_u8 as i8));
        let after_letter = (letters << 1) | u64::from(b > 0 && is_letter(text[b - 1]));
        let starts = ((letters & !after_letter) | marks | high) & low_bits(to - b);

        // Only where a key may begin (`Sieve::classes`): the classes of
        // the byte at each position and of the two after it.
        let class = |k: usize, x: __m512i| _mm512_permutex2var_epi8(classes[k].0, x, classes[k].1);
        let common = _mm512_and_si512(_mm512_and_si512(class(0, lo), class(1, x1)), class(2, x2));
        let starts = starts & _mm512_test_epi8_mask(common, common);
        let short = _pext_u64(_mm512_test_epi8_mask(common, shorts) & starts, starts);

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
            let tail = _mm512_permutex2var_epi8(f, _mm512_add_epi8(idx, _mm512_set1_epi8(4)), fhi);
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

    // The sieve's entry for each, sixteen at a time. A gather costs about
    // the same however many of its lanes are on (measured on Zen 4), so
    // the starts of several blocks are packed first: sieving each block's
    // starts as they were packed (a gather per block, no store and reload)
    // made the detector ~6% slower on a 1 MiB chat body, and dropping the
    // starts whose head has no entry before packing them ~3% slower (a
    // third are kept, but the test cost more than the gathers it saved).
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
            let pass = (_mm512_test_epi32_mask(both, both) | _mm512_movepi32_mask(offset)) & lanes;
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
            // Their words too, for level 2 sixteen at a time.
            if WORDS {
                _mm512_storeu_si512(
                    words.as_mut_ptr().add(n).cast(),
                    _mm512_maskz_compress_epi32(pass, word),
                );
                _mm512_storeu_si512(
                    nexts.as_mut_ptr().add(n).cast(),
                    _mm512_maskz_compress_epi32(pass, tail),
                );
            }
            n += pass.count_ones() as usize;
        }
        k += 16;
    }
    n
}

/// AVX-512 (F, BW, DQ) with the byte permutes and compressions (VBMI,
/// VBMI2), the lane bit counts (VPOPCNTDQ) and the bit instructions. Only
/// [`Avx512::detect`] makes one, on a CPU that has them all, so holding
/// one is the proof that code compiled for them may run.
#[derive(Debug, Clone, Copy)]
pub(super) struct Avx512(());

impl Avx512 {
    pub(super) fn detect() -> Option<Avx512> {
        let has = std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vbmi")
            && std::arch::is_x86_feature_detected!("avx512vbmi2")
            && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
            && std::arch::is_x86_feature_detected!("bmi1")
            && std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("popcnt");
        has.then_some(Avx512(()))
    }

    /// Levels 1 and 2 as [`Gate::candidates`]: the sieve 64 positions at
    /// a time; level 2 sixteen candidates at a time where there are
    /// enough of them, which needs their words packed with them.
    #[inline]
    pub(super) fn candidates(
        self,
        gate: &Gate,
        text: &[u8],
        (from, to): (usize, usize),
        [at, common, words, nexts]: [&mut [u32]; 4],
        scratch: &mut [u32],
        printable: &mut Printable,
    ) -> usize {
        if to - from < WORDS_FROM {
            let out = [&mut *at, &mut *common, words, nexts];
            let n = self.sieve::<false>(&gate.sieve, text, (from, to), out, scratch, printable);
            return gate.level2(text, from, n, [at, common]);
        }
        let out = [&mut *at, &mut *common, &mut *words, &mut *nexts];
        let n = self.sieve::<true>(&gate.sieve, text, (from, to), out, scratch, printable);
        if n < VECTOR_LEVEL2 {
            return gate.level2(text, from, n, [at, common]);
        }
        self.lengths(gate, n, [at, common, words, nexts])
    }

    /// [`Sieve::portable`] 64 positions at a time, writing as well (with
    /// `WORDS`) each candidate's folded first four bytes and the four
    /// after them into `out[2]` and `out[3]`; `scratch` holds three times
    /// as many words as each of `out` needs.
    pub(super) fn sieve<const WORDS: bool>(
        self,
        sieve: &Sieve,
        text: &[u8],
        (from, to): (usize, usize),
        [at, common, words, nexts]: [&mut [u32]; 4],
        scratch: &mut [u32],
        printable: &mut Printable,
    ) -> usize {
        let room = to - from + SLACK;
        assert!(to <= text.len() && to - from <= CHUNK);
        for out in [&at, &common, &words, &nexts] {
            assert!(out.len() >= room);
        }
        let (offsets, rest) = scratch.split_at_mut(room);
        let (heads, tails) = rest.split_at_mut(room);
        assert!(tails.len() >= room);
        // SAFETY: an `Avx512` exists only on a CPU with the features
        // (`detect`); the bounds are asserted above.
        unsafe {
            self::sieve::<WORDS>(
                sieve,
                text,
                (from, to),
                [at, common, words, nexts],
                [offsets, heads, tails],
                printable,
            )
        }
    }

    /// [`Gate::level2`] sixteen candidates at a time, for the `n` that
    /// [`Avx512::sieve`] wrote into `out` with their words.
    pub(super) fn lengths(self, gate: &Gate, n: usize, out: [&mut [u32]; 4]) -> usize {
        assert!(out.iter().all(|o| o.len() >= n + 16));
        assert!(gate.longs.len() << 6 == 1 << BITS8);
        // SAFETY: an `Avx512` exists only on a CPU with the features
        // (`detect`); the bounds are asserted above.
        unsafe { lengths(gate, n, out) }
    }
}

/// Per dword `j`, the dwords `j` of `a` (low) and of `b` (high) as
/// qwords: `PAIRS[0]` for dwords 0 to 7, `PAIRS[1]` for 8 to 15.
const PAIRS: [[u32; 16]; 2] = {
    let mut pairs = [[0; 16]; 2];
    let mut h = 0;
    while h < 2 {
        let mut j = 0;
        while j < 8 {
            pairs[h][2 * j] = (8 * h + j) as u32;
            pairs[h][2 * j + 1] = (16 + 8 * h + j) as u32;
            j += 1;
        }
        h += 1;
    }
    pairs
};

/// # Safety
/// The CPU has the features enabled here; each of `out` holds at least
/// `n + 16` words; `gate.longs` holds `2^BITS8` bits.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vbmi,avx512vpopcntdq,popcnt")]
unsafe fn lengths(gate: &Gate, n: usize, [at, common, words, nexts]: [&mut [u32]; 4]) -> usize {
    let classes = gate.sieve.classes.each_ref().map(|table| halves(table));
    // SAFETY: 16 dwords each, unaligned loads.
    let (patterns, pairs) = unsafe {
        (
            _mm512_loadu_si512(gate.patterns.as_ptr().cast()),
            PAIRS.map(|p| _mm512_loadu_si512(p.as_ptr().cast())),
        )
    };
    let longs: *const i32 = gate.longs.as_ptr().cast();
    let mut kept = 0;
    let mut k = 0;
    while k < n {
        let lanes = low_bits(n - k) as u16;
        // SAFETY: sixteen lanes from `k < n` are within the buffers;
        // every gathered index is below 2^BITS8 / 32, within `longs`;
        // sixteen lanes from `kept <= k` fit in `at` and `common`.
        unsafe {
            let offset = _mm512_loadu_si512(at.as_ptr().add(k).cast());
            let bits = _mm512_loadu_si512(common.as_ptr().add(k).cast());
            let word = _mm512_loadu_si512(words.as_ptr().add(k).cast());
            let next = _mm512_loadu_si512(nexts.as_ptr().add(k).cast());
            // `lengths_of`: which bytes of the sieve bits are set, as a
            // number from 0 to 15 (one bit per byte, summed by a product).
            let set = _mm512_maskz_mov_epi8(
                _mm512_test_epi8_mask(bits, bits),
                _mm512_set1_epi32(0x0804_0201),
            );
            let pattern =
                _mm512_srli_epi32::<24>(_mm512_mullo_epi32(set, _mm512_set1_epi32(0x0101_0101)));
            let sieved = _mm512_permutexvar_epi32(pattern, patterns);
            // `Sieve::short`: the classes of the first three bytes.
            let class = |k: usize| _mm512_permutex2var_epi8(classes[k].0, word, classes[k].1);
            let short = _mm512_and_si512(
                _mm512_and_si512(class(0), _mm512_srli_epi32::<8>(class(1))),
                _mm512_srli_epi32::<16>(class(2)),
            );
            let short =
                _mm512_test_epi32_mask(short, _mm512_set1_epi32(i32::from(gate.sieve.shorts)));
            let mut lengths =
                _mm512_maskz_mov_epi32(short, _mm512_set1_epi32(i32::from(gate.short_lengths)));
            // `hash_long` of the whole words, each lane's lowest length
            // left at a time (one round for most candidates: a gather
            // costs about the same however many lanes are on).
            let whole = pairs.map(|p| _mm512_permutex2var_epi32(word, p, next));
            let mut rest = _mm512_maskz_mov_epi32(lanes, sieved);
            loop {
                let active = _mm512_test_epi32_mask(rest, rest);
                if active == 0 {
                    break;
                }
                let low = _mm512_and_si512(rest, _mm512_sub_epi32(_mm512_setzero_si512(), rest));
                rest = _mm512_xor_si512(rest, low);
                let len = _mm512_popcnt_epi32(_mm512_sub_epi32(low, _mm512_set1_epi32(1)));
                let hash = |w: __m512i, len: __m256i| {
                    let len = _mm512_cvtepu32_epi64(len);
                    // The word's first `len` bytes, and `len` in the top bits.
                    let keep = _mm512_srlv_epi64(
                        _mm512_set1_epi64(-1),
                        _mm512_sub_epi64(_mm512_set1_epi64(64), _mm512_slli_epi64::<3>(len)),
                    );
                    let x =
                        _mm512_xor_si512(_mm512_and_si512(w, keep), _mm512_slli_epi64::<59>(len));
                    let x = _mm512_xor_si512(x, _mm512_srli_epi64::<29>(x));
                    let x =
                        _mm512_mullo_epi64(x, _mm512_set1_epi64(0x9E37_79B9_7F4A_7C15_u64 as i64));
                    _mm512_cvtepi64_epi32(_mm512_srli_epi64::<{ 64 - BITS8 }>(x))
                };
                let hash = _mm512_inserti64x4::<1>(
                    _mm512_castsi256_si512(hash(whole[0], _mm512_castsi512_si256(len))),
                    hash(whole[1], _mm512_extracti64x4_epi64::<1>(len)),
                );
                let set = _mm512_mask_i32gather_epi32::<4>(
                    _mm512_setzero_si512(),
                    active,
                    _mm512_srli_epi32::<5>(hash),
                    longs,
                );
                let bit = _mm512_srlv_epi32(set, _mm512_and_si512(hash, _mm512_set1_epi32(31)));
                let hit = _mm512_test_epi32_mask(bit, _mm512_set1_epi32(1)) & active;
                lengths = _mm512_mask_or_epi32(lengths, hit, lengths, low);
            }
            let pass = _mm512_test_epi32_mask(lengths, lengths) & lanes;
            _mm512_storeu_si512(
                at.as_mut_ptr().add(kept).cast(),
                _mm512_maskz_compress_epi32(pass, offset),
            );
            _mm512_storeu_si512(
                common.as_mut_ptr().add(kept).cast(),
                _mm512_maskz_compress_epi32(pass, lengths),
            );
            kept += pass.count_ones() as usize;
        }
        k += 16;
    }
    kept
}
