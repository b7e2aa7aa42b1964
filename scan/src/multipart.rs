//! `multipart/*` bodies: split at the boundary and each part's headers
//! read, so that each part is scanned by its own content type.

use std::ops::Range;

use memchr::memmem;

use super::media::{self, Media};

/// One part's content, as a span of the multipart body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Part<'a> {
    pub content_type: Option<&'a str>,
    /// Its `Content-Transfer-Encoding`, which RFC 7578 retired for forms
    /// but some servers still undo (Go's `mime/multipart` decodes
    /// quoted-printable by itself).
    pub transfer_encoding: Option<&'a str>,
    pub start: usize,
    pub end: usize,
}

/// The `boundary` parameter of a multipart content type.
fn boundary(content_type: &str) -> Option<&str> {
    media::parameter(content_type, "boundary").filter(|b| !b.is_empty())
}

/// The boundary of a Content-Type (whose media type is `media`) that
/// names a multipart body with one: the bodies that are split into parts.
pub(crate) fn boundary_of<'a>(media: Media<'_>, content_type: Option<&'a str>) -> Option<&'a str> {
    if media.starts_with("multipart/") {
        content_type.and_then(boundary)
    } else {
        None
    }
}

/// Every piece of `body` to read, in reading order, each by its own type:
/// the preamble, the parts ([`parts`]), the epilogue. The preamble and the
/// epilogue (all of a body whose boundary never occurs) have no headers,
/// so they are read by their first byte: a server that ignores the label
/// may parse them as JSON. Empty pieces are left out.
pub(crate) fn pieces<'a>(body: &'a [u8], boundary: &str) -> Vec<Part<'a>> {
    let (parts, split) = parts(body, boundary);
    let bare = |start, end| Part {
        content_type: None,
        transfer_encoding: None,
        start,
        end,
    };
    std::iter::once(bare(0, split.start))
        .chain(parts)
        .chain([bare(split.end, body.len())])
        .filter(|p| p.start < p.end)
        .collect()
}

/// The parts of `body`, and the span of it they were split from: from
/// the first delimiter to past the closing one, or to where the split
/// stopped quietly at something malformed; empty when no delimiter
/// occurs. What lies outside the span (a preamble, an epilogue, the rest
/// of a malformed body, or all of it) is the caller's to read: servers
/// that ignore the label read it.
pub(crate) fn parts<'a>(body: &'a [u8], boundary: &str) -> (Vec<Part<'a>>, Range<usize>) {
    let delimiter = format!("--{boundary}");
    let delimiter = delimiter.as_bytes();
    let mut parts = Vec::new();
    // The first delimiter starts the body or a line.
    let Some(first) = find_delimiter(body, 0, delimiter, true) else {
        return (parts, 0..0);
    };
    let mut at = first;
    loop {
        let after = at + delimiter.len();
        if body[after..].starts_with(b"--") {
            return (parts, first..after + 2);
        }
        let Some(line_end) = memchr::memchr(b'\n', &body[after..]).map(|k| after + k + 1) else {
            return (parts, first..after);
        };
        let Some((headers_end, content_start)) = blank_line(body, line_end) else {
            return (parts, first..line_end);
        };
        let headers = &body[line_end..headers_end];
        let content_type = header(headers, "content-type");
        let transfer_encoding = header(headers, "content-transfer-encoding");
        let Some(next) = find_delimiter(body, content_start, delimiter, false) else {
            // Unterminated: the rest is this part.
            parts.push(Part {
                content_type,
                transfer_encoding,
                start: content_start,
                end: body.len(),
            });
            return (parts, first..body.len());
        };
        // The line break before the delimiter belongs to it.
        let mut end = next;
        if end > content_start && body[end - 1] == b'\n' {
            end -= 1;
            if end > content_start && body[end - 1] == b'\r' {
                end -= 1;
            }
        }
        parts.push(Part {
            content_type,
            transfer_encoding,
            start: content_start,
            end,
        });
        at = next;
    }
}

fn find_delimiter(body: &[u8], from: usize, delimiter: &[u8], first: bool) -> Option<usize> {
    let mut i = from;
    while let Some(k) = memmem::find(&body[i..], delimiter) {
        let at = i + k;
        if (first && at == 0) || (at > 0 && body[at - 1] == b'\n') {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

/// The end of the headers starting at `from` and the start of the content.
fn blank_line(body: &[u8], from: usize) -> Option<(usize, usize)> {
    if body[from..].starts_with(b"\r\n") {
        return Some((from, from + 2));
    }
    if body[from..].starts_with(b"\n") {
        return Some((from, from + 1));
    }
    let crlf = memmem::find(&body[from..], b"\r\n\r\n").map(|k| (from + k, from + k + 4));
    let lf = memmem::find(&body[from..], b"\n\n").map(|k| (from + k, from + k + 2));
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

fn header<'a>(headers: &'a [u8], name: &str) -> Option<&'a str> {
    headers.split(|b| *b == b'\n').find_map(|line| {
        let line = std::str::from_utf8(line).ok()?;
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundary_parameter() {
        assert_eq!(boundary("multipart/form-data; boundary=abc"), Some("abc"));
        assert_eq!(
            boundary("multipart/form-data; Boundary=\"a b\""),
            Some("a b")
        );
        assert_eq!(boundary("multipart/form-data"), None);
    }

    #[test]
    fn splits_parts_with_their_types() {
        let body = "--xyz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nhello\r\n\
                    --xyz\r\nContent-Type: image/png\r\n\r\n\x01\x02\r\n\
                    --xyz\r\nContent-Type: application/json\r\n\r\n{\"k\":1}\r\n--xyz--\r\n";
        let (parts, _) = parts(body.as_bytes(), "xyz");
        let got: Vec<(Option<&str>, &str)> = parts
            .iter()
            .map(|p| (p.content_type, &body[p.start..p.end]))
            .collect();
        assert_eq!(
            got,
            [
                (None, "hello"),
                (Some("image/png"), "\x01\x02"),
                (Some("application/json"), "{\"k\":1}")
            ]
        );
    }

    #[test]
    fn pieces_are_the_preamble_the_parts_and_the_epilogue() {
        let texts = |body: &'static str| -> Vec<&'static str> {
            let pieces = pieces(body.as_bytes(), "xyz");
            pieces.iter().map(|p| &body[p.start..p.end]).collect()
        };
        let body = "pre\r\n--xyz\r\n\r\nhello\r\n--xyz--\r\npost";
        assert_eq!(texts(body), ["pre\r\n", "hello", "\r\npost"]);
        // No preamble or epilogue: the parts alone.
        assert_eq!(texts("--xyz\r\n\r\nhello\r\n--xyz--"), ["hello"]);
        // A boundary that never occurs: all of the body.
        assert_eq!(texts("{\"a\": 1}"), ["{\"a\": 1}"]);
    }

    #[test]
    fn malformed_bodies_stop_quietly() {
        for body in ["", "--xyz", "--xyz\r\n", "--xyz\r\nA: b", "no delimiter"] {
            let _ = parts(body.as_bytes(), "xyz");
        }
    }
}
