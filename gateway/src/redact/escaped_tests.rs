//! Escaped secrets against a reference that reads escapes its own plain
//! way: fixed tables, header values and names, the hold-back bound, and
//! secrets written with a random escape per character, in random text and
//! random chunks.

use std::sync::Arc;

use hyper::HeaderMap;
use hyper::header::{HeaderName, HeaderValue};

use super::MAX_ESCAPE;
use crate::redact::tests::{Rng, stream};
use crate::redact::{Needles, REPLACEMENT, Redactor, forms};

/// Every reading of `text` at `at`, the raw byte first, as (length of
/// text, bytes it stands for): the matcher's grammar, parsed apart from it.
fn readings(text: &[u8], at: usize) -> Vec<(usize, Vec<u8>)> {
    fn number(digits: &[u8], radix: u32) -> Option<u32> {
        let digits = std::str::from_utf8(digits).ok()?;
        // `from_str_radix` takes a sign, which no escape has.
        if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
            return None;
        }
        u32::from_str_radix(digits, radix).ok()
    }
    fn code_point(len: usize, value: u32, out: &mut Vec<(usize, Vec<u8>)>) {
        if let Some(c) = char::from_u32(value) {
            out.push((len, c.to_string().into_bytes()));
        }
        if let Ok(byte @ 0x80..) = u8::try_from(value) {
            out.push((len, vec![byte]));
        }
    }
    let rest = &text[at..];
    let mut out = vec![(1, vec![rest[0]])];
    if rest[0] == b'%' {
        if let Some(value) = rest.get(1..3).and_then(|h| number(h, 16)) {
            out.push((3, vec![u8::try_from(value).expect("two hex digits")]));
        }
    } else if rest.starts_with(b"\\u") {
        let Some(high) = rest.get(2..6).and_then(|h| number(h, 16)) else {
            return out;
        };
        if !(0xD800..0xDC00).contains(&high) {
            code_point(6, high, &mut out);
        } else if rest.get(6..8) == Some(b"\\u")
            && let Some(low) = rest.get(8..12).and_then(|h| number(h, 16))
            && (0xDC00..0xE000).contains(&low)
        {
            code_point(
                12,
                0x10000 + (high - 0xD800) * 0x400 + (low - 0xDC00),
                &mut out,
            );
        }
    } else if rest[0] == b'\\' {
        let short: [(u8, u8); 8] = [
            (b'"', b'"'),
            (b'\\', b'\\'),
            (b'/', b'/'),
            (b'b', 8),
            (b'f', 12),
            (b'n', b'\n'),
            (b'r', b'\r'),
            (b't', b'\t'),
        ];
        if let Some(&(_, byte)) = short.iter().find(|(c, _)| rest.get(1) == Some(c)) {
            out.push((2, vec![byte]));
        }
    } else if rest.starts_with(b"&#") {
        let (head, radix) = match rest.get(2) {
            Some(b'x' | b'X') => (3, 16),
            _ => (2, 10),
        };
        let digits = rest
            .get(head..)
            .unwrap_or_default()
            .iter()
            .take_while(|b| char::from(**b).is_digit(radix))
            .count();
        if let Some(value) = (digits <= 8)
            .then(|| number(&rest[head..head + digits], radix))
            .flatten()
        {
            code_point(head + digits, value, &mut out);
            if rest.get(head + digits) == Some(&b';') {
                code_point(head + digits + 1, value, &mut out);
            }
        }
    } else if rest[0] == b'&' {
        for (name, byte) in [
            ("amp;", b'&'),
            ("lt;", b'<'),
            ("gt;", b'>'),
            ("quot;", b'"'),
            ("apos;", b'\''),
        ] {
            if rest[1..].starts_with(name.as_bytes()) {
                out.push((1 + name.len(), vec![byte]));
            }
        }
    }
    out
}

/// The ends of the readings of `text` from `at` that spell `needle`.
fn spelled(text: &[u8], at: usize, needle: &[u8], ends: &mut Vec<usize>) {
    if needle.is_empty() {
        ends.push(at);
        return;
    }
    if at == text.len() {
        return;
    }
    for (len, bytes) in readings(text, at) {
        if let Some(rest) = needle.strip_prefix(bytes.as_slice()) {
            spelled(text, at + len, rest, ends);
        }
    }
}

/// The longest match at `at` over every reading, if any: its end.
fn longest_at(needles: &[Vec<u8>], text: &[u8], at: usize) -> Option<usize> {
    let mut ends = Vec::new();
    for needle in needles {
        spelled(text, at, needle, &mut ends);
    }
    ends.into_iter().max()
}

