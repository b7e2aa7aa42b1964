//! A second multi-locale PII set, written after the detectors and never
//! tuned on (issue #44's held-out figure): payment cards of many issuers,
//! telephone numbers of sixteen countries as their people write them,
//! internationalised email addresses and IBANs of twenty-four countries,
//! each inside the bodies a gateway sees (chat requests of both model APIs,
//! a tool result holding a JSON record as a string, form posts, CSV, a
//! support ticket), beside numbers that are none of those (orders,
//! invoices, timestamps, dates, versions, parcels, barcodes, postcodes,
//! amounts, populations).
//!
//! The set was committed before it was first scored; the figures in the
//! README are that first scoring. `FLOORS` holds today's figures so that
//! a change that loses some is seen; a detector change made by looking at
//! this set's misses would make its figures worthless, so misses found
//! here go into `pii_world` or unit tests first.
//!
//! `cargo test -p sluice-scan --test pii_locales -- --nocapture` prints the
//! table and every miss.

mod common;

use common::{Labelled, Rng, grouped, luhn_digit, luhn_ok, score};
use sluice_scan::Kind;

// ------------------------------------------------------------- contexts

const TEXT: &str = "text/plain";
const JSON: &str = "application/json";
const FORM: &str = "application/x-www-form-urlencoded";
const CSV: &str = "text/csv";

/// Where a sentence holding a value is put; the value is encoded as the
/// context requires, and its span is where the encoded value lies.
#[derive(Clone, Copy)]
enum Context {
    Ticket,
    OpenAiChat,
    AnthropicMessages,
    ToolRecord,
    Form,
    Csv,
}

const CONTEXTS: [Context; 6] = [
    Context::Ticket,
    Context::OpenAiChat,
    Context::AnthropicMessages,
    Context::ToolRecord,
    Context::Form,
    Context::Csv,
];

/// A JSON string's inside (no quotes).
fn json_inner(s: &str) -> String {
    let quoted = serde_json::to_string(s).expect("json");
    quoted[1..quoted.len() - 1].to_string()
}

/// A form field's value as a browser sends it.
fn form_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// What a form field's value decodes to.
fn form_decode(s: &str) -> String {
    let mut out = Vec::new();
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hex: String = bytes.by_ref().take(2).map(char::from).collect();
                out.push(u8::from_str_radix(&hex, 16).expect("hex"));
            }
            b => out.push(b),
        }
    }
    String::from_utf8(out).expect("UTF-8")
}

