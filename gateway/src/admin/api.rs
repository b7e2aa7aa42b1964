//! Wire types of the admin API and the [`Backend`] trait the daemon implements.
//!
//! Both the server and the client speak these types, so the JSON shape lives in
//! exactly one place. Request bodies deny unknown fields: a typo in a control
//! plane's request must fail loudly rather than be silently ignored. Response
//! bodies accept unknown fields so an older CLI can read a newer daemon.

use std::future::Future;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Longest sandbox or session id accepted.
pub const MAX_ID_LEN: usize = 128;

/// A sandbox to register: a cgroup, optionally its network namespace and the
/// policy it runs under (the daemon's default when absent).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SandboxSpec {
    pub id: String,
    pub cgroup: PathBuf,
    #[serde(default)]
    pub netns: Option<PathBuf>,
    #[serde(default)]
    pub policy: Option<String>,
    /// Where to write the CA bundle the sandbox should trust (a host path
    /// inside the sandbox's filesystem): Sluice's CA, then the system roots.
    #[serde(default)]
    pub ca_bundle: Option<PathBuf>,
    /// Who owns the sandbox (`{sub, org}`): the viewer a `private`
    /// published app admits, and whose org an `org` one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<crate::ingress::scope::OwnerId>,
}

/// A session to register under a sandbox: a child cgroup of the sandbox's.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SessionSpec {
    pub id: String,
    pub cgroup: PathBuf,
    /// Marks the session as a task run (nobody present to answer approvals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskSpec>,
}

/// A task run's standing approvals.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// Apps whose `ask` actions need no person during this run (whole apps;
    /// `deny` still refuses).
    #[serde(default)]
    pub pre_approved_apps: Vec<String>,
}

/// A registered session.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SessionInfo {
    pub id: String,
    pub cgroup: PathBuf,
    pub cgroup_id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskSpec>,
}

/// A registered sandbox and its sessions.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SandboxInfo {
    pub id: String,
    pub cgroup: PathBuf,
    pub cgroup_id: u64,
    pub netns: Option<PathBuf>,
    pub policy: String,
    /// Where the registration came from: `"config"` or `"api"`.
    pub source: String,
    pub sessions: Vec<SessionInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<crate::ingress::scope::OwnerId>,
}

/// What `GET /v1/status` reports. Fields added after the first release
/// default when absent, so a newer CLI reads an older daemon.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Status {
    /// Programs attached, registrations restored, not draining (`/readyz`).
    pub ready: bool,
    pub version: String,
    pub cgroup_root: PathBuf,
    pub metrics_addr: Option<String>,
    pub tcp_port: u16,
    pub sandboxes: usize,
    pub programs: Vec<String>,
    /// Stopping: no new connections, in-flight ones finishing.
    #[serde(default)]
    pub draining: bool,
    /// Registered sandboxes and sessions (cgroups in the identity map).
    #[serde(default)]
    pub registered_cgroups: usize,
    #[serde(default)]
    pub maps: Vec<MapStatus>,
    #[serde(default)]
    pub policies: PolicySync,
    /// Refusals counted by the eBPF programs since they were first loaded.
    #[serde(default)]
    pub kernel_refusals: std::collections::BTreeMap<String, u64>,
    /// The newest refusals of any kind (kernel, connection, request, DNS), newest first.
    #[serde(default)]
    pub recent_refusals: Vec<RecentRefusal>,
    /// The web-app ingress's listening addresses, when configured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ingress_addrs: Vec<String>,
    /// Apps published through the web-app ingress.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apps: Vec<crate::ingress::publish::AppInfo>,
    /// Allow rules added to sandboxes at run time, by sandbox id
    /// (`policy::overlay`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub overlays: std::collections::BTreeMap<String, Vec<String>>,
    /// The explicit-proxy listener (capability tokens), when configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explicit_proxy_addr: Option<String>,
}

/// One pinned eBPF map and how full it is.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct MapStatus {
    pub name: String,
    pub entries: usize,
    pub capacity: usize,
}

/// The policies in force.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct PolicySync {
    /// `false` after a reload failed: the previous policies stay in force.
    pub synchronized: bool,
    pub dir: PathBuf,
    pub loaded: Vec<String>,
}

