//! The connection's network rule, request by request: an `allow_out` rule
//! with `methods`, `paths` or `access` lets a connection it won carry only
//! the requests it names (`policy::network::RequestRule`, found once when
//! the connection is served). Another method or path is refused, 403
//! naming the rule (400 for a dot segment the upstream would resolve
//! past the patterns).

use hyper::http::request::Parts;

use super::{Exchange, Outcome};
use crate::{
    apps::pattern::normalize_path,
    intercept::{Conn, refusal::Refusal, respond},
    policy::network::RequestRule,
};

/// Every reason this stage refuses with.
#[cfg(test)]
pub(super) const REASONS: &[&str] = {
    use crate::policy::network::RequestRefusal as R;
    &[
        R::ALL[0].as_str(),
        R::ALL[1].as_str(),
        R::ALL[2].as_str(),
        R::ALL[3].as_str(),
    ]
};

pub(super) async fn run(conn: &Conn, exchange: &mut Exchange) -> Outcome {
    let Some(rule) = &conn.request_rule else {
        return Outcome::Continue;
    };
    match decide(rule, &exchange.parts, &conn.who.policy.name) {
        Some(refusal) => {
            // Read what the client is still sending (a little, briefly)
            // before answering: an HTTP/2 stream reset mid-upload would
            // hide the 403 from the client (a refused POST's body).
            respond::drain(&mut exchange.body).await;
            Outcome::Refuse(refusal)
        }
        None => Outcome::Continue,
    }
}

/// The refusal of a request `rule` (of policy `policy`) does not let
/// through, if it does not.
fn decide(rule: &RequestRule, parts: &Parts, policy: &str) -> Option<Refusal> {
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let upgrade = crate::intercept::is_upgrade(parts);
    let why = rule.decide(parts.method.as_str(), path, upgrade).err()?;
    // The path as matched: no query, which may carry what is not ours to log.
    let detail = format!(
        "{} {} is not allowed: {}",
        parts.method,
        normalize_path(path),
        rule.describe()
    );
    Some(Refusal::NetworkRule {
        why,
        rule: format!("{policy}:{}", rule.label),
        detail,
    })
}

#[cfg(test)]
mod tests {
    use hyper::{Request, StatusCode};

    use super::*;
    use crate::policy::{
        network::{NetworkPolicy, RequestRefusal},
        raw,
    };

    /// The request rule of `network.allow_out[0]`, written as YAML.
    fn rule(yaml: &str) -> std::sync::Arc<RequestRule> {
        let target: raw::Target = serde_yaml::from_str(yaml).expect("target");
        let network = raw::Network {
            allow_out: vec![target],
            decide_without_decryption: Some(false),
            ..raw::Network::default()
        };
        let policy = NetworkPolicy::compile(&network).expect("compiles");
        let dst = "192.0.2.1:443".parse().expect("address");
        policy
            .request_rule(Some("api.test"), dst)
            .expect("the rule carries a request rule")
    }

    fn parts(method: &str, target: &str) -> Parts {
        let request = Request::builder().method(method).uri(target);
        request.body(()).expect("request").into_parts().0
    }

    /// (rule, method, target, refused with)
    type Case = (
        &'static str,
        &'static str,
        &'static str,
        Option<RequestRefusal>,
    );

    #[test]
    fn method_and_path_table() {
        use RequestRefusal::*;
        const RO: &str = "{to: api.test, access: read_only}";
        const REPOS: &str = "{to: api.test, methods: [get, Post], paths: ['/repos/**', '/user']}";
        const ONE: &str = "{to: api.test, paths: ['/v1/*/items']}";
        #[rustfmt::skip]
        let cases: &[Case] = &[
            (RO, "GET", "/anything?q=1", None),
            (RO, "HEAD", "/", None),
            (RO, "OPTIONS", "*", None),
            (RO, "POST", "/", Some(MethodNotAllowed)),
            (RO, "DELETE", "/x", Some(MethodNotAllowed)),
            // No paths: a dot segment is the upstream's to resolve.
            (RO, "GET", "/a/../b", None),
            (REPOS, "GET", "/repos", None),
            (REPOS, "POST", "/repos/a/issues", None),
            (REPOS, "GET", "/user?x=/repos/a", None),
            (REPOS, "PUT", "/repos/a", Some(MethodNotAllowed)),
            (REPOS, "GET", "/users", Some(PathNotAllowed)),
            (REPOS, "GET", "/user/keys", Some(PathNotAllowed)),
            (REPOS, "GET", "/%72epos/a", None),
            (REPOS, "GET", "//repos/a", None),
            (REPOS, "GET", "/repos/../admin", Some(PathDotSegment)),
            (REPOS, "GET", "/repos/%2e%2E/admin", Some(PathDotSegment)),
            (REPOS, "POST", "/repos/../admin", Some(PathDotSegment)),
            (REPOS, "DELETE", "/repos/../admin", Some(MethodNotAllowed)),
            (ONE, "PATCH", "/v1/7/items", None),
            (ONE, "GET", "/v1/7/8/items", Some(PathNotAllowed)),
            (ONE, "GET", "http://api.test/v1/7/items", None),
            (ONE, "OPTIONS", "*", Some(PathNotAllowed)),
            // An upgrade carries frames both ways that no method rule sees.
            (RO, "GET", "UPGRADE /ws", Some(UpgradeNotAllowed)),
            (REPOS, "GET", "UPGRADE /repos/a", Some(UpgradeNotAllowed)),
            (ONE, "GET", "UPGRADE /v1/7/items", None),
        ];
        for &(yaml, method, target, want) in cases {
            let rule = rule(yaml);
            let request = match target.strip_prefix("UPGRADE ") {
                Some(target) => {
                    let mut request = parts(method, target);
                    request
                        .headers
                        .insert("connection", "upgrade".parse().expect("value"));
                    request
                        .headers
                        .insert("upgrade", "websocket".parse().expect("value"));
                    request
                }
                None => parts(method, target),
            };
            let got = decide(&rule, &request, "p");
            let got = got.map(|refusal| match refusal {
                Refusal::NetworkRule { why, rule, .. } => {
                    assert_eq!(rule, "p:network.allow_out[0]");
                    why
                }
                other => panic!("{other:?}"),
            });
            assert_eq!(got, want, "{yaml} {method} {target}");
        }
    }

    #[test]
    fn a_refusal_names_the_rule_and_what_it_allows() {
        let rule = rule("{to: api.test, access: read_only}");
        let refusal = decide(&rule, &parts("POST", "/v1/x?token=abc"), "p").expect("refused");
        assert_eq!(refusal.status(), StatusCode::FORBIDDEN);
        assert_eq!(refusal.reason(), "method_not_allowed");
        assert_eq!(refusal.rule(), Some("p:network.allow_out[0]"));
        assert_eq!(
            refusal.audit_detail().as_deref(),
            Some(
                "POST /v1/x is not allowed: network.allow_out[0] allows GET, HEAD, OPTIONS to any path"
            )
        );
    }
}
