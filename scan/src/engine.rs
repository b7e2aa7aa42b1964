//! The scanning engine over a text, or over stretches of one scanned each
//! as if alone (a JSON body's strings and what lies between them): a
//! literal prefilter ([`anchors`](super::anchors): where every enabled
//! anchored detector may start) and a vectorized class scan for what has
//! no literal (digit runs for numbers and IPs, `@` for email), then the
//! validators on candidates only. Overlaps between detectors are settled
//! afterwards by [`resolve`].

use std::cmp::Ordering;
use std::ops::Range;

use super::anchors::{Anchor, Anchors};
use super::chars::{at, before, is_alnum, is_digit, run_end, starts_token};
#[cfg(target_arch = "x86_64")]
use super::classes::eight;
#[cfg(target_arch = "x86_64")]
use super::classes::{Avx2, Avx512, Vbmi};
use super::classes::{Baseline, Block, Classify, FirstDigits, Pair, pairs};
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
        let whole = 0..text.len();
        self.scan_stretches(text, std::slice::from_ref(&whole), out);
    }

    /// Appends the candidates in each stretch `text[r]` of `stretches`,
    /// found as if each stretch were scanned alone, at their offsets in
    /// `text`. The stretches are in order and apart, and a [`SEPARATOR`]
    /// follows each but the last.
    ///
    /// One call for the many stretches of a JSON body (a string with
    /// escapes, the raw text between two such) saves each its own start of
    /// the prefilter and of the class scan, which were a fifth of the scan
    /// of an LLM-API body (a thousand stretches a megabyte). Every search
    /// stops at the separator as at the end of a text; each validator is
    /// given its stretch alone.
    pub(crate) fn scan_stretches(
        &self,
        text: &[u8],
        stretches: &[Range<usize>],
        out: &mut Vec<Candidate>,
    ) {
        let mut stretch = Stretches::new(stretches);
        self.anchors.for_each(text, |hit| {
            // No anchor holds the separator: a hit is inside one stretch.
            let r = stretch.holding(hit.start);
            let (local, start) = (&text[r.clone()], hit.start - r.start);
            let found = match hit.anchor {
                Anchor::Shape(shape) => secrets::detect(shape, local, start),
                Anchor::Name(strength, name) => {
                    generic::detect(local, start, hit.end - r.start, strength, name)
                        .map(|(s, e)| (Kind::GenericSecret, s, e))
                }
            };
            if let Some((kind, start, end)) = found {
                self.push(out, kind, (r.start + start, r.start + end));
            }
        });
        if self.numbers || self.email {
            self.scan_classes(text, stretches, out);
        }
    }

    fn push(&self, out: &mut Vec<Candidate>, kind: Kind, (start, end): (usize, usize)) {
        if self.kinds.contains(kind) && start < end {
            out.push(Candidate { kind, start, end });
        }
    }

    /// Digit runs and `@` signs, found with the class masks. The scan
    /// stops where it always did: at every `@`, and at the first digit of
    /// each word (after a digit run that holds no value nothing numeric
    /// starts again inside the word: a hash, an id). A value moves the scan
    /// on to its end, which may be inside a word: that word is then read
    /// on byte by byte ([`Engine::finish_word`]).
    pub(crate) fn scan_classes(
        &self,
        text: &[u8],
        stretches: &[Range<usize>],
        out: &mut Vec<Candidate>,
    ) {
        #[cfg(target_arch = "x86_64")]
        if let Some(vbmi) = Vbmi::detect() {
            return self.scan_classes_vbmi(vbmi, text, stretches, out);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(avx512) = Avx512::detect() {
            return self.scan_classes_avx512(avx512, text, stretches, out);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(avx2) = Avx2::detect() {
            return self.scan_classes_avx2(avx2, text, stretches, out);
        }
        self.scan_classes_with(Baseline, text, stretches, out);
    }

    /// The class scan compiled for AVX-512 VBMI, VBMI2, VPOPCNTDQ and
    /// GFNI, which `vbmi` proves the CPU has: eight blocks at a time
    /// ([`eight`]), with no branch per block but for the blocks with a
    /// stop.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn scan_classes_vbmi(
        &self,
        vbmi: Vbmi,
        text: &[u8],
        stretches: &[Range<usize>],
        out: &mut Vec<Candidate>,
    ) {
        #[target_feature(
            enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,avx512vpopcntdq,gfni,avx2,bmi1,bmi2,popcnt,lzcnt"
        )]
        fn with_vbmi(
            engine: &Engine,
            vbmi: Vbmi,
            text: &[u8],
            stretches: &[Range<usize>],
            out: &mut Vec<Candidate>,
        ) {
            let mut groups = eight::Groups::new(text, engine.numbers, engine.email);
            let mut cursor = Cursor::new(text, stretches);
            while let Some(stops) = groups.next(cursor.next) {
                stops.each(|pair, stops, v6| {
                    engine.stops_in(vbmi, &mut cursor, pair, stops, v6, out)
                });
            }
        }
        // SAFETY: a `Vbmi` exists only on a CPU with these features.
        unsafe { with_vbmi(self, vbmi, text, stretches, out) }
    }

    /// The class scan compiled for AVX-512BW, which `avx512` proves the
    /// CPU has.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn scan_classes_avx512(
        &self,
        avx512: Avx512,
        text: &[u8],
        stretches: &[Range<usize>],
        out: &mut Vec<Candidate>,
    ) {
        #[target_feature(enable = "avx512f,avx512bw,avx2,bmi1,bmi2,popcnt,lzcnt")]
        fn with_avx512(
            engine: &Engine,
            avx512: Avx512,
            text: &[u8],
            stretches: &[Range<usize>],
            out: &mut Vec<Candidate>,
        ) {
            engine.scan_classes_with(avx512, text, stretches, out);
        }
        // SAFETY: an `Avx512` exists only on a CPU with these features.
        unsafe { with_avx512(self, avx512, text, stretches, out) }
    }

    /// The class scan compiled for AVX2, which `avx2` proves the CPU has.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn scan_classes_avx2(
        &self,
        avx2: Avx2,
        text: &[u8],
        stretches: &[Range<usize>],
        out: &mut Vec<Candidate>,
    ) {
        #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,lzcnt")]
        fn with_avx2(
            engine: &Engine,
            avx2: Avx2,
            text: &[u8],
            stretches: &[Range<usize>],
            out: &mut Vec<Candidate>,
        ) {
            engine.scan_classes_with(avx2, text, stretches, out);
        }
        // SAFETY: an `Avx2` exists only on a CPU with these features.
        unsafe { with_avx2(self, avx2, text, stretches, out) }
    }

    /// The class scan block by block (the ways but VBMI's), with blocks
    /// classified `how` (and inlined here, so the loop is compiled for
    /// what `how` needs). The masks run over the
    /// separators (in no class, so no run nor word goes through one); at
    /// each stop the validators get the stop's stretch alone.
    #[inline(always)]
    pub(crate) fn scan_classes_with(
        &self,
        how: impl Classify,
        text: &[u8],
        stretches: &[Range<usize>],
        out: &mut Vec<Candidate>,
    ) {
        let digit_stops = if self.numbers { u64::MAX } else { 0 };
        let at_stops = if self.email { u64::MAX } else { 0 };
        let mut first_digits = FirstDigits::default();
        let mut before = Block::default();
        let mut cursor = Cursor::new(text, stretches);
        for pair in pairs(how, text) {
            let words = first_digits.next(&pair.lo) & digit_stops;

            // First digits that cannot start a value are no stops: the
            // exact tests below would pass them by anyway. Half the blocks
            // of prose have no first digit, and skip the masks' work.
            // Nor are digits next to colons with no IPv6 address in reach.
            let v6 = words != 0 && pair.may_hold_v6(&before);
            let numbers = if words == 0 {
                0
            } else {
                pair.values_in(words, &before, v6)
            };
            before = pair.lo;
            let stops = numbers | pair.lo.at & at_stops;
            self.stops_in(how, &mut cursor, &pair, stops, v6, out);
        }
    }

    /// Runs the validators at the `stops` of `pair`'s first block that
    /// are not before `cursor.next`, and moves it past the word a value
    /// ends in. `v6`: whether an IPv6 address may be in reach
    /// ([`Pair::may_hold_v6`](super::classes::Pair::may_hold_v6)).
    #[inline(always)]
    fn stops_in(
        &self,
        how: impl Classify,
        cursor: &mut Cursor,
        pair: &Pair,
        stops: u64,
        v6: bool,
        out: &mut Vec<Candidate>,
    ) {
        let text = cursor.text;
        let mut stops = stops & pair.from(cursor.next);
        while stops != 0 {
            let p = pair.base + stops.trailing_zeros() as usize;
            stops &= stops - 1;
            let r = cursor.stretch.holding(p);
            let (local, lp) = (&text[r.clone()], p - r.start);
            let from = out.len();
            if text[p] == b'@' {
                if let Some(span) = email::around_at(local, lp) {
                    self.push(out, Kind::Email, span);
                }
                shift(&mut out[from..], r.start);
                continue;
            }
            // The masks stop a run at the separator as at the end.
            let q = pair.run_end(text, p, |b| b.digit, is_digit) - r.start;
            let digits = pair.digits_ahead(how, p);
            let v6 = v6 && v6_scalar(local, lp, q);
            let prospects = Prospects::of(local, lp, q, digits, v6);
            if !prospects.any() {
                continue;
            }
            let end = self.number_at(local, lp, digits, prospects, out);
            if end > q {
                cursor.next = r.start + self.finish_word(local, end, out);
                stops &= pair.from(cursor.next);
            }
            shift(&mut out[from..], r.start);
        }
    }

    /// Goes on from `i`, the end of a value, the byte-by-byte way while `i`
    /// is inside a word: its next digit run is a stop too. Returns where
    /// the first-digit masks hold again (a word's edge).
    fn finish_word(&self, text: &[u8], mut i: usize, out: &mut Vec<Candidate>) -> usize {
        while i > 0 && is_alnum(at(text, i - 1)) && is_alnum(at(text, i)) {
            let word_end = run_end(text, i, usize::MAX, is_alnum);
            let Some(p) = (i..word_end).find(|&j| is_digit(text[j])) else {
                return word_end;
            };
            let q = run_end(text, p, usize::MAX, is_digit);
            let digits = digits_ahead(text, p);
            let prospects = Prospects::of(text, p, q, digits, v6_scalar(text, p, q));
            let mut end = q;
            if prospects.any() {
                end = self.number_at(text, p, digits, prospects, out);
            }
            i = if end > q { end } else { word_end };
        }
        i
    }

    /// Runs the numeric validators that have `prospects` at the digit run
    /// from `p`, whose token holds `digits` digits; returns where the
    /// longest value found ends (or `p`).
    fn number_at(
        &self,
        text: &[u8],
        p: usize,
        digits: usize,
        prospects: Prospects,
        out: &mut Vec<Candidate>,
    ) -> usize {
        let mut furthest = p;
        let mut found = |kind: Kind, span: Option<(usize, usize)>| {
            if let Some(span) = span {
                furthest = furthest.max(span.1);
                self.push(out, kind, span);
            }
        };
        let k = self.kinds;
        if k.contains(Kind::Iban) && prospects.iban {
            found(Kind::Iban, iban::at_country(text, p - 2));
        }
        if k.contains(Kind::IpAddress) && prospects.v6 {
            found(Kind::IpAddress, ip::v6_around(text, p));
        }
        if !prospects.token {
            return furthest;
        }
        // A lower-case IBAN in groups, whose first group of digits this is.
        if k.contains(Kind::Iban) && !prospects.iban {
            found(Kind::Iban, iban::grouped_before(text, p));
        }
        // The fewest digits each value has: IPv4 4, phone 7, SSN 9, card 12.
        if k.contains(Kind::IpAddress) && digits >= 4 {
            found(Kind::IpAddress, ip::v4_at_digit(text, p));
        }
        if k.contains(Kind::Ssn) && digits >= 9 {
            found(Kind::Ssn, ssn::at_digit(text, p));
        }
        if k.contains(Kind::CreditCard) && digits >= 12 {
            found(Kind::CreditCard, card::at_digit(text, p));
        }
        if k.contains(Kind::Phone) && digits >= 7 && !is_alnum(before(text, p)) {
            found(Kind::Phone, phone::at_digit(text, p));
        }
        furthest
    }
}

