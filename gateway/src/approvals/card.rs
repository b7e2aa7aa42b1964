//! What a parked request looks like from outside: the approval card the
//! webhook receives and the admin API lists, and the decision sent back.
//! Header names only, never their values, and never a body. A card is an
//! app request's (`kind: app`) or a connection's the network policy asks
//! about (`kind: network`: `host` and `port`, no method or path).

use serde::{Deserialize, Serialize};

use crate::process::Process;

/// One parked request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalCard {
    pub id: String,
    #[serde(default)]
    pub kind: CardKind,
    pub sandbox: String,
    #[serde(default)]
    pub session: Option<String>,
    /// Empty on a network card.
    #[serde(default)]
    pub app: String,
    /// The catalogue action it matched; `null` for a request no action
    /// describes (uncatalogued, or a custom app).
    #[serde(default)]
    pub action: Option<String>,
    #[serde(default)]
    pub method: String,
    /// The name the sandbox asked for (SNI or Host), or the address it
    /// connected to when it named none.
    pub host: String,
    /// Path and query as the sandbox sent them.
    #[serde(default)]
    pub path: String,
    /// A network card's destination port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// A network card's asking rule (`policy:network.ask_out[0]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Request header names (no values).
    #[serde(default)]
    pub headers: Vec<String>,
    /// Milliseconds since the Unix epoch.
    pub parked_at_ms: u64,
    /// When the request fails closed unless decided.
    pub expires_at_ms: u64,
    /// The program that sent it, where the kernel saw which.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<Process>,
}

/// What a card asks about.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CardKind {
    /// A request to an app action whose mode is `ask`.
    #[default]
    App,
    /// A connection to a destination the network policy asks about.
    Network,
}

/// What a person decided about a parked request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Forward this request.
    ApproveOnce,
    /// Forward it, and requests matching the same action in the same
    /// session from now on (an uncatalogued request: the same method and
    /// path; a network card: the session's connections to the same name).
    ApproveSession,
    /// A network card only: forward it, and write the destination into
    /// the sandbox's overlay as an allow rule (kept across restarts).
    ApproveAlways,
    Reject,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::ApproveOnce => "approve_once",
            Verdict::ApproveSession => "approve_session",
            Verdict::ApproveAlways => "approve_always",
            Verdict::Reject => "reject",
        }
    }
}

/// Body of `POST /v1/approvals/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionSpec {
    pub verdict: Verdict,
    /// Who decided, for the audit log (a user name, a control-plane id);
    /// `admin-api` when absent.
    #[serde(default)]
    pub by: Option<String>,
}

/// Longest `by` accepted; it ends up in audit lines.
pub const MAX_BY_LEN: usize = 128;
