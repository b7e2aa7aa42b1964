//! Decodes the content of a JSON string with escapes 64 bytes at a time.
//!
//! LLM-API bodies have an escape every few dozen bytes (`\n` in prose),
//! and every few bytes in stringified JSON (`{\"path\": \"a.rs\"}` in a
//! tool result), so decoding one escape at a time, a branchy step each,
//! was the tape's main cost. A block of 64 bytes is classified instead
//! (quotes, backslashes, control characters as bit masks); which
//! backslashes start an escape is worked out with carries through the
//! backslash mask, runs of them included; the one-letter escapes (`\n`,
//! `\"`, `\\`...) are swapped for what they stand for with a byte permute,
//! their backslashes dropped with a byte compression, and the block stored
//! at once. A block stops at what it leaves to the caller: the closing
//! quote, a control character, the end of the body, a `\u` escape or an
//! invalid one, or an escape cut by the block's end.
//!
//! AVX-512 (with VBMI and VBMI2) only, chosen at run time; without it the
//! tape decodes escape by escape as before. `portable` (in tests) does what the
//! vector code does, one byte at a time: the reference it is tested
//! against.

#[cfg(test)]
use super::super::segment;
use super::super::segment::Piece;
use super::SIMPLE;

/// Source bytes per block.
pub(super) const BLOCK: usize = 64;

/// What one block decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Block {
    /// Source bytes decoded from where the block starts: all 64, or up to
    /// the first byte left to the caller.
    pub len: usize,
    /// Bit `i` set when a one-letter escape starts at byte `i` of the
    /// block (its backslash); each decodes to one byte.
    pub escapes: u64,
}

/// Decodes `body` from `from` onto `out` a block at a time with `block`,
/// recording each block's escapes in `map` with `record`, until a block
/// stops at a byte it leaves to the caller; returns where that byte is. An
/// escape cut by a block's end is decoded by the next block.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
fn decode_with(
    body: &[u8],
    from: usize,
    out: &mut Vec<u8>,
    map: &mut Vec<Piece>,
    mut block: impl FnMut(&[u8], usize, &mut Vec<u8>) -> Block,
    mut record: impl FnMut(&mut Vec<Piece>, usize, usize, u64),
) -> usize {
    let mut at = from;
    loop {
        let base = out.len();
        let Block { len, escapes } = block(body, at, out);
        if escapes != 0 {
            record(map, base, at, escapes);
        }
        if len == BLOCK {
            // A constant step, not one that waits for this block's stops:
            // the next block's load need not wait for this one.
            at += BLOCK;
            continue;
        }
        at += len;
        let cut = len == BLOCK - 1
            && body.get(at) == Some(&b'\\')
            && SIMPLE[usize::from(body.get(at + 1).copied().unwrap_or(0))] != 0;
        if !cut {
            return at;
        }
    }
}

/// Records in `map` the escapes of a block decoded from `at` onto `base`
/// in the output, their backslashes in `escapes`, one at a time: what the
/// vector code does, to test it against.
#[cfg(test)]
fn record_portable(map: &mut Vec<Piece>, base: usize, at: usize, mut escapes: u64) {
    // Each escape before this one took two bytes and gave one.
    let mut before = 0;
    while escapes != 0 {
        let i = escapes.trailing_zeros() as usize;
        segment::push_escape(map, base + i - before, at + i, 2, 1);
        before += 1;
        escapes &= escapes - 1;
    }
}

