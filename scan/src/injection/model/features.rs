//! The learned scorer's features: a text's words hashed into a table of
//! weights, bit for bit as the trainer computes them
//! (`scan/train/features.py`; a table test pins the two together).
//!
//! A word is a run of ASCII letters and digits and non-ASCII bytes (so a
//! word of any script is a run of its UTF-8 bytes), lowercased by setting
//! bit 5 of every byte (which leaves digits alone). Each word gives a
//! unigram and, with the word before it, a bigram feature. Words are summed
//! in blocks of `block`; a window is two neighbouring blocks, and the text's
//! evidence is its largest window: an injection is a few sentences inside
//! what may be a long tool output, and a sum over the whole text would
//! dilute it in the benign text around it. The detector reads only the
//! stretches of a text around the hits of the rules' anchors ([`spans`]);
//! the trainer learns from every window of whole texts.

/// Bytes of a word that are hashed: longer words (base64, hashes) are rare
/// and say little beyond their start.
pub const MAX_WORD: usize = 32;

const K1: u64 = 0x9E37_79B9_7F4A_7C15;
const K2: u64 = 0xBF58_476D_1CE4_E5B9;
const K3: u64 = 0x94D0_49BB_1331_11EB;
const LOWER: u64 = 0x2020_2020_2020_2020;

/// Whether a byte belongs to a word. Arithmetic only, so that
/// [`word_mask`]'s loop vectorizes.
#[inline]
fn is_word(b: u8) -> bool {
    (b | 0x20).wrapping_sub(b'a') < 26 || b.wrapping_sub(b'0') < 10 || b >= 0x80
}

/// Bytes of text classified at a time: one bit each in a `u64`.
const BLOCK_BYTES: usize = 64;

/// Bit `i` set where `block[i]` (at most 64 bytes) belongs to a word.
#[inline]
fn word_mask(block: &[u8]) -> u64 {
    if let Ok(full) = <&[u8; BLOCK_BYTES]>::try_from(block) {
        // A fixed length, and no branch in the loop, so that the compiler
        // can classify the block with vector compares.
        let mut m = 0u64;
        for (i, &b) in full.iter().enumerate() {
            m |= u64::from(is_word(b)) << i;
        }
        m
    } else {
        block
            .iter()
            .enumerate()
            .fold(0, |m, (i, &b)| m | u64::from(is_word(b)) << i)
    }
}

/// The hash of a word's first [`MAX_WORD`] bytes, lowercased.
#[inline]
pub fn word_hash(word: &[u8]) -> u64 {
    let word = &word[..word.len().min(MAX_WORD)];
    let mut h = word.len() as u64;
    let mut chunks = word.chunks_exact(8);
    for chunk in &mut chunks {
        let mut b = [0u8; 8];
        b.copy_from_slice(chunk);
        h = (h ^ (u64::from_le_bytes(b) | LOWER)).wrapping_mul(K1);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        let lower = LOWER >> (8 * (8 - rest.len()));
        h = (h ^ (u64::from_le_bytes(b) | lower)).wrapping_mul(K1);
    }
    h
}

#[inline]
fn fmix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(K2);
    x ^ (x >> 29)
}

/// The table slot of a word, for a table of `2^bits` weights.
#[inline]
pub fn unigram(h: u64, bits: u32) -> usize {
    (fmix(h) >> (64 - bits)) as usize
}

/// The table slot of a word after the word hashed `prev`.
#[inline]
pub fn bigram(prev: u64, h: u64, bits: u32) -> usize {
    (fmix(prev.wrapping_mul(K3) ^ h) >> (64 - bits)) as usize
}

/// Calls `each` with the hash of every word of `text`, in order.
///
/// The text is classified 64 bytes at a time into a mask of word bytes, and
/// the words are read off the mask (their starts and lengths by counting
/// bits): no branch per byte, one per word. A word that runs past a block
/// is finished in the next.
#[inline]
pub fn words(text: &[u8], each: impl FnMut(u64)) {
    words_with(text, |b| word_mask(b), each);
}

