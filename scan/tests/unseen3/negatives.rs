//! Sentences full of numbers that are none of the four kinds: order,
//! invoice and tracking numbers, timestamps, dates, versions, ids,
//! amounts, postcodes, ISBNs and barcodes, hashes, coordinates, SKUs,
//! tax, VAT and company numbers of many countries, device numbers that
//! carry a Luhn digit (IMEI, ICCID) and Luhn-passing ids outside every
//! card range, resolutions, sizes, ports, durations and stepped series.
//! The sentences (`negatives_table`) name their numbers with `<token>`s;
//! each is written three times with fresh numbers.

use super::Lang;
use super::cards::{ISSUERS, in_range};
use super::checks::digit_runs;
use super::negatives_table::TEMPLATES;
use crate::common::{Rng, luhn_digit, luhn_ok};

const HEX: &[u8] = b"0123456789abcdef";
const UPPER: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ";
const ALNUM: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ0123456789";

fn digits(rng: &mut Rng, n: usize) -> String {
    (0..n).map(|_| rng.digit() as char).collect()
}

fn from(rng: &mut Rng, set: &[u8], n: usize) -> String {
    (0..n).map(|_| *rng.pick(set) as char).collect()
}

fn between(rng: &mut Rng, low: u64, high: u64) -> u64 {
    low + rng.below(high - low + 1)
}

/// `body` completed with its Luhn digit.
fn luhn(body: String) -> String {
    let check = luhn_digit(body.as_bytes()) as char;
    format!("{body}{check}")
}

/// `body` (12 digits) completed with its EAN-13 / ISBN-13 check digit.
fn ean(body: String) -> String {
    let sum: u32 = body
        .bytes()
        .enumerate()
        .map(|(i, b)| u32::from(b - b'0') * if i % 2 == 0 { 1 } else { 3 })
        .sum();
    format!("{body}{}", (10 - sum % 10) % 10)
}

/// A Luhn-passing number of `len` digits that starts where no card
/// scheme's range does (0, 7, or 99).
fn luhn_outside(rng: &mut Rng, len: usize) -> String {
    let head = *rng.pick(&["0", "7", "99"]);
    let body = format!("{head}{}", digits(rng, len - 1 - head.len()));
    luhn(body)
}

fn date(rng: &mut Rng) -> (u64, u64, u64) {
    (
        between(rng, 1, 28),
        between(rng, 1, 12),
        between(rng, 2019, 2027),
    )
}

fn time(rng: &mut Rng) -> String {
    format!(
        "{:02}:{:02}:{:02}",
        rng.below(24),
        rng.below(60),
        rng.below(60)
    )
}

