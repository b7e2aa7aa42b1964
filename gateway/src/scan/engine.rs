//! The scanning engine over one stretch of text: a literal prefilter
//! ([`anchors`](super::anchors): where every enabled anchored detector may
//! start) and a vectorizable class scan for what has no literal (digit runs for
//! numbers and IPs, `@` for email), then the validators on candidates only.
//! Overlaps between detectors are settled afterwards by [`resolve`].

use super::anchors::{Anchor, Anchors};
use super::chars::{at, before, is_alnum, is_digit, run_end};
use super::detect::{card, email, generic, iban, ip, phone, secrets, ssn};
use super::kind::{Kind, KindSet};

/// A value found, in the coordinates of the text it was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug)]
pub(crate) struct Engine {
    kinds: KindSet,
    anchors: Anchors,
    /// Whether the class scan is needed at all.
    numbers: bool,
    email: bool,
}

impl Engine {
    pub(crate) fn new(kinds: KindSet) -> Result<Engine, aho_corasick::BuildError> {
        let numbers = [
            Kind::Phone,
            Kind::Ssn,
            Kind::CreditCard,
            Kind::Iban,
            Kind::IpAddress,
        ]
        .iter()
        .any(|k| kinds.contains(*k));
        Ok(Engine {
            kinds,
            anchors: Anchors::new(kinds)?,
            numbers,
            email: kinds.contains(Kind::Email),
        })
    }

    /// Appends the candidates in `text` to `out` (unresolved: they may
    /// overlap).
    pub(crate) fn scan(&self, text: &[u8], out: &mut Vec<Candidate>) {
        self.anchors.for_each(text, |hit| {
            let found = match hit.anchor {
                Anchor::Shape(shape) => secrets::detect(shape, text, hit.start),
                Anchor::Name(strength, name) => {
                    generic::detect(text, hit.start, hit.end, strength, name)
                        .map(|(s, e)| (Kind::GenericSecret, s, e))
                }
            };
            if let Some((kind, start, end)) = found {
                self.push(out, kind, (start, end));
            }
        });
        if self.numbers || self.email {
            self.scan_classes(text, out);
        }
    }

    fn push(&self, out: &mut Vec<Candidate>, kind: Kind, (start, end): (usize, usize)) {
        if self.kinds.contains(kind) && start < end {
            out.push(Candidate { kind, start, end });
        }
    }

    /// Digit runs and `@` signs, found a vector's width at a time.
    fn scan_classes(&self, text: &[u8], out: &mut Vec<Candidate>) {
        let mut i = 0;
        while let Some(p) = next_interesting(text, i, self.numbers, self.email) {
            if text[p] == b'@' {
                if let Some(span) = email::around_at(text, p) {
                    self.push(out, Kind::Email, span);
                }
                i = p + 1;
                continue;
            }
            let q = run_end(text, p, usize::MAX, is_digit);
            let mut next = self.number_at(text, p, q, out).max(q);
            if next == q && is_alnum(at(text, q)) {
                // Inside a word or a hash: nothing numeric starts again before
                // the word ends.
                next = run_end(text, q, usize::MAX, is_alnum);
            }
            i = next;
        }
    }

    /// Runs the numeric validators at the digit run `[p, q)`; returns where
    /// the longest value found ends (or `p`).
    fn number_at(&self, text: &[u8], p: usize, q: usize, out: &mut Vec<Candidate>) -> usize {
        let mut furthest = p;
        let mut found = |kind: Kind, span: Option<(usize, usize)>| {
            if let Some(span) = span {
                furthest = furthest.max(span.1);
                self.push(out, kind, span);
            }
        };
        let k = self.kinds;
        // The fewest digits each value has: IPv4 4, phone 8, SSN 9, card 12.
        let digits = digits_ahead(text, p);
        if k.contains(Kind::Iban)
            && p >= 2
            && text[p - 2].is_ascii_uppercase()
            && text[p - 1].is_ascii_uppercase()
        {
            found(Kind::Iban, iban::at_country(text, p - 2));
        }
        if k.contains(Kind::IpAddress) && ip::v6_possible(text, p, q) {
            found(Kind::IpAddress, ip::v6_around(text, p));
        }
        if k.contains(Kind::IpAddress) && digits >= 4 {
            found(Kind::IpAddress, ip::v4_at_digit(text, p));
        }
        if k.contains(Kind::Ssn) && digits >= 9 {
            found(Kind::Ssn, ssn::at_digit(text, p));
        }
        if k.contains(Kind::CreditCard) && digits >= 12 {
            found(Kind::CreditCard, card::at_digit(text, p));
        }
        if k.contains(Kind::Phone) && digits >= 8 && !is_alnum(before(text, p)) {
            found(Kind::Phone, phone::at_digit(text, p));
        }
        furthest
    }
}

