//! Payment card numbers: 12 to 19 digits, plain or in groups separated by
//! one space, dash or dot (the same one throughout), that pass the Luhn
//! check and either start with an issuer prefix of a major network, in a
//! length it issues, or follow a card word ("card", "visa", "Karte",
//! "carte", "tarjeta", "カード", ...). Luhn alone passes one random number
//! in ten, so a number with neither a known prefix nor a card word nearby
//! is not reported.
//!
//! The prefixes (IIN ranges) and lengths known:
//!
//! | network | prefixes | digits |
//! | --- | --- | --- |
//! | Visa | 4 | 13, 16, 19 |
//! | Mastercard | 51-55, 2221-2720 | 16 |
//! | American Express | 34, 37 | 15 |
//! | Discover | 6011, 644-649, 65 | 16-19 |
//! | Diners Club | 36, 38, 39; 300-305, 3095 | 14-19; 14, 16-19 |
//! | JCB | 35 (3528-3589 and the co-branded rest), 2131, 1800 | 16-19; 15 |
//! | UnionPay | 62, 81 | 16-19 |
//! | Maestro | 50, 56-69 | 13-19 |
//! | Mir | 2200-2204 | 16-19 |
//! | RuPay | 60, 65, 81, 82, 508 | 16 |
//! | Troy | 9792 | 16 |
//! | Napas (Vietnam) | 9704 | 16, 19 |
//! | UzCard, Humo (Uzbekistan) | 8600, 9860 | 16 |
//!
//! Twelve-digit numbers (Maestro) are reported alone only with one of the
//! four-digit Maestro prefixes (5018, 5020, 5038, 5893, 6304, 6390, 6759,
//! 6761-6763, 0604): twelve digits are common ids (cloud account numbers),
//! and 56-58 with any twelve would catch one in two hundred of them. Other
//! twelve-digit numbers need a card word. UnionPay numbers that fail Luhn
//! (some do) are reported only after a UnionPay word.
//!
//! Thirteen digits written solid that pass the EAN-13 check as well are
//! a product's barcode as often as a card (`5901234123457`, GS1's example,
//! passes both): such a number needs a card word, unless it starts with 4.
//! Visa issued thirteen-digit numbers, which stay reported on their prefix
//! (one in ten of them passes the EAN check too); the other thirteen-digit
//! issuers (Maestro, Discover's and UnionPay's 6) lose the one in ten that
//! passes it, when no card word is near.

use crate::chars::{at, ends_token, has_context, is_digit, starts_token};

const CONTEXT: &[&str] = &[
    "card",
    "visa",
    "mastercard",
    "amex",
    "american express",
    "discover",
    "diners",
    "jcb",
    "maestro",
    "unionpay",
    "credit",
    "debit",
    "mir ",
    "rupay",
    "troy",
    "payment",
    "billing",
    "karte",
    "carte",
    "tarjeta",
    "carta",
    "cart\u{e3}o",
    "kaart",
    "kortnummer",
    "\u{30ab}\u{30fc}\u{30c9}",
    "\u{43a}\u{430}\u{440}\u{442}",
    "\u{5361}",
];

/// Words that make a card word name another card: a loyalty, membership
/// or gift card's number, or a device's (an IMEI passes Luhn, and a SIM
/// is a card). Near one of them a card word no longer vouches for a number
/// without a payment network's prefix (`cartão de fidelidade
/// 9917573083754571`, `会员卡号 ... 设备序列号 354399355958180`); a
/// number with a network's prefix is reported as before.
const NOT_PAYMENT: &[&str] = &[
    "loyalty",
    "member",
    "gift",
    "bonus",
    "fidelidade",
    "fidelidad",
    "fid\u{e9}lit\u{e9}",
    "fedelt\u{e0}",
    "kundenkarte",
    "treue",
    "imei",
    "iccid",
    "serial",
    "serie",
    "s\u{e9}rie",
    "\u{4f1a}\u{5458}",
    "\u{5e8f}\u{5217}\u{53f7}",
    "\u{30dd}\u{30a4}\u{30f3}\u{30c8}",
];

/// Words that name UnionPay, whose numbers do not all pass Luhn.
const UNIONPAY: &[&str] = &["unionpay", "union pay", "\u{94f6}\u{8054}"];

const MAX_GROUPS: usize = 8;