/// The block of `body` from `from`, decoded onto `out`, one byte at a
/// time: what the vector code does, to test it against.
#[cfg(test)]
pub(super) fn portable(body: &[u8], from: usize, out: &mut Vec<u8>) -> Block {
    let end = body.len().min(from + BLOCK);
    let mut escapes = 0;
    let mut i = from;
    while i < end {
        let b = body[i];
        if b == b'"' || b < 0x20 {
            break;
        }
        if b == b'\\' {
            // An escape cut by the block's end is left whole to the caller.
            let letter = if i + 1 < from + BLOCK {
                body.get(i + 1).copied().unwrap_or(0)
            } else {
                0
            };
            let decoded = SIMPLE[usize::from(letter)];
            if decoded == 0 {
                break;
            }
            out.push(decoded);
            escapes |= 1 << (i - from);
            i += 2;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Block {
        len: i - from,
        escapes,
    }
}

/// The backslashes in `backslashes` (a block's mask; none escaped from
/// before it) that start an escape: in a run of them, the first, third,
/// fifth... Adding the run's starting bits to a pattern of alternate bits
/// carries through each run, so one subtraction finds them all.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn escape_starts(backslashes: u64) -> u64 {
    const ODD: u64 = 0xAAAA_AAAA_AAAA_AAAA;
    let follows = backslashes << 1;
    // Each run, subtracted from the odd bits (with each bit after a
    // backslash set), flips the parity of its bits from its start on.
    let codes = ((follows | ODD).wrapping_sub(backslashes)) ^ ODD;
    codes & backslashes
}

#[cfg(target_arch = "x86_64")]
pub(super) use x86::Avx512;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m512i, _mm512_add_epi64, _mm512_cmpeq_epi8_mask, _mm512_cmplt_epu8_mask,
        _mm512_cmpneq_epi8_mask, _mm512_loadu_si512, _mm512_mask_blend_epi8,
        _mm512_mask_blend_epi64, _mm512_maskz_compress_epi8, _mm512_maskz_loadu_epi8,
        _mm512_maskz_permutexvar_epi8, _mm512_movepi8_mask, _mm512_permutex2var_epi8,
        _mm512_permutex2var_epi64, _mm512_set_epi64, _mm512_set1_epi8, _mm512_set1_epi64,
        _mm512_setzero_si512, _mm512_storeu_si512, _mm512_sub_epi64,
    };

    use super::super::super::segment::{self, PIECE_WORDS};
    use super::{BLOCK, Block, Piece, SIMPLE, decode_with, escape_starts};

    /// AVX-512 (F, BW) with the byte permutes and compressions (VBMI,
    /// VBMI2). Only [`Avx512::detect`] makes one, on a CPU that has them
    /// all, so holding one is the proof that code compiled for them may
    /// run.
    #[derive(Debug, Clone, Copy)]
    pub(in super::super) struct Avx512(());

    impl Avx512 {
        pub(in super::super) fn detect() -> Option<Avx512> {
            let has = std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vbmi")
                && std::arch::is_x86_feature_detected!("avx512vbmi2")
                && std::arch::is_x86_feature_detected!("bmi1")
                && std::arch::is_x86_feature_detected!("popcnt");
            has.then_some(Avx512(()))
        }

        /// Decodes `body` from `from` (in a string, not after a
        /// backslash) onto `out` until a byte the blocks leave to the
        /// caller (the closing quote, a control character, the end, an
        /// escape other than a one-letter one); returns where it is. Each
        /// escape decoded is recorded in `map`.
        pub(in super::super) fn decode(
            self,
            body: &[u8],
            from: usize,
            out: &mut Vec<u8>,
            map: &mut Vec<Piece>,
        ) -> usize {
            assert!(from <= body.len());
            // SAFETY: an `Avx512` exists only on a CPU with the features
            // (`detect`); `from` is in bounds.
            unsafe { decode(body, from, out, map) }
        }

        /// Records a block's `escapes`: [`record_portable`](super::record_portable),
        /// eight at once.
        #[cfg(test)]
        pub(super) fn record(self, map: &mut Vec<Piece>, base: usize, at: usize, escapes: u64) {
            assert!(escapes & escapes << 1 == 0, "adjacent escapes");
            map.reserve(MOST_ESCAPES);
            // SAFETY: as in `decode`; `map` has room; no two escapes are
            // adjacent, so there are at most 32.
            unsafe { record(map, base, at, escapes) }
        }

        /// One block: [`portable`](super::portable), 64 bytes at once.
        #[cfg(test)]
        pub(super) fn block(self, body: &[u8], from: usize, out: &mut Vec<u8>) -> Block {
            assert!(from <= body.len());
            out.reserve(BLOCK);
            // SAFETY: as in `decode`, and `out` has room for a block.
            unsafe { block(body, from, out) }
        }
    }

    /// # Safety
    /// The CPU has the features enabled here; `from <= body.len()`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,bmi1,popcnt")]
    unsafe fn decode(body: &[u8], from: usize, out: &mut Vec<u8>, map: &mut Vec<Piece>) -> usize {
        decode_with(
            body,
            from,
            out,
            map,
            |body, at, out| {
                out.reserve(BLOCK);
                // SAFETY: the CPU has the features (the caller's promise);
                // a block starts in bounds (`decode_with` goes past a
                // block only when all its bytes were there); `out` has
                // room.
                unsafe { block(body, at, out) }
            },
            |map, base, at, escapes| {
                map.reserve(MOST_ESCAPES);
                // SAFETY: the CPU has the features; `map` has room.
                unsafe { record(map, base, at, escapes) }
            },
        )
    }

    /// The most escapes a block holds: each takes two bytes.
    const MOST_ESCAPES: usize = BLOCK / 2;

    /// [`record_portable`](super::record_portable), eight escapes at a
    /// time: their positions in the block compressed into a register,
    /// each widened to a word, and their pieces written as three words
    /// each with three stores. On fresh text how many escapes a block has
    /// is anyone's guess: a loop over them mispredicted its end once a
    /// block, where this one runs once for up to eight (most blocks).
    ///
    /// # Safety
    /// The CPU has the features enabled here; `map` has room for
    /// [`MOST_ESCAPES`] more pieces; `escapes` has at most that many bits,
    /// no two adjacent (as a block's escapes).
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,popcnt")]
    #[inline]
    unsafe fn record(map: &mut Vec<Piece>, base: usize, at: usize, escapes: u64) {
        // SAFETY: 64 readable bytes, unaligned load.
        let bytes = unsafe { _mm512_loadu_si512(BYTE_INDEX.as_ptr().cast::<__m512i>()) };
        // Byte `k`: where the `k`th escape is in the block.
        let positions = _mm512_maskz_compress_epi8(escapes, bytes);
        let count = escapes.count_ones() as usize;
        let len = map.len();
        // Word `j` of a group: `j`, to subtract from the decoded offsets
        // (each escape before took two bytes and gave one); the group's
        // bytes of `positions` to widen to words.
        let lanes = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
        let source = _mm512_set1_epi64(at as i64);
        let lengths = _mm512_set1_epi64(segment::lengths_word(2, 1) as i64);
        let mut decoded = _mm512_sub_epi64(_mm512_set1_epi64(base as i64), lanes);
        let mut widen = lanes;
        let mut group = 0;
        loop {
            // Bytes `8 * group..` of `positions`, each in a word.
            let at_word = _mm512_maskz_permutexvar_epi8(WORD_LOW_BYTES, widen, positions);
            let decoded_at = _mm512_add_epi64(decoded, at_word);
            let source_at = _mm512_add_epi64(source, at_word);
            // Pieces 0-7 as words: d0 s0 l d1 s1 l d2 s2 | l d3 s3 l d4 s4
            // l d5 | s5 l d6 s6 l d7 s7 l (`d` decoded, `s` source, `l`
            // lengths).
            let words: [__m512i; PIECE_WORDS] = [
                (PIECE_INDEX[0], 0b0010_0100),
                (PIECE_INDEX[1], 0b0100_1001),
                (PIECE_INDEX[2], 0b1001_0010),
            ]
            .map(|(index, lengths_at)| {
                // SAFETY: 64 readable bytes, unaligned load.
                let index = unsafe { _mm512_loadu_si512(index.as_ptr().cast::<__m512i>()) };
                let pairs = _mm512_permutex2var_epi64(decoded_at, index, source_at);
                _mm512_mask_blend_epi64(lengths_at, pairs, lengths)
            });
            // SAFETY: the caller made room for MOST_ESCAPES pieces, the
            // groups of eight written cover no more (a group is written
            // only for escapes left); unaligned stores.
            unsafe {
                let to = map.as_mut_ptr().add(len + 8 * group).cast::<__m512i>();
                for (i, w) in words.into_iter().enumerate() {
                    _mm512_storeu_si512(to.add(i), w);
                }
            }
            group += 1;
            if 8 * group >= count {
                break;
            }
            decoded = _mm512_sub_epi64(decoded, _mm512_set1_epi64(8));
            widen = _mm512_add_epi64(widen, _mm512_set1_epi64(8));
        }
        // SAFETY: the first `count` pieces past `len` were just written,
        // each as its three words.
        unsafe { map.set_len(len + count) };
    }

    /// Bytes 0 to 63.
    const BYTE_INDEX: [u8; 64] = {
        let mut bytes = [0; 64];
        let mut i = 0;
        while i < 64 {
            bytes[i] = i as u8;
            i += 1;
        }
        bytes
    };

    /// The low byte of each word.
    const WORD_LOW_BYTES: u64 = 0x0101_0101_0101_0101;

    /// Which word of (decoded offsets, source offsets) each word of the
    /// three stores takes (8 + `j` is the source of piece `j`); the lengths
    /// words are blended in after.
    const PIECE_INDEX: [[u64; 8]; 3] = [
        [0, 8, 0, 1, 9, 0, 2, 10],
        [0, 3, 11, 0, 4, 12, 0, 5],
        [13, 0, 6, 14, 0, 7, 15, 0],
    ];

    /// # Safety
    /// The CPU has the features enabled here; `from <= body.len()`; `out`
    /// has room for 64 more bytes.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,bmi1,popcnt")]
    #[inline]
    unsafe fn block(body: &[u8], from: usize, out: &mut Vec<u8>) -> Block {
        let rest = &body[from..];
        let v = match rest.first_chunk::<BLOCK>() {
            // SAFETY: 64 readable bytes, unaligned load.
            Some(chunk) => unsafe { _mm512_loadu_si512(chunk.as_ptr().cast::<__m512i>()) },
            // Past the end reads as zeros, control characters: a stop.
            // SAFETY: the mask covers only the `rest.len()` readable bytes;
            // the others are not touched.
            None => unsafe {
                _mm512_maskz_loadu_epi8((1u64 << rest.len()) - 1, rest.as_ptr().cast::<i8>())
            },
        };
        let quotes = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'"' as i8));
        let backslashes = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'\\' as i8));
        let controls = _mm512_cmplt_epu8_mask(v, _mm512_set1_epi8(0x20));
        let at = out.len();
        if backslashes == 0 {
            // Most blocks of prose: stored as they are, up to a stop.
            let len = (quotes | controls).trailing_zeros() as usize;
            // SAFETY: as below.
            unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(at).cast::<__m512i>(), v) };
            // SAFETY: the bytes up to the new length were just stored.
            unsafe { out.set_len(at + len) };
            return Block { len, escapes: 0 };
        }
        let starts = escape_starts(backslashes);
        let letters = starts << 1;
        // What each byte would stand for after a backslash: SIMPLE, looked
        // up by the low seven bits (both halves of its first 128 entries),
        // 0 for a byte that makes no one-letter escape, as does any byte
        // from 0x80 on.
        // SAFETY: 64 readable bytes each, unaligned loads.
        let low = unsafe { _mm512_loadu_si512(HALVES[0].as_ptr().cast::<__m512i>()) };
        let high = unsafe { _mm512_loadu_si512(HALVES[1].as_ptr().cast::<__m512i>()) };
        let decoded = _mm512_permutex2var_epi8(low, v, high);
        let simple =
            _mm512_cmpneq_epi8_mask(decoded, _mm512_setzero_si512()) & !_mm512_movepi8_mask(v);
        // A stop at: an unescaped quote, a control character, the
        // backslash of an escape that is not a one-letter one, and one
        // whose letter is in the next block.
        let stops =
            (quotes & !letters) | controls | ((letters & !simple) >> 1) | (starts & 1 << 63);
        let len = stops.trailing_zeros() as usize;
        let before = if len == BLOCK { !0 } else { (1 << len) - 1 };
        let escapes = starts & before;
        let merged = _mm512_mask_blend_epi8(letters, v, decoded);
        let packed = _mm512_maskz_compress_epi8(before & !escapes, merged);
        // SAFETY: the caller reserved 64 bytes past `at`; the store is
        // unaligned.
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(at).cast::<__m512i>(), packed) };
        // SAFETY: the bytes up to the new length were just stored.
        unsafe { out.set_len(at + len - escapes.count_ones() as usize) };
        Block { len, escapes }
    }

    /// SIMPLE's first 128 entries, in halves for a two-table permute.
    const HALVES: [[u8; 64]; 2] = {
        let mut halves = [[0; 64]; 2];
        let mut i = 0;
        while i < 128 {
            halves[i / 64][i % 64] = SIMPLE[i];
            i += 1;
        }
        halves
    };
}