/// The first digit or `@` at or after `from` (an `@` only when `at_sign`).
/// Whole 32-byte blocks are tested branch-free so the compiler vectorizes
/// the common case: prose with nothing of interest.
fn next_interesting(text: &[u8], from: usize, digits: bool, at_sign: bool) -> Option<usize> {
    let wanted = |b: u8| (digits && b.wrapping_sub(b'0') < 10) || (at_sign && b == b'@');
    let rest = text.get(from..)?;
    let (blocks, tail) = rest.as_chunks::<32>();
    for (n, block) in blocks.iter().enumerate() {
        let mut any = 0u8;
        for &b in block {
            any |= u8::from(b.wrapping_sub(b'0') < 10) | u8::from(b == b'@');
        }
        if any != 0
            && let Some(k) = block.iter().position(|&b| wanted(b))
        {
            return Some(from + n * 32 + k);
        }
    }
    let k = tail.iter().position(|&b| wanted(b))?;
    Some(from + blocks.len() * 32 + k)
}

/// How many digits the number-like token at `start` holds: digits and the
/// separators numbers are written with, up to 24 bytes. Most numbers in
/// prose ("in 2023", "45.3%") hold too few digits for any value, and no
/// validator needs to see them.
fn digits_ahead(text: &[u8], start: usize) -> usize {
    let mut digits = 0;
    for &b in text[start..].iter().take(24) {
        match b {
            b'0'..=b'9' => digits += 1,
            b' ' | b'-' | b'.' | b'(' | b')' => {}
            _ => break,
        }
    }
    digits
}

/// Settles overlaps: the higher-ranked kind wins, then the longer value,
/// then the earlier one. Returns the kept candidates sorted by start.
pub(crate) fn resolve(mut candidates: Vec<Candidate>) -> Vec<Candidate> {
    candidates.sort_by(|a, b| {
        b.kind
            .rank()
            .cmp(&a.kind.rank())
            .then((b.end - b.start).cmp(&(a.end - a.start)))
            .then(a.start.cmp(&b.start))
    });
    let mut kept: Vec<Candidate> = Vec::with_capacity(candidates.len());
    for c in candidates {
        let i = kept.partition_point(|k| k.start < c.start);
        let clear_before = i == 0 || kept[i - 1].end <= c.start;
        let clear_after = i == kept.len() || c.end <= kept[i].start;
        if clear_before && clear_after {
            kept.insert(i, c);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> Vec<(Kind, &str)> {
        let engine = Engine::new(KindSet::all()).expect("engine");
        let mut out = Vec::new();
        engine.scan(text.as_bytes(), &mut out);
        resolve(out)
            .into_iter()
            .map(|c| (c.kind, &text[c.start..c.end]))
            .collect()
    }

    #[test]
    fn finds_every_kind_in_one_pass() {
        let text = "mail a.b@example.com, call +44 20 8919 6125, ssn 376-85-2672, \
                    card 4111 1111 1111 1111, iban GB82WEST12345698765432, ip 10.1.2.3, \
                    AKIAIOSFODNN7EXAMPLE and password=Tr0ub4dor&3";
        let kinds: Vec<Kind> = scan(text).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            kinds,
            [
                Kind::Email,
                Kind::Phone,
                Kind::Ssn,
                Kind::CreditCard,
                Kind::Iban,
                Kind::IpAddress,
                Kind::AwsAccessKey,
                Kind::GenericSecret
            ]
        );
    }

    #[test]
    fn the_precise_kind_wins_an_overlap() {
        assert_eq!(
            scan("GITHUB_TOKEN=ghp_sruUav0V4T6eVEpm8mLYs58eyzGuOXPYUa2h"),
            [(
                Kind::GithubToken,
                "ghp_sruUav0V4T6eVEpm8mLYs58eyzGuOXPYUa2h"
            )]
        );
        assert_eq!(
            scan("iban GB82 WEST 1234 5698 7654 32"),
            [(Kind::Iban, "GB82 WEST 1234 5698 7654 32")]
        );
    }

    #[test]
    fn disabled_kinds_are_not_reported() {
        let engine = Engine::new([Kind::Email].into_iter().collect()).expect("engine");
        let mut out = Vec::new();
        engine.scan(
            b"a@example.com 4111111111111111 AKIAIOSFODNN7EXAMPLE",
            &mut out,
        );
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].kind, Kind::Email);
    }

    #[test]
    fn next_interesting_crosses_block_edges() {
        for at in [0, 1, 31, 32, 33, 63, 64, 100] {
            let mut text = vec![b'a'; 101];
            text[at] = b'7';
            assert_eq!(next_interesting(&text, 0, true, true), Some(at));
            assert_eq!(next_interesting(&text, at + 1, true, true), None);
        }
    }

    #[test]
    fn resolve_keeps_non_overlapping_sorted() {
        let c = |kind, start, end| Candidate { kind, start, end };
        let kept = resolve(vec![
            c(Kind::Phone, 10, 20),
            c(Kind::CreditCard, 5, 25),
            c(Kind::Email, 30, 40),
            c(Kind::GenericSecret, 35, 50),
            c(Kind::IpAddress, 0, 3),
        ]);
        assert_eq!(
            kept,
            [
                c(Kind::IpAddress, 0, 3),
                c(Kind::CreditCard, 5, 25),
                c(Kind::Email, 30, 40)
            ]
        );
    }
}
