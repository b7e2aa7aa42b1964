//! Prompt-injection scoring of LLM-API requests.
//!
//! [`Detector::assess`] extracts the text a model will read from a request
//! body ([`extract`]), tagged with its source, scans each piece for signal
//! families (`scanner`, with the phrase tables in `rules` and `lang`, and
//! `unicode`, `encoded`, `exfil`) and with a learned scorer ([`model`],
//! weights compiled in), and combines what fired into a score in 0..1
//! ([`score`] documents how). Pure and synchronous: no network, no model
//! files at run time. The pipeline stage calls it on requests that
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
pub mod model;
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

use model::MODEL;
use scanner::SCANNER;
pub use settings::{InjectionAction, InjectionDefense, Requests};

/// The result of scoring one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Assessment {
    /// 0 (nothing suspicious) to 1.
    pub score: f64,
    /// Every family that fired, per segment, strongest first; the learned
    /// scorer's evidence as `learned_model` when it counts
    /// ([`score::MODEL_FLOOR`]).
    pub signals: Vec<Signal>,
    /// The rule families' score alone.
    pub rules: f64,
    /// The learned scorer's calibrated score of the request's strongest
    /// text, counted or not; 0 when no text held an anchor for it to read
    /// ([`model`]'s docs say why).
    pub model: f64,
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
        let mut model = Strongest::default();
        let ascii = body.known_ascii();
        body.each_segment(&mut |source, location, text| {
            assess_segment(&mut signals, &mut model, source, location, text, ascii);
        });
        Assessment::of(signals, model)
    }

    /// Scores one text as if it came from `source`.
    pub fn assess_text(&self, text: &str, source: Source) -> Assessment {
        let mut signals = Vec::new();
        let mut model = Strongest::default();
        let location = extract::TEXT_LOCATION;
        assess_segment(&mut signals, &mut model, source, location, text, false);
        Assessment::of(signals, model)
    }
}

/// The learned scorer's strongest text in a request so far: its score, and
/// where it is once that counts.
#[derive(Debug, Default)]
pub(crate) struct Strongest {
    score: f64,
    at: Option<(Source, String)>,
}

impl Strongest {
    /// Notes the model's `score` of the text at `location`.
    pub(crate) fn note(&mut self, score: f64, source: Source, location: &str) {
        if score > self.score {
            self.score = score;
            // Its location is copied only when it counts: most texts score low.
            if score >= score::MODEL_FLOOR {
                self.at = Some((source, location.to_string()));
            }
        }
    }
}

impl Assessment {
    /// The score of `signals` and the model's evidence, listed strongest
    /// first (of equal weight, in the order they fired).
    pub(crate) fn of(mut signals: Vec<Signal>, model: Strongest) -> Assessment {
        let rules = score::combine(&signals);
        if let Some((source, location)) = model.at {
            signals.push(Signal {
                kind: SignalKind::LearnedModel,
                source,
                location,
                weight: model.score,
            });
        }
        signals.sort_by(|a, b| b.weight.total_cmp(&a.weight));
        Assessment {
            score: score::combine(&signals),
            signals,
            rules,
            model: model.score,
        }
    }
}

/// Adds what fires in one segment to `signals`, and the learned scorer's
/// score of it to `model` where the rules' sweep found an anchor or a rule
/// fired; `ascii` when the text is known to be ASCII. Its location is
/// copied only for a signal: most segments have none.
fn assess_segment(
    signals: &mut Vec<Signal>,
    model: &mut Strongest,
    source: Source,
    location: &str,
    text: &str,
    ascii: bool,
) {
    if source == Source::System {
        return;
    }
    let (found, reading) = SCANNER.scan_for_model(text, ascii);
    for (kind, weight) in found.iter() {
        signals.push(Signal {
            kind,
            source,
            location: location.to_string(),
            weight: score::adjust(weight, source),
        });
    }
    // A text a rule fired on is read whole; otherwise only around the
    // anchors the model reads after ([`model::gate::Reading`]).
    if reading.whole || !found.is_empty() {
        model.note(MODEL.score(text), source, location);
    } else if !reading.hits.is_empty() {
        model.note(MODEL.score_around(text, &reading.hits), source, location);
    }
}
