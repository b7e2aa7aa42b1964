//! The generic secret rule: a secret-sounding name (`password`, `secret`,
//! `token`, `api_key`, `access_key`, `private_key`, `Bearer`) assigned a
//! value that looks random. The name may continue (`client_secret`,
//! `DB_PASSWORD`, `max_tokens`); the assignment is `=`, `:`, `:=`, `=>` or
//! ` is `, with optional quotes (JSON, YAML, env files, prose). What is
//! reported is the value alone.
//!
//! Passwords are short and human, so after a password name a value of 6+
//! bytes that is not a plain word counts. Tokens and keys are long and
//! random: 16+ bytes, letters and digits, and Shannon entropy of at least
//! 3.0 bits per byte. Placeholders (`****`, `<token>`, `${VAR}`, `changeme`)
//! are skipped.

use crate::chars::{at, before, entropy, is_alnum, is_word, run_end};

/// How strong a name's claim is that its value is secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strength {
    Password,
    Key,
    Bearer,
}

/// What must come before an anchor for it to be a secret's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Name {
    /// This letter, in either case (`assw` after `p`: password, PASSWD).
    After(u8),
    /// A qualifier that makes a key secret (`api`, `access`, `private`,
    /// `secret`, ...), optionally joined by `_` or `-` (`api_key`, `apiKey`,
    /// `x-api-key`, `SECRET_KEY`); a bare "key" in prose is not one.
    Qualified,
    /// Nothing.
    Whole,
}

/// The anchors of secret names. They are fragments matched case-sensitively
/// (`oken` after `t` or `T` covers token, Token, access_token) so that the
/// whole literal set stays small enough for the vectorized prefilter.
pub(crate) const NAMES: &[(&str, Strength, Name)] = &[
    ("assw", Strength::Password, Name::After(b'p')),
    ("ASSW", Strength::Password, Name::After(b'p')),
    ("ecret", Strength::Key, Name::After(b's')),
    ("ECRET", Strength::Key, Name::After(b's')),
    ("oken", Strength::Key, Name::After(b't')),
    ("OKEN", Strength::Key, Name::After(b't')),
    ("key", Strength::Key, Name::Qualified),
    ("Key", Strength::Key, Name::Qualified),
    ("KEY", Strength::Key, Name::Qualified),
    ("Bearer ", Strength::Bearer, Name::Whole),
    ("bearer ", Strength::Bearer, Name::Whole),
];

const QUALIFIERS: &[&[u8]] = &[
    b"api",
    b"access",
    b"private",
    b"secret",
    b"auth",
    b"client",
    b"signing",
    b"encryption",
    b"master",
    b"app",
];

/// Whether the anchor at `start` is part of a secret's name.
fn named(text: &[u8], start: usize, name: Name) -> bool {
    match name {
        Name::Whole => true,
        Name::After(letter) => start > 0 && text[start - 1].to_ascii_lowercase() == letter,
        Name::Qualified => {
            let mut end = start;
            if end > 0 && matches!(text[end - 1], b'_' | b'-') {
                end -= 1;
            }
            let mut begin = end;
            while begin > 0 && end - begin < 10 && text[begin - 1].is_ascii_alphabetic() {
                begin -= 1;
            }
            let mut word = [0u8; 10];
            let word = &mut word[..end - begin];
            word.copy_from_slice(&text[begin..end]);
            word.make_ascii_lowercase();
            QUALIFIERS.iter().any(|q| word.ends_with(q))
        }
    }
}

const PLACEHOLDERS: &[&str] = &[
    "changeme",
    "password",
    "redacted",
    "undefined",
    "null",
    "none",
    "secret",
    "example",
    "xxxxxx",
    "placeholder",
    "your_",
    "your-",
    "<",
    "${",
    "{{",
    "%s",
    "***",
    "...",
];

fn is_value(b: u8) -> bool {
    b.is_ascii_graphic()
        && !matches!(
            b,
            b'"' | b'\'' | b'`' | b',' | b';' | b'&' | b'<' | b'>' | b')' | b']' | b'}'
        )
}

