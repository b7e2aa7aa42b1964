//! IBANs of fifty-nine countries, from the registry's lengths and BBAN
//! layouts as remembered (`8n10n`: eight digits then ten; `a` letters,
//! `c` letters or digits), with real bank codes where a country's are
//! letters people recognise, and check digits by ISO 7064 mod 97-10.
//! Written in print form (groups of four), solid, or lower case.

use sluice_scan::Kind;

use super::{Lang, Value};
use crate::common::{Rng, grouped};

pub struct Country {
    pub code: &'static str,
    pub length: usize,
    pub layout: &'static str,
    /// Bank codes the BBAN starts with (empty: drawn by its layout).
    pub banks: &'static [&'static str],
    pub count: usize,
    pub lang: Lang,
}

macro_rules! c {
    ($code:literal, $len:literal, $layout:literal, $banks:expr, $count:literal, $lang:ident) => {
        Country {
            code: $code,
            length: $len,
            layout: $layout,
            banks: $banks,
            count: $count,
            lang: Lang::$lang,
        }
    };
}

pub const COUNTRIES: &[Country] = &[
    c!(
        "DE",
        22,
        "8n10n",
        &["10010010", "37040044", "50010517", "70020270", "20041133"],
        12,
        De
    ),
    c!(
        "FR",
        27,
        "5n5n11c2n",
        &["30004", "30003", "20041", "10107"],
        8,
        Fr
    ),
    c!(
        "ES",
        24,
        "4n4n1n1n10n",
        &["2100", "0049", "0182", "0081"],
        8,
        Es
    ),
    c!("IT", 27, "1a5n5n12c", &[], 8, It),
    c!(
        "NL",
        18,
        "4a10n",
        &["ABNA", "INGB", "RABO", "TRIO", "KNAB", "SNSB", "BUNQ"],
        8,
        Nl
    ),
    c!(
        "GB",
        22,
        "4a6n8n",
        &["NWBK", "BARC", "LOYD", "HBUK", "MIDL", "MONZ"],
        7,
        En
    ),
    c!("BE", 16, "3n7n2n", &[], 5, Fr),
    c!("AT", 20, "5n11n", &["12000", "20111", "32000"], 4, De),
    c!("CH", 21, "5n12c", &["00762", "00230", "00700"], 5, De),
    c!("PL", 28, "8n16n", &[], 5, Pl),
    c!("PT", 25, "4n4n11n2n", &["0035", "0033", "0010"], 4, Pt),
    c!("IE", 22, "4a6n8n", &["AIBK", "BOFI", "IPBS"], 4, En),
    c!("LU", 20, "3n13c", &[], 2, Fr),
    c!("SE", 24, "3n16n1n", &["500", "800", "600"], 4, Sv),
    c!("DK", 18, "4n9n1n", &[], 3, Sv),
    c!("FI", 18, "3n11n", &[], 3, Sv),
    c!("NO", 15, "4n6n1n", &[], 3, Sv),
    c!("IS", 26, "4n2n6n10n", &[], 1, Sv),
    c!("FO", 18, "4n9n1n", &[], 1, Sv),
    c!("GL", 18, "4n9n1n", &[], 1, Sv),
    c!("EE", 20, "2n2n11n1n", &[], 2, En),
    c!("LV", 21, "4a13c", &["HABA", "PARX", "UNLA"], 2, En),
    c!("LT", 20, "5n11n", &[], 2, En),
    c!("CZ", 24, "4n6n10n", &["0800", "0100", "2010"], 3, Pl),
    c!("SK", 24, "4n6n10n", &["0900", "1100"], 2, Pl),
    c!("HU", 28, "3n4n1n15n1n", &[], 2, En),
    c!("SI", 19, "5n8n2n", &[], 2, En),
    c!("HR", 21, "7n10n", &[], 2, En),
    c!("RO", 24, "4a16c", &["BTRL", "RNCB", "INGB", "BRDE"], 3, En),
    c!("BG", 22, "4a4n2n8c", &["UNCR", "BPBI", "STSA"], 2, En),
    c!("GR", 27, "3n4n16c", &[], 3, En),
    c!("CY", 28, "3n5n16c", &[], 1, En),
    c!("MT", 31, "4a5n18c", &["MALT", "VALL"], 1, En),
    c!("LI", 21, "5n12c", &[], 1, De),
    c!("MC", 27, "5n5n11c2n", &[], 1, Fr),
    c!("SM", 27, "1a5n5n12c", &[], 1, It),
    c!("VA", 22, "3n15n", &[], 1, It),
    c!("AD", 24, "4n4n12c", &[], 1, Es),
    c!("GI", 23, "4a15c", &[], 1, En),
    c!("RS", 22, "3n13n2n", &[], 1, En),
    c!("ME", 22, "3n13n2n", &[], 1, En),
    c!("BA", 20, "3n3n8n2n", &[], 1, En),
    c!("MK", 19, "3n10c2n", &[], 1, En),
    c!("AL", 28, "8n16c", &[], 1, En),
    c!("XK", 20, "4n10n2n", &[], 1, En),
    c!("MD", 24, "2c18c", &[], 1, Ru),
    c!("UA", 29, "6n19c", &[], 3, Ru),
    c!("BY", 28, "4c4n16c", &[], 1, Ru),
    c!("GE", 22, "2a16n", &[], 1, Ru),
    c!("AZ", 28, "4a20c", &[], 1, Ru),
    c!("KZ", 20, "3n13c", &[], 1, Ru),
    c!("TR", 26, "5n1n16c", &[], 5, Tr),
    c!("IL", 23, "3n3n13n", &[], 1, En),
    c!("SA", 24, "2n18c", &[], 3, Ar),
    c!("AE", 23, "3n16n", &[], 3, Ar),
    c!("QA", 29, "4a21c", &["QNBA", "DOHB"], 1, Ar),
    c!("KW", 30, "4a22c", &["NBOK"], 1, Ar),
    c!("BH", 22, "4a14c", &[], 1, Ar),
    c!("JO", 30, "4a4n18c", &[], 1, Ar),
    c!("EG", 29, "4n4n17n", &[], 2, Ar),
    c!("LB", 28, "4n20c", &[], 1, Ar),
    c!("TN", 24, "2n3n13n2n", &[], 1, Fr),
    c!("MR", 27, "5n5n11n2n", &[], 1, Fr),
    c!("PK", 24, "4a16c", &["HABB", "MUCB", "SCBL"], 2, En),
    c!("BR", 29, "8n5n10n1a1c", &[], 3, Pt),
    c!("CR", 22, "4n14n", &[], 1, Es),
    c!("DO", 28, "4c20n", &[], 1, Es),
    c!("MU", 30, "4a2n2n12n3n3a", &[], 1, En),
];

