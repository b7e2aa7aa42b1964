//! IBANs of the registry's countries: each country's length and BBAN
//! layout (`n` digits, `a` capital letters, `c` either), check digits by
//! ISO 13616 (mod 97), written solid or in groups of four, in capitals or
//! lower case. National check digits inside the BBAN are not computed:
//! the registry's structure and the IBAN's own check are what is tested.

use sluice_scan::Kind;

use super::{Lang, Value};
use crate::common::{Rng, grouped};

/// (country, length, BBAN layout as (count, class) runs, language, how
/// many the set takes).
type Layout = (&'static str, usize, &'static str, Lang, usize);

pub const COUNTRIES: &[Layout] = &[
    ("DE", 22, "8n10n", Lang::De, 5),
    ("AT", 20, "5n11n", Lang::De, 5),
    ("CH", 21, "5n12c", Lang::De, 5),
    ("LI", 21, "5n12c", Lang::De, 2),
    ("FR", 27, "5n5n11c2n", Lang::Fr, 5),
    ("MC", 27, "5n5n11c2n", Lang::Fr, 2),
    ("LU", 20, "3n13c", Lang::Fr, 3),
    ("BE", 16, "3n7n2n", Lang::Nl, 5),
    ("NL", 18, "4a10n", Lang::Nl, 5),
    ("ES", 24, "4n4n1n1n10n", Lang::Es, 5),
    ("AD", 24, "4n4n12c", Lang::Es, 2),
    ("PT", 25, "4n4n11n2n", Lang::Pt, 5),
    ("BR", 29, "8n5n10n1a1c", Lang::Pt, 4),
    ("IT", 27, "1a5n5n12c", Lang::It, 5),
    ("SM", 27, "1a5n5n12c", Lang::It, 2),
    ("PL", 28, "8n16n", Lang::Pl, 6),
    ("GB", 22, "4a6n8n", Lang::En, 5),
    ("IE", 22, "4a6n8n", Lang::En, 5),
    ("GI", 23, "4a15c", Lang::En, 2),
    ("DK", 18, "4n9n1n", Lang::En, 3),
    ("FO", 18, "4n9n1n", Lang::En, 2),
    ("GL", 18, "4n9n1n", Lang::En, 2),
    ("NO", 15, "4n6n1n", Lang::En, 3),
    ("SE", 24, "3n16n1n", Lang::En, 3),
    ("FI", 18, "3n11n", Lang::En, 3),
    ("IS", 26, "4n2n6n10n", Lang::En, 2),
    ("EE", 20, "2n2n11n1n", Lang::En, 2),
    ("LV", 21, "4a13c", Lang::En, 2),
    ("LT", 20, "5n11n", Lang::En, 2),
    ("CZ", 24, "4n6n10n", Lang::Pl, 3),
    ("SK", 24, "4n6n10n", Lang::Pl, 3),
    ("HU", 28, "3n4n1n15n1n", Lang::En, 3),
    ("SI", 19, "5n8n2n", Lang::En, 2),
    ("HR", 21, "7n10n", Lang::En, 3),
    ("RO", 24, "4a16c", Lang::En, 3),
    ("BG", 22, "4a4n2n8c", Lang::En, 2),
    ("GR", 27, "3n4n16c", Lang::En, 3),
    ("CY", 28, "3n5n16c", Lang::En, 2),
    ("MT", 31, "4a5n18c", Lang::En, 2),
    ("RS", 22, "3n13n2n", Lang::En, 2),
    ("BA", 20, "3n3n8n2n", Lang::En, 2),
    ("ME", 22, "3n13n2n", Lang::En, 2),
    ("MK", 19, "3n10c2n", Lang::En, 2),
    ("AL", 28, "8n16c", Lang::En, 2),
    ("MD", 24, "2c18c", Lang::En, 2),
    ("UA", 29, "6n19c", Lang::En, 3),
    ("GE", 22, "2a16n", Lang::En, 2),
    ("AZ", 28, "4a20c", Lang::En, 2),
    ("KZ", 20, "3n13c", Lang::En, 2),
    ("TR", 26, "5n1n16c", Lang::En, 4),
    ("IL", 23, "3n3n13n", Lang::En, 2),
    ("AE", 23, "3n16n", Lang::En, 3),
    ("SA", 24, "2n18c", Lang::En, 3),
    ("QA", 29, "4a21c", Lang::En, 2),
    ("KW", 30, "4a22c", Lang::En, 2),
    ("BH", 22, "4a14c", Lang::En, 2),
    ("JO", 30, "4a4n18c", Lang::En, 2),
    ("LB", 28, "4n20c", Lang::En, 2),
    ("EG", 29, "4n4n17n", Lang::En, 2),
    ("TN", 24, "2n3n13n2n", Lang::Fr, 2),
    ("MR", 27, "5n5n11n2n", Lang::Fr, 2),
    ("MU", 30, "4a2n2n12n3n3a", Lang::En, 2),
    ("PK", 24, "4a16c", Lang::Hi, 3),
    ("CR", 22, "4n14n", Lang::Es, 2),
    ("DO", 28, "4c20n", Lang::Es, 2),
    ("GT", 28, "4c20c", Lang::Es, 2),
    ("XK", 20, "4n10n2n", Lang::En, 2),
];

