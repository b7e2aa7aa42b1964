//! Telephone numbers. Formats reported on their own:
//!
//! - international: `+` and a country calling code the ITU assigns, then
//!   digit groups separated by one space, dash or dot, or parenthesized
//!   (`+44 20 7946 0958`, `+49 (30) 1234567`, `+44 (0)20 7946 0958`,
//!   `+12025550123`); 8 to 15 digits in all (E.164), and for `+1` a valid
//!   North American number;
//! - North American: `(202) 555-0123`, `202-555-0123`, `202.555.0123`,
//!   `202 555 0123`, optionally after `1-` or `1 `; area code and exchange
//!   start with 2-9;
//! - national, in the writings of each country's numbering plan
//!   ([`plans`], [`trunk`]): with a trunk `0` (`020 7946 0958`,
//!   `030/12345678`, `089 / 1234567`, `(030) 1234-5678`, `044 668 18 00`,
//!   `01 23 45 67 89`, `03-1234-5678`, `0467-12-3456`, `0470 12 34 56`,
//!   `0 532 123 45 67`, `011 15-1234-5678`, `0912.345.678`) or `8`
//!   (`8 (495) 123-45-67`), or without one where the country dials none
//!   (Spain's and Poland's `912 345 678`, Italy's `312 345 6789`, India's
//!   `98765 43210`, China's `138 0013 8000`, Brazil's `(11) 91234-5678`
//!   and `11 3456-7890`, Mexico's `55 1234 5678`, Chile's `9 1234 5678`,
//!   Australia's `1300 123 456`, Norway's mobiles `412 34 567`).
//!
//! The groups after the first are separated the same way throughout, but
//! for one change after the area code (`020-123 4567`, `(030) 1234-5678`,
//! `0211/12345-67`); a slash, alone or between spaces, only there.
//! A national number is not reported when signed (`-0127-04829`), after a
//! word of another kind of
//! number ("order", "invoice", "ref", "ISBN", "zip", "id:", "total", tax,
//! VAT, company and identity number words, ...
//! in a few languages, within 16 bytes), after `#` or a currency sign,
//! before a currency or unit ("912 345 678 euros"), nor as the tail of a
//! longer run of digit groups, even with a phone word near (which a
//! compound such as "Bestellnummer" holds).
//!
//! An international number may have its country code in parentheses
//! (`(+34) 612 345 678`), or be dialed with `00` joined to the country
//! code or in a group of its own, and two groups or more after the code
//! (`0044 20 7946 0958`, `0031 20-123 4567`, `00 44 20 7946 0958`).
//!
//! Formats reported only after a phone word ("phone", "call", "tel",
//! "mobile", "Telefon", "numéro", "電話", ...): ten bare North American
//! digits (`2025550123`), India's mobiles with a dash (`98765-43210`, as a
//! range of five-digit numbers is written), mobile numbers of nine to
//! eleven digits written solid (`612345678`, `9876543210`,
//! `13800138000`; these after a word that names a phone, "mobile",
//! "móvil", "call", ..., not "number" nor "tel", which "hotel" holds),
//! eight digits from 2 solid, in two fours or in four pairs (Hong Kong's
//! and Singapore's `9123 4567`, `91234567`, `9123-4567`, Denmark's and
//! Norway's `32 12 34 56`; after such a word or "tel:"), other national numbers with
//! a trunk `0` of 9 to 12 digits (bare, or in groups of other sizes) or
//! `8` and eleven digits (`89123456789`), and other international numbers
//! dialed with `00` (`00442079460958`). Bare digit runs are never phone
//! numbers on their shape alone: a JSON number (`"ts": 1709641234`) or an
//! id looks the same.

mod column;
mod plans;
#[cfg(test)]
mod tests;
mod trunk;
mod words;

use crate::chars::{
    at, before, ends_token, has_context, has_context_within, is_digit, is_word, starts_token,
};
use plans::{all_zero_led, separators_ok};
use words::{CONTEXT, MOBILE_CONTEXT, NOT_PHONE, SHORT_CONTEXT, UNITS, WHOLE_UNITS};

const MAX_GROUPS: usize = 8;
const MAX_DIGITS: usize = 15;

