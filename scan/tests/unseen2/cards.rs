//! Payment cards of every major scheme and several national ones, from
//! their issuers' identification number ranges and lengths (12 to 19),
//! Luhn-valid, written solid, in groups of four joined by spaces, dashes
//! or (rarely) dots, and in each length's own printed grouping (Amex
//! 4-6-5, Diners 4-6-4, UATP 4-5-6, 13 digits 4-3-3-3, UnionPay's 19 as
//! 6-13).

use sluice_scan::Kind;

use super::{Lang, Value};
use crate::common::{Rng, grouped, luhn_digit};

/// One scheme: its ranges (lowest and highest prefix of one width, and
/// the lengths its cards have there; a length listed twice is drawn
/// twice as often), how many values it gets, the languages around them.
pub struct Issuer {
    pub name: &'static str,
    pub ranges: &'static [(&'static str, &'static str, &'static [usize])],
    pub count: usize,
    pub langs: &'static [Lang],
}

const ANY: &[Lang] = &Lang::ALL;

pub const ISSUERS: &[Issuer] = &[
    Issuer {
        name: "Visa",
        ranges: &[("4", "4", &[16])],
        count: 16,
        langs: ANY,
    },
    Issuer {
        name: "Visa 13/19",
        ranges: &[("4", "4", &[13, 19])],
        count: 4,
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
        count: 4,
        langs: ANY,
    },
    Issuer {
        name: "Mastercard 51-55",
        ranges: &[("51", "55", &[16])],
        count: 12,
        langs: ANY,
    },
    Issuer {
        name: "Mastercard 2-series",
        ranges: &[("2221", "2720", &[16])],
        count: 10,
        langs: ANY,
    },
    Issuer {
        name: "American Express",
        ranges: &[("34", "34", &[15]), ("37", "37", &[15])],
        count: 10,
        langs: ANY,
    },
    Issuer {
        name: "Discover",
        ranges: &[
            ("6011", "6011", &[16, 16, 16, 19]),
            ("644", "649", &[16]),
            ("65", "65", &[16]),
        ],
        count: 8,
        langs: &[Lang::En, Lang::Es],
    },
    Issuer {
        name: "Diners Club",
        ranges: &[
            ("300", "305", &[14]),
            ("36", "36", &[14]),
            ("38", "39", &[14, 16]),
        ],
        count: 8,
        langs: ANY,
    },
    Issuer {
        name: "JCB",
        ranges: &[("3528", "3589", &[16, 16, 16, 19])],
        count: 8,
        langs: &[Lang::Ja, Lang::Ja, Lang::En, Lang::Ko, Lang::Zh],
    },
    Issuer {
        name: "UnionPay",
        ranges: &[
            ("621", "621", &[16, 19]),
            ("622", "625", &[16, 17, 18, 19]),
            ("6282", "6288", &[16, 19]),
        ],
        count: 12,
        langs: &[Lang::Zh, Lang::Zh, Lang::En, Lang::Ru, Lang::Id],
    },
    Issuer {
        name: "Maestro",
        ranges: &[
            ("5018", "5018", &[12, 13, 14, 15, 16, 17, 18, 19]),
            ("5020", "5020", &[12, 13, 14, 15, 16, 17, 18, 19]),
            ("5038", "5038", &[12, 13, 14, 15, 16, 17, 18, 19]),
            ("5893", "5893", &[12, 13, 14, 15, 16, 17, 18, 19]),
            ("6304", "6304", &[12, 13, 14, 15, 16, 17, 18, 19]),
            ("6759", "6759", &[12, 13, 14, 15, 16, 17, 18, 19]),
            ("6761", "6763", &[12, 13, 14, 15, 16, 17, 18, 19]),
        ],
        count: 12,
        langs: &[Lang::En, Lang::De, Lang::Nl, Lang::Fr, Lang::It, Lang::Es],
    },
    Issuer {
        name: "Mir",
        ranges: &[("2200", "2204", &[16, 16, 16, 19])],
        count: 6,
        langs: &[Lang::Ru],
    },
    Issuer {
        name: "RuPay",
        ranges: &[
            ("508500", "508999", &[16]),
            ("606985", "607984", &[16]),
            ("608001", "608500", &[16]),
            ("652150", "653149", &[16]),
        ],
        count: 6,
        langs: &[Lang::Hi, Lang::En],
    },
    Issuer {
        name: "Elo",
        ranges: &[
            ("401178", "401179", &[16]),
            ("431274", "431274", &[16]),
            ("438935", "438935", &[16]),
            ("451416", "451416", &[16]),
            ("457393", "457393", &[16]),
            ("504175", "504175", &[16]),
            ("506699", "506778", &[16]),
            ("509000", "509999", &[16]),
            ("627780", "627780", &[16]),
            ("636297", "636297", &[16]),
            ("636368", "636368", &[16]),
            ("650031", "650033", &[16]),
            ("650035", "650051", &[16]),
            ("650405", "650439", &[16]),
            ("650485", "650538", &[16]),
            ("650541", "650598", &[16]),
            ("650700", "650718", &[16]),
            ("650720", "650727", &[16]),
            ("650901", "650978", &[16]),
            ("651652", "651679", &[16]),
            ("655000", "655019", &[16]),
            ("655021", "655058", &[16]),
        ],
        count: 6,
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
        count: 4,
        langs: &[Lang::Pt],
    },
    Issuer {
        name: "Troy",
        ranges: &[("9792", "9792", &[16])],
        count: 4,
        langs: &[Lang::Tr],
    },
    Issuer {
        name: "Verve",
        ranges: &[
            ("506099", "506198", &[16, 19]),
            ("650002", "650027", &[16, 18, 19]),
            ("507865", "507964", &[16, 18, 19]),
        ],
        count: 5,
        langs: &[Lang::En],
    },
    Issuer {
        name: "BC Card",
        ranges: &[("6541", "6541", &[16]), ("6556", "6556", &[16])],
        count: 3,
        langs: &[Lang::Ko],
    },
    Issuer {
        name: "Dankort",
        ranges: &[("5019", "5019", &[16])],
        count: 3,
        langs: &[Lang::En],
    },
    Issuer {
        name: "UATP",
        ranges: &[("1", "1", &[15])],
        count: 3,
        langs: &[Lang::En, Lang::De],
    },
    Issuer {
        name: "UzCard",
        ranges: &[("8600", "8600", &[16])],
        count: 2,
        langs: &[Lang::Ru],
    },
    Issuer {
        name: "Humo",
        ranges: &[("9860", "9860", &[16])],
        count: 2,
        langs: &[Lang::Ru],
    },
    Issuer {
        name: "Napas",
        ranges: &[("9704", "9704", &[16, 19])],
        count: 3,
        langs: &[Lang::En],
    },
    Issuer {
        name: "Belkart",
        ranges: &[("9112", "9112", &[16])],
        count: 2,
        langs: &[Lang::Ru],
    },
];