/// [`words`] with `mask` classifying each block of 64 bytes (a shorter last
/// block goes to [`word_mask`]).
#[inline(always)]
fn words_with(text: &[u8], mask: impl Fn(&[u8; BLOCK_BYTES]) -> u64, mut each: impl FnMut(u64)) {
    // The start of a word that ran to the end of the previous block.
    let mut open: Option<usize> = None;
    for (k, block) in text.chunks(BLOCK_BYTES).enumerate() {
        let base = k * BLOCK_BYTES;
        let mut m = match <&[u8; BLOCK_BYTES]>::try_from(block) {
            Ok(full) => mask(full),
            Err(_) => word_mask(block),
        };
        if let Some(start) = open {
            let run = (!m).trailing_zeros() as usize;
            if run == BLOCK_BYTES {
                continue;
            }
            each(hash_at(text, start, base + run));
            open = None;
            m &= !low_bits(run);
        }
        while m != 0 {
            let s = m.trailing_zeros() as usize;
            let len = (!(m >> s)).trailing_zeros() as usize;
            if s + len == BLOCK_BYTES {
                open = Some(base + s);
                break;
            }
            each(hash_at(text, base + s, base + s + len));
            m &= !low_bits(s + len);
        }
    }
    if let Some(start) = open {
        each(hash_at(text, start, text.len()));
    }
}

/// The lowest `n` bits, `n` below 64.
#[inline]
fn low_bits(n: usize) -> u64 {
    (1u64 << n) - 1
}

/// [`word_hash`] of `text[start..end]`, reading a short word as one
/// eight-byte load where the text has eight bytes from its start.
#[inline]
fn hash_at(text: &[u8], start: usize, end: usize) -> u64 {
    let len = end - start;
    if len <= 8
        && let Some(bytes) = text.get(start..start + 8)
    {
        let mut b = [0u8; 8];
        b.copy_from_slice(bytes);
        // The word's bytes, lowercased, and zeros after them.
        let keep = u64::MAX >> (8 * (8 - len));
        let x = (u64::from_le_bytes(b) | LOWER) & keep;
        return ((len as u64) ^ x).wrapping_mul(K1);
    }
    word_hash(&text[start..end])
}

/// The largest window sum of `table` (of `2^bits` weights) over `text`,
/// in blocks of `block` words, and the number of words; `None` when the
/// text has no word.
pub fn max_window(text: &[u8], table: &[i8], bits: u32, block: usize) -> Option<(i32, usize)> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("bmi1")
    {
        // SAFETY: the CPU has AVX-512BW and BMI1, just checked (the answers
        // are cached).
        return unsafe { max_window_avx512(text, table, bits, block) };
    }
    max_window_with(text, table, bits, block, |b| word_mask(b))
}

/// [`max_window`] compiled for AVX-512BW and BMI1: each block's word bytes
/// found by three compares into a mask register, the words read off the
/// mask with `tzcnt`.
///
/// # Safety
///
/// The CPU must have AVX-512F, AVX-512BW and BMI1.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,bmi1")]
unsafe fn max_window_avx512(
    text: &[u8],
    table: &[i8],
    bits: u32,
    block: usize,
) -> Option<(i32, usize)> {
    use std::arch::x86_64::{
        __m512i, _mm512_cmplt_epu8_mask, _mm512_loadu_si512, _mm512_movepi8_mask, _mm512_or_si512,
        _mm512_set1_epi8, _mm512_sub_epi8,
    };
    let mask = |b: &[u8; BLOCK_BYTES]| {
        // SAFETY: 64 bytes read from a 64-byte array; the features are
        // this function's.
        unsafe {
            let v = _mm512_loadu_si512(b.as_ptr().cast::<__m512i>());
            let letter = _mm512_sub_epi8(
                _mm512_or_si512(v, _mm512_set1_epi8(0x20)),
                _mm512_set1_epi8(b'a' as i8),
            );
            let digit = _mm512_sub_epi8(v, _mm512_set1_epi8(b'0' as i8));
            _mm512_cmplt_epu8_mask(letter, _mm512_set1_epi8(26))
                | _mm512_cmplt_epu8_mask(digit, _mm512_set1_epi8(10))
                | _mm512_movepi8_mask(v)
        }
    };
    max_window_with(text, table, bits, block, mask)
}

