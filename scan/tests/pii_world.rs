//! Personal data written the ways of many countries and issuers (issue #44,
//! item 4): payment cards of every major network's IIN ranges and lengths,
//! telephone numbers in national formats (trunk prefixes, area codes in
//! parentheses, spaces, dots, dashes) and with `+`, email addresses with
//! internationalised local parts and domains, IBANs in lower case and in
//! groups of four; each in sentences of several languages and in JSON
//! bodies. Beside them, hard negatives: what looks like those values and
//! is not (order numbers, timestamps, dates, versions, UUIDs, hex ids,
//! tracking numbers, prices, coordinates, ids of 12 to 19 digits that fail
//! the Luhn check, phone-like numbers in code).
//!
//! `recall_and_precision_per_type` prints recall and precision per type
//! (`cargo test -p sluice-scan --test pii_world -- --nocapture`) and holds
//! them to the floors in `FLOORS`. The numbers are generated from a fixed
//! seed: the set is the same on every run.

mod common;

use common::{Labelled, Rng, grouped, luhn_digit, luhn_ok, score};
use sluice_scan::Kind;

/// A card number of `len` digits starting with `prefix`, with its check
/// digit (or, when `valid` is false, any other last digit).
fn card(rng: &mut Rng, prefix: &str, len: usize, valid: bool) -> String {
    let mut d: Vec<u8> = prefix.bytes().collect();
    while d.len() < len - 1 {
        d.push(rng.digit());
    }
    let check = luhn_digit(&d);
    d.push(if valid {
        check
    } else {
        b'0' + (check - b'0' + 1 + rng.below(9) as u8) % 10
    });
    String::from_utf8(d).expect("digits")
}

/// One text and the values of each kind it holds.
struct Case {
    label: String,
    content_type: &'static str,
    text: String,
    values: Vec<(Kind, String)>,
}

const TEXT: &str = "text/plain";
const JSON: &str = "application/json";

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("json")
}

