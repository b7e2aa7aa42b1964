//! The request bodies that carry the values, as agents send them: chat
//! bodies of both model APIs, a tool result holding a JSON record as an
//! escaped string, a form post, CSV, a support ticket, an email thread,
//! plain and JSON log lines. Each writes its chunk of values (and the
//! negative sentences given to it) in its own syntax and language.

use sluice_scan::Kind;

use super::body::{Body, Enc, Written};
use super::{Lang, Value, emails};
use crate::common::{Labelled, Rng};

/// What one body carries: the language, the values and the negative
/// sentences to write, and its number in the set (for its label).
pub struct Chunk {
    pub lang: Lang,
    pub values: Vec<Value>,
    pub negatives: Vec<String>,
    pub n: usize,
}

pub type Carrier = fn(&mut Rng, &Chunk) -> Body;

pub const CARRIERS: &[(&str, Carrier)] = &[
    ("openai_chat", openai_chat),
    ("anthropic_messages", anthropic_messages),
    ("tool_result", tool_result),
    ("form", form),
    ("csv", csv),
    ("ticket", ticket),
    ("email_thread", email_thread),
    ("log", log),
    ("ndjson_log", ndjson_log),
];

const SYSTEM: &str = "You are the assistant of a small company's customer service team. \
    Answer in the customer's language and never invent order details.";

/// A set's bodies: every value dealt by language into bodies of one to
/// four values and one negative sentence each, then every negative
/// sentence again in bodies of three with no value; `carriers` write them
/// in turn. Each set calls it with its own seed's `rng`, values and
/// sentences.
pub fn deal(
    rng: &mut Rng,
    values: &[Value],
    negatives: &[(Lang, &'static str, String)],
    carriers: &[(&str, Carrier)],
) -> Vec<(Labelled, Vec<Written>)> {
    let mut chunks = Vec::new();
    for lang in Lang::ALL {
        let mut mine: Vec<Value> = values.iter().filter(|v| v.lang == lang).cloned().collect();
        shuffle(rng, &mut mine);
        let own: Vec<&String> = negatives
            .iter()
            .filter(|(l, _, _)| *l == lang)
            .map(|(_, _, s)| s)
            .collect();
        let mut next = 0;
        while !mine.is_empty() {
            let take = (rng.below(4) as usize + 1).min(mine.len());
            let values: Vec<Value> = mine.drain(..take).collect();
            let negatives = vec![own[next % own.len()].clone()];
            next += 1;
            chunks.push((lang, values, negatives));
        }
    }
    let mut pure: Vec<&(Lang, &str, String)> = negatives.iter().collect();
    shuffle(rng, &mut pure);
    for three in pure.chunks(3) {
        let lang = three[0].0;
        let negatives = three.iter().map(|(_, _, s)| s.clone()).collect();
        chunks.push((lang, Vec::new(), negatives));
    }
    chunks
        .into_iter()
        .enumerate()
        .map(|(n, (lang, values, negatives))| {
            let chunk = Chunk {
                lang,
                values,
                negatives,
                n,
            };
            let (_, carrier) = carriers[n % carriers.len()];
            carrier(rng, &chunk).finish()
        })
        .collect()
}

pub fn shuffle<T>(rng: &mut Rng, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        items.swap(i, rng.below(i as u64 + 1) as usize);
    }
}

fn body(name: &str, chunk: &Chunk, content_type: &'static str) -> Body {
    Body::new(
        format!("{name}/{}/{}", chunk.lang.code(), chunk.n),
        content_type,
    )
}

/// One value in one of its language's sentences.
fn sentence(b: &mut Body, rng: &mut Rng, lang: Lang, v: &Value) {
    let template = rng.pick(lang.sentences(v.kind));
    let (before, after) = template.split_once("{}").expect("a {} in each sentence");
    b.text(before).value(v).text(&v.after).text(after);
}

/// The values in sentences and the negatives between them, in an order
/// drawn afresh, separated by spaces or line breaks.
fn prose(b: &mut Body, rng: &mut Rng, chunk: &Chunk) {
    let mut items: Vec<Result<&Value, &String>> = chunk.values.iter().map(Ok).collect();
    items.extend(chunk.negatives.iter().map(Err));
    shuffle(rng, &mut items);
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            b.text(if rng.below(3) == 0 { "\n" } else { " " });
        }
        match item {
            Ok(v) => sentence(b, rng, chunk.lang, v),
            Err(s) => {
                b.text(s);
            }
        }
    }
}

