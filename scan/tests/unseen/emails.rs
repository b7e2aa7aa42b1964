//! Email addresses: people's names folded to ASCII or kept in their own
//! script (internationalised local parts), providers' and companies'
//! domains, internationalised domains in Unicode and in punycode, plus
//! tags, and a few written-out forms (quoted local parts, capitals, long
//! new TLDs, numeric local parts as common in China).

use sluice_scan::Kind;

use super::{Lang, Value};
use crate::common::Rng;

/// Domains people of a language write (the punycode ones are the IDNA
/// encodings of Unicode names, computed with Python's `idna` codec).
fn domains(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::En => &[
            "gmail.com",
            "outlook.com",
            "northwind-example.co.uk",
            "harbour-lights.com.au",
            "mail.example.org",
            "cs.example.ac.uk",
        ],
        Lang::De => &[
            "gmx.de",
            "web.de",
            "t-online.de",
            "bücher.de",
            "xn--mnchen-3ya.de",
            "bäckerei-schäfer.de",
            "kanzlei-example.at",
        ],
        Lang::Fr => &[
            "orange.fr",
            "laposte.net",
            "free.fr",
            "café.fr",
            "xn--crme-brle-13ar8s.fr",
            "mairie-exemple.fr",
        ],
        Lang::Es => &[
            "gmail.com",
            "telefonica.net",
            "xn--espaa-rta.es",
            "málaga.es",
            "hotmail.es",
            "añejo.mx",
        ],
        Lang::Pt => &[
            "uol.com.br",
            "bol.com.br",
            "sapo.pt",
            "açaí.com.br",
            "xn--so-paulo-rza.com.br",
            "empresa-exemplo.pt",
        ],
        Lang::It => &[
            "libero.it",
            "tiscali.it",
            "pec.esempio.it",
            "città.it",
            "xn--citt-3na.it",
            "alice.it",
        ],
        Lang::Nl => &[
            "ziggo.nl",
            "kpnmail.nl",
            "hotmail.nl",
            "voorbeeld.nl",
            "bedrijf-example.be",
        ],
        Lang::Pl => &[
            "wp.pl",
            "onet.pl",
            "interia.pl",
            "gdańsk.pl",
            "xn--d-uga0v4h.pl",
            "o2.pl",
        ],
        Lang::Hi => &[
            "rediffmail.com",
            "gmail.com",
            "yahoo.co.in",
            "डाटा.भारत",
            "xn--c2bd1gb.xn--h2brj9c",
            "company-example.co.in",
        ],
        Lang::Ja => &[
            "yahoo.co.jp",
            "docomo.ne.jp",
            "ezweb.ne.jp",
            "例え.jp",
            "xn--czrr0ogxbdv4b.jp",
            "example.co.jp",
        ],
    }
}

/// Addresses written as they are, each with what it shows.
const WRITTEN: &[(&str, &str)] = &[
    ("\"anna..weber\"@mail.example.de", "quoted"),
    ("\"reception desk\"@hotel-example.at", "quoted"),
    ("\"j.o'neil\"@example.ie", "quoted"),
    ("Info@Example-Shop.DE", "capitals"),
    ("J.Doe@Contoso-Example.COM", "capitals"),
    ("m.rossi@studenti.unimi.example.it", "subdomain"),
    ("k.tanaka@mail.sci.example.ac.jp", "subdomain"),
    ("hello@studio-nord.photography", "new-tld"),
    ("team@lighthouse.agency", "new-tld"),
    ("kontakt@weingut-example.wine", "new-tld"),
    ("ops-team-2@example-cloud.io", "plain"),
    ("no-reply+bounce-8f3a2c@mailer.example.net", "plus-tag"),
    ("1834502217@qq.com", "numeric"),
    ("pengyu_88@163.com", "plain"),
    ("пользователь@пример.рф", "intl-local+idn"),
    ("иван.петров@почта.рф", "intl-local+idn"),
    ("ivan.petrov@xn--e1afmkfd.xn--p1ai", "punycode"),
    ("用户@中文.中国", "intl-local+idn"),
    ("zhang.wei@xn--fiq228c.xn--fiqs8s", "punycode"),
    ("사용자@한국어.한국", "intl-local+idn"),
    ("minji.kim@xn--3e0bk47br7k.xn--3e0b707e", "punycode"),
    ("δοκιμή@παράδειγμα.ελ", "intl-local+idn"),
    ("nikos@xn--hxajbheg2az3al.xn--qxam", "punycode"),
    ("राज@डाटा.भारत", "intl-local+idn"),
    ("somchai@xn--o3cw4h.th", "punycode"),
    ("støtte@ålesund.no", "intl-local+idn"),
    ("order.örebro@xn--rebro-iua.se", "punycode"),
    ("kundeservice@æble.dk", "idn"),
];

