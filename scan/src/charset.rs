//! Bodies the scanners cannot read, which the content stage refuses rather
//! than forward unread:
//!
//! - in an encoding that does not keep ASCII as ASCII: wide Unicode
//!   (UTF-16, UTF-32), where every ASCII character sits between zero
//!   bytes, while a server that decodes the body (Python's `json.loads` of
//!   bytes finds the encoding by itself) reads its values; or UTF-7 and
//!   EBCDIC, named in a `charset` that a server may honour;
//! - multipart parts nested deeper than the scanners split them
//!   (`MAX_NESTING`), whose own parts would be read as raw bytes;
//! - multipart parts in a `Content-Transfer-Encoding` that changes their
//!   bytes (quoted-printable `=34` for `4`, base64), which the scanners do
//!   not undo and some servers do;
//! - a Content-Type (the body's or a part's) that gives its `boundary` or
//!   `charset` twice, differently: which one an upstream takes is anyone's
//!   guess.

use std::fmt;

use super::media::{self, Media};
use super::{MAX_NESTING, multipart};

/// Why a body cannot be inspected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// It, or one of its parts, is in this encoding.
    Charset(&'static str),
    /// Its parts nest deeper than `MAX_NESTING`.
    Nesting,
    /// A part is sent in this `Content-Transfer-Encoding` (quoted-printable,
    /// base64, or an unknown one), which the scanners do not undo.
    PartEncoding(&'static str),
    /// Its Content-Type, or a part's, gives this parameter twice with
    /// different values (`media::ambiguous`).
    Ambiguous(&'static str),
}

impl Unreadable {
    /// The refusal's reason code.
    pub fn reason(self) -> &'static str {
        match self {
            Unreadable::Charset(_) => "body_charset_not_inspectable",
            Unreadable::Nesting => "body_nesting_not_inspectable",
            Unreadable::PartEncoding(_) => "body_part_encoding_not_inspectable",
            Unreadable::Ambiguous(_) => "body_content_type_ambiguous",
        }
    }
}

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unreadable::Charset(name) => write!(f, "a {name} body cannot be inspected; send UTF-8"),
            Unreadable::Nesting => write!(
                f,
                "multipart parts nested more than {MAX_NESTING} deep cannot be inspected"
            ),
            Unreadable::Ambiguous(name) => write!(
                f,
                "the Content-Type gives its {name} twice, with different values"
            ),
            Unreadable::PartEncoding(name) => write!(
                f,
                "a multipart part in the {name} transfer encoding cannot be inspected; send it as it is"
            ),
        }
    }
}

/// Why `body` cannot be inspected, if it cannot: its encoding (`whole`)
/// or, in a multipart body, a part's, as deep as the scanner reads parts
/// (a part is read by its own type, so a UTF-16 part would pass unread as
/// a UTF-16 body would), or parts nested deeper than that.
pub fn unreadable(content_type: Option<&str>, body: &[u8]) -> Option<Unreadable> {
    nested(content_type, body, 0)
}

fn nested(content_type: Option<&str>, body: &[u8], depth: u8) -> Option<Unreadable> {
    let twice = ["boundary", "charset"]
        .into_iter()
        .find(|name| content_type.is_some_and(|ct| media::ambiguous(ct, name)));
    if let Some(name) = twice {
        return Some(Unreadable::Ambiguous(name));
    }
    if let Some(name) = whole(content_type, body) {
        return Some(Unreadable::Charset(name));
    }
    let boundary = multipart::boundary_of(Media::of(content_type), content_type)?;
    if depth >= MAX_NESTING {
        return Some(Unreadable::Nesting);
    }
    let (parts, _) = multipart::parts(body, boundary);
    parts.iter().find_map(|p| {
        let encoding = p.transfer_encoding.and_then(encoded);
        encoding
            .map(Unreadable::PartEncoding)
            .or_else(|| nested(p.content_type, &body[p.start..p.end], depth + 1))
    })
}

