//! National numbers dialed with a trunk `0`, as the plans that have one
//! write them: the UK, Germany, France, the Netherlands, Belgium, Austria,
//! Switzerland, Italy's fixed lines, Ireland, Sweden, Finland, Turkey,
//! Israel, the UAE, Saudi Arabia, Egypt, South Africa, Nigeria, Kenya,
//! India, Pakistan, China, Japan, South Korea, Taiwan, the Philippines,
//! Indonesia, Malaysia, Thailand, Vietnam, Australia, New Zealand, Peru
//! and Argentina.
//!
//! - An area code of 2 to 5 digits with its `0` (or in parentheses, or
//!   before a slash), then groups of 3 to 8, which trailing pairs may
//!   follow (`020 7946 0958`, `044 668 18 00`, `030 12345-67`,
//!   `010-1234-5678`); or three pairs after an area code of three, or of
//!   four for Belgium's mobiles and after Sweden's dash (`050 12 34 56`,
//!   `0470 12 34 56`, `031-12 34 56`, and `08-12 34 56`, eight digits
//!   after the dash only); 9 to 12 digits.
//! - Five pairs (France's `01 23 45 67 89`).
//! - Japan's three dashed groups, whose middle may be of 1 to 4 digits or
//!   in parentheses (`0467-12-3456`, `03(1234)5678`).
//! - India's mobiles after a `0` (`098765 43210`).
//! - The trunk apart, before an area code of three (Turkey's
//!   `0 532 123 45 67` and `0 (532) 123 45 67`, France's
//!   `0 800 123 456`) or Thailand's fours (`0-2123-4567`).
//! - Argentina's mobiles, `15` between the area code and the number
//!   (`011 15-1234-5678`, `(0351) 15-412-3456`): thirteen digits.
//! - Hungary's trunk `06`, then Budapest's `1` or an area code of two,
//!   then the number in 3-4 or 3-3 (`06 1 234 5678`, `06 30 123 4567`,
//!   `06-20/123-4567`, `06 62 123 456`).
//! - Dots only between pairs, in Vietnam's three groups (`0912.345.678`,
//!   `024.3123.4567`; not a Belgian company number, `0403.170.701`), and
//!   in Belgium's after a slash (`0470/12.34.56`): elsewhere they write
//!   versions and thousands.

use super::Groups;
use super::plans::{Seps, all_zero_led, separators_ok};