/// What follows each stretch but the last in [`Engine::scan_stretches`]: a
/// NUL, which is in no byte class and in no anchor.
pub(crate) const SEPARATOR: u8 = 0;

/// Where the class scan is in a text: nothing before `next` is looked at
/// again.
struct Cursor<'a> {
    text: &'a [u8],
    stretch: Stretches<'a>,
    next: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a [u8], stretches: &'a [Range<usize>]) -> Cursor<'a> {
        Cursor {
            text,
            stretch: Stretches::new(stretches),
            next: 0,
        }
    }
}

/// The stretch holding each of a rising sequence of positions.
struct Stretches<'a> {
    stretches: &'a [Range<usize>],
    i: usize,
}

impl<'a> Stretches<'a> {
    fn new(stretches: &'a [Range<usize>]) -> Stretches<'a> {
        Stretches { stretches, i: 0 }
    }

    /// The stretch holding `pos`, which is in one and not before the
    /// position asked for last.
    #[inline(always)]
    fn holding(&mut self, pos: usize) -> Range<usize> {
        while self.stretches[self.i].end <= pos {
            self.i += 1;
        }
        debug_assert!(self.stretches[self.i].contains(&pos));
        self.stretches[self.i].clone()
    }
}

/// Moves candidates found in a stretch to the text's coordinates.
pub(super) fn shift(candidates: &mut [Candidate], by: usize) {
    for c in candidates {
        c.start += by;
        c.end += by;
    }
}

/// How many digits the number-like token at `start` holds: digits and the
/// separators numbers are written with, up to 24 bytes. Most numbers in
/// prose ("in 2023", "45.3%") hold too few digits for any value, and no
/// validator needs to see them. ([`Pair::digits_ahead`](super::classes::Pair::digits_ahead)
/// counts the same with masks.)
pub(super) fn digits_ahead(text: &[u8], start: usize) -> usize {
    let mut digits = 0;
    for &b in text[start..].iter().take(24) {
        match b {
            b'0'..=b'9' => digits += 1,
            b' ' | b'-' | b'.' | b'/' | b'(' | b')' => {}
            _ => break,
        }
    }
    digits
}

/// Which numeric validators could find a value at the digit run `[p, q)`.
/// Each value needs things most numbers in text lack, and a few tests
/// without a branch per byte tell, so most runs are passed by without
/// running any validator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Prospects {
    /// Two capitals before the digits, or two small letters and eight
    /// digits or more (which the masks keep as a run of eight), or two
    /// small letters at a word's start and two digits.
    iban: bool,
    /// A colon within the hex group, and no group longer than four hex
    /// digits (`Ipv6Addr` reads no more).
    v6: bool,
    /// The run starts a token that holds at least eight digits (phone,
    /// SSN, card), or seven after a group of three (a phone of the plans
    /// that short, `534 5270`: eight bytes at least, as the block masks
    /// want), or is an IPv4
    /// address (four digits or more, one to three before a dot, seven
    /// digits and dots at least).
    token: bool,
}

