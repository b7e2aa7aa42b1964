//! US social security numbers. `123-45-6789` is reported on its own; the
//! same digits with spaces, or nine bare digits, only after an SSN word.
//! Numbers the SSA never issues are not reported: area 000, 666 or 900-999,
//! group 00, serial 0000.

use crate::chars::{at, ends_token, has_context, is_digit, starts_token};

const CONTEXT: &[&str] = &["ssn", "social security", "social sec", "ss#", "ss #"];

/// An SSN starting at `start` (the first digit), as its span.
pub(crate) fn at_digit(text: &[u8], start: usize) -> Option<(usize, usize)> {
    if !starts_token(text, start) {
        return None;
    }
    let digits_at = |i: usize, n: usize| (i..i + n).all(|j| is_digit(at(text, j)));
    let (end, context_needed) = if digits_at(start, 3)
        && matches!(at(text, start + 3), b'-' | b' ')
        && digits_at(start + 4, 2)
        && at(text, start + 6) == at(text, start + 3)
        && digits_at(start + 7, 4)
    {
        (start + 11, at(text, start + 3) == b' ')
    } else if digits_at(start, 9) {
        (start + 9, true)
    } else {
        return None;
    };
    if !ends_token(text, end) || is_digit(at(text, end)) {
        return None;
    }
    let mut digits = [0u32; 9];
    for (slot, b) in digits
        .iter_mut()
        .zip(text[start..end].iter().filter(|b| is_digit(**b)))
    {
        *slot = u32::from(b - b'0');
    }
    let area = digits[0] * 100 + digits[1] * 10 + digits[2];
    let group = digits[3] * 10 + digits[4];
    let serial = digits[5..].iter().fold(0, |acc, d| acc * 10 + d);
    let issued = area != 0 && area != 666 && area < 900 && group != 0 && serial != 0;
    if !issued || (context_needed && !has_context(text, start, CONTEXT)) {
        return None;
    }
    Some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(text: &str) -> Option<&str> {
        crate::detect::first_digit_find(text, at_digit)
    }

    #[test]
    fn positives() {
        for (text, want) in [
            ("My SSN is 376-85-2672.", "376-85-2672"),
            ("ssn=007-76-4115", "007-76-4115"),
            ("social security number 376 85 2672", "376 85 2672"),
            ("SSN: 376852672", "376852672"),
        ] {
            assert_eq!(find(text), Some(want), "{text}");
        }
    }

    #[test]
    fn near_misses() {
        for text in [
            "000-12-3456",
            "666-12-3456",
            "912-12-3456",
            "123-00-3456",
            "123-45-0000",
            "376852672",      // bare digits without an SSN word
            "376 85 2672",    // spaced without an SSN word
            "376-85-26721",   // longer
            "2026-05-04",     // a date
            "x376-85-2672",   // inside a word
            "1376-85-2672",   // wrong first group
            "376-85-2672-11", // a longer dashed token
            "376-85 2672",    // mixed separators
        ] {
            assert_eq!(find(text), None, "{text}");
        }
    }
}
