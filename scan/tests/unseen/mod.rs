//! The parts of the unseen multi-locale PII set (`pii_unseen`): a table of
//! formats per type (`cards`, `phones`, `emails`, `ibans`), sentences per
//! language (`lang`), sentences holding none of them (`negatives`), and the
//! request bodies that carry them (`carriers`, written through `body`,
//! which keeps each value's byte span in the body as sent), and the
//! checks of those bodies both unseen sets run (`checks`).
//!
//! The formats are written from the world's numbering plans, issuers'
//! ranges and the IBAN registry, not from the detectors: this set is the
//! one they are scored on once, so nothing here may be tuned to them.

pub mod body;
pub mod cards;
pub mod carriers;
pub mod checks;
pub mod emails;
pub mod ibans;
pub mod lang;
pub mod negatives;
pub mod phones;

use sluice_scan::Kind;

pub use lang::Lang;

/// One labelled value before it is written into a body: its kind, its text
/// as a person would write it, where it comes from (issuer or country, for
/// the census), the language of the text around it.
#[derive(Debug, Clone)]
pub struct Value {
    pub kind: Kind,
    pub text: String,
    pub origin: &'static str,
    pub lang: Lang,
    /// Written right after the value and not part of it (a phone's
    /// extension); usually empty.
    pub after: String,
}