/// The secret value named by the anchor `name_start..name_end`, as its span.
pub(crate) fn detect(
    text: &[u8],
    name_start: usize,
    name_end: usize,
    strength: Strength,
    name: Name,
) -> Option<(usize, usize)> {
    if !named(text, name_start, name) {
        return None;
    }
    let mut i = name_end;
    if strength == Strength::Bearer {
        if is_word(before(text, name_start)) {
            return None;
        }
    } else {
        // The rest of the name (`_id`, `s`, `_hash`), a closing quote, spaces,
        // the assignment, spaces, an opening quote.
        i = run_end(text, i, 64, |b| is_word(b) || b == b'-' || b == b'.');
        if matches!(at(text, i), b'"' | b'\'') {
            i += 1;
        }
        i = run_end(text, i, 8, |b| b == b' ' || b == b'\t');
        match (at(text, i), at(text, i + 1)) {
            (b':', b'=') | (b'=', b'>') => i += 2,
            (b':' | b'=', _) => i += 1,
            (b'i', b's') if at(text, i + 2) == b' ' && before(text, i) == b' ' => i += 2,
            _ => return None,
        }
        i = run_end(text, i, 8, |b| b == b' ' || b == b'\t');
        if matches!(at(text, i), b'"' | b'\'' | b'`') {
            i += 1;
        }
    }
    let start = i;
    let mut end = run_end(text, start, 256, is_value);
    while end > start && matches!(text[end - 1], b'.' | b':') {
        end -= 1;
    }
    let value = &text[start..end];
    plausible(value, strength).then_some((start, end))
}

fn plausible(value: &[u8], strength: Strength) -> bool {
    let letters = value.iter().any(u8::is_ascii_alphabetic);
    let digits = value.iter().any(u8::is_ascii_digit);
    let others = value.iter().any(|b| !is_alnum(*b));
    let upper = value.iter().any(u8::is_ascii_uppercase);
    let lower = value.iter().any(u8::is_ascii_lowercase);
    let shaped = match strength {
        Strength::Password => value.len() >= 6 && letters && (digits || others || (upper && lower)),
        Strength::Key | Strength::Bearer => {
            value.len() >= 16 && letters && digits && entropy(value) >= 3.0
        }
    };
    // The placeholder check allocates, so it runs last, on the few values
    // that look like secrets.
    shaped && !value.iter().all(|b| *b == value[0]) && !placeholder(value)
}

fn placeholder(value: &[u8]) -> bool {
    let lower = value.to_ascii_lowercase();
    PLACEHOLDERS
        .iter()
        .any(|p| memchr::memmem::find(&lower, p.as_bytes()).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(text: &str) -> Option<&str> {
        let bytes = text.as_bytes();
        for (anchor, strength, name) in NAMES {
            let mut from = 0;
            while let Some(i) = text[from..].find(anchor).map(|k| from + k) {
                if let Some((s, e)) = detect(bytes, i, i + anchor.len(), *strength, *name) {
                    return Some(&text[s..e]);
                }
                from = i + 1;
            }
        }
        None
    }

    #[test]
    fn positives() {
        for (text, want) in [
            ("password=Hunter2!x", "Hunter2!x"),
            ("DB_PASSWORD: 'k8sR0cks'", "k8sR0cks"),
            (
                r#"{"client_secret": "q8Zr2LmP0xVb7TnKw4Yd"}"#,
                "q8Zr2LmP0xVb7TnKw4Yd",
            ),
            (
                "export API_KEY=9f8e7d6c5b4a39281706f5e4d3c2b1a0",
                "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
            ),
            (
                "my access token is Zm9vYmFyYmF6cXV4MTIzNDU2.",
                "Zm9vYmFyYmF6cXV4MTIzNDU2",
            ),
            (
                "Authorization: Bearer 8f3kLm29QpZx7Vb1Rt6Yw",
                "8f3kLm29QpZx7Vb1Rt6Yw",
            ),
            ("apiKey := \"AbCdEfGh12345678XyZ\"", "AbCdEfGh12345678XyZ"),
            ("x-api-key: A1b2C3d4E5f6G7h8I9", "A1b2C3d4E5f6G7h8I9"),
            ("SECRET_KEY=A1b2C3d4E5f6G7h8I9", "A1b2C3d4E5f6G7h8I9"),
        ] {
            assert_eq!(find(text), Some(want), "{text}");
        }
    }

    #[test]
    fn near_misses() {
        for text in [
            r#"{"max_tokens": 1024}"#,
            "password: changeme",
            "password=********",
            "token: <your token here>",
            "api_key=${API_KEY}",
            "secret: {{ vault.secret }}",
            "the secret is out",
            "password: sunshine",         // a plain word
            "token=abcdefghijklmnopqrst", // no digits, low variety
            "tokens are counted per request",
            "Bearer token",
            "session token eyJ",
            "the monkey: A1b2C3d4E5f6G7h8I9", // not a secret's name
            "spoken: A1b2C3d4E5f6G7h8I9",
        ] {
            assert_eq!(find(text), None, "{text}");
        }
    }
}