/// The digit groups of a phone-like token.
struct Groups {
    end: usize,
    count: usize,
    lens: [usize; MAX_GROUPS],
    /// The separator before each group (0 for none, `(` for a group in
    /// parentheses).
    seps: [u8; MAX_GROUPS],
    digits: [u8; MAX_DIGITS],
    ndigits: usize,
}

impl Groups {
    fn digits(&self) -> &[u8] {
        &self.digits[..self.ndigits]
    }
}

/// Reads digit groups from `i` (a digit, or `(` before one). None when the
/// token is longer than any phone number.
fn groups(text: &[u8], mut i: usize) -> Option<Groups> {
    let mut g = Groups {
        end: i,
        count: 0,
        lens: [0; MAX_GROUPS],
        seps: [0; MAX_GROUPS],
        digits: [0; MAX_DIGITS],
        ndigits: 0,
    };
    let mut sep_before = 0u8;
    loop {
        let paren = at(text, i) == b'(' && is_digit(at(text, i + 1));
        if paren {
            i += 1;
        }
        let start = i;
        while is_digit(at(text, i)) {
            if g.ndigits == MAX_DIGITS {
                return None;
            }
            g.digits[g.ndigits] = text[i] - b'0';
            g.ndigits += 1;
            i += 1;
        }
        let len = i - start;
        if paren {
            if at(text, i) != b')' {
                return None;
            }
            i += 1;
        }
        if g.count == MAX_GROUPS {
            return None;
        }
        g.lens[g.count] = len;
        g.seps[g.count] = if paren { b'(' } else { sep_before };
        g.count += 1;
        g.end = i;
        // At most one separator, then a digit or a parenthesized group; or
        // one slash in the number, alone or with a space either side
        // (`030/1234567`, `089 / 1234567`).
        let mut j = i;
        let mut sep = 0u8;
        let slash = match (at(text, j), at(text, j + 1), at(text, j + 2)) {
            (b'/', _, _) => 1,
            (b' ', b'/', b' ') => 3,
            _ => 0,
        };
        if slash > 0 {
            if g.seps[..g.count].contains(&b'/') {
                return None;
            }
            sep = b'/';
            j += slash;
        } else if matches!(at(text, j), b' ' | b'-' | b'.') {
            sep = text[j];
            j += 1;
        }
        let next_paren = at(text, j) == b'(' && is_digit(at(text, j + 1));
        if !(is_digit(at(text, j)) || next_paren) || (sep == 0 && !paren && !next_paren) {
            break;
        }
        sep_before = sep;
        i = j;
    }
    Some(g)
}

/// A phone number at the digit run starting at `start`, as its span. Looks
/// back one byte for the `+` or `(` that may open it.
pub(crate) fn at_digit(text: &[u8], start: usize) -> Option<(usize, usize)> {
    if before(text, start) != b'(' && runs_into_word(text, start) {
        return None;
    }
    at_digit_read(text, start)
}

/// Whether the digit groups from `start` (a digit), joined by single
/// spaces, dashes or dots, run straight into a word (`2025-03-04T12`, a
/// timestamp: most of the dated tokens of logs and records). [`groups`]
/// would read every such group and end at the word, which no phone number
/// is followed by ([`ends_token`]): this tells without filling the groups.
fn runs_into_word(text: &[u8], start: usize) -> bool {
    let mut after_sep = false;
    for &b in &text[start..] {
        match b {
            b'0'..=b'9' => after_sep = false,
            b' ' | b'-' | b'.' if !after_sep => after_sep = true,
            _ => return !after_sep && is_word(b),
        }
    }
    false
}