/// A number dialed with a trunk `0` (`d[0]`), in one of the module's
/// layouts.
pub(super) fn with_trunk(g: &Groups, lens: &[usize], seps: &[u8], d: &[u8]) -> bool {
    let n = d.len();
    if d[1] == 0 || (all_zero_led(g) && g.count != 5) {
        return false;
    }
    if trunk_apart(lens, seps, d) || argentine_mobile(lens, seps, d) || hungarian(lens, seps, d) {
        return true;
    }
    if n == 8 {
        // Stockholm's `08-12 34 56`: the dash, then pairs by spaces.
        return lens == [2, 2, 2, 2] && seps[1..] == [b'-', b' ', b' '];
    }
    if !(9..=12).contains(&n) {
        return false;
    }
    let pairs = g.count == 5 && lens.iter().all(|&l| l == 2) && !stepping(d);
    if pairs && separators_ok(seps) {
        return true;
    }
    if seps.contains(&b'.') {
        return dotted(lens, seps, d);
    }
    if japanese(lens, seps, n) {
        return true;
    }
    // India's mobiles, ten digits from 6 to 9, after the trunk `0`.
    if n == 11 && (6..=9).contains(&d[1]) && matches!(lens, [1, 5, 5] | [6, 5]) {
        return separators_ok(seps) && !seps.contains(&b'/');
    }
    let slash = seps[1] == b'/';
    let area = (2..=5).contains(&lens[0]);
    // Groups of 3 to 8, then pairs (Switzerland's `044 668 18 00`,
    // Germany's extension `030 12345-67`); after a slash, any of 2 to 8
    // (`030 / 12 34 56 78`); or three pairs after an area code of 3
    // (Belgium's `050 12 34 56`, Sweden's `031-12 34 56`), or of 4 for
    // Belgium's mobiles and after Sweden's dash (`0470 12 34 56`,
    // `0523-12 34 56`; `0123 45 67 89` is as likely an id).
    let first_long = lens[1..]
        .iter()
        .take_while(|&&l| (3..=8).contains(&l))
        .count();
    let rest = &lens[1 + first_long..];
    let three_pairs = rest.len() == 3 && (lens[0] == 3 || d[1] == 4 || seps[1] == b'-');
    let groups = if slash {
        lens[1..].iter().all(|l| (2..=8).contains(l))
    } else {
        (first_long > 0 || three_pairs) && rest.iter().all(|&l| l == 2)
    };
    // Not a US ZIP+4 code (`02110-1301`) nor a range (`01000-09999`).
    let zip_or_range = matches!(lens, [5, 4]) || (matches!(lens, [5, 5]) && seps[1] == b'-');
    area && groups && !zip_or_range && separators_ok(seps)
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

/// The trunk `0` apart before an area code of three, in parentheses or
/// not, then the number as Turkey (`0 532 123 45 67`, `0 (212) 123 4567`)
/// or France's special numbers (`0 800 123 456`, `0 800 12 34 56`) write
/// it; or before Thailand's eight digits in fours (`0-2123-4567`).
/// (`0 30 1234567`, a German number with its trunk apart, is as likely a
/// list of figures.)
fn trunk_apart(lens: &[usize], seps: &[u8], d: &[u8]) -> bool {
    let n = d.len();
    let shape = match lens {
        [1, 3, 3, 2, 2] | [1, 3, 3, 4] | [1, 3, 7] | [1, 3, 3, 3] | [1, 3, 2, 2, 2] => {
            (10..=11).contains(&n)
        }
        // Thailand's fixed lines: `0-2123-4567`, `0 2123 4567`.
        [1, 4, 4] => (2..=7).contains(&d[1]) && seps[1] != b'(',
        _ => false,
    };
    shape && Seps::AREA_AFTER_TRUNK.allow(seps)
}

/// Argentina's mobiles dialed from within the country: the area code with
/// its `0` (2 to 4 digits after it), `15`, then the rest of ten digits in
/// groups of 2 to 4 or whole (`011 15-1234-5678`, `0351 15 412-3456`,
/// `(011) 15 4123-4567`).
fn argentine_mobile(lens: &[usize], seps: &[u8], d: &[u8]) -> bool {
    if d.len() != 13 || lens.len() < 3 || !(3..=5).contains(&lens[0]) || lens[1] != 2 {
        return false;
    }
    let fifteen = d[lens[0]..lens[0] + 2] == [1, 5];
    let rest_ok = lens[2..].iter().all(|l| (2..=4).contains(l)) || lens[2..] == [lens[2]];
    fifteen && rest_ok && separators_ok(seps) && !seps.contains(&b'/') && !seps.contains(&b'.')
}

/// Hungary's numbers after its trunk `06`: Budapest's `1` and seven
/// digits, or an area code of two (mobiles 20, 30, 31, 50, 70) and seven or
/// six, the groups by spaces or dashes throughout, but a slash after the
/// area code (`06-20/123-4567`).
fn hungarian(lens: &[usize], seps: &[u8], d: &[u8]) -> bool {
    let shape = match lens {
        [2, 1, 3, 4] => d[2] == 1,
        [2, 2, 3, 4] | [2, 2, 3, 3] => d[2] >= 2,
        _ => false,
    };
    if !shape || d[..2] != [0, 6] {
        return false;
    }
    let sep = seps[1];
    matches!(sep, b' ' | b'-') && (seps[2] == sep || seps[2] == b'/') && seps[3] == sep
}

/// Dots in a number with a trunk `0`: Vietnam's three groups
/// (`0912.345.678`, `091.234.5678`, `024.3123.4567`) dotted throughout,
/// or Belgium's pairs after a slash (`0470/12.34.56`, `02/123.45.67`).
fn dotted(lens: &[usize], seps: &[u8], d: &[u8]) -> bool {
    // Mobiles from 03, 05, 07, 08 and 09: Belgium's company numbers are
    // written `0403.170.701`, and pass a check modulo 97 that a phone
    // number seldom does.
    let vietnam = match lens {
        [4, 3, 3] => matches!(d[1], 3 | 5 | 7 | 8 | 9) && !belgian_company(d),
        [3, 3, 4] | [3, 4, 4] | [4, 3, 4] => true,
        _ => false,
    } && seps[1..].iter().all(|&s| s == b'.');
    let belgium = matches!(lens, [2..=4, 2, 2, 2] | [2..=3, 3, 2, 2])
        && seps[1] == b'/'
        && seps[2..].iter().all(|&s| s == b'.');
    vietnam || belgium
}

/// Whether ten digits are a Belgian company number: the last two are 97
/// less the first eight modulo 97.
fn belgian_company(d: &[u8]) -> bool {
    let head = d[..8].iter().fold(0u32, |n, &x| n * 10 + u32::from(x));
    let check = u32::from(d[8]) * 10 + u32::from(d[9]);
    check == 97 - head % 97
}

/// Whether the pairs of digits `d` holds count up or down by one or
/// repeat (`01 02 03 04 05`, a dump of bytes; `00 00 00 …`), which a
/// telephone number seldom does.
fn stepping(d: &[u8]) -> bool {
    let pair = |k: usize| i16::from(d[2 * k]) * 10 + i16::from(d[2 * k + 1]);
    let step = pair(1) - pair(0);
    step.abs() <= 1 && (2..d.len() / 2).all(|k| pair(k) - pair(k - 1) == step)
}
