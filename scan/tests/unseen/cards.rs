//! Payment card numbers of the world's schemes: each issuer's IIN ranges
//! and lengths (from the schemes' published ranges as commonly listed),
//! every one completed with its Luhn digit (all the schemes here use it),
//! written solid or in the groups printed on the card, with spaces, dashes
//! or dots.

use sluice_scan::Kind;

use super::{Lang, Value};
use crate::common::{Rng, grouped, luhn_digit};

/// One issuer: its IIN ranges (`low`..=`high`, equal widths) each with the
/// lengths its cards come in, and how many numbers the set takes.
pub struct Issuer {
    pub name: &'static str,
    pub ranges: &'static [(&'static str, &'static str, &'static [usize])],
    pub count: usize,
}

const L16_19: &[usize] = &[16, 17, 18, 19];
const L16: &[usize] = &[16];

pub const ISSUERS: &[Issuer] = &[
    Issuer {
        name: "Visa",
        ranges: &[("4", "4", &[16, 16, 16, 13, 19])],
        count: 30,
    },
    Issuer {
        name: "Visa Electron",
        ranges: &[
            ("4026", "4026", L16),
            ("417500", "417500", L16),
            ("4508", "4508", L16),
            ("4844", "4844", L16),
            ("4913", "4913", L16),
            ("4917", "4917", L16),
        ],
        count: 6,
    },
    Issuer {
        name: "Mastercard",
        ranges: &[("51", "55", L16), ("2221", "2720", L16)],
        count: 30,
    },
    Issuer {
        name: "American Express",
        ranges: &[("34", "34", &[15]), ("37", "37", &[15])],
        count: 16,
    },
    Issuer {
        name: "Discover",
        ranges: &[
            ("6011", "6011", L16_19),
            ("644", "649", L16_19),
            ("65", "65", L16_19),
            ("622126", "622925", L16_19),
        ],
        count: 16,
    },
    Issuer {
        name: "Diners Club",
        ranges: &[
            ("36", "36", &[14, 14, 16, 19]),
            ("300", "305", &[14, 16]),
            ("3095", "3095", &[14, 16]),
            ("38", "39", &[14, 16, 17, 18, 19]),
        ],
        count: 14,
    },
    Issuer {
        name: "JCB",
        ranges: &[("3528", "3589", &[16, 16, 17, 18, 19])],
        count: 14,
    },
    Issuer {
        name: "UnionPay",
        ranges: &[("62", "62", &[16, 16, 17, 18, 19, 19])],
        count: 16,
    },
    Issuer {
        name: "Maestro",
        ranges: &[
            ("5018", "5018", &[12, 13, 16, 19]),
            ("5020", "5020", &[14, 16, 18]),
            ("5038", "5038", &[15, 16, 19]),
            ("5893", "5893", &[16, 19]),
            ("6304", "6304", &[16, 18, 19]),
            ("6759", "6759", &[12, 16, 17, 19]),
            ("6761", "6763", &[13, 16, 19]),
        ],
        count: 18,
    },
    Issuer {
        name: "Mir",
        ranges: &[("2200", "2204", &[16, 16, 17, 18, 19])],
        count: 10,
    },
    Issuer {
        name: "RuPay",
        ranges: &[
            ("60", "60", L16),
            ("6521", "6522", L16),
            ("81", "82", L16),
            ("508", "508", L16),
            ("353", "353", L16),
            ("356", "356", L16),
        ],
        count: 12,
    },
    Issuer {
        name: "Verve",
        ranges: &[
            ("506099", "506198", &[16, 18, 19]),
            ("507865", "507964", &[16, 18, 19]),
            ("650002", "650027", &[16, 18, 19]),
        ],
        count: 8,
    },
    Issuer {
        name: "Troy",
        ranges: &[("9792", "9792", L16)],
        count: 6,
    },
    Issuer {
        name: "Elo",
        ranges: &[
            ("401178", "401179", L16),
            ("431274", "431274", L16),
            ("438935", "438935", L16),
            ("451416", "451416", L16),
            ("457393", "457393", L16),
            ("457631", "457632", L16),
            ("504175", "504175", L16),
            ("506699", "506778", L16),
            ("509000", "509999", L16),
            ("627780", "627780", L16),
            ("636297", "636297", L16),
            ("636368", "636368", L16),
            ("650031", "650033", L16),
            ("650035", "650051", L16),
            ("650405", "650439", L16),
            ("650485", "650538", L16),
            ("651652", "651679", L16),
            ("655000", "655019", L16),
        ],
        count: 10,
    },
    Issuer {
        name: "Hipercard",
        ranges: &[
            ("606282", "606282", &[16, 19]),
            ("384100", "384100", &[16, 19]),
            ("384140", "384140", &[16, 19]),
            ("384160", "384160", &[16, 19]),
        ],
        count: 6,
    },
    Issuer {
        name: "BC Card",
        ranges: &[("6541", "6541", L16), ("6556", "6556", L16)],
        count: 6,
    },
    Issuer {
        name: "Dankort",
        ranges: &[("5019", "5019", L16), ("4571", "4571", L16)],
        count: 6,
    },
    Issuer {
        name: "InterPayment",
        ranges: &[("636", "636", L16_19)],
        count: 4,
    },
    Issuer {
        name: "InstaPayment",
        ranges: &[("637", "639", L16)],
        count: 4,
    },
    Issuer {
        name: "UzCard",
        ranges: &[("8600", "8600", L16)],
        count: 4,
    },
    Issuer {
        name: "Humo",
        ranges: &[("9860", "9860", L16)],
        count: 4,
    },
    Issuer {
        name: "LankaPay",
        ranges: &[("357111", "357111", L16)],
        count: 4,
    },
];

