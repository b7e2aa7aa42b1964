//! Level 1 of the gate with AVX2, for x86-64 CPUs without AVX-512: a
//! 64-byte block's token starts and the classes of their first three bytes
//! found 32 bytes at a time, then the starts' heads hashed and looked up
//! eight at a time. Compiled for x86-64 only; [`Avx2::detect`] decides at
//! run time whether it runs.

use std::arch::x86_64::*;

use super::x86::{POW2, low_bits};
use super::{CHUNK, HEAD_BITS, MUL_HEAD, MUL_TAIL, Printable, SLACK, Sieve, each_start, is_letter};

/// Per mask of eight lanes, the lanes it has, packed low (one byte each):
/// AVX2 has no compress, so a lookup gives the permute that does one.
const PACK: [u64; 256] = {
    let mut pack = [0; 256];
    let mut mask = 0;
    while mask < 256 {
        let (mut lane, mut n) = (0, 0);
        while lane < 8 {
            if mask >> lane & 1 != 0 {
                pack[mask] |= (lane as u64) << (8 * n);
                n += 1;
            }
            lane += 1;
        }
        mask += 1;
    }
    pack
};

/// A byte lookup of [`Sieve::classes`] in four 16-byte tables: a folded
/// byte, less its top bit, is one of 0x20-0x3F or 0x60-0x7F (folding sets
/// bit 5), so bits 6 and 4 pick the table and the low four the entry.
///
/// The tables are kept each xor-ed with the one before, and a byte is
/// looked up in every table from the first to its own: `pshufb` gives
/// zero where the index has its top bit set, which the byte less the
/// table's first byte has for the tables after its own. The xor of the
/// lookups is then its own table's entry. Three subtractions and three
/// xors replace three `pblendvb`, each two or three operations on Intel
/// cores (one on AMD's).
#[derive(Clone, Copy)]
struct Classes([__m256i; 4]);

/// [`Classes`] as bytes: per byte position, the four tables.
type Tables = [[[u8; 16]; 4]; 3];

/// Where each table starts, of the bytes less bit 5 (`& 0x5F`).
const TABLE_STARTS: [u8; 4] = [0x00, 0x10, 0x40, 0x50];

impl Classes {
    /// The tables of the classes of a byte position, each xor-ed with the
    /// one before.
    fn tables(table: &[u8; 128]) -> [[u8; 16]; 4] {
        std::array::from_fn(|t| {
            let entry = |t: usize, k: usize| table[0x20 | usize::from(TABLE_STARTS[t]) | k];
            std::array::from_fn(|k| match t {
                0 => entry(0, k),
                _ => entry(t, k) ^ entry(t - 1, k),
            })
        })
    }

    #[target_feature(enable = "avx2")]
    fn new(tables: &[[u8; 16]; 4]) -> Classes {
        // SAFETY: 16 readable bytes each, unaligned loads.
        Classes(tables.each_ref().map(|table| unsafe {
            _mm256_broadcastsi128_si256(_mm_loadu_si128(table.as_ptr().cast()))
        }))
    }

    /// The classes of each byte of `bytes` (folded or not: bit 5 is not
    /// read).
    #[target_feature(enable = "avx2")]
    fn of(self, bytes: __m256i) -> __m256i {
        let x = _mm256_and_si256(bytes, _mm256_set1_epi8(0x5F));
        let look = |t: usize| {
            let index = _mm256_sub_epi8(x, _mm256_set1_epi8(TABLE_STARTS[t] as i8));
            _mm256_shuffle_epi8(self.0[t], index)
        };
        _mm256_xor_si256(
            _mm256_xor_si256(_mm256_shuffle_epi8(self.0[0], x), look(1)),
            _mm256_xor_si256(look(2), look(3)),
        )
    }
}

/// The bytes of `text` from `at`, 32 of them (the caller checks there are).
#[target_feature(enable = "avx2")]
unsafe fn load(text: &[u8], at: usize) -> __m256i {
    // SAFETY: the caller's: 32 readable bytes at `at`.
    unsafe { _mm256_loadu_si256(text.as_ptr().add(at).cast()) }
}

/// Whether each byte of `x` is in `lo..lo + len`, as a byte mask.
#[target_feature(enable = "avx2")]
fn within(x: __m256i, lo: u8, len: u8) -> __m256i {
    let d = _mm256_sub_epi8(x, _mm256_set1_epi8(lo as i8));
    _mm256_cmpeq_epi8(_mm256_min_epu8(d, _mm256_set1_epi8((len - 1) as i8)), d)
}

