//! Finds the bytes a JSON string scan must stop at: `"` (its end), `\` (an
//! escape) and control characters (below 0x20, invalid in a string).
//!
//! LLM-API bodies have one of these every few dozen bytes (every few bytes
//! in stringified JSON), so the cost per stop matters as much as the cost
//! per byte: a `memchr2` call costs ~20 cycles to set up, more than the
//! whole budget per stop. Instead 64 bytes at a time are classified into a
//! bit mask (on x86-64 one masked load and three compares into mask
//! registers with AVX-512BW, compares and `movemask` with AVX2 or else
//! SSE2, which every x86-64 CPU has; a byte loop elsewhere), and each stop
//! is then a `trailing_zeros`. The vector code is the one place that
//! needs `unsafe`: unaligned loads and calls into target-feature functions.

/// Bytes per classified window.
const WINDOW: usize = 64;

/// A forward-only search for special bytes in `bytes`.
pub(crate) struct Specials<'a> {
    bytes: &'a [u8],
    /// Where the classified window starts; `bits` has bit `i` set when
    /// `bytes[base + i]` is special, or past the end of `bytes`.
    base: usize,
    bits: u64,
}

impl<'a> Specials<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Specials<'a> {
        Specials {
            bytes,
            base: 0,
            bits: classify(bytes, 0),
        }
    }

    /// The first special byte at or after `from`, or a position at or past
    /// the end of the bytes when there is none. `from` must not be less
    /// than in the previous call.
    #[inline(always)]
    pub(crate) fn next(&mut self, mut from: usize) -> usize {
        debug_assert!(from >= self.base, "the search only goes forward");
        loop {
            if from >= self.base + WINDOW {
                if from >= self.bytes.len() {
                    return from;
                }
                self.base = from;
                self.bits = classify(self.bytes, from);
            }
            let live = self.bits & (u64::MAX << (from - self.base));
            if live != 0 {
                return self.base + live.trailing_zeros() as usize;
            }
            from = self.base + WINDOW;
        }
    }
}

