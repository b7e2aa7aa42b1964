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

use aho_corasick::{AhoCorasick, Input, MatchKind};

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
            shapes: Set::new(shapes)?,
            names: Set::new(names)?,
        })
    }

    /// Calls `visit` with each anchor in `text`, leftmost first, none
    /// overlapping the one before.
    pub(crate) fn for_each(&self, text: &[u8], mut visit: impl FnMut(Hit)) {
        let find = |set: &Option<Set>, from: usize| set.as_ref().and_then(|s| s.find(text, from));
        let mut shape = find(&self.shapes, 0);
        let mut name = find(&self.names, 0);
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
                shape = find(&self.shapes, hit.end);
            }
            if name.is_some_and(|n| n.start < hit.end) {
                name = find(&self.names, hit.end);
            }
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
        anchors.for_each(text, |h| hits.push((h.start, h.end)));
        hits
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
