//! International bank account numbers: a country code, two check digits and
//! the national part, written solid (`GB82WEST12345698765432`) or in groups
//! of four separated by one space or dash; the length must be the one that
//! country uses and the ISO 7064 mod-97 check must give 1. Letters may be
//! of either case (`gb82 west 1234 5698 7654 32`, `de89370400440532013000`).
//!
//! The engine reads an IBAN from its country code where the digits after
//! it are a stop of its class scan: two capitals before them, two small
//! letters and eight digits or more (a lower-case IBAN whose national part
//! starts with digits), or two small letters at a word's start and two
//! digits (a lower-case one whose national part holds letters, solid or in
//! groups: `gb82west12345698765432`, `mt84 malt 0110 …`). A grouped one is
//! also found from a later group of digits, looking back over up to three
//! groups of four ([`grouped_before`]). The country's length and the
//! mod-97 check keep the words that look alike (`ab12cd`, `id42`) out.

use crate::chars::{at, before, is_alnum, is_digit};

/// Total IBAN length per country (the SWIFT registry).
const LENGTHS: &[(&[u8; 2], usize)] = &[
    (b"AD", 24),
    (b"AE", 23),
    (b"AL", 28),
    (b"AT", 20),
    (b"AZ", 28),
    (b"BA", 20),
    (b"BE", 16),
    (b"BG", 22),
    (b"BH", 22),
    (b"BI", 27),
    (b"BR", 29),
    (b"BY", 28),
    (b"CH", 21),
    (b"CR", 22),
    (b"CY", 28),
    (b"CZ", 24),
    (b"DE", 22),
    (b"DJ", 27),
    (b"DK", 18),
    (b"DO", 28),
    (b"EE", 20),
    (b"EG", 29),
    (b"ES", 24),
    (b"FI", 18),
    (b"FK", 18),
    (b"FO", 18),
    (b"FR", 27),
    (b"GB", 22),
    (b"GE", 22),
    (b"GI", 23),
    (b"GL", 18),
    (b"GR", 27),
    (b"GT", 28),
    (b"HR", 21),
    (b"HU", 28),
    (b"IE", 22),
    (b"IL", 23),
    (b"IQ", 23),
    (b"IS", 26),
    (b"IT", 27),
    (b"JO", 30),
    (b"KW", 30),
    (b"KZ", 20),
    (b"LB", 28),
    (b"LC", 32),
    (b"LI", 21),
    (b"LT", 20),
    (b"LU", 20),
    (b"LV", 21),
    (b"LY", 25),
    (b"MC", 27),
    (b"MD", 24),
    (b"ME", 22),
    (b"MK", 19),
    (b"MN", 20),
    (b"MR", 27),
    (b"MT", 31),
    (b"MU", 30),
    (b"NI", 28),
    (b"NL", 18),
    (b"NO", 15),
    (b"OM", 23),
    (b"PK", 24),
    (b"PL", 28),
    (b"PS", 29),
    (b"PT", 25),
    (b"QA", 29),
    (b"RO", 24),
    (b"RS", 22),
    (b"RU", 33),
    (b"SA", 24),
    (b"SC", 31),
    (b"SD", 18),
    (b"SE", 24),
    (b"SI", 19),
    (b"SK", 24),
    (b"SM", 27),
    (b"SO", 23),
    (b"ST", 25),
    (b"SV", 28),
    (b"TL", 23),
    (b"TN", 24),
    (b"TR", 26),
    (b"UA", 29),
    (b"VA", 22),
    (b"VG", 24),
    (b"XK", 20),
    (b"YE", 30),
];

const MAX_LEN: usize = 34;

/// An IBAN whose country code starts at `start`, as its span. Called for a
/// digit run preceded by two capital letters.
pub(crate) fn at_country(text: &[u8], start: usize) -> Option<(usize, usize)> {
    if is_alnum(before(text, start)) {
        return None;
    }
    let country = [
        at(text, start).to_ascii_uppercase(),
        at(text, start + 1).to_ascii_uppercase(),
    ];
    let len = LENGTHS.iter().find(|(c, _)| **c == country)?.1;
    if !is_digit(at(text, start + 2)) || !is_digit(at(text, start + 3)) {
        return None;
    }
    let mut chars = [0u8; MAX_LEN];
    let mut n = 0;
    let mut i = start;
    let mut sep = 0u8;
    while n < len {
        let b = at(text, i);
        if b.is_ascii_alphanumeric() {
            chars[n] = b.to_ascii_uppercase();
            n += 1;
            i += 1;
        } else if n.is_multiple_of(4) && n > 0 && matches!(b, b' ' | b'-') && (sep == 0 || sep == b)
        {
            // Groups of four, one separator between them, the same throughout.
            if sep == 0 && n != 4 {
                return None;
            }
            sep = b;
            i += 1;
        } else {
            return None;
        }
    }
    if is_alnum(at(text, i)) {
        return None;
    }
    mod97(&chars[..n]).then_some((start, i))
}

