//! North America, Europe, Russia, Ukraine and Turkey: the first half of
//! the numbering plans (see `plans`).

use super::plans::Country;
use super::{Intl, Nat};
use crate::unseen3::Lang;

use super::plans::{EUROPE_INTL, PLAIN_INTL};
use Intl::{ParenPlus, Plus, PlusDash, PlusParen, PlusSolid, Zeros};
use Nat::{AreaDash, Dash, Dot, Paren, ParenDash, RuParen, Slash, Solid, Space};

pub fn countries() -> Vec<Country> {
    vec![
        country!(
            "US",
            "1",
            "",
            &[10],
            &[Lang::En],
            &["{206|212|213|305|312|404|415|512|617|646|702|713|818|917} {2|3|4|5|6|7|8|9}## ####"],
            &[ParenDash, Dash, Dot, Space],
            &[PlusDash, PlusParen, Plus]
        ),
        country!(
            "CA",
            "1",
            "",
            &[10],
            &[Lang::En, Lang::Fr],
            &["{416|514|604|403|613|647|778|902} {2|3|4|5|6|7|8|9}## ####"],
            &[ParenDash, Dash, Dot],
            &[PlusDash, PlusParen]
        ),
        country!(
            "GB",
            "44",
            "0",
            &[10],
            &[Lang::En],
            &[
                "7{4|5|7|8|9}## %#####",
                "20 {3|7|8}### ####",
                "{113|114|117|121|131|141|151|161} %## ####",
                "1{223|332|603|792|872} %#####"
            ],
            &[Space, Space, Paren, Solid],
            EUROPE_INTL
        ),
        country!(
            "DE",
            "49",
            "0",
            &[9, 10, 11],
            &[Lang::De],
            &[
                "15{1|2|7|9} %#######",
                "17{0|1|2|3|5|6|8|9} %######",
                "16{0|2|3} %######",
                "30 %#######",
                "{40|69|89} %#######",
                "{211|221|341|351|511|711|911} %######"
            ],
            &[Space, Slash, Paren, Dash, Solid],
            EUROPE_INTL
        ),
        country!(
            "FR",
            "33",
            "0",
            &[9],
            &[Lang::Fr],
            &[
                "{6|7} %# ## ## ##",
                "{1|2|3|4|5} %# ## ## ##",
                "9 %# ## ## ##"
            ],
            &[Space, Space, Dot, Dash, Solid],
            EUROPE_INTL
        ),
        country!(
            "ES",
            "34",
            "",
            &[9],
            &[Lang::Es],
            &[
                "6## %## ###",
                "7{1|2|3|4}# %## ###",
                "{91|93} %## ## ##",
                "9{5|6|8}# %# ## ##"
            ],
            &[Space, Solid, Dot],
            &[Plus, ParenPlus, Zeros, PlusSolid]
        ),
        country!(
            "IT",
            "39",
            "",
            &[9, 10, 11],
            &[Lang::It],
            &[
                "3{2|3|4|5|6|8|9}# %## ####",
                "06 %### ####",
                "02 %### ####",
                "0{11|51|55|81} %## ####",
                "0{49|45|71} %## ###"
            ],
            &[Space, Slash, Dash, Solid],
            PLAIN_INTL
        ),
        country!(
            "NL",
            "31",
            "0",
            &[9],
            &[Lang::Nl],
            &[
                "6 %#######",
                "{10|20|30|40|50|70} %## ####",
                "{172|229|546} %#####"
            ],
            &[Dash, Space, Paren, Solid],
            EUROPE_INTL
        ),
        country!(
            "BE",
            "32",
            "0",
            &[8, 9],
            &[Lang::Nl, Lang::Fr],
            &[
                "4{7|8|9}# %# ## ##",
                "2 %## ## ##",
                "{3|9} %## ## ##",
                "{10|11|50|71|81} %# ## ##"
            ],
            &[Space, Dot, Slash],
            PLAIN_INTL
        ),
        country!(
            "CH",
            "41",
            "0",
            &[9],
            &[Lang::De, Lang::Fr, Lang::It],
            &["7{6|7|8|9} %## ## ##", "{21|22|31|44|61|71|91} %## ## ##"],
            &[Space],
            EUROPE_INTL
        ),
        country!(
            "AT",
            "43",
            "0",
            &[8, 9, 10, 11],
            &[Lang::De],
            &[
                "6{50|60|64|76|99} %######",
                "1 %######",
                "{316|512|662|732} %#####"
            ],
            &[Space, Slash, Paren],
            EUROPE_INTL
        ),
        country!(
            "PT",
            "351",
            "",
            &[9],
            &[Lang::Pt],
            &["9{1|2|3|6}# %## ###", "2{1|2}# %## ###"],
            &[Space, Solid],
            PLAIN_INTL
        ),
        country!(
            "IE",
            "353",
            "0",
            &[8, 9],
            &[Lang::En],
            &["8{3|5|6|7|9} %## ####", "1 %## ####", "{21|61|91} %## ###"],
            &[Space, Paren],
            EUROPE_INTL
        ),
        country!(
            "DK",
            "45",
            "",
            &[8],
            &[Lang::Sv, Lang::En],
            &["{2|3|4|5}# %# ## ##", "{3|4|7|8|9}# %# ## ##"],
            &[Space, Solid],
            PLAIN_INTL
        ),
        country!(
            "NO",
            "47",
            "",
            &[8],
            &[Lang::Sv, Lang::En],
            &["{4|9}## %# ###", "{2|5|6|7}# %# ## ##"],
            &[Space],
            PLAIN_INTL
        ),
        country!(
            "SE",
            "46",
            "0",
            &[7, 8, 9],
            &[Lang::Sv],
            &[
                "7{0|2|3|6|9} %## ## ##",
                "8 %## ### ##",
                "{31|40|46|90} %## ## ##",
                "{18|13} %# ## ##"
            ],
            &[AreaDash, Space],
            EUROPE_INTL
        ),
        country!(
            "FI",
            "358",
            "0",
            &[8, 9, 10],
            &[Lang::Sv, Lang::En],
            &[
                "4{0|1|4|5|6|9} %## ####",
                "50 %## ####",
                "9 %## ####",
                "{2|3|5|8} %## ####"
            ],
            &[Space, AreaDash],
            EUROPE_INTL
        ),
        country!(
            "PL",
            "48",
            "",
            &[9],
            &[Lang::Pl],
            &[
                "{50|51|53|57|60|66|69|72|73|78|79|88}# %## ###",
                "{12|22|58|61|71} %## ## ##"
            ],
            &[Space, Dash, Paren],
            PLAIN_INTL
        ),
        country!(
            "CZ",
            "420",
            "",
            &[9],
            &[Lang::Pl, Lang::En],
            &[
                "{6|7}{0|2|3|7}# %## ###",
                "2## %## ###",
                "{5|4}{4|6|8}# %## ###"
            ],
            &[Space],
            PLAIN_INTL
        ),
        country!(
            "SK",
            "421",
            "0",
            &[9],
            &[Lang::Pl, Lang::En],
            &["9{0|1|4}# %## ###", "2 %### ####"],
            &[Space, Slash],
            PLAIN_INTL
        ),
        country!(
            "HU",
            "36",
            "06",
            &[8, 9],
            &[Lang::En],
            &["{20|30|70} %## ####", "1 %## ####", "{52|62|72|96} %## ###"],
            &[Space],
            PLAIN_INTL
        ),
        country!(
            "RO",
            "40",
            "0",
            &[9],
            &[Lang::En],
            &[
                "7{2|3|4|5|6|7}# %## ###",
                "21 %## ####",
                "{264|256|232} %## ###"
            ],
            &[Space, Dot],
            PLAIN_INTL
        ),
        country!(
            "GR",
            "30",
            "",
            &[10],
            &[Lang::En],
            &["69{0|3|4|5|7|8|9} %## ####", "21# %## ####", "2310 %#####"],
            &[Space, Solid],
            PLAIN_INTL
        ),
        country!(
            "HR",
            "385",
            "0",
            &[8, 9],
            &[Lang::En],
            &["9{1|2|5|7|8} %## ####", "1 %### ###"],
            &[Space],
            PLAIN_INTL
        ),
        country!(
            "TR",
            "90",
            "0",
            &[10],
            &[Lang::Tr],
            &["5{0|3|4|5}# %## ## ##", "{212|216|312|232} %## ## ##"],
            &[Space, Paren, Solid],
            &[Plus, Plus, Zeros, PlusSolid]
        ),
        country!(
            "RU",
            "7",
            "8",
            &[10],
            &[Lang::Ru],
            &["9{0|1|2|3|5|6|8}# %## ## ##", "{495|499|812|343} %## ## ##"],
            &[RuParen, RuParen, Dash, Space],
            &[PlusParen, Plus, PlusSolid]
        ),
        country!(
            "UA",
            "380",
            "0",
            &[9],
            &[Lang::Ru],
            &[
                "{50|63|66|67|68|73|93|95|96|97|98|99} %## ## ##",
                "{44|32|48|56} %## ## ##"
            ],
            &[Space, Paren],
            &[Plus, PlusParen, PlusSolid]
        ),
    ]
}