/// The body of `context` around `sentence` (which holds `{}` once) with
/// `value` in it, and where the value lies in the body.
fn body(
    context: Context,
    sentence: &str,
    field: &str,
    value: &str,
) -> (&'static str, String, usize, usize) {
    let (before, after) = sentence.split_once("{}").expect("a sentence holds {}");
    match context {
        Context::Ticket => {
            let head =
                format!("Ticket #48213 (priority: normal)\nFrom: support portal\n\n{before}");
            let text = format!("{head}{value}{after}\n\n-- \nSent from the help desk\n");
            (TEXT, text, head.len(), head.len() + value.len())
        }
        Context::OpenAiChat => {
            let head = format!(
                r#"{{"model":"gpt-4o-mini","temperature":0.2,"messages":[{{"role":"system","content":"You are a helpful assistant for a travel agency."}},{{"role":"user","content":"{}"#,
                json_inner(before)
            );
            let v = json_inner(value);
            let text = format!("{head}{v}{}\"}}]}}", json_inner(after));
            (JSON, text, head.len(), head.len() + v.len())
        }
        Context::AnthropicMessages => {
            let head = format!(
                r#"{{"model":"claude-x","max_tokens":1024,"messages":[{{"role":"user","content":[{{"type":"text","text":"{}"#,
                json_inner(before)
            );
            let v = json_inner(value);
            let text = format!("{head}{v}{}\"}}]}}]}}", json_inner(after));
            (JSON, text, head.len(), head.len() + v.len())
        }
        Context::ToolRecord => {
            // A CRM lookup's answer, a JSON record inside a JSON string.
            let record_head = format!(r#"{{"id":90211,"status":"active","{field}":""#);
            let record_tail = r#"","updated":"2024-11-02T08:15:00Z"}"#;
            let head = format!(
                r#"{{"model":"gpt-4o","messages":[{{"role":"user","content":"Look the customer up."}},{{"role":"tool","tool_call_id":"call_7","content":"{}"#,
                json_inner(&record_head)
            );
            let v = json_inner(&json_inner(value));
            let text = format!("{head}{v}{}\"}}]}}", json_inner(record_tail));
            (JSON, text, head.len(), head.len() + v.len())
        }
        Context::Form => {
            let head = format!("name=Sam+Okafor&{field}=");
            let v = form_encode(value);
            // The free text beside the field, without the value.
            let comment = form_encode(&format!("{before}{after}"));
            let text = format!("{head}{v}&comment={comment}&consent=on");
            (FORM, text, head.len(), head.len() + v.len())
        }
        Context::Csv => {
            // A field with a comma is quoted, as spreadsheets write it.
            let quote = if value.contains(',') { "\"" } else { "" };
            let head = format!("id,name,{field},city\n1041,Mia Lindqvist,{quote}");
            let text = format!("{head}{value}{quote},Uppsala\n1042,Tomasz Wrona,,Gdańsk\n");
            (CSV, text, head.len(), head.len() + value.len())
        }
    }
}

/// One body holding `value` of `kind`, in a context drawn at random.
fn case(
    rng: &mut Rng,
    label: &str,
    kind: Kind,
    value: &str,
    sentences: &[&str],
    field: &str,
) -> Labelled {
    let context = *rng.pick(&CONTEXTS);
    let sentence = rng.pick(sentences);
    let (content_type, text, s, e) = body(context, sentence, field, value);
    Labelled {
        label: label.to_string(),
        content_type,
        text,
        spans: vec![(kind, s, e)],
    }
}

// ---------------------------------------------------------------- cards

/// Issuers: name, IIN prefixes, lengths, and how each length is grouped
/// when written with separators.
const ISSUERS: &[(&str, &[&str], &[usize])] = &[
    (
        "visa",
        &["4", "4026", "417500", "4508", "4844", "4913"],
        &[16, 13, 19],
    ),
    (
        "mastercard",
        &["51", "53", "55", "2221", "2410", "2720"],
        &[16],
    ),
    ("amex", &["34", "37"], &[15]),
    (
        "discover",
        &["6011", "622126", "622925", "644", "649", "65"],
        &[16, 19],
    ),
    ("diners", &["300", "305", "36", "38"], &[14]),
    ("jcb", &["3528", "3540", "3589"], &[16, 19]),
    ("unionpay", &["62", "621", "6229", "6288"], &[16, 19]),
    (
        "maestro",
        &[
            "5018", "5020", "5038", "5893", "6304", "6759", "6761", "6763",
        ],
        &[12, 13, 16, 18, 19],
    ),
    ("mir", &["2200", "2202", "2204"], &[16]),
    ("rupay", &["508", "60", "6521", "81", "82"], &[16]),
    (
        "elo",
        &["401178", "438935", "504175", "636368", "650031"],
        &[16],
    ),
    ("hipercard", &["606282"], &[16]),
    ("verve", &["506099", "650002"], &[16, 19]),
    ("troy", &["9792"], &[16]),
    ("dankort", &["5019"], &[16]),
    ("instapayment", &["637", "639"], &[16]),
];

/// How a card of `len` digits is grouped when spaced.
fn card_groups(issuer: &str, len: usize) -> &'static [usize] {
    match (issuer, len) {
        ("amex", 15) => &[4, 6, 5],
        ("diners", 14) => &[4, 6, 4],
        (_, 19) => &[4, 4, 4, 4, 3],
        (_, 18) => &[4, 4, 4, 4, 2],
        (_, 13) => &[4, 4, 5],
        (_, 12) => &[4, 4, 4],
        _ => &[4, 4, 4, 4],
    }
}

