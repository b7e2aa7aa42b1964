//! Policies: the YAML files operators write (`raw`), their compiled,
//! immutable form, and the pure network decision.
//!
//! (being written)

pub mod raw;
