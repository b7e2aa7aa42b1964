//! The parts of the third held-out multi-locale PII set (`pii_unseen3`):
//! its own values (`cards`, `phones`, `emails`, `ibans`), sentences that
//! hold none of them (`negatives`), and bodies of kinds the earlier sets
//! do not write (`carriers_more`: vCards, HTML pages, email signatures,
//! CSV exports with a header row, JSON record lists). The values were
//! written from numbering plans, issuers' ranges and the IBAN registry as
//! remembered, not from the detectors or the earlier sets' value lists.
//! The first set's bodies, carriers and body checks and the second set's
//! languages and templates are reused as they are, so the three sets are
//! carried and checked alike.

#[path = "../unseen/body.rs"]
pub mod body;
pub mod cards;
#[path = "../unseen/carriers.rs"]
pub mod carriers;
pub mod carriers_more;
#[path = "../unseen/checks.rs"]
pub mod checks;
pub mod emails;
#[path = "../unseen2/fill.rs"]
pub mod fill;
pub mod ibans;
#[path = "../unseen2/lang.rs"]
pub mod lang;
#[path = "../unseen2/lang_new.rs"]
mod lang_new;
pub mod negatives;
mod negatives_table;
pub mod phones;
#[path = "../unseen2/value_checks.rs"]
pub mod value_checks;

// The first set's sentences, names and words, which the second set's
// languages read.
#[path = "../unseen/lang.rs"]
#[allow(dead_code)] // its list of languages and codes are the second set's own
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

impl Value {
    pub fn new(kind: Kind, text: String, origin: &'static str, lang: Lang) -> Value {
        Value {
            kind,
            text,
            origin,
            lang,
            after: String::new(),
        }
    }
}