/// Leftmost-longest replacement over every reading, the slow way.
fn reference(needles: &[Vec<u8>], text: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < text.len() {
        match longest_at(needles, text, at) {
            Some(end) => {
                out.extend_from_slice(REPLACEMENT);
                at = end;
            }
            None => {
                out.push(text[at]);
                at += 1;
            }
        }
    }
    out
}

/// Checks one-shot and streaming (in `chunks`) redaction against the
/// reference; returns the output.
fn check(secret: &[u8], chunks: &[&[u8]]) -> Vec<u8> {
    let owned = forms(secret);
    let raw: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let needles = Arc::new(Needles::new(&raw, REPLACEMENT));
    let text = chunks.concat();
    let want = reference(&owned, &text);
    let oneshot = needles.replace_all(&text).unwrap_or_else(|| text.clone());
    assert_eq!(
        String::from_utf8_lossy(&oneshot),
        String::from_utf8_lossy(&want),
        "one-shot of {:?}",
        String::from_utf8_lossy(&text)
    );
    let streamed = stream(&needles, &raw, chunks);
    assert_eq!(
        String::from_utf8_lossy(&streamed),
        String::from_utf8_lossy(&want),
        "chunks {chunks:?}"
    );
    want
}

/// Whether any reading of `text` spells `secret` somewhere.
fn survives(secret: &[u8], text: &[u8]) -> bool {
    (0..text.len()).any(|at| longest_at(&[secret.to_vec()], text, at).is_some())
}

const SECRET: &[u8] = b"sk-live-0123456789abcdef";

#[test]
fn escaped_secrets_table() {
    let cases: &[(&str, &[u8])] = &[
        (
            "JSON \\u00XX, lower hex",
            b"\\u0073\\u006b\\u002d\\u006c\\u0069\\u0076\\u0065\\u002d\\u0030\\u0031\\u0032\\u0033\\u0034\\u0035\\u0036\\u0037\\u0038\\u0039\\u0061\\u0062\\u0063\\u0064\\u0065\\u0066",
        ),
        (
            "JSON \\u00XX, upper hex, partly",
            b"sk-live-\\u0030\\u0031\\u0032\\u0033\\u0034\\u0035\\u0036\\u0037\\u0038\\u0039\\u0061\\u0062\\u0063\\u0064\\u0065\\u0066",
        ),
        (
            "percent, every byte, upper",
            b"%73%6B%2D%6C%69%76%65%2D%30%31%32%33%34%35%36%37%38%39%61%62%63%64%65%66",
        ),
        (
            "percent, every byte, lower",
            b"%73%6b%2d%6c%69%76%65%2d%30%31%32%33%34%35%36%37%38%39%61%62%63%64%65%66",
        ),
        ("percent, one byte", b"sk%2dlive-0123456789abcdef"),
        (
            "HTML decimal, zero-padded, no last semicolon",
            b"&#115;&#107;&#045;&#0108;ive-0123456789abcde&#102",
        ),
        ("HTML hex, either x", b"&#x73;&#X6B;-live-0123456789abcde&#x66;"),
        ("mixed", b"s%6b\\u002dli&#118;e-0123456789ab&#x63;d%65\\u0066"),
    ];
    for (name, written) in cases {
        let text = [b"{\"echo\": \"" as &[u8], written, b"\"}"].concat();
        let out = check(SECRET, &[&text]);
        assert_eq!(
            String::from_utf8_lossy(&out),
            "{\"echo\": \"[redacted:credential]\"}",
            "{name}"
        );
        for size in [1, 2, 5, 13] {
            let chunks: Vec<&[u8]> = text.chunks(size).collect();
            check(SECRET, &chunks);
        }
    }
}

#[test]
fn secrets_with_escape_characters_and_non_ascii() {
    let secret = "p%41ss/\"w\\rd&é😀".as_bytes();
    let cases: &[&[u8]] = &[
        // As written: `%41` stays a literal percent and two digits.
        "p%41ss/\"w\\rd&é😀".as_bytes(),
        // JSON as serializers write it, `/` escaped or not.
        "p%41ss\\/\\\"w\\\\rd&\\u00e9\\ud83d\\ude00".as_bytes(),
        "p%41ss/\\\"w\\\\rd&é😀".as_bytes(),
        // Percent-encoded, the UTF-8 bytes one by one.
        b"p%2541ss%2F%22w%5Crd%26%C3%A9%F0%9F%98%80",
        // HTML: named and numeric references, the emoji's code point.
        b"p%41ss/&quot;w\\rd&amp;&#233;&#x1F600;",
        // Each byte of the UTF-8 as a code point of its own.
        b"p%41ss/\"w\\rd&\\u00c3\\u00a9&#xF0;&#x9F;&#x98;&#x80;",
    ];
    for written in cases {
        let text = [b"<p>" as &[u8], written, b"</p>"].concat();
        let out = check(secret, &[&text]);
        assert_eq!(
            String::from_utf8_lossy(&out),
            "<p>[redacted:credential]</p>",
            "{:?}",
            String::from_utf8_lossy(written)
        );
        for size in [1, 3, 7] {
            let chunks: Vec<&[u8]> = text.chunks(size).collect();
            check(secret, &chunks);
        }
    }
}