/// An IBAN in groups of four that holds the group of digits starting at
/// `p` (a token's first digit) and starts up to three groups before it
/// (`gb82 west 1234 ...` from `1234`), as its span.
pub(crate) fn grouped_before(text: &[u8], p: usize) -> Option<(usize, usize)> {
    let sep = before(text, p);
    if !matches!(sep, b' ' | b'-') {
        return None;
    }
    let mut group_end = p - 1;
    for _ in 0..3 {
        let start = group_end.checked_sub(4)?;
        if !text[start..group_end].iter().all(u8::is_ascii_alphanumeric) {
            return None;
        }
        let head = &text[start..start + 4];
        if head[0].is_ascii_alphabetic()
            && head[1].is_ascii_alphabetic()
            && is_digit(head[2])
            && is_digit(head[3])
            && !is_alnum(before(text, start))
        {
            return at_country(text, start).filter(|&(_, end)| end > p);
        }
        if start == 0 || text[start - 1] != sep {
            return None;
        }
        group_end = start - 1;
    }
    None
}

/// ISO 7064 MOD 97-10: the first four characters moved to the end, letters
/// as 10..35, the number taken mod 97 must be 1.
fn mod97(iban: &[u8]) -> bool {
    let mut rem = 0u32;
    for &b in iban[4..].iter().chain(&iban[..4]) {
        let v = if is_digit(b) {
            u32::from(b - b'0')
        } else {
            u32::from(b - b'A') + 10
        };
        rem = if v < 10 {
            (rem * 10 + v) % 97
        } else {
            (rem * 100 + v) % 97
        };
    }
    rem == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(text: &str) -> Option<&str> {
        let bytes = text.as_bytes();
        (0..bytes.len())
            .filter(|&i| bytes[i].is_ascii_alphabetic())
            .find_map(|i| at_country(bytes, i))
            .map(|(s, e)| &text[s..e])
    }

    #[test]
    fn positives() {
        for (text, want) in [
            ("GB82WEST12345698765432", "GB82WEST12345698765432"),
            (
                "iban GB82 WEST 1234 5698 7654 32.",
                "GB82 WEST 1234 5698 7654 32",
            ),
            ("DE89370400440532013000", "DE89370400440532013000"),
            ("FR1420041010050500013M02606", "FR1420041010050500013M02606"),
            ("NO9386011117947", "NO9386011117947"),
            ("CH93-0076-2011-6238-5295-7", "CH93-0076-2011-6238-5295-7"),
            ("de89370400440532013000", "de89370400440532013000"),
            ("gb82 west 1234 5698 7654 32", "gb82 west 1234 5698 7654 32"),
        ] {
            assert_eq!(find(text), Some(want), "{text}");
        }
    }

    #[test]
    fn near_misses() {
        for text in [
            "GB82WEST12345698765433",      // check fails
            "GB82WEST1234569876543",       // too short for GB
            "GB82WEST123456987654321",     // too long for GB
            "ZZ82WEST12345698765432",      // no such country
            "XGB82WEST12345698765432",     // inside a word
            "GB82 WEST12 345698765432",    // groups not of four
            "GB82 WEST-1234 5698 7654 32", // mixed separators
            "gb82 west 1234 5698 7654 33", // check fails, lower case
        ] {
            assert_eq!(find(text), None, "{text}");
        }
    }
}

#[cfg(test)]
mod grouped_tests {
    use super::*;

    #[test]
    fn from_a_later_group_of_digits() {
        for (text, from, want) in [
            (
                "gb82 west 1234 5698 7654 32",
                "1234",
                Some("gb82 west 1234 5698 7654 32"),
            ),
            (
                "nl91-abna-0417-1643-00",
                "0417",
                Some("nl91-abna-0417-1643-00"),
            ),
            (
                "it60 x054 2811 1010 0000 0123 456",
                "2811",
                Some("it60 x054 2811 1010 0000 0123 456"),
            ),
            ("gb82 west 1234 5698 7654 33", "1234", None),
            ("call 4155 5501 32", "4155", None),
            ("gb82 west-1234 5698 7654 32", "1234", None),
            ("xgb82 west 1234 5698 7654 32", "1234", None),
        ] {
            let p = text.find(from).expect("group");
            let found = grouped_before(text.as_bytes(), p).map(|(s, e)| &text[s..e]);
            assert_eq!(found, want, "{text}");
        }
    }
}