/// [`at_digit`] by reading the groups.
fn at_digit_read(text: &[u8], start: usize) -> Option<(usize, usize)> {
    let prev = before(text, start);
    let open = start.saturating_sub(1);
    if prev == b'+' {
        if is_word(before(text, open)) {
            return None;
        }
        let g = groups(text, start)?;
        if g.count == 1 && before(text, open) == b'(' && at(text, g.end) == b')' {
            return code_in_parentheses(text, &g);
        }
        return (international(g.digits()) && ends_token(text, g.end)).then_some((open, g.end));
    }
    if prev == b'(' {
        if is_word(before(text, open)) {
            return None;
        }
        let g = groups(text, open)?;
        if !ends_token(text, g.end) || time_follows(text, g.end) {
            return None;
        }
        let context = || has_context(text, open, CONTEXT) || column::phone_column(text, open);
        let ok = north_american(&g, false)
            || (national_layout(&g) && !other_number(text, open, g.end))
            || (national(&g) && context() && !other_number(text, open, g.end));
        return ok.then_some((open, g.end));
    }
    if !starts_token(text, start) {
        return None;
    }
    let g = groups(text, start)?;
    if !ends_token(text, g.end) || time_follows(text, g.end) {
        return None;
    }
    if north_american(&g, false) {
        return Some((start, g.end));
    }
    if national_layout(&g) && !other_number(text, start, g.end) {
        return Some((start, g.end));
    }
    let d = g.digits();
    let dialed_abroad = d.len() > 2 && d[0] == 0 && d[1] == 0 && international(&d[2..]);
    // `0044 20 7946 0958`: the first group `00` and the country code, then
    // two groups or more, as the number is written after `+`.
    // `00 44 20 7946 0958`: `00` in a group of its own, then the code's.
    let code_group = dialed_abroad
        && code_len(&d[2..]).is_some_and(|n| {
            let own = g.count >= 4 && g.lens[..2] == [2, n] && separators_ok(&g.seps[1..g.count]);
            let joined = g.count >= 3 && g.lens[0] == 2 + n && separators_ok(&g.seps[..g.count]);
            // Or the national number whole after it (`0034 612345678`).
            let whole = g.count == 2 && g.lens[0] == 2 + n && g.lens[1] >= 9;
            own || joined || whole
        })
        && !all_zero_led(&g);
    if code_group && !other_number(text, start, g.end) {
        return Some((start, g.end));
    }
    // Nine digits (Spain, Portugal, Poland, Czechia, Peru), ten (India,
    // Italy, Greece, Turkey, Colombia), China's eleven or Brazil's (an
    // area code without a 0, then 9 and eight digits), written solid.
    let bare_mobile = g.count == 1
        && match (d.len(), d[0]) {
            (9 | 10, 2..=9) => true,
            (11, 1) if d[1] >= 3 => true,
            (11, 1..=9) => d[1] != 0 && d[2] == 9,
            _ => false,
        };
    // A phone column's header names every cell's number ([`column`]).
    let column = || column::phone_column(text, start);
    let bare_mobile = bare_mobile && (has_context(text, start, MOBILE_CONTEXT) || column());
    // India's mobiles in two fives joined by a dash, as ranges are written.
    let dashed_mobile = g.lens[..g.count] == [5, 5] && g.seps[1] == b'-' && d[0] >= 6;
    // Russia's and Kazakhstan's eleven digits after the trunk `8`, solid.
    let russian = g.count == 1 && d.len() == 11 && d[0] == 8 && matches!(d[1], 3 | 4 | 7 | 8 | 9);
    let with_context = north_american(&g, true)
        || national(&g)
        || dialed_abroad
        || bare_mobile
        || dashed_mobile
        || russian;
    let named = with_context && (has_context(text, start, CONTEXT) || column());
    let ok = (named || short_local(text, start, &g, column)) && !other_number(text, start, g.end);
    ok.then_some((start, g.end))
}

/// A national number in one of the layouts reported on their own: with
/// a trunk prefix ([`trunk`]) or of a country that dials none ([`plans`]).
fn national_layout(g: &Groups) -> bool {
    let (lens, seps, d) = (&g.lens[..g.count], &g.seps[..g.count], g.digits());
    if g.count < 2 {
        return false;
    }
    if d[0] == 0 {
        trunk::with_trunk(g, lens, seps, d)
    } else {
        plans::without_trunk(lens, seps, d)
    }
}

