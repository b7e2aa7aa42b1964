//! The content stages: what the pipeline does with request and response
//! bodies. In the request stages' order (ARCHITECTURE.md), after apps and
//! the dry run and before credential injection: PII (block, redact into
//! session tokens, or log), prompt-injection scoring, request
//! transformations; on the way back, rehydration of tokens and response
//! transformations.
//!
//! Deciding is pure: [`inspect`] takes a buffered, decoded body and the
//! policy's [`Stages`] and says what to forward or why to refuse; the
//! interceptor (`intercept::content`) collects, decodes, counts and audits.

pub mod sse;
pub mod transform;
pub mod vault;

use std::collections::BTreeMap;

use crate::policy::raw::{self, InjectionAction, PiiAction};
pub use sluice_scan::Read;
use sluice_scan::injection::{Assessment, Detector, Requests, is_llm_request};

use crate::credentials::hosts::HostSet;
use sluice_scan::{Format, ScanConfig, Scanner};
use transform::Rules;
use vault::Vault;

/// A policy's content stages, built once per policy version when it loads
/// (`CompiledPolicy::compile` holds them), from the policy's raw sections so
/// that this module does not depend on the compiled form that holds it.
#[derive(Debug)]
pub struct Stages {
    pub pii: Option<Pii>,
    pub injection: Option<Injection>,
    pub transforms: transform::Table,
}

#[derive(Debug)]
pub struct Pii {
    scanner: Scanner,
    action: PiiAction,
    actions: BTreeMap<String, PiiAction>,
    pub rehydrate: bool,
    pub oversize: raw::Oversize,
}

#[derive(Debug)]
pub struct Injection {
    detector: Detector,
    pub action: InjectionAction,
    pub threshold: f64,
    requests: Requests,
    /// `hosts`, when any: requests to them are scored under `llm_apis`.
    hosts: Option<HostSet>,
    paths: Vec<String>,
}

impl Injection {
    /// Whether a request to `host` at `path` (its query included or not)
    /// is scored: every one under `requests: all`; under `llm_apis` the
    /// common model APIs' generation endpoints and the listed hosts and
    /// path prefixes.
    pub fn scores(&self, host: &str, path: &str) -> bool {
        match self.requests {
            Requests::All => true,
            Requests::LlmApis => {
                is_llm_request(host, path)
                    || self.hosts.as_ref().is_some_and(|hosts| hosts.matches(host))
                    || self
                        .paths
                        .iter()
                        .any(|prefix| path.starts_with(prefix.as_str()))
            }
        }
    }
}

/// A stage that cannot be built, at the path of the policy node it comes
/// from (`pii.types`, `transformations[2].hosts[0]`), for a located error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    pub path: String,
    pub message: String,
}

impl Stages {
    /// Builds the scanner, the detector and the transformation automata
    /// from sections `CompiledPolicy::compile` has already validated; every
    /// stage that still cannot be built is returned, none is dropped.
    pub fn build(
        pii: &raw::Pii,
        injection: &raw::InjectionDefense,
        transformations: &[raw::Transformation],
    ) -> Result<Stages, Vec<BuildError>> {
        let mut errors = Vec::new();
        let pii = if pii.enabled {
            let built = ScanConfig::from_types(&pii.types)
                .and_then(|config| Scanner::new(&config))
                .map_err(|e| BuildError {
                    path: "pii.types".to_string(),
                    message: format!("the PII scanner cannot be built: {e}"),
                });
            match built {
                Ok(scanner) => Some(Pii {
                    scanner,
                    action: pii.action,
                    actions: pii.actions.clone(),
                    rehydrate: pii.rehydrate_response,
                    oversize: pii.oversize.clone(),
                }),
                Err(e) => {
                    errors.push(e);
                    None
                }
            }
        } else {
            None
        };
        let hosts = match injection.hosts.is_empty() {
            true => Ok(None),
            false => HostSet::parse(&injection.hosts).map(Some).map_err(|es| {
                errors.extend(es.into_iter().map(|e| BuildError {
                    path: "injection_defense.hosts".to_string(),
                    message: e.to_string(),
                }));
            }),
        };
        let injection = match (injection.enabled, hosts) {
            (true, Ok(hosts)) => Some(Injection {
                detector: Detector::new(injection),
                action: injection.action,
                threshold: injection.threshold,
                requests: injection.requests,
                hosts,
                paths: injection.paths.clone(),
            }),
            _ => None,
        };
        let transforms = transform::Table::build(transformations).unwrap_or_else(|e| {
            errors.extend(e);
            transform::Table::default()
        });
        if errors.is_empty() {
            Ok(Stages {
                pii,
                injection,
                transforms,
            })
        } else {
            Err(errors)
        }
    }

    /// Whether request bodies must be read at all (transformations aside).
    pub fn inspects(&self) -> bool {
        self.pii.is_some() || self.injection.is_some()
    }

