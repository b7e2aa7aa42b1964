//! The parts of the second held-out multi-locale PII set (`pii_unseen2`):
//! its own values (`cards`, `phones`, `emails`, `ibans`) and sentences
//! holding none of them (`negatives`), written from numbering plans,
//! issuers' ranges and the IBAN registry as remembered, not from the
//! detectors; languages (`lang`) that extend the first set's with seven
//! more; and the first set's bodies, carriers and body checks (`body`,
//! `carriers`, `checks`), reused as they are so both sets are carried
//! and checked alike.

#[path = "../unseen/body.rs"]
pub mod body;
pub mod cards;
#[path = "../unseen/carriers.rs"]
pub mod carriers;
#[path = "../unseen/checks.rs"]
pub mod checks;
pub mod emails;
pub mod fill;
pub mod ibans;
pub mod lang;
mod lang_new;
pub mod negatives;
mod negatives_more;
pub mod phones;
pub mod value_checks;

// The first set's sentences, names and words, for its ten languages.
#[path = "../unseen/lang.rs"]
#[allow(dead_code)] // its list of languages and codes are this set's own
mod first_lang;

use sluice_scan::Kind;

pub use lang::Lang;

/// One labelled value before it is written into a body: its kind, its text
/// as a person would write it, where it comes from (issuer, country or
/// email form, for the census), the language of the text around it.
#[derive(Debug, Clone)]
pub struct Value {
    pub kind: Kind,
    pub text: String,
    pub origin: &'static str,
    pub lang: Lang,
    /// Written right after the value and not part of it; empty here (the
    /// shared carriers read it).
    pub after: String,
}