impl Prospects {
    /// `digits`: how many the token at `p` holds ([`digits_ahead`]);
    /// `v6`: whether to read an IPv6 address there ([`v6_scalar`], where
    /// one may be in reach: [`Pair::may_hold_v6`](super::classes::Pair::may_hold_v6)).
    #[inline(always)]
    fn of(text: &[u8], p: usize, q: usize, digits: usize, v6: bool) -> Prospects {
        let v4 = digits >= 4 && q - p <= 3 && at(text, q) == b'.' && dotted_seven(text, p);
        Prospects {
            iban: p >= 2 && {
                let (a, b) = (text[p - 2], text[p - 1]);
                let small = a.is_ascii_lowercase() && b.is_ascii_lowercase();
                // `gb82west…`, `mt84 jlsn …`: the country and the check
                // digits, whatever follows.
                let word_start = || !is_alnum(before(text, p - 2)) && is_digit(at(text, p + 1));
                (a.is_ascii_uppercase() && b.is_ascii_uppercase())
                    || (small && (digits >= 8 || word_start()))
            },
            v6,
            token: (digits >= 8 || (digits == 7 && q - p == 3) || v4) && starts_token(text, p),
        }
    }

    fn any(self) -> bool {
        self.iban | self.v6 | self.token
    }
}

