//! The literal search of [`super::Needles`]: where a needle written as it
//! is may start, found without reading the text byte by byte.
//!
//! Each needle is given a fragment of [`FRAGMENT`] bytes (its anchor), at
//! the offset where those bytes are rarest in response text
//! ([`FREQUENCY`]), and the fragments are searched together with
//! aho-corasick's packed searcher (Teddy: a SIMD table test of each
//! fragment's bytes, 32 text bytes a step where the CPU has AVX2), which
//! compares a fragment only where its bytes may all be there. A fragment
//! found at `p` proposes the starts `p - offset` of the needles it
//! anchors, and the trie tells the longest needle at each.
//!
//! Why not the automaton alone: aho-corasick's own prefilter looks for the
//! needles' first or "rare" bytes by its own table, which for a secret's
//! forms (`sk-`, `c2st`, hex digits) are common in response text: it
//! stopped every few bytes, and the search ran at 135 MiB/s to 1.4 GiB/s
//! by the secret (`cargo bench -p sluice-scan-bench --bench redact`). The
//! rarest bytes of each needle make the speed depend on the text instead.
//!
//! Nothing is missed: every occurrence of a needle holds its fragment at
//! its offset, fragments are of one length (so two never match at the same
//! place and hide each other) and each place a fragment matches is looked
//! at. The leftmost start wins, the longest needle there; a start left of
//! the best found so far can only come from a fragment within the longest
//! offset of it, so the search stops there.

use aho_corasick::Span;
use aho_corasick::packed::{Config, MatchKind, Searcher};

use super::Trie;

/// The longest anchor fragment: what Teddy's SIMD test looks at (its mask
/// is at most 4 bytes); a longer fragment could not start as near the
/// end of a needle, where its rarest bytes may be.
const FRAGMENT: usize = 4;

/// Shorter needles are left to the automaton: a fragment of one or two
/// bytes turns up everywhere.
const MIN_FRAGMENT: usize = 3;

/// How often each byte turns up in response text, per million bytes:
/// measured over 8 MiB of HTML (Debian's `/usr/share/doc`, the Rust book)
/// and 8 MiB of JSON (Google API discovery documents), weighted equally.
/// Bytes past 0x7F are raised to 2,000: in text in most other languages
/// than English they are every other byte.
#[rustfmt::skip]
const FREQUENCY: [u32; 256] = [
    1, 1, 1, 1, 1, 1, 1, 1, 1, 167, 17832, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    184660, 362, 37678, 958, 60, 38, 677, 695, 1402, 1402, 111, 118, 8035, 8792, 10877, 15227,
    3664, 4393, 4211, 3315, 3274, 2331, 2521, 1788, 2214, 1720, 10104, 1251, 22362, 6456, 22545, 150,
    169, 2518, 919, 2493, 1975, 1647, 1301, 774, 529, 3016, 243, 354, 1466, 1232, 1659, 1127,
    1811, 251, 2272, 3664, 3165, 837, 682, 734, 140, 261, 99, 588, 624, 588, 75, 1726,
    136, 46133, 8226, 28581, 22942, 70210, 10684, 9772, 17657, 35849, 1625, 3537, 25492, 14728, 38560, 40928,
    24745, 1487, 33775, 44031, 51478, 16527, 5356, 4961, 2841, 7488, 1049, 3361, 218, 3355, 68, 1,
    2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000,
    2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000,
    2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000,
    2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000,
    2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000,
    2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000,
    2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000,
    2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000,
];

/// How often `bytes` are expected together, as a product of frequencies:
/// lower is rarer.
fn rarity(bytes: &[u8]) -> f64 {
    bytes
        .iter()
        .map(|&b| f64::from(FREQUENCY[usize::from(b)]) / 1e6)
        .product()
}

/// The offset of the rarest `len`-byte fragment of `needle`; the leftmost
/// of equals. `len` is at most the needle's length.
fn pick(needle: &[u8], len: usize) -> usize {
    (0..=needle.len() - len)
        .min_by(|&a, &b| rarity(&needle[a..a + len]).total_cmp(&rarity(&needle[b..b + len])))
        .unwrap_or(0)
}