/// Eight digits from 2 to 9 of the plans whose numbers are that short
/// (Hong Kong, Singapore, Denmark, Norway), solid, in two fours by a
/// space or a dash (`91234567`, `9123 4567`, `9123-4567`) or in four
/// pairs (`32 12 34 56`), Latvia's in 2-3-3 by spaces (`20 527 830`), and
/// seven of the plans without area codes (Iceland, Estonia) as 3-4 by a
/// space or a dash (`534 5270`), after a word that names a phone or in a
/// phone column ([`column`]): as ids, sizes, ports and dates are written
/// so too, the shape alone is not enough. Two years (`2019 2020`), a
/// series of pairs (`20 30 40 50`) and round thousands (`20 000 000`) are
/// not numbers even then.
fn short_local(text: &[u8], start: usize, g: &Groups, column: impl Fn() -> bool) -> bool {
    let d = g.digits();
    let lens = &g.lens[..g.count];
    let spaced = g.seps[1..g.count].iter().all(|&s| s == b' ');
    let spaced_or_dashed = matches!(g.seps[1], b' ' | b'-');
    let shape = d[0] >= 2
        && match (d.len(), lens) {
            (8, [8]) => true,
            (8, [4, 4]) => spaced_or_dashed && !plans::two_years(d),
            (8, [2, 2, 2, 2]) => spaced && !plans::even_steps(d),
            (8, [2, 3, 3]) => spaced && d[2..5] != [0, 0, 0] && d[5..] != [0, 0, 0],
            (7, [3, 4]) => spaced_or_dashed && d[3..] != [0, 0, 0, 0],
            _ => false,
        };
    shape && (has_context(text, start, SHORT_CONTEXT) || column())
}

/// An international number whose country code is in parentheses
/// (`(+34) 612 345 678`), the code's group `code` read up to the `)`.
fn code_in_parentheses(text: &[u8], code: &Groups) -> Option<(usize, usize)> {
    let open = code.end - code.lens[0] - 2;
    let mut j = code.end + 1;
    if at(text, j) == b' ' {
        j += 1;
    }
    if !is_digit(at(text, j)) {
        return None;
    }
    let rest = groups(text, j)?;
    let n = code.ndigits + rest.ndigits;
    if n > MAX_DIGITS {
        return None;
    }
    let mut d = [0u8; MAX_DIGITS];
    d[..code.ndigits].copy_from_slice(code.digits());
    d[code.ndigits..n].copy_from_slice(rest.digits());
    let ok = code_len(&d[..n]) == Some(code.ndigits) && international(&d[..n]);
    (ok && ends_token(text, rest.end)).then_some((open, rest.end))
}

/// [`country_code_len`] of digits that may be too few to hold one.
fn code_len(d: &[u8]) -> Option<usize> {
    if d.len() < 2 {
        return None;
    }
    country_code_len(d)
}

/// A valid North American number in one of the documented layouts; `bare`
/// accepts ten or eleven digits without separators.
fn north_american(g: &Groups, bare: bool) -> bool {
    let lens = &g.lens[..g.count];
    let seps = &g.seps[..g.count];
    let national = match (g.ndigits, g.digits()[0]) {
        (10, _) => g.digits(),
        (11, 1) => &g.digits()[1..],
        _ => return false,
    };
    let layout_ok = match (lens, g.ndigits) {
        // Bare, but not the integer limits (`2147483647`, `4294967295`).
        ([10], 10) | ([11], 11) => bare && !integer_limit(g.digits()),
        ([3, 3, 4], _) => consistent(&seps[1..]) || seps[0] == b'(',
        ([1, 3, 3, 4], _) => consistent(&seps[1..]) || seps[1] == b'(',
        _ => false,
    };
    layout_ok && (2..=9).contains(&national[0]) && (2..=9).contains(&national[3])
}

/// Whether ten digits are a 32-bit integer's limit or one past it.
fn integer_limit(d: &[u8]) -> bool {
    const LIMITS: [&[u8]; 4] = [
        &[2, 1, 4, 7, 4, 8, 3, 6, 4, 7],
        &[2, 1, 4, 7, 4, 8, 3, 6, 4, 8],
        &[4, 2, 9, 4, 9, 6, 7, 2, 9, 5],
        &[4, 2, 9, 4, 9, 6, 7, 2, 9, 6],
    ];
    LIMITS.contains(&d)
}

/// Every separator the same (after a parenthesized group anything goes).
fn consistent(seps: &[u8]) -> bool {
    seps.windows(2).all(|w| w[0] == w[1]) && seps.first().is_some_and(|s| *s != b'(')
}

/// Whether a time follows the number (`01.02.2023 12:30`): a colon and a
/// digit.
fn time_follows(text: &[u8], end: usize) -> bool {
    at(text, end) == b':' && is_digit(at(text, end + 1))
}