/// Whether the seven bytes from `p` are digits and dots, as in the
/// shortest IPv4 address (`1.2.3.4`): times (`12:34:56.789Z`) and
/// decimals (`0.25,`) are not.
fn dotted_seven(text: &[u8], p: usize) -> bool {
    text.get(p..p + 7)
        .is_some_and(|s| s.iter().all(|&b| is_digit(b) || b == b'.'))
}

/// Whether the digit run `[p, q)` may be in an IPv6 address: a colon
/// within the hex group, and no group longer than four hex digits
/// (`Ipv6Addr` reads no more).
fn v6_scalar(text: &[u8], p: usize, q: usize) -> bool {
    // The colon test is cheap and rules out most numbers; the exact one
    // follows only for those it lets through.
    q - p <= 4 && colon_within_four(text, p, q) && ip::v6_possible(text, p, q)
}

/// Whether a colon is among the four bytes before `p` or from `q`.
#[inline(always)]
fn colon_within_four(text: &[u8], p: usize, q: usize) -> bool {
    let four = |from: usize| -> u32 {
        let mut bytes = [0u8; 4];
        // `from` wraps around before the text's start: bytes there read 0.
        if let Some(src) = from.checked_add(4).and_then(|end| text.get(from..end)) {
            bytes.copy_from_slice(src);
        } else {
            for (k, b) in bytes.iter_mut().enumerate() {
                *b = at(text, from.wrapping_add(k));
            }
        }
        u32::from_le_bytes(bytes)
    };
    // A zero byte in `x ^ ':::::'` is a colon (the usual zero-byte test).
    let has_colon = |x: u32| {
        let v = x ^ 0x3a3a_3a3a;
        v.wrapping_sub(0x0101_0101) & !v & 0x8080_8080 != 0
    };
    has_colon(four(p.wrapping_sub(4))) | has_colon(four(q))
}