/// The name of a part's transfer encoding when it changes the bytes: not
/// `7bit`, `8bit` or `binary`, which say how the bytes already are.
fn encoded(transfer_encoding: &str) -> Option<&'static str> {
    let name = transfer_encoding.trim_ascii();
    let plain = ["7bit", "8bit", "binary"];
    if plain.iter().any(|p| name.eq_ignore_ascii_case(p)) {
        None
    } else if name.eq_ignore_ascii_case("quoted-printable") {
        Some("quoted-printable")
    } else if name.eq_ignore_ascii_case("base64") {
        Some("base64")
    } else {
        Some("unknown")
    }
}

/// The encoding `body` is in when it is one no scanner reads: by the
/// Content-Type's `charset` ([`wide_name`]), by a wide byte-order mark, or
/// by the zero bytes around a JSON body's first character (the pattern
/// RFC 4627 gave for telling the encodings apart, which `json.loads`
/// follows), when that character may begin a JSON document (`{`, `[`, `"`
/// or whitespace); `None` for anything else, UTF-8 and binary included.
fn whole(content_type: Option<&str>, body: &[u8]) -> Option<&'static str> {
    let charset = content_type.and_then(|ct| media::parameter(ct, "charset"));
    if let Some(name) = charset.and_then(wide_name) {
        return Some(name);
    }
    let json = |b: u8| matches!(b, b'{' | b'[' | b'"' | b' ' | b'\t' | b'\n' | b'\r');
    match *body {
        [0, 0, 0xFE, 0xFF, ..] => Some("UTF-32BE"),
        [0xFF, 0xFE, 0, 0, ..] => Some("UTF-32LE"),
        [0xFE, 0xFF, ..] => Some("UTF-16BE"),
        [0xFF, 0xFE, ..] => Some("UTF-16LE"),
        [0, 0, 0, c, ..] if json(c) => Some("UTF-32BE"),
        [c, 0, 0, 0, ..] if json(c) => Some("UTF-32LE"),
        [0, c, ..] if json(c) => Some("UTF-16BE"),
        [c, 0, ..] if json(c) => Some("UTF-16LE"),
        _ => None,
    }
}

/// The canonical name of a charset label that does not keep ASCII as
/// ASCII: wide Unicode, UTF-7, EBCDIC (the code pages Python decodes).
fn wide_name(label: &str) -> Option<&'static str> {
    // Blanks inside the quotes too: `charset=" utf-16 "`.
    let label = label.trim_ascii();
    [
        ("utf-16", "UTF-16"),
        ("utf-16le", "UTF-16LE"),
        ("utf-16be", "UTF-16BE"),
        ("utf-32", "UTF-32"),
        ("utf-32le", "UTF-32LE"),
        ("utf-32be", "UTF-32BE"),
        ("ucs-2", "UTF-16"),
        ("ucs-4", "UTF-32"),
        ("unicode", "UTF-16"),
        ("utf-7", "UTF-7"),
        ("utf7", "UTF-7"),
        ("unicode-1-1-utf-7", "UTF-7"),
        ("csunicode11utf7", "UTF-7"),
    ]
    .into_iter()
    .find_map(|(known, name)| label.eq_ignore_ascii_case(known).then_some(name))
    .or_else(|| ebcdic(label).then_some("EBCDIC"))
}

