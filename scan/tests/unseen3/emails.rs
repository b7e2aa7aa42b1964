//! Email addresses as people and systems write them: first.last at a
//! company, plus-addressed, on mail subdomains and country second levels,
//! at new top-level domains, with Unicode local parts and domains
//! (EAI/IDN) and their punycode (`xn--`) forms, and role addresses. The
//! carriers put them in JSON (escaped), `mailto:` links and angle
//! brackets. Also the senders of the email-thread bodies.

use sluice_scan::Kind;

use super::{Lang, Value};
use crate::common::Rng;

/// Per language: ASCII first and last names for local parts, company
/// names, the country's domains, Unicode local parts and domains.
struct Locale {
    lang: Lang,
    people: &'static [(&'static str, &'static str)],
    companies: &'static [&'static str],
    tlds: &'static [&'static str],
    unicode_locals: &'static [&'static str],
    unicode_domains: &'static [&'static str],
}

const LOCALES: &[Locale] = &[
    Locale {
        lang: Lang::En,
        people: &[
            ("megan", "doyle"),
            ("raj", "patel"),
            ("tom", "eriksen"),
            ("chloe", "baxter"),
        ],
        companies: &["northwind", "brightpath", "kestrel-labs", "bluefin"],
        tlds: &["com", "co.uk", "io", "com.au", "ca"],
        unicode_locals: &["zoë.brontë", "renée"],
        unicode_domains: &["naïve-café.com"],
    },
    Locale {
        lang: Lang::De,
        people: &[
            ("katrin", "vogel"),
            ("lukas", "brandt"),
            ("sabine", "koehler"),
        ],
        companies: &["stahlwerk-nord", "bauer-it", "rheinlogistik"],
        tlds: &["de", "at", "ch"],
        unicode_locals: &["jörg.schäfer", "grüße", "maß.über"],
        unicode_domains: &["bücherstube.de", "möbel-krüger.de", "bäckerei-groß.at"],
    },
    Locale {
        lang: Lang::Fr,
        people: &[("camille", "roux"), ("theo", "girard"), ("ines", "mercier")],
        companies: &["atelier-lumiere", "groupe-vannier", "socotra"],
        tlds: &["fr", "be", "ca"],
        unicode_locals: &["françoise.lefèvre", "hélène", "jérôme.côté"],
        unicode_domains: &["élysée-conseil.fr", "château-brûlé.fr"],
    },
    Locale {
        lang: Lang::Es,
        people: &[
            ("lucia", "navarro"),
            ("diego", "ortega"),
            ("carmen", "vidal"),
        ],
        companies: &["ferreteria-sol", "grupo-almena", "tecnova"],
        tlds: &["es", "com.mx", "com.ar", "cl"],
        unicode_locals: &["josé.muñoz", "begoña", "íñigo.peña"],
        unicode_domains: &["señor-café.es", "diseño-ibérico.es"],
    },
    Locale {
        lang: Lang::Pt,
        people: &[
            ("joana", "teixeira"),
            ("rafael", "moura"),
            ("beatriz", "lima"),
        ],
        companies: &["casa-verde", "oliveira-cia", "sertao-tech"],
        tlds: &["pt", "com.br"],
        unicode_locals: &["joão.conceição", "lúcia", "gonçalo.simões"],
        unicode_domains: &["açaí-brasil.com.br", "pão-quente.pt"],
    },
    Locale {
        lang: Lang::It,
        people: &[("giulia", "romano"), ("marco", "ferri"), ("elena", "gallo")],
        companies: &["officine-bassi", "vetreria-lago", "datalumi"],
        tlds: &["it", "ch"],
        unicode_locals: &["niccolò.carità", "lucrezia"],
        unicode_domains: &["caffè-però.it"],
    },
    Locale {
        lang: Lang::Nl,
        people: &[("sanne", "dekker"), ("bram", "visser"), ("femke", "jansen")],
        companies: &["polderdata", "van-dijk-transport", "zeewind"],
        tlds: &["nl", "be"],
        unicode_locals: &["geërfd", "chloë.de.vries"],
        unicode_domains: &["coöperatie-zuid.nl"],
    },
    Locale {
        lang: Lang::Pl,
        people: &[
            ("agnieszka", "zielinska"),
            ("pawel", "mazur"),
            ("kasia", "wrobel"),
        ],
        companies: &["stalbud", "wisla-soft", "pol-trans"],
        tlds: &["pl", "com.pl"],
        unicode_locals: &["łukasz.wójcik", "małgorzata", "zażółć"],
        unicode_domains: &["żółw-sklep.pl", "księgarnia-łódź.pl"],
    },
    Locale {
        lang: Lang::Hi,
        people: &[
            ("ananya", "iyer"),
            ("vikram", "reddy"),
            ("sneha", "kulkarni"),
        ],
        companies: &["shakti-infra", "ganga-textiles", "nimbus"],
        tlds: &["in", "co.in"],
        unicode_locals: &["राहुल", "प्रिया.शर्मा"],
        unicode_domains: &["उदाहरण.भारत", "डाकघर.भारत"],
    },
    Locale {
        lang: Lang::Ja,
        people: &[("yuki", "tanaka"), ("haruto", "sato"), ("aoi", "kobayashi")],
        companies: &["sakura-shoji", "fujiden", "kumo-soft"],
        tlds: &["jp", "co.jp"],
        unicode_locals: &["山田太郎", "お問い合わせ", "さくら"],
        unicode_domains: &["例え.jp", "日本語ドメイン.jp", "ゆうびん.co.jp"],
    },
    Locale {
        lang: Lang::Ru,
        people: &[
            ("olga", "smirnova"),
            ("dmitry", "volkov"),
            ("irina", "kuznetsova"),
        ],
        companies: &["severstroy", "uralmash-it", "vostok"],
        tlds: &["ru", "com.ua", "by"],
        unicode_locals: &["иван.петров", "почта", "светлана"],
        unicode_domains: &["пример.рф", "компания.рф", "магазин.рус"],
    },
    Locale {
        lang: Lang::Tr,
        people: &[("elif", "yilmaz"), ("emre", "demir"), ("zeynep", "aydin")],
        companies: &["anadolu-yazilim", "marmara-lojistik"],
        tlds: &["com.tr", "tr"],
        unicode_locals: &["şükrü.öztürk", "gülşen", "ığdır"],
        unicode_domains: &["çiçekçi.com.tr", "güneş-enerji.com.tr"],
    },
    Locale {
        lang: Lang::Zh,
        people: &[("wei", "zhang"), ("na", "li"), ("jun", "chen")],
        companies: &["huaxin-tech", "jinling", "tianyun"],
        tlds: &["cn", "com.cn", "com.tw", "hk"],
        unicode_locals: &["李娜", "客服", "张伟.工作"],
        unicode_domains: &["例子.中国", "北京饭店.中国", "公司.香港"],
    },
    Locale {
        lang: Lang::Ko,
        people: &[("minji", "kim"), ("jihoon", "park"), ("seoyeon", "lee")],
        companies: &["hanbit-soft", "daesung", "nuri"],
        tlds: &["kr", "co.kr"],
        unicode_locals: &["홍길동", "고객센터"],
        unicode_domains: &["회사.한국", "우체국.한국"],
    },
    Locale {
        lang: Lang::Ar,
        people: &[
            ("omar", "haddad"),
            ("layla", "nasser"),
            ("youssef", "karim"),
        ],
        companies: &["al-noor-trading", "gulfline", "sahara-it"],
        tlds: &["ae", "sa", "com.eg", "ma"],
        unicode_locals: &["محمد", "خدمة.العملاء"],
        unicode_domains: &["مثال.امارات", "شركة.مصر"],
    },
    Locale {
        lang: Lang::Id,
        people: &[
            ("putri", "santoso"),
            ("budi", "wijaya"),
            ("dewi", "lestari"),
        ],
        companies: &["nusantara-digital", "garuda-kargo", "sinar-jaya"],
        tlds: &["co.id", "id", "com.my"],
        unicode_locals: &["siti.nurhaliza"],
        unicode_domains: &["toko-batik.id"],
    },
    Locale {
        lang: Lang::Sv,
        people: &[
            ("astrid", "lindqvist"),
            ("oskar", "berg"),
            ("maja", "nyström"),
        ],
        companies: &["fjordline", "norrsken-data", "skog-och-sjo"],
        tlds: &["se", "no", "dk", "fi"],
        unicode_locals: &["åsa.ström", "björn", "søren.kjær"],
        unicode_domains: &["företag.se", "blåbær.no", "sjöbod-åre.se"],
    },
];

