//! The Middle East, Africa, Asia, Oceania and Latin America: the second
//! half of the plans (see `plans`).

use super::plans::Country;
use super::{Intl, Nat};
use crate::unseen3::Lang;

use Intl::{ParenPlus, Plus, PlusDash, PlusParen, PlusSolid, PlusZero, Zeros};
use Nat::{AreaDash, Dash, Dot, Paren, ParenDash, Solid, Space};

pub fn countries() -> Vec<Country> {
    vec![
        country!(
            "IL",
            "972",
            "0",
            &[8, 9],
            &[Lang::En, Lang::Ar],
            &["5{0|2|3|4|8} %## ####", "{2|3|4|8|9} %## ####"],
            &[Dash, Space],
            &[Plus, PlusDash, PlusSolid]
        ),
        country!(
            "AE",
            "971",
            "0",
            &[8, 9],
            &[Lang::Ar, Lang::En],
            &["5{0|2|4|5|6|8} %## ####", "{2|4|6|7} %## ####"],
            &[Space, Dash],
            &[Plus, Plus, Zeros, PlusSolid]
        ),
        country!(
            "SA",
            "966",
            "0",
            &[9],
            &[Lang::Ar],
            &["5{0|3|4|5|6|9} %## ####", "1{1|2|3|4|7} %## ####"],
            &[Space, Solid],
            &[Plus, Zeros, PlusSolid]
        ),
        country!(
            "EG",
            "20",
            "0",
            &[9, 10],
            &[Lang::Ar],
            &["1{0|1|2|5} %### ####", "{2|3} %### ####"],
            &[Space, Solid],
            &[Plus, PlusSolid]
        ),
        country!(
            "MA",
            "212",
            "0",
            &[9],
            &[Lang::Fr, Lang::Ar],
            &["{6|7}## %# ## ##", "5 2# ## ## ##"],
            &[Space, Dash],
            &[Plus, Zeros]
        ),
        country!(
            "ZA",
            "27",
            "0",
            &[9],
            &[Lang::En],
            &[
                "{6|7|8}{0|1|2|3|4|6|9} %## ####",
                "{10|11|12|21|31|41|51} %## ####"
            ],
            &[Space, Paren],
            &[Plus, PlusSolid]
        ),
        country!(
            "NG",
            "234",
            "0",
            &[8, 10],
            &[Lang::En],
            &["{70|80|81|90|91}# %## ####", "1 %## ####"],
            &[Space, Solid],
            &[Plus, PlusSolid]
        ),
        country!(
            "KE",
            "254",
            "0",
            &[9],
            &[Lang::En],
            &["7{0|1|2|9}# %#####", "1{0|1}# %#####", "20 %######"],
            &[Space],
            &[Plus, PlusSolid]
        ),
        country!(
            "IN",
            "91",
            "0",
            &[10],
            &[Lang::Hi, Lang::En],
            &[
                "^{6|7|8|9}#### %####",
                "{11|22|33|44|80} %### ####",
                "{20|40|79} %### ####"
            ],
            &[Space, Dash, Solid],
            &[Plus, PlusDash, PlusSolid]
        ),
        country!(
            "PK",
            "92",
            "0",
            &[9, 10],
            &[Lang::En],
            &["3{0|1|2|3|4}# %######", "{21|42|51} %#######"],
            &[Dash, Space],
            &[Plus, PlusSolid]
        ),
        country!(
            "BD",
            "880",
            "0",
            &[9, 10],
            &[Lang::En],
            &["1{3|5|6|7|8|9}## %#####", "2 %#######"],
            &[Space, Dash],
            &[Plus]
        ),
        country!(
            "LK",
            "94",
            "0",
            &[9],
            &[Lang::En],
            &["7{0|1|2|5|6|7|8} %## ####", "11 %## ####"],
            &[Space],
            &[Plus]
        ),
        country!(
            "JP",
            "81",
            "0",
            &[9, 10],
            &[Lang::Ja],
            &[
                "{70|80|90} %### ####",
                "{3|6} %### ####",
                "{45|52|92|11} %## ####"
            ],
            &[Dash, Dash, ParenDash],
            &[PlusDash, Plus, PlusSolid]
        ),
        country!(
            "KR",
            "82",
            "0",
            &[8, 9, 10],
            &[Lang::Ko],
            &[
                "10 %### ####",
                "2 %### ####",
                "2 %## ####",
                "{31|51|53|32} %## ####"
            ],
            &[Dash, Dash, Space],
            &[PlusDash, Plus]
        ),
        country!(
            "CN",
            "86",
            "0",
            &[10, 11],
            &[Lang::Zh],
            &[
                "^1{3|5|8|9}# %### ####",
                "{10|20|21} %#######",
                "{755|571|512} %#######"
            ],
            &[AreaDash, Space, Paren],
            &[Plus, Plus, PlusSolid, Zeros]
        ),
        country!(
            "HK",
            "852",
            "",
            &[8],
            &[Lang::Zh, Lang::En],
            &["{5|6|9}### %###", "{2|3}### %###"],
            &[Space, Solid],
            &[Plus, ParenPlus, PlusSolid]
        ),
        country!(
            "TW",
            "886",
            "0",
            &[8, 9],
            &[Lang::Zh],
            &["9## %## ###", "2 %### ####", "{4|7} %## ####"],
            &[Dash, Paren, Space],
            &[Plus, PlusSolid]
        ),
        country!(
            "SG",
            "65",
            "",
            &[8],
            &[Lang::En, Lang::Zh],
            &["{8|9}### %###", "6### %###"],
            &[Space],
            &[Plus, ParenPlus, PlusSolid]
        ),
        country!(
            "MY",
            "60",
            "0",
            &[8, 9, 10],
            &[Lang::Id, Lang::En],
            &[
                "1{2|3|6|7|9} %## ####",
                "11 %### ####",
                "3 %### ####",
                "{4|7} %## ####"
            ],
            &[AreaDash, Space],
            &[Plus, PlusSolid]
        ),
        country!(
            "ID",
            "62",
            "0",
            &[9, 10, 11],
            &[Lang::Id],
            &[
                "8{11|12|13|21|52|56|57|77|78} %### ####",
                "21 %### ####",
                "{22|31|61} %## ####"
            ],
            &[Dash, Paren, Space],
            &[Plus, PlusSolid]
        ),
        country!(
            "PH",
            "63",
            "0",
            &[9, 10],
            &[Lang::En],
            &[
                "9{05|15|17|18|20|27|77|98} %## ####",
                "2 8### ####",
                "{32|82} %## ####"
            ],
            &[Space, Paren, Dash],
            &[Plus, PlusSolid]
        ),
        country!(
            "TH",
            "66",
            "0",
            &[8, 9],
            &[Lang::En],
            &["{6|8|9}# %## ####", "2 %## ####", "{38|53|76} %## ###"],
            &[Space, Dash],
            &[Plus, PlusSolid]
        ),
        country!(
            "VN",
            "84",
            "0",
            &[9, 10],
            &[Lang::En],
            &["{3|7|8|9}# %## ####", "{24|28} %### ####"],
            &[Space, Dot],
            &[Plus, PlusSolid]
        ),
        country!(
            "AU",
            "61",
            "0",
            &[9],
            &[Lang::En],
            &["4## %## ###", "{2|3|7|8} %### ####"],
            &[Space, Paren, Solid],
            &[Plus, Plus, PlusZero, PlusSolid]
        ),
        country!(
            "NZ",
            "64",
            "0",
            &[8, 9, 10],
            &[Lang::En],
            &["2{1|2|7} %## ####", "{3|4|6|7|9} %## ####"],
            &[Space, Paren],
            &[Plus, PlusSolid]
        ),
        country!(
            "BR",
            "55",
            "",
            &[10, 11],
            &[Lang::Pt],
            &[
                "{11|21|31|41|51|61|71|81|85|19} 9#### ####",
                "{11|21|31|41} {2|3|4}### ####"
            ],
            &[ParenDash, ParenDash, Space, Solid],
            &[PlusParen, Plus, PlusSolid]
        ),
        country!(
            "MX",
            "52",
            "",
            &[10],
            &[Lang::Es],
            &["{55|33|81} %### ####", "{222|442|664|998} %## ####"],
            &[Space, Paren, Dash],
            &[Plus, PlusSolid]
        ),
        country!(
            "AR",
            "54",
            "0",
            &[10, 11],
            &[Lang::Es],
            &[
                "11 {4|5}### ####",
                "{351|341|261} %## ####",
                "!9 11 #### ####"
            ],
            &[Paren, Space, ParenDash],
            &[Plus]
        ),
        country!(
            "CL",
            "56",
            "",
            &[9],
            &[Lang::Es],
            &["9 %### ####", "2 %### ####"],
            &[Space],
            &[Plus, PlusSolid]
        ),
        country!(
            "CO",
            "57",
            "",
            &[10],
            &[Lang::Es],
            &[
                "3{00|01|10|11|12|15|20|50} %## ####",
                "60{1|2|4|5} %## ####"
            ],
            &[Space],
            &[Plus, ParenPlus, PlusSolid]
        ),
        country!(
            "PE",
            "51",
            "",
            &[9],
            &[Lang::Es],
            &["9## %## ###"],
            &[Space],
            &[Plus, PlusSolid]
        ),
    ]
}