fn name(rng: &mut Rng, lang: Lang) -> String {
    let (first, last) = rng.pick(lang.names());
    format!("{first} {last}")
}

/// The field a value goes in, in the language's forms.
fn field(kind: Kind, lang: Lang) -> &'static str {
    let [phone, email, card] = match lang {
        Lang::De => ["telefon", "e_mail", "kartennummer"],
        Lang::Fr => ["telephone", "courriel", "numero_carte"],
        Lang::Es => ["telefono", "correo", "numero_tarjeta"],
        Lang::Pt => ["telefone", "email", "numero_cartao"],
        Lang::It => ["telefono", "email", "numero_carta"],
        Lang::Nl => ["telefoonnummer", "emailadres", "kaartnummer"],
        Lang::Pl => ["telefon", "email", "numer_karty"],
        _ => ["phone", "email", "card_number"],
    };
    match kind {
        Kind::Phone => phone,
        Kind::Email => email,
        Kind::CreditCard => card,
        _ => "iban",
    }
}

/// Field names for the chunk's values, numbered when one repeats.
fn fields(chunk: &Chunk) -> Vec<String> {
    let values = &chunk.values;
    (0..values.len())
        .map(|i| {
            let base = field(values[i].kind, chunk.lang);
            match values[..i]
                .iter()
                .filter(|w| w.kind == values[i].kind)
                .count()
            {
                0 => base.to_string(),
                seen => format!("{base}_{}", seen + 1),
            }
        })
        .collect()
}

/// A moment in the first week of December 2026, ISO 8601 without zone.
pub fn time(rng: &mut Rng) -> String {
    format!(
        "2026-12-0{}T{:02}:{:02}:{:02}",
        rng.below(7) + 1,
        rng.below(24),
        rng.below(60),
        rng.below(60)
    )
}

