use std::{sync::Arc, time::Duration};

use super::*;

fn desk(timeout_ms: u64, max_parked: usize) -> (Arc<Approvals>, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::new());
    let config = ApprovalsConfig {
        timeout_ms,
        max_parked,
        webhook: None,
    };
    let approvals = Approvals::new(Arc::default(), &config, None, metrics.clone());
    (Arc::new(approvals), metrics)
}

fn card(session: Option<&str>, action: Option<&str>, path: &str) -> ApprovalCard {
    ApprovalCard {
        id: String::new(),
        sandbox: "sb1".to_owned(),
        session: session.map(str::to_owned),
        app: "tracker".to_owned(),
        action: action.map(str::to_owned),
        method: "POST".to_owned(),
        host: "api.tracker.test".to_owned(),
        path: path.to_owned(),
        headers: vec!["content-type".to_owned()],
        parked_at_ms: 0,
        expires_at_ms: 0,
        process: None,
        ..ApprovalCard::default()
    }
}

fn spec(verdict: Verdict, by: Option<&str>) -> DecisionSpec {
    DecisionSpec {
        verdict,
        by: by.map(str::to_owned),
    }
}

/// Waits until `n` requests are parked (the parking task runs concurrently).
async fn parked(approvals: &Approvals, n: usize) -> Vec<ApprovalCard> {
    for _ in 0..1000 {
        let list = approvals.list();
        if list.len() == n {
            return list;
        }
        tokio::task::yield_now().await;
    }
    panic!("never saw {n} parked requests");
}

