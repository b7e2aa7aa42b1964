//! Where an escape worth reading may start in a body, found with SIMD:
//! the places [`super::find`] and [`super::open_start`] look at.
//!
//! Text has many escapes that stand for bytes no needle holds (`\n` and
//! `\"` every few bytes in JSON, `%20` in URLs, `&quot;` in HTML): stopping
//! at each of them, as a search for every `\`, `%` and `&` does, cost more
//! than the whole literal search. An escape stands for a byte a needle
//! holds only if its first two bytes are one of a few pairs, decided by the
//! bytes the needles hold ([`pairs`]): `\u` and `&#` (any byte), a short
//! JSON escape of a held byte, `%` and the high hex digit of a held byte
//! (either case), `&` and the first letter of an XML entity for a held
//! byte. Those pairs are searched together with aho-corasick's packed
//! searcher.
//!
//! The last [`MAX_ESCAPE`] bytes are searched for every introducer as
//! before: an escape cut off by the end of the text is worth holding back
//! whatever it stands for, and only there can one be cut off (no escape is
//! longer).

use aho_corasick::Span;
use aho_corasick::packed::{Config, MatchKind, Searcher};

use super::{INTRODUCERS, MAX_ESCAPE, NAMED, short};

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";
const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";

/// The first two bytes of every escape that stands for a byte in `holds`
/// (as its first byte, for `\u` and `&#`), without duplicates.
pub(super) fn pairs(holds: &[bool; 256]) -> Vec<[u8; 2]> {
    let held = |b: u8| holds[usize::from(b)];
    let mut out = vec![*b"\\u", *b"&#"];
    out.extend(
        (0..=u8::MAX)
            .filter(|&c| c != b'u' && short(c).is_some_and(held))
            .map(|c| [b'\\', c]),
    );
    for b in (0..=u8::MAX).filter(|&b| held(b)) {
        let high = usize::from(b >> 4);
        out.extend([[b'%', HEX_UPPER[high]], [b'%', HEX_LOWER[high]]]);
    }
    out.extend(
        NAMED
            .iter()
            .filter(|(_, byte)| held(*byte))
            .map(|(entity, _)| [b'&', entity[0]]),
    );
    let mut seen = std::collections::HashSet::new();
    out.retain(|pair| seen.insert(*pair));
    out
}

/// The packed searcher over [`pairs`].
pub(super) struct EscapeStarts {
    searcher: Searcher,
}

impl EscapeStarts {
    /// `None` where the CPU has no SIMD for the packed searcher: every
    /// introducer is looked at then.
    pub(super) fn new(holds: &[bool; 256]) -> Option<EscapeStarts> {
        let searcher = Config::new()
            .match_kind(MatchKind::LeftmostFirst)
            .builder()
            .extend(pairs(holds))
            .build()?;
        Some(EscapeStarts { searcher })
    }
}

/// The places in a text where an escape may start that is worth reading,
/// in order: a superset of those `worth_reading` accepts.
pub(super) struct Introducers<'a> {
    hay: &'a [u8],
    starts: Option<&'a EscapeStarts>,
    /// Where the packed search goes on from.
    at: usize,
    /// Where every introducer counts: the last `MAX_ESCAPE` bytes, or all
    /// of the text without a packed searcher.
    tail: usize,
    rest: Option<memchr::Memchr3<'a>>,
}

impl<'a> Introducers<'a> {
    pub(super) fn new(hay: &'a [u8], starts: Option<&'a EscapeStarts>) -> Introducers<'a> {
        let tail = match starts {
            Some(_) => hay.len().saturating_sub(MAX_ESCAPE),
            None => 0,
        };
        Introducers {
            hay,
            starts,
            at: 0,
            tail,
            rest: None,
        }
    }
}

impl Iterator for Introducers<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if let Some(starts) = self.starts
            && self.at < self.tail
        {
            let span = Span::from(self.at..self.hay.len());
            match starts.searcher.find_in(self.hay, span) {
                Some(found) if found.start() < self.tail => {
                    self.at = found.start() + 1;
                    return Some(found.start());
                }
                _ => self.at = self.tail,
            }
        }
        let [a, b, c] = INTRODUCERS;
        let tail = self.tail;
        let rest = self
            .rest
            .get_or_insert_with(|| memchr::memchr3_iter(a, b, c, &self.hay[tail..]));
        rest.next().map(|i| tail + i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holds(bytes: &[u8]) -> [bool; 256] {
        let mut out = [false; 256];
        for &b in bytes {
            out[usize::from(b)] = true;
        }
        out
    }

    #[test]
    fn pairs_of_escapes_of_held_bytes() {
        // (bytes the needles hold, pairs)
        let table: &[(&[u8], &[&[u8; 2]])] = &[
            (b"", &[b"\\u", b"&#"]),
            (b"Ab", &[b"\\u", b"&#", b"%4", b"%6"]),
            (
                b"/&\"",
                &[b"\\u", b"&#", b"\\\"", b"\\/", b"%2", b"&a", b"&q"],
            ),
            (b"\n\xe9", &[b"\\u", b"&#", b"\\n", b"%0", b"%E", b"%e"]),
        ];
        for &(held, want) in table {
            let want: Vec<[u8; 2]> = want.iter().map(|p| **p).collect();
            assert_eq!(pairs(&holds(held)), want, "{held:?}");
        }
    }

    #[test]
    fn every_introducer_of_the_tail_and_the_worth_ones_before() {
        let starts = EscapeStarts::new(&holds(b"A")).expect("SIMD");
        let text = b"a\\n b%20 c%41 d&amp; e\\u0041 f&#65; ..............x\\n%2&";
        let got: Vec<usize> = Introducers::new(text, Some(&starts)).collect();
        let tail = text.len() - MAX_ESCAPE;
        let mut want: Vec<usize> = [10, 22, 30].to_vec();
        want.extend((tail..text.len()).filter(|&i| INTRODUCERS.contains(&text[i])));
        assert_eq!(got, want);
        let all: Vec<usize> = Introducers::new(text, None).collect();
        let every: Vec<usize> = (0..text.len())
            .filter(|&i| INTRODUCERS.contains(&text[i]))
            .collect();
        assert_eq!(all, every);
    }
}
