//! A policy's `injection_defense` section: whether the detector runs, what
//! happens over its threshold, and the threshold. The policy (`sluice`'s
//! `policy::raw`) re-exports these types; they live here because the
//! [`Detector`](super::Detector) is built from them.

use serde::{Deserialize, Deserializer};

/// `injection_defense: true` (or `false`) is the section with only
/// `enabled` given ([`crate::switch`]).
#[derive(Debug, Clone)]
pub struct InjectionDefense {
    pub enabled: bool,
    pub action: InjectionAction,
    /// Score in 0..=1 at or above which `action` applies.
    pub threshold: f64,
    /// Which requests are scored.
    pub requests: Requests,
    /// Under `llm_apis`, requests to these hosts (`api.example.com`,
    /// `*.example.com`) are scored too: the operator's own model endpoints.
    pub hosts: Vec<String>,
    /// Under `llm_apis`, requests whose path starts with one of these are
    /// scored too.
    pub paths: Vec<String>,
}

/// Which requests the injection detector scores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Requests {
    /// The generation endpoints of the common model APIs
    /// ([`is_llm_request`](super::is_llm_request)) and the listed `hosts`
    /// and `paths`: a package upload or a code push is never scored.
    #[default]
    LlmApis,
    /// Every intercepted request with a body.
    All,
}

impl<'de> Deserialize<'de> for InjectionDefense {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match crate::switch::switch_or::<D, Fields>(deserializer)? {
            Ok(Fields {
                enabled,
                action,
                threshold,
                requests,
                hosts,
                paths,
            }) => InjectionDefense {
                enabled,
                action,
                threshold,
                requests,
                hosts,
                paths,
            },
            Err(enabled) => InjectionDefense {
                enabled,
                ..InjectionDefense::default()
            },
        })
    }
}

/// The section written in full.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fields {
    #[serde(default)]
    enabled: bool,
    #[serde(default)]
    action: InjectionAction,
    #[serde(default = "default_threshold")]
    threshold: f64,
    #[serde(default)]
    requests: Requests,
    #[serde(default)]
    hosts: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
}

impl Default for InjectionDefense {
    fn default() -> Self {
        InjectionDefense {
            enabled: false,
            action: InjectionAction::default(),
            threshold: default_threshold(),
            requests: Requests::default(),
            hosts: Vec::new(),
            paths: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InjectionAction {
    #[default]
    Block,
    Audit,
}

/// One strong injection signal (an override, 0.9) crosses it alone; weak
/// ones must agree. At 0.8 the shared dev corpus scores detection 1.0 with no
/// false positives (see the gateway's docs/policy.md, `injection_defense`).
fn default_threshold() -> f64 {
    0.8
}