/// A refusal as the audit log recorded it (no payload, no secret).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RecentRefusal {
    pub ts_ms: u64,
    pub event: String,
    pub reason: String,
    #[serde(default)]
    pub rule: Option<String>,
    #[serde(default)]
    pub sandbox: Option<String>,
    #[serde(default)]
    pub dst: Option<String>,
    /// The SNI or Host asked for, when there was one.
    #[serde(default)]
    pub name: Option<String>,
}

/// Body of every error response.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ErrorBody {
    /// Human-readable message (the error's `Display`).
    pub error: String,
    /// One of `not_found`, `conflict`, `invalid`, `internal`, `forbidden`.
    pub kind: String,
}

/// `kind` of the error body the peer guard answers with. Not an [`AdminError`]
/// variant because a backend never produces it: refusal happens before routing.
pub const KIND_FORBIDDEN: &str = "forbidden";

/// Why an admin request failed; the variant picks the HTTP status.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("not found: {0}")]
    NotFound(String),
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("invalid request: {0}")]
    Invalid(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl AdminError {
    /// HTTP status the server answers with.
    pub fn status_code(&self) -> u16 {
        match self {
            AdminError::NotFound(_) => 404,
            AdminError::Conflict(_) => 409,
            AdminError::Invalid(_) => 400,
            AdminError::Internal(_) => 500,
        }
    }

    /// Machine-readable class, the `kind` field of [`ErrorBody`].
    pub fn kind(&self) -> &'static str {
        match self {
            AdminError::NotFound(_) => "not_found",
            AdminError::Conflict(_) => "conflict",
            AdminError::Invalid(_) => "invalid",
            AdminError::Internal(_) => "internal",
        }
    }

    /// The JSON error body for this error.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: self.to_string(),
            kind: self.kind().to_owned(),
        }
    }
}

/// Checks a sandbox or session id: `[A-Za-z0-9._-]{1,128}`, and neither `.` nor
/// `..`. Ids travel as URL path segments, so this charset needs no escaping;
/// `.` and `..` are refused because URL normalizers rewrite them.
/// `what` names the id in the message ("sandbox id", "session id").
pub fn validate_id(what: &str, id: &str) -> Result<(), AdminError> {
    if id.is_empty() || id.len() > MAX_ID_LEN {
        return Err(AdminError::Invalid(format!(
            "{what} must be 1 to {MAX_ID_LEN} characters, got {}",
            id.len()
        )));
    }
    if let Some(bad) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(AdminError::Invalid(format!(
            "{what} {id:?} contains {bad:?}; allowed are A-Z a-z 0-9 . _ -"
        )));
    }
    if id == "." || id == ".." {
        return Err(AdminError::Invalid(format!("{what} may not be {id:?}")));
    }
    Ok(())
}

impl SandboxSpec {
    /// Checks what the server can check without the daemon's state.
    pub fn validate(&self) -> Result<(), AdminError> {
        validate_id("sandbox id", &self.id)?;
        if self.cgroup.as_os_str().is_empty() {
            return Err(AdminError::Invalid("cgroup must not be empty".into()));
        }
        Ok(())
    }
}

impl SessionSpec {
    /// Checks what the server can check without the daemon's state.
    pub fn validate(&self) -> Result<(), AdminError> {
        validate_id("session id", &self.id)?;
        if self.cgroup.as_os_str().is_empty() {
            return Err(AdminError::Invalid("cgroup must not be empty".into()));
        }
        Ok(())
    }
}

/// What the daemon exposes to the admin server. Ids reaching these methods
/// have passed [`validate_id`]; everything else (cgroup existence, policy
/// names, duplicates) is the backend's to check.
/// Body of `POST /v1/sandboxes/{id}/overlay`: exactly one of `add_allow`
/// (an `allow_out` target as a policy writes it) and `remove` (an entry's
/// target as listed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverlayChange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_allow: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove: Option<String>,
    /// Who changes it, for the audit log; `admin-api` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