#[test]
fn what_is_not_read() {
    // References zero-padded past 8 digits, `%u`, `\x`, `+` for a space,
    // a lone surrogate: none of them stands for the byte.
    let cases: &[&[u8]] = &[
        b"&#0000000115;k-live-0123456789abcdef",
        b"%u0073k-live-0123456789abcdef",
        b"\\x73k-live-0123456789abcdef",
        b"\\U0073k-live-0123456789abcdef",
        b"sk-live-0123456789abcde\\ud800f",
    ];
    for text in cases {
        let out = check(SECRET, &[text]);
        assert_eq!(out, *text, "{:?}", String::from_utf8_lossy(text));
    }
}

#[test]
fn text_without_the_secret_is_not_held_back() {
    let needles = Arc::new(Needles::new(&[SECRET], REPLACEMENT));
    let mut redactor = Redactor::new(needles);
    // Ordinary escapes stand for bytes the secret does not have.
    let text = b"{\"a\": \"line\\none \\\"q\\\" %20 &amp; &#10;\"}";
    assert_eq!(redactor.push(text), text);
    // A needle's start, escaped or not, waits; an escape cut off waits.
    assert_eq!(redactor.push(b"x sk-li"), b"x ");
    assert_eq!(redactor.push(b"ne y \\u0073\\u006"), b"sk-line y ");
    assert_eq!(redactor.push(b"b%2"), b"");
    assert_eq!(redactor.push(b"0 z &#"), b"\\u0073\\u006b%20 z ");
    assert_eq!(redactor.finish(), b"&#");
    assert!(!redactor.matched());
}

/// A needle written in the longest escapes, fed a byte at a time: the
/// hold-back reaches its bound and never passes it.
#[test]
fn the_hold_back_is_bounded_by_the_longest_escape() {
    let needle: &[u8] = b"abc";
    let needles = Arc::new(Needles::new(&[needle], REPLACEMENT));
    assert_eq!(needles.max_held(), needle.len() * MAX_ESCAPE - 1);
    let written = b"&#x00000061;&#x00000062;&#x00000063;";
    let mut redactor = Redactor::new(Arc::clone(&needles));
    let mut out = Vec::new();
    let mut most = 0;
    for byte in written.iter() {
        out.extend(redactor.push(std::slice::from_ref(byte)));
        most = most.max(redactor.held_len());
        assert!(redactor.held_len() <= needles.max_held());
    }
    assert_eq!(most, needles.max_held());
    out.extend(redactor.finish());
    assert_eq!(out, REPLACEMENT);
}

#[test]
fn escaped_secrets_in_header_values_and_names() {
    let secret = "sk-live-AbC/123+xyz=";
    let needles = Needles::new(&[secret.as_bytes()], REPLACEMENT);
    let values: &[(&str, &str, &str)] = &[
        (
            "location",
            "https://app.test/cb?token=sk-live-AbC%2F123%2Bxyz%3D&state=1",
            "https://app.test/cb?token=[redacted:credential]&state=1",
        ),
        (
            "location",
            "/cb?t=%73%6b%2d%6c%69%76%65%2d%41%62%43%2f%31%32%33%2b%78%79%7a%3d",
            "/cb?t=[redacted:credential]",
        ),
        (
            "set-cookie",
            "t=\\u0073k-live-AbC\\/123+xyz\\u003d; Path=/",
            "t=[redacted:credential]; Path=/",
        ),
        (
            "x-echo",
            "sk-live-&#65;bC&#x2F;123&#43;xyz&#61;",
            "[redacted:credential]",
        ),
        ("x-other", "%41%62%43", "%41%62%43"),
    ];
    for (name, value, want) in values {
        let mut headers = HeaderMap::new();
        headers.insert(*name, HeaderValue::from_static(value));
        assert!(needles.redact_headers(&mut headers) == (value != want));
        assert_eq!(headers[*name], *want, "{value}");
    }
    // Header names arrive lower-cased, escapes and all.
    let mut headers = HeaderMap::new();
    let name = "x-sk-live-abc%2f123%2bxyz%3d";
    headers.insert(
        HeaderName::from_bytes(name.as_bytes()).expect("a token"),
        HeaderValue::from_static("1"),
    );
    headers.insert("x-fine", HeaderValue::from_static("2"));
    assert!(needles.redact_headers(&mut headers));
    assert_eq!(headers.len(), 1, "{headers:?}");
}

