//! Bodies the earlier sets do not write, as agents send them: a vCard
//! (contacts exported for a tool), an HTML page (a scraped contact or
//! checkout page, emails as `mailto:` links), a chat message ending in an
//! email signature, and a CRM export as a JSON list of records. Each
//! writes its chunk's values and negative sentences like the shared
//! carriers do, so the set's checks read them alike.

use sluice_scan::Kind;

use super::body::{Body, Enc};
use super::carriers::{Carrier, Chunk, shuffle, time};
use super::{Lang, Value};
use crate::common::Rng;

pub const MORE: &[(&str, Carrier)] = &[
    ("vcard", vcard),
    ("html", html),
    ("signature", signature),
    ("json_records", json_records),
];

fn body(name: &str, chunk: &Chunk, content_type: &'static str) -> Body {
    Body::new(
        format!("{name}/{}/{}", chunk.lang.code(), chunk.n),
        content_type,
    )
}

fn person(rng: &mut Rng, lang: Lang) -> (String, String) {
    let &(first, last) = rng.pick(lang.names());
    (first.to_string(), last.to_string())
}

/// The label a value goes under in a signature or on a page.
fn label(kind: Kind, lang: Lang) -> &'static str {
    let [phone, email, card, iban] = match lang {
        Lang::De => ["Tel.", "E-Mail", "Karte", "IBAN"],
        Lang::Fr => ["Tél.", "Courriel", "Carte", "IBAN"],
        Lang::Es => ["Tel.", "Correo", "Tarjeta", "IBAN"],
        Lang::Pt => ["Tel.", "E-mail", "Cartão", "IBAN"],
        Lang::It => ["Tel.", "E-mail", "Carta", "IBAN"],
        Lang::Nl => ["Tel.", "E-mail", "Kaart", "IBAN"],
        Lang::Pl => ["Tel.", "E-mail", "Karta", "IBAN"],
        Lang::Ja => ["電話", "メール", "カード", "IBAN"],
        Lang::Zh => ["电话", "邮箱", "卡号", "IBAN"],
        Lang::Ko => ["전화", "이메일", "카드", "IBAN"],
        Lang::Ru => ["Тел.", "Эл. почта", "Карта", "IBAN"],
        Lang::Tr => ["Tel", "E-posta", "Kart", "IBAN"],
        Lang::Ar => ["هاتف", "البريد", "البطاقة", "IBAN"],
        Lang::Sv => ["Tfn", "E-post", "Kort", "IBAN"],
        _ => ["Phone", "Email", "Card", "IBAN"],
    };
    match kind {
        Kind::Phone => phone,
        Kind::Email => email,
        Kind::CreditCard => card,
        _ => iban,
    }
}

/// vCard 3.0: phones as `TEL`, emails as `EMAIL`, cards and IBANs and
/// the negatives in `NOTE` lines (commas escaped as the format asks).
fn vcard(rng: &mut Rng, chunk: &Chunk) -> Body {
    let mut b = body("vcard", chunk, "text/vcard; charset=utf-8");
    let (first, last) = person(rng, chunk.lang);
    b.lit("BEGIN:VCARD\r\nVERSION:3.0\r\n");
    b.lit(&format!("N:{last};{first};;;\r\nFN:{first} {last}\r\n"));
    b.lit(&format!(
        "ORG:{}\r\n",
        chunk.lang.subject().replace([',', ';'], " ")
    ));
    for v in &chunk.values {
        match v.kind {
            Kind::Phone => {
                let kind = *rng.pick(&["CELL", "WORK,VOICE", "HOME", "VOICE"]);
                b.lit(&format!("TEL;TYPE={kind}:")).value(v).lit("\r\n");
            }
            Kind::Email => {
                b.lit("EMAIL;TYPE=INTERNET,WORK:").value(v).lit("\r\n");
            }
            kind => {
                b.lit(&format!("NOTE:{}: ", label(kind, chunk.lang)))
                    .value(v)
                    .lit("\r\n");
            }
        }
    }
    for line in &chunk.negatives {
        b.lit(&format!(
            "NOTE:{}\r\n",
            line.replace(',', "\\,").replace(';', "\\;")
        ));
    }
    b.lit(&format!("REV:{}Z\r\nEND:VCARD\r\n", time(rng)));
    b
}

