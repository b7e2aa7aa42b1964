//! The national writings of telephone numbers reported on their shape
//! alone, without `+` or a phone word, from each country's numbering plan:
//! how many digits a number has, which digits lead its mobile and
//! geographic ranges, whether a trunk prefix is dialed before it, and how
//! its groups are customarily written (area codes in parentheses, a slash
//! after the area code, spaces, dashes, dots between pairs).
//!
//! - With a trunk `0`: [`trunk`](super::trunk).
//! - Without one ([`NO_TRUNK`]): Spain's, Portugal's, Poland's, Czechia's
//!   and Peru's nine digits, Italy's, Greece's and Colombia's mobiles,
//!   India's mobiles, China's, Brazil's and Mexico's area codes and ten
//!   or eleven digits, Chile's nine, Australia's 1300 and 1800 numbers,
//!   Norway's eight-digit mobiles in their grouping (the other eight-digit
//!   writings need a phone word: [`super::short_local`]); and Russia's and Kazakhstan's, whose trunk prefix is `8`
//!   (`8 (495) 123-45-67`), with it or without.
//!
//! Dots separate pairs only: elsewhere they write versions and thousands.

use super::Groups;

/// A national number of a country that dials no trunk prefix, in one of
/// the layouts reported on their own (the module's docs): `lens`, `seps`
/// and `d` are the groups' lengths, the separators before them and the
/// digits.
pub(super) fn without_trunk(lens: &[usize], seps: &[u8], d: &[u8]) -> bool {
    if seps.contains(&b'.') || seps.contains(&b'/') {
        return false;
    }
    NO_TRUNK
        .iter()
        .any(|plan| plan.lens == lens && (plan.lead)(d) && plan.seps.allow(seps))
}

/// A layout of a country that dials no trunk prefix.
struct Plan {
    /// The digits of each group.
    lens: &'static [usize],
    /// Whether the number's leading digits open a range of the plan.
    lead: fn(&[u8]) -> bool,
    seps: Seps,
}

/// How the groups are separated: as [`separators_ok`] has it, with the
/// first group in parentheses or not, or as a country writes them.
#[derive(Clone, Copy)]
pub(super) enum Seps {
    Plain,
    Parenthesized,
    Either,
    /// Spaces only.
    Spaced,
    /// Brazil's: the area code in parentheses or not, then a space (none
    /// after parentheses), the number's groups by spaces, the last by one
    /// of `last` (`(11) 9 1234-5678`).
    Brazil {
        last: &'static [u8],
    },
    /// An area code, in parentheses or not, after a trunk group of its
    /// own if `trunk`, then groups by spaces or dashes, where the pairs at
    /// the end may be dashed after spaces (`8 (495) 123-45-67`,
    /// `8 912 345-67-89`, `0 532 123 45 67`, `(495) 123-45-67`,
    /// `912 345-67-89`). Without the trunk a dash after the area code is
    /// not taken: `521-123-45-67` is how Poland writes its tax numbers.
    AreaThenPairs {
        trunk: bool,
    },
}

impl Seps {
    pub(super) const AREA_AFTER_TRUNK: Seps = Seps::AreaThenPairs { trunk: true };

    pub(super) fn allow(self, seps: &[u8]) -> bool {
        let paren = seps[0] == b'(';
        match self {
            Seps::Plain => !paren && separators_ok(seps),
            Seps::Parenthesized => paren && separators_ok(seps),
            Seps::Either => separators_ok(seps),
            Seps::Spaced => !paren && seps[1..].iter().all(|&s| s == b' '),
            Seps::Brazil { last: lasts } => {
                let (&last, middle) = seps[1..].split_last().expect("two groups");
                let after_area = if paren { 0 } else { b' ' };
                let middle_ok = middle.split_first().is_none_or(|(&first, others)| {
                    (first == b' ' || first == after_area) && others.iter().all(|&s| s == b' ')
                });
                let last_ok = lasts.contains(&last) || (seps.len() == 2 && last == after_area);
                middle_ok && last_ok
            }
            Seps::AreaThenPairs { trunk } => area_then_pairs(seps, trunk),
        }
    }
}

