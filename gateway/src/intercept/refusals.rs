//! The refusals interception decides by itself, outside the policy's
//! stages: a later plain-HTTP request naming another host, an upgrade that
//! would carry an injected secret back unread, and answers whose bodies
//! cannot be read where a stage must read them (a part of a resource, an
//! encoding Sluice cannot undo). Each is a pure function of a head; the
//! caller counts, audits and answers.

use hyper::{HeaderMap, StatusCode, header, http::request::Parts};

use super::{content::content_encoding, is_upgrade, is_websocket, same_host};
use crate::redact::Decoding;

/// One refusal, with what the sandbox is told.
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// 421: a plain-HTTP connection was decided on its first request's
    /// Host; a later one names another (`named`).
    HostChanged { named: String },
    /// 403: an upgrade to a protocol other than WebSocket on a request
    /// that carries a credential: its frames could echo the secret unread.
    UpgradeNotRedactable,
    /// 502: a part of a resource (206) answering a request that carried a
    /// credential: parts, each shorter than the secret, could be joined.
    RangeUnredactable,
    /// 502: an answer a stage must read (`redacting` the credential, or
    /// rewriting it) whose encoding cannot be undone, and why.
    Encoding { redacting: bool, why: String },
}

impl Refusal {
    pub(super) fn status(&self) -> StatusCode {
        match self {
            Refusal::HostChanged { .. } => StatusCode::MISDIRECTED_REQUEST,
            Refusal::UpgradeNotRedactable => StatusCode::FORBIDDEN,
            Refusal::RangeUnredactable | Refusal::Encoding { .. } => StatusCode::BAD_GATEWAY,
        }
    }

    /// The reason in the answer, the audit event and the metrics.
    pub(super) fn reason(&self) -> &'static str {
        match self {
            Refusal::HostChanged { .. } => "host_changed",
            Refusal::UpgradeNotRedactable => "upgrade_not_redactable",
            Refusal::RangeUnredactable => "upstream_range_unredactable",
            Refusal::Encoding {
                redacting: true, ..
            } => "upstream_encoding_unredactable",
            Refusal::Encoding {
                redacting: false, ..
            } => "upstream_encoding_unreadable",
        }
    }

    /// What the refusal says beyond its reason.
    pub(super) fn detail(&self) -> String {
        match self {
            Refusal::HostChanged { named } => format!("Host {named}"),
            Refusal::UpgradeNotRedactable => {
                "an upgrade other than WebSocket cannot be redacted".to_owned()
            }
            Refusal::RangeUnredactable => "the upstream answered part of a resource (206) to a request carrying a credential; Sluice redacts echoes of it only in whole answers".to_owned(),
            Refusal::Encoding { redacting, why } => {
                let to = if *redacting {
                    "redact the credential"
                } else {
                    "rewrite it"
                };
                format!("Sluice cannot read the answer to {to}: {why}")
            }
        }
    }
}

/// A later request on a plain-HTTP connection must name the host the
/// connection was decided on (`name`); TLS ties requests to the SNI
/// instead (hygiene).
pub(super) fn host_changed(tls: bool, parts: &Parts, name: &str) -> Option<Refusal> {
    if tls || same_host(parts, name) {
        return None;
    }
    let named = parts.headers.get(header::HOST);
    let named = named.and_then(|v| v.to_str().ok()).unwrap_or_default();
    Some(Refusal::HostChanged {
        named: named.to_owned(),
    })
}

/// After a 101 the upstream's bytes are frames of the new protocol:
/// WebSocket frames are redacted, anything else could carry an injected
/// secret back unread.
pub(super) fn upgrade_with_credential(parts: &Parts) -> Option<Refusal> {
    (is_upgrade(parts) && !is_websocket(parts)).then_some(Refusal::UpgradeNotRedactable)
}

/// Asked for none (the request's Range was dropped): a part of an answer
/// is redacted as a part, and parts can be joined.
pub(super) fn range(status: StatusCode, redacting: bool) -> Option<Refusal> {
    (redacting && status == StatusCode::PARTIAL_CONTENT).then_some(Refusal::RangeUnredactable)
}

