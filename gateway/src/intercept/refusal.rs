//! Why Sluice answered an intercepted request itself: one enum for every
//! stage's refusal. Each refusal's status code, wire reason (the same
//! string labels the metrics and the audit event), JSON body and audit
//! event come from here, so a stage only says which refusal it made and
//! [`Interceptor::refuse`](super::Interceptor::refuse) counts, audits and
//! answers it.

use hyper::StatusCode;
use serde_json::{Value, json};

use super::hygiene::Violation;
use crate::policy::network::RequestRefusal;

/// One refusal, with what the sandbox is told and the audit log keeps.
#[must_use]
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// 400 (421 for a Host other than the SNI, which tells clients to open
    /// a new connection): a request no stage may read as it stands.
    Hygiene(Violation),
    /// 421: a plain-HTTP connection was decided on its first request's
    /// Host; a later one names another (`named`).
    HostChanged { named: String },
    /// 403 (400 for a dot segment): a method or path the `allow_out` rule
    /// that allowed the connection does not let through.
    NetworkRule {
        why: RequestRefusal,
        rule: String,
        detail: String,
    },
    /// 400: a path the app catalogue will not judge (dot segments).
    AppPath {
        reason: &'static str,
        rule: String,
        app: String,
        detail: String,
    },
    /// 403: the app catalogue or a person said no.
    App(Box<AppDenial>),
    /// 400: the request body broke off while a stage read it.
    BodyUnreadable { why: String },
    /// 403, 413 or 415: a body the content stages must read and cannot
    /// (an upgrade, too large, undecodable, a charset no detector reads).
    Content {
        status: StatusCode,
        reason: &'static str,
        rule: String,
        detail: String,
    },
    /// 403: PII of these kinds under `block`.
    Pii { kinds: Vec<String>, rule: String },
    /// 403: the body scored as a prompt injection at the policy's threshold.
    Injection {
        score: f64,
        signals: Vec<String>,
        rule: String,
    },
    /// 403: a placeholder where the policy does not let it go (another
    /// host, plain HTTP, a body, an upgrade its answer could echo unread).
    Credential {
        reason: &'static str,
        credential: String,
        rule: String,
    },
    /// 413 or 502: a credential that could not be applied (a body too
    /// large to check, its token endpoint failed). `detail` is for the
    /// sandbox, `log` for the audit event; neither holds a secret.
    CredentialFailed {
        status: StatusCode,
        reason: &'static str,
        credential: String,
        detail: String,
        log: String,
    },
    /// 502: the upstream could not be reached safely, or answered what no
    /// stage can read where one must (a 206 to a request carrying a
    /// credential, an encoding Sluice cannot undo).
    Upstream {
        reason: &'static str,
        upstream: String,
        detail: String,
    },
}

/// An app's refusal: boxed in [`Refusal`], which is mostly moved and
/// rarely made.
#[derive(Debug, Clone, PartialEq)]
pub struct AppDenial {
    pub reason: &'static str,
    pub rule: String,
    pub app: String,
    pub action: Option<String>,
    /// Who decided, where a person (or expiry) did.
    pub by: Option<String>,
    pub detail: String,
}

/// Which counter besides the requests by status class a refusal bumps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    None,
    /// `sluice_credential_refusals_total{reason}`.
    CredentialRefusals,
    /// `sluice_upstream_errors_total{reason}`.
    UpstreamErrors,
    /// `sluice_injection_detections_total{sandbox, action="block"}`.
    InjectionBlocked,
}

impl Refusal {
    pub fn status(&self) -> StatusCode {
        match self {
            Refusal::Hygiene(Violation::HostNotSni) | Refusal::HostChanged { .. } => {
                StatusCode::MISDIRECTED_REQUEST
            }
            Refusal::NetworkRule {
                why: RequestRefusal::PathDotSegment,
                ..
            } => StatusCode::BAD_REQUEST,
            Refusal::Hygiene(_) | Refusal::AppPath { .. } | Refusal::BodyUnreadable { .. } => {
                StatusCode::BAD_REQUEST
            }
            Refusal::App(_)
            | Refusal::NetworkRule { .. }
            | Refusal::Pii { .. }
            | Refusal::Injection { .. }
            | Refusal::Credential { .. } => StatusCode::FORBIDDEN,
            Refusal::Content { status, .. } | Refusal::CredentialFailed { status, .. } => *status,
            Refusal::Upstream { .. } => StatusCode::BAD_GATEWAY,
        }
    }