/// [`Seps::AreaThenPairs`].
fn area_then_pairs(seps: &[u8], trunk: bool) -> bool {
    // The separator before the area code, the one after it, the others.
    let s = if trunk { &seps[1..] } else { seps };
    let [before, after, ref rest @ ..] = *s else {
        return false;
    };
    let paren = before == b'(';
    let before_ok = matches!(
        (trunk, before),
        (true, b' ' | b'-' | b'(') | (false, 0 | b'(')
    );
    let after_ok = match after {
        b' ' => true,
        b'-' => trunk || paren,
        0 => paren,
        _ => false,
    };
    let rest_ok = rest
        .first()
        .is_none_or(|&first| matches!(first, b' ' | b'-') && rest.iter().all(|&r| r == first));
    // Dashes do not give way to spaces, nor a dash after the trunk to
    // anything else (`8-912-345 67 89`).
    let dashes_hold =
        (after != b'-' || rest.iter().all(|&r| r == b'-')) && (before != b'-' || after == b'-');
    before_ok && after_ok && rest_ok && dashes_hold
}

/// The layouts of the countries that dial no trunk prefix.
const NO_TRUNK: &[Plan] = &[
    // Nine digits in threes: Spain's from 6 to 9 (`912 345 678`), Poland's
    // mobiles from 4 to 8 (`512 345 678`), Portugal's (`912 345 678`,
    // `212 345 678`), Czechia's (`601 123 456`, `221 123 456`), Peru's
    // mobiles (`912 345 678`); not an amount in thousands (`250 000 000`)
    // nor a series of sizes (`256 512 768`, `300 400 500`).
    plan(&[3, 3, 3], Seps::Plain, |d| {
        d[0] >= 2 && d[6..] != [0, 0, 0] && !triple_steps(d)
    }),
    // Spain's `612 34 56 78` and `93 123 45 67`; Poland's fixed lines
    // after a two-digit area code (`22 123 45 67`, `(22) 123 45 67`).
    plan(&[3, 2, 2, 2], Seps::Plain, |d| d[0] >= 6),
    plan(&[2, 3, 2, 2], Seps::Either, |_| true),
    // Ten digits from 3: Italy's mobiles (`312 345 6789`, `347 1234567`),
    // Colombia's (`300 123 4567`, `310 1234567`).
    plan(&[3, 3, 4], Seps::Plain, |d| d[0] == 3),
    plan(&[3, 7], Seps::Plain, |d| d[0] == 3),
    // Colombia's fixed lines: 60, the area's digit, seven digits
    // (`601 2345678`, `(601) 2345678`; `601 234 5678` is written as in the
    // North American plan, which finds it).
    plan(&[3, 7], Seps::Either, |d| d[..2] == [6, 0]),
    // Greece: ten digits, fixed lines from 2 and an area code of 2 to 4
    // (`210 123 4567`, `2310 123456`), mobiles from 69 (`694 123 4567`).
    plan(&[3, 3, 4], Seps::Plain, greece),
    plan(&[3, 7], Seps::Plain, greece),
    plan(&[4, 6], Seps::Plain, |d| greece(d) && d[0] == 2),
    // India's mobiles: two fives from 6 to 9, with a space (`98765 43210`;
    // with a dash, `60000-64999` is as likely a range).
    plan(&[5, 5], Seps::Spaced, |d| d[0] >= 6),
    // China's mobiles: eleven digits from 13 to 19 (`138 0013 8000`).
    plan(&[3, 4, 4], Seps::Plain, |d| d[0] == 1 && d[1] >= 3),
    // Mexico: ten digits; the area codes of Mexico City, Guadalajara and
    // Monterrey have two (`55 1234 5678`), the others three, written as in
    // the North American plan (`222 229 5500`), which finds them.
    plan(&[2, 4, 4], Seps::Either, mexico_two_digit_area),
    // Brazil: a two-digit area code, then eight digits from 2 to 5 (fixed
    // lines: `(11) 3456-7890`, `11 3456-7890`) or nine from 9 (mobiles:
    // `(11) 91234-5678`, `11 91234 5678`, `(11) 9 1234-5678`).
    plan(&[2, 4, 4], Seps::Parenthesized, |_| true),
    plan(&[2, 4, 4], BRAZIL_DASHED, |d| {
        brazil_area(d) && (2..=5).contains(&d[2])
    }),
    plan(&[2, 5, 4], BRAZIL, |d| brazil_area(d) && d[2] == 9),
    plan(&[2, 1, 4, 4], BRAZIL, |d| brazil_area(d) && d[2] == 9),
    plan(&[2, 9], Seps::Parenthesized, |d| {
        brazil_area(d) && d[2] == 9
    }),
    // Chile: nine digits; mobiles `9 1234 5678`, Santiago's
    // `2 2123 4567` and `(2) 2123 4567`, the other areas' two digits in
    // parentheses (`(32) 212 3456`); Portugal's fixed lines in Lisbon and
    // Porto (`21 123 4567`).
    plan(&[1, 4, 4], Seps::Either, |d| d[0] == 9 || d[..2] == [2, 2]),
    plan(&[2, 3, 4], Seps::Parenthesized, brazil_area),
    plan(&[2, 3, 4], Seps::Spaced, |d| d[0] == 2 && d[1] != 0),
    // Australia's national numbers with no area (`1300 123 456`).
    plan(&[4, 3, 3], Seps::Plain, australia_13_18),
    plan(&[4, 6], Seps::Plain, australia_13_18),
    // Russia and Kazakhstan: ten digits after the trunk `8`, an area code
    // of three from 3, 4, 8 or 9 (Russia) or 7 (Kazakhstan), in
    // parentheses or not, then the number in pairs after a three or whole
    // (`8 (495) 123-45-67`, `8 912 345-67-89`, `8-800-555-35-35`,
    // `8 (727) 123 4567`, `8 (8452) 12-34-56`); without the trunk, after
    // parentheses or a space (`(495) 123-45-67`, `912 345-67-89`), as are
    // Turkey's mobiles (`532 123 45 67`).
    plan(&[1, 3, 3, 2, 2], RUSSIA_TRUNK, russia),
    plan(&[1, 3, 3, 4], RUSSIA_TRUNK, russia),
    plan(&[1, 3, 7], RUSSIA_TRUNK, russia),
    plan(&[1, 4, 2, 2, 2], RUSSIA_TRUNK, russia),
    plan(&[3, 3, 2, 2], RUSSIA, |d| {
        matches!(d[0], 3 | 4 | 5 | 7 | 8 | 9)
    }),
    // Eight digits: Hong Kong's (fixed lines from 2 and 3, mobiles from 5,
    // 6 and 9), Singapore's (from 3, 6, 8 and 9), Denmark's and Norway's
    // (from 2 to 9). Eight digits are as often two numbers or an id: two
    // fours (`2048 4096`, `2560 1440`, ports, sizes) and four pairs are
    // everyday data in code and logs, so those, solid and dashed need a
    // phone word ([`super::short_local`]). Norway's mobiles (`412 34
    // 567`) are written in a grouping of their own.
    plan(&[3, 2, 3], Seps::Spaced, |d| matches!(d[0], 4 | 9)),
    // Hong Kong's and Macau's country codes, and Singapore's, without the
    // `+` (`(852) 9123 4567`, `852 9123 4567`, `65 6123 4567`).
    plan(&[3, 4, 4], Seps::Either, |d| {
        matches!(d[..3], [8, 5, 2 | 3])
    }),
    plan(&[2, 4, 4], Seps::Spaced, |d| d[..2] == [6, 5]),
];

