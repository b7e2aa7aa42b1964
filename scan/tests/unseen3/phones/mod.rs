//! Phone numbers of fifty-eight countries (`plans`), written as people
//! there write them: at home with the trunk prefix, the area code in
//! parentheses, spaces, dots, dashes or a slash; abroad as `+CC`, `00CC`,
//! `+CC (0)`, `(+CC)` or solid. Every number is a fill of its country's
//! template, so it has a length and leading digits of that plan.

#[macro_use]
mod plans;
mod europe;
mod world;

use sluice_scan::Kind;

use super::Value;
use super::fill::fill;
use crate::common::Rng;

pub use plans::{Country, countries};

/// How a number is written at home (`g0` the first group with the trunk
/// prefix before it, the rest after).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nat {
    /// `020 7946 0018`
    Space,
    /// `090-1234-5678`
    Dash,
    /// `06.12.34.56.78`
    Dot,
    /// `02079460018`
    Solid,
    /// `(020) 7946 0018`
    Paren,
    /// `(11) 91234-5678`, `(415) 555-0123`
    ParenDash,
    /// `030/12345678`
    Slash,
    /// `070-123 45 67`, `010-12345678`
    AreaDash,
    /// `8 (495) 123-45-67`
    RuParen,
}

/// How a number is written for callers abroad.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intl {
    /// `+44 20 7946 0018`
    Plus,
    /// `+81-90-1234-5678`
    PlusDash,
    /// `+442079460018`
    PlusSolid,
    /// `+44 (0)20 7946 0018` (countries whose trunk prefix is 0)
    PlusZero,
    /// `0044 20 7946 0018`
    Zeros,
    /// `+1 (415) 555-0123`, `+7 (912) 345-67-89`
    PlusParen,
    /// `(+34) 612 345 678`
    ParenPlus,
}

pub fn find(code: &str) -> Option<Country> {
    countries().into_iter().find(|c| c.code == code)
}

/// `number`'s groups written at home in `style`.
pub fn national(country: &Country, groups: &[String], bare: bool, style: Nat) -> String {
    let trunk = if bare { "" } else { country.trunk };
    let first = format!("{trunk}{}", groups[0]);
    let rest = &groups[1..];
    // A trunk of more than a 0 (Russia's 8, Hungary's 06) is a group of
    // its own: `8 912 345 67 89`, `06 20 123 4567`.
    let own_group = !trunk.is_empty() && trunk != "0";
    let head = if own_group {
        vec![trunk.to_string(), groups[0].clone()]
    } else {
        vec![first.clone()]
    };
    let all: Vec<String> = head.into_iter().chain(rest.iter().cloned()).collect();
    match style {
        Nat::Space => all.join(" "),
        Nat::Dash => all.join("-"),
        Nat::Dot => all.join("."),
        Nat::Solid => all.concat(),
        Nat::Paren => format!("({first}) {}", rest.join(" ")),
        Nat::ParenDash => format!("({first}) {}", rest.join("-")),
        Nat::Slash => format!("{first}/{}", rest.join(" ")),
        Nat::AreaDash => format!("{first}-{}", rest.join(" ")),
        Nat::RuParen => format!("{trunk} ({}) {}", groups[0], rest.join("-")),
    }
}

pub fn international(country: &Country, groups: &[String], style: Intl) -> String {
    let cc = country.dial;
    let rest = groups[1..].join(" ");
    match style {
        Intl::Plus => format!("+{cc} {}", groups.join(" ")),
        Intl::PlusDash => format!("+{cc}-{}", groups.join("-")),
        Intl::PlusSolid => format!("+{cc}{}", groups.concat()),
        Intl::PlusZero => format!("+{cc} (0){} {rest}", groups[0]),
        Intl::Zeros => format!("00{cc} {}", groups.join(" ")),
        Intl::PlusParen => format!("+{cc} ({}) {}", groups[0], groups[1..].join("-")),
        Intl::ParenPlus => format!("(+{cc}) {}", groups.join(" ")),
    }
}

/// Numbers each country gets: more for the countries whose people send
/// the most agent traffic, at least five for every one.
fn share(code: &str) -> usize {
    match code {
        "US" | "GB" | "DE" | "IN" => 16,
        "FR" | "ES" | "IT" | "BR" | "JP" | "NL" | "AU" | "CA" => 11,
        "MX" | "PL" | "CN" | "KR" | "TR" | "RU" | "ID" | "CH" | "SE" => 8,
        _ => 6,
    }
}

pub fn values(rng: &mut Rng) -> Vec<Value> {
    let mut out = Vec::new();
    for country in countries() {
        for k in 0..share(country.code) {
            // Mobiles and fixed lines in turn, starting at either.
            let template = country.plans[(k + rng.below(2) as usize) % country.plans.len()];
            let (bare, intl_only, template) = match template.as_bytes()[0] {
                b'^' => (true, false, &template[1..]),
                b'!' => (false, true, &template[1..]),
                _ => (false, false, template),
            };
            let number = fill(rng, template);
            let groups: Vec<String> = number.split(' ').map(str::to_string).collect();
            // About three in five written as at home.
            let text = if !intl_only && rng.below(5) < 3 {
                let style = *rng.pick(country.national);
                national(&country, &groups, bare && rng.below(4) != 0, style)
            } else {
                let mut style = *rng.pick(country.intl);
                if style == Intl::PlusZero && country.trunk != "0" {
                    style = Intl::Plus;
                }
                international(&country, &groups, style)
            };
            let lang = *rng.pick(country.langs);
            out.push(Value::new(Kind::Phone, text, country.code, lang));
        }
    }
    out
}