/// Whether `digits` lies in one of the issuer's ranges at its length.
pub fn in_range(issuer: &Issuer, digits: &str) -> bool {
    issuer.ranges.iter().any(|&(low, high, lengths)| {
        lengths.contains(&digits.len())
            && digits.len() >= low.len()
            && (low..=high).contains(&&digits[..low.len()])
    })
}

/// The grouping printed on a card of this length.
fn own_grouping(issuer: &Issuer, length: usize) -> &'static [usize] {
    match (issuer.name, length) {
        ("UATP", 15) => &[4, 5, 6],
        (_, 15) => &[4, 6, 5],
        (_, 14) => &[4, 6, 4],
        (_, 13) => &[4, 3, 3, 3],
        ("UnionPay", 19) => &[6, 13],
        _ => &[4, 4, 4, 4, 4],
    }
}

#[derive(Clone, Copy)]
enum Style {
    Solid,
    Fours(&'static str),
    Own(&'static str),
}

/// The writings in turn: groups of four with spaces most, dots rarely.
const STYLES: [Style; 10] = [
    Style::Fours(" "),
    Style::Solid,
    Style::Own(" "),
    Style::Fours("-"),
    Style::Fours(" "),
    Style::Own("-"),
    Style::Solid,
    Style::Fours("."),
    Style::Own(" "),
    Style::Fours(" "),
];

/// A Luhn-valid number of `length` digits starting in `low..=high`.
fn number(rng: &mut Rng, low: &str, high: &str, length: usize) -> String {
    let (lo, hi): (u64, u64) = (
        low.parse().expect("a prefix"),
        high.parse().expect("a prefix"),
    );
    let mut digits = format!("{:0width$}", lo + rng.below(hi - lo + 1), width = low.len());
    while digits.len() < length - 1 {
        digits.push(rng.digit() as char);
    }
    let check = luhn_digit(digits.as_bytes());
    digits.push(check as char);
    digits
}

pub fn values(rng: &mut Rng) -> Vec<Value> {
    let mut values = Vec::new();
    for (k, issuer) in ISSUERS.iter().enumerate() {
        for i in 0..issuer.count {
            let &(low, high, lengths) = rng.pick(issuer.ranges);
            let length = lengths[i % lengths.len()];
            let digits = number(rng, low, high, length);
            let text = match STYLES[(i + k) % STYLES.len()] {
                Style::Solid => digits,
                Style::Fours(sep) => grouped(&digits, &[4; 5], sep),
                Style::Own(sep) => grouped(&digits, own_grouping(issuer, length), sep),
            };
            values.push(Value {
                kind: Kind::CreditCard,
                text,
                origin: issuer.name,
                lang: *rng.pick(issuer.langs),
                after: String::new(),
            });
        }
    }
    values
}