/// Settles overlaps: the higher-ranked kind wins, then the longer value,
/// then the earlier one. Returns the kept candidates sorted by start.
///
/// Only candidates that overlap, directly or through others, compete, so
/// the candidates are cut into such clusters (almost all of one value) and
/// each is settled alone: a body dense with values (a log of addresses, a
/// contact list) stays linear where inserting every kept value into one
/// sorted list took a quarter of a second a megabyte.
pub(crate) fn resolve(candidates: &mut [Candidate]) -> Vec<Candidate> {
    candidates.sort_unstable_by_key(|c| (c.start, c.end));
    let mut kept = Vec::with_capacity(candidates.len());
    let mut rest = candidates;
    while let Some(first) = rest.first() {
        let mut end = first.end;
        let len = rest
            .iter()
            .position(|c| {
                let apart = c.start >= end;
                end = end.max(c.end);
                apart
            })
            .unwrap_or(rest.len());
        let (cluster, after) = rest.split_at_mut(len);
        settle(cluster, &mut kept);
        rest = after;
    }
    kept
}

/// Which of two overlapping candidates is kept: the higher-ranked kind,
/// then the longer value, then the earlier one.
fn precedence(a: &Candidate, b: &Candidate) -> Ordering {
    b.kind
        .rank()
        .cmp(&a.kind.rank())
        .then((b.end - b.start).cmp(&(a.end - a.start)))
        .then(a.start.cmp(&b.start))
}

