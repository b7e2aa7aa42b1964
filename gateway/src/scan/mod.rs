//! `sluice scan` ([`cli`]), the scanners' command. The scanners themselves
//! are the `sluice_scan` crate.

pub mod cli;

// `redact` undoes a response's encodings with the request side's decoders.
pub use sluice_scan::decode;