pub trait Backend: Send + Sync + 'static {
    fn status(&self) -> Status;
    fn list(&self) -> Vec<SandboxInfo>;
    /// The environment (name → placeholder) to give a sandbox, for the
    /// credentials its policy binds.
    fn env(&self, sandbox: &str) -> Result<std::collections::BTreeMap<String, String>, AdminError>;
    fn add_sandbox(
        &self,
        spec: SandboxSpec,
    ) -> impl Future<Output = Result<SandboxInfo, AdminError>> + Send;
    fn remove_sandbox(&self, id: &str) -> impl Future<Output = Result<(), AdminError>> + Send;
    fn add_session(
        &self,
        sandbox: &str,
        spec: SessionSpec,
    ) -> impl Future<Output = Result<SessionInfo, AdminError>> + Send;
    fn remove_session(
        &self,
        sandbox: &str,
        session: &str,
    ) -> impl Future<Output = Result<(), AdminError>> + Send;
    /// Requests parked for an approval, oldest first.
    fn approvals(&self) -> Vec<crate::approvals::ApprovalCard> {
        Vec::new()
    }
    /// Decides a parked request; returns its card.
    fn decide(
        &self,
        id: &str,
        spec: crate::approvals::DecisionSpec,
    ) -> Result<crate::approvals::ApprovalCard, AdminError> {
        let _ = spec;
        Err(AdminError::NotFound(format!("no parked request `{id}`")))
    }
    /// Every sandbox's overlay entries (`policy::overlay`).
    fn overlays(&self) -> std::collections::BTreeMap<String, Vec<crate::policy::overlay::Entry>> {
        std::collections::BTreeMap::new()
    }
    /// Adds an entry to a sandbox's overlay or removes one; its entries
    /// after the change.
    fn change_overlay(
        &self,
        sandbox: &str,
        change: OverlayChange,
    ) -> Result<Vec<crate::policy::overlay::Entry>, AdminError> {
        let _ = change;
        Err(AdminError::NotFound(format!("no sandbox `{sandbox}`")))
    }
    /// Published apps (the web-app ingress).
    fn apps(&self) -> Vec<crate::ingress::publish::AppInfo> {
        Vec::new()
    }
    fn publish(
        &self,
        req: crate::ingress::publish::PublishRequest,
    ) -> Result<crate::ingress::publish::AppInfo, AdminError> {
        let _ = req;
        Err(AdminError::NotFound("the ingress is off".into()))
    }
    fn unpublish(&self, name: &str) -> Result<(), AdminError> {
        Err(AdminError::NotFound(format!("no app `{name}`")))
    }
    fn set_scope(
        &self,
        name: &str,
        scope: crate::ingress::scope::Scope,
    ) -> Result<crate::ingress::publish::AppInfo, AdminError> {
        let _ = scope;
        Err(AdminError::NotFound(format!("no app `{name}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_id_table() {
        let long = "a".repeat(MAX_ID_LEN);
        let too_long = "a".repeat(MAX_ID_LEN + 1);
        let cases: &[(&str, bool)] = &[
            ("sb1", true),
            ("A-z_0.9", true),
            (&long, true),
            ("...", true),
            ("", false),
            (&too_long, false),
            (".", false),
            ("..", false),
            ("a/b", false),
            ("a b", false),
            ("a%2Fb", false),
            ("é", false),
            ("a\n", false),
        ];
        for (id, ok) in cases {
            assert_eq!(validate_id("id", id).is_ok(), *ok, "id {id:?}");
        }
    }

    #[test]
    fn error_status_and_kind() {
        let cases = [
            (AdminError::NotFound("x".into()), 404, "not_found"),
            (AdminError::Conflict("x".into()), 409, "conflict"),
            (AdminError::Invalid("x".into()), 400, "invalid"),
            (AdminError::Internal("x".into()), 500, "internal"),
        ];
        for (err, status, kind) in cases {
            assert_eq!(err.status_code(), status);
            assert_eq!(err.kind(), kind);
            assert_eq!(err.body().kind, kind);
        }
    }

    #[test]
    fn sandbox_spec_defaults_and_unknown_fields() {
        let spec: SandboxSpec =
            serde_json::from_str(r#"{"id":"a","cgroup":"/sluice/a"}"#).expect("minimal spec");
        assert_eq!(spec.netns, None);
        assert_eq!(spec.policy, None);
        let err = serde_json::from_str::<SandboxSpec>(r#"{"id":"a","cgroup":"/x","polcy":"p"}"#)
            .expect_err("unknown field");
        assert!(err.to_string().contains("polcy"), "{err}");
    }
}
