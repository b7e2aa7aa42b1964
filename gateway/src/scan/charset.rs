//! Bodies in a wide Unicode encoding (UTF-16 or UTF-32), which the
//! scanners cannot read: every ASCII character of such a body sits between
//! zero bytes, so no detector would match it, while a server that decodes
//! the body (Python's `json.loads` of bytes finds the encoding by itself)
//! reads its values. The content stage refuses them rather than forward
//! them unread.

use super::media::{self, Media};
use super::{MAX_NESTING, multipart};

/// The wide encoding `body` is in ([`whole`]) or, in a multipart body, one
/// of its parts is in, as deep as the scanner reads parts: a part is read
/// by its own type, so a UTF-16 part would pass unread as a UTF-16 body
/// would.
pub(crate) fn wide(content_type: Option<&str>, body: &[u8]) -> Option<&'static str> {
    nested(content_type, body, 0)
}

fn nested(content_type: Option<&str>, body: &[u8], depth: u8) -> Option<&'static str> {
    whole(content_type, body).or_else(|| {
        let media = Media::of(content_type);
        let boundary =
            multipart::boundary_of(media, content_type).filter(|_| depth < MAX_NESTING)?;
        let (parts, _) = multipart::parts(body, boundary);
        parts
            .iter()
            .find_map(|p| nested(p.content_type, &body[p.start..p.end], depth + 1))
    })
}

/// The wide encoding `body` is in, by the Content-Type's `charset`, by a
/// byte-order mark, or by the zero bytes around a JSON body's first
/// character (the pattern RFC 4627 gave for telling the encodings apart,
/// which `json.loads` follows), when that character may begin a JSON
/// document (`{`, `[`, `"` or whitespace); `None` for anything else, UTF-8
/// and binary included.
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

/// The canonical name of a wide charset label.
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
    ]
    .into_iter()
    .find_map(|(known, name)| label.eq_ignore_ascii_case(known).then_some(name))
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
            assert_eq!(wide(content_type, body), want, "{content_type:?} {body:?}");
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
            assert_eq!(wide(ct, body), want, "{what}");
        }
        // Without a boundary the body is not split: one whole, not wide.
        assert_eq!(
            wide(
                Some("multipart/form-data"),
                &form("text/plain; charset=utf-16", b"x")
            ),
            None
        );
    }
}
