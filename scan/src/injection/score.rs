//! The score model.
//!
//! Each rule that fires gives its signal family a weight in 0..1: roughly
//! the chance that text with that evidence alone is an attack. The source of
//! the text then adjusts it, `w' = 1 - (1 - w)^k`: `k = 1.6` for tool
//! results and retrieved documents (text from outside that the model is told
//! to read, where injections live and instructions have no business being),
//! `1.3` for tool descriptions, `1` for user and plain text, `0.8` for earlier
//! assistant turns; the operator's system prompt is not scored. Within one
//! text, distinct rules of a family combine by noisy-OR (`1 - Π (1 - w)`,
//! each rule counted once however often it matches). A family counts once,
//! at its highest adjusted weight anywhere in the request, and families
//! combine by noisy-OR too: `score = 1 - Π (1 - w'_family)`. So one
//! strong signal (override, 0.9) crosses the default threshold of 0.8 alone,
//! while weak ones (a claim of authority 0.45, a payload such as "delete all
//! files" 0.4) need each other or a tool result to get there.
//!
//! The learned scorer ([`super::model`]) is one more family,
//! `learned_model`, at its calibrated score of the request's strongest
//! text (calibrated so that 0.8 is where 99.5% of each benign training
//! source stays below; not adjusted for the source, since tool outputs and
//! documents were among what it was calibrated on). It counts from
//! [`MODEL_FLOOR`] up: below even odds it is not evidence, and the rules'
//! scores of ordinary text stay as they were. So the model alone crosses
//! 0.8 where it is sure, and a weak rule crosses it with the model's
//! agreement: `1 - (1 - 0.45)(1 - 0.64) = 0.8`.

use super::extract::Source;
use super::signal::Signal;

/// The model's score from which it counts as a family.
pub const MODEL_FLOOR: f64 = 0.5;

/// The exponent that adjusts a weight for the source of its text.
pub fn source_exponent(source: Source) -> f64 {
    match source {
        Source::ToolResult | Source::Document => 1.6,
        Source::ToolDefinition => 1.3,
        Source::User | Source::Text => 1.0,
        Source::Assistant => 0.8,
        Source::System => 0.0,
    }
}

/// A rule weight adjusted for where it fired.
pub fn adjust(weight: f64, source: Source) -> f64 {
    1.0 - (1.0 - weight.clamp(0.0, 1.0)).powf(source_exponent(source))
}

/// Noisy-OR over signal families, each at its highest weight.
pub fn combine(signals: &[Signal]) -> f64 {
    let mut best = std::collections::BTreeMap::new();
    for s in signals {
        let w = best.entry(s.kind).or_insert(0.0_f64);
        *w = w.max(s.weight);
    }
    1.0 - best.values().map(|w| 1.0 - w).product::<f64>()
}