/// The top bits of `mask`'s bytes.
#[target_feature(enable = "avx2")]
fn bits(mask: __m256i) -> u64 {
    u64::from(_mm256_movemask_epi8(mask) as u32)
}

/// Bit masks of 32 bytes, bit `k` for byte `k`.
struct Half {
    /// Token starts that are not a word's first letter: marks and the
    /// first bytes of non-ASCII characters.
    marks: u64,
    /// The letters (a word's first letter is known only with the byte
    /// before it).
    letters: u64,
    /// The printable ASCII bytes, `!` to `~` ([`Printable`]).
    visible: u64,
    /// The bytes whose first three bytes a class has: a key may begin
    /// there ...
    keyed: u64,
    /// ... a key of one to three bytes among them.
    short: u64,
}

/// The masks of the 32 bytes at `b` (each read with the two after it).
#[target_feature(enable = "avx2")]
unsafe fn half(window: &[u8], b: usize, classes: &[Classes; 3], shorts: __m256i) -> Half {
    let fold = _mm256_set1_epi8(0x20);
    // SAFETY: the caller's: 34 readable bytes at `b`.
    let [lo, x1, x2] = [0, 1, 2].map(|k| unsafe { load(window, b + k) });
    let f = _mm256_or_si256(lo, fold);
    let letters = bits(within(f, b'a', 26));
    let visible = bits(within(lo, b'!', 94));
    let marks = visible & !letters & !bits(within(lo, b'0', 10));
    let high = bits(_mm256_cmpeq_epi8(
        _mm256_max_epu8(lo, _mm256_set1_epi8(0xC0_u8 as i8)),
        lo,
    ));
    let common = _mm256_and_si256(
        _mm256_and_si256(classes[0].of(lo), classes[1].of(x1)),
        classes[2].of(x2),
    );
    let zero = _mm256_setzero_si256();
    let keyed = !bits(_mm256_cmpeq_epi8(common, zero)) & 0xFFFF_FFFF;
    let short = !bits(_mm256_cmpeq_epi8(_mm256_and_si256(common, shorts), zero)) & 0xFFFF_FFFF;
    Half {
        marks: marks | high,
        letters,
        visible,
        keyed,
        short,
    }
}

