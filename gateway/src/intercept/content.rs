//! What the content stages share between the request and the answer:
//! the PII vaults, the answer's plan (rehydration, response
//! transformations) decided with the request and the wrapping of answer
//! bodies for it, decoding gzip/br/zstd as a body streams (`decoded`:
//! a body a stage rewrites is never rewritten unread), and counting and
//! auditing what [`content::inspect`] found. The request's body stages
//! are `stages::body`.

use std::sync::Arc;

use http_body_util::BodyExt as _;
use hyper::{
    HeaderMap,
    body::Bytes,
    header::{self, HeaderValue},
    http::request,
};

use super::{Conn, Interceptor, respond::Body};
use crate::content::{
    self, Stages,
    sse::SseRehydrator,
    transform::{Rules, Transformer},
    vault::{Vault, Vaults},
};
use crate::redact::{Decoding, Redactor, RewrittenBody};
use sluice_scan::decode::DecodeError;

/// The content stages' state shared by all connections (the stages
/// themselves are the policy's, built when it loaded).
#[derive(Default)]
pub struct Content {
    pub vaults: Vaults,
}

/// What the response side has to do, decided with the request.
#[derive(Default)]
pub(super) struct ResponsePlan {
    pub(super) rehydrate: bool,
    /// The session's vault as the request stages had it, where the answer
    /// is rehydrated: the answer reads the same vault without a second
    /// look-up (and its keys' copies) per request.
    pub(super) vault: Option<Arc<Vault>>,
    pub(super) transforms: Rules,
}

/// The stages that rewrite one answer ([`Interceptor::answer_stages`]).
pub(super) struct AnswerStages {
    vault: Option<Arc<Vault>>,
    transforms: Rules,
}

impl AnswerStages {
    /// Wraps an answer's body, decoded already ([`decoded`]), for
    /// rehydration and response transformations.
    pub(super) fn wrap(self, headers: &mut HeaderMap, body: Body) -> Body {
        headers.remove(header::CONTENT_LENGTH);
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.to_ascii_lowercase())
            .unwrap_or_default();
        let events = content_type.starts_with("text/event-stream");
        let mut body = body;
        if let Some(vault) = self.vault {
            body = if events {
                RewrittenBody::with(body, SseRehydrator::new(vault.needles(false))).boxed()
            } else {
                let json = content_type.contains("json");
                RewrittenBody::with(body, Redactor::new(vault.needles(json))).boxed()
            };
        }
        if !self.transforms.is_empty() {
            let transformer = if events {
                Transformer::events(self.transforms)
            } else {
                Transformer::new(self.transforms)
            };
            body = RewrittenBody::with(body, transformer).boxed();
        }
        body
    }
}

impl Interceptor {
    /// The stages that rewrite this answer (rehydration when the session
    /// has tokens, response transformations), its headers transformed
    /// already; `None` when no stage rewrites it.
    pub(super) fn answer_stages(
        &self,
        conn: &Conn,
        plan: ResponsePlan,
        headers: &mut HeaderMap,
    ) -> Option<AnswerStages> {
        let vault = match (plan.rehydrate, plan.vault) {
            (false, _) => None,
            (true, Some(vault)) => (!vault.is_empty()).then_some(vault),
            (true, None) => self
                .content
                .vaults
                .existing(&conn.who.sandbox, conn.who.session.as_deref()),
        };
        plan.transforms.apply_headers(headers);
        (vault.is_some() || !plan.transforms.is_empty()).then_some(AnswerStages {
            vault,
            transforms: plan.transforms,
        })
    }

