//! Phone numbers of seventy countries, written as people there write
//! them: the national form with its trunk prefix, area codes in
//! parentheses, groups joined by spaces, dots, dashes or slashes, mobiles
//! and landlines; and the international forms (`+CC`, `00CC`, `+CC (0)`,
//! `(CC)`). Each country's templates (see `fill`) hold real area codes and
//! mobile prefixes of its numbering plan; the set's check holds each
//! number to the plan's lengths.

mod africa_oceania;
mod americas;
mod asia;
mod europe;

use sluice_scan::Kind;

use super::fill::fill;
use super::{Lang, Value};
use crate::common::Rng;

/// One country's numbering plan as far as the set needs it.
pub struct Country {
    /// ISO 3166 code (the census's origin).
    pub code: &'static str,
    /// The country calling code, without `+`.
    pub dial: &'static str,
    /// What a national number may start with before its significant
    /// number: `"0"` mostly, `"8"` (Russia, Kazakhstan), `"06"` (Hungary),
    /// `""` where there is none (the Italian `0` is part of the number);
    /// two entries where it is optional.
    pub trunks: &'static [&'static str],
    /// The lengths a national significant number may have.
    pub nsn: &'static [usize],
    /// The languages its values are written in, in turn.
    pub langs: &'static [Lang],
    /// Templates, used in turn.
    pub formats: &'static [&'static str],
}

/// Values drawn per country.
pub const PER_COUNTRY: usize = 10;

pub fn countries() -> impl Iterator<Item = &'static Country> {
    europe::COUNTRIES
        .iter()
        .chain(asia::COUNTRIES)
        .chain(africa_oceania::COUNTRIES)
        .chain(americas::COUNTRIES)
}

pub fn find(code: &str) -> Option<&'static Country> {
    countries().find(|c| c.code == code)
}

pub fn values(rng: &mut Rng) -> Vec<Value> {
    let mut values = Vec::new();
    for country in countries() {
        for i in 0..PER_COUNTRY {
            values.push(Value {
                kind: Kind::Phone,
                text: fill(rng, country.formats[i % country.formats.len()]),
                origin: country.code,
                lang: country.langs[i % country.langs.len()],
                after: String::new(),
            });
        }
    }
    values
}
