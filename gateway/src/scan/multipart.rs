//! `multipart/*` bodies: split at the boundary, each part's headers read,
//! and the text parts (no content type, `text/*`, JSON, form-encoded, XML,
//! or any part that is valid UTF-8) handed back to be scanned by their own
//! content type. Binary parts (images, archives) are skipped.

use memchr::memmem;

use super::media::{self, Media};

/// One part's content, as a span of the multipart body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Part<'a> {
    pub content_type: Option<&'a str>,
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

/// Whether a part is text worth scanning: labelled as text of some kind,
/// or valid UTF-8 whatever its label (a sandbox that labels a part
/// `application/octet-stream` does not keep its text from being read).
pub(crate) fn is_text(content_type: Option<&str>, bytes: &[u8]) -> bool {
    let media = Media::of(content_type);
    media.is_empty()
        || media.starts_with("text/")
        || media.starts_with("multipart/")
        || media.ends_with("json")
        || media.ends_with("+xml")
        || media.is("application/xml")
        || media.is("application/x-www-form-urlencoded")
        || simdutf8::basic::from_utf8(bytes).is_ok()
}

/// The parts of `body`. Stops quietly at anything malformed: what was
/// split so far is returned, and the caller scans the rest as text.
pub(crate) fn parts<'a>(body: &'a [u8], boundary: &str) -> (Vec<Part<'a>>, usize) {
    let delimiter = format!("--{boundary}");
    let delimiter = delimiter.as_bytes();
    let mut parts = Vec::new();
    // The first delimiter starts the body or a line.
    let Some(mut at) = find_delimiter(body, 0, delimiter, true) else {
        return (parts, 0);
    };
    loop {
        let after = at + delimiter.len();
        if body[after..].starts_with(b"--") {
            return (parts, body.len());
        }
        let Some(line_end) = memchr::memchr(b'\n', &body[after..]).map(|k| after + k + 1) else {
            return (parts, after);
        };
        let Some((headers_end, content_start)) = blank_line(body, line_end) else {
            return (parts, line_end);
        };
        let content_type = header(&body[line_end..headers_end], "content-type");
        let Some(next) = find_delimiter(body, content_start, delimiter, false) else {
            // Unterminated: the rest is this part.
            parts.push(Part {
                content_type,
                start: content_start,
                end: body.len(),
            });
            return (parts, body.len());
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
        let png = b"\x89PNG\r\n\x1a\n";
        assert!(is_text(None, png));
        assert!(!is_text(Some("image/png"), png));
        assert!(is_text(Some("Application/JSON; charset=utf-8"), png));
        // Text is read whatever its label says.
        assert!(is_text(
            Some("application/octet-stream"),
            b"ssn 376-85-2672"
        ));
        assert!(is_text(Some("image/png"), b""));
    }

    #[test]
    fn malformed_bodies_stop_quietly() {
        for body in ["", "--xyz", "--xyz\r\n", "--xyz\r\nA: b", "no delimiter"] {
            let _ = parts(body.as_bytes(), "xyz");
        }
    }
}