/// Settles one cluster of overlapping candidates, appending the kept ones
/// to `kept` in order of start.
fn settle(cluster: &mut [Candidate], kept: &mut Vec<Candidate>) {
    if let [only] = cluster {
        kept.push(*only);
        return;
    }
    cluster.sort_by(precedence);
    let from = kept.len();
    for &c in cluster.iter() {
        let ours = &kept[from..];
        let i = ours.partition_point(|k| k.start < c.start);
        let clear_before = i == 0 || ours[i - 1].end <= c.start;
        let clear_after = i == ours.len() || c.end <= ours[i].start;
        if clear_before && clear_after {
            kept.insert(from + i, c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::classes::BLOCK;
    use super::*;

    fn scan(text: &str) -> Vec<(Kind, &str)> {
        let engine = Engine::new(KindSet::all()).expect("engine");
        let mut out = Vec::new();
        engine.scan(text.as_bytes(), &mut out);
        resolve(&mut out)
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
    fn the_separator_is_in_no_class_and_no_anchor() {
        use super::super::detect::{generic, secrets};
        assert_eq!(Baseline.block(&[SEPARATOR; BLOCK]), Block::default());
        let shapes = secrets::Shape::ALL.iter().flat_map(|s| s.anchors().iter());
        let names = generic::NAMES.iter().map(|(literal, _, _)| literal);
        for literal in shapes.chain(names) {
            assert!(!literal.as_bytes().contains(&SEPARATOR), "{literal:?}");
        }
    }

    #[test]
    fn stretches_are_scanned_as_if_alone() {
        let engine = Engine::new(KindSet::all()).expect("engine");
        // Context, a number and a name cut by the separator.
        let text =
            b"ssn \x00376852672, card 4111 1111 11\x0011 1111, passw\x00ord=Tr0ub4dor&3, a@b.co";
        let mut stretches = Vec::new();
        let mut start = 0;
        for (i, &b) in text.iter().enumerate() {
            if b == SEPARATOR {
                stretches.push(start..i);
                start = i + 1;
            }
        }
        stretches.push(start..text.len());
        let mut out = Vec::new();
        engine.scan_stretches(text, &stretches, &mut out);
        let found: Vec<(Kind, &[u8])> = resolve(&mut out)
            .into_iter()
            .map(|c| (c.kind, &text[c.start..c.end]))
            .collect();
        assert_eq!(found, [(Kind::Email, &b"a@b.co"[..])]);
        // Scanned as one text, the pieces would be values.
        let joined = String::from_utf8_lossy(text).replace('\0', "");
        let kinds: Vec<Kind> = scan(&joined).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            kinds,
            [
                Kind::Ssn,
                Kind::CreditCard,
                Kind::GenericSecret,
                Kind::Email
            ]
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
    fn colon_within_four_table() {
        let t = b"ab:1234cd:e";
        assert!(colon_within_four(t, 3, 7)); // ':' just before
        // Colons five bytes before and after.
        assert!(!colon_within_four(b"a:bcde1234fghij:k", 6, 10));
        assert!(colon_within_four(t, 0, 6)); // ':' four on
        assert!(!colon_within_four(b"1", 0, 1)); // the ends of the text
        assert!(colon_within_four(b":1", 1, 2));
        assert!(colon_within_four(b"1:", 0, 1));
        assert!(!colon_within_four(b"12345", 2, 3));
    }

    #[test]
    fn prospects_table() {
        let run = |text: &str| {
            let p = text.find(|c: char| c.is_ascii_digit()).expect("a digit");
            let q = text[p..]
                .find(|c: char| !c.is_ascii_digit())
                .map_or(text.len(), |k| p + k);
            let digits = text[p..]
                .bytes()
                .take(24)
                .take_while(|b| b.is_ascii_digit() || b" -.()".contains(b))
                .filter(u8::is_ascii_digit)
                .count();
            let text = text.as_bytes();
            Prospects::of(text, p, q, digits, v6_scalar(text, p, q)).any()
        };
        for (text, want) in [
            ("in 2023 we", false),
            ("grew 45.3%", false),
            ("took 1234 ms", false),
            ("ip 10.1.2.3", true),
            ("v 0.123", false),
            ("56.789Z INFO", false),
            ("a 1.2.3.4", true),
            ("a 1.2.3.", false),
            ("x1.2.3.4", false),
            ("call 415 555-0132", true),
            // Two small letters and eight digits: a lower-case IBAN's start.
            ("id=ab12345678", true),
            ("id=xab1234567", false),
            ("GB82 WEST", true),
            ("de89370400440532013000", true),
            // Two small letters at a word's start and two digits: a
            // lower-case IBAN's country and check digits.
            ("ab12 west", true),
            ("ab12west", true),
            ("xab12 west", false),
            ("ab1 west", false),
            ("at 12:30", true),
            ("fe80::1", true),
            ("a 1234:", true),
            ("a 12345:", false),
            ("05T12:34", false),
            ("b:a1", true),
            ("2025-03-05T12", true),
            ("1-2-3-4-5-6-7", false),
            ("call 534 5270", true),
            ("in 1234567 rows", false),
        ] {
            assert_eq!(run(text), want, "{text}");
        }
    }

    /// Text of the bytes numbers and their surroundings are made of, the
    /// rarer ones (capitals, colons, dots) often enough to meet, and now
    /// and then an IPv6 address.
    fn numberish() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::strategy::Strategy;
        let bytes = proptest::sample::select(b"0123456789 -.():AZa_@x.com".to_vec());
        let address = proptest::sample::select(vec![
            &b""[..],
            b"",
            b" fe80::1ff:fe23:4567:890a ",
            b" 1:2:3:4:5:6:7:8 ",
            b" ::ffff:192.0.2.1 ",
        ]);
        (
            proptest::collection::vec(bytes, 0..300),
            address,
            0..300usize,
        )
            .prop_map(|(mut text, address, at)| {
                let at = at.min(text.len());
                text.splice(at..at, address.iter().copied());
                text
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]
        #[test]
        fn the_value_masks_keep_every_digit_with_prospects(text in numberish()) {
            let text = &text[..];
            let mut before = Block::default();
            for pair in pairs(Baseline, text) {
                let may = pair.may_hold_values(&before, pair.may_hold_v6(&before));
                before = pair.lo;
                for k in 0..BLOCK.min(text.len() - pair.base) {
                    let p = pair.base + k;
                    if !is_digit(text[p]) {
                        continue;
                    }
                    let q = run_end(text, p, usize::MAX, is_digit);
                    let digits = digits_ahead(text, p);
                    // Only a digit with an address around is a v6 prospect.
                    let v6 = v6_scalar(text, p, q) && ip::v6_around(text, p).is_some();
                    let prospects = Prospects::of(text, p, q, digits, v6);
                    proptest::prop_assert!(
                        !prospects.any() || may >> k & 1 == 1,
                        "{p} in {:?}: {prospects:?}", String::from_utf8_lossy(text)
                    );
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]
        #[test]
        fn every_ipv4_address_starts_seven_digits_and_dots(
            mut text in numberish(),
            at in 0..300usize,
            octets in proptest::collection::vec(0..=255u8, 4),
        ) {
            let at = at.min(text.len());
            let address = format!(" {}.{}.{}.{} ", octets[0], octets[1], octets[2], octets[3]);
            text.splice(at..at, address.bytes());
            let mut found = 0;
            for p in (0..text.len()).filter(|&p| is_digit(text[p])) {
                if ip::v4_at_digit(&text, p).is_some() {
                    found += 1;
                    proptest::prop_assert!(dotted_seven(&text, p), "{p}");
                }
            }
            proptest::prop_assert!(found > 0);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]
        /// On a CPU with AVX2 the scanner never runs the baseline loop:
        /// it is checked here against the one that runs (the eight-block
        /// loop where AVX-512 VBMI2 is, [`eight`]), and the AVX2 and
        /// AVX-512BW ones against it where a later one runs instead.
        #[test]
        fn the_baseline_class_scan_finds_what_the_chosen_one_finds(
            mut text in numberish(),
            at in 0..300usize,
        ) {
            // Values too, anywhere in the blocks.
            let at = at.min(text.len());
            text.splice(at..at, b" 415 555-0132 a@b.com 10.1.2.3 fe80::1 GB82WEST12345698765432".to_vec());
            let engine = Engine::new(KindSet::all()).expect("engine");
            let whole = 0..text.len();
            let whole = std::slice::from_ref(&whole);
            let mut baseline = Vec::new();
            engine.scan_classes_with(Baseline, &text, whole, &mut baseline);
            let mut chosen = Vec::new();
            engine.scan_classes(&text, whole, &mut chosen);
            proptest::prop_assert!(!chosen.is_empty());
            proptest::prop_assert_eq!(&baseline, &chosen);
            // The AVX2 and AVX-512BW loops, where a later one is chosen
            // over them.
            #[cfg(target_arch = "x86_64")]
            if let Some(avx2) = Avx2::detect() {
                let mut with_avx2 = Vec::new();
                engine.scan_classes_avx2(avx2, &text, whole, &mut with_avx2);
                proptest::prop_assert_eq!(&baseline, &with_avx2);
            }
            #[cfg(target_arch = "x86_64")]
            if let Some(avx512) = Avx512::detect() {
                let mut with_avx512 = Vec::new();
                engine.scan_classes_avx512(avx512, &text, whole, &mut with_avx512);
                proptest::prop_assert_eq!(&baseline, &with_avx512);
            }
        }
    }

    /// The class scan's findings in `text` cut at its separators, by the
    /// baseline loop and by the chosen one (eight blocks at a time on a
    /// CPU with AVX-512 VBMI2).
    fn class_scans(text: &[u8]) -> (Vec<Candidate>, Vec<Candidate>) {
        let mut stretches = Vec::new();
        let mut start = 0;
        for (i, _) in text.iter().enumerate().filter(|(_, b)| **b == SEPARATOR) {
            stretches.push(start..i);
            start = i + 1;
        }
        stretches.push(start..text.len());
        let engine = Engine::new(KindSet::all()).expect("engine");
        let mut baseline = Vec::new();
        engine.scan_classes_with(Baseline, text, &stretches, &mut baseline);
        let mut chosen = Vec::new();
        engine.scan_classes(text, &stretches, &mut chosen);
        (baseline, chosen)
    }

    /// Long texts: values, colons, separators and words of up to 700
    /// bytes, so runs, words and skips cross blocks and groups of eight.
    fn long_text() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::strategy::Strategy;
        let piece = proptest::prop_oneof![
            proptest::sample::select(b"0123456789 -.():AZa_@x\0".to_vec()).prop_map(|b| vec![b]),
            proptest::sample::select(vec![
                &b" fe80::1ff:fe23:4567:890a "[..],
                b" 1:2:3:4:5:6:7:8 ",
                b"12:34:56",
                b" GB82WEST12345698765432",
                b" 415 555-0132 ",
                b" 10.1.2.3 ",
                b" a@b.com ",
                b" 376-85-2672 ",
            ])
            .prop_map(<[u8]>::to_vec),
            (1..700usize, proptest::sample::select(b"7qZ1a".to_vec()))
                .prop_map(|(n, b)| vec![b; n]),
        ];
        proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]
        #[test]
        fn the_baseline_class_scan_finds_what_the_chosen_one_finds_in_long_texts(
            text in long_text()
        ) {
            let (baseline, chosen) = class_scans(&text);
            proptest::prop_assert_eq!(baseline, chosen);
        }
    }

    #[test]
    fn the_class_scans_agree_around_block_and_group_edges() {
        let group = 8 * BLOCK;
        // Values, colons and a long word placed across the edges of
        // blocks and groups, in texts that end around them.
        let values: [&[u8]; 6] = [
            b" 415 555-0132 ",
            b"GB82WEST12345698765432",
            b" fe80::1 ",
            b" 10.1.2.3 ",
            b"a@b.co",
            b" 4111 1111 1111 1111 ",
        ];
        let mut found = 0;
        for value in values {
            for edge in [BLOCK, 4 * BLOCK, group, 2 * group] {
                for at in edge - 20..edge + 3 {
                    for len in [at + value.len(), edge + 1, 2 * group + 70, 3 * group] {
                        let mut text: Vec<u8> = b"ab 12 cd:"
                            .iter()
                            .copied()
                            .cycle()
                            .take(len.max(at + value.len()))
                            .collect();
                        text[at..at + value.len()].copy_from_slice(value);
                        let (baseline, chosen) = class_scans(&text);
                        found += chosen.len();
                        assert_eq!(baseline, chosen, "{at} {len}");
                    }
                }
            }
        }
        assert!(found > 1000, "{found}");
        // Colons everywhere: the v6 verdict of every block.
        let colons: Vec<u8> = b"1:2::3 12:34 a:b:c:d:e:f:1:2 "
            .iter()
            .copied()
            .cycle()
            .take(3 * group + 5)
            .collect();
        let (baseline, chosen) = class_scans(&colons);
        assert!(!chosen.is_empty());
        assert_eq!(baseline, chosen);
        // A word of letters over groups, then digits: the first-digit
        // carry runs through every lane.
        for letters in [500, group - 1, group, 2 * group + 3] {
            let mut text = vec![b'q'; letters];
            text.extend_from_slice(b"123456789 415 555-0132");
            let (baseline, chosen) = class_scans(&text);
            assert_eq!(baseline, chosen, "{letters}");
        }
        // A value, then a word of letters and digits over blocks and
        // groups (its first digit a stop, the rest not), then values.
        for word in [100, 600, 1500] {
            let mut text = b"call +44 20 8919 6125,".to_vec();
            text.extend(b"a1".iter().copied().cycle().take(word));
            text.extend_from_slice(b" call +44 20 8919 6125, a@b.co");
            let (baseline, chosen) = class_scans(&text);
            assert_eq!(baseline.len(), 3, "{word} {baseline:?}");
            assert_eq!(baseline, chosen, "{word}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]
        /// The cheap test first changes nothing: the first digits kept are
        /// those the exact masks keep, at every offset in the blocks.
        #[test]
        fn values_in_keeps_the_first_digits_the_masks_keep(
            text in numberish(),
            pad in 0..BLOCK,
        ) {
            let mut padded = vec![b'x'; pad];
            padded.extend_from_slice(&text);
            let mut before = Block::default();
            let mut first_digits = FirstDigits::default();
            for pair in pairs(Baseline, &padded) {
                let words = first_digits.next(&pair.lo);
                for v6 in [false, true] {
                    proptest::prop_assert_eq!(
                        pair.values_in(words, &before, v6),
                        words & pair.may_hold_values(&before, v6),
                        "{} {}", pair.base, v6
                    );
                }
                before = pair.lo;
            }
        }
    }

    #[test]
    fn the_value_masks_pass_prose_numbers_by() {
        let text = b"in 2023 we grew 45.3% and took 1234 ms, at 1.5 or 17 .";
        let mut before = Block::default();
        let pair = pairs(Baseline, text).next().expect("a block");
        assert_eq!(pair.may_hold_values(&before, true) & pair.lo.digit, 0);
        // Each test alone, in a block of its own or across the edge.
        for (text, at) in [
            (&b"ip 10.1.2.3"[..], 3),
            (b"GB82 WEST", 2),
            (b" gb82west1", 3),
            (b"at 12:30", 3),
            (b"call 415 555-0132", 5),
        ] {
            for pad in [0, 60, 62, 64] {
                let mut padded = vec![b'x'; pad];
                padded.extend_from_slice(text);
                let p = pad + at;
                before = Block::default();
                let mut may = 0;
                for pair in pairs(Baseline, &padded) {
                    if pair.base + BLOCK > p {
                        may = pair.may_hold_values(&before, true) >> (p - pair.base);
                        break;
                    }
                    before = pair.lo;
                }
                assert_eq!(may & 1, 1, "{pad} {}", String::from_utf8_lossy(text));
            }
        }
    }

    /// The rule over all candidates at once, as it was first written.
    fn resolve_all_at_once(mut candidates: Vec<Candidate>) -> Vec<Candidate> {
        candidates.sort_by(precedence);
        let mut kept: Vec<Candidate> = Vec::new();
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

    proptest::proptest! {
        #[test]
        fn resolving_by_clusters_keeps_what_resolving_at_once_keeps(
            spans in proptest::collection::vec((0..15usize, 0..200usize, 1..20usize), 0..60)
        ) {
            let candidates: Vec<Candidate> = spans
                .into_iter()
                .map(|(k, start, len)| Candidate { kind: Kind::ALL[k], start, end: start + len })
                .collect();
            let want = resolve_all_at_once(candidates.clone());
            proptest::prop_assert_eq!(resolve(&mut candidates.clone()), want);
        }
    }

    #[test]
    fn resolve_keeps_non_overlapping_sorted() {
        let c = |kind, start, end| Candidate { kind, start, end };
        let kept = resolve(&mut [
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