    /// Counts and audits what the stages found; values never leave here.
    pub(super) fn audit_detections(
        &self,
        conn: &Conn,
        inspection: &content::Inspection,
        oversize: bool,
        limit: u64,
    ) {
        let policy = &conn.who.policy.name;
        for detection in &inspection.detections {
            let action = action_name(detection.action);
            self.metrics
                .pii_detections
                .with_label_values(&[&conn.who.sandbox, detection.kind, action])
                .inc();
        }
        if !inspection.detections.is_empty() && inspection.refusal.is_none() {
            let mut kinds: Vec<String> = inspection
                .detections
                .iter()
                .map(|d| format!("{}:{}", d.kind, action_name(d.action)))
                .collect();
            kinds.sort();
            kinds.dedup();
            let mut detail = format!("detected {}", kinds.join(","));
            if oversize {
                detail.push_str(&format!("; only the first {limit} bytes were inspected"));
            }
            // `redact` where something was rewritten; found values
            // under `log_only` alone went on as they were: `allow`.
            let redacted = inspection
                .detections
                .iter()
                .any(|d| d.action == crate::policy::raw::PiiAction::Redact);
            self.record(
                conn,
                "pii",
                if redacted { "redact" } else { "allow" },
                "pii_detected",
                Some(&format!("{policy}:pii")),
                Some(detail),
            );
        } else if oversize {
            self.record(
                conn,
                "pii",
                "allow",
                "body_partly_inspected",
                Some(&format!("{policy}:pii.oversize")),
                Some(format!("only the first {limit} bytes were inspected")),
            );
        }
        if let Some(assessment) = &inspection.injection {
            self.metrics
                .injection_detections
                .with_label_values(&[&conn.who.sandbox, "audit"])
                .inc();
            let signals: Vec<&str> = assessment.signals.iter().map(|s| s.as_str()).collect();
            self.record(
                conn,
                "prompt_injection",
                "allow",
                "prompt_injection_audited",
                Some(&format!("{policy}:injection_defense")),
                // The rules' and the learned scorer's own scores: which
                // of the two (or both) brought the request over.
                Some(format!(
                    "score {:.2} (rules {:.2}, model {:.2}); signals {}",
                    assessment.score,
                    assessment.rules,
                    assessment.model,
                    signals.join(",")
                )),
            );
        }
    }
}

/// The policy section that makes bodies be inspected, named by a refusal
/// of a body that cannot be: `pii` when it is on, else `injection_defense`.
pub(super) fn inspecting_rule(policy: &str, stages: &Stages) -> String {
    let section = if stages.pii.is_some() {
        "pii"
    } else {
        "injection_defense"
    };
    format!("{policy}:{section}")
}

/// A message's Content-Encoding, every field of it joined (a list split
/// over several fields is one list, RFC 9110 section 5.3: reading only the
/// first would inspect a body still encoded by the second); `None` when
/// absent or only `identity`. Bytes that are not text stay in it, as
/// replacement characters, for decoding to refuse.
pub(super) fn content_encoding(headers: &HeaderMap) -> Option<String> {
    let fields: Vec<_> = headers
        .get_all(header::CONTENT_ENCODING)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()))
        .collect();
    let joined = fields.join(",");
    let identity = sluice_scan::decode::codings(&joined).next().is_none();
    (!identity).then_some(joined)
}

/// A body a stage rewrites, as it reads: decoded as it streams when its
/// Content-Encoding says it is compressed (the header and the length,
/// which change, are dropped), or why it cannot be.
pub(super) fn decoded<B>(headers: &mut HeaderMap, body: B) -> Result<Body, DecodeError>
where
    B: hyper::body::Body<Data = Bytes> + Unpin + Send + Sync + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let Some(encoding) = content_encoding(headers) else {
        return Ok(body.map_err(Into::into).boxed());
    };
    let decoding = Decoding::new(&encoding)?;
    headers.remove(header::CONTENT_ENCODING);
    headers.remove(header::CONTENT_LENGTH);
    Ok(decoding.body(body).boxed())
}

/// Asks the upstream for an uncompressed answer: rewriting it needs the bytes.
pub(super) fn plain_answer(parts: &mut request::Parts) {
    parts.headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
}

fn action_name(action: crate::policy::raw::PiiAction) -> &'static str {
    match action {
        crate::policy::raw::PiiAction::Redact => "redact",
        crate::policy::raw::PiiAction::Block => "block",
        crate::policy::raw::PiiAction::LogOnly => "log_only",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_content_encoding_field_is_read() {
        let cases: &[(&[&[u8]], Option<&str>)] = &[
            (&[], None),
            (&[b"identity"], None),
            (&[b" Identity , identity"], None),
            (&[b"gzip"], Some("gzip")),
            // The second field encodes the body too.
            (&[b"identity", b"gzip"], Some("identity,gzip")),
            (&[b"gzip", b"br"], Some("gzip,br")),
            // Not text: kept, for decoding to refuse.
            (&[b"gzip\xff"], Some("gzip\u{FFFD}")),
        ];
        for &(fields, want) in cases {
            let mut headers = HeaderMap::new();
            for field in fields {
                let value = HeaderValue::from_bytes(field).expect("a field value");
                headers.append(header::CONTENT_ENCODING, value);
            }
            assert_eq!(content_encoding(&headers).as_deref(), want, "{fields:?}");
        }
    }
}