    /// Whether a request to `host` at `path` has its body read: PII reads
    /// every one, injection scoring those it scores ([`Injection::scores`]).
    pub fn inspects_request(&self, host: &str, path: &str) -> bool {
        self.pii.is_some() || self.scores_injection(host, path)
    }

    /// Whether the injection detector scores a request to `host` at `path`.
    pub fn scores_injection(&self, host: &str, path: &str) -> bool {
        let injection = self.injection.as_ref();
        injection.is_some_and(|injection| injection.scores(host, path))
    }

    /// The most a body may be buffered for inspection.
    pub fn inspect_bytes(&self) -> Option<&raw::Oversize> {
        self.pii.as_ref().map(|pii| &pii.oversize)
    }
}

/// One detected value: its type and what was done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    pub kind: &'static str,
    pub action: PiiAction,
}

/// Why a body is refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// A PII type whose action is `block`; `rule` names the policy entry.
    Pii {
        kinds: Vec<&'static str>,
        rule: String,
    },
    Injection {
        score: f64,
        signals: Vec<String>,
    },
}

/// What the request stages decided about one body.
#[derive(Debug, Default)]
pub struct Inspection {
    /// The body to forward, when it differs from the one inspected.
    pub rewritten: Option<Vec<u8>>,
    pub detections: Vec<Detection>,
    pub refusal: Option<Refusal>,
    /// The injection score, when it was scored and reached the threshold
    /// (in `audit` mode the request goes on, and this is audited).
    pub injection: Option<Assessment>,
}

/// Runs PII, injection (where `scored`: [`Stages::scores_injection`]) and
/// request transformations over `body` (already decoded). Values redacted
/// become tokens from `vault`.
pub fn inspect(
    stages: &Stages,
    scored: bool,
    transforms: &Rules,
    vault: &Vault,
    policy: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> Inspection {
    let mut inspection = Inspection::default();
    let mut current: Option<Vec<u8>> = None;
    let injection = stages.injection.as_ref().filter(|_| scored);
    let read = Read::new(content_type, body, injection.is_some());
    if let Some(pii) = &stages.pii {
        let findings = read.pii(&pii.scanner);
        // As the scanner read it: a value is stored with the body's
        // encoding undone.
        let format = read.format();
        let mut blocked = Vec::new();
        let mut out = Vec::with_capacity(body.len());
        let mut at = 0;
        for finding in &findings {
            let kind = finding.kind.as_str();
            let action = pii.actions.get(kind).copied().unwrap_or(pii.action);
            inspection.detections.push(Detection { kind, action });
            match action {
                PiiAction::Block => {
                    if !blocked.contains(&kind) {
                        blocked.push(kind);
                    }
                }
                PiiAction::Redact if finding.start >= at => {
                    let span = &body[finding.start..finding.end];
                    let value = original_value(&format, span);
                    out.extend_from_slice(&body[at..finding.start]);
                    out.extend_from_slice(vault.token(kind, &value).as_bytes());
                    at = finding.end;
                }
                PiiAction::Redact | PiiAction::LogOnly => {}
            }
        }
        if !blocked.is_empty() {
            let rule = match blocked.iter().find(|k| pii.actions.contains_key(**k)) {
                Some(kind) => format!("{policy}:pii.actions.{kind}"),
                None => format!("{policy}:pii.action"),
            };
            inspection.refusal = Some(Refusal::Pii {
                kinds: blocked,
                rule,
            });
            return inspection;
        }
        if at > 0 {
            out.extend_from_slice(&body[at..]);
            current = Some(out);
        }
    }
    if let Some(injection) = injection {
        let assessment = read.injection(&injection.detector);
        if assessment.score >= injection.threshold {
            if injection.action == InjectionAction::Block {
                inspection.refusal = Some(Refusal::Injection {
                    score: assessment.score,
                    signals: assessment
                        .signals
                        .iter()
                        .map(|s| s.as_str().to_owned())
                        .collect(),
                });
                return inspection;
            }
            inspection.injection = Some(assessment);
        }
    }
    if !transforms.is_empty() {
        let input = current.as_deref().unwrap_or(body);
        if let std::borrow::Cow::Owned(new) = transforms.apply(input) {
            current = Some(new);
        }
    }
    inspection.rewritten = current;
    inspection
}

/// The value a detected span stands for: JSON escapes and form
/// percent-encoding undone (by the body's format as the scanner read it,
/// sniffed JSON included), so rehydration writes back the real value
/// (escaped again for the response it lands in).
fn original_value(format: &Format<'_>, span: &[u8]) -> Vec<u8> {
    match format {
        Format::Json => {
            let quoted = [b"\"".as_slice(), span, b"\""].concat();
            serde_json::from_slice::<String>(&quoted)
                .map(String::into_bytes)
                .unwrap_or_else(|_| span.to_vec())
        }
        Format::Form => percent_decode(span),
        Format::Multipart(_) | Format::Text => span.to_vec(),
    }
}

fn percent_decode(span: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(span.len());
    let mut i = 0;
    while i < span.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match span[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < span.len() => match (hex(span[i + 1]), hex(span[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests;