/// Whether the number at `[start, end)` reads as another kind of number:
/// signed, the tail of a longer run of digit groups, after an order, invoice or id
/// word (within 16 bytes), `#` or a currency sign, or before a currency or
/// unit.
fn other_number(text: &[u8], start: usize, end: usize) -> bool {
    // The tail of a longer sequence of groups (`1090 1014 0000 0712 1981`).
    if start >= 2
        && matches!(text[start - 1], b' ' | b'-' | b'.' | b'/')
        && is_digit(text[start - 2])
    {
        return true;
    }
    // A signed number (`-0127-04829`, a coordinate).
    if before(text, start) == b'-' {
        return true;
    }
    let mut b = start;
    if before(text, b) == b' ' {
        b -= 1;
    }
    if matches!(before(text, b), b'$' | b'#') || currency_sign_before(text, b) {
        return true;
    }
    if has_context_within(text, start, NOT_PHONE, 16) {
        return true;
    }
    let mut a = end;
    if at(text, a) == b' ' {
        a += 1;
    }
    let after = &text[a.min(text.len())..];
    let starts =
        |unit: &[u8]| after.len() >= unit.len() && after[..unit.len()].eq_ignore_ascii_case(unit);
    UNITS.iter().any(|unit| starts(unit))
        || WHOLE_UNITS
            .iter()
            .any(|unit| starts(unit) && !at(after, unit.len()).is_ascii_alphanumeric())
}

/// Whether the bytes before `end` are the sign of the euro (E2 82 AC),
/// pound (C2 A3), yen (C2 A5), rupee (E2 82 B9), rouble (E2 82 BD), lira
/// (E2 82 BA), won (E2 82 A9), naira (E2 82 A6), peso (E2 82 B1), dong
/// (E2 82 AB) or baht (E0 B8 BF): whole, as the same last bytes end
/// letters too (`å` is C3 A5: "Ring mig på 020 …").
fn currency_sign_before(text: &[u8], end: usize) -> bool {
    let tail = &text[..end];
    [
        &b"\xE2\x82\xAC"[..],
        b"\xC2\xA3",
        b"\xC2\xA5",
        b"\xE2\x82\xB9",
        b"\xE2\x82\xBD",
        b"\xE2\x82\xBA",
        b"\xE2\x82\xA9",
        b"\xE2\x82\xA6",
        b"\xE2\x82\xB1",
        b"\xE2\x82\xAB",
        b"\xE0\xB8\xBF",
    ]
    .iter()
    .any(|sign| tail.ends_with(sign))
}

/// A national number with a trunk `0`: 9 to 12 digits.
fn national(g: &Groups) -> bool {
    let d = g.digits();
    (9..=12).contains(&d.len()) && d[0] == 0 && d[1] != 0
}

/// Digits after `+`: an assigned country code and a plausible length.
fn international(d: &[u8]) -> bool {
    if !(8..=MAX_DIGITS).contains(&d.len()) {
        return false;
    }
    let code_len = country_code_len(d);
    match (code_len, d[0]) {
        (Some(1), 1) => d.len() == 11 && (2..=9).contains(&d[1]) && (2..=9).contains(&d[4]),
        (Some(n), _) => d.len() - n >= 6,
        (None, _) => false,
    }
}

/// The length of the ITU country calling code `d` starts with, if assigned.
/// Codes are prefix-free, so the first match is the code.
fn country_code_len(d: &[u8]) -> Option<usize> {
    const TWO: &[u8] = &[
        20, 27, 30, 31, 32, 33, 34, 36, 39, 40, 41, 43, 44, 45, 46, 47, 48, 49, 51, 52, 53, 54, 55,
        56, 57, 58, 60, 61, 62, 63, 64, 65, 66, 81, 82, 84, 86, 90, 91, 92, 93, 94, 95, 98,
    ];
    const THREE_PREFIX: &[u8] = &[
        21, 22, 23, 24, 25, 26, 29, 35, 37, 38, 42, 50, 59, 67, 68, 69, 80, 85, 87, 88, 96, 97, 99,
    ];
    if d[0] == 1 || d[0] == 7 {
        return Some(1);
    }
    let two = d[0] * 10 + d[1];
    if TWO.contains(&two) {
        Some(2)
    } else if THREE_PREFIX.contains(&two) {
        Some(3)
    } else {
        None
    }
}
