//! The literal prefilter: where an anchored detector (a credential shape's
//! prefix, a secret's name) may start.
//!
//! The literals are searched in two automata, the shapes' and the names',
//! not one: over all ~30 together the vector prefilter's buckets fill up
//! and it stops to verify at almost every few bytes of prose, which made
//! one pass several times slower than two (3.6 against 8.7 GB/s on the
//! benchmark bodies). The two streams of matches are merged into exactly
//! what one leftmost-first automaton over the shapes' literals followed by
//! the names' would report.
//!
//! Where the CPU has AVX-512 VBMI both sets are found in one pass instead
//! ([`Literals`]): a table lookup (`vpermb`) per byte of the first three of
//! every literal, sixteen groups of literals at once, 64 bytes a step, and a
//! comparison with each literal only where all three bytes may start one
//! (a few hundred places in a megabyte of LLM-API text). The two passes of
//! the automata's prefilter were a seventh of the PII scan.

use aho_corasick::{AhoCorasick, Input, MatchKind};

use super::chars::{key_of, word_at};
use super::detect::{generic, secrets};
use super::kind::{Kind, KindSet};

/// What an anchor literal announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    Shape(secrets::Shape),
    Name(generic::Strength, generic::Name),
}

/// One anchor found: `text[start..end]` is its literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hit {
    pub anchor: Anchor,
    pub start: usize,
    pub end: usize,
}

/// Literals searched together, each with what it announces.
#[derive(Debug)]
struct Set {
    automaton: AhoCorasick,
    anchors: Vec<Anchor>,
}

impl Set {
    fn new(literals: Vec<(&str, Anchor)>) -> Result<Option<Set>, aho_corasick::BuildError> {
        if literals.is_empty() {
            return Ok(None);
        }
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostFirst)
            .build(literals.iter().map(|(literal, _)| literal))?;
        let anchors = literals.into_iter().map(|(_, anchor)| anchor).collect();
        Ok(Some(Set { automaton, anchors }))
    }

    /// The leftmost-first match starting at or after `from`.
    fn find(&self, text: &[u8], from: usize) -> Option<Hit> {
        let m = self.automaton.find(Input::new(text).range(from..))?;
        Some(Hit {
            anchor: self.anchors[m.pattern().as_usize()],
            start: m.start(),
            end: m.end(),
        })
    }
}

/// The anchors of every enabled anchored detector.
#[derive(Debug)]
pub(crate) struct Anchors {
    shapes: Option<Set>,
    names: Option<Set>,
    /// The same literals for the one-pass search.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code, reason = "x86-64 only"))]
    literals: Literals,
}

impl Anchors {
    pub(crate) fn new(kinds: KindSet) -> Result<Anchors, aho_corasick::BuildError> {
        let mut shapes = Vec::new();
        for shape in secrets::Shape::ALL {
            if shape.kinds().iter().any(|k| kinds.contains(*k)) {
                for literal in shape.anchors() {
                    shapes.push((*literal, Anchor::Shape(shape)));
                }
            }
        }
        let mut names = Vec::new();
        if kinds.contains(Kind::GenericSecret) {
            for (literal, strength, name) in generic::NAMES {
                names.push((*literal, Anchor::Name(*strength, *name)));
            }
        }
        Ok(Anchors {
            literals: Literals::new(&shapes, &names),
            shapes: Set::new(shapes)?,
            names: Set::new(names)?,
        })
    }

    /// Calls `visit` with each anchor in `text`, leftmost first, none
    /// overlapping the one before.
    pub(crate) fn for_each(&self, text: &[u8], visit: impl FnMut(Hit)) {
        #[cfg(target_arch = "x86_64")]
        if let Some(vbmi) = x86::Vbmi::detect() {
            return self.for_each_vbmi(vbmi, text, visit);
        }
        self.for_each_automata(text, visit);
    }

    /// [`Anchors::for_each`] with the literals found in one pass.
    #[cfg(target_arch = "x86_64")]
    fn for_each_vbmi(&self, vbmi: x86::Vbmi, text: &[u8], visit: impl FnMut(Hit)) {
        let mut starts = STARTS.take();
        starts.clear();
        self.literals.starts(vbmi, text, &mut starts);
        self.visit_starts(&starts, visit);
        if starts.capacity() <= STARTS_KEPT {
            STARTS.set(starts);
        }
    }

