//! What a parked request looks like from outside: the approval card the
//! webhook receives and the admin API lists, and the decision sent back.
//! Header names only, never their values, and never a body.

use serde::{Deserialize, Serialize};

use crate::process::Process;

/// One parked request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalCard {
    pub id: String,
    pub sandbox: String,
    #[serde(default)]
    pub session: Option<String>,
    pub app: String,
    /// The catalogue action it matched; `null` for a request no action
    /// describes (uncatalogued, or a custom app).
    #[serde(default)]
    pub action: Option<String>,
    pub method: String,
    pub host: String,
    /// Path and query as the sandbox sent them.
    pub path: String,
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

/// What a person decided about a parked request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Forward this request.
    ApproveOnce,
    /// Forward it, and requests matching the same action in the same
    /// session from now on (an uncatalogued request: the same method and path).
    ApproveSession,
    Reject,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::ApproveOnce => "approve_once",
            Verdict::ApproveSession => "approve_session",
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
