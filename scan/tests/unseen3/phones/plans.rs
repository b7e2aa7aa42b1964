//! What a country's numbering plan holds as this set writes it: the
//! country code, the trunk prefix dialled at home, the lengths of the
//! significant number, mobile and fixed-line numbers as templates (groups
//! as people split them), and the ways the country writes them at home
//! and abroad. The fifty-eight countries are in `europe` and `world`.

use super::{Intl, Nat};
use crate::unseen3::Lang;

pub struct Country {
    pub code: &'static str,
    pub dial: &'static str,
    /// The national trunk prefix as written ("" where there is none).
    pub trunk: &'static str,
    /// Lengths the significant number (after the country code) may have.
    pub nsn: &'static [usize],
    pub langs: &'static [Lang],
    /// Significant numbers as `fill` templates, groups split by spaces.
    /// A leading `^`: written at home without the trunk prefix (Indian and
    /// Chinese mobiles); `!`: written only in international form.
    pub plans: &'static [&'static str],
    pub national: &'static [Nat],
    pub intl: &'static [Intl],
}

use Intl::{Plus, PlusSolid, PlusZero, Zeros};

pub const EUROPE_INTL: &[Intl] = &[Plus, Plus, PlusZero, Zeros, PlusSolid];
pub const PLAIN_INTL: &[Intl] = &[Plus, Plus, Zeros, PlusSolid];

macro_rules! country {
    ($code:literal, $dial:literal, $trunk:literal, $nsn:expr, $langs:expr, $plans:expr, $nat:expr, $intl:expr) => {
        Country {
            code: $code,
            dial: $dial,
            trunk: $trunk,
            nsn: $nsn,
            langs: $langs,
            plans: $plans,
            national: $nat,
            intl: $intl,
        }
    };
}

pub fn countries() -> Vec<Country> {
    let mut all = super::europe::countries();
    all.extend(super::world::countries());
    all
}