/// An answer a stage reads (`redacting` the credential, or rewriting it)
/// is decoded as it streams: refused where it cannot be.
pub(super) fn encoding(
    status: StatusCode,
    headers: &HeaderMap,
    redacting: bool,
) -> Option<Refusal> {
    let encoding = content_encoding(headers)?;
    let why = if status == StatusCode::PARTIAL_CONTENT {
        // A range of a compressed answer does not decode on its own.
        "a range (206) of a compressed answer cannot be decoded".to_owned()
    } else {
        Decoding::new(&encoding).err()?.to_string()
    };
    Some(Refusal::Encoding { redacting, why })
}

#[cfg(test)]
mod tests {
    use hyper::{HeaderMap, Request, header::HeaderValue};

    use super::*;

    fn parts(target: &str, headers: &[(&str, &str)]) -> Parts {
        let mut request = Request::builder().uri(target);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).expect("request").into_parts().0
    }

    /// (tls, target, headers, the connection's name, refused naming)
    type HostCase = (
        bool,
        &'static str,
        &'static [(&'static str, &'static str)],
        &'static str,
        Option<&'static str>,
    );

    #[test]
    fn host_changed_table() {
        #[rustfmt::skip]
        let cases: &[HostCase] = &[
            (false, "/", &[("host", "api.test")], "api.test", None),
            (false, "/", &[("host", "API.test:8080")], "api.test", None),
            (false, "/", &[("host", "other.test")], "api.test", Some("other.test")),
            (false, "http://other.test/", &[], "api.test", Some("")),
            (false, "/", &[], "api.test", None),
            (true, "/", &[("host", "other.test")], "api.test", None),
        ];
        for &(tls, target, headers, name, want) in cases {
            let got = host_changed(tls, &parts(target, headers), name);
            let want = want.map(|named| Refusal::HostChanged {
                named: named.to_owned(),
            });
            assert_eq!(got, want, "{tls} {target} {headers:?}");
        }
        let refusal = Refusal::HostChanged {
            named: "b.test".into(),
        };
        assert_eq!(refusal.status(), StatusCode::MISDIRECTED_REQUEST);
        assert_eq!(
            (refusal.reason(), refusal.detail().as_str()),
            ("host_changed", "Host b.test")
        );
    }

    #[test]
    fn upgrades_carrying_a_credential() {
        let upgrade =
            |protocol: &str| parts("/", &[("connection", "Upgrade"), ("upgrade", protocol)]);
        assert_eq!(upgrade_with_credential(&upgrade("websocket")), None);
        assert_eq!(upgrade_with_credential(&upgrade("WebSocket")), None);
        assert_eq!(
            upgrade_with_credential(&upgrade("h2c")),
            Some(Refusal::UpgradeNotRedactable)
        );
        assert_eq!(upgrade_with_credential(&parts("/", &[])), None);
        assert_eq!(
            Refusal::UpgradeNotRedactable.status(),
            StatusCode::FORBIDDEN
        );
    }

    #[test]
    fn answers_a_stage_cannot_read() {
        let headers = |encoding: Option<&str>| {
            let mut headers = HeaderMap::new();
            if let Some(encoding) = encoding {
                headers.insert(
                    header::CONTENT_ENCODING,
                    HeaderValue::from_str(encoding).expect("value"),
                );
            }
            headers
        };
        let (ok, partial) = (StatusCode::OK, StatusCode::PARTIAL_CONTENT);
        assert_eq!(range(partial, true), Some(Refusal::RangeUnredactable));
        assert_eq!(range(partial, false), None);
        assert_eq!(range(ok, true), None);
        #[rustfmt::skip]
        let cases: &[(StatusCode, Option<&str>, bool, Option<&str>)] = &[
            // (status, Content-Encoding, redacting, the reason refused with)
            (ok, None, true, None),
            (ok, Some("identity"), false, None),
            (ok, Some("gzip"), true, None),
            (ok, Some("gzip, br"), false, None),
            (ok, Some("x-unknown"), true, Some("upstream_encoding_unredactable")),
            (ok, Some("x-unknown"), false, Some("upstream_encoding_unreadable")),
            (partial, Some("gzip"), false, Some("upstream_encoding_unreadable")),
            (partial, None, false, None),
        ];
        for &(status, coding, redacting, want) in cases {
            let got = encoding(status, &headers(coding), redacting);
            assert_eq!(
                got.as_ref().map(Refusal::reason),
                want,
                "{status} {coding:?} {redacting}"
            );
            if let Some(refusal) = got {
                assert_eq!(refusal.status(), StatusCode::BAD_GATEWAY);
                assert!(
                    refusal
                        .detail()
                        .starts_with("Sluice cannot read the answer to ")
                );
            }
        }
    }
}
