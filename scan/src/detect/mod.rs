//! The validators: each takes the text and the position a prefilter found
//! (a digit run, an `@`, an anchor literal) and returns the span of a value
//! that passes its checks, or nothing. None of them allocates per byte; all
//! look at a bounded window around the position.

pub(crate) mod card;
pub(crate) mod email;
pub(crate) mod generic;
pub(crate) mod iban;
pub(crate) mod ip;
pub(crate) mod phone;
pub(crate) mod secrets;
pub(crate) mod ssn;

/// The span a validator finds from the first digit of `text`, as text:
/// the detectors' table tests read their cases through it.
#[cfg(test)]
pub(crate) fn first_digit_find<F>(text: &str, at_digit: F) -> Option<&str>
where
    F: Fn(&[u8], usize) -> Option<(usize, usize)>,
{
    let bytes = text.as_bytes();
    let start = bytes.iter().position(|b| b.is_ascii_digit())?;
    at_digit(bytes, start).map(|(s, e)| &text[s..e])
}
