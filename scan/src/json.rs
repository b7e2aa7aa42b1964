//! JSON bodies: the strings are what people and models write, so they are
//! what is scanned. Quotes and backslashes are found 64 bytes at a time
//! ([`specials`]); a string without a backslash is scanned in place, as
//! part of the raw stretch around it; a string with escapes (`\n`,
//! `\u0040`, `\"`) is decoded, as its escapes are met, with a map from each
//! decoded byte back to the body, so findings point at the original bytes.
//! A body with such strings has all its stretches laid out end to end
//! ([`lay_out`]) for one engine call that scans each as if alone.
//!
//! Raw stretches include the structure between strings (keys, numbers,
//! punctuation): quotes and brackets end every token, and a number outside a
//! string (`"card": 4111111111111111`) is still found.
//!
//! [`tape`] checks a body and lays it out by shape, for readers that need
//! to know where a string sits (the injection detector's extraction).

mod blocks;
mod specials;
pub(crate) mod tape;

use std::ops::Range;

pub(crate) use super::engine::SEPARATOR;
use super::segment::Decoded;
use specials::Specials;

/// One stretch of a JSON body to scan.
pub(crate) enum Stretch {
    /// `body[start..end]` as it is.
    Raw { start: usize, end: usize },
    /// The decoded content of one string: this range of `scratch`.
    Decoded(Range<usize>),
}

/// Lays the stretches of `body` out end to end in `out` (cleared first),
/// each followed by a [`SEPARATOR`], and lists where each lies in
/// `stretches`, for one [`Engine::scan_stretches`](super::engine::Engine::scan_stretches)
/// call. Returns false, having copied nothing, when `body` has no string
/// with escapes: it is then one raw stretch, to scan in place.
pub(crate) fn lay_out(body: &[u8], out: &mut Decoded, stretches: &mut Vec<Range<usize>>) -> bool {
    out.clear();
    stretches.clear();
    // Decoding only shrinks; the separators are few.
    out.reserve(body.len() + 64);
    let mut escapes = true;
    walk(body, out, |stretch, out| {
        let range = match stretch {
            Stretch::Raw { start, end } if start == 0 && end == body.len() => {
                escapes = false;
                return;
            }
            Stretch::Raw { start, end } => {
                let from = out.text().len();
                out.literal(&body[start..end], start);
                from..out.text().len()
            }
            Stretch::Decoded(range) => range,
        };
        stretches.push(range);
        out.gap(SEPARATOR);
    });
    escapes
}

/// Walks `body`, calling `visit` with each stretch in order. Decoded
/// strings are appended to `scratch`; for [`Stretch::Decoded`] the string
/// and its map are there when `visit` runs.
///
/// One pass: [`Specials`] finds the quotes and backslashes 64 bytes at a
/// time, and a string is decoded as its escapes are met. LLM-API bodies
/// have an escape (`\n`, `\"`) every few dozen bytes, and a `memchr` call
/// per escape to find it, then another to decode it, cost a third of the
/// scan. (Control characters are stops of [`Specials`] too, for the tape's
/// sake; here they are passed over.)
pub(crate) fn walk(
    body: &[u8],
    scratch: &mut Decoded,
    mut visit: impl FnMut(Stretch, &mut Decoded),
) {
    let mut specials = Specials::new(body);
    let mut raw_start = 0;
    let mut i = 0;
    loop {
        // The next quote opens a string.
        let q = specials.next(i);
        if q >= body.len() {
            break;
        }
        if body[q] != b'"' {
            i = q + 1;
            continue;
        }
        let content = q + 1;
        // Where the content not yet decoded starts, once an escape is met.
        let mut pending = None;
        let mut decoded_from = 0;
        let mut j = content;
        let close = loop {
            let k = specials.next(j);
            if k >= body.len() {
                break body.len();
            }
            match body[k] {
                b'"' => break k,
                b'\\' => {
                    let from = match pending {
                        Some(from) => from,
                        None => {
                            if raw_start < content {
                                let raw = Stretch::Raw {
                                    start: raw_start,
                                    end: content,
                                };
                                visit(raw, scratch);
                            }
                            decoded_from = scratch.text().len();
                            content
                        }
                    };
                    scratch.literal(&body[from..k], from);
                    let len = decode_escape(&body[k..], k, scratch);
                    pending = Some(k + len);
                    j = k + len;
                }
                _ => j = k + 1,
            }
        };
        if let Some(from) = pending {
            scratch.literal(&body[from..close], from);
            visit(
                Stretch::Decoded(decoded_from..scratch.text().len()),
                scratch,
            );
            raw_start = close;
        }
        i = close + 1;
        if i >= body.len() {
            break;
        }
    }
    if raw_start < body.len() {
        visit(
            Stretch::Raw {
                start: raw_start,
                end: body.len(),
            },
            scratch,
        );
    }
}

