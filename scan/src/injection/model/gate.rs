//! Which texts the learned scorer reads: those in which the rules' sweep
//! found an anchor literal that is not an everyday word ([`EVERYDAY`]), or
//! in which a rule fired (`super::super::assess_segment`).
//!
//! The model's word loop costs several times the rules' sweep, so it runs
//! only where an attack is plausible. Run after any anchor, it still read
//! 37% of the benign training texts, and a fifth to a third of the
//! benchmark's longer bodies' texts, mostly for an `@` (e-mail addresses)
//! or an `http` (links). [`EVERYDAY`] is the anchors that at least 0.2% of
//! the benign training texts hold and the training attacks hold less than
//! twice as often, and those in 5% or more of the benign texts whatever the
//! attacks hold (`@`, `http`), measured on the training sets only
//! (`scan/train`, 2026-12-07): after them the model reads 23% of the benign
//! training texts, and 3,212 of the 3,508 training attacks it scores 0.5
//! or more (3,250 when read after any anchor). The rules still read every
//! anchor; only the model's reading depends on this list.

/// Anchors after which the model does not read a text.
pub(crate) const EVERYDAY: &[&str] = &[
    ".env",
    "@",
    "assume",
    "become",
    "command",
    "dan",
    "decod",
    "delete",
    "destroy",
    "discard",
    "end of",
    "freed",
    "from this",
    "has no ",
    "http",
    "instead",
    "instructions for",
    "is deprecated",
    "listen",
    "notice",
    "omit",
    "override",
    "parallel",
    "system",
    "system prompt",
    "the top",
    "truncate",
    "when using",
    "www.",
];

/// Whether a hit of the anchor `literal` makes the model read the text.
pub(crate) fn reads_after(literal: &str) -> bool {
    !EVERYDAY.contains(&literal)
}

/// Where in a text the learned scorer reads: the hits of anchors it reads
/// after (`start`, `end` in the text's bytes), or the whole text when such
/// a hit was in what the text hides (decoded, or spelled in tag
/// characters) or in a text whose hidden characters were stripped, where
/// the hit's offsets are not the text's.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Reading {
    pub whole: bool,
    pub hits: Vec<(usize, usize)>,
}

impl Reading {
    /// Whether the model reads the text at all.
    #[cfg(test)]
    pub(crate) fn any(&self) -> bool {
        self.whole || !self.hits.is_empty()
    }
}