    /// The hits of the places `starts` found, as [`Anchors::for_each`]
    /// gives them.
    #[cfg(target_arch = "x86_64")]
    fn visit_starts(&self, starts: &[Start], visit: impl FnMut(Hit)) {
        // Each set's next start from a position on: the positions asked
        // for only rise, so each set reads the list once.
        let next = |set: usize| {
            let mut i = 0;
            move |from: usize| {
                while let Some(s) = starts.get(i) {
                    if s.at >= from
                        && let Some(k) = s.first[set]
                    {
                        let (literal, anchor) = self.literals.sets[set][usize::from(k)];
                        return Some(Hit {
                            anchor,
                            start: s.at,
                            end: s.at + literal.len(),
                        });
                    }
                    i += 1;
                }
                None
            }
        };
        merge(next(SHAPES), next(NAMES), visit);
    }

    /// [`Anchors::for_each`] with the two automata.
    fn for_each_automata(&self, text: &[u8], visit: impl FnMut(Hit)) {
        let (shapes, names) = (self.shapes.as_ref(), self.names.as_ref());
        merge(
            |from| shapes.and_then(|s| s.find(text, from)),
            |from| names.and_then(|s| s.find(text, from)),
            visit,
        );
    }
}

/// The anchors of two sets merged as one leftmost-first automaton over
/// the first set's literals then the second's reports them: `shapes(from)`
/// and `names(from)` give each set's leftmost-first match at or after
/// `from`.
fn merge(
    mut shapes: impl FnMut(usize) -> Option<Hit>,
    mut names: impl FnMut(usize) -> Option<Hit>,
    mut visit: impl FnMut(Hit),
) {
    let mut shape = shapes(0);
    let mut name = names(0);
    loop {
        let hit = match (shape, name) {
            // On a tie the shape wins: its literals come first.
            (Some(s), Some(n)) if n.start < s.start => n,
            (Some(h), _) | (None, Some(h)) => h,
            (None, None) => return,
        };
        visit(hit);
        // One automaton would go on from the end of this match: a
        // pending match that overlaps it is looked for again from there.
        // One that does not is still the leftmost from there.
        if shape.is_some_and(|s| s.start < hit.end) {
            shape = shapes(hit.end);
        }
        if name.is_some_and(|n| n.start < hit.end) {
            name = names(hit.end);
        }
    }
}

#[cfg(target_arch = "x86_64")]
thread_local! {
    /// The places of [`Anchors::for_each_vbmi`], kept per thread: nearly
    /// every LLM-API body has one ("oken" of `max_tokens`), and a fresh
    /// vector for each was an allocation and a free per body scanned.
    static STARTS: std::cell::Cell<Vec<Start>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The most places kept for the next text (64 KiB): a body with more
/// gives its vector back to the allocator.
#[cfg(target_arch = "x86_64")]
const STARTS_KEPT: usize = 4096;

/// Index of the shapes' set in [`Literals::sets`].
const SHAPES: usize = 0;
/// Index of the names' set.
const NAMES: usize = 1;

/// How many bytes of each literal the one-pass search looks up (every
/// literal has at least as many).
const LOOKED_UP: usize = 3;

/// Groups of literals told apart by the lookup: sixteen, one bit of two
/// bytes.
const GROUPS: usize = 16;

/// The literals of both sets for the one-pass search: lookup tables of
/// their first bytes, and the literals of each group to compare.
#[cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, reason = "read by the x86-64 search only")
)]
#[derive(Debug)]
struct Literals {
    /// Each set's literals in order, with what each announces.
    sets: [Vec<(&'static str, Anchor)>; 2],
    /// `tables[half][k][b % 64]`: bit `g` when a literal of group
    /// `8 * half + g` has byte `b` at offset `k`. Bytes with the same low
    /// six bits share an entry (the vector lookup reads six bits): they
    /// cost a comparison, never a literal.
    tables: [[[u8; 64]; LOOKED_UP]; 2],
    /// Each group's literals as (set, index in the set, first bytes).
    groups: [Vec<(usize, u8, Prefix)>; GROUPS],
}

/// A literal's first eight bytes (fewer when it is shorter) as a word and
/// the mask of the bytes it has: most literals are compared whole with
/// one load. The call to `memcmp` for each literal of the groups seen at
/// a place ("key", "oken": a few places a kilobyte of prose) was ~2% of
/// both content stages' time on a 1 KiB chat body, a twelfth of the PII
/// scan's.
#[derive(Debug, Clone, Copy)]
struct Prefix {
    word: u64,
    mask: u64,
}

impl Prefix {
    fn of(literal: &[u8]) -> Prefix {
        let n = literal.len().min(8);
        Prefix {
            word: key_of(&literal[..n]),
            mask: u64::MAX >> (64 - 8 * n),
        }
    }

    /// Whether `bytes` (the text's next eight, or fewer at its end, then
    /// zeros) begin with the prefix.
    fn starts(self, bytes: u64) -> bool {
        bytes & self.mask == self.word
    }
}

/// A place where a literal of either set starts: the first (in the set's
/// order) of each set's literals that start there.
#[cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, reason = "read by the x86-64 search only")
)]
#[derive(Debug, Clone, Copy)]
struct Start {
    at: usize,
    first: [Option<u8>; 2],
}

