//! Credentials, last of the request stages: a placeholder is swapped for
//! its secret where the policy binds it to this host (and transport, and
//! part of the request), or the request is refused; a credential that
//! cannot be applied (its token endpoint failed, a body too large to
//! check) fails it. An injected secret's forms go with the exchange, for
//! the answer stages to redact; the answer is then asked for whole and
//! uncompressed, so redaction reads all of it.

use std::sync::Arc;

use hyper::{
    body::Bytes,
    header::{self, HeaderValue},
    http::request::Parts,
};

use super::{Exchange, Outcome};
use crate::{
    credentials::Secret,
    intercept::{
        Conn, Interceptor, credential, is_upgrade, is_websocket, redirects::Follow,
        refusal::Refusal, respond,
    },
    redact::Needles,
};

/// The reasons this stage refuses with: the bindings' (`credentials::binding`),
/// the injection's, and a credential that could not be applied.
#[cfg(test)]
pub(super) const REASONS: &[&str] = &[
    crate::credentials::binding::EXFILTRATION,
    crate::credentials::binding::AMBIGUOUS,
    crate::credentials::binding::NOT_BOUND,
    crate::credentials::binding::PLAIN_HTTP,
    crate::credentials::binding::PLAIN_HTTP_ADDRESS,
    "unknown_credential",
    "injection_failed",
    UPGRADE_NOT_REDACTABLE,
    credential::BODY_TOO_LARGE,
    credential::TOKEN_ENDPOINT_FAILED,
];

/// An upgrade other than WebSocket on a request carrying a credential.
const UPGRADE_NOT_REDACTABLE: &str = "upgrade_not_redactable";

pub(super) async fn run(
    interceptor: &Interceptor,
    conn: &Conn,
    exchange: &mut Exchange,
) -> Outcome {
    let parts = &mut exchange.parts;
    let request = credential::Request {
        sandbox: &conn.who.sandbox,
        policy: &conn.who.policy,
        host: &conn.key.name,
        transport: conn.transport,
        method: &parts.method,
        authority: &conn.authority.text,
    };
    let body = std::mem::replace(&mut exchange.body, respond::empty());
    let (outcome, body) = interceptor
        .credentials
        .apply(request, &mut parts.headers, &mut parts.uri, body)
        .await;
    exchange.body = body;
    let rule = || format!("{}:credentials", conn.who.policy.name);
    let (credential, needles, token, whole) = match decide(outcome, parts, rule) {
        Ok(Some(injected)) => injected,
        Ok(None) => return Outcome::Continue,
        Err(refusal) => return Outcome::Refuse(refusal),
    };
    conn.injections
        .inc(&interceptor.metrics.credential_injections, &credential);
    // The binding has Sluice follow redirects: the answer's Location may
    // be followed (`exchange`), sending the body again where it is whole.
    if conn.who.policy.bindings.follow_redirects(&credential) > 0 {
        exchange.follow = Some(Follow {
            credential: credential.clone(),
            whole,
        });
    }
    exchange.sent_token = token.map(|token| (credential, token));
    // An answer that echoes the secret is redacted by reading it: the
    // sandbox does not get to ask for one compressed, nor for compressed
    // WebSocket frames, nor for it in ranges, each shorter than the
    // secret and so redacted as nothing, that it would join again.
    parts.headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
    parts.headers.remove(header::SEC_WEBSOCKET_EXTENSIONS);
    parts.headers.remove(header::RANGE);
    parts.headers.remove(header::IF_RANGE);
    exchange.needles = Some(needles);
    Outcome::Continue
}

/// An injected credential: its name, the secret's forms, the access
/// token sent (`oauth2`), and the body when it was read whole.
type Injected = (String, Arc<Needles>, Option<Arc<Secret>>, Option<Bytes>);