/// The fragments and the SIMD searcher over them.
pub(super) struct Anchors {
    searcher: Searcher,
    /// Per fragment (the searcher's pattern id), the offsets in the
    /// needles it anchors: the distinct ones.
    offsets: Vec<Vec<usize>>,
    /// The largest offset of any fragment.
    max_offset: usize,
}

impl Anchors {
    /// `None` when a needle is too short to anchor, or the packed searcher
    /// cannot take the fragments (too many, or no SIMD on this CPU): the
    /// automaton searches then.
    pub(super) fn new(needles: &[&[u8]]) -> Option<Anchors> {
        let len = needles.iter().map(|n| n.len()).min()?.min(FRAGMENT);
        if len < MIN_FRAGMENT {
            return None;
        }
        let mut fragments: Vec<&[u8]> = Vec::new();
        let mut offsets: Vec<Vec<usize>> = Vec::new();
        for needle in needles {
            let offset = pick(needle, len);
            let fragment = &needle[offset..offset + len];
            let id = match fragments.iter().position(|f| *f == fragment) {
                Some(id) => id,
                None => {
                    fragments.push(fragment);
                    offsets.push(Vec::new());
                    fragments.len() - 1
                }
            };
            if !offsets[id].contains(&offset) {
                offsets[id].push(offset);
            }
        }
        let searcher = Config::new()
            .match_kind(MatchKind::LeftmostFirst)
            .builder()
            .extend(&fragments)
            .build()?;
        let max_offset = offsets.iter().flatten().copied().max().unwrap_or(0);
        Some(Anchors {
            searcher,
            offsets,
            max_offset,
        })
    }

    /// The leftmost-longest needle in `hay` as `(start, end, needle)`.
    pub(super) fn find(&self, trie: &Trie, hay: &[u8]) -> Option<(usize, usize, usize)> {
        let mut best: Option<(usize, usize, usize)> = None;
        let mut at = 0;
        while at < hay.len() {
            let Some(found) = self.searcher.find_in(hay, Span::from(at..hay.len())) else {
                break;
            };
            let p = found.start();
            if best.is_some_and(|(start, _, _)| p > start + self.max_offset) {
                break;
            }
            for &offset in &self.offsets[found.pattern().as_usize()] {
                let Some(start) = p.checked_sub(offset) else {
                    continue;
                };
                // The same start gives the same longest needle.
                if best.is_some_and(|(best, _, _)| start >= best) {
                    continue;
                }
                if let Some((len, needle)) = trie.longest_at(&hay[start..]) {
                    best = Some((start, start + len, needle));
                }
            }
            at = p + 1;
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_of_response_text() {
        let f = |b: u8| FREQUENCY[usize::from(b)];
        assert!(f(b' ') > f(b'e') && f(b'e') > f(b'q') && f(b'q') > f(b'Z'));
        assert!(f(b'"') > f(b'7') && f(b'<') > f(b'&'));
        assert!((0x80..=0xFF).all(|b| f(b) >= 2000));
        // Per million: the ASCII bytes' add up to about that.
        let ascii: u32 = FREQUENCY[..0x80].iter().sum();
        assert!((990_000..1_010_000).contains(&ascii), "{ascii}");
    }

    #[test]
    fn fragments_start_at_the_rarest_bytes() {
        // (needle, fragment length, offset picked)
        let table: &[(&[u8], usize, usize)] = &[
            (b"sk-aeiouQZXJaeiou", 4, 8),
            (b"QZXJeeeeeeee", 4, 0),
            (b"eeeeeeeeQZXJ", 4, 8),
            (b"eeeeeeeeeeQZXJ", 3, 11),
            // Hex: digits are rarer than a-f.
            (b"eeaa7979ffee", 4, 4),
            // Equals: the leftmost.
            (b"eeeeeeeeeeee", 4, 0),
            (b"abc", 3, 0),
        ];
        for &(needle, len, offset) in table {
            assert_eq!(
                pick(needle, len),
                offset,
                "{:?}",
                String::from_utf8_lossy(needle)
            );
        }
    }

    #[test]
    fn short_needles_are_left_to_the_automaton() {
        assert!(Anchors::new(&[b"ab", b"secret-value"]).is_none());
        assert!(Anchors::new(&[]).is_none());
        assert!(Anchors::new(&[b"abc", b"secret-value"]).is_some());
    }
}