#[cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, reason = "read by the x86-64 search only")
)]
impl Literals {
    fn new(shapes: &[(&'static str, Anchor)], names: &[(&'static str, Anchor)]) -> Literals {
        let mut literals = Literals {
            sets: [shapes.to_vec(), names.to_vec()],
            tables: [[[0; 64]; LOOKED_UP]; 2],
            groups: Default::default(),
        };
        // Literals that share their first two letters (either case) share
        // a group, so few other texts pass a group's lookup.
        let mut prefixes: Vec<[u8; 2]> = Vec::new();
        for set in [SHAPES, NAMES] {
            for (index, (literal, _)) in literals.sets[set].iter().enumerate() {
                let bytes = literal.as_bytes();
                assert!(bytes.len() >= LOOKED_UP, "{literal:?}");
                let prefix = [bytes[0], bytes[1]].map(|b| b.to_ascii_lowercase());
                let group = match prefixes.iter().position(|p| *p == prefix) {
                    Some(g) => g,
                    None => {
                        prefixes.push(prefix);
                        prefixes.len() - 1
                    }
                } % GROUPS;
                let index = u8::try_from(index).expect("fewer than 256 literals");
                literals.groups[group].push((set, index, Prefix::of(bytes)));
                for (k, &b) in bytes[..LOOKED_UP].iter().enumerate() {
                    literals.tables[group / 8][k][usize::from(b) % 64] |= 1 << (group % 8);
                }
            }
        }
        literals
    }

    /// Appends the places where a literal starts in `text`, in order.
    #[cfg(target_arch = "x86_64")]
    fn starts(&self, vbmi: x86::Vbmi, text: &[u8], out: &mut Vec<Start>) {
        vbmi.candidates(&self.tables, text, |at, groups| {
            if let Some(start) = self.start_at(text, at, groups) {
                out.push(start);
            }
        });
    }

