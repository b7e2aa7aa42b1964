//! The order of the stages, observed from outside: each test here fails
//! when two stages are swapped.
//!
//! - Credentials last: the PII stage and the transformations run on the
//!   placeholder, never on the secret injected after them.
//! - Dry run before credentials: the preview never carries the secret.
//! - Apps before credentials and content: a denied request is refused
//!   before any later stage reads or rewrites it.
//! - Answer side: credential redaction before response transformations
//!   and rehydration, so neither can hand the sandbox the secret.

use super::*;

const BOUND: &str =
    "credentials:\n  - {credential: api, allow_plain_http: true, allow_in_body: true}\n";

/// PII would redact the secret (a `github_token`) were it to see it: the
/// upstream must get the secret intact, so PII ran on the placeholder,
/// before injection.
#[tokio::test]
async fn pii_never_sees_the_injected_secret() {
    let policy = format!("{BOUND}pii: {{enabled: true, types: [github_token]}}\n");
    let h = Harness::start(&policy, echo()).await;
    // Checks the premise: the secret itself is what PII redacts.
    let answer = h
        .send(post_json("/v1/x", &format!(r#"{{"value":"{SECRET}"}}"#)))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert!(
        !h.seen()[0].body.contains(SECRET),
        "PII did not redact the secret"
    );

    let placeholder = h.placeholder();
    let answer = h
        .send(post_json(
            "/v1/x",
            &format!(r#"{{"value":"{placeholder}"}}"#),
        ))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let seen = &h.seen()[1];
    assert_eq!(seen.body, format!(r#"{{"value":"{SECRET}"}}"#));
    // The echo comes back redacted, not rehydrated into anything else.
    assert!(!answer.body.contains(SECRET));
}

/// A request transformation that would rewrite the secret, in the body
/// and in the header it is injected into, must not see it: the secret
/// goes upstream as it is.
#[tokio::test]
async fn transformations_never_see_the_injected_secret() {
    let policy = format!(
        "{BOUND}transformations:\n  - {{pattern: 'ghp_', replacement: REWRITTEN-, headers: [authorization]}}\n"
    );
    let h = Harness::start(&policy, echo()).await;
    let bearer = format!("Bearer {}", h.placeholder());
    let answer = h
        .send(request(
            "POST",
            "/v1/x",
            &[("authorization", &bearer)],
            "ghp_in-body",
        ))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let seen = &h.seen()[0];
    // The sandbox's own text was rewritten; the secret was not.
    assert_eq!(seen.body, "REWRITTEN-in-body");
    assert_eq!(seen.headers["authorization"], format!("Bearer {SECRET}"));
}

/// The dry run answers before the credentials are injected: the preview
/// shows the placeholder, never the secret.
#[tokio::test]
async fn the_dry_run_preview_never_carries_the_secret() {
    let policy = format!("{BOUND}dry_run: true\n");
    let h = Harness::start(&policy, echo()).await;
    let placeholder = h.placeholder();
    let answer = h
        .send(post_json("/v1/x", &format!(r#"{{"key":"{placeholder}"}}"#)))
        .await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    assert!(!answer.body.contains(SECRET), "{}", answer.body);
    assert!(answer.body.contains(&placeholder), "{}", answer.body);
    assert!(h.seen().is_empty());
    let injected = h.metrics.credential_injections.with_label_values(&["api"]);
    assert_eq!(injected.get(), 0);
}

/// The app stage runs before the content stages: a denied action with a
/// body PII would block is refused by the app rule, and PII never
/// audits it.
#[tokio::test]
async fn apps_decide_before_the_content_stages() {
    let policy = "apps:\n  - app: tracker\n    actions: {repo.delete: deny, \"*\": auto}\npii: {enabled: true, types: [email], action: block}\n";
    let h = Harness::start(policy, echo()).await;
    let answer = h
        .send_app(request(
            "DELETE",
            "/repo/main",
            &[],
            r#"{"by":"alice@example.com"}"#,
        ))
        .await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert_eq!(answer.json()["reason"], "app_action_denied");
    assert!(h.audited("pii_blocked").is_empty());
    assert!(h.seen().is_empty());
}

/// The echoed secret is redacted before the response transformations
/// run: a transformation that would turn the secret into something else
/// (which redaction would then miss) finds only the redaction marker.
#[tokio::test]
async fn redaction_runs_before_response_transformations() {
    let policy = format!(
        "{BOUND}transformations:\n  - {{pattern: 'ghp_', replacement: 'GHP-', direction: response}}\n"
    );
    let h = Harness::start(&policy, echo()).await;
    let placeholder = h.placeholder();
    let answer = h
        .send(post_json("/v1/x", &format!(r#"{{"key":"{placeholder}"}}"#)))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(h.seen()[0].body, format!(r#"{{"key":"{SECRET}"}}"#));
    let rewritten = SECRET.replace("ghp_", "GHP-");
    assert!(!answer.body.contains(&rewritten), "{}", answer.body);
    assert!(!answer.body.contains(SECRET), "{}", answer.body);
    assert_eq!(answer.body, r#"{"key":"[redacted:credential]"}"#);
}

/// The same for a header a response transformation rewrites: the echoed
/// secret is redacted before the transformation reads the header.
#[tokio::test]
async fn a_header_transformation_never_sees_the_secret() {
    let policy = format!(
        "{BOUND}transformations:\n  - {{pattern: 'ghp_', replacement: 'GHP-', direction: response, headers: [x-echo]}}\n"
    );
    let echo_header: Answer = Arc::new(|_: &Seen| {
        let mut response = Response::new(Full::from("ok"));
        let value = hyper::header::HeaderValue::from_static(SECRET);
        response.headers_mut().insert("x-echo", value);
        response
    });
    let h = Harness::start(&policy, echo_header).await;
    let placeholder = h.placeholder();
    let answer = h
        .send(post_json("/v1/x", &format!(r#"{{"key":"{placeholder}"}}"#)))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let echoed = answer.headers.get("x-echo").and_then(|v| v.to_str().ok());
    assert_eq!(echoed, Some("[redacted:credential]"));
}

/// And after them: a rewrite that joins pieces of the secret (here, one
/// that drops dashes from an answer that spells it with dashes between
/// its parts) does not hand it over whole.
#[tokio::test]
async fn a_transformation_cannot_join_the_secret_from_pieces() {
    let policy = format!(
        "{BOUND}transformations:\n  - {{pattern: '-', replacement: '', direction: response}}\n"
    );
    let pieces: Answer = Arc::new(|_: &Seen| {
        let (head, tail) = SECRET.split_at(SECRET.len() / 2);
        Response::new(Full::from(format!("{head}-{tail}")))
    });
    let h = Harness::start(&policy, pieces).await;
    let placeholder = h.placeholder();
    let answer = h
        .send(post_json("/v1/x", &format!(r#"{{"key":"{placeholder}"}}"#)))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert!(!answer.body.contains(SECRET), "{}", answer.body);
    assert_eq!(answer.body, "[redacted:credential]");
}

/// Both answer stages in one answer: the echoed secret redacted, the
/// echoed PII token rehydrated. (Which of the two runs first is not
/// visible from outside while PII never sees a secret: the vault cannot
/// hold one.)
#[tokio::test]
async fn redaction_and_rehydration_in_one_answer() {
    let policy = format!("{BOUND}pii: {{enabled: true, types: [email]}}\n");
    let h = Harness::start(&policy, echo()).await;
    let placeholder = h.placeholder();
    let body = format!(r#"{{"key":"{placeholder}","mail":"alice@example.com"}}"#);
    let answer = h.send(post_json("/v1/x", &body)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let seen = &h.seen()[0].body;
    assert!(
        seen.contains(SECRET) && !seen.contains("alice@example.com"),
        "{seen}"
    );
    // The token came back and was rehydrated; the secret came back and
    // was redacted.
    assert_eq!(
        answer.body,
        r#"{"key":"[redacted:credential]","mail":"alice@example.com"}"#
    );
}
