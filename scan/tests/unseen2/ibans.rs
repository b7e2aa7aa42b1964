//! IBANs of sixty-odd countries of the registry, valid under mod 97, each
//! BBAN of its country's length and character classes (`8n10n`: eight
//! digits then ten; `a` capitals, `c` digits or capitals), starting with a
//! real bank's code where one is given; written grouped by four in
//! capitals (as printed), solid, and both in lower case.

use sluice_scan::Kind;

use super::{Lang, Value};
use crate::common::{Rng, grouped};

pub struct Country {
    pub code: &'static str,
    pub length: usize,
    pub layout: &'static str,
    /// Bank codes a BBAN may start with (any when empty).
    pub banks: &'static [&'static str],
    pub count: usize,
    pub langs: &'static [Lang],
}

macro_rules! country {
    ($code:literal, $length:literal, $layout:literal, [$($bank:literal),*], $count:literal, [$($lang:ident),+]) => {
        Country {
            code: $code,
            length: $length,
            layout: $layout,
            banks: &[$($bank),*],
            count: $count,
            langs: &[$(Lang::$lang),+],
        }
    };
}

pub const COUNTRIES: &[Country] = &[
    country!(
        "DE",
        22,
        "8n10n",
        [
            "10010010", "37040044", "50010517", "70150000", "20050550", "12030000"
        ],
        6,
        [De, De, Hi, Ko]
    ),
    country!(
        "FR",
        27,
        "5n5n11c2n",
        ["30004", "30003", "20041", "30002", "10278"],
        5,
        [Fr]
    ),
    country!(
        "ES",
        24,
        "4n4n1n1n10n",
        ["2100", "0049", "0182", "0081", "2038"],
        5,
        [Es]
    ),
    country!("IT", 27, "1a5n5n12c", [], 5, [It]),
    country!(
        "NL",
        18,
        "4a10n",
        ["ABNA", "INGB", "RABO", "TRIO", "KNAB", "BUNQ"],
        4,
        [Nl, Nl, Id]
    ),
    country!(
        "BE",
        16,
        "3n7n2n",
        ["001", "068", "310", "734", "363"],
        3,
        [Fr, Nl]
    ),
    country!(
        "GB",
        22,
        "4a6n8n",
        ["NWBK", "BARC", "LOYD", "HBUK", "MIDL", "MONZ"],
        4,
        [En, Hi, Zh]
    ),
    country!(
        "AT",
        20,
        "5n11n",
        ["20111", "12000", "32000", "14000"],
        3,
        [De]
    ),
    country!(
        "CH",
        21,
        "5n12c",
        ["00230", "09000", "00700", "00762"],
        3,
        [De, Fr, Ja]
    ),
    country!(
        "PL",
        28,
        "8n16n",
        ["10500099", "11402004", "10201026", "24900005"],
        3,
        [Pl]
    ),
    country!(
        "PT",
        25,
        "4n4n11n2n",
        ["0035", "0033", "0007", "0010"],
        3,
        [Pt]
    ),
    country!("IE", 22, "4a6n8n", ["AIBK", "BOFI", "IPBS"], 2, [En]),
    country!("LU", 20, "3n13c", ["001", "002", "003", "019"], 2, [Fr, De]),
    country!("DK", 18, "4n9n1n", [], 2, [En]),
    country!("SE", 24, "3n16n1n", ["500", "600", "800", "300"], 2, [Sv]),
    country!("NO", 15, "4n6n1n", [], 2, [En]),
    country!("FI", 18, "3n11n", [], 2, [Sv, En]),
    country!(
        "CZ",
        24,
        "4n6n10n",
        ["0800", "0100", "0300", "2010"],
        2,
        [En]
    ),
    country!(
        "SK",
        24,
        "4n6n10n",
        ["0900", "1100", "0200", "7500"],
        2,
        [En]
    ),
    country!("HU", 28, "3n4n1n15n1n", [], 2, [En]),
    country!("RO", 24, "4a16c", ["BTRL", "RNCB", "INGB", "BRDE"], 2, [En]),
    country!(
        "HR",
        21,
        "7n10n",
        ["2340009", "2360000", "2484008"],
        2,
        [En]
    ),
    country!("GR", 27, "3n4n16c", ["011", "014", "017", "026"], 2, [En]),
    country!(
        "TR",
        26,
        "5n1n16c",
        ["00010", "00062", "00064", "00046"],
        2,
        [Tr]
    ),
    country!(
        "UA",
        29,
        "6n19c",
        ["305299", "322001", "300528"],
        2,
        [En, Ru]
    ),
    country!("AE", 23, "3n16n", [], 2, [Ar, En]),
    country!("SA", 24, "2n18c", ["80", "10", "45", "20"], 2, [Ar]),
    country!("IL", 23, "3n3n13n", ["010", "012", "020", "031"], 2, [En]),
    country!("BG", 22, "4a4n2n8c", ["BNBG", "UNCR", "STSA"], 1, [En]),
    country!("SI", 19, "5n8n2n", [], 1, [En]),
    country!("CY", 28, "3n5n16c", ["002", "005"], 1, [En]),
    country!("MT", 31, "4a5n18c", ["MALT", "VALL"], 1, [En]),
    country!("EE", 20, "2n2n11n1n", ["22", "10", "77"], 1, [En]),
    country!("LV", 21, "4a13c", ["HABA", "PARX", "UNLA"], 1, [En]),
    country!("LT", 20, "5n11n", ["73000", "70440", "72300"], 1, [En]),
    country!("IS", 26, "4n2n6n10n", [], 1, [En]),
    country!("LI", 21, "5n12c", ["08800", "08810"], 1, [De]),
    country!("MC", 27, "5n5n11c2n", [], 1, [Fr]),
    country!("SM", 27, "1a5n5n12c", [], 1, [It]),
    country!("QA", 29, "4a21c", ["QNBA", "DOHB"], 1, [Ar]),
    country!("KW", 30, "4a22c", ["NBOK", "CBKU"], 1, [Ar]),
    country!("BH", 22, "4a14c", ["NBOB", "BBKU"], 1, [Ar]),
    country!("JO", 30, "4a4n18c", ["CBJO", "ARAB"], 1, [Ar]),
    country!("EG", 29, "4n4n17n", [], 1, [Ar]),
    country!(
        "BR",
        29,
        "8n5n10n1a1c",
        ["00000000", "00360305", "60701190"],
        2,
        [Pt]
    ),
    country!("PK", 24, "4a16c", ["HABB", "MEZN", "SCBL"], 1, [En]),
    country!("KZ", 20, "3n13c", [], 1, [Ru]),
    country!("GE", 22, "2a16n", ["NB", "TB", "BG"], 1, [En]),
    country!("AZ", 28, "4a20c", ["NABZ", "IBAZ"], 1, [En]),
    country!("RS", 22, "3n13n2n", [], 1, [En]),
    country!("ME", 22, "3n13n2n", [], 1, [En]),
    country!("MK", 19, "3n10c2n", [], 1, [En]),
    country!("BA", 20, "3n3n8n2n", [], 1, [En]),
    country!("AL", 28, "8n16c", [], 1, [En]),
    country!("MD", 24, "2c18c", ["AG", "ML"], 1, [Ru]),
    country!("XK", 20, "4n10n2n", [], 1, [En]),
    country!("AD", 24, "4n4n12c", [], 1, [Es]),
    country!("GI", 23, "4a15c", ["NWBK"], 1, [En]),
    country!("FO", 18, "4n9n1n", [], 1, [En]),
    country!("MU", 30, "4a2n2n12n3n3a", ["BOMM", "MCBL"], 1, [En, Fr]),
    country!("TN", 24, "2n3n13n2n", [], 1, [Ar, Fr]),
    country!("CR", 22, "4n14n", [], 1, [Es]),
    country!("DO", 28, "4c20n", ["BAGR", "BCBH"], 1, [Es]),
];