/// Russia's and Kazakhstan's separators, with the trunk `8` and without.
const RUSSIA_TRUNK: Seps = Seps::AREA_AFTER_TRUNK;
const RUSSIA: Seps = Seps::AreaThenPairs { trunk: false };

/// Brazil's mobiles end after a dash or a space; its fixed lines after a
/// dash (`12 3456 7890` is as likely an id).
const BRAZIL: Seps = Seps::Brazil { last: b" -" };
const BRAZIL_DASHED: Seps = Seps::Brazil { last: b"-" };

const fn plan(lens: &'static [usize], seps: Seps, lead: fn(&[u8]) -> bool) -> Plan {
    Plan { lens, lead, seps }
}

/// Brazil's area codes: two digits, neither 0.
fn brazil_area(d: &[u8]) -> bool {
    d[0] != 0 && d[1] != 0
}

/// Mexico's two-digit area codes.
fn mexico_two_digit_area(d: &[u8]) -> bool {
    matches!((d[0], d[1]), (5, 5 | 6) | (3, 3) | (8, 1))
}

/// Greece's ten digits: fixed lines from 2 then an area digit from 1 to
/// 8, mobiles from 69.
fn greece(d: &[u8]) -> bool {
    (d[0] == 2 && (1..=8).contains(&d[1])) || d[..2] == [6, 9]
}

