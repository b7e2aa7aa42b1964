//! `application/x-www-form-urlencoded` bodies: percent-decoded (and `+` as
//! a space) before scanning, each decoded byte mapped back to its encoded
//! bytes, so `a%40example.com` is found as an email and reported as the
//! encoded span. `&` and `=` stay as they are: they end tokens, and
//! `password=...` reads as an assignment.

use super::segment::Decoded;

/// Whether decoding would change anything.
pub(crate) fn needs_decoding(body: &[u8]) -> bool {
    memchr::memchr2(b'%', b'+', body).is_some()
}

/// Decodes `body` into `out`. A `%` not followed by two hex digits is kept.
pub(crate) fn decode(body: &[u8], out: &mut Decoded) {
    out.clear();
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'%', &body[i..]) {
        literal(out, &body[i..i + k], i);
        i += k;
        match (hex(body.get(i + 1)), hex(body.get(i + 2))) {
            (Some(hi), Some(lo)) => {
                out.escape_byte(hi << 4 | lo, i, 3);
                i += 3;
            }
            _ => {
                out.literal(b"%", i);
                i += 1;
            }
        }
    }
    literal(out, &body[i..], i);
}

/// Copies a run without escapes, `+` read as a space (same length, so the
/// map stays linear; a `+` written as `%2B` is not touched).
fn literal(out: &mut Decoded, run: &[u8], source: usize) {
    let from = out.text().len();
    out.literal(run, source);
    for b in &mut out.text_mut()[from..] {
        if *b == b'+' {
            *b = b' ';
        }
    }
}

fn hex(b: Option<&u8>) -> Option<u8> {
    let b = *b?;
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_maps_to_the_encoded_span() {
        let body = b"comment=cc+abaird%40example.com&x=%2B1%";
        let mut d = Decoded::default();
        decode(body, &mut d);
        assert_eq!(d.text(), b"comment=cc abaird@example.com&x=+1%");
        // "abaird@example.com" decoded at 11..29 is body 11..31.
        assert_eq!(d.span(11, 29), (11, 31));
        // "+1" from "%2B1".
        assert_eq!(d.span(32, 34), (34, 38));
        // A trailing lone '%' is kept.
        assert_eq!(d.text().last(), Some(&b'%'));
    }

    #[test]
    fn invalid_escapes_are_kept() {
        let mut d = Decoded::default();
        decode(b"%zz%4", &mut d);
        assert_eq!(d.text(), b"%zz%4");
    }
}