/// One number of the kind `token` names.
pub fn token(rng: &mut Rng, token: &str) -> String {
    match token {
        "order" => {
            let width = between(rng, 5, 7) as usize;
            let prefix = rng.pick(&["ORD", "PO", "SO", "BST", "CMD"]);
            format!("{prefix}-2026-{}", digits(rng, width))
        }
        "amazon" => format!("{}-{}-{}", digits(rng, 3), digits(rng, 7), digits(rng, 7)),
        "invoice" => format!(
            "{}{}-{:05}",
            rng.pick(&["INV-", "RE-", "FA-", "FT ", "NF-"]),
            between(rng, 2024, 2026),
            rng.below(100_000)
        ),
        "ups" => format!("1Z{}03{}", from(rng, ALNUM, 6), digits(rng, 8)),
        "usps" => {
            let n = format!("9400{}", digits(rng, 18));
            crate::common::grouped(&n, &[4; 6], " ")
        }
        "fedex" => format!("7{} {} {}", digits(rng, 3), digits(rng, 4), digits(rng, 4)),
        "dhl" => format!("JJD{}", digits(rng, 18)),
        "unix" => format!("17{}", digits(rng, 8)),
        "unixms" => format!("17{}", digits(rng, 11)),
        "iso" => {
            let (d, m, _) = date(rng);
            format!("2026-{m:02}-{d:02}T{}.{}Z", time(rng), digits(rng, 3))
        }
        "date" => {
            let (d, m, y) = date(rng);
            match rng.below(4) {
                0 => format!("{d:02}.{m:02}.{y}"),
                1 => format!("{d:02}/{m:02}/{y}"),
                2 => format!("{y}-{m:02}-{d:02}"),
                _ => format!("{m}/{d}/{y}"),
            }
        }
        "time" => time(rng),
        "version" => match rng.below(3) {
            0 => format!("v{}.{}.{}", rng.below(20), rng.below(40), rng.below(100)),
            1 => format!("10.0.{}.{}", between(rng, 19041, 26100), rng.below(6000)),
            _ => format!(
                "{}.{}.{}-rc.{}",
                rng.below(5),
                rng.below(90),
                rng.below(10),
                rng.below(9) + 1
            ),
        },
        "uuid" => format!(
            "{}-{}-4{}-{}-{}",
            from(rng, HEX, 8),
            from(rng, HEX, 4),
            from(rng, HEX, 3),
            from(rng, HEX, 4),
            from(rng, HEX, 12)
        ),
        "sha" => from(rng, HEX, 40),
        "short" => from(rng, HEX, 7),
        "hex" => format!("0x7ff{}", from(rng, HEX, 9)),
        "mac" => (0..6)
            .map(|_| from(rng, HEX, 2))
            .collect::<Vec<_>>()
            .join(":"),
        "coord" => format!(
            "{}{}.{}, {}.{}",
            if rng.below(3) == 0 { "-" } else { "" },
            rng.below(80),
            digits(rng, 6),
            rng.below(180),
            digits(rng, 6)
        ),
        "isbn" => {
            let n = ean(format!("978{}", digits(rng, 9)));
            format!(
                "{}-{}-{}-{}-{}",
                &n[..3],
                &n[3..4],
                &n[4..8],
                &n[8..12],
                &n[12..]
            )
        }
        "ean" => ean(format!(
            "{}{}",
            rng.pick(&["400", "500", "560", "690", "760", "871", "890"]),
            digits(rng, 9)
        )),
        "sku" => format!(
            "{}-{}-{}",
            from(rng, UPPER, 3),
            digits(rng, 5),
            rng.pick(&["BLK-XL", "WHT-M", "42", "EU39", "500ML"])
        ),
        "imei" => luhn(format!("35{}", digits(rng, 12))),
        "iccid" => {
            let n = luhn(format!("894{}", digits(rng, 15)));
            crate::common::grouped(&n, &[4; 5], " ")
        }
        "luhn16" => luhn_outside(rng, 16),
        "luhn19" => luhn_outside(rng, 19),
        "siret" => {
            let first = *rng.pick(&["4", "5", "7", "8", "9"]);
            let siren = luhn(format!("{first}{}", digits(rng, 7)));
            let siret = luhn(format!("{siren}{}", digits(rng, 4)));
            format!(
                "{} {} {} {}",
                &siret[..3],
                &siret[3..6],
                &siret[6..9],
                &siret[9..]
            )
        }
        "siren" => {
            let s = luhn(digits(rng, 8));
            format!("{} {} {}", &s[..3], &s[3..6], &s[6..])
        }
        "vat" => match rng.below(12) {
            0 => format!("DE{}", digits(rng, 9)),
            1 => format!("FR{}{}", digits(rng, 2), digits(rng, 9)),
            2 => format!("NL{}B0{}", digits(rng, 9), between(rng, 1, 9)),
            3 => format!("ATU{}", digits(rng, 8)),
            4 => format!("IT{}", digits(rng, 11)),
            5 => format!("ESB{}", digits(rng, 8)),
            6 => format!("BE0{}", digits(rng, 9)),
            7 => format!("PL{}", digits(rng, 10)),
            8 => format!("SE{}01", digits(rng, 10)),
            9 => format!(
                "GB {} {} {}",
                digits(rng, 3),
                digits(rng, 4),
                digits(rng, 2)
            ),
            10 => format!(
                "CHE-{}.{}.{} MWST",
                digits(rng, 3),
                digits(rng, 3),
                digits(rng, 3)
            ),
            _ => format!("DK{}", digits(rng, 8)),
        },
        "steuernr" => format!("{}/{}/{}", digits(rng, 2), digits(rng, 3), digits(rng, 5)),
        "gstin" => format!(
            "{:02}{}{}{}1Z{}",
            between(rng, 1, 37),
            from(rng, UPPER, 5),
            digits(rng, 4),
            from(rng, UPPER, 1),
            from(rng, ALNUM, 1)
        ),
        "pan" => {
            format!(
                "{}P{}{}",
                from(rng, UPPER, 3),
                from(rng, UPPER, 1),
                digits(rng, 4)
            ) + &from(rng, UPPER, 1)
        }
        "cnpj" => format!(
            "{}.{}.{}/0001-{}",
            digits(rng, 2),
            digits(rng, 3),
            digits(rng, 3),
            digits(rng, 2)
        ),
        "cpf" => format!(
            "{}.{}.{}-{}",
            digits(rng, 3),
            digits(rng, 3),
            digits(rng, 3),
            digits(rng, 2)
        ),
        "abn" => format!(
            "{} {} {} {}",
            between(rng, 11, 99),
            digits(rng, 3),
            digits(rng, 3),
            digits(rng, 3)
        ),
        "uscc" => format!("91{}MA{}", digits(rng, 6), from(rng, ALNUM, 10)),
        "jpcorp" => format!("T{}", digits(rng, 13)),
        "orgnr" => format!("55{}-{}", digits(rng, 4), digits(rng, 4)),
        "nip" => format!(
            "{}-{}-{}-{}",
            digits(rng, 3),
            digits(rng, 3),
            digits(rng, 2),
            digits(rng, 2)
        ),
        "vkn" => digits(rng, 10),
        // Saudi VAT registration: fifteen digits, first and last 3.
        "savat" => format!("3{}3", digits(rng, 13)),
        "inn" => format!("77{}", digits(rng, 8)),
        "ogrn" => format!("10{}", digits(rng, 11)),
        "krbiz" => format!("{}-{}-{}", digits(rng, 3), digits(rng, 2), digits(rng, 5)),
        "rfc" => format!(
            "{}{}{}",
            from(rng, UPPER, 4),
            digits(rng, 6),
            from(rng, ALNUM, 3)
        ),
        "ein" => format!("{}-{}", digits(rng, 2), digits(rng, 7)),
        "kvk" => digits(rng, 8),
        "crn" => format!("0{}", digits(rng, 7)),
        "bic" => (*rng.pick(&[
            "DEUTDEFF",
            "COBADEFFXXX",
            "BNPAFRPP",
            "INGBNL2A",
            "BSCHESMM",
            "UNCRITMM",
        ]))
        .to_string(),
        "amount" => match rng.below(12) {
            0 => format!(
                "€{}.{},{}",
                between(rng, 1, 99),
                digits(rng, 3),
                digits(rng, 2)
            ),
            1 => format!(
                "{} {},{} €",
                between(rng, 1, 99),
                digits(rng, 3),
                digits(rng, 2)
            ),
            2 => format!(
                "${},{}.{}",
                between(rng, 1, 999),
                digits(rng, 3),
                digits(rng, 2)
            ),
            3 => format!("¥{},{}", between(rng, 1, 999), digits(rng, 3)),
            4 => format!(
                "₹{},{},{}",
                between(rng, 1, 99),
                digits(rng, 2),
                digits(rng, 3)
            ),
            5 => format!(
                "R$ {}.{},{}",
                between(rng, 1, 99),
                digits(rng, 3),
                digits(rng, 2)
            ),
            6 => format!("{} {} ₽", between(rng, 1, 999), digits(rng, 3)),
            7 => format!(
                "₩{},{},{}",
                between(rng, 1, 99),
                digits(rng, 3),
                digits(rng, 3)
            ),
            8 => format!(
                "CHF {}'{}.{}",
                between(rng, 1, 99),
                digits(rng, 3),
                digits(rng, 2)
            ),
            9 => format!(
                "{} {},{} zł",
                between(rng, 1, 99),
                digits(rng, 3),
                digits(rng, 2)
            ),
            10 => format!(
                "Rp {}.{}.{}",
                between(rng, 1, 99),
                digits(rng, 3),
                digits(rng, 3)
            ),
            _ => format!(
                "₺{}.{},{}",
                between(rng, 1, 99),
                digits(rng, 3),
                digits(rng, 2)
            ),
        },
        "resolution" => (*rng.pick(&[
            "1920x1080",
            "2560 × 1440",
            "3840x2160",
            "1280x720",
            "3440 x 1440",
            "1080×2400",
        ]))
        .to_string(),
        "size" => match rng.below(3) {
            0 => format!("{} MB", 1u64 << between(rng, 8, 14)),
            1 => format!("{},{} GB", between(rng, 1, 64), rng.below(10)),
            _ => format!("{} bytes", between(rng, 100_000, 99_999_999)),
        },
        "port" => format!(
            "{}:{}",
            rng.pick(&["localhost", "127.0.0.1", "db.internal", "0.0.0.0"]),
            rng.pick(&["8080", "8443", "5432", "6379", "3000", "27017", "9200"])
        ),
        "ms" => format!("{} ms", between(rng, 3, 99_999)),
        "series" => {
            let start = *rng.pick(&[1u64, 100, 128, 250, 1000, 1024, 2048]);
            let step = rng.below(2);
            let n = between(rng, 5, 8);
            (0..n)
                .map(|i| {
                    if step == 0 {
                        start << i
                    } else {
                        start * (i + 1)
                    }
                })
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(*rng.pick(&[", ", " ", " / "]))
        }
        "stepids" => {
            let start = between(rng, 100_000, 99_999_999);
            (0..between(rng, 3, 6))
                .map(|i| (start + i).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
        "ticket" => format!(
            "{}-{}",
            rng.pick(&["JIRA", "OPS", "SUP", "INC"]),
            between(rng, 100, 99_999)
        ),
        "booking" => from(rng, UPPER, 6),
        "flight" => format!(
            "{} {}",
            rng.pick(&["LH", "AF", "BA", "NH", "TK", "QR", "LA", "EK"]),
            between(rng, 10, 9999)
        ),
        "vin" => format!("WVWZZZ{}{}", from(rng, ALNUM, 5), digits(rng, 6)),
        "ip" => format!(
            "10.{}.{}.{}",
            rng.below(256),
            rng.below(256),
            between(rng, 1, 254)
        ),
        "percent" => format!("{},{}%", rng.below(100), rng.below(10)),
        "count" => between(rng, 10_000, 9_999_999).to_string(),
        other => panic!("no generator for <{other}>"),
    }
}

/// Whether `s` holds a Luhn-valid run of a card issuer's range and
/// length: a barcode or tax number can be one by chance (a 13-digit EAN
/// starting with 4, a Saudi VAT number starting with 34), and such a
/// number is a card for any reader, so it is drawn again.
pub fn card_like(s: &str) -> bool {
    digit_runs(s).iter().any(|run| {
        (12..=19).contains(&run.len())
            && luhn_ok(run.as_bytes())
            && ISSUERS.iter().any(|i| in_range(i, run))
    })
}

/// `template` with each `<token>` replaced by a fresh number.
pub fn instantiate(rng: &mut Rng, template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('>').expect("a closed token") + open;
        let name = &rest[open + 1..close];
        let mut number = token(rng, name);
        while card_like(&number) {
            number = token(rng, name);
        }
        out.push_str(&number);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Every template written three times: (language, class, sentence).
pub fn sentences(rng: &mut Rng) -> Vec<(Lang, &'static str, String)> {
    let mut out = Vec::new();
    for _ in 0..3 {
        for &(lang, class, template) in TEMPLATES {
            out.push((lang, class, instantiate(rng, template)));
        }
    }
    out
}