#[cfg(not(target_arch = "x86_64"))]
pub(super) use elsewhere::Avx512;

/// No AVX-512 off x86-64: the tape decodes escape by escape.
#[cfg(not(target_arch = "x86_64"))]
mod elsewhere {
    use super::Piece;

    #[derive(Debug, Clone, Copy)]
    pub(in super::super) enum Avx512 {}

    impl Avx512 {
        pub(in super::super) fn detect() -> Option<Avx512> {
            None
        }

        pub(in super::super) fn decode(
            self,
            _: &[u8],
            _: usize,
            _: &mut Vec<u8>,
            _: &mut Vec<Piece>,
        ) -> usize {
            match self {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which backslashes start an escape, one at a time.
    fn starts_one_by_one(backslashes: u64) -> u64 {
        let mut starts = 0;
        let mut i = 0;
        while i < 64 {
            if backslashes >> i & 1 == 1 {
                starts |= 1 << i;
                i += 2;
            } else {
                i += 1;
            }
        }
        starts
    }

    #[test]
    fn escape_starts_are_every_other_backslash_of_a_run() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let y = x.rotate_left(23);
            // Sparse, dense and mixed runs.
            let mask = match round % 3 {
                0 => x & y,
                1 => x | y,
                _ => x,
            };
            assert_eq!(escape_starts(mask), starts_one_by_one(mask), "{mask:#x}");
        }
        for mask in [0, !0, 1, 1 << 63, 0b0111, 0b1110, !0 >> 1, !0 << 1] {
            assert_eq!(escape_starts(mask), starts_one_by_one(mask), "{mask:#x}");
        }
    }

