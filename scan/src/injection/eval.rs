//! Scoring of labelled evaluation corpora (JSONL): one record in,
//! one prediction line out, for `sluice scan --jsonl` and the
//! `injection_eval` example.

use serde::Deserialize;
use serde_json::json;

use super::Detector;

/// A corpus record: only the fields the detector reads.
#[derive(Debug, Deserialize)]
pub struct Record {
    pub id: String,
    #[serde(default)]
    pub content_type: Option<String>,
    pub body: String,
}

/// The prediction line for one record: `{"id", "findings": [], "injection_score"}`,
/// with the signals' names and the rules' and the learned scorer's own
/// scores beside it (the corpus scorer reads only the score). PII findings
/// are the PII scanner's to fill in.
pub fn predict(detector: &Detector, record: &Record) -> serde_json::Value {
    let assessment = detector.assess(record.content_type.as_deref(), record.body.as_bytes());
    json!({
        "id": record.id,
        "findings": [],
        "injection_score": assessment.score,
        "injection_signals": assessment.names(),
        "injection_rules": assessment.rules,
        "injection_model": assessment.model,
    })
}

/// Reads one JSON line and predicts it.
pub fn predict_line(
    detector: &Detector,
    line: &str,
) -> Result<serde_json::Value, serde_json::Error> {
    Ok(predict(detector, &serde_json::from_str::<Record>(line)?))
}