/// A scraped page: a contact table (emails as `mailto:` links), the
/// negatives as paragraphs.
fn html(rng: &mut Rng, chunk: &Chunk) -> Body {
    let mut b = body("html", chunk, "text/html; charset=utf-8");
    b.lit(&format!(
        "<!DOCTYPE html>\n<html lang=\"{}\"><head><meta charset=\"utf-8\"><title>{}</title></head>\n<body>\n<table class=\"contact\">\n",
        chunk.lang.code(),
        chunk.lang.subject()
    ));
    let mut items: Vec<Result<&Value, &String>> = chunk.values.iter().map(Ok).collect();
    items.extend(chunk.negatives.iter().map(Err));
    shuffle(rng, &mut items);
    for item in items {
        match item {
            Ok(v) if v.kind == Kind::Email => {
                b.lit(&format!(
                    "<tr><th>{}</th><td><a href=\"mailto:",
                    label(v.kind, chunk.lang)
                ))
                .value(v)
                .lit("\">✉</a></td></tr>\n");
            }
            Ok(v) => {
                b.lit(&format!("<tr><th>{}</th><td>", label(v.kind, chunk.lang)))
                    .value(v)
                    .lit("</td></tr>\n");
            }
            Err(s) => {
                b.lit("<tr><td colspan=\"2\"><p>")
                    .lit(&s.replace('&', "&amp;"))
                    .lit("</p></td></tr>\n");
            }
        }
    }
    b.lit("</table>\n</body></html>\n");
    b
}

/// A chat message whose text is the negatives and whose values sit in the
/// sender's signature, one per line under its label.
fn signature(rng: &mut Rng, chunk: &Chunk) -> Body {
    let json = Enc::Json {
        ascii: rng.below(3) == 0,
    };
    let (first, last) = person(rng, chunk.lang);
    let mut b = body("signature", chunk, "application/json");
    b.lit(r#"{"model":"gpt-4.1","messages":[{"role":"user","content":""#);
    b.open(json);
    b.text(chunk.lang.ask()).text("\n\n");
    b.text(&chunk.negatives.join("\n"));
    b.text(&format!("\n\n--\n{first} {last}\n"));
    for v in &chunk.values {
        let sep = if rng.below(2) == 0 { ": " } else { " " };
        b.text(label(v.kind, chunk.lang))
            .text(sep)
            .value(v)
            .text("\n");
    }
    b.close().lit(r#""}]}"#);
    b
}

/// A CRM export: a JSON list of contact records, one value a record.
fn json_records(rng: &mut Rng, chunk: &Chunk) -> Body {
    let json = Enc::Json {
        ascii: rng.below(4) == 0,
    };
    let mut b = body("json_records", chunk, "application/json");
    b.lit(r#"{"object":"list","data":["#);
    for (i, v) in chunk.values.iter().enumerate() {
        let (first, last) = person(rng, chunk.lang);
        let field = match v.kind {
            Kind::Phone => "phone",
            Kind::Email => "email",
            Kind::CreditCard => "card_number",
            _ => "iban",
        };
        if i > 0 {
            b.lit(",");
        }
        b.lit(&format!(
            r#"{{"id":"cus_{}","name":""#,
            rng.fill("########")
        ));
        b.open(json).text(&format!("{first} {last}")).close();
        b.lit(&format!(r#"","{field}":""#))
            .open(json)
            .value(v)
            .close();
        b.lit(&format!(r#"","created":"{}Z"}}"#, time(rng)));
    }
    b.lit(r#"],"notes":""#).open(json);
    b.text(&chunk.negatives.join(" "));
    b.close().lit(r#"","has_more":false}"#);
    b
}