    /// Which literals start at `at`, of those in `groups` (bit `g`: group
    /// `g`).
    fn start_at(&self, text: &[u8], at: usize, mut groups: u16) -> Option<Start> {
        let mut first: [Option<u8>; 2] = [None, None];
        let bytes = word_at(text, at);
        while groups != 0 {
            let group = groups.trailing_zeros() as usize;
            groups &= groups - 1;
            for &(set, index, prefix) in &self.groups[group] {
                if !prefix.starts(bytes) {
                    continue;
                }
                let (literal, _) = self.sets[set][usize::from(index)];
                let literal = literal.as_bytes();
                if (literal.len() <= 8 || text[at..].starts_with(literal))
                    && first[set].is_none_or(|f| index < f)
                {
                    first[set] = Some(index);
                }
            }
        }
        (first != [None, None]).then_some(Start { at, first })
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::LOOKED_UP;

    /// AVX-512 VBMI (with F and BW): only [`Vbmi::detect`] makes one.
    #[derive(Debug, Clone, Copy)]
    pub(super) struct Vbmi(());

    impl Vbmi {
        #[inline]
        pub(super) fn detect() -> Option<Vbmi> {
            let has = std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vbmi");
            has.then_some(Vbmi(()))
        }

        /// Calls `visit(at, groups)` at each place of `text`, in order,
        /// where the bytes from `at` pass the lookup of the groups in
        /// `groups` (bit `g`: group `g`).
        pub(super) fn candidates(
            self,
            tables: &[[[u8; 64]; LOOKED_UP]; 2],
            text: &[u8],
            visit: impl FnMut(usize, u16),
        ) {
            // SAFETY: a `Vbmi` exists only on a CPU with these features.
            unsafe { candidates(tables, text, visit) }
        }
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,bmi1")]
    fn candidates(
        tables: &[[[u8; 64]; LOOKED_UP]; 2],
        text: &[u8],
        mut visit: impl FnMut(usize, u16),
    ) {
        // SAFETY: each load reads a 64-byte table.
        let table =
            |half: usize, k: usize| unsafe { _mm512_loadu_si512(tables[half][k].as_ptr().cast()) };
        // Written out, not built with `array::map`: a build that left the
        // maps' closures out of line (one did) passed these six vectors
        // through the stack, about 50 ns more per 1 KiB body scanned.
        let t = [
            [table(0, 0), table(0, 1), table(0, 2)],
            [table(1, 0), table(1, 1), table(1, 2)],
        ];
        let mut base = 0;
        while base < text.len() {
            // The block and the bytes after it; past the text, zeros, which
            // start no literal. The last block's loads are masked to the
            // text: a padded copy, stored a byte run at a time and loaded
            // whole, stalled each load on the stores.
            let rest = &text[base..];
            let load = |k: usize| match rest.get(k..k + 64) {
                // SAFETY: 64 readable bytes, unaligned load.
                Some(bytes) => unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) },
                // SAFETY: the mask covers only the bytes of `rest` from `k`,
                // fewer than 64 here (masked-off bytes are not read, so the
                // address may pass its end).
                None => unsafe {
                    let left = rest.len().saturating_sub(k);
                    _mm512_maskz_loadu_epi8((1 << left) - 1, rest.as_ptr().wrapping_add(k).cast())
                },
            };
            let v: [__m512i; LOOKED_UP] = [load(0), load(1), load(2)];
            // A byte's groups at offset `k`, by its low six bits.
            let look = |half: usize, k: usize| _mm512_permutexvar_epi8(v[k], t[half][k]);
            let both = |half: usize| {
                _mm512_and_si512(
                    _mm512_and_si512(look(half, 0), look(half, 1)),
                    look(half, 2),
                )
            };
            let (low, high) = (both(0), both(1));
            let any = _mm512_or_si512(low, high);
            let mut hits = _mm512_test_epi8_mask(any, any);
            if hits != 0 {
                let mut groups = [[0u8; 64]; 2];
                // SAFETY: two stores of 64 bytes into 64-byte arrays.
                unsafe {
                    _mm512_storeu_si512(groups[0].as_mut_ptr().cast(), low);
                    _mm512_storeu_si512(groups[1].as_mut_ptr().cast(), high);
                }
                while hits != 0 {
                    let i = hits.trailing_zeros() as usize;
                    hits &= hits - 1;
                    visit(
                        base + i,
                        u16::from(groups[0][i]) | u16::from(groups[1][i]) << 8,
                    );
                }
            }
            base += 64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What one leftmost-first automaton over every literal reports: the
    /// behaviour the two merged automata must keep.
    fn one_automaton(text: &[u8]) -> Vec<(usize, usize)> {
        let literals: Vec<&str> = secrets::Shape::ALL
            .iter()
            .flat_map(|s| s.anchors().iter().copied())
            .chain(generic::NAMES.iter().map(|(literal, _, _)| *literal))
            .collect();
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostFirst)
            .build(literals)
            .expect("automaton");
        automaton
            .find_iter(text)
            .map(|m| (m.start(), m.end()))
            .collect()
    }

    fn merged(text: &[u8]) -> Vec<(usize, usize)> {
        let anchors = Anchors::new(KindSet::all()).expect("anchors");
        let mut hits = Vec::new();
        anchors.for_each_automata(text, |h| hits.push((h.start, h.end)));
        hits
    }

    /// Every hit of the chosen search and of the automata, in `kinds`.
    fn both_ways(kinds: KindSet, text: &[u8]) -> (Vec<Hit>, Vec<Hit>) {
        let anchors = Anchors::new(kinds).expect("anchors");
        let (mut chosen, mut automata) = (Vec::new(), Vec::new());
        anchors.for_each(text, |h| chosen.push(h));
        anchors.for_each_automata(text, |h| automata.push(h));
        (chosen, automata)
    }

    #[test]
    fn literals_are_found_in_one_pass_as_by_the_automata() {
        let literals: Vec<&str> = secrets::Shape::ALL
            .iter()
            .flat_map(|s| s.anchors().iter().copied())
            .chain(generic::NAMES.iter().map(|(literal, _, _)| *literal))
            .collect();
        // Each literal at every offset of a block and at the text's end,
        // among bytes of every value.
        for literal in &literals {
            for pad in (0..70).chain([126, 127, 128]) {
                for end_pad in [0, 1, 2, 5] {
                    let mut text: Vec<u8> = (0..pad).map(|i| (i * 37 % 256) as u8).collect();
                    text.extend_from_slice(literal.as_bytes());
                    text.extend(std::iter::repeat_n(b'x', end_pad));
                    let (chosen, automata) = both_ways(KindSet::all(), &text);
                    assert!(!automata.is_empty(), "{literal}");
                    assert_eq!(chosen, automata, "{literal} {pad} {end_pad}");
                }
            }
        }
        let (chosen, automata) = both_ways(KindSet::all(), b"");
        assert_eq!((chosen, automata), (vec![], vec![]));
        // Only some kinds: only their literals are built.
        let (chosen, automata) = both_ways(
            [Kind::AwsAccessKey, Kind::GenericSecret]
                .into_iter()
                .collect(),
            b"sk-x AKIA ghp_ password",
        );
        assert_eq!(chosen.len(), 2);
        assert_eq!(chosen, automata);
    }

    use proptest::strategy::Strategy;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]
        #[test]
        fn the_one_pass_search_finds_what_the_automata_find(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(vec![
                        "sk-", "key", "KEY", "Key", "eyJ", "xox", "xapp-", "ghp_", "github_pat_",
                        "assw", "ecret", "oken", "Bearer ", "k_live_", "-----BEGIN ", "A3T",
                        "AKIA", "ASSW", "hooks.slack.com/", "s", "k", "-", "_", "e", "y", " ",
                        "x", "o", "gh", "as", "ok", "\u{c1}KIA", "A\u{c1}IA", "\0",
                    ]).prop_map(String::from),
                    "[ -~]{0,70}",
                ],
                0..40,
            )
        ) {
            let text = pieces.concat();
            let (chosen, automata) = both_ways(KindSet::all(), text.as_bytes());
            proptest::prop_assert_eq!(chosen, automata);
        }
    }

    #[test]
    fn merged_matches_are_those_of_one_automaton() {
        for text in [
            "",
            "nothing here",
            "password=x and AKIAIOSFODNN7EXAMPLE",
            // Overlaps across the two sets: a name inside a shape's literal
            // and the other way round.
            "sk-key ghp_key xoxKEY eyJkey",
            "keyghp_ ASSWORD_ghr_ -----BEGIN KEY-----",
            "github_pat_token hooks.slack.com/Bearer x",
            "tokenkey okenKey sk_live_ rk_test_",
            "A3Tkey xapp-ecret ecretxox",
        ] {
            assert_eq!(
                merged(text.as_bytes()),
                one_automaton(text.as_bytes()),
                "{text}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn merged_matches_are_those_of_one_automaton_on_any_mix(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "sk-", "key", "KEY", "Key", "eyJ", "xox", "xapp-", "ghp_", "github_pat_",
                    "assw", "ecret", "oken", "Bearer ", "k_live_", "-----BEGIN ", "A3T",
                    "AKIA", "s", "k", "-", "_", "e", "y", " ", "x", "o",
                ]),
                0..30,
            )
        ) {
            let text = pieces.concat();
            proptest::prop_assert_eq!(merged(text.as_bytes()), one_automaton(text.as_bytes()));
        }
    }

    #[test]
    fn anchors_say_what_they_announce() {
        let anchors = Anchors::new(KindSet::all()).expect("anchors");
        let mut hits = Vec::new();
        anchors.for_each(b"my_secret: ghp_x", |h| hits.push(h.anchor));
        assert_eq!(
            hits,
            [
                Anchor::Name(generic::Strength::Key, generic::Name::After(b's')),
                Anchor::Shape(secrets::Shape::Github)
            ]
        );
    }

    #[test]
    fn only_enabled_kinds_are_searched() {
        let anchors = Anchors::new([Kind::Email].into_iter().collect()).expect("anchors");
        assert!(anchors.shapes.is_none() && anchors.names.is_none());
        let mut any = false;
        anchors.for_each(b"password=hunter2 AKIAIOSFODNN7EXAMPLE", |_| any = true);
        assert!(!any);
    }
}