/// One character of a secret, written one of the ways an echo might.
fn write_char(rng: &mut Rng, c: char, out: &mut Vec<u8>) {
    let mut utf8 = [0; 4];
    let bytes = c.encode_utf8(&mut utf8).as_bytes();
    let value = u32::from(c);
    let upper = rng.below(2) == 0;
    let hex = |v: u32, width: usize| {
        if upper {
            format!("{v:0width$X}")
        } else {
            format!("{v:0width$x}")
        }
    };
    let written = match rng.below(7) {
        0 => String::from_utf8_lossy(bytes).into_owned(),
        1 if value < 0x10000 => format!("\\u{}", hex(value, 4)),
        1 => {
            let v = value - 0x10000;
            format!(
                "\\u{}\\u{}",
                hex(0xD800 + (v >> 10), 4),
                hex(0xDC00 + (v & 0x3ff), 4)
            )
        }
        2 => bytes
            .iter()
            .map(|&b| format!("%{}", hex(u32::from(b), 2)))
            .collect(),
        3 => format!("&#{}{value};", "0".repeat(rng.below(3))),
        4 => format!(
            "&#{}{}{};",
            if upper { "X" } else { "x" },
            "0".repeat(rng.below(3)),
            hex(value, 1)
        ),
        5 => match c {
            '"' | '\\' | '/' => format!("\\{c}"),
            '\n' => "\\n".to_owned(),
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '\'' => "&apos;".to_owned(),
            _ => c.to_string(),
        },
        // Per byte even where that is not how the encoding goes: each
        // byte of the UTF-8 as a code point.
        _ => bytes
            .iter()
            .map(|&b| format!("\\u{}", hex(u32::from(b), 4)))
            .collect(),
    };
    out.extend_from_slice(written.as_bytes());
}

/// Secrets with a random escape per character (JSON, percent, HTML, raw;
/// either case of hex), in random text holding escapes of its own, fed in
/// random chunks: the output is the one-shot's and the reference's, and
/// no reading of it spells the secret.
#[test]
fn randomly_escaped_secrets_in_random_chunks_never_survive() {
    const PLAIN: &[u8] = b"abcdefxyzABCXYZ0123456789-_./+=~";
    const SPECIAL: &[char] = &[
        '%', '&', '\\', '"', '#', ';', ' ', '\'', '<', 'é', '€', '😀',
    ];
    const FILLER: &[&str] = &[
        "a",
        "x",
        "0",
        "9",
        " ",
        "%",
        "%2",
        "\\",
        "\\n",
        "\\\"",
        "\\u00",
        "&",
        "&#",
        "&amp;",
        "&#10;",
        ";",
        "#",
        "%20",
        "{\"k\": \"",
        "\"}",
        "\\/",
    ];
    let mut rng = Rng(std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0fe5_ca9e_5eed));
    for round in 0..20000 {
        let secret: String = (0..8 + rng.below(20))
            .map(|_| {
                if rng.below(6) == 0 {
                    SPECIAL[rng.below(SPECIAL.len())]
                } else {
                    char::from(PLAIN[rng.below(PLAIN.len())])
                }
            })
            .collect();
        let mut text = Vec::new();
        for _ in 0..1 + rng.below(3) {
            for _ in 0..rng.below(8) {
                text.extend_from_slice(FILLER[rng.below(FILLER.len())].as_bytes());
            }
            for c in secret.chars() {
                write_char(&mut rng, c, &mut text);
            }
        }
        for _ in 0..rng.below(4) {
            text.extend_from_slice(FILLER[rng.below(FILLER.len())].as_bytes());
        }
        let mut chunks: Vec<&[u8]> = Vec::new();
        let mut rest = text.as_slice();
        while !rest.is_empty() {
            let (chunk, tail) = rest.split_at(rng.below(rest.len().min(24) + 1));
            chunks.push(chunk);
            rest = tail;
        }
        let out = check(secret.as_bytes(), &chunks);
        assert!(
            !survives(secret.as_bytes(), &out),
            "round {round}: {secret:?} in {:?} gave {:?}",
            String::from_utf8_lossy(&text),
            String::from_utf8_lossy(&out)
        );
    }
}