#[tokio::test(start_paused = true)]
async fn decisions_resume_the_parked_request_and_keep_the_gauge_exact() {
    let (approvals, metrics) = desk(60_000, 100);
    // (verdict, what the parked request sees)
    let cases = [
        (Verdict::ApproveOnce, Some("alice")),
        (Verdict::ApproveSession, None),
        (Verdict::Reject, Some("bob")),
    ];
    for (verdict, by) in cases {
        let desk = approvals.clone();
        let waiting =
            tokio::spawn(async move { desk.park(card(Some("s1"), Some("a"), "/x")).await });
        let list = parked(&approvals, 1).await;
        assert_eq!(metrics.approvals_parked.get(), 1);
        assert!(list[0].expires_at_ms > list[0].parked_at_ms);
        approvals
            .decide(&list[0].id, &spec(verdict, by))
            .expect("decided");
        let (_, waited) = waiting.await.expect("task");
        let by = by.unwrap_or("admin-api").to_owned();
        let want = match verdict {
            Verdict::Reject => Waited::Rejected { by },
            verdict => Waited::Approved { verdict, by },
        };
        assert_eq!(waited, want);
        assert_eq!(metrics.approvals_parked.get(), 0);
        assert_eq!(
            approvals.decide(&list[0].id, &spec(Verdict::Reject, None)),
            Err(DecideError::NotFound(list[0].id.clone())),
            "a request is decided once"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn undecided_requests_expire_and_a_full_desk_refuses() {
    let (approvals, metrics) = desk(1_000, 2);
    let a = tokio::spawn({
        let desk = approvals.clone();
        async move { desk.park(card(None, None, "/a")).await.1 }
    });
    // Two sandboxes: one alone may hold only half the desk.
    let b = tokio::spawn({
        let desk = approvals.clone();
        let mut card = card(None, None, "/b");
        card.sandbox = "sb2".to_owned();
        async move { desk.park(card).await.1 }
    });
    parked(&approvals, 2).await;
    let mut third = card(None, None, "/c");
    third.sandbox = "sb3".to_owned();
    let (_, third) = approvals.park(third).await;
    assert_eq!(third, Waited::QueueFull);
    tokio::time::advance(Duration::from_millis(1_001)).await;
    assert_eq!(a.await.expect("a"), Waited::Expired);
    assert_eq!(b.await.expect("b"), Waited::Expired);
    assert_eq!(metrics.approvals_parked.get(), 0);
    assert!(approvals.list().is_empty());

    // A client that leaves unparks its request.
    let gone = tokio::spawn({
        let desk = approvals.clone();
        async move { desk.park(card(None, None, "/d")).await }
    });
    parked(&approvals, 1).await;
    gone.abort();
    let _ = gone.await;
    assert_eq!(metrics.approvals_parked.get(), 0);
    assert!(approvals.list().is_empty());
}

#[tokio::test(start_paused = true)]
async fn session_grants_and_task_pre_approvals() {
    let (approvals, _) = desk(60_000, 10);
    let standing = |session: Option<&str>, action: Option<&str>, path: &str| {
        approvals.standing("sb1", session, "tracker", action, "POST", path)
    };
    assert_eq!(standing(Some("s1"), Some("create"), "/x"), None);

    // Approve for the session: the same action passes in that session only.
    for (session, action, path) in [
        (Some("s1"), Some("create"), "/x"),
        (Some("s1"), None, "/exact"),
    ] {
        let desk = approvals.clone();
        let waiting = tokio::spawn(async move { desk.park(card(session, action, path)).await });
        let list = parked(&approvals, 1).await;
        approvals
            .decide(&list[0].id, &spec(Verdict::ApproveSession, None))
            .expect("decided");
        waiting.await.expect("task");
    }
    let cases = [
        (
            Some("s1"),
            Some("create"),
            "/other",
            Some(Standing::SessionGrant),
        ),
        (Some("s2"), Some("create"), "/x", None),
        (None, Some("create"), "/x", None),
        (Some("s1"), Some("delete"), "/x", None),
        // An uncatalogued approval covers exactly its method and path.
        (Some("s1"), None, "/exact", Some(Standing::SessionGrant)),
        (Some("s1"), None, "/exact2", None),
    ];
    for (session, action, path, want) in cases {
        assert_eq!(
            standing(session, action, path),
            want,
            "{session:?} {action:?} {path}"
        );
    }

    // A task run's pre-approval covers the whole app, in that session.
    approvals.set_task("sb1", "t1", &["tracker".to_owned()]);
    assert_eq!(
        standing(Some("t1"), Some("anything"), "/y"),
        Some(Standing::TaskPreApproved)
    );
    assert_eq!(
        approvals.standing("sb1", Some("t1"), "wiki", None, "GET", "/"),
        None
    );

    // Removing the session drops its grants and pre-approvals.
    approvals.forget_session("sb1", "s1");
    approvals.forget_session("sb1", "t1");
    assert_eq!(standing(Some("s1"), Some("create"), "/x"), None);
    assert_eq!(standing(Some("t1"), Some("anything"), "/y"), None);
}

#[test]
fn who_decided_is_checked() {
    let (approvals, _) = desk(1_000, 1);
    for by in ["", "a\nb", &"x".repeat(MAX_BY_LEN + 1)] {
        assert_eq!(
            approvals.decide("nope", &spec(Verdict::Reject, Some(by))),
            Err(DecideError::BadBy)
        );
    }
}

#[tokio::test(start_paused = true)]
async fn forgetting_an_owner_ends_its_parked_requests() {
    // (what is forgotten, the card's session, whether its request ends)
    let cases = [
        (("sb1", Some("s1")), Some("s1"), true),
        (("sb1", Some("s1")), Some("s2"), false),
        (("sb1", Some("s1")), None, false),
        (("sb2", Some("s1")), Some("s1"), false),
        (("sb1", None), Some("s1"), true),
        (("sb1", None), None, true),
        (("sb2", None), None, false),
    ];
    for ((sandbox, session), parked_in, ends) in cases {
        let (approvals, metrics) = desk(60_000, 10);
        let waiting = tokio::spawn({
            let desk = approvals.clone();
            async move { desk.park(card(parked_in, Some("create"), "/x")).await.1 }
        });
        let id = parked(&approvals, 1).await[0].id.clone();
        match session {
            Some(session) => approvals.forget_session(sandbox, session),
            None => approvals.forget_sandbox(sandbox),
        }
        let what = format!("forget {sandbox}/{session:?}, parked in {parked_in:?}");
        assert_eq!(approvals.list().is_empty(), ends, "{what}");
        let decided = approvals.decide(&id, &spec(Verdict::ApproveSession, None));
        assert_eq!(
            decided.is_err(),
            ends,
            "{what}: decided after the owner left"
        );
        // A new session reusing the id inherits nothing.
        let standing =
            approvals.standing("sb1", parked_in, "tracker", Some("create"), "POST", "/x");
        assert_eq!(standing.is_none(), ends, "{what}");
        assert_eq!(metrics.approvals_parked.get(), 0, "{what}");
        let waited = waiting.await.expect("task");
        let want = if ends {
            Waited::Withdrawn {
                by: if session.is_some() {
                    "session_removed"
                } else {
                    "sandbox_removed"
                }
                .to_owned(),
            }
        } else {
            Waited::Approved {
                verdict: Verdict::ApproveSession,
                by: "admin-api".to_owned(),
            }
        };
        assert_eq!(waited, want, "{what}");
    }
}

#[tokio::test(start_paused = true)]
async fn one_sandbox_cannot_fill_the_desk() {
    // (max_parked, requests sb1 parks before one is refused)
    let cases = [(4, 2), (5, 3), (2, 1), (1, 1)];
    for (max_parked, share) in cases {
        let (approvals, metrics) = desk(60_000, max_parked);
        let in_sandbox = |sandbox: &str, path: &str| {
            let mut card = card(None, None, path);
            card.sandbox = sandbox.to_owned();
            card
        };
        let mut waiting = Vec::new();
        for i in 0..share {
            let desk = approvals.clone();
            let card = in_sandbox("sb1", &format!("/{i}"));
            waiting.push(tokio::spawn(async move { desk.park(card).await.1 }));
        }
        parked(&approvals, share).await;
        let (_, over) = approvals.park(in_sandbox("sb1", "/over")).await;
        assert_eq!(
            over,
            Waited::QueueFull,
            "max {max_parked}: sb1 over its share"
        );
        if share < max_parked {
            // Another sandbox still parks.
            let desk = approvals.clone();
            let card = in_sandbox("sb2", "/other");
            waiting.push(tokio::spawn(async move { desk.park(card).await.1 }));
            parked(&approvals, share + 1).await;
        }
        assert_eq!(
            metrics.approvals_parked.get(),
            i64::try_from(approvals.list().len()).expect("small")
        );
        // Once one of sb1's is decided, sb1 may park again.
        let first = approvals
            .list()
            .into_iter()
            .find(|c| c.sandbox == "sb1")
            .expect("sb1 parked");
        approvals
            .decide(&first.id, &spec(Verdict::Reject, None))
            .expect("decided");
        let desk = approvals.clone();
        let again = tokio::spawn(async move { desk.park(in_sandbox("sb1", "/again")).await.1 });
        let n = approvals.list().len();
        parked(&approvals, n + 1).await;
        waiting.push(again);
        tokio::time::advance(Duration::from_secs(61)).await;
        for task in waiting {
            task.await.expect("task");
        }
        assert_eq!(metrics.approvals_parked.get(), 0);
    }
}

fn network_card(session: Option<&str>, host: &str) -> ApprovalCard {
    ApprovalCard {
        kind: CardKind::Network,
        sandbox: "sb1".to_owned(),
        session: session.map(str::to_owned),
        host: host.to_owned(),
        port: Some(443),
        rule: Some("p:network.unmatched".to_owned()),
        ..ApprovalCard::default()
    }
}

/// A network card approved for the session lets that session's later
/// connections to the same name through (not another session's, not
/// another name's), until the session goes; `approve_always` is for
/// network cards only (an app card keeps waiting for a verdict it takes).
#[tokio::test(start_paused = true)]
async fn network_cards_grant_names_per_session_and_always_is_theirs_alone() {
    let (approvals, _) = desk(60_000, 100);
    assert!(!approvals.destination_granted("sb1", Some("s1"), "a.test"));
    let desk = approvals.clone();
    let waiting = tokio::spawn(async move { desk.park(network_card(Some("s1"), "a.test")).await });
    let list = parked(&approvals, 1).await;
    approvals
        .decide(&list[0].id, &spec(Verdict::ApproveSession, None))
        .expect("decided");
    assert!(matches!(
        waiting.await.expect("task").1,
        Waited::Approved { .. }
    ));
    assert!(approvals.destination_granted("sb1", Some("s1"), "a.test"));
    assert!(!approvals.destination_granted("sb1", Some("s2"), "a.test"));
    assert!(!approvals.destination_granted("sb1", Some("s1"), "b.test"));
    assert!(!approvals.destination_granted("sb1", None, "a.test"));
    approvals.forget_session("sb1", "s1");
    assert!(!approvals.destination_granted("sb1", Some("s1"), "a.test"));

    let desk = approvals.clone();
    let app = tokio::spawn(async move { desk.park(card(None, Some("a"), "/x")).await });
    let list = parked(&approvals, 1).await;
    assert_eq!(
        approvals.decide(&list[0].id, &spec(Verdict::ApproveAlways, None)),
        Err(DecideError::AlwaysForApp)
    );
    assert_eq!(approvals.list().len(), 1, "still parked");
    approvals
        .decide(&list[0].id, &spec(Verdict::Reject, None))
        .expect("decided");
    assert!(matches!(
        app.await.expect("task").1,
        Waited::Rejected { .. }
    ));
}