/// The layout as (count, class) pairs: `8n10n` is [(8, n), (10, n)].
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

/// The IBAN's remainder mod 97 with its first four characters moved to
/// the end and letters read as 10 to 35.
fn remainder(rearranged: &str) -> u32 {
    rearranged.bytes().fold(0u32, |r, b| {
        if b.is_ascii_digit() {
            (r * 10 + u32::from(b - b'0')) % 97
        } else {
            (r * 100 + u32::from(b - b'A') + 10) % 97
        }
    })
}

pub fn valid(iban: &str) -> bool {
    iban.len() > 4 && remainder(&format!("{}{}", &iban[4..], &iban[..4])) == 1
}

fn bban(rng: &mut Rng, country: &Country) -> String {
    const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut out = String::new();
    // Accounts in `c` fields are digits in most IBANs; one in five has a
    // few letters (Italian and French account numbers, Gulf banks).
    let lettered = rng.below(5) == 0;
    for (count, class) in layout(country.layout) {
        for _ in 0..count {
            let b = match class {
                b'n' => rng.digit(),
                b'a' => *rng.pick(LETTERS),
                _ if lettered && rng.below(5) == 0 => *rng.pick(LETTERS),
                _ => rng.digit(),
            };
            out.push(b as char);
        }
    }
    if !country.banks.is_empty() {
        let bank = rng.pick(country.banks);
        out.replace_range(..bank.len(), bank);
    }
    out
}

pub fn iban(rng: &mut Rng, country: &Country) -> String {
    let bban = bban(rng, country);
    let check = 98 - remainder(&format!("{bban}{}00", country.code));
    format!("{}{check:02}{bban}", country.code)
}

pub fn values(rng: &mut Rng) -> Vec<Value> {
    let mut out = Vec::new();
    for country in COUNTRIES {
        for _ in 0..country.count {
            let iban = iban(rng, country);
            let text = match rng.below(20) {
                0..=8 => grouped(&iban, &[4; 9], " "),
                9..=15 => iban,
                16 | 17 => iban.to_ascii_lowercase(),
                _ => grouped(&iban.to_ascii_lowercase(), &[4; 9], " "),
            };
            out.push(Value::new(Kind::Iban, text, country.code, country.lang));
        }
    }
    out
}
