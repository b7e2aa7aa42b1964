//! IP addresses. IPv4: four dot-separated decimal octets (0-255, no leading
//! zeros) that are not part of a longer dotted token (`1.2.3.4.5`, an OID)
//! nor labelled as a version. IPv6: the text forms `std::net::Ipv6Addr`
//! parses (full, `::`-compressed, with an embedded IPv4), with at least two
//! colons.

use std::net::Ipv6Addr;

use crate::chars::{at, before, has_context_within, is_alnum, is_digit, run_end, starts_token};

/// Words that make a dotted quad a version, not an address.
const VERSION_WORDS: &[&str] = &["version", "ver.", "build", "release", "v."];

/// An IPv4 address starting at `start` (the first digit), as its span.
pub(crate) fn v4_at_digit(text: &[u8], start: usize) -> Option<(usize, usize)> {
    if !starts_token(text, start) {
        return None;
    }
    let mut i = start;
    for octet in 0..4 {
        if octet > 0 {
            if at(text, i) != b'.' {
                return None;
            }
            i += 1;
        }
        let end = run_end(text, i, 4, is_digit);
        let digits = &text[i..end];
        let valid = match digits.len() {
            1 => true,
            2 => digits[0] != b'0',
            3 => digits[0] != b'0' && digits <= b"255".as_slice(),
            _ => false,
        };
        if !valid {
            return None;
        }
        i = end;
    }
    // Not followed by more of a dotted token, nor by a word.
    let next = at(text, i);
    if is_alnum(next) || next == b'_' || (matches!(next, b'.' | b'-') && is_alnum(at(text, i + 1)))
    {
        return None;
    }
    if has_context_within(text, start, VERSION_WORDS, 12) {
        return None;
    }
    Some((start, i))
}

fn is_hex_or_colon(b: u8) -> bool {
    b.is_ascii_hexdigit() || b == b':'
}

/// Whether the digit run `[start, end)` sits next to a colon within its hex
/// group: only then is an IPv6 parse worth trying.
pub(crate) fn v6_possible(text: &[u8], start: usize, end: usize) -> bool {
    let left = (1..=4).any(|k| {
        start >= k
            && text[start - k] == b':'
            && text[start - k + 1..start].iter().all(u8::is_ascii_hexdigit)
    });
    left || (0..4).any(|k| {
        at(text, end + k) == b':'
            && text[end..(end + k).min(text.len())]
                .iter()
                .all(u8::is_ascii_hexdigit)
    })
}

/// An IPv6 address around the digit run at `digit`, as its span.
pub(crate) fn v6_around(text: &[u8], digit: usize) -> Option<(usize, usize)> {
    let mut start = digit;
    while start > 0 && digit - start < 45 && is_hex_or_colon(text[start - 1]) {
        start -= 1;
    }
    // Most candidates are times after a `T` (`2025-03-05T12:30:45`): the
    // cheapest test goes first.
    let prev = before(text, start);
    if is_alnum(prev) || prev == b'_' || prev == b'.' {
        return None;
    }
    // An embedded IPv4 tail (`::ffff:192.0.2.1`) adds dots.
    let end = run_end(text, start, 45, |b| is_hex_or_colon(b) || b == b'.');
    let mut end = end;
    while end > start && matches!(text[end - 1], b'.') {
        end -= 1;
    }
    // A trailing single colon is punctuation ("at fe80::1: it failed").
    if end > start + 1 && text[end - 1] == b':' && text[end - 2] != b':' {
        end -= 1;
    }
    let token = &text[start..end];
    if token.iter().filter(|b| **b == b':').count() < 2 {
        return None;
    }
    if is_alnum(at(text, end)) || at(text, end) == b'_' {
        return None;
    }
    let s = std::str::from_utf8(token).ok()?;
    s.parse::<Ipv6Addr>().ok()?;
    // A bare `::` or times (`12:30:45`) never parse; `::1` and friends do.
    Some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(text: &str) -> Option<&str> {
        let bytes = text.as_bytes();
        let start = bytes.iter().position(|b| b.is_ascii_digit())?;
        v4_at_digit(bytes, start).map(|(s, e)| &text[s..e])
    }

    fn v6(text: &str) -> Option<&str> {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i].is_ascii_digit() {
                let end = run_end(bytes, i, usize::MAX, is_digit);
                if v6_possible(bytes, i, end) {
                    return v6_around(bytes, i).map(|(s, e)| &text[s..e]);
                }
                i = end;
            } else {
                i += 1;
            }
        }
        None
    }

    #[test]
    fn v4_table() {
        for (text, want) in [
            ("client ip 160.14.120.34 cc", Some("160.14.120.34")),
            ("blocked 0.0.0.0.", Some("0.0.0.0")),
            ("255.255.255.255:443", Some("255.255.255.255")),
            ("10.0.0.1/8", Some("10.0.0.1")),
            ("256.1.1.1", None),
            ("1.2.3", None),
            ("1.2.3.4.5", None),
            ("01.2.3.4", None),
            ("Build 2026.03.14", None),
            ("version 3.2.1.0", None),
            ("v1.2.3.4", None),
            ("1.3.6.1.4.1.311", None),
            ("1.2.3.4a", None),
        ] {
            assert_eq!(v4(text), want, "{text}");
        }
    }

    #[test]
    fn v6_table() {
        for (text, want) in [
            (
                "server 2001:0db8:85a3:0000:0000:8a2e:0370:7334 down",
                Some("2001:0db8:85a3:0000:0000:8a2e:0370:7334"),
            ),
            (
                "at fe80::1ff:fe23:4567:890a.",
                Some("fe80::1ff:fe23:4567:890a"),
            ),
            ("loopback ::1 ok", Some("::1")),
            ("mapped ::ffff:192.0.2.1", Some("::ffff:192.0.2.1")),
            ("at 12:30:45", None),
            ("mac 00:1a:2b:3c:4d:5e", None),
            ("std::vec::Vec2", None),
            ("ratio 3:2", None),
        ] {
            assert_eq!(v6(text), want, "{text}");
        }
    }
}