/// The value in one of `sentences` (`{}` where it goes) or in a JSON body
/// under one of `keys`.
fn place(
    rng: &mut Rng,
    label: &str,
    kind: Kind,
    value: String,
    sentences: &[&str],
    keys: &[&str],
) -> Case {
    if rng.below(3) == 0 && !keys.is_empty() {
        let key = rng.pick(keys);
        let text = match rng.below(3) {
            0 => format!(r#"{{"{key}": {}}}"#, json_string(&value)),
            1 => format!(
                r#"{{"customer": {{"name": "Ana Souza", "{key}": {}, "tier": 2}}}}"#,
                json_string(&value)
            ),
            _ => format!(
                r#"{{"model": "m-1", "messages": [{{"role": "user", "content": {}}}]}}"#,
                json_string(&rng.pick(sentences).replace("{}", &value))
            ),
        };
        return Case {
            label: label.to_string(),
            content_type: JSON,
            text,
            values: vec![(kind, value)],
        };
    }
    let sentence = rng.pick(sentences);
    Case {
        label: label.to_string(),
        content_type: TEXT,
        text: sentence.replace("{}", &value),
        values: vec![(kind, value)],
    }
}

// ---------------------------------------------------------------- cards

/// Issuers: name, IIN prefixes, lengths, whether the scheme uses Luhn.
const ISSUERS: &[(&str, &[&str], &[usize])] = &[
    ("visa", &["4"], &[13, 16, 19]),
    ("mastercard", &["51", "52", "53", "54", "55"], &[16]),
    (
        "mastercard-2",
        &["2221", "2300", "2499", "2611", "2720", "2305"],
        &[16],
    ),
    ("amex", &["34", "37"], &[15]),
    (
        "discover",
        &["6011", "644", "645", "646", "647", "648", "649", "65"],
        &[16, 19],
    ),
    (
        "diners",
        &["300", "301", "302", "303", "304", "305", "36", "38", "39"],
        &[14],
    ),
    ("diners-16", &["36", "38", "3095"], &[16]),
    (
        "jcb",
        &["3528", "3530", "3566", "3589", "35"],
        &[16, 17, 18, 19],
    ),
    ("jcb-15", &["2131", "1800"], &[15]),
    (
        "unionpay",
        &["62", "6212", "6250", "6282"],
        &[16, 17, 18, 19],
    ),
    (
        "maestro",
        &[
            "50", "5018", "5020", "5038", "56", "57", "58", "6304", "6759", "6761", "6763", "6390",
            "69",
        ],
        &[13, 14, 15, 16, 17, 18, 19],
    ),
    (
        "maestro-12",
        &[
            "5018", "5020", "5038", "5893", "6304", "6759", "6761", "6762", "6763", "0604", "6390",
        ],
        &[12],
    ),
    (
        "mir",
        &["2200", "2201", "2202", "2203", "2204"],
        &[16, 17, 18, 19],
    ),
    (
        "rupay",
        &["60", "65", "81", "82", "508", "353", "356"],
        &[16],
    ),
    (
        "elo",
        &["4011", "4389", "5041", "5067", "6277", "6363", "6504"],
        &[16],
    ),
    ("verve", &["5061", "6500"], &[16, 19]),
    ("troy", &["9792"], &[16]),
    ("dankort", &["5019"], &[16]),
];

const CARD_SENTENCES: &[&str] = &[
    "Please charge my card {} for the renewal.",
    "Card number: {}",
    "Pay with {} exp 09/27",
    "My Visa is {}, CVV on request.",
    "Meine Kreditkartennummer lautet {}.",
    "Numéro de carte : {}",
    "Mi tarjeta es la {} y caduca en 2027.",
    "Il numero della carta è {}.",
    "Mijn kaartnummer is {}.",
    "Número do cartão: {}",
    "カード番号は{}です。",
    "Номер карты {}",
    "billing: {} / 08-28",
    "{}",
    "use {} for the deposit",
    "The customer read out {} over the phone.",
];

const CARD_KEYS: &[&str] = &["card_number", "pan", "cardNumber", "payment_card", "cc"];

fn card_cases(rng: &mut Rng, out: &mut Vec<Case>) {
    for (issuer, prefixes, lengths) in ISSUERS {
        for _ in 0..14 {
            let prefix = rng.pick(prefixes);
            let len = *rng.pick(lengths);
            let number = card(rng, prefix, len, true);
            let written = match (len, rng.below(4)) {
                (_, 0) => number.clone(),
                (15, _) => grouped(
                    &number,
                    &[4, 6, 5],
                    if rng.below(2) == 0 { " " } else { "-" },
                ),
                (14, 1) => grouped(&number, &[4, 6, 4], " "),
                (_, 1) => grouped(&number, &[4, 4, 4, 4, 4], " "),
                (_, 2) => grouped(&number, &[4, 4, 4, 4, 4], "-"),
                _ => grouped(&number, &[4, 4, 4, 4, 4], " "),
            };
            out.push(place(
                rng,
                &format!("card/{issuer}/{len}"),
                Kind::CreditCard,
                written,
                CARD_SENTENCES,
                CARD_KEYS,
            ));
        }
    }
    // UnionPay numbers outside the Luhn scheme, named as such.
    for _ in 0..4 {
        let len = 16 + rng.below(4) as usize;
        let number = card(rng, "62", len, false);
        out.push(Case {
            label: "card/unionpay-no-luhn".to_string(),
            content_type: TEXT,
            text: format!("UnionPay card {number}"),
            values: vec![(Kind::CreditCard, number)],
        });
    }
}

// ---------------------------------------------------------------- phones

/// Per country: national and international templates (`#` a digit),
/// sentences in the country's language.
const PHONES: &[(&str, &[&str], &[&str])] = &[
    (
        "uk",
        &[
            "020 7946 ####",
            "07700 9#####",
            "0161 496 ####",
            "01632 9#####",
            "(020) 7946 ####",
            "+44 20 7946 ####",
            "+44 7700 9#####",
            "+44 (0)20 7946 ####",
            "+447700 9#####",
            "0044 20 7946 ####",
        ],
        &[
            "Ring me on {} after six.",
            "You can reach the office on {}.",
            "Mobile: {}",
            "{} is the best number.",
        ],
    ),
    (
        "de",
        &[
            "030 12######",
            "(030) 1234-####",
            "0151 234#####",
            "089 123####",
            "0221 98#####",
            "+49 30 12######",
            "+49 151 234#####",
            "+49 (0)89 123####",
            "+49-30-12######",
            "0049 30 12######",
        ],
        &[
            "Rufen Sie mich unter {} an.",
            "Erreichbar unter {} ab 9 Uhr.",
            "Telefon: {}",
            "Meine Handynummer ist {}.",
        ],
    ),
    (
        "fr",
        &[
            "01 23 ## ## ##",
            "06.12.##.##.##",
            "04 7# ## ## ##",
            "07-##-##-##-##",
            "+33 1 23 ## ## ##",
            "+33 6 12 ## ## ##",
            "+33 (0)1 23 ## ## ##",
        ],
        &[
            "Appelez-moi au {} demain.",
            "Mon portable : {}",
            "Joignable au {} en semaine.",
            "Tél. {}",
        ],
    ),
    (
        "es",
        &[
            "912 ### ###",
            "612 ## ## ##",
            "7## ### ###",
            "93 ### ## ##",
            "+34 912 ### ###",
            "+34 612 ## ## ##",
            "(+34) 612 ### ###",
        ],
        &[
            "Llámame al {} cuando puedas.",
            "Mi móvil es el {}.",
            "Teléfono: {}",
            "Estoy en el {} por la tarde.",
        ],
    ),
    (
        "it",
        &[
            "06 %### ####",
            "02 %### ####",
            "312 ### ####",
            "347 ### ####",
            "+39 06 %### ####",
            "+39 347 ### ####",
            "(+39) 347 ### ####",
        ],
        &[
            "Chiamami al {} domani.",
            "Il mio cellulare è {}.",
            "Tel. {}",
            "Sono raggiungibile al {}.",
        ],
    ),
    (
        "nl",
        &[
            "020-123 ####",
            "06-12######",
            "010 %## ####",
            "06 12 34 ## ##",
            "+31 20 123 ####",
            "+31 6 12######",
            "0031 20 123 ####",
        ],
        &[
            "Bel me op {} morgen.",
            "Mijn nummer is {}.",
            "Telefoon: {}",
            "Bereikbaar via {}.",
        ],
    ),
    (
        "in",
        &[
            "98### #####",
            "7#### #####",
            "022 %### ####",
            "080 %### ####",
            "+91 98### #####",
            "+91-22-####-####",
            "+91 98########",
            "(+91) 98### #####",
        ],
        &[
            "Call me at {} tomorrow.",
            "My mobile no. is {}",
            "Contact: {}",
            "WhatsApp {} for details.",
        ],
    ),
    (
        "br",
        &[
            "(11) 9####-####",
            "(21) 3###-####",
            "(11) 9#### ####",
            "+55 11 9####-####",
            "+55 (11) 9####-####",
        ],
        &[
            "Me liga no {} amanhã.",
            "Meu celular é {}.",
            "Telefone: {}",
            "Fale comigo pelo {}.",
        ],
    ),
    (
        "jp",
        &[
            "03-%###-####",
            "090-%###-####",
            "06-%###-####",
            "080 %### ####",
            "+81 3-%###-####",
            "+81 90-%###-####",
        ],
        &[
            "電話番号は{}です。",
            "携帯：{}",
            "Call {} in Tokyo.",
            "連絡先 {}",
        ],
    ),
    (
        "au",
        &[
            "(02) %### ####",
            "04## ### ###",
            "03 %### ####",
            "+61 2 %### ####",
            "+61 4## ### ###",
        ],
        &[
            "Give us a bell on {} mate.",
            "Mobile {}",
            "Ph: {}",
            "Our Sydney office is {}.",
        ],
    ),
    (
        "na",
        &[
            "(415) 555-0###",
            "212-555-0###",
            "+1 646 555 0###",
            "303.555.0###",
        ],
        &["Call me on {} after lunch.", "{}", "phone {}"],
    ),
];

/// Mobile numbers written solid after a phone word: Spain, India, Italy.
const BARE_MOBILES: &[(&str, &str)] = &[
    ("es", "Mi móvil: 6########"),
    ("es", "Teléfono 7########"),
    ("in", "Call me at 9#########"),
    ("in", "mobile: 7#########"),
    ("it", "Il mio cellulare è 3#########"),
];

const PHONE_KEYS: &[&str] = &["phone", "telefono", "tel", "mobile", "contact_number"];

fn phone_cases(rng: &mut Rng, out: &mut Vec<Case>) {
    for (country, templates, sentences) in PHONES {
        for template in *templates {
            for _ in 0..4 {
                let value = rng.fill(template);
                out.push(place(
                    rng,
                    &format!("phone/{country}"),
                    Kind::Phone,
                    value,
                    sentences,
                    PHONE_KEYS,
                ));
            }
        }
    }
    for (country, template) in BARE_MOBILES {
        for _ in 0..3 {
            let text = rng.fill(template);
            let value = text[text.rfind(' ').expect("a space") + 1..].to_string();
            out.push(Case {
                label: format!("phone/{country}-bare"),
                content_type: TEXT,
                text,
                values: vec![(Kind::Phone, value)],
            });
        }
    }
}

// ---------------------------------------------------------------- emails

const EMAILS: &[&str] = &[
    "josé.garcía@correo.es",
    "müller@bücher.de",
    "françois.dupont@exemple.fr",
    "用户@例子.广告",
    "ユーザー@例え.テスト",
    "почта@пример.рф",
    "δοκιμή@παράδειγμα.δοκιμή",
    "pelé@exemplo.com.br",
    "info@münchen.de",
    "jörg.schäfer@firma.example",
    "अजय@डाटा.भारत",
    "user@xn--mnchen-3ya.de",
    "søren@eksempel.dk",
    "zoë.o'brien+news@mail.example.ie",
    "anna.kowalska@poczta.pl",
    "ali.yılmaz@örnek.com.tr",
];

const EMAIL_SENTENCES: &[&str] = &[
    "Schreib mir an {}.",
    "Mon adresse : {}",
    "联系我：{}。",
    "メールは{}まで。",
    "Пишите на {}, спасибо.",
    "<{}>",
    "email {} please",
    "({})",
];

fn email_cases(rng: &mut Rng, out: &mut Vec<Case>) {
    for email in EMAILS {
        for _ in 0..3 {
            out.push(place(
                rng,
                "email/idn",
                Kind::Email,
                email.to_string(),
                EMAIL_SENTENCES,
                &["email", "correo", "mail"],
            ));
        }
    }
}

// ---------------------------------------------------------------- ibans

/// Valid IBANs (mod-97), upper case and solid; written lower case, in
/// groups of four, or both.
const IBANS: &[&str] = &[
    "GB82WEST12345698765432",
    "DE89370400440532013000",
    "FR1420041010050500013M02606",
    "ES9121000418450200051332",
    "IT60X0542811101000000123456",
    "NL91ABNA0417164300",
    "BE68539007547034",
    "CH9300762011623852957",
    "AT611904300234573201",
    "PL61109010140000071219812874",
    "SE4550000000058398257466",
    "PT50000201231234567890154",
    "IE29AIBK93115212345678",
    "NO9386011117947",
    "DK5000400440116243",
    "BR1800360305000010009795493C1",
];

const IBAN_SENTENCES: &[&str] = &[
    "Bitte überweisen Sie auf {}.",
    "IBAN : {}",
    "my account is {} thanks",
    "{}",
    "pay to {} by Friday",
];

fn iban_cases(rng: &mut Rng, out: &mut Vec<Case>) {
    for iban in IBANS {
        let spaced = grouped(iban, &[4; 9], " ");
        for (how, value) in [
            ("grouped", spaced.clone()),
            ("lower", iban.to_ascii_lowercase()),
            ("lower-grouped", spaced.to_ascii_lowercase()),
            ("dashed", grouped(iban, &[4; 9], "-")),
        ] {
            out.push(place(
                rng,
                &format!("iban/{how}"),
                Kind::Iban,
                value,
                IBAN_SENTENCES,
                &["iban", "account"],
            ));
        }
    }
}

// ---------------------------------------------------------------- negatives

/// Texts with no personal data of the four kinds.
fn negatives(rng: &mut Rng) -> Vec<Case> {
    let mut texts: Vec<String> = [
        // Order numbers, invoices, references.
        "Order #0123 4567 89 has shipped.",
        "order no. 2024-000123-77 confirmed",
        "Invoice INV-0042-1234567 is due.",
        "Bestellnummer 0042 1234 5678 wurde storniert.",
        "Ticket 0800-1234 reopened",
        "ref 2023/0456/789012",
        "SKU 0123-456-7890-12",
        // Timestamps and dates.
        "2024-03-05T12:34:56Z INFO started",
        "at 1709641234567 ms",
        "2024-03-05 12:34:56.789",
        "05.03.2024 14:22 Uhr",
        "01.02.2023 12:30",
        "le 06/12/2024 à 08:30",
        "14:22:01.123456",
        "2026-12-07 01:55:00+00:00",
        "20240305123456",
        "date 2024.03.05 10:15",
        "Sun, 06 Dec 2026 23:53:22 GMT",
        // Versions and builds.
        "Python 3.12.1 on linux",
        "Windows 10.0.19045.2965",
        "node v20.11.0 npm 10.2.4",
        "version 06.12.34.56",
        "chrome/120.0.6099.129",
        "build 0.9.12-rc.3 (2024)",
        // UUIDs, hex ids, hashes.
        "request 550e8400-e29b-41d4-a716-446655440000",
        "ptr 0x7ffde4a3b2c0 freed",
        "commit 9fceb02d0ae598e95dc970b74dd5b5c6c4b5a2f3",
        "id a3f5c2e1d4b6",
        "trace 4bf92f3577b34da6a3ce929d0e0e4736",
        // Tracking numbers.
        "UPS 1Z999AA10123456784",
        "USPS 9400 1000 0000 0000 0000 00",
        "DHL JD014600006107226101",
        "FedEx 7489 2014 2536",
        // Prices and amounts.
        "Total: €1 234,56",
        "$1,299.00 per seat",
        "1 299 € TTC",
        "Le budget est de 912 345 678 euros.",
        "population 1 402 112 000",
        "¥ 12 345 678",
        "Rs. 98,765.43",
        // Coordinates.
        "48.8566, 2.3522",
        "-33.8688, 151.2093",
        "lat 0.123456, lon 0.654321",
        // Book numbers.
        "ISBN 0 306 40615 2",
        "ISBN 978-3-16-148410-0",
        "ISBN 0-306-40615-2",
        // Numbers in code.
        "sleep(0.5); retry(3)",
        "int mask = 0755;",
        "arr = [0, 12, 34, 56, 78]",
        "0 12 * * 1 /usr/bin/backup",
        "ports 8080 8443 9090 3000",
        "x = 0123456789",
        "assert_eq!(f(06, 12), 34);",
        "matrix 01 02 03 04 05 06 07",
        "{\"ts\": 1709641234, \"n\": 42}",
        "{\"id\": 4155550132, \"ok\": true}",
        "{\"count\": 0, \"total\": 123456789}",
        // Versions of addresses and e-mail-like things that are not.
        "npm i left-pad@1.3.0",
        "git@github.com:org/repo.git",
        "ssh user@10.0.0.1",
        "@mention at 10:30",
        "pip install requests==2.31.0",
        "docker pull redis@sha256:0123",
        // IBAN-like that fail the check, upper and lower.
        "GB82WEST12345698765433",
        "gb82 west 1234 5698 7654 33",
        "de89370400440532013001",
        "ES91 2100 0418 4502 0005 1333",
        // Phone-like ids.
        "employee 0042 0000 1234",
        "serial 06 00 00 00 00 00 01",
        "IP 010.001.002.003",
        "MAC 00:1a:2b:3c:4d:5e",
        "zip 75001 75002",
        "scores 91 234 567 890 12",
        // Found reading source trees and system documentation.
        "51 Franklin St, Fifth Floor, Boston, MA 02110-1301 USA",
        "use any uids or gids in the 60000-64999 range",
        "// Prints: <Buffer 01 02 03 04 05>",
        "1FB7; 1FB7; 0391 0342 0345; 0391 0342 0399; # GREEK",
        "BR\t-0127-04829\tAmerica/Noronha",
        "<span class=\"hljs-string\">\"17179869184\"</span>",
        "git clone git@gitlab.com:group/project.git",
        "new URL('https://user:pass@sub.example.com:8080/p/a/t/h')",
        "Range of a Number variable: -2147483648 to 2147483647",
        "hotel booking 612345678 confirmed",
        "the number of rows was 9876543210",
        "(+1) 234 at the end",
        "SIREN 732 829 320, SIRET 732 829 320 00074",
        "Steuer-ID: 02 476 291 358",
        "N° TVA FR 40 303 265 045",
        "IMEI 0123 4567 8901 234",
        "FB03; FB03; 0046 0066 0069; 0046 0046 0049; # LATIN",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Ids of 12 to 19 digits that fail the Luhn check, with issuer-like
    // prefixes, alone and after id words.
    let prefixes = [
        "4", "51", "2221", "34", "36", "6011", "3528", "62", "5018", "2200", "60", "81", "1", "9",
    ];
    for _ in 0..60 {
        let len = 12 + rng.below(8) as usize;
        let prefix = rng.pick(&prefixes);
        let mut id = card(rng, prefix, len, false);
        while luhn_ok(id.as_bytes()) {
            id = card(rng, prefix, len, false);
        }
        let template = *rng.pick(&[
            "order {}",
            "id={}",
            "{\"user_id\": \"{}\"}",
            "tracking {}",
            "{}",
            "txn {} ok",
        ]);
        texts.push(template.replace("{}", &id));
    }
    // Luhn-valid ids of lengths and prefixes no network issues, without
    // a card word.
    for _ in 0..20 {
        let len = 12 + rng.below(8) as usize;
        let prefix = rng.pick(&["1", "9", "7", "8", "0"]);
        let id = card(rng, prefix, len, true);
        if ["18", "979", "81", "82", "0604", "1800"]
            .iter()
            .any(|p| id.starts_with(p))
        {
            continue;
        }
        texts.push(format!("object {id} archived"));
    }
    texts
        .into_iter()
        .map(|text| Case {
            label: "negative".to_string(),
            content_type: if text.starts_with('{') { JSON } else { TEXT },
            text,
            values: Vec::new(),
        })
        .collect()
}

/// The whole set, in a fixed order.
fn cases() -> Vec<Case> {
    let mut rng = Rng(0x5eed_1ce5_0000_0044);
    let mut out = Vec::new();
    card_cases(&mut rng, &mut out);
    phone_cases(&mut rng, &mut out);
    email_cases(&mut rng, &mut out);
    iban_cases(&mut rng, &mut out);
    out.extend(negatives(&mut rng));
    out
}

const KINDS: [Kind; 4] = [Kind::CreditCard, Kind::Phone, Kind::Email, Kind::Iban];

/// Each case with where its values lie (a JSON body holds a value
/// escaped only when it has non-ASCII or quotes; those are searched as
/// written and as escaped).
fn labelled() -> Vec<Labelled> {
    cases()
        .into_iter()
        .map(|case| {
            let spans = case
                .values
                .iter()
                .map(|(kind, value)| {
                    let at = case.text.find(value.as_str()).map(|s| (s, s + value.len()));
                    let at = at.or_else(|| {
                        let escaped = json_string(value);
                        let escaped = &escaped[1..escaped.len() - 1];
                        case.text.find(escaped).map(|s| (s, s + escaped.len()))
                    });
                    let (s, e) = at.expect("value in its text");
                    (*kind, s, e)
                })
                .collect();
            Labelled {
                label: case.label,
                content_type: case.content_type,
                text: case.text,
                spans,
            }
        })
        .collect()
}

/// Recall and precision each kind must keep on this set: (kind, recall,
/// precision).
const FLOORS: &[(Kind, f64, f64)] = &[
    (Kind::CreditCard, 0.98, 0.995),
    (Kind::Phone, 0.99, 0.995),
    (Kind::Email, 0.95, 0.995),
    (Kind::Iban, 0.99, 0.995),
];

#[test]
fn recall_and_precision_per_type() {
    let score = score(&labelled(), &KINDS);
    score.print();
    score.hold(FLOORS);
}

#[test]
fn the_generated_cards_pass_luhn() {
    let mut rng = Rng(7);
    for (_, prefixes, lengths) in ISSUERS {
        for prefix in *prefixes {
            for len in *lengths {
                let n = card(&mut rng, prefix, *len, true);
                assert_eq!(n.len(), *len);
                assert!(luhn_ok(n.as_bytes()), "{n}");
                assert!(!luhn_ok(card(&mut rng, prefix, *len, false).as_bytes()));
            }
        }
    }
    // A known number.
    assert!(luhn_ok(b"4111111111111111"));
}
