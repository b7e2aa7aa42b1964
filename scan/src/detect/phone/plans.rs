//! The national writings of telephone numbers reported on their shape
//! alone, without `+` or a phone word, from each country's numbering plan:
//! how many digits a number has, which digits lead its mobile and
//! geographic ranges, whether a trunk `0` is dialed before it, and how its
//! groups are customarily written (area codes in parentheses, a slash after
//! the area code, spaces, dashes, dots between pairs).
//!
//! - With a trunk `0` (the UK, Germany, France, the Netherlands, Italy's
//!   fixed lines, India, Japan, Australia, Switzerland, South Africa): 9 to
//!   12 digits, an area code of 2 to 5 digits (or in parentheses, or
//!   before a slash), then groups of 3 to 8, which trailing pairs may
//!   follow (`044 668 18 00`, `030 12345-67`); or five pairs (France's
//!   `01 23 45 67 89`); Japan's three dashed groups, whose middle may be of
//!   1 to 4 digits or in parentheses (`0467-12-3456`, `03(1234)5678`);
//!   India's mobiles after a `0` (`098765 43210`).
//! - Without one ([`NO_TRUNK`]): Spain's and Poland's nine digits, Italy's
//!   mobiles, India's mobiles, Brazil's and Mexico's area codes and ten or
//!   eleven digits, Australia's 1300 and 1800 numbers.
//!
//! Dots separate pairs only: elsewhere they write versions and thousands.

use super::Groups;

/// A national number in one of the layouts reported on their own (the
/// module's docs).
pub(super) fn national_layout(g: &Groups) -> bool {
    let (lens, seps, d) = (&g.lens[..g.count], &g.seps[..g.count], g.digits());
    if g.count < 2 {
        return false;
    }
    if d[0] == 0 {
        return with_trunk(g, lens, seps, d);
    }
    if seps.contains(&b'.') || seps.contains(&b'/') {
        return false;
    }
    NO_TRUNK
        .iter()
        .any(|plan| plan.lens == lens && (plan.lead)(d) && plan.seps.allow(seps))
}

/// A number dialed with a trunk `0`.
fn with_trunk(g: &Groups, lens: &[usize], seps: &[u8], d: &[u8]) -> bool {
    let n = d.len();
    if d[1] == 0 || !(9..=12).contains(&n) {
        return false;
    }
    let pairs = g.count == 5 && lens.iter().all(|&l| l == 2) && !stepping(d);
    if pairs && separators_ok(seps) {
        return true;
    }
    if seps.contains(&b'.') {
        return false;
    }
    if japanese(lens, seps, n) {
        return !all_zero_led(g);
    }
    // India's mobiles, ten digits from 6 to 9, after the trunk `0`.
    if n == 11 && (6..=9).contains(&d[1]) && matches!(lens, [1, 5, 5] | [6, 5]) {
        return separators_ok(seps) && !seps.contains(&b'/');
    }
    let slash = seps[1] == b'/';
    let area = (2..=5).contains(&lens[0]);
    // Groups of 3 to 8, then pairs (Switzerland's `044 668 18 00`,
    // Germany's extension `030 12345-67`); after a slash, any of 2 to 8
    // (`030 / 12 34 56 78`).
    let first_long = lens[1..]
        .iter()
        .take_while(|&&l| (3..=8).contains(&l))
        .count();
    let rest = &lens[1 + first_long..];
    let groups = if slash {
        lens[1..].iter().all(|l| (2..=8).contains(l))
    } else {
        first_long > 0 && rest.iter().all(|&l| l == 2)
    };
    // Not a US ZIP+4 code (`02110-1301`) nor a range (`01000-09999`).
    let zip_or_range = matches!(lens, [5, 4]) || (matches!(lens, [5, 5]) && seps[1] == b'-');
    area && groups && !zip_or_range && !all_zero_led(g) && separators_ok(seps)
}

/// Japan's writing: three groups, dashed or the middle one in parentheses,
/// the area code with its trunk `0` of 2 to 5 digits, the local exchange of
/// 1 to 4, the subscriber's 4; ten digits.
fn japanese(lens: &[usize], seps: &[u8], n: usize) -> bool {
    let [area, exchange, 4] = *lens else {
        return false;
    };
    let dashed = seps[1..] == [b'-', b'-'];
    let parenthesized = seps[1..] == [b'(', 0];
    n == 10 && (2..=5).contains(&area) && (1..=4).contains(&exchange) && (dashed || parenthesized)
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
enum Seps {
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
}

impl Seps {
    fn allow(self, seps: &[u8]) -> bool {
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
        }
    }
}

/// The layouts of the countries that dial no trunk prefix.
const NO_TRUNK: &[Plan] = &[
    // Spain: nine digits from 6 to 9 (`912 345 678`, `612 34 56 78`,
    // `93 123 45 67`); Poland: nine digits, mobiles from 4 to 8
    // (`512 345 678`), fixed lines after a two-digit area code
    // (`22 123 45 67`, `(22) 123 45 67`).
    plan(&[3, 3, 3], Seps::Plain, |d| d[0] >= 4),
    plan(&[3, 2, 2, 2], Seps::Plain, |d| d[0] >= 6),
    plan(&[2, 3, 2, 2], Seps::Either, |_| true),
    // Italy's mobiles: ten digits from 3 (`312 345 6789`, `347 1234567`).
    plan(&[3, 3, 4], Seps::Plain, |d| d[0] == 3),
    plan(&[3, 7], Seps::Plain, |d| d[0] == 3),
    // India's mobiles: two fives from 6 to 9, with a space (`98765 43210`;
    // with a dash, `60000-64999` is as likely a range).
    plan(&[5, 5], Seps::Spaced, |d| d[0] >= 6),
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
    // Australia's national numbers with no area (`1300 123 456`).
    plan(&[4, 3, 3], Seps::Plain, australia_13_18),
    plan(&[4, 6], Seps::Plain, australia_13_18),
];

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