    #[test]
    fn the_portable_block_stops_where_the_caller_takes_over() {
        let run = |body: &[u8], from| {
            let mut out = Vec::new();
            let block = portable(body, from, &mut out);
            (block.len, block.escapes, out)
        };
        assert_eq!(run(br#"a\nb\"c" x"#, 0), (7, 0b1_0010, b"a\nb\"c".to_vec()));
        // A `\u` escape, an invalid one, a control character, the end.
        assert_eq!(run(br"ab\u0040", 0).0, 2);
        assert_eq!(run(br"ab\x", 0).0, 2);
        assert_eq!(run(b"ab\x01", 0).0, 2);
        assert_eq!(run(br"ab\", 0).0, 2);
        assert_eq!(run(b"abc", 1), (2, 0, b"bc".to_vec()));
        // An escape whose letter is in the next block.
        let mut long = vec![b'a'; 63];
        long.extend_from_slice(br"\n");
        assert_eq!(run(&long, 0).0, 63);
        assert_eq!(run(&long, 1), (64, 1 << 62, [&long[1..63], b"\n"].concat()));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_vector_record_writes_the_pieces_the_portable_one_does() {
        let Some(avx512) = Avx512::detect() else {
            return;
        };
        // Escapes are never adjacent: a random mask with every bit after
        // a set one cleared; sparse, dense (up to 32: four groups of
        // eight) and at the block's ends.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut masks = vec![0, 1, 1 << 63, 0x5555_5555_5555_5555, 0xAAAA_AAAA_AAAA_AAAA];
        masks.extend((1..=32).map(|n| 0x5555_5555_5555_5555u64 >> (64 - 2 * n)));
        for round in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let y = x.rotate_left(29);
            masks.push(match round % 3 {
                0 => x & y,
                1 => x | y,
                _ => x,
            });
        }
        for (n, mut mask) in masks.into_iter().enumerate() {
            // Keep the first of each run of set bits, drop its follower.
            let mut escapes = 0;
            while mask != 0 {
                let bit = mask & mask.wrapping_neg();
                escapes |= bit;
                mask &= !(bit | bit << 1);
            }
            let (base, at) = (n % 5000 + 64, n % 7000 + 64);
            // Appended after pieces there already.
            let mut want = Vec::new();
            segment::push_copy(&mut want, 3, 7);
            let mut got = want.clone();
            record_portable(&mut want, base, at, escapes);
            avx512.record(&mut got, base, at, escapes);
            assert_eq!(got, want, "{escapes:#x}");
        }
    }

    /// Bodies dense in everything a block decodes or stops at.
    fn bodies() -> impl Iterator<Item = Vec<u8>> {
        const PIECES: &[&[u8]] = &[
            b"a",
            b"bc ",
            b"\"",
            b"\\",
            br"\n",
            br#"\""#,
            br"\\",
            br"\/",
            br"\b",
            br"\f",
            br"\r",
            br"\t",
            br"\u0040",
            br"\ud83d\ude00",
            br"\x",
            br"\0",
            b"\x01",
            b"\x1f",
            b"\n",
            b" ",
            "é".as_bytes(),
            "😀".as_bytes(),
            b"\x7f",
            br"\\\",
            br"\\\\",
        ];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        (0..3000).map(move |round| {
            let mut body = Vec::new();
            let len = round % 200;
            while body.len() < len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Now and then a long plain run, to cross whole blocks.
                if x.is_multiple_of(16) {
                    body.extend(std::iter::repeat_n(b'w', (x >> 8) as usize % 70));
                } else {
                    body.extend_from_slice(PIECES[(x >> 8) as usize % PIECES.len()]);
                }
            }
            body
        })
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_vector_block_decodes_what_the_portable_one_does() {
        let Some(avx512) = Avx512::detect() else {
            return;
        };
        for body in bodies() {
            for from in 0..=body.len() {
                // Output appended after what is there already.
                let (mut want, mut got) = (b"xyz".to_vec(), b"xyz".to_vec());
                let expected = portable(&body, from, &mut want);
                let block = avx512.block(&body, from, &mut got);
                assert_eq!(
                    block,
                    expected,
                    "{:?} from {from}",
                    body.escape_ascii().to_string()
                );
                assert_eq!(
                    got,
                    want,
                    "{:?} from {from}",
                    body.escape_ascii().to_string()
                );
            }
        }
    }
}