/// Decodes the content of one JSON string that starts at `base` in the body.
/// Invalid escapes are kept as written; lone surrogates become U+FFFD.
#[cfg(test)]
pub(crate) fn unescape(src: &[u8], base: usize, out: &mut Decoded) {
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'\\', &src[i..]) {
        out.literal(&src[i..i + k], base + i);
        i += k;
        i += decode_escape(&src[i..], base + i, out);
    }
    out.literal(&src[i..], base + i);
}

/// Appends what the escape at the start of `src` (at `source` in the body)
/// decodes to; returns its length in `src`.
fn decode_escape(src: &[u8], source: usize, out: &mut Decoded) -> usize {
    let (decoded, len) = escape(src);
    match decoded {
        Escaped::Byte(b) => out.escape_byte(b, source, len),
        Escaped::Char(c) => out.escape(c.encode_utf8(&mut [0; 4]).as_bytes(), source, len),
    }
    len
}

enum Escaped {
    Byte(u8),
    Char(char),
}

/// What the byte after a backslash decodes to in a one-letter escape
/// (`\n` to a newline), 0 for a byte that makes none. A table, not a
/// `match`: the match compiled to an indirect jump per escape, which
/// `\n` and `\"` in turn mispredict.
const SIMPLE: [u8; 256] = {
    let mut table = [0u8; 256];
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[b'/' as usize] = b'/';
    table[b'b' as usize] = 0x08;
    table[b'f' as usize] = 0x0c;
    table[b'n' as usize] = b'\n';
    table[b'r' as usize] = b'\r';
    table[b't' as usize] = b'\t';
    table
};

/// The escape at the start of `src` (which starts with a backslash): what
/// it decodes to and how long it is. Anything that is not a valid escape is
/// a literal backslash.
fn escape(src: &[u8]) -> (Escaped, usize) {
    let simple = SIMPLE[usize::from(src.get(1).copied().unwrap_or(0))];
    if simple != 0 {
        return (Escaped::Byte(simple), 2);
    }
    if src.get(1) == Some(&b'u')
        && let Some(unit) = hex4(&src[2..])
    {
        if (0xD800..0xDC00).contains(&unit)
            && src.get(6) == Some(&b'\\')
            && src.get(7) == Some(&b'u')
            && let Some(low) = hex4(&src[8..])
            && (0xDC00..0xE000).contains(&low)
        {
            let code = 0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
            let c = char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
            return (Escaped::Char(c), 12);
        }
        let c = char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER);
        return (Escaped::Char(c), 6);
    }
    (Escaped::Byte(b'\\'), 1)
}

