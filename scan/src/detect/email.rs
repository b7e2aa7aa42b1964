//! Email addresses: a local part of the common unquoted characters, `@`,
//! and a domain of at least two labels whose last is alphabetic (`git@v2`
//! and `pkg@1.2.3` are not addresses).

use crate::chars::{at, is_alnum};

fn is_local(b: u8) -> bool {
    is_alnum(b) || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-' | b'\'')
}

fn is_domain(b: u8) -> bool {
    is_alnum(b) || matches!(b, b'.' | b'-')
}

/// An address around the `@` at `at_sign`, as its span.
pub(crate) fn around_at(text: &[u8], at_sign: usize) -> Option<(usize, usize)> {
    let mut start = at_sign;
    while start > 0 && at_sign - start < 64 && is_local(text[start - 1]) {
        start -= 1;
    }
    // Sentence punctuation is not part of the local part.
    while start < at_sign && matches!(text[start], b'.' | b'\'' | b'-' | b'+') {
        start += 1;
    }
    if start == at_sign || text[at_sign - 1] == b'.' {
        return None;
    }
    let mut end = at_sign + 1;
    while end < text.len() && end - at_sign <= 253 && is_domain(text[end]) {
        end += 1;
    }
    while end > at_sign + 1 && matches!(text[end - 1], b'.' | b'-') {
        end -= 1;
    }
    let domain = &text[at_sign + 1..end];
    if domain.is_empty() || at(text, end) == b'@' {
        return None;
    }
    let mut labels = 0;
    let mut last: &[u8] = &[];
    for label in domain.split(|b| *b == b'.') {
        if label.is_empty()
            || label.len() > 63
            || label[0] == b'-'
            || label[label.len() - 1] == b'-'
        {
            return None;
        }
        labels += 1;
        last = label;
    }
    let tld_ok =
        last.len() >= 2 && (last.iter().all(u8::is_ascii_alphabetic) || last.starts_with(b"xn--"));
    (labels >= 2 && tld_ok).then_some((start, end))
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
        ] {
            assert_eq!(find(text), None, "{text}");
        }
    }
}
