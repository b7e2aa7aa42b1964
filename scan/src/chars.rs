//! Byte classes and the context-word lookup shared by the detectors.
//!
//! Detectors work on bytes, not `str`: bodies are not always valid UTF-8 and
//! every value they look for is ASCII.

pub(crate) fn is_digit(b: u8) -> bool {
    b.is_ascii_digit()
}

pub(crate) fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// Letters, digits and `_`: what continues an identifier or a number.
pub(crate) fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether every byte is ASCII. The standard library's check reads a
/// text's last, partial 32 bytes one at a time, which cost as much as the
/// rest of a kilobyte: here the words are or-ed together (a loop the
/// compiler vectorizes) and the tail is the last eight bytes, read again.
pub(crate) fn is_ascii(bytes: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let Some(last) = bytes.last_chunk::<8>() else {
        return bytes.iter().all(u8::is_ascii);
    };
    let (words, _) = bytes.as_chunks::<8>();
    let any = words.iter().fold(0, |any, w| any | u64::from_le_bytes(*w));
    (any | u64::from_le_bytes(*last)) & HIGH == 0
}

/// The eight bytes at `i` as a little-endian word, padded with zeros past
/// the end.
pub(crate) fn word_at(text: &[u8], i: usize) -> u64 {
    match text.get(i..i + 8) {
        Some(w) => u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]),
        None => key_of(text.get(i..).unwrap_or_default()),
    }
}

/// Up to eight bytes as a little-endian word, zero-padded.
pub(crate) fn key_of(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(w)
}

/// The byte at `i`, or 0 (a delimiter for every detector) outside `text`.
pub(crate) fn at(text: &[u8], i: usize) -> u8 {
    text.get(i).copied().unwrap_or(0)
}

/// The byte before `i`, or 0 at the start.
pub(crate) fn before(text: &[u8], i: usize) -> u8 {
    if i == 0 { 0 } else { text[i - 1] }
}

/// End of the run of bytes from `from` that satisfy `class`, at most `max`
/// bytes long.
pub(crate) fn run_end(text: &[u8], from: usize, max: usize, class: impl Fn(u8) -> bool) -> usize {
    let limit = text.len().min(from.saturating_add(max));
    let mut i = from;
    while i < limit && class(text[i]) {
        i += 1;
    }
    i
}

/// Whether a number starting at `start` begins a token of its own: not the
/// tail of a word (`x4111`), nor a later group of a dotted or dashed token
/// (`v1.2`, the last group of a UUID).
pub(crate) fn starts_token(text: &[u8], start: usize) -> bool {
    let prev = before(text, start);
    if is_word(prev) {
        return false;
    }
    if (prev == b'.' || prev == b'-') && start >= 2 && is_alnum(text[start - 2]) {
        return false;
    }
    true
}

/// Whether a number ending at `end` ends its token: not followed by a word
/// byte nor by `.`/`-` and another digit (a longer dotted or dashed token).
pub(crate) fn ends_token(text: &[u8], end: usize) -> bool {
    let next = at(text, end);
    if is_word(next) {
        return false;
    }
    if (next == b'.' || next == b'-') && is_digit(at(text, end + 1)) {
        return false;
    }
    true
}

/// How far back context words are looked for, in bytes.
const CONTEXT_WINDOW: usize = 40;

/// Whether one of `words` (lower case) appears, case-insensitively, within
/// the few dozen bytes before `start`. Context raises confidence for shapes
/// too loose to report alone (nine bare digits after "SSN").
pub(crate) fn has_context(text: &[u8], start: usize, words: &[&str]) -> bool {
    has_context_within(text, start, words, CONTEXT_WINDOW)
}

/// [`has_context`] within the `window` bytes before `start` (at most
/// [`CONTEXT_WINDOW`]).
pub(crate) fn has_context_within(text: &[u8], start: usize, words: &[&str], window: usize) -> bool {
    let from = start.saturating_sub(window.min(CONTEXT_WINDOW));
    let mut window = [0u8; CONTEXT_WINDOW];
    let len = start - from;
    for (slot, b) in window.iter_mut().zip(&text[from..start]) {
        // Form bodies arrive decoded, but a separator may still be `_` or `+`.
        *slot = match b.to_ascii_lowercase() {
            b'_' | b'+' => b' ',
            other => other,
        };
    }
    let window = &window[..len];
    words
        .iter()
        .any(|word| memchr::memmem::find(window, word.as_bytes()).is_some())
}

/// Shannon entropy of `bytes` in bits per byte.
pub(crate) fn entropy(bytes: &[u8]) -> f64 {
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let n = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_is_every_byte_below_0x80_wherever_the_others_are() {
        for len in 0..80 {
            let text = vec![b'a'; len];
            assert!(is_ascii(&text), "{len}");
            for at in 0..len {
                let mut other = text.clone();
                other[at] = 0x80 | (at as u8);
                assert!(!is_ascii(&other), "{len} {at}");
            }
        }
    }

    #[test]
    fn token_boundaries() {
        assert!(starts_token(b"ssn 123", 4));
        assert!(starts_token(b"(123", 1));
        assert!(!starts_token(b"x123", 1));
        assert!(!starts_token(b"v1.2", 3));
        assert!(!starts_token(b"e29b-4466", 5));
        assert!(starts_token(b"at -122", 4));
        assert!(ends_token(b"123.", 3));
        assert!(!ends_token(b"1.2.3", 3));
        assert!(!ends_token(b"123a", 3));
        assert!(ends_token(b"123-x", 3));
    }

    #[test]
    fn context_is_case_insensitive_and_bounded() {
        let text = b"My SSN is 123456789";
        assert!(has_context(text, 10, &["ssn"]));
        assert!(!has_context(text, 10, &["phone"]));
        let far = format!("ssn {} 123456789", "x".repeat(60));
        assert!(!has_context(far.as_bytes(), far.len() - 9, &["ssn"]));
        assert!(has_context(
            b"social_security_number=1",
            23,
            &["social security"]
        ));
    }

    #[test]
    fn entropy_orders_random_above_repetitive() {
        assert!(entropy(b"aaaaaaaa") < 0.01);
        assert!(entropy(b"q8Zr2LmP0xVb7TnK") > 3.5);
    }
}