/// What the credential's outcome means for the request: `Ok(None)` goes
/// on untouched, `Ok(Some)` goes on carrying a secret, `Err` is refused.
fn decide(
    outcome: credential::Outcome,
    parts: &Parts,
    rule: impl FnOnce() -> String,
) -> Result<Option<Injected>, Refusal> {
    match outcome {
        credential::Outcome::Untouched => Ok(None),
        credential::Outcome::Injected {
            credential,
            needles,
            token,
            whole,
        } => match upgrade_with_credential(parts) {
            Some(reason) => Err(Refusal::Credential {
                reason,
                credential,
                rule: rule(),
            }),
            None => Ok(Some((credential, needles, token, whole))),
        },
        credential::Outcome::Refused { reason, credential } => Err(Refusal::Credential {
            reason,
            credential,
            rule: rule(),
        }),
        credential::Outcome::Failed {
            status,
            reason,
            credential,
            detail,
            log,
        } => Err(Refusal::CredentialFailed {
            status,
            reason,
            credential,
            detail,
            log,
        }),
    }
}

/// After a 101 the upstream's bytes are frames of the new protocol:
/// WebSocket frames are redacted, anything else could carry an injected
/// secret back unread.
fn upgrade_with_credential(parts: &Parts) -> Option<&'static str> {
    (is_upgrade(parts) && !is_websocket(parts)).then_some(UPGRADE_NOT_REDACTABLE)
}

#[cfg(test)]
mod tests {
    use hyper::{Request, StatusCode};

    use super::*;

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut request = Request::builder().uri("/");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).expect("request").into_parts().0
    }

    fn upgrade(protocol: &str) -> Parts {
        parts(&[("connection", "Upgrade"), ("upgrade", protocol)])
    }

    #[test]
    fn upgrades_carrying_a_credential() {
        assert_eq!(upgrade_with_credential(&upgrade("websocket")), None);
        assert_eq!(upgrade_with_credential(&upgrade("WebSocket")), None);
        assert_eq!(
            upgrade_with_credential(&upgrade("h2c")),
            Some("upgrade_not_redactable")
        );
        assert_eq!(upgrade_with_credential(&parts(&[])), None);
    }

    #[test]
    fn each_credential_outcome_as_the_stage_acts_on_it() {
        let rule = || "p:credentials".to_owned();
        let needles = || Arc::new(Needles::new(&[b"sekrit"], b"[REDACTED]"));
        let injected = |credential: &str| credential::Outcome::Injected {
            credential: credential.into(),
            needles: needles(),
            token: None,
            whole: None,
        };
        assert!(matches!(
            decide(credential::Outcome::Untouched, &parts(&[]), rule),
            Ok(None)
        ));
        let Ok(Some((name, _, None, None))) = decide(injected("api"), &parts(&[]), rule) else {
            panic!("an injection goes on");
        };
        assert_eq!(name, "api");
        let refused = decide(injected("api"), &upgrade("h2c"), rule).expect_err("refused");
        assert_eq!(
            (
                refused.status(),
                refused.reason(),
                refused.body()["credential"].as_str()
            ),
            (StatusCode::FORBIDDEN, "upgrade_not_redactable", Some("api"))
        );
        let refused = credential::Outcome::Refused {
            reason: "credential_wrong_host",
            credential: "api".into(),
        };
        let refused = decide(refused, &parts(&[]), rule).expect_err("refused");
        assert_eq!(
            (refused.status(), refused.rule()),
            (StatusCode::FORBIDDEN, Some("p:credentials"))
        );
        let failed = credential::Outcome::Failed {
            status: StatusCode::BAD_GATEWAY,
            reason: "token_endpoint_failed",
            credential: "api".into(),
            detail: "the token endpoint failed".into(),
            log: "POST https://auth.test/token: 500".into(),
        };
        let failed = decide(failed, &parts(&[]), rule).expect_err("failed");
        assert_eq!(
            (failed.status(), failed.verdict()),
            (StatusCode::BAD_GATEWAY, "error")
        );
    }
}