const TAGS: &[&str] = &[
    "newsletter",
    "shop",
    "rechnung",
    "travel",
    "billing",
    "2026",
];

/// The name in ASCII as people fold it for an address (German umlauts to
/// `ae`, `oe`, `ue`, other marks dropped), or `None` for a script that
/// does not fold (the address then keeps it).
fn fold(name: &str, lang: Lang) -> Option<String> {
    let mut out = String::new();
    for c in name.to_lowercase().chars() {
        let folded = match c {
            'ä' if lang == Lang::De => "ae",
            'ö' if lang == Lang::De => "oe",
            'ü' if lang == Lang::De => "ue",
            'ß' => "ss",
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'ą' => "a",
            'ç' | 'ć' => "c",
            'è' | 'é' | 'ê' | 'ë' | 'ę' => "e",
            'ì' | 'í' | 'î' | 'ï' => "i",
            'ł' => "l",
            'ñ' | 'ń' => "n",
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' => "o",
            'ś' => "s",
            'ù' | 'ú' | 'û' | 'ü' => "u",
            'ź' | 'ż' => "z",
            ' ' => "",
            c if c.is_ascii() => {
                out.push(c);
                continue;
            }
            _ => return None,
        };
        out.push_str(folded);
    }
    Some(out)
}

/// One address of a person of `lang`, and what it shows.
fn address(rng: &mut Rng, lang: Lang) -> (String, &'static str) {
    let &(first, last) = rng.pick(lang.names());
    address_of(rng, lang, first, last)
}

/// An address made from `first` and `last`, and what it shows.
fn address_of(rng: &mut Rng, lang: Lang, first: &str, last: &str) -> (String, &'static str) {
    let domain = *rng.pick(domains(lang));
    let folded = fold(first, lang).zip(fold(last, lang));
    let keep_script = rng.below(5) == 0;
    let (local, mut what) = match folded {
        Some((f, l)) if !keep_script => {
            let local = match rng.below(6) {
                0 => format!("{f}.{l}"),
                1 => format!("{}{l}", &f[..1]),
                2 => format!("{f}_{l}{}", rng.below(90) + 10),
                3 => format!("{l}-{f}"),
                4 => format!("{f}.{l}+{}", rng.pick(TAGS)),
                _ => format!("{f}{l}"),
            };
            let what = if local.contains('+') {
                "plus-tag"
            } else {
                "plain"
            };
            (local, what)
        }
        _ => (
            format!("{}.{}", first.to_lowercase(), last.to_lowercase()).replace(' ', ""),
            "intl-local",
        ),
    };
    if !domain.is_ascii() {
        what = if what == "intl-local" {
            "intl-local+idn"
        } else {
            "idn"
        };
    } else if domain.contains("xn--") {
        what = "punycode";
    }
    (format!("{local}@{domain}"), what)
}

fn value(text: String, origin: &'static str, lang: Lang) -> Value {
    Value {
        kind: Kind::Email,
        text,
        origin,
        lang,
        after: String::new(),
    }
}

/// `per_lang` addresses in each language and the written-out ones.
pub fn values(rng: &mut Rng, per_lang: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for lang in Lang::ALL {
        for _ in 0..per_lang {
            let (text, what) = address(rng, lang);
            out.push(value(text, what, lang));
        }
    }
    for &(text, what) in WRITTEN {
        out.push(value(text.to_string(), what, Lang::En));
    }
    out
}

/// A sender's name and address, for a header.
pub fn sender(rng: &mut Rng, lang: Lang) -> (String, Value) {
    let &(first, last) = rng.pick(lang.names());
    let (text, what) = address_of(rng, lang, first, last);
    (format!("{first} {last}"), value(text, what, lang))
}
