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
//! - national, with a trunk `0` (then not `0`), 9 to 12 digits, in two or
//!   more groups: an area code of 2 to 5 digits (or in parentheses) then
//!   groups of 3 to 8, not all starting with 0 (`020 7946 0958`, `07700 900123`, `030 12345678`,
//!   `(030) 1234-5678`, `0151 23456789`, `06 1234 5678`, `020-123 4567`,
//!   `022 2345 6789`, `03-1234-5678`, `090-1234-5678`, `(02) 1234 5678`,
//!   `0412 345 678`), or five pairs (`01 23 45 67 89`, `06.12.34.56.78`,
//!   `06-12-34-56-78`); dots only between pairs;
//! - national without a trunk prefix, in the layouts of the countries that
//!   dial none: Spain's nine digits from 6-9 (`912 345 678`,
//!   `612 34 56 78`, `93 123 45 67`), Italy's mobiles (`312 345 6789`),
//!   India's mobiles in two fives from 6-9 (`98765 43210`), Brazil's area
//!   code in parentheses (`(11) 91234-5678`, `(21) 3456-7890`).
//!
//! The groups after the first are separated the same way throughout, but
//! for one change after the area code (`020-123 4567`, `(030) 1234-5678`).
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
//! (`(+34) 612 345 678`), or be dialed with `00` in its own group and two
//! groups or more after it (`0044 20 7946 0958`, `0031 20-123 4567`).
//!
//! Formats reported only after a phone word ("phone", "call", "tel",
//! "mobile", "Telefon", "numéro", "電話", ...): ten bare North American digits
//! (`2025550123`), Spain's, India's and Italy's mobile numbers written
//! solid (`612345678`, `9876543210`, `3123456789`; these after a word that
//! names a phone, "mobile", "móvil", "call", ..., not "number" nor "tel",
//! which "hotel" holds), other national numbers with a trunk `0` of 9 to 12
//! digits (bare, or in groups of other sizes), and other international
//! numbers dialed with `00` (`00442079460958`). Bare digit runs are never
//! phone numbers on their shape alone: a JSON number (`"ts": 1709641234`)
//! or an id looks the same.

use crate::chars::{
    at, before, ends_token, has_context, has_context_within, is_digit, is_word, starts_token,
};

const CONTEXT: &[&str] = &[
    "phone",
    "tel",
    "call",
    "mobile",
    "cell",
    "fax",
    "whatsapp",
    "sms",
    "number",
    "contact",
    "reach",
    "dial",
    "mob.",
    "ph.",
    "ph:",
    "mobil",
    "nummer",
    "num\u{e9}ro",
    "n\u{fa}mero",
    "m\u{f3}vil",
    "celular",
    "cellulare",
    "portable :",
    "portable:",
    "numero di",
    "numero:",
    "bel ",
    "fone",
    "\u{96fb}\u{8a71}",
    "\u{643a}\u{5e2f}",
    "\u{7535}\u{8bdd}",
    "\u{442}\u{435}\u{43b}",
];

/// The phone words that mobile numbers written solid need: none that is
/// part of common words ("tel" of "hotel") or names other numbers
/// ("number").
const MOBILE_CONTEXT: &[&str] = &[
    "phone",
    "mobile",
    "m\u{f3}vil",
    "movil",
    "cell",
    "celular",
    "whatsapp",
    "tel\u{e9}fono",
    "telefono",
    "telefone",
    "call",
    "sms",
    "contact",
];

/// Words before other kinds of numbers: a national number right after one
/// is not reported on its shape alone.
const NOT_PHONE: &[&str] = &[
    "order",
    "invoice",
    "sku",
    "ref",
    "isbn",
    "serial",
    "ticket",
    "tracking",
    "zip",
    "postal",
    "postcode",
    "plz",
    "version",
    "build",
    "total",
    "price",
    "amount",
    "budget",
    "population",
    "bestell",
    "rechnung",
    "commande",
    "facture",
    "pedido",
    "factura",
    "ordine",
    "fattura",
    "id:",
    "id=",
    " id ",
    "#",
    // Company, tax and identity numbers.
    "siren",
    "siret",
    "tva:",
    "tva ",
    "vat:",
    "vat ",
    "vat no",
    "steuer",
    "tax",
    "nif:",
    "nif ",
    "cif:",
    "cif ",
    "dni:",
    "dni ",
    "fiscal",
    "p.iva",
    "partita iva",
    "kvk",
    "btw",
    "bsn",
    "ssn",
    "social security",
    "passport",
    "licen",
    "imei",
    "iban",
    "swift",
    "routing",
];

