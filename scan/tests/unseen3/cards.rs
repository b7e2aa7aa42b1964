//! Payment cards of every major scheme and several national ones, at
//! their issuers' number ranges (IIN prefixes) and lengths, each completed
//! with its Luhn digit (every scheme here uses it), written solid, in
//! fours with spaces or dashes, or in the scheme's own grouping (American
//! Express 4-6-5, Diners 4-6-4, 13 digits 4-4-5).

use sluice_scan::Kind;

use super::{Lang, Value};
use crate::common::{Rng, grouped, luhn_digit};

pub struct Issuer {
    pub name: &'static str,
    /// (lowest prefix, highest prefix, lengths): prefixes of one width.
    pub ranges: &'static [(&'static str, &'static str, &'static [usize])],
    /// How many of the set's cards it gets (its share of what is sent).
    pub count: usize,
    /// The languages its cardholders write in; empty for every language.
    pub langs: &'static [Lang],
}

const ANY: &[Lang] = &[];

pub const ISSUERS: &[Issuer] = &[
    Issuer {
        name: "Visa",
        ranges: &[("4", "4", &[16])],
        count: 42,
        langs: ANY,
    },
    Issuer {
        name: "Visa 13",
        ranges: &[("4", "4", &[13])],
        count: 5,
        langs: ANY,
    },
    Issuer {
        name: "Visa 19",
        ranges: &[("4", "4", &[19])],
        count: 6,
        langs: ANY,
    },
    Issuer {
        name: "Visa Electron",
        ranges: &[
            ("4026", "4026", &[16]),
            ("417500", "417500", &[16]),
            ("4508", "4508", &[16]),
            ("4844", "4844", &[16]),
            ("4913", "4913", &[16]),
            ("4917", "4917", &[16]),
        ],
        count: 5,
        langs: ANY,
    },
    Issuer {
        name: "Mastercard 51-55",
        ranges: &[("51", "55", &[16])],
        count: 30,
        langs: ANY,
    },
    Issuer {
        name: "Mastercard 2221-2720",
        ranges: &[("2221", "2720", &[16])],
        count: 14,
        langs: ANY,
    },
    Issuer {
        name: "American Express",
        ranges: &[("34", "34", &[15]), ("37", "37", &[15])],
        count: 18,
        langs: ANY,
    },
    Issuer {
        name: "Discover",
        ranges: &[
            ("6011", "6011", &[16, 19]),
            ("644", "649", &[16, 19]),
            ("65", "65", &[16, 19]),
            ("622126", "622925", &[16]),
        ],
        count: 12,
        langs: &[Lang::En],
    },
    Issuer {
        name: "Diners Club",
        ranges: &[
            ("36", "36", &[14]),
            ("300", "305", &[14]),
            ("3095", "3095", &[14]),
            ("38", "39", &[16]),
        ],
        count: 10,
        langs: ANY,
    },
    Issuer {
        name: "JCB",
        ranges: &[("3528", "3589", &[16, 17, 18, 19])],
        count: 12,
        langs: &[Lang::Ja, Lang::En, Lang::Ko],
    },
    Issuer {
        name: "UnionPay",
        ranges: &[("62", "62", &[16, 17, 18, 19]), ("8100", "8171", &[16])],
        count: 14,
        langs: &[Lang::Zh, Lang::En],
    },
    Issuer {
        name: "Maestro",
        ranges: &[
            ("5018", "5018", &[12, 13, 15, 16, 19]),
            ("5020", "5020", &[16, 18]),
            ("5038", "5038", &[16]),
            ("5893", "5893", &[16, 19]),
            ("6304", "6304", &[16, 18, 19]),
            ("6759", "6759", &[16, 18, 19]),
            ("6761", "6763", &[12, 13, 14, 16, 17, 19]),
        ],
        count: 14,
        langs: &[Lang::De, Lang::Nl, Lang::En, Lang::Es, Lang::Pt, Lang::It],
    },
    Issuer {
        name: "Mir",
        ranges: &[("2200", "2204", &[16, 17, 18, 19])],
        count: 8,
        langs: &[Lang::Ru],
    },
    Issuer {
        name: "RuPay",
        ranges: &[
            ("606985", "607984", &[16]),
            ("608001", "608500", &[16]),
            ("652150", "653149", &[16]),
            ("508500", "508999", &[16]),
        ],
        count: 8,
        langs: &[Lang::Hi, Lang::En],
    },
    Issuer {
        name: "Elo",
        ranges: &[
            ("401178", "401179", &[16]),
            ("438935", "438935", &[16]),
            ("457631", "457632", &[16]),
            ("504175", "504175", &[16]),
            ("506699", "506778", &[16]),
            ("509000", "509999", &[16]),
            ("636297", "636297", &[16]),
            ("650031", "650033", &[16]),
            ("650405", "650439", &[16]),
            ("651652", "651679", &[16]),
        ],
        count: 7,
        langs: &[Lang::Pt],
    },
    Issuer {
        name: "Hipercard",
        ranges: &[
            ("606282", "606282", &[16]),
            ("384100", "384100", &[16, 19]),
            ("384140", "384140", &[16, 19]),
            ("384160", "384160", &[16, 19]),
        ],
        count: 5,
        langs: &[Lang::Pt],
    },
    Issuer {
        name: "Troy",
        ranges: &[("979200", "979289", &[16])],
        count: 5,
        langs: &[Lang::Tr],
    },
    Issuer {
        name: "Verve",
        ranges: &[
            ("506099", "506198", &[16, 19]),
            ("650002", "650027", &[16, 19]),
            ("507865", "507964", &[16, 19]),
        ],
        count: 5,
        langs: &[Lang::En],
    },
    Issuer {
        name: "Dankort",
        ranges: &[("5019", "5019", &[16]), ("4571", "4571", &[16])],
        count: 4,
        langs: &[Lang::Sv, Lang::En],
    },
];