fn is_special(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

/// The mask of `bytes[base..base + 64]`; bytes past the end count as
/// special, so a search never runs off the end unnoticed.
#[cfg(target_arch = "x86_64")]
#[inline]
fn classify(bytes: &[u8], base: usize) -> u64 {
    if std::arch::is_x86_feature_detected!("avx512bw") {
        // SAFETY: the CPU has AVX-512BW, just checked (the answer is cached).
        unsafe { x86::classify_avx512(bytes, base) }
    } else if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, just checked (the answer is cached).
        unsafe { x86::classify_avx2(bytes, base) }
    } else {
        // SAFETY: SSE2 is part of the x86-64 baseline, always present.
        unsafe { x86::classify_sse2(bytes, base) }
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn classify(bytes: &[u8], base: usize) -> u64 {
    match full_window(bytes, base) {
        Some(window) => portable_classify(window),
        None => portable_classify(&padded_window(bytes, base)),
    }
}

/// The 64 bytes from `base`, if there are that many.
#[inline]
fn full_window(bytes: &[u8], base: usize) -> Option<&[u8; WINDOW]> {
    bytes.get(base..)?.first_chunk::<WINDOW>()
}

/// What is left from `base`, followed by zeros (control characters, so
/// special).
fn padded_window(bytes: &[u8], base: usize) -> [u8; WINDOW] {
    let rest = bytes.get(base..).unwrap_or_default();
    let mut padded = [0; WINDOW];
    padded[..rest.len()].copy_from_slice(rest);
    padded
}

#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn portable_classify(window: &[u8; WINDOW]) -> u64 {
    window
        .iter()
        .enumerate()
        .fold(0, |bits, (i, &b)| bits | u64::from(is_special(b)) << i)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8,
        _mm_or_si128, _mm_set1_epi8, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_max_epu8,
        _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8, _mm512_cmpeq_epi8_mask,
        _mm512_cmplt_epu8_mask, _mm512_maskz_loadu_epi8, _mm512_set1_epi8,
    };

    use super::{WINDOW, full_window, padded_window};

    /// The whole window in one masked load: no copy of a short tail, whose
    /// missing bytes load as zeros (control characters, so special).
    #[target_feature(enable = "avx512bw")]
    pub(super) fn classify_avx512(bytes: &[u8], base: usize) -> u64 {
        let rest = bytes.len().saturating_sub(base);
        let lanes = if rest >= WINDOW {
            u64::MAX
        } else {
            (1 << rest) - 1
        };
        // SAFETY: the mask covers only bytes of `bytes` (masked-off bytes
        // are not read, so the address may pass its end).
        let v = unsafe { _mm512_maskz_loadu_epi8(lanes, bytes.as_ptr().wrapping_add(base).cast()) };
        _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'"' as i8))
            | _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'\\' as i8))
            | _mm512_cmplt_epu8_mask(v, _mm512_set1_epi8(0x20))
    }

    #[target_feature(enable = "sse2")]
    pub(super) fn classify_sse2(bytes: &[u8], base: usize) -> u64 {
        match full_window(bytes, base) {
            Some(window) => sse2(window),
            None => sse2(&padded_window(bytes, base)),
        }
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn classify_avx2(bytes: &[u8], base: usize) -> u64 {
        match full_window(bytes, base) {
            Some(window) => avx2(window),
            None => avx2(&padded_window(bytes, base)),
        }
    }

    #[target_feature(enable = "sse2")]
    #[inline]
    fn sse2(window: &[u8; WINDOW]) -> u64 {
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let below_space = _mm_set1_epi8(0x1f);
        let mut bits = 0;
        for (i, chunk) in window.chunks_exact(16).enumerate() {
            // SAFETY: the chunk has 16 bytes; the load is unaligned.
            let v = unsafe { _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>()) };
            // Unsigned `v <= 0x1f` is `max(v, 0x1f) == 0x1f`.
            let control = _mm_cmpeq_epi8(_mm_max_epu8(v, below_space), below_space);
            let special = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                control,
            );
            let mask = _mm_movemask_epi8(special) as u16;
            bits |= u64::from(mask) << (16 * i);
        }
        bits
    }

    /// The same, 32 bytes at a time.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn avx2(window: &[u8; WINDOW]) -> u64 {
        let quote = _mm256_set1_epi8(b'"' as i8);
        let backslash = _mm256_set1_epi8(b'\\' as i8);
        let below_space = _mm256_set1_epi8(0x1f);
        let mut bits = 0;
        for (i, chunk) in window.chunks_exact(32).enumerate() {
            // SAFETY: the chunk has 32 bytes; the load is unaligned.
            let v = unsafe { _mm256_loadu_si256(chunk.as_ptr().cast::<__m256i>()) };
            let control = _mm256_cmpeq_epi8(_mm256_max_epu8(v, below_space), below_space);
            let special = _mm256_or_si256(
                _mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash)),
                control,
            );
            let mask = _mm256_movemask_epi8(special) as u32;
            bits |= u64::from(mask) << (32 * i);
        }
        bits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vector_and_portable_classifiers_agree() {
        let mut window = [0u8; WINDOW];
        for seed in 0..2000u64 {
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            for b in window.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly the interesting bytes and their neighbours.
                *b = [b'"', b'\\', 0x1f, 0x20, 0x00, b'a', 0x7f, 0x80, 0xff, b'!']
                    [(x % 10) as usize]
                    .wrapping_add(if x % 7 == 0 { (x >> 8) as u8 } else { 0 });
            }
            let portable = portable_classify(&window);
            assert_eq!(classify(&window, 0), portable);
            // SAFETY: SSE2 is part of the x86-64 baseline.
            #[cfg(target_arch = "x86_64")]
            assert_eq!(unsafe { x86::classify_sse2(&window, 0) }, portable);
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2, just checked.
                assert_eq!(unsafe { x86::classify_avx2(&window, 0) }, portable);
            }
            // A short tail is padded with specials.
            let tail = 64 - (seed % 64) as usize;
            let expected = portable >> (64 - tail) | u64::MAX.checked_shl(tail as u32).unwrap_or(0);
            assert_eq!(classify(&window, 64 - tail), expected);
        }
    }

    #[test]
    fn stops_are_found_in_order_across_windows_and_at_the_end() {
        let mut text = vec![b'a'; 200];
        text[3] = b'"';
        text[70] = b'\\';
        text[130] = 0x0a;
        let mut specials = Specials::new(&text);
        assert_eq!(specials.next(0), 3);
        assert_eq!(specials.next(4), 70);
        assert_eq!(specials.next(71), 130);
        assert!(specials.next(131) >= text.len());
        assert_eq!(Specials::new(b"").next(0), 0);
    }
}