/// The BBAN's runs: (how many, class).
fn runs(layout: &str) -> Vec<(usize, u8)> {
    let mut out = Vec::new();
    let mut count = 0;
    for b in layout.bytes() {
        if b.is_ascii_digit() {
            count = count * 10 + usize::from(b - b'0');
        } else {
            out.push((count, b));
            count = 0;
        }
    }
    out
}

fn bban(rng: &mut Rng, layout: &str) -> String {
    const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut out = String::new();
    for (count, class) in runs(layout) {
        for _ in 0..count {
            let c = match class {
                b'n' => rng.digit(),
                b'a' => *rng.pick(LETTERS),
                // Mostly digits, as account numbers with letters are.
                _ if rng.below(4) == 0 => *rng.pick(LETTERS),
                _ => rng.digit(),
            };
            out.push(char::from(c));
        }
    }
    out
}

/// The number (letters as 10..35) of `s` modulo 97.
pub fn mod97(s: &str) -> u32 {
    s.chars().fold(0u32, |r, c| {
        let v = c.to_digit(36).expect("alphanumeric");
        if v < 10 {
            (r * 10 + v) % 97
        } else {
            (r * 100 + v) % 97
        }
    })
}

pub fn iban(rng: &mut Rng, country: &str, layout: &str) -> String {
    let bban = bban(rng, layout);
    let check = 98 - mod97(&format!("{bban}{country}00"));
    format!("{country}{check:02}{bban}")
}

/// Whether `iban` (solid, any case) checks: mod 97 of the rearranged
/// number is 1.
pub fn valid(iban: &str) -> bool {
    let upper = iban.to_ascii_uppercase();
    mod97(&format!("{}{}", &upper[4..], &upper[..4])) == 1
}

pub fn written(rng: &mut Rng, iban: &str) -> String {
    // Paper and most banking apps group by four; pasted ones are solid.
    let text = if rng.below(10) < 6 {
        grouped(iban, &[4; 9], " ")
    } else {
        iban.to_string()
    };
    if rng.below(10) < 3 {
        text.to_ascii_lowercase()
    } else {
        text
    }
}

pub fn values(rng: &mut Rng) -> Vec<Value> {
    let mut out = Vec::new();
    for &(country, _, layout, lang, count) in COUNTRIES {
        for _ in 0..count {
            let number = iban(rng, country, layout);
            out.push(Value {
                kind: Kind::Iban,
                text: written(rng, &number),
                origin: country,
                lang,
                after: String::new(),
            });
        }
    }
    out
}
