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
