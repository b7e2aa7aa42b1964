//! `sluice scan` ([`cli`]), the scanners' command. The scanners themselves
//! are the `sluice_scan` crate.

pub mod cli;