fn card_number(rng: &mut Rng, prefix: &str, len: usize) -> String {
    let mut d: Vec<u8> = prefix.bytes().collect();
    while d.len() < len - 1 {
        d.push(rng.digit());
    }
    d.push(luhn_digit(&d));
    String::from_utf8(d).expect("digits")
}

const CARD_SENTENCES: &[&str] = &[
    "Hi, I'd like to update my payment method to {} please.",
    "Bitte buchen Sie den Betrag von der Karte {} ab.",
    "Voici ma nouvelle carte bancaire : {}, expiration 11/28.",
    "He cambiado de tarjeta, la nueva es {}.",
    "Potete addebitare sulla carta {} il saldo?",
    "Graag afschrijven van creditcard {}.",
    "Pode cobrar no cartão {}, validade 03/29.",
    "新しいカードは {} です。",
    "Proszę obciążyć kartę {} za zamówienie.",
    "Dra beloppet från kort {} tack.",
    "Payment failed for card ending in the number {}; retry?",
    "card={} cvc=***",
];

const CARD_FIELDS: &[&str] = &["card", "pan", "card_no", "payment"];

fn cards(rng: &mut Rng, out: &mut Vec<Labelled>) {
    for (issuer, prefixes, lengths) in ISSUERS {
        for prefix in *prefixes {
            for &len in *lengths {
                let number = card_number(rng, prefix, len);
                let written = match rng.below(4) {
                    0 => number.clone(),
                    1 => grouped(&number, card_groups(issuer, len), "-"),
                    _ => grouped(&number, card_groups(issuer, len), " "),
                };
                let field = rng_field(rng, CARD_FIELDS);
                let label = format!("card {issuer} {len}");
                out.push(case(
                    rng,
                    &label,
                    Kind::CreditCard,
                    &written,
                    CARD_SENTENCES,
                    field,
                ));
            }
        }
    }
}

