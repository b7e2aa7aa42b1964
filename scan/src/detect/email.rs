//! Email addresses: a local part of the common unquoted characters, `@`,
//! and a domain of at least two labels whose last is alphabetic (`git@v2`
//! and `pkg@1.2.3` are not addresses).
//!
//! Internationalised addresses (RFC 6531, IDNA) are read as UTF-8: a local
//! part and domain labels may hold letters and marks of any script
//! (`josé@correo.es`, `用户@例子.广告`, `почта@пример.рф`), and the last
//! label may be such a name or a punycode one (`xn--p1ai`). Punctuation
//! and symbols outside ASCII (`：`, `。`, `«`, quotes, dashes, arrows) end
//! an address, as ASCII punctuation does. An address followed by `:` and
//! a path (`git@github.com:org/repo.git`, an SSH remote) is not one.

use crate::chars::{at, is_alnum};

fn is_local(b: u8) -> bool {
    is_alnum(b) || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-' | b'\'')
}

fn is_domain(b: u8) -> bool {
    is_alnum(b) || matches!(b, b'.' | b'-')
}

/// Whether a character outside ASCII may be in an address: a letter, a
/// digit or a mark, not punctuation, a symbol or a space.
fn is_word_char(c: char) -> bool {
    if c.is_alphanumeric() {
        return true;
    }
    let u = u32::from(c);
    // Marks and the letters' blocks from U+0300 on, less the blocks of
    // punctuation, symbols and spaces.
    u >= 0x300
        && !c.is_whitespace()
        && !matches!(
            u,
            0x2000..=0x2BFF
                | 0x2E00..=0x2E7F
                | 0x3000..=0x303F
                | 0xFE10..=0xFE1F
                | 0xFE30..=0xFE6F
                | 0xFF00..=0xFF0F
                | 0xFF1A..=0xFF20
                | 0xFF3B..=0xFF40
                | 0xFF5B..=0xFF65
                | 0xFFF0..
        )
}

/// The character outside ASCII that ends at `end` (exclusive), as its
/// length, if it is one an address may hold.
fn word_char_before(text: &[u8], end: usize) -> Option<usize> {
    let from = end.saturating_sub(4);
    (1..=end - from).find_map(|len| {
        let s = std::str::from_utf8(&text[end - len..end]).ok()?;
        let c = s.chars().next()?;
        (c.len_utf8() == len && !c.is_ascii() && is_word_char(c)).then_some(len)
    })
}

/// The character outside ASCII that starts at `start`, as its length, if
/// it is one an address may hold.
fn word_char_at(text: &[u8], start: usize) -> Option<usize> {
    let len = match at(text, start) {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return None,
    };
    let s = std::str::from_utf8(text.get(start..start + len)?).ok()?;
    s.chars().next().filter(|&c| is_word_char(c)).map(|_| len)
}

/// An address around the `@` at `at_sign`, as its span.
pub(crate) fn around_at(text: &[u8], at_sign: usize) -> Option<(usize, usize)> {
    let mut start = at_sign;
    while start > 0 && at_sign - start < 64 {
        if is_local(text[start - 1]) {
            start -= 1;
        } else if let Some(len) = word_char_before(text, start) {
            start -= len;
        } else {
            break;
        }
    }
    // Sentence punctuation is not part of the local part.
    while start < at_sign && matches!(text[start], b'.' | b'\'' | b'-' | b'+') {
        start += 1;
    }
    if start == at_sign || text[at_sign - 1] == b'.' {
        return None;
    }
    let mut end = at_sign + 1;
    while end < text.len() && end - at_sign <= 253 {
        if is_domain(text[end]) {
            end += 1;
        } else if let Some(len) = word_char_at(text, end) {
            end += len;
        } else {
            break;
        }
    }
    while end > at_sign + 1 && matches!(text[end - 1], b'.' | b'-') {
        end -= 1;
    }
    let domain = &text[at_sign + 1..end];
    if domain.is_empty() || at(text, end) == b'@' {
        return None;
    }
    // An SSH remote: `git@host:path`.
    let next = at(text, end + 1);
    if at(text, end) == b':' && (is_alnum(next) || matches!(next, b'/' | b'~' | b'_')) {
        return None;
    }
    let mut labels = 0;
    let mut last: &[u8] = &[];
    for label in domain.split(|b| *b == b'.') {
        if label.is_empty()
            || label.len() > 63 * 4
            || label[0] == b'-'
            || label[label.len() - 1] == b'-'
        {
            return None;
        }
        labels += 1;
        last = label;
    }
    (labels >= 2 && tld_ok(last)).then_some((start, end))
}

/// Whether the last label names a top-level domain: two letters or more
/// (of any script), or punycode.
fn tld_ok(last: &[u8]) -> bool {
    if last.is_ascii() {
        return last.len() >= 2
            && (last.iter().all(u8::is_ascii_alphabetic) || last.starts_with(b"xn--"));
    }
    // The label was read a whole character at a time: it is UTF-8.
    std::str::from_utf8(last).is_ok_and(|name| {
        name.chars().count() >= 2
            && name
                .chars()
                .all(|c| !c.is_ascii() || c.is_ascii_alphabetic())
            && !name.chars().any(char::is_numeric)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(text: &str) -> Option<&str> {
        let i = text.find('@')?;
        around_at(text.as_bytes(), i).map(|(s, e)| &text[s..e])
    }

    #[test]
    fn positives() {
        for (text, want) in [
            (
                "Contact: meaganlam@example.org Visa",
                "meaganlam@example.org",
            ),
            (
                "mail john.o'neil+tag@mail.example.co.uk.",
                "john.o'neil+tag@mail.example.co.uk",
            ),
            (
                "<a_b-c@sub-domain.example.com>",
                "a_b-c@sub-domain.example.com",
            ),
            ("(x@example.io)", "x@example.io"),
            ("user@xn--bcher-kva.xn--p1ai", "user@xn--bcher-kva.xn--p1ai"),
            // Internationalised local parts and domains.
            ("Schreib an josé.garcía@correo.es.", "josé.garcía@correo.es"),
            ("müller@bücher.de", "müller@bücher.de"),
            ("联系我：用户@例子.广告。", "用户@例子.广告"),
            ("«почта@пример.рф»", "почта@пример.рф"),
            ("अजय@डाटा.भारत", "अजय@डाटा.भारत"),
            ("“ali.yılmaz@örnek.com.tr”", "ali.yılmaz@örnek.com.tr"),
        ] {
            assert_eq!(find(text), Some(want), "{text}");
        }
    }

    #[test]
    fn near_misses() {
        for text in [
            "git_user@v2 from module",
            "npm i left-pad@1.3.0",
            "@mention here",
            "user@localhost",
            "a@b.c",
            "user.@example.com",
            "user@-example.com",
            "user@exa..mple.com",
            "git@github.com:org/repo.git",
            "用户@例子.广告1",
            "user@例子。广告",
        ] {
            assert_eq!(find(text), None, "{text}");
        }
    }
}
