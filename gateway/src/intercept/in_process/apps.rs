//! The app/approval stage's outcomes: auto forwards, deny refuses with
//! the rule, ask parks until a decision (approved, rejected or expired),
//! and a dot segment on an app's host is refused before any mode applies.

use std::time::Duration;

use super::*;
use crate::approvals::{DecisionSpec, Verdict};

const APPS: &str = r#"apps:
  - app: tracker
    actions:
      issues.read: auto
      issues.create: ask
      repo.delete: deny
      "*": auto
"#;

/// One row: a request to the app's host, and the stage's answer.
struct Row {
    method: &'static str,
    target: &'static str,
    status: StatusCode,
    /// The audit event's verdict and reason, and the rule it names.
    audit: (&'static str, &'static str, &'static str),
    forwarded: bool,
}

const TABLE: &[Row] = &[
    Row {
        method: "GET",
        target: "/issues/7",
        status: StatusCode::OK,
        audit: ("allow", "auto", "p:apps.tracker.issues.read"),
        forwarded: true,
    },
    Row {
        method: "DELETE",
        target: "/repo/main",
        status: StatusCode::FORBIDDEN,
        audit: ("deny", "app_action_denied", "p:apps.tracker.repo.delete"),
        forwarded: false,
    },
    Row {
        method: "GET",
        target: "/issues/../repo/main",
        status: StatusCode::BAD_REQUEST,
        audit: ("deny", "path_dot_segment", "p:apps.tracker"),
        forwarded: false,
    },
    // Nobody decides: the parked request fails closed at the timeout.
    Row {
        method: "POST",
        target: "/issues",
        status: StatusCode::FORBIDDEN,
        audit: ("deny", "approval_expired", "p:apps.tracker.issues.create"),
        forwarded: false,
    },
];

#[tokio::test]
async fn app_modes() {
    for row in TABLE {
        let h = Harness::start(APPS, echo()).await;
        let answer = h.send_app(request(row.method, row.target, &[], "")).await;
        let name = format!("{} {}", row.method, row.target);
        assert_eq!(answer.status, row.status, "{name}: {}", answer.body);
        assert_eq!(h.seen().len(), usize::from(row.forwarded), "{name}");
        let (verdict, reason, rule) = row.audit;
        let events = h.audited(reason);
        assert_eq!(events.len(), 1, "{name}: {:?}", h.audit());
        assert_eq!(events[0]["event"], "approval", "{name}");
        assert_eq!(events[0]["verdict"], verdict, "{name}");
        assert_eq!(events[0]["rule"], rule, "{name}");
        if !row.forwarded {
            assert_eq!(answer.json()["reason"], reason, "{name}");
        }
    }
}

/// An ask parks the request until someone decides: approved, it goes on;
/// rejected, 403 and the upstream never sees it.
#[tokio::test]
async fn ask_parks_until_decided() {
    for (verdict, status, forwarded) in [
        (Verdict::ApproveOnce, StatusCode::OK, 1),
        (Verdict::Reject, StatusCode::FORBIDDEN, 0),
    ] {
        let h = Harness::start(APPS, echo()).await;
        let sent = {
            let h = &h;
            async move { h.send_app(request("POST", "/issues", &[], "{}")).await }
        };
        let decide = async {
            let approvals = &h.interceptor.approvals;
            let card = loop {
                if let Some(card) = approvals.list().into_iter().next() {
                    break card;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            };
            assert_eq!(card.method, "POST");
            assert_eq!(card.path, "/issues");
            assert!(h.seen().is_empty(), "forwarded while parked");
            let spec = DecisionSpec {
                verdict,
                by: Some("tester".to_owned()),
            };
            approvals.decide(&card.id, &spec).expect("decided");
        };
        let (answer, ()) = tokio::join!(sent, decide);
        assert_eq!(answer.status, status, "{verdict:?}: {}", answer.body);
        assert_eq!(h.seen().len(), forwarded, "{verdict:?}");
        assert_eq!(h.audited("approval_requested").len(), 1, "{verdict:?}");
    }
}

/// A policy that does not list the app decides its requests by
/// `apps.default` (`ask` when unset), whatever the action: the request is
/// never waved through because the policy forgot the app.
#[tokio::test]
async fn an_app_the_policy_does_not_list_takes_its_default() {
    // (policy, status, audit reason)
    let cases = [
        // Nobody decides: the parked request fails closed at the timeout.
        ("", StatusCode::FORBIDDEN, "approval_expired"),
        (
            "apps: {default: ask}\n",
            StatusCode::FORBIDDEN,
            "approval_expired",
        ),
        (
            "apps: {default: deny}\n",
            StatusCode::FORBIDDEN,
            "app_action_denied",
        ),
        ("apps: {default: auto}\n", StatusCode::OK, "auto"),
    ];
    for (policy, status, reason) in cases {
        let h = Harness::start(policy, echo()).await;
        // An action the catalogue names `auto` nowhere: `issues.read`.
        let answer = h.send_app(request("GET", "/issues/7", &[], "")).await;
        assert_eq!(answer.status, status, "{policy:?}: {}", answer.body);
        assert_eq!(
            h.seen().len(),
            usize::from(status.is_success()),
            "{policy:?}"
        );
        let events = h.audited(reason);
        assert_eq!(events.len(), 1, "{policy:?}: {:?}", h.audit());
        assert_eq!(events[0]["rule"], "p:apps.default", "{policy:?}");
    }
}
