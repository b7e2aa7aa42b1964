//! Apps and approvals (after the host pin, before the dry run and long
//! before any credential is injected): the catalogue decides `auto`, `ask`
//! or `deny` for the method and path; `ask` goes on under a standing
//! grant, else parks the request on the approval desk until someone
//! decides. Every outcome is audited with who decided; a refusal drains
//! what the client is still sending first.

use hyper::http::request::Parts;

use super::{Exchange, Outcome};
use crate::{
    approvals::{ApprovalCard, Waited},
    apps::Decision,
    audit::Event,
    intercept::{
        Conn, Interceptor,
        refusal::{AppDenial, Refusal},
        respond,
    },
    policy::raw::Approval,
};

/// The reasons this stage refuses with.
#[cfg(test)]
pub(super) const REASONS: &[&str] = &[
    "path_dot_segment",
    "tool_not_in_token",
    "app_action_denied",
    "approval_rejected",
    "approval_expired",
    "approval_withdrawn",
    "approval_queue_full",
];

pub(super) async fn run(
    interceptor: &Interceptor,
    conn: &Conn,
    exchange: &mut Exchange,
) -> Outcome {
    let outcome = decide(interceptor, conn, &exchange.parts).await;
    if let Outcome::Refuse(_) = outcome {
        // Read what the client is still sending (a little, briefly) before
        // answering: an HTTP/2 stream reset mid-upload would hide the 403.
        respond::drain(&mut exchange.body).await;
    }
    outcome
}

/// What the catalogue's decision means for the request, before any grant
/// or person is asked.
#[derive(Debug, PartialEq)]
enum Judged {
    /// `auto`: goes on (audited as an allow where the policy logs those).
    Auto,
    Refuse(Refusal),
    /// `ask`: a standing grant or a person decides.
    Ask,
}

/// The catalogue's decision as the stage acts on it; `rule` names the app
/// (and action) in the policy, `detail` is the method and the path
/// without its query, which may carry what the content stages would
/// have redacted.
fn judge(decision: &Decision, rule: &str, detail: String) -> Judged {
    if let Some(refusal) = decision.refusal {
        // The sandbox's request is at fault, not the policy: 400.
        return Judged::Refuse(Refusal::AppPath {
            reason: refusal.as_str(),
            rule: rule.to_owned(),
            app: decision.app.clone(),
            detail,
        });
    }
    match decision.mode {
        Approval::Auto => Judged::Auto,
        Approval::Deny => Judged::Refuse(app_refusal(
            decision,
            rule,
            "app_action_denied",
            None,
            detail,
        )),
        Approval::Ask => Judged::Ask,
    }
}

/// A catalogued request its capability token's `tools` do not name
/// (neither the app nor `app.action`): refused before any grant or person
/// is asked, whatever the policy's mode.
fn beyond_tools(tools: Option<&[String]>, decision: &Decision, detail: String) -> Option<Refusal> {
    let tools = tools?;
    let action = decision
        .action
        .as_ref()
        .map(|a| format!("{}.{a}", decision.app));
    let named = |tool: &String| *tool == decision.app || Some(tool) == action.as_ref();
    if tools.iter().any(named) {
        return None;
    }
    Some(app_refusal(
        decision,
        "token:tools",
        "tool_not_in_token",
        None,
        detail,
    ))
}

/// How a parked request's wait ended, for the stage: `Err` refuses it.
fn waited(
    decision: &Decision,
    rule: &str,
    waited: Waited,
    detail: String,
) -> Result<(&'static str, String), Refusal> {
    waited
        .outcome()
        .map_err(|(reason, by)| app_refusal(decision, rule, reason, by, detail))
}

fn app_refusal(
    decision: &Decision,
    rule: &str,
    reason: &'static str,
    by: Option<String>,
    detail: String,
) -> Refusal {
    Refusal::App(Box::new(AppDenial {
        reason,
        rule: rule.to_owned(),
        app: decision.app.clone(),
        action: decision.action.clone(),
        by,
        detail,
    }))
}

