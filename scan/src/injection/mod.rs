//! Prompt-injection scoring of LLM-API requests.
//!
//! [`Detector::assess`] extracts the text a model will read from a request
//! body ([`extract`]), tagged with its source, scans each piece for signal
//! families (`scanner`, with the phrase tables in `rules` and `lang`, and
//! `unicode`, `encoded`, `exfil`) and combines what fired into a score
//! in 0..1 ([`score`] documents the model). Pure and synchronous: no network,
//! no model files. The pipeline stage calls it on requests that
//! [`is_llm_request`] recognizes and applies the policy's action at or above
//! the threshold.

mod encoded;
mod endpoint;
pub mod eval;
mod exfil;
pub mod extract;
mod gate;
mod lang;
mod mask;
mod rules;
pub(crate) mod scanner;
pub mod score;
mod settings;
pub(crate) mod signal;
mod unicode;

#[cfg(test)]
mod tests;

pub use endpoint::is_llm_request;
pub use extract::Source;
pub use signal::{Signal, SignalKind};

use scanner::SCANNER;
pub use settings::{InjectionAction, InjectionDefense, Requests};

/// The result of scoring one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Assessment {
    /// 0 (nothing suspicious) to 1.
    pub score: f64,
    /// Every family that fired, per segment, strongest first.
    pub signals: Vec<Signal>,
}

impl Assessment {
    /// The distinct signal names, for audit events and metrics.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.signals.iter().map(Signal::as_str).collect();
        names.sort_unstable();
        names.dedup();
        names
    }
}

/// Scores requests against one policy's `injection_defense` settings.
#[derive(Debug, Clone)]
pub struct Detector {
    enabled: bool,
    action: InjectionAction,
    threshold: f64,
}

impl Default for Detector {
    fn default() -> Self {
        Detector::new(&InjectionDefense::default())
    }
}

impl Detector {
    /// The rules are compiled once per process, on first use, and shared.
    pub fn new(config: &InjectionDefense) -> Detector {
        Detector {
            enabled: config.enabled,
            action: config.action,
            threshold: config.threshold,
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn action(&self) -> InjectionAction {
        self.action
    }

    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// True when the assessment is at or above the policy's threshold.
    pub fn exceeds(&self, assessment: &Assessment) -> bool {
        assessment.score >= self.threshold
    }

    /// Scores a request body. JSON bodies (by content type, or by their
    /// first byte unless the type names another format) are read by API
    /// shape; text bodies whole; form bodies after percent-decoding; other
    /// bodies only when they are valid UTF-8 ([`extract::Body`]). Never
    /// fails: what cannot be read scores 0.
    pub fn assess(&self, content_type: Option<&str>, body: &[u8]) -> Assessment {
        self.assess_body(&extract::Body::read(content_type, body))
    }

    /// Scores a body already read ([`extract::Body::read`]).
    pub fn assess_body(&self, body: &extract::Body<'_>) -> Assessment {
        let mut signals = Vec::new();
        let ascii = body.known_ascii();
        body.each_segment(&mut |source, location, text| {
            assess_segment(&mut signals, source, location, text, ascii);
        });
        Assessment::of(signals)
    }

    /// Scores one text as if it came from `source`.
    pub fn assess_text(&self, text: &str, source: Source) -> Assessment {
        let mut signals = Vec::new();
        assess_segment(&mut signals, source, extract::TEXT_LOCATION, text, false);
        Assessment::of(signals)
    }
}

impl Assessment {
    /// The score of `signals`, listed strongest first (of equal weight, in
    /// the order they fired).
    fn of(mut signals: Vec<Signal>) -> Assessment {
        signals.sort_by(|a, b| b.weight.total_cmp(&a.weight));
        Assessment {
            score: score::combine(&signals),
            signals,
        }
    }
}

/// Adds what fires in one segment to `signals`; `ascii` when the text is
/// known to be ASCII. Its location is copied only for a signal: most
/// segments have none.
fn assess_segment(
    signals: &mut Vec<Signal>,
    source: Source,
    location: &str,
    text: &str,
    ascii: bool,
) {
    if source == Source::System {
        return;
    }
    for (kind, weight) in SCANNER.scan_known(text, ascii).iter() {
        signals.push(Signal {
            kind,
            source,
            location: location.to_string(),
            weight: score::adjust(weight, source),
        });
    }
}