/// Punycode domains (the ACE form mail systems put on the wire).
const PUNYCODE: &[(Lang, &str)] = &[
    (Lang::De, "xn--bcher-kva.de"),
    (Lang::De, "xn--mnchen-3ya.de"),
    (Lang::Fr, "xn--caf-dma.fr"),
    (Lang::Ru, "xn--e1afmkfd.xn--p1ai"),
    (Lang::Ru, "shop.xn--p1ai"),
    (Lang::Zh, "xn--fiqs8s"),
    (Lang::Ko, "xn--3e0b707e"),
    (Lang::Hi, "xn--h2brj9c"),
    (Lang::Ar, "xn--mgbaam7a8h"),
];

const NEW_TLDS: &[&str] = &[
    "app", "dev", "shop", "tech", "berlin", "tokyo", "xyz", "cloud", "online", "store", "agency",
    "studio", "paris", "africa", "ai",
];
const FREEMAIL: &[&str] = &[
    "gmail.com",
    "outlook.com",
    "yahoo.co.jp",
    "web.de",
    "gmx.net",
    "orange.fr",
    "libero.it",
    "qq.com",
    "163.com",
    "naver.com",
    "yandex.ru",
    "mail.ru",
    "proton.me",
    "icloud.com",
    "hotmail.co.uk",
    "wp.pl",
    "uol.com.br",
    "rediffmail.com",
];
const ROLES: &[&str] = &[
    "support", "billing", "info", "no-reply", "accounts", "hr", "sales", "ops",
];
const TAGS: &[&str] = &[
    "newsletter",
    "amazon",
    "github",
    "invoices",
    "2026",
    "test",
    "shop",
    "travel",
];
const SUBDOMAINS: &[&str] = &[
    "mail",
    "eu",
    "corp",
    "staff",
    "mx1.eu",
    "students",
    "research.lab",
];