/// Whether `digits` is of one of the issuer's ranges and lengths.
pub fn in_range(issuer: &Issuer, digits: &str) -> bool {
    issuer.ranges.iter().any(|&(low, high, lengths)| {
        let width = low.len();
        lengths.contains(&digits.len())
            && digits.len() > width
            && (low..=high).contains(&&digits[..width])
    })
}

/// A prefix between `low` and `high` (of one width), drawn evenly.
fn prefix(rng: &mut Rng, low: &str, high: &str) -> String {
    let low_n: u64 = low.parse().expect("digits");
    let high_n: u64 = high.parse().expect("digits");
    let n = low_n + rng.below(high_n - low_n + 1);
    format!("{n:0width$}", width = low.len())
}

pub fn number(rng: &mut Rng, issuer: &Issuer) -> String {
    let &(low, high, lengths) = rng.pick(issuer.ranges);
    let length = *rng.pick(lengths);
    let mut digits = prefix(rng, low, high);
    while digits.len() < length - 1 {
        digits.push(rng.digit() as char);
    }
    let check = luhn_digit(digits.as_bytes());
    digits.push(check as char);
    digits
}

/// The scheme's own grouping where it has one, else fours.
fn own_groups(digits: &str) -> &'static [usize] {
    match digits.len() {
        15 => &[4, 6, 5],
        14 => &[4, 6, 4],
        13 => &[4, 4, 5],
        _ => &[4, 4, 4, 4, 4],
    }
}

/// The number as people write it: fours with spaces most often, solid in
/// forms and records, fours with dashes, or the scheme's own grouping.
pub fn write(rng: &mut Rng, digits: &str) -> String {
    match rng.below(10) {
        0..=3 => grouped(digits, own_groups(digits), " "),
        4..=6 => digits.to_string(),
        7 | 8 => grouped(digits, own_groups(digits), "-"),
        _ => grouped(digits, &[4, 4, 4, 4, 4], " "),
    }
}

pub fn values(rng: &mut Rng) -> Vec<Value> {
    let mut out = Vec::new();
    for issuer in ISSUERS {
        for _ in 0..issuer.count {
            let digits = number(rng, issuer);
            let text = write(rng, &digits);
            let lang = if issuer.langs.is_empty() {
                *rng.pick(&Lang::ALL)
            } else {
                *rng.pick(issuer.langs)
            };
            out.push(Value::new(Kind::CreditCard, text, issuer.name, lang));
        }
    }
    out
}