/// What follows an amount or a measure, not a phone number.
const UNITS: &[&[u8]] = &[
    b"eur",
    b"usd",
    b"gbp",
    b"inr",
    b"rs",
    b"yen",
    b"dollar",
    b"peso",
    b"rupee",
    b"\xE2\x82\xAC",
    b"$",
    b"\xC2\xA3",
    b"%",
    b"km",
    b"kg",
    b"people",
    b"users",
];

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
        // At most one separator, then a digit or a parenthesized group.
        let mut j = i;
        let mut sep = 0u8;
        if matches!(at(text, j), b' ' | b'-' | b'.') {
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
        let context = || has_context(text, open, CONTEXT);
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
    let code_group = dialed_abroad
        && g.count >= 3
        && code_len(&d[2..]).is_some_and(|n| g.lens[0] == 2 + n)
        && separators_ok(&g.seps[..g.count])
        && !all_zero_led(&g);
    if code_group && !other_number(text, start, g.end) {
        return Some((start, g.end));
    }
    // Spain's nine digits, India's and Italy's mobile ten, written solid.
    let bare_mobile = g.count == 1 && matches!((d.len(), d[0]), (9, 6..=9) | (10, 3 | 6..=9));
    let bare_mobile = bare_mobile && has_context(text, start, MOBILE_CONTEXT);
    let with_context = north_american(&g, true) || national(&g) || dialed_abroad || bare_mobile;
    let ok = with_context && has_context(text, start, CONTEXT) && !other_number(text, start, g.end);
    ok.then_some((start, g.end))
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

/// A national number in one of the layouts reported on their own (the
/// module's docs).
fn national_layout(g: &Groups) -> bool {
    let (lens, seps, d) = (&g.lens[..g.count], &g.seps[..g.count], g.digits());
    if g.count < 2 || !separators_ok(seps) {
        return false;
    }
    let n = d.len();
    if d[0] == 0 {
        if d[1] == 0 || !(9..=12).contains(&n) {
            return false;
        }
        let pairs = g.count == 5 && lens.iter().all(|&l| l == 2) && !stepping(d);
        let area_then_groups = (2..=5).contains(&lens[0])
            && lens[1..].iter().all(|l| (3..=8).contains(l))
            && !all_zero_led(g);
        // Not a US ZIP+4 code (`02110-1301`) nor a range (`01000-09999`).
        let zip_or_range = matches!(lens, [5, 4]) || (matches!(lens, [5, 5]) && seps[1] == b'-');
        return pairs || (area_then_groups && !zip_or_range && !seps.contains(&b'.'));
    }
    if seps.contains(&b'.') {
        return false;
    }
    match (lens, n, d[0]) {
        // Spain.
        ([3, 3, 3] | [3, 2, 2, 2] | [2, 3, 2, 2], 9, 6..=9) => seps[0] != b'(',
        // Italy's mobiles.
        ([3, 3, 4] | [3, 7], 10, 3) => seps[0] != b'(',
        // India's mobiles, with a space (`60000-64999` is a range).
        ([5, 5], 10, 6..=9) => seps[1] == b' ',
        // Brazil: the area code in parentheses, the mobiles' nine digits
        // from 9.
        ([2, 4, 4], 10, _) => seps[0] == b'(',
        ([2, 5, 4], 11, _) => seps[0] == b'(' && d[2] == 9,
        _ => false,
    }
}

/// Whether every group starts with 0: code points (`0391 0342 0345`,
/// `0046 0066 0069`), not a telephone number.
fn all_zero_led(g: &Groups) -> bool {
    let mut group_start = 0;
    g.lens[..g.count].iter().all(|&l| {
        let zero = g.digits[group_start] == 0;
        group_start += l;
        zero
    })
}

/// Whether five pairs of digits count up or down by one or repeat
/// (`01 02 03 04 05`, a dump of bytes; `00 00 00 …`), which a telephone
/// number seldom does.
fn stepping(d: &[u8]) -> bool {
    let pair = |k: usize| i16::from(d[2 * k]) * 10 + i16::from(d[2 * k + 1]);
    let step = pair(1) - pair(0);
    step.abs() <= 1 && (2..5).all(|k| pair(k) - pair(k - 1) == step)
}

/// The separators before each group but the first: one kind throughout,
/// but the first may differ (after the area code, or after an area code
/// in parentheses); no parentheses after the first group.
fn separators_ok(seps: &[u8]) -> bool {
    if seps.len() < 2 || seps[1..].contains(&b'(') {
        return false;
    }
    let rest = if seps[0] == b'(' {
        &seps[2..]
    } else {
        &seps[1..]
    };
    let Some((&first, tail)) = rest.split_first() else {
        return true;
    };
    if rest.contains(&0) || !tail.windows(2).all(|w| w[0] == w[1]) {
        return false;
    }
    // A change after the area code between a dash and a space only.
    tail.first()
        .is_none_or(|&t| t == first || (t != b'.' && first != b'.'))
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
    if start >= 2 && matches!(text[start - 1], b' ' | b'-' | b'.') && is_digit(text[start - 2]) {
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
    let prev = before(text, b);
    // `$`, `#`, and the last bytes of the signs for euro (E2 82 AC),
    // pound (C2 A3), yen (C2 A5) and rupee (E2 82 B9).
    if matches!(prev, b'$' | b'#' | 0xAC | 0xA3 | 0xA5 | 0xB9) {
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
    UNITS
        .iter()
        .any(|unit| after.len() >= unit.len() && after[..unit.len()].eq_ignore_ascii_case(unit))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn find(text: &str) -> Option<&str> {
        let bytes = text.as_bytes();
        let start = bytes.iter().position(|b| b.is_ascii_digit())?;
        at_digit(bytes, start).map(|(s, e)| &text[s..e])
    }

    #[test]
    fn positives() {
        for (text, want) in [
            ("Call me on (240) 472-8872 after", "(240) 472-8872"),
            ("(240)472-8872", "(240)472-8872"),
            ("849-997-6509.", "849-997-6509"),
            ("849.997.6509", "849.997.6509"),
            ("849 997 6509", "849 997 6509"),
            ("1-849-997-6509", "1-849-997-6509"),
            ("phone: +44 20 8919 6125", "+44 20 8919 6125"),
            ("+1 283 498 8626", "+1 283 498 8626"),
            ("+12817920919", "+12817920919"),
            ("+1 (283) 498-8626", "+1 (283) 498-8626"),
            ("+49 30 1234567", "+49 30 1234567"),
            ("+33 6 12 34 56 78", "+33 6 12 34 56 78"),
            ("+353-1-234-5678", "+353-1-234-5678"),
            ("phone 2817920919", "2817920919"),
            ("tel: 020 7946 0958", "020 7946 0958"),
            ("Call me on 06 12 34 56 78", "06 12 34 56 78"),
            ("phone (020) 7946 0958", "(020) 7946 0958"),
            ("tel 0044 20 7946 0958", "0044 20 7946 0958"),
            ("0044 20 7946 0958", "0044 20 7946 0958"),
            ("0031 20 123 4567", "0031 20 123 4567"),
            ("+91 98765 43210", "+91 98765 43210"),
            ("+81 3-1234-5678", "+81 3-1234-5678"),
            ("+44 (0)20 7946 0958", "+44 (0)20 7946 0958"),
            // National formats on their own.
            ("020 7946 0958", "020 7946 0958"),
            ("(020) 7946 0958", "(020) 7946 0958"),
            ("ring 07700 900123 now", "07700 900123"),
            ("unter (030) 1234-5678 an", "(030) 1234-5678"),
            ("0151 23456789", "0151 23456789"),
            ("01 23 45 67 89", "01 23 45 67 89"),
            ("au 06.12.34.56.78.", "06.12.34.56.78"),
            ("al 912 345 678", "912 345 678"),
            ("612 34 56 78", "612 34 56 78"),
            ("06 1234 5678", "06 1234 5678"),
            ("312 345 6789", "312 345 6789"),
            ("020-123 4567", "020-123 4567"),
            ("06-12345678", "06-12345678"),
            ("98765 43210", "98765 43210"),
            ("022 2345 6789", "022 2345 6789"),
            ("(11) 91234-5678", "(11) 91234-5678"),
            ("(21) 3456-7890", "(21) 3456-7890"),
            ("電話番号は03-1234-5678です", "03-1234-5678"),
            ("090-1234-5678", "090-1234-5678"),
            ("(02) 1234 5678", "(02) 1234 5678"),
            ("0412 345 678", "0412 345 678"),
            ("Telefon: 030123456789", "030123456789"),
            ("(+34) 612 345 678", "(+34) 612 345 678"),
            ("tel (+91) 98765 43210.", "(+91) 98765 43210"),
            ("(+44)2079460958", "(+44)2079460958"),
            ("móvil 612345678", "612345678"),
            ("mobile 9876543210", "9876543210"),
            ("cellulare 3123456789", "3123456789"),
        ] {
            assert_eq!(find(text), Some(want), "{text}");
        }
    }

    #[test]
    fn runs_into_word_table() {
        for (text, want) in [
            ("2025-03-04T12:30", true),
            ("415 555 0132x", true),
            ("1_", true),
            ("415 555 0132", false),
            ("415 555 0132 x", false),
            ("415-555--0132x", false),
            ("415-555-0132-x", false),
            ("(415) 555-0132x", false),
            ("415:x", false),
        ] {
            let start = text.find(|c: char| c.is_ascii_digit()).expect("a digit");
            assert_eq!(runs_into_word(text.as_bytes(), start), want, "{text}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]
        /// The shortcut never changes what the groups find.
        #[test]
        fn the_word_shortcut_finds_what_reading_the_groups_finds(
            bytes in proptest::collection::vec(
                proptest::sample::select(b"0123456789012345 -.()+_Tx".to_vec()),
                0..40,
            )
        ) {
            for (start, b) in bytes.iter().enumerate() {
                if b.is_ascii_digit() {
                    proptest::prop_assert_eq!(
                        at_digit(&bytes, start),
                        at_digit_read(&bytes, start),
                        "{} at {}", String::from_utf8_lossy(&bytes), start
                    );
                }
            }
        }
    }

    #[test]
    fn near_misses() {
        for text in [
            "Call extension 4421 for IT",
            "376-85-2672",        // an SSN
            "2026-05-04",         // a date
            "10:30",              // a time
            "37.7749, -122.4194", // coordinates
            "version 3.2.1",
            "4111 1111 1111 1111", // a card
            "149-997-6509",        // area code starts with 1
            "849-097-6509",        // exchange starts with 0
            "2817920919",          // bare digits without a phone word
            "00442079460958",      // dialed abroad, bare, without a phone word
            "0049 12345678",       // two groups
            "02079460958",         // national, bare, without a phone word
            "Order #0123 4567 89",
            "Bestellnummer 0142 1234 5678",
            "01.02.2023 12:30", // a date and a time
            "05.03.2024 14:22:01",
            "06.12.34.56",       // a version
            "010.001.002.003",   // an address with leading zeros
            "0 306 40615 2",     // an ISBN
            "0123-456-7890-12",  // a part number
            "912 345 678 euros", // an amount
            "€ 612 345 678",
            "zip 75001 75002",
            "1090 1014 0000 0712 1981 2874", // groups of a longer number
            "(1) 2345-6789",                 // no area code
            "(11) 81234-5678",               // Brazil's mobiles start with 9
            "612.345.678",                   // dots outside pairs
            "020 7946.0958",                 // mixed with a dot
            "+28 912 345 678",               // unassigned country code
            "+44 20",                        // too short
            "3+44 20 8919 6125",             // arithmetic
            "849-997-6509-22",               // longer dashed token
            "220.137.81.7",                  // an IP address
            "1Z999AA10123456784",
        ] {
            assert_eq!(find(text), None, "{text}");
        }
    }
}