/// The trunk `8` of Russia and Kazakhstan, then an area code from 3, 4, 8
/// or 9 (Russia) or 7 (Kazakhstan).
fn russia(d: &[u8]) -> bool {
    d[0] == 8 && matches!(d[1], 3 | 4 | 7 | 8 | 9)
}

/// Whether eight digits are two years of this or the last century
/// (`2019 2020`).
pub(super) fn two_years(d: &[u8]) -> bool {
    let year = |y: &[u8]| matches!(y[..2], [1, 9] | [2, 0]);
    year(&d[..4]) && year(&d[4..])
}

/// Whether four pairs of digits are a series, each the last and the same
/// step (`20 30 40 50`, `23 45 67 89`, `33 33 33 33`).
pub(super) fn even_steps(d: &[u8]) -> bool {
    let pair = |k: usize| i16::from(d[2 * k]) * 10 + i16::from(d[2 * k + 1]);
    let step = pair(1) - pair(0);
    (2..4).all(|k| pair(k) - pair(k - 1) == step)
}

/// Whether three groups of three digits are a series, each the last and
/// the same step (`256 512 768`, `300 400 500`, `555 555 555`).
fn triple_steps(d: &[u8]) -> bool {
    let triple = |k: usize| {
        let t = &d[3 * k..3 * k + 3];
        i32::from(t[0]) * 100 + i32::from(t[1]) * 10 + i32::from(t[2])
    };
    triple(1) - triple(0) == triple(2) - triple(1)
}

/// Australia's 1300 and 1800 numbers.
fn australia_13_18(d: &[u8]) -> bool {
    matches!(d[..4], [1, 3 | 8, 0, 0])
}

/// Whether every group starts with 0: code points (`0391 0342 0345`,
/// `0046 0066 0069`), not a telephone number.
pub(super) fn all_zero_led(g: &Groups) -> bool {
    let mut group_start = 0;
    g.lens[..g.count].iter().all(|&l| {
        let zero = g.digits[group_start] == 0;
        group_start += l;
        zero
    })
}

/// The separators before each group but the first: one kind throughout,
/// but the first may differ (after the area code, or after an area code
/// in parentheses); a slash only after the area code; no parentheses
/// after the first group.
pub(super) fn separators_ok(seps: &[u8]) -> bool {
    if seps.len() < 2 || seps[1..].contains(&b'(') || seps[2..].contains(&b'/') {
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
    // A change after the area code from a dash, a space or a slash to a
    // dash or a space.
    tail.first()
        .is_none_or(|&t| t == first || (t != b'.' && first != b'.'))
}