/// A field name (drawn before the case, so the draw order is fixed).
fn rng_field(rng: &mut Rng, fields: &[&'static str]) -> &'static str {
    fields[rng.below(fields.len() as u64) as usize]
}

// --------------------------------------------------------------- phones

/// Countries: name and the ways their numbers are written (`#` a digit,
/// `%` a digit from 1 to 9).
const PHONES: &[(&str, &[&str])] = &[
    (
        "uk",
        &[
            "020 7%## ####",
            "(020) 8%## ####",
            "+44 20 7%## ####",
            "+44 (0)20 7%## ####",
            "07%## ######",
            "07%##-######",
            "+44 7%## ######",
            "0113 4%# ####",
            "(0161) 4%# ####",
            "01632 9%####",
        ],
    ),
    (
        "germany",
        &[
            "030 %######",
            "(030) %## ## ###",
            "030/%#######",
            "089 / %### ####",
            "0171 %######",
            "0151-%#######",
            "+49 30 %#######",
            "+49 (0)89 %### ####",
            "+49 170 %######",
            "0049 40 %######",
        ],
    ),
    (
        "france",
        &[
            "01 4# ## ## ##",
            "06 %# ## ## ##",
            "07.%#.##.##.##",
            "04-%#-##-##-##",
            "+33 1 4# ## ## ##",
            "+33 (0)6 %# ## ## ##",
            "+33 6 %# ## ## ##",
            "0033 7 %# ## ## ##",
        ],
    ),
    (
        "spain",
        &[
            "91 %## ## ##",
            "93 %## ## ##",
            "6%# ### ###",
            "6%# ## ## ##",
            "+34 91 %## ## ##",
            "+34 6%# ### ###",
            "0034 6%#######",
        ],
    ),
    (
        "italy",
        &[
            "06 %### ####",
            "02 %#######",
            "(06) %#######",
            "3%# ### ####",
            "3%#-#######",
            "+39 06 %### ####",
            "+39 3%# #######",
            "+39 02 %### ####",
        ],
    ),
    (
        "netherlands",
        &[
            "020 %## ####",
            "010-%######",
            "06 %#######",
            "06-%#######",
            "06 %# ## ## ##",
            "+31 20 %## ####",
            "+31 (0)6 %#######",
            "+31 6 %#######",
        ],
    ),
    (
        "india",
        &[
            "9%### #####",
            "8%###-#####",
            "+91 9%### #####",
            "+91-7%###-#####",
            "+91 9%########",
            "022 2### ####",
            "(022) 2#######",
            "011-2### ####",
            "080 4### ####",
        ],
    ),
    (
        "brazil",
        &[
            "(11) 9%###-####",
            "(21) 3%##-####",
            "11 9%###-####",
            "(31) 9 %###-####",
            "+55 11 9%###-####",
            "+55 (21) 3%##-####",
            "+55 61 9%### ####",
        ],
    ),
    (
        "japan",
        &[
            "03-%###-####",
            "06-6%##-####",
            "090-%###-####",
            "080-%###-####",
            "(03) %###-####",
            "03 %### ####",
            "+81 3-%###-####",
            "+81 90-%###-####",
            "+81 80 %### ####",
        ],
    ),
    (
        "australia",
        &[
            "(02) 9### ####",
            "02 9### ####",
            "(03) 9### ####",
            "04%# ### ###",
            "04%#-###-###",
            "+61 2 9### ####",
            "+61 4%# ### ###",
            "+61 (0)4%# ### ###",
        ],
    ),
    (
        "mexico",
        &[
            "55 %### ####",
            "+52 55 %### ####",
            "+52 1 55 %### ####",
            "(33) %### ####",
        ],
    ),
    (
        "poland",
        &[
            "5%# ### ###",
            "+48 5%# ### ###",
            "22 %## ## ##",
            "+48 22 %## ## ##",
        ],
    ),
    (
        "sweden",
        &[
            "08-%## ### ##",
            "070-%## ## ##",
            "+46 70 %## ## ##",
            "+46 8 %## ### ##",
        ],
    ),
    (
        "switzerland",
        &[
            "044 %## ## ##",
            "079 %## ## ##",
            "+41 44 %## ## ##",
            "+41 79 %## ## ##",
        ],
    ),
    (
        "south-africa",
        &[
            "011 %## ####",
            "082 %## ####",
            "+27 82 %## ####",
            "+27 11 %## ####",
        ],
    ),
    (
        "korea",
        &[
            "010-%###-####",
            "02-%##-####",
            "+82 10-%###-####",
            "+82 2 %### ####",
        ],
    ),
];

const PHONE_SENTENCES: &[&str] = &[
    "You can reach me on {} after 6pm.",
    "Meine Telefonnummer: {}",
    "Rappelez-moi au {} s'il vous plaît.",
    "Mi número de teléfono es el {}.",
    "Chiamami al {} quando puoi.",
    "Bel me gerust op {}.",
    "Meu telefone é {} (WhatsApp).",
    "電話番号は {} です。",
    "Mera number {} hai, call kar dena.",
    "Zadzwoń pod {} jutro.",
    "Ring mig på {} i morgon.",
    "Contact: Dr. Lee, tel. {}",
    "The courier should call {} on arrival.",
    "phone: {}",
];

const PHONE_FIELDS: &[&str] = &["phone", "tel", "mobile", "contact_number"];

fn phones(rng: &mut Rng, out: &mut Vec<Labelled>) {
    for (country, templates) in PHONES {
        for template in *templates {
            for _ in 0..3 {
                let value = rng.fill(template);
                let field = rng_field(rng, PHONE_FIELDS);
                let label = format!("phone {country} {template}");
                out.push(case(
                    rng,
                    &label,
                    Kind::Phone,
                    &value,
                    PHONE_SENTENCES,
                    field,
                ));
            }
        }
    }
}

// --------------------------------------------------------------- emails

const LOCAL_PARTS: &[&str] = &[
    "josé.martínez",
    "françois.lefèvre",
    "jürgen.weiß",
    "søren",
    "zoë.o'brien",
    "иван.петров",
    "наталья",
    "γιώργος",
    "山田太郎",
    "李雷",
    "राहुल",
    "أحمد",
    "maria.silva+orders",
    "j_smith-2",
    "Anna.Kowalska",
    "ops.team",
];

const DOMAINS: &[&str] = &[
    "correo.es",
    "exemple.fr",
    "münchen.de",
    "bücher.example",
    "почта.рф",
    "пример.рус",
    "παράδειγμα.ελ",
    "例え.jp",
    "公司.中国",
    "उदाहरण.भारत",
    "xn--mnchen-3ya.de",
    "mail.co.uk",
    "empresa.com.br",
    "studio.photography",
    "uni-heidelberg.de",
    "exemplo.pt",
];

const EMAIL_SENTENCES: &[&str] = &[
    "Send the invoice to {} please.",
    "Meine E-Mail-Adresse lautet {}.",
    "Écrivez-moi à {}.",
    "Mi correo es {}",
    "メールアドレス: {}",
    "Пишите на {}",
    "cc {} on the reply",
    "email={}",
];

const EMAIL_FIELDS: &[&str] = &["email", "mail", "contact"];

fn emails(rng: &mut Rng, out: &mut Vec<Labelled>) {
    for local in LOCAL_PARTS {
        for _ in 0..6 {
            let domain = rng.pick(DOMAINS);
            let value = format!("{local}@{domain}");
            let field = rng_field(rng, EMAIL_FIELDS);
            out.push(case(
                rng,
                "email",
                Kind::Email,
                &value,
                EMAIL_SENTENCES,
                field,
            ));
        }
    }
}

// ---------------------------------------------------------------- ibans

/// Countries: code and the national part (`#` a digit, `A` a capital
/// letter, `X` a letter or digit).
const IBANS: &[(&str, &str)] = &[
    ("DE", "##################"),
    ("GB", "AAAA##############"),
    ("FR", "#####################X#"),
    ("ES", "####################"),
    ("IT", "A######################"),
    ("NL", "AAAA##########"),
    ("BE", "############"),
    ("CH", "#####XXXXXXXXXXXX"),
    ("AT", "################"),
    ("PL", "########################"),
    ("PT", "#####################"),
    ("IE", "AAAA##############"),
    ("SE", "####################"),
    ("DK", "##############"),
    ("NO", "###########"),
    ("FI", "##############"),
    ("LU", "###XXXXXXXXXXXXX"),
    ("SA", "##XXXXXXXXXXXXXXXXXX"),
    ("AE", "###################"),
    ("BR", "#######################AX"),
    ("TR", "#####0XXXXXXXXXXXXXXXX"),
    ("GR", "#######XXXXXXXXXXXXXXXX"),
    ("RO", "AAAAXXXXXXXXXXXXXXXX"),
    ("MT", "AAAA#####XXXXXXXXXXXXXXXXXX"),
];

/// The national part drawn from `template`.
fn bban(rng: &mut Rng, template: &str) -> String {
    const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    template
        .chars()
        .map(|c| match c {
            '#' => rng.digit() as char,
            'A' => LETTERS[rng.below(26) as usize] as char,
            'X' => {
                if rng.below(3) == 0 {
                    LETTERS[rng.below(26) as usize] as char
                } else {
                    rng.digit() as char
                }
            }
            c => c,
        })
        .collect()
}

/// `country` + check digits + `bban`: ISO 13616's mod 97.
fn iban(country: &str, bban: &str) -> String {
    let rearranged = format!("{bban}{country}00");
    let mut rem = 0u32;
    for c in rearranged.chars() {
        let v = c.to_digit(36).expect("alphanumeric");
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    format!("{country}{:02}{bban}", 98 - rem)
}

fn iban_ok(iban: &str) -> bool {
    let rearranged = format!("{}{}", &iban[4..], &iban[..4]);
    let mut rem = 0u32;
    for c in rearranged.chars() {
        let v = c.to_digit(36).expect("alphanumeric");
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

const IBAN_SENTENCES: &[&str] = &[
    "Please wire the refund to {}.",
    "Meine IBAN ist {}, BIC folgt.",
    "Mon IBAN : {}",
    "Transferencia a la cuenta {}",
    "IBAN {} intestato a Rossi",
    "Rekeningnummer: {}",
    "iban={}",
];

const IBAN_FIELDS: &[&str] = &["iban", "account", "bank_account"];

fn ibans(rng: &mut Rng, out: &mut Vec<Labelled>) {
    for (country, template) in IBANS {
        for _ in 0..4 {
            let value = iban(country, &bban(rng, template));
            let written = match rng.below(4) {
                0 => value.clone(),
                1 => grouped(&value, &[4; 8], " "),
                2 => grouped(&value.to_lowercase(), &[4; 8], " "),
                _ => value.to_lowercase(),
            };
            let field = rng_field(rng, IBAN_FIELDS);
            let label = format!("iban {country}");
            out.push(case(
                rng,
                &label,
                Kind::Iban,
                &written,
                IBAN_SENTENCES,
                field,
            ));
        }
    }
}

// ------------------------------------------------------------ negatives

/// Numbers that are none of the scored kinds, in the sentences they come
/// in.
const NEGATIVES: &[&str] = &[
    "Your order 4021-5517-8830 has shipped.",
    "Bestellnummer 302 114 987 ist unterwegs.",
    "Rechnung Nr. 2024001873 vom 14.03.2024",
    "Facture n° FA-2024-000193, échéance 30/04/2024.",
    "Pedido 1000283746 confirmado el 2024-05-12.",
    "Numero d'ordine 7712 3390 1184",
    "Build 22631.3296 installed; version 10.0.22631.3296.",
    "Upgraded from v3.11.7 to v3.12.2 (build 20240402.1).",
    "ts=1712345678901 level=info msg=\"request done\" dur=0.034",
    "2024-04-05T19:34:38.901+02:00 GET /api/v2/items 200 812 bytes",
    "epoch 1712345678 -> 2024-04-05 19:34:38 UTC",
    "Parcel 1Z 999 AA1 01 2345 6784 is out for delivery.",
    "Sendungsnummer 00340434161234567890 (DHL)",
    "ISBN 978-3-16-148410-0, 2. Auflage",
    "EAN 4006381333931, Stückpreis 12,99 €",
    "Barcode 5901234123457 scanned at till 4",
    "Total: 1.234.567,89 € (inkl. MwSt.)",
    "Population of the metro area: 12 345 678 (2021 census).",
    "Coordinates 48.858844, 2.294351 (Eiffel Tower)",
    "SKU 100-2003-4005-600 restocked",
    "Case 00123456 was escalated to tier 2.",
    "Incident INC0012345678 resolved.",
    "Postcodes: 75008 Paris, 10115 Berlin, 28013 Madrid, 1012 AB Amsterdam",
    "Meeting on 15/03/2024 at 14:30, room 3.14.",
    "Duration 01:23:45.678, 1 234 567 890 bytes transferred",
    "pid 48213 tid 48219 fd 17 rss 102400 KiB",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "request-id 550e8400-e29b-41d4-a716-446655440000",
    "Serial number SN 5CG1234XYZ, firmware 2.0.45.1203",
    "Flight LH 2024 departs 06:45, seat 23C, booking ref 7TQ9KD",
    "Container MSCU 123456 7 arrived at berth 12.",
    "Lottery draw: 04 11 23 35 42 49, bonus 07",
    "Matrix row: 3 1 4 1 5 9 2 6 5 3 5 8 9 7 9",
    "Tracking 9400 1000 0000 0000 0000 00 (USPS)",
    "Account 12345678 sort code listing is in the attachment.",
    "Invoice total 4 560,00 kr, due 2024-06-30",
    "Ticket price ¥12,800, order ID 2024-0501-88231",
    "Temperature log: 21.5 21.7 21.9 22.1 22.4 22.8",
    "Chapter 12, verses 3-17; pages 101-145",
    "The checksum 4111 1111 1111 1112 did not validate.",
    "Ref 6011 0000 0000 0005 is a test number that fails Luhn?",
    "UUID 123e4567-e89b-12d3-a456-426614174000 not found",
    "Sequence 2024 2025 2026 2027 2028",
    "Version 1.2.3.4567.89 of the driver",
    "Zählerstand 004512.7 kWh am 01.02.2024",
    "Numéro SIRET 732 829 320 00074",
    "Matricola 00123456, reparto 12",
    "Bestelldatum 2024-03-15 09:12:44, Menge 3",
    "Kurs 1,0842 USD/EUR um 16:05:03",
    "Process exited with code 137 after 3600 s",
];

fn negatives(out: &mut Vec<Labelled>) {
    for (i, sentence) in NEGATIVES.iter().enumerate() {
        for context in CONTEXTS {
            // The sentence is the field's value (so every context holds
            // it) and nothing is labelled: any card, phone, email or IBAN
            // found in it is a false positive.
            let (content_type, text, _, _) = body(context, "Note: {}", "note", sentence);
            out.push(Labelled {
                label: format!("negative {i}"),
                content_type,
                text,
                spans: Vec::new(),
            });
        }
    }
}

fn cases() -> Vec<Labelled> {
    let mut rng = Rng(0x10ca_1e5e_7000_0044);
    let mut out = Vec::new();
    cards(&mut rng, &mut out);
    phones(&mut rng, &mut out);
    emails(&mut rng, &mut out);
    ibans(&mut rng, &mut out);
    negatives(&mut out);
    out
}

const KINDS: [Kind; 4] = [Kind::CreditCard, Kind::Phone, Kind::Email, Kind::Iban];

/// Recall and precision each kind keeps on this set: (kind, recall,
/// precision), rounded down from its scoring of 2026-12-07; phones, IBANs
/// and cards' precision from their second, after the national numbering
/// plans, the lower-case IBANs with letters and the EAN-13 barcodes (the
/// set's misses seen by then; each became a unit test first).
const FLOORS: &[(Kind, f64, f64)] = &[
    (Kind::CreditCard, 0.99, 0.99),
    (Kind::Phone, 0.99, 0.995),
    (Kind::Email, 0.99, 0.995),
    (Kind::Iban, 0.99, 0.995),
];

#[test]
fn recall_and_precision_per_type() {
    let score = score(&cases(), &KINDS);
    score.print();
    score.hold(FLOORS);
}

/// The set is what it says: every span holds its value, cards pass Luhn,
/// IBANs pass mod 97 (checked without the scanner).
#[test]
fn the_set_is_well_formed() {
    let cases = cases();
    for case in &cases {
        for &(kind, s, e) in &case.spans {
            let span = &case.text[s..e];
            assert!(!span.is_empty(), "{}", case.label);
            let plain: String = if case.content_type == FORM {
                form_decode(span)
            } else {
                span.to_string()
            };
            let digits: Vec<u8> = plain.bytes().filter(u8::is_ascii_digit).collect();
            match kind {
                Kind::CreditCard => assert!(luhn_ok(&digits), "{span}"),
                Kind::Iban => {
                    let solid: String = plain
                        .chars()
                        .filter(|c| !c.is_whitespace())
                        .collect::<String>()
                        .to_uppercase();
                    assert!(iban_ok(&solid), "{span}");
                }
                Kind::Phone => assert!((8..=15).contains(&digits.len()), "{span}"),
                _ => {}
            }
        }
        if case.content_type == JSON {
            serde_json::from_str::<serde_json::Value>(&case.text).expect("valid JSON");
        }
    }
    let count = |kind| {
        cases
            .iter()
            .flat_map(|c| &c.spans)
            .filter(|s| s.0 == kind)
            .count()
    };
    assert!(count(Kind::CreditCard) >= 100);
    assert!(count(Kind::Phone) >= 300);
    assert!(count(Kind::Email) >= 90);
    assert!(count(Kind::Iban) >= 90);
}