/// Whether a charset label names an EBCDIC code page: `cp037`, `ibm500`,
/// `ebcdic-cp-us` and their kin (IBM's numbers for them: 037, 273, 277,
/// 278, 280, 284, 285, 290, 297, 420, 423, 424, 500, 838, 870, 871, 875,
/// 880, 905, 1025, 1026, 1047 and the euro ones 1140 to 1149).
fn ebcdic(label: &str) -> bool {
    const PAGES: [u16; 32] = [
        37, 273, 277, 278, 280, 284, 285, 290, 297, 420, 423, 424, 500, 838, 870, 871, 875, 880,
        905, 1025, 1026, 1047, 1140, 1141, 1142, 1143, 1144, 1145, 1146, 1147, 1148, 1149,
    ];
    let lower = label.to_ascii_lowercase();
    if lower.starts_with("ebcdic") {
        return true;
    }
    let number = ["ibm-", "csibm", "ibm", "cp"]
        .iter()
        .find_map(|prefix| lower.strip_prefix(prefix))
        .and_then(|n| n.parse::<u16>().ok());
    number.is_some_and(|n| PAGES.contains(&n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_bodies_are_told_by_charset_mark_or_zero_bytes() {
        let json16le: Vec<u8> = "{\"a\":1}"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let json16be: Vec<u8> = "[1]".encode_utf16().flat_map(u16::to_be_bytes).collect();
        let cases: &[(Option<&str>, &[u8], Option<&str>)] = &[
            (None, &json16le, Some("UTF-16LE")),
            (Some("text/plain"), &json16be, Some("UTF-16BE")),
            (None, b"[\0\0\0", Some("UTF-32LE")),
            (None, b"\0\0\0{", Some("UTF-32BE")),
            (Some("application/json"), b" \0{\0", Some("UTF-16LE")),
            (None, b"\0\n\0[", Some("UTF-16BE")),
            (None, b"\xFF\xFEh\0i\0", Some("UTF-16LE")),
            (None, b"\xFE\xFF\0h", Some("UTF-16BE")),
            (None, b"\xFF\xFE\0\0h\0\0\0", Some("UTF-32LE")),
            (None, b"\0\0\xFE\xFF", Some("UTF-32BE")),
            (Some("text/plain; charset=UTF-16"), b"hi", Some("UTF-16")),
            (
                Some("text/plain; charset=\" ucs-2 \""),
                b"hi",
                Some("UTF-16"),
            ),
            (
                Some("application/json;charset=\"utf-32le\""),
                b"{}",
                Some("UTF-32LE"),
            ),
            // ASCII-compatible charsets, UTF-8 (with its mark too) and
            // binary bodies are not wide.
            (Some("text/plain; charset=iso-8859-1"), b"caf\xE9", None),
            (Some("application/json; charset=utf-8"), b"{\"a\":1}", None),
            (None, b"\xEF\xBB\xBF{\"a\":1}", None),
            (Some("image/png"), b"\x89PNG\r\n\x1a\n", None),
            (Some("application/octet-stream"), b"x\0y\0", None),
            (None, b"", None),
            (None, b"{", None),
        ];
        for &(content_type, body, want) in cases {
            let got = unreadable(content_type, body);
            assert_eq!(
                got,
                want.map(Unreadable::Charset),
                "{content_type:?} {body:?}"
            );
        }
    }

    #[test]
    fn a_wide_part_of_a_multipart_body_is_told() {
        let form = |part_type: &str, part: &[u8]| {
            let mut body = b"--b\r\nContent-Type: text/plain\r\n\r\nhello\r\n--b\r\n".to_vec();
            body.extend_from_slice(format!("Content-Type: {part_type}\r\n\r\n").as_bytes());
            body.extend_from_slice(part);
            body.extend_from_slice(b"\r\n--b--\r\n");
            body
        };
        let ct = Some("multipart/form-data; boundary=b");
        let cases: &[(&[u8], &str, Option<&str>)] = &[
            (
                &form("text/plain; charset=utf-16le", b"h\0i\0"),
                "charset",
                Some("UTF-16LE"),
            ),
            (
                &form("application/octet-stream", b"\xFF\xFEh\0i\0"),
                "mark",
                Some("UTF-16LE"),
            ),
            (
                &form("application/json", b"{\0}\0"),
                "zero bytes",
                Some("UTF-16LE"),
            ),
            (
                &form(
                    "multipart/mixed; boundary=c",
                    b"--c\r\nContent-Type: text/plain; charset=utf-32\r\n\r\nx\r\n--c--",
                ),
                "nested",
                Some("UTF-32"),
            ),
            (&form("text/plain; charset=utf-8", b"hi"), "utf-8", None),
            (&form("image/png", b"\x89PNG\r\n\x1a\n"), "binary", None),
        ];
        for &(body, what, want) in cases {
            assert_eq!(
                unreadable(ct, body),
                want.map(Unreadable::Charset),
                "{what}"
            );
        }
        // Without a boundary the body is not split: one whole, not wide.
        assert_eq!(
            unreadable(
                Some("multipart/form-data"),
                &form("text/plain; charset=utf-16", b"x")
            ),
            None
        );
    }

    #[test]
    fn charsets_that_are_not_ascii_compatible_are_told_by_label() {
        let cases = [
            ("text/plain; charset=UTF-7", Some("UTF-7")),
            ("text/plain; charset=utf7", Some("UTF-7")),
            ("application/json; charset=cp037", Some("EBCDIC")),
            ("application/json; charset=IBM500", Some("EBCDIC")),
            ("application/json; charset=ibm-1047", Some("EBCDIC")),
            ("text/plain; charset=ebcdic-cp-us", Some("EBCDIC")),
            ("text/plain; charset=cp1140", Some("EBCDIC")),
            // ASCII-compatible code pages are read as they are.
            ("text/plain; charset=cp1252", None),
            ("text/plain; charset=ibm437", None),
            ("text/plain; charset=cp-37", None),
        ];
        for (ct, want) in cases {
            let got = unreadable(Some(ct), b"{\"a\": \"+AEA-\"}");
            assert_eq!(got, want.map(Unreadable::Charset), "{ct}");
        }
    }

    #[test]
    fn parts_nested_deeper_than_the_scanners_read_are_told() {
        // Each level a multipart part holding the next; the innermost
        // part is text.
        let nest = |levels: usize| {
            let mut body = "hello".to_string();
            let mut ct = "text/plain".to_string();
            for level in 0..levels {
                body = format!("--b{level}\r\nContent-Type: {ct}\r\n\r\n{body}\r\n--b{level}--");
                ct = format!("multipart/mixed; boundary=b{level}");
            }
            (ct, body)
        };
        let deepest = usize::from(MAX_NESTING);
        let (ct, body) = nest(deepest);
        assert_eq!(unreadable(Some(&ct), body.as_bytes()), None);
        let (ct, body) = nest(deepest + 1);
        let got = unreadable(Some(&ct), body.as_bytes());
        assert_eq!(got, Some(Unreadable::Nesting));
        assert_eq!(
            got.map(Unreadable::reason),
            Some("body_nesting_not_inspectable")
        );
    }

    #[test]
    fn parts_in_a_transfer_encoding_are_told() {
        let part = |encoding: &str| {
            format!(
                "--b\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: {encoding}\r\n\r\n\
                 card =34111 1111 1111 1111\r\n--b--\r\n"
            )
        };
        let ct = Some("multipart/form-data; boundary=b");
        let cases = [
            ("quoted-printable", Some("quoted-printable")),
            ("Base64", Some("base64")),
            ("x-uuencode", Some("unknown")),
            ("8bit", None),
            (" 7BIT ", None),
            ("binary", None),
        ];
        for (encoding, want) in cases {
            let got = unreadable(ct, part(encoding).as_bytes());
            assert_eq!(got, want.map(Unreadable::PartEncoding), "{encoding}");
        }
    }

    #[test]
    fn a_boundary_or_charset_given_twice_is_told() {
        let ct = "multipart/form-data; boundary=b; boundary=c";
        let body = b"--b\r\n\r\nhi\r\n--b--";
        let got = unreadable(Some(ct), body);
        assert_eq!(got, Some(Unreadable::Ambiguous("boundary")));
        // In a part too.
        let body =
            b"--b\r\nContent-Type: text/plain; charset=utf-8; charset=utf-7\r\n\r\nhi\r\n--b--";
        let got = unreadable(Some("multipart/form-data; boundary=b"), body);
        assert_eq!(got, Some(Unreadable::Ambiguous("charset")));
    }
}
