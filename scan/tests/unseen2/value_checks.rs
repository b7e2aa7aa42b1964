//! The checks of a card and an IBAN value the second and third held-out
//! sets share (each against its own issuers' ranges and IBAN registry):
//! a card holds digits and one kind of separator, passes Luhn at 12 to 19
//! digits within its issuer's ranges; an IBAN is of one case, its
//! country's length and layout, passes mod 97 and, when spaced, is grouped
//! by four.

use super::{cards, ibans};
use crate::common::{self, luhn_ok};

pub fn check_card(value: &str, origin: &str) -> Result<(), String> {
    if value
        .chars()
        .any(|c| !c.is_ascii_digit() && !" -.".contains(c))
    {
        return Err("a character that is no digit or separator".into());
    }
    let separators: Vec<char> = value.chars().filter(|c| !c.is_ascii_digit()).collect();
    if separators.windows(2).any(|w| w[0] != w[1]) {
        return Err("mixed separators".into());
    }
    let digits: String = value.chars().filter(char::is_ascii_digit).collect();
    let issuer = cards::ISSUERS
        .iter()
        .find(|i| i.name == origin)
        .ok_or("no such issuer")?;
    if !(12..=19).contains(&digits.len()) || !luhn_ok(digits.as_bytes()) {
        return Err(format!("length {} or Luhn", digits.len()));
    }
    if !cards::in_range(issuer, &digits) {
        return Err("outside the issuer's ranges".into());
    }
    Ok(())
}

pub fn check_iban(value: &str, origin: &str) -> Result<(), String> {
    let solid: String = value.chars().filter(|c| *c != ' ').collect();
    let upper = solid.to_ascii_uppercase();
    if solid != upper && solid != solid.to_ascii_lowercase() {
        return Err("mixed case".into());
    }
    let country = ibans::COUNTRIES
        .iter()
        .find(|c| c.code == origin)
        .ok_or("no such country")?;
    if !upper.starts_with(origin) || upper.len() != country.length {
        return Err(format!(
            "length {} (registry {})",
            upper.len(),
            country.length
        ));
    }
    // Each BBAN character of the class its layout gives.
    let mut bban = upper[4..].bytes();
    for (count, class) in ibans::layout(country.layout) {
        for b in bban.by_ref().take(count) {
            let fits = match class {
                b'n' => b.is_ascii_digit(),
                b'a' => b.is_ascii_uppercase(),
                _ => b.is_ascii_digit() || b.is_ascii_uppercase(),
            };
            if !fits {
                return Err(format!("{} is not of class {}", b as char, class as char));
            }
        }
    }
    if !ibans::valid(&upper) {
        return Err("mod 97".into());
    }
    if value.contains(' ') && value != common::grouped(&solid, &[4; 9], " ") {
        return Err("not grouped by four".into());
    }
    Ok(())
}