/// The (count, class) pairs of a layout such as `4a6n8n`.
pub fn layout(layout: &str) -> Vec<(usize, u8)> {
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

/// The remainder mod 97 of an IBAN's digits after moving its first four
/// characters to the end (letters as 10 to 35).
fn remainder(rearranged: &str) -> u32 {
    rearranged.bytes().fold(0u32, |r, b| {
        if b.is_ascii_digit() {
            (r * 10 + u32::from(b - b'0')) % 97
        } else {
            (r * 100 + u32::from(b.to_ascii_uppercase() - b'A') + 10) % 97
        }
    })
}

pub fn valid(iban: &str) -> bool {
    iban.len() > 4 && remainder(&format!("{}{}", &iban[4..], &iban[..4])) == 1
}

fn iban(rng: &mut Rng, country: &Country) -> String {
    let mut bban = String::new();
    for (count, class) in layout(country.layout) {
        for _ in 0..count {
            let letter = char::from(b'A' + rng.below(26) as u8);
            bban.push(match class {
                b'n' => rng.digit() as char,
                b'a' => letter,
                // Alphanumeric in the registry, digits in most accounts.
                _ if rng.below(10) == 0 => letter,
                _ => rng.digit() as char,
            });
        }
    }
    if !country.banks.is_empty() {
        let bank = *rng.pick(country.banks);
        bban.replace_range(..bank.len(), bank);
    }
    let check = 98 - remainder(&format!("{bban}{}00", country.code));
    format!("{}{check:02}{bban}", country.code)
}

pub fn values(rng: &mut Rng) -> Vec<Value> {
    let mut values = Vec::new();
    for (k, country) in COUNTRIES.iter().enumerate() {
        for i in 0..country.count {
            let solid = iban(rng, country);
            let text = match (i + k) % 5 {
                0 | 4 => grouped(&solid, &[4; 9], " "),
                1 => solid,
                2 => grouped(&solid, &[4; 9], " ").to_lowercase(),
                _ => solid.to_lowercase(),
            };
            values.push(Value {
                kind: Kind::Iban,
                text,
                origin: country.code,
                lang: *rng.pick(country.langs),
                after: String::new(),
            });
        }
    }
    values
}