/// # Safety
/// The CPU has the features enabled here; `to <= text.len()`,
/// `to - from <= CHUNK` and `at`, `common`, `words` and `nexts` are each
/// at least `to - from + SLACK` long.
/// `printable` takes each block's printable bytes (those of `from..to`).
#[target_feature(enable = "avx2,bmi1,popcnt")]
unsafe fn sieve(
    sieve: &Sieve,
    tables: &Tables,
    text: &[u8],
    (from, to): (usize, usize),
    [at, common, words, nexts]: [&mut [u32]; 4],
    printable: &mut Printable,
) -> usize {
    let classes = tables.each_ref().map(|table| Classes::new(table));
    let shorts = _mm256_set1_epi8(sieve.shorts as i8);

    // The token starts whose first three bytes a class has, as offsets
    // from `from` (with the top bit set when they may begin a short key),
    // with their first four bytes and the four after them, read here as
    // each start's place is known (gathering them from the text later was
    // ~5% slower on Zen 3).
    let mut m = 0;
    let mut b = from;
    while b < to {
        // The block and the eight bytes after it, from a copy padded with
        // zeros near the text's end (as `word_at` pads).
        let mut padded = [0u8; 72];
        let (window, w) = if b + 72 <= text.len() {
            (text, b)
        } else {
            let rest = &text[b..];
            padded[..rest.len()].copy_from_slice(rest);
            (&padded[..], 0)
        };
        // SAFETY: 72 readable bytes at `w` in `window`.
        let (a, c) = unsafe {
            (
                half(window, w, &classes, shorts),
                half(window, w + 32, &classes, shorts),
            )
        };
        let letters = a.letters | c.letters << 32;
        // Past the text the window's bytes are zeros, not printable.
        printable.block((a.visible | c.visible << 32) & low_bits(to - b));
        let after_letter = (letters << 1) | u64::from(b > 0 && is_letter(text[b - 1]));
        let marks = a.marks | c.marks << 32;
        let starts = ((letters & !after_letter) | marks) & (a.keyed | c.keyed << 32);
        let short = a.short | c.short << 32;
        let mask = starts & low_bits(to - b);
        let base = (b - from) as u32;
        each_start(mask, &mut m, |m, k| {
            // SAFETY: `k <= 64`, so eight bytes at `w + k` are within the
            // 72 of the window; `m` is below the starts of the chunk plus
            // eight, within the buffers (SLACK).
            unsafe {
                let word = window
                    .as_ptr()
                    .add(w + k as usize)
                    .cast::<u64>()
                    .read_unaligned();
                *at.get_unchecked_mut(m) = (base + k) | ((short.wrapping_shr(k) as u32) << 31);
                *words.get_unchecked_mut(m) = word as u32;
                *nexts.get_unchecked_mut(m) = (word >> 32) as u32;
            }
        });
        b += 64;
    }

    // The sieve's entry for each, eight at a time.
    let (pow2, fold) = (
        // SAFETY: 32 readable bytes (of 64: the lanes repeat), unaligned load.
        unsafe { _mm256_loadu_si256(POW2.as_ptr().cast()) },
        _mm256_set1_epi32(0x2020_2020),
    );
    let heads: *const i32 = sieve.heads.as_ptr().cast();
    let mut n = 0;
    let mut k = 0;
    while k < m {
        let lanes = low_bits(m - k) as usize & 0xFF;
        // SAFETY: eight lanes from `k < m` are within the buffers (SLACK);
        // every head is below 2^HEAD_BITS, within the table (the lanes
        // past `m` too, whatever their words); eight lanes from `n <= k`
        // fit in `at` and `common`.
        unsafe {
            let marked = _mm256_loadu_si256(at.as_ptr().add(k).cast());
            let word = _mm256_loadu_si256(words.as_ptr().add(k).cast());
            let tail = _mm256_loadu_si256(nexts.as_ptr().add(k).cast());
            let offset = _mm256_and_si256(marked, _mm256_set1_epi32(i32::MAX));
            let head = _mm256_srli_epi32::<{ (32 - HEAD_BITS) as i32 }>(_mm256_mullo_epi32(
                _mm256_or_si256(word, fold),
                _mm256_set1_epi32(MUL_HEAD as i32),
            ));
            let entry = _mm256_i32gather_epi32::<4>(heads, head);
            // `tail_bits`: per byte of the tail's product, its top three
            // bits as one bit of the byte.
            let product = _mm256_mullo_epi32(
                _mm256_or_si256(tail, fold),
                _mm256_set1_epi32(MUL_TAIL as i32),
            );
            let three = _mm256_and_si256(
                _mm256_srli_epi32::<5>(product),
                _mm256_set1_epi32(0x0707_0707),
            );
            let both = _mm256_and_si256(entry, _mm256_shuffle_epi8(pow2, three));
            let zero = _mm256_setzero_si256();
            let hashed = _mm256_xor_si256(_mm256_cmpeq_epi32(both, zero), _mm256_set1_epi32(-1));
            let pass = _mm256_or_si256(hashed, marked);
            let pass = _mm256_movemask_ps(_mm256_castsi256_ps(pass)) as usize & lanes;
            let pick = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(PACK[pass] as i64));
            _mm256_storeu_si256(
                at.as_mut_ptr().add(n).cast(),
                _mm256_permutevar8x32_epi32(offset, pick),
            );
            _mm256_storeu_si256(
                common.as_mut_ptr().add(n).cast(),
                _mm256_permutevar8x32_epi32(both, pick),
            );
            n += pass.count_ones() as usize;
        }
        k += 8;
    }
    n
}

/// AVX2 with the bit instructions, and the sieve's classes as the
/// shuffles read them. Only [`Avx2::detect`] makes one, on a CPU that has
/// them, so holding one is the proof that code compiled for them may run.
#[derive(Debug, Clone)]
pub(super) struct Avx2 {
    tables: Tables,
}

impl Avx2 {
    pub(super) fn detect(sieve: &Sieve) -> Option<Avx2> {
        let has = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("bmi1")
            && std::arch::is_x86_feature_detected!("popcnt");
        has.then(|| Avx2 {
            tables: sieve.classes.each_ref().map(Classes::tables),
        })
    }

    /// [`Sieve::portable`] 64 positions at a time, into `out[0]` and
    /// `out[1]`; `out[2]` and `out[3]` are work space. `printable` takes
    /// the runs of printable bytes of `from..to`.
    pub(super) fn sieve(
        &self,
        sieve: &Sieve,
        text: &[u8],
        (from, to): (usize, usize),
        out: [&mut [u32]; 4],
        printable: &mut Printable,
    ) -> usize {
        let room = to - from + SLACK;
        assert!(to <= text.len() && to - from <= CHUNK);
        assert!(out.iter().all(|o| o.len() >= room));
        // SAFETY: an `Avx2` exists only on a CPU with the features
        // (`detect`); the bounds are asserted above.
        unsafe { self::sieve(sieve, &self.tables, text, (from, to), out, printable) }
    }
}