/// The groups a card of `length` digits is printed in (Amex and Diners
/// by their own layouts, the rest in fours with a short tail).
pub fn customary_groups(issuer: &str, length: usize) -> &'static [usize] {
    match (issuer, length) {
        ("American Express", 15) => &[4, 6, 5],
        (_, 14) => &[4, 6, 4],
        (_, 15) => &[4, 6, 5],
        (_, 13) => &[4, 3, 3, 3],
        _ => &[4, 4, 4, 4, 4],
    }
}

/// A number of `issuer`: a prefix drawn from one of its ranges, random
/// digits, the Luhn digit.
pub fn number(rng: &mut Rng, issuer: &Issuer) -> String {
    let &(low, high, lengths) = rng.pick(issuer.ranges);
    let (lo, hi): (u64, u64) = (low.parse().expect("digits"), high.parse().expect("digits"));
    let prefix = format!("{:0width$}", lo + rng.below(hi - lo + 1), width = low.len());
    let length = *rng.pick(lengths);
    let mut digits = prefix.into_bytes();
    while digits.len() < length - 1 {
        digits.push(rng.digit());
    }
    digits.push(luhn_digit(&digits));
    String::from_utf8(digits).expect("digits")
}

/// How the number is written: solid, its customary groups with a space,
/// dash or dot, or plain fours (how some forms lay out any length).
pub fn written(rng: &mut Rng, issuer: &str, number: &str) -> String {
    match rng.below(20) {
        0..=5 => number.to_string(),
        6..=12 => grouped(number, customary_groups(issuer, number.len()), " "),
        13..=16 => grouped(number, customary_groups(issuer, number.len()), "-"),
        17 => grouped(number, customary_groups(issuer, number.len()), "."),
        _ => grouped(number, &[4, 4, 4, 4, 4], " "),
    }
}

/// Every issuer's numbers, in languages dealt round.
pub fn values(rng: &mut Rng) -> Vec<Value> {
    let mut out = Vec::new();
    for issuer in ISSUERS {
        for _ in 0..issuer.count {
            let n = number(rng, issuer);
            out.push(Value {
                kind: Kind::CreditCard,
                text: written(rng, issuer.name, &n),
                origin: issuer.name,
                lang: *rng.pick(&Lang::ALL),
                after: String::new(),
            });
        }
    }
    out
}

/// Whether `digits` (solid) lies in one of `issuer`'s ranges at one of its
/// lengths, for the set's own check.
pub fn in_range(issuer: &Issuer, digits: &str) -> bool {
    issuer.ranges.iter().any(|&(low, high, lengths)| {
        let head = &digits[..low.len()];
        lengths.contains(&digits.len()) && low <= head && head <= high
    })
}