fn openai_chat(rng: &mut Rng, chunk: &Chunk) -> Body {
    let json = Enc::Json {
        ascii: rng.below(3) == 0,
    };
    let mut b = body("openai_chat", chunk, "application/json");
    b.lit(r#"{"model":"gpt-4o-mini","temperature":0.2,"messages":[{"role":"system","content":""#);
    b.open(json).text(SYSTEM).close();
    b.lit(r#""},{"role":"user","content":""#).open(json);
    b.text(chunk.lang.ask()).text("\n\n");
    prose(&mut b, rng, chunk);
    b.close().lit(r#""}],"stream":true}"#);
    b
}

fn anthropic_messages(rng: &mut Rng, chunk: &Chunk) -> Body {
    let json = Enc::Json {
        ascii: rng.below(3) == 0,
    };
    let mut b = body("anthropic_messages", chunk, "application/json");
    b.lit(r#"{"model":"claude-sonnet-4-5","max_tokens":1024,"system":""#);
    b.open(json).text(SYSTEM).close();
    b.lit(r#"","messages":[{"role":"user","content":[{"type":"text","text":""#);
    b.open(json).text(chunk.lang.ask()).close();
    b.lit(r#""},{"type":"text","text":""#).open(json);
    prose(&mut b, rng, chunk);
    b.close().lit(r#""}]}]}"#);
    b
}

/// A customer record as a tool returned it: JSON inside a JSON string
/// (Python's `json.dumps` escapes non-ASCII; the outer body may not),
/// in the OpenAI or the Anthropic shape by turns.
fn tool_result(rng: &mut Rng, chunk: &Chunk) -> Body {
    let outer = Enc::Json {
        ascii: rng.below(2) == 0,
    };
    let inner = Enc::Json { ascii: true };
    let id = rng.fill("C-######");
    // OpenAI's shape and Anthropic's by turns.
    let openai = chunk.n.is_multiple_of(2);
    let call = format!(
        "{}{}",
        if openai { "call_" } else { "toolu_01" },
        hexish(rng)
    );
    let mut b = body("tool_result", chunk, "application/json");
    if openai {
        b.lit(r#"{"model":"gpt-4o","messages":[{"role":"user","content":"Update the customer's contact details."},"#);
        b.lit(&format!(
            r#"{{"role":"assistant","tool_calls":[{{"id":"{call}","type":"function","function":{{"name":"lookup_customer","arguments":"{{\"customer_id\":\"{id}\"}}"}}}}]}},"#
        ));
        b.lit(&format!(
            r#"{{"role":"tool","tool_call_id":"{call}","content":""#
        ));
    } else {
        b.lit(r#"{"model":"claude-sonnet-4-5","max_tokens":2048,"messages":[{"role":"user","content":"Update the customer's contact details."},"#);
        b.lit(&format!(
            r#"{{"role":"assistant","content":[{{"type":"tool_use","id":"{call}","name":"lookup_customer","input":{{"customer_id":"{id}"}}}}]}},"#
        ));
        b.lit(&format!(
            r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"{call}","content":""#
        ));
    }
    b.open(outer);
    b.text(&format!(r#"{{"id":"{id}","name":""#));
    b.open(inner).text(&name(rng, chunk.lang)).close();
    for (v, f) in chunk.values.iter().zip(fields(chunk)) {
        b.text(&format!(r#"","{f}":""#))
            .open(inner)
            .value(v)
            .close();
    }
    b.text(r#"","note":""#);
    b.open(inner).text(&chunk.negatives.join(" ")).close();
    b.text(&format!(r#"","updated_at":"{}Z"}}"#, time(rng)));
    b.close();
    b.lit(if openai { r#""}]}"# } else { r#""}]}]}"# });
    b
}

fn hexish(rng: &mut Rng) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789";
    (0..22).map(|_| char::from(*rng.pick(ALPHABET))).collect()
}

fn form(rng: &mut Rng, chunk: &Chunk) -> Body {
    let mut b = body("form", chunk, "application/x-www-form-urlencoded");
    b.lit("name=")
        .open(Enc::Form)
        .text(&name(rng, chunk.lang))
        .close();
    for (v, f) in chunk.values.iter().zip(fields(chunk)) {
        b.lit(&format!("&{f}=")).open(Enc::Form).value(v).close();
    }
    b.lit("&message=")
        .open(Enc::Form)
        .text(&chunk.negatives.join("\n"))
        .close();
    b.lit("&consent=on&_token=")
        .lit(&hexish(rng))
        .lit("&submit=Send");
    b
}

/// A contacts export, `;`-separated where spreadsheets use the decimal
/// comma; a cell in quotes when it needs them, the notes always.
fn csv(rng: &mut Rng, chunk: &Chunk) -> Body {
    let sep = match chunk.lang {
        Lang::En | Lang::Hi | Lang::Ja => ",",
        _ => ";",
    };
    let mut b = body("csv", chunk, "text/csv");
    b.lit(
        &[
            "id",
            "name",
            "contact",
            "type",
            "source",
            "updated_at",
            "note",
        ]
        .join(sep),
    );
    b.lit("\r\n");
    let rows = chunk.values.len().max(1);
    for i in 0..rows {
        b.lit(&format!(
            "{}{sep}{}{sep}",
            rng.fill("1####"),
            name(rng, chunk.lang)
        ));
        if let Some(v) = chunk.values.get(i) {
            if v.text.contains('"') || v.text.contains(sep) {
                b.lit("\"").open(Enc::CsvQuoted).value(v).close().lit("\"");
            } else {
                b.value(v);
            }
            b.lit(&format!("{sep}{}{sep}{}", v.kind.as_str(), v.origin));
        } else {
            b.lit(&format!("{sep}note{sep}"));
        }
        b.lit(&format!("{sep}{}{sep}", time(rng).replace('T', " ")));
        if i == 0 {
            b.lit("\"")
                .open(Enc::CsvQuoted)
                .text(&chunk.negatives.join(" "))
                .close()
                .lit("\"");
        }
        b.lit("\r\n");
    }
    b
}

fn ticket(rng: &mut Rng, chunk: &Chunk) -> Body {
    let mut b = body("ticket", chunk, "text/plain; charset=utf-8");
    b.lit(&rng.fill("Ticket 4#### · Priority: normal · Channel: web\n"));
    b.lit(&format!("Subject: {}\n", chunk.lang.subject()));
    b.lit(&format!("Opened: {} UTC\n\n", time(rng).replace('T', " ")));
    prose(&mut b, rng, chunk);
    b.lit(&format!("\n\n--\n{}\n", name(rng, chunk.lang)));
    b
}

/// A reply with its headers (the sender's address is a value too) and the
/// quoted message below it, holding the negatives.
fn email_thread(rng: &mut Rng, chunk: &Chunk) -> Body {
    let mut b = body("email_thread", chunk, "text/plain; charset=utf-8");
    let (sender, from) = emails::sender(rng, chunk.lang);
    b.lit(&format!("From: {sender} <")).value(&from).lit(">\n");
    b.lit("To: Customer Care\n");
    let clock = time(rng)[11..].to_string();
    b.lit(&format!("Date: Mon, 7 Dec 2026 {clock} +0100\n"));
    b.lit(&format!("Subject: Re: {}\n\n", chunk.lang.subject()));
    let fresh = Chunk {
        lang: chunk.lang,
        values: chunk.values.clone(),
        negatives: Vec::new(),
        n: chunk.n,
    };
    prose(&mut b, rng, &fresh);
    b.lit(&format!("\n\n{}\n", chunk.lang.quote_header()));
    for line in &chunk.negatives {
        b.lit(&format!("> {line}\n"));
    }
    b
}

/// logfmt lines: a value in a quoted field, a negative as a message.
fn log(rng: &mut Rng, chunk: &Chunk) -> Body {
    let mut b = body("log", chunk, "text/plain");
    let stamp = |rng: &mut Rng| format!("{}.{:03}Z", time(rng), rng.below(1000));
    for (v, f) in chunk.values.iter().zip(fields(chunk)) {
        b.lit(&format!(
            "{} INFO  crm.sync: contact updated id={} field={f} value=\"",
            stamp(rng),
            rng.fill("8####")
        ));
        b.open(Enc::Json { ascii: false }).value(v).close();
        b.lit(&format!("\" took={}ms\n", rng.below(900) + 3));
    }
    for s in &chunk.negatives {
        b.lit(&format!("{} WARN  worker: msg=\"", stamp(rng)));
        b.open(Enc::Json { ascii: false })
            .text(s)
            .close()
            .lit("\"\n");
    }
    b
}

/// JSON lines as structured loggers write them, one event a line.
fn ndjson_log(rng: &mut Rng, chunk: &Chunk) -> Body {
    let json = Enc::Json { ascii: false };
    let mut b = body("ndjson_log", chunk, "application/x-ndjson");
    for (v, f) in chunk.values.iter().zip(fields(chunk)) {
        b.lit(&format!(
            r#"{{"ts":"{}Z","level":"info","msg":"contact updated","field":"{f}","value":""#,
            time(rng)
        ));
        b.open(json).value(v).close().lit("\"}\n");
    }
    for s in &chunk.negatives {
        b.lit(&format!(
            r#"{{"ts":"{}Z","level":"warn","msg":""#,
            time(rng)
        ));
        b.open(json).text(s).close().lit("\"}\n");
    }
    b
}