async fn decide(interceptor: &Interceptor, conn: &Conn, parts: &Parts) -> Outcome {
    let approvals = &interceptor.approvals;
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let lookup = &conn.who.policy.app_lookup;
    let Some(decision) = lookup.decide(&conn.key.name, &parts.method, path) else {
        return Outcome::Continue;
    };
    let rule = decision.rule(&conn.who.policy.name);
    let detail = || format!("{} {}", parts.method, parts.uri.path());
    if let Some(refusal) = beyond_tools(conn.who.tools.as_deref(), &decision, detail()) {
        return Outcome::Refuse(refusal);
    }
    match judge(&decision, &rule, detail()) {
        Judged::Refuse(refusal) => return Outcome::Refuse(refusal),
        Judged::Auto => {
            let audit = &conn.who.policy.audit;
            if audit.enabled && audit.log_allowed {
                approval_event(interceptor, conn, "allow", "auto", &rule, None, detail());
            }
            return Outcome::Continue;
        }
        Judged::Ask => {}
    }
    if let Some(standing) = approvals.standing(
        &conn.who.sandbox,
        conn.who.session.as_deref(),
        &decision.app,
        decision.action.as_deref(),
        parts.method.as_str(),
        path,
    ) {
        approval_event(
            interceptor,
            conn,
            "allow",
            standing.as_str(),
            &rule,
            None,
            detail(),
        );
        return Outcome::Continue;
    }
    let card = card(conn, parts, &decision, path);
    let abandoned = Abandoned {
        interceptor,
        conn,
        rule: &rule,
        parked: std::sync::Mutex::new(None),
    };
    let (card, ended) = approvals
        .park_with(card, |card| {
            let detail = format!("{} {}; id {}", parts.method, path, card.id);
            approval_event(
                interceptor,
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
    // A request never parked (the queue was full) has no id to name.
    let detail = match ended {
        Waited::QueueFull => detail(),
        _ => format!("{} {}; id {}", parts.method, path, card.id),
    };
    match waited(&decision, &rule, ended, detail.clone()) {
        Ok((verdict, by)) => {
            approval_event(
                interceptor,
                conn,
                "allow",
                verdict,
                &rule,
                Some(&by),
                detail,
            );
            Outcome::Continue
        }
        Err(refusal) => Outcome::Refuse(refusal),
    }
}

/// The card a person sees: where, what, and the header names (never
/// their values).
fn card(conn: &Conn, parts: &Parts, decision: &Decision, path: &str) -> ApprovalCard {
    ApprovalCard {
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
        process: conn.who.process.as_deref().cloned(),
        ..ApprovalCard::default()
    }
}

/// An approval event that is not a refusal (refusals are audited with
/// their answer): an allow, and who allowed it, or a parking.
fn approval_event(
    interceptor: &Interceptor,
    conn: &Conn,
    verdict: &str,
    reason: &str,
    rule: &str,
    by: Option<&str>,
    detail: String,
) {
    interceptor.audit.record(&Event {
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
        process: conn.who.process.as_deref(),
        ..Event::default()
    });
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
            approval_event(
                self.interceptor,
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

#[cfg(test)]
mod tests {
    use crate::approvals::Verdict;
    use crate::apps::PathRefusal;

    use super::*;

    fn decision(mode: Approval, action: Option<&str>, refusal: Option<PathRefusal>) -> Decision {
        Decision {
            mode,
            app: "github".into(),
            action: action.map(str::to_owned),
            refusal,
            by_default: false,
        }
    }

    #[test]
    fn the_catalogue_decision_as_the_stage_acts_on_it() {
        let auto = decision(Approval::Auto, Some("read"), None);
        assert_eq!(auto.rule("p"), "p:apps.github.read");
        assert_eq!(judge(&auto, "r", "GET /".into()), Judged::Auto);
        let ask = decision(Approval::Ask, None, None);
        assert_eq!(ask.rule("p"), "p:apps.github");
        let unlisted = Decision {
            by_default: true,
            ..ask.clone()
        };
        assert_eq!(unlisted.rule("p"), "p:apps.default");
        assert_eq!(judge(&ask, "r", "POST /".into()), Judged::Ask);
        let Judged::Refuse(denied) = judge(
            &decision(Approval::Deny, Some("admin"), None),
            "r",
            "DELETE /".into(),
        ) else {
            panic!("deny must refuse");
        };
        assert_eq!(
            (denied.status().as_u16(), denied.reason()),
            (403, "app_action_denied")
        );
        assert_eq!(denied.body()["action"], "admin");
        // A path refused for its form is the request's fault: 400.
        let dots = decision(Approval::Deny, None, Some(PathRefusal::DotSegment));
        let Judged::Refuse(dots) = judge(&dots, "r", "GET /a/../b".into()) else {
            panic!("dot segments must refuse");
        };
        assert_eq!(
            (dots.status().as_u16(), dots.reason()),
            (400, "path_dot_segment")
        );
    }

    #[test]
    fn each_end_of_a_wait_and_who_decided() {
        let ask = decision(Approval::Ask, Some("write"), None);
        let approved = Waited::Approved {
            verdict: Verdict::ApproveOnce,
            by: "alice".into(),
        };
        assert_eq!(
            waited(&ask, "r", approved, String::new()),
            Ok(("approve_once", "alice".to_owned()))
        );
        #[rustfmt::skip]
        let refused = [
            (Waited::Rejected { by: "bob".into() }, "approval_rejected", Some("bob")),
            (Waited::Expired, "approval_expired", Some("expiry")),
            (Waited::Withdrawn { by: "session_removed".into() }, "approval_withdrawn", Some("session_removed")),
            (Waited::QueueFull, "approval_queue_full", None),
        ];
        for (ended, reason, by) in refused {
            let refusal = waited(&ask, "r", ended, String::new()).expect_err(reason);
            assert!(REASONS.contains(&reason), "{reason} is not in REASONS");
            assert_eq!(
                (refusal.reason(), refusal.by(), refusal.status().as_u16()),
                (reason, by, 403)
            );
        }
    }

    /// A token's `tools` narrow the catalogued actions its requests use:
    /// the app, or the one action, must be named.
    #[test]
    fn a_tokens_tools_narrow_the_catalogued_actions() {
        let read = decision(Approval::Auto, Some("issues.read"), None);
        let uncatalogued = decision(Approval::Ask, None, None);
        let tools = |t: &[&str]| t.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
        #[rustfmt::skip]
        let cases = [
            (None, &read, false),
            (Some(tools(&["github"])), &read, false),
            (Some(tools(&["github.issues.read"])), &read, false),
            (Some(tools(&["github.repo.delete"])), &read, true),
            (Some(tools(&[])), &read, true),
            (Some(tools(&["github"])), &uncatalogued, false),
            (Some(tools(&["github.issues.read"])), &uncatalogued, true),
        ];
        for (tools, decision, refused) in cases {
            let got = beyond_tools(tools.as_deref(), decision, "GET /".into());
            assert_eq!(got.is_some(), refused, "{tools:?} {decision:?}");
            if let Some(refusal) = got {
                assert_eq!(
                    (refusal.status().as_u16(), refusal.reason()),
                    (403, "tool_not_in_token")
                );
                assert_eq!(refusal.rule(), Some("token:tools"));
            }
        }
    }
}