/// A card number starting at `start` (the first digit), as its span.
pub(crate) fn at_digit(text: &[u8], start: usize) -> Option<(usize, usize)> {
    if !starts_token(text, start) {
        return None;
    }
    // The digit groups from `start` and the separator between them.
    let mut ends = [0usize; MAX_GROUPS];
    let mut count = 0;
    let mut sep = 0u8;
    let mut i = start;
    loop {
        let group_start = i;
        while is_digit(at(text, i)) {
            i += 1;
        }
        ends[count] = i;
        count += 1;
        let next = at(text, i);
        let first_group_ok = count > 1 || i - group_start >= 4;
        if count == MAX_GROUPS
            || !(next == b' ' || next == b'-' || next == b'.')
            || (sep != 0 && next != sep)
            || !is_digit(at(text, i + 1))
            || !first_group_ok
        {
            break;
        }
        sep = next;
        i += 1;
    }
    // The longest run of whole groups that is a valid card wins.
    let mut digits = [0u8; 19 + MAX_GROUPS];
    for used in (1..=count).rev() {
        let end = ends[used - 1];
        if used < count && !ends_token(text, end) {
            continue;
        }
        if used == count && !ends_token(text, end) {
            return None;
        }
        let mut n = 0;
        for &b in &text[start..end] {
            if is_digit(b) {
                if n == digits.len() {
                    break;
                }
                digits[n] = b - b'0';
                n += 1;
            }
        }
        if !(12..=19).contains(&n) {
            continue;
        }
        let number = &digits[..n];
        let barcode = used == 1 && ean13(number) && number[0] != 4;
        let valid = if luhn(number) {
            (known_prefix(number) && !barcode)
                || (has_context(text, start, CONTEXT) && !has_context(text, start, NOT_PAYMENT))
        } else {
            unionpay(number) && has_context(text, start, UNIONPAY)
        };
        if valid {
            return Some((start, end));
        }
    }
    None
}

/// The Luhn (mod 10) check over digit values.
pub(crate) fn luhn(digits: &[u8]) -> bool {
    let mut sum = 0u32;
    for (i, &d) in digits.iter().rev().enumerate() {
        let d = u32::from(d);
        sum += if i % 2 == 1 {
            let doubled = d * 2;
            if doubled > 9 { doubled - 9 } else { doubled }
        } else {
            d
        };
    }
    sum.is_multiple_of(10)
}

/// Whether thirteen digits pass the EAN-13 (GTIN-13) check: weights 1 and
/// 3 in turn over the first twelve, the last making the sum a multiple of
/// ten.
fn ean13(d: &[u8]) -> bool {
    if d.len() != 13 {
        return false;
    }
    let sum: u32 = d
        .iter()
        .enumerate()
        .map(|(i, &x)| u32::from(x) * if i % 2 == 1 { 3 } else { 1 })
        .sum();
    sum.is_multiple_of(10)
}

/// Whether the number starts with an issuer prefix of a major network and
/// has a length that network issues (the table in the module's docs).
fn known_prefix(d: &[u8]) -> bool {
    let len = d.len();
    let prefix = |n: usize| d[..n].iter().fold(0u32, |acc, &x| acc * 10 + u32::from(x));
    let (p2, p3, p4) = (prefix(2), prefix(3), prefix(4));
    if len == 12 {
        // Maestro's twelve-digit numbers, by their four-digit prefixes.
        return matches!(
            p4,
            5018 | 5020 | 5038 | 5893 | 6304 | 6390 | 6759 | 6761 | 6762 | 6763 | 604
        );
    }
    let up_to_19 = (16..=19).contains(&len);
    match d[0] {
        4 => matches!(len, 13 | 16 | 19), // Visa
        5 => match p2 {
            51..=55 => len == 16,                     // Mastercard
            50 | 56..=59 => (13..=19).contains(&len), // Maestro, RuPay 508
            _ => false,
        },
        2 => {
            ((2221..=2720).contains(&p4) && len == 16) // Mastercard
                || ((2200..=2204).contains(&p4) && up_to_19) // Mir
                || (p4 == 2131 && len == 15) // JCB
        }
        3 => match p2 {
            34 | 37 => len == 15,                     // Amex
            36 | 38 | 39 => (14..=19).contains(&len), // Diners
            35 => up_to_19,                           // JCB
            // Diners' 30 range is issued at 14 digits (Carte Blanche and the
            // first International cards) and 16 or more, never at Amex's 15:
            // a 15-digit 300 is a tax number as often (Saudi VAT numbers
            // are 15 digits from 3, `300012345600003`).
            30 => ((300..=305).contains(&p3) || p4 == 3095) && (len == 14 || up_to_19), // Diners
            _ => false,
        },
        6 => (13..=19).contains(&len), // Discover, UnionPay, Maestro, RuPay
        8 => (matches!(p2, 81 | 82) && up_to_19) || (p4 == 8600 && len == 16), // RuPay, UnionPay; UzCard
        9 => match p4 {
            9792 | 9860 => len == 16,       // Troy, Humo
            9704 => matches!(len, 16 | 19), // Napas
            _ => false,
        },
        1 => p4 == 1800 && len == 15, // JCB (old range)
        _ => false,
    }
}