/// [`max_window`] without the vector classification, for the tests.
#[cfg(test)]
pub fn max_window_scalar(
    text: &[u8],
    table: &[i8],
    bits: u32,
    block: usize,
) -> Option<(i32, usize)> {
    max_window_with(text, table, bits, block, |b| word_mask(b))
}

/// [`max_window`] with `mask` classifying the full blocks.
#[inline(always)]
fn max_window_with(
    text: &[u8],
    table: &[i8],
    bits: u32,
    block: usize,
    mask: impl Fn(&[u8; BLOCK_BYTES]) -> u64,
) -> Option<(i32, usize)> {
    debug_assert_eq!(table.len(), 1 << bits);
    let mut prev: Option<u64> = None;
    let mut sum = 0i32;
    let mut count = 0usize;
    let mut last: Option<i32> = None;
    let mut best: Option<i32> = None;
    let mut total = 0usize;
    words_with(text, mask, |h| {
        total += 1;
        sum += i32::from(table[unigram(h, bits)]);
        if let Some(p) = prev {
            sum += i32::from(table[bigram(p, h, bits)]);
        }
        prev = Some(h);
        count += 1;
        if count == block {
            if let Some(l) = last {
                best = Some(best.map_or(l + sum, |b| b.max(l + sum)));
            }
            last = Some(sum);
            sum = 0;
            count = 0;
        }
    });
    let best = match (last, count) {
        (None, 0) => None,
        (None, _) => Some(sum),
        (Some(l), 0) => Some(best.unwrap_or(l)),
        (Some(l), _) => Some(best.map_or(l + sum, |b| b.max(l + sum))),
    };
    best.map(|b| (b, total))
}

/// Bytes of text either side of an anchor hit that the model reads
/// ([`spans`]): 32 words of six bytes, so one 64-word window centred on
/// the hit in prose of the usual word length. Chosen on the training sets
/// (`scan/train`, 2026-12-07): of the 3,586 training attacks each put
/// between two pieces of the training documentation, the model (a 2^18
/// table, tried first) scored 1,031 at 0.8 or more reading 192 bytes
/// either side of the hits, 997 reading 384; of the attacks alone, 2,926
/// either way.
pub const RADIUS: usize = 192;

/// Bytes a span's ends move to leave no word cut in two; a word longer
/// than this (a base64 run) is cut.
const SNAP: usize = MAX_WORD;

/// The stretches of `text` within [`RADIUS`] bytes of the `hits`
/// (`start`, `end`, in any order), merged where they touch, in order, each
/// shrunk to begin and end between words. A text shorter than a stretch
/// is one span, the whole text.
pub fn spans(text: &[u8], hits: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut around: Vec<(usize, usize)> = hits
        .iter()
        .map(|&(s, e)| {
            (
                s.saturating_sub(RADIUS),
                e.saturating_add(RADIUS).min(text.len()),
            )
        })
        .collect();
    around.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(around.len());
    for (s, e) in around {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    for span in &mut merged {
        // Forward past the rest of a word the start cut, back before the
        // start of a word the end cut.
        let (mut s, mut e) = *span;
        let limit = (s + SNAP).min(e);
        while s > 0 && s < limit && is_word(text[s - 1]) && is_word(text[s]) {
            s += 1;
        }
        let limit = e.saturating_sub(SNAP).max(s);
        while e < text.len() && e > limit && is_word(text[e - 1]) && is_word(text[e]) {
            e -= 1;
        }
        *span = (s, e);
    }
    merged
}
