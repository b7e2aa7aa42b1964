//! The apps-and-approvals step of an intercepted request (DESIGN.md step 3,
//! right after the head stages, before the dry run and long before any
//! credential is injected): the catalogue decides `auto`, `ask` or `deny`;
//! `ask` parks the request on the approval desk until someone decides.
//! Every outcome is audited with who decided.

use hyper::{Response, StatusCode, body::Incoming, http::request::Parts};

use super::{Conn, Interceptor, respond};
use crate::{
    approvals::{ApprovalCard, Waited},
    audit::Event,
    policy::raw::Approval,
};

impl Interceptor {
    /// `None`: the request goes on. `Some`: Sluice's answer (403 naming
    /// the rule; 400 for a path with dot segments), the upstream untouched.
    pub(super) async fn approve(
        &self,
        conn: &Conn,
        parts: &Parts,
        body: &mut Incoming,
    ) -> Option<Response<respond::Body>> {
        let answer = self.decide_approval(conn, parts).await?;
        // Read what the client is still sending (a little, briefly) before
        // answering: an HTTP/2 stream reset mid-upload would hide the 403.
        respond::drain(body).await;
        Some(answer)
    }

    async fn decide_approval(&self, conn: &Conn, parts: &Parts) -> Option<Response<respond::Body>> {
        let approvals = &self.approvals;
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let decision = approvals.catalogue().decide(
            &conn.who.policy.apps,
            &conn.key.name,
            &parts.method,
            path,
        )?;
        let rule = match &decision.action {
            Some(action) => format!("{}:apps.{}.{action}", conn.who.policy.name, decision.app),
            None => format!("{}:apps.{}", conn.who.policy.name, decision.app),
        };
        // The audit log gets the path without its query, which may carry
        // what the content stages would have redacted.
        let detail = || format!("{} {}", parts.method, parts.uri.path());
        if let Some(refusal) = decision.refusal {
            // The sandbox's request is at fault, not the policy: 400.
            self.approval_event(conn, "deny", refusal.as_str(), &rule, None, detail());
            return Some(self.refuse_approval(
                StatusCode::BAD_REQUEST,
                refusal.as_str(),
                &rule,
                &decision.app,
                None,
            ));
        }
        match decision.mode {
            Approval::Auto => {
                let audit = &conn.who.policy.audit;
                if audit.enabled && audit.log_allowed {
                    self.approval_event(conn, "allow", "auto", &rule, None, detail());
                }
                None
            }
            Approval::Deny => {
                self.approval_event(conn, "deny", "app_action_denied", &rule, None, detail());
                Some(self.refuse_approval(
                    StatusCode::FORBIDDEN,
                    "app_action_denied",
                    &rule,
                    &decision.app,
                    decision.action.as_deref(),
                ))
            }
            Approval::Ask => {
                if let Some(standing) = approvals.standing(
                    &conn.who.sandbox,
                    conn.who.session.as_deref(),
                    &decision.app,
                    decision.action.as_deref(),
                    parts.method.as_str(),
                    path,
                ) {
                    self.approval_event(conn, "allow", standing.as_str(), &rule, None, detail());
                    return None;
                }
                let card = ApprovalCard {
                    id: String::new(),
                    sandbox: conn.who.sandbox.to_string(),
                    session: conn.who.session.as_deref().map(str::to_owned),
                    app: decision.app.clone(),
                    action: decision.action.clone(),
                    method: parts.method.to_string(),
                    host: conn.key.name.clone(),
                    path: path.to_owned(),
                    headers: parts
                        .headers
                        .keys()
                        .map(|n| n.as_str().to_owned())
                        .collect(),
                    parked_at_ms: 0,
                    expires_at_ms: 0,
                };
                let abandoned = Abandoned {
                    interceptor: self,
                    conn,
                    rule: &rule,
                    parked: std::sync::Mutex::new(None),
                };
                let (card, waited) = approvals
                    .park_with(card, |card| {
                        let detail = format!("{} {}; id {}", parts.method, path, card.id);
                        self.approval_event(
                            conn,
                            "park",
                            "approval_requested",
                            &rule,
                            None,
                            detail.clone(),
                        );
                        abandoned.arm(detail);
                    })
                    .await;
                abandoned.disarm();
                let id = format!("{} {}; id {}", parts.method, path, card.id);
                match waited {
                    Waited::Approved { verdict, by } => {
                        self.approval_event(conn, "allow", verdict.as_str(), &rule, Some(&by), id);
                        None
                    }
                    Waited::Rejected { by } => {
                        self.approval_event(
                            conn,
                            "deny",
                            "approval_rejected",
                            &rule,
                            Some(&by),
                            id,
                        );
                        Some(self.refuse_approval(
                            StatusCode::FORBIDDEN,
                            "approval_rejected",
                            &rule,
                            &decision.app,
                            decision.action.as_deref(),
                        ))
                    }
                    Waited::Expired => {
                        self.approval_event(
                            conn,
                            "deny",
                            "approval_expired",
                            &rule,
                            Some("expiry"),
                            id,
                        );
                        Some(self.refuse_approval(
                            StatusCode::FORBIDDEN,
                            "approval_expired",
                            &rule,
                            &decision.app,
                            decision.action.as_deref(),
                        ))
                    }
                    Waited::Withdrawn { by } => {
                        self.approval_event(
                            conn,
                            "deny",
                            "approval_withdrawn",
                            &rule,
                            Some(&by),
                            id,
                        );
                        Some(self.refuse_approval(
                            StatusCode::FORBIDDEN,
                            "approval_withdrawn",
                            &rule,
                            &decision.app,
                            decision.action.as_deref(),
                        ))
                    }
                    Waited::QueueFull => {
                        self.approval_event(
                            conn,
                            "deny",
                            "approval_queue_full",
                            &rule,
                            None,
                            detail(),
                        );
                        Some(self.refuse_approval(
                            StatusCode::FORBIDDEN,
                            "approval_queue_full",
                            &rule,
                            &decision.app,
                            decision.action.as_deref(),
                        ))
                    }
                }
            }
        }
    }