/// The four hex digits at the start of `s` (`\u` escapes), as a number.
fn hex4(s: &[u8]) -> Option<u16> {
    s.get(..4)?.iter().try_fold(0u16, |n, &d| {
        let v = (d as char).to_digit(16)?;
        Some(n << 4 | v as u16)
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::segment;
    use super::*;

    /// The walk as first written, with `memchr` (and a second pass to
    /// decode): the reference the one-pass walk is checked against.
    fn walk_with_memchr(
        body: &[u8],
        scratch: &mut Decoded,
        mut visit: impl FnMut(Stretch, &mut Decoded),
    ) {
        let mut raw_start = 0;
        let mut i = 0;
        while let Some(q) = memchr::memchr(b'"', &body[i..]).map(|k| i + k) {
            let content = q + 1;
            let mut j = content;
            let mut escaped = false;
            let close = loop {
                match memchr::memchr2(b'"', b'\\', &body[j..]) {
                    Some(k) if body[j + k] == b'\\' => {
                        escaped = true;
                        j += k + 2;
                        if j >= body.len() {
                            break body.len();
                        }
                    }
                    Some(k) => break j + k,
                    None => break body.len(),
                }
            };
            if escaped {
                if raw_start < content {
                    let raw = Stretch::Raw {
                        start: raw_start,
                        end: content,
                    };
                    visit(raw, scratch);
                }
                scratch.clear();
                unescape(&body[content..close], content, scratch);
                let all = 0..scratch.text().len();
                visit(Stretch::Decoded(all), scratch);
                raw_start = close;
            }
            i = close + 1;
            if i >= body.len() {
                break;
            }
        }
        if raw_start < body.len() {
            let raw = Stretch::Raw {
                start: raw_start,
                end: body.len(),
            };
            visit(raw, scratch);
        }
    }

    type Visitor<'a> = &'a mut dyn FnMut(Stretch, &mut Decoded);
    /// A stretch's text and the body span of each of its bytes (a raw
    /// one's whole span).
    type Visit = (Vec<u8>, Vec<(usize, usize)>);

    /// Each stretch a walk visits (its text), a decoded one with the body
    /// span of each of its bytes.
    fn visits(walk: impl FnOnce(&[u8], &mut Decoded, Visitor<'_>), body: &[u8]) -> Vec<Visit> {
        let mut out = Vec::new();
        let mut scratch = Decoded::default();
        walk(body, &mut scratch, &mut |stretch, decoded| match stretch {
            Stretch::Raw { start, end } => {
                out.push((body[start..end].to_vec(), vec![(start, end)]))
            }
            Stretch::Decoded(range) => {
                let text = decoded.text()[range.clone()].to_vec();
                let spans = range.map(|d| decoded.span(d, d + 1)).collect();
                out.push((text, spans));
            }
        });
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]
        #[test]
        fn the_one_pass_walk_visits_what_the_memchr_walk_did(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec![
                    "\"", "\\", "\\n", "\\\"", "\\\\", "\\u", "\\u0040", "\\ud83d\\ude00",
                    "\\uD83D", "\\udc00", "\\u12", "\\x", "a", "bc ", "0f", "\n", "\t", "{", ":",
                    ",", "é", "\u{1}",
                ]),
                0..60,
            ),
            pad in 0..70usize,
        ) {
            // Padding moves the pieces across the 64-byte windows.
            let body = format!("{}{}", " ".repeat(pad), pieces.concat());
            let body = body.as_bytes();
            prop_assert_eq!(
                visits(|b, s, v| walk(b, s, v), body),
                visits(|b, s, v| walk_with_memchr(b, s, v), body)
            );
        }
    }

    /// What a lay-out gives the engine: the text, the stretches and where
    /// each byte of the stretches maps back to in the body.
    pub(super) type LaidOut = (Vec<u8>, Vec<Range<usize>>, Vec<(usize, usize)>);

    /// A lay-out as [`LaidOut`], its map read through `span` (also the
    /// tape's tests' reading of a tape's layout).
    pub(super) fn laid_out(
        text: &[u8],
        stretches: &[Range<usize>],
        span: impl Fn(usize, usize) -> (usize, usize),
    ) -> LaidOut {
        let spans = stretches
            .iter()
            .flat_map(|r| r.clone())
            .map(|d| span(d, d + 1))
            .collect();
        (text.to_vec(), stretches.to_vec(), spans)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        #[test]
        fn a_tape_lays_out_what_the_walk_does(
            strings in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::sample::select(vec![
                        "a", "bc ", "0f", ":", "{", "é", "\\n", "\\\"", "\\\\", "\\/",
                        "\\u0040", "\\ud83d\\ude00", "\\u00e9", "\\t",
                    ]),
                    0..12,
                ),
                0..12,
            ),
            pad in 0..70usize,
        ) {
            // An object whose values are strings, numbers and arrays,
            // padding moving it across the 64-byte windows.
            let mut body = format!("{}{{", " ".repeat(pad));
            for (i, pieces) in strings.iter().enumerate() {
                let value = match i % 3 {
                    0 => format!("\"{}\"", pieces.concat()),
                    1 => format!("[\"{}\", {i}]", pieces.concat()),
                    _ => format!("{{\"{}\": null}}", pieces.concat()),
                };
                let comma = if i > 0 { ", " } else { "" };
                body.push_str(&format!("{comma}\"k{}\": {value}", pieces.len()));
            }
            body.push('}');
            let tape = tape::Tape::parse(body.as_bytes()).expect("valid JSON");
            let (mut out, mut stretches) = (Decoded::default(), Vec::new());
            let walked = lay_out(body.as_bytes(), &mut out, &mut stretches)
                .then(|| laid_out(out.text(), &stretches, |s, e| out.span(s, e)));
            let taped = tape.laid_out().map(|laid| {
                laid_out(laid.text, laid.stretches, |s, e| segment::span(laid.map, s, e))
            });
            prop_assert_eq!(taped, walked);
        }
    }

    fn stretches(body: &str) -> Vec<String> {
        let mut scratch = Decoded::default();
        let mut out = Vec::new();
        walk(body.as_bytes(), &mut scratch, |s, d| match s {
            Stretch::Raw { start, end } => out.push(format!("raw {}", &body[start..end])),
            Stretch::Decoded(range) => {
                let text = String::from_utf8_lossy(&d.text()[range]);
                out.push(format!("dec {text}"))
            }
        });
        out
    }

    #[test]
    fn stretches_are_laid_out_end_to_end_with_separators() {
        let body = br#"{"a": "x\ny", "b": "z\"", "c": 1}"#;
        let mut out = Decoded::default();
        let mut stretches = Vec::new();
        assert!(lay_out(body, &mut out, &mut stretches));
        assert_eq!(
            out.text(),
            b"{\"a\": \"\0x\ny\0\", \"b\": \"\0z\"\0\", \"c\": 1}\0"
        );
        let texts: Vec<&[u8]> = stretches.iter().map(|r| &out.text()[r.clone()]).collect();
        assert_eq!(
            texts,
            [
                &b"{\"a\": \""[..],
                b"x\ny",
                br#"", "b": ""#,
                b"z\"",
                br#"", "c": 1}"#
            ]
        );
        // Each maps back to the body: `z"` is `z\"`.
        let z = stretches[3].start;
        assert_eq!(out.span(z, z + 2), (20, 23));
        // A body without escapes is left where it is.
        assert!(!lay_out(br#"{"a": "b"}"#, &mut out, &mut stretches));
        assert!(out.text().is_empty() && stretches.is_empty());
    }

    #[test]
    fn strings_without_escapes_stay_raw() {
        assert_eq!(stretches(r#"{"a": "b c"}"#), [r#"raw {"a": "b c"}"#]);
    }

    #[test]
    fn escaped_strings_are_decoded_alone() {
        assert_eq!(
            stretches(r#"{"a": "x\ny", "b": "z"}"#),
            [r#"raw {"a": ""#, "dec x\ny", r#"raw ", "b": "z"}"#]
        );
        assert_eq!(
            stretches(r#"["q\"uote"]"#),
            [r#"raw [""#, "dec q\"uote", r#"raw "]"#]
        );
    }

    #[test]
    fn unterminated_input_does_not_panic() {
        for body in [r#"{"a": "b"#, r#"{"a": "b\"#, r#"""#, r#""\u12"#, "\\"] {
            let _ = stretches(body);
        }
    }

    #[test]
    fn every_one_letter_escape_decodes() {
        let mut d = Decoded::default();
        unescape(br#"\"\\\/\b\f\n\r\t\a\0\"#, 0, &mut d);
        assert_eq!(d.text(), b"\"\\/\x08\x0c\n\r\t\\a\\0\\");
    }

    #[test]
    fn decoded_bytes_map_back_to_their_escapes() {
        let body = r#"a\u0040b\n\ud83d\ude00!"#;
        let mut d = Decoded::default();
        unescape(body.as_bytes(), 100, &mut d);
        // Invalid escapes stay as written.
        let mut bad = Decoded::default();
        unescape(br"\x\u12", 0, &mut bad);
        assert_eq!(bad.text(), br"\x\u12");
        assert_eq!(d.text(), "a@b\n\u{1F600}!".as_bytes());
        // 'a' at 100, '@' from \u0040 at 101..107, 'b' at 107, '\n' at 108..110,
        // the emoji's four bytes from 110..122, '!' at 122.
        assert_eq!(d.span(1, 2), (101, 107));
        assert_eq!(d.span(0, 3), (100, 108));
        assert_eq!(d.span(4, 8), (110, 122));
        assert_eq!(d.span(8, 9), (122, 123));
    }
}
