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

use crate::scan::chars::{at, before, entropy, is_alnum, is_word, run_end};

/// How strong a name's claim is that its value is secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strength {
    Password,
    Key,
    Bearer,
}

/// Names in the spellings that occur (each anchor is matched case-sensitively
/// so the literal prefilter stays vectorized).
pub(crate) const NAMES: &[(&str, Strength)] = &[
    ("passw", Strength::Password),
    ("PASSW", Strength::Password),
    ("Passw", Strength::Password),
    ("secret", Strength::Key),
    ("SECRET", Strength::Key),
    ("Secret", Strength::Key),
    ("token", Strength::Key),
    ("TOKEN", Strength::Key),
    ("Token", Strength::Key),
    ("api_key", Strength::Key),
    ("API_KEY", Strength::Key),
    ("apikey", Strength::Key),
    ("APIKEY", Strength::Key),
    ("apiKey", Strength::Key),
    ("ApiKey", Strength::Key),
    ("api-key", Strength::Key),
    ("Api-Key", Strength::Key),
    ("access_key", Strength::Key),
    ("ACCESS_KEY", Strength::Key),
    ("accessKey", Strength::Key),
    ("private_key", Strength::Key),
    ("PRIVATE_KEY", Strength::Key),
    ("privateKey", Strength::Key),
    ("Bearer ", Strength::Bearer),
    ("bearer ", Strength::Bearer),
];

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
) -> Option<(usize, usize)> {
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
    let lower = value.to_ascii_lowercase();
    if PLACEHOLDERS
        .iter()
        .any(|p| memchr::memmem::find(&lower, p.as_bytes()).is_some())
    {
        return false;
    }
    if value.iter().all(|b| *b == value[0]) {
        return false;
    }
    let letters = value.iter().any(u8::is_ascii_alphabetic);
    let digits = value.iter().any(u8::is_ascii_digit);
    let others = value.iter().any(|b| !is_alnum(*b));
    let upper = value.iter().any(u8::is_ascii_uppercase);
    let lower_case = value.iter().any(u8::is_ascii_lowercase);
    match strength {
        Strength::Password => {
            value.len() >= 6 && letters && (digits || others || (upper && lower_case))
        }
        Strength::Key | Strength::Bearer => {
            value.len() >= 16 && letters && digits && entropy(value) >= 3.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(text: &str) -> Option<&str> {
        let bytes = text.as_bytes();
        for (name, strength) in NAMES {
            if let Some(i) = text.find(name) {
                if let Some((s, e)) = detect(bytes, i, i + name.len(), *strength) {
                    return Some(&text[s..e]);
                }
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
        ] {
            assert_eq!(find(text), None, "{text}");
        }
    }
}