fn locale(lang: Lang) -> &'static Locale {
    LOCALES.iter().find(|l| l.lang == lang).expect("a locale")
}

/// One address of the locale in a form drawn by `form` (0..10 over the
/// set's proportions), and the form's name.
fn address(rng: &mut Rng, l: &Locale, form: u64) -> (String, &'static str) {
    let &(first, last) = rng.pick(l.people);
    let company = *rng.pick(l.companies);
    let tld = *rng.pick(l.tlds);
    match form {
        0 | 1 => {
            let local = match rng.below(4) {
                0 => format!("{first}.{last}"),
                1 => format!("{}{last}", &first[..1]),
                2 => format!("{first}_{last}{}", rng.below(90) + 10),
                _ => format!("{first}-{last}"),
            };
            (format!("{local}@{company}.{tld}"), "ascii")
        }
        2 => {
            let local = format!("{first}.{last}{}", rng.below(1000));
            (format!("{local}@{}", rng.pick(FREEMAIL)), "freemail")
        }
        3 => {
            let tag = rng.pick(TAGS);
            let host = if rng.below(2) == 0 {
                rng.pick(FREEMAIL).to_string()
            } else {
                format!("{company}.{tld}")
            };
            (format!("{first}+{tag}@{host}"), "plus")
        }
        4 => {
            let sub = rng.pick(SUBDOMAINS);
            (format!("{first}.{last}@{sub}.{company}.{tld}"), "subdomain")
        }
        5 => {
            let new = rng.pick(NEW_TLDS);
            (format!("{first}@{company}.{new}"), "new tld")
        }
        6 => {
            let role = rng.pick(ROLES);
            (format!("{role}@{company}.{tld}"), "role")
        }
        7 => {
            let local = rng.pick(l.unicode_locals);
            let domain = if rng.below(2) == 0 {
                rng.pick(l.unicode_domains).to_string()
            } else {
                format!("{company}.{tld}")
            };
            (format!("{local}@{domain}"), "unicode local")
        }
        8 => {
            let domain = rng.pick(l.unicode_domains);
            let local = if rng.below(2) == 0 {
                rng.pick(ROLES).to_string()
            } else {
                format!("{first}.{last}")
            };
            (format!("{local}@{domain}"), "unicode domain")
        }
        _ => {
            let mine: Vec<&str> = PUNYCODE
                .iter()
                .filter(|(lang, _)| *lang == l.lang)
                .map(|(_, d)| *d)
                .collect();
            let domain = if mine.is_empty() {
                rng.pick(PUNYCODE).1
            } else {
                rng.pick(&mine)
            };
            let domain = if domain.contains('.') {
                domain.to_string()
            } else {
                format!("{company}.{domain}")
            };
            (format!("{first}@{domain}"), "punycode")
        }
    }
}

/// Addresses per language: more where more agent traffic is written.
fn share(lang: Lang) -> usize {
    match lang {
        Lang::En => 60,
        Lang::De | Lang::Fr | Lang::Es | Lang::Pt | Lang::Ja | Lang::Zh => 22,
        _ => 16,
    }
}

pub fn values(rng: &mut Rng) -> Vec<Value> {
    let mut out = Vec::new();
    for lang in Lang::ALL {
        let l = locale(lang);
        for _ in 0..share(lang) {
            // Plain addresses most; Unicode and punycode fewer in English.
            let form = if lang == Lang::En && rng.below(3) != 0 {
                rng.below(7)
            } else {
                rng.below(10)
            };
            let (text, origin) = address(rng, l, form);
            out.push(Value::new(Kind::Email, text, origin, lang));
        }
    }
    out
}

/// A sender of an email-thread body: a display name and their address.
pub fn sender(rng: &mut Rng, lang: Lang) -> (String, Value) {
    let &(first, last) = rng.pick(lang.names());
    let form = rng.below(7);
    let (text, origin) = address(rng, locale(lang), form);
    (
        format!("{first} {last}"),
        Value::new(Kind::Email, text, origin, lang),
    )
}