    /// The reason in the answer, the audit event and the metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::Hygiene(violation) => violation.as_str(),
            Refusal::HostChanged { .. } => "host_changed",
            Refusal::NetworkRule { why, .. } => why.as_str(),
            Refusal::BodyUnreadable { .. } => "body_unreadable",
            Refusal::Pii { .. } => "pii_blocked",
            Refusal::Injection { .. } => "prompt_injection",
            Refusal::App(denial) => denial.reason,
            Refusal::AppPath { reason, .. }
            | Refusal::Content { reason, .. }
            | Refusal::Credential { reason, .. }
            | Refusal::CredentialFailed { reason, .. }
            | Refusal::Upstream { reason, .. } => reason,
        }
    }

    /// The policy rule that refused, as `<policy>:<key>`; `None` where
    /// the request or the upstream is at fault, not a rule.
    pub fn rule(&self) -> Option<&str> {
        match self {
            Refusal::App(denial) => Some(&denial.rule),
            Refusal::AppPath { rule, .. }
            | Refusal::NetworkRule { rule, .. }
            | Refusal::Content { rule, .. }
            | Refusal::Pii { rule, .. }
            | Refusal::Injection { rule, .. }
            | Refusal::Credential { rule, .. } => Some(rule),
            Refusal::Hygiene(_)
            | Refusal::HostChanged { .. }
            | Refusal::BodyUnreadable { .. }
            | Refusal::CredentialFailed { .. }
            | Refusal::Upstream { .. } => None,
        }
    }

    /// The audit event's name: what part of the path refused.
    pub fn event(&self) -> &'static str {
        match self {
            Refusal::Hygiene(_) | Refusal::HostChanged { .. } | Refusal::NetworkRule { .. } => {
                "request"
            }
            Refusal::App(_) | Refusal::AppPath { .. } => "approval",
            Refusal::BodyUnreadable { .. }
            | Refusal::Content { .. }
            | Refusal::Pii { .. }
            | Refusal::Injection { .. } => "content",
            Refusal::Credential { .. } | Refusal::CredentialFailed { .. } => "credential",
            Refusal::Upstream { .. } => "upstream_error",
        }
    }

    /// `deny` when a rule or the request is refused, `error` when
    /// something failed that should have worked.
    pub fn verdict(&self) -> &'static str {
        match self {
            Refusal::CredentialFailed { .. } | Refusal::Upstream { .. } => "error",
            _ => "deny",
        }
    }

    /// Who decided, where a person (or expiry) did.
    pub fn by(&self) -> Option<&str> {
        match self {
            Refusal::App(denial) => denial.by.as_deref(),
            _ => None,
        }
    }

    pub fn counter(&self) -> Counter {
        match self {
            Refusal::Credential { .. } => Counter::CredentialRefusals,
            Refusal::CredentialFailed { status, .. } if *status != StatusCode::BAD_GATEWAY => {
                Counter::CredentialRefusals
            }
            Refusal::CredentialFailed { .. } | Refusal::Upstream { .. } => Counter::UpstreamErrors,
            Refusal::Injection { .. } => Counter::InjectionBlocked,
            _ => Counter::None,
        }
    }

    /// The audit event's detail: never a value the stages protect.
    pub fn audit_detail(&self) -> Option<String> {
        Some(match self {
            Refusal::Hygiene(violation) => violation.message().to_owned(),
            Refusal::HostChanged { named } => format!("Host {named}"),
            Refusal::App(denial) => denial.detail.clone(),
            Refusal::AppPath { detail, .. }
            | Refusal::NetworkRule { detail, .. }
            | Refusal::Content { detail, .. } => detail.clone(),
            Refusal::BodyUnreadable { why } => why.clone(),
            Refusal::Pii { kinds, .. } => format!("types {}", kinds.join(",")),
            Refusal::Injection { score, signals, .. } => {
                format!("score {score:.2}; signals {}", signals.join(","))
            }
            Refusal::Credential { credential, .. } if credential.is_empty() => return None,
            Refusal::Credential { credential, .. } => format!("credential {credential}"),
            Refusal::CredentialFailed { log, .. } => log.clone(),
            Refusal::Upstream { detail, .. } => detail.clone(),
        })
    }

    /// The JSON body the sandbox gets.
    pub fn body(&self) -> Value {
        let reason = self.reason();
        match self {
            Refusal::Hygiene(Violation::HostNotSni) => json!({
                "error": "misdirected_request",
                "reason": reason,
                "detail": Violation::HostNotSni.message(),
            }),
            Refusal::Hygiene(violation) => {
                json!({ "error": "bad_request", "reason": reason, "detail": violation.message() })
            }
            Refusal::HostChanged { .. } => json!({
                "error": "misdirected_request",
                "reason": reason,
                "detail": "this connection was allowed for another host; open a new connection",
            }),
            Refusal::NetworkRule { why, rule, detail } => json!({
                "error": match why {
                    RequestRefusal::PathDotSegment => "bad_request",
                    _ => "forbidden",
                },
                "reason": reason,
                "rule": rule,
                "detail": detail,
            }),
            Refusal::AppPath { rule, app, .. } => json!({
                "error": "bad_request",
                "reason": reason,
                "rule": rule,
                "app": app,
                "action": null,
            }),
            Refusal::App(denial) => json!({
                "error": "forbidden",
                "reason": reason,
                "rule": denial.rule,
                "app": denial.app,
                "action": denial.action,
            }),
            Refusal::BodyUnreadable { why } => {
                json!({ "error": "bad_request", "reason": reason, "detail": why })
            }
            Refusal::Content { rule, detail, .. } => {
                json!({ "error": "refused", "reason": reason, "rule": rule, "detail": detail })
            }
            Refusal::Pii { kinds, rule } => {
                json!({ "error": "forbidden", "reason": reason, "rule": rule, "types": kinds })
            }
            Refusal::Injection {
                score,
                signals,
                rule,
            } => json!({
                "error": "forbidden",
                "reason": reason,
                "rule": rule,
                "score": score,
                "signals": signals,
            }),
            Refusal::Credential {
                credential, rule, ..
            } => json!({
                "error": "forbidden",
                "reason": reason,
                "rule": rule,
                "credential": credential,
            }),
            Refusal::CredentialFailed {
                status,
                credential,
                detail,
                ..
            } => json!({
                "error": if *status == StatusCode::BAD_GATEWAY { "bad_gateway" } else { "payload_too_large" },
                "reason": reason,
                "credential": credential,
                "detail": detail,
            }),
            Refusal::Upstream {
                upstream, detail, ..
            } => json!({
                "error": "bad_gateway",
                "reason": reason,
                "upstream": upstream,
                "detail": detail,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(reason: &'static str) -> Refusal {
        Refusal::App(Box::new(AppDenial {
            reason,
            rule: "p:apps.github".into(),
            app: "github".into(),
            action: None,
            by: Some("alice".into()),
            detail: "POST /x".into(),
        }))
    }

    fn content(status: StatusCode, reason: &'static str) -> Refusal {
        Refusal::Content {
            status,
            reason,
            rule: "p:pii".into(),
            detail: "why".into(),
        }
    }

    fn failed(status: StatusCode) -> Refusal {
        Refusal::CredentialFailed {
            status,
            reason: "token_endpoint_failed",
            credential: "api".into(),
            detail: "d".into(),
            log: "l".into(),
        }
    }

    /// Each refusal's status, body `error`, audit event and verdict, and
    /// counter: what a client, a dashboard and an auditor see of it.
    #[test]
    fn every_refusal_answers_counts_and_audits_from_one_place() {
        use Counter as C;
        let (fb, gone) = (StatusCode::FORBIDDEN, StatusCode::BAD_GATEWAY);
        #[rustfmt::skip]
        let cases: Vec<(Refusal, u16, &str, &str, &str, C)> = vec![
            (Refusal::Hygiene(Violation::MissingHost), 400, "bad_request", "request", "deny", C::None),
            (Refusal::Hygiene(Violation::HostNotSni), 421, "misdirected_request", "request", "deny", C::None),
            (Refusal::HostChanged { named: "b.test".into() }, 421, "misdirected_request", "request", "deny", C::None),
            (app("app_action_denied"), 403, "forbidden", "approval", "deny", C::None),
            (Refusal::AppPath { reason: "path_dot_segment", rule: "p:apps.github".into(), app: "github".into(), detail: "GET /a/../b".into() }, 400, "bad_request", "approval", "deny", C::None),
            (Refusal::NetworkRule { why: RequestRefusal::MethodNotAllowed, rule: "p:network.allow_out[0]".into(), detail: "POST /x".into() }, 403, "forbidden", "request", "deny", C::None),
            (Refusal::NetworkRule { why: RequestRefusal::PathNotAllowed, rule: "p:network.allow_out[0]".into(), detail: "GET /y".into() }, 403, "forbidden", "request", "deny", C::None),
            (Refusal::NetworkRule { why: RequestRefusal::PathDotSegment, rule: "p:network.allow_out[0]".into(), detail: "GET /a/../b".into() }, 400, "bad_request", "request", "deny", C::None),
            (Refusal::BodyUnreadable { why: "cut".into() }, 400, "bad_request", "content", "deny", C::None),
            (content(StatusCode::PAYLOAD_TOO_LARGE, "body_too_large_to_inspect"), 413, "refused", "content", "deny", C::None),
            (content(StatusCode::UNSUPPORTED_MEDIA_TYPE, "body_not_decodable"), 415, "refused", "content", "deny", C::None),
            (content(fb, "upgrade_not_inspectable"), 403, "refused", "content", "deny", C::None),
            (Refusal::Pii { kinds: vec!["email".into()], rule: "p:pii".into() }, 403, "forbidden", "content", "deny", C::None),
            (Refusal::Injection { score: 0.9, signals: vec![], rule: "p:injection_defense".into() }, 403, "forbidden", "content", "deny", C::InjectionBlocked),
            (Refusal::Credential { reason: "credential_wrong_host", credential: "api".into(), rule: "p:credentials".into() }, 403, "forbidden", "credential", "deny", C::CredentialRefusals),
            (failed(StatusCode::PAYLOAD_TOO_LARGE), 413, "payload_too_large", "credential", "error", C::CredentialRefusals),
            (failed(gone), 502, "bad_gateway", "credential", "error", C::UpstreamErrors),
            (Refusal::Upstream { reason: "upstream_error", upstream: "a.test:443".into(), detail: "d".into() }, 502, "bad_gateway", "upstream_error", "error", C::UpstreamErrors),
        ];
        for (refusal, status, error, event, verdict, counter) in cases {
            let body = refusal.body();
            assert_eq!(refusal.status().as_u16(), status, "{refusal:?}");
            assert_eq!(body["error"], error, "{refusal:?}");
            assert_eq!(body["reason"], refusal.reason(), "{refusal:?}");
            assert_eq!(body.get("rule").and_then(Value::as_str), refusal.rule());
            assert_eq!(
                (refusal.event(), refusal.verdict(), refusal.counter()),
                (event, verdict, counter),
                "{refusal:?}"
            );
        }
        assert_eq!(app("x").by(), Some("alice"));
    }

    /// What the sandbox and the audit log are told never carries what a
    /// stage protects: PII and injection refusals name kinds and signals.
    #[test]
    fn refusals_name_kinds_never_values() {
        let pii = Refusal::Pii {
            kinds: vec!["email".into(), "phone".into()],
            rule: "p:pii".into(),
        };
        assert_eq!(pii.audit_detail().as_deref(), Some("types email,phone"));
        assert_eq!(pii.body()["types"], json!(["email", "phone"]));
        let unnamed = Refusal::Credential {
            reason: "placeholder_unknown",
            credential: String::new(),
            rule: "p:credentials".into(),
        };
        assert_eq!(unnamed.audit_detail(), None);
    }
}