    fn refuse_approval(
        &self,
        status: StatusCode,
        reason: &'static str,
        rule: &str,
        app: &str,
        action: Option<&str>,
    ) -> Response<respond::Body> {
        self.count(status);
        let error = if status == StatusCode::BAD_REQUEST {
            "bad_request"
        } else {
            "forbidden"
        };
        respond::json(
            status,
            serde_json::json!({
                "error": error,
                "reason": reason,
                "rule": rule,
                "app": app,
                "action": action,
            }),
        )
    }

    fn approval_event(
        &self,
        conn: &Conn,
        verdict: &str,
        reason: &str,
        rule: &str,
        by: Option<&str>,
        detail: String,
    ) {
        self.audit.record(&Event {
            event: "approval",
            verdict,
            reason,
            rule: Some(rule),
            sandbox: Some(&conn.who.sandbox),
            session: conn.who.session.as_deref(),
            dst: Some(conn.key.addr.to_string()),
            host: Some(&conn.key.name),
            by,
            detail: Some(detail),
            ..Event::default()
        });
    }
}

/// Audits a parked request whose client went away before it was decided
/// (a reset stream, a closed connection): its future is dropped while it
/// waits, so the match that records every other outcome never runs.
struct Abandoned<'a> {
    interceptor: &'a Interceptor,
    conn: &'a Conn,
    rule: &'a str,
    /// The parked request's detail, from its parking to its outcome.
    parked: std::sync::Mutex<Option<String>>,
}

impl Abandoned<'_> {
    fn arm(&self, detail: String) {
        *self.parked.lock().unwrap_or_else(|e| e.into_inner()) = Some(detail);
    }

    fn disarm(&self) {
        self.parked.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        let parked = self.parked.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(detail) = parked.take() {
            self.interceptor.approval_event(
                self.conn,
                "deny",
                "client_gone",
                self.rule,
                None,
                detail,
            );
        }
    }
}