/// Whether the number has UnionPay's prefix and a length it issues.
fn unionpay(d: &[u8]) -> bool {
    d[0] == 6 && d[1] == 2 && (16..=19).contains(&d.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(text: &str) -> Option<&str> {
        crate::detect::first_digit_find(text, at_digit)
    }

    #[test]
    fn positives() {
        for (text, want) in [
            ("Visa 4111111111111111 ok", "4111111111111111"),
            ("4111 1111 1111 1111", "4111 1111 1111 1111"),
            ("4111-1111-1111-1111.", "4111-1111-1111-1111"),
            ("amex 3782 822463 10005", "3782 822463 10005"),
            ("5555555555554444", "5555555555554444"),
            ("2223003122003222", "2223003122003222"),
            ("6011111111111117", "6011111111111117"),
            ("30569309025904", "30569309025904"),
            // Diners' 30 range at 16 digits, as the International cards are.
            ("3001 2345 6789 0122", "3001 2345 6789 0122"),
            ("3530111333300000", "3530111333300000"),
            ("4222222222222", "4222222222222"),
            ("card number 630441200007", "630441200007"),
            ("Charge card 060455633911", "060455633911"),
            ("4111 1111 1111 1111 2025", "4111 1111 1111 1111"),
            // Mir, Troy, RuPay, JCB's whole 35 range, 12-digit Maestro.
            ("2200 1234 5678 9019", "2200 1234 5678 9019"),
            ("9792123456789018", "9792123456789018"),
            // National schemes: Napas (16 and 19 digits), UzCard, Humo.
            ("9704 0000 0000 0018", "9704 0000 0000 0018"),
            ("9704000000000000008", "9704000000000000008"),
            ("8600 1234 5678 9012", "8600 1234 5678 9012"),
            ("9860-1234-5678-9015", "9860-1234-5678-9015"),
            ("8228-1234-5678-9014", "8228-1234-5678-9014"),
            ("3512123456789010", "3512123456789010"),
            ("501812345673", "501812345673"),
            ("Karte 571234567899", "571234567899"),
            ("numéro de carte 571234567899", "571234567899"),
            // UnionPay outside Luhn, named.
            ("UnionPay 6212345678901234", "6212345678901234"),
            // Thirteen digits: Visa's even when they pass the EAN-13 check,
            // Maestro's when they do not, or after a card word.
            ("4000000000006", "4000000000006"),
            ("5900000000014", "5900000000014"),
            ("6304000000000", "6304000000000"),
            ("card 5901234123457", "5901234123457"),
            // A network's prefix is reported whatever the card words say.
            ("loyalty card 4111111111111111", "4111111111111111"),
            ("会员卡号 6212345678901232", "6212345678901232"),
            ("5901 2341 2345 7", "5901 2341 2345 7"),
            // Dots between the groups, as many European forms write them.
            ("paid with 4111.1111.1111.1111.", "4111.1111.1111.1111"),
            ("amex 3782.822463.10005", "3782.822463.10005"),
        ] {
            assert_eq!(find(text), Some(want), "{text}");
        }
    }

    #[test]
    fn near_misses() {
        for text in [
            "Order 4111 1111 1111 1112 was cancelled", // Luhn fails
            "1Z999AA10123456784",                      // inside a tracking number
            "id 9fceb02d0ae598e95dc970b74dd5b5c6c4b5a2f3",
            "at 1701231698123 ms", // a timestamp: no issuer, no card word
            "order 561234567890",  // twelve digits of 56 without a card word
            "arn:aws:iam::571234567899:role/x", // an account id
            "order 6212345678901234", // UnionPay's prefix, no Luhn, no name
            "x4111111111111111",   // tail of a word
            "4111111111111111a",   // head of a word
            "550e8400-e29b-41d4-a716-446655440000",
            "2026-05-04",
            "4111.1111.1111.1111.1",         // dotted version-like
            "release 4111.1111.1111.1112",   // dotted, Luhn fails
            "4111.1111 1111-1111",           // separators that change
            "Barcode 5901234123457 scanned", // an EAN-13 that passes Luhn
            "EAN 6901234500042",             // another (a Chinese GS1 prefix)
            "ref 97041234567890126",         // Napas's prefix at 17 digits
            "ref 86001234567894",            // UzCard's prefix at 14 digits
            "VAT 300012345600003 invoice",   // Diners' 300 at 15: a Saudi VAT number
            r"\u0627\u0644\u0631\u0642\u0645 300012345600003", // the same in a JSON escape
            // A card word naming a loyalty, membership or gift card, or a
            // device: no payment network's prefix, not reported.
            "cartão de fidelidade 9917573083754571",
            "loyalty card 0149226511965306",
            "会员卡号7979443341088676",
            "会员卡号0261510528039391与设备序列号354399355958180",
            "gift card 7979443341088676",
            "SIM card IMEI 354399355958180",
        ] {
            let bytes = text.as_bytes();
            for i in 0..bytes.len() {
                if bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit()) {
                    assert_eq!(at_digit(bytes, i), None, "{text} at {i}");
                }
            }
        }
    }

    #[test]
    fn luhn_check() {
        assert!(luhn(&[4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]));
        assert!(!luhn(&[4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]));
        assert!(luhn(&[7, 9, 9, 2, 7, 3, 9, 8, 7, 1, 3]));
    }
}
