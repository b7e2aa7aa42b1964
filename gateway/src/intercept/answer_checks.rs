//! The answer's own refusals: answers whose bodies cannot be read where a
//! stage must read them (a part of a resource to a request carrying a
//! credential, an encoding Sluice cannot undo). Each is a pure function
//! of the answer's head; `upstream` (its authority) is asked only for a
//! refusal, so an answer let through formats nothing. The caller counts,
//! audits and answers ([`Refusal`]).

use hyper::{HeaderMap, StatusCode};

use super::{content::content_encoding, refusal::Refusal};
use crate::redact::Decoding;

/// Asked for none (the request's Range was dropped): a part of an answer
/// is redacted as a part, and parts can be joined.
pub(super) fn range(
    status: StatusCode,
    redacting: bool,
    upstream: impl FnOnce() -> String,
) -> Option<Refusal> {
    (redacting && status == StatusCode::PARTIAL_CONTENT).then(|| Refusal::Upstream {
        reason: "upstream_range_unredactable",
        upstream: upstream(),
        detail: "the upstream answered part of a resource (206) to a request carrying a credential; Sluice redacts echoes of it only in whole answers".to_owned(),
    })
}

/// An answer a stage reads (`redacting` the credential, or rewriting it)
/// is decoded as it streams: refused where it cannot be.
pub(super) fn encoding(
    status: StatusCode,
    headers: &HeaderMap,
    redacting: bool,
    upstream: impl FnOnce() -> String,
) -> Option<Refusal> {
    let encoding = content_encoding(headers)?;
    let why = if status == StatusCode::PARTIAL_CONTENT {
        // A range of a compressed answer does not decode on its own.
        "a range (206) of a compressed answer cannot be decoded".to_owned()
    } else {
        Decoding::new(&encoding).err()?.to_string()
    };
    Some(undecodable(redacting, why, upstream()))
}

/// An answer a stage reads whose decoding failed, and why.
pub(super) fn undecodable(redacting: bool, why: String, upstream: String) -> Refusal {
    let (reason, to) = if redacting {
        ("upstream_encoding_unredactable", "redact the credential")
    } else {
        ("upstream_encoding_unreadable", "rewrite it")
    };
    Refusal::Upstream {
        reason,
        upstream,
        detail: format!("Sluice cannot read the answer to {to}: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use hyper::{header, header::HeaderValue};

    use super::*;

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
        let reason = |refusal: Option<Refusal>| refusal.map(|r| r.reason());
        let a_test = || "a.test".to_owned();
        assert_eq!(
            reason(range(partial, true, a_test)),
            Some("upstream_range_unredactable")
        );
        assert_eq!(reason(range(partial, false, a_test)), None);
        assert_eq!(reason(range(ok, true, a_test)), None);
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
            let got = encoding(status, &headers(coding), redacting, || {
                "a.test:443".to_owned()
            });
            assert_eq!(
                got.as_ref().map(Refusal::reason),
                want,
                "{status} {coding:?} {redacting}"
            );
            if let Some(refusal) = got {
                assert_eq!(refusal.status(), StatusCode::BAD_GATEWAY);
                assert_eq!(refusal.body()["upstream"], "a.test:443");
                let detail = refusal.audit_detail().unwrap_or_default();
                assert!(detail.starts_with("Sluice cannot read the answer to "));
            }
        }
    }
}
