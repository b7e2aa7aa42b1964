//! A policy's `injection_defense` section: whether the detector runs, what
//! happens over its threshold, and the threshold. The policy (`sluice`'s
//! `policy::raw`) re-exports these types; they live here because the
//! [`Detector`](super::Detector) is built from them.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InjectionDefense {
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub action: InjectionAction,
    /// Score in 0..=1 at or above which `action` applies.
    #[serde(default = "default_threshold")]
    pub threshold: f64,
}

impl Default for InjectionDefense {
    fn default() -> Self {
        InjectionDefense {
            enabled: false,
            action: InjectionAction::default(),
            threshold: default_threshold(),
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
